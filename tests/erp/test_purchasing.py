"""Purchasing in the books: purchase orders, goods receipts, three-way match, holds.

Given a company on the ``services-with-purchasing`` chart, when a command, then the
events, the exact GL lines, the documents, or the refusal (with its message) and nothing
written. Runs on SQLite and PostgreSQL (the ``ledger`` fixture).
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from pydantic import ValidationError

from erp import commands as c
from erp import events as ev
from erp import queries as q
from erp.charts import chart_commands
from erp.events import BankDetails, Policies
from erp.ledger import Ledger, Submission
from erp.verification import verify_books
from tests.erp.helpers import BANK, CLERK, CONTROLLER, DAY, SYS, assert_rejected

LATER = date(2026, 3, 9)
TOLERANCES = Policies(match_price_tolerance_bp=200, match_quantity_tolerance_bp=500)
"""2% over the PO's unit price, 5% over the quantity received."""


def set_up(ledger: Ledger, policies: Policies = TOLERANCES,
           chart: str = "services-with-purchasing") -> None:
    """A company with the purchasing chart, March 2026 open, a bank and two vendors."""
    cmds: list[c.Command] = [c.SetUpCompany(name="Buyer Co", policies=policies)]
    cmds += chart_commands(chart)
    cmds += [c.OpenPeriod(period="2026-03"),
             c.OpenBankAccount(bank_account_id=BANK, name="Operating", number="0001",
                               gl_account="1000", entry_date=DAY, opening_balance="50000.00")]
    cmds += [c.RegisterVendor(vendor_id=v, name=f"Vendor {v}", terms_days=30,
                              bank=BankDetails(account_name=v, routing="111000025",
                                               account_number="123456789"))
             for v in ("V1", "V2")]
    ledger.execute_batch([Submission(x, **SYS) for x in cmds])


def issue(ledger: Ledger, vendor: str = "V1", **kw: Any) -> str:
    """Issue PO: 10 TONER at 25.00 (6000) and 4 CHAIR at 180.00 (1400)."""
    lines = kw.pop("lines", (c.PurchaseOrderLineIn(item="TONER", quantity=10, unit_price="25.00"),
                             c.PurchaseOrderLineIn(item="CHAIR", quantity=4, unit_price="180.00",
                                                   account="1400", description="Desk chair")))
    done = ledger.execute(c.IssuePurchaseOrder(vendor_id=vendor, order_date=DAY, lines=lines,
                                               **kw), **CLERK)
    e = done[0]
    assert e.type == "purchase_order_issued"
    return str(ev.decode_event(e.type, e.schema_version, e.payload).po_id)  # type: ignore[attr-defined]


def receive(ledger: Ledger, po: str, *lines: tuple[int, int], day: date = DAY) -> None:
    """Record goods received: (PO line, quantity) pairs."""
    ledger.execute(c.RecordGoodsReceipt(po_id=po, entry_date=day, reference="RR-1", lines=tuple(
        c.GoodsReceiptLineIn(line=n, quantity=k) for n, k in lines)), **CLERK)


def bill(ledger: Ledger, po: str, number: str, *lines: tuple[int, int, str],
         day: date = DAY) -> list[ev.Event]:
    """Enter a matched bill: (PO line, quantity, unit price) triples; its events."""
    done = ledger.execute(c.EnterMatchedBill(po_id=po, vendor_invoice_number=number,
                                             entry_date=day, lines=tuple(
        c.MatchedBillLineIn(line=n, quantity=k, unit_price=p) for n, k, p in lines)), **CLERK)
    return [ev.decode_event(e.type, e.schema_version, e.payload) for e in done]


def gl_lines(ledger: Ledger, doc_id: str) -> list[tuple[str, int, str | None]]:
    """The GL lines posted on a document: (account, signed amount, party), in order."""
    with ledger.store.engine.connect() as conn:
        rows = conn.exec_driver_sql(ledger.store.sql(
            "SELECT account, amount, party FROM gl_lines WHERE doc_id = ? ORDER BY position, seq"),
            (doc_id,)).all()
    return [(r[0], int(r[1]), r[2]) for r in rows]


def consistent(ledger: Ledger) -> None:
    """Trial balance zero, every control tie, GRNI GL = the PO lines' accrual, rebuild = live."""
    tb = q.trial_balance(ledger.store)
    assert sum(r.debit - r.credit for r in tb) == 0
    assert not [t for t in q.control_ties(ledger.store) if t.difference]
    assert -q.account_balance(ledger.store, "2050") == q.grni_open(ledger.store)
    live = q.table_snapshot(ledger.store)
    ledger.rebuild()
    assert q.table_snapshot(ledger.store) == live
    report = verify_books(ledger.store)
    assert report.ok, report.message()


# --- purchase orders -------------------------------------------------------------------


def test_a_purchase_order_posts_nothing_and_opens_a_document(ledger: Ledger) -> None:
    set_up(ledger)
    before = q.trial_balance(ledger.store)
    po = issue(ledger, expected_on=LATER)
    assert po == "PO-000001"
    assert q.trial_balance(ledger.store) == before
    doc = q.document(ledger.store, "purchase_order", po)
    assert doc is not None
    assert (doc["party"], doc["total"], doc["open_amount"], doc["status"], doc["due_on"]) == (
        "V1", 97_000, 97_000, "open", "2026-03-09")
    rows = q.purchase_order_lines(ledger.store, po_id=po)
    assert [(r.line, r.item, r.ordered, r.unit_price, r.account, r.received, r.billed)
            for r in rows] == [(1, "TONER", 10, 2_500, "6000", 0, 0),
                               (2, "CHAIR", 4, 18_000, "1400", 0, 0)]
    consistent(ledger)


@pytest.mark.parametrize(("command", "code", "match", "field"), [
    (c.IssuePurchaseOrder(vendor_id="V9", order_date=DAY, lines=(
        c.PurchaseOrderLineIn(item="X", quantity=1, unit_price="1.00"),)),
     "unknown_vendor", "no vendor 'V9'", "vendor_id"),
    (c.IssuePurchaseOrder(vendor_id="V1", order_date=LATER, expected_on=DAY, lines=(
        c.PurchaseOrderLineIn(item="X", quantity=1, unit_price="1.00"),)),
     "invalid_date", "expected_on 2026-03-02 is before the order date 2026-03-09",
     "expected_on"),
    (c.IssuePurchaseOrder(vendor_id="V1", order_date=DAY, lines=(
        c.PurchaseOrderLineIn(item="X", quantity=1, unit_price="1.00"),
        c.PurchaseOrderLineIn(item="Y", quantity=1, unit_price="0.00"))),
     "non_positive_amount", "lines[1].unit_price must be greater than zero", "lines[1].unit_price"),
    (c.IssuePurchaseOrder(vendor_id="V1", order_date=DAY, lines=(
        c.PurchaseOrderLineIn(item="X", quantity=1, unit_price="1.00", account="2000"),)),
     "control_account_restricted", "lines[0].account 2000 is a control account",
     "lines[0].account"),
    (c.IssuePurchaseOrder(vendor_id="V1", order_date=DAY, lines=(
        c.PurchaseOrderLineIn(item="X", quantity=1, unit_price="1.00", account="7777"),)),
     "unknown_account", "no account '7777'", "lines[0].account"),
])
def test_a_bad_purchase_order_is_refused(ledger: Ledger, command: c.Command, code: str,
                                         match: str, field: str) -> None:
    set_up(ledger)
    assert_rejected(ledger, command, code, match=match, field=field)


def test_a_purchase_order_id_is_used_once(ledger: Ledger) -> None:
    set_up(ledger)
    issue(ledger, po_id="PO-7")
    assert_rejected(ledger, c.IssuePurchaseOrder(po_id="PO-7", vendor_id="V1", order_date=DAY,
                                                 lines=(c.PurchaseOrderLineIn(
                                                     item="X", quantity=1, unit_price="1.00"),)),
                    "duplicate_id", match="purchase order 'PO-7' already exists", field="po_id")


def test_a_quantity_below_one_is_not_a_purchase_order_line() -> None:
    with pytest.raises(ValidationError, match="quantity"):
        c.PurchaseOrderLineIn(item="X", quantity=0, unit_price="1.00")


# --- goods receipts --------------------------------------------------------------------


def test_a_goods_receipt_debits_the_line_accounts_and_credits_grni(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger)
    receive(ledger, po, (1, 8), (2, 4))
    assert gl_lines(ledger, "GR-000001") == [("6000", 20_000, "V1"), ("1400", 72_000, "V1"),
                                             ("2050", -92_000, "V1")]
    doc = q.document(ledger.store, "purchase_order", po)
    assert doc is not None and (doc["open_amount"], doc["status"]) == (5_000,
                                                                      "partially_received")
    receive(ledger, po, (1, 2), day=LATER)
    doc = q.document(ledger.store, "purchase_order", po)
    assert doc is not None and (doc["open_amount"], doc["status"]) == (0, "received")
    gr = q.document(ledger.store, "goods_receipt", "GR-000002")
    assert gr is not None and (gr["total"], gr["reference"], gr["account"], gr["doc_date"]) == (
        5_000, po, "2050", "2026-03-09")
    assert q.grni_open(ledger.store) == 97_000
    consistent(ledger)


def test_more_than_ordered_cannot_be_received(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger)
    receive(ledger, po, (1, 8))
    assert_rejected(ledger, c.RecordGoodsReceipt(po_id=po, entry_date=DAY, lines=(
        c.GoodsReceiptLineIn(line=1, quantity=3),)), "over_receipt",
        match="line 1 (TONER) ordered 10, 8 received; cannot receive 3 more (at most 2)",
        field="lines[0].quantity")


@pytest.mark.parametrize(("lines", "day", "code", "match", "field"), [
    (((3, 1),), DAY, "unknown_po_line", "has no line 3 (lines 1 to 2)", "lines[0].line"),
    (((1, 1), (1, 2)), DAY, "duplicate_line", "lines[1] names PO line 1 again", "lines[1].line"),
    (((1, 1),), date(2026, 3, 1), "before_order",
     "entry_date 2026-03-01 is before purchase order PO-000001's date 2026-03-02", "entry_date"),
    (((1, 1),), date(2026, 4, 1), "no_open_period", "falls in no accounting period",
     "entry_date"),
])
def test_a_bad_goods_receipt_is_refused(ledger: Ledger, lines: tuple[tuple[int, int], ...],
                                        day: date, code: str, match: str, field: str) -> None:
    set_up(ledger)
    po = issue(ledger)
    assert_rejected(ledger, c.RecordGoodsReceipt(po_id=po, entry_date=day, lines=tuple(
        c.GoodsReceiptLineIn(line=n, quantity=k) for n, k in lines)), code, match=match,
        field=field)


def test_a_receipt_needs_a_known_purchase_order(ledger: Ledger) -> None:
    set_up(ledger)
    assert_rejected(ledger, c.RecordGoodsReceipt(po_id="PO-404", entry_date=DAY, lines=(
        c.GoodsReceiptLineIn(line=1, quantity=1),)), "unknown_purchase_order",
        match="no purchase order 'PO-404' in the books", field="po_id")


def test_a_receipt_needs_the_purchasing_chart(ledger: Ledger) -> None:
    set_up(ledger, chart="standard-services")
    po = issue(ledger, lines=(c.PurchaseOrderLineIn(item="TONER", quantity=1,
                                                    unit_price="25.00"),))
    assert_rejected(ledger, c.RecordGoodsReceipt(po_id=po, entry_date=DAY, lines=(
        c.GoodsReceiptLineIn(line=1, quantity=1),)), "unknown_account",
        match="no account 2050 (goods received not invoiced); purchase orders need the "
              "services-with-purchasing chart")


def test_a_receipt_in_a_closed_period_is_refused(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger)
    ledger.execute(c.ClosePeriod(period="2026-03"), **CONTROLLER)
    assert_rejected(ledger, c.RecordGoodsReceipt(po_id=po, entry_date=DAY, lines=(
        c.GoodsReceiptLineIn(line=1, quantity=1),)), "period_closed", field="entry_date")


# --- three-way match -----------------------------------------------------------------------


def test_a_bill_matching_po_and_receipt_clears_grni_and_is_not_held(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger)
    receive(ledger, po, (1, 10), (2, 4))
    events = bill(ledger, po, "INV-1", (1, 10, "25.00"), (2, 4, "180.00"))
    assert [e.type for e in events] == ["bill_entered", "bill_matched"]
    matched = events[1]
    assert isinstance(matched, ev.BillMatched)
    assert (matched.grni_amount, matched.price_variance, matched.holds) == (97_000, 0, ())
    assert gl_lines(ledger, "BILL-000001") == [("2050", 25_000, "V1"), ("2050", 72_000, "V1"),
                                               ("2000", -97_000, "V1")]
    assert q.account_balance(ledger.store, "2050") == 0
    assert q.document(ledger.store, "bill_hold", "BILL-000001") is None
    ledger.execute(c.ApproveBill(bill_id="BILL-000001"), **CLERK)
    ledger.execute(c.PayVendor(vendor_id="V1", bank_account_id=BANK, applications=(
        c.BillPayment(bill_id="BILL-000001", amount="970.00"),)), **CLERK)
    consistent(ledger)


def test_a_price_within_tolerance_posts_its_variance_and_is_not_held(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger)
    receive(ledger, po, (1, 10))
    events = bill(ledger, po, "INV-2", (1, 10, "25.50"))  # 2.0% over: at the tolerance
    assert [e.type for e in events] == ["bill_entered", "bill_matched"]
    assert gl_lines(ledger, "BILL-000001") == [("2050", 25_000, "V1"), ("5900", 500, "V1"),
                                               ("2000", -25_500, "V1")]
    consistent(ledger)


def test_a_price_below_the_po_credits_the_variance(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger)
    receive(ledger, po, (2, 4))
    bill(ledger, po, "INV-3", (2, 4, "175.00"))
    assert gl_lines(ledger, "BILL-000001") == [("2050", 72_000, "V1"), ("5900", -2_000, "V1"),
                                               ("2000", -70_000, "V1")]
    consistent(ledger)


def test_a_price_beyond_tolerance_holds_the_bill(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger)
    receive(ledger, po, (1, 10))
    events = bill(ledger, po, "INV-4", (1, 10, "25.51"))  # one cent beyond 2%
    assert [e.type for e in events] == ["bill_entered", "bill_matched", "bill_held"]
    held = events[2]
    assert isinstance(held, ev.BillHeld)
    assert held.reasons == (ev.HoldReason(code="price", line=1, detail=(
        "line 1 TONER billed at 25.51, PO price 25.00")),)
    # the bill is in payables all the same: posted, with its variance
    assert gl_lines(ledger, "BILL-000001") == [("2050", 25_000, "V1"), ("5900", 510, "V1"),
                                               ("2000", -25_510, "V1")]
    doc = q.document(ledger.store, "bill_hold", "BILL-000001")
    assert doc is not None and (doc["status"], doc["party"], doc["reference"]) == (
        "held", "V1", "line 1 TONER billed at 25.51, PO price 25.00")
    consistent(ledger)


def test_billing_more_than_received_beyond_tolerance_holds_the_bill(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger, lines=(c.PurchaseOrderLineIn(item="PAPER", quantity=100,
                                                    unit_price="4.00"),))
    receive(ledger, po, (1, 80))
    events = bill(ledger, po, "INV-5", (1, 84, "4.00"))  # 5% over 80: at the tolerance
    assert [e.type for e in events] == ["bill_entered", "bill_matched"]
    events = bill(ledger, po, "INV-6", (1, 1, "4.00"))  # 85 billed in all, 80 received
    assert [e.type for e in events] == ["bill_entered", "bill_matched", "bill_held"]
    matched = events[1]
    assert isinstance(matched, ev.BillMatched)
    assert matched.lines == (ev.MatchedLine(line=1, item="PAPER", quantity=1, unit_price=400,
                                            po_unit_price=400, received=80, billed_before=84),)
    assert matched.holds == (ev.HoldReason(code="quantity", line=1, detail=(
        "line 1 PAPER billed 85 in all, 80 received")),)
    # billed before received: GRNI has a debit balance of the 5 units not yet received
    assert q.account_balance(ledger.store, "2050") == 2_000
    assert q.grni_open(ledger.store) == -2_000
    consistent(ledger)


def test_without_a_tolerance_policy_any_variance_holds(ledger: Ledger) -> None:
    set_up(ledger, policies=Policies())
    po = issue(ledger)
    receive(ledger, po, (1, 10))
    events = bill(ledger, po, "INV-7", (1, 10, "25.01"))
    assert [e.type for e in events][-1] == "bill_held"
    events = bill(ledger, po, "INV-8", (2, 1, "180.00"))  # nothing of line 2 received
    held = events[-1]
    assert isinstance(held, ev.BillHeld) and held.reasons[0].code == "quantity"


@pytest.mark.parametrize(("lines", "code", "match", "field"), [
    (((5, 1, "1.00"),), "unknown_po_line", "has no line 5 (lines 1 to 2)", "lines[0].line"),
    (((1, 1, "1.00"), (1, 1, "1.00")), "duplicate_line", "names PO line 1 again",
     "lines[1].line"),
    (((1, 1, "0.00"),), "non_positive_amount", "lines[0].unit_price must be greater than zero",
     "lines[0].unit_price"),
])
def test_a_bad_matched_bill_is_refused(ledger: Ledger, lines: tuple[tuple[int, int, str], ...],
                                       code: str, match: str, field: str) -> None:
    set_up(ledger)
    po = issue(ledger)
    assert_rejected(ledger, c.EnterMatchedBill(po_id=po, vendor_invoice_number="X",
                                               entry_date=DAY, lines=tuple(
        c.MatchedBillLineIn(line=n, quantity=k, unit_price=p) for n, k, p in lines)), code,
        match=match, field=field)


def test_a_matched_bill_number_is_new_for_its_vendor(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger)
    receive(ledger, po, (1, 10))
    ledger.execute(c.EnterBill(vendor_id="V1", vendor_invoice_number="INV-9", entry_date=DAY,
                               lines=(c.BillLineIn(description="x", amount="1.00"),)), **CLERK)
    assert_rejected(ledger, c.EnterMatchedBill(po_id=po, vendor_invoice_number=" inv-9 ",
                                               entry_date=DAY, lines=(c.MatchedBillLineIn(
                                                   line=1, quantity=1, unit_price="25.00"),)),
                    "duplicate_vendor_invoice", match="vendor V1 invoice 'inv-9' is already "
                    "entered", field="vendor_invoice_number")


def test_a_matched_bill_needs_a_known_po_and_an_open_period(ledger: Ledger) -> None:
    set_up(ledger)
    po = issue(ledger)
    line = (c.MatchedBillLineIn(line=1, quantity=1, unit_price="25.00"),)
    assert_rejected(ledger, c.EnterMatchedBill(po_id="PO-404", vendor_invoice_number="A",
                                               entry_date=DAY, lines=line),
                    "unknown_purchase_order", field="po_id")
    assert_rejected(ledger, c.EnterMatchedBill(po_id=po, vendor_invoice_number="A",
                                               entry_date=date(2026, 5, 4), lines=line),
                    "no_open_period", field="entry_date")


# --- holds: no payment while held; released by an approver ---------------------------------


def _held_bill(ledger: Ledger) -> str:
    set_up(ledger)
    po = issue(ledger)
    receive(ledger, po, (1, 10))
    bill(ledger, po, "INV-H", (1, 10, "30.00"))
    ledger.execute(c.ApproveBill(bill_id="BILL-000001"), **CLERK)
    return "BILL-000001"


def test_a_held_bill_cannot_be_paid(ledger: Ledger) -> None:
    bid = _held_bill(ledger)
    why = ("bill BILL-000001 is on hold (line 1 TONER billed at 30.00, PO price 25.00); it "
           "cannot be paid until an approver releases the hold (ReleaseBillHold)")
    assert_rejected(ledger, c.PayVendor(vendor_id="V1", bank_account_id=BANK, applications=(
        c.BillPayment(bill_id=bid, amount="300.00"),)), "bill_on_hold", match=why,
        field="applications[0].bill_id")
    assert_rejected(ledger, c.RunPayments(bank_account_id=BANK, bill_ids=(bid,)),
                    "bill_on_hold", match=why, field="applications[0].bill_id")
    # a run of what is due leaves the held bill out: here nothing else is due
    assert_rejected(ledger, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 12, 31)),
                    "nothing_to_pay", match="no approved open bill is due by 2026-12-31")


def test_a_held_bill_is_not_paid_with_a_discount_either(ledger: Ledger) -> None:
    set_up(ledger)
    ledger.execute_batch([Submission(x, **SYS) for x in
                          chart_commands("services-with-terms")[-2:-1]])  # 4950
    po = issue(ledger)
    receive(ledger, po, (1, 10))
    bill(ledger, po, "INV-D", (1, 10, "30.00"))
    # a matched bill carries no early-payment terms (EnterBill sets them): no discount
    assert_rejected(ledger, c.PayBillWithDiscount(bill_id="BILL-000001", bank_account_id=BANK,
                                                  discount="1.00"), "no_discount_terms")


def test_a_run_pays_the_released_and_the_matched_but_not_the_held(ledger: Ledger) -> None:
    bid = _held_bill(ledger)
    po2 = issue(ledger, vendor="V2")
    receive(ledger, po2, (2, 4))
    bill(ledger, po2, "V2-1", (2, 4, "180.00"))
    ledger.execute(c.ApproveBill(bill_id="BILL-000002"), **CLERK)
    done = ledger.execute(c.RunPayments(bank_account_id=BANK, due_by=date(2026, 12, 31)),
                          **CLERK)
    run = ev.decode_event(done[0].type, done[0].schema_version, done[0].payload)
    assert isinstance(run, ev.PaymentRunCreated)
    assert [(p.vendor_id, p.amount) for p in run.payments] == [("V2", 72_000)]
    ledger.execute(c.ReleaseBillHold(bill_id=bid, reason="price rise agreed by purchasing"),
                   **CONTROLLER)
    done = ledger.execute(c.RunPayments(bank_account_id=BANK, due_by=date(2026, 12, 31)),
                          **CLERK)
    run = ev.decode_event(done[0].type, done[0].schema_version, done[0].payload)
    assert isinstance(run, ev.PaymentRunCreated)
    assert [(p.vendor_id, p.amount) for p in run.payments] == [("V1", 30_000)]
    consistent(ledger)


def test_an_approver_releases_a_hold_with_a_reason(ledger: Ledger) -> None:
    bid = _held_bill(ledger)
    assert_rejected(ledger, c.ReleaseBillHold(bill_id=bid, reason="ok"), "forbidden_for_role",
                    match="agent:turn-1 (role clerk) may not release a bill's matching hold; "
                          "needs role controller or system")
    done = ledger.execute(c.ReleaseBillHold(bill_id=bid, reason="  price rise agreed  "),
                          **CONTROLLER)
    released = ev.decode_event(done[0].type, done[0].schema_version, done[0].payload)
    assert released == ev.BillHoldReleased(bill_id=bid, vendor_id="V1",
                                           reason="price rise agreed",
                                           released_by_role="controller")
    assert done[0].actor == "human:controller"
    doc = q.document(ledger.store, "bill_hold", bid)
    assert doc is not None and doc["status"] == "released"
    assert q.documents(ledger.store, kind="bill_hold", status="held") == []
    ledger.execute(c.PayVendor(vendor_id="V1", bank_account_id=BANK, applications=(
        c.BillPayment(bill_id=bid, amount="300.00"),)), **CLERK)
    assert_rejected(ledger, c.ReleaseBillHold(bill_id=bid, reason="again"), "already_released",
                    match="bill BILL-000001's hold was already released", **CONTROLLER)
    consistent(ledger)


def test_only_a_held_bill_can_be_released(ledger: Ledger) -> None:
    set_up(ledger)
    ledger.execute(c.EnterBill(vendor_id="V1", vendor_invoice_number="P-1", entry_date=DAY,
                               lines=(c.BillLineIn(description="x", amount="1.00"),)), **CLERK)
    assert_rejected(ledger, c.ReleaseBillHold(bill_id="BILL-000001", reason="x"), "not_on_hold",
                    match="bill BILL-000001 is not on hold", field="bill_id", **CONTROLLER)
    assert_rejected(ledger, c.ReleaseBillHold(bill_id="BILL-404", reason="x"), "unknown_bill",
                    field="bill_id", **CONTROLLER)


def test_a_release_needs_a_reason() -> None:
    with pytest.raises(ValidationError, match="reason"):
        c.ReleaseBillHold(bill_id="BILL-000001", reason="   ")


def test_a_credit_note_may_reduce_a_held_bill(ledger: Ledger) -> None:
    bid = _held_bill(ledger)
    ledger.execute(c.RecordVendorCredit(vendor_id="V1", vendor_credit_number="CN-1",
                                        entry_date=DAY, amount="50.00", account="5900"), **CLERK)
    ledger.execute(c.ApplyVendorCredit(credit_id="VC-000001", bill_id=bid, amount="50.00"),
                   **CLERK)
    doc = q.document(ledger.store, "bill", bid)
    assert doc is not None and doc["open_amount"] == 25_000
    consistent(ledger)


def test_the_books_folded_afresh_hold_the_same_purchasing_state(
        ledger: Ledger, store_target: tuple[str, str | None]) -> None:
    _held_bill(ledger)
    live = ledger.books.purchasing
    target, schema = store_target
    with Ledger.open(target, schema=schema) as fresh:
        again = fresh.books.purchasing
        assert again.orders == live.orders
        assert again.holds == live.holds
        assert again.bill_orders == live.bill_orders
        assert again.receipts == live.receipts


def test_the_old_policies_encode_as_before() -> None:
    """Unset tolerances stay out of the payload (existing logs keep their hashes)."""
    assert "match_price_tolerance_bp" not in Policies().model_dump()
    assert Policies(match_price_tolerance_bp=0).model_dump()["match_price_tolerance_bp"] == 0
    with pytest.raises(ValidationError):
        Policies(match_quantity_tolerance_bp=-1)
