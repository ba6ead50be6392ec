"""Events of the company's books (the ``erp`` realm).

An event is a frozen pydantic model named in the past tense, with a snake_case
``type`` literal used as the discriminator. It carries business facts only; the
envelope (position, stream, version, actor, dates, hashes) belongs to the store.
Every event that moves money carries the accounts it posts to, so that posting
rules are pure functions of the event. A stored ``type`` is never renamed; a
changed shape bumps ``schema_version`` and registers an upcaster in ``UPCASTERS``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

from erp.money import Cents

Role = Literal["clerk", "controller", "system"]
AccountType = Literal["asset", "liability", "equity", "revenue", "expense"]
Side = Literal["debit", "credit"]
ControlKind = Literal["ar", "ap", "unapplied_cash", "bank"]
MatchKind = Literal["receipt", "payment", "refund", "fee", "interest", "return",
                    "transfer_out", "transfer_in", "card_charge"]


class Record(BaseModel):
    """A frozen value inside an event."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class BankDetails(Record):
    """Where money to a vendor is sent."""

    account_name: str
    routing: str
    account_number: str

    def masked(self) -> str:
        """The account number with all but the last four digits hidden."""
        return f"{self.routing}/****{self.account_number[-4:]}"


class CompanyAccounts(Record):
    """The accounts the company's automatic postings use."""

    ar: str = "1200"
    unapplied_cash: str = "2150"
    ap: str = "2000"
    tax_payable: str = "2200"
    revenue: str = "4000"
    expense: str = "6000"
    bad_debt: str = "6900"
    card_fees: str = "6810"
    bank_fees: str = "6800"
    interest_income: str = "4900"
    sales_returns: str = "4050"
    opening_equity: str = "3900"


class Policies(Record):
    """Company policies the ledger enforces."""

    clerk_may_post_to_control_accounts: bool = False
    clerk_may_approve_bills: bool = True
    clerk_write_off_limit: Cents = 0
    """Most a clerk may write off on one invoice, all write-offs together."""
    clerk_fee_allowance_bp: int = Field(default=500, ge=0, le=10_000)
    """Fee allowances a clerk may grant on one invoice, in basis points of its total..."""
    clerk_fee_allowance_fixed: Cents = 100
    """...plus this fixed amount (a processor's per-transaction fee)."""
    enforce_credit_limits: bool = True
    minimum_bank_balance: Cents | None = None
    """The cash policy: no payment may take a bank account's book balance below this
    (``0``: no overdraft); ``None``: no cash policy (the books allow an overdraft)."""
    match_price_tolerance_bp: int | None = Field(default=None, ge=0, le=10_000)
    """Three-way match: how far above its PO unit price a bill may bill a unit, in basis
    points of that price, before the bill is held (``None``: no tolerance, as 0)."""
    match_quantity_tolerance_bp: int | None = Field(default=None, ge=0, le=10_000)
    """Three-way match: how far beyond the quantity received a PO line may be billed, in
    basis points of the quantity received, before the bill is held (``None``: as 0)."""

    @model_serializer(mode="wrap")
    def _omit_no_cash_policy(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Stored before the cash policy existed, a company's policies had no such key: keep
        # it out when unset, so that those events encode (and hash) exactly as they did.
        data: dict[str, Any] = handler(self)
        for key in _OPTIONAL_POLICIES:  # later policies likewise: out when unset
            if data.get(key) is None:
                data.pop(key, None)
        return data


_OPTIONAL_POLICIES = ("minimum_bank_balance", "match_price_tolerance_bp",
                      "match_quantity_tolerance_bp")
"""Policies added after companies were first stored: left out of the payload when unset."""


class InvoiceLine(Record):
    """One line of a customer invoice."""

    description: str
    quantity: int
    unit_price: int
    amount: int
    account: str


class BillLine(Record):
    """One line of a vendor bill."""

    description: str
    amount: int
    account: str


class JournalLine(Record):
    """One line of a journal entry; ``amount`` is signed (debit positive)."""

    account: str
    amount: int
    party: str | None = None
    memo: str = ""


class BillApplication(Record):
    """Part of a payment or credit applied to one bill."""

    bill_id: str
    amount: int


class MatchTarget(Record):
    """A book document a statement line is matched to, with its signed bank amount."""

    kind: MatchKind
    doc_id: str
    amount: int


class PaymentRef(Record):
    """One vendor payment made by a payment run."""

    payment_id: str
    vendor_id: str
    amount: int


class Event(Record):
    """Base of every event of the books."""

    schema_version: ClassVar[int] = 1
    stream_kind: ClassVar[str]
    stream_key: ClassVar[str]
    if TYPE_CHECKING:
        # Every concrete event declares ``type`` as its own Literal field (the
        # discriminator). Declared here for the type checker only: a field on the base
        # would change every event's fields, and so its payload and the log's hashes.
        type: str

    @property
    def stream(self) -> str:
        """The stream this event belongs to (``invoice:INV-000001``)."""
        return f"{self.stream_kind}:{getattr(self, self.stream_key)}"


# --- master data -----------------------------------------------------------------


class CompanySetUp(Event):
    """The company, its posting accounts and its policies were set up."""

    type: Literal["company_set_up"] = "company_set_up"
    stream_kind: ClassVar[str] = "company"
    stream_key: ClassVar[str] = "company_id"
    company_id: str = "main"
    name: str
    currency: str = "USD"
    accounts: CompanyAccounts
    policies: Policies


class PoliciesChanged(Event):
    """The company's policies were changed."""

    type: Literal["policies_changed"] = "policies_changed"
    stream_kind: ClassVar[str] = "company"
    stream_key: ClassVar[str] = "company_id"
    company_id: str = "main"
    policies: Policies


class AccountOpened(Event):
    """An account was added to the chart of accounts."""

    type: Literal["account_opened"] = "account_opened"
    stream_kind: ClassVar[str] = "account"
    stream_key: ClassVar[str] = "code"
    code: str
    name: str
    account_type: AccountType
    normal_side: Side
    control: ControlKind | None = None


class PeriodOpened(Event):
    """An accounting period was opened for posting."""

    type: Literal["period_opened"] = "period_opened"
    stream_kind: ClassVar[str] = "period"
    stream_key: ClassVar[str] = "period"
    period: str
    start: date
    end: date


class PeriodClosed(Event):
    """An accounting period was closed; nothing more posts into it."""

    type: Literal["period_closed"] = "period_closed"
    stream_kind: ClassVar[str] = "period"
    stream_key: ClassVar[str] = "period"
    period: str


class PeriodReopened(Event):
    """A closed accounting period was reopened."""

    type: Literal["period_reopened"] = "period_reopened"
    stream_kind: ClassVar[str] = "period"
    stream_key: ClassVar[str] = "period"
    period: str
    reason: str


class CustomerRegistered(Event):
    """A customer was added."""

    type: Literal["customer_registered"] = "customer_registered"
    stream_kind: ClassVar[str] = "customer"
    stream_key: ClassVar[str] = "customer_id"
    customer_id: str
    name: str
    terms_days: int
    credit_limit: int | None = None


class VendorRegistered(Event):
    """A vendor was added."""

    type: Literal["vendor_registered"] = "vendor_registered"
    stream_kind: ClassVar[str] = "vendor"
    stream_key: ClassVar[str] = "vendor_id"
    vendor_id: str
    name: str
    terms_days: int
    bank: BankDetails | None = None


class VendorBankChangeRequested(Event):
    """Someone asked to change where a vendor is paid; not in effect yet."""

    type: Literal["vendor_bank_change_requested"] = "vendor_bank_change_requested"
    stream_kind: ClassVar[str] = "bank-change"
    stream_key: ClassVar[str] = "request_id"
    request_id: str
    vendor_id: str
    new_bank: BankDetails
    reason: str
    requested_by_role: Role


class VendorBankChangeApproved(Event):
    """A bank-detail change was approved by a different role and is now in effect."""

    type: Literal["vendor_bank_change_approved"] = "vendor_bank_change_approved"
    stream_kind: ClassVar[str] = "bank-change"
    stream_key: ClassVar[str] = "request_id"
    request_id: str
    vendor_id: str
    new_bank: BankDetails
    approved_by_role: Role


class VendorBankChangeRejected(Event):
    """A bank-detail change was refused; the vendor's details are unchanged."""

    type: Literal["vendor_bank_change_rejected"] = "vendor_bank_change_rejected"
    stream_kind: ClassVar[str] = "bank-change"
    stream_key: ClassVar[str] = "request_id"
    request_id: str
    vendor_id: str
    reason: str


class BankAccountOpened(Event):
    """A company bank account was opened, with its GL account and opening balance."""

    type: Literal["bank_account_opened"] = "bank_account_opened"
    stream_kind: ClassVar[str] = "bank-account"
    stream_key: ClassVar[str] = "bank_account_id"
    bank_account_id: str
    name: str
    number: str
    gl_account: str
    entry_date: date
    opening_balance: int
    equity_account: str


# --- receivables -----------------------------------------------------------------


class InvoiceIssued(Event):
    """A customer invoice was posted to receivables."""

    type: Literal["invoice_issued"] = "invoice_issued"
    stream_kind: ClassVar[str] = "invoice"
    stream_key: ClassVar[str] = "invoice_id"
    invoice_id: str
    customer_id: str
    entry_date: date
    due_on: date
    lines: tuple[InvoiceLine, ...]
    subtotal: int
    tax: int
    total: int
    ar_account: str
    tax_account: str
    reference: str = ""


class CreditMemoIssued(Event):
    """A credit memo reduced what a customer owes on an invoice."""

    type: Literal["credit_memo_issued"] = "credit_memo_issued"
    stream_kind: ClassVar[str] = "credit-memo"
    stream_key: ClassVar[str] = "credit_memo_id"
    credit_memo_id: str
    invoice_id: str
    customer_id: str
    entry_date: date
    amount: int
    account: str
    ar_account: str
    reason: str


class ReceiptRecorded(Event):
    """Cash from a customer was recorded; it sits as unapplied cash until applied."""

    type: Literal["receipt_recorded"] = "receipt_recorded"
    stream_kind: ClassVar[str] = "receipt"
    stream_key: ClassVar[str] = "receipt_id"
    receipt_id: str
    customer_id: str | None
    bank_account_id: str
    entry_date: date
    amount: int
    bank_gl_account: str
    unapplied_account: str
    method: str = ""
    reference: str = ""
    payer: str = ""


class ReceiptCustomerAssigned(Event):
    """A receipt recorded without a known payer was assigned to a customer."""

    type: Literal["receipt_customer_assigned"] = "receipt_customer_assigned"
    stream_kind: ClassVar[str] = "receipt"
    stream_key: ClassVar[str] = "receipt_id"
    receipt_id: str
    customer_id: str


class ReceiptApplied(Event):
    """Part of a receipt was applied to an open invoice."""

    type: Literal["receipt_applied"] = "receipt_applied"
    stream_kind: ClassVar[str] = "receipt"
    stream_key: ClassVar[str] = "receipt_id"
    receipt_id: str
    invoice_id: str
    customer_id: str
    entry_date: date
    amount: int
    unapplied_account: str
    ar_account: str


class ApplicationReversed(Event):
    """An earlier application of a receipt to an invoice was undone."""

    type: Literal["application_reversed"] = "application_reversed"
    stream_kind: ClassVar[str] = "receipt"
    stream_key: ClassVar[str] = "receipt_id"
    receipt_id: str
    invoice_id: str
    customer_id: str
    entry_date: date
    amount: int
    unapplied_account: str
    ar_account: str


class InvoiceWrittenOff(Event):
    """Part of an invoice was written off as uncollectible."""

    type: Literal["invoice_written_off"] = "invoice_written_off"
    stream_kind: ClassVar[str] = "invoice"
    stream_key: ClassVar[str] = "invoice_id"
    invoice_id: str
    customer_id: str
    entry_date: date
    amount: int
    account: str
    ar_account: str
    reason: str


class FeeAllowanceGranted(Event):
    """A payment processor's fee was accepted as paid on an invoice."""

    type: Literal["fee_allowance_granted"] = "fee_allowance_granted"
    stream_kind: ClassVar[str] = "invoice"
    stream_key: ClassVar[str] = "invoice_id"
    invoice_id: str
    customer_id: str
    entry_date: date
    amount: int
    account: str
    ar_account: str
    reason: str


class CustomerRefunded(Event):
    """Unapplied cash was paid back to a customer."""

    type: Literal["customer_refunded"] = "customer_refunded"
    stream_kind: ClassVar[str] = "receipt"
    stream_key: ClassVar[str] = "receipt_id"
    refund_id: str
    receipt_id: str
    customer_id: str
    bank_account_id: str
    entry_date: date
    amount: int
    bank_gl_account: str
    unapplied_account: str


class DepositReturned(Event):
    """The bank returned a deposit unpaid (NSF): the receipt's cash left the bank again.

    Whatever the receipt had paid was re-opened first (by ``ApplicationReversed`` events
    of the same command); this event posts the bank's reversal: the receipt's unapplied
    cash is debited and the bank account credited by the receipt's amount.
    """

    type: Literal["deposit_returned"] = "deposit_returned"
    stream_kind: ClassVar[str] = "receipt"
    stream_key: ClassVar[str] = "receipt_id"
    return_id: str
    receipt_id: str
    customer_id: str | None
    bank_account_id: str
    entry_date: date
    amount: int
    bank_gl_account: str
    unapplied_account: str
    reason: str = ""


# --- collections: dunning letters, disputes, promises to pay, credit holds ---------
# (the collections template: none of these move money; a dispute resolved by a credit
# memo posts through the CreditMemoIssued written with it)

DisputeOutcome = Literal["credited", "rejected"]


class DunningLetterSent(Event):
    """A dunning letter (level 1, 2 or 3) was sent to a customer for an overdue invoice."""

    type: Literal["dunning_letter_sent"] = "dunning_letter_sent"
    stream_kind: ClassVar[str] = "dunning-letter"
    stream_key: ClassVar[str] = "letter_id"
    letter_id: str
    invoice_id: str
    customer_id: str
    level: int
    sent_on: date
    days_past_due: int
    amount: int
    """The invoice's open balance the letter asks for."""


class InvoiceDisputed(Event):
    """A customer disputed an invoice (or part of it): the invoice is left out of dunning
    until the dispute is resolved."""

    type: Literal["invoice_disputed"] = "invoice_disputed"
    stream_kind: ClassVar[str] = "dispute"
    stream_key: ClassVar[str] = "dispute_id"
    dispute_id: str
    invoice_id: str
    customer_id: str
    opened_on: date
    amount: int
    reason: str


class DisputeResolved(Event):
    """A dispute was resolved: ``credited`` by the credit memo ``credit_memo_id`` (written
    just before, for ``amount``) or ``rejected`` (the customer owes the invoice)."""

    type: Literal["dispute_resolved"] = "dispute_resolved"
    stream_kind: ClassVar[str] = "dispute"
    stream_key: ClassVar[str] = "dispute_id"
    dispute_id: str
    invoice_id: str
    customer_id: str
    resolved_on: date
    outcome: DisputeOutcome
    amount: int
    """What was credited (0 when rejected)."""
    credit_memo_id: str
    """The credit memo (empty when rejected)."""
    reason: str


class PromiseToPayRecorded(Event):
    """A customer promised to pay ``amount`` of an invoice by ``pay_by``: no letter goes
    out for it until that day has passed without the payment."""

    type: Literal["promise_to_pay_recorded"] = "promise_to_pay_recorded"
    stream_kind: ClassVar[str] = "promise"
    stream_key: ClassVar[str] = "promise_id"
    promise_id: str
    invoice_id: str
    customer_id: str
    recorded_on: date
    pay_by: date
    amount: int
    balance: int
    """The invoice's open balance when promised (kept once it is ``amount`` lower)."""
    note: str


class CreditHoldPlaced(Event):
    """A customer was put on credit hold: no invoice may take its open receivables above
    ``credit_limit`` until the hold is released."""

    type: Literal["credit_hold_placed"] = "credit_hold_placed"
    stream_kind: ClassVar[str] = "credit-hold"
    stream_key: ClassVar[str] = "hold_id"
    hold_id: str
    customer_id: str
    placed_on: date
    credit_limit: int
    reason: str


class CreditHoldReleased(Event):
    """A customer's credit hold was released."""

    type: Literal["credit_hold_released"] = "credit_hold_released"
    stream_kind: ClassVar[str] = "credit-hold"
    stream_key: ClassVar[str] = "hold_id"
    hold_id: str
    customer_id: str
    released_on: date
    reason: str
    released_by_role: Role


# --- payables --------------------------------------------------------------------


class BillEntered(Event):
    """A vendor's invoice was entered into payables."""

    type: Literal["bill_entered"] = "bill_entered"
    stream_kind: ClassVar[str] = "bill"
    stream_key: ClassVar[str] = "bill_id"
    bill_id: str
    vendor_id: str
    vendor_invoice_number: str
    entry_date: date
    due_on: date
    lines: tuple[BillLine, ...]
    tax: int
    total: int
    ap_account: str
    tax_account: str


class BillApproved(Event):
    """A bill was approved for payment."""

    type: Literal["bill_approved"] = "bill_approved"
    stream_kind: ClassVar[str] = "bill"
    stream_key: ClassVar[str] = "bill_id"
    bill_id: str
    vendor_id: str


class BillTermsSet(Event):
    """A bill's early-payment discount: ``discount`` off if paid by ``discount_until``
    (the vendor's terms, e.g. 2/10 net 30: 2% off within 10 days of the invoice)."""

    type: Literal["bill_terms_set"] = "bill_terms_set"
    stream_kind: ClassVar[str] = "bill"
    stream_key: ClassVar[str] = "bill_id"
    bill_id: str
    vendor_id: str
    discount: int
    discount_until: date


class PurchaseDiscountTaken(Event):
    """An early-payment discount was taken on a bill, with the payment that settled it:
    payables are relieved by the discount, which is earned on the purchase-discounts
    account."""

    type: Literal["purchase_discount_taken"] = "purchase_discount_taken"
    stream_kind: ClassVar[str] = "bill"
    stream_key: ClassVar[str] = "bill_id"
    bill_id: str
    vendor_id: str
    payment_id: str
    entry_date: date
    amount: int
    ap_account: str
    discount_account: str


class VendorCreditRecorded(Event):
    """A vendor's credit note was recorded against payables."""

    type: Literal["vendor_credit_recorded"] = "vendor_credit_recorded"
    stream_kind: ClassVar[str] = "vendor-credit"
    stream_key: ClassVar[str] = "credit_id"
    credit_id: str
    vendor_id: str
    vendor_credit_number: str
    entry_date: date
    amount: int
    account: str
    ap_account: str


class VendorCreditApplied(Event):
    """Part of a vendor credit was applied to one of that vendor's bills."""

    type: Literal["vendor_credit_applied"] = "vendor_credit_applied"
    stream_kind: ClassVar[str] = "vendor-credit"
    stream_key: ClassVar[str] = "credit_id"
    credit_id: str
    bill_id: str
    vendor_id: str
    entry_date: date
    amount: int
    ap_account: str


class PaymentRunCreated(Event):
    """A payment run paid a set of approved bills, one payment per vendor."""

    type: Literal["payment_run_created"] = "payment_run_created"
    stream_kind: ClassVar[str] = "payment-run"
    stream_key: ClassVar[str] = "run_id"
    run_id: str
    bank_account_id: str
    entry_date: date
    payments: tuple[PaymentRef, ...]
    total: int


class VendorPaid(Event):
    """A payment left the bank for a vendor, applied to its bills."""

    type: Literal["vendor_paid"] = "vendor_paid"
    stream_kind: ClassVar[str] = "payment"
    stream_key: ClassVar[str] = "payment_id"
    payment_id: str
    vendor_id: str
    run_id: str | None
    bank_account_id: str
    entry_date: date
    amount: int
    paid_to: BankDetails
    applications: tuple[BillApplication, ...]
    bank_gl_account: str
    ap_account: str


# --- bank ------------------------------------------------------------------------


class StatementLineImported(Event):
    """A line of the bank's statement was imported; ``amount`` is signed (deposit +)."""

    type: Literal["statement_line_imported"] = "statement_line_imported"
    stream_kind: ClassVar[str] = "statement-line"
    stream_key: ClassVar[str] = "line_id"
    line_id: str
    bank_account_id: str
    entry_date: date
    amount: int
    description: str = ""
    reference: str = ""
    counterparty: str = ""
    bank_ref: str = ""


class StatementLineMatched(Event):
    """A statement line was matched to the book documents that explain it."""

    type: Literal["statement_line_matched"] = "statement_line_matched"
    stream_kind: ClassVar[str] = "statement-line"
    stream_key: ClassVar[str] = "line_id"
    line_id: str
    bank_account_id: str
    targets: tuple[MatchTarget, ...]


class StatementLineUnmatched(Event):
    """A statement line's match was undone."""

    type: Literal["statement_line_unmatched"] = "statement_line_unmatched"
    stream_kind: ClassVar[str] = "statement-line"
    stream_key: ClassVar[str] = "line_id"
    line_id: str
    bank_account_id: str
    targets: tuple[MatchTarget, ...]


class BankFeeRecorded(Event):
    """A fee the bank charged was recorded."""

    type: Literal["bank_fee_recorded"] = "bank_fee_recorded"
    stream_kind: ClassVar[str] = "bank-fee"
    stream_key: ClassVar[str] = "fee_id"
    fee_id: str
    bank_account_id: str
    entry_date: date
    amount: int
    account: str
    bank_gl_account: str
    memo: str = ""


class InterestRecorded(Event):
    """Interest the bank paid was recorded."""

    type: Literal["interest_recorded"] = "interest_recorded"
    stream_kind: ClassVar[str] = "interest"
    stream_key: ClassVar[str] = "interest_id"
    interest_id: str
    bank_account_id: str
    entry_date: date
    amount: int
    account: str
    bank_gl_account: str
    memo: str = ""


# --- general ledger --------------------------------------------------------------


class JournalEntryPosted(Event):
    """A journal entry was posted (manual or opening balances)."""

    type: Literal["journal_entry_posted"] = "journal_entry_posted"
    stream_kind: ClassVar[str] = "journal"
    stream_key: ClassVar[str] = "entry_id"
    entry_id: str
    entry_date: date
    kind: Literal["manual", "opening", "accrual"]
    """``accrual``: posted by ``PostAccrual``, flagged to reverse next period."""
    memo: str
    lines: tuple[JournalLine, ...]


class JournalEntryReversed(Event):
    """A journal entry was reversed by an entry with every line negated."""

    type: Literal["journal_entry_reversed"] = "journal_entry_reversed"
    stream_kind: ClassVar[str] = "journal"
    stream_key: ClassVar[str] = "entry_id"
    entry_id: str
    reversal_id: str
    entry_date: date
    memo: str
    lines: tuple[JournalLine, ...]



# --- purchasing: purchase orders, goods receipts, three-way match, holds -------------
# (the three-way-match template; no posting but GoodsReceived: a PO is a commitment, a
# matched bill posts through its BillEntered, a hold or a release moves no money)


class PurchaseOrderLine(Record):
    """One line of a purchase order: what, how many, at which agreed unit price."""

    line: int
    item: str
    description: str
    quantity: int
    unit_price: int
    amount: int
    account: str
    """Where the goods are charged when received (an expense or inventory account)."""


class PurchaseOrderIssued(Event):
    """A purchase order was issued to a vendor (a commitment: it posts nothing)."""

    type: Literal["purchase_order_issued"] = "purchase_order_issued"
    stream_kind: ClassVar[str] = "purchase-order"
    stream_key: ClassVar[str] = "po_id"
    po_id: str
    vendor_id: str
    order_date: date
    expected_on: date | None
    lines: tuple[PurchaseOrderLine, ...]
    total: int


class ReceivedLine(Record):
    """Goods received against one purchase-order line, valued at the PO's unit price."""

    line: int
    item: str
    quantity: int
    unit_price: int
    amount: int
    account: str


class GoodsReceived(Event):
    """Goods arrived against a purchase order: charged to the lines' accounts, owed on the
    goods-received-not-invoiced accrual until the vendor's bill matches them."""

    type: Literal["goods_received"] = "goods_received"
    stream_kind: ClassVar[str] = "purchase-order"
    stream_key: ClassVar[str] = "po_id"
    receipt_id: str
    po_id: str
    vendor_id: str
    entry_date: date
    reference: str
    lines: tuple[ReceivedLine, ...]
    total: int
    grni_account: str


class MatchedLine(Record):
    """One billed line against its PO line and what was received of it (three-way)."""

    line: int
    item: str
    quantity: int
    unit_price: int
    po_unit_price: int
    received: int
    """Quantity received on the PO line when the bill was matched."""
    billed_before: int
    """Quantity billed on the PO line by earlier bills."""


HoldCode = Literal["price", "quantity"]


class HoldReason(Record):
    """Why a matched bill is outside the company's tolerance, on one PO line."""

    code: HoldCode
    line: int
    detail: str


class BillMatched(Event):
    """A bill was matched to its purchase order and receipts; ``holds`` lists the lines
    outside tolerance (empty: the bill matches)."""

    type: Literal["bill_matched"] = "bill_matched"
    stream_kind: ClassVar[str] = "bill"
    stream_key: ClassVar[str] = "bill_id"
    bill_id: str
    po_id: str
    vendor_id: str
    lines: tuple[MatchedLine, ...]
    grni_amount: int
    price_variance: int
    holds: tuple[HoldReason, ...]


class BillHeld(Event):
    """A bill outside the matching tolerance was put on hold: it cannot be paid."""

    type: Literal["bill_held"] = "bill_held"
    stream_kind: ClassVar[str] = "bill"
    stream_key: ClassVar[str] = "bill_id"
    bill_id: str
    vendor_id: str
    po_id: str
    reasons: tuple[HoldReason, ...]


class BillHoldReleased(Event):
    """An approver released a bill's hold, with a reason: it may be paid again."""

    type: Literal["bill_hold_released"] = "bill_hold_released"
    stream_kind: ClassVar[str] = "bill"
    stream_key: ClassVar[str] = "bill_id"
    bill_id: str
    vendor_id: str
    reason: str
    released_by_role: Role


# --- accruals and prepaids -------------------------------------------------------
# (the accruals-and-prepaids template: an accrual is a journal entry flagged to reverse on
# the first day of the next period, reversed by a run over the period; a prepaid schedule
# spreads a bill's prepaid line over months, each month posted once by an amortization run)


class AccrualFlagged(Event):
    """A journal entry was flagged as an accrual of its period: it reverses on ``reverse_on``,
    the first day of the next period (it posts nothing: the entry posted its lines)."""

    type: Literal["accrual_flagged"] = "accrual_flagged"
    stream_kind: ClassVar[str] = "journal"
    stream_key: ClassVar[str] = "entry_id"
    entry_id: str
    entry_date: date
    period: str
    reverse_on: date
    amount: int
    """The entry's debits (what it accrues)."""


class AccrualsReversed(Event):
    """A reversal run reversed the due accruals of a period on ``entry_date`` (each by its
    own ``JournalEntryReversed``, written before this record of the run)."""

    type: Literal["accruals_reversed"] = "accruals_reversed"
    stream_kind: ClassVar[str] = "accrual-run"
    stream_key: ClassVar[str] = "run_id"
    run_id: str
    period: str
    entry_date: date
    entry_ids: tuple[str, ...]
    reversal_ids: tuple[str, ...]


class PrepaidScheduleRecorded(Event):
    """A prepaid expense's amortization schedule: ``amount`` of a bill's line on the prepaid
    ``account``, expensed to ``expense_account`` over ``months`` months from
    ``start_period`` (it posts nothing: the bill put the amount on the prepaid account)."""

    type: Literal["prepaid_schedule_recorded"] = "prepaid_schedule_recorded"
    stream_kind: ClassVar[str] = "prepaid"
    stream_key: ClassVar[str] = "schedule_id"
    schedule_id: str
    bill_id: str
    vendor_id: str
    entry_date: date
    """The bill's date (the day the amount reached the prepaid account)."""
    account: str
    expense_account: str
    amount: int
    start_period: str
    months: int
    description: str


class PrepaidAmortized(Event):
    """One month of a prepaid schedule was expensed: Dr the expense account, Cr the prepaid
    account (the last month takes the rounding remainder)."""

    type: Literal["prepaid_amortized"] = "prepaid_amortized"
    stream_kind: ClassVar[str] = "prepaid"
    stream_key: ClassVar[str] = "schedule_id"
    schedule_id: str
    run_id: str
    vendor_id: str
    period: str
    month: int
    """Which month of the schedule (1 to ``months``)."""
    months: int
    entry_date: date
    amount: int
    account: str
    expense_account: str


# --- fixed assets ----------------------------------------------------------------
# (the fixed-assets template: a class names an asset's accounts; capitalizing moves an amount
# from the expense or clearing account it was booked on to the class's cost account;
# depreciation runs post each asset's straight-line month once; a disposal removes the cost
# and the accumulated depreciation and books the gain or loss)


class AssetClassDefined(Event):
    """A fixed-asset class and its accounts (it posts nothing)."""

    type: Literal["asset_class_defined"] = "asset_class_defined"
    stream_kind: ClassVar[str] = "asset-class"
    stream_key: ClassVar[str] = "class_id"
    class_id: str
    name: str
    cost_account: str
    accumulated_account: str
    expense_account: str


class AssetCapitalized(Event):
    """An asset was capitalized: Dr ``cost_account``, Cr ``source_account`` (the expense or
    clearing account the bill's line or journal entry put the amount on)."""

    type: Literal["asset_capitalized"] = "asset_capitalized"
    stream_kind: ClassVar[str] = "fixed-asset"
    stream_key: ClassVar[str] = "asset_id"
    asset_id: str
    class_id: str
    source_kind: Literal["bill", "journal"]
    source_id: str
    vendor_id: str | None
    entry_date: date
    in_service_date: date
    amount: int
    salvage: int
    life_months: int
    cost_account: str
    accumulated_account: str
    expense_account: str
    source_account: str
    description: str


class AssetDepreciated(Event):
    """One straight-line month of an asset: Dr depreciation expense, Cr accumulated
    depreciation (the last month takes the rounding remainder)."""

    type: Literal["asset_depreciated"] = "asset_depreciated"
    stream_kind: ClassVar[str] = "fixed-asset"
    stream_key: ClassVar[str] = "asset_id"
    asset_id: str
    run_id: str
    class_id: str
    period: str
    month: int
    """Which month of the asset's life (1 to ``life_months``)."""
    life_months: int
    entry_date: date
    amount: int
    expense_account: str
    accumulated_account: str


class AssetDisposed(Event):
    """An asset left the books: Dr proceeds and accumulated depreciation, Cr cost; the
    difference (``gain``: proceeds less net book value, negative a loss) on the gain/loss
    account."""

    type: Literal["asset_disposed"] = "asset_disposed"
    stream_kind: ClassVar[str] = "fixed-asset"
    stream_key: ClassVar[str] = "asset_id"
    asset_id: str
    class_id: str
    entry_date: date
    proceeds: int
    cost: int
    accumulated: int
    gain: int
    cost_account: str
    accumulated_account: str
    proceeds_account: str
    gain_loss_account: str
    reference: str


# --- year-end close --------------------------------------------------------------
# (a fiscal year is closed into retained earnings by one closing entry, dated the year's
# last day, that brings every revenue and expense account of the year to zero)


class FiscalYearClosed(Event):
    """A fiscal year was closed: ``lines`` bring each revenue and expense account's balance
    of the year to zero and put the net income on ``retained_earnings`` (its line last)."""

    type: Literal["fiscal_year_closed"] = "fiscal_year_closed"
    stream_kind: ClassVar[str] = "fiscal-year"
    stream_key: ClassVar[str] = "fiscal_year"
    fiscal_year: str
    entry_id: str
    entry_date: date
    """The last day of the year's last period."""
    periods: tuple[str, ...]
    retained_earnings: str
    net_income: int
    """Revenue less expenses of the year (what retained earnings is credited)."""
    memo: str
    lines: tuple[JournalLine, ...]


# --- payroll and sales tax -------------------------------------------------------
# (the payroll-and-sales-tax template: a payroll provider's register posted as one journal
# of gross wages, employer taxes, withholdings payable and net pay from the bank; sales tax
# collected on invoices to the jurisdiction's account, reported by a return for a month
# and remitted to the tax authority from the bank)


class PayrollLine(Record):
    """One employee's row of a payroll register (``net`` = ``gross`` - ``withheld``)."""

    employee_id: str
    name: str
    gross: int
    withheld: int
    """The employee's taxes and deductions withheld from the gross."""
    employer_taxes: int
    net: int


class PayrollPosted(Event):
    """A payroll register was posted: Dr wages (gross), Dr employer payroll taxes, Cr
    withholdings payable, Cr employer taxes payable, Cr the bank (net pay)."""

    type: Literal["payroll_posted"] = "payroll_posted"
    stream_kind: ClassVar[str] = "payroll"
    stream_key: ClassVar[str] = "register_id"
    register_id: str
    entry_date: date
    """The pay date (the day net pay leaves the bank)."""
    period_start: date
    period_end: date
    bank_account_id: str
    lines: tuple[PayrollLine, ...]
    gross: int
    withheld: int
    employer_taxes: int
    net: int
    wage_account: str
    employer_tax_account: str
    withholding_account: str
    employer_tax_payable_account: str
    bank_gl_account: str
    memo: str


class TaxJurisdictionRegistered(Event):
    """A sales-tax jurisdiction: its rate, the account its tax is collected on and the day of
    the next month its return and payment for a month are due (it posts nothing)."""

    type: Literal["tax_jurisdiction_registered"] = "tax_jurisdiction_registered"
    stream_kind: ClassVar[str] = "tax-jurisdiction"
    stream_key: ClassVar[str] = "jurisdiction_id"
    jurisdiction_id: str
    name: str
    rate_bp: int
    account: str
    due_day: int


class SalesTaxReturnFiled(Event):
    """A sales-tax return for a month was filed: the month's sales, the taxable part and the
    tax due, as the books computed them (it posts nothing: the invoices put the tax on the
    jurisdiction's account)."""

    type: Literal["sales_tax_return_filed"] = "sales_tax_return_filed"
    stream_kind: ClassVar[str] = "tax-return"
    stream_key: ClassVar[str] = "return_id"
    return_id: str
    jurisdiction_id: str
    period: str
    entry_date: date
    """The day it was filed."""
    due_on: date
    gross_sales: int
    taxable_sales: int
    exempt_sales: int
    tax_due: int
    rate_bp: int
    account: str
    invoice_ids: tuple[str, ...]


class SalesTaxRemitted(Event):
    """Sales tax was paid to the authority against a return: Dr the jurisdiction's account,
    Cr the bank."""

    type: Literal["sales_tax_remitted"] = "sales_tax_remitted"
    stream_kind: ClassVar[str] = "tax-return"
    stream_key: ClassVar[str] = "return_id"
    payment_id: str
    return_id: str
    jurisdiction_id: str
    period: str
    bank_account_id: str
    entry_date: date
    amount: int
    account: str
    bank_gl_account: str


# --- several bank accounts: transfers, a company card, bank errors -----------------
# (the bank-reconciliation-multi template; a bank error posts nothing)


class FundsTransferSent(Event):
    """Money left one of the company's bank accounts for another: Dr the in-transit
    clearing account, Cr the sending account's GL account (it arrives later)."""

    type: Literal["funds_transfer_sent"] = "funds_transfer_sent"
    stream_kind: ClassVar[str] = "transfer"
    stream_key: ClassVar[str] = "transfer_id"
    transfer_id: str
    from_bank_account_id: str
    to_bank_account_id: str
    entry_date: date
    amount: int
    from_gl_account: str
    transit_account: str
    memo: str = ""


class FundsTransferReceived(Event):
    """A transfer arrived in the receiving account: Dr its GL account, Cr in-transit."""

    type: Literal["funds_transfer_received"] = "funds_transfer_received"
    stream_kind: ClassVar[str] = "transfer"
    stream_key: ClassVar[str] = "transfer_id"
    transfer_id: str
    from_bank_account_id: str
    to_bank_account_id: str
    entry_date: date
    amount: int
    to_gl_account: str
    transit_account: str


class CardChargeRecorded(Event):
    """A charge on the company card was recorded: Dr the expense account, Cr the card's
    (liability) account."""

    type: Literal["card_charge_recorded"] = "card_charge_recorded"
    stream_kind: ClassVar[str] = "card-charge"
    stream_key: ClassVar[str] = "charge_id"
    charge_id: str
    bank_account_id: str
    entry_date: date
    amount: int
    account: str
    bank_gl_account: str
    merchant: str = ""
    memo: str = ""


class BankErrorReported(Event):
    """A statement line was reported to the bank as the bank's error (a reconciling item
    the bank corrects, not an entry of the company's): it posts nothing."""

    type: Literal["bank_error_reported"] = "bank_error_reported"
    stream_kind: ClassVar[str] = "bank-error"
    stream_key: ClassVar[str] = "error_id"
    error_id: str
    line_id: str
    bank_account_id: str
    entry_date: date
    amount: int
    description: str


class PayrollReversed(Event):
    """A posted payroll register was reversed: every line of its journal negated (the
    register may then be posted again, as corrected)."""

    type: Literal["payroll_reversed"] = "payroll_reversed"
    stream_kind: ClassVar[str] = "payroll"
    stream_key: ClassVar[str] = "register_id"
    register_id: str
    entry_date: date
    bank_account_id: str
    gross: int
    withheld: int
    employer_taxes: int
    net: int
    wage_account: str
    employer_tax_account: str
    withholding_account: str
    employer_tax_payable_account: str
    bank_gl_account: str
    memo: str


ErpEvent = Annotated[
    CompanySetUp
    | PoliciesChanged
    | AccountOpened
    | PeriodOpened
    | PeriodClosed
    | PeriodReopened
    | CustomerRegistered
    | VendorRegistered
    | VendorBankChangeRequested
    | VendorBankChangeApproved
    | VendorBankChangeRejected
    | BankAccountOpened
    | InvoiceIssued
    | CreditMemoIssued
    | ReceiptRecorded
    | ReceiptCustomerAssigned
    | ReceiptApplied
    | ApplicationReversed
    | InvoiceWrittenOff
    | FeeAllowanceGranted
    | CustomerRefunded
    | DepositReturned
    | DunningLetterSent
    | InvoiceDisputed
    | DisputeResolved
    | PromiseToPayRecorded
    | CreditHoldPlaced
    | CreditHoldReleased
    | BillEntered
    | BillApproved
    | BillTermsSet
    | PurchaseDiscountTaken
    | VendorCreditRecorded
    | VendorCreditApplied
    | PaymentRunCreated
    | VendorPaid
    | StatementLineImported
    | StatementLineMatched
    | StatementLineUnmatched
    | BankFeeRecorded
    | InterestRecorded
    | AccrualFlagged
    | AccrualsReversed
    | PrepaidScheduleRecorded
    | PrepaidAmortized
    | JournalEntryPosted
    | JournalEntryReversed
    | PurchaseOrderIssued
    | GoodsReceived
    | BillMatched
    | BillHeld
    | BillHoldReleased
    | AssetClassDefined
    | AssetCapitalized
    | AssetDepreciated
    | FundsTransferSent
    | FundsTransferReceived
    | CardChargeRecorded
    | BankErrorReported
    | AssetDisposed
    | FiscalYearClosed
    | PayrollPosted
    | TaxJurisdictionRegistered
    | SalesTaxReturnFiled
    | SalesTaxRemitted
    | PayrollReversed,
    Field(discriminator="type"),
]

EVENT_CLASSES: dict[str, type[Event]] = {
    cls.model_fields["type"].default: cls
    for cls in Event.__subclasses__()
}

_ADAPTER: TypeAdapter[Event] = TypeAdapter(ErpEvent)

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
UPCASTERS: dict[tuple[str, int], Upcaster] = {}
"""(type, stored schema_version) -> function turning that payload into the next version."""


def decode_event(type_: str, schema_version: int, payload: str | bytes) -> Event:
    """Decode a stored payload into its event class, upcasting old shapes first."""
    cls = EVENT_CLASSES.get(type_)
    if cls is None:
        raise KeyError(f"unknown event type {type_!r}")
    if schema_version == cls.schema_version:
        return cls.__pydantic_validator__.validate_json(payload)
    import orjson

    data = orjson.loads(payload)
    version = schema_version
    while version < cls.schema_version:
        step = UPCASTERS.get((type_, version))
        if step is None:
            raise KeyError(f"no upcaster for {type_!r} from schema_version {version}")
        data = step(data)
        version += 1
    return _ADAPTER.validate_python(data)


def current_decoder(type_: str) -> tuple[int, Callable[[str | bytes], Event]]:
    """The current ``schema_version`` of events of ``type_`` and the decoder of payloads
    stored at that version: pydantic-core's ``validate_json`` of its class, nothing in
    between (what ``decode_event`` calls after its look-ups; a fold of many events takes
    it once per type). A payload of another version goes through ``decode_event``."""
    cls = EVENT_CLASSES.get(type_)
    if cls is None:
        raise KeyError(f"unknown event type {type_!r}")
    return cls.schema_version, cls.__pydantic_validator__.validate_json


def encode_event(event: Event) -> bytes:
    """The stored payload of an event: its JSON in field order (deterministic)."""
    return event.__pydantic_serializer__.to_json(event)
