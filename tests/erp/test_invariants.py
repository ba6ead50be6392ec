"""Invariants every command shares: the company must exist, managers' commands need a
manager, postings need an open period, a rejected batch writes nothing, and bad input
never reaches a handler.

Each rejection is checked with ``assert_rejected``: the code, the message (with the
values that matter) and that nothing was written (log, head hash, read tables).
The domain rules are in ``test_invariants_*.py`` next to this file.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from erp import commands as c
from erp.events import BankDetails, Policies
from erp.ledger import Ledger, Submission
from tests.erp.helpers import (
    BANK,
    CLERK,
    CONTROLLER,
    SYS,
    assert_rejected,
    fingerprint,
    set_up_company,
)

FEB = date(2026, 2, 20)  # closed by the ``february_closed`` fixture
MAR = date(2026, 3, 5)  # open
NO_PERIOD = date(2027, 1, 4)  # no period was ever opened
NEW_BANK = BankDetails(account_name="Initech", routing="021000021", account_number="999888777")


def run(ledger: Ledger, *cmds: c.Command, who: dict[str, Any] = CONTROLLER) -> list[Any]:
    """Execute commands in one batch; the decoded events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who) for x in cmds])]


def inv_line(price: str) -> c.InvoiceLineIn:
    return c.InvoiceLineIn(description="consulting", unit_price=price)


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The standard test company (see ``set_up_company``)."""
    set_up_company(ledger)
    return ledger


# --- the company must exist ------------------------------------------------------

NEEDS_COMPANY: dict[str, c.Command] = {
    "ChangePolicies": c.ChangePolicies(policies=Policies()),
    "OpenBankAccount": c.OpenBankAccount(bank_account_id="B1", name="Op", number="1",
                                         gl_account="1000", entry_date=MAR),
    "IssueInvoice": c.IssueInvoice(customer_id="C1", entry_date=MAR, lines=(inv_line("1.00"),)),
    "IssueCreditMemo": c.IssueCreditMemo(invoice_id="I1", amount="1.00", reason="r"),
    "RecordReceipt": c.RecordReceipt(bank_account_id=BANK, entry_date=MAR, amount="1.00"),
    "ApplyReceipt": c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="1.00"),
    "ReverseApplication": c.ReverseApplication(receipt_id="R1", invoice_id="I1", amount="1.00"),
    "WriteOffInvoice": c.WriteOffInvoice(invoice_id="I1", amount="1.00", reason="r"),
    "GrantFeeAllowance": c.GrantFeeAllowance(invoice_id="I1", amount="1.00"),
    "RefundCustomer": c.RefundCustomer(receipt_id="R1", amount="1.00"),
    "EnterBill": c.EnterBill(vendor_id="V1", vendor_invoice_number="1", entry_date=MAR,
                             lines=(c.BillLineIn(description="x", amount="1.00"),)),
    "RecordVendorCredit": c.RecordVendorCredit(vendor_id="V1", vendor_credit_number="1",
                                               entry_date=MAR, amount="1.00"),
    "RecordBankFee": c.RecordBankFee(bank_account_id=BANK, entry_date=MAR, amount="1.00"),
    "RecordInterest": c.RecordInterest(bank_account_id=BANK, entry_date=MAR, amount="1.00"),
    "PostJournalEntry": c.PostJournalEntry(entry_date=MAR, memo="m", lines=(
        c.JournalLineIn(account="6000", debit="1.00"),
        c.JournalLineIn(account="3000", credit="1.00"))),
    "PostOpeningBalances": c.PostOpeningBalances(entry_date=MAR, lines=(
        c.JournalLineIn(account="6000", debit="1.00"),
        c.JournalLineIn(account="3000", credit="1.00"))),
}


@pytest.mark.parametrize("name", sorted(NEEDS_COMPANY))
def test_command_before_the_company_is_set_up_is_rejected(ledger: Ledger, name: str) -> None:
    assert_rejected(ledger, NEEDS_COMPANY[name], "company_not_set_up",
                    match="the company is not set up yet (run SetUpCompany first)", **SYS)
    assert ledger.store.count() == 0


def test_company_is_set_up_once(company: Ledger) -> None:
    assert_rejected(company, c.SetUpCompany(name="Other Co"), "already_set_up",
                    match="the company is already set up; use ChangePolicies", **SYS)


# --- managers' commands ----------------------------------------------------------

MANAGER_ONLY: dict[str, tuple[c.Command, str]] = {
    "SetUpCompany": (c.SetUpCompany(name="X"), "set up the company"),
    "ChangePolicies": (c.ChangePolicies(policies=Policies(clerk_write_off_limit=10**9)),
                       "change company policies"),
    "OpenAccount": (c.OpenAccount(code="6400", name="Travel", account_type="expense"),
                    "change the chart of accounts"),
    "OpenPeriod": (c.OpenPeriod(period="2026-05"), "open an accounting period"),
    "ClosePeriod": (c.ClosePeriod(period="2026-02"), "close an accounting period"),
    "ReopenPeriod": (c.ReopenPeriod(period="2026-02", reason="late bill"),
                     "reopen an accounting period"),
    "ApproveVendorBankChange": (c.ApproveVendorBankChange(request_id="BCR1"),
                                "approve a vendor bank-detail change"),
    "RejectVendorBankChange": (c.RejectVendorBankChange(request_id="BCR1"),
                               "reject a vendor bank-detail change"),
    "OpenBankAccount": (c.OpenBankAccount(bank_account_id="B-SAV", name="Savings", number="2",
                                          gl_account="1010", entry_date=MAR),
                        "open a bank account"),
    "PostOpeningBalances": (c.PostOpeningBalances(entry_date=MAR, lines=(
        c.JournalLineIn(account="1500", debit="100.00"),
        c.JournalLineIn(account="3900", credit="100.00"))), "post opening balances"),
}


@pytest.mark.parametrize("name", sorted(MANAGER_ONLY))
def test_manager_only_command_is_forbidden_to_a_clerk(company: Ledger, name: str) -> None:
    command, action = MANAGER_ONLY[name]
    # A pending request, so the bank-change commands fail on the role and nothing else.
    run(company, c.RequestVendorBankChange(request_id="BCR1", vendor_id="V1", new_bank=NEW_BANK),
        who=CLERK)
    assert_rejected(company, command, "forbidden_for_role",
                    match=f"agent:turn-1 (role clerk) may not {action}; needs role controller "
                          "or system", **CLERK)


@pytest.mark.parametrize("name", sorted(set(MANAGER_ONLY) - {"SetUpCompany"}))
def test_manager_only_command_is_accepted_from_a_controller(company: Ledger, name: str) -> None:
    run(company, c.RequestVendorBankChange(request_id="BCR1", vendor_id="V1", new_bank=NEW_BANK),
        who=CLERK)
    if name == "ReopenPeriod":
        run(company, c.ClosePeriod(period="2026-02"))
    assert run(company, MANAGER_ONLY[name][0])



# --- postings need an open period ------------------------------------------------


@pytest.fixture
def february_closed(company: Ledger) -> Ledger:
    """February holds one document of each kind (all open), then February is closed."""
    feb = date(2026, 2, 2)
    run(company,
        c.IssueInvoice(invoice_id="I1", customer_id="C1", entry_date=feb,
                       lines=(inv_line("1000.00"),)),
        c.RecordReceipt(receipt_id="R1", customer_id="C1", bank_account_id=BANK, entry_date=feb,
                        amount="500.00"),
        c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="200.00", entry_date=feb),
        c.EnterBill(bill_id="B1", vendor_id="V1", vendor_invoice_number="V-100", entry_date=feb,
                    lines=(c.BillLineIn(description="rent", amount="300.00", account="6100"),)),
        c.ApproveBill(bill_id="B1"),
        c.RecordVendorCredit(credit_id="VC1", vendor_id="V1", vendor_credit_number="CN-1",
                             entry_date=feb, amount="50.00"),
        c.PostJournalEntry(entry_id="JE1", entry_date=feb, memo="prepaid", lines=(
            c.JournalLineIn(account="1300", debit="100.00"),
            c.JournalLineIn(account="3000", credit="100.00"))),
        c.ClosePeriod(period="2026-02"))
    return company


DATED: dict[str, Callable[[date], c.Command]] = {
    "IssueInvoice": lambda d: c.IssueInvoice(customer_id="C1", entry_date=d,
                                             lines=(inv_line("10.00"),)),
    "IssueCreditMemo": lambda d: c.IssueCreditMemo(invoice_id="I1", amount="10.00",
                                                   reason="price", entry_date=d),
    "RecordReceipt": lambda d: c.RecordReceipt(customer_id="C1", bank_account_id=BANK,
                                               entry_date=d, amount="10.00"),
    "ApplyReceipt": lambda d: c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount="10.00",
                                             entry_date=d),
    "ReverseApplication": lambda d: c.ReverseApplication(receipt_id="R1", invoice_id="I1",
                                                         amount="10.00", entry_date=d),
    "WriteOffInvoice": lambda d: c.WriteOffInvoice(invoice_id="I1", amount="10.00",
                                                   reason="bankrupt", entry_date=d),
    "GrantFeeAllowance": lambda d: c.GrantFeeAllowance(invoice_id="I1", amount="10.00",
                                                       entry_date=d),
    "RefundCustomer": lambda d: c.RefundCustomer(receipt_id="R1", amount="10.00", entry_date=d),
    "EnterBill": lambda d: c.EnterBill(vendor_id="V1", vendor_invoice_number="V-200",
                                       entry_date=d,
                                       lines=(c.BillLineIn(description="x", amount="10.00"),)),
    "RecordVendorCredit": lambda d: c.RecordVendorCredit(vendor_id="V1",
                                                         vendor_credit_number="CN-2",
                                                         entry_date=d, amount="10.00"),
    "ApplyVendorCredit": lambda d: c.ApplyVendorCredit(credit_id="VC1", bill_id="B1",
                                                       amount="10.00", entry_date=d),
    "PayVendor": lambda d: c.PayVendor(vendor_id="V1", bank_account_id=BANK, entry_date=d,
                                       applications=(c.BillPayment(bill_id="B1",
                                                                   amount="10.00"),)),
    "RunPayments": lambda d: c.RunPayments(bank_account_id=BANK, entry_date=d,
                                           bill_ids=("B1",)),
    "RecordBankFee": lambda d: c.RecordBankFee(bank_account_id=BANK, entry_date=d,
                                               amount="10.00"),
    "RecordInterest": lambda d: c.RecordInterest(bank_account_id=BANK, entry_date=d,
                                                 amount="10.00"),
    "PostJournalEntry": lambda d: c.PostJournalEntry(entry_date=d, memo="accrual", lines=(
        c.JournalLineIn(account="6000", debit="10.00"),
        c.JournalLineIn(account="2100", credit="10.00"))),
    "PostOpeningBalances": lambda d: c.PostOpeningBalances(entry_date=d, lines=(
        c.JournalLineIn(account="1500", debit="10.00"),
        c.JournalLineIn(account="3900", credit="10.00"))),
    "ReverseJournalEntry": lambda d: c.ReverseJournalEntry(entry_id="JE1", entry_date=d),
    "OpenBankAccount": lambda d: c.OpenBankAccount(bank_account_id="B-SAV", name="Savings",
                                                   number="2", gl_account="1010", entry_date=d,
                                                   opening_balance="10.00"),
}


@pytest.mark.parametrize("name", sorted(DATED))
def test_posting_into_a_closed_period_is_rejected(february_closed: Ledger, name: str) -> None:
    assert_rejected(february_closed, DATED[name](FEB), "period_closed", field="entry_date",
                    match="entry_date 2026-02-20 falls in period 2026-02, which is closed",
                    **CONTROLLER)


@pytest.mark.parametrize("name", sorted(DATED))
def test_posting_outside_every_period_is_rejected(february_closed: Ledger, name: str) -> None:
    assert_rejected(february_closed, DATED[name](NO_PERIOD), "no_open_period",
                    field="entry_date",
                    match="entry_date 2027-01-04 falls in no accounting period", **CONTROLLER)


@pytest.mark.parametrize("name", sorted(DATED))
def test_the_same_posting_in_an_open_period_is_accepted(february_closed: Ledger,
                                                        name: str) -> None:
    # The date was the only problem: the same command dated in March goes through.
    events = run(february_closed, DATED[name](MAR))
    assert events and all(getattr(e, "entry_date", MAR) == MAR for e in events)


def test_reopened_period_takes_postings_again(february_closed: Ledger) -> None:
    cmd = DATED["PostJournalEntry"](FEB)
    assert_rejected(february_closed, cmd, "period_closed", **CONTROLLER)
    [reopened] = run(february_closed, c.ReopenPeriod(period="2026-02", reason="late accrual"))
    assert reopened.type == "period_reopened" and reopened.reason == "late accrual"
    [posted] = run(february_closed, cmd)
    assert posted.entry_date == FEB


def test_default_entry_date_is_the_business_date_and_must_be_open(february_closed: Ledger) -> None:
    # No entry_date given: the business date decides the period.
    in_feb = {**CONTROLLER, "business_date": FEB}
    assert_rejected(february_closed, c.GrantFeeAllowance(invoice_id="I1", amount="1.00"),
                    "period_closed", match="entry_date 2026-02-20 falls in period 2026-02",
                    **in_feb)


# --- accounting periods ----------------------------------------------------------


def test_period_already_open(company: Ledger) -> None:
    assert_rejected(company, c.OpenPeriod(period="2026-03"), "duplicate_id",
                    match="period '2026-03' already exists", field="period", **CONTROLLER)


@pytest.mark.parametrize(("cmd", "message"), [
    (c.OpenPeriod(period="2026-13"), "period '2026-13' is not YYYY-MM"),
    (c.OpenPeriod(period="FY26-Q2"), "period 'FY26-Q2' is not YYYY-MM; give start and end"),
    (c.OpenPeriod(period="2026-Q2", start=date(2026, 5, 1)),
     "give both start and end, or neither"),
    (c.OpenPeriod(period="2026-Q2", start=date(2026, 6, 30), end=date(2026, 5, 1)),
     "period end 2026-05-01 is before its start 2026-06-30"),
], ids=["month-13", "not-a-month", "start-only", "end-before-start"])
def test_invalid_period(company: Ledger, cmd: c.OpenPeriod, message: str) -> None:
    assert_rejected(company, cmd, "invalid_period", match=message, **CONTROLLER)


def test_overlapping_period(company: Ledger) -> None:
    assert_rejected(company, c.OpenPeriod(period="2026-Q2", start=date(2026, 4, 15),
                                          end=date(2026, 6, 30)),
                    "overlapping_period",
                    match="period 2026-Q2 (2026-04-15..2026-06-30) overlaps 2026-04 "
                          "(2026-04-01..2026-04-30)", **CONTROLLER)
    # Starting the day after April ends overlaps nothing.
    [opened] = run(company, c.OpenPeriod(period="2026-Q2", start=date(2026, 5, 1),
                                         end=date(2026, 6, 30)))
    assert (opened.start, opened.end) == (date(2026, 5, 1), date(2026, 6, 30))


def test_close_or_reopen_an_unknown_period(company: Ledger) -> None:
    assert_rejected(company, c.ClosePeriod(period="2025-12"), "unknown_period",
                    match="no accounting period '2025-12'", field="period", **CONTROLLER)
    assert_rejected(company, c.ReopenPeriod(period="2025-12", reason="x"), "unknown_period",
                    match="no accounting period '2025-12'", **CONTROLLER)


def test_close_a_closed_period(company: Ledger) -> None:
    run(company, c.ClosePeriod(period="2026-02"))
    assert_rejected(company, c.ClosePeriod(period="2026-02"), "period_closed",
                    match="period 2026-02 is already closed", **CONTROLLER)


def test_reopen_an_open_period(company: Ledger) -> None:
    assert_rejected(company, c.ReopenPeriod(period="2026-03", reason="x"), "period_not_closed",
                    match="period 2026-03 is not closed", **CONTROLLER)


# --- a batch is all or nothing ---------------------------------------------------


def test_batch_with_a_rejected_third_command_writes_nothing(company: Ledger) -> None:
    before = fingerprint(company)
    batch = [
        c.IssueInvoice(invoice_id="INV-A", customer_id="C1", entry_date=MAR,
                       lines=(inv_line("100.00"),)),
        c.RecordReceipt(receipt_id="RCT-A", customer_id="C1", bank_account_id=BANK,
                        entry_date=MAR, amount="100.00"),
        c.ApplyReceipt(receipt_id="RCT-A", invoice_id="INV-A", amount="100.01"),
    ]
    with pytest.raises(Exception) as info:
        company.execute_batch([Submission(x, **CLERK) for x in batch])
    assert getattr(info.value, "code", None) == "over_application"
    assert "receipt RCT-A has 100.00 unapplied, cannot apply 100.01" in str(info.value)
    assert fingerprint(company) == before
    # The books forgot the first two as well: their ids are still free.
    assert "INV-A" not in company.books.invoices and "RCT-A" not in company.books.receipts
    # And the ledger still works: the corrected batch goes through and the chain verifies.
    events = run(company, *batch[:2], c.ApplyReceipt(receipt_id="RCT-A", invoice_id="INV-A",
                                                      amount="100.00"), who=CLERK)
    assert [e.type for e in events] == ["invoice_issued", "receipt_recorded", "receipt_applied"]
    assert company.books.invoices["INV-A"].open == 0
    assert company.verify().ok


def test_batch_sees_its_own_earlier_commands(company: Ledger) -> None:
    # Invariants hold inside a batch: the second bill reuses the first's vendor invoice number.
    bill = c.EnterBill(vendor_id="V1", vendor_invoice_number="V-7", entry_date=MAR,
                       lines=(c.BillLineIn(description="x", amount="1.00"),))
    before = fingerprint(company)
    with pytest.raises(Exception) as info:
        company.execute_batch([Submission(bill, **CLERK), Submission(bill, **CLERK)])
    assert getattr(info.value, "code", None) == "duplicate_vendor_invoice"
    assert fingerprint(company) == before


# --- input validation: bad input never reaches a handler -------------------------


def _errors(exc: ValidationError) -> list[tuple[tuple[Any, ...], str]]:
    return [(e["loc"], e["msg"]) for e in exc.errors()]


RECEIPT = {"bank_account_id": BANK, "entry_date": "2026-03-02", "amount": "12.34"}


def test_unknown_field_is_refused() -> None:
    with pytest.raises(ValidationError) as info:
        c.RecordReceipt.model_validate({**RECEIPT, "ammount": "12.34"})
    [(loc, msg)] = _errors(info.value)
    assert loc == ("ammount",) and "Extra inputs are not permitted" in msg
    assert "ammount" in str(info.value)


def test_unknown_nested_field_is_refused() -> None:
    with pytest.raises(ValidationError) as info:
        c.SetUpCompany.model_validate({"name": "X", "policies": {"clerk_may_aprove_bills": True}})
    [(loc, msg)] = _errors(info.value)
    assert loc == ("policies", "clerk_may_aprove_bills")
    assert "Extra inputs are not permitted" in msg


@pytest.mark.parametrize(("value", "message"), [
    (12.34, "amount: 12.34 is a float; money must be a decimal string like '12.34' or integer "
            "cents"),
    ("12.345", "amount: '12.345' has more than two decimal places"),
    ("twelve", "amount: 'twelve' is not a decimal amount (expected e.g. '1240.00')"),
    ("", "amount: '' is not a decimal amount"),
    (True, "amount: True is not money"),
    ([12], "amount: [12] is not money"),
], ids=["float", "three-places", "word", "empty", "bool", "list"])
def test_bad_money_is_refused_naming_field_and_value(value: object, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        c.RecordReceipt.model_validate({**RECEIPT, "amount": value})
    [(loc, msg)] = _errors(info.value)
    assert loc == ("amount",)
    assert message in msg


def test_bad_money_in_a_nested_line_names_its_path() -> None:
    with pytest.raises(ValidationError) as info:
        c.IssueInvoice.model_validate({
            "customer_id": "C1", "entry_date": "2026-03-02",
            "lines": [{"description": "a", "unit_price": "1.00"},
                      {"description": "b", "unit_price": 9.99}]})
    [(loc, msg)] = _errors(info.value)
    assert loc == ("lines", 1, "unit_price")
    assert "9.99 is a float" in msg
    assert "lines.1.unit_price" in str(info.value)


@pytest.mark.parametrize(("value", "cents"), [
    ("1240.50", 124050), ("1,240.5", 124050), ("-30", -3000), (" 7.05 ", 705), (125, 125),
    (Decimal("0.10"), 10),
])
def test_good_money_becomes_integer_cents(value: object, cents: int) -> None:
    assert c.RecordReceipt.model_validate({**RECEIPT, "amount": value}).amount == cents


def test_journal_line_needs_exactly_one_side() -> None:
    for sides in ({"debit": "1.00", "credit": "1.00"}, {}):
        with pytest.raises(ValidationError) as info:
            c.JournalLineIn.model_validate({"account": "6000", **sides})
        assert "a journal line needs exactly one of debit or credit" in str(info.value)


@pytest.mark.parametrize(("data", "loc"), [
    ({**RECEIPT, "entry_date": "2026-02-30"}, ("entry_date",)),
    ({**RECEIPT, "receipt_id": "has space"}, ("receipt_id",)),
    ({"bank_account_id": BANK, "amount": "1.00"}, ("entry_date",)),
], ids=["not-a-date", "bad-id", "missing"])
def test_other_bad_fields_are_refused(data: dict[str, Any], loc: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as info:
        c.RecordReceipt.model_validate(data)
    assert [e["loc"] for e in info.value.errors()] == [loc]


def test_commands_are_frozen() -> None:
    cmd = c.RecordReceipt.model_validate(RECEIPT)
    with pytest.raises(ValidationError):
        cmd.amount = 1  # type: ignore[misc]
