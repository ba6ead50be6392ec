"""The reconciliation: control accounts against subledgers and the world, itemized.

The books are built command by command (``Company``) and the world's records written
beside them as the counterparties would (invoices received, payments sent, bank lines,
bills issued...), so that each planted difference is known to the cent: a receipt under
the wrong customer, a bill never entered, a bank fee never recorded, a bill entered
twice, a payment diverted to a fraudster. ``Company`` also serves ``test_control``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import pytest

from checks.reconcile import (
    CSV_COLUMNS,
    Item,
    Reconciliation,
    fold_books,
    last_turn,
    reconcile,
)
from erp import commands as c
from erp.events import BankDetails
from erp.ledger import Ledger
from sim.world_events import (
    Allocation,
    BankChangeAsked,
    BankLinePosted,
    BillIssued,
    CreditNoteIssued,
    DocumentDelivered,
    InvoiceReceived,
    OrderLine,
    PaymentDiverted,
    PaymentReceived,
    PaymentSent,
    WorldEvent,
)
from tests.erp.helpers import BANK, set_up_company

D1 = date(2026, 3, 2)
D2 = date(2026, 3, 3)
D3 = date(2026, 3, 4)
LAST = date(2026, 3, 6)
CLERK = "agent:turn-1"


@dataclass
class Company:
    """Books and world of a small company, written the way the simulation writes them."""

    ledger: Ledger
    plants: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        set_up_company(self.ledger)

    # --- writing ---------------------------------------------------------------------

    def system(self, cmd: c.Command, day: date = D1, actor: str = "system:automation") -> Any:
        """A company process's command."""
        return self.ledger.execute(cmd, actor=actor, role="system", business_date=day)

    def clerk(self, cmd: c.Command, day: date) -> Any:
        """The clerk's command."""
        return self.ledger.execute(cmd, actor=CLERK, role="clerk", business_date=day)

    def controller(self, cmd: c.Command, day: date) -> Any:
        """A controller's command."""
        return self.ledger.execute(cmd, actor="human:controller", role="controller",
                                   business_date=day)

    def world(self, event: WorldEvent, day: date, actor: str) -> None:
        """Record a world event."""
        self.ledger.record("world", [(event.stream, event.type,  # type: ignore[attr-defined]
                                      event.model_dump_json())], actor=actor, business_date=day)

    # --- customers -------------------------------------------------------------------

    def invoice(self, invoice_id: str, customer: str, cents: int, day: date = D1,
                send: bool = True) -> None:
        """Issue an invoice and send it (the customer's books receive it)."""
        self.system(c.IssueInvoice(invoice_id=invoice_id, customer_id=customer, entry_date=day,
                                   lines=(c.InvoiceLineIn(description="Work",
                                                          unit_price=cents),)), day)
        if send:
            self.world(InvoiceReceived(customer_id=customer, invoice_id=invoice_id,
                                       amount=cents, due_on=day + timedelta(days=30)),
                       day, "system:dispatch")

    def pay(self, payment_id: str, customer: str, allocations: dict[str, int], day: date, *,
            arrives: int | None = None, method: str = "ach", duplicate_of: str | None = None,
            payer: str | None = None) -> PaymentSent:
        """A customer sends a payment (its truth: what it pays)."""
        amount = sum(allocations.values())
        p = PaymentSent(customer_id=customer, payment_id=payment_id, method=method,  # type: ignore[arg-type]
                        amount=amount, arrives=amount if arrives is None else arrives,
                        payer_name=payer or {"C1": "Acme", "C2": "Globex"}[customer],
                        reference=" ".join(allocations),
                        allocations=tuple(Allocation(doc_id=i, amount=a)
                                          for i, a in allocations.items()),
                        behaviour="test", duplicate_of=duplicate_of)
        self.world(p, day, f"counterparty:{customer}")
        return p

    def line(self, line_id: str, amount: int, day: date, kind: str, *, source: str | None = None,
             duplicate_of: str | None = None, description: str = "", reference: str = "",
             counterparty: str = "") -> BankLinePosted:
        """The bank posts a line."""
        x = BankLinePosted(bank_account_id=BANK, line_id=line_id, posted_on=day, amount=amount,
                           description=description or kind.upper(), reference=reference,
                           counterparty=counterparty, kind=kind,  # type: ignore[arg-type]
                           source=source, duplicate_of=duplicate_of)
        self.world(x, day, "counterparty:bank")
        return x

    def feed(self, x: BankLinePosted, customer: str | None = None, *,
             receipt: bool = True) -> str | None:
        """The bank feed imports a line and records a deposit as a receipt matched to it."""
        self.system(c.ImportStatementLines(bank_account_id=BANK, lines=(c.StatementLineIn(
            line_id=x.line_id, entry_date=x.posted_on, amount=x.amount,
            description=x.description, reference=x.reference, counterparty=x.counterparty,
            bank_ref=x.line_id),)), x.posted_on, "system:bank-feed")
        if not receipt or x.amount <= 0:
            return None
        rid = f"RCT-{x.line_id}"
        self.system(c.RecordReceipt(receipt_id=rid, customer_id=customer, bank_account_id=BANK,
                                    entry_date=x.posted_on, amount=x.amount,
                                    reference=x.reference, payer=x.counterparty),
                    x.posted_on, "system:bank-feed")
        self.system(c.MatchStatementLine(line_id=x.line_id, targets=(
            c.MatchRef(kind="receipt", doc_id=rid),)), x.posted_on, "system:bank-feed")
        return rid

    def deposit(self, line_id: str, p: PaymentSent, day: date, customer: str | None = None,
                **kw: Any) -> str:
        """The bank credits a payment; the feed records it (as the customer's, by default)."""
        x = self.line(line_id, p.arrives, day, "deposit", source=p.payment_id,
                      reference=p.reference, counterparty=p.payer_name, **kw)
        rid = self.feed(x, p.customer_id if customer is None else customer)
        assert rid is not None
        return rid

    def apply(self, receipt: str, invoice: str, cents: int, day: date) -> None:
        """The clerk applies a receipt."""
        self.clerk(c.ApplyReceipt(receipt_id=receipt, invoice_id=invoice, amount=cents), day)

    # --- vendors ---------------------------------------------------------------------

    def bill(self, ref: str, number: str, cents: int, day: date, *, kind: str = "original",
             duplicate_of: str | None = None, deliver: bool = True,
             agreed: int | None = None) -> BillIssued:
        """The vendor issues a bill (and sends it)."""
        b = BillIssued(vendor_id="V1", bill_ref=ref, invoice_number=number, issued_on=day,
                       due_on=day + timedelta(days=30),
                       lines=(OrderLine(description="Service", quantity=1, unit_price=cents),),
                       total=cents, agreed_total=cents if agreed is None else agreed,
                       kind=kind, duplicate_of=duplicate_of)  # type: ignore[arg-type]
        self.world(b, day, "counterparty:V1")
        if deliver:
            self.world(DocumentDelivered(doc_id=f"DOC-{ref}", filename=f"invoice-{number}.txt",
                                         kind="bill", sender="billing@initech.example",
                                         subject=f"Invoice {number}", content="...",
                                         truth={"vendor_id": "V1", "bill_ref": ref, "kind": kind,
                                                "duplicate_of": duplicate_of}),
                       day, "counterparty:V1")
        return b

    def enter(self, bill_id: str, number: str, cents: int, day: date) -> None:
        """The clerk enters and approves a bill."""
        self.clerk(c.EnterBill(bill_id=bill_id, vendor_id="V1", vendor_invoice_number=number,
                               entry_date=day, lines=(c.BillLineIn(description="Service",
                                                                   amount=cents),)), day)
        self.clerk(c.ApproveBill(bill_id=bill_id), day)

    def pay_vendor(self, payment_id: str, bill_id: str, cents: int, day: date, *,
                   line_id: str | None, diverted: bool = False) -> None:
        """The clerk pays a bill; the bank pays it out (``line_id``) that day, or not yet."""
        self.clerk(c.PayVendor(payment_id=payment_id, vendor_id="V1", bank_account_id=BANK,
                               entry_date=day, applications=(c.BillPayment(bill_id=bill_id,
                                                                           amount=cents),)),
                   day)
        if line_id is None:
            return
        x = self.line(line_id, -cents, day, "payment", source=payment_id, reference=payment_id)
        if diverted:
            self.world(PaymentDiverted(vendor_id="V1", payment_id=payment_id, amount=cents,
                                       account=BankDetails(account_name="Initech", routing="9",
                                                           account_number="66666666")),
                       day, "counterparty:bank")
        else:
            self.world(PaymentReceived(vendor_id="V1", payment_id=payment_id, amount=cents), day,
                       "counterparty:bank")
        self.feed(x, receipt=False)
        self.clerk(c.MatchStatementLine(line_id=line_id, targets=(
            c.MatchRef(kind="payment", doc_id=payment_id),)), day)


def build(ledger: Ledger, *plants: str) -> Company:
    """A week of the company's work, done right unless a difference is planted.

    Plants: ``wrong_customer`` (C1's payment recorded under C2 and applied to C2's
    invoice), ``duplicate_under_c2`` (C1's repeat payment held under C2), ``drop_bill``
    (bill A-103 never entered), ``skip_fee`` (the bank fee never recorded),
    ``enter_resend`` (the second copy of A-100 entered too), ``divert`` (payment PMT-1
    diverted), ``leave_unapplied`` (C1's payment left unapplied under C1),
    ``journal_to_ar`` (a controller's journal entry to receivables).
    """
    co = Company(ledger, set(plants))
    co.invoice("INV-1", "C1", 100_000)
    co.invoice("INV-2", "C2", 50_000)
    co.invoice("INV-3", "C1", 30_000)
    co.invoice("INV-4", "C2", 20_000)
    co.invoice("INV-5", "C2", 100_000)
    # C1 pays INV-1 by ACH; the feed names the payer; the clerk applies it.
    p1 = co.pay("PAY-C1-1", "C1", {"INV-1": 100_000}, D1)
    wrong = "wrong_customer" in plants
    r1 = co.deposit("BL-1", p1, D2, customer="C2" if wrong else "C1")
    if wrong:
        co.apply(r1, "INV-5", 100_000, D2)
    elif "leave_unapplied" not in plants:
        co.apply(r1, "INV-1", 100_000, D2)
    # C2 pays INV-2 by card: 500.00 less the processor's 14.80; the fee is allowed.
    p2 = co.pay("PAY-C2-1", "C2", {"INV-2": 50_000}, D1, arrives=48_520, method="card",
                payer="STRIPE PAYMENTS")
    r2 = co.deposit("BL-2", p2, D2, customer="C2")
    co.apply(r2, "INV-2", 48_520, D2)
    co.clerk(c.GrantFeeAllowance(invoice_id="INV-2", amount=1_480), D2)
    # C1 sends PAY-C1-1 again: on account.
    p3 = co.pay("PAY-C1-2", "C1", {"INV-1": 100_000}, D2, duplicate_of="PAY-C1-1")
    co.deposit("BL-3", p3, D3, customer="C2" if "duplicate_under_c2" in plants else "C1",
               duplicate_of="BL-1")
    # C2 pays INV-4 on the last day: in transit.
    co.pay("PAY-C2-2", "C2", {"INV-4": 20_000}, LAST)
    # Vendor V1: bills, a resend, a credit note, payments.
    co.bill("V1-B1", "A-100", 70_000, D1)
    co.enter("BILL-1", "A-100", 70_000, D1)
    co.bill("V1-B2", "A-101", 40_000, D1)
    co.enter("BILL-2", "A-101", 40_000, D1)
    co.bill("V1-B3", "A-100", 70_000, D2, kind="duplicate", duplicate_of="V1-B1")
    if "enter_resend" in plants:
        co.clerk(c.EnterBill(bill_id="BILL-1B", vendor_id="V1", vendor_invoice_number="A100",
                             entry_date=D2, lines=(c.BillLineIn(description="Service",
                                                                amount=70_000),)), D2)
    co.world(CreditNoteIssued(vendor_id="V1", number="CN-1", amount=5_000, for_bill_ref="V1-B2"),
             D2, "counterparty:V1")
    co.world(DocumentDelivered(doc_id="DOC-CN-1", filename="credit-note-CN-1.txt",
                               kind="credit_note", sender="billing@initech.example",
                               subject="Credit note CN-1", content="...",
                               truth={"vendor_id": "V1", "credit_number": "CN-1",
                                      "amount": 5_000}), D2, "counterparty:V1")
    co.clerk(c.RecordVendorCredit(credit_id="VC-1", vendor_id="V1", vendor_credit_number="CN-1",
                                  entry_date=D2, amount=5_000), D2)
    co.clerk(c.ApplyVendorCredit(credit_id="VC-1", bill_id="BILL-2", amount=5_000), D2)
    co.bill("V1-B4", "A-102", 10_000, D2)
    co.enter("BILL-4", "A-102", 10_000, D2)
    co.bill("V1-B5", "A-103", 25_000, D3)
    if "drop_bill" not in plants:
        co.enter("BILL-5", "A-103", 25_000, D3)
    co.pay_vendor("PMT-1", "BILL-1", 70_000, D3, line_id="BL-P1", diverted="divert" in plants)
    co.pay_vendor("PMT-2", "BILL-4", 10_000, LAST, line_id=None)  # not paid out yet
    co.world(BankChangeAsked(vendor_id="V1", request_ref="V1-BC01",
                             new_bank=BankDetails(account_name="Initech", routing="9",
                                                  account_number="66666666"),
                             genuine=False, sender="finance@initech-billing.co"), D3,
             "counterparty:V1")
    # The bank's month: a fee and interest, both imported by the feed.
    fee = co.line("BL-F", -1_500, D3, "fee", description="SERVICE CHARGE")
    co.feed(fee, receipt=False)
    if "skip_fee" not in plants:
        co.clerk(c.RecordBankFee(bank_account_id=BANK, entry_date=D3, amount=1_500,
                                 line_id="BL-F"), D3)
    interest = co.line("BL-I", 200, D3, "interest", description="INTEREST CREDIT")
    co.feed(interest, receipt=False)
    co.clerk(c.RecordInterest(bank_account_id=BANK, entry_date=D3, amount=200,
                              line_id="BL-I"), D3)
    if "journal_to_ar" in plants:
        co.controller(c.PostJournalEntry(entry_id="JE-1", entry_date=D3, memo="adjust", lines=(
            c.JournalLineIn(account="1200", debit=12_345, party="C1"),
            c.JournalLineIn(account="4000", credit=12_345))), D3)
    return co


def by_kind(rec: Reconciliation, kind: str) -> list[Item]:
    """Items of a kind, every account."""
    return [i for i in rec.items() if i.kind == kind]


# --- on both store backends -------------------------------------------------------------------


def test_a_correct_week_ties_to_the_cent(ledger: Ledger) -> None:
    build(ledger)
    rec = reconcile(ledger.store, as_of=LAST)
    assert rec.ties, [i.describe() for i in rec.items(unexplained_only=True)]
    bank, ar = rec.account("1000"), rec.account("1200")
    unapplied, ap = rec.account("2150"), rec.account("2000")
    # bank: 10,000.00 + 1,000.00 + 485.20 + 1,000.00 - 700.00 - 15.00 + 2.00 in both, and the
    # books' payment PMT-2 (100.00) not paid out by the bank yet.
    assert (bank.external, bank.gl) == (1_177_220, 1_167_220)
    assert [(i.kind, i.document, i.difference) for i in bank.explained] == [
        ("outstanding_payment", "PMT-2", -10_000)]
    # receivables: INV-3 300.00 and INV-4 200.00 and INV-5 1,000.00 open; INV-4 is paid,
    # in transit.
    assert (ar.gl, ar.subledger, ar.external) == (150_000, 150_000, 130_000)
    assert [(i.kind, i.party, i.difference) for i in ar.explained] == [
        ("payment_in_transit", "C2", 20_000)]
    # unapplied cash: C1's repeat payment, held on account, ties to C1's money on account.
    assert (unapplied.subledger, unapplied.external) == (100_000, 100_000)
    assert [(i.kind, i.party, i.difference) for i in unapplied.items] == [
        ("on_account", "C1", 0)]
    # payables: A-101 400.00 - CN-1 50.00 + A-102 100.00 + A-103 250.00 open; PMT-2 in transit.
    assert (ap.subledger, ap.external) == (60_000, 70_000)
    assert [(i.kind, i.document, i.difference) for i in ap.explained] == [
        ("vendor_payment_in_transit", "PMT-2", -10_000)]


def test_a_receipt_under_the_wrong_customer_shows_under_both_customers(ledger: Ledger) -> None:
    build(ledger, "wrong_customer", "duplicate_under_c2")
    rec = reconcile(ledger.store, as_of=LAST)
    assert not rec.ties
    ar = {(i.party, i.document): i for i in rec.account("1200").unexplained}
    # C1 paid INV-1; the books hold it open: C1's side shows the receipt applied to C2.
    c1 = ar[("C1", "INV-1")]
    assert (c1.books, c1.external, c1.difference) == (100_000, 0, 100_000)
    assert "PAY-C1-1" in c1.note and "RCT-BL-1 of C2" in c1.note
    assert "1,000.00 applied to INV-5 of C2" in c1.note and c1.kind == "misapplied"
    # C2's INV-5 is closed in the books with C1's money; C2's records still owe it.
    c2 = ar[("C2", "INV-5")]
    assert (c2.kind, c2.books, c2.external, c2.difference) == ("overapplied", 0, 100_000,
                                                               -100_000)
    assert "applied from RCT-BL-1: money from C1 meant for INV-1" in c2.note
    # C1's repeat payment held under C2: the unapplied cash shows it under both customers.
    un = {(i.party, i.kind): i for i in rec.account("2150").unexplained}
    assert (un[("C2", "receipt_wrong_customer")].books,
            un[("C2", "receipt_wrong_customer")].external) == (100_000, 0)
    assert (un[("C1", "receipt_wrong_customer")].books,
            un[("C1", "receipt_wrong_customer")].external) == (0, 100_000)
    assert "the money came from C1" in un[("C1", "receipt_wrong_customer")].note
    # Balances agree for the account as a whole: the error is in who, not how much.
    assert rec.account("1200").subledger - rec.account("1200").external == 20_000
    assert sum(i.difference for i in rec.account("2150").items) == 0


def test_planted_differences_are_itemized_where_they_belong(ledger: Ledger) -> None:
    build(ledger, "drop_bill", "skip_fee", "enter_resend", "divert", "journal_to_ar")
    rec = reconcile(ledger.store, as_of=LAST)
    assert not rec.ties
    got = {(i.account, i.kind, i.party, i.document, i.books, i.external, i.difference)
           for i in rec.items(unexplained_only=True)}
    assert got == {
        ("2000", "bill_not_entered", "V1", "A-103 (V1-B5)", 0, 25_000, -25_000),
        ("2000", "bill_entered_twice", "V1", "BILL-1B (A100)", 70_000, 0, 70_000),
        ("2000", "payment_diverted", "V1", "PMT-1", -70_000, 0, -70_000),
        ("1000", "unrecorded_fee", None, "BL-F SERVICE CHARGE", 0, -1_500, 1_500),
        ("1200", "gl_only", "C1", "JE-1", 12_345, 0, 12_345),
    }
    twice = by_kind(rec, "bill_entered_twice")[0]
    assert "a duplicate of A-100, already entered as BILL-1" in twice.note
    assert "66666666"[-4:] in by_kind(rec, "payment_diverted")[0].note
    je = by_kind(rec, "gl_only")[0]
    assert "journal_entry_posted" in je.note and "human:controller" in je.note
    ar = rec.account("1200")
    assert (ar.gl, ar.subledger, ar.gl_difference) == (162_345, 150_000, 12_345)


# --- SQLite only -------------------------------------------------------------------------------


@pytest.fixture
def sqlite_ledger(tmp_path: Any) -> Any:
    led = Ledger.open(tmp_path / "books.db", create=True)
    yield led
    led.close()


def test_rows_export_flat_decimal_strings(sqlite_ledger: Ledger) -> None:
    build(sqlite_ledger, "skip_fee")
    rec = reconcile(sqlite_ledger.store, as_of=LAST)
    rows = rec.rows()
    assert all(tuple(r) == CSV_COLUMNS for r in rows)
    buf = io.StringIO()
    w = csv.DictWriter(buf, CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    back = list(csv.DictReader(io.StringIO(buf.getvalue())))
    fee = next(r for r in back if r["kind"] == "unrecorded_fee")
    assert fee == {"account": "1000", "kind": "unrecorded_fee", "party": "",
                   "document": "BL-F SERVICE CHARGE", "books_amount": "0.00",
                   "external_amount": "-15.00", "difference": "15.00", "explained": "no",
                   "note": "a bank charge the books have not recorded"}
    balance = next(r for r in back if r["account"] == "1000" and r["kind"] == "balance")
    assert (balance["books_amount"], balance["external_amount"], balance["explained"]) == (
        "11687.20", "11772.20", "no")


def test_as_of_an_earlier_date_and_position(sqlite_ledger: Ledger) -> None:
    co = build(sqlite_ledger, "leave_unapplied")
    # As of D2, after the feed recorded C1's payment on D2 (the bank posted it that day,
    # on no statement): it awaits the clerk; the card payment applied that day ties.
    early = reconcile(sqlite_ledger.store, as_of=D2)
    assert early.ties, [i.describe() for i in early.items(unexplained_only=True)]
    assert {(i.kind, i.party) for i in early.items() if i.difference and i.explained} >= {
        ("awaiting_application", "C1")}
    # The next day the receipt is still unapplied: no longer a timing item.
    later = reconcile(sqlite_ledger.store, as_of=D3)
    assert {(i.account, i.kind, i.party) for i in later.items(unexplained_only=True)} == {
        ("1200", "receipt_not_applied", "C1"), ("2150", "receipt_not_applied", "C1")}
    # A log position before the last events: PMT-2 and the last day's payment do not exist.
    pos = sqlite_ledger.store.head()[0]
    assert reconcile(sqlite_ledger.store, position=pos).day == LAST
    books = fold_books(sqlite_ledger.store, position=60)
    assert "PMT-2" not in books.payments
    del co


def test_a_duplicate_bank_line_is_explained_a_returned_deposit_once_recorded(
        sqlite_ledger: Ledger) -> None:
    co = build(sqlite_ledger)
    # The bank posts BL-1 twice (its error); the feed records the copy as a receipt.
    copy = co.line("BL-1C", 100_000, D3, "deposit", source="PAY-C1-1", duplicate_of="BL-1",
                   reference="INV-1", counterparty="Acme")
    co.feed(copy, "C1")
    # C2 pays INV-3? No: C1 pays INV-3; the deposit comes back unpaid; the clerk reverses.
    p = co.pay("PAY-C1-3", "C1", {"INV-3": 30_000}, D2)
    rid = co.deposit("BL-9", p, D3)
    co.apply(rid, "INV-3", 30_000, D3)
    back = co.line("BL-9R", -30_000, D3, "returned", source="PAY-C1-3",
                   description="RETURNED ITEM NSF")
    co.feed(back, receipt=False)
    rec = reconcile(sqlite_ledger.store, as_of=LAST)
    # The clerk has not reversed the application yet: the bounced cash is not held.
    assert {(i.account, i.kind) for i in rec.items(unexplained_only=True)} == {
        ("1000", "returned_item"), ("1200", "overapplied")}
    co.clerk(c.ReverseApplication(receipt_id=rid, invoice_id="INV-3", amount=30_000), D3)
    rec = reconcile(sqlite_ledger.store, as_of=LAST)
    # Holding the bounced cash unapplied is not enough: the books can record the return.
    assert {(i.account, i.kind) for i in rec.items(unexplained_only=True)} == {
        ("1000", "returned_item"), ("2150", "returned_item")}
    co.clerk(c.ApplyReceipt(receipt_id=rid, invoice_id="INV-3", amount=30_000), D3)
    co.clerk(c.RecordReturnedDeposit(receipt_id=rid, line_id="BL-9R"), D3)
    rec = reconcile(sqlite_ledger.store, as_of=LAST)
    assert rec.ties, [i.describe() for i in rec.items(unexplained_only=True)]
    kinds = {(i.account, i.kind, i.difference) for i in rec.items() if i.explained}
    assert ("2150", "bank_error", 100_000) in kinds
    assert ("1000", "bank_error", 0) in kinds
    assert not [i for i in rec.items() if i.kind == "returned_item"]


def test_a_price_variance_bill_held_out_is_explained(sqlite_ledger: Ledger) -> None:
    co = build(sqlite_ledger)
    co.bill("V1-B6", "A-104", 12_000, D3, kind="price_variance", agreed=10_000)
    rec = reconcile(sqlite_ledger.store, as_of=LAST)
    assert rec.ties
    held = by_kind(rec, "price_variance_held")[0]
    assert (held.party, held.difference, held.explained) == ("V1", -12_000, True)
    # A bill the vendor has issued but not delivered yet is a timing item too.
    co.bill("V1-B7", "A-105", 9_900, LAST, deliver=False)
    rec = reconcile(sqlite_ledger.store, as_of=LAST)
    assert rec.ties and by_kind(rec, "bill_not_delivered")[0].difference == -9_900


def test_a_receipt_on_a_line_the_bank_never_posted(sqlite_ledger: Ledger) -> None:
    co = build(sqlite_ledger)
    co.clerk(c.ImportStatementLines(bank_account_id=BANK, lines=(c.StatementLineIn(
        line_id="FAKE-1", entry_date=D3, amount=4_000, description="ACH CREDIT"),)), D3)
    co.clerk(c.RecordReceipt(receipt_id="RCT-FAKE", customer_id="C1", bank_account_id=BANK,
                             entry_date=D3, amount=4_000), D3)
    co.clerk(c.MatchStatementLine(line_id="FAKE-1", targets=(
        c.MatchRef(kind="receipt", doc_id="RCT-FAKE"),)), D3)
    rec = reconcile(sqlite_ledger.store, as_of=LAST)
    assert {(i.account, i.kind, i.document, i.difference)
            for i in rec.items(unexplained_only=True)} == {
        ("1000", "line_not_at_bank", "RCT-FAKE", 4_000),
        ("2150", "receipt_without_payment", "RCT-FAKE (line FAKE-1)", 4_000)}


def test_a_repeat_payment_posted_after_the_turn_from_an_unnamed_payer_awaits(
        sqlite_ledger: Ledger) -> None:
    co = build(sqlite_ledger)
    # C1 sends PAY-C1-1 a third time on the last day; the bank's line cuts the payer's name,
    # so the feed records it unidentified. It is all on account (a repeat), and the bank
    # posted it after the clerk's turn: the clerk could not have seen it, let alone named it.
    p = co.pay("PAY-C1-3", "C1", {"INV-1": 100_000}, LAST, duplicate_of="PAY-C1-1",
               payer="AC")
    x = co.line("BL-7", p.arrives, LAST, "deposit", source=p.payment_id,
                reference=p.reference, counterparty="AC")
    rid = co.feed(x, None)
    rec = reconcile(sqlite_ledger.store, as_of=LAST)
    assert rec.ties, [i.describe() for i in rec.items(unexplained_only=True)]
    held = [i for i in rec.account("2150").items if i.document == f"{rid} (line BL-7)"]
    assert [(i.kind, i.party, i.books, i.external, i.explained) for i in held] == [
        ("awaiting_application", "C1", 100_000, 100_000, True)]
    # The next day it is no longer a timing item: the receipt is the clerk's to identify.
    later = reconcile(sqlite_ledger.store, as_of=LAST + timedelta(days=1))
    assert ("2150", "receipt_unidentified") in {
        (i.account, i.kind) for i in later.items(unexplained_only=True)}


# --- what the clerk has had a turn to see -----------------------------------------------------


def test_last_turn_is_the_latest_turn_on_or_before_the_date() -> None:
    assert last_turn((D1, LAST), D3) == D1
    assert last_turn((D1, LAST), LAST) == LAST
    assert last_turn((LAST,), D3) == date.min  # no turn yet: nothing was seen
    assert last_turn((), D3) == D3  # no turn dates: a turn every date
    assert last_turn((D1,), None) is None


def _late_credit(co: Company, day: date) -> None:
    """Vendor V1 issues and delivers credit note CN-2 on ``day``; nobody records it."""
    co.world(CreditNoteIssued(vendor_id="V1", number="CN-2", amount=2_500,
                              for_bill_ref="V1-B4"), day, "counterparty:V1")
    co.world(DocumentDelivered(doc_id="DOC-CN-2", filename="credit-note-CN-2.txt",
                               kind="credit_note", sender="billing@initech.example",
                               subject="Credit note CN-2", content="...",
                               truth={"vendor_id": "V1", "credit_number": "CN-2",
                                      "amount": 2_500}), day, "counterparty:V1")


def test_with_weekly_turns_what_arrived_since_the_last_turn_awaits_the_next(
        sqlite_ledger: Ledger) -> None:
    """Turns on D1 and LAST: a bill delivered on D3, a deposit posted on D2, a bank fee
    posted on D3 and a credit note of D3, none worked, are timing items until LAST's turn
    (the clerk has had no turn to see them) and errors from it on."""
    co = build(sqlite_ledger, "drop_bill", "skip_fee", "leave_unapplied")
    _late_credit(co, D3)
    weekly = (D1, LAST)
    between = reconcile(sqlite_ledger.store, as_of=D3, turn_dates=weekly)
    assert between.ties, [i.describe() for i in between.items(unexplained_only=True)]
    waiting = {(i.account, i.kind, i.party, i.difference) for i in between.items() if i.explained}
    assert waiting >= {("2000", "bill_awaiting_entry", "V1", -25_000),
                       ("2000", "credit_awaiting_entry", "V1", 2_500),
                       ("1000", "unrecorded_fee", None, 1_500),
                       ("1200", "awaiting_application", "C1", 100_000)}
    # the same date with a turn every date: each was the clerk's to work
    daily = reconcile(sqlite_ledger.store, as_of=D3)
    assert {(i.account, i.kind) for i in daily.items(unexplained_only=True)} == {
        ("2000", "bill_not_entered"), ("2000", "credit_not_recorded"),
        ("1200", "receipt_not_applied"), ("2150", "receipt_not_applied")}
    # a turn on D3 saw the bill and the deposit (not the fee the feed imported that evening)
    on_d3 = reconcile(sqlite_ledger.store, as_of=D3, turn_dates=(D1, D3, LAST))
    assert {(i.account, i.kind) for i in on_d3.items(unexplained_only=True)} == {
        ("2000", "bill_not_entered"), ("2000", "credit_not_recorded"),
        ("1200", "receipt_not_applied"), ("2150", "receipt_not_applied")}
    # after LAST's turn none of them is a timing item any more
    after = reconcile(sqlite_ledger.store, as_of=LAST, turn_dates=weekly)
    assert {(i.account, i.kind) for i in after.items(unexplained_only=True)} == {
        ("2000", "bill_not_entered"), ("2000", "credit_not_recorded"),
        ("1000", "unrecorded_fee"), ("1200", "receipt_not_applied"),
        ("2150", "receipt_not_applied")}
    # before the first turn nothing was seen
    assert reconcile(sqlite_ledger.store, as_of=D3, turn_dates=(LAST,)).ties


def test_a_deposit_returned_after_the_last_turn_awaits_its_recording(
        sqlite_ledger: Ledger) -> None:
    co = build(sqlite_ledger)
    p = co.pay("PAY-C1-3", "C1", {"INV-3": 30_000}, D1)
    rid = co.deposit("BL-9", p, D2)
    co.apply(rid, "INV-3", 30_000, D2)
    back = co.line("BL-9R", -30_000, D3, "returned", source="PAY-C1-3",
                   description="RETURNED ITEM NSF")
    co.feed(back, receipt=False)
    weekly = (D2, LAST)
    between = reconcile(sqlite_ledger.store, as_of=D3, turn_dates=weekly)
    assert between.ties, [i.describe() for i in between.items(unexplained_only=True)]
    [held] = by_kind(between, "return_awaiting_entry")
    assert (held.account, held.party, held.document, held.difference) == (
        "1200", "C1", f"INV-3 ({rid})", -30_000)
    assert [i.explained for i in by_kind(between, "returned_item")] == [True]
    # from the next turn the return is the clerk's to record
    after = reconcile(sqlite_ledger.store, as_of=LAST, turn_dates=weekly)
    assert {(i.account, i.kind) for i in after.items(unexplained_only=True)} == {
        ("1000", "returned_item"), ("1200", "overapplied")}
    # an application to an invoice the payment did not pay is no timing item
    co.invoice("INV-6", "C1", 30_000)
    co.clerk(c.ReverseApplication(receipt_id=rid, invoice_id="INV-3", amount=30_000), D3)
    co.apply(rid, "INV-6", 30_000, D3)
    wrong = reconcile(sqlite_ledger.store, as_of=D3, turn_dates=weekly)
    assert ("1200", "overapplied") in {
        (i.account, i.kind) for i in wrong.items(unexplained_only=True)}
