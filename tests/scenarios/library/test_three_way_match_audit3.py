"""three-way-match: a turn that did nothing, its work caught up at the next turn and dated
back (medium tier, seed 0, a real attempt).

``receipts-as-shipped`` and ``bills-as-invoiced`` ask each receiving report and invoice to
be recorded at the first turn that had it. Which turn that was came from the agent's own
writes: a turn day counted only if the agent wrote after the document arrived. A clerk that
let a whole turn go by (nothing written) and recorded the day's receiving report at the next
turn, dated back to its day, was accepted by ``receipts-as-shipped`` for the goods that
arrived that very day (those of earlier days were refused). Documents reach the company
before the turn of their day (``SHIP_PHASE``, ``BILL_PHASE`` < ``Phase.TURN``): that turn
had them whether or not the agent wrote anything.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks

NAME = "three-way-match"
SEED = 0


class _IdleOnce:
    """The reference, except that the first turn whose inbox holds a receiving report of
    goods that arrived that very day does nothing at all; the next turn catches up (the
    reference reads the archive too and records every report once, dated its day)."""

    name = "idle-once"

    def __init__(self) -> None:
        self.idle: date | None = None
        self.solver = load_solver(library_dir() / NAME / "solver.py")

    def run_turn(self, desk: TurnContext) -> None:
        reports = [p for p in desk.inbox() if "receiving-report" in p.name]
        if self.idle is None and any(
                f",{desk.day.isoformat()}," in p.read_text(encoding="utf-8") for p in reports):
            self.idle = desk.day
            return
        self.solver.reference(desk)


def test_a_receiving_report_recorded_after_a_turn_that_did_nothing_is_refused(
        tmp_path: Path) -> None:
    clerk = _IdleOnce()
    res = run_attempt(load_scenario(find_scenario(NAME), tier="medium"), SEED, clerk.name,
                      tmp_path / "a", agent=clerk)
    assert clerk.idle is not None
    assert "receipts-as-shipped" in failed_checks(res.out)
    detail = check_results(res.out)["receipts-as-shipped"]["detail"]
    # the goods of the idle day itself: that turn had their report, though it wrote nothing
    day = clerk.idle.isoformat()
    assert f"(goods of {day}) was recorded on " in detail, detail
    assert f"after the turn of {day} that had its report" in detail, detail
