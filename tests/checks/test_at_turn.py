"""``at_turn``: a check reads the files as the agent's turn of that date left them (that
turn's workspace), not the last turn's; a turn that did not run leaves no file; a date
that is no turn is the spec's error (a grader error); not with ``daily``."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from checks.context import CheckContext
from checks.registry import parse_checks
from checks.verdict import evaluate
from erp.store import EventStore
from tests.checks.helpers import put, run_one, spec_problems

JAN, FEB, MAR = date(2026, 1, 30), date(2026, 2, 27), date(2026, 3, 31)
COLUMNS = {"type": "csv_columns", "path": "out/rec.csv", "columns": ["item", "amount"]}


@pytest.fixture
def ctx(tmp_path: Path, sqlite_store: EventStore) -> CheckContext:
    """Three turns, each with its own workspace; the last one's is the final workspace.
    January left a good file, February a wrong one, March (the last) a good one."""
    spaces = {d: tmp_path / "turns" / f"{n:02d}" / "workspace"
              for n, d in enumerate((JAN, FEB, MAR), start=1)}
    put(spaces[JAN], "out/rec.csv", "item,amount\nstatement,1.00\n")
    put(spaces[FEB], "out/rec.csv", "thing,value\nstatement,1.00\n")
    put(spaces[MAR], "out/rec.csv", "item,amount\nstatement,1.00\n")
    return CheckContext(sqlite_store, workspace=spaces[MAR], turn_dates=(JAN, FEB, MAR),
                        turn_workspaces=spaces)


def test_a_check_at_a_turn_reads_that_turns_files(ctx: CheckContext) -> None:
    assert run_one(COLUMNS, ctx).passed  # the last turn's file
    assert run_one({**COLUMNS, "at_turn": JAN}, ctx).passed
    february = run_one({**COLUMNS, "at_turn": FEB}, ctx)
    assert not february.passed and "item" in february.detail, february.detail


def test_a_turn_that_did_not_run_left_no_file(ctx: CheckContext) -> None:
    april = date(2026, 4, 30)
    ctx.turn_dates = (*ctx.turn_dates, april)  # a turn of the scenario...
    r = run_one({**COLUMNS, "at_turn": april}, ctx)  # ...that did not run
    assert not r.passed and "no such file" in r.detail, r.detail


def test_a_date_that_is_no_turn_is_a_grader_error(ctx: CheckContext) -> None:
    specs = parse_checks([{**COLUMNS, "at_turn": date(2026, 2, 2), "name": "rec-feb"}])
    verdict = evaluate(specs, ctx)
    assert verdict.status == "grader_error"
    [error] = verdict.grader_errors
    assert "at_turn 2026-02-02 is not a turn of the scenario (turns: 2026-01-30, " \
           "2026-02-27, 2026-03-31)" in error.error


def test_at_turn_is_not_daily_and_is_a_date() -> None:
    problems = spec_problems({"type": "document_state", "kind": "bill", "status": ["approved"],
                              "daily": True, "at_turn": JAN})
    assert any("not daily" in m for m in problems.values()), problems
    problems = spec_problems({**COLUMNS, "at_turn": "January"})
    assert "checks[0].at_turn" in problems, problems
