"""Read-side queries on both backends: balances, open items, aging, documents, as-of answers."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from typing import Any

import pytest

from erp import commands as c
from erp import queries as q
from erp.errors import CommandRejected
from erp.ledger import Ledger, Submission
from erp.postings import post
from runs.bench.workload import generate_workload
from tests.erp.helpers import BANK, CLERK, CONTROLLER, DAY, set_up_company

SEED, DAYS = 3, 40  # about 2,800 events of the generated workload
SYSTEM_FEED = {"actor": "system:bank-feed", "role": "system", "business_date": DAY}


def run_workload(ledger: Ledger, *, seed: int = SEED, days: int = DAYS) -> list[date]:
    """Execute the generated company's business; the business days it covered."""
    covered = []
    for batch in generate_workload(seed, days=days):
        ledger.execute_batch(batch.submissions)
        covered.append(batch.day)
    return covered


def when(day: date) -> dict[str, Any]:
    """A clerk acting on ``day``."""
    return {**CLERK, "business_date": day}


def invoice(ledger: Ledger, invoice_id: str, amount: str, *, customer: str = "C1",
            entry: date = DAY, due: date | None = None) -> None:
    ledger.execute(c.IssueInvoice(invoice_id=invoice_id, customer_id=customer, entry_date=entry,
                                  due_on=due, lines=(c.InvoiceLineIn(description="Work",
                                                                     unit_price=amount),)),
                   **when(entry))


def receive(ledger: Ledger, receipt_id: str, amount: str, *, customer: str | None = "C1",
            entry: date = DAY) -> None:
    ledger.execute(c.RecordReceipt(receipt_id=receipt_id, customer_id=customer,
                                   bank_account_id=BANK, entry_date=entry, amount=amount),
                   **when(entry))


def apply(ledger: Ledger, receipt_id: str, invoice_id: str, amount: str, *,
          entry: date = DAY) -> None:
    ledger.execute(c.ApplyReceipt(receipt_id=receipt_id, invoice_id=invoice_id, amount=amount,
                                  entry_date=entry), **when(entry))


def balances(rows: list[q.TrialBalanceRow]) -> dict[str, int]:
    return {r.account: r.balance for r in rows}


# --- trial balance -------------------------------------------------------------------------


def test_trial_balance_sums_to_zero(ledger: Ledger) -> None:
    days = run_workload(ledger)
    store = ledger.store
    for as_of in (None, days[0], days[len(days) // 2], days[-1]):
        rows = q.trial_balance(store, as_of=as_of)
        assert rows, as_of
        assert sum(r.balance for r in rows) == 0, as_of
        assert sum(r.debit for r in rows) == sum(r.credit for r in rows) > 0
        assert all(r.debit >= 0 and r.credit >= 0 and (r.debit == 0 or r.credit == 0)
                   for r in rows)
    ar = {r.account: r for r in q.trial_balance(store)}["1200"]
    assert (ar.name, ar.account_type) == ("Accounts receivable", "asset")


def test_trial_balance_as_of_a_date_is_the_fold_of_earlier_postings(ledger: Ledger) -> None:
    days = run_workload(ledger)
    mid = days[len(days) // 2]
    expected: dict[str, int] = defaultdict(int)
    for e in ledger.store.read(realm="erp"):
        for p in post(e.event):
            if e.event.entry_date <= mid:
                expected[p.account] += p.amount
    assert balances(q.trial_balance(ledger.store, as_of=mid)) == {
        a: v for a, v in expected.items() if v}
    assert q.account_balance(ledger.store, "1200", as_of=mid) == expected["1200"]
    assert q.account_balance(ledger.store, "1200") != expected["1200"]


def test_trial_balance_as_of_a_date_excludes_later_entries(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "1000.00", entry=date(2026, 3, 2))
    invoice(ledger, "INV-2", "250.00", entry=date(2026, 4, 10))
    # Entered last, dated first: the date decides, not the order of entry.
    invoice(ledger, "INV-0", "40.00", entry=date(2026, 2, 27))
    store = ledger.store
    assert q.trial_balance(store, as_of=date(2026, 2, 1)) == []
    assert balances(q.trial_balance(store, as_of=date(2026, 2, 28))) == {
        "1200": 4000, "4000": -4000}
    assert balances(q.trial_balance(store, as_of=date(2026, 3, 31))) == {
        "1000": 1000000, "3900": -1000000, "1200": 104000, "4000": -104000}
    assert balances(q.trial_balance(store, as_of=date(2026, 4, 10))) == {
        "1000": 1000000, "3900": -1000000, "1200": 129000, "4000": -129000}
    assert q.trial_balance(store, as_of=date(2026, 4, 10)) == q.trial_balance(store)


# --- as of a log position ----------------------------------------------------------------


def books_now(ledger: Ledger, day: date) -> dict[str, Any]:
    """Everything the queries say right now."""
    s = ledger.store
    return {
        "tb": q.trial_balance(s),
        "ties": q.control_ties(s),
        "ar": q.open_items(s, "ar"),
        "ap": q.open_items(s, "ap"),
        "cash": q.open_items(s, "unapplied_cash"),
        "aging": q.aging(s, "ar", as_of=day),
        "subledgers": q.subledger_totals(s),
    }


def books_at(ledger: Ledger, position: int, day: date) -> dict[str, Any]:
    """What the queries say about ``position``."""
    s, p = ledger.store, position
    return {
        "tb": q.trial_balance(s, position=p),
        "ties": q.control_ties(s, position=p),
        "ar": q.open_items(s, "ar", position=p),
        "ap": q.open_items(s, "ap", position=p),
        "cash": q.open_items(s, "unapplied_cash", position=p),
        "aging": q.aging(s, "ar", as_of=day, position=p),
        "subledgers": q.subledger_totals(s, position=p),
    }


def test_as_of_a_position_reproduces_the_books_at_that_moment(ledger: Ledger) -> None:
    snapshots: list[tuple[int, date, dict[str, Any]]] = []
    for n, batch in enumerate(generate_workload(SEED, days=25)):
        ledger.execute_batch(batch.submissions)
        if n in (0, 1, 9, 17):
            snapshots.append((ledger.position, batch.day, books_now(ledger, batch.day)))
    assert len({p for p, _, _ in snapshots}) == 4
    for position, day, then in snapshots:
        now = books_at(ledger, position, day)
        for key in then:
            assert now[key] == then[key], f"{key} at position {position}"
    assert books_at(ledger, ledger.position, day) == books_now(ledger, day)


def test_as_of_a_position_inside_a_command(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "1000.00")
    # One command, two events: the receipt and its statement-line match.
    ledger.execute(c.ImportStatementLines(bank_account_id=BANK, lines=(c.StatementLineIn(
        line_id="SL-1", entry_date=DAY, amount="-15.00"),)), **CLERK)
    out = ledger.execute(c.RecordBankFee(fee_id="FEE-1", bank_account_id=BANK, entry_date=DAY,
                                         amount="15.00", line_id="SL-1"), **CLERK)
    assert [e.type for e in out] == ["bank_fee_recorded", "statement_line_matched"]
    fee_at = out[0].position
    assert q.document(ledger.store, "statement_line", "SL-1", position=fee_at)["status"] == (  # type: ignore[index]
        "unmatched")
    assert q.document(ledger.store, "statement_line", "SL-1")["status"] == "matched"  # type: ignore[index]
    assert q.account_balance(ledger.store, "6800", position=fee_at - 1) == 0
    assert q.account_balance(ledger.store, "6800", position=fee_at) == 1500


def test_as_of_a_position_the_receipt_had_no_customer_yet(ledger: Ledger) -> None:
    set_up_company(ledger)
    receive(ledger, "R-1", "50.00", customer=None)
    before = ledger.position
    ledger.execute(c.AssignReceiptCustomer(receipt_id="R-1", customer_id="C2"), **CLERK)
    assert [i.party for i in q.open_items(ledger.store, "unapplied_cash")] == ["C2"]
    assert [i.party for i in q.open_items(ledger.store, "unapplied_cash",
                                          position=before)] == [None]


# --- open items and aging ----------------------------------------------------------------


def test_open_items_of_each_subledger(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "1000.00")                       # partly paid
    invoice(ledger, "INV-2", "300.00", customer="C2")         # untouched
    invoice(ledger, "INV-3", "80.00")                         # paid in full
    receive(ledger, "R-1", "1100.00")
    apply(ledger, "R-1", "INV-1", "400.00")
    apply(ledger, "R-1", "INV-3", "80.00")
    receive(ledger, "R-2", "25.00", customer=None)            # not identified yet
    receive(ledger, "R-3", "10.00", customer="C2")
    apply(ledger, "R-3", "INV-2", "10.00")                    # fully applied
    ledger.execute(c.EnterBill(bill_id="BILL-1", vendor_id="V1", vendor_invoice_number="A-1",
                               entry_date=DAY, lines=(c.BillLineIn(description="Rent",
                                                                   amount="900.00"),)), **CLERK)
    ledger.execute(c.EnterBill(bill_id="BILL-2", vendor_id="V1", vendor_invoice_number="A-2",
                               entry_date=DAY, lines=(c.BillLineIn(description="Tools",
                                                                   amount="120.00"),)), **CLERK)
    ledger.execute(c.ApproveBill(bill_id="BILL-1"), **CONTROLLER)
    ledger.execute(c.PayVendor(payment_id="PAY-1", vendor_id="V1", bank_account_id=BANK,
                               entry_date=DAY, applications=(c.BillPayment(
                                   bill_id="BILL-1", amount="900.00"),)), **CLERK)
    store = ledger.store

    ar = q.open_items(store, "ar")
    assert [(i.doc_kind, i.doc_id, i.party, i.account, i.open_amount) for i in ar] == [
        ("invoice", "INV-1", "C1", "1200", 60000),
        ("invoice", "INV-2", "C2", "1200", 29000),
    ]
    assert ar[0].doc_date == "2026-03-02" and ar[0].due_on == "2026-04-01"
    cash = q.open_items(store, "unapplied_cash")
    assert sorted((i.doc_id, i.party, i.account, i.open_amount) for i in cash) == [
        ("R-1", "C1", "2150", 62000), ("R-2", None, "2150", 2500)]
    ap = q.open_items(store, "ap")
    assert [(i.doc_kind, i.doc_id, i.party, i.account, i.open_amount) for i in ap] == [
        ("bill", "BILL-2", "V1", "2000", 12000)]
    assert q.open_items(store, "ar", party="C2") == ar[1:]
    assert q.open_items(store, "ar", party="C9") == []
    assert q.open_items(store, "no-such-ledger") == []
    # The subledger open items and the document states agree.
    for item in (*ar, *cash, *ap):
        doc = q.document(store, item.doc_kind, item.doc_id)
        assert doc is not None and doc["open_amount"] == item.open_amount, item


def test_open_items_come_in_the_same_order_on_both_backends(ledger: Ledger) -> None:
    set_up_company(ledger)
    receive(ledger, "R-1", "10.00", customer="C2")
    receive(ledger, "R-2", "20.00", customer=None)
    receive(ledger, "R-3", "30.00", customer="C1")
    ledger.execute(c.RecordVendorCredit(credit_id="VC-1", vendor_id="V1",
                                        vendor_credit_number="CN-1", entry_date=DAY,
                                        amount="5.00"), **CLERK)
    ledger.execute(c.EnterBill(bill_id="BILL-9", vendor_id="V1", vendor_invoice_number="A-1",
                               entry_date=DAY, lines=(c.BillLineIn(description="Rent",
                                                                   amount="900.00"),)), **CLERK)
    # By party, then due date, then id; a missing party or due date sorts last.
    assert [(i.doc_id, i.party) for i in q.open_items(ledger.store, "unapplied_cash")] == [
        ("R-3", "C1"), ("R-1", "C2"), ("R-2", None)]
    assert [(i.doc_id, i.open_amount) for i in q.open_items(ledger.store, "ap")] == [
        ("BILL-9", 90000), ("VC-1", -500)]


def test_open_items_agree_with_the_documents(ledger: Ledger) -> None:
    run_workload(ledger)
    store = ledger.store
    for ledger_name, kind in (("ar", "invoice"), ("ap", "bill"), ("unapplied_cash", "receipt")):
        items = {i.doc_id: i.open_amount for i in q.open_items(store, ledger_name)}
        docs = {d["doc_id"]: d["open_amount"] for d in q.documents(store, kind=kind)
                if d["open_amount"]}
        assert items == docs, ledger_name
        assert items or ledger_name == "unapplied_cash"  # the workload applies every receipt


def test_counts_are_what_the_documents_and_lines_list(ledger: Ledger) -> None:
    """The database's counts and latest date agree with the rows ``documents`` and
    ``statement_lines`` list (the prompt's facts come from them)."""
    days = run_workload(ledger)
    store = ledger.store
    for kind in ("invoice", "receipt", "bill", "payment"):
        docs = q.documents(store, kind=kind)
        assert q.count_documents(store, kind) == len(docs)
        assert q.count_documents(store, kind, open_only=True) == sum(
            1 for d in docs if d["open_amount"] > 0)
        for statuses in (("approved", "partially_paid"), ("paid",), ()):
            assert q.count_documents(store, kind, statuses=statuses) == sum(
                1 for d in docs if d["status"] in statuses)
        for day in (days[0], days[len(days) // 2], days[-1]):
            dated = [d["doc_date"] for d in docs if d["doc_date"] and d["doc_date"] <= str(day)]
            assert q.latest_document_date(store, kind, through=day) == (
                max(dated) if dated else None)
    assert q.count_documents(store, "receipt") > 0
    account = q.statement_lines(store)[0]["bank_account_id"]
    ledger.execute(c.ImportStatementLines(bank_account_id=account, lines=(c.StatementLineIn(
        line_id="L-OPEN-1", entry_date=days[-1], amount=-250, description="FEE", reference="",
        counterparty="", bank_ref="L-OPEN-1"),)), **when(days[-1]))  # one left unmatched
    lines = q.statement_lines(store)
    assert {x["status"] for x in lines} == {"matched", "unmatched"}
    for status in ("unmatched", "matched", None):
        assert q.count_statement_lines(store, status=status) == sum(
            1 for x in lines if status is None or x["status"] == status)


AS_OF = date(2026, 6, 15)


def test_aging_puts_each_invoice_in_its_bucket(ledger: Ledger) -> None:
    set_up_company(ledger)
    # (invoice, amount, days past due as of AS_OF) for C1, all issued on DAY.
    plan = [("A", "100.00", 0), ("B", "200.00", 1), ("C", "300.00", 30), ("D", "400.00", 31),
            ("E", "500.00", 60), ("F", "600.00", 61), ("G", "700.00", 90), ("H", "800.00", 91),
            ("P", "55.00", 105)]
    for inv, amount, late in plan:
        invoice(ledger, f"INV-{inv}", amount, due=AS_OF - timedelta(days=late))
    invoice(ledger, "INV-I", "900.00", customer="C2", due=AS_OF + timedelta(days=10))
    receive(ledger, "R-1", "105.00", entry=date(2026, 3, 20))
    apply(ledger, "R-1", "INV-B", "50.00", entry=date(2026, 3, 20))     # B: 150.00 left
    apply(ledger, "R-1", "INV-P", "55.00", entry=date(2026, 3, 20))     # P: paid, gone
    rows = q.aging(ledger.store, "ar", as_of=AS_OF)
    assert q.AGING_BUCKETS == ("current", "1-30", "31-60", "61-90", "over_90")
    assert rows == [
        q.AgingRow("C1", (10000, 45000, 90000, 130000, 80000)),
        q.AgingRow("C2", (90000, 0, 0, 0, 0)),
    ]
    assert rows[0].total == 355000
    assert sum(r.total for r in rows) == sum(i.open_amount for i in q.open_items(
        ledger.store, "ar", as_of=AS_OF))


def test_aging_as_of_an_earlier_date_ignores_later_documents(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "1000.00", due=date(2026, 3, 5))
    invoice(ledger, "INV-2", "200.00", entry=date(2026, 4, 1), due=date(2026, 4, 1))
    receive(ledger, "R-1", "400.00", entry=date(2026, 3, 25))
    apply(ledger, "R-1", "INV-1", "400.00", entry=date(2026, 3, 25))
    store = ledger.store
    def aged(day: date) -> list[q.AgingRow]:
        return q.aging(store, "ar", as_of=day)

    assert aged(date(2026, 3, 1)) == []
    assert aged(date(2026, 3, 5)) == [q.AgingRow("C1", (100000, 0, 0, 0, 0))]
    # 15 days late, not yet paid down, INV-2 not issued yet.
    assert aged(date(2026, 3, 20)) == [q.AgingRow("C1", (0, 100000, 0, 0, 0))]
    assert aged(date(2026, 4, 1)) == [q.AgingRow("C1", (20000, 60000, 0, 0, 0))]
    # INV-1 61 days past due, INV-2 34.
    assert aged(date(2026, 5, 5)) == [q.AgingRow("C1", (0, 0, 20000, 60000, 0))]
    # Receipts have no due date: unapplied cash is always current.
    assert q.aging(store, "unapplied_cash", as_of=date(2026, 12, 31)) == []
    receive(ledger, "R-2", "70.00", customer="C2")
    assert q.aging(store, "unapplied_cash", as_of=date(2026, 12, 31)) == [
        q.AgingRow("C2", (7000, 0, 0, 0, 0))]


# --- control accounts ----------------------------------------------------------------------


def test_control_ties_have_no_difference(ledger: Ledger) -> None:
    days = run_workload(ledger)
    store = ledger.store
    ties = q.control_ties(store)
    assert {t.account: t.control for t in ties} == {
        "1000": "bank", "1010": "bank", "1200": "ar", "2000": "ap", "2150": "unapplied_cash"}
    assert [t.difference for t in ties] == [0] * 5
    for t in ties:
        assert t.gl_balance == t.subledger_total
    by = {t.account: t for t in ties}
    assert by["1200"].gl_balance > 0 and by["2000"].gl_balance > 0
    assert by["1000"].gl_balance == q.account_balance(store, "1000")
    assert by["2000"].gl_balance == -q.account_balance(store, "2000")
    for as_of in days[::7]:
        assert all(t.difference == 0 for t in q.control_ties(store, as_of=as_of)), as_of
    for position in range(1, ledger.position, 397):
        assert all(t.difference == 0 for t in q.control_ties(store, position=position))


def test_control_ties_show_a_manual_entry_to_a_control_account(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "1000.00")
    assert all(t.difference == 0 for t in q.control_ties(ledger.store))
    # A controller may post to AR by journal; no document moves, so the tie breaks.
    ledger.execute(c.PostJournalEntry(entry_id="JE-1", entry_date=DAY, memo="plug", lines=(
        c.JournalLineIn(account="1200", debit="12.34"),
        c.JournalLineIn(account="4000", credit="12.34"))), **CONTROLLER)
    ar = {t.account: t for t in q.control_ties(ledger.store)}["1200"]
    assert (ar.gl_balance, ar.subledger_total, ar.difference) == (101234, 100000, 1234)
    assert q.control_ties(ledger.store, as_of=DAY - timedelta(days=1)) == [
        q.ControlTie(t.account, t.name, t.control, 0, 0) for t in q.control_ties(ledger.store)]


# --- documents -----------------------------------------------------------------------------


def test_document_as_of_gives_the_earlier_status(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "1000.00", entry=date(2026, 3, 2))
    receive(ledger, "R-1", "300.00", entry=date(2026, 3, 20))
    apply(ledger, "R-1", "INV-1", "300.00", entry=date(2026, 3, 20))
    store = ledger.store
    now = q.document(store, "invoice", "INV-1")
    assert now is not None
    assert (now["status"], now["open_amount"], now["total"]) == ("partially_paid", 70000, 100000)
    earlier = q.document(store, "invoice", "INV-1", as_of=date(2026, 3, 10))
    assert earlier is not None
    assert (earlier["status"], earlier["open_amount"]) == ("open", 100000)
    assert earlier["last_position"] < now["last_position"]
    assert q.document(store, "invoice", "INV-1", as_of=date(2026, 3, 20)) == now
    assert q.document(store, "invoice", "INV-1", as_of=date(2026, 3, 1)) is None
    assert q.document(store, "receipt", "R-1", as_of=date(2026, 3, 19)) is None
    assert q.document(store, "invoice", "INV-404") is None
    # By position: the receipt existed, the application did not.
    at = q.document(store, "invoice", "INV-1", position=now["last_position"] - 1)
    assert at is not None and at["status"] == "open"


def test_document_as_of_counts_a_back_dated_payment_by_its_date(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "1000.00", entry=date(2026, 3, 2))
    receive(ledger, "R-1", "300.00", entry=date(2026, 3, 20))
    apply(ledger, "R-1", "INV-1", "300.00", entry=date(2026, 3, 20))
    # Entered later, dated earlier.
    receive(ledger, "R-2", "200.00", entry=date(2026, 3, 5))
    apply(ledger, "R-2", "INV-1", "200.00", entry=date(2026, 3, 5))
    store = ledger.store
    for day, status, open_ in ((date(2026, 3, 4), "open", 100000),
                               (date(2026, 3, 10), "partially_paid", 80000),
                               (date(2026, 3, 25), "partially_paid", 50000)):
        doc = q.document(store, "invoice", "INV-1", as_of=day)
        assert doc is not None
        assert (doc["status"], doc["open_amount"]) == (status, open_), day
        items = q.open_items(store, "ar", as_of=day)
        assert [i.open_amount for i in items] == [open_], day
    r1 = q.document(store, "receipt", "R-1", as_of=date(2026, 3, 10))
    assert r1 is None
    r2 = q.document(store, "receipt", "R-2", as_of=date(2026, 3, 10))
    assert r2 is not None and (r2["status"], r2["open_amount"]) == ("applied", 0)


def test_document_as_of_counts_back_dated_bill_payments_and_credits(ledger: Ledger) -> None:
    set_up_company(ledger)
    ledger.execute(c.EnterBill(bill_id="BILL-1", vendor_id="V1", vendor_invoice_number="A-1",
                               entry_date=DAY, lines=(c.BillLineIn(description="Rent",
                                                                   amount="900.00"),)), **CLERK)
    ledger.execute(c.ApproveBill(bill_id="BILL-1"), **CONTROLLER)
    ledger.execute(c.RecordVendorCredit(credit_id="VC-1", vendor_id="V1",
                                        vendor_credit_number="CN-1", entry_date=DAY,
                                        amount="100.00"), **CLERK)
    for pid, amount, day in (("PAY-1", "300.00", date(2026, 3, 20)),
                             ("PAY-2", "200.00", date(2026, 3, 5))):
        ledger.execute(c.PayVendor(payment_id=pid, vendor_id="V1", bank_account_id=BANK,
                                   entry_date=day, applications=(c.BillPayment(
                                       bill_id="BILL-1", amount=amount),)), **when(day))
    ledger.execute(c.ApplyVendorCredit(credit_id="VC-1", bill_id="BILL-1", amount="100.00",
                                       entry_date=date(2026, 3, 25)), **CLERK)
    store = ledger.store

    def state(kind: str, doc_id: str, day: date) -> tuple[str, int]:
        doc = q.document(store, kind, doc_id, as_of=day)
        assert doc is not None
        return doc["status"], doc["open_amount"]

    assert state("bill", "BILL-1", date(2026, 3, 4)) == ("approved", 90000)
    assert state("bill", "BILL-1", date(2026, 3, 10)) == ("partially_paid", 70000)
    assert state("bill", "BILL-1", date(2026, 3, 20)) == ("partially_paid", 40000)
    assert state("bill", "BILL-1", date(2026, 3, 25)) == ("partially_paid", 30000)
    assert state("vendor_credit", "VC-1", date(2026, 3, 20)) == ("open", 10000)
    assert state("vendor_credit", "VC-1", date(2026, 3, 25)) == ("applied", 0)


def test_documents_filter_by_kind_status_and_party(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "10.00")
    invoice(ledger, "INV-2", "20.00", customer="C2")
    receive(ledger, "R-1", "10.00")
    apply(ledger, "R-1", "INV-1", "10.00")
    store = ledger.store
    assert [d["doc_id"] for d in q.documents(store, kind="invoice")] == ["INV-1", "INV-2"]
    assert [d["doc_id"] for d in q.documents(store, kind="invoice", status="paid")] == ["INV-1"]
    assert [(d["kind"], d["doc_id"]) for d in q.documents(store, party="C1")] == [
        ("invoice", "INV-1"), ("receipt", "R-1")]
    assert [d["doc_id"] for d in q.documents(store, kind="period")] == [
        "2026-02", "2026-03", "2026-04"]


# --- bank statement ------------------------------------------------------------------------


def test_statement_lines_unmatched(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "500.00")
    receive(ledger, "R-1", "500.00")
    d1, d2 = date(2026, 3, 3), date(2026, 3, 6)
    ledger.execute(c.ImportStatementLines(bank_account_id=BANK, lines=(
        c.StatementLineIn(line_id="SL-1", entry_date=d1, amount="500.00", reference="INV-1"),
        c.StatementLineIn(line_id="SL-2", entry_date=d1, amount="-9.95",
                          description="SERVICE CHARGE"),
        c.StatementLineIn(line_id="SL-3", entry_date=d2, amount="77.00", counterparty="??"),
    )), **{**SYSTEM_FEED, "business_date": d2})
    ledger.execute(c.MatchStatementLine(line_id="SL-1", targets=(
        c.MatchRef(kind="receipt", doc_id="R-1"),)), **when(date(2026, 3, 9)))
    store = ledger.store
    every = q.statement_lines(store)
    assert [(x["line_id"], x["status"], x["amount"]) for x in every] == [
        ("SL-1", "matched", 50000), ("SL-2", "unmatched", -995), ("SL-3", "unmatched", 7700)]
    assert every[0]["matched_to"] == '[["receipt","R-1",50000]]'
    assert [x["line_id"] for x in q.statement_lines(store, unmatched=True)] == ["SL-2", "SL-3"]
    assert [x["line_id"] for x in q.statement_lines(store, unmatched=True,
                                                    bank_account_id="B-OTHER")] == []
    # As of a date: later lines are not there yet, and the match had not happened.
    assert [x["line_id"] for x in q.statement_lines(store, unmatched=True, as_of=d1)] == [
        "SL-1", "SL-2"]
    assert [x["line_id"] for x in q.statement_lines(store, unmatched=True,
                                                    as_of=date(2026, 3, 9))] == ["SL-2", "SL-3"]


# --- audit trail ---------------------------------------------------------------------------


def test_audit_trail_filters_by_actor(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "100.00")
    ledger.execute(c.EnterBill(bill_id="BILL-1", vendor_id="V1", vendor_invoice_number="A-1",
                               entry_date=DAY, lines=(c.BillLineIn(description="Rent",
                                                                   amount="900.00"),)), **CLERK)
    ledger.execute(c.ApproveBill(bill_id="BILL-1"), **CONTROLLER)
    ledger.record("world", [("world:customer:C1", "payment_sent", '{"amount":100}')],
                  actor="counterparty:C1", business_date=DAY)
    store = ledger.store
    clerk = q.audit_trail(store, actor="agent:turn-1")
    assert [(r["command"], r["role"], r["type"], r["stream"]) for r in clerk] == [
        ("IssueInvoice", "clerk", "invoice_issued", "invoice:INV-1"),
        ("EnterBill", "clerk", "bill_entered", "bill:BILL-1"),
    ]
    assert all(r["business_date"] == "2026-03-02" for r in clerk)
    boss = q.audit_trail(store, actor="human:controller")
    assert [(r["command"], r["role"], r["type"]) for r in boss] == [
        ("ApproveBill", "controller", "bill_approved")]
    assert boss[0]["causation_id"] == f"cmd-{boss[0]['position']}"
    setup = q.audit_trail(store, actor="system:setup")
    assert {r["role"] for r in setup} == {"system"}
    assert setup[0]["command"] == "SetUpCompany"
    # The world realm is not the books: it never shows in the audit trail.
    everything = q.audit_trail(store)
    assert q.audit_trail(store, actor="counterparty:C1") == []
    assert len(everything) == store.count() - 1
    assert [r["position"] for r in everything] == sorted(r["position"] for r in everything)
    assert q.audit_trail(store, after=clerk[0]["position"], limit=2) == [clerk[1], boss[0]]


# --- rebuild -------------------------------------------------------------------------------


def test_rebuild_reproduces_every_read_table(ledger: Ledger) -> None:
    run_workload(ledger)
    live = q.table_snapshot(ledger.store)
    assert all(live[t] for t in ("gl_lines", "subledger", "documents", "doc_history",
                                 "statement_lines"))
    stats = ledger.rebuild()
    assert stats.events == ledger.store.count()
    assert q.table_snapshot(ledger.store) == live
    # The ledger keeps working on the rebuilt tables, and a second rebuild changes nothing.
    invoice(ledger, "INV-AFTER", "12.00", customer="C0001", entry=date(2026, 3, 2))
    again = q.table_snapshot(ledger.store)
    ledger.rebuild()
    assert q.table_snapshot(ledger.store) == again


def test_rebuild_after_a_rejected_batch(ledger: Ledger) -> None:
    set_up_company(ledger)
    invoice(ledger, "INV-1", "100.00")
    before = q.table_snapshot(ledger.store)
    bad = [Submission(c.RecordReceipt(receipt_id="R-1", customer_id="C1", bank_account_id=BANK,
                                      entry_date=DAY, amount="100.00"), **CLERK),
           Submission(c.ApplyReceipt(receipt_id="R-1", invoice_id="INV-1", amount="100.01"),
                      **CLERK)]
    with pytest.raises(CommandRejected):
        ledger.execute_batch(bad)
    assert q.table_snapshot(ledger.store) == before
    ledger.execute_batch(bad[:1])
    apply(ledger, "R-1", "INV-1", "100.00")
    live = q.table_snapshot(ledger.store)
    ledger.rebuild()
    assert q.table_snapshot(ledger.store) == live
    assert q.document(ledger.store, "invoice", "INV-1")["status"] == "paid"  # type: ignore[index]
