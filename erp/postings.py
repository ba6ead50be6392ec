"""Posting rules: a pure function from one event to balanced journal lines.

The general ledger is nothing but the fold of these lines. Each line is
``(account, amount, party, doc_id)`` with ``amount`` signed, debit positive; the
lines of one event always sum to zero. Events that move no money post nothing.

Each rule is a small function registered for the event types it posts
(``_rule``); ``post`` looks the rule up by the event's class. A table lookup
rather than a ``match`` over every type: ``post`` runs for every event the books
write and every event a rebuild folds, and a failed class pattern costs an
``isinstance`` check on pydantic's ABC metaclass, about 65 ns each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from erp import events as ev


class Posting(NamedTuple):
    """One GL line: a signed amount (debit positive) on an account."""

    account: str
    amount: int
    party: str | None
    doc_id: str


NO_LINES: tuple[Posting, ...] = ()

Rule = Callable[[Any], tuple[Posting, ...]]

_RULES: dict[type[ev.Event], Rule] = {}


def _rule(*types: type[ev.Event]) -> Callable[[Rule], Rule]:
    """Register a posting rule for these event types."""
    def register(fn: Rule) -> Rule:
        for t in types:
            _RULES[t] = fn
        return fn
    return register


_last: tuple[object, tuple[Posting, ...]] = (None, NO_LINES)
"""The last event posted and its lines: the books, the ledger's command check and the GL
projection each ask for the same event's lines in turn (events are frozen, the rules pure)."""


def post(e: ev.Event) -> tuple[Posting, ...]:
    """The GL lines of an event (empty when it moves no money).

    The last event's lines are remembered by identity: a command's event is posted three
    times in a row (its accounts checked, the books' year, the GL projection), ~1.9 µs
    each time for an invoice. One tuple read and written whole, so a second thread
    posting at the same time gets its own event's lines, never another's.
    """
    global _last
    last = _last
    if last[0] is e:
        return last[1]
    rule = _RULES.get(type(e))
    lines = rule(e) if rule is not None else NO_LINES
    _last = (e, lines)
    return lines


@_rule(ev.InvoiceIssued)
def _invoice_issued(e: ev.InvoiceIssued) -> tuple[Posting, ...]:
    lines = [Posting(e.ar_account, e.total, e.customer_id, e.invoice_id)]
    lines += [Posting(x.account, -x.amount, e.customer_id, e.invoice_id) for x in e.lines]
    if e.tax:
        lines.append(Posting(e.tax_account, -e.tax, e.customer_id, e.invoice_id))
    return tuple(lines)


@_rule(ev.ReceiptRecorded)
def _receipt_recorded(e: ev.ReceiptRecorded) -> tuple[Posting, ...]:
    return (Posting(e.bank_gl_account, e.amount, e.customer_id, e.receipt_id),
            Posting(e.unapplied_account, -e.amount, e.customer_id, e.receipt_id))


@_rule(ev.ReceiptApplied)
def _receipt_applied(e: ev.ReceiptApplied) -> tuple[Posting, ...]:
    return (Posting(e.unapplied_account, e.amount, e.customer_id, e.receipt_id),
            Posting(e.ar_account, -e.amount, e.customer_id, e.invoice_id))


@_rule(ev.ApplicationReversed)
def _application_reversed(e: ev.ApplicationReversed) -> tuple[Posting, ...]:
    return (Posting(e.ar_account, e.amount, e.customer_id, e.invoice_id),
            Posting(e.unapplied_account, -e.amount, e.customer_id, e.receipt_id))


@_rule(ev.BillEntered)
def _bill_entered(e: ev.BillEntered) -> tuple[Posting, ...]:
    lines = [Posting(x.account, x.amount, e.vendor_id, e.bill_id) for x in e.lines]
    if e.tax:
        lines.append(Posting(e.tax_account, e.tax, e.vendor_id, e.bill_id))
    lines.append(Posting(e.ap_account, -e.total, e.vendor_id, e.bill_id))
    return tuple(lines)


@_rule(ev.VendorPaid)
def _vendor_paid(e: ev.VendorPaid) -> tuple[Posting, ...]:
    return (Posting(e.ap_account, e.amount, e.vendor_id, e.payment_id),
            Posting(e.bank_gl_account, -e.amount, e.vendor_id, e.payment_id))


@_rule(ev.PurchaseDiscountTaken)
def _purchase_discount_taken(e: ev.PurchaseDiscountTaken) -> tuple[Posting, ...]:
    return (Posting(e.ap_account, e.amount, e.vendor_id, e.bill_id),
            Posting(e.discount_account, -e.amount, e.vendor_id, e.bill_id))


@_rule(ev.JournalEntryPosted)
def _journal_entry_posted(e: ev.JournalEntryPosted) -> tuple[Posting, ...]:
    return tuple(Posting(x.account, x.amount, x.party, e.entry_id) for x in e.lines)


@_rule(ev.JournalEntryReversed)
def _journal_entry_reversed(e: ev.JournalEntryReversed) -> tuple[Posting, ...]:
    return tuple(Posting(x.account, x.amount, x.party, e.reversal_id) for x in e.lines)


@_rule(ev.CreditMemoIssued)
def _credit_memo_issued(e: ev.CreditMemoIssued) -> tuple[Posting, ...]:
    return (Posting(e.account, e.amount, e.customer_id, e.credit_memo_id),
            Posting(e.ar_account, -e.amount, e.customer_id, e.invoice_id))


@_rule(ev.InvoiceWrittenOff, ev.FeeAllowanceGranted)
def _invoice_reduced(e: ev.InvoiceWrittenOff | ev.FeeAllowanceGranted) -> tuple[Posting, ...]:
    return (Posting(e.account, e.amount, e.customer_id, e.invoice_id),
            Posting(e.ar_account, -e.amount, e.customer_id, e.invoice_id))


@_rule(ev.CustomerRefunded)
def _customer_refunded(e: ev.CustomerRefunded) -> tuple[Posting, ...]:
    return (Posting(e.unapplied_account, e.amount, e.customer_id, e.receipt_id),
            Posting(e.bank_gl_account, -e.amount, e.customer_id, e.refund_id))


@_rule(ev.DepositReturned)
def _deposit_returned(e: ev.DepositReturned) -> tuple[Posting, ...]:
    return (Posting(e.unapplied_account, e.amount, e.customer_id, e.receipt_id),
            Posting(e.bank_gl_account, -e.amount, e.customer_id, e.return_id))


@_rule(ev.VendorCreditRecorded)
def _vendor_credit_recorded(e: ev.VendorCreditRecorded) -> tuple[Posting, ...]:
    return (Posting(e.ap_account, e.amount, e.vendor_id, e.credit_id),
            Posting(e.account, -e.amount, e.vendor_id, e.credit_id))


@_rule(ev.BankFeeRecorded)
def _bank_fee_recorded(e: ev.BankFeeRecorded) -> tuple[Posting, ...]:
    return (Posting(e.account, e.amount, None, e.fee_id),
            Posting(e.bank_gl_account, -e.amount, None, e.fee_id))


@_rule(ev.InterestRecorded)
def _interest_recorded(e: ev.InterestRecorded) -> tuple[Posting, ...]:
    return (Posting(e.bank_gl_account, e.amount, None, e.interest_id),
            Posting(e.account, -e.amount, None, e.interest_id))


@_rule(ev.BankAccountOpened)
def _bank_account_opened(e: ev.BankAccountOpened) -> tuple[Posting, ...]:
    if not e.opening_balance:
        return NO_LINES
    return (Posting(e.gl_account, e.opening_balance, None, e.bank_account_id),
            Posting(e.equity_account, -e.opening_balance, None, e.bank_account_id))



# --- purchasing: goods receipts (a matched bill posts through its BillEntered) ---------


@_rule(ev.GoodsReceived)
def _goods_received(e: ev.GoodsReceived) -> tuple[Posting, ...]:
    lines = [Posting(x.account, x.amount, e.vendor_id, e.receipt_id) for x in e.lines]
    lines.append(Posting(e.grni_account, -e.total, e.vendor_id, e.receipt_id))
    return tuple(lines)


# --- accruals and prepaids -------------------------------------------------------
# (an accrual posts through its JournalEntryPosted and is reversed by a JournalEntryReversed;
# AccrualFlagged, AccrualsReversed and PrepaidScheduleRecorded move no money)


@_rule(ev.PrepaidAmortized)
def _prepaid_amortized(e: ev.PrepaidAmortized) -> tuple[Posting, ...]:
    return (Posting(e.expense_account, e.amount, e.vendor_id, e.schedule_id),
            Posting(e.account, -e.amount, e.vendor_id, e.schedule_id))


# --- fixed assets ----------------------------------------------------------------
# (AssetClassDefined moves no money; a line of zero is left out of a disposal)


@_rule(ev.AssetCapitalized)
def _asset_capitalized(e: ev.AssetCapitalized) -> tuple[Posting, ...]:
    return (Posting(e.cost_account, e.amount, None, e.asset_id),
            Posting(e.source_account, -e.amount, None, e.asset_id))


@_rule(ev.AssetDepreciated)
def _asset_depreciated(e: ev.AssetDepreciated) -> tuple[Posting, ...]:
    return (Posting(e.expense_account, e.amount, None, e.asset_id),
            Posting(e.accumulated_account, -e.amount, None, e.asset_id))


@_rule(ev.AssetDisposed)
def _asset_disposed(e: ev.AssetDisposed) -> tuple[Posting, ...]:
    lines = [Posting(e.proceeds_account, e.proceeds, None, e.asset_id),
             Posting(e.accumulated_account, e.accumulated, None, e.asset_id),
             Posting(e.cost_account, -e.cost, None, e.asset_id),
             Posting(e.gain_loss_account, -e.gain, None, e.asset_id)]
    return tuple(x for x in lines if x.amount)


# --- year-end close --------------------------------------------------------------


@_rule(ev.FiscalYearClosed)
def _fiscal_year_closed(e: ev.FiscalYearClosed) -> tuple[Posting, ...]:
    return tuple(Posting(x.account, x.amount, None, e.entry_id) for x in e.lines)


# --- payroll and sales tax -------------------------------------------------------
# (TaxJurisdictionRegistered and SalesTaxReturnFiled move no money; a zero line is left out
# of a payroll journal)


@_rule(ev.PayrollPosted)
def _payroll_posted(e: ev.PayrollPosted | ev.PayrollReversed,
                    ) -> tuple[Posting, ...]:
    lines = [Posting(e.wage_account, e.gross, None, e.register_id),
             Posting(e.employer_tax_account, e.employer_taxes, None, e.register_id),
             Posting(e.withholding_account, -e.withheld, None, e.register_id),
             Posting(e.employer_tax_payable_account, -e.employer_taxes, None, e.register_id),
             Posting(e.bank_gl_account, -e.net, None, e.register_id)]
    return tuple(x for x in lines if x.amount)


@_rule(ev.SalesTaxRemitted)
def _sales_tax_remitted(e: ev.SalesTaxRemitted) -> tuple[Posting, ...]:
    return (Posting(e.account, e.amount, None, e.payment_id),
            Posting(e.bank_gl_account, -e.amount, None, e.payment_id))


# --- several bank accounts: transfers, a company card (a bank error posts nothing) -----


@_rule(ev.FundsTransferSent)
def _funds_transfer_sent(e: ev.FundsTransferSent) -> tuple[Posting, ...]:
    return (Posting(e.transit_account, e.amount, None, e.transfer_id),
            Posting(e.from_gl_account, -e.amount, None, e.transfer_id))


@_rule(ev.FundsTransferReceived)
def _funds_transfer_received(e: ev.FundsTransferReceived) -> tuple[Posting, ...]:
    return (Posting(e.to_gl_account, e.amount, None, e.transfer_id),
            Posting(e.transit_account, -e.amount, None, e.transfer_id))


@_rule(ev.CardChargeRecorded)
def _card_charge_recorded(e: ev.CardChargeRecorded) -> tuple[Posting, ...]:
    return (Posting(e.account, e.amount, None, e.charge_id),
            Posting(e.bank_gl_account, -e.amount, None, e.charge_id))


@_rule(ev.PayrollReversed)
def _payroll_reversed(e: ev.PayrollReversed) -> tuple[Posting, ...]:
    return tuple(Posting(x.account, -x.amount, x.party, x.doc_id)
                 for x in _payroll_posted(e))  # the same fields, negated


POSTING_TYPES: frozenset[type[ev.Event]] = frozenset(_RULES)
"""Event types that can post GL lines; ``post`` returns nothing for every other type."""
