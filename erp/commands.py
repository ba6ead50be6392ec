"""Commands: what a caller asks the books to do.

A command is a pydantic model with ``extra="forbid"``; its handler (``erp.handlers``)
decides whether the books accept it and which events record it. Money fields take
integer cents or a decimal string (``"1240.50"``); floats are refused. Ids left out
are assigned by the books from deterministic counters.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from erp.events import (
    AccountType,
    BankDetails,
    CompanyAccounts,
    ControlKind,
    MatchKind,
    Policies,
    Side,
)
from erp.money import Cents

Id = Annotated[str, StringConstraints(min_length=1, max_length=64,
                                      pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")]
Code = Annotated[str, StringConstraints(min_length=1, max_length=16, pattern=r"^[A-Za-z0-9.-]+$")]
Text = Annotated[str, StringConstraints(max_length=500)]


class Command(BaseModel):
    """Base of every command."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


# --- master data -----------------------------------------------------------------


class SetUpCompany(Command):
    """Set up the company: name, currency, posting accounts and policies."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    currency: Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")] = "USD"
    accounts: CompanyAccounts = CompanyAccounts()
    policies: Policies = Policies()


class ChangePolicies(Command):
    """Replace the company's policies."""

    policies: Policies


class OpenAccount(Command):
    """Add an account to the chart of accounts."""

    code: Code
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    account_type: AccountType
    normal_side: Side | None = None
    control: ControlKind | None = None


class OpenPeriod(Command):
    """Open an accounting period; ``period`` is ``YYYY-MM`` unless start and end are given."""

    period: Annotated[str, StringConstraints(min_length=1, max_length=16)]
    start: date | None = None
    end: date | None = None


class ClosePeriod(Command):
    """Close an accounting period (controller only)."""

    period: str


class ReopenPeriod(Command):
    """Reopen a closed accounting period (controller only)."""

    period: str
    reason: Annotated[str, StringConstraints(min_length=1, max_length=500)]


class RegisterCustomer(Command):
    """Add a customer with payment terms and an optional credit limit."""

    customer_id: Id | None = None
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    terms_days: Annotated[int, Field(ge=0, le=365)] = 30
    credit_limit: Cents | None = None


class RegisterVendor(Command):
    """Add a vendor with payment terms and bank details."""

    vendor_id: Id | None = None
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    terms_days: Annotated[int, Field(ge=0, le=365)] = 30
    bank: BankDetails | None = None


class RequestVendorBankChange(Command):
    """Ask to change where a vendor is paid; takes effect only once another role approves."""

    request_id: Id | None = None
    vendor_id: Id
    new_bank: BankDetails
    reason: Text = ""


class ApproveVendorBankChange(Command):
    """Approve a pending bank-detail change (a role other than the requester's)."""

    request_id: Id


class RejectVendorBankChange(Command):
    """Refuse a pending bank-detail change."""

    request_id: Id
    reason: Text = ""


class OpenBankAccount(Command):
    """Add a company bank account with its GL account and opening balance."""

    bank_account_id: Id
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    number: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    gl_account: Code
    entry_date: date
    opening_balance: Cents = 0


# --- receivables -----------------------------------------------------------------


class InvoiceLineIn(Command):
    """A line of an invoice to issue."""

    description: Text
    quantity: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    unit_price: Cents
    account: Code | None = None


class IssueInvoice(Command):
    """Issue a customer invoice; due date defaults to the customer's terms."""

    invoice_id: Id | None = None
    customer_id: Id
    entry_date: date
    due_on: date | None = None
    lines: Annotated[tuple[InvoiceLineIn, ...], Field(min_length=1, max_length=500)]
    tax_rate_bp: Annotated[int, Field(ge=0, le=5000)] = 0
    reference: Text = ""


class IssueCreditMemo(Command):
    """Credit part of an invoice back to the customer."""

    credit_memo_id: Id | None = None
    invoice_id: Id
    amount: Cents
    reason: Annotated[str, StringConstraints(min_length=1, max_length=500)]
    entry_date: date | None = None
    account: Code | None = None


class RecordReceipt(Command):
    """Record cash received into a bank account, unapplied until applied."""

    receipt_id: Id | None = None
    customer_id: Id | None = None
    bank_account_id: Id
    entry_date: date
    amount: Cents
    method: Text = ""
    reference: Text = ""
    payer: Text = ""


class AssignReceiptCustomer(Command):
    """Name the customer of a receipt recorded without one."""

    receipt_id: Id
    customer_id: Id


class ApplyReceipt(Command):
    """Apply part of a receipt to an open invoice of the same customer."""

    receipt_id: Id
    invoice_id: Id
    amount: Cents
    entry_date: date | None = None


class ReverseApplication(Command):
    """Undo (part of) an earlier application of a receipt to an invoice."""

    receipt_id: Id
    invoice_id: Id
    amount: Cents
    entry_date: date | None = None


class WriteOffInvoice(Command):
    """Write off part of an invoice as uncollectible."""

    invoice_id: Id
    amount: Cents
    reason: Annotated[str, StringConstraints(min_length=1, max_length=500)]
    entry_date: date | None = None
    account: Code | None = None


class GrantFeeAllowance(Command):
    """Accept a payment processor's fee as paid on an invoice."""

    invoice_id: Id
    amount: Cents
    reason: Text = "card processor fee"
    entry_date: date | None = None
    account: Code | None = None


class RefundCustomer(Command):
    """Pay unapplied cash of a receipt back to its customer."""

    refund_id: Id | None = None
    receipt_id: Id
    amount: Cents
    entry_date: date | None = None


class RecordReturnedDeposit(Command):
    """Record a deposit the bank returned unpaid (NSF): re-open what its receipt paid and
    post the bank's reversal, matched to the returned item's statement line when given."""

    return_id: Id | None = None
    receipt_id: Id
    line_id: Id | None = None
    entry_date: date | None = None
    reason: Text = "returned unpaid (NSF)"


# --- collections: dunning letters, disputes, promises to pay, credit holds ---------
# (each is dated the caller's business day)

Reason = Annotated[str, StringConstraints(min_length=1, max_length=500, pattern=r"\S")]


class SendDunningLetter(Command):
    """Send a customer a dunning letter for one overdue invoice: level 1, 2 or 3, each
    allowed from a number of days past due (``erp.handlers.DUNNING_LEVEL_DAYS``)."""

    letter_id: Id | None = None
    invoice_id: Id
    level: Annotated[int, Field(ge=1, le=3)]


class RecordDispute(Command):
    """Record a customer's dispute of an invoice (the whole open balance unless
    ``amount`` says less), with the customer's reason."""

    dispute_id: Id | None = None
    invoice_id: Id
    reason: Reason
    amount: Cents | None = None


class ResolveDispute(Command):
    """Resolve a dispute: ``credit_memo`` credits ``amount`` (at most the disputed amount)
    by a credit memo; ``rejected`` leaves the invoice owed in full."""

    dispute_id: Id
    resolution: Annotated[str, StringConstraints(pattern=r"^(credit_memo|rejected)$")]
    reason: Reason
    amount: Cents | None = None
    credit_memo_id: Id | None = None
    account: Code | None = None
    """The credit memo's account (default: the company's sales returns)."""


class RecordPromiseToPay(Command):
    """Record a customer's promise to pay ``amount`` of an invoice by ``pay_by``."""

    promise_id: Id | None = None
    invoice_id: Id
    amount: Cents
    pay_by: date
    note: Text = ""


class PlaceCreditHold(Command):
    """Put a customer on credit hold: no invoice may take what it owes above
    ``credit_limit`` (default 0.00: no new invoice while anything is open)."""

    hold_id: Id | None = None
    customer_id: Id
    reason: Reason
    credit_limit: Cents = 0


class ReleaseCreditHold(Command):
    """Release a customer's credit hold (a clerk only once nothing undisputed is overdue)."""

    customer_id: Id
    reason: Reason


# --- payables --------------------------------------------------------------------


class BillLineIn(Command):
    """A line of a vendor bill to enter."""

    description: Text
    amount: Cents
    account: Code | None = None


class EnterBill(Command):
    """Enter a vendor's invoice; its number must be new for that vendor."""

    bill_id: Id | None = None
    vendor_id: Id
    vendor_invoice_number: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    entry_date: date
    due_on: date | None = None
    lines: Annotated[tuple[BillLineIn, ...], Field(min_length=1, max_length=500)]
    tax: Cents = 0
    discount: Cents = 0
    """An early-payment discount the invoice's terms offer (0: none), with..."""
    discount_until: date | None = None
    """...the last day a payment may take it (both or neither)."""


class ApproveBill(Command):
    """Approve a bill for payment."""

    bill_id: Id


class RecordVendorCredit(Command):
    """Record a vendor's credit note."""

    credit_id: Id | None = None
    vendor_id: Id
    vendor_credit_number: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    entry_date: date
    amount: Cents
    account: Code | None = None


class ApplyVendorCredit(Command):
    """Apply part of a vendor credit to one of that vendor's open bills."""

    credit_id: Id
    bill_id: Id
    amount: Cents
    entry_date: date | None = None


class BillPayment(Command):
    """An amount of a payment for one bill."""

    bill_id: Id
    amount: Cents


class PayVendor(Command):
    """Pay a vendor's approved bills from a bank account, to its approved bank details."""

    payment_id: Id | None = None
    vendor_id: Id
    bank_account_id: Id
    entry_date: date | None = None
    applications: Annotated[tuple[BillPayment, ...], Field(min_length=1, max_length=500)]


class PayBillWithDiscount(Command):
    """Pay a bill in full less its early-payment discount, by its discount date."""

    payment_id: Id | None = None
    bill_id: Id
    bank_account_id: Id
    entry_date: date | None = None
    discount: Cents
    """The discount claimed: exactly the bill's terms (``EnterBill.discount``)."""
    account: Code | None = None
    """Where the discount is earned (default 4950 Purchase discounts)."""


class RunPayments(Command):
    """Pay every approved open bill due by a date (or the listed bills), one payment per vendor."""

    run_id: Id | None = None
    bank_account_id: Id
    entry_date: date | None = None
    due_by: date | None = None
    bill_ids: tuple[Id, ...] | None = None


# --- bank ------------------------------------------------------------------------


class StatementLineIn(Command):
    """A bank statement line to import; ``amount`` is signed (deposits positive)."""

    line_id: Id | None = None
    entry_date: date
    amount: Cents
    description: Text = ""
    reference: Text = ""
    counterparty: Text = ""
    bank_ref: Text = ""


class ImportStatementLines(Command):
    """Import lines of a bank statement into the books."""

    bank_account_id: Id
    lines: Annotated[tuple[StatementLineIn, ...], Field(min_length=1, max_length=10_000)]


class MatchRef(Command):
    """A book document to match a statement line to."""

    kind: MatchKind
    doc_id: Id


class MatchStatementLine(Command):
    """Match a statement line to the documents that explain it; amounts must agree."""

    line_id: Id
    targets: Annotated[tuple[MatchRef, ...], Field(min_length=1, max_length=500)]


class UnmatchStatementLine(Command):
    """Undo a statement line's match."""

    line_id: Id


class RecordBankFee(Command):
    """Record a bank fee, optionally matching it to its statement line."""

    fee_id: Id | None = None
    bank_account_id: Id
    entry_date: date
    amount: Cents
    memo: Text = ""
    line_id: Id | None = None
    account: Code | None = None


class RecordInterest(Command):
    """Record interest the bank paid, optionally matching it to its statement line."""

    interest_id: Id | None = None
    bank_account_id: Id
    entry_date: date
    amount: Cents
    memo: Text = ""
    line_id: Id | None = None
    account: Code | None = None


# --- general ledger --------------------------------------------------------------


class JournalLineIn(Command):
    """A journal line: exactly one of debit or credit, positive."""

    account: Code
    debit: Cents | None = None
    credit: Cents | None = None
    party: Id | None = None
    memo: Text = ""

    @model_validator(mode="after")
    def _one_side(self) -> JournalLineIn:
        if (self.debit is None) == (self.credit is None):
            raise ValueError("a journal line needs exactly one of debit or credit")
        return self

    @property
    def signed(self) -> int:
        """Debit positive, credit negative."""
        return self.debit if self.debit is not None else -(self.credit or 0)


class PostJournalEntry(Command):
    """Post a balanced manual journal entry."""

    entry_id: Id | None = None
    entry_date: date
    memo: Annotated[str, StringConstraints(min_length=1, max_length=500)]
    lines: Annotated[tuple[JournalLineIn, ...], Field(min_length=2, max_length=1000)]


class PostOpeningBalances(Command):
    """Post opening balances of non-control accounts (controller or system)."""

    entry_id: Id | None = None
    entry_date: date
    memo: Text = "opening balances"
    lines: Annotated[tuple[JournalLineIn, ...], Field(min_length=2, max_length=5000)]


class ReverseJournalEntry(Command):
    """Reverse a journal entry with an entry of every line negated."""

    entry_id: Id
    reversal_id: Id | None = None
    entry_date: date
    memo: Text = ""



# --- purchasing: purchase orders, goods receipts, three-way match, holds -------------

LineNo = Annotated[int, Field(ge=1, le=500)]
Quantity = Annotated[int, Field(ge=1, le=10_000_000)]


class PurchaseOrderLineIn(Command):
    """A line of a purchase order to issue."""

    item: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    description: Text = ""
    quantity: Quantity
    unit_price: Cents
    account: Code | None = None
    """Where the goods are charged when received (default: the company's expense account)."""


class IssuePurchaseOrder(Command):
    """Issue a purchase order to a vendor: items, quantities, agreed unit prices."""

    po_id: Id | None = None
    vendor_id: Id
    order_date: date
    expected_on: date | None = None
    lines: Annotated[tuple[PurchaseOrderLineIn, ...], Field(min_length=1, max_length=200)]


class GoodsReceiptLineIn(Command):
    """A quantity received against one line (numbered from 1) of a purchase order."""

    line: LineNo
    quantity: Quantity


class RecordGoodsReceipt(Command):
    """Record goods received against a purchase order's lines (a receiving report)."""

    receipt_id: Id | None = None
    po_id: Id
    entry_date: date
    reference: Text = ""
    """The receiving report's or packing slip's number."""
    lines: Annotated[tuple[GoodsReceiptLineIn, ...], Field(min_length=1, max_length=200)]


class MatchedBillLineIn(Command):
    """A billed line against one line of the purchase order: quantity and unit price."""

    line: LineNo
    quantity: Quantity
    unit_price: Cents
    description: Text = ""


class EnterMatchedBill(Command):
    """Enter a vendor invoice against a purchase order and match it to the PO and the goods
    received (three-way match); a bill outside the company's tolerance is put on hold."""

    bill_id: Id | None = None
    po_id: Id
    vendor_invoice_number: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    entry_date: date
    due_on: date | None = None
    lines: Annotated[tuple[MatchedBillLineIn, ...], Field(min_length=1, max_length=200)]


class ReleaseBillHold(Command):
    """Release a bill's matching hold (an approver's decision), giving the reason."""

    bill_id: Id
    reason: Annotated[str, StringConstraints(min_length=1, max_length=500,
                                             pattern=r"\S")]


# --- accruals and prepaids -------------------------------------------------------

Period = Annotated[str, StringConstraints(pattern=r"^[0-9]{4}-[0-9]{2}$")]


class PostAccrual(Command):
    """Post a balanced journal entry as an accrual of its period, flagged to reverse on the
    first day of the next period (``ReverseAccruals`` reverses it there)."""

    entry_id: Id | None = None
    entry_date: date
    memo: Annotated[str, StringConstraints(min_length=1, max_length=500)]
    lines: Annotated[tuple[JournalLineIn, ...], Field(min_length=2, max_length=1000)]


class ReverseAccruals(Command):
    """Reverse the due accruals of a period on the first day of the next one: every accrual
    of the period not yet reversed, or only those named in ``entry_ids``."""

    run_id: Id | None = None
    period: Period
    entry_ids: Annotated[tuple[Id, ...], Field(max_length=1000)] = ()
    memo: Text = ""


class RecordPrepaid(Command):
    """Record a prepaid schedule for a bill's line on a prepaid account: the amount, the
    expense account, the first month and either the number of months or the last month."""

    schedule_id: Id | None = None
    bill_id: Id
    account: Code
    """The prepaid (asset) account the bill's line debited."""
    expense_account: Code
    amount: Cents
    start_period: Period
    months: Annotated[int, Field(ge=1, le=120)] | None = None
    end_period: Period | None = None
    description: Text = ""


class RunAmortization(Command):
    """Post a period's month of every prepaid schedule running in it (or of those named in
    ``schedule_ids``), dated the period's last day, once per schedule and month."""

    run_id: Id | None = None
    period: Period
    schedule_ids: Annotated[tuple[Id, ...], Field(max_length=1000)] = ()


# --- fixed assets ----------------------------------------------------------------


class DefineAssetClass(Command):
    """Define a fixed-asset class: the accounts of its cost, its accumulated depreciation
    (a contra-asset account) and its depreciation expense."""

    class_id: Id
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    cost_account: Code
    accumulated_account: Code
    expense_account: Code


class CapitalizeAsset(Command):
    """Capitalize an amount a bill's line or a journal entry put on an expense (or clearing)
    account: Dr the class's cost account, Cr ``source_account``; with the asset's class,
    in-service date, useful life in months and salvage value."""

    asset_id: Id | None = None
    class_id: Id
    bill_id: Id | None = None
    entry_id: Id | None = None
    """Exactly one of ``bill_id`` and ``entry_id``: where the amount was first booked."""
    source_account: Code
    amount: Cents
    entry_date: date
    in_service_date: date
    life_months: Annotated[int, Field(ge=1, le=600)]
    salvage: Cents = 0
    description: Text = ""


class RunDepreciation(Command):
    """Post a period's straight-line month of every asset in service and not fully
    depreciated (or of those named in ``asset_ids``), dated the period's last day."""

    run_id: Id | None = None
    period: Period
    asset_ids: Annotated[tuple[Id, ...], Field(max_length=1000)] = ()


class DisposeAsset(Command):
    """Dispose of an asset: remove its cost and accumulated depreciation, put the proceeds
    on ``proceeds_account`` and the difference on ``gain_loss_account``."""

    asset_id: Id
    entry_date: date
    proceeds: Cents = 0
    proceeds_account: Code
    gain_loss_account: Code
    reference: Text = ""


# --- year-end close --------------------------------------------------------------


class CloseFiscalYear(Command):
    """Close a fiscal year (the calendar year ``fiscal_year``) into retained earnings: every
    revenue and expense account's balance of the year is closed to ``retained_earnings`` by
    one closing entry dated the year's last day, once every period of the year is closed
    (controller only)."""

    fiscal_year: Annotated[str, StringConstraints(pattern=r"^[0-9]{4}$")]
    retained_earnings: Code
    """The chart's retained-earnings (equity) account."""
    memo: Text = ""


# --- several bank accounts: transfers, a company card, bank errors -----------------


class TransferFunds(Command):
    """Send money from one of the company's bank accounts to another: out of the sending
    account on ``entry_date`` into the in-transit clearing account (``ReceiveTransfer``
    records its arrival), matched to the sending account's statement line when given."""

    transfer_id: Id | None = None
    from_bank_account_id: Id
    to_bank_account_id: Id
    entry_date: date
    amount: Cents
    transit_account: Code = "1090"
    memo: Text = ""
    line_id: Id | None = None


class ReceiveTransfer(Command):
    """Record a transfer's arrival in the receiving account (out of in-transit), matched
    to the receiving account's statement line when given."""

    transfer_id: Id
    entry_date: date
    line_id: Id | None = None


class RecordCardCharge(Command):
    """Record a charge on the company card (a liability bank account) to an expense
    account, matched to its card statement line when given."""

    charge_id: Id | None = None
    bank_account_id: Id
    entry_date: date
    amount: Cents
    account: Code
    merchant: Text = ""
    memo: Text = ""
    line_id: Id | None = None


class ReportBankError(Command):
    """Report a statement line to the bank as its error (a duplicated charge, another
    client's deposit): a reconciling item until the bank corrects it; nothing is posted."""

    error_id: Id | None = None
    line_id: Id
    description: Annotated[str, StringConstraints(min_length=1, max_length=500)]


COMMANDS: dict[str, type[Command]] = {
    cls.__name__: cls
    for cls in (
        SetUpCompany, ChangePolicies, OpenAccount, OpenPeriod, ClosePeriod, ReopenPeriod,
        RegisterCustomer, RegisterVendor, RequestVendorBankChange, ApproveVendorBankChange,
        RejectVendorBankChange, OpenBankAccount, IssueInvoice, IssueCreditMemo, RecordReceipt,
        AssignReceiptCustomer, ApplyReceipt, ReverseApplication, WriteOffInvoice,
        GrantFeeAllowance, RefundCustomer, RecordReturnedDeposit, EnterBill, ApproveBill,
        SendDunningLetter, RecordDispute, ResolveDispute, RecordPromiseToPay,
        PlaceCreditHold, ReleaseCreditHold,
        RecordVendorCredit, ApplyVendorCredit, PayVendor, PayBillWithDiscount, RunPayments,
        ImportStatementLines,
        MatchStatementLine, UnmatchStatementLine, RecordBankFee, RecordInterest, PostJournalEntry,
        PostOpeningBalances, ReverseJournalEntry,
        PostAccrual, ReverseAccruals, RecordPrepaid, RunAmortization,
        IssuePurchaseOrder, RecordGoodsReceipt, EnterMatchedBill, ReleaseBillHold,
        TransferFunds, ReceiveTransfer, RecordCardCharge, ReportBankError,
        DefineAssetClass, CapitalizeAsset, RunDepreciation, DisposeAsset,
        CloseFiscalYear,
    )
}
"""Every command by class name (the API and the audit trail use these names)."""


# --- payroll and sales tax -------------------------------------------------------


class PayrollLineIn(Command):
    """One employee's row of a payroll register as the provider sent it."""

    employee_id: Id
    name: Text = ""
    gross: Cents
    withheld: Cents = 0
    """Employee taxes and deductions withheld (income tax, the employee's FICA, benefits)."""
    employer_taxes: Cents = 0
    """The employer's own payroll taxes on the row (FICA match, unemployment)."""
    net: Cents


class PostPayroll(Command):
    """Post a payroll provider's register as one journal: Dr wages (gross), Dr employer
    payroll taxes, Cr withholdings payable, Cr employer taxes payable, Cr the bank (net pay).
    Every row must tie (net = gross - withheld) and so must the register's totals, when
    given."""

    register_id: Annotated[str, StringConstraints(min_length=1, max_length=64,
                                                  pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")]
    entry_date: date
    """The pay date."""
    period_start: date
    period_end: date
    bank_account_id: Id
    lines: Annotated[tuple[PayrollLineIn, ...], Field(min_length=1, max_length=2000)]
    gross_total: Cents | None = None
    net_total: Cents | None = None
    """The register's totals row (checked against the rows when given)."""
    wage_account: Code = "6400"
    employer_tax_account: Code = "6410"
    withholding_account: Code = "2300"
    employer_tax_payable_account: Code = "2310"
    memo: Text = ""


class RegisterTaxJurisdiction(Command):
    """Register a sales-tax jurisdiction (controller or system): its rate in basis points,
    the account its tax is collected on, the day of the next month a return is due."""

    jurisdiction_id: Id
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    rate_bp: Annotated[int, Field(ge=1, le=5000)]
    account: Code = "2200"
    due_day: Annotated[int, Field(ge=1, le=28)] = 20


class FileSalesTaxReturn(Command):
    """File a jurisdiction's sales-tax return for a month: the month's sales, the taxable
    part and the tax due, which must be the books' own figures (the month's invoices, and
    the tax account's movement of the month)."""

    return_id: Id | None = None
    jurisdiction_id: Id
    period: Period
    entry_date: date
    """The filing date (after the month's last day)."""
    gross_sales: Cents
    taxable_sales: Cents
    tax_due: Cents


class RemitSalesTax(Command):
    """Pay a filed return's tax to the authority from a bank account (Dr the jurisdiction's
    account, Cr the bank), never more than the return leaves unpaid."""

    payment_id: Id | None = None
    return_id: Id
    bank_account_id: Id
    entry_date: date
    amount: Cents


COMMANDS.update({cls.__name__: cls for cls in (PostPayroll, RegisterTaxJurisdiction,
                                               FileSalesTaxReturn, RemitSalesTax)})


class ReversePayroll(Command):
    """Reverse a posted payroll register (every line of its journal negated), so that a
    corrected register can be posted under its id."""

    register_id: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    entry_date: date
    memo: Text = ""


COMMANDS[ReversePayroll.__name__] = ReversePayroll
