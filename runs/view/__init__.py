"""The viewer: `erpsim view` pages of an attempt or a campaign (see README.md)."""
