"""Projectors: read tables folded from the log, written in the append's transaction.

Each projector keeps the little state it needs in memory, buffers the rows an
event produces, and writes them once per transaction (``flush``). The subledgers
are built from documents here, never from GL lines, so "GL control balance equals
subledger" is a real comparison between two independent folds.

Tables (see ``erp.schema``): ``gl_lines`` (the posting rules' fold), ``subledger``
(AR, AP, unapplied cash and bank-book movements per document), ``documents`` and
``doc_history`` (every document's state, now and at each change), and
``statement_lines``. The audit trail is a view over the log itself.

Every event the books write and every event a rebuild folds passes through here,
so the hot path is kept plain: ``Projections`` looks up, once per event, the
methods that handle its class (marked with ``folds``) and turns the event's date
into its ISO string once for all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import date
from itertools import chain
from typing import Any, TypeVar

import orjson
from sqlalchemy.engine import Connection

from erp import events as ev
from erp.postings import POSTING_TYPES, post
from erp.store import EventStore, decoded

ROWS_PER_STATEMENT = 100
"""How many rows one INSERT carries. Executed one row at a time, each row pays the
driver's per-execution work on top of the insert itself (SQLite: 1.05 µs for a
7-column row against 0.55 µs in 100-row statements; PostgreSQL: a protocol round
per row). A rebuild on SQLite spent 7.3 µs an event on its inserts one row at a
time, 5.8 µs with this, and the command path gained about 8%. 250 or 500 rows buy
no more, and leave more rows to the one-row statement at the end of a small batch."""


class Insert:
    """An INSERT into a read table (an upsert with ``conflict``), as a one-row and as a
    ``ROWS_PER_STATEMENT``-row statement, with ``?`` placeholders."""

    def __init__(self, table: str, columns: str, conflict: str = "") -> None:
        self.table, self.columns = table, columns
        group = f"({','.join('?' * (columns.count(',') + 1))})"
        head = f"INSERT INTO {table} ({columns}) VALUES "
        tail = f" {conflict}" if conflict else ""
        self.one = f"{head}{group}{tail}"
        self.many = f"{head}{','.join([group] * ROWS_PER_STATEMENT)}{tail}"


Write = tuple[Insert, Sequence[Sequence[Any]]]
"""A statement and the rows to execute it with."""

Handler = Callable[[int, str, Any], None]
"""A projector method: ``(position, day, event)``, where ``day`` is the event's
``entry_date`` as an ISO string, or its business date when it has none."""

_GL_INSERT = Insert("gl_lines", "position, seq, entry_date, account, amount, party, doc_id")
_SUBLEDGER_INSERT = Insert("subledger", "position, seq, ledger, account, party, doc_kind, "
                                        "doc_id, entry_date, amount")
_DOCUMENT_UPSERT = Insert(
    "documents", "kind, doc_id, party, account, doc_date, due_on, total, open_amount, status, "
                 "reference, last_position",
    "ON CONFLICT (kind, doc_id) DO UPDATE SET party = excluded.party, "
    "open_amount = excluded.open_amount, status = excluded.status, "
    "last_position = excluded.last_position")
_HISTORY_INSERT = Insert("doc_history", "position, kind, doc_id, entry_date, status, "
                                        "open_amount, party")
_STATEMENT_UPSERT = Insert(
    "statement_lines", "line_id, bank_account_id, entry_date, amount, description, reference, "
                       "counterparty, bank_ref, status, matched_to, last_position",
    "ON CONFLICT (line_id) DO UPDATE SET status = excluded.status, "
    "matched_to = excluded.matched_to, last_position = excluded.last_position")


_HANDLED: dict[Callable[..., None], tuple[type[ev.Event], ...]] = {}
"""Projector method -> the event types ``folds`` marked it for."""

_M = TypeVar("_M", bound=Callable[..., None])


def folds(*types: type[ev.Event]) -> Callable[[_M], _M]:
    """Mark a projector method as the one that folds events of these types."""
    def mark(method: _M) -> _M:
        _HANDLED[method] = types
        return method
    return mark


class Projector:
    """Base of the projectors: their handlers by event type, and their buffered rows.

    ``take_rows`` hands over rows that only ever append (one per change);
    ``take_changes`` the current state of what changed since the last take, as
    upserts; ``take_states`` the current state of everything, for a rebuild into
    emptied tables.
    """

    def handlers(self) -> dict[type[ev.Event], Handler]:
        """Event type -> bound method, from the methods marked with ``folds``."""
        out: dict[type[ev.Event], Handler] = {}
        for name, member in vars(type(self)).items():
            for t in _HANDLED.get(member, ()) if callable(member) else ():
                out[t] = getattr(self, name)
        return out

    def take_rows(self) -> list[Write]:
        """Hand over the rows appended since the last take."""
        return []

    def take_changes(self) -> list[Write]:
        """Hand over, as upserts, the state of what changed since the last take."""
        return []

    def take_states(self) -> list[Write]:
        """Hand over the state of everything (for emptied tables)."""
        return []

    def discard(self) -> None:
        """Forget what the next take would hand over."""
        self.take_rows()
        self.take_changes()


class GeneralLedger(Projector):
    """GL lines: the fold of the posting rules."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def handlers(self) -> dict[type[ev.Event], Handler]:
        """Every posting event type, to :meth:`apply`."""
        return dict.fromkeys(POSTING_TYPES, self.apply)

    def apply(self, position: int, day: str, e: ev.Event) -> None:
        """Buffer the GL lines of one event."""
        rows = self.rows
        for seq, (account, amount, party, doc_id) in enumerate(post(e)):
            rows.append((position, seq, day, account, amount, party, doc_id))

    def take_rows(self) -> list[Write]:
        """Hand over the buffered lines as statements to execute."""
        out: list[Write] = [(_GL_INSERT, self.rows)] if self.rows else []
        self.rows = []
        return out


class Subledgers(Projector):
    """Movements of the AR, AP, unapplied-cash and bank subledgers, from documents.

    A row: ``(position, seq, ledger, account, party, doc_kind, doc_id, day, amount)``.
    """

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    @folds(ev.InvoiceIssued)
    def _invoice_issued(self, p: int, day: str, e: ev.InvoiceIssued) -> None:
        self.rows.append((p, 0, "ar", e.ar_account, e.customer_id, "invoice", e.invoice_id, day,
                          e.total))

    @folds(ev.ReceiptRecorded)
    def _receipt_recorded(self, p: int, day: str, e: ev.ReceiptRecorded) -> None:
        self.rows += [(p, 0, "unapplied_cash", e.unapplied_account, e.customer_id, "receipt",
                       e.receipt_id, day, e.amount),
                      (p, 1, "bank", e.bank_gl_account, e.customer_id, "receipt", e.receipt_id,
                       day, e.amount)]

    @folds(ev.ReceiptApplied, ev.ApplicationReversed)
    def _receipt_applied(self, p: int, day: str,
                         e: ev.ReceiptApplied | ev.ApplicationReversed) -> None:
        moved = e.amount if type(e) is ev.ReceiptApplied else -e.amount
        self.rows += [(p, 0, "unapplied_cash", e.unapplied_account, e.customer_id, "receipt",
                       e.receipt_id, day, -moved),
                      (p, 1, "ar", e.ar_account, e.customer_id, "invoice", e.invoice_id, day,
                       -moved)]

    @folds(ev.BillEntered)
    def _bill_entered(self, p: int, day: str, e: ev.BillEntered) -> None:
        self.rows.append((p, 0, "ap", e.ap_account, e.vendor_id, "bill", e.bill_id, day, e.total))

    @folds(ev.VendorPaid)
    def _vendor_paid(self, p: int, day: str, e: ev.VendorPaid) -> None:
        out = self.rows
        seq = 0
        for a in e.applications:
            out.append((p, seq, "ap", e.ap_account, e.vendor_id, "bill", a.bill_id, day,
                        -a.amount))
            seq += 1
        out.append((p, seq, "bank", e.bank_gl_account, e.vendor_id, "payment", e.payment_id, day,
                    -e.amount))

    @folds(ev.PurchaseDiscountTaken)
    def _purchase_discount_taken(self, p: int, day: str, e: ev.PurchaseDiscountTaken) -> None:
        self.rows.append((p, 0, "ap", e.ap_account, e.vendor_id, "bill", e.bill_id, day,
                          -e.amount))

    @folds(ev.CreditMemoIssued, ev.InvoiceWrittenOff, ev.FeeAllowanceGranted)
    def _invoice_reduced(self, p: int, day: str, e: Any) -> None:
        self.rows.append((p, 0, "ar", e.ar_account, e.customer_id, "invoice", e.invoice_id, day,
                          -e.amount))

    @folds(ev.CustomerRefunded)
    def _customer_refunded(self, p: int, day: str, e: ev.CustomerRefunded) -> None:
        self.rows += [(p, 0, "unapplied_cash", e.unapplied_account, e.customer_id, "receipt",
                       e.receipt_id, day, -e.amount),
                      (p, 1, "bank", e.bank_gl_account, e.customer_id, "refund", e.refund_id, day,
                       -e.amount)]

    @folds(ev.DepositReturned)
    def _deposit_returned(self, p: int, day: str, e: ev.DepositReturned) -> None:
        self.rows += [(p, 0, "unapplied_cash", e.unapplied_account, e.customer_id, "receipt",
                       e.receipt_id, day, -e.amount),
                      (p, 1, "bank", e.bank_gl_account, e.customer_id, "return", e.return_id, day,
                       -e.amount)]

    @folds(ev.VendorCreditRecorded)
    def _vendor_credit_recorded(self, p: int, day: str, e: ev.VendorCreditRecorded) -> None:
        self.rows.append((p, 0, "ap", e.ap_account, e.vendor_id, "vendor_credit", e.credit_id,
                          day, -e.amount))

    @folds(ev.VendorCreditApplied)
    def _vendor_credit_applied(self, p: int, day: str, e: ev.VendorCreditApplied) -> None:
        self.rows += [(p, 0, "ap", e.ap_account, e.vendor_id, "bill", e.bill_id, day, -e.amount),
                      (p, 1, "ap", e.ap_account, e.vendor_id, "vendor_credit", e.credit_id, day,
                       e.amount)]

    @folds(ev.BankFeeRecorded)
    def _bank_fee_recorded(self, p: int, day: str, e: ev.BankFeeRecorded) -> None:
        self.rows.append((p, 0, "bank", e.bank_gl_account, None, "fee", e.fee_id, day, -e.amount))

    @folds(ev.InterestRecorded)
    def _interest_recorded(self, p: int, day: str, e: ev.InterestRecorded) -> None:
        self.rows.append((p, 0, "bank", e.bank_gl_account, None, "interest", e.interest_id, day,
                          e.amount))

    @folds(ev.BankAccountOpened)
    def _bank_account_opened(self, p: int, day: str, e: ev.BankAccountOpened) -> None:
        if e.opening_balance:
            self.rows.append((p, 0, "bank", e.gl_account, None, "bank_account",
                              e.bank_account_id, day, e.opening_balance))

    # --- accruals and prepaids: the prepaid schedules' subledger ----------------------

    @folds(ev.PrepaidScheduleRecorded)
    def _prepaid_schedule_recorded(self, p: int, day: str,
                                   e: ev.PrepaidScheduleRecorded) -> None:
        self.rows.append((p, 0, "prepaid", e.account, e.vendor_id, "prepaid", e.schedule_id,
                          day, e.amount))

    @folds(ev.PrepaidAmortized)
    def _prepaid_amortized(self, p: int, day: str, e: ev.PrepaidAmortized) -> None:
        self.rows.append((p, 0, "prepaid", e.account, e.vendor_id, "prepaid", e.schedule_id,
                          day, -e.amount))

    # --- fixed assets: cost and accumulated depreciation per asset (debit positive) ----

    @folds(ev.AssetCapitalized)
    def _asset_capitalized(self, p: int, day: str, e: ev.AssetCapitalized) -> None:
        self.rows.append((p, 0, "fixed_asset", e.cost_account, None, "fixed_asset",
                          e.asset_id, day, e.amount))

    @folds(ev.AssetDepreciated)
    def _asset_depreciated(self, p: int, day: str, e: ev.AssetDepreciated) -> None:
        self.rows.append((p, 0, "accumulated_depreciation", e.accumulated_account, None,
                          "fixed_asset", e.asset_id, day, -e.amount))

    @folds(ev.AssetDisposed)
    def _asset_disposed(self, p: int, day: str, e: ev.AssetDisposed) -> None:
        self.rows.append((p, 0, "fixed_asset", e.cost_account, None, "fixed_asset",
                          e.asset_id, day, -e.cost))
        if e.accumulated:
            self.rows.append((p, 1, "accumulated_depreciation", e.accumulated_account, None,
                              "fixed_asset", e.asset_id, day, e.accumulated))

    # --- payroll and sales tax: net pay and tax payments out of the bank ---------------

    @folds(ev.PayrollPosted)
    def _payroll_posted(self, p: int, day: str, e: ev.PayrollPosted) -> None:
        if e.net:
            self.rows.append((p, 0, "bank", e.bank_gl_account, None, "payroll", e.register_id,
                              day, -e.net))

    @folds(ev.PayrollReversed)
    def _payroll_reversed(self, p: int, day: str, e: ev.PayrollReversed) -> None:
        if e.net:
            self.rows.append((p, 0, "bank", e.bank_gl_account, None, "payroll", e.register_id,
                              day, e.net))

    @folds(ev.SalesTaxRemitted)
    def _sales_tax_remitted(self, p: int, day: str, e: ev.SalesTaxRemitted) -> None:
        self.rows.append((p, 0, "bank", e.bank_gl_account, None, "tax_payment", e.payment_id,
                          day, -e.amount))

    # --- several bank accounts: each transfer leg and card charge on its bank account ----

    @folds(ev.FundsTransferSent)
    def _funds_transfer_sent(self, p: int, day: str, e: ev.FundsTransferSent) -> None:
        self.rows.append((p, 0, "bank", e.from_gl_account, None, "transfer_out",
                          e.transfer_id, day, -e.amount))

    @folds(ev.FundsTransferReceived)
    def _funds_transfer_received(self, p: int, day: str, e: ev.FundsTransferReceived) -> None:
        self.rows.append((p, 0, "bank", e.to_gl_account, None, "transfer_in", e.transfer_id,
                          day, e.amount))

    @folds(ev.CardChargeRecorded)
    def _card_charge_recorded(self, p: int, day: str, e: ev.CardChargeRecorded) -> None:
        self.rows.append((p, 0, "bank", e.bank_gl_account, None, "card_charge", e.charge_id,
                          day, -e.amount))

    def take_rows(self) -> list[Write]:
        """Hand over the buffered movements as statements to execute."""
        out: list[Write] = [(_SUBLEDGER_INSERT, self.rows)] if self.rows else []
        self.rows = []
        return out


# Indexes into a document's mutable row (the column order of ``documents``).
KIND, DOC, PARTY, ACCOUNT, DATE, DUE, TOTAL, OPEN, STATUS, REF, POS = range(11)


def _status(kind: str, total: int, open_: int, approved: bool) -> str:
    if kind == "invoice":
        return "paid" if open_ == 0 else ("open" if open_ == total else "partially_paid")
    if kind == "receipt":
        return "applied" if open_ == 0 else ("unapplied" if open_ == total else "partially_applied")
    if kind == "bill":
        if open_ == 0:
            return "paid"
        if open_ != total:
            return "partially_paid"
        return "approved" if approved else "entered"
    if kind == "vendor_credit":
        return "applied" if open_ == 0 else ("open" if open_ == total else "partially_applied")
    raise ValueError(kind)


_UNCLEARED = {"payment": "paid", "refund": "paid", "fee": "recorded", "interest": "recorded",
              "return": "recorded", "transfer_out": "recorded", "transfer_in": "recorded",
              "card_charge": "recorded"}


class DocumentStates(Projector):
    """Every document's current state and the history of its states."""

    def __init__(self) -> None:
        self.docs: dict[tuple[str, str], list[Any]] = {}
        self.approved: set[str] = set()
        self.dirty: set[tuple[str, str]] = set()
        self.history: list[tuple[Any, ...]] = []

    def _new(self, position: int, kind: str, doc_id: str, party: str | None,
             account: str | None, day: str, due: str | None, total: int, open_: int,
             status: str, ref: str = "") -> None:
        key = (kind, doc_id)
        self.docs[key] = [kind, doc_id, party, account, day, due, total, open_, status, ref,
                          position]
        self.dirty.add(key)
        self.history.append((position, kind, doc_id, day, status, open_, party))

    def _change(self, position: int, kind: str, doc_id: str, day: str, *,
                delta: int = 0, status: str | None = None) -> None:
        key = (kind, doc_id)
        row = self.docs[key]
        open_ = row[OPEN] = row[OPEN] - delta
        if status is None:
            status = _status(kind, row[TOTAL], open_, doc_id in self.approved)
        row[STATUS] = status
        row[POS] = position
        self.dirty.add(key)
        self.history.append((position, kind, doc_id, day, status, open_, row[PARTY]))

    @folds(ev.InvoiceIssued)
    def _invoice_issued(self, p: int, day: str, e: ev.InvoiceIssued) -> None:
        self._new(p, "invoice", e.invoice_id, e.customer_id, e.ar_account, day,
                  e.due_on.isoformat(), e.total, e.total, "open", e.reference)

    @folds(ev.ReceiptRecorded)
    def _receipt_recorded(self, p: int, day: str, e: ev.ReceiptRecorded) -> None:
        self._new(p, "receipt", e.receipt_id, e.customer_id, e.unapplied_account, day, None,
                  e.amount, e.amount, "unapplied", e.reference)

    @folds(ev.ReceiptApplied)
    def _receipt_applied(self, p: int, day: str, e: ev.ReceiptApplied) -> None:
        self._change(p, "receipt", e.receipt_id, day, delta=e.amount)
        self._change(p, "invoice", e.invoice_id, day, delta=e.amount)

    @folds(ev.BillEntered)
    def _bill_entered(self, p: int, day: str, e: ev.BillEntered) -> None:
        self._new(p, "bill", e.bill_id, e.vendor_id, e.ap_account, day, e.due_on.isoformat(),
                  e.total, e.total, "entered", e.vendor_invoice_number)

    @folds(ev.BillApproved)
    def _bill_approved(self, p: int, day: str, e: ev.BillApproved) -> None:
        self.approved.add(e.bill_id)
        self._change(p, "bill", e.bill_id, day)

    @folds(ev.PurchaseDiscountTaken)
    def _purchase_discount_taken(self, p: int, day: str, e: ev.PurchaseDiscountTaken) -> None:
        self._change(p, "bill", e.bill_id, day, delta=e.amount)

    @folds(ev.VendorPaid)
    def _vendor_paid(self, p: int, day: str, e: ev.VendorPaid) -> None:
        self._new(p, "payment", e.payment_id, e.vendor_id, e.bank_gl_account, day, None, e.amount,
                  0, "paid", e.run_id or "")
        for a in e.applications:
            self._change(p, "bill", a.bill_id, day, delta=a.amount)

    @folds(ev.StatementLineImported)
    def _statement_line_imported(self, p: int, day: str, e: ev.StatementLineImported) -> None:
        self._new(p, "statement_line", e.line_id, e.counterparty or None, e.bank_account_id, day,
                  None, e.amount, e.amount, "unmatched", e.reference)

    @folds(ev.StatementLineMatched, ev.StatementLineUnmatched)
    def _statement_line_matched(self, p: int, day: str,
                                e: ev.StatementLineMatched | ev.StatementLineUnmatched) -> None:
        matched = type(e) is ev.StatementLineMatched
        row = self.docs[("statement_line", e.line_id)]
        self._change(p, "statement_line", e.line_id, day,
                     delta=row[OPEN] if matched else -row[TOTAL],
                     status="matched" if matched else "unmatched")
        for t in e.targets:
            if t.kind != "receipt":
                self._change(p, t.kind, t.doc_id, day,
                             status="cleared" if matched else _UNCLEARED[t.kind])

    @folds(ev.JournalEntryPosted)
    def _journal_entry_posted(self, p: int, day: str, e: ev.JournalEntryPosted) -> None:
        self._new(p, "journal", e.entry_id, None, None, day, None,
                  sum(x.amount for x in e.lines if x.amount > 0), 0, "posted", e.kind)

    @folds(ev.JournalEntryReversed)
    def _journal_entry_reversed(self, p: int, day: str, e: ev.JournalEntryReversed) -> None:
        self._change(p, "journal", e.entry_id, day, status="reversed")
        if ("accrual", e.entry_id) in self.docs:  # an accrual reversed
            self._change(p, "accrual", e.entry_id, day,
                         delta=self.docs[("accrual", e.entry_id)][OPEN],
                         status="reversed")
        self._new(p, "journal", e.reversal_id, None, None, day, None,
                  sum(x.amount for x in e.lines if x.amount > 0), 0, "posted",
                  f"reversal of {e.entry_id}")

    @folds(ev.CreditMemoIssued)
    def _credit_memo_issued(self, p: int, day: str, e: ev.CreditMemoIssued) -> None:
        self._new(p, "credit_memo", e.credit_memo_id, e.customer_id, e.account, day, None,
                  e.amount, 0, "issued", e.invoice_id)
        self._change(p, "invoice", e.invoice_id, day, delta=e.amount)

    @folds(ev.InvoiceWrittenOff, ev.FeeAllowanceGranted)
    def _invoice_reduced(self, p: int, day: str,
                         e: ev.InvoiceWrittenOff | ev.FeeAllowanceGranted) -> None:
        self._change(p, "invoice", e.invoice_id, day, delta=e.amount)

    @folds(ev.ApplicationReversed)
    def _application_reversed(self, p: int, day: str, e: ev.ApplicationReversed) -> None:
        self._change(p, "receipt", e.receipt_id, day, delta=-e.amount)
        self._change(p, "invoice", e.invoice_id, day, delta=-e.amount)

    @folds(ev.ReceiptCustomerAssigned)
    def _receipt_customer_assigned(self, p: int, day: str,
                                   e: ev.ReceiptCustomerAssigned) -> None:
        self.docs[("receipt", e.receipt_id)][PARTY] = e.customer_id
        self._change(p, "receipt", e.receipt_id, day)

    @folds(ev.CustomerRefunded)
    def _customer_refunded(self, p: int, day: str, e: ev.CustomerRefunded) -> None:
        self._new(p, "refund", e.refund_id, e.customer_id, e.bank_gl_account, day, None, e.amount,
                  0, "paid", e.receipt_id)
        self._change(p, "receipt", e.receipt_id, day, delta=e.amount)

    @folds(ev.DepositReturned)
    def _deposit_returned(self, p: int, day: str, e: ev.DepositReturned) -> None:
        self._new(p, "return", e.return_id, e.customer_id, e.bank_gl_account, day, None, e.amount,
                  0, "recorded", e.receipt_id)
        self._change(p, "receipt", e.receipt_id, day, delta=e.amount, status="returned")

    @folds(ev.VendorCreditRecorded)
    def _vendor_credit_recorded(self, p: int, day: str, e: ev.VendorCreditRecorded) -> None:
        self._new(p, "vendor_credit", e.credit_id, e.vendor_id, e.ap_account, day, None, e.amount,
                  e.amount, "open", e.vendor_credit_number)

    @folds(ev.VendorCreditApplied)
    def _vendor_credit_applied(self, p: int, day: str, e: ev.VendorCreditApplied) -> None:
        self._change(p, "vendor_credit", e.credit_id, day, delta=e.amount)
        self._change(p, "bill", e.bill_id, day, delta=e.amount)

    @folds(ev.PaymentRunCreated)
    def _payment_run_created(self, p: int, day: str, e: ev.PaymentRunCreated) -> None:
        self._new(p, "payment_run", e.run_id, None, None, day, None, e.total, 0, "completed")

    @folds(ev.BankFeeRecorded)
    def _bank_fee_recorded(self, p: int, day: str, e: ev.BankFeeRecorded) -> None:
        self._new(p, "fee", e.fee_id, None, e.account, day, None, e.amount, 0, "recorded", e.memo)

    @folds(ev.InterestRecorded)
    def _interest_recorded(self, p: int, day: str, e: ev.InterestRecorded) -> None:
        self._new(p, "interest", e.interest_id, None, e.account, day, None, e.amount, 0,
                  "recorded", e.memo)

    @folds(ev.VendorBankChangeRequested)
    def _bank_change_requested(self, p: int, day: str,
                               e: ev.VendorBankChangeRequested) -> None:
        self._new(p, "bank_change", e.request_id, e.vendor_id, None, day, None, 0, 0, "pending",
                  e.new_bank.masked())

    @folds(ev.VendorBankChangeApproved)
    def _bank_change_approved(self, p: int, day: str, e: ev.VendorBankChangeApproved) -> None:
        self._change(p, "bank_change", e.request_id, day, status="approved")

    @folds(ev.VendorBankChangeRejected)
    def _bank_change_rejected(self, p: int, day: str, e: ev.VendorBankChangeRejected) -> None:
        self._change(p, "bank_change", e.request_id, day, status="rejected")

    @folds(ev.PeriodOpened)
    def _period_opened(self, p: int, day: str, e: ev.PeriodOpened) -> None:
        # A period's document date is its first day, not the day it was opened.
        self._new(p, "period", e.period, None, None, e.start.isoformat(), e.end.isoformat(), 0,
                  0, "open")

    @folds(ev.PeriodClosed)
    def _period_closed(self, p: int, day: str, e: ev.PeriodClosed) -> None:
        self._change(p, "period", e.period, day, status="closed")

    @folds(ev.PeriodReopened)
    def _period_reopened(self, p: int, day: str, e: ev.PeriodReopened) -> None:
        self._change(p, "period", e.period, day, status="open")

    # --- collections: dunning letters, disputes, promises to pay, credit holds ---------

    @folds(ev.DunningLetterSent)
    def _dunning_letter_sent(self, p: int, day: str, e: ev.DunningLetterSent) -> None:
        self._new(p, "dunning_letter", e.letter_id, e.customer_id, None, day, None, e.amount,
                  0, f"level_{e.level}", e.invoice_id)

    @folds(ev.InvoiceDisputed)
    def _invoice_disputed(self, p: int, day: str, e: ev.InvoiceDisputed) -> None:
        self._new(p, "dispute", e.dispute_id, e.customer_id, None, day, None, e.amount,
                  e.amount, "open", e.invoice_id)

    @folds(ev.DisputeResolved)
    def _dispute_resolved(self, p: int, day: str, e: ev.DisputeResolved) -> None:
        self._change(p, "dispute", e.dispute_id, day,
                     delta=self.docs[("dispute", e.dispute_id)][OPEN], status=e.outcome)

    @folds(ev.PromiseToPayRecorded)
    def _promise_to_pay_recorded(self, p: int, day: str, e: ev.PromiseToPayRecorded) -> None:
        self._new(p, "promise", e.promise_id, e.customer_id, None, day, e.pay_by.isoformat(),
                  e.amount, e.amount, "promised", e.invoice_id)

    @folds(ev.CreditHoldPlaced)
    def _credit_hold_placed(self, p: int, day: str, e: ev.CreditHoldPlaced) -> None:
        self._new(p, "credit_hold", e.hold_id, e.customer_id, None, day, None, e.credit_limit,
                  0, "held", e.reason[:200])

    @folds(ev.CreditHoldReleased)
    def _credit_hold_released(self, p: int, day: str, e: ev.CreditHoldReleased) -> None:
        self._change(p, "credit_hold", e.hold_id, day, status="released")

    # --- purchasing: purchase orders, goods receipts, bill holds ----------------------
    # A purchase order's open amount is what is still to be received (at the PO's prices);
    # a goods receipt is a document of its own; a bill's hold is the document
    # ``bill_hold`` (held, released), so the bill's own status is left as it was.

    @folds(ev.PurchaseOrderIssued)
    def _purchase_order_issued(self, p: int, day: str, e: ev.PurchaseOrderIssued) -> None:
        self._new(p, "purchase_order", e.po_id, e.vendor_id, None, e.order_date.isoformat(),
                  e.expected_on.isoformat() if e.expected_on else None, e.total, e.total,
                  "open")

    @folds(ev.GoodsReceived)
    def _goods_received(self, p: int, day: str, e: ev.GoodsReceived) -> None:
        self._new(p, "goods_receipt", e.receipt_id, e.vendor_id, e.grni_account, day, None,
                  e.total, 0, "received", e.po_id)
        left = self.docs[("purchase_order", e.po_id)][OPEN] - e.total
        self._change(p, "purchase_order", e.po_id, day, delta=e.total,
                     status="received" if left == 0 else "partially_received")

    @folds(ev.BillHeld)
    def _bill_held(self, p: int, day: str, e: ev.BillHeld) -> None:
        self._new(p, "bill_hold", e.bill_id, e.vendor_id, None, day, None, 0, 0, "held",
                  "; ".join(r.detail for r in e.reasons)[:500])

    @folds(ev.BillHoldReleased)
    def _bill_hold_released(self, p: int, day: str, e: ev.BillHoldReleased) -> None:
        self._change(p, "bill_hold", e.bill_id, day, status="released")

    # --- accruals and prepaids: accruals (due, reversed) and prepaid schedules ---------

    @folds(ev.AccrualFlagged)
    def _accrual_flagged(self, p: int, day: str, e: ev.AccrualFlagged) -> None:
        self._new(p, "accrual", e.entry_id, None, None, day, e.reverse_on.isoformat(),
                  e.amount, e.amount, "due", e.period)

    @folds(ev.AccrualsReversed)
    def _accruals_reversed(self, p: int, day: str, e: ev.AccrualsReversed) -> None:
        self._new(p, "accrual_run", e.run_id, None, None, day, None, len(e.entry_ids), 0,
                  "completed", e.period)

    @folds(ev.PrepaidScheduleRecorded)
    def _prepaid_schedule_recorded(self, p: int, day: str,
                                   e: ev.PrepaidScheduleRecorded) -> None:
        self._new(p, "prepaid", e.schedule_id, e.vendor_id, e.account, day, None, e.amount,
                  e.amount, "active", e.bill_id)

    @folds(ev.PrepaidAmortized)
    def _prepaid_amortized(self, p: int, day: str, e: ev.PrepaidAmortized) -> None:
        left = self.docs[("prepaid", e.schedule_id)][OPEN] - e.amount
        self._change(p, "prepaid", e.schedule_id, day, delta=e.amount,
                     status="amortized" if left == 0 else "active")

    # --- fixed assets: an asset's open amount is its net book value ---------------------

    @folds(ev.AssetCapitalized)
    def _asset_capitalized(self, p: int, day: str, e: ev.AssetCapitalized) -> None:
        self._new(p, "fixed_asset", e.asset_id, e.vendor_id, e.cost_account, day,
                  e.in_service_date.isoformat(), e.amount, e.amount, "in_service", e.class_id)

    @folds(ev.AssetDepreciated)
    def _asset_depreciated(self, p: int, day: str, e: ev.AssetDepreciated) -> None:
        self._change(p, "fixed_asset", e.asset_id, day, delta=e.amount,
                     status="fully_depreciated" if e.month == e.life_months else "in_service")

    @folds(ev.AssetDisposed)
    def _asset_disposed(self, p: int, day: str, e: ev.AssetDisposed) -> None:
        self._change(p, "fixed_asset", e.asset_id, day,
                     delta=self.docs[("fixed_asset", e.asset_id)][OPEN], status="disposed")

    # --- year-end close: the closing entry is a journal document of its own -------------

    @folds(ev.FiscalYearClosed)
    def _fiscal_year_closed(self, p: int, day: str, e: ev.FiscalYearClosed) -> None:
        self._new(p, "journal", e.entry_id, None, e.retained_earnings, day, None,
                  sum(x.amount for x in e.lines if x.amount > 0), 0, "posted", "year_end_close")

    # --- payroll and sales tax: registers, returns (open: tax unpaid), tax payments ----

    @folds(ev.PayrollPosted)
    def _payroll_posted(self, p: int, day: str, e: ev.PayrollPosted) -> None:
        # open amount: the gross that stands (a register posted again after its reversal
        # changes the row; its total stays the first posting's)
        row = self.docs.get(("payroll", e.register_id))
        if row is not None:
            self._change(p, "payroll", e.register_id, day, delta=row[OPEN] - e.gross,
                         status="posted")
            return
        self._new(p, "payroll", e.register_id, None, e.wage_account, day,
                  e.period_end.isoformat(), e.gross, e.gross, "posted",
                  f"{e.period_start.isoformat()}..{e.period_end.isoformat()}")

    @folds(ev.PayrollReversed)
    def _payroll_reversed(self, p: int, day: str, e: ev.PayrollReversed) -> None:
        self._change(p, "payroll", e.register_id, day,
                     delta=self.docs[("payroll", e.register_id)][OPEN], status="reversed")

    @folds(ev.SalesTaxReturnFiled)
    def _sales_tax_return_filed(self, p: int, day: str, e: ev.SalesTaxReturnFiled) -> None:
        self._new(p, "tax_return", e.return_id, e.jurisdiction_id, e.account, day,
                  e.due_on.isoformat(), e.tax_due, e.tax_due,
                  "filed" if e.tax_due else "paid", e.period)

    @folds(ev.SalesTaxRemitted)
    def _sales_tax_remitted(self, p: int, day: str, e: ev.SalesTaxRemitted) -> None:
        self._new(p, "tax_payment", e.payment_id, e.jurisdiction_id, e.account, day, None,
                  e.amount, 0, "paid", e.return_id)
        left = self.docs[("tax_return", e.return_id)][OPEN] - e.amount
        self._change(p, "tax_return", e.return_id, day, delta=e.amount,
                     status="paid" if left == 0 else "partially_paid")

    # --- several bank accounts: a transfer's two legs (the sent leg open while in
    # transit), card charges, bank errors reported (statement line status bank_error) ------

    @folds(ev.FundsTransferSent)
    def _funds_transfer_sent(self, p: int, day: str, e: ev.FundsTransferSent) -> None:
        self._new(p, "transfer_out", e.transfer_id, e.to_bank_account_id, e.transit_account,
                  day, None, e.amount, e.amount, "recorded", e.from_bank_account_id)

    @folds(ev.FundsTransferReceived)
    def _funds_transfer_received(self, p: int, day: str, e: ev.FundsTransferReceived) -> None:
        out = self.docs[("transfer_out", e.transfer_id)]
        self._change(p, "transfer_out", e.transfer_id, day, delta=e.amount, status=out[STATUS])
        self._new(p, "transfer_in", e.transfer_id, e.from_bank_account_id, e.to_gl_account,
                  day, None, e.amount, 0, "recorded", e.to_bank_account_id)

    @folds(ev.CardChargeRecorded)
    def _card_charge_recorded(self, p: int, day: str, e: ev.CardChargeRecorded) -> None:
        self._new(p, "card_charge", e.charge_id, None, e.account, day, None, e.amount, 0,
                  "recorded", e.merchant)

    @folds(ev.BankErrorReported)
    def _bank_error_reported(self, p: int, day: str, e: ev.BankErrorReported) -> None:
        self._new(p, "bank_error", e.error_id, None, e.bank_account_id, day, None, e.amount,
                  0, "reported", e.line_id)
        row = self.docs[("statement_line", e.line_id)]
        self._change(p, "statement_line", e.line_id, day, delta=row[OPEN], status="bank_error")

    def take_rows(self) -> list[Write]:
        """Hand over the history rows."""
        out: list[Write] = [(_HISTORY_INSERT, self.history)] if self.history else []
        self.history = []
        return out

    def take_changes(self) -> list[Write]:
        """Hand over the documents that changed since the last take, as upserts."""
        if not self.dirty:
            return []
        rows = [tuple(self.docs[k]) for k in sorted(self.dirty)]
        self.dirty = set()
        return [(_DOCUMENT_UPSERT, rows)]

    def take_states(self) -> list[Write]:
        """Hand over every document (into an emptied table).

        The rows are the projector's own lists, in the order the documents were
        created: write them before folding on. (Sorted by key and copied to tuples,
        as ``take_changes`` hands them, they took 0.35 µs an event longer to write.)
        """
        self.dirty = set()
        return [(_DOCUMENT_UPSERT, list(self.docs.values()))] if self.docs else []

    def discard(self) -> None:
        """Forget the history rows and which documents changed."""
        self.history, self.dirty = [], set()


class BankStatement(Projector):
    """Imported statement lines with what each is matched to."""

    def __init__(self) -> None:
        self.lines: dict[str, list[Any]] = {}
        self.dirty: set[str] = set()

    @folds(ev.StatementLineImported)
    def _imported(self, p: int, day: str, e: ev.StatementLineImported) -> None:
        self.lines[e.line_id] = [e.line_id, e.bank_account_id, day, e.amount, e.description,
                                 e.reference, e.counterparty, e.bank_ref, "unmatched", "[]", p]
        self.dirty.add(e.line_id)

    @folds(ev.StatementLineMatched, ev.StatementLineUnmatched)
    def _matched(self, p: int, day: str,
                 e: ev.StatementLineMatched | ev.StatementLineUnmatched) -> None:
        row = self.lines[e.line_id]
        matched = type(e) is ev.StatementLineMatched
        row[8] = "matched" if matched else "unmatched"
        row[9] = orjson.dumps([[t.kind, t.doc_id, t.amount] for t in e.targets]
                              if matched else []).decode()
        row[10] = p
        self.dirty.add(e.line_id)

    @folds(ev.BankErrorReported)
    def _bank_error(self, p: int, day: str, e: ev.BankErrorReported) -> None:
        row = self.lines[e.line_id]
        row[8] = "bank_error"
        row[9] = orjson.dumps([["bank_error", e.error_id, e.amount]]).decode()
        row[10] = p
        self.dirty.add(e.line_id)

    def take_changes(self) -> list[Write]:
        """Hand over changed statement lines as upserts."""
        if not self.dirty:
            return []
        rows = [tuple(self.lines[k]) for k in sorted(self.dirty)]
        self.dirty = set()
        return [(_STATEMENT_UPSERT, rows)]

    def take_states(self) -> list[Write]:
        """Hand over every statement line (into an emptied table); the rows are the
        projector's own lists, as in ``DocumentStates.take_states``."""
        self.dirty = set()
        return [(_STATEMENT_UPSERT, list(self.lines.values()))] if self.lines else []

    def discard(self) -> None:
        """Forget which lines changed."""
        self.dirty = set()


class Projections:
    """All projectors of the books, applied and flushed together."""

    PARTS = ("gl", "subledgers", "documents", "statement")
    """The projectors' attribute names, in the order they handle an event."""

    def __init__(self, *, only: Sequence[str] | None = None) -> None:
        self.gl = GeneralLedger()
        self.subledgers = Subledgers()
        self.documents = DocumentStates()
        self.statement = BankStatement()
        self._all: tuple[Projector, ...] = (self.gl, self.subledgers, self.documents,
                                            self.statement)
        self._days: dict[date, str] = {}
        """entry_date -> its ISO string: a log holds few dates and many events."""
        self.route(only)

    def route(self, only: Sequence[str] | None = None) -> None:
        """Have only the projectors named in ``only`` (of :attr:`PARTS`) read the events
        applied or folded from now on, or every projector (``None``, as a new one does).

        A rebuild in two processes folds the GL lines and subledger movements in one and
        the documents and statement lines in the other; an event none of the chosen
        projectors reads is not even decoded by ``fold``.
        """
        if only is not None and (unknown := set(only) - set(self.PARTS)):
            raise ValueError(f"projectors {sorted(unknown)}: expected some of {self.PARTS}")
        chosen = self._all if only is None else tuple(
            getattr(self, name) for name in self.PARTS if name in only)
        handlers = [p.handlers() for p in chosen]
        # Per event class: whether it has an entry_date (then that is the day its
        # handlers get), and its handlers in projector order.
        self._dispatch: dict[type[ev.Event], tuple[bool, tuple[Handler, ...]]] = {
            cls: ("entry_date" in cls.model_fields, tuple(h[cls] for h in handlers if cls in h))
            for cls in ev.EVENT_CLASSES.values()
        }
        # Per stored type, for ``fold``: its current schema_version, decoder, whether it
        # is dated and its handlers, found with one look-up per event.
        self._by_type: dict[str, tuple[int, Callable[[str | bytes], ev.Event], bool,
                                       tuple[Handler, ...]]] = {
            t: (*ev.current_decoder(t), *self._dispatch[cls])
            for t, cls in ev.EVENT_CLASSES.items()
        }

    def apply(self, position: int, business_date: str, e: ev.Event) -> None:
        """Apply one erp-realm event to every projector that reads its type."""
        dated, handlers = self._dispatch[type(e)]
        if dated:
            d = e.entry_date  # type: ignore[attr-defined]
            day = self._days.get(d) or self._days.setdefault(d, d.isoformat())
        else:
            day = business_date
        for fn in handlers:
            fn(position, day, e)

    def fold(self, rows: Iterable[tuple[int, str, int, str, str]], *,
             keep_decoded: bool = False) -> None:
        """Decode and apply stored erp-realm rows, ``(position, type, schema_version,
        business_date, payload)`` as ``EventStore.scan_pages`` reads them (a rebuild, a
        verification's fold; ``keep_decoded``: through ``erp.store.decoded``, which the
        checks' folds of the same log share, instead of decoding every payload again).

        ``apply`` with the decoding inlined: per event one look-up by the stored type
        gives its decoder and its handlers (a payload of an older schema_version is
        upcast by ``decode_event``).
        """
        by_type, days = self._by_type, self._days
        for position, type_, version, business_date, payload in rows:
            entry = by_type.get(type_)
            if keep_decoded:
                e: ev.Event = decoded("erp", type_, version, payload, ev.decode_event)
                dated, handlers = self._dispatch[type(e)]
            elif entry is not None and entry[0] == version:
                _, decode, dated, handlers = entry
                if not handlers:  # no projector chosen reads this type: nothing to decode
                    continue
                e = decode(payload)
            else:  # an older shape to upcast, or a type unknown here: decode_event says which
                e = ev.decode_event(type_, version, payload)
                dated, handlers = self._dispatch[type(e)]
            if dated:
                d = e.entry_date  # type: ignore[attr-defined]
                day = days.get(d) or days.setdefault(d, d.isoformat())
            else:
                day = business_date
            for fn in handlers:
                fn(position, day, e)

    def take(self) -> list[Write]:
        """Every projector's buffered rows and changed states, as statements; the buffers
        are emptied. The rows are copies: the projectors may go on folding."""
        out: list[Write] = []
        for p in self._all:
            out += p.take_rows()
            out += p.take_changes()
        return out

    def take_rows(self) -> list[Write]:
        """Only the rows that append (GL lines, subledger movements, document history).

        With ``take_states`` at the end, this is how a rebuild writes: each document
        once in its final state rather than once per page it changed in.
        """
        return [w for p in self._all for w in p.take_rows()]

    def take_states(self) -> list[Write]:
        """Every document and statement line in its current state, for emptied tables."""
        return [w for p in self._all for w in p.take_states()]

    def flush(self, conn: Connection, sql: Any) -> None:
        """Write every projector's buffered rows in the caller's transaction."""
        write(conn, sql, self.take())

    def discard(self) -> None:
        """Drop buffered rows (the transaction they belonged to was rolled back, or the
        tables already hold them)."""
        for p in self._all:
            p.discard()


def write(conn: Connection, sql: Any, writes: Sequence[Write]) -> None:
    """Execute statements from ``take()`` on a connection (``sql`` adapts placeholders).

    Rows go ``ROWS_PER_STATEMENT`` to a statement, the rest one by one. An upsert's
    rows name distinct keys (they come from a dict), as PostgreSQL requires of the
    rows of one statement.
    """
    n = ROWS_PER_STATEMENT
    if not writes:
        return
    cur = EventStore.cursor(conn)
    try:
        for insert, rows in writes:
            whole = len(rows) - len(rows) % n
            if whole:
                cur.executemany(sql(insert.many), [tuple(chain.from_iterable(rows[i:i + n]))
                                                   for i in range(0, whole, n)])
            if whole < len(rows):
                cur.executemany(sql(insert.one), [tuple(r) for r in rows[whole:]])
    finally:
        cur.close()


def load(conn: Connection, store: EventStore, writes: Sequence[Write]) -> None:
    """Write rows from ``take_rows`` and ``take_states`` into emptied tables (a rebuild):
    an emptied table has nothing to upsert, so they go in the store's bulk way
    (``EventStore.load_rows``: COPY on PostgreSQL, many-row INSERTs on SQLite)."""
    for insert, rows in writes:
        store.load_rows(conn, insert.table, insert.columns, rows)
