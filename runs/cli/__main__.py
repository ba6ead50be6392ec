"""``python -m runs.cli``: the ``erpsim`` command."""

from runs.cli import main

main()
