"""The ``erpsim`` command line: the ``main`` group, and each subcommand from its module.

The subcommands live in their own modules (:mod:`runs.cli.attempts`: run, check,
reconcile, validate; :mod:`runs.cli.campaign`: sweep; :mod:`runs.cli.report`: report,
compare, rescore; :mod:`runs.cli.desk`; :mod:`runs.cli.ledger`; :mod:`runs.cli.bench`;
:mod:`runs.cli.demo`), which never import this package: it imports them and attaches
them with ``add_command``. They parse options, call into ``runs``, and print; exit codes
come from :mod:`runs.cli.common`.
"""

from __future__ import annotations

import errno
from typing import Any

import click

from runs.cli.attempts import check_command, reconcile_command, run, validate
from runs.cli.bench import bench
from runs.cli.campaign import sweep
from runs.cli.common import EXIT_BAD_INPUT, PATH_MAX, fail
from runs.cli.demo import demo
from runs.cli.desk import desk
from runs.cli.export import export_group
from runs.cli.freeze import freeze_command
from runs.cli.ledger import ledger
from runs.cli.report import compare, report, rescore
from runs.cli.view import bench_view, view_command


class _Main(click.Group):
    """The ``erpsim`` group. A path longer than the filesystem holds, met anywhere under
    a command (a scenario, a store, an attempt folder given as an argument), is the user's
    input: refused in one line naming it (exit 2), never a traceback. Output paths are
    refused earlier, by their option (:func:`runs.cli.common.unwritable`)."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a name too long becomes a usage error."""
        try:
            return super().invoke(ctx)
        except OSError as e:
            if e.errno != errno.ENAMETOOLONG:
                raise
            name = str(e.filename)
            shown = name if len(name) <= 80 else name[:77] + "..."
            fail(f"{shown}: {e.strerror} (expected no part of a path over 255 bytes and "
                 f"the whole under {PATH_MAX:,})", code=EXIT_BAD_INPUT)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="erpsim")
def main() -> None:
    """erpsim: ERP process simulation with event-sourced books, for evaluating agents.

    A store is an SQLite file path or a PostgreSQL URL
    (postgresql://user@host:port/db, with --schema naming the store's schema).
    """
    tune_gc()


def tune_gc() -> None:
    """Collect garbage less often: erpsim's heaps are large and long-lived.

    The books' working state and the projections' caches are millions of objects
    that live for the whole process; with CPython's default thresholds the collector
    keeps traversing them (about 12% of the command path's time, measured). Cycles
    are rare in erpsim's data, so collecting the young generation every 100,000
    allocations instead of 700 costs little memory.
    """
    import gc

    gc.set_threshold(100_000, 50, 100)


for _command in (bench, check_command, compare, demo, desk, export_group, freeze_command, ledger,
                 reconcile_command, report, rescore, run, sweep, validate, view_command):
    main.add_command(_command)
bench.add_command(bench_view)

__all__ = ["main", "tune_gc"]
