"""Invariants of master data: the chart, customers, vendors, bank accounts, and the
rule that a vendor's bank details change only through a request another role approves.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from erp import commands as c
from erp import events as ev
from erp.books import Books
from erp.charts import chart_commands
from erp.errors import CommandRejected
from erp.events import BankDetails, CompanyAccounts, Policies
from erp.handlers import require_posting_accounts
from erp.ledger import Ledger, Submission
from tests.erp.helpers import BANK, CLERK, CONTROLLER, SYS, assert_rejected, set_up_company

MAR = date(2026, 3, 5)
OLD_BANK = BankDetails(account_name="Initech", routing="111000025", account_number="123456789")
NEW_BANK = BankDetails(account_name="Initech", routing="021000021", account_number="999888777")


def run(ledger: Ledger, *cmds: c.Command, who: dict[str, Any] = CONTROLLER) -> list[Any]:
    """Execute commands in one batch; the decoded events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who) for x in cmds])]


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The standard test company (see ``set_up_company``)."""
    set_up_company(ledger)
    return ledger


# --- chart of accounts -----------------------------------------------------------


def test_account_code_is_unique(company: Ledger) -> None:
    assert_rejected(company, c.OpenAccount(code="1200", name="AR 2", account_type="asset"),
                    "duplicate_id", match="account '1200' already exists", field="code",
                    **CONTROLLER)


def test_control_account_must_have_its_type(company: Ledger) -> None:
    assert_rejected(company, c.OpenAccount(code="2160", name="Customer deposits",
                                           account_type="liability", control="ar"),
                    "invalid_control_account",
                    match="a ar control account must be of type asset (got liability)",
                    field="control", **CONTROLLER)
    [opened] = run(company, c.OpenAccount(code="1210", name="AR (EU)", account_type="asset",
                                          control="ar"))
    assert (opened.control, opened.normal_side) == ("ar", "debit")


# --- every posting goes to an account of the chart, a document to its own control kind --


def _company_with(ledger: Ledger, **accounts: str) -> Ledger:
    """The standard test company whose posting accounts are changed as given."""
    ledger.execute_batch([Submission(x, **SYS) for x in [
        c.SetUpCompany(name="Test Co", accounts=CompanyAccounts(**accounts)),
        *chart_commands("standard-services"), c.OpenPeriod(period="2026-03"),
        c.OpenBankAccount(bank_account_id=BANK, name="Operating", number="0001",
                          gl_account="1000", entry_date=MAR, opening_balance="1000.00"),
        c.RegisterCustomer(customer_id="C1", name="Acme", terms_days=30),
        c.RegisterVendor(vendor_id="V1", name="Initech", terms_days=30, bank=OLD_BANK)]])
    return ledger


INVOICE = c.IssueInvoice(invoice_id="I1", customer_id="C1", entry_date=MAR, tax_rate_bp=500,
                         lines=(c.InvoiceLineIn(description="work", unit_price="100.00"),))
RECEIPT = c.RecordReceipt(receipt_id="R1", customer_id="C1", bank_account_id=BANK,
                          entry_date=MAR, amount="10.00")
BILL = c.EnterBill(bill_id="B1", vendor_id="V1", vendor_invoice_number="77", entry_date=MAR,
                   lines=(c.BillLineIn(description="rent", amount="50.00"),))


@pytest.mark.parametrize(("accounts", "command", "code", "message"), [
    ({"tax_payable": "2299"}, INVOICE, "unknown_account",
     "IssueInvoice would post to account '2299' (the company's tax_payable account), which "
     "is not in the chart of accounts"),
    ({"unapplied_cash": "2999"}, RECEIPT, "unknown_account",
     "RecordReceipt would post to account '2999' (the company's unapplied_cash account)"),
    ({"ap": "2999"}, BILL, "unknown_account",
     "EnterBill would post to account '2999' (the company's ap account)"),
    ({"ar": "4000"}, INVOICE, "invalid_control_account",
     "IssueInvoice would carry invoice_issued to account '4000' (Service revenue) (the "
     "company's ar and revenue account), which is not a control account of kind ar (its "
     "control: none)"),
    ({"ap": "2150"}, BILL, "invalid_control_account",
     "to account '2150' (Unapplied cash) (the company's unapplied_cash and ap account), "
     "which is not a control account of kind ap (its control: unapplied_cash)"),
    ({"unapplied_cash": "2000"}, RECEIPT, "invalid_control_account",
     "(the company's unapplied_cash and ap account), which is not a control account of kind "
     "unapplied_cash"),
], ids=["tax-missing", "unapplied-missing", "ap-missing", "ar-not-control",
        "ap-other-control", "unapplied-other-control"])
def test_a_posting_account_must_be_in_the_chart_and_of_its_control_kind(
        ledger: Ledger, accounts: dict[str, str], command: c.Command, code: str,
        message: str) -> None:
    company = _company_with(ledger, **accounts)
    assert_rejected(company, command, code, match=message, **CLERK)


def test_an_account_opened_later_is_posted_to_from_then_on(ledger: Ledger) -> None:
    company = _company_with(ledger, tax_payable="2299")
    assert_rejected(company, INVOICE, "unknown_account", match="'2299'", **CLERK)
    company.execute(c.OpenAccount(code="2299", name="Tax", account_type="liability"),
                    **CONTROLLER)
    [issued] = company.execute(INVOICE, **CLERK)
    assert issued.event.tax_account == "2299"  # type: ignore[attr-defined]


def test_a_command_naming_the_account_has_the_field_named(ledger: Ledger) -> None:
    company = _company_with(ledger)
    company.execute(INVOICE, **CLERK)
    err = assert_rejected(company, c.IssueCreditMemo(invoice_id="I1", amount="1.00",
                                                     reason="x", account="1200"),
                          "control_account_restricted", **CLERK)
    assert err.field == "account"


def _books(*accounts: tuple[str, str | None], company: bool = True) -> Books:
    """Books holding these accounts (code, control) and, with ``company``, the default
    company (AR 1200, sales returns 4050...)."""
    books = Books()
    if company:
        books.apply(ev.CompanySetUp(name="X", accounts=CompanyAccounts(),
                                    policies=Policies()))
    types = {"ar": "asset", "ap": "liability", None: "revenue"}
    for code, control in accounts:
        books.apply(ev.AccountOpened(code=code, name=f"Account {code}",
                                     account_type=types[control],  # type: ignore[arg-type]
                                     normal_side="debit", control=control))  # type: ignore[arg-type]
    return books


MEMO = c.IssueCreditMemo(invoice_id="I1", amount="1.00", reason="x", account="4999")


def _memo(account: str = "4999", ar: str = "1200") -> ev.CreditMemoIssued:
    return ev.CreditMemoIssued(credit_memo_id="CM1", invoice_id="I1", customer_id="C1",
                               entry_date=MAR, amount=100, account=account, ar_account=ar,
                               reason="x")


@pytest.mark.parametrize("company", [True, False])
def test_the_chart_rule_names_the_command_account_and_field(company: bool) -> None:
    books = _books(("1200", "ar"), company=company)
    with pytest.raises(CommandRejected) as info:
        require_posting_accounts(MEMO, [_memo()], books)
    assert (info.value.code, info.value.field, info.value.message) == (
        "unknown_account", "account",
        "IssueCreditMemo would post to account '4999', which is not in the chart of accounts "
        "(a controller must open it first)")


def test_the_control_rule_names_the_command_account_and_field() -> None:
    books = _books(("1200", "ar"), ("4999", None))
    with pytest.raises(CommandRejected) as info:
        require_posting_accounts(MEMO, [_memo(account="1200", ar="4999")], books)
    assert (info.value.code, info.value.field, info.value.message) == (
        "invalid_control_account", "account",
        "IssueCreditMemo would carry credit_memo_issued to account '4999' (Account 4999), "
        "which is not a control account of kind ar (its control: none)")
    with pytest.raises(CommandRejected) as info:  # the code in no field of the command
        require_posting_accounts(MEMO.model_copy(update={"account": None}),
                                 [_memo(account="1200", ar="4999")], books)
    assert info.value.field is None


def test_events_on_the_chart_and_their_control_kinds_pass() -> None:
    require_posting_accounts(MEMO, [_memo(account="4999")],
                             _books(("1200", "ar"), ("4999", None)))


# --- customers and vendors -------------------------------------------------------


def test_customer_id_is_unique(company: Ledger) -> None:
    assert_rejected(company, c.RegisterCustomer(customer_id="C1", name="Acme again"),
                    "duplicate_id", match="customer 'C1' already exists", field="customer_id")
    [e] = run(company, c.RegisterCustomer(name="Acme again"), who=CLERK)
    assert e.customer_id == "C-000003"  # the next free counter, never a random id


def test_credit_limit_cannot_be_negative(company: Ledger) -> None:
    assert_rejected(company, c.RegisterCustomer(name="Umbrella", credit_limit="-1.00"),
                    "non_positive_amount", match="credit_limit cannot be negative (got -1.00)",
                    field="credit_limit")


def test_vendor_id_is_unique(company: Ledger) -> None:
    assert_rejected(company, c.RegisterVendor(vendor_id="V1", name="Initrode"), "duplicate_id",
                    match="vendor 'V1' already exists", field="vendor_id")


# --- bank accounts ---------------------------------------------------------------


def test_bank_account_id_is_unique(company: Ledger) -> None:
    assert_rejected(company, c.OpenBankAccount(bank_account_id=BANK, name="Op 2", number="9",
                                               gl_account="1010", entry_date=MAR),
                    "duplicate_id", match=f"bank account '{BANK}' already exists",
                    field="bank_account_id", **CONTROLLER)


def test_bank_account_needs_a_known_gl_account(company: Ledger) -> None:
    assert_rejected(company, c.OpenBankAccount(bank_account_id="B-SAV", name="Savings",
                                               number="2", gl_account="1020", entry_date=MAR),
                    "unknown_account", match="no account '1020' in the books",
                    field="gl_account", **CONTROLLER)


def test_bank_account_needs_a_bank_control_account(company: Ledger) -> None:
    assert_rejected(company, c.OpenBankAccount(bank_account_id="B-SAV", name="Savings",
                                               number="2", gl_account="1200", entry_date=MAR),
                    "not_a_bank_account",
                    match="account 1200 (Accounts receivable) is not a bank control account",
                    field="gl_account", **CONTROLLER)


def test_two_bank_accounts_cannot_share_a_gl_account(company: Ledger) -> None:
    assert_rejected(company, c.OpenBankAccount(bank_account_id="B-SAV", name="Savings",
                                               number="2", gl_account="1000", entry_date=MAR),
                    "duplicate_id", match="account 1000 already belongs to another bank account",
                    field="gl_account", **CONTROLLER)


def test_bank_account_without_opening_balance_needs_no_period(company: Ledger) -> None:
    [e] = run(company, c.OpenBankAccount(bank_account_id="B-SAV", name="Savings", number="2",
                                         gl_account="1010", entry_date=date(2027, 1, 4)))
    assert e.opening_balance == 0


# --- vendor bank details: a second role must approve a change --------------------


def request(ledger: Ledger, who: dict[str, Any] = CLERK, rid: str = "BCR1") -> None:
    run(ledger, c.RequestVendorBankChange(request_id=rid, vendor_id="V1", new_bank=NEW_BANK,
                                          reason="vendor email"), who=who)


def pay_v1(ledger: Ledger, bill: str = "B1") -> Any:
    """Enter, approve and pay a 100.00 bill of V1; the VendorPaid event."""
    run(ledger,
        c.EnterBill(bill_id=bill, vendor_id="V1", vendor_invoice_number=bill, entry_date=MAR,
                    lines=(c.BillLineIn(description="x", amount="100.00"),)),
        c.ApproveBill(bill_id=bill))
    [paid] = run(ledger, c.PayVendor(vendor_id="V1", bank_account_id=BANK,
                                     applications=(c.BillPayment(bill_id=bill,
                                                                 amount="100.00"),)))
    return paid


def test_change_requested_by_a_clerk_and_approved_by_a_controller_takes_effect(
        company: Ledger) -> None:
    request(company)
    [approved] = run(company, c.ApproveVendorBankChange(request_id="BCR1"))
    assert (approved.type, approved.vendor_id, approved.new_bank) == (
        "vendor_bank_change_approved", "V1", NEW_BANK)
    assert approved.approved_by_role == "controller"
    assert pay_v1(company).paid_to == NEW_BANK


def test_pending_change_does_not_change_where_payments_go(company: Ledger) -> None:
    request(company)
    assert pay_v1(company).paid_to == OLD_BANK


def test_rejected_change_does_not_change_where_payments_go(company: Ledger) -> None:
    request(company)
    [rejected] = run(company, c.RejectVendorBankChange(request_id="BCR1", reason="fraud"))
    assert rejected.type == "vendor_bank_change_rejected"
    assert pay_v1(company).paid_to == OLD_BANK
    assert_rejected(company, c.ApproveVendorBankChange(request_id="BCR1"), "not_pending",
                    match="bank-change request BCR1 is already rejected", field="request_id",
                    **CONTROLLER)


def test_clerk_cannot_approve_even_someone_elses_request(company: Ledger) -> None:
    request(company, who=CONTROLLER)
    assert_rejected(company, c.ApproveVendorBankChange(request_id="BCR1"), "forbidden_for_role",
                    match="(role clerk) may not approve a vendor bank-detail change", **CLERK)


@pytest.mark.parametrize("role", ["controller", "system"])
def test_same_role_cannot_approve_its_own_request(company: Ledger, role: str) -> None:
    who = {**CONTROLLER, "role": role}
    request(company, who=who)
    assert_rejected(company, c.ApproveVendorBankChange(request_id="BCR1"), "same_role_approval",
                    match=f"bank-change request BCR1 was requested by role {role}; a different "
                          "role must approve it", field="request_id", **who)
    assert pay_v1(company).paid_to == OLD_BANK


def test_approved_change_cannot_be_approved_or_rejected_again(company: Ledger) -> None:
    request(company)
    run(company, c.ApproveVendorBankChange(request_id="BCR1"))
    for cmd in (c.ApproveVendorBankChange(request_id="BCR1"),
                c.RejectVendorBankChange(request_id="BCR1")):
        assert_rejected(company, cmd, "not_pending",
                        match="bank-change request BCR1 is already approved", **CONTROLLER)


def test_unknown_bank_change_request(company: Ledger) -> None:
    for cmd in (c.ApproveVendorBankChange(request_id="BCR9"),
                c.RejectVendorBankChange(request_id="BCR9")):
        assert_rejected(company, cmd, "unknown_bank_change",
                        match="no bank-change request 'BCR9'", field="request_id", **CONTROLLER)


def test_bank_change_for_an_unknown_vendor(company: Ledger) -> None:
    assert_rejected(company, c.RequestVendorBankChange(vendor_id="V9", new_bank=NEW_BANK),
                    "unknown_vendor", match="no vendor 'V9' in the books", field="vendor_id")


def test_bank_change_request_id_is_unique(company: Ledger) -> None:
    request(company)
    assert_rejected(company, c.RequestVendorBankChange(request_id="BCR1", vendor_id="V1",
                                                       new_bank=OLD_BANK),
                    "duplicate_id", match="bank-change request 'BCR1' already exists",
                    field="request_id")


def test_vendor_without_bank_details_is_paid_only_after_an_approved_change(
        company: Ledger) -> None:
    run(company,
        c.RegisterVendor(vendor_id="V2", name="Initrode"),
        c.EnterBill(bill_id="B2", vendor_id="V2", vendor_invoice_number="X-1", entry_date=MAR,
                    lines=(c.BillLineIn(description="x", amount="40.00"),)),
        c.ApproveBill(bill_id="B2"))
    pay = c.PayVendor(vendor_id="V2", bank_account_id=BANK,
                      applications=(c.BillPayment(bill_id="B2", amount="40.00"),))
    assert_rejected(company, pay, "no_bank_details",
                    match="vendor V2 has no approved bank details to pay to", field="vendor_id",
                    **CONTROLLER)
    run(company, c.RequestVendorBankChange(request_id="BCR2", vendor_id="V2", new_bank=NEW_BANK),
        who=SYS)
    assert_rejected(company, pay, "no_bank_details", **CONTROLLER)  # still only requested
    run(company, c.ApproveVendorBankChange(request_id="BCR2"))
    [paid] = run(company, pay)
    assert paid.paid_to == NEW_BANK
