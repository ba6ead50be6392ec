"""Faults injected into sweeps: the results ledger that cannot be written, an attempt whose
store fails (a full disk, a PostgreSQL backend terminated), a harness error SimPy cannot
copy. Each must stop or be recorded with its cause (never a traceback, never a half row,
never the agent's failure), and ``--resume`` must complete the campaign with the rows and
hashes of an uninterrupted one."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

from runs.attempt import _DailyControl
from runs.campaigns.ledger import ResultsLedger
from runs.campaigns.run import comparable
from runs.cli import main
from tests.conftest import PG_URL, require_postgres
from tests.runs.campaigns.test_campaign import FILE_CHECK, ledger_rows, small_scenario
from tests.runs.test_faults_audit import terminate_idle_backends
from tests.runs.test_grading import flat

DAILY_TB = {"type": "trial_balance_zero", "name": "tb", "daily": True}


def sweep(*args: object) -> Result:
    """``erpsim sweep`` in this process; a traceback is never an answer."""
    res = CliRunner().invoke(main, ["sweep", *[str(a) for a in args]])
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        res.output, res.exception)
    return res


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    """The campaigns' small cash-application, with a per-date check."""
    return small_scenario(tmp_path, checks=[FILE_CHECK, DAILY_TB])


def _args(scenario: Path, results: Path, label: str) -> list[object]:
    return [scenario, "--seeds", "0-1", "--systems", "reference,null", "--runs", "2",
            "--label", label, "--results-dir", results, "--quiet"]


def _clean(scenario: Path, results: Path) -> dict[Any, dict[str, Any]]:
    res = sweep(*_args(scenario, results, "clean"))
    assert res.exit_code == 0, res.output
    return {r.key: _same_work(r) for r in ledger_rows(results / "clean")}


def _same_work(row: Any) -> dict[str, Any]:
    """A row without what differs between two labels running the same work."""
    d = comparable(row)
    d.pop("label")
    return d


def _disk_full() -> sa.exc.OperationalError:
    return sa.exc.OperationalError("INSERT INTO events ...", None,
                                   sqlite3.OperationalError("database or disk is full"))


def _complete_like(folder: Path, clean: dict[Any, dict[str, Any]]) -> None:
    rows = ledger_rows(folder)
    assert len(rows) == len({r.key for r in rows}) == len(clean)
    assert {r.key: _same_work(r) for r in rows} == clean
    assert not list(folder.rglob(".*partial*"))


def test_a_results_ledger_that_cannot_be_written_stops_the_sweep_then_resume_completes(
        scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    clean = _clean(scenario, results)
    write = ResultsLedger.write
    calls: list[object] = []

    def full(self: ResultsLedger, row: Any, **kw: Any) -> None:
        calls.append(row)
        if len(calls) == 3:
            raise sqlite3.OperationalError("database or disk is full")
        write(self, row, **kw)

    monkeypatch.setattr(ResultsLedger, "write", full)
    res = sweep(*_args(scenario, results, "k"))
    assert res.exit_code == 3, res.output  # an infrastructure fault
    text = flat(res.output)
    assert "the campaign stopped: the environment failed" in text
    assert "database or disk is full" in text and "--resume" in text
    assert len(ledger_rows(results / "k")) == 2  # whole rows only
    monkeypatch.undo()
    res = sweep(*_args(scenario, results, "k"), "--resume")
    assert res.exit_code == 0, res.output
    assert "6 attempts to run of 8 (resuming)" in flat(res.output)
    _complete_like(results / "k", clean)


def test_an_attempts_store_failure_is_an_infrastructure_row_naming_it(
        scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SimPy's copy of a SQLAlchemy error raises TypeError; the row must still say what
    failed, the attempt leave no verdict, and --resume run it again."""
    results = tmp_path / "results"
    clean = _clean(scenario, results)
    original = _DailyControl.at_day_end
    calls: list[object] = []

    def fails_once(self: _DailyControl, day: Any) -> None:
        calls.append(day)
        if len(calls) == 2:
            raise _disk_full()
        original(self, day)

    monkeypatch.setattr(_DailyControl, "at_day_end", fails_once)
    res = sweep(*_args(scenario, results, "k"))
    assert res.exit_code == 1, res.output
    rows = ledger_rows(results / "k")
    bad = [r for r in rows if r.status == "infrastructure_error"]
    assert len(rows) == 8 and len(bad) == 1
    assert "database or disk is full" in str(bad[0].error), bad[0].error
    assert "TypeError" not in str(bad[0].error)
    folder = results / "k" / bad[0].attempt_dir
    assert not (folder / "verdict.json").exists() and not (folder / "summary.json").exists()
    assert "database or disk is full" in (folder / "error.txt").read_text()
    monkeypatch.undo()
    res = sweep(*_args(scenario, results, "k"), "--resume")
    assert res.exit_code == 0, res.output
    _complete_like(results / "k", clean)


class _Odd(Exception):
    """A harness error whose constructor SimPy's copy cannot call."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")


def test_a_harness_error_simpy_cannot_copy_is_named_in_its_row(
        scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def odd(self: _DailyControl, day: Any) -> None:
        raise _Odd("per-date control", "a bug of ours")

    monkeypatch.setattr(_DailyControl, "at_day_end", odd)
    results = tmp_path / "results"
    res = sweep(scenario, "--seeds", "0", "--systems", "reference", "--label", "k",
                "--results-dir", results, "--quiet")
    assert res.exit_code == 1, res.output
    (row,) = ledger_rows(results / "k")
    assert row.status == "infrastructure_error"
    assert row.error == "_Odd: per-date control: a bug of ours", row.error


@pytest.mark.postgres
@pytest.mark.parametrize("during", ["turn", "simulation"])
def test_a_backend_terminated_mid_attempt_is_an_infrastructure_error_and_resume_reruns_it(
        scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, during: str) -> None:
    """The attempt's store loses its backends in the reference agent's second turn (its
    next command fails: no crash of the agent, no rejected verdict) or between two dates
    (the world's next write fails)."""
    require_postgres()
    results = tmp_path / "results"
    clean = _clean(scenario, results)
    calls: list[object] = []
    if during == "turn":
        from scenarios.agents import ReferenceAgent

        run_turn = ReferenceAgent.run_turn

        def in_turn(self: ReferenceAgent, turn: Any) -> None:
            calls.append(turn)
            if len(calls) == 2:
                terminate_idle_backends(turn.ledger.store.engine)
            run_turn(self, turn)

        monkeypatch.setattr(ReferenceAgent, "run_turn", in_turn)
    else:
        original = _DailyControl.at_day_end

        def between(self: _DailyControl, day: Any) -> None:
            original(self, day)
            calls.append(day)
            if len(calls) == 2:
                terminate_idle_backends(self.engine.ledger.store.engine)

        monkeypatch.setattr(_DailyControl, "at_day_end", between)
    args = [*_args(scenario, results, "pg"), "--store-url", PG_URL]
    try:
        res = sweep(*args)
        assert res.exit_code == 1, res.output
        rows = ledger_rows(results / "pg")
        bad = [r for r in rows if r.status != "completed"]
        assert len(bad) == 1, [(r.key, r.status) for r in rows]
        assert bad[0].status == "infrastructure_error"
        assert "the environment failed" in str(bad[0].error), bad[0].error
        assert bad[0].verdict_status is None and bad[0].accepted is False
        folder = results / "pg" / bad[0].attempt_dir
        assert not (folder / "verdict.json").exists()
        monkeypatch.undo()
        res = sweep(*args, "--resume")
        assert res.exit_code == 0, res.output
        _complete_like(results / "pg", clean)  # the same hashes as SQLite's
    finally:
        _drop_schemas(results / "pg")


def _drop_schemas(folder: Path) -> None:
    from runs.campaigns.plan import attempt_schema
    from tests.conftest import drop_pg_schema

    if (folder / "results.db").exists():
        for r in ledger_rows(folder):
            drop_pg_schema(attempt_schema(folder, "pg", r.key))
