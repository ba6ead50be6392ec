"""Posting rules: a pure function from one event to balanced journal lines.

The general ledger is nothing but the fold of these lines. Each line is
``(account, amount, party, doc_id)`` with ``amount`` signed, debit positive; the
lines of one event always sum to zero. Events that move no money post nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from erp import events as ev


class Posting(NamedTuple):
    """One GL line: a signed amount (debit positive) on an account."""

    account: str
    amount: int
    party: str | None
    doc_id: str


NO_LINES: tuple[Posting, ...] = ()

POSTING_TYPES: frozenset[type[ev.Event]] = frozenset({
    ev.InvoiceIssued, ev.ReceiptRecorded, ev.ReceiptApplied, ev.ApplicationReversed,
    ev.BillEntered, ev.VendorPaid, ev.JournalEntryPosted, ev.JournalEntryReversed,
    ev.CreditMemoIssued, ev.InvoiceWrittenOff, ev.FeeAllowanceGranted, ev.CustomerRefunded,
    ev.VendorCreditRecorded, ev.BankFeeRecorded, ev.InterestRecorded, ev.BankAccountOpened,
})
"""Event types that can post GL lines; ``post`` returns nothing for every other type."""


def post(e: ev.Event) -> tuple[Posting, ...]:
    """The GL lines of an event (empty when it moves no money)."""
    match e:
        case ev.InvoiceIssued():
            lines = [Posting(e.ar_account, e.total, e.customer_id, e.invoice_id)]
            lines += [Posting(x.account, -x.amount, e.customer_id, e.invoice_id) for x in e.lines]
            if e.tax:
                lines.append(Posting(e.tax_account, -e.tax, e.customer_id, e.invoice_id))
            return tuple(lines)
        case ev.ReceiptRecorded():
            return (Posting(e.bank_gl_account, e.amount, e.customer_id, e.receipt_id),
                    Posting(e.unapplied_account, -e.amount, e.customer_id, e.receipt_id))
        case ev.ReceiptApplied():
            return (Posting(e.unapplied_account, e.amount, e.customer_id, e.receipt_id),
                    Posting(e.ar_account, -e.amount, e.customer_id, e.invoice_id))
        case ev.ApplicationReversed():
            return (Posting(e.ar_account, e.amount, e.customer_id, e.invoice_id),
                    Posting(e.unapplied_account, -e.amount, e.customer_id, e.receipt_id))
        case ev.BillEntered():
            lines = [Posting(x.account, x.amount, e.vendor_id, e.bill_id) for x in e.lines]
            if e.tax:
                lines.append(Posting(e.tax_account, e.tax, e.vendor_id, e.bill_id))
            lines.append(Posting(e.ap_account, -e.total, e.vendor_id, e.bill_id))
            return tuple(lines)
        case ev.VendorPaid():
            return (Posting(e.ap_account, e.amount, e.vendor_id, e.payment_id),
                    Posting(e.bank_gl_account, -e.amount, e.vendor_id, e.payment_id))
        case ev.JournalEntryPosted():
            return tuple(Posting(x.account, x.amount, x.party, e.entry_id) for x in e.lines)
        case ev.JournalEntryReversed():
            return tuple(Posting(x.account, x.amount, x.party, e.reversal_id) for x in e.lines)
        case ev.CreditMemoIssued():
            return (Posting(e.account, e.amount, e.customer_id, e.credit_memo_id),
                    Posting(e.ar_account, -e.amount, e.customer_id, e.invoice_id))
        case ev.InvoiceWrittenOff() | ev.FeeAllowanceGranted():
            return (Posting(e.account, e.amount, e.customer_id, e.invoice_id),
                    Posting(e.ar_account, -e.amount, e.customer_id, e.invoice_id))
        case ev.CustomerRefunded():
            return (Posting(e.unapplied_account, e.amount, e.customer_id, e.receipt_id),
                    Posting(e.bank_gl_account, -e.amount, e.customer_id, e.refund_id))
        case ev.VendorCreditRecorded():
            return (Posting(e.ap_account, e.amount, e.vendor_id, e.credit_id),
                    Posting(e.account, -e.amount, e.vendor_id, e.credit_id))
        case ev.BankFeeRecorded():
            return (Posting(e.account, e.amount, None, e.fee_id),
                    Posting(e.bank_gl_account, -e.amount, None, e.fee_id))
        case ev.InterestRecorded():
            return (Posting(e.bank_gl_account, e.amount, None, e.interest_id),
                    Posting(e.account, -e.amount, None, e.interest_id))
        case ev.BankAccountOpened():
            if not e.opening_balance:
                return NO_LINES
            return (Posting(e.gl_account, e.opening_balance, None, e.bank_account_id),
                    Posting(e.equity_account, -e.opening_balance, None, e.bank_account_id))
        case _:
            return NO_LINES


def entry_date(e: ev.Event) -> object:
    """The accounting date of an event, or None for events without one."""
    return getattr(e, "entry_date", None)
