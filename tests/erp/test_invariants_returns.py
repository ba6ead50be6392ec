"""A deposit the bank returned unpaid (NSF), and the cash policy of payments.

``RecordReturnedDeposit`` re-opens every invoice its receipt paid and posts the bank's
reversal of the whole receipt (matched to the returned item's line when named): after it
the bank account, unapplied cash and receivables hold exactly what they held before the
deposit. ``Policies.minimum_bank_balance`` refuses a payment or a payment run that would
take the bank account's book balance below the minimum.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from erp import commands as c
from erp import events as ev
from erp import queries as q
from erp.events import Policies
from erp.ledger import Ledger, Submission
from erp.postings import Posting, post
from tests.erp.helpers import BANK, CLERK, CONTROLLER, assert_rejected, set_up_company

MAR = date(2026, 3, 5)


def run(ledger: Ledger, *cmds: c.Command, who: dict[str, Any] = CONTROLLER) -> list[Any]:
    """Execute commands in one batch; the decoded events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who) for x in cmds])]


def _invoice(iid: str, amount: str) -> c.IssueInvoice:
    return c.IssueInvoice(invoice_id=iid, customer_id="C1", entry_date=MAR,
                          lines=(c.InvoiceLineIn(description="consulting", unit_price=amount),))


@pytest.fixture
def paid(ledger: Ledger) -> Ledger:
    """C1's receipt R1 of 300.00 paid 200.00 of I1 and 100.00 of I2; the bank has since
    returned it (statement line SL-R, -300.00)."""
    set_up_company(ledger)
    run(ledger, _invoice("I1", "200.00"), _invoice("I2", "500.00"),
        c.RecordReceipt(receipt_id="R1", customer_id="C1", bank_account_id=BANK,
                        entry_date=MAR, amount="300.00"),
        c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="200.00"),
        c.ApplyReceipt(receipt_id="R1", invoice_id="I2", amount="100.00"),
        c.ImportStatementLines(bank_account_id=BANK, lines=(
            c.StatementLineIn(line_id="SL-D", entry_date=MAR, amount="300.00"),
            c.StatementLineIn(line_id="SL-R", entry_date=date(2026, 3, 9), amount="-300.00",
                              description="RETURNED ITEM NSF"))),
        c.MatchStatementLine(line_id="SL-D", targets=(c.MatchRef(kind="receipt", doc_id="R1"),)))
    return ledger


def test_a_returned_deposit_reopens_what_it_paid_and_posts_the_banks_reversal(
        paid: Ledger) -> None:
    before_bank = q.account_balance(paid.store, "1000")
    events = run(paid, c.RecordReturnedDeposit(return_id="RET-1", receipt_id="R1",
                                               line_id="SL-R", entry_date=date(2026, 3, 9)),
                 who=CLERK)
    assert [e.type for e in events] == ["application_reversed", "application_reversed",
                                        "deposit_returned", "statement_line_matched"]
    lines = [p for e in events for p in post(e)]
    assert lines == [
        Posting("1200", 20_000, "C1", "I1"), Posting("2150", -20_000, "C1", "R1"),
        Posting("1200", 10_000, "C1", "I2"), Posting("2150", -10_000, "C1", "R1"),
        Posting("2150", 30_000, "C1", "R1"), Posting("1000", -30_000, "C1", "RET-1"),
    ]
    assert q.account_balance(paid.store, "1000") == before_bank - 30_000
    assert q.account_balance(paid.store, "2150") == 0
    assert {d["doc_id"]: (d["open_amount"], d["status"]) for d in q.documents(
        paid.store, "invoice")} == {"I1": (20_000, "open"), "I2": (50_000, "open")}
    receipt = q.document(paid.store, "receipt", "R1")
    assert receipt is not None and (receipt["open_amount"], receipt["status"]) == (0, "returned")
    ret = q.document(paid.store, "return", "RET-1")
    assert ret is not None and (ret["total"], ret["status"], ret["party"]) == (
        30_000, "cleared", "C1")
    [line] = [x for x in q.statement_lines(paid.store) if x["line_id"] == "SL-R"]
    assert line["status"] == "matched"
    assert q.control_ties(paid.store)  # every control account still ties to its subledger
    assert all(t.difference == 0 for t in q.control_ties(paid.store))


def test_an_unapplied_receipt_returned_without_a_line_is_an_uncleared_bank_document(
        paid: Ledger) -> None:
    run(paid, c.ReverseApplication(receipt_id="R1", invoice_id="I1", amount="200.00"),
        c.ReverseApplication(receipt_id="R1", invoice_id="I2", amount="100.00"))
    [e] = run(paid, c.RecordReturnedDeposit(receipt_id="R1"), who=CLERK)
    assert isinstance(e, ev.DepositReturned)
    assert (e.return_id, e.amount, e.entry_date) == ("RET-000001", 30_000, MAR)
    ret = q.document(paid.store, "return", e.return_id)
    assert ret is not None and ret["status"] == "recorded"
    run(paid, c.MatchStatementLine(line_id="SL-R", targets=(
        c.MatchRef(kind="return", doc_id=e.return_id),)), who=CLERK)
    ret = q.document(paid.store, "return", e.return_id)
    assert ret is not None and ret["status"] == "cleared"


def test_a_returned_deposit_is_refused_twice_refunded_or_against_another_line(
        paid: Ledger) -> None:
    assert_rejected(paid, c.RecordReturnedDeposit(receipt_id="R9"), "unknown_receipt",
                    match="no receipt 'R9' in the books")
    assert_rejected(paid, c.RecordReturnedDeposit(receipt_id="R1", line_id="SL-X"),
                    "unknown_statement_line", match="no statement line 'SL-X'", field="line_id")
    assert_rejected(paid, c.RecordReturnedDeposit(receipt_id="R1", line_id="SL-D"),
                    "match_amount_mismatch",
                    match="statement line SL-D is 300.00; the return of receipt R1 is -300.00",
                    field="line_id")
    assert_rejected(paid, c.RecordReturnedDeposit(receipt_id="R1",
                                                  entry_date=date(2026, 3, 4)),
                    "dated_before_document",
                    match="the return is dated 2026-03-04, before the receipt (2026-03-05)",
                    field="entry_date")
    run(paid, c.RecordReturnedDeposit(receipt_id="R1", line_id="SL-R"), who=CLERK)
    assert_rejected(paid, c.RecordReturnedDeposit(receipt_id="R1"), "already_returned",
                    match="receipt R1 is already recorded as returned", field="receipt_id")
    run(paid, c.RecordReceipt(receipt_id="R2", customer_id="C1", bank_account_id=BANK,
                              entry_date=MAR, amount="50.00"),
        c.RefundCustomer(receipt_id="R2", amount="10.00"))
    assert_rejected(paid, c.RecordReturnedDeposit(receipt_id="R2"), "receipt_refunded",
                    match="receipt R2 has 10.00 refunded", field="receipt_id")


def test_a_matched_line_cannot_take_a_return(paid: Ledger) -> None:
    run(paid, c.RecordBankFee(bank_account_id=BANK, entry_date=MAR, amount="300.00",
                              line_id="SL-R"))
    assert_rejected(paid, c.RecordReturnedDeposit(receipt_id="R1", line_id="SL-R"),
                    "already_matched", match="statement line SL-R is already matched")


# --- the cash policy --------------------------------------------------------------------


def _owing(ledger: Ledger, floor: str | None) -> None:
    """The test company (bank 10,000.00) owing V1 two approved bills of 6,000.00 and 3,000.00."""
    set_up_company(ledger, Policies(minimum_bank_balance=floor))
    run(ledger,
        c.EnterBill(bill_id="B1", vendor_id="V1", vendor_invoice_number="1", entry_date=MAR,
                    due_on=date(2026, 3, 20),
                    lines=(c.BillLineIn(description="work", amount="6000.00"),)),
        c.EnterBill(bill_id="B2", vendor_id="V1", vendor_invoice_number="2", entry_date=MAR,
                    due_on=date(2026, 3, 27),
                    lines=(c.BillLineIn(description="work", amount="3000.00"),)),
        c.ApproveBill(bill_id="B1"), c.ApproveBill(bill_id="B2"))


def test_a_payment_run_below_the_minimum_balance_is_refused(ledger: Ledger) -> None:
    _owing(ledger, "2000.00")
    assert_rejected(ledger, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 3, 31),
                                          entry_date=MAR),
                    "cash_policy",
                    match="payment run RUN-000001 to 1 vendor of 9,000.00 would take bank "
                          "account B-OPER from 10,000.00 to 1,000.00, below the cash policy's "
                          "minimum balance of 2,000.00", field="bank_account_id")
    assert_rejected(ledger, c.PayVendor(vendor_id="V1", bank_account_id=BANK, applications=(
        c.BillPayment(bill_id="B1", amount="6000.00"),
        c.BillPayment(bill_id="B2", amount="3000.00"))), "cash_policy",
        match="payment PAY-000001 of 9,000.00 would take bank account B-OPER from 10,000.00 "
              "to 1,000.00")
    [_run, paid] = run(ledger, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 3, 20),
                                          entry_date=MAR), who=CLERK)
    assert isinstance(paid, ev.VendorPaid) and paid.amount == 600_000
    assert ledger.books.bank_accounts[BANK].balance == 400_000


def test_no_overdraft_counts_every_movement_of_the_bank_account(ledger: Ledger) -> None:
    _owing(ledger, "0.00")
    run(ledger, c.RecordBankFee(bank_account_id=BANK, entry_date=MAR, amount="500.00"),
        c.RecordInterest(bank_account_id=BANK, entry_date=MAR, amount="100.00"),
        c.PostJournalEntry(entry_date=MAR, memo="transfer out", lines=(
            c.JournalLineIn(account="1000", credit="1000.00"),
            c.JournalLineIn(account="3000", debit="1000.00"))))
    assert ledger.books.bank_accounts[BANK].balance == q.account_balance(ledger.store, "1000")
    assert_rejected(ledger, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 3, 31)),
                    "cash_policy", match="from 8,600.00 to -400.00, below the cash policy's "
                                         "minimum balance of 0.00")


def test_without_a_cash_policy_the_books_allow_an_overdraft(ledger: Ledger) -> None:
    _owing(ledger, None)
    run(ledger, c.RecordBankFee(bank_account_id=BANK, entry_date=MAR, amount="5000.00"))
    run(ledger, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 3, 31)))
    assert q.account_balance(ledger.store, "1000") == -400_000


def test_a_company_without_a_cash_policy_encodes_as_before() -> None:
    """The unset policy stays out of the stored event, so earlier logs hash the same."""
    e = ev.CompanySetUp(name="X", accounts=ev.CompanyAccounts(), policies=Policies())
    assert b"minimum_bank_balance" not in ev.encode_event(e)
    set_ = ev.CompanySetUp(name="X", accounts=ev.CompanyAccounts(),
                           policies=Policies(minimum_bank_balance=0))
    assert b'"minimum_bank_balance":0' in ev.encode_event(set_)
    assert ev.decode_event("company_set_up", 1, ev.encode_event(set_)) == set_
