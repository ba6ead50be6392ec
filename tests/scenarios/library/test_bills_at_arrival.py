"""A vendor bill held to a later turn than the one that had it in the inbox, and entered
then dated as invoiced, is refused where the prompt asks for bills at the turn they
arrive (month-end-close's weekly turns, procure-to-pay's daily ones): the bill's date
alone cannot tell it from one entered on time, its arrival does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from erp import commands as c
from erp.errors import CommandRejected
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, routed


class _HoldsOneBill:
    """The reference, but the first bill of its second turn held to the next turn, then
    entered (dated as invoiced, as the reference dates it) and approved."""

    name = "holds-one-bill"

    def __init__(self, scenario: str) -> None:
        self.solver = load_solver(library_dir() / scenario / "solver.py")
        self.turns = 0
        self.held: c.EnterBill | None = None
        self.late: str | None = None

    def _route(self, real: Any, cmd: c.Command) -> Any:
        if self.turns == 2 and self.held is None and isinstance(cmd, c.EnterBill):
            self.held = cmd
            return CommandRejected("held", "held to the next turn")
        return real(cmd)

    def run_turn(self, desk: TurnContext) -> None:
        self.turns += 1
        if self.turns == 3 and self.held is not None:
            done = desk.execute(self.held)
            assert isinstance(done, list), done
            self.late = done[0].data["bill_id"]
            assert isinstance(desk.execute(c.ApproveBill(bill_id=self.late)), list)
        with routed(desk, self._route):
            self.solver.reference(desk)


@pytest.mark.parametrize("name", ["month-end-close", "procure-to-pay", "fiscal-year"])
def test_a_bill_held_a_turn_and_dated_as_invoiced_is_refused(name: str,
                                                             tmp_path: Path) -> None:
    clerk = _HoldsOneBill(name)
    res = run_attempt(load_scenario(find_scenario(name)), 1, clerk.name, tmp_path / "a",
                      agent=clerk)
    assert clerk.late is not None
    verdict = res.summary["verdict"]
    assert "entries-dated-in-their-period" in verdict["failed"], verdict
    check = check_results(tmp_path / "a")["entries-dated-in-their-period"]
    assert f"bill {clerk.late} " in check["detail"] and "not the turn of" in check["detail"]
