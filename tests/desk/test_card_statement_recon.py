"""card-statement-recon: the reference outputs pass; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's own checks grade its files.
Each mutant of the recon and the summary (a row dropped or added twice, a figure a cent
off, a txn_id or status changed to another row's) must fail at least one required check;
so must the plausible wrong readings: both copies of the duplicate matched, the refund
left without its charge's line, a charge given to the other Chen, the bank's form of a
name, the statement's date style. Each tier generates its planted lines; ``erpsim run``
accepts the reference and rejects the null agent.
"""

from __future__ import annotations

import csv
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from desk.errors import GenerationError
from desk.generators import GeneratorContext
from desk.generators.card_statement_recon import TIERS, generate
from desk.tasks import load_task
from runs.cli import main
from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "card-statement-recon"
RECON = "out/card_recon.csv"

Rows = list[dict[str, str]]


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def _rows(solved: Solved, rel: str = RECON) -> Rows:
    with solved.path(rel).open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _edit(solved: Solved, change: Callable[[Rows], None], rel: str = RECON) -> list[str]:
    path = solved.path(rel)
    original = path.read_text(encoding="utf-8")
    rows = _rows(solved, rel)
    change(rows)
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    try:
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_reference_outputs_pass(solved: Solved) -> None:
    assert solved.failed() == []
    statuses = {r["status"] for r in _rows(solved)}
    assert statuses == {"matched", "duplicate_charge", "refund", "no_report"}


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert {"recon-columns", "summary-columns"} <= set(s.failed())


@pytest.mark.parametrize("rel,ids", [(RECON, ("txn_id", "employee", "report_line")),
                                     ("out/summary.csv", ("status",))])
def test_every_output_mutant_fails(solved: Solved, rel: str, ids: tuple[str, ...]) -> None:
    counts, alive = survivors(solved, rel, csv_mutants(solved.path(rel), id_columns=ids))
    assert {"missing row", "add a row", "wrong figure", "wrong identifier"} <= set(counts)
    assert alive == []


def test_the_duplicate_matched_too_fails(solved: Solved) -> None:
    def both(rows: Rows) -> None:
        for r in rows:
            if r["status"] == "duplicate_charge":
                r["status"] = "matched"
    assert _edit(solved, both) == ["recon-status"]


def test_the_first_copy_called_the_duplicate_fails(solved: Solved) -> None:
    def swap(rows: Rows) -> None:
        dup = next(r for r in rows if r["status"] == "duplicate_charge")
        first = next(r for r in rows if r["status"] == "matched"
                     and r["report_line"] == dup["report_line"])
        first["status"], dup["status"] = "duplicate_charge", "matched"
    assert _edit(solved, swap) == ["recon-status"]


def test_the_refund_without_its_charge_fails(solved: Solved) -> None:
    def bare(rows: Rows) -> None:
        for r in rows:
            if r["status"] == "refund":
                r["report_line"] = ""
    assert _edit(solved, bare) == ["recon-report-line"]


def test_the_refund_as_a_positive_amount_fails(solved: Solved) -> None:
    def positive(rows: Rows) -> None:
        for r in rows:
            if r["status"] == "refund":
                r["amount"] = r["amount"].lstrip("-")
    assert _edit(solved, positive) == ["recon-date-and-amount"]


def test_a_charge_given_to_the_other_chen_fails(solved: Solved) -> None:
    rows = _rows(solved)
    chens = sorted({r["employee"] for r in rows if "Chen" in r["employee"]})
    assert len(chens) == 2

    def other(rows: Rows) -> None:
        r = next(r for r in rows if r["employee"] == chens[0])
        r["employee"] = chens[1]
    assert _edit(solved, other) == ["recon-employee-as-in-the-report"]


def test_the_banks_name_and_date_style_fail(solved: Solved) -> None:
    def bank(rows: Rows) -> None:
        r = rows[0]
        first, last = (r["employee"].split(", ")[::-1] if "," in r["employee"]
                       else r["employee"].split())
        r["employee"] = f"{last.upper()}/{first.upper()}"
        y, m, d = r["trans_date"].split("-")
        r["trans_date"] = f"{m}/{d}/{y}"
    assert _edit(solved, bank) == ["recon-employee-as-in-the-report", "recon-date-and-amount"]


def test_a_summary_without_the_refund_fails(solved: Solved) -> None:
    def gross(rows: Rows) -> None:
        total = next(r for r in rows if r["status"] == "total")
        refund = next(r for r in rows if r["status"] == "refund")
        total["amount"] = f"{float(total['amount']) - float(refund['amount']):.2f}"
    assert _edit(solved, gross, "out/summary.csv") == ["summary-figures-to-the-cent"]


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_each_tier_generates_its_planted_lines(tier: str) -> None:
    task = load_task(TASK)
    ctx = GeneratorContext(TASK, 5, task.spec.date, task.loaded.scenario, {"tier": tier})
    files = generate(ctx)
    summary = {line.split(",")[0]: int(line.split(",")[1])
               for line in files["reference/summary.csv"].decode().splitlines()[1:]}
    _, _, _, n_dup, n_ref, n_none = TIERS[tier]
    assert (summary["duplicate_charge"], summary["refund"], summary["no_report"]) == (
        n_dup, n_ref, n_none)
    assert generate(ctx) == files


def test_an_unknown_tier_is_refused() -> None:
    task = load_task(TASK)
    ctx = GeneratorContext(TASK, 5, task.spec.date, task.loaded.scenario, {"tier": "brutal"})
    with pytest.raises(GenerationError, match=r"params.tier: 'brutal' \(expected one of: "
                                              r"easy, medium, hard\)"):
        generate(ctx)


def test_run_accepts_the_reference_and_rejects_null(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["run", TASK, "--agent", "reference", "--out",
                                   str(tmp_path / "ref")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(main, ["run", TASK, "--agent", "null", "--out",
                                    str(tmp_path / "null")])
    assert bad.exit_code == 1, bad.output


def test_the_summary_total_row_is_lower_case_as_the_prompt_says(solved: Solved) -> None:
    """The summary's checks read the status column as written (case-sensitive): 'Total' is
    refused, so the prompt names the row's status in lower case."""
    prompt = " ".join(load_task(TASK).loaded.prompt_template.split())
    assert "a row with the status total (lower case, as the statuses are)" in prompt
    path = solved.path("out/summary.csv")
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original.replace("\ntotal,", "\nTotal,"), encoding="utf-8")
        assert {"summary-every-status-and-total", "summary-figures-to-the-cent"} <= set(
            solved.failed())
    finally:
        path.write_text(original, encoding="utf-8")


def test_a_total_row_is_refused_as_the_prompt_says(solved: Solved) -> None:
    """'one row per ...' did not say whether a total row may follow; the prompt now says
    no total row, and one is refused."""
    from tests.desk.output_mutants import assert_total_row_refused_as_told

    assert_total_row_refused_as_told(solved, TASK, RECON)


def test_statuses_capitalized_are_accepted_and_a_wrong_one_refused(solved: Solved) -> None:
    """'Matched', 'No_report' for matched, no_report (casefold on status); a matched line
    called No_report is still refused."""
    path = solved.path(RECON)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original.replace(",matched,", ",Matched,")
                        .replace(",no_report,", ",No_report,"), encoding="utf-8")
        assert solved.failed() == []
        path.write_text(original.replace(",matched,", ",No_report,", 1), encoding="utf-8")
        assert "recon-status" in solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")
