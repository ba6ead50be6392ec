"""Invariants of receivables: invoices within credit limits, receipts applied only to the
same customer's open invoices and never beyond what is unapplied or open, write-offs
within a clerk's limit, and no document posting into a control account.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from erp import commands as c
from erp.events import Policies
from erp.ledger import Ledger, Submission
from tests.erp.helpers import BANK, CLERK, CONTROLLER, DAY, assert_rejected, set_up_company

MAR = date(2026, 3, 5)


def run(ledger: Ledger, *cmds: c.Command, who: dict[str, Any] = CONTROLLER) -> list[Any]:
    """Execute commands in one batch; the decoded events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who) for x in cmds])]


def line(price: str, account: str | None = None, quantity: int = 1) -> c.InvoiceLineIn:
    return c.InvoiceLineIn(description="consulting", unit_price=price, account=account,
                           quantity=quantity)


def invoice(iid: str, amount: str, customer: str = "C1", on: date = MAR,
            **kw: Any) -> c.IssueInvoice:
    return c.IssueInvoice(invoice_id=iid, customer_id=customer, entry_date=on,
                          lines=(line(amount),), **kw)


def receipt(rid: str, amount: str, customer: str | None = "C1",
            on: date = MAR) -> c.RecordReceipt:
    return c.RecordReceipt(receipt_id=rid, customer_id=customer, bank_account_id=BANK,
                           entry_date=on, amount=amount)


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The standard test company (see ``set_up_company``)."""
    set_up_company(ledger)
    return ledger


@pytest.fixture
def owed(company: Ledger) -> Ledger:
    """C1 owes invoice I1 of 1,000.00 and has paid R1 of 300.00, not yet applied."""
    run(company, invoice("I1", "1000.00"), receipt("R1", "300.00"))
    return company


# --- issuing invoices ------------------------------------------------------------


def test_invoice_for_an_unknown_customer(company: Ledger) -> None:
    assert_rejected(company, invoice("I1", "10.00", customer="C9"), "unknown_customer",
                    match="no customer 'C9' in the books", field="customer_id")


def test_invoice_id_is_unique(owed: Ledger) -> None:
    assert_rejected(owed, invoice("I1", "10.00"), "duplicate_id",
                    match="invoice 'I1' already exists", field="invoice_id")


def test_invoice_line_into_an_unknown_account(company: Ledger) -> None:
    cmd = c.IssueInvoice(customer_id="C1", entry_date=MAR,
                         lines=(line("1.00"), line("2.00", account="4999")))
    assert_rejected(company, cmd, "unknown_account", match="no account '4999' in the books",
                    field="lines[1].account")


@pytest.mark.parametrize("account", ["1200", "2150", "1000"])
def test_invoice_line_into_a_control_account(company: Ledger, account: str) -> None:
    cmd = c.IssueInvoice(customer_id="C1", entry_date=MAR, lines=(line("1.00", account),))
    assert_rejected(company, cmd, "control_account_restricted",
                    match=f"lines[0].account {account} is a control account",
                    field="lines[0].account", **CONTROLLER)


@pytest.mark.parametrize(("price", "shown"), [("0", "0.00"), ("-5.00", "-5.00")])
def test_invoice_line_price_must_be_positive(company: Ledger, price: str, shown: str) -> None:
    cmd = c.IssueInvoice(customer_id="C1", entry_date=MAR, lines=(line(price),))
    assert_rejected(company, cmd, "non_positive_amount",
                    match=f"lines[0].unit_price must be greater than zero (got {shown})",
                    field="lines[0].unit_price")


def test_invoice_due_before_it_is_issued(company: Ledger) -> None:
    assert_rejected(company, invoice("I1", "10.00", due_on=date(2026, 3, 4)), "invalid_due_date",
                    match="due_on 2026-03-04 is before the document date 2026-03-05",
                    field="due_on")
    [e] = run(company, invoice("I1", "10.00", due_on=MAR))  # due the same day is fine
    assert e.due_on == MAR


def test_invoice_beyond_the_credit_limit(company: Ledger) -> None:
    run(company, invoice("I1", "30000.00"))
    # 2 x 9,000.00 + 182.00 fits the 20,000.00 of room left; with 10% tax it does not.
    over = c.IssueInvoice(invoice_id="I2", customer_id="C1", entry_date=MAR,
                          lines=(line("9000.00", quantity=2), line("182.00")), tax_rate_bp=1000)
    assert_rejected(company, over, "credit_limit_exceeded",
                    match="customer C1 owes 30,000.00; this invoice of 20,000.20 would exceed "
                          "its credit limit of 50,000.00", field="customer_id")
    [e] = run(company, invoice("I2", "20000.00"))  # exactly up to the limit
    assert e.total == 2_000_000
    assert company.books.customers["C1"].open_ar == company.books.customers["C1"].credit_limit


def test_applied_cash_frees_credit(company: Ledger) -> None:
    run(company, invoice("I1", "50000.00"))
    assert_rejected(company, invoice("I2", "0.01"), "credit_limit_exceeded",
                    match="customer C1 owes 50,000.00; this invoice of 0.01")
    run(company, receipt("R1", "100.00"),
        c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="100.00"))
    assert run(company, invoice("I2", "100.00"))


def test_credit_limit_applies_only_when_set_and_enforced(ledger: Ledger) -> None:
    set_up_company(ledger, Policies(enforce_credit_limits=False))
    assert run(ledger, invoice("I1", "50000.01"))  # C1's limit is not enforced
    run(ledger, c.ChangePolicies(policies=Policies(enforce_credit_limits=True)))
    assert_rejected(ledger, invoice("I2", "1.00"), "credit_limit_exceeded",
                    match="customer C1 owes 50,000.01")
    assert run(ledger, invoice("I3", "999999.00", customer="C2"))  # C2 has no limit


# --- credit memos, write-offs, fee allowances: never beyond the open balance -----

REDUCTIONS = {
    "IssueCreditMemo": lambda amount, **kw: c.IssueCreditMemo(invoice_id="I1", amount=amount,
                                                              reason="price", **kw),
    "WriteOffInvoice": lambda amount, **kw: c.WriteOffInvoice(invoice_id="I1", amount=amount,
                                                              reason="bankrupt", **kw),
    "GrantFeeAllowance": lambda amount, **kw: c.GrantFeeAllowance(invoice_id="I1",
                                                                  amount=amount, **kw),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_beyond_the_open_balance(owed: Ledger, name: str) -> None:
    make = REDUCTIONS[name]
    run(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="300.00"))
    assert_rejected(owed, make("700.01"), "exceeds_open_balance",
                    match="invoice I1 has 700.00 open, cannot reduce it by 700.01",
                    field="amount", **CONTROLLER)
    [e] = run(owed, make("700.00"))
    assert e.amount == 70_000
    assert owed.books.invoices["I1"].open == 0
    assert_rejected(owed, make("0.01"), "exceeds_open_balance",
                    match="invoice I1 has 0.00 open", **CONTROLLER)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_must_be_positive(owed: Ledger, name: str) -> None:
    assert_rejected(owed, REDUCTIONS[name]("0"), "non_positive_amount",
                    match="amount must be greater than zero (got 0.00)", field="amount",
                    **CONTROLLER)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_of_an_unknown_invoice(company: Ledger, name: str) -> None:
    assert_rejected(company, REDUCTIONS[name]("1.00"), "unknown_invoice",
                    match="no invoice 'I1' in the books", field="invoice_id", **CONTROLLER)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_into_an_unknown_account(owed: Ledger, name: str) -> None:
    assert_rejected(owed, REDUCTIONS[name]("1.00", account="6999"), "unknown_account",
                    match="no account '6999' in the books", field="account", **CONTROLLER)


@pytest.mark.parametrize("account", ["1200", "2150", "2000", "1000"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_into_a_control_account(owed: Ledger, name: str, account: str) -> None:
    # Crediting AR against another control account would move the GL without its
    # subledger (or, against 1200 itself, reduce the invoice with no GL movement at all).
    assert_rejected(owed, REDUCTIONS[name]("1.00", account=account),
                    "control_account_restricted",
                    match=f"account {account} is the ", field="account", **CONTROLLER)


def test_credit_memo_id_is_unique(owed: Ledger) -> None:
    run(owed, REDUCTIONS["IssueCreditMemo"]("1.00", credit_memo_id="CM1"))
    assert_rejected(owed, REDUCTIONS["IssueCreditMemo"]("1.00", credit_memo_id="CM1"),
                    "duplicate_id", match="credit memo 'CM1' already exists",
                    field="credit_memo_id")


def test_clerk_write_off_is_limited_by_policy(owed: Ledger) -> None:
    write_off = REDUCTIONS["WriteOffInvoice"]
    assert_rejected(owed, write_off("0.01"), "write_off_limit",
                    match="a clerk may write off at most 0.00 of an invoice; I1 has 0.00 written "
                          "off already, asked 0.01 more; a controller must approve more",
                    field="amount")
    run(owed, c.ChangePolicies(policies=Policies(clerk_write_off_limit="50.00")))
    assert_rejected(owed, write_off("50.01"), "write_off_limit",
                    match="at most 50.00 of an invoice; I1 has 0.00 written off already, "
                          "asked 50.01 more")
    assert run(owed, write_off("30.00"), who=CLERK)
    # The limit holds for all write-offs of an invoice together, not per command.
    assert_rejected(owed, write_off("20.01"), "write_off_limit",
                    match="I1 has 30.00 written off already, asked 20.01 more")
    assert run(owed, write_off("20.00"), who=CLERK)
    assert run(owed, write_off("900.00"), who=CONTROLLER)


def test_clerk_fee_allowance_is_limited_by_policy(owed: Ledger) -> None:
    allow = REDUCTIONS["GrantFeeAllowance"]
    # Default policy: 5% of the invoice total plus 1.00 -> 51.00 on a 1,000.00 invoice.
    assert run(owed, allow("29.30"), who=CLERK)
    assert_rejected(owed, allow("21.71"), "fee_allowance_limit",
                    match="a clerk may accept at most 51.00 of fees on invoice I1 (5% of "
                          "1,000.00 + 1.00); 29.30 already, asked 21.71 more", field="amount")
    assert run(owed, allow("21.70"), who=CLERK)
    assert run(owed, allow("100.00"), who=CONTROLLER)


# --- receipts --------------------------------------------------------------------


def test_receipt_into_an_unknown_bank_account(company: Ledger) -> None:
    cmd = c.RecordReceipt(customer_id="C1", bank_account_id="B-X", entry_date=MAR, amount="1.00")
    assert_rejected(company, cmd, "unknown_bank_account",
                    match="no bank account 'B-X' in the books", field="bank_account_id")


def test_receipt_from_an_unknown_customer(company: Ledger) -> None:
    assert_rejected(company, receipt("R1", "1.00", customer="C9"), "unknown_customer",
                    match="no customer 'C9' in the books", field="customer_id")


@pytest.mark.parametrize(("amount", "shown"), [("0", "0.00"), ("-1.00", "-1.00")])
def test_receipt_amount_must_be_positive(company: Ledger, amount: str, shown: str) -> None:
    assert_rejected(company, receipt("R1", amount), "non_positive_amount",
                    match=f"amount must be greater than zero (got {shown})", field="amount")


def test_receipt_id_is_unique(owed: Ledger) -> None:
    assert_rejected(owed, receipt("R1", "1.00"), "duplicate_id",
                    match="receipt 'R1' already exists", field="receipt_id")


def test_assign_customer_to_an_unknown_receipt_or_customer(owed: Ledger) -> None:
    run(owed, receipt("R2", "5.00", customer=None))
    assert_rejected(owed, c.AssignReceiptCustomer(receipt_id="R9", customer_id="C1"),
                    "unknown_receipt", match="no receipt 'R9' in the books", field="receipt_id")
    assert_rejected(owed, c.AssignReceiptCustomer(receipt_id="R2", customer_id="C9"),
                    "unknown_customer", match="no customer 'C9' in the books",
                    field="customer_id")


def test_receipt_customer_is_assigned_once(owed: Ledger) -> None:
    assert_rejected(owed, c.AssignReceiptCustomer(receipt_id="R1", customer_id="C2"),
                    "customer_already_assigned",
                    match="receipt R1 already belongs to customer C1", field="customer_id")


def test_unassigned_receipt_cannot_be_applied_or_refunded_until_assigned(owed: Ledger) -> None:
    run(owed, receipt("R2", "50.00", customer=None))
    apply = c.ApplyReceipt(receipt_id="R2", invoice_id="I1", amount="50.00")
    assert_rejected(owed, apply, "receipt_unassigned",
                    match="receipt R2 has no customer; assign one with AssignReceiptCustomer "
                          "first", field="receipt_id")
    assert_rejected(owed, c.RefundCustomer(receipt_id="R2", amount="50.00"),
                    "receipt_unassigned", match="receipt R2 has no customer to refund",
                    field="receipt_id")
    [assigned] = run(owed, c.AssignReceiptCustomer(receipt_id="R2", customer_id="C1"),
                     who=CLERK)
    assert assigned.customer_id == "C1"
    [applied] = run(owed, apply, who=CLERK)
    assert (applied.customer_id, applied.amount) == ("C1", 5000)


# --- applying receipts -----------------------------------------------------------


def test_apply_unknown_receipt_or_invoice(owed: Ledger) -> None:
    assert_rejected(owed, c.ApplyReceipt(receipt_id="R9", invoice_id="I1", amount="1.00"),
                    "unknown_receipt", match="no receipt 'R9' in the books", field="receipt_id")
    assert_rejected(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I9", amount="1.00"),
                    "unknown_invoice", match="no invoice 'I9' in the books", field="invoice_id")


def test_apply_a_non_positive_amount(owed: Ledger) -> None:
    assert_rejected(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="-1.00"),
                    "non_positive_amount", match="amount must be greater than zero (got -1.00)")


def test_apply_to_another_customers_invoice(owed: Ledger) -> None:
    run(owed, invoice("I2", "100.00", customer="C2"))
    assert_rejected(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I2", amount="100.00"),
                    "customer_mismatch",
                    match="receipt R1 is from customer C1, invoice I2 belongs to C2",
                    field="invoice_id")


def test_apply_more_than_the_receipt_has_unapplied(owed: Ledger) -> None:
    assert_rejected(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="300.01"),
                    "over_application",
                    match="receipt R1 has 300.00 unapplied, cannot apply 300.01", field="amount")
    run(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="200.00"))
    assert_rejected(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="100.01"),
                    "over_application",
                    match="receipt R1 has 100.00 unapplied, cannot apply 100.01")
    [e] = run(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="100.00"))
    assert e.amount == 10_000 and owed.books.receipts["R1"].unapplied == 0


def test_apply_more_than_the_invoice_has_open(owed: Ledger) -> None:
    run(owed, receipt("R2", "2000.00"))
    assert_rejected(owed, c.ApplyReceipt(receipt_id="R2", invoice_id="I1", amount="1000.01"),
                    "exceeds_open_balance",
                    match="invoice I1 has 1,000.00 open, cannot apply 1,000.01", field="amount")
    run(owed, c.ApplyReceipt(receipt_id="R2", invoice_id="I1", amount="1000.00"))
    assert_rejected(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="0.01"),
                    "exceeds_open_balance", match="invoice I1 has 0.00 open, cannot apply 0.01")


# --- reversing applications ------------------------------------------------------


def test_reverse_more_than_was_applied(owed: Ledger) -> None:
    reverse = c.ReverseApplication(receipt_id="R1", invoice_id="I1", amount="0.01")
    assert_rejected(owed, reverse, "exceeds_applied",
                    match="receipt R1 has 0.00 applied to invoice I1, cannot reverse 0.01",
                    field="amount")
    run(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="120.00"))
    assert_rejected(owed, reverse.model_copy(update={"amount": 12001}), "exceeds_applied",
                    match="receipt R1 has 120.00 applied to invoice I1, cannot reverse 120.01")
    [e] = run(owed, reverse.model_copy(update={"amount": 2000}))
    assert (e.type, e.amount) == ("application_reversed", 2000)
    assert owed.books.receipts["R1"].unapplied == 20_000
    assert owed.books.invoices["I1"].open == 90_000


def test_reverse_unknown_or_non_positive(owed: Ledger) -> None:
    assert_rejected(owed, c.ReverseApplication(receipt_id="R9", invoice_id="I1", amount="1.00"),
                    "unknown_receipt", match="no receipt 'R9'")
    assert_rejected(owed, c.ReverseApplication(receipt_id="R1", invoice_id="I9", amount="1.00"),
                    "unknown_invoice", match="no invoice 'I9'")
    assert_rejected(owed, c.ReverseApplication(receipt_id="R1", invoice_id="I1", amount="0"),
                    "non_positive_amount", match="(got 0.00)")


# --- refunds ---------------------------------------------------------------------


def test_refund_more_than_is_unapplied(owed: Ledger) -> None:
    run(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="250.00"))
    assert_rejected(owed, c.RefundCustomer(receipt_id="R1", amount="50.01"), "over_application",
                    match="receipt R1 has 50.00 unapplied, cannot refund 50.01", field="amount")
    [e] = run(owed, c.RefundCustomer(refund_id="RF1", receipt_id="R1", amount="50.00"))
    assert (e.type, e.bank_account_id, e.customer_id, e.amount) == (
        "customer_refunded", BANK, "C1", 5000)


def test_refund_unknown_non_positive_or_duplicate(owed: Ledger) -> None:
    assert_rejected(owed, c.RefundCustomer(receipt_id="R9", amount="1.00"), "unknown_receipt",
                    match="no receipt 'R9' in the books")
    assert_rejected(owed, c.RefundCustomer(receipt_id="R1", amount="0"), "non_positive_amount",
                    match="amount must be greater than zero (got 0.00)")
    run(owed, c.RefundCustomer(refund_id="RF1", receipt_id="R1", amount="1.00"))
    assert_rejected(owed, c.RefundCustomer(refund_id="RF1", receipt_id="R1", amount="1.00"),
                    "duplicate_id", match="refund 'RF1' already exists", field="refund_id")


def test_business_date_is_the_default_entry_date(owed: Ledger) -> None:
    # R1 and I1 are dated 03-05, after the business date (03-02): the application takes the
    # later date rather than predate its documents.
    [e] = run(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="1.00"))
    assert e.entry_date == MAR
    run(owed, invoice("I2", "10.00", on=date(2026, 2, 20)),
        receipt("R2", "10.00", on=date(2026, 2, 20)))
    [e] = run(owed, c.ApplyReceipt(receipt_id="R2", invoice_id="I2", amount="1.00"))
    assert e.entry_date == DAY


def test_an_application_cannot_predate_its_documents(owed: Ledger) -> None:
    assert_rejected(owed, c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="1.00",
                                         entry_date=date(2026, 3, 4)),
                    "dated_before_document",
                    match="the application is dated 2026-03-04, before the receipt it applies "
                          "(2026-03-05)", field="entry_date")
