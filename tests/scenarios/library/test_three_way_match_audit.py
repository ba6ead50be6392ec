"""three-way-match: wrong clerks the checks once accepted, each refused by the check that
owns the rule, and a correct variant still accepted (medium tier, seed 0).

- ``bills-as-invoiced``: a bill due later than its invoice says; an invoice held from the
  turn it arrived to the next one (dated as invoiced); a line billed above tolerance
  entered as one unit at the line's amount (same total, still held, no price variance);
- ``paid-in-the-run-on-the-payment-day``: a bill paid by the clerk outside the run before
  the payment day; the payment run dated a week back;
- ``bills-as-invoiced``: bills left unapproved until the controller approves them on the
  payment day;
- ``only-the-works-writes``: a journal moving price variance (5900) into expense (6000);
- ``holds-list-rows``: the holds file's reasons left as ``x``;
- ``holds-as-matched``: a hold released with a reason naming no goods receipt;
- a payment run asked for everything due by year end (the same bills paid), a holds file
  naming vendors by name with reasons in other words, and a release naming its goods
  receipt in lower case in other words, are accepted.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import pytest

from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "three-way-match"
SEED = 0


class _Clerk:
    """The reference with one mistake (or one harmless difference)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.held: str | None = None
        self.held_on: date | None = None
        self.paid = False

    def run_turn(self, desk: TurnContext) -> None:
        solver = load_solver(library_dir() / NAME / "solver.py")

        def twisted(real: Execute, cmd: c.Command) -> Any:
            books = desk.ledger.books
            if isinstance(cmd, c.EnterMatchedBill):
                if self.name == "due-later" and cmd.due_on is not None:
                    cmd = cmd.model_copy(update={"due_on": cmd.due_on + timedelta(days=9)})
                if self.name == "held-a-turn" and desk.day < solver.PAYMENT_DAY:
                    if self.held is None:   # the first invoice, left to the next turn
                        self.held, self.held_on = cmd.vendor_invoice_number, desk.day
                    if (self.held, self.held_on) == (cmd.vendor_invoice_number, desk.day):
                        return None
                if self.name == "line-as-one-unit":
                    po = books.purchasing.orders[cmd.po_id]
                    cmd = cmd.model_copy(update={"lines": tuple(
                        x.model_copy(update={"quantity": 1,
                                             "unit_price": x.quantity * x.unit_price})
                        if x.unit_price * 100 > po.lines[x.line].unit_price * 102 else x
                        for x in cmd.lines)})
            if self.name == "approved-on-payment-day" and isinstance(cmd, c.ApproveBill) \
                    and desk.day < solver.PAYMENT_DAY:
                return None
            if isinstance(cmd, c.ReleaseBillHold):
                if self.name == "release-unexplained":
                    cmd = cmd.model_copy(update={"reason": "ok to pay"})
                if self.name == "release-reworded":
                    last = cmd.reason.rsplit("(", 1)[-1].rstrip(")").split(", ")[-1]
                    cmd = cmd.model_copy(update={"reason": f"cleared by {last.lower()}"})
            if isinstance(cmd, c.RunPayments):
                if self.name == "run-dated-back":
                    cmd = cmd.model_copy(update={"entry_date": desk.day - timedelta(days=7)})
                if self.name == "run-due-by-year-end":
                    cmd = cmd.model_copy(update={"due_by": date(2026, 12, 31)})
            out = real(cmd)
            if self.name == "paid-early" and isinstance(cmd, c.ApproveBill) \
                    and not self.paid and books.purchasing.on_hold(cmd.bill_id) is None:
                self.paid = True
                bill = books.bills[cmd.bill_id]
                assert isinstance(real(c.PayVendor(
                    vendor_id=bill.vendor_id, bank_account_id=solver.OPERATING_ACCOUNT,
                    entry_date=desk.day, applications=(
                        c.BillPayment(bill_id=bill.bill_id, amount=bill.open),))), list)
            return out

        with routed(desk, twisted):
            solver.reference(desk)
        if desk.day != solver.PAYMENT_DAY:
            return
        if self.name == "variance-to-expense":
            assert isinstance(desk.execute(c.PostJournalEntry(
                entry_date=desk.day, memo="price variance to expense", lines=(
                    c.JournalLineIn(account="6000", debit=5000),
                    c.JournalLineIn(account="5900", credit=5000)))), list)
        if self.name in ("reasons-x", "reasons-reworded"):
            path = desk.output_dir / solver.HOLDS_FILE
            rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
            books = desk.ledger.books
            with path.open("w", encoding="utf-8", newline="") as f:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(rows[0])
                for bill, vendor, why in rows[1:]:
                    if self.name == "reasons-x":
                        w.writerow((bill, vendor, "x"))
                    else:
                        w.writerow((bill, books.vendors[vendor].name, "unit price above the PO"
                                    if "price" in why else "short shipment"))


CLERKS = ("due-later", "held-a-turn", "line-as-one-unit", "paid-early", "run-dated-back",
          "run-due-by-year-end", "approved-on-payment-day", "variance-to-expense", "reasons-x",
          "reasons-reworded", "release-unexplained", "release-reworded")


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME), tier="medium")
    root = tmp_path_factory.mktemp("twm")
    yield {name: run_attempt(loaded, SEED, name, root / name, agent=_Clerk(name))
           for name in CLERKS}


@pytest.mark.parametrize(("clerk", "says"), [
    ("due-later", "the invoice says"),
    ("held-a-turn", "was entered in the turn of 2026-07-15, not the turn of 2026-07-08"),
    ("line-as-one-unit", ", the invoice line 1 "),
    ("approved-on-payment-day", "was entered in the turn of 2026-07-08 and approved in the "
                                "turn of 2026-07-22"),
])
def test_a_bill_not_as_invoiced_is_refused(attempts: dict[str, AttemptResult], clerk: str,
                                           says: str) -> None:
    res = attempts[clerk]
    assert failed_checks(res.out) == {"bills-as-invoiced"}
    assert says in check_results(res.out)["bills-as-invoiced"]["detail"]


@pytest.mark.parametrize(("clerk", "says"), [
    ("paid-early", "is paid outside a payment run"),
    ("run-dated-back", "made in the turn of 2026-07-22 is dated 2026-07-15"),
])
def test_a_payment_off_the_payment_days_run_is_refused(
        attempts: dict[str, AttemptResult], clerk: str, says: str) -> None:
    res = attempts[clerk]
    assert failed_checks(res.out) == {"paid-in-the-run-on-the-payment-day"}
    assert says in check_results(res.out)["paid-in-the-run-on-the-payment-day"]["detail"]


def test_a_run_due_by_year_end_paying_the_same_bills_is_accepted(
        attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["run-due-by-year-end"].out) == set()


def test_a_journal_moving_the_price_variance_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["variance-to-expense"]
    assert failed_checks(res.out) == {"only-the-works-writes"}
    assert "1 journal entry posted" in check_results(res.out)["only-the-works-writes"]["detail"]


def test_a_holds_file_without_its_reasons_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["reasons-x"]
    assert failed_checks(res.out) == {"holds-list-rows"}
    detail = check_results(res.out)["holds-list-rows"]["detail"]
    assert "reason 'x' does not say it is held for" in detail


def test_a_holds_file_by_vendor_name_with_reasons_reworded_is_accepted(
        attempts: dict[str, AttemptResult]) -> None:
    out = attempts["reasons-reworded"].out
    assert "unit price above the PO" in next(out.rglob("holds.csv")).read_text()
    assert failed_checks(attempts["reasons-reworded"].out) == set()


def test_a_release_naming_no_goods_receipt_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["release-unexplained"]
    assert failed_checks(res.out) == {"holds-as-matched"}
    detail = check_results(res.out)["holds-as-matched"]["detail"]
    assert "('ok to pay') names no goods receipt of PO-" in detail


def test_a_release_naming_its_receipt_in_other_words_is_accepted(
        attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["release-reworded"].out) == set()
