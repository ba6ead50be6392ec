"""procure-to-pay, audited for false accepts: a clerk who codes every bill to 6000 and then
moves part of it to another expense account by a manual journal entry was accepted;
no-manual-journal-entries refuses it."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext

NAME = "procure-to-pay"
solver = load_solver(library_dir() / NAME / "solver.py")


def test_bills_recoded_by_a_manual_entry_are_refused(tmp_path: Path) -> None:
    class Agent:
        name = "reclass"

        def run_turn(self, desk: TurnContext) -> None:
            solver.reference(desk)
            if desk.day == date(2026, 4, 30):
                done = desk.execute(c.PostJournalEntry(
                    entry_date=desk.day, memo="reclass",
                    lines=(c.JournalLineIn(account="6100", debit=1000),
                           c.JournalLineIn(account="6000", credit=1000))))
                assert isinstance(done, list), done

    result = run_attempt(load_scenario(find_scenario(NAME)), 1, "reclass", tmp_path / "a",
                         agent=Agent())
    v: dict[str, Any] = result.summary["verdict"]
    assert v["status"] == "rejected" and v["failed"] == ["no-manual-journal-entries"], v
