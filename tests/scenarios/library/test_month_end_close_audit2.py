"""month-end-close, audited again for false accepts: the reference with one mistake, each
a real attempt.

- A credit note left a turn and recorded at the next, dated its own date (hard tier, seed
  0: V018's CN-789 of 05-21, in the inbox at the turn of 05-22, recorded at 05-29) was
  accepted: the prompt named the credit notes only for their account, and
  ``entries_dated`` judged the bills' turns only. The prompt now asks each turn to record
  the credit notes in ``inbox/``; ``entries-dated-in-their-period`` sets
  ``credits_at_arrival`` and refuses it. The same note recorded at its turn dated that day
  is accepted.

Tried and rightly refused already (pinned, medium tier, seed 0): the weekly payments left
at the turn of 05-15 and made at 05-22 dated 05-15 (``due-bills-paid-at-their-turn``);
the aging written as of the calendar month's end (05-31) instead of today
(``ar-aging-matches-books``). Also refused when tried: a turn that wrote nothing (05-15),
its work done at the next; the bank's charge recorded twice (``bank-reconciles``).
"""

from __future__ import annotations

import csv
import io
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from erp import commands as c
from erp import queries as q
from erp.errors import CommandRejected
from erp.money import format_cents
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "month-end-close"
ARRIVED = date(2026, 5, 22)      # CN-789's turn (hard, seed 0)
HELD = date(2026, 5, 15)         # the weekly payments held (medium, seed 0)
MONTH_END = date(2026, 5, 29)
mec = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    """The reference with one thing done another way (``name``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.held: c.RunPayments | None = None

    def _route(self, desk: TurnContext, real: Execute, cmd: c.Command) -> Any:
        if isinstance(cmd, c.RecordVendorCredit) and cmd.vendor_credit_number == "CN-789":
            if self.name == "credit-late" and desk.day == ARRIVED:
                return CommandRejected("held", "left for the next turn")
            if self.name == "credit-dated-when-recorded":
                cmd = cmd.model_copy(update={"entry_date": desk.day})
        if self.name == "payments-late-backdated" and isinstance(cmd, c.RunPayments):
            if desk.day == HELD:
                self.held = cmd
                return []
            if self.held is not None:
                held, self.held = self.held, None
                done = real(held.model_copy(update={"entry_date": HELD}))
                assert isinstance(done, list), done
                rest = tuple(b for b in cmd.bill_ids if b not in held.bill_ids)
                return real(cmd.model_copy(update={"bill_ids": rest})) if rest else done
        return real(cmd)

    def run_turn(self, desk: TurnContext) -> None:
        with routed(desk, lambda real, cmd: self._route(desk, real, cmd)):
            mec.reference(desk)
        if self.name == "aging-at-calendar-end" and desk.day == MONTH_END:
            rows = [(r.party, *(format_cents(b) for b in r.buckets), format_cents(r.total))
                    for r in q.aging(desk.store, "ar", as_of=date(2026, 5, 31))]
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(mec.AGING_COLUMNS)
            w.writerows(rows)
            (desk.output_dir / mec.AGING).write_text(buf.getvalue(), encoding="utf-8")


def _run(tmp: Path, name: str, tier: str) -> tuple[set[str], dict[str, Any]]:
    res = run_attempt(load_scenario(find_scenario(NAME), tier=tier), 0, name, tmp / "a",
                      agent=_Clerk(name))
    return failed_checks(res.out), check_results(res.out)


def test_a_credit_note_left_a_turn_and_dated_back_is_refused(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, "credit-late", "hard")
    assert failed == {"entries-dated-in-their-period"}, failed
    detail = results["entries-dated-in-their-period"]["detail"]
    assert ("(V018 credit note CN-789) arrived 2026-05-21 and was recorded in the turn of "
            "2026-05-29, not the turn of 2026-05-22") in detail, detail


def test_a_credit_note_recorded_at_its_turn_dated_that_day_is_accepted(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, "credit-dated-when-recorded", "hard")
    assert not failed, failed
    assert results["entries-dated-in-their-period"]["metrics"]["misdated"] == 0


def test_every_turns_prompt_asks_for_the_credit_notes() -> None:
    text = (library_dir() / NAME / "prompts" / "turn.md").read_text(encoding="utf-8")
    assert "record the\nvendor credit notes in `inbox/`" in text


@pytest.mark.parametrize(("name", "check", "says"), [
    ("payments-late-backdated", "due-bills-paid-at-their-turn",
     "open after the turn of 2026-05-15"),
    ("aging-at-calendar-end", "ar-aging-matches-books", "as of 2026-05-29: figures differ"),
])
def test_mistakes_already_refused(name: str, check: str, says: str, tmp_path: Path) -> None:
    failed, results = _run(tmp_path, name, "medium")
    assert failed == {check}, failed
    assert says in results[check]["detail"], results[check]["detail"]
