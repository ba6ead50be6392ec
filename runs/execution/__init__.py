"""One external agent turn: the adapter contract, local and docker runs, the API."""
