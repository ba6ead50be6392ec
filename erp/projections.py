"""Projectors: read tables folded from the log, written in the append's transaction.

Each projector keeps the little state it needs in memory, buffers the rows an
event produces, and writes them once per transaction (``flush``). The subledgers
are built from documents here, never from GL lines, so "GL control balance equals
subledger" is a real comparison between two independent folds.

Tables (see ``erp.schema``): ``gl_lines`` (the posting rules' fold), ``subledger``
(AR, AP, unapplied cash and bank-book movements per document), ``documents`` and
``doc_history`` (every document's state, now and at each change), and
``statement_lines``. The audit trail is a view over the log itself.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import orjson
from sqlalchemy.engine import Connection

from erp import events as ev
from erp.postings import POSTING_TYPES, post

Write = tuple[str, list[tuple[Any, ...]]]
"""A statement (with ``?`` placeholders) and the rows to execute it with."""

_GL_INSERT = ("INSERT INTO gl_lines (position, seq, entry_date, account, amount, party, doc_id) "
              "VALUES (?,?,?,?,?,?,?)")
_SUBLEDGER_INSERT = ("INSERT INTO subledger (position, seq, ledger, account, party, doc_kind, "
                     "doc_id, entry_date, amount) VALUES (?,?,?,?,?,?,?,?,?)")
_DOCUMENT_UPSERT = (
    "INSERT INTO documents (kind, doc_id, party, account, doc_date, due_on, total, open_amount, "
    "status, reference, last_position) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT (kind, doc_id) DO UPDATE SET party = excluded.party, "
    "open_amount = excluded.open_amount, status = excluded.status, "
    "last_position = excluded.last_position")
_HISTORY_INSERT = ("INSERT INTO doc_history (position, kind, doc_id, entry_date, status, "
                   "open_amount, party) VALUES (?,?,?,?,?,?,?)")
_STATEMENT_UPSERT = (
    "INSERT INTO statement_lines (line_id, bank_account_id, entry_date, amount, description, "
    "reference, counterparty, bank_ref, status, matched_to, last_position) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (line_id) DO UPDATE SET "
    "status = excluded.status, matched_to = excluded.matched_to, "
    "last_position = excluded.last_position")


class GeneralLedger:
    """GL lines: the fold of the posting rules."""

    interested: frozenset[type[ev.Event]] | None = POSTING_TYPES

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def apply(self, position: int, business_date: str, e: ev.Event) -> None:
        """Buffer the GL lines of one event."""
        lines = post(e)
        if lines:
            day = e.entry_date.isoformat()  # type: ignore[attr-defined]
            self.rows.extend((position, seq, day, p.account, p.amount, p.party, p.doc_id)
                             for seq, p in enumerate(lines))

    def take(self) -> list[Write]:
        """Hand over the buffered lines as statements to execute."""
        out = [(_GL_INSERT, self.rows)] if self.rows else []
        self.rows = []
        return out


class Subledgers:
    """Movements of the AR, AP, unapplied-cash and bank subledgers, from documents."""

    interested: frozenset[type[ev.Event]] | None = frozenset({
        ev.InvoiceIssued, ev.ReceiptRecorded, ev.ReceiptApplied, ev.ApplicationReversed,
        ev.BillEntered, ev.VendorPaid, ev.CreditMemoIssued, ev.InvoiceWrittenOff,
        ev.FeeAllowanceGranted, ev.CustomerRefunded, ev.VendorCreditRecorded,
        ev.VendorCreditApplied, ev.BankFeeRecorded, ev.InterestRecorded, ev.BankAccountOpened,
    })

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def apply(self, position: int, business_date: str, e: ev.Event) -> None:
        """Buffer the subledger movements of one event."""
        out = self.rows
        match e:
            case ev.InvoiceIssued():
                d = e.entry_date.isoformat()
                out.append((position, 0, "ar", e.ar_account, e.customer_id, "invoice",
                            e.invoice_id, d, e.total))
            case ev.ReceiptRecorded():
                d = e.entry_date.isoformat()
                out.append((position, 0, "unapplied_cash", e.unapplied_account, e.customer_id,
                            "receipt", e.receipt_id, d, e.amount))
                out.append((position, 1, "bank", e.bank_gl_account, e.customer_id, "receipt",
                            e.receipt_id, d, e.amount))
            case ev.ReceiptApplied() | ev.ApplicationReversed():
                d = e.entry_date.isoformat()
                sign = 1 if isinstance(e, ev.ReceiptApplied) else -1
                out.append((position, 0, "unapplied_cash", e.unapplied_account, e.customer_id,
                            "receipt", e.receipt_id, d, -sign * e.amount))
                out.append((position, 1, "ar", e.ar_account, e.customer_id, "invoice",
                            e.invoice_id, d, -sign * e.amount))
            case ev.BillEntered():
                out.append((position, 0, "ap", e.ap_account, e.vendor_id, "bill", e.bill_id,
                            e.entry_date.isoformat(), e.total))
            case ev.VendorPaid():
                d = e.entry_date.isoformat()
                seq = 0
                for a in e.applications:
                    out.append((position, seq, "ap", e.ap_account, e.vendor_id, "bill",
                                a.bill_id, d, -a.amount))
                    seq += 1
                out.append((position, seq, "bank", e.bank_gl_account, e.vendor_id, "payment",
                            e.payment_id, d, -e.amount))
            case ev.CreditMemoIssued() | ev.InvoiceWrittenOff() | ev.FeeAllowanceGranted():
                out.append((position, 0, "ar", e.ar_account, e.customer_id, "invoice",
                            e.invoice_id, e.entry_date.isoformat(), -e.amount))
            case ev.CustomerRefunded():
                d = e.entry_date.isoformat()
                out.append((position, 0, "unapplied_cash", e.unapplied_account, e.customer_id,
                            "receipt", e.receipt_id, d, -e.amount))
                out.append((position, 1, "bank", e.bank_gl_account, e.customer_id, "refund",
                            e.refund_id, d, -e.amount))
            case ev.VendorCreditRecorded():
                out.append((position, 0, "ap", e.ap_account, e.vendor_id, "vendor_credit",
                            e.credit_id, e.entry_date.isoformat(), -e.amount))
            case ev.VendorCreditApplied():
                d = e.entry_date.isoformat()
                out.append((position, 0, "ap", e.ap_account, e.vendor_id, "bill", e.bill_id, d,
                            -e.amount))
                out.append((position, 1, "ap", e.ap_account, e.vendor_id, "vendor_credit",
                            e.credit_id, d, e.amount))
            case ev.BankFeeRecorded():
                out.append((position, 0, "bank", e.bank_gl_account, None, "fee", e.fee_id,
                            e.entry_date.isoformat(), -e.amount))
            case ev.InterestRecorded():
                out.append((position, 0, "bank", e.bank_gl_account, None, "interest",
                            e.interest_id, e.entry_date.isoformat(), e.amount))
            case ev.BankAccountOpened():
                if e.opening_balance:
                    out.append((position, 0, "bank", e.gl_account, None, "bank_account",
                                e.bank_account_id, e.entry_date.isoformat(), e.opening_balance))

    def take(self) -> list[Write]:
        """Hand over the buffered movements as statements to execute."""
        out = [(_SUBLEDGER_INSERT, self.rows)] if self.rows else []
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


class DocumentStates:
    """Every document's current state and the history of its states."""

    interested: frozenset[type[ev.Event]] | None = None  # nearly every event

    def __init__(self) -> None:
        self.docs: dict[tuple[str, str], list[Any]] = {}
        self.approved: set[str] = set()
        self.dirty: set[tuple[str, str]] = set()
        self.history: list[tuple[Any, ...]] = []

    def _new(self, position: int, kind: str, doc_id: str, party: str | None,
             account: str | None, day: date | str, due: date | None, total: int, open_: int,
             status: str, ref: str = "") -> None:
        d = day if isinstance(day, str) else day.isoformat()
        row = [kind, doc_id, party, account, d, due.isoformat() if due else None, total, open_,
               status, ref, position]
        self.docs[(kind, doc_id)] = row
        self.dirty.add((kind, doc_id))
        self.history.append((position, kind, doc_id, d, status, open_, party))

    def _change(self, position: int, kind: str, doc_id: str, day: date | str, *,
                delta: int = 0, status: str | None = None) -> None:
        row = self.docs[(kind, doc_id)]
        row[OPEN] -= delta
        row[STATUS] = status or _status(kind, row[TOTAL], row[OPEN], doc_id in self.approved)
        row[POS] = position
        self.dirty.add((kind, doc_id))
        self.history.append((position, kind, doc_id,
                             day if isinstance(day, str) else day.isoformat(), row[STATUS],
                             row[OPEN], row[PARTY]))

    def apply(self, position: int, business_date: str, e: ev.Event) -> None:
        """Record the document changes of one event."""
        p, bd = position, business_date
        match e:
            case ev.InvoiceIssued():
                self._new(p, "invoice", e.invoice_id, e.customer_id, e.ar_account, e.entry_date,
                          e.due_on, e.total, e.total, "open", e.reference)
            case ev.ReceiptRecorded():
                self._new(p, "receipt", e.receipt_id, e.customer_id, e.unapplied_account,
                          e.entry_date, None, e.amount, e.amount, "unapplied", e.reference)
            case ev.ReceiptApplied():
                self._change(p, "receipt", e.receipt_id, e.entry_date, delta=e.amount)
                self._change(p, "invoice", e.invoice_id, e.entry_date, delta=e.amount)
            case ev.BillEntered():
                self._new(p, "bill", e.bill_id, e.vendor_id, e.ap_account, e.entry_date,
                          e.due_on, e.total, e.total, "entered", e.vendor_invoice_number)
            case ev.BillApproved():
                self.approved.add(e.bill_id)
                self._change(p, "bill", e.bill_id, bd)
            case ev.VendorPaid():
                self._new(p, "payment", e.payment_id, e.vendor_id, e.bank_gl_account,
                          e.entry_date, None, e.amount, 0, "paid", e.run_id or "")
                for a in e.applications:
                    self._change(p, "bill", a.bill_id, e.entry_date, delta=a.amount)
            case ev.StatementLineImported():
                self._new(p, "statement_line", e.line_id, e.counterparty or None,
                          e.bank_account_id, e.entry_date, None, e.amount, e.amount,
                          "unmatched", e.reference)
            case ev.StatementLineMatched() | ev.StatementLineUnmatched():
                matched = isinstance(e, ev.StatementLineMatched)
                row = self.docs[("statement_line", e.line_id)]
                self._change(p, "statement_line", e.line_id, bd,
                             delta=row[OPEN] if matched else -row[TOTAL],
                             status="matched" if matched else "unmatched")
                for t in e.targets:
                    if t.kind != "receipt":
                        self._change(p, t.kind, t.doc_id, bd,
                                     status="cleared" if matched else _UNCLEARED[t.kind])
            case ev.JournalEntryPosted():
                self._new(p, "journal", e.entry_id, None, None, e.entry_date, None,
                          sum(x.amount for x in e.lines if x.amount > 0), 0, "posted", e.kind)
            case ev.JournalEntryReversed():
                self._change(p, "journal", e.entry_id, e.entry_date, status="reversed")
                self._new(p, "journal", e.reversal_id, None, None, e.entry_date, None,
                          sum(x.amount for x in e.lines if x.amount > 0), 0, "posted",
                          f"reversal of {e.entry_id}")
            case ev.CreditMemoIssued():
                self._new(p, "credit_memo", e.credit_memo_id, e.customer_id, e.account,
                          e.entry_date, None, e.amount, 0, "issued", e.invoice_id)
                self._change(p, "invoice", e.invoice_id, e.entry_date, delta=e.amount)
            case ev.InvoiceWrittenOff() | ev.FeeAllowanceGranted():
                self._change(p, "invoice", e.invoice_id, e.entry_date, delta=e.amount)
            case ev.ApplicationReversed():
                self._change(p, "receipt", e.receipt_id, e.entry_date, delta=-e.amount)
                self._change(p, "invoice", e.invoice_id, e.entry_date, delta=-e.amount)
            case ev.ReceiptCustomerAssigned():
                self.docs[("receipt", e.receipt_id)][PARTY] = e.customer_id
                self._change(p, "receipt", e.receipt_id, bd)
            case ev.CustomerRefunded():
                self._new(p, "refund", e.refund_id, e.customer_id, e.bank_gl_account,
                          e.entry_date, None, e.amount, 0, "paid", e.receipt_id)
                self._change(p, "receipt", e.receipt_id, e.entry_date, delta=e.amount)
            case ev.VendorCreditRecorded():
                self._new(p, "vendor_credit", e.credit_id, e.vendor_id, e.ap_account,
                          e.entry_date, None, e.amount, e.amount, "open", e.vendor_credit_number)
            case ev.VendorCreditApplied():
                self._change(p, "vendor_credit", e.credit_id, e.entry_date, delta=e.amount)
                self._change(p, "bill", e.bill_id, e.entry_date, delta=e.amount)
            case ev.PaymentRunCreated():
                self._new(p, "payment_run", e.run_id, None, None, e.entry_date, None, e.total, 0,
                          "completed")
            case ev.BankFeeRecorded():
                self._new(p, "fee", e.fee_id, None, e.account, e.entry_date, None, e.amount, 0,
                          "recorded", e.memo)
            case ev.InterestRecorded():
                self._new(p, "interest", e.interest_id, None, e.account, e.entry_date, None,
                          e.amount, 0, "recorded", e.memo)
            case ev.VendorBankChangeRequested():
                self._new(p, "bank_change", e.request_id, e.vendor_id, None, bd, None, 0, 0,
                          "pending", e.new_bank.masked())
            case ev.VendorBankChangeApproved():
                self._change(p, "bank_change", e.request_id, bd, status="approved")
            case ev.VendorBankChangeRejected():
                self._change(p, "bank_change", e.request_id, bd, status="rejected")
            case ev.PeriodOpened():
                self._new(p, "period", e.period, None, None, e.start, e.end, 0, 0, "open")
            case ev.PeriodClosed():
                self._change(p, "period", e.period, bd, status="closed")
            case ev.PeriodReopened():
                self._change(p, "period", e.period, bd, status="open")

    def take(self) -> list[Write]:
        """Hand over changed documents (as upserts) and their history rows."""
        out: list[Write] = []
        if self.dirty:
            out.append((_DOCUMENT_UPSERT, [tuple(self.docs[k]) for k in sorted(self.dirty)]))
            self.dirty = set()
        if self.history:
            out.append((_HISTORY_INSERT, self.history))
            self.history = []
        return out


_UNCLEARED = {"payment": "paid", "refund": "paid", "fee": "recorded", "interest": "recorded"}


class BankStatement:
    """Imported statement lines with what each is matched to."""

    interested: frozenset[type[ev.Event]] | None = frozenset({
        ev.StatementLineImported, ev.StatementLineMatched, ev.StatementLineUnmatched})

    def __init__(self) -> None:
        self.lines: dict[str, list[Any]] = {}
        self.dirty: set[str] = set()

    def apply(self, position: int, business_date: str, e: ev.Event) -> None:
        """Record statement-line changes of one event."""
        match e:
            case ev.StatementLineImported():
                self.lines[e.line_id] = [e.line_id, e.bank_account_id, e.entry_date.isoformat(),
                                         e.amount, e.description, e.reference, e.counterparty,
                                         e.bank_ref, "unmatched", "[]", position]
                self.dirty.add(e.line_id)
            case ev.StatementLineMatched() | ev.StatementLineUnmatched():
                row = self.lines[e.line_id]
                matched = isinstance(e, ev.StatementLineMatched)
                row[8] = "matched" if matched else "unmatched"
                row[9] = orjson.dumps([[t.kind, t.doc_id, t.amount] for t in e.targets]
                                      if matched else []).decode()
                row[10] = position
                self.dirty.add(e.line_id)

    def take(self) -> list[Write]:
        """Hand over changed statement lines as upserts."""
        if not self.dirty:
            return []
        rows = [tuple(self.lines[k]) for k in sorted(self.dirty)]
        self.dirty = set()
        return [(_STATEMENT_UPSERT, rows)]


class Projections:
    """All projectors of the books, applied and flushed together.

    Each projector declares the event types it reads (``interested``; None: all);
    an event is handed only to the projectors that read it.
    """

    def __init__(self) -> None:
        self.gl = GeneralLedger()
        self.subledgers = Subledgers()
        self.documents = DocumentStates()
        self.statement = BankStatement()
        self._all = (self.gl, self.subledgers, self.documents, self.statement)
        self._dispatch = {
            cls: tuple(p.apply for p in self._all if p.interested is None or cls in p.interested)
            for cls in ev.EVENT_CLASSES.values()
        }

    def apply(self, position: int, business_date: str, e: ev.Event) -> None:
        """Apply one erp-realm event to every projector that reads its type."""
        for fn in self._dispatch[type(e)]:
            fn(position, business_date, e)

    def take(self) -> list[Write]:
        """Every projector's buffered rows, as statements; the buffers are emptied.

        The rows are copies: the caller may execute them (say, on another thread)
        while the projectors go on folding.
        """
        return [w for p in self._all for w in p.take()]

    def flush(self, conn: Connection, sql: Any) -> None:
        """Write every projector's buffered rows in the caller's transaction."""
        write(conn, sql, self.take())

    def discard(self) -> None:
        """Drop buffered rows (the transaction they belonged to was rolled back)."""
        self.take()


def write(conn: Connection, sql: Any, writes: list[Write]) -> None:
    """Execute statements from ``take()`` on a connection (``sql`` adapts placeholders)."""
    for statement, rows in writes:
        conn.exec_driver_sql(sql(statement), rows)
