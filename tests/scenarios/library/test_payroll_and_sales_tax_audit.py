"""payroll-and-sales-tax, audited for false accepts: a clerk who posts the registers right
and then moves wages to employer taxes by a manual journal entry (the register's lines on
other accounts than it gives them) was accepted; no-manual-journal-entries refuses it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext

NAME = "payroll-and-sales-tax"
solver = load_solver(library_dir() / NAME / "solver.py")


def test_wages_moved_to_employer_taxes_by_hand_are_refused(tmp_path: Path) -> None:
    class Agent:
        name = "reclass"

        def run_turn(self, desk: TurnContext) -> None:
            solver.reference(desk)
            done = desk.execute(c.PostJournalEntry(
                entry_date=desk.day - timedelta(days=3), memo="reclass",
                lines=(c.JournalLineIn(account="6410", debit=1000),
                       c.JournalLineIn(account="6400", credit=1000))))
            assert isinstance(done, list), done

    result = run_attempt(load_scenario(find_scenario(NAME)), 1, "reclass", tmp_path / "a",
                         agent=Agent())
    v: dict[str, Any] = result.summary["verdict"]
    assert v["status"] == "rejected" and v["failed"] == ["no-manual-journal-entries"], v


def test_the_hard_tier_reference_reverses_the_stray_entry_and_is_accepted(
        tmp_path: Path) -> None:
    # the reversal of the misposted entry is no manual entry of the clerk's
    result = run_attempt(load_scenario(find_scenario(NAME), tier="hard"), 1, "reference",
                         tmp_path / "a")
    assert result.summary["verdict"]["status"] == "accepted", result.summary["verdict"]
