"""accruals-and-prepaids, audited for false rejects: correct work done another way than the
reference's (real attempts, medium tier, seed 0).

A clerk who posts an accrual with the wrong amount, reverses it by hand on its own date
(``erp journal reverse``: the ERP's correction, "corrections are reversals") and posts the
right one was refused by ``may-accrued`` (the reversed accrual's debit still counted) and
by ``may-reversal-run-on-june-1`` (the run reversed one accrual fewer than May has). An
accrual reversed by hand before its reversal day now accrues nothing
(``checks.accruals.cancelled_accruals``) and is not one the run must reverse; one reversed
by hand on its reversal day instead of by the run, and a mistaken accrual taken back and
never posted right, are still refused.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import (
    Execute,
    check_results,
    failed_checks,
    read_verdict,
    routed,
)

NAME = "accruals-and-prepaids"
SEED = 0
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    """The reference; its first accrual of May through ``twist(real, accrual)`` instead."""

    def __init__(self, name: str, twist: Any) -> None:
        self.name = name
        self.twist = twist
        self.twisted = 0

    def run_turn(self, desk: TurnContext) -> None:
        def route(real: Execute, cmd: c.Command) -> Any:
            if (isinstance(cmd, c.PostAccrual) and not self.twisted
                    and cmd.entry_date == date(2026, 5, 31)):
                self.twisted += 1
                return self.twist(real, cmd)
            return real(cmd)

        with routed(desk, route):
            solver.reference(desk)


def _wrong_then(real: Execute, cmd: c.PostAccrual, *, cancel_on: date,
                repost: bool) -> Any:
    """Post ``cmd`` 10.00 too high, reverse it by hand dated ``cancel_on``, then (when
    ``repost``) post ``cmd`` as it should be."""
    debit, credit = cmd.lines
    wrong = cmd.model_copy(update={"lines": (
        debit.model_copy(update={"debit": (debit.debit or 0) + 1000}),
        credit.model_copy(update={"credit": (credit.credit or 0) + 1000}))})
    posted = real(wrong)
    assert isinstance(posted, list), posted
    taken = real(c.ReverseJournalEntry(entry_id=posted[0].event.entry_id, entry_date=cancel_on,
                                       memo="accrued with the wrong amount"))
    assert isinstance(taken, list), taken
    return real(cmd) if repost else []


def _run(tmp: Path, clerk: _Clerk) -> Path:
    out = run_attempt(load_scenario(find_scenario(NAME)), SEED, clerk.name, tmp / "a",
                      agent=clerk).out
    assert clerk.twisted == 1
    return out


def test_a_wrong_accrual_reversed_on_its_date_and_posted_again_is_accepted(
        tmp_path: Path) -> None:
    out = _run(tmp_path, _Clerk("accrual-corrected", lambda real, cmd: _wrong_then(
        real, cmd, cancel_on=cmd.entry_date, repost=True)))
    assert read_verdict(out)["accepted"], failed_checks(out)


def test_a_wrong_accrual_taken_back_and_never_posted_right_is_refused(tmp_path: Path) -> None:
    """The taken-back accrual accrues nothing: the vendor's cost is missing from May (seed
    0 owes one vendor in May, so no May accrual is left for the run to reverse either)."""
    out = _run(tmp_path, _Clerk("accrual-taken-back", lambda real, cmd: _wrong_then(
        real, cmd, cancel_on=cmd.entry_date, repost=False)))
    assert failed_checks(out) == {"may-accrued", "may-reversal-run-on-june-1"}
    assert "accrued 0.00, owed" in check_results(out)["may-accrued"]["detail"]


def test_an_accrual_reversed_by_hand_on_its_reversal_day_is_still_refused(
        tmp_path: Path) -> None:
    """A right accrual reversed by hand on June 1 (its reversal day, not before), not by
    the run: it accrued May's cost, and the run reversed one accrual fewer than May has."""
    def by_hand(real: Execute, cmd: c.PostAccrual) -> Any:
        posted = real(cmd)
        assert isinstance(posted, list), posted
        return real(c.ReverseJournalEntry(entry_id=posted[0].event.entry_id,
                                          entry_date=cmd.entry_date + timedelta(days=1)))

    out = _run(tmp_path, _Clerk("accrual-hand-reversed", by_hand))
    assert failed_checks(out) == {"may-reversal-run-on-june-1"}
