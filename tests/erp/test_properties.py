"""Any sequence of commands keeps the books consistent (hypothesis state machine).

A ``RuleBasedStateMachine`` drives a real ``Ledger`` on a real store (an SQLite
file; a PostgreSQL schema in the smaller run) through generated sequences of
order-to-cash, procure-to-pay, bank and general-ledger commands, and deliberately
invalid ones that must be rejected without writing anything. The machine keeps
its own small model of the books (open amounts, GL balances, matches) as an
oracle independent of ``Books`` and of the projections.

Besides single commands it runs batches (a valid one, and one whose last command
is rejected after the others were staged) and writes through a second ledger on
the same store, which ours must fold in before its next write.

After every step: the trial balance sums to zero and equals the model's GL,
every control account ties to its subledger, and ``Books`` and the ``documents``
table agree with the model. At the end of each example: the trial balance, the
ties and invoice states as of earlier log positions and business dates match
what the model held then; ``rebuild()`` reproduces the live read tables exactly;
the hash chain verifies; and a ledger folded afresh from the log holds the same
``Books`` as the live one.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from erp import commands as c
from erp import events as ev
from erp import queries as q
from erp.errors import CommandRejected
from erp.ledger import Ledger, Submission
from erp.store import EventStore
from tests.conftest import PG_URL, pg_schema, require_postgres
from tests.erp.helpers import BANK, DAY, SYS, assert_rejected, fingerprint, set_up_company

BANKS = {BANK: "1000", "B-SAV": "1010"}
"""Bank account -> its GL control account."""
CREDIT_LIMITS = {"C1": 5_000_000, "C2": None}
VENDOR_TERMS = {"V1": 30, "V2": 10}
PERIODS = {"2026-02": 28, "2026-03": 31, "2026-04": 30}
"""The periods ``set_up_company`` opens, with their last day."""
CONTROL = ("1000", "1010", "1200", "2000", "2150")
REVENUE = ("4000", "4050", "4900")
EXPENSE = ("6000", "6100", "6200", "6300", "1300")
JE_ACCOUNTS = ("1300", "1500", "2100", "2200", "3000", "4000", "6000", "6100")

amounts = st.integers(min_value=1, max_value=500_000)


# --- the model: what the books must hold ------------------------------------------


@dataclass
class Inv:
    customer: str
    total: int
    open: int
    day: date
    allowed: int = 0  # processor fees accepted on it so far


@dataclass
class Rct:
    customer: str | None
    bank: str
    amount: int
    unapplied: int
    day: date
    applied: dict[str, int] = field(default_factory=dict)


@dataclass
class Bill:
    vendor: str
    number: str
    total: int
    open: int
    due_on: date
    approved: bool = False


@dataclass
class Credit:
    vendor: str
    amount: int
    open: int


@dataclass
class BankDoc:
    bank: str
    amount: int  # signed as the bank sees it
    line: str | None = None


@dataclass
class Line:
    bank: str
    amount: int
    targets: tuple[tuple[str, str], ...] = ()


@dataclass
class Journal:
    lines: tuple[tuple[str, int], ...]
    is_reversal: bool = False
    reversed: bool = False
    opening: bool = False


@dataclass
class BankChange:
    vendor: str
    role: str
    status: str = "pending"


def _bp(amount: int, bp: int) -> int:
    """``bp`` basis points of a positive amount, half rounded up."""
    return (amount * bp + 5_000) // 10_000


FEE_LIMIT_BP, FEE_LIMIT_FIXED = 500, 100
"""The default policy: a clerk may accept fees up to 5% of an invoice plus 1.00."""


def _state(led: Ledger) -> dict[str, Any]:
    """The books' working state (without the period lookup cache)."""
    return {k: v for k, v in vars(led.books).items() if k != "_period_of"}


def _status(kind: str, total: int, open_: int, approved: bool = False) -> str:
    if kind == "invoice":
        return "paid" if open_ == 0 else "open" if open_ == total else "partially_paid"
    if kind == "receipt":
        return "applied" if open_ == 0 else "unapplied" if open_ == total else "partially_applied"
    if kind == "bill":
        if open_ == 0:
            return "paid"
        if open_ != total:
            return "partially_paid"
        return "approved" if approved else "entered"
    return "applied" if open_ == 0 else "open" if open_ == total else "partially_applied"


def _start(period: str) -> date:
    year, month = (int(x) for x in period.split("-"))
    return date(year, month, 1)


def _drop_schema(schema: str) -> None:
    store = EventStore.open(PG_URL, schema=schema, create=True)
    try:
        store.drop()
    finally:
        store.close()


# --- the machine -------------------------------------------------------------------


class BooksMachine(RuleBasedStateMachine):
    """Commands against real books, checked against a model after every step."""

    backend = "sqlite"
    _pg_counter = itertools.count()

    def __init__(self) -> None:
        super().__init__()
        self._tmp: str | None = None
        self._schema: str | None = None
        if self.backend == "sqlite":
            self._tmp = tempfile.mkdtemp(prefix="erpsim-props-")
            self.target = str(Path(self._tmp) / "books.db")
        else:
            self._schema = pg_schema(f"tests/erp/test_properties.py::pg::{os.getpid()}::"
                                     f"{next(self._pg_counter)}")
            _drop_schema(self._schema)  # a crashed earlier run may have left it
            self.target = PG_URL
        self.ledger = Ledger.open(self.target, schema=self._schema, create=True)
        set_up_company(self.ledger)
        self.ledger.execute_batch([Submission(cmd, **SYS) for cmd in (
            c.OpenBankAccount(bank_account_id="B-SAV", name="Savings", number="0002",
                              gl_account="1010", entry_date=DAY, opening_balance="2500.00"),
            c.RegisterVendor(vendor_id="V2", name="Umbrella", terms_days=10),
        )])
        self.gl: dict[str, int] = defaultdict(int)
        self.gl_lines: list[tuple[date, str, int]] = []
        self._post(DAY, ("1000", 1_000_000), ("1010", 250_000), ("3900", -1_250_000))
        self.history: list[tuple[int, dict[str, int], dict[str, int]]] = []
        """(log position, GL balances, invoices' open amounts) after each step."""
        self.invoices: dict[str, Inv] = {}
        self.receipts: dict[str, Rct] = {}
        self.bills: dict[str, Bill] = {}
        self.credits: dict[str, Credit] = {}
        self.bank_docs: dict[tuple[str, str], BankDoc] = {}
        self.lines: dict[str, Line] = {}
        self.journal: dict[str, Journal] = {}
        self.closed = dict.fromkeys(PERIODS, False)
        self.vendor_has_bank = {"V1": True, "V2": False}
        self.bank_changes: dict[str, BankChange] = {}
        self.numbers = itertools.count(1)
        self.peer: Ledger | None = None  # a second writer on the same store, while it writes

    def teardown(self) -> None:
        try:
            self._check_rebuild_and_replay()
        finally:
            self.ledger.close()
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
            if self._schema is not None:
                _drop_schema(self._schema)

    # --- running commands -----------------------------------------------------------

    def _run(self, cmd: c.Command, role: str = "clerk", day: date = DAY) -> list[ev.Event]:
        ledger = self.peer if self.peer is not None else self.ledger
        stored = ledger.execute(cmd, actor=f"test:{role}", role=role,  # type: ignore[arg-type]
                                business_date=day)
        return [s.event for s in stored]

    def _reject(self, cmd: c.Command | list[c.Command], code: str, role: str = "clerk",
                day: date = DAY) -> None:
        """The command (or batch) is rejected with ``code`` and nothing changes."""
        before = fingerprint(self.ledger)
        cmds = cmd if isinstance(cmd, list) else [cmd]
        with pytest.raises(CommandRejected) as info:
            self.ledger.execute_batch([Submission(x, f"test:{role}", role, day)  # type: ignore[arg-type]
                                       for x in cmds])
        assert info.value.code == code, f"expected {code}, got {info.value!r}"
        assert fingerprint(self.ledger) == before, f"rejected {code} changed the store"

    def _post(self, day: date, *lines: tuple[str, int]) -> None:
        for account, amount in lines:
            self.gl[account] += amount
            self.gl_lines.append((day, account, amount))

    def _day(self, data: st.DataObject, *, closed: bool = False,
             not_before: date | None = None) -> date:
        """A day in an open period (with ``closed``, a closed one), not before a date if one is
        open (the caller expects the rejection when it is earlier)."""
        periods = sorted(p for p, is_closed in self.closed.items() if is_closed == closed)
        first = dict.fromkeys(periods, 1)  # each period's first day to draw from
        if not_before is not None:
            late = {p: not_before.day if _start(p) <= not_before else 1 for p in periods
                    if _start(p).replace(day=PERIODS[p]) >= not_before}
            first = late or first
        period = data.draw(st.sampled_from(sorted(first)), label="period")
        return _start(period).replace(
            day=data.draw(st.integers(first[period], PERIODS[period]), label="day"))

    def _number(self) -> str:
        return f"N-{next(self.numbers)}"

    def _open_ar(self, customer: str) -> int:
        return sum(i.open for i in self.invoices.values() if i.customer == customer)

    @initialize(data=st.data())
    def seed_documents(self, data: st.DataObject) -> None:
        """Start every example with open documents, so that every rule is soon enabled."""
        for _ in range(2):
            self.issue_invoice(data)
            self.record_receipt(data)
            self.enter_bill(data)
        self.approve_bill(data)
        self.record_vendor_credit(data)

    # --- receivables ------------------------------------------------------------------

    @rule(data=st.data())
    def issue_invoice(self, data: st.DataObject) -> None:
        customer = data.draw(st.sampled_from(sorted(CREDIT_LIMITS)), label="customer")
        raw = data.draw(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 200_000),
                                           st.sampled_from((None, *REVENUE))),
                                 min_size=1, max_size=3), label="lines")
        bp = data.draw(st.just(0) | st.integers(0, 2_500), label="tax_rate_bp")
        day = self._day(data)
        subtotal = sum(qty * price for qty, price, _ in raw)
        total = subtotal + _bp(subtotal, bp)
        cmd = c.IssueInvoice(customer_id=customer, entry_date=day, tax_rate_bp=bp,
                             lines=tuple(c.InvoiceLineIn(description="work", quantity=qty,
                                                         unit_price=price, account=account)
                                         for qty, price, account in raw))
        limit = CREDIT_LIMITS[customer]
        if limit is not None and self._open_ar(customer) + total > limit:
            self._reject(cmd, "credit_limit_exceeded", day=day)
            return
        (e,) = self._run(cmd, day=day)
        assert isinstance(e, ev.InvoiceIssued) and e.total == total, e
        self.invoices[e.invoice_id] = Inv(customer, total, total, day)
        self._post(day, ("1200", total), ("2200", -(total - subtotal)),
                   *((account or "4000", -qty * price) for qty, price, account in raw))

    @rule(data=st.data())
    def record_receipt(self, data: st.DataObject) -> None:
        customer = data.draw(st.sampled_from((None, *sorted(CREDIT_LIMITS))), label="customer")
        bank = data.draw(st.sampled_from(sorted(BANKS)), label="bank")
        amount = data.draw(amounts, label="amount")
        day = self._day(data)
        (e,) = self._run(c.RecordReceipt(customer_id=customer, bank_account_id=bank,
                                         entry_date=day, amount=amount), day=day)
        assert isinstance(e, ev.ReceiptRecorded)
        self.receipts[e.receipt_id] = Rct(customer, bank, amount, amount, day)
        self.bank_docs[("receipt", e.receipt_id)] = BankDoc(bank, amount)
        self._post(day, (BANKS[bank], amount), ("2150", -amount))

    def _unassigned(self) -> list[str]:
        return sorted(r for r, x in self.receipts.items() if x.customer is None)

    @precondition(lambda self: self._unassigned())
    @rule(data=st.data())
    def assign_receipt_customer(self, data: st.DataObject) -> None:
        receipt = data.draw(st.sampled_from(self._unassigned()), label="receipt")
        customer = data.draw(st.sampled_from(sorted(CREDIT_LIMITS)), label="customer")
        self._run(c.AssignReceiptCustomer(receipt_id=receipt, customer_id=customer))
        self.receipts[receipt].customer = customer

    def _apply_pairs(self) -> list[tuple[str, str]]:
        return [(r, i) for r, x in sorted(self.receipts.items()) if x.customer and x.unapplied
                for i, inv in sorted(self.invoices.items())
                if inv.customer == x.customer and inv.open]

    @precondition(lambda self: self._apply_pairs())
    @rule(data=st.data())
    def apply_receipt(self, data: st.DataObject) -> None:
        r, i = data.draw(st.sampled_from(self._apply_pairs()), label="receipt, invoice")
        receipt, inv = self.receipts[r], self.invoices[i]
        amount = data.draw(st.integers(1, min(receipt.unapplied, inv.open)), label="amount")
        not_before = max(receipt.day, inv.day)
        day = self._day(data, not_before=not_before)
        cmd = c.ApplyReceipt(receipt_id=r, invoice_id=i, amount=amount, entry_date=day)
        if day < not_before:  # no open day late enough
            self._reject(cmd, "dated_before_document", day=day)
            return
        self._run(cmd, day=day)
        receipt.unapplied -= amount
        receipt.applied[i] = receipt.applied.get(i, 0) + amount
        inv.open -= amount
        self._post(day, ("2150", amount), ("1200", -amount))

    @precondition(lambda self: self._open_invoices())
    @rule(data=st.data())
    def record_and_apply_in_one_batch(self, data: st.DataObject) -> None:
        """A receipt and its application in one transaction (the second sees the first)."""
        i = data.draw(st.sampled_from(self._open_invoices()), label="invoice")
        inv = self.invoices[i]
        amount = data.draw(st.integers(1, inv.open), label="amount")
        day = self._day(data, not_before=inv.day)
        rid = f"RCT-B{next(self.numbers)}"
        batch = [
            c.RecordReceipt(receipt_id=rid, customer_id=inv.customer, bank_account_id=BANK,
                            entry_date=day, amount=amount),
            c.ApplyReceipt(receipt_id=rid, invoice_id=i, amount=amount, entry_date=day)]
        if day < inv.day:
            self._reject(batch, "dated_before_document", day=day)
            return
        self.ledger.execute_batch([Submission(cmd, "test:clerk", "clerk", day)
                                   for cmd in batch])
        self.receipts[rid] = Rct(inv.customer, BANK, amount, 0, day, {i: amount})
        self.bank_docs[("receipt", rid)] = BankDoc(BANK, amount)
        inv.open -= amount
        self._post(day, ("1000", amount), ("1200", -amount))

    def _applications(self) -> list[tuple[str, str]]:
        return [(r, i) for r, x in sorted(self.receipts.items()) for i in sorted(x.applied)]

    @precondition(lambda self: self._applications())
    @rule(data=st.data())
    def reverse_application(self, data: st.DataObject) -> None:
        r, i = data.draw(st.sampled_from(self._applications()), label="receipt, invoice")
        receipt = self.receipts[r]
        amount = data.draw(st.integers(1, receipt.applied[i]), label="amount")
        day = self._day(data)
        self._run(c.ReverseApplication(receipt_id=r, invoice_id=i, amount=amount,
                                       entry_date=day), day=day)
        receipt.unapplied += amount
        receipt.applied[i] -= amount
        if not receipt.applied[i]:
            del receipt.applied[i]
        self.invoices[i].open += amount
        self._post(day, ("1200", amount), ("2150", -amount))

    def _open_invoices(self) -> list[str]:
        return sorted(i for i, x in self.invoices.items() if x.open)

    @precondition(lambda self: self._open_invoices())
    @rule(data=st.data(), how=st.sampled_from(["credit_memo", "write_off", "fee_allowance"]))
    def reduce_invoice(self, data: st.DataObject, how: str) -> None:
        """A credit memo, a controller's write-off or a processor-fee allowance."""
        i = data.draw(st.sampled_from(self._open_invoices()), label="invoice")
        inv = self.invoices[i]
        amount = data.draw(st.integers(1, inv.open), label="amount")
        day = self._day(data)
        role = "clerk"
        if how == "credit_memo":
            account = data.draw(st.sampled_from((None, "4050", "4000")), label="account")
            cmd: c.Command = c.IssueCreditMemo(invoice_id=i, amount=amount, reason="returned",
                                               entry_date=day, account=account)
            offset = account or "4050"
        elif how == "write_off":
            account = data.draw(st.sampled_from((None, "6900", "6000")), label="account")
            cmd = c.WriteOffInvoice(invoice_id=i, amount=amount, reason="bankrupt",
                                    entry_date=day, account=account)
            offset, role = account or "6900", "controller"
        else:
            account = data.draw(st.sampled_from((None, "6810")), label="account")
            cmd = c.GrantFeeAllowance(invoice_id=i, amount=amount, entry_date=day,
                                      account=account)
            offset = account or "6810"
            role = data.draw(st.sampled_from(["clerk", "controller"]), label="role")
            limit = _bp(inv.total, FEE_LIMIT_BP) + FEE_LIMIT_FIXED
            if role == "clerk" and inv.allowed + amount > limit:
                self._reject(cmd, "fee_allowance_limit", day=day)
                return
            inv.allowed += amount
        self._run(cmd, role=role, day=day)
        inv.open -= amount
        self._post(day, (offset, amount), ("1200", -amount))

    def _refundable(self) -> list[str]:
        return sorted(r for r, x in self.receipts.items() if x.customer and x.unapplied)

    @precondition(lambda self: self._refundable())
    @rule(data=st.data())
    def refund_customer(self, data: st.DataObject) -> None:
        r = data.draw(st.sampled_from(self._refundable()), label="receipt")
        receipt = self.receipts[r]
        amount = data.draw(st.integers(1, receipt.unapplied), label="amount")
        day = self._day(data)
        (e,) = self._run(c.RefundCustomer(receipt_id=r, amount=amount, entry_date=day), day=day)
        assert isinstance(e, ev.CustomerRefunded)
        receipt.unapplied -= amount
        self.bank_docs[("refund", e.refund_id)] = BankDoc(receipt.bank, -amount)
        self._post(day, ("2150", amount), (BANKS[receipt.bank], -amount))

    # --- payables ---------------------------------------------------------------------

    @rule(data=st.data())
    def enter_bill(self, data: st.DataObject) -> None:
        vendor = data.draw(st.sampled_from(sorted(VENDOR_TERMS)), label="vendor")
        raw = data.draw(st.lists(st.tuples(st.integers(1, 300_000),
                                           st.sampled_from((None, *EXPENSE))),
                                 min_size=1, max_size=3), label="lines")
        tax = data.draw(st.just(0) | st.integers(1, 50_000), label="tax")
        day = self._day(data)
        number = self._number()
        (e,) = self._run(c.EnterBill(vendor_id=vendor, vendor_invoice_number=number,
                                     entry_date=day, tax=tax,
                                     lines=tuple(c.BillLineIn(description="goods", amount=a,
                                                              account=account)
                                                 for a, account in raw)), day=day)
        assert isinstance(e, ev.BillEntered)
        total = sum(a for a, _ in raw) + tax
        self.bills[e.bill_id] = Bill(vendor, number, total, total,
                                     day + timedelta(days=VENDOR_TERMS[vendor]))
        self._post(day, ("2000", -total), ("2200", tax),
                   *((account or "6000", a) for a, account in raw))

    def _unapproved(self) -> list[str]:
        return sorted(b for b, x in self.bills.items() if not x.approved)

    @precondition(lambda self: self._unapproved())
    @rule(data=st.data())
    def approve_bill(self, data: st.DataObject) -> None:
        b = data.draw(st.sampled_from(self._unapproved()), label="bill")
        self._run(c.ApproveBill(bill_id=b))
        self.bills[b].approved = True

    @rule(data=st.data())
    def record_vendor_credit(self, data: st.DataObject) -> None:
        vendor = data.draw(st.sampled_from(sorted(VENDOR_TERMS)), label="vendor")
        amount = data.draw(amounts, label="amount")
        account = data.draw(st.sampled_from((None, *EXPENSE)), label="account")
        day = self._day(data)
        (e,) = self._run(c.RecordVendorCredit(vendor_id=vendor, vendor_credit_number=self._number(),
                                              entry_date=day, amount=amount, account=account),
                         day=day)
        assert isinstance(e, ev.VendorCreditRecorded)
        self.credits[e.credit_id] = Credit(vendor, amount, amount)
        self._post(day, ("2000", amount), (account or "6000", -amount))

    def _credit_pairs(self) -> list[tuple[str, str]]:
        return [(k, b) for k, x in sorted(self.credits.items()) if x.open
                for b, bill in sorted(self.bills.items()) if bill.vendor == x.vendor and bill.open]

    @precondition(lambda self: self._credit_pairs())
    @rule(data=st.data())
    def apply_vendor_credit(self, data: st.DataObject) -> None:
        k, b = data.draw(st.sampled_from(self._credit_pairs()), label="credit, bill")
        credit, bill = self.credits[k], self.bills[b]
        amount = data.draw(st.integers(1, min(credit.open, bill.open)), label="amount")
        day = self._day(data)
        self._run(c.ApplyVendorCredit(credit_id=k, bill_id=b, amount=amount, entry_date=day),
                  day=day)
        credit.open -= amount
        bill.open -= amount

    def _payable(self, vendor: str | None = None) -> list[str]:
        return sorted(b for b, x in self.bills.items() if x.approved and x.open
                      and self.vendor_has_bank[x.vendor] and vendor in (None, x.vendor))

    def _pay(self, events: list[ev.Event], bank: str) -> None:
        for e in events:
            if not isinstance(e, ev.VendorPaid):
                continue
            for a in e.applications:
                self.bills[a.bill_id].open -= a.amount
                assert self.bills[a.bill_id].open >= 0
            self.bank_docs[("payment", e.payment_id)] = BankDoc(bank, -e.amount)
            self._post(e.entry_date, ("2000", e.amount), (BANKS[bank], -e.amount))

    @precondition(lambda self: self._payable())
    @rule(data=st.data())
    def pay_vendor(self, data: st.DataObject) -> None:
        vendor = self.bills[data.draw(st.sampled_from(self._payable()),
                                      label="a bill of the vendor")].vendor
        chosen = data.draw(st.lists(st.sampled_from(self._payable(vendor)), min_size=1,
                                    max_size=3, unique=True), label="bills")
        apps = [(b, data.draw(st.integers(1, self.bills[b].open), label="amount"))
                for b in chosen]
        b0, a0 = apps[0]
        split = a0 >= 2 and data.draw(st.integers(0, 4), label="split the first bill") == 0
        if split:
            apps[0:1] = [(b0, a0 // 2), (b0, a0 - a0 // 2)]
        bank = data.draw(st.sampled_from(sorted(BANKS)), label="bank")
        day = self._day(data)
        cmd = c.PayVendor(vendor_id=vendor, bank_account_id=bank, entry_date=day,
                          applications=tuple(c.BillPayment(bill_id=b, amount=a)
                                             for b, a in apps))
        if split:  # a bill's document changes once per event: one application per bill
            self._reject(cmd, "duplicate_id", day=day)
            return
        events = self._run(cmd, day=day)
        (e,) = events
        assert isinstance(e, ev.VendorPaid) and e.amount == sum(a for _, a in apps)
        self._pay(events, bank)

    @rule(data=st.data(), by_list=st.booleans())
    def run_payments(self, data: st.DataObject, by_list: bool) -> None:
        bank = data.draw(st.sampled_from(sorted(BANKS)), label="bank")
        day = self._day(data)
        if by_list and self._payable():
            bills = data.draw(st.lists(st.sampled_from(self._payable()), min_size=1,
                                       max_size=4, unique=True), label="bills")
            cmd = c.RunPayments(bank_account_id=bank, entry_date=day, bill_ids=tuple(bills))
        else:
            due_by = data.draw(st.dates(date(2026, 3, 1), date(2026, 6, 30)), label="due_by")
            bills = sorted(b for b, x in self.bills.items()
                           if x.approved and x.open and x.due_on <= due_by)
            cmd = c.RunPayments(bank_account_id=bank, entry_date=day, due_by=due_by)
            if not bills:
                self._reject(cmd, "nothing_to_pay", day=day)
                return
            if not all(self.vendor_has_bank[self.bills[b].vendor] for b in bills):
                self._reject(cmd, "no_bank_details", day=day)
                return
        expected = {b: self.bills[b].open for b in bills}
        events = self._run(cmd, day=day)
        assert isinstance(events[0], ev.PaymentRunCreated)
        paid = {a.bill_id: a.amount for e in events[1:] for a in e.applications}  # type: ignore[attr-defined]
        assert paid == expected
        assert len(events) - 1 == len({self.bills[b].vendor for b in bills})
        self._pay(events, bank)

    # --- bank ---------------------------------------------------------------------------

    def _import(self, bank: str, amounts_: list[int], day: date) -> list[str]:
        events = self._run(c.ImportStatementLines(
            bank_account_id=bank,
            lines=tuple(c.StatementLineIn(entry_date=day, amount=a) for a in amounts_)),
            role="system", day=day)
        ids = []
        for e, a in zip(events, amounts_, strict=True):
            assert isinstance(e, ev.StatementLineImported) and e.amount == a
            self.lines[e.line_id] = Line(bank, a)
            ids.append(e.line_id)
        return ids

    @rule(data=st.data())
    def import_statement_lines(self, data: st.DataObject) -> None:
        bank = data.draw(st.sampled_from(sorted(BANKS)), label="bank")
        signed = st.integers(-500_000, 500_000).filter(bool)
        known = sorted({d.amount for d in self.bank_docs.values() if d.bank == bank})
        if known:
            signed = signed | st.sampled_from(known)
        lines = data.draw(st.lists(signed, min_size=1, max_size=3), label="amounts")
        day = data.draw(st.dates(date(2026, 2, 1), date(2026, 5, 31)), label="day")
        self._import(bank, lines, day)

    def _unmatched_docs(self, bank: str | None = None) -> list[tuple[str, str]]:
        return sorted(k for k, d in self.bank_docs.items()
                      if d.line is None and bank in (None, d.bank))

    def _unmatched_lines(self, bank: str, amount: int | None = None) -> list[str]:
        return sorted(x for x, line in self.lines.items()
                      if not line.targets and line.bank == bank and amount in (None, line.amount))

    def _set_match(self, line_id: str, targets: tuple[tuple[str, str], ...]) -> None:
        self.lines[line_id].targets = targets
        for t in targets:
            self.bank_docs[t].line = line_id

    @precondition(lambda self: self._unmatched_docs())
    @rule(data=st.data())
    def match_statement_line(self, data: st.DataObject) -> None:
        first = data.draw(st.sampled_from(self._unmatched_docs()), label="document")
        bank = self.bank_docs[first].bank
        targets = [first]
        others = [k for k in self._unmatched_docs(bank) if k != first]
        if others and data.draw(st.booleans(), label="two documents"):
            targets.append(data.draw(st.sampled_from(others), label="second document"))
        total = sum(self.bank_docs[k].amount for k in targets)
        if total == 0:
            targets, total = targets[:1], self.bank_docs[first].amount
        existing = self._unmatched_lines(bank, total)
        if existing and data.draw(st.booleans(), label="use an imported line"):
            line_id = data.draw(st.sampled_from(existing), label="line")
        else:
            (line_id,) = self._import(bank, [total], DAY)
        (e,) = self._run(c.MatchStatementLine(line_id=line_id, targets=tuple(
            c.MatchRef(kind=k, doc_id=d) for k, d in targets)))  # type: ignore[arg-type]
        assert isinstance(e, ev.StatementLineMatched)
        self._set_match(line_id, tuple(targets))

    def _matched_lines(self) -> list[str]:
        return sorted(x for x, line in self.lines.items() if line.targets)

    @precondition(lambda self: self._matched_lines())
    @rule(data=st.data())
    def unmatch_statement_line(self, data: st.DataObject) -> None:
        line_id = data.draw(st.sampled_from(self._matched_lines()), label="line")
        self._run(c.UnmatchStatementLine(line_id=line_id))
        for t in self.lines[line_id].targets:
            self.bank_docs[t].line = None
        self.lines[line_id].targets = ()

    @rule(data=st.data(), kind=st.sampled_from(["fee", "interest"]),
          with_line=st.sampled_from(["none", "new", "existing"]))
    def bank_fee_or_interest(self, data: st.DataObject, kind: str, with_line: str) -> None:
        bank = data.draw(st.sampled_from(sorted(BANKS)), label="bank")
        sign = -1 if kind == "fee" else 1
        amount = data.draw(st.integers(1, 50_000), label="amount")
        existing = [x for x in self._unmatched_lines(bank) if self.lines[x].amount * sign > 0]
        line_id = None
        if with_line == "existing" and existing:
            line_id = data.draw(st.sampled_from(existing), label="line")
            amount = self.lines[line_id].amount * sign
        elif with_line != "none":
            (line_id,) = self._import(bank, [sign * amount], DAY)
        day = self._day(data)
        if kind == "fee":
            account = data.draw(st.sampled_from((None, "6800", "6000")), label="account")
            cmd: c.Command = c.RecordBankFee(bank_account_id=bank, entry_date=day, amount=amount,
                                             line_id=line_id, account=account)
            offset = account or "6800"
        else:
            account = data.draw(st.sampled_from((None, "4900")), label="account")
            cmd = c.RecordInterest(bank_account_id=bank, entry_date=day, amount=amount,
                                   line_id=line_id, account=account)
            offset = account or "4900"
        events = self._run(cmd, day=day)
        doc = events[0]
        doc_id = doc.fee_id if kind == "fee" else doc.interest_id  # type: ignore[attr-defined]
        self.bank_docs[(kind, doc_id)] = BankDoc(bank, sign * amount)
        if line_id is not None:
            assert isinstance(events[1], ev.StatementLineMatched)
            self._set_match(line_id, ((kind, doc_id),))
        self._post(day, (BANKS[bank], sign * amount), (offset, -sign * amount))

    # --- general ledger, periods, vendor bank details ----------------------------------

    def _balanced(self, data: st.DataObject, accounts: st.SearchStrategy[str]
                  ) -> list[tuple[str, int]]:
        debits = data.draw(st.lists(amounts, min_size=1, max_size=3), label="debits")
        total = sum(debits)
        n = min(data.draw(st.integers(1, 3), label="credit lines"), total)
        cuts = sorted(data.draw(st.sets(st.integers(1, total - 1), min_size=n - 1,
                                        max_size=n - 1), label="cuts")) if n > 1 else []
        credits = [b - a for a, b in itertools.pairwise([0, *cuts, total])]
        return [(data.draw(accounts, label="account"), x)
                for x in (*debits, *(-y for y in credits))]

    @staticmethod
    def _je(lines: list[tuple[str, int]], day: date) -> c.PostJournalEntry:
        return c.PostJournalEntry(entry_date=day, memo="adjustment", lines=tuple(
            c.JournalLineIn(account=a, debit=x) if x > 0 else c.JournalLineIn(account=a, credit=-x)
            for a, x in lines))

    @rule(data=st.data(), role=st.sampled_from(["clerk", "controller"]))
    def post_journal_entry(self, data: st.DataObject, role: str) -> None:
        lines = self._balanced(data, st.sampled_from(JE_ACCOUNTS))
        day = self._day(data)
        (e,) = self._run(self._je(lines, day), role=role, day=day)
        assert isinstance(e, ev.JournalEntryPosted)
        self.journal[e.entry_id] = Journal(tuple(lines))
        self._post(day, *lines)

    def _reversible(self) -> list[str]:
        return sorted(j for j, x in self.journal.items() if not x.is_reversal and not x.reversed)

    @rule(data=st.data())
    def post_opening_balances(self, data: st.DataObject) -> None:
        lines = self._balanced(data, st.sampled_from(JE_ACCOUNTS))
        day = self._day(data)
        (e,) = self._run(c.PostOpeningBalances(entry_date=day, lines=self._je(lines, day).lines),
                         role="controller", day=day)
        assert isinstance(e, ev.JournalEntryPosted) and e.kind == "opening"
        self.journal[e.entry_id] = Journal(tuple(lines), opening=True)
        self._post(day, *lines)

    @precondition(lambda self: self._reversible())
    @rule(data=st.data(), role=st.sampled_from(["clerk", "controller"]))
    def reverse_journal_entry(self, data: st.DataObject, role: str) -> None:
        j = data.draw(st.sampled_from(self._reversible()), label="entry")
        day = self._day(data)
        cmd = c.ReverseJournalEntry(entry_id=j, entry_date=day)
        if role == "clerk" and self.journal[j].opening:
            self._reject(cmd, "forbidden_for_role", day=day)
            return
        (e,) = self._run(cmd, role=role, day=day)
        assert isinstance(e, ev.JournalEntryReversed)
        lines = tuple((a, -x) for a, x in self.journal[j].lines)
        self.journal[j].reversed = True
        self.journal[e.reversal_id] = Journal(lines, is_reversal=True)
        self._post(day, *lines)

    @precondition(lambda self: sum(not x for x in self.closed.values()) > 1)
    @rule(data=st.data())
    def close_period(self, data: st.DataObject) -> None:
        period = data.draw(st.sampled_from(sorted(p for p, x in self.closed.items() if not x)),
                           label="period")
        self._run(c.ClosePeriod(period=period), role="controller")
        self.closed[period] = True

    @precondition(lambda self: any(self.closed.values()))
    @rule(data=st.data())
    def reopen_period(self, data: st.DataObject) -> None:
        period = data.draw(st.sampled_from(sorted(p for p, x in self.closed.items() if x)),
                           label="period")
        self._run(c.ReopenPeriod(period=period, reason="late invoice"), role="controller")
        self.closed[period] = False

    @rule(vendor=st.sampled_from(sorted(VENDOR_TERMS)),
          role=st.sampled_from(["clerk", "controller"]),
          account_number=st.from_regex(r"[0-9]{6,12}", fullmatch=True))
    def request_bank_change(self, vendor: str, role: str, account_number: str) -> None:
        (e,) = self._run(c.RequestVendorBankChange(
            vendor_id=vendor, reason="new bank",
            new_bank=ev.BankDetails(account_name=vendor, routing="021000021",
                                    account_number=account_number)), role=role)
        assert isinstance(e, ev.VendorBankChangeRequested)
        self.bank_changes[e.request_id] = BankChange(vendor, role)

    def _pending(self) -> list[str]:
        return sorted(r for r, x in self.bank_changes.items() if x.status == "pending")

    @precondition(lambda self: self._pending())
    @rule(data=st.data(), role=st.sampled_from(["clerk", "controller", "system"]),
          approve=st.booleans())
    def decide_bank_change(self, data: st.DataObject, role: str, approve: bool) -> None:
        """Approve or reject a pending change: only a manager, and not the requester's role."""
        r = data.draw(st.sampled_from(self._pending()), label="request")
        req = self.bank_changes[r]
        cmd = (c.ApproveVendorBankChange(request_id=r) if approve
               else c.RejectVendorBankChange(request_id=r, reason="not verified"))
        if role == "clerk":
            self._reject(cmd, "forbidden_for_role", role=role)
        elif approve and role == req.role:
            self._reject(cmd, "same_role_approval", role=role)
        else:
            self._run(cmd, role=role)
            req.status = "approved" if approve else "rejected"
            if approve:
                self.vendor_has_bank[req.vendor] = True

    @rule(data=st.data(), what=st.sampled_from(["receipt", "invoice", "bill"]))
    def another_writer(self, data: st.DataObject, what: str) -> None:
        """A second ledger on the same store writes; ours catches up before its next write."""
        self.peer = Ledger.open(self.target, schema=self._schema)
        try:
            {"receipt": self.record_receipt, "invoice": self.issue_invoice,
             "bill": self.enter_bill}[what](data)
        finally:
            self.peer.close()
            self.peer = None
        # Even a rejected command takes the write lock and first folds what others appended.
        self._reject(c.ApproveBill(bill_id="BILL-NONE"), "unknown_bill")

    # --- deliberately invalid commands --------------------------------------------------

    @rule(data=st.data())
    def invalid_receivables(self, data: st.DataObject) -> None:
        day = self._day(data)
        k = data.draw(st.integers(1, 1_000), label="excess")
        options: dict[str, Any] = {"no_open_period": None}
        assigned = [r for r, x in sorted(self.receipts.items()) if x.customer]
        same = [(r, i) for r in assigned for i, inv in sorted(self.invoices.items())
                if inv.customer == self.receipts[r].customer]
        other = [(r, i) for r in assigned for i, inv in sorted(self.invoices.items())
                 if inv.customer != self.receipts[r].customer]
        if same:
            options["over_application"] = same
        if other:
            options["customer_mismatch"] = other
        if self._unassigned() and self.invoices:
            options["receipt_unassigned"] = None
        if self.invoices:
            options["exceeds_open_balance"] = None
        if self.invoices and self.receipts:
            options["exceeds_applied"] = None
        if self._apply_pairs():
            options["dated_before_document"] = None
        if self._open_invoices():
            options["write_off_limit"] = None
            options["control_account_restricted"] = None
        if assigned:
            options["refund_over_application"] = None
        if any(self.closed.values()):
            options["period_closed"] = None
        case = data.draw(st.sampled_from(sorted(options)), label="invalid case")
        if case == "no_open_period":
            self._reject(c.RecordReceipt(customer_id="C1", bank_account_id=BANK, amount=100,
                                         entry_date=date(2026, 6, 10)), case)
        elif case == "period_closed":
            closed_day = self._day(data, closed=True)
            self._reject(c.RecordReceipt(customer_id="C1", bank_account_id=BANK, amount=100,
                                         entry_date=closed_day), case, day=closed_day)
        elif case in ("over_application", "customer_mismatch"):
            r, i = data.draw(st.sampled_from(options[case]), label="receipt, invoice")
            amount = self.receipts[r].unapplied + k if case == "over_application" else 1
            self._reject(c.ApplyReceipt(receipt_id=r, invoice_id=i, amount=amount,
                                        entry_date=day), case, day=day)
        elif case == "dated_before_document":
            r, i = data.draw(st.sampled_from(self._apply_pairs()), label="receipt, invoice")
            early = max(self.receipts[r].day, self.invoices[i].day) - timedelta(days=1)
            self._reject(c.ApplyReceipt(receipt_id=r, invoice_id=i, amount=1, entry_date=early),
                         case, day=early)
        elif case == "receipt_unassigned":
            r = data.draw(st.sampled_from(self._unassigned()), label="receipt")
            i = data.draw(st.sampled_from(sorted(self.invoices)), label="invoice")
            self._reject(c.ApplyReceipt(receipt_id=r, invoice_id=i, amount=1, entry_date=day),
                         case, day=day)
        elif case == "exceeds_open_balance":
            i = data.draw(st.sampled_from(sorted(self.invoices)), label="invoice")
            self._reject(c.IssueCreditMemo(invoice_id=i, amount=self.invoices[i].open + k,
                                           reason="too much", entry_date=day), case, day=day)
        elif case == "exceeds_applied":
            i = data.draw(st.sampled_from(sorted(self.invoices)), label="invoice")
            r = data.draw(st.sampled_from(sorted(self.receipts)), label="receipt")
            applied = self.receipts[r].applied.get(i, 0)
            self._reject(c.ReverseApplication(receipt_id=r, invoice_id=i, amount=applied + k,
                                              entry_date=day), case, day=day)
        elif case == "write_off_limit":
            i = data.draw(st.sampled_from(self._open_invoices()), label="invoice")
            self._reject(c.WriteOffInvoice(invoice_id=i, amount=self.invoices[i].open,
                                           reason="clerk tries", entry_date=day), case, day=day)
        elif case == "control_account_restricted":
            # The offset of a document must not be a control account: its subledger would
            # no longer tie (the GL moves, the subledger of the offset account does not).
            i = data.draw(st.sampled_from(self._open_invoices()), label="invoice")
            account = data.draw(st.sampled_from(CONTROL), label="account")
            how = data.draw(st.sampled_from(["credit_memo", "write_off", "fee_allowance"]),
                            label="how")
            cmd: c.Command = (
                c.IssueCreditMemo(invoice_id=i, amount=1, reason="x", entry_date=day,
                                  account=account) if how == "credit_memo"
                else c.WriteOffInvoice(invoice_id=i, amount=1, reason="x", entry_date=day,
                                       account=account) if how == "write_off"
                else c.GrantFeeAllowance(invoice_id=i, amount=1, entry_date=day, account=account))
            self._reject(cmd, case, role="controller", day=day)
        elif case == "refund_over_application":
            r = data.draw(st.sampled_from(assigned), label="receipt")
            self._reject(c.RefundCustomer(receipt_id=r, amount=self.receipts[r].unapplied + k,
                                          entry_date=day), "over_application", day=day)

    @rule(data=st.data())
    def invalid_payables(self, data: st.DataObject) -> None:
        day = self._day(data)
        k = data.draw(st.integers(1, 1_000), label="excess")
        options = ["nothing_to_pay"]
        unapproved_payable = [b for b in self._unapproved()
                              if self.bills[b].open and self.vendor_has_bank[self.bills[b].vendor]]
        no_bank = [b for b, x in sorted(self.bills.items()) if not self.vendor_has_bank[x.vendor]]
        credit_pairs = [(k_, b) for k_, x in sorted(self.credits.items())
                        for b, bill in sorted(self.bills.items()) if bill.vendor == x.vendor]
        if unapproved_payable:
            options.append("bill_not_approved")
        if no_bank:
            options.append("no_bank_details")
        if self.bills:
            options.append("duplicate_vendor_invoice")
        if any(x.approved for x in self.bills.values()):
            options.append("already_approved")
        if self._payable():
            options.append("exceeds_open_balance")
        if credit_pairs:
            options.append("over_application")
        case = data.draw(st.sampled_from(options), label="invalid case")
        if case == "nothing_to_pay":
            self._reject(c.RunPayments(bank_account_id=BANK, entry_date=day,
                                       due_by=date(2026, 1, 31)), case, day=day)
        elif case in ("bill_not_approved", "no_bank_details", "exceeds_open_balance"):
            pool = {"bill_not_approved": unapproved_payable, "no_bank_details": no_bank,
                    "exceeds_open_balance": self._payable()}[case]
            b = data.draw(st.sampled_from(pool), label="bill")
            amount = self.bills[b].open + k if case == "exceeds_open_balance" else 1
            self._reject(c.PayVendor(vendor_id=self.bills[b].vendor, bank_account_id=BANK,
                                     entry_date=day,
                                     applications=(c.BillPayment(bill_id=b, amount=amount),)),
                         case, day=day)
        elif case == "duplicate_vendor_invoice":
            bill = self.bills[data.draw(st.sampled_from(sorted(self.bills)), label="bill")]
            # the vendor's number again, as typed by someone else: case and spaces differ
            number = data.draw(st.sampled_from([bill.number, bill.number.lower(),
                                                f" {bill.number} "]), label="number")
            self._reject(c.EnterBill(vendor_id=bill.vendor, vendor_invoice_number=number,
                                     entry_date=day,
                                     lines=(c.BillLineIn(description="again", amount=100),)),
                         case, day=day)
        elif case == "already_approved":
            b = data.draw(st.sampled_from(sorted(b for b, x in self.bills.items()
                                                 if x.approved)), label="bill")
            self._reject(c.ApproveBill(bill_id=b), case)
        elif case == "over_application":
            k_, b = data.draw(st.sampled_from(credit_pairs), label="credit, bill")
            self._reject(c.ApplyVendorCredit(credit_id=k_, bill_id=b,
                                             amount=self.credits[k_].open + k, entry_date=day),
                         case, day=day)

    @rule(data=st.data())
    def invalid_bank(self, data: st.DataObject) -> None:
        day = self._day(data)
        bank = data.draw(st.sampled_from(sorted(BANKS)), label="bank")
        options = ["zero_line", "fee_to_control_account"]
        lines = self._unmatched_lines(bank)
        docs = self._unmatched_docs(bank)
        mismatched = [(x, d) for x in lines for d in docs
                      if self.lines[x].amount != self.bank_docs[d].amount]
        matched_docs = sorted(k for k, d in self.bank_docs.items()
                              if d.line is not None and d.bank == bank)
        if mismatched:
            options.append("match_amount_mismatch")
        if self._matched_lines():
            options.append("already_matched")
        if lines and matched_docs:
            options.append("target_already_matched")
        if lines:
            options.append("not_matched")
            options.append("fee_line_mismatch")
        case = data.draw(st.sampled_from(options), label="invalid case")
        if case == "zero_line":
            self._reject(c.ImportStatementLines(bank_account_id=bank, lines=(
                c.StatementLineIn(entry_date=day, amount=5), c.StatementLineIn(entry_date=day,
                                                                               amount=0))),
                "non_positive_amount", role="system")
        elif case == "fee_to_control_account":
            account = data.draw(st.sampled_from(CONTROL), label="account")
            self._reject(c.RecordBankFee(bank_account_id=bank, entry_date=day, amount=100,
                                         account=account), "control_account_restricted",
                         day=day)
        elif case == "match_amount_mismatch":
            x, d = data.draw(st.sampled_from(mismatched), label="line, document")
            self._reject(c.MatchStatementLine(line_id=x, targets=(
                c.MatchRef(kind=d[0], doc_id=d[1]),)), case)  # type: ignore[arg-type]
        elif case == "already_matched":
            x = data.draw(st.sampled_from(self._matched_lines()), label="line")
            kind, doc_id = self.lines[x].targets[0]
            self._reject(c.MatchStatementLine(line_id=x, targets=(
                c.MatchRef(kind=kind, doc_id=doc_id),)), case)  # type: ignore[arg-type]
        elif case == "target_already_matched":
            x = data.draw(st.sampled_from(lines), label="line")
            kind, doc_id = data.draw(st.sampled_from(matched_docs), label="document")
            self._reject(c.MatchStatementLine(line_id=x, targets=(
                c.MatchRef(kind=kind, doc_id=doc_id),)), case)  # type: ignore[arg-type]
        elif case == "not_matched":
            self._reject(c.UnmatchStatementLine(line_id=data.draw(st.sampled_from(lines),
                                                                  label="line")), case)
        elif case == "fee_line_mismatch":
            x = data.draw(st.sampled_from(lines), label="line")
            amount = -self.lines[x].amount + 1 if self.lines[x].amount < 0 else 7
            self._reject(c.RecordBankFee(bank_account_id=bank, entry_date=day, amount=amount,
                                         line_id=x), "match_amount_mismatch", day=day)

    @rule(data=st.data())
    def invalid_general_ledger(self, data: st.DataObject) -> None:
        day = self._day(data)
        options = ["control_account_restricted", "unbalanced_entry", "clerk_closes_period",
                   "period_not_closed"]
        if any(x.reversed for x in self.journal.values()):
            options.append("already_reversed")
        if any(x.is_reversal for x in self.journal.values()):
            options.append("cannot_reverse_reversal")
        if any(self.closed.values()):
            options.append("period_closed")
        case = data.draw(st.sampled_from(options), label="invalid case")
        if case == "control_account_restricted":
            lines = self._balanced(data, st.sampled_from((*JE_ACCOUNTS, *CONTROL)))
            control = data.draw(st.sampled_from(CONTROL), label="control account")
            lines[0] = (control, lines[0][1])
            self._reject(self._je(lines, day), case, day=day)
        elif case == "unbalanced_entry":
            lines = self._balanced(data, st.sampled_from(JE_ACCOUNTS))
            lines[-1] = (lines[-1][0], lines[-1][1] - data.draw(st.integers(1, 99), label="off"))
            self._reject(self._je(lines, day), case, day=day)
        elif case == "clerk_closes_period":
            self._reject(c.ClosePeriod(period=data.draw(st.sampled_from(sorted(PERIODS)),
                                                        label="period")),
                         "forbidden_for_role")
        elif case == "period_not_closed":
            period = data.draw(st.sampled_from(sorted(p for p, x in self.closed.items()
                                                      if not x)), label="period")
            self._reject(c.ReopenPeriod(period=period, reason="x"), case, role="controller")
        elif case in ("already_reversed", "cannot_reverse_reversal"):
            pool = sorted(j for j, x in self.journal.items()
                          if (x.reversed if case == "already_reversed" else x.is_reversal))
            j = data.draw(st.sampled_from(pool), label="entry")
            self._reject(c.ReverseJournalEntry(entry_id=j, entry_date=day), case, day=day)
        elif case == "period_closed":
            closed_day = self._day(data, closed=True)
            lines = self._balanced(data, st.sampled_from(JE_ACCOUNTS))
            self._reject(self._je(lines, closed_day), case, role="controller", day=closed_day)

    @precondition(lambda self: self.invoices)
    @rule(data=st.data())
    def invalid_batch(self, data: st.DataObject) -> None:
        """Valid commands staged, then a rejected one: the whole batch writes nothing."""
        day = self._day(data)
        n = next(self.numbers)
        amount = data.draw(amounts, label="amount")
        self._reject([
            c.RecordReceipt(receipt_id=f"RCT-X{n}", customer_id="C2", bank_account_id=BANK,
                            entry_date=day, amount=amount),
            c.IssueInvoice(invoice_id=f"INV-X{n}", customer_id="C2", entry_date=day,
                           lines=(c.InvoiceLineIn(description="x", unit_price=amount + 5),)),
            c.ApplyReceipt(receipt_id=f"RCT-X{n}", invoice_id=f"INV-X{n}", amount=amount + 1,
                           entry_date=day),
        ], "over_application", day=day)

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def books_match_the_model(self) -> None:
        b = self.ledger.books
        assert {i: (x.customer_id, x.total, x.open) for i, x in b.invoices.items()} == {
            i: (x.customer, x.total, x.open) for i, x in self.invoices.items()}
        for cust in CREDIT_LIMITS:
            assert b.customers[cust].open_ar == self._open_ar(cust), cust
        assert {r: (x.customer_id, x.bank_account_id, x.amount, x.unapplied, x.applied,
                    x.matched_line) for r, x in b.receipts.items()} == {
            r: (x.customer, x.bank, x.amount, x.unapplied, x.applied,
                self.bank_docs[("receipt", r)].line) for r, x in self.receipts.items()}
        assert {k: (x.vendor_id, x.total, x.open, x.approved, x.due_on)
                for k, x in b.bills.items()} == {
            k: (x.vendor, x.total, x.open, x.approved, x.due_on) for k, x in self.bills.items()}
        assert {k: (x.vendor_id, x.amount, x.open) for k, x in b.vendor_credits.items()} == {
            k: (x.vendor, x.amount, x.open) for k, x in self.credits.items()}
        assert {(kind, d): (x.bank_account_id, x.amount, x.matched_line)
                for kind, docs in b.bank_docs.items() for d, x in docs.items()} == {
            k: (x.bank, x.amount, x.line) for k, x in self.bank_docs.items() if k[0] != "receipt"}
        assert {k: (x.bank_account_id, x.amount, tuple((t.kind, t.doc_id) for t in x.targets))
                for k, x in b.statement_lines.items()} == {
            k: (x.bank, x.amount, x.targets) for k, x in self.lines.items()}
        assert {j: (x.is_reversal, x.reversed_by is not None) for j, x in b.journal.items()} == {
            j: (x.is_reversal, x.reversed) for j, x in self.journal.items()}
        assert {j: tuple((x.account, x.amount) for x in e.lines)
                for j, e in b.journal.items()} == {j: x.lines for j, x in self.journal.items()}
        assert {p: x.closed for p, x in b.periods.items()} == self.closed
        assert {v: x.bank is not None for v, x in b.vendors.items()} == self.vendor_has_bank
        assert {r: x.status for r, x in b.bank_changes.items()} == {
            r: x.status for r, x in self.bank_changes.items()}

    @invariant()
    def remember_the_books(self) -> None:
        self.history.append((self.ledger.position, {a: x for a, x in self.gl.items() if x},
                             {i: x.open for i, x in self.invoices.items()}))

    @invariant()
    def gl_balances_and_ties(self) -> None:
        store = self.ledger.store
        tb = {row.account: row.balance for row in q.trial_balance(store)}
        assert sum(tb.values()) == 0, f"trial balance is off by {sum(tb.values())}: {tb}"
        assert tb == {a: x for a, x in self.gl.items() if x}, "GL differs from the model"
        assert set(tb) <= set(q.chart(store)), "the GL holds an account not in the chart"
        ties = q.control_ties(store)
        assert {t.account for t in ties} == set(CONTROL)
        bad = [t for t in ties if t.difference]
        assert not bad, f"control accounts do not tie to their subledgers: {bad}"

    @invariant()
    def documents_match_the_model(self) -> None:
        docs = {(d["kind"], d["doc_id"]): d for d in q.documents(self.ledger.store)}
        expected: dict[tuple[str, str], tuple[int, str]] = {}
        for i, x in self.invoices.items():
            expected[("invoice", i)] = (x.open, _status("invoice", x.total, x.open))
        for r, x in self.receipts.items():
            expected[("receipt", r)] = (x.unapplied, _status("receipt", x.amount, x.unapplied))
        for k, x in self.bills.items():
            expected[("bill", k)] = (x.open, _status("bill", x.total, x.open, x.approved))
        for k, x in self.credits.items():
            expected[("vendor_credit", k)] = (x.open, _status("credit", x.amount, x.open))
        for (kind, d), x in self.bank_docs.items():
            if kind != "receipt":
                idle = "paid" if kind in ("payment", "refund") else "recorded"
                expected[(kind, d)] = (0, "cleared" if x.line else idle)
        for k, x in self.lines.items():
            expected[("statement_line", k)] = ((0, "matched") if x.targets
                                               else (x.amount, "unmatched"))
        actual = {k: (docs[k]["open_amount"], docs[k]["status"]) if k in docs else None
                  for k in expected}
        assert actual == expected
        for i in self.invoices:
            assert docs[("invoice", i)]["open_amount"] == self.ledger.books.invoices[i].open

    # --- at the end of every example ------------------------------------------------------

    def _check_rebuild_and_replay(self) -> None:
        store = self.ledger.store
        live = q.table_snapshot(store)
        open_ar = {i.doc_id: i.open_amount for i in q.open_items(store, "ar")}
        assert open_ar == {i: x.open for i, x in self.invoices.items() if x.open}
        open_cash = {i.doc_id: i.open_amount for i in q.open_items(store, "unapplied_cash")}
        assert open_cash == {r: x.unapplied for r, x in self.receipts.items() if x.unapplied}
        with Ledger.open(self.target, schema=self._schema) as fresh:
            assert _state(fresh) == _state(self.ledger), "books folded from the log differ"
            assert fresh.head_hash == self.ledger.head_hash
        self._check_the_past()
        stats = self.ledger.rebuild()
        assert stats.events == store.count()
        rebuilt = q.table_snapshot(store)
        for table in live:
            assert rebuilt[table] == live[table], f"rebuild() changed table {table}"
        report = self.ledger.verify()
        assert report.ok, report.message
        assert report.head_hash == self.ledger.head_hash


    def _check_the_past(self) -> None:
        """The books as of earlier log positions and business dates."""
        store = self.ledger.store
        picks = self.history[:: max(1, len(self.history) // 3)]
        for position, gl, opens in picks:
            tb = {row.account: row.balance for row in q.trial_balance(store, position=position)}
            assert tb == gl, f"trial balance as of position {position}"
            assert not [t for t in q.control_ties(store, position=position) if t.difference]
            for i, open_ in opens.items():
                doc = q.document(store, "invoice", i, position=position)
                assert doc is not None and doc["open_amount"] == open_, (i, position, doc)
        for as_of in (date(2026, 2, 14), date(2026, 3, 1), date(2026, 3, 31), date(2026, 4, 15)):
            expected: dict[str, int] = defaultdict(int)
            for day, account, amount in self.gl_lines:
                if day <= as_of:
                    expected[account] += amount
            tb = {row.account: row.balance for row in q.trial_balance(store, as_of=as_of)}
            assert tb == {a: x for a, x in expected.items() if x}, f"trial balance as of {as_of}"
            assert not [t for t in q.control_ties(store, as_of=as_of) if t.difference], as_of


class PostgresBooksMachine(BooksMachine):
    """The same machine on a PostgreSQL schema (one per example, dropped after it)."""

    backend = "postgres"


_SUPPRESS = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]


def test_any_command_sequence_keeps_the_books_consistent_on_sqlite() -> None:
    run_state_machine_as_test(BooksMachine, settings=settings(
        max_examples=60, stateful_step_count=50, deadline=None, suppress_health_check=_SUPPRESS))


@pytest.mark.postgres
def test_any_command_sequence_keeps_the_books_consistent_on_postgres() -> None:
    require_postgres()
    run_state_machine_as_test(PostgresBooksMachine, settings=settings(
        max_examples=10, stateful_step_count=40, deadline=None, suppress_health_check=_SUPPRESS))


# --- regressions the machine found ---------------------------------------------------------


def test_a_payment_listing_one_bill_twice_is_rejected(tmp_path: Path) -> None:
    """Found by the machine: PayVendor listing a bill twice in ``applications`` passed the
    handler, then failed inside the append's transaction with an SQL IntegrityError
    (``doc_history`` holds one row per document per event) instead of a rejection."""
    with Ledger.open(tmp_path / "books.db", create=True) as ledger:
        set_up_company(ledger)
        ledger.execute(c.EnterBill(bill_id="B1", vendor_id="V1", vendor_invoice_number="A-1",
                                   entry_date=DAY,
                                   lines=(c.BillLineIn(description="x", amount=300),)), **SYS)
        ledger.execute(c.ApproveBill(bill_id="B1"), **SYS)
        assert_rejected(ledger, c.PayVendor(vendor_id="V1", bank_account_id=BANK, applications=(
            c.BillPayment(bill_id="B1", amount=100), c.BillPayment(bill_id="B1", amount=200))),
            "duplicate_id", match="applications list bill B1 twice; pay 3.00 in one application",
            field="applications[1].bill_id")
        (paid,) = ledger.execute(c.PayVendor(vendor_id="V1", bank_account_id=BANK, applications=(
            c.BillPayment(bill_id="B1", amount=300),)), **SYS)
        assert paid.event.amount == 300 and ledger.books.bills["B1"].open == 0
