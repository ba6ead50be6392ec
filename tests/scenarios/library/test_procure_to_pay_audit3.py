"""procure-to-pay, audited a third time for false accepts (easy tier, seed 1): the reference
with one mistake, each a real attempt.

- A credit note left a turn and recorded at the next, dated its own date (V011's CN-826,
  in the inbox at the turn of 04-14, recorded at 04-15 dated 04-14) was accepted: the
  prompt timed the invoices ("at the turn it reaches you") but not the credit notes, and
  ``entries_dated`` judged bills only. The prompt now says each credit note is recorded at
  the turn it reaches you; ``entries-dated-in-their-period`` sets ``credits_at_arrival``
  and refuses it. The same note recorded at its turn dated that day is accepted.

Tried and rightly refused already (pinned): a turn that wrote nothing, its bills entered at
the next turn dated as invoiced (``entries-dated-in-their-period``); a credit note applied
to another open bill of its vendor (``credits-applied-to-their-bills``); the exceptions
file listing an invoice the books entered (``exceptions-list-rows``). Accepted and left:
the genuine bank-detail changes requested only on the last business day (before the run:
each vendor paid to its new details; the prompt does not time a request). The exceptions
file written at the last turn only, left here, is refused since (test_procure_to_pay_audit4).
"""

from __future__ import annotations

import csv
import io
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from erp import commands as c
from erp.errors import CommandRejected
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "procure-to-pay"
SEED = 1
ARRIVED, NEXT = date(2026, 4, 14), date(2026, 4, 15)  # CN-826's turn and the one after it
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    """The reference with one thing done another way (``name``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.done = 0

    def _route(self, desk: TurnContext, real: Execute, cmd: c.Command) -> Any:
        books = desk.ledger.books
        if isinstance(cmd, c.RecordVendorCredit) and cmd.vendor_credit_number == "CN-826":
            if self.name == "credit-late" and desk.day == ARRIVED:
                return CommandRejected("held", "left for the next turn")
            if self.name == "credit-dated-when-recorded":
                cmd = cmd.model_copy(update={"entry_date": desk.day})
        if self.name == "credit-other-bill" and isinstance(cmd, c.ApplyVendorCredit) \
                and not self.done:
            vendor = books.bills[cmd.bill_id].vendor_id
            other = sorted(b.bill_id for b in books.bills.values() if b.vendor_id == vendor
                           and b.bill_id != cmd.bill_id and b.open >= cmd.amount)
            if other:
                self.done += 1
                cmd = cmd.model_copy(update={"bill_id": other[0]})
        return real(cmd)

    def run_turn(self, desk: TurnContext) -> None:
        if self.name == "skip-a-turn" and desk.day == ARRIVED:
            return
        with routed(desk, lambda real, cmd: self._route(desk, real, cmd)):
            solver.reference(desk)
        if self.name == "lists-an-entered-invoice" and solver.is_last_business_day(desk.day):
            path = desk.output_dir / solver.EXCEPTIONS_FILE
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
            listed = {r[0] for r in rows}
            entered = sorted(p.name for p in desk.archive()
                             if p.name not in listed and "invoice" in p.name)
            rows.append([entered[0], "", "held: above its quote"])
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(rows)
            path.write_text(buf.getvalue(), encoding="utf-8")


def _run(tmp: Path, name: str) -> tuple[set[str], dict[str, Any]]:
    res = run_attempt(load_scenario(find_scenario(NAME)), SEED, name, tmp / "a",
                      agent=_Clerk(name))
    return failed_checks(res.out), check_results(res.out)


def test_a_credit_note_left_a_turn_and_dated_back_is_refused(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, "credit-late")
    # and the turn that left it neither recorded nor listed it (each_turn, audit 4)
    assert failed == {"entries-dated-in-their-period", "exceptions-list-rows"}, failed
    assert "the turn of 2026-04-14" in results["exceptions-list-rows"]["detail"]
    detail = results["entries-dated-in-their-period"]["detail"]
    assert ("(V011 credit note CN-826) arrived 2026-04-14 and was recorded in the turn of "
            "2026-04-15, not the turn of 2026-04-14") in detail, detail


def test_a_credit_note_recorded_at_its_turn_dated_that_day_is_accepted(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, "credit-dated-when-recorded")
    assert not failed, failed
    assert results["entries-dated-in-their-period"]["metrics"]["misdated"] == 0


def test_every_turns_prompt_says_credit_notes_are_recorded_as_they_arrive() -> None:
    text = (library_dir() / NAME / "prompts" / "turn.md").read_text(encoding="utf-8")
    assert "Record each vendor credit note at the turn it reaches you" in text


@pytest.mark.parametrize(("name", "check", "says"), [
    ("skip-a-turn", "entries-dated-in-their-period",
     "arrived 2026-04-14 and was entered in the turn of 2026-04-15, not the turn of "
     "2026-04-14"),
    ("credit-other-bill", "credits-applied-to-their-bills", "not to the bill of invoice"),
    ("lists-an-entered-invoice", "exceptions-list-rows", "listed though the books acted on"),
])
def test_mistakes_already_refused(name: str, check: str, says: str, tmp_path: Path) -> None:
    failed, results = _run(tmp_path, name)
    # a turn that did nothing listed nothing either (exceptions-list-rows' each_turn)
    also = {"exceptions-list-rows"} if name == "skip-a-turn" else set()
    assert failed == {check} | also, failed
    assert says in results[check]["detail"], results[check]["detail"]
