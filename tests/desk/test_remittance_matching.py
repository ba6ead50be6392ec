"""remittance-matching: the reference outputs pass; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's own checks grade its file.
Each mutant of the matched lines (a row dropped or added twice, a figure a cent off, an
invoice id or advice changed to another row's, a status changed) must fail at least one
required check; so must the plausible wrong readings: the short payment called paid,
the unknown reference given an open amount, an advice's total taken as a line. Each tier
generates; ``erpsim run`` accepts the reference and rejects the null agent.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from desk.errors import GenerationError
from desk.generators import GeneratorContext
from desk.generators.remittance_matching import TIERS, generate
from desk.tasks import load_task
from runs.cli import main
from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "remittance-matching"
OUT = "out/remittance_lines.csv"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def _rows(solved: Solved) -> list[dict[str, str]]:
    with solved.path(OUT).open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _edit(solved: Solved, change: object) -> list[str]:
    path = solved.path(OUT)
    original = path.read_text(encoding="utf-8")
    rows = _rows(solved)
    change(rows)  # type: ignore[operator]
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["remittance"],
                           lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    try:
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_reference_outputs_pass(solved: Solved) -> None:
    assert solved.failed() == []


def test_the_advices_come_in_three_formats(solved: Solved) -> None:
    kinds = {p.suffix for p in solved.path("remittances").iterdir()}
    assert kinds == {".pdf", ".txt", ".csv"}
    assert {r["status"] for r in _rows(solved)} == {"paid", "short_paid", "unknown_reference"}


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert "lines-columns" in s.failed()


def test_every_output_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, OUT, csv_mutants(solved.path(OUT),
                                                       id_columns=("invoice_id", "remittance")))
    assert {"missing row", "add a row", "wrong figure", "wrong identifier",
            "change a cell"} <= set(counts)
    assert alive == []


def test_the_short_payment_called_paid_fails(solved: Solved) -> None:
    def paid(rows: list[dict[str, str]]) -> None:
        for r in rows:
            if r["status"] == "short_paid":
                r["status"], r["amount"] = "paid", r["open_amount"]
    assert _edit(solved, paid) == ["lines-amounts-to-the-cent", "lines-status"]


def test_the_unknown_reference_left_out_fails(solved: Solved) -> None:
    def drop(rows: list[dict[str, str]]) -> None:
        rows[:] = [r for r in rows if r["status"] != "unknown_reference"]
    failed = _edit(solved, drop)
    assert {"lines-exactly-the-invoices-named", "lines-one-row-each"} <= set(failed)


def test_an_invoice_id_as_the_advice_writes_it_fails(solved: Solved) -> None:
    def raw(rows: list[dict[str, str]]) -> None:
        rows[0]["invoice_id"] = rows[0]["invoice_id"].replace("INV-", "INV ")
    assert "lines-exactly-the-invoices-named" in _edit(solved, raw)


def test_an_advice_total_taken_as_a_line_fails(solved: Solved) -> None:
    def total(rows: list[dict[str, str]]) -> None:
        first = rows[0]["remittance"]
        amount = sum(float(r["amount"]) for r in rows if r["remittance"] == first)
        rows.append({"remittance": first, "invoice_id": "", "amount": f"{amount:.2f}",
                     "open_amount": "", "status": "unknown_reference"})
    assert "lines-exactly-the-invoices-named" in _edit(solved, total)


def test_amounts_with_thousands_separators_fail(solved: Solved) -> None:
    def commas(rows: list[dict[str, str]]) -> None:
        for r in rows:
            if float(r["amount"]) >= 1000:
                r["amount"] = f"{float(r['amount']):,.2f}"
                return
    assert _edit(solved, commas) == ["lines-amounts-to-the-cent"]


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_each_tier_generates_its_exceptions(tier: str) -> None:
    task = load_task(TASK)
    ctx = GeneratorContext(TASK, 11, task.spec.date, task.loaded.scenario, {"tier": tier})
    files = generate(ctx)
    ref = files["reference/remittance_lines.csv"].decode().splitlines()[1:]
    n_rem, _, n_short, n_unknown = TIERS[tier]
    assert sum(1 for k in files if k.startswith("workspace/remittances/")) == n_rem
    assert sum(r.endswith(",short_paid") for r in ref) == n_short
    assert sum(r.endswith(",unknown_reference") for r in ref) == n_unknown
    assert generate(ctx) == files


def test_an_unknown_tier_is_refused() -> None:
    task = load_task(TASK)
    ctx = GeneratorContext(TASK, 11, task.spec.date, task.loaded.scenario, {"tier": "brutal"})
    with pytest.raises(GenerationError, match=r"params.tier: 'brutal' \(expected one of: easy, "
                                        r"medium, hard\)"):
        generate(ctx)


def test_run_accepts_the_reference_and_rejects_null(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["run", TASK, "--agent", "reference", "--out",
                                   str(tmp_path / "ref")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(main, ["run", TASK, "--agent", "null", "--out",
                                    str(tmp_path / "null")])
    assert bad.exit_code == 1, bad.output




@pytest.mark.parametrize("prefix", ["remittances/", "./remittances/"])
def test_file_names_written_as_paths_pass(solved: Solved, prefix: str) -> None:
    """remittance as the file's path in the workspace (remittances/x.pdf) names the same file."""
    assert solved.failed_with_column("out/remittance_lines.csv", "remittance",
                                     lambda v: prefix + v) == []


def test_another_file_written_as_a_path_fails(solved: Solved) -> None:
    """A path to the wrong file is still the wrong file."""
    assert "lines-on-the-right-advice" in solved.failed_with_column(
        "out/remittance_lines.csv", "remittance", lambda v: "remittances/other_" + v, row=0)


def test_status_capitalised_passes_and_a_wrong_status_fails(solved: Solved) -> None:
    """Paid / Short_paid are the prompt's statuses (compared case-insensitively: they were
    refused); a paid line called short_paid, in any case, still fails."""
    def capitalise(rows: list[dict[str, str]]) -> None:
        for r in rows:
            r["status"] = r["status"].capitalize()

    assert solved.failed_with_column(OUT, "status", str.capitalize) == []
    assert _edit(solved, capitalise) == []

    def wrong(rows: list[dict[str, str]]) -> None:
        first = next(r for r in rows if r["status"] == "paid")
        first["status"] = "Short_paid"

    assert _edit(solved, wrong) == ["lines-status"]
