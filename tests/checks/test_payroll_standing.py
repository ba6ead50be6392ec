"""``payroll_posted`` with ``standing_at_its_turn``: the register's version that stands must
be posted at the first turn on or after it arrived, not only its first version. Off by
default. Graded on a real attempt (payroll-and-sales-tax medium seed 4, whose register
PR-20260515 and its revision both arrive before the first turn): version 1 posted at the
first turn and replaced by version 2 at the next passes without the option and fails with
it; the reference (version 2 at the first turn) passes with it."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from checks.tax import PayrollPostedSpec, payroll_posted
from erp import commands as c
from erp.ledger import Ledger
from runs.attempt import run_attempt
from runs.grading import context_for, read_summary
from scenarios.agents import load_solver
from scenarios.loader import LoadedScenario, find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext

NAME = "payroll-and-sales-tax"
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    """The reference, or (``late``) version 1 at the first turn, version 2 at the next."""

    def __init__(self, late: bool) -> None:
        self.late = late
        self.name = "late" if late else "reference"

    def run_turn(self, desk: TurnContext) -> None:
        if self.late and desk.day == date(2026, 5, 18):
            whole = desk.inbox
            vars(desk)["inbox"] = lambda: [p for p in whole() if "-v2" not in p.name]
            try:
                solver.reference(desk)
            finally:
                del vars(desk)["inbox"]
            return
        if self.late:
            done = desk.execute(c.ReversePayroll(register_id="PR-20260515",
                                                 entry_date=date(2026, 5, 31)))
            assert isinstance(done, list), done
        solver.reference(desk)


def _grade(loaded: LoadedScenario, out: Path, standing: bool) -> tuple[bool, str]:
    summary = read_summary(out)
    ledger = Ledger.open(out / "books.db")
    try:
        ctx = context_for(ledger.store, loaded, workspace=None)
        assert ctx.turn_dates == (date(2026, 5, 18), date(2026, 6, 1)), summary
        r = payroll_posted(PayrollPostedSpec(type="payroll_posted", name="p",
                                             standing_at_its_turn=standing), ctx)
        return r.passed, r.detail
    finally:
        ledger.close()


def test_the_standing_version_posted_a_turn_late_fails_only_with_the_option(
        tmp_path: Path) -> None:
    loaded = load_scenario(find_scenario(NAME), tier="medium")
    late = run_attempt(loaded, 4, "late", tmp_path / "late", agent=_Clerk(late=True)).out
    assert _grade(loaded, late, standing=False)[0]
    passed, detail = _grade(loaded, late, standing=True)
    assert not passed
    assert "register PR-20260515 as it stands (version 2) arrived 2026-05-15 and was posted " \
           "in the turn of 2026-06-01, not the turn of 2026-05-18" in detail, detail
    ref = run_attempt(loaded, 4, "reference", tmp_path / "ref", agent=_Clerk(late=False)).out
    assert _grade(loaded, ref, standing=True) == _grade(loaded, ref, standing=False)
    assert _grade(loaded, ref, standing=True)[0]


def test_the_option_is_off_unless_asked() -> None:
    assert PayrollPostedSpec(type="payroll_posted", name="p").standing_at_its_turn is False
