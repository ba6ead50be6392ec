"""invoice-pdf-extraction: the reference files pass; every mutation class fails a check.

The solution reads the real PDFs of the workspace (ReportLab text PDFs) and the task's
own checks grade its two CSV files. Every mutant of them (each row dropped or added
twice, each figure a cent up, each invoice number changed to another's, each text cell
changed) must fail a required check; so must the plausible mistakes of this work: the
due date left at the invoice date where only terms are printed, a wrapped description
keyed from its first printed line, the second page of a long invoice missed, the tax
left in the subtotal. ``erpsim run`` accepts the reference and rejects the null agent.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main
from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "invoice-pdf-extraction"
HEADERS = "out/invoices.csv"
LINES = "out/invoice_lines.csv"
REF = Path(__file__).resolve().parents[2] / "desk" / "tasks" / TASK / "reference"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _edited(solved: Solved, rel: str,
            change: Callable[[list[dict[str, str]]], list[dict[str, str]]]) -> list[str]:
    path = solved.path(rel)
    original = path.read_text(encoding="utf-8")
    rows = _rows(original)
    new = change([dict(r) for r in rows])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(new)
    assert buf.getvalue() != original
    path.write_text(buf.getvalue(), encoding="utf-8")
    try:
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_reference_outputs_pass(solved: Solved) -> None:
    assert solved.failed() == []


def test_the_solution_reads_every_layout_and_tier(solved: Solved) -> None:
    # the committed reference is the generator's; the solution's files equal it byte for byte
    for rel in (HEADERS, LINES):
        assert solved.path(rel).read_text(encoding="utf-8") == \
            (REF / Path(rel).name).read_text(encoding="utf-8")


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert {"invoices-columns", "lines-columns"} <= set(s.failed())


@pytest.mark.parametrize("rel,ids", [(HEADERS, ("invoice_number",)),
                                     (LINES, ("invoice_number",))])
def test_every_output_mutant_fails(solved: Solved, rel: str, ids: tuple[str, ...]) -> None:
    counts, alive = survivors(solved, rel, csv_mutants(solved.path(rel), id_columns=ids))
    assert {"missing row", "add a row", "wrong figure", "wrong identifier"} <= set(counts)
    assert alive == []


def test_due_date_left_at_the_invoice_date_fails(solved: Solved) -> None:
    def change(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        for r in rows:
            if r["vendor"].startswith(("Apex", "Brightline", "Summit", "Coastal")):
                r["due_date"] = r["invoice_date"]
        return rows
    assert _edited(solved, HEADERS, change) == ["invoices-dates"]


def test_a_wrapped_description_keyed_from_its_first_line_fails(solved: Solved) -> None:
    def change(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        long = next(r for r in rows if len(r["description"]) > 46)
        long["description"] = long["description"][:long["description"].rfind(" ", 0, 46)]
        return rows
    assert _edited(solved, LINES, change) == ["lines-descriptions"]


def test_the_second_page_missed_fails(solved: Solved) -> None:
    counts: dict[str, int] = {}
    for r in _rows(solved.path(LINES).read_text(encoding="utf-8")):
        counts[r["invoice_number"]] = counts.get(r["invoice_number"], 0) + 1
    longest = max(counts, key=lambda k: counts[k])
    assert counts[longest] >= 9  # the medium tier runs one invoice onto a second page

    def change(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return [r for r in rows if not (r["invoice_number"] == longest
                                        and int(r["line"]) > counts[longest] // 2)]
    failed = _edited(solved, LINES, change)
    assert {"lines-one-row-each", "lines-descriptions"} <= set(failed)


def test_tax_left_in_the_subtotal_fails(solved: Solved) -> None:
    def change(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        taxed = next(r for r in rows if r["tax"] != "0.00")
        taxed["subtotal"] = taxed["total"]
        return rows
    assert _edited(solved, HEADERS, change) == ["invoices-amounts-to-the-cent"]


def test_amounts_in_display_format_fail(solved: Solved) -> None:
    # the prompt asks for plain decimals to the cent: no currency symbol, no separators
    def display(text: str) -> str:
        v = float(text)
        return f"{'-' if v < 0 else ''}${abs(v):,.2f}"

    def headers(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        for r in rows:
            r["subtotal"], r["tax"], r["total"] = (display(r[c]) for c in
                                                   ("subtotal", "tax", "total"))
        return rows

    def lines(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        for r in rows:
            r["unit_price"], r["amount"] = display(r["unit_price"]), display(r["amount"])
        return rows

    assert _edited(solved, HEADERS, headers) == ["invoices-amounts-to-the-cent"]
    assert _edited(solved, LINES, lines) == ["lines-figures-to-the-cent"]


def test_run_accepts_the_reference_and_rejects_null(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["run", TASK, "--agent", "reference", "--out",
                                   str(tmp_path / "ref")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(main, ["run", TASK, "--agent", "null", "--out",
                                    str(tmp_path / "null")])
    assert bad.exit_code == 1, bad.output




@pytest.mark.parametrize("prefix", ["invoices/", "./invoices/"])
def test_file_names_written_as_paths_pass(solved: Solved, prefix: str) -> None:
    """file as the file's path in the workspace (invoices/x.pdf) names the same file."""
    assert solved.failed_with_column("out/invoices.csv", "file", lambda v: prefix + v) == []


def test_another_file_written_as_a_path_fails(solved: Solved) -> None:
    """A path to the wrong file is still the wrong file."""
    assert "invoices-file-vendor-po" in solved.failed_with_column(
        "out/invoices.csv", "file", lambda v: "invoices/other_" + v, row=0)
