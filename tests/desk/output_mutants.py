"""Output mutations of a desk task's reference outputs, graded by the task's real checks.

The desk tasks' tests use two ways in. ``solved_attempt`` runs ``erpsim desk validate TASK
--out DIR`` (the solution as an external local agent, a real attempt folder) and
``regrade`` grades a copy of it after one edit of its final workspace (``drop_row``,
``add_row``, ``set_cell``, ``replace_text``, ``remove``). ``solve`` runs the solution on a
fresh copy of the workspace and ``survivors`` grades every mutant of a file in turn: the
classes of issue 14 for CSV files (``csv_mutants``: a missing row, a row added twice, a
wrong figure, a wrong identifier, a changed cell) and for text deliverables
(``text_mutants``: a wrong figure, a wrong qualifier such as a negation or the other
direction word, two sentences' figures swapped, a missing line). Nothing is mocked: the
checks are the task's own, LibreOffice recalculates workbooks, scripts and queries really
run. ``erpsim validate TASK --mutants`` draws the same classes of mistake at random
(runs/output_mutants.py); these tests pin each task's planted cases.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from checks.context import CheckContext
from checks.verdict import evaluate, run_check
from desk.tasks import DeskTask, load_task
from erp.store import EventStore
from runs.attempt import render_prompt
from runs.cli import main

Edit = Callable[[Path], None]


# --- an attempt folder, regraded after one edit ------------------------------------------


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



Case = tuple[str, Edit, str]
"""A planted mistake: its label, the edit of the final workspace, the check that fails."""


def edit_cases(task_id: str, cases: list[Case]) -> tuple[Any, Any, Any]:
    """A test module's ``attempt`` fixture (the solution's attempt folder, solved once per
    module) and its two tests: the solution accepted as it is, and each of ``cases``
    rejected by its named check. Assign them in the module:
    ``attempt, test_solution_is_accepted, test_mutation_is_rejected = edit_cases(...)``."""
    import pytest

    @pytest.fixture(scope="module")
    def attempt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
        tmp = tmp_path_factory.mktemp(task_id)
        return solved_attempt(task_id, tmp), tmp

    def test_solution_is_accepted(attempt: tuple[Path, Path]) -> None:
        verdict = regrade(attempt[0], task_id, attempt[1], lambda ws: None)
        assert verdict.status == "accepted", failed_names(verdict)

    @pytest.mark.parametrize(("label", "edit", "check"), cases, ids=[c[0] for c in cases])
    def test_mutation_is_rejected(attempt: tuple[Path, Path], label: str, edit: Edit,
                                  check: str) -> None:
        verdict = regrade(attempt[0], task_id, attempt[1], edit)
        assert verdict.status == "rejected", label
        assert check in failed_names(verdict), sorted(failed_names(verdict))

    return attempt, test_solution_is_accepted, test_mutation_is_rejected

def failed_with_edit(attempt: Path, task_id: str, tmp: Path, rel: str, *, old: str = "",
                     new: str = "", extra: str = "", whole: str | None = None) -> set[str]:
    """The required checks a copy of ``attempt`` fails with its text file ``rel`` changed:
    ``whole`` as its text (else the file's), ``old`` replaced once by ``new`` (``old``
    must be there), ``extra`` appended as a paragraph of its own."""

    def edit(ws: Path) -> None:
        path = ws / rel
        text = path.read_text(encoding="utf-8") if whole is None else whole
        if old:
            assert old in text, old
            text = text.replace(old, new, 1)
        path.write_text(text.rstrip("\n") + ("\n\n" + extra if extra else "") + "\n",
                        encoding="utf-8")

    return failed_names(regrade(attempt, task_id, tmp, edit))


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


# --- a solved workspace, every mutant of a file graded in turn ---------------------------


@dataclass
class Solved:
    """A task solved into a workspace: the task, the workspace and a grader for it."""

    task: DeskTask
    workspace: Path
    store: EventStore
    cache: dict[Any, Any] = field(default_factory=dict)
    """Shared by every grading: the workbook recalculations, keyed by the bytes' sha256."""

    def failed(self) -> list[str]:
        """The required checks that fail on the workspace as it is now (grader errors too)."""
        loaded = self.task.loaded
        inputs = tuple(sorted(loaded.workspace_files))
        ctx = CheckContext(self.store, workspace=self.workspace,
                           reference=loaded.reference_dir, inputs=inputs,
                           cache=self.cache)
        v = evaluate(loaded.checks, ctx)
        bad = [r.name for r in v.results if r.required and not r.passed]
        return bad + [f"grader-error:{e.check}" for e in v.grader_errors]

    def refused(self, first: str | None = None) -> bool:
        """Whether a required check fails (or cannot grade) on the workspace as it is now,
        as :meth:`failed` is non-empty: the checks reading ``first`` run first, and the
        rest only while none has refused (a mutant's fate needs one refusal, not the
        whole verdict; a task's workbook recalculations then run only when needed)."""
        loaded = self.task.loaded
        inputs = tuple(sorted(loaded.workspace_files))
        ctx = CheckContext(self.store, workspace=self.workspace,
                           reference=loaded.reference_dir, inputs=inputs,
                           cache=self.cache)
        order = sorted(enumerate(loaded.checks),
                       key=lambda c: getattr(c[1], "path", None) != first)
        for i, spec in order:
            try:
                results = run_check(spec, i, ctx)
            except Exception:
                return True
            if any(r.required and not r.passed for r in results):
                return True
        return False

    def path(self, rel: str) -> Path:
        """A file of the workspace."""
        return self.workspace / rel

    def failed_with_text(self, rel: str, edit: dict[str, str]) -> list[str]:
        """``failed`` with each ``old`` of ``edit`` replaced by its ``new`` in the file
        ``rel`` (each must be there), the file put back afterwards."""
        path = self.path(rel)
        original = path.read_text(encoding="utf-8")
        text = original
        for old, new in edit.items():
            assert old in text, old
            text = text.replace(old, new)
        try:
            path.write_text(text, encoding="utf-8")
            return self.failed()
        finally:
            path.write_text(original, encoding="utf-8")

    def failed_with_line(self, rel: str, line: str) -> list[str]:
        """``failed`` with ``line`` added at the end of the file ``rel`` (after a line
        break), the file put back afterwards."""
        original = self.path(rel).read_text(encoding="utf-8")
        return self.failed_with_text(rel, {original: original + "\n" + line + "\n"})

    def failed_with_column(self, rel: str, column: str, change: Callable[[str], str],
                           row: int | None = None) -> list[str]:
        """``failed`` with ``column`` of the CSV file ``rel`` rewritten by ``change`` (in
        every data row, or in data row ``row`` only), the file put back afterwards."""
        path = self.path(rel)
        original = path.read_text(encoding="utf-8")
        rows = list(csv.reader(io.StringIO(original)))
        i = rows[0].index(column)
        for n, r in enumerate(rows[1:]):
            if row is None or n == row:
                r[i] = change(r[i])
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        try:
            path.write_text(out.getvalue(), encoding="utf-8")
            return self.failed()
        finally:
            path.write_text(original, encoding="utf-8")


def solve(task_id: str, where: Path) -> Solved:
    """Run the task's solution on a fresh copy of its workspace under ``where``."""
    task = load_task(task_id)
    ws = where / "ws"
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    for rel, data in task.loaded.workspace_files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(data)
    (ws / "out").mkdir()
    prompt = ws / "prompt.md"
    day = task.spec.date
    outputs = "\n".join(f"- `{p}`" for p in task.spec.outputs)
    prompt.write_text(render_prompt(task.loaded.prompt_template, {
        "title": task.title, "date": day.isoformat(), "weekday": day.strftime("%A"),
        "outputs": outputs, "company": "", "turn": "1", "turns": "1", "inbox_count": "0"}),
        encoding="utf-8")
    subprocess.run([sys.executable, str(task.solution), "--workspace", str(ws),
                    "--prompt-file", str(prompt), "--output-dir", str(ws / "out")],
                   check=True, capture_output=True, timeout=300)
    store = EventStore.open(where / "empty.db", create=True)
    return Solved(task, ws, store)


# --- CSV mutations -------------------------------------------------------------------

NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def csv_mutants(path: Path, *, id_columns: tuple[str, ...]
                ) -> Iterator[tuple[str, str, Callable[[], None]]]:
    """(class, description, apply) for every row: dropped, added twice, each figure one
    cent up (a changed cell / wrong figure), each identifier cell changed."""
    rows = read_rows(path)
    header, data = rows[0], rows[1:]
    for i, row in enumerate(data):
        def drop(i: int = i) -> None:
            write_rows(path, [header, *data[:i], *data[i + 1:]])

        def add(i: int = i) -> None:
            write_rows(path, [header, *data[:i + 1], list(data[i]), *data[i + 1:]])

        yield "missing row", f"{path.name} row {i + 1} dropped", drop
        yield "add a row", f"{path.name} row {i + 1} added twice", add
        for k, cell in enumerate(row):
            name = header[k]
            if NUMBER.match(cell.strip()):
                def figure(i: int = i, k: int = k) -> None:
                    new = [list(r) for r in data]
                    v = new[i][k]
                    places = len(v.split(".")[1]) if "." in v else 0
                    step = 10 ** -max(places, 2)
                    new[i][k] = f"{float(v) + step:.{max(places, 2)}f}"
                    write_rows(path, [header, *new])

                yield "wrong figure", f"{path.name} row {i + 1} {name} moved", figure
            elif name in id_columns:
                def ident(i: int = i, k: int = k) -> None:
                    new = [list(r) for r in data]
                    new[i][k] = _other_id(new[i][k], [r[k] for r in data])
                    write_rows(path, [header, *new])

                yield "wrong identifier", f"{path.name} row {i + 1} {name} changed", ident
            elif cell.strip():
                def text(i: int = i, k: int = k) -> None:
                    new = [list(r) for r in data]
                    others = sorted({r[k] for r in data} - {new[i][k]})
                    new[i][k] = others[0] if others else new[i][k] + " (edited)"
                    write_rows(path, [header, *new])

                yield "change a cell", f"{path.name} row {i + 1} {name} changed", text


def _other_id(value: str, column: list[str]) -> str:
    """Another row's identifier when there is one (a plausible mistake), else an edit."""
    others = [v for v in column if v != value]
    return others[0] if others else value + "X"


# --- text mutations ------------------------------------------------------------------

FIGURE = re.compile(r"\d[\d,]*\.\d{2}")

OPPOSITES = (("increased", "decreased"), ("decreased", "increased"), ("above", "below"),
             ("below", "above"), ("higher", "lower"), ("lower", "higher"),
             ("overdue", "not yet due"), ("capitalize", "expense"), ("capitalized", "expensed"),
             ("expensed", "capitalized"), ("supported", "unsupported"),
             ("unsupported", "supported"))


def text_mutants(path: Path) -> Iterator[tuple[str, str, Callable[[], None]]]:
    """Wrong figure (each figure one cent up), wrong qualifier (each direction word to its
    opposite; "not" put in each sentence carrying a figure), wrong sentence (two
    sentences' figures swapped), missing line (each line with a figure dropped)."""
    text = path.read_text(encoding="utf-8")
    for m in FIGURE.finditer(text):
        def figure(m: re.Match[str] = m) -> None:
            v = m.group().replace(",", "")
            new = f"{float(v) + 0.01:,.2f}"
            path.write_text(text[:m.start()] + new + text[m.end():], encoding="utf-8")

        yield "wrong figure", f"figure {m.group()} one cent up", figure
    for word, other in OPPOSITES:
        for m in re.finditer(rf"\b{word}\b", text, re.IGNORECASE):
            def flip(m: re.Match[str] = m, other: str = other) -> None:
                path.write_text(text[:m.start()] + other + text[m.end():], encoding="utf-8")

            yield "wrong qualifier", f"{m.group()!r} at {m.start()} -> {other!r}", flip
    lines = text.split("\n")
    for i, line in enumerate(lines):
        verb = re.search(r"\b(is|was|were|are|has|have|increased|decreased|came in|"
                         r"remains?|totals?|should|will)\b", line)
        if FIGURE.search(line) and verb:
            def negate(i: int = i, verb: re.Match[str] = verb) -> None:
                new = list(lines)
                ln = new[i]
                new[i] = ln[:verb.start()] + "did not say it " + ln[verb.start():] \
                    if verb.group() in ("increased", "decreased", "came in", "totals",
                                        "total") else ln[:verb.end()] + " not" + ln[verb.end():]
                path.write_text("\n".join(new), encoding="utf-8")

            yield "wrong qualifier", f"line {i + 1} negated", negate

        if FIGURE.search(line):
            def drop(i: int = i) -> None:
                path.write_text("\n".join(lines[:i] + lines[i + 1:]), encoding="utf-8")

            yield "missing row", f"line {i + 1} dropped", drop
    figs = list(FIGURE.finditer(text))
    for a, b in itertools.pairwise(figs):
        if a.group() == b.group() or "\n" not in text[a.end():b.start()]:
            continue

        def swap(a: re.Match[str] = a, b: re.Match[str] = b) -> None:
            path.write_text(text[:a.start()] + b.group() + text[a.end():b.start()] + a.group()
                            + text[b.end():], encoding="utf-8")

        yield "wrong sentence", f"figures {a.group()} and {b.group()} swapped", swap


def survivors(solved: Solved, rel: str,
              mutants: Iterator[tuple[str, str, Callable[[], None]]]
              ) -> tuple[dict[str, int], list[str]]:
    """Apply each mutant to ``rel`` in turn (restoring it between), grade it; the count
    per class and the mutants every required check still accepted."""
    path = solved.path(rel)
    original = path.read_bytes()
    counts: dict[str, int] = {}
    alive: list[str] = []
    for cls, what, apply in mutants:
        apply()
        try:
            if path.read_bytes() == original:
                continue  # equivalent: nothing changed
            counts[cls] = counts.get(cls, 0) + 1
            if not solved.refused(first=rel):
                alive.append(f"{cls}: {what}")
        finally:
            path.write_bytes(original)
    return counts, alive


def assert_total_row_refused_as_told(solved: Solved, task_id: str, rel: str) -> list[str]:
    """The task's prompt says its table has no total row, and a 'Total' row appended to
    ``rel`` is refused; the required checks it fails (the file is put back)."""
    prompt = " ".join(load_task(task_id).loaded.prompt_template.split())
    assert "no total row" in prompt, task_id
    path = solved.path(rel)
    original = path.read_text(encoding="utf-8")
    try:
        rows = read_rows(path)
        write_rows(path, [*rows, ["Total"] + [""] * (len(rows[0]) - 1)])
        failed = solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")
    assert failed, f"{task_id}: a Total row in {rel} passed every check"
    return failed
