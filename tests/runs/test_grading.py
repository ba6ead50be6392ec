"""Verdicts of attempts: ``verdict.json`` from ``erpsim run``, ``erpsim check``, per-date checks,
and the instrument's validation (``erpsim validate``: controls over seeds, mutants)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from checks.verdict import Verdict
from runs.attempt import Recording, run_attempt
from runs.cli import main
from runs.validate import (
    Mutation,
    ReplayAgent,
    parse_seeds,
    sample_mutations,
    validate_mutants,
)
from scenarios.loader import find_scenario, load_scenario

LIB = find_scenario("cash-application").parent


def flat(text: str) -> str:
    """Output with runs of whitespace (padding, wrapping) collapsed."""
    return " ".join(text.split())


def small_scenario(tmp_path: Path, checks: list[dict], **turns: object) -> Path:
    """cash-application on 3 business days and 25 customers, with the given checks."""
    folder = tmp_path / "sc"
    shutil.copytree(LIB, folder)
    data = yaml.safe_load((folder / "scenario.yaml").read_text())
    data["calendar"] = {"start": "2026-03-02", "business_days": 3, "holidays": []}
    data["company"]["opening"]["ar_open_invoices"] = 40
    data["population"]["customers"]["count"] = 25
    data["injections"] = []
    data["checks"] = checks
    data["turns"].update(turns)
    (folder / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder / "scenario.yaml"


FILE_CHECK = {"type": "csv_columns", "path": "out/unapplied.csv", "columns": ["line_id",
                                                                               "reason"]}


def test_run_writes_the_verdict_and_prints_it(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, [FILE_CHECK, {**FILE_CHECK, "name": "optional-one",
                                                "columns": ["nope"], "required": False}])
    out = tmp_path / "a"
    res = CliRunner().invoke(main, ["run", str(sc), "--agent", "reference", "--out", str(out),
                                    "--quiet"])
    assert res.exit_code == 0, res.output
    assert "verdict: accepted (1/1 required checks passed)" in flat(res.output)
    assert "fail (optional) optional-one" in flat(res.output)
    data = json.loads((out / "verdict.json").read_text())
    assert data["status"] == "accepted" and data["accepted"] is True
    assert [r["name"] for r in data["results"]] == ["csv_columns#1", "optional-one"]
    summary = json.loads((out / "summary.json").read_text())
    assert data["final_log_hash"] == summary["final_hash"]
    assert summary["verdict"]["status"] == "accepted"
    assert set(data["outputs"]) == {"unapplied.csv"}
    assert data["scorer"]["definitions_sha256"]


def test_null_is_rejected_with_the_failed_check_named(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, [FILE_CHECK])
    out = tmp_path / "n"
    res = CliRunner().invoke(main, ["run", str(sc), "--agent", "null", "--out", str(out),
                                    "--quiet"])
    assert res.exit_code == 1, res.output  # a rejected verdict
    assert "verdict: rejected (0/1 required checks passed)" in flat(res.output)
    assert "FAIL csv_columns#1: out/unapplied.csv" in flat(res.output)


def test_check_evaluates_again_without_running(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, [FILE_CHECK])
    out = tmp_path / "a"
    run_attempt(load_scenario(sc), 1, "reference", out)
    before = (out / "books.db").stat().st_mtime_ns
    res = CliRunner().invoke(main, ["check", str(out), "--scenario", str(sc)])
    assert res.exit_code == 0, res.output
    assert "pass csv_columns#1" in flat(res.output)
    assert (out / "books.db").stat().st_mtime_ns == before
    # another scenario's checks on the same attempt: rejected, exit 1
    other = small_scenario(tmp_path / "o", [{**FILE_CHECK, "columns": ["absent"]}])
    res = CliRunner().invoke(main, ["check", str(out), "--scenario", str(other)])
    assert res.exit_code == 1 and "FAIL" in flat(res.output)


def test_check_refuses_a_folder_that_is_not_an_attempt(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert res.exit_code == 2
    assert "no summary.json (not a finished attempt folder)" in flat(res.output)


def test_check_refuses_a_tampered_log(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, [FILE_CHECK])
    out = tmp_path / "a"
    run_attempt(load_scenario(sc), 1, "null", out)
    con = sqlite3.connect(out / "books.db")
    con.execute("UPDATE events SET payload = replace(payload, '1', '2') WHERE position = 5")
    con.commit()
    con.close()
    res = CliRunner().invoke(main, ["check", str(out), "--scenario", str(sc)])
    assert res.exit_code == 1
    assert "position 5" in flat(res.output)


def test_a_crashing_check_is_a_grader_error_not_a_failure(tmp_path: Path) -> None:
    # a process scenario has no reference folder: the custom check cannot load its module
    sc = small_scenario(tmp_path, [FILE_CHECK, {"type": "custom", "module": "check.py"}])
    out = tmp_path / "a"
    result = run_attempt(load_scenario(sc), 1, "reference", out)
    assert result.summary["verdict"]["status"] == "grader_error"
    v = Verdict.from_json(json.loads((out / "verdict.json").read_text()))
    assert not v.accepted and [g.check for g in v.grader_errors] == ["custom#2"]
    assert "Traceback" in v.grader_errors[0].traceback
    res = CliRunner().invoke(main, ["check", str(out), "--scenario", str(sc)])
    assert res.exit_code == 3 and "GRADER ERROR custom#2" in flat(res.output)


def test_an_invalid_check_list_names_the_file_and_path(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, [{"type": "csv_columns", "path": "../x.csv",
                                    "columns": ["a"]}, {"type": "no_such_check"}])
    res = CliRunner().invoke(main, ["run", str(sc), "--out", str(tmp_path / "x")])
    assert res.exit_code == 2
    assert "scenario sc/scenario.yaml: 2 problems" in flat(res.output)
    assert "checks[0].path:" in flat(res.output)
    assert "checks[1].type: unknown check type" in flat(res.output)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(("text", "seeds"), [("0-3", [0, 1, 2, 3]), ("7", [7]),
                                             ("1,4,4,2-3", [1, 2, 3, 4])])
def test_parse_seeds(text: str, seeds: list[int]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "a", "3-1", "1-", "1,,x"])
def test_parse_seeds_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="--seeds"):
        parse_seeds(text)


def test_parse_seeds_takes_the_largest_seed_and_refuses_beyond_it() -> None:
    top = 2**63 - 1
    assert parse_seeds(f"{top - 1}-{top}") == [top - 1, top]
    for text in (str(top + 1), f"{top}-{top + 1}", "0,99999999999999999999"):
        with pytest.raises(ValueError, match=r"goes beyond the largest seed, "
                                             r"9223372036854775807 \(2\*\*63 - 1"):
            parse_seeds(text)


def test_an_unmutated_replay_reproduces_the_reference_log(tmp_path: Path) -> None:
    loaded = load_scenario(small_scenario(tmp_path, [FILE_CHECK]))
    rec = Recording()
    ref = run_attempt(loaded, 3, "reference", tmp_path / "ref", record=rec)
    assert sum(len(v) for v in rec.commands.values()) > 0
    again = run_attempt(loaded, 3, "replay", tmp_path / "again",
                        agent=ReplayAgent(rec, ref.out / "turns", None))
    assert again.final_hash == ref.final_hash
    turn = min(t for t, cmds in rec.commands.items() if cmds)
    first = type(rec.commands[turn][0]).__name__
    dropped = run_attempt(loaded, 3, "replay", tmp_path / "drop", agent=ReplayAgent(
        rec, ref.out / "turns", Mutation("drop", turn, 0, first)))
    assert dropped.final_hash != ref.final_hash


def test_mutant_sampling_is_deterministic_and_bounded() -> None:
    from erp.commands import ApplyReceipt, ApproveBill

    rec = Recording(commands={1: [ApplyReceipt(receipt_id=f"R{i}", invoice_id=f"I{i}",
                                               amount=100 + i) for i in range(30)],
                              2: [ApproveBill(bill_id="B1")]},
                    declined={2: [(ApproveBill(bill_id="B2"), "duplicate")]})
    a = sample_mutations(rec, per_operator=2, seed=3)
    assert a == sample_mutations(rec, per_operator=2, seed=3)
    assert a != sample_mutations(rec, per_operator=2, seed=4)
    ops = [m.op for m in a]
    assert {op: ops.count(op) for op in set(ops)} == {
        "drop": 2, "twice": 2, "cent_up": 2, "cent_down": 2, "same_party_doc": 2,
        "other_party_doc": 2, "submit_declined": 1, "other_role": 2, "exceed_limit": 2,
        "same_amount_doc": 2, "skip_approval": 1, "late_backdated": 2}
    assert {m.klass for m in a} == {"command", "role", "amount_limit", "same_amount_doc",
                                    "approval", "date"}


def test_a_file_only_suite_lets_book_mutants_survive(tmp_path: Path) -> None:
    loaded = load_scenario(small_scenario(tmp_path, [FILE_CHECK]))
    report = validate_mutants(loaded, 3, tmp_path / "m", per_operator=1)
    assert report.counted and report.survivors == report.counted  # nothing checks the books


def test_validate_seeds_reports_a_null_that_passes(tmp_path: Path) -> None:
    # a suite that only checks the trial balance's arithmetic accepts null too: it must fail
    sc = small_scenario(tmp_path, [{"type": "trial_balance_zero"}])
    res = CliRunner().invoke(main, ["validate", str(sc), "--seeds", "1", "--parallel", "1"])
    assert res.exit_code == 1, res.output
    assert "null_as_expected: 0/1" in flat(res.output)
    assert "reference_as_expected: 1/1" in flat(res.output)
    assert "validation: FAILED" in flat(res.output)


def test_validate_needs_a_mode(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["validate", "cash-application"])
    assert res.exit_code == 2 and "give --seeds RANGE, --mutants or --policy" in flat(
        res.output)


def test_a_desk_task_runs_and_is_checked_like_a_scenario(tmp_path: Path) -> None:
    out = tmp_path / "pm"
    res = CliRunner().invoke(main, ["run", "payments-match", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seed"] == 28  # the task's own seed, not --seed's default
    assert summary["verdict"]["status"] == "accepted"
    assert CliRunner().invoke(main, ["check", str(out)]).exit_code == 0
    res = CliRunner().invoke(main, ["run", "payments-match", "--agent", "oracle", "--out",
                                    str(tmp_path / "o")])
    assert res.exit_code == 2 and "desk tasks have no oracle" in res.output


def test_calendar_facts_are_each_loaded_scenarios_own() -> None:
    """A context's dates come from its own scenario: worked out once per loaded scenario,
    never another's (a year's twelve monthly closes have other dates than one month)."""
    from runs.bench.benchmarks import monthly_closes
    from runs.grading import calendar_facts, context_for

    one = load_scenario(find_scenario("month-end-close"))
    year = monthly_closes(one, 12)
    for loaded in (one, year, one):
        cal = loaded.scenario.calendar.build()
        want = (cal.start, cal.end, tuple(loaded.scenario.turns.dates_in(cal)))
        assert calendar_facts(loaded) == want
        ctx = context_for(None, loaded, workspace=None)  # type: ignore[arg-type]
        assert (ctx.start, ctx.end, ctx.turn_dates) == want
    assert calendar_facts(year)[1] > calendar_facts(one)[1]
    assert calendar_facts(one) is calendar_facts(one)
