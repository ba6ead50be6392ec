"""The bank: deposits for payments, debits for the company's payments, month end, injections."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from counterparties.bank import BANK_NAME, DEPOSIT_DESCRIPTION, SETTLEMENT_DAYS
from counterparties.profiles import VENDOR_PROFILES
from counterparties.specs import VendorSpec
from erp import commands as c
from erp import queries as q
from erp.events import BankDetails
from erp.money import format_cents
from sim.automation import BANK_ACCOUNT, OpeningBill, OpeningInvoice
from sim.world_events import PaymentDiverted, PaymentReceived
from tests.counterparties.helpers import NO_ORDERS, OPENING_BANK, Run, read_csv, simulate, spec


def invoices(cid: str, first: int, *issued: date, amount: int = 2_000_00) -> list[OpeningInvoice]:
    """Opening invoices of one customer."""
    return [OpeningInvoice(f"INV-{first + n:06d}", cid, day, amount + 1_111 * n)
            for n, day in enumerate(issued)]


MIXED = [spec("C0001", "on_time", name="Acme Corp", **NO_ORDERS),
         spec("C0002", "card_processor", name="Globex", **NO_ORDERS),
         spec("C0003", "intl_wire", name="Soylent SA", **NO_ORDERS),
         spec("C0004", "multi_invoice_ach", name="Initrode", **NO_ORDERS),
         spec("C0005", "customer_only_wire", name="Umbrella Ltd", **NO_ORDERS)]
MIXED_OPENING = (invoices("C0001", 1, date(2026, 2, 2), date(2026, 2, 9))
                 + invoices("C0002", 3, date(2026, 2, 3))
                 + invoices("C0003", 4, date(2026, 2, 4), date(2026, 2, 6))
                 + invoices("C0004", 6, date(2026, 2, 5), date(2026, 2, 7))
                 + invoices("C0005", 8, date(2026, 1, 20), date(2026, 1, 25)))


def test_every_payment_becomes_a_deposit_that_the_feed_imports(tmp_path: Path) -> None:
    run = simulate(tmp_path, MIXED, opening=MIXED_OPENING)
    cal = run.engine.calendar
    pays = run.payments()
    assert {p.method for p in pays} == {"ach", "card", "wire"}
    deposits = {x.source: x for x in run.lines() if x.kind == "deposit"}
    assert set(deposits) == {p.payment_id for p in pays}
    imported = {x["line_id"]: x for x in q.statement_lines(run.ledger.store)}
    for p in pays:
        line = deposits[p.payment_id]
        assert (line.amount, line.reference, line.counterparty, line.description) == (
            p.arrives, p.reference, p.payer_name, DEPOSIT_DESCRIPTION[p.method])
        assert line.bank_account_id == BANK_ACCOUNT and line.duplicate_of is None
        assert line.posted_on == cal.add_business_days(run.sent_on(p.payment_id),
                                                       SETTLEMENT_DAYS[p.method])
        row = imported[line.line_id]
        assert (row["amount"], row["entry_date"], row["reference"]) == (
            p.arrives, line.posted_on.isoformat(), p.reference)
    wire = next(p for p in pays if p.method == "wire")
    assert deposits[wire.payment_id].posted_on == run.sent_on(wire.payment_id)  # same day
    # the feed named the customer where the payer's name is the customer's
    receipts = run.ledger.books.receipts
    for p in pays:
        rct = receipts[f"RCT-{deposits[p.payment_id].line_id}"]
        assert rct.customer_id == (None if p.method == "card" else p.customer_id)
    assert [x.amount for x in run.bank.lines] == [x.amount for x in run.lines()]


def _vendor(vid: str, name: str, account: str) -> VendorSpec:
    return VendorSpec(vendor_id=vid, name=name, behaviour="reliable",
                      profile=VENDOR_PROFILES["reliable"],
                      bank=BankDetails(account_name=name, routing="021000021",
                                       account_number=account))


def test_company_payments_and_refunds_become_debits(tmp_path: Path) -> None:
    vendors = [_vendor("V001", "Initech", "111111111"), _vendor("V002", "Hooli", "222222222")]
    bills = [OpeningBill("BILL-1", "V001", "I-77", date(2026, 2, 20), 1_500_00),
             OpeningBill("BILL-2", "V002", "H-12", date(2026, 2, 21), 2_750_00)]
    thief = BankDetails(account_name="Hooli", routing="091000019", account_number="999999999")

    def clerk(run: Run, day: date) -> None:
        w = run.engine.world
        if day == date(2026, 3, 3):
            w.execute(c.PayVendor(payment_id="PAY-V1", vendor_id="V001",
                                  bank_account_id=BANK_ACCOUNT,
                                  applications=(c.BillPayment(bill_id="BILL-1",
                                                              amount=1_500_00),)),
                      actor="agent:turn", role="clerk")
            w.execute(c.RequestVendorBankChange(vendor_id="V002", new_bank=thief,
                                                reason="email from the vendor"),
                      actor="agent:turn", role="clerk")  # the controller approves at day end
        if day == date(2026, 3, 4):
            w.execute(c.PayVendor(payment_id="PAY-V2", vendor_id="V002",
                                  bank_account_id=BANK_ACCOUNT,
                                  applications=(c.BillPayment(bill_id="BILL-2",
                                                              amount=2_750_00),)),
                      actor="agent:turn", role="clerk")
        if day == date(2026, 3, 6):
            rct = next(iter(run.ledger.books.receipts))
            w.execute(c.RefundCustomer(refund_id="RF-1", receipt_id=rct, amount=25_00),
                      actor="agent:turn", role="clerk")

    run = simulate(tmp_path, [spec("C0001", "on_time", name="Acme Corp", pay_days_after_due=0,
                                   **NO_ORDERS)],
                   opening=invoices("C0001", 1, date(2026, 1, 30)), vendors=vendors,
                   opening_bills=bills, agent=clerk, days=6)
    assert not run.engine.world.rejections
    debits = [x for x in run.lines() if x.amount < 0]
    assert [(x.posted_on, x.amount, x.kind, x.source, x.reference, x.counterparty)
            for x in debits] == [
        (date(2026, 3, 3), -1_500_00, "payment", "PAY-V1", "PAY-V1", "Initech"),
        (date(2026, 3, 4), -2_750_00, "payment", "PAY-V2", "PAY-V2", "Hooli"),
        (date(2026, 3, 6), -25_00, "refund", "RF-1", "RF-1", "Acme Corp")]
    assert [(e.vendor_id, e.payment_id, e.amount) for _, e in run.events(PaymentReceived)] == [
        ("V001", "PAY-V1", 1_500_00)]
    diverted = [e for _, e in run.events(PaymentDiverted)]
    assert [(e.vendor_id, e.payment_id, e.account) for e in diverted] == [
        ("V002", "PAY-V2", thief)]
    imported = {x["line_id"]: x["amount"] for x in q.statement_lines(run.ledger.store)}
    assert all(imported[x.line_id] == x.amount for x in debits)


def test_month_end_fee_interest_and_a_statement_with_running_balance(tmp_path: Path) -> None:
    run = simulate(tmp_path, MIXED, opening=MIXED_OPENING, start=date(2026, 3, 2), days=24)
    month_end = date(2026, 3, 31)
    march = [x for x in run.lines() if x.posted_on.month == 3]
    fee = next(x for x in march if x.kind == "fee")
    interest = next(x for x in march if x.kind == "interest")
    assert fee.posted_on == interest.posted_on == month_end
    items_before_fee = march.index(fee)
    assert fee.amount == -(run.bank.monthly_fee + run.bank.item_fee * items_before_fee)
    assert 0 < interest.amount < 500_00  # about 0.5% a year on a few hundred thousand
    assert (fee.counterparty, interest.description) == (BANK_NAME, "INTEREST CREDIT")
    doc = next(d for d in run.documents("statement"))
    assert doc.truth["period"] == "2026-03" and doc.filename.endswith("2026-03.csv")
    rows = read_csv(doc.content)
    assert list(rows[0]) == ["date", "line_id", "description", "reference", "counterparty",
                             "amount", "balance"]
    assert (rows[0]["description"], rows[0]["balance"]) == ("OPENING BALANCE",
                                                           format_cents(OPENING_BANK))
    body = rows[1:-1]
    assert [r["line_id"] for r in body] == sorted(x.line_id for x in march) == doc.truth[
        "line_ids"]
    balance = OPENING_BANK
    for r, x in zip(body, sorted(march, key=lambda x: x.line_id), strict=True):
        balance += x.amount
        assert (r["amount"], r["balance"], r["date"]) == (
            format_cents(x.amount), format_cents(balance), x.posted_on.isoformat())
    assert rows[-1]["description"] == "CLOSING BALANCE"
    assert rows[-1]["balance"] == format_cents(balance) == format_cents(doc.truth["closing"])
    assert balance == run.bank.balance(month_end)
    assert len(run.documents("statement")) == 1  # the calendar ends before April's end
    imported = {x["line_id"] for x in q.statement_lines(run.ledger.store)}
    assert {fee.line_id, interest.line_id} <= imported
    # the books' bank account and the bank agree once every line is recorded
    assert OPENING_BANK + sum(x.amount for x in run.lines()) == run.bank.balance()


def test_duplicate_bank_line_copies_one_of_todays_deposits(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "on_time", **NO_ORDERS)], days=8,
                   opening=invoices("C0001", 1, date(2026, 1, 30)),
                   injections=[(date(2026, 3, 4), "duplicate_bank_line", {}),
                               (date(2026, 3, 6), "duplicate_bank_line", {})])
    first, copy = run.lines()  # the second injection finds no deposit that day, or after
    assert copy.duplicate_of == first.line_id and copy.line_id != first.line_id
    assert (copy.amount, copy.source, copy.reference, copy.posted_on) == (
        first.amount, first.source, first.reference, first.posted_on)
    assert first.posted_on == date(2026, 3, 4)
    planted = [x.detail for x in run.planted()]
    assert [(x["on"], x.get("line_id"), x.get("waits_for")) for x in planted] == [
        ("2026-03-04", copy.line_id, None), ("2026-03-06", None, "the next deposit")]
    assert copy.line_id in run.ledger.books.statement_lines  # the feed imports the copy too


def test_duplicate_bank_line_waits_for_the_next_deposit(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "on_time", pay_days_after_due=0, **NO_ORDERS)],
                   opening=invoices("C0001", 1, date(2026, 2, 6)), days=10,
                   injections=[(date(2026, 3, 3), "duplicate_bank_line", {})])
    first, copy = run.lines()
    assert first.posted_on > date(2026, 3, 3)
    assert copy.duplicate_of == first.line_id and copy.posted_on == first.posted_on
    armed, done = run.planted()
    assert armed.detail == {"on": "2026-03-03", "waits_for": "the next deposit"}
    assert done.detail["line_id"] == copy.line_id and done.injection_id == armed.injection_id


@pytest.mark.parametrize("on", [date(2026, 3, 9), date(2026, 3, 7)])  # a Monday, a Saturday
def test_returned_item_reverses_a_customers_deposit(tmp_path: Path, on: date) -> None:
    customers = [spec("C0001", "on_time", **NO_ORDERS), spec("C0002", "on_time", **NO_ORDERS)]
    run = simulate(tmp_path, customers, days=8,
                   opening=(invoices("C0001", 1, date(2026, 1, 30))
                            + invoices("C0002", 2, date(2026, 1, 31))),
                   injections=[(on, "returned_item", {"customer": "C0002"})])
    returned = next(x for x in run.lines() if x.kind == "returned")
    planted = run.planted()[0].detail
    original = next(x for x in run.lines() if x.line_id == planted["returns"])
    assert planted["line_id"] == returned.line_id
    assert returned.amount == -original.amount and returned.source == original.source
    assert returned.description.startswith("RETURNED ITEM")
    assert returned.posted_on == date(2026, 3, 9)
    p = next(p for p in run.payments() if p.payment_id == original.source)
    assert p.customer_id == "C0002"
    assert run.customer("C0002").invoices["INV-000002"].owed == p.amount  # owed again
    assert run.customer("C0001").invoices["INV-000001"].owed == 0
    assert returned.line_id in run.ledger.books.statement_lines


def test_returned_item_without_a_deposit_plants_nothing(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "never_pays", **NO_ORDERS)], days=3,
                   injections=[(date(2026, 3, 3), "returned_item", {})])
    assert run.lines() == []
    assert [x.detail.get("skipped") for x in run.planted()] == ["no deposit to return"]
