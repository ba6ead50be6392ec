"""The books' working state: the fold of the erp realm that command handlers read.

``Books`` is kept in memory by the single writer (``erp.ledger.Ledger``) and
evolved by ``apply`` with every event the ledger appends, or folded from the log
when a ledger opens. Handlers only read it. It is independent of the projections
(which answer queries), so that a bug in one cannot hide in the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol

from erp import events as ev
from erp.errors import CommandRejected, UnknownEntity
from erp.postings import post


class TakenIds(Protocol):
    """Ids already used in a collection: a dict of documents, a set, or both together."""

    def __contains__(self, key: object, /) -> bool: ...

    def __len__(self) -> int: ...


def document_number_key(number: str) -> str:
    """How a vendor's document number is compared: case and outer spaces do not count."""
    return number.strip().casefold()


@dataclass(slots=True)
class PeriodState:
    """An accounting period."""

    period: str
    start: date
    end: date
    closed: bool = False


@dataclass(slots=True)
class CustomerState:
    """A customer and what it owes us."""

    customer_id: str
    name: str
    terms_days: int
    credit_limit: int | None
    open_ar: int = 0


@dataclass(slots=True)
class VendorState:
    """A vendor, its approved bank details and the invoice numbers it has billed."""

    vendor_id: str
    name: str
    terms_days: int
    bank: ev.BankDetails | None
    invoice_numbers: set[str] = field(default_factory=set)
    credit_numbers: set[str] = field(default_factory=set)


@dataclass(slots=True)
class InvoiceState:
    """An invoice's open balance."""

    invoice_id: str
    customer_id: str
    total: int
    open: int
    ar_account: str
    entry_date: date
    due_on: date
    written_off: int = 0
    allowed: int = 0


@dataclass(slots=True)
class ReceiptState:
    """A receipt, what is left unapplied and where it went."""

    receipt_id: str
    customer_id: str | None
    bank_account_id: str
    amount: int
    unapplied: int
    entry_date: date
    applied: dict[str, int] = field(default_factory=dict)
    matched_line: str | None = None
    returned: bool = False
    refunded: int = 0


@dataclass(slots=True)
class BillState:
    """A bill's open balance and approval."""

    bill_id: str
    vendor_id: str
    total: int
    open: int
    ap_account: str
    due_on: date
    approved: bool = False
    discount: int = 0
    discount_until: date | None = None


@dataclass(slots=True)
class VendorCreditState:
    """A vendor credit and what is left of it."""

    credit_id: str
    vendor_id: str
    amount: int
    open: int
    ap_account: str


@dataclass(slots=True)
class BankDocState:
    """A book document that moved a bank account (payment, refund, fee, interest)."""

    kind: str
    doc_id: str
    bank_account_id: str
    amount: int  # signed as the bank sees it: deposits positive
    matched_line: str | None = None


@dataclass(slots=True)
class StatementLineState:
    """An imported bank statement line and its match."""

    line_id: str
    bank_account_id: str
    amount: int
    targets: tuple[ev.MatchTarget, ...] = ()
    bank_error: str | None = None
    """The bank error it was reported as (``ReportBankError``), if any."""


@dataclass(slots=True)
class JournalState:
    """A journal entry and whether it was reversed."""

    entry_id: str
    lines: tuple[ev.JournalLine, ...]
    is_reversal: bool = False
    reversed_by: str | None = None
    kind: str = "manual"


@dataclass(slots=True)
class BankChangeState:
    """A vendor bank-detail change request."""

    request_id: str
    vendor_id: str
    new_bank: ev.BankDetails
    requested_by_role: str
    status: str = "pending"


@dataclass(slots=True)
class BankAccountState:
    """A company bank account."""

    bank_account_id: str
    gl_account: str
    number: str
    balance: int = 0
    """The book balance of its GL account (every posting to it, journal entries too)."""


@dataclass(slots=True)
class TransferState:
    """A transfer between the company's bank accounts: sent, and whether it arrived."""

    transfer_id: str
    from_bank_account_id: str
    to_bank_account_id: str
    amount: int
    sent_on: date
    transit_account: str
    received_on: date | None = None


class Books:
    """The in-memory state of the company's books, evolved event by event."""

    def __init__(self) -> None:
        self.company: ev.CompanySetUp | None = None
        self.policies: ev.Policies = ev.Policies()
        self.accounts: dict[str, ev.AccountOpened] = {}
        self.periods: dict[str, PeriodState] = {}
        self._period_of: dict[date, PeriodState | None] = {}
        self.customers: dict[str, CustomerState] = {}
        self.vendors: dict[str, VendorState] = {}
        self.bank_accounts: dict[str, BankAccountState] = {}
        self.bank_changes: dict[str, BankChangeState] = {}
        self.invoices: dict[str, InvoiceState] = {}
        self.credit_memos: set[str] = set()
        self.collections = CollectionsBooks()
        self.receipts: dict[str, ReceiptState] = {}
        self.bills: dict[str, BillState] = {}
        self.vendor_credits: dict[str, VendorCreditState] = {}
        self.payment_runs: set[str] = set()
        self.bank_docs: dict[str, dict[str, BankDocState]] = {
            "payment": {}, "refund": {}, "fee": {}, "interest": {}, "return": {},
            "transfer_out": {}, "transfer_in": {}, "card_charge": {}}
        self.statement_lines: dict[str, StatementLineState] = {}
        self.journal: dict[str, JournalState] = {}
        self.versions: dict[str, int] = {}
        self.accrual_books = AccrualBooks()
        self.fixed_assets = FixedAssetBooks()
        self.year_end = YearEndBooks()
        self.purchasing = PurchasingBooks()
        self.transfers: dict[str, TransferState] = {}
        self.bank_errors: dict[str, ev.BankErrorReported] = {}
        self.payroll_tax = PayrollTaxBooks()

    # --- lookups that raise what a handler would report -------------------------

    def account(self, code: str, field: str = "account") -> ev.AccountOpened:
        """The account with this code, or ``unknown_account``."""
        acct = self.accounts.get(code)
        if acct is None:
            raise UnknownEntity("account", code, field)
        return acct

    def customer(self, customer_id: str, field: str = "customer_id") -> CustomerState:
        """The customer, or ``unknown_customer``."""
        c = self.customers.get(customer_id)
        if c is None:
            raise UnknownEntity("customer", customer_id, field)
        return c

    def vendor(self, vendor_id: str, field: str = "vendor_id") -> VendorState:
        """The vendor, or ``unknown_vendor``."""
        v = self.vendors.get(vendor_id)
        if v is None:
            raise UnknownEntity("vendor", vendor_id, field)
        return v

    def invoice(self, invoice_id: str, field: str = "invoice_id") -> InvoiceState:
        """The invoice, or ``unknown_invoice``."""
        i = self.invoices.get(invoice_id)
        if i is None:
            raise UnknownEntity("invoice", invoice_id, field)
        return i

    def receipt(self, receipt_id: str, field: str = "receipt_id") -> ReceiptState:
        """The receipt, or ``unknown_receipt``."""
        r = self.receipts.get(receipt_id)
        if r is None:
            raise UnknownEntity("receipt", receipt_id, field)
        return r

    def bill(self, bill_id: str, field: str = "bill_id") -> BillState:
        """The bill, or ``unknown_bill``."""
        b = self.bills.get(bill_id)
        if b is None:
            raise UnknownEntity("bill", bill_id, field)
        return b

    def bank_account(self, bank_account_id: str,
                     field: str = "bank_account_id") -> BankAccountState:
        """The bank account, or ``unknown_bank_account``."""
        b = self.bank_accounts.get(bank_account_id)
        if b is None:
            raise UnknownEntity("bank_account", bank_account_id, field)
        return b

    def period_of(self, day: date) -> PeriodState | None:
        """The accounting period containing ``day``, if one was opened."""
        try:
            return self._period_of[day]
        except KeyError:
            found = next((p for p in self.periods.values() if p.start <= day <= p.end), None)
            self._period_of[day] = found
            return found

    def require_company(self) -> ev.CompanySetUp:
        """The company set-up, or ``company_not_set_up``."""
        if self.company is None:
            raise CommandRejected("company_not_set_up",
                                  "the company is not set up yet (run SetUpCompany first)")
        return self.company

    def next_id(self, prefix: str, taken: TakenIds) -> str:
        """The next free id ``PREFIX-000001`` for a collection (deterministic)."""
        n = len(taken) + 1
        while True:
            candidate = f"{prefix}-{n:06d}"
            if candidate not in taken:
                return candidate
            n += 1

    # --- evolution --------------------------------------------------------------

    def apply(self, e: ev.Event) -> None:
        """Evolve the state by one event of the erp realm."""
        self.payroll_tax.note(e)
        self.year_end.note(e, self.accounts)
        rule = _BOOKS_RULES.get(type(e))
        if rule is None:
            raise TypeError(f"Books.apply: no rule for event type {type(e).__name__}")
        rule(self, e)

    # --- apply's rules, one per event type, found by the exact type (a match over the
    # types checked isinstance, through pydantic's metaclass, case after case: about
    # a microsecond an event for the later ones) -------------------------------------

    def _on_invoice_issued(self, e: ev.InvoiceIssued) -> None:
        self.invoices[e.invoice_id] = InvoiceState(
            e.invoice_id, e.customer_id, e.total, e.total, e.ar_account, e.entry_date,
            e.due_on)
        self.customers[e.customer_id].open_ar += e.total

    def _on_receipt_recorded(self, e: ev.ReceiptRecorded) -> None:
        self.receipts[e.receipt_id] = ReceiptState(
            e.receipt_id, e.customer_id, e.bank_account_id, e.amount, e.amount,
            e.entry_date)
        self.bank_accounts[e.bank_account_id].balance += e.amount

    def _on_collections(
            self,
            e: ev.DunningLetterSent
            | ev.InvoiceDisputed
            | ev.DisputeResolved
            | ev.PromiseToPayRecorded
            | ev.CreditHoldPlaced
            | ev.CreditHoldReleased,
    ) -> None:
        self.collections.apply(e)

    def _on_receipt_applied(self, e: ev.ReceiptApplied) -> None:
        r = self.receipts[e.receipt_id]
        r.unapplied -= e.amount
        r.applied[e.invoice_id] = r.applied.get(e.invoice_id, 0) + e.amount
        self._reduce_invoice(e.invoice_id, e.amount)

    def _on_bill_entered(self, e: ev.BillEntered) -> None:
        self.bills[e.bill_id] = BillState(
            e.bill_id, e.vendor_id, e.total, e.total, e.ap_account, e.due_on)
        self.vendors[e.vendor_id].invoice_numbers.add(
            document_number_key(e.vendor_invoice_number))
        self.accrual_books.note_bill(e, self.accounts)
        self.fixed_assets.note_bill(e)

    def _on_bill_approved(self, e: ev.BillApproved) -> None:
        self.bills[e.bill_id].approved = True

    def _on_bill_terms_set(self, e: ev.BillTermsSet) -> None:
        terms = self.bills[e.bill_id]
        terms.discount, terms.discount_until = e.discount, e.discount_until

    def _on_purchase_discount_taken(self, e: ev.PurchaseDiscountTaken) -> None:
        self.bills[e.bill_id].open -= e.amount

    def _on_vendor_paid(self, e: ev.VendorPaid) -> None:
        for a in e.applications:
            self.bills[a.bill_id].open -= a.amount
        self.bank_docs["payment"][e.payment_id] = BankDocState(
            "payment", e.payment_id, e.bank_account_id, -e.amount)
        self.bank_accounts[e.bank_account_id].balance -= e.amount

    def _on_statement_line_imported(self, e: ev.StatementLineImported) -> None:
        self.statement_lines[e.line_id] = StatementLineState(
            e.line_id, e.bank_account_id, e.amount)

    def _on_statement_line_matched(self, e: ev.StatementLineMatched) -> None:
        self.statement_lines[e.line_id].targets = e.targets
        for t in e.targets:
            self._bank_doc_match(t, e.line_id)

    def _on_statement_line_unmatched(self, e: ev.StatementLineUnmatched) -> None:
        self.statement_lines[e.line_id].targets = ()
        for t in e.targets:
            self._bank_doc_match(t, None)

    def _on_journal_entry_posted(self, e: ev.JournalEntryPosted) -> None:
        self.journal[e.entry_id] = JournalState(e.entry_id, e.lines, kind=e.kind)
        self._journal_to_bank(e.lines)

    def _on_journal_entry_reversed(self, e: ev.JournalEntryReversed) -> None:
        self.journal[e.entry_id].reversed_by = e.reversal_id
        self.journal[e.reversal_id] = JournalState(e.reversal_id, e.lines, is_reversal=True)
        self._journal_to_bank(e.lines)

    def _on_credit_memo_issued(self, e: ev.CreditMemoIssued) -> None:
        self.credit_memos.add(e.credit_memo_id)
        self._reduce_invoice(e.invoice_id, e.amount)

    def _on_invoice_written_off(self, e: ev.InvoiceWrittenOff) -> None:
        self.invoices[e.invoice_id].written_off += e.amount
        self._reduce_invoice(e.invoice_id, e.amount)

    def _on_fee_allowance_granted(self, e: ev.FeeAllowanceGranted) -> None:
        self.invoices[e.invoice_id].allowed += e.amount
        self._reduce_invoice(e.invoice_id, e.amount)

    def _on_application_reversed(self, e: ev.ApplicationReversed) -> None:
        r = self.receipts[e.receipt_id]
        r.unapplied += e.amount
        left = r.applied[e.invoice_id] - e.amount
        if left:
            r.applied[e.invoice_id] = left
        else:
            del r.applied[e.invoice_id]
        self._reduce_invoice(e.invoice_id, -e.amount)

    def _on_receipt_customer_assigned(self, e: ev.ReceiptCustomerAssigned) -> None:
        self.receipts[e.receipt_id].customer_id = e.customer_id

    def _on_customer_refunded(self, e: ev.CustomerRefunded) -> None:
        r = self.receipts[e.receipt_id]
        r.unapplied -= e.amount
        r.refunded += e.amount
        self.bank_docs["refund"][e.refund_id] = BankDocState(
            "refund", e.refund_id, e.bank_account_id, -e.amount)
        self.bank_accounts[e.bank_account_id].balance -= e.amount

    def _on_deposit_returned(self, e: ev.DepositReturned) -> None:
        r = self.receipts[e.receipt_id]
        r.unapplied -= e.amount
        r.returned = True
        self.bank_docs["return"][e.return_id] = BankDocState(
            "return", e.return_id, e.bank_account_id, -e.amount)
        self.bank_accounts[e.bank_account_id].balance -= e.amount

    def _on_vendor_credit_recorded(self, e: ev.VendorCreditRecorded) -> None:
        self.vendor_credits[e.credit_id] = VendorCreditState(
            e.credit_id, e.vendor_id, e.amount, e.amount, e.ap_account)
        self.vendors[e.vendor_id].credit_numbers.add(
            document_number_key(e.vendor_credit_number))

    def _on_vendor_credit_applied(self, e: ev.VendorCreditApplied) -> None:
        self.vendor_credits[e.credit_id].open -= e.amount
        self.bills[e.bill_id].open -= e.amount

    def _on_payment_run_created(self, e: ev.PaymentRunCreated) -> None:
        self.payment_runs.add(e.run_id)

    def _on_bank_fee_recorded(self, e: ev.BankFeeRecorded) -> None:
        self.bank_docs["fee"][e.fee_id] = BankDocState(
            "fee", e.fee_id, e.bank_account_id, -e.amount)
        self.bank_accounts[e.bank_account_id].balance -= e.amount

    def _on_interest_recorded(self, e: ev.InterestRecorded) -> None:
        self.bank_docs["interest"][e.interest_id] = BankDocState(
            "interest", e.interest_id, e.bank_account_id, e.amount)
        self.bank_accounts[e.bank_account_id].balance += e.amount

    def _on_customer_registered(self, e: ev.CustomerRegistered) -> None:
        self.customers[e.customer_id] = CustomerState(
            e.customer_id, e.name, e.terms_days, e.credit_limit)

    def _on_vendor_registered(self, e: ev.VendorRegistered) -> None:
        self.vendors[e.vendor_id] = VendorState(e.vendor_id, e.name, e.terms_days, e.bank)

    def _on_vendor_bank_change_requested(self, e: ev.VendorBankChangeRequested) -> None:
        self.bank_changes[e.request_id] = BankChangeState(
            e.request_id, e.vendor_id, e.new_bank, e.requested_by_role)

    def _on_vendor_bank_change_approved(self, e: ev.VendorBankChangeApproved) -> None:
        self.bank_changes[e.request_id].status = "approved"
        self.vendors[e.vendor_id].bank = e.new_bank

    def _on_vendor_bank_change_rejected(self, e: ev.VendorBankChangeRejected) -> None:
        self.bank_changes[e.request_id].status = "rejected"

    def _on_bank_account_opened(self, e: ev.BankAccountOpened) -> None:
        self.bank_accounts[e.bank_account_id] = BankAccountState(
            e.bank_account_id, e.gl_account, e.number, e.opening_balance)

    def _on_account_opened(self, e: ev.AccountOpened) -> None:
        self.accounts[e.code] = e

    def _on_period_opened(self, e: ev.PeriodOpened) -> None:
        self.periods[e.period] = PeriodState(e.period, e.start, e.end)
        self._period_of.clear()

    def _on_period_closed(self, e: ev.PeriodClosed) -> None:
        self.periods[e.period].closed = True

    def _on_period_reopened(self, e: ev.PeriodReopened) -> None:
        self.periods[e.period].closed = False

    def _on_company_set_up(self, e: ev.CompanySetUp) -> None:
        self.company = e
        self.policies = e.policies

    def _on_policies_changed(self, e: ev.PoliciesChanged) -> None:
        self.policies = e.policies

    def _on_purchasing(
            self,
            e: ev.PurchaseOrderIssued
            | ev.GoodsReceived
            | ev.BillMatched
            | ev.BillHeld
            | ev.BillHoldReleased,
    ) -> None:
        self.purchasing.apply(e)

    def _on_accruals(
            self,
            e: ev.AccrualFlagged
            | ev.AccrualsReversed
            | ev.PrepaidScheduleRecorded
            | ev.PrepaidAmortized,
    ) -> None:
        self.accrual_books.apply(e)

    def _on_fixed_assets(
            self,
            e: ev.AssetClassDefined
            | ev.AssetCapitalized
            | ev.AssetDepreciated
            | ev.AssetDisposed,
    ) -> None:
        self.fixed_assets.apply(e)

    def _on_fiscal_year_closed(self, e: ev.FiscalYearClosed) -> None:
        self.year_end.apply(e)

    def _on_payroll_posted(self, e: ev.PayrollPosted) -> None:
        self.payroll_tax.apply(e)
        self.bank_accounts[e.bank_account_id].balance -= e.net

    def _on_tax_filing(self, e: ev.TaxJurisdictionRegistered | ev.SalesTaxReturnFiled) -> None:
        self.payroll_tax.apply(e)

    def _on_payroll_reversed(self, e: ev.PayrollReversed) -> None:
        self.payroll_tax.apply(e)
        self.bank_accounts[e.bank_account_id].balance += e.net

    def _on_sales_tax_remitted(self, e: ev.SalesTaxRemitted) -> None:
        self.payroll_tax.apply(e)
        self.bank_accounts[e.bank_account_id].balance -= e.amount

    def _on_funds_transfer_sent(self, e: ev.FundsTransferSent) -> None:
        self.transfers[e.transfer_id] = TransferState(
            e.transfer_id, e.from_bank_account_id, e.to_bank_account_id, e.amount,
            e.entry_date, e.transit_account)
        self.bank_docs["transfer_out"][e.transfer_id] = BankDocState(
            "transfer_out", e.transfer_id, e.from_bank_account_id, -e.amount)
        self.bank_accounts[e.from_bank_account_id].balance -= e.amount

    def _on_funds_transfer_received(self, e: ev.FundsTransferReceived) -> None:
        self.transfers[e.transfer_id].received_on = e.entry_date
        self.bank_docs["transfer_in"][e.transfer_id] = BankDocState(
            "transfer_in", e.transfer_id, e.to_bank_account_id, e.amount)
        self.bank_accounts[e.to_bank_account_id].balance += e.amount

    def _on_card_charge_recorded(self, e: ev.CardChargeRecorded) -> None:
        self.bank_docs["card_charge"][e.charge_id] = BankDocState(
            "card_charge", e.charge_id, e.bank_account_id, -e.amount)
        self.bank_accounts[e.bank_account_id].balance -= e.amount

    def _on_bank_error_reported(self, e: ev.BankErrorReported) -> None:
        self.bank_errors[e.error_id] = e
        self.statement_lines[e.line_id].bank_error = e.error_id

    def _journal_to_bank(self, lines: tuple[ev.JournalLine, ...]) -> None:
        for line in lines:
            if self.accounts[line.account].control == "bank":
                for b in self.bank_accounts.values():
                    if b.gl_account == line.account:
                        b.balance += line.amount

    def _reduce_invoice(self, invoice_id: str, amount: int) -> None:
        inv = self.invoices[invoice_id]
        inv.open -= amount
        self.customers[inv.customer_id].open_ar -= amount

    def _bank_doc_match(self, t: ev.MatchTarget, line_id: str | None) -> None:
        if t.kind == "receipt":
            self.receipts[t.doc_id].matched_line = line_id
        else:
            self.bank_docs[t.kind][t.doc_id].matched_line = line_id


_BOOKS_RULES: dict[type[ev.Event], Callable[[Books, Any], None]] = {
    ev.InvoiceIssued: Books._on_invoice_issued,
    ev.ReceiptRecorded: Books._on_receipt_recorded,
    ev.DunningLetterSent: Books._on_collections,
    ev.InvoiceDisputed: Books._on_collections,
    ev.DisputeResolved: Books._on_collections,
    ev.PromiseToPayRecorded: Books._on_collections,
    ev.CreditHoldPlaced: Books._on_collections,
    ev.CreditHoldReleased: Books._on_collections,
    ev.ReceiptApplied: Books._on_receipt_applied,
    ev.BillEntered: Books._on_bill_entered,
    ev.BillApproved: Books._on_bill_approved,
    ev.BillTermsSet: Books._on_bill_terms_set,
    ev.PurchaseDiscountTaken: Books._on_purchase_discount_taken,
    ev.VendorPaid: Books._on_vendor_paid,
    ev.StatementLineImported: Books._on_statement_line_imported,
    ev.StatementLineMatched: Books._on_statement_line_matched,
    ev.StatementLineUnmatched: Books._on_statement_line_unmatched,
    ev.JournalEntryPosted: Books._on_journal_entry_posted,
    ev.JournalEntryReversed: Books._on_journal_entry_reversed,
    ev.CreditMemoIssued: Books._on_credit_memo_issued,
    ev.InvoiceWrittenOff: Books._on_invoice_written_off,
    ev.FeeAllowanceGranted: Books._on_fee_allowance_granted,
    ev.ApplicationReversed: Books._on_application_reversed,
    ev.ReceiptCustomerAssigned: Books._on_receipt_customer_assigned,
    ev.CustomerRefunded: Books._on_customer_refunded,
    ev.DepositReturned: Books._on_deposit_returned,
    ev.VendorCreditRecorded: Books._on_vendor_credit_recorded,
    ev.VendorCreditApplied: Books._on_vendor_credit_applied,
    ev.PaymentRunCreated: Books._on_payment_run_created,
    ev.BankFeeRecorded: Books._on_bank_fee_recorded,
    ev.InterestRecorded: Books._on_interest_recorded,
    ev.CustomerRegistered: Books._on_customer_registered,
    ev.VendorRegistered: Books._on_vendor_registered,
    ev.VendorBankChangeRequested: Books._on_vendor_bank_change_requested,
    ev.VendorBankChangeApproved: Books._on_vendor_bank_change_approved,
    ev.VendorBankChangeRejected: Books._on_vendor_bank_change_rejected,
    ev.BankAccountOpened: Books._on_bank_account_opened,
    ev.AccountOpened: Books._on_account_opened,
    ev.PeriodOpened: Books._on_period_opened,
    ev.PeriodClosed: Books._on_period_closed,
    ev.PeriodReopened: Books._on_period_reopened,
    ev.CompanySetUp: Books._on_company_set_up,
    ev.PoliciesChanged: Books._on_policies_changed,
    ev.PurchaseOrderIssued: Books._on_purchasing,
    ev.GoodsReceived: Books._on_purchasing,
    ev.BillMatched: Books._on_purchasing,
    ev.BillHeld: Books._on_purchasing,
    ev.BillHoldReleased: Books._on_purchasing,
    ev.AccrualFlagged: Books._on_accruals,
    ev.AccrualsReversed: Books._on_accruals,
    ev.PrepaidScheduleRecorded: Books._on_accruals,
    ev.PrepaidAmortized: Books._on_accruals,
    ev.AssetClassDefined: Books._on_fixed_assets,
    ev.AssetCapitalized: Books._on_fixed_assets,
    ev.AssetDepreciated: Books._on_fixed_assets,
    ev.AssetDisposed: Books._on_fixed_assets,
    ev.FiscalYearClosed: Books._on_fiscal_year_closed,
    ev.PayrollPosted: Books._on_payroll_posted,
    ev.TaxJurisdictionRegistered: Books._on_tax_filing,
    ev.SalesTaxReturnFiled: Books._on_tax_filing,
    ev.PayrollReversed: Books._on_payroll_reversed,
    ev.SalesTaxRemitted: Books._on_sales_tax_remitted,
    ev.FundsTransferSent: Books._on_funds_transfer_sent,
    ev.FundsTransferReceived: Books._on_funds_transfer_received,
    ev.CardChargeRecorded: Books._on_card_charge_recorded,
    ev.BankErrorReported: Books._on_bank_error_reported,
}
"""The rule ``Books.apply`` runs for each erp event type."""


# --- purchasing: purchase orders, goods receipts, three-way match, holds -------------


class BooksPart:
    """A part of the books kept in its own object (purchasing, accruals, fixed assets):
    equal to another of its kind when all its state is, as the books' own dicts are (two
    folds of the same log must compare equal)."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(self) == vars(other)


@dataclass(slots=True)
class PurchaseOrderLineState:
    """A purchase-order line: what was ordered, and how much of it was received and billed."""

    line: int
    item: str
    quantity: int
    unit_price: int
    account: str
    received: int = 0
    billed: int = 0


@dataclass(slots=True)
class PurchaseOrderState:
    """A purchase order and its lines by number."""

    po_id: str
    vendor_id: str
    order_date: date
    lines: dict[int, PurchaseOrderLineState]


@dataclass(slots=True)
class HoldState:
    """A bill's matching hold: why, and whether it still stands."""

    bill_id: str
    reasons: tuple[ev.HoldReason, ...]
    released: bool = False


class PurchasingBooks(BooksPart):
    """The purchasing part of the books: orders, receipts, matched bills, holds."""

    def __init__(self) -> None:
        self.orders: dict[str, PurchaseOrderState] = {}
        self.receipts: set[str] = set()
        self.bill_orders: dict[str, str] = {}
        """Matched bill -> its purchase order."""
        self.holds: dict[str, HoldState] = {}

    def order(self, po_id: str, field: str = "po_id") -> PurchaseOrderState:
        """The purchase order, or ``unknown_purchase_order``."""
        o = self.orders.get(po_id)
        if o is None:
            raise UnknownEntity("purchase_order", po_id, field)
        return o

    def on_hold(self, bill_id: str) -> HoldState | None:
        """The bill's hold while it stands, else None."""
        h = self.holds.get(bill_id)
        return h if h is not None and not h.released else None

    def apply(self, e: ev.Event) -> None:
        """Evolve the purchasing state by one of its events."""
        match e:
            case ev.PurchaseOrderIssued():
                self.orders[e.po_id] = PurchaseOrderState(
                    e.po_id, e.vendor_id, e.order_date,
                    {x.line: PurchaseOrderLineState(x.line, x.item, x.quantity, x.unit_price,
                                                    x.account) for x in e.lines})
            case ev.GoodsReceived():
                self.receipts.add(e.receipt_id)
                lines = self.orders[e.po_id].lines
                for r in e.lines:
                    lines[r.line].received += r.quantity
            case ev.BillMatched():
                self.bill_orders[e.bill_id] = e.po_id
                lines = self.orders[e.po_id].lines
                for m in e.lines:
                    lines[m.line].billed += m.quantity
            case ev.BillHeld():
                self.holds[e.bill_id] = HoldState(e.bill_id, e.reasons)
            case ev.BillHoldReleased():
                self.holds[e.bill_id].released = True
            case _:
                raise TypeError(f"PurchasingBooks.apply: no rule for {type(e).__name__}")


# --- collections: dunning letters, disputes, promises to pay, credit holds ---------


@dataclass(slots=True)
class DisputeState:
    """A customer's dispute of an invoice, open until resolved."""

    dispute_id: str
    invoice_id: str
    customer_id: str
    amount: int
    outcome: str | None = None


@dataclass(slots=True)
class PromiseState:
    """A promise to pay part of an invoice by a day."""

    promise_id: str
    invoice_id: str
    customer_id: str
    amount: int
    pay_by: date
    balance: int


@dataclass(slots=True)
class CreditHoldState:
    """A customer's credit hold."""

    hold_id: str
    customer_id: str
    credit_limit: int
    placed_on: date
    released: bool = False


class CollectionsBooks(BooksPart):
    """The collections part of the books: letters sent per invoice, disputes, promises to
    pay and credit holds."""

    def __init__(self) -> None:
        self.letters: dict[str, ev.DunningLetterSent] = {}
        self.levels: dict[str, int] = {}
        """Invoice -> the highest level of letter sent for it."""
        self.disputes: dict[str, DisputeState] = {}
        self.open_disputes: dict[str, str] = {}
        """Invoice -> its open dispute."""
        self.promises: dict[str, PromiseState] = {}
        self.last_promise: dict[str, str] = {}
        """Invoice -> its latest promise."""
        self.holds: dict[str, CreditHoldState] = {}
        self.on_hold: dict[str, str] = {}
        """Customer -> its credit hold in force."""

    def promise_pending(self, invoice: InvoiceState, day: date) -> PromiseState | None:
        """The invoice's promise still running on ``day``: not past its date, not kept."""
        pid = self.last_promise.get(invoice.invoice_id)
        if pid is None:
            return None
        p = self.promises[pid]
        kept = invoice.open <= p.balance - p.amount
        return p if day <= p.pay_by and not kept else None

    def apply(self, e: ev.Event) -> None:
        """Evolve the collections state by one of its events."""
        match e:
            case ev.DunningLetterSent():
                self.letters[e.letter_id] = e
                self.levels[e.invoice_id] = max(e.level, self.levels.get(e.invoice_id, 0))
            case ev.InvoiceDisputed():
                self.disputes[e.dispute_id] = DisputeState(e.dispute_id, e.invoice_id,
                                                           e.customer_id, e.amount)
                self.open_disputes[e.invoice_id] = e.dispute_id
            case ev.DisputeResolved():
                self.disputes[e.dispute_id].outcome = e.outcome
                self.open_disputes.pop(e.invoice_id, None)
            case ev.PromiseToPayRecorded():
                self.promises[e.promise_id] = PromiseState(e.promise_id, e.invoice_id,
                                                           e.customer_id, e.amount, e.pay_by,
                                                           e.balance)
                self.last_promise[e.invoice_id] = e.promise_id
            case ev.CreditHoldPlaced():
                self.holds[e.hold_id] = CreditHoldState(e.hold_id, e.customer_id, e.credit_limit,
                                                        e.placed_on)
                self.on_hold[e.customer_id] = e.hold_id
            case ev.CreditHoldReleased():
                self.holds[e.hold_id].released = True
                self.on_hold.pop(e.customer_id, None)
            case _:
                raise TypeError(f"CollectionsBooks.apply: no rule for {type(e).__name__}")


# --- accruals and prepaids -------------------------------------------------------


@dataclass(slots=True)
class AccrualState:
    """An accrual: its entry, period and reversal day (the entry's own state, reversed or
    not, is the journal's)."""

    entry_id: str
    period: str
    reverse_on: date
    amount: int


@dataclass(slots=True)
class PrepaidState:
    """A prepaid schedule and the months of it posted so far."""

    schedule_id: str
    bill_id: str
    vendor_id: str
    account: str
    expense_account: str
    amount: int
    start_period: str
    months: int
    posted: dict[str, int] = field(default_factory=dict)
    """Period -> the amount amortized in it."""

    @property
    def remaining(self) -> int:
        """What is not amortized yet."""
        return self.amount - sum(self.posted.values())


@dataclass(slots=True)
class BillAssetLines:
    """What a bill put on asset (prepaid) accounts, and how much of it is scheduled."""

    bill_id: str
    vendor_id: str
    entry_date: date
    amounts: dict[str, int]
    scheduled: dict[str, int] = field(default_factory=dict)


class AccrualBooks(BooksPart):
    """The accruals and prepaids part of the books: flagged accruals, reversal runs,
    prepaid schedules and the bills' lines on asset accounts they draw on."""

    def __init__(self) -> None:
        self.accruals: dict[str, AccrualState] = {}
        self.reversal_runs: dict[str, ev.AccrualsReversed] = {}
        self.schedules: dict[str, PrepaidState] = {}
        self.amortization_runs: set[str] = set()
        self.bill_assets: dict[str, BillAssetLines] = {}

    def note_bill(self, e: ev.BillEntered, accounts: dict[str, ev.AccountOpened]) -> None:
        """Keep a bill's lines on asset accounts (a prepaid schedule may draw on them)."""
        amounts: dict[str, int] = {}
        for line in e.lines:
            if accounts[line.account].account_type == "asset":
                amounts[line.account] = amounts.get(line.account, 0) + line.amount
        if amounts:
            self.bill_assets[e.bill_id] = BillAssetLines(e.bill_id, e.vendor_id, e.entry_date,
                                                         amounts)

    def apply(self, e: ev.Event) -> None:
        """Evolve the accruals and prepaids state by one of its events."""
        match e:
            case ev.AccrualFlagged():
                self.accruals[e.entry_id] = AccrualState(e.entry_id, e.period, e.reverse_on,
                                                         e.amount)
            case ev.AccrualsReversed():
                self.reversal_runs[e.run_id] = e
            case ev.PrepaidScheduleRecorded():
                self.schedules[e.schedule_id] = PrepaidState(
                    e.schedule_id, e.bill_id, e.vendor_id, e.account, e.expense_account,
                    e.amount, e.start_period, e.months)
                src = self.bill_assets[e.bill_id]
                src.scheduled[e.account] = src.scheduled.get(e.account, 0) + e.amount
            case ev.PrepaidAmortized():
                self.schedules[e.schedule_id].posted[e.period] = e.amount
                self.amortization_runs.add(e.run_id)
            case _:
                raise TypeError(f"AccrualBooks.apply: no rule for {type(e).__name__}")


# --- fixed assets ----------------------------------------------------------------


@dataclass(slots=True)
class AssetState:
    """A fixed asset: what it cost, how it depreciates, the months posted so far."""

    asset_id: str
    class_id: str
    amount: int
    salvage: int
    life_months: int
    start_period: str
    """The in-service month: the first month of depreciation."""
    cost_account: str
    accumulated_account: str
    expense_account: str
    posted: dict[str, int] = field(default_factory=dict)
    """Period -> the depreciation posted for it."""
    disposed: bool = False

    @property
    def accumulated(self) -> int:
        """The depreciation posted so far."""
        return sum(self.posted.values())

    @property
    def fully_depreciated(self) -> bool:
        """Every month of the asset's life is posted."""
        return len(self.posted) >= self.life_months


class FixedAssetBooks(BooksPart):
    """The fixed-asset subledger: classes, assets, depreciation runs, and what each bill
    line (by bill and account) and journal line has had capitalized from it."""

    def __init__(self) -> None:
        self.classes: dict[str, ev.AssetClassDefined] = {}
        self.assets: dict[str, AssetState] = {}
        self.runs: set[str] = set()
        self.bill_lines: dict[str, dict[str, int]] = {}
        """Bill -> its debit lines' amounts per account (what may be capitalized)."""
        self.capitalized: dict[tuple[str, str, str], int] = {}
        """(source kind, source id, account) -> the amount capitalized from it."""

    def note_bill(self, e: ev.BillEntered) -> None:
        """Keep a bill's debit lines per account (an asset may be capitalized from them)."""
        amounts: dict[str, int] = {}
        for line in e.lines:
            if line.amount > 0:
                amounts[line.account] = amounts.get(line.account, 0) + line.amount
        self.bill_lines[e.bill_id] = amounts

    def apply(self, e: ev.Event) -> None:
        """Evolve the fixed-asset state by one of its events."""
        match e:
            case ev.AssetClassDefined():
                self.classes[e.class_id] = e
            case ev.AssetCapitalized():
                self.assets[e.asset_id] = AssetState(
                    e.asset_id, e.class_id, e.amount, e.salvage, e.life_months,
                    f"{e.in_service_date.year:04d}-{e.in_service_date.month:02d}",
                    e.cost_account, e.accumulated_account, e.expense_account)
                key = (e.source_kind, e.source_id, e.source_account)
                self.capitalized[key] = self.capitalized.get(key, 0) + e.amount
            case ev.AssetDepreciated():
                self.assets[e.asset_id].posted[e.period] = e.amount
                self.runs.add(e.run_id)
            case ev.AssetDisposed():
                self.assets[e.asset_id].disposed = True
            case _:
                raise TypeError(f"FixedAssetBooks.apply: no rule for {type(e).__name__}")

# --- year-end close --------------------------------------------------------------

_INCOME_TYPES = frozenset({"revenue", "expense"})


class YearEndBooks(BooksPart):
    """The year-end part of the books: each revenue and expense account's balance per
    calendar year of its lines' dates (what a closing entry brings to zero) and the closed
    fiscal years."""

    def __init__(self) -> None:
        self.income: dict[int, dict[str, int]] = {}
        """Year -> revenue or expense account -> its balance of the year (debit positive)."""
        self.closed: dict[str, ev.FiscalYearClosed] = {}

    def note(self, e: ev.Event, accounts: dict[str, ev.AccountOpened]) -> None:
        """Add an event's GL lines on revenue and expense accounts to its year's balances."""
        lines = post(e)
        if not lines:
            return
        year: dict[str, int] | None = None
        for line in lines:
            acct = accounts.get(line.account)
            if acct is not None and acct.account_type in _INCOME_TYPES:
                if year is None:
                    year = self.income.setdefault(
                        e.entry_date.year, {})  # type: ignore[attr-defined]
                year[line.account] = year.get(line.account, 0) + line.amount

    def apply(self, e: ev.Event) -> None:
        """Evolve the year-end state by one of its events."""
        match e:
            case ev.FiscalYearClosed():
                self.closed[e.fiscal_year] = e
            case _:
                raise TypeError(f"YearEndBooks.apply: no rule for {type(e).__name__}")


# --- payroll and sales tax -------------------------------------------------------


@dataclass(slots=True)
class TaxReturnState:
    """A filed sales-tax return and what has been remitted against it."""

    filed: ev.SalesTaxReturnFiled
    remitted: int = 0

    @property
    def unpaid(self) -> int:
        """The tax due the remittances have not paid yet."""
        return self.filed.tax_due - self.remitted


class PayrollTaxBooks(BooksPart):
    """The payroll and sales-tax part of the books: posted registers, jurisdictions, filed
    returns and their remittances, and every movement of a jurisdiction's tax account (by
    day and what moved it) that a return is checked against."""

    def __init__(self) -> None:
        self.registers: dict[str, ev.PayrollPosted] = {}
        self.reversed_registers: list[ev.PayrollPosted] = []
        self.jurisdictions: dict[str, ev.TaxJurisdictionRegistered] = {}
        self.returns: dict[str, TaxReturnState] = {}
        self.payments: dict[str, ev.SalesTaxRemitted] = {}
        self.sales: list[tuple[date, str, int, int]] = []
        """Every invoice: (date, invoice, subtotal, tax)."""
        self.tax_moves: dict[str, list[tuple[date, int, str]]] = {}
        """Tax account -> (day, signed amount, event type) of each posting on it."""

    def note(self, e: ev.Event) -> None:
        """Keep what a return is computed from: invoices, and postings on tax accounts."""
        if type(e) is ev.InvoiceIssued:
            self.sales.append((e.entry_date, e.invoice_id, e.subtotal, e.tax))
        if type(e) in _TAX_MOVERS and self.jurisdictions:
            accounts = {j.account for j in self.jurisdictions.values()}
            for line in post(e):
                if line.account in accounts:
                    self.tax_moves.setdefault(line.account, []).append(
                        (e.entry_date, line.amount, e.type))  # type: ignore[attr-defined]

    def apply(self, e: ev.Event) -> None:
        """Evolve the payroll and sales-tax state by one of its events."""
        match e:
            case ev.PayrollPosted():
                self.registers[e.register_id] = e
            case ev.PayrollReversed():
                self.reversed_registers.append(self.registers.pop(e.register_id))
            case ev.TaxJurisdictionRegistered():
                self.jurisdictions[e.jurisdiction_id] = e
            case ev.SalesTaxReturnFiled():
                self.returns[e.return_id] = TaxReturnState(e)
            case ev.SalesTaxRemitted():
                self.returns[e.return_id].remitted += e.amount
                self.payments[e.payment_id] = e
            case _:
                raise TypeError(f"PayrollTaxBooks.apply: no rule for {type(e).__name__}")


_TAX_MOVERS = frozenset({ev.InvoiceIssued, ev.BillEntered, ev.JournalEntryPosted,
                         ev.JournalEntryReversed, ev.CreditMemoIssued, ev.SalesTaxRemitted})
"""The events that may post on a jurisdiction's tax account."""
