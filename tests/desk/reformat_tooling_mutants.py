"""Output mutations of a desk task's reference outputs, regraded by the task's real checks.

Used by the reformatting and tooling tasks' tests: the task's solution runs once through
``erpsim desk validate TASK --out DIR`` (an external local agent, a real attempt folder);
each mutation copies that attempt, edits a file of its final workspace (drop a row,
change a cell, add a row, a wrong figure or identifier, a file's text) and grades the
copy again with ``runs.grading.grade_folder``. Nothing is mocked: the checks are the
task's own, LibreOffice recalculates workbooks, scripts and queries really run.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from desk.tasks import load_task
from runs.cli import main

Edit = Callable[[Path], None]


def solved_attempt(task_id: str, tmp: Path) -> Path:
    """Run ``erpsim desk validate TASK --out`` and return the solution's attempt folder."""
    result = CliRunner().invoke(main, ["desk", "validate", task_id, "--out", str(tmp)])
    assert result.exit_code == 0, result.output
    return tmp / task_id / "solution"


def regrade(attempt: Path, task_id: str, tmp: Path, edit: Edit) -> Any:
    """Grade a copy of ``attempt`` after ``edit`` changed its final workspace (given ``ws``)."""
    from runs.grading import final_workspace, grade_folder

    n = len(list(tmp.glob("mutant-*")))
    copy = tmp / f"mutant-{n}"
    shutil.copytree(attempt, copy)
    ws = final_workspace(copy)
    assert ws is not None
    edit(ws)
    return grade_folder(copy, load_task(task_id).loaded)


def failed_names(verdict: Any) -> set[str]:
    """The names of the required checks that failed (grader errors count as failing)."""
    return {r.name for r in verdict.results if r.required and not r.passed}


def read_rows(path: Path) -> list[list[str]]:
    """A CSV file's rows, header first."""
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def write_rows(path: Path, rows: list[list[str]]) -> None:
    """Write rows (header first) as CSV."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def drop_row(rel: str, index: int) -> Edit:
    """Drop data row ``index`` of a CSV."""
    def edit(ws: Path) -> None:
        rows = read_rows(ws / rel)
        del rows[1 + index]
        write_rows(ws / rel, rows)
    return edit


def add_row(rel: str, row: list[str] | None = None, copy_of: int = 0) -> Edit:
    """Add ``row`` (default: data row ``copy_of`` again) to a CSV."""
    def edit(ws: Path) -> None:
        rows = read_rows(ws / rel)
        rows.append(list(row) if row is not None else list(rows[1 + copy_of]))
        write_rows(ws / rel, rows)
    return edit


def set_cell(rel: str, index: int, column: str, value: str | Callable[[str], str]) -> Edit:
    """Set (or transform) one cell of data row ``index`` of a CSV."""
    def edit(ws: Path) -> None:
        rows = read_rows(ws / rel)
        k = rows[0].index(column)
        old = rows[1 + index][k]
        rows[1 + index][k] = value(old) if callable(value) else value
        write_rows(ws / rel, rows)
    return edit


def cent_up(text: str) -> str:
    """A decimal money string one cent higher, written the same way (two decimals)."""
    cents = round(float(text) * 100) + 1
    return f"{'-' if cents < 0 else ''}{abs(cents) // 100}.{abs(cents) % 100:02d}"


def replace_text(rel: str, old: str, new: str) -> Edit:
    """Replace the first ``old`` in a text file by ``new`` (the text must be there)."""
    def edit(ws: Path) -> None:
        text = (ws / rel).read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {rel}"
        (ws / rel).write_text(text.replace(old, new, 1), encoding="utf-8")
    return edit


def remove(rel: str) -> Edit:
    """Remove an output file."""
    def edit(ws: Path) -> None:
        (ws / rel).unlink()
    return edit
