"""A clerk who does the work and then moves an amount between accounts by a manual
journal entry (revenue to expenses, no document behind it) is refused: the templates
whose work has a command for every piece of it say so in the prompt and check it."""

from __future__ import annotations

from pathlib import Path

import pytest

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext


class _Reclassing:
    """The reference's work, then one journal entry Dr 6000 Cr 4000 (10.00) at its first
    turn."""

    name = "reclassing"

    def __init__(self, name: str) -> None:
        self.solver = load_solver(library_dir() / name / "solver.py")
        self.posted = False

    def run_turn(self, desk: TurnContext) -> None:
        self.solver.reference(desk)
        if not self.posted:
            done = desk.execute(c.PostJournalEntry(
                entry_date=desk.day, memo="reclass", lines=(
                    c.JournalLineIn(account="6000", debit=1000),
                    c.JournalLineIn(account="4000", credit=1000))))
            assert isinstance(done, list), done  # the books take it: only a check refuses it
            self.posted = True


@pytest.mark.parametrize("name", ["cash-application", "month-end-close", "payment-run",
                                  "fiscal-year", "fixed-assets"])
def test_a_manual_journal_entry_after_the_work_is_refused(name: str, tmp_path: Path) -> None:
    loaded = load_scenario(find_scenario(name))
    res = run_attempt(loaded, 1, "reclassing", tmp_path / "a", agent=_Reclassing(name))
    assert res.summary["verdict"]["failed"] == ["no-manual-journal-entries"], (
        res.summary["verdict"])
    prompt = next((tmp_path / "a" / "turns").glob("*/workspace/prompt.md"))
    assert "Post no manual journal entry" in prompt.read_text(encoding="utf-8")
