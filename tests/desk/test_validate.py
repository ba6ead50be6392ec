"""``erpsim desk validate`` and ``list``: every sample task's controls, run once per module.

The fixture runs ``erpsim desk validate --all`` (the reference solution of every task as
an external local agent, the null agent, generation twice) and keeps its attempt folders
and ``validation.json``; the tests read them.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from checks.workbook import RECALCULATING
from desk.tasks import list_tasks, load_task
from runs.cli import main
from tests.desk.conftest import SOLVE_NOTHING

MakeTask = Callable[..., Path]

pytestmark = pytest.mark.timeout(900)
"""The module's fixture validates every task (an external solution, the null agent and two
generations each): minutes for the first test that uses it, more under load."""

NO_SOFFICE = shutil.which("soffice") is None and os.environ.get("CI", "").lower() not in (
    "1", "true", "yes")
"""The workbook checks need LibreOffice (CI installs it; elsewhere its task is skipped)."""
WORKBOOK_TASKS = {n for n in list_tasks()
                  if any(isinstance(c, RECALCULATING) for c in load_task(n).loaded.checks)}
"""The tasks with a check that recalculates a workbook (read from their specs, so a task
added with one is skipped too)."""


def _needs_soffice(name: str | None = None) -> None:
    if NO_SOFFICE and (name is None or name in WORKBOOK_TASKS):
        pytest.skip("soffice (Debian's libreoffice-calc) is not installed: the workbook "
                    "checks cannot recalculate")


@pytest.fixture(scope="module")
def validation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    """``erpsim desk validate --all --out DIR``: its result and DIR."""
    out = tmp_path_factory.mktemp("desk-validate")
    result = CliRunner().invoke(main, ["desk", "validate", "--all", "--out", str(out)])
    return result, out


@pytest.fixture(scope="module")
def report(validation: tuple[Result, Path]) -> dict[str, dict[str, Any]]:
    """validation.json by task."""
    _, out = validation
    return {r["task"]: r for r in json.loads((out / "validation.json").read_text())}


def test_validate_all_passes(validation: tuple[Result, Path]) -> None:
    result, _ = validation
    _needs_soffice()
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["task", "category", "solution", "null", "generation",
                                "seconds"]
    assert lines[-1] == f"{len(list_tasks())}/{len(list_tasks())} tasks pass"
    assert "warning" not in result.output


@pytest.mark.parametrize("name", list_tasks())
def test_solution_accepted_and_untouched_workspace_rejected(
        report: dict[str, dict[str, Any]], name: str) -> None:
    _needs_soffice(name)
    r = report[name]
    assert r["solution_accepted"], r["solution_detail"]
    assert r["null_rejected"], r["null_detail"]
    assert r["deterministic"] is True
    assert r["supplied_differs"] == []
    assert r["passed"]


@pytest.mark.parametrize("name", list_tasks())
def test_every_required_check_fails_or_passes_for_a_reason(
        validation: tuple[Result, Path], name: str) -> None:
    """The solution passes every check; the null agent fails at least one, no grader error."""
    _needs_soffice(name)
    _, out = validation
    solved = json.loads((out / name / "solution" / "verdict.json").read_text())
    null = json.loads((out / name / "null" / "verdict.json").read_text())
    assert all(r["passed"] for r in solved["results"] if r["required"])
    assert null["grader_errors"] == []
    assert any(not r["passed"] for r in null["results"] if r["required"])


def test_the_solution_ran_as_an_external_agent(validation: tuple[Result, Path]) -> None:
    _, out = validation
    summary = json.loads((out / "payments-match" / "solution" / "summary.json").read_text())
    (turn,) = summary["turns"]
    assert turn["status"] == "completed" and turn["process"]["exit_code"] == 0
    assert sorted(turn["outputs"]) == ["matches.csv", "open_invoices.csv", "unapplied.csv"]
    ws = out / "payments-match" / "solution" / "turns" / "01" / "workspace"
    assert (ws / "bank_export.csv").read_bytes() == (
        load_task("payments-match").folder / "workspace" / "bank_export.csv").read_bytes()
    assert not (ws / "reference").exists() and not list(ws.rglob("cases.csv"))


def test_books_tasks_start_from_the_generated_books(validation: tuple[Result, Path]) -> None:
    """The statements the vendors delivered in the turn equal the supplied exports."""
    _, out = validation
    ws = out / "vendor-statement-recon" / "null" / "turns" / "01" / "workspace"
    task = load_task("vendor-statement-recon")
    inbox = {p.read_text() for p in (ws / "inbox").glob("*statement*.csv")}
    supplied = {p.read_text() for p in (task.folder / "workspace" / "statements").glob("*.csv")}
    assert supplied and supplied <= inbox


def test_books_task_writes_reach_the_books(validation: tuple[Result, Path]) -> None:
    _, out = validation
    summary = json.loads((out / "contractor-accrual" / "solution" / "summary.json").read_text())
    assert summary["events"]["by_actor"].get("agent:turn-1", 0) >= 1
    tb = {r["account"]: r for r in summary["trial_balance"]}
    assert tb["2100"]["credit"] == "17015.51"


def test_desk_list() -> None:
    result = CliRunner().invoke(main, ["desk", "list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:3] == ["id", "category", "checks"]
    assert [line.split()[0] for line in lines[1:]] == list_tasks()
    assert any(line.startswith("payments-match ") and "reconciliation" in line
               for line in lines)


def test_validate_needs_one_task_or_all() -> None:
    result = CliRunner().invoke(main, ["desk", "validate"])
    assert result.exit_code == 2
    assert "give one TASK or --all" in result.output


def test_validate_an_unknown_task() -> None:
    result = CliRunner().invoke(main, ["desk", "validate", "no-such-task"])
    assert result.exit_code == 2
    assert "task 'no-such-task': no such task" in result.output


def test_validate_a_task_folder(make_task: MakeTask) -> None:
    result = CliRunner().invoke(main, ["desk", "validate", str(make_task())])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1].split()[:5] == ["tiny", "reports", "ok", "ok", "-"]


def test_validate_fails_a_solution_that_does_nothing(make_task: MakeTask) -> None:
    result = CliRunner().invoke(main, ["desk", "validate", str(make_task(solve=SOLVE_NOTHING))])
    assert result.exit_code == 1
    assert "tiny: solution not accepted: rejected (agent completed); failed: total-stated" \
        in result.output
    assert result.output.splitlines()[-1] == "0/1 tasks pass"


def test_validate_fails_checks_an_untouched_workspace_passes(make_task: MakeTask) -> None:
    folder = make_task(checks=[{"type": "file_exists", "path": "data.txt"}])
    result = CliRunner().invoke(main, ["desk", "validate", str(folder)])
    assert result.exit_code == 1
    assert "tiny: untouched workspace not rejected: accepted" in result.output


def test_validate_warns_when_supplied_bytes_differ(tmp_path: Path) -> None:
    import shutil

    from desk.tasks import tasks_dir

    folder = tmp_path / "payments-match"
    shutil.copytree(tasks_dir() / "payments-match", folder)
    with (folder / "workspace" / "note.txt").open("a") as f:
        f.write("Thanks!\n")
    result = CliRunner().invoke(main, ["desk", "validate", str(folder)])
    assert result.exit_code == 0, result.output
    assert ("warning: payments-match: supplied bytes differ from a fresh generation: "
            "workspace/note.txt") in result.output


@pytest.mark.parametrize("name", list_tasks())
def test_solution_reads_no_reference(name: str) -> None:
    """The positive control solves from the workspace, like an agent: it never names reference/."""
    import re

    source = load_task(name).solution.read_text()
    # a path into the task folder: reference/, ../, .parent(s), or "reference" joined as a
    # path part (a column called "reference" is not a path)
    path_part = r"/\s*[\"']reference[\"']|[\"']reference[\"']\s*/|join\([^)]*[\"']reference[\"']"
    assert not re.search(r"reference/|\.\./|\.parents?\b|" + path_part, source)


def _regrade(out: Path, tmp_path: Path, name: str, edit: Callable[[Path], None]) -> Any:
    """Grade a copy of the solution's attempt after ``edit`` changes its final workspace."""
    from runs.grading import final_workspace, grade_folder

    attempt = tmp_path / name
    shutil.copytree(out / name / "solution", attempt)
    ws = final_workspace(attempt)
    assert ws is not None
    edit(ws / "out")
    return grade_folder(attempt, load_task(name).loaded)


def _rewrite(path: Path, change: Callable[[dict[str, str]], None]) -> None:
    import csv

    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        change(row)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _case_lines(case: str) -> list[str]:
    text = (load_task("payments-match").folder / "reference" / "cases.csv").read_text()
    return next(line.split(",")[1].split() for line in text.splitlines()
                if line.startswith(case + ","))


def test_payments_contract_rejects_trusting_the_reference(
        validation: tuple[Result, Path], tmp_path: Path) -> None:
    """Applying the wrong-reference payment to the invoice it quotes is not accepted."""
    _, out = validation
    (line,) = _case_lines("wrong_reference")
    export = (load_task("payments-match").folder / "workspace" / "bank_export.csv").read_text()
    quoted = next(r.split(",")[3] for r in export.splitlines() if r.startswith(line + ","))

    def trust_reference(row: dict[str, str]) -> None:
        if row["line_id"] == line:
            row["invoice_id"] = quoted

    verdict = _regrade(out, tmp_path, "payments-match",
                       lambda o: _rewrite(o / "matches.csv", trust_reference))
    assert verdict.status == "rejected"
    failed = {r.name for r in verdict.failed}
    assert "planted-cases/wrong_reference" in failed
    assert "matches-applied-amounts" not in failed  # one wrong row is within the 90% floor


def test_payments_contract_rejects_card_fees_left_open(
        validation: tuple[Result, Path], tmp_path: Path) -> None:
    """A card payout applied as a partial payment (its fee left open) is not accepted."""
    _, out = validation
    card = set(_case_lines("card_processor"))
    export = (load_task("payments-match").folder / "workspace" / "bank_export.csv").read_text()
    net = {r.split(",")[0]: r.split(",")[-1] for r in export.splitlines()}

    def net_only(row: dict[str, str]) -> None:
        if row["line_id"] in card:
            row["amount_applied"] = net[row["line_id"]]

    verdict = _regrade(out, tmp_path, "payments-match",
                       lambda o: _rewrite(o / "matches.csv", net_only))
    assert {"planted-cases/card_processor"} <= {r.name for r in verdict.failed}
