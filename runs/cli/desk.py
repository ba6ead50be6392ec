"""``erpsim desk``: list the desk tasks, validate them, regenerate their files.

The validation itself (solution accepted, null rejected, generation deterministic) is
:mod:`runs.desk_validation`; this module parses the options and prints. ``desk validate``
exits 0 only when every task passes; 1 when one fails; 2 for a task that cannot be loaded.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from desk.errors import DeskTaskError, GeneratorFailed
from desk.tasks import list_tasks, load_task, write_generated
from runs.cli.common import EXIT_FAILED, EXIT_OK, OUT_DIR, fail
from runs.desk_validation import validate_tasks


def _mark(ok: bool | None) -> str:
    return "-" if ok is None else ("ok" if ok else "FAIL")


@click.group()
def desk() -> None:
    """Desk tasks: one request, a workspace of files, checks; run as one-date scenarios."""


@desk.command("list")
def list_command() -> None:
    """List the desk tasks: id, category, title and number of checks."""
    rows = []
    for name in list_tasks():
        try:
            task = load_task(name)
        except DeskTaskError as e:
            fail(e)
        rows.append((task.id, task.category, str(len(task.loaded.checks)), task.title))
    if not rows:
        click.echo("no desk tasks")
        return
    widths = [max(len(r[i]) for r in [("id", "category", "checks", "title"), *rows])
              for i in range(3)]
    for row in [("id", "category", "checks", "title"), *rows]:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True))
                   + "  " + row[3])


@desk.command("validate")
@click.argument("task", required=False)
@click.option("--all", "all_tasks", is_flag=True, help="Validate every sample task.")
@click.option("--out", type=OUT_DIR, default=None,
              help="Keep the attempt folders and validation.json here (default: a "
                   "temporary folder, removed).")
def validate_command(task: str | None, all_tasks: bool, out: Path | None) -> None:
    """Validate TASK (a name or a folder) or --all: solution accepted, null rejected,
    generation deterministic; list tasks whose supplied bytes differ from a fresh
    generation."""
    if (task is None) == (not all_tasks):
        raise click.UsageError("give one TASK or --all")
    names: list[str | Path] = list(list_tasks()) if all_tasks else [task or ""]
    try:
        tasks = [load_task(n) for n in names]
    except DeskTaskError as e:
        fail(e)
    keep = out is not None
    workdir = out if out is not None else Path(tempfile.mkdtemp(prefix="erpsim-desk-"))
    results = validate_tasks(tasks, workdir, keep=keep)
    header = ("task", "category", "solution", "null", "generation", "seconds")
    rows = [(r.task, r.category, _mark(r.solution_accepted), _mark(r.null_rejected),
             _mark(r.deterministic), f"{sum(r.seconds.values()):.1f}") for r in results]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    for r in results:
        if not r.solution_accepted:
            click.echo(f"{r.task}: solution not accepted: {r.solution_detail}")
        if not r.null_rejected:
            click.echo(f"{r.task}: untouched workspace not rejected: {r.null_detail}")
        if r.deterministic is False:
            click.echo(f"{r.task}: generation is not deterministic")
    differs = [r for r in results if r.supplied_differs]
    for r in differs:
        click.echo(f"warning: {r.task}: supplied bytes differ from a fresh generation: "
                   f"{', '.join(r.supplied_differs)}")
    passed = sum(r.passed for r in results)
    click.echo(f"{passed}/{len(results)} tasks pass")
    sys.exit(EXIT_OK if passed == len(results) else EXIT_FAILED)


@desk.command("generate")
@click.argument("task")
def generate_command(task: str) -> None:
    """Write TASK's generated workspace and reference files (a new release of its inputs).

    A workspace file the generator no longer makes is removed; reference/ is not swept.
    """
    try:
        t = load_task(task, check_files=False)
        changed = write_generated(t)
    except (DeskTaskError, GeneratorFailed) as e:
        fail(e)
    for action, rel in changed:
        click.echo(f"{action} {rel}")
    click.echo(f"{t.id}: {len(changed)} file(s) changed")


