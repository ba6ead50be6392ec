"""``erp``: the command-line client agents use to work in the books.

Until the agent-turns work lands, it only explains itself: its subcommands will
mirror the ERP API (``erp invoices list``, ``erp receipts apply``, ...), reading
the endpoint and token from ``ERPSIM_API`` and ``ERPSIM_TOKEN``.
"""

from __future__ import annotations

import sys

USAGE = """\
usage: erp COMMAND [ARGS]...

The agent-side client of the erpsim books. Its commands will mirror the ERP API:
  erp invoices list --status open --format csv
  erp receipts apply RECEIPT INVOICE AMOUNT
  erp bills enter ...
  erp bank lines --unmatched
  erp reports aging
  erp journal post ...
It reads the API endpoint and token from ERPSIM_API and ERPSIM_TOKEN.

This build has no API to talk to yet: no command is available.
"""


def main(argv: list[str] | None = None) -> int:
    """Print the usage; any command is refused with exit status 2."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    sys.stderr.write(f"erp: {args[0]!r}: no commands are available in this build "
                     "(the ERP API is not part of it yet); see 'erp --help'\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())


def console_main() -> None:
    """Console-script entry point."""
    sys.exit(main())
