"""``erpsim desk``: list the desk tasks and validate them (positive and negative controls).

``erpsim desk validate TASK|--all`` runs, for each task, as one-date scenarios through
``run_attempt``:

1. the reference solution (``solution/solve``) as an external local agent: it must be
   accepted;
2. the null agent on the untouched workspace: it must be rejected (without a grader
   error);
3. the generator twice with the task's seed: the same bytes both times;

and lists the tasks whose committed (supplied) bytes differ from a fresh generation (a
warning: the supplied bytes define the release). Exit 0 only when every task passes
1-3; 1 when one fails; 2 for a task that cannot be loaded.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

from desk.errors import DeskTaskError, GeneratorFailed
from desk.tasks import DeskTask, generate, list_tasks, load_task, supplied_differs, write_generated
from runs.cli import main

REPORT_FILE = "validation.json"


@dataclass
class TaskValidation:
    """What validating one task found."""

    task: str
    category: str
    solution_accepted: bool | None = None
    solution_detail: str = ""
    null_rejected: bool | None = None
    null_detail: str = ""
    deterministic: bool | None = None
    """None for a task without a generator (nothing to regenerate)."""
    supplied_differs: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Accepted solution, rejected null, deterministic generation (when generated)."""
        return bool(self.solution_accepted) and bool(self.null_rejected) \
            and self.deterministic is not False


def _verdict_detail(summary: dict[str, Any]) -> str:
    v = summary.get("verdict", {})
    status = v.get("status", "?")
    failed = v.get("failed") or []
    errors = v.get("grader_errors") or []
    turns = summary.get("turns") or []
    process = turns[0].get("status") if turns else "no turn"
    parts = [f"{status} (agent {process})"]
    if failed:
        parts.append("failed: " + ", ".join(failed[:6]) + (" ..." if len(failed) > 6 else ""))
    if errors:
        parts.append("grader errors: " + ", ".join(errors[:6]))
    return "; ".join(parts)


def validate_task(task: DeskTask, workdir: Path) -> TaskValidation:
    """Run the three controls on one task; attempt folders under ``workdir/<task>/``."""
    from runs.attempt import run_attempt
    from runs.external import ExternalAgent

    result = TaskValidation(task=task.id, category=task.category)
    base = workdir / task.id
    if base.exists():
        shutil.rmtree(base)
    started = time.perf_counter()
    agent = ExternalAgent(task.solution, mode="local", timeout_s=task.timeout_s,
                          name="solution")
    solved = run_attempt(task.loaded, task.seed, "solution", base / "solution", agent=agent)
    result.seconds["solution"] = round(time.perf_counter() - started, 2)
    result.solution_accepted = bool(solved.summary["verdict"]["accepted"])
    result.solution_detail = _verdict_detail(solved.summary)
    started = time.perf_counter()
    null = run_attempt(task.loaded, task.seed, "null", base / "null")
    result.seconds["null"] = round(time.perf_counter() - started, 2)
    result.null_rejected = null.summary["verdict"]["status"] == "rejected"
    result.null_detail = _verdict_detail(null.summary)
    if task.spec.generator is not None:
        started = time.perf_counter()
        first, second = generate(task), generate(task)
        result.deterministic = first == second
        result.seconds["generate"] = round((time.perf_counter() - started) / 2, 2)
        result.supplied_differs = [rel for rel, data in first.items()
                                   if not (task.folder / rel).is_file()
                                   or (task.folder / rel).read_bytes() != data]
    return result


def _mark(ok: bool | None) -> str:
    return "-" if ok is None else ("ok" if ok else "FAIL")


@main.group()
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
            click.echo(f"error: {e}", err=True)
            sys.exit(2)
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
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
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
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    keep = out is not None
    workdir = out if out is not None else Path(tempfile.mkdtemp(prefix="erpsim-desk-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: list[TaskValidation] = []
    try:
        for t in tasks:
            try:
                results.append(validate_task(t, workdir))
            except GeneratorFailed as e:
                r = TaskValidation(task=t.id, category=t.category, deterministic=False,
                                   solution_detail=str(e))
                results.append(r)
    finally:
        if keep:
            (workdir / REPORT_FILE).write_text(
                json.dumps([asdict(r) | {"passed": r.passed} for r in results], indent=2)
                + "\n", encoding="utf-8")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
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
    sys.exit(0 if passed == len(results) else 1)


@desk.command("generate")
@click.argument("task")
def generate_command(task: str) -> None:
    """Write TASK's generated workspace and reference files (a new release of its inputs)."""
    try:
        t = load_task(task, check_files=False)
        changed = write_generated(t)
    except (DeskTaskError, GeneratorFailed) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    for rel in changed:
        click.echo(f"wrote {rel}")
    click.echo(f"{t.id}: {len(changed)} file(s) changed")


__all__ = ["TaskValidation", "desk", "supplied_differs", "validate_task"]
