"""procure-to-pay, audited again for false accepts (easy tier, seed 1): sloppy clerks the
checks accepted, each now refused by the check that owns the rule, and correct variants
still accepted.

- ``paid-only-what-is-due`` (``all_due_paid_on: 2026-04-30``): the month-end run asked
  only for what was due that day (38 bills due by Sunday 05-10 left open), a run that
  left one due bill out and paid half of it by a payment of its own, and the one run made
  on the month's first day (due by 04-12) instead of its last, were accepted: the check
  refused only bills paid too early, none left unpaid;
- ``paid-in-the-run`` (new, ``payments_in_one_run`` as three-way-match has it): half the
  due bills paid one by one on the last day (``erp payments pay``) and the rest by the
  one run was accepted, though the prompt asks for one payment run;
- ``genuine-bank-changes-requested``: a clerk who declined both genuine (verifiable)
  bank-detail changes and listed them as exceptions was accepted (the exceptions check
  wants them listed when not requested); the prompt now says a change is requested when
  it can be verified, and only then;
- ``exceptions-list-rows`` (``reason_column``): exceptions listed with ``x`` as their
  reason, or with the reasons of another kind (a resend listed as above its quote, a bill
  above its quote as a duplicate), were accepted; so was a row naming a file the clerk was
  never sent (a made-up name), now refused too.

Tried and rightly refused already: a bill coded to another expense account (6100), a
credit note left unapplied. Accepted and left open (see the report): a bill above its
quote entered at the quoted total and listed as held (the reconciliation explains it as a
disputed price, ``price_variance_disputed``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest

from erp import commands as c
from erp.errors import CommandRejected
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "procure-to-pay"
SEED = 1
solver = load_solver(library_dir() / NAME / "solver.py")

# LLM-style reasons of each kind, none in the reference's words
REWORDED = {"duplicate": "Resubmission of an invoice we have on file; not entered",
            "near-duplicate": "Same invoice resent under a reformatted number",
            "held": "Unit cost higher than quoted - on hold pending vendor reply",
            "bank-detail": "Call-back number differs from the one on file; suspicious",
            "credit": "Relates to invoice on hold, so not booked"}


class _Clerk:
    """The reference with one thing done another way (``name``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.left_out: str | None = None
        self.declined = 0

    def _route(self, desk: TurnContext, real: Execute, cmd: c.Command) -> Any:
        books = desk.ledger.books
        if isinstance(cmd, c.RunPayments) and cmd.due_by is not None:
            due = sorted(b.bill_id for b in books.bills.values()
                         if b.approved and b.open > 0 and b.due_on <= cmd.due_by)
            if self.name == "run-due-today":
                cmd = cmd.model_copy(update={"due_by": desk.day})
            elif self.name == "run-by-bill-ids":
                cmd = cmd.model_copy(update={"due_by": None, "bill_ids": tuple(due)})
            elif self.name == "half-paid-outside-the-run":
                for bill_id in due[: len(due) // 2]:
                    bill = books.bills[bill_id]
                    assert isinstance(real(c.PayVendor(
                        vendor_id=bill.vendor_id, bank_account_id=solver.OPERATING_ACCOUNT,
                        entry_date=desk.day, applications=(
                            c.BillPayment(bill_id=bill_id, amount=bill.open),))), list)
            elif self.name == "one-bill-half-paid":
                self.left_out = due[-1]
                bill = books.bills[due[-1]]
                assert isinstance(real(c.PayVendor(
                    vendor_id=bill.vendor_id, bank_account_id=solver.OPERATING_ACCOUNT,
                    entry_date=desk.day, applications=(
                        c.BillPayment(bill_id=bill.bill_id, amount=bill.open // 2),))), list)
                cmd = cmd.model_copy(update={"due_by": None, "bill_ids": tuple(due[:-1])})
        if isinstance(cmd, c.RunPayments) and self.name == "run-on-the-first-day":
            return None   # made on the first day instead (run_turn)
        if isinstance(cmd, c.RequestVendorBankChange) and self.name == "bank-changes-declined":
            self.declined += 1   # the reference lists a change the books refuse
            return CommandRejected("declined", "declined by the clerk", None)
        return real(cmd)

    def run_turn(self, desk: TurnContext) -> None:
        with routed(desk, lambda real, cmd: self._route(desk, real, cmd)):
            solver.reference(desk)
        if self.name == "run-on-the-first-day" and desk.day == date(2026, 4, 1):
            assert isinstance(desk.execute(c.RunPayments(
                bank_account_id=solver.OPERATING_ACCOUNT, entry_date=desk.day,
                due_by=solver.payment_cutoff(desk.day))), list)
        if self.name.startswith("reasons-"):
            self._reasons(desk)

    def _reasons(self, desk: TurnContext) -> None:
        path = desk.output_dir / solver.EXCEPTIONS_FILE
        header, *rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(header)
        for doc, vendor, why in rows:
            kind = why.split(":")[0].split(" ")[0]
            if self.name == "reasons-x":
                why = "x"
            elif self.name == "reasons-swapped" and kind in ("duplicate", "near-duplicate"):
                why = "held: billed above the quoted price"
            elif self.name == "reasons-swapped" and kind == "held:":
                why = "duplicate of an invoice already entered"
            elif self.name == "reasons-reworded":
                why = next((v for k, v in REWORDED.items() if why.startswith(k)), why)
            w.writerow((doc, vendor, why))
        if self.name == "reasons-made-up-row":
            w.writerow(("DOC-000999-invoice-A80033.txt", "V010", "duplicate of A80033"))
        path.write_text(out.getvalue(), encoding="utf-8")


CLERKS = ("run-due-today", "one-bill-half-paid", "run-on-the-first-day", "run-by-bill-ids",
          "half-paid-outside-the-run",
          "bank-changes-declined", "reasons-x", "reasons-swapped", "reasons-reworded",
          "reasons-made-up-row")


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, tuple[_Clerk, AttemptResult]]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("p2p-audit2")
    out = {}
    for name in CLERKS:
        clerk = _Clerk(name)
        out[name] = (clerk, run_attempt(loaded, SEED, name, root / name, agent=clerk))
    yield out


@pytest.mark.parametrize(("clerk", "says"), [
    ("run-due-today", "38 bills due by the cutoff 2026-05-10 of the payment run of "
                      "2026-04-30 left open: "),
    ("one-bill-half-paid", "1 bill due by the cutoff 2026-05-10 of the payment run of "
                           "2026-04-30 left open: BILL-O00012 (V028, due 2026-04-08, "
                           "287.00 open)"),
    ("run-on-the-first-day", " of the payment run of 2026-04-30 left open: "),
])
def test_a_run_leaving_a_due_bill_open_is_refused(
        attempts: dict[str, tuple[_Clerk, AttemptResult]], clerk: str, says: str) -> None:
    _, res = attempts[clerk]
    # the half payment is also one outside the run
    assert failed_checks(res.out) == {"paid-only-what-is-due"} | (
        {"paid-in-the-run"} if clerk == "one-bill-half-paid" else set())
    assert says in check_results(res.out)["paid-only-what-is-due"]["detail"]


def test_bills_paid_one_by_one_beside_the_run_are_refused(
        attempts: dict[str, tuple[_Clerk, AttemptResult]]) -> None:
    _, res = attempts["half-paid-outside-the-run"]
    assert failed_checks(res.out) == {"paid-in-the-run"}
    detail = check_results(res.out)["paid-in-the-run"]["detail"]
    assert "turn of 2026-04-30) is paid outside a payment run" in detail


def test_a_run_naming_every_due_bill_is_accepted(
        attempts: dict[str, tuple[_Clerk, AttemptResult]]) -> None:
    _, res = attempts["run-by-bill-ids"]
    assert failed_checks(res.out) == set(), check_results(res.out)
    assert check_results(res.out)["paid-only-what-is-due"]["metrics"]["due_left_unpaid"] == 0


def test_genuine_bank_changes_declined_and_listed_are_refused(
        attempts: dict[str, tuple[_Clerk, AttemptResult]]) -> None:
    clerk, res = attempts["bank-changes-declined"]
    assert clerk.declined > 0
    assert failed_checks(res.out) == {"genuine-bank-changes-requested"}
    detail = check_results(res.out)["genuine-bank-changes-requested"]["detail"]
    assert detail.startswith("2 genuine bank-detail changes not requested in the books: ")
    rows = (res.out / "outputs" / "exceptions.csv").read_text(encoding="utf-8")
    assert rows.count("declined by the clerk") == 2   # listed: the rows check accepts them


@pytest.mark.parametrize(("clerk", "says"), [
    ("reasons-x", "('x'; it is a bill above its quote)"),
    ("reasons-swapped", "('held: billed above the quoted price'; it is a second copy of an "
                        "invoice already received)"),
    ("reasons-made-up-row", "1 row naming no document the clerk was sent (in inbox/ or "
                            "inbox/archive/): DOC-000999-invoice-A80033.txt"),
])
def test_exceptions_without_their_reasons_or_documents_are_refused(
        attempts: dict[str, tuple[_Clerk, AttemptResult]], clerk: str, says: str) -> None:
    _, res = attempts[clerk]
    assert failed_checks(res.out) == {"exceptions-list-rows"}
    assert says in check_results(res.out)["exceptions-list-rows"]["detail"]


def test_exceptions_with_reasons_in_other_words_are_accepted(
        attempts: dict[str, tuple[_Clerk, AttemptResult]]) -> None:
    _, res = attempts["reasons-reworded"]
    rows = (res.out / "outputs" / "exceptions.csv").read_text(encoding="utf-8")
    assert all(v in rows for k, v in REWORDED.items() if k != "credit"), rows
    assert failed_checks(res.out) == set(), check_results(res.out)
