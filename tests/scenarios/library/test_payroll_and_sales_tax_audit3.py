"""payroll-and-sales-tax, audited a third time for false accepts (real attempts, medium).

Found: a first version posted while its revision was already in, put right a turn later. On
medium seed 4 the provider sends PR-20260515 and its revised version on the pay date, both
before the turn of 2026-05-18. A clerk who overlooked the revision posted version 1 that
turn; at the next turn (2026-06-01) it reversed it, dated in May, and posted version 2. The
final books hold the register as it stands and ``payroll-posted`` asked only that the
register be *first* posted at the turn that had it: accepted, though May's books held the
wrong wages for two weeks and the prompt says to post the revised version only.
``payroll-posted`` (``standing_at_its_turn``) now asks the version that stands to be posted
at the first turn on or after it arrived.

Tried and rightly refused already: the mid-May register left to the next turn and dated back
(``payroll-posted``). Rightly accepted: the tax paid a cent short and the cent paid in the
same turn; a register posted, reversed and posted again within its turn.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks

NAME = "payroll-and-sales-tax"
SEED = 4  # medium: PR-20260515 and its revised version both arrive before the first turn
FIRST = date(2026, 5, 18)
solver = load_solver(library_dir() / NAME / "solver.py")


class _FirstVersionPutRightLater:
    """The first turn overlooks the revised register (posts version 1); the next turn
    reverses version 1, dated in its pay date's month, and the reference posts version 2."""

    name = "first-version-put-right-later"

    def __init__(self, fix_in_turn: bool = False) -> None:
        self.fix_in_turn = fix_in_turn
        self.reversed: list[str] = []

    def _put_right(self, desk: TurnContext) -> None:
        for rid in sorted(desk.ledger.books.payroll_tax.registers):
            on = min(desk.day, date(2026, 5, 31))  # in its pay date's month, not ahead
            done = desk.execute(c.ReversePayroll(register_id=rid, entry_date=on,
                                                 memo="revised register"))
            assert isinstance(done, list), done
            self.reversed.append(rid)
        solver.reference(desk)

    def run_turn(self, desk: TurnContext) -> None:
        if desk.day == FIRST:
            whole = desk.inbox
            vars(desk)["inbox"] = lambda: [p for p in whole() if "-v2" not in p.name]
            try:
                solver.reference(desk)
            finally:
                del vars(desk)["inbox"]
            if self.fix_in_turn:
                self._put_right(desk)
        elif not self.fix_in_turn:
            self._put_right(desk)
        else:
            solver.reference(desk)


class _Reference:
    name = "reference"

    def run_turn(self, desk: TurnContext) -> None:
        solver.reference(desk)


def _run(tmp: Path, agent: Any, seed: int = SEED,
         tier: str = "medium") -> tuple[set[str], dict[str, Any]]:
    res = run_attempt(load_scenario(find_scenario(NAME), tier=tier), seed, agent.name,
                      tmp / "a", agent=agent)
    return failed_checks(res.out), check_results(res.out)


def test_a_first_version_put_right_a_turn_later_is_refused(tmp_path: Path) -> None:
    clerk = _FirstVersionPutRightLater()
    failed, results = _run(tmp_path, clerk)
    assert clerk.reversed == ["PR-20260515"], clerk.reversed
    assert failed == {"payroll-posted"}, failed
    detail = results["payroll-posted"]["detail"]
    assert ("register PR-20260515 as it stands (version 2) arrived 2026-05-15 and was posted "
            "in the turn of 2026-06-01, not the turn of 2026-05-18 (another version stood "
            "until then)") in detail, detail


def test_the_revised_version_posted_at_its_turn_is_accepted(tmp_path: Path) -> None:
    failed, results = _run(tmp_path / "ref", _Reference())
    assert not failed, failed
    assert results["payroll-posted"]["metrics"]["registers"] == 2
    # version 1 posted and put right within the turn that had both
    clerk = _FirstVersionPutRightLater(fix_in_turn=True)
    failed, _ = _run(tmp_path / "in-turn", clerk)
    assert clerk.reversed == ["PR-20260515"], clerk.reversed
    assert not failed, failed


def test_hard_registers_revised_at_both_turns_are_accepted(tmp_path: Path) -> None:
    # hard seed 0: each register comes with its revision, one before each turn
    failed, _ = _run(tmp_path, _Reference(), seed=0, tier="hard")
    assert not failed, failed
