"""Control-account reconciliation: GL against subledger against the world, itemized.

For every control account of the chart (receivables, payables, unapplied cash, bank
accounts) and every control account a scenario declares, :func:`reconcile` gives an
:class:`AccountRow`: the GL balance, the subledger total, the external balance (the
world's own records) and every difference itemized down to documents and statement
lines (:class:`Item`), each with the party it belongs to. Amounts are integer cents in
the account's natural sign (receivables and bank as debits, payables and unapplied
cash as credits).

What each external balance is:

- receivables (``ar``): what the customers' own records say they owe on the invoices
  they received (an overpaid invoice counts zero: its excess is unapplied cash);
- unapplied cash (``unapplied_cash``): the customers' money that reached the bank and
  pays no invoice in their own records: a payment sent twice, the excess of an overpaid
  invoice. Every other receipt's money was meant for invoices and should be applied;
  a receipt that holds no money at all is itemized: explained for a line the bank posted
  twice, not for a deposit the bank returned unpaid (the books record it with
  ``RecordReturnedDeposit``);
- payables (``ap``): what the vendors' own books say the company owes them (bills
  counted once, credit notes, payments that reached the vendor's own account);
- bank (``bank``): the bank's statement balance of the account (its opening plus the
  lines posted as of the date);
- a declared control account: none (GL against its subledger only).

Items compare two sides: kinds starting ``gl_`` compare the GL (``books``) with the
subledger (``external``); every other kind compares the subledger's document
(``books``) with the world (``external``). ``difference = books - external``. An item is
*explained* when it is a legitimate timing or known item (a payment in transit, a
deposit in transit, an outstanding payment, a bill not delivered yet, a bank error the
bank will reverse, a write-off, a duplicate payment held on account; a returned
deposit is explained only once recorded); explained items are kept apart from unexplained ones.
``Reconciliation.ties`` is True when no unexplained difference remains.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from checks.context import ForwardFold, change_keys
from checks.world import (
    COUNTED_BILL_KINDS,
    CustomerInvoice,
    CustomerPayment,
    VendorBill,
    WorldFold,
    WorldView,
    fold_world,
    world_view,
)
from erp import events as ev
from erp import queries as q
from erp.books import document_number_key
from erp.money import display_cents, format_cents
from erp.store import EventStore, StoredEvent
from sim.documents import number_digits
from sim.world_events import BankLinePosted

if TYPE_CHECKING:
    from checks.context import CheckContext

CONTROL_KINDS = ("ar", "unapplied_cash", "ap", "bank")
SIGN = {"ar": 1, "bank": 1, "ap": -1, "unapplied_cash": -1}
"""GL debit-positive amounts times this give the account's natural sign."""

EXTERNAL_SOURCE = {"ar": "customers' records", "unapplied_cash": "customers' money on account",
                   "ap": "vendors' records", "bank": "bank statement"}

UNASSIGNED = "(unassigned)"
"""The party of a receipt the books hold without a customer."""

EXPLAINED_KINDS = frozenset({
    "payment_in_transit", "written_off", "disputed", "bank_error",
    "on_account", "deposit_in_transit", "outstanding_payment", "outstanding_refund",
    "bill_not_delivered", "credit_not_delivered", "vendor_payment_in_transit",
    "awaiting_application", "bill_awaiting_entry", "credit_awaiting_entry",
    "return_awaiting_entry",
    "price_variance_held", "price_variance_disputed"})
"""Kinds that are legitimate items, not errors (a returned item the books have not
recorded is not one: ``RecordReturnedDeposit`` records it)."""

CSV_COLUMNS = ("account", "kind", "party", "document", "books_amount", "external_amount",
               "difference", "explained", "note")


# --- results -------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One itemized difference (or an informational line, with a zero difference)."""

    account: str
    kind: str
    party: str | None
    document: str
    books: int | None
    external: int | None
    difference: int
    explained: bool
    note: str = ""

    def describe(self) -> str:
        """One line for a check's detail."""
        who = f" [{self.party}]" if self.party else ""
        sides = ""
        if self.books is not None or self.external is not None:
            left, right = ("GL", "subledger") if self.kind.startswith("gl_") else ("books",
                                                                                  "world")
            sides = (f" {left} {_m(self.books)} vs {right} {_m(self.external)},")
        tag = "explained" if self.explained else "UNEXPLAINED"
        note = f": {self.note}" if self.note else ""
        return (f"{self.kind}{who} {self.document}{sides} difference "
                f"{display_cents(self.difference)} ({tag}){note}")


@dataclass(frozen=True)
class AccountRow:
    """One control account: its balances and itemized differences."""

    account: str
    name: str
    control: str
    gl: int
    subledger: int
    external: int | None
    external_source: str
    items: tuple[Item, ...]

    @property
    def gl_difference(self) -> int:
        """GL minus subledger."""
        return self.gl - self.subledger

    @property
    def external_difference(self) -> int | None:
        """Subledger minus the external balance (None without an external balance)."""
        return None if self.external is None else self.subledger - self.external

    @property
    def unexplained(self) -> list[Item]:
        """Items with a difference that nothing explains."""
        return [i for i in self.items if not i.explained and i.difference != 0]

    @property
    def explained(self) -> list[Item]:
        """Explained items with a difference (timing and known items)."""
        return [i for i in self.items if i.explained and i.difference != 0]

    @property
    def unexplained_total(self) -> int:
        """Sum of the unexplained differences' magnitudes."""
        return sum(abs(i.difference) for i in self.unexplained)

    @property
    def explained_total(self) -> int:
        """Signed sum of the explained differences."""
        return sum(i.difference for i in self.explained)

    @property
    def ties(self) -> bool:
        """No unexplained difference remains."""
        return not self.unexplained


@dataclass(frozen=True)
class Reconciliation:
    """Every control account's reconciliation as of a date and/or log position."""

    as_of: date | None
    position: int | None
    accounts: tuple[AccountRow, ...]
    day: date | None = None
    """The business date the timing items are judged at: ``as_of``, else the last
    business date of the log."""

    @property
    def ties(self) -> bool:
        """True when every unexplained difference of every account is zero."""
        return all(a.ties for a in self.accounts)

    def account(self, code: str) -> AccountRow:
        """The row of one account (KeyError when it is not reconciled)."""
        for a in self.accounts:
            if a.account == code:
                return a
        raise KeyError(code)

    def items(self, *, unexplained_only: bool = False) -> list[Item]:
        """Every item of every account (only the unexplained differences, if asked)."""
        out = [i for a in self.accounts for i in a.items]
        return [i for i in out if not i.explained and i.difference] if unexplained_only else out

    def rows(self) -> list[dict[str, str]]:
        """Flat rows for a CSV export (``CSV_COLUMNS``), money as decimal strings.

        Each account starts with a ``balance`` row (books: the GL balance; external: the
        external balance; difference: GL minus external) and a ``subledger`` row (the
        subledger total against the GL); its items follow.
        """
        out: list[dict[str, str]] = []
        for a in self.accounts:
            ext = a.external
            out.append(_row(a.account, "balance", "", f"{a.name} (GL vs {a.external_source})",
                            a.gl, ext, a.gl - ext if ext is not None else 0, a.ties,
                            f"GL {format_cents(a.gl)}, subledger {format_cents(a.subledger)}"
                            + (f", {a.external_source} {format_cents(ext)}"
                               if ext is not None else "")))
            out.append(_row(a.account, "subledger", "", "GL vs subledger", a.gl, a.subledger,
                            a.gl_difference, a.gl_difference == 0, ""))
            for i in a.items:
                out.append(_row(i.account, i.kind, i.party or "", i.document, i.books,
                                i.external, i.difference, i.explained, i.note))
        return out


def _row(account: str, kind: str, party: str, document: str, books: int | None,
         external: int | None, difference: int, explained: bool, note: str) -> dict[str, str]:
    return {"account": account, "kind": kind, "party": party, "document": document,
            "books_amount": "" if books is None else format_cents(books),
            "external_amount": "" if external is None else format_cents(external),
            "difference": format_cents(difference), "explained": "yes" if explained else "no",
            "note": note}


def _m(cents: int | None) -> str:
    return "-" if cents is None else display_cents(cents)


# --- what the clerk has had a turn to see -----------------------------------------------------


def last_turn(turn_dates: Iterable[date], day: date | None) -> date | None:
    """The date of the clerk's last turn on or before ``day`` (``date.min`` before the
    first): what reached the company after it (a bank line the feed imports at its date's
    end, a document delivered later) awaits the next turn. Without ``turn_dates``, ``day``
    itself (a turn every date); None when ``day`` is."""
    if day is None:
        return None
    dates = list(turn_dates)
    if not dates:
        return day
    return max((t for t in dates if t <= day), default=date.min)


def _arrived_after(delivered_on: date | None, turn: date | None) -> bool:
    """Whether a document delivered on ``delivered_on`` reached the inbox after the clerk's
    last turn ``turn`` (a document delivered on a turn's date came before it: the mail and
    the counterparties act earlier in the day than the clerk, ``sim.engine.Phase``)."""
    return turn is not None and delivered_on is not None and delivered_on > turn


# --- the books, folded as of a date / position -----------------------------------------


@dataclass
class _Receipt:
    receipt_id: str
    customer_id: str | None
    amount: int
    bank_account_id: str
    account: str
    bank_gl: str
    entry_date: date
    payer: str = ""
    reference: str = ""
    applied: dict[str, int] = field(default_factory=dict)


@dataclass
class _Bill:
    bill_id: str
    vendor_id: str
    number: str
    total: int
    account: str
    entry_date: date


@dataclass
class _Payment:
    payment_id: str
    vendor_id: str
    amount: int
    applied: int
    account: str
    bank_gl: str
    paid_to: str
    entry_date: date


@dataclass
class BooksView:
    """What the company's books hold as of a date and/or position (for itemizing)."""

    invoices: dict[str, ev.InvoiceIssued] = field(default_factory=dict)
    applied_to: dict[str, dict[str, int]] = field(default_factory=dict)
    """invoice -> receipt -> amount applied (net of reversals)."""
    written_off: dict[str, int] = field(default_factory=dict)
    allowances: dict[str, int] = field(default_factory=dict)
    credit_memos: dict[str, int] = field(default_factory=dict)
    receipts: dict[str, _Receipt] = field(default_factory=dict)
    bills: dict[str, _Bill] = field(default_factory=dict)
    credits: dict[str, ev.VendorCreditRecorded] = field(default_factory=dict)
    payments: dict[str, _Payment] = field(default_factory=dict)
    lines: dict[str, ev.StatementLineImported] = field(default_factory=dict)
    matches: dict[str, tuple[ev.MatchTarget, ...]] = field(default_factory=dict)
    bank_accounts: dict[str, ev.BankAccountOpened] = field(default_factory=dict)
    _lines_of: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict, repr=False)
    """``(doc_kind, doc_id)`` -> the lines matched to it, each with its place in ``matches``."""
    _place: dict[str, int] = field(default_factory=dict, repr=False)
    _placed: int = field(default=0, repr=False)
    _of_world: dict[str, set[str]] = field(default_factory=dict, repr=False, compare=False)
    """The bank's line id -> the books' statement lines that are it (see :meth:`world_line`)."""

    def import_line(self, x: ev.StatementLineImported) -> None:
        """Record a statement line the books imported (replacing one of the same id)."""
        old = self.lines.get(x.line_id)
        if old is not None:
            self._of_world.get(old.bank_ref or old.line_id, set()).discard(x.line_id)
        self.lines[x.line_id] = x
        self._of_world.setdefault(x.bank_ref or x.line_id, set()).add(x.line_id)

    def books_lines(self, world_line: str) -> set[str]:
        """The matched books lines whose :meth:`world_line` is ``world_line``."""
        found = {lid for lid in self._of_world.get(world_line, ()) if lid in self.matches}
        if world_line in self.matches and world_line not in self.lines:
            found.add(world_line)
        return found

    def match(self, line_id: str, targets: tuple[ev.MatchTarget, ...]) -> None:
        """Record a statement line's match (replacing the line's earlier one in its place)."""
        if line_id in self.matches:
            self._drop(line_id)
        else:
            self._placed += 1
            self._place[line_id] = self._placed
        self.matches[line_id] = targets
        place = self._place[line_id]
        for t in targets:
            self._lines_of.setdefault((t.kind, t.doc_id), {})[line_id] = place

    def unmatch(self, line_id: str) -> None:
        """Forget a statement line's match."""
        if line_id in self.matches:
            self._drop(line_id)
            del self.matches[line_id], self._place[line_id]

    def _drop(self, line_id: str) -> None:
        for t in self.matches[line_id]:
            lines = self._lines_of.get((t.kind, t.doc_id))
            if lines is not None:
                lines.pop(line_id, None)
                if not lines:
                    del self._lines_of[(t.kind, t.doc_id)]

    def line_of(self, kind: str, doc_id: str) -> str | None:
        """The statement line a document is matched to (the latest in ``matches`` order
        when several are)."""
        lines = self._lines_of.get((kind, doc_id))
        return max(lines, key=lines.__getitem__) if lines else None

    def world_line(self, line_id: str) -> str:
        """The bank's own id of a books statement line (its ``bank_ref`` when it has one)."""
        line = self.lines.get(line_id)
        return (line.bank_ref or line_id) if line is not None else line_id


Handler = Callable[[Any], None]
"""A fold's method: takes one decoded event of the books."""


class BooksFold(ForwardFold):
    """The books' documents folded one event at a time, in the projectors' style.

    ``apply(envelope)`` looks the event's type up in a table of handlers, decodes it into
    its ``erp.events`` model and hands it over, unless its ``entry_date`` (its business
    date when it has none) is after ``as_of``: an event counts as of a date as the GL and
    the subledgers count it. ``books`` is the :class:`BooksView` folded so far (live: an
    advanced fold updates it); the caller feeds the log up to the position it wants.
    """

    realm = "erp"

    def __init__(self, *, as_of: date | None = None) -> None:
        super().__init__(as_of=as_of)
        self.books = BooksView()
        table: dict[type[ev.Event], Handler] = {
            ev.BankAccountOpened: self._bank_account_opened,
            ev.InvoiceIssued: self._invoice_issued,
            ev.CreditMemoIssued: self._credit_memo_issued,
            ev.ReceiptRecorded: self._receipt_recorded,
            ev.ReceiptCustomerAssigned: self._receipt_customer_assigned,
            ev.ReceiptApplied: self._receipt_applied,
            ev.ApplicationReversed: self._application_reversed,
            ev.InvoiceWrittenOff: self._invoice_written_off,
            ev.FeeAllowanceGranted: self._fee_allowance_granted,
            ev.BillEntered: self._bill_entered,
            ev.VendorCreditRecorded: self._vendor_credit_recorded,
            ev.VendorPaid: self._vendor_paid,
            ev.StatementLineImported: self._statement_line_imported,
            ev.StatementLineMatched: self._statement_line_matched,
            ev.StatementLineUnmatched: self._statement_line_unmatched,
        }
        self._table = {str(cls.model_fields["type"].default): h for cls, h in table.items()}
        self.types = list(self._table)
        """The event types the fold reads."""
        self.changes: list[tuple[str, str]] = []
        """The documents each folded event changed, in order (``("invoice", id)``,
        ``("receipt", id)``, ``("wline", the bank's line id)``, a match target...), for the
        reconciliation's incremental itemizing."""

    def apply(self, e: StoredEvent) -> None:
        """Fold one event of the log (other realms and types are ignored)."""
        handler = self._table.get(e.type) if e.realm == "erp" else None
        if handler is None:
            return
        x = e.event
        fields = x.__dict__  # a pydantic model's fields (getattr of a missing one is slow)
        day = fields.get("entry_date") or date.fromisoformat(e.business_date)
        if self.as_of is not None and day > self.as_of:
            self.defer(day)
            return
        changes = self.changes
        line_id = fields.get("line_id")
        if line_id is not None:  # a statement line: what it was matched to, before and after
            changes += [(t.kind, t.doc_id) for t in self.books.matches.get(line_id, ())]
            changes.append(("wline", self.books.world_line(line_id)))
        handler(x)
        for name, kind in change_keys(type(x), _BOOKS_CHANGE_KEYS):
            value = fields.get(name)
            if isinstance(value, str):
                changes.append((kind, value))
        if line_id is not None:
            changes.append(("wline", self.books.world_line(line_id)))
            changes += [(t.kind, t.doc_id) for t in self.books.matches.get(line_id, ())]

    # --- receivables and unapplied cash -------------------------------------------------

    def _invoice_issued(self, x: ev.InvoiceIssued) -> None:
        self.books.invoices[x.invoice_id] = x

    def _receipt_recorded(self, x: ev.ReceiptRecorded) -> None:
        self.books.receipts[x.receipt_id] = _Receipt(
            x.receipt_id, x.customer_id, x.amount, x.bank_account_id, x.unapplied_account,
            x.bank_gl_account, x.entry_date, x.payer, x.reference)

    def _receipt_customer_assigned(self, x: ev.ReceiptCustomerAssigned) -> None:
        r = self.books.receipts.get(x.receipt_id)
        if r is not None:
            r.customer_id = x.customer_id

    def _receipt_applied(self, x: ev.ReceiptApplied) -> None:
        self._move(x.invoice_id, x.receipt_id, x.amount)

    def _application_reversed(self, x: ev.ApplicationReversed) -> None:
        self._move(x.invoice_id, x.receipt_id, -x.amount)

    def _move(self, invoice_id: str, receipt_id: str, amount: int) -> None:
        to = self.books.applied_to.setdefault(invoice_id, {})
        to[receipt_id] = to.get(receipt_id, 0) + amount
        r = self.books.receipts.get(receipt_id)
        if r is not None:
            r.applied[invoice_id] = r.applied.get(invoice_id, 0) + amount

    def _invoice_written_off(self, x: ev.InvoiceWrittenOff) -> None:
        _add(self.books.written_off, x.invoice_id, x.amount)

    def _fee_allowance_granted(self, x: ev.FeeAllowanceGranted) -> None:
        _add(self.books.allowances, x.invoice_id, x.amount)

    def _credit_memo_issued(self, x: ev.CreditMemoIssued) -> None:
        _add(self.books.credit_memos, x.invoice_id, x.amount)

    # --- payables ------------------------------------------------------------------------

    def _bill_entered(self, x: ev.BillEntered) -> None:
        self.books.bills[x.bill_id] = _Bill(x.bill_id, x.vendor_id, x.vendor_invoice_number,
                                            x.total, x.ap_account, x.entry_date)

    def _vendor_credit_recorded(self, x: ev.VendorCreditRecorded) -> None:
        self.books.credits[x.credit_id] = x

    def _vendor_paid(self, x: ev.VendorPaid) -> None:
        self.books.payments[x.payment_id] = _Payment(
            x.payment_id, x.vendor_id, x.amount, sum(a.amount for a in x.applications),
            x.ap_account, x.bank_gl_account, x.paid_to.masked(), x.entry_date)

    # --- the bank ------------------------------------------------------------------------

    def _statement_line_imported(self, x: ev.StatementLineImported) -> None:
        self.books.import_line(x)

    def _statement_line_matched(self, x: ev.StatementLineMatched) -> None:
        self.books.match(x.line_id, x.targets)

    def _statement_line_unmatched(self, x: ev.StatementLineUnmatched) -> None:
        self.books.unmatch(x.line_id)

    def _bank_account_opened(self, x: ev.BankAccountOpened) -> None:
        self.books.bank_accounts[x.bank_account_id] = x


_BOOKS_CHANGE_KEYS = (("invoice_id", "invoice"), ("receipt_id", "receipt"),
                      ("vendor_id", "vendor"), ("bill_id", "bill"), ("credit_id", "credit"),
                      ("payment_id", "vpayment"))
"""The ids a books event carries and the change key each gives."""


def _add(totals: dict[str, int], key: str, amount: int) -> None:
    totals[key] = totals.get(key, 0) + amount


def fold_books(store: EventStore, *, as_of: date | None = None,
               position: int | None = None) -> BooksView:
    """The documents of the books as of an accounting date and/or a log position.

    An event counts as of a date by its ``entry_date`` (its business date when it has
    none), as the GL and the subledgers do.
    """
    fold = BooksFold(as_of=as_of)
    for e in store.read(realm="erp", until=position, types=fold.types):
        fold.apply(e)
    return fold.books


# --- the read tables -------------------------------------------------------------------------


def _where(as_of: date | None, position: int | None) -> tuple[str, list[Any]]:
    clauses: list[str] = ["1=1"]
    params: list[str | int] = []
    if as_of is not None:
        clauses.append("entry_date <= ?")
        params.append(as_of.isoformat())
    if position is not None:
        clauses.append("position <= ?")
        params.append(position)
    return " AND ".join(clauses), params


def _sql(store: EventStore, sql: str, params: Iterable[Any]) -> list[Any]:
    with store.engine.connect() as conn:
        return list(conn.exec_driver_sql(store.sql(sql), tuple(params)).all())


def subledger_by_document(store: EventStore, ledger: str, account: str, *,
                          as_of: date | None = None,
                          position: int | None = None) -> dict[tuple[str, str], int]:
    """One subledger's balance per document ``(doc_kind, doc_id)``, natural sign."""
    where, params = _where(as_of, position)
    return {(k, d): int(t) for k, d, t in _sql(
        store, f"SELECT doc_kind, doc_id, SUM(amount) FROM subledger WHERE ledger = ? AND "
               f"account = ? AND {where} GROUP BY doc_kind, doc_id", [ledger, account, *params])}


class PostingsFold(ForwardFold):
    """The GL lines and subledger rows as of a date, summed the ways reconciliation asks
    (per account, per document, per party, per log position), with the chart of accounts
    and the company's main control accounts; advanced from the last position like the
    event folds (the read tables are keyed by position), so a per-date reconciliation
    reads only the rows the log gained. A row counts as of a date by its ``entry_date``.
    """

    realm = "erp"

    def __init__(self, *, as_of: date | None = None) -> None:
        super().__init__(as_of=as_of)
        self.types = ["account_opened", "company_set_up"]
        self.chart: dict[str, q.Account] = {}
        self.company = {"ar": "1200", "ap": "2000", "unapplied_cash": "2150"}
        self.gl_balance: dict[str, int] = {}
        self._gl_at: dict[str, dict[int, int]] = {}
        self._sub_at: dict[tuple[str, str], dict[int, int]] = {}
        self.by_document: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
        """``(ledger, account)`` -> ``(doc_kind, doc_id)`` -> balance (natural sign)."""
        self.by_party: dict[tuple[str, str], dict[str, int]] = {}
        self.totals: dict[tuple[str, str], int] = {}
        self._touched: dict[str, list[int]] = {}
        """Account -> positions whose GL or subledger rows changed, not yet compared."""
        self._off: dict[tuple[str, str], set[int]] = {}
        self._seen: dict[tuple[str, str], int] = {}
        self.changes: list[tuple[str, str]] = []
        """The documents ``(doc_kind, doc_id)`` whose subledger rows changed, in order."""

    def apply(self, e: StoredEvent) -> None:
        """Fold a chart or company event (the rows come from the read tables)."""
        x = e.event
        if e.type == "account_opened":
            self.chart[x.code] = q.Account(x.code, x.name, x.account_type, x.normal_side,
                                           x.control)
        elif e.type == "company_set_up":
            a = x.accounts
            self.company = {"ar": a.ar, "ap": a.ap, "unapplied_cash": a.unapplied_cash}

    def advance(self, store: EventStore, as_of: date | None, position: int) -> None:
        """Fold the chart events and the table rows after the last position folded."""
        start = self.position
        super().advance(store, as_of, position)
        limit = as_of.isoformat() if as_of is not None else None
        for p, day, account, amount in self._rows(store, start, position, (
                "SELECT position, entry_date, account, amount FROM gl_lines WHERE position > ? "
                "AND position <= ? ORDER BY position, seq")):
            if limit is not None and day > limit:
                self.defer(date.fromisoformat(day))
                continue
            self.gl_balance[account] = self.gl_balance.get(account, 0) + amount
            at = self._gl_at.setdefault(account, {})
            at[p] = at.get(p, 0) + amount
            self._touched.setdefault(account, []).append(p)
        for p, day, ledger, account, party, kind, doc, amount in self._rows(
                store, start, position, (
                    "SELECT position, entry_date, ledger, account, party, doc_kind, doc_id, "
                    "amount FROM subledger WHERE position > ? AND position <= ? "
                    "ORDER BY position, seq")):
            if limit is not None and day > limit:
                self.defer(date.fromisoformat(day))
                continue
            key = (ledger, account)
            docs = self.by_document.setdefault(key, {})
            docs[(kind, doc)] = docs.get((kind, doc), 0) + amount
            if party is not None:
                parties = self.by_party.setdefault(key, {})
                parties[party] = parties.get(party, 0) + amount
            self.totals[key] = self.totals.get(key, 0) + amount
            self.changes.append((kind, doc))
            if ledger == "ap" and party is not None:
                self.changes.append(("vendor", party))
            at = self._sub_at.setdefault(key, {})
            at[p] = at.get(p, 0) + amount
            self._touched.setdefault(account, []).append(p)

    def _rows(self, store: EventStore, start: int, position: int, sql: str) -> Iterable[Any]:
        """The rows of ``sql`` between the two positions (shared with the other folds
        started afresh to the same position: :class:`checks.context.LogReads`)."""
        if self.reads is None or start != 0:
            return _sql(store, sql, (start, position))
        return self.reads.rows(store, position, ("rows", sql),
                               lambda: _sql(store, sql, (start, position)))

    def off_positions(self, account: str, control: str) -> tuple[list[int], dict[int, int],
                                                                 dict[int, int]]:
        """The log positions where the account's GL (natural sign) and its subledger differ,
        in order, with the GL and subledger amounts by position."""
        key = (account, control)
        sign = SIGN.get(control, 1)
        gl, sub = self._gl_at.get(account, {}), self._sub_at.get((control, account), {})
        off = self._off.setdefault(key, set())
        touched = self._touched.get(account, [])
        for p in touched[self._seen.get(key, 0):]:
            if gl.get(p, 0) * sign != sub.get(p, 0):
                off.add(p)
            else:
                off.discard(p)
        self._seen[key] = len(touched)
        return sorted(off), {p: gl.get(p, 0) * sign for p in off}, {p: sub.get(p, 0)
                                                                  for p in off}


def gl_subledger_items(store: EventStore, account: str, control: str, *,
                       as_of: date | None = None, position: int | None = None,
                       postings: PostingsFold | None = None) -> list[Item]:
    """The difference between a control account's GL and its subledger, by the log position
    of the event that made it (a journal entry to the control account, a document posted
    to the GL that its subledger does not carry...). ``postings``: the rows folded as of
    the same moment already."""
    if postings is not None:
        off, gl, sub = postings.off_positions(account, control)
    else:
        sign = SIGN.get(control, 1)
        where, params = _where(as_of, position)
        gl = {int(p): int(t) * sign for p, t in _sql(
            store, f"SELECT position, SUM(amount) FROM gl_lines WHERE account = ? AND {where} "
                   "GROUP BY position", [account, *params])}
        sub = {int(p): int(t) for p, t in _sql(
            store, f"SELECT position, SUM(amount) FROM subledger WHERE ledger = ? AND "
                   f"account = ? AND {where} GROUP BY position", [control, account, *params])}
        off = sorted(p for p in set(gl) | set(sub) if gl.get(p, 0) != sub.get(p, 0))
    if not off:
        return []
    docs: dict[int, list[tuple[str | None, str]]] = {}
    for i in range(0, len(off), 500):
        chunk = off[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for p, party, doc in _sql(store, f"SELECT position, party, doc_id FROM gl_lines WHERE "
                                         f"account = ? AND position IN ({marks}) ORDER BY seq",
                                  [account, *chunk]):
            docs.setdefault(int(p), []).append((party, doc))
        types = {int(p): (t, s, a) for p, t, s, a in _sql(
            store, f"SELECT position, type, stream, actor FROM events WHERE position IN "
                   f"({marks})", chunk)}
        for p in chunk:
            docs.setdefault(p, [])
            docs[p].append((None, "|".join(map(str, types.get(p, ("?", "?", "?"))))))
    out = []
    for p in off:
        g, s = gl.get(p, 0), sub.get(p, 0)
        *lines, (_, meta) = docs[p]
        etype, stream, actor = meta.split("|")
        parties = sorted({x for x, _ in lines if x})
        ids = sorted({d for _, d in lines}) or [stream]
        kind = "gl_only" if s == 0 else ("gl_not_posted" if g == 0 else "gl_differs")
        what = {"gl_only": "posted to the GL with no subledger document",
                "gl_not_posted": "in the subledger but not in the GL",
                "gl_differs": "GL and subledger amounts differ"}[kind]
        out.append(Item(account, kind, ", ".join(parties) or None, ", ".join(ids), g, s, g - s,
                        False, f"{etype} at position {p} by {actor}: {what}"))
    return out


# --- receivables ------------------------------------------------------------------------------


_Truth = tuple[str | None, CustomerPayment | None, str]
"""A receipt's bank line, the payment it carries and what the line is."""


def _receipt_truth(books: BooksView, world: WorldView, receipt_id: str) -> _Truth:
    """A receipt's bank line, the payment it carries and what the line is
    (``deposit``, ``bank_copy``, ``returned``, ``no_line``, ``not_a_deposit``)."""
    line_id = books.line_of("receipt", receipt_id)
    if line_id is None:
        return None, None, "no_line"
    wid = books.world_line(line_id)
    line = world.lines.get(wid)
    if line is None:
        return wid, None, "no_line"
    if line.kind != "deposit":
        return wid, None, "not_a_deposit"
    if world.is_bank_copy(line):
        return wid, None, "bank_copy"
    p = world.payment_of_line(wid)
    if p is not None and p.returned:
        return wid, p, "returned"
    return wid, p, "deposit"


def _ar_items(account: str, books: BooksView, world: WorldView,
              sub: Mapping[tuple[str, str], int], default: bool,
              turn: date | None) -> tuple[list[Item], int]:
    """Receivables: each invoice in the books against the customer's own record of it."""
    items: list[Item] = []
    external = 0
    invoices = {i for i, inv in books.invoices.items() if inv.ar_account == account}
    world_invoices = {i: inv for c in world.customers.values() for i, inv in c.invoices.items()}
    if default:  # invoices a customer holds that the books do not: on the main AR account
        invoices |= {i for i in world_invoices if i not in books.invoices}
    receipt_payer = {rid: _receipt_truth(books, world, rid) for rid in books.receipts}
    by_line: dict[str, list[str]] = {}
    for rid, (line, _, _) in receipt_payer.items():
        if line is not None:
            by_line.setdefault(line, []).append(rid)

    def receipts_on(line: str) -> list[str]:
        return by_line.get(line, [])

    for invoice_id in sorted(invoices):
        more, ext = _ar_invoice(account, invoice_id, books, world, world_invoices.get(invoice_id),
                                sub, turn, receipt_payer, receipts_on, set())
        items += more
        external += ext
    return items, external


def _ar_invoice(account: str, invoice_id: str, books: BooksView, world: WorldView,
                w: CustomerInvoice | None, sub: Mapping[tuple[str, str], int], turn: date | None,
                receipt_payer: Mapping[str, tuple[str | None, CustomerPayment | None, str]],
                receipts_on: Callable[[str], list[str]],
                deps: set[tuple[str, str]]) -> tuple[list[Item], int]:
    """One invoice's receivable items and its external balance; ``deps`` gains the
    documents the answer read (``(kind, id)``, as the folds' ``changes`` name them)."""
    items: list[Item] = []
    deps.add(("invoice", invoice_id))
    inv = books.invoices.get(invoice_id)
    party = inv.customer_id if inv is not None else (w.customer_id if w else None)
    open_ = sub.get(("invoice", invoice_id), 0)
    if w is None:
        if open_:
            items.append(Item(account, "invoice_not_sent", party, invoice_id, open_, 0, open_,
                              False, "the customer has no record of this invoice (it was "
                                     "never sent)"))
        return items, 0
    if inv is None:
        if w.owed:
            items.append(Item(account, "invoice_not_in_books", party, invoice_id, 0,
                              max(0, w.owed), -max(0, w.owed), False,
                              "the customer received it; the books hold no such invoice"))
        return items, max(0, w.owed)
    ext = max(0, w.owed)
    for payment_id, _ in w.payments:
        deps.add(("payment", payment_id))
        line = world.payments[payment_id].line_id
        if line is not None:
            deps.add(("wline", line))
            for r in receipts_on(line):
                deps.add(("receipt", r))
                deps.update(("invoice", i) for i in books.receipts[r].applied)
    deps.update(("receipt", r) for r in books.applied_to.get(invoice_id, {}))
    for d in world.customers[w.customer_id].disputes:
        if d.invoice_id == invoice_id:
            items.append(Item(account, "disputed", party, invoice_id, None, None, 0, True,
                              f"the customer disputes {display_cents(d.amount)} "
                              f"({d.reason}); credited {display_cents(w.credited)}"))
    comp_books = comp_ext = 0
    over = _over_parts(w)
    transit = w.in_transit - sum(a for pid, a in over.items()
                                 if world.payments[pid].in_transit)
    if transit:
        pays = ", ".join(pid for pid, _ in w.payments
                         if world.payments[pid].in_transit)
        items.append(Item(account, "payment_in_transit", party, f"{invoice_id} ({pays})",
                          transit, 0, transit, True,
                          "the customer paid; the bank has not posted the money yet"))
        comp_books += transit
    waiting = []
    for payment_id, amount in w.payments:
        p = world.payments[payment_id]
        if p.in_transit or not world.unseen(p.line_id or "", turn):
            continue
        rids = receipts_on(p.line_id or "")
        if not any(books.receipts[r].applied.get(invoice_id) for r in rids):
            waiting.append((payment_id, amount - over.get(payment_id, 0)))
            over.pop(payment_id, None)
    waiting = [(pid, a) for pid, a in waiting if a > 0]
    if waiting:
        amount = sum(a for _, a in waiting)
        posted = ", ".join(sorted({str(world.payments[p].posted_on) for p, _ in waiting}))
        items.append(Item(account, "awaiting_application", party,
                          f"{invoice_id} ({', '.join(p for p, _ in waiting)})", amount, 0,
                          amount, True, f"the bank posted the payment on {posted}, after the "
                                        "clerk's last turn (on no statement yet): not applied "
                                        "yet"))
        comp_books += amount
    returning = _returns_unseen(invoice_id, books, world, receipt_payer, turn, deps)
    if returning:
        amount = sum(a for _, a in returning)
        items.append(Item(account, "return_awaiting_entry", party,
                          f"{invoice_id} ({', '.join(r for r, _ in returning)})", 0, amount,
                          -amount, True, "the bank returned the deposit unpaid after the "
                                         "clerk's last turn: its return is to record at the "
                                         "next"))
        comp_ext += amount
    wo = books.written_off.get(invoice_id, 0)
    if wo:
        items.append(Item(account, "written_off", party, invoice_id, 0, wo, -wo, True,
                          "written off in the books; the customer's records still owe it"))
        comp_ext += wo
    residual = (open_ - comp_books) - (ext - comp_ext)
    if residual:
        kind, note = _ar_residual(books, world, inv, w, residual, receipt_payer,
                                 receipts_on)
        items.append(Item(account, kind, party, invoice_id, open_ - comp_books,
                          ext - comp_ext, residual, False, note))
    return items, ext


def _returns_unseen(invoice_id: str, books: BooksView, world: WorldView,
                    receipt_payer: Mapping[str, _Truth], turn: date | None,
                    deps: set[tuple[str, str]]) -> list[tuple[str, int]]:
    """The receipts applied to an invoice whose deposit the bank returned unpaid after the
    clerk's last turn, each with the part of it the payment meant for the invoice (the
    customer's records owe it again; the books learn of it at the next turn)."""
    out: list[tuple[str, int]] = []
    for rid, amount in sorted(books.applied_to.get(invoice_id, {}).items()):
        _, carried, what = receipt_payer.get(rid, (None, None, "no_line"))
        if what != "returned" or carried is None or carried.returned_line is None:
            continue
        deps.add(("wline", carried.returned_line))
        meant = 0 if carried.duplicate_of else dict(carried.allocations).get(invoice_id, 0)
        if amount > 0 and meant > 0 and world.unseen(carried.returned_line, turn):
            out.append((rid, min(amount, meant)))
    return out


def _over_parts(w: CustomerInvoice) -> dict[str, int]:
    """How much of each payment to an invoice is its overpayment (the latest payments'
    first): money on account, not a payment of the invoice."""
    excess = -w.owed
    out: dict[str, int] = {}
    for payment_id, amount in reversed(w.payments):
        if excess <= 0:
            break
        part = min(excess, amount)
        excess -= part
        out[payment_id] = out.get(payment_id, 0) + part
    return out


def _ar_residual(books: BooksView, world: WorldView, inv: ev.InvoiceIssued, w: CustomerInvoice,
                 residual: int, truth: Mapping[str, tuple[str | None, CustomerPayment | None,
                                                          str]],
                 receipts_on: Callable[[str], list[str]]) -> tuple[str, str]:
    """Name an invoice's unexplained difference and the evidence for it."""
    notes: list[str] = []
    kinds: list[str] = []
    for payment_id, amount in w.payments:
        p = world.payments[payment_id]
        if p.in_transit:
            continue
        rids = receipts_on(p.line_id or "")
        if not rids:
            kinds.append("deposit_not_recorded")
            notes.append(f"paid {display_cents(amount)} by {payment_id} (bank line {p.line_id}, "
                         "no receipt in the books)")
            continue
        for rid in rids:
            r = books.receipts[rid]
            here = r.applied.get(inv.invoice_id, 0)
            elsewhere = {i: a for i, a in r.applied.items() if a and i != inv.invoice_id}
            unapplied = r.amount - sum(r.applied.values())
            bits = [f"{display_cents(here)} applied here"]
            if unapplied:
                bits.append(f"{display_cents(unapplied)} unapplied")
                kinds.append("receipt_not_applied")
            for i, a in sorted(elsewhere.items()):
                other = books.invoices.get(i)
                whose = f" of {other.customer_id}" if other is not None else ""
                bits.append(f"{display_cents(a)} applied to {i}{whose}")
                kinds.append("misapplied")
            owner = r.customer_id or UNASSIGNED
            notes.append(f"paid {display_cents(amount)} by {payment_id} (line {p.line_id}, "
                         f"receipt {rid} of {owner}: {', '.join(bits)})")
    for rid, amount in sorted(books.applied_to.get(inv.invoice_id, {}).items()):
        if not amount:
            continue
        _, carried, what = truth.get(rid, (None, None, "no_line"))
        if what == "deposit" and carried is not None:
            meant = dict(carried.allocations).get(inv.invoice_id, 0) if carried.counted else 0
            if meant:
                continue
            why = ("a repeat of " + str(carried.duplicate_of) if carried.duplicate_of else
                   f"money from {carried.customer_id} meant for "
                   + (", ".join(i for i, _ in carried.allocations) or "no invoice"))
        else:
            why = {"bank_copy": "a line the bank posted twice (no money)",
                   "returned": "a deposit the bank returned unpaid",
                   "no_line": "no bank line behind it",
                   "not_a_deposit": "a bank line that is not a deposit"}.get(what, what)
        kinds.append("overapplied")
        notes.append(f"{display_cents(amount)} applied from {rid}: {why}")
    allowed = books.allowances.get(inv.invoice_id, 0)
    if allowed != w.fees and residual == w.fees - allowed:
        kinds.append("fee_not_allowed" if residual > 0 else "allowance_exceeds_fee")
        notes.append(f"fee allowance {display_cents(allowed)} against a processor fee or "
                     f"wire charges of {display_cents(w.fees)}")
    if w.credited != books.credit_memos.get(inv.invoice_id, 0):
        notes.append("credit memos differ")
    if not kinds:
        kinds.append("not_applied" if residual > 0 else "overapplied")
    kind = kinds[0] if residual > 0 or "overapplied" not in kinds else "overapplied"
    head = ("the books show more open than the customer's records"
            if residual > 0 else "the books show less open than the customer's records")
    return kind, head + (": " + "; ".join(notes) if notes else "")


# --- unapplied cash ---------------------------------------------------------------------------


def _unapplied_items(account: str, books: BooksView, world: WorldView,
                     sub: Mapping[tuple[str, str], int], default: bool,
                     turn: date | None) -> tuple[list[Item], int]:
    """Unapplied cash: each receipt against the customer money on account behind it."""
    items: list[Item] = []
    left = {pid: p.on_account for pid, p in world.payments.items() if p.on_account}
    external = 0
    for rid in sorted(r for r, x in books.receipts.items() if x.account == account):
        more, ext = _unapplied_receipt(account, rid, books, world, sub, turn,
                                       _receipt_truth(books, world, rid), left)
        items += more
        external += ext
    more, ext = _unrecorded_on_account(account, world, left) if default else ([], 0)
    return items + more, external + ext


def _unapplied_receipt(account: str, rid: str, books: BooksView, world: WorldView,
                       sub: Mapping[tuple[str, str], int], turn: date | None, truth: _Truth,
                       left: dict[str, int]) -> tuple[list[Item], int]:
    """One receipt's unapplied-cash items and the money on account it holds (taken from
    ``left``, each payment's money on account not held by an earlier receipt)."""
    items: list[Item] = []
    line, p, what = truth
    r = books.receipts[rid]
    open_ = sub.get(("receipt", rid), 0)
    party = r.customer_id or UNASSIGNED
    ref = f"{rid} (line {line})" if line else rid
    if what in ("bank_copy", "returned", "no_line", "not_a_deposit") or p is None:
        if not open_:
            return items, 0
        if what == "bank_copy":
            original = world.lines[line].duplicate_of if line else None
            items.append(Item(account, "bank_error", party, ref, open_, 0, open_, True,
                              f"the bank posted line {original} twice; this receipt holds "
                              "no money (the bank is to reverse the copy)"))
        elif (what == "returned" and p is not None and p.returned_line is not None
              and world.unseen(p.returned_line, turn)
              and (p.duplicate_of is not None or world.unseen(p.line_id or "", turn))):
            items.append(Item(account, "return_awaiting_entry", p.customer_id, ref, open_, 0,
                              open_, True, f"the bank returned the deposit unpaid (line "
                                           f"{p.returned_line}) after the clerk's last turn, "
                                           "which held it on account or had not seen it: "
                                           "its return is to record at the next"))
        elif what == "returned" and p is not None:
            items.append(Item(account, "returned_item", p.customer_id, ref, open_, 0, open_,
                              False, f"the bank returned the deposit unpaid (line "
                                     f"{p.returned_line}); the receipt still holds the "
                                     "bounced cash (record the returned deposit)"))
        else:
            why = {"no_line": "no bank line behind it",
                   "not_a_deposit": "matched to a bank line that is not a deposit"}.get(
                what, "no customer payment behind its bank line")
            items.append(Item(account, "receipt_without_payment", party, ref, open_, 0,
                              open_, False, why))
        return items, 0
    ext = min(left.get(p.payment_id, 0), r.amount)
    if ext:
        left[p.payment_id] -= ext
    meant = (f"a repeat of {p.duplicate_of}: on account, to refund or credit"
             if p.duplicate_of else
             "meant for " + ", ".join(f"{i} {display_cents(a)}" for i, a in p.allocations))
    # Posted after the clerk's last turn: money the clerk could not have seen awaits them, whether
    # it is to apply (more unapplied than the payment holds on account) or a receipt the feed
    # could not name (a payer name the bank cut), even when all of it is on account (a repeat).
    if ((open_ > ext or (r.customer_id is None and open_ == ext))
            and r.customer_id in (None, p.customer_id) and line is not None
            and world.unseen(line, turn)):
        items.append(Item(account, "awaiting_application", p.customer_id, ref, open_, ext,
                          open_ - ext, True, f"{p.payment_id} {meant}; the bank posted it "
                                             f"on {world.lines[line].posted_on}, after the "
                                             "clerk's last turn (on no statement yet)"))
        return items, ext
    if r.customer_id != p.customer_id:
        kind = "receipt_unidentified" if r.customer_id is None else "receipt_wrong_customer"
        note = (f"the money came from {p.customer_id} ({p.payment_id}, {meant})"
                + ("" if r.customer_id is None else f", not from {r.customer_id}"))
        if open_:
            items.append(Item(account, kind, party, ref, open_, 0, open_, False, note))
        if ext:
            items.append(Item(account, kind, p.customer_id, ref, 0, ext, -ext, False, note))
        return items, ext
    if open_ == ext:
        if ext:
            why = ("a duplicate payment" if p.duplicate_of else "an overpayment")
            items.append(Item(account, "on_account", party, ref, open_, ext, 0, True,
                              f"{why} held on account ({p.payment_id}, {meant})"))
        return items, ext
    kind = "receipt_not_applied" if open_ > ext else "on_account_applied"
    note = (f"{p.payment_id} {meant}; {display_cents(open_)} unapplied"
            if open_ > ext else
            f"{display_cents(ext - open_)} of money on account was applied ({p.payment_id}, "
            f"{meant})")
    items.append(Item(account, kind, party, ref, open_, ext, open_ - ext, False, note))
    return items, ext


def _unrecorded_on_account(account: str, world: WorldView,
                           left: Mapping[str, int]) -> tuple[list[Item], int]:
    """Money on account that reached the bank and that no receipt holds."""
    items: list[Item] = []
    external = 0
    for pid in sorted(left):
        if left[pid] > 0:
            p = world.payments[pid]
            external += left[pid]
            items.append(Item(account, "deposit_not_recorded", p.customer_id,
                              f"{pid} (line {p.line_id})", 0, left[pid], -left[pid], False,
                              "money on account reached the bank; no receipt holds it"))
    return items, external


# --- payables ----------------------------------------------------------------------------------


def _ap_items(account: str, books: BooksView, world: WorldView, default: bool,
              sub_by_party: Mapping[str, int], turn: date | None) -> tuple[list[Item], int]:
    """Payables: each vendor's documents in the books against its own books."""
    items: list[Item] = []
    external = 0
    vendors = sorted({b.vendor_id for b in books.bills.values() if b.account == account}
                     | {c.vendor_id for c in books.credits.values() if c.ap_account == account}
                     | {p.vendor_id for p in books.payments.values() if p.account == account}
                     | (set(world.vendors) if default else set()))
    bills, credits = list(books.bills.values()), list(books.credits.values())
    payments = list(books.payments.values())
    for vid in vendors:
        more, ext = _ap_vendor(account, vid, world, bills, credits, payments, sub_by_party,
                               turn)
        items += more
        external += ext
    return items, external


def _ap_vendor(account: str, vid: str, world: WorldView, bills: Iterable[_Bill],
               credits: Iterable[ev.VendorCreditRecorded], payments: Iterable[_Payment],
               sub_by_party: Mapping[str, int], turn: date | None,
               memo: _BillMatching | None = None) -> tuple[list[Item], int]:
    """One vendor's payable items and its own books' balance (``bills``, ``credits`` and
    ``payments``: the books' documents, the vendor's among them; ``turn``: the clerk's last
    turn, after which a delivered document awaits the next; ``memo``: the vendor's bill
    matching kept from the last date, see :class:`_BillMatching`)."""
    v = world.vendors.get(vid)
    w_bills = list(v.bills.values()) if v else []
    counted = [b for b in w_bills if b.kind in COUNTED_BILL_KINDS]  # VendorBill.counted
    book_bills = sorted((b for b in bills
                         if b.vendor_id == vid and b.account == account),
                        key=_BILL_ORDER)
    books_side = sum(b.total for b in book_bills)
    items, matched = (memo or _BillMatching()).match(account, vid, w_bills, book_bills)
    ext_side = 0
    for w in counted:
        ext_side += w.total
        if w.bill_ref in matched:
            continue
        doc = f"{w.invoice_number} ({w.bill_ref})"
        if w.delivered and w.kind == "price_variance":
            items.append(Item(account, "price_variance_held", vid, doc, 0, w.total, -w.total,
                              True, f"billed {display_cents(w.total)}, above the agreed "
                                    f"{display_cents(w.agreed_total or 0)}: held out of the "
                                    "books as an exception"))
        elif w.delivered and not _arrived_after(w.delivered_on, turn):
            items.append(Item(account, "bill_not_entered", vid, doc, 0, w.total, -w.total,
                              False, f"issued {w.issued_on}, delivered {w.delivered_on}; not "
                                     "in the books"))
        elif w.delivered:
            items.append(Item(account, "bill_awaiting_entry", vid, doc, 0, w.total, -w.total,
                              True, f"issued {w.issued_on}, delivered {w.delivered_on}, after "
                                    "the clerk's last turn: to enter at the next"))
        else:
            items.append(Item(account, "bill_not_delivered", vid, doc, 0, w.total, -w.total,
                              True, f"issued {w.issued_on}; not delivered to the company yet"))
    # credit notes
    w_credits = dict(v.credits) if v else {}
    taken: set[str] = set()
    for c in sorted((c for c in credits
                     if c.vendor_id == vid and c.ap_account == account),
                    key=_CREDIT_ID):
        books_side -= c.amount
        key = document_number_key(c.vendor_credit_number)
        wc = next((x for n, x in w_credits.items()
                   if document_number_key(n) == key and n not in taken), None)
        doc = f"{c.credit_id} ({c.vendor_credit_number})"
        if wc is None:
            items.append(Item(account, "credit_not_issued", vid, doc, -c.amount, 0, -c.amount,
                              False, "the vendor's books hold no such credit note"))
            continue
        taken.add(wc.number)
        if wc.amount != c.amount:
            items.append(Item(account, "credit_amount_differs", vid, doc, -c.amount,
                              -wc.amount, wc.amount - c.amount, False,
                              f"the vendor credited {display_cents(wc.amount)}"))
    for n, wc in sorted(w_credits.items()):
        ext_side -= wc.amount
        if n in taken:
            continue
        if wc.delivered_on is None:
            kind, note = "credit_not_delivered", "not delivered to the company yet"
        elif _arrived_after(wc.delivered_on, turn):
            kind, note = "credit_awaiting_entry", (f"delivered {wc.delivered_on}, after the "
                                                   "clerk's last turn: to record at the next")
        else:
            kind, note = "credit_not_recorded", "not in the books"
        items.append(Item(account, kind, vid, n, 0, -wc.amount, wc.amount,
                          kind in EXPLAINED_KINDS, note))
    # payments
    w_pays = dict(v.payments) if v else {}
    for p in sorted((p for p in payments
                     if p.vendor_id == vid and p.account == account),
                    key=_PAYMENT_ID):
        books_side -= p.applied
        wp = w_pays.pop(p.payment_id, None)
        if wp is None:
            items.append(Item(account, "vendor_payment_in_transit", vid, p.payment_id,
                              -p.applied, 0, -p.applied, True,
                              f"paid {p.entry_date}; the bank has not paid it out yet"))
        elif not wp.received:  # the vendor's books never saw the money
            items.append(Item(account, "payment_diverted", vid, p.payment_id, -p.applied, 0,
                              -p.applied, False,
                              f"paid to {wp.account}, an account the vendor does not own: "
                              "its books still show the bills owed"))
        else:
            ext_side -= wp.amount
            if wp.amount != p.applied:
                items.append(Item(account, "payment_amount_differs", vid, p.payment_id,
                                  -p.applied, -wp.amount, wp.amount - p.applied, False,
                                  f"the vendor received {display_cents(wp.amount)}; the "
                                  f"books applied {display_cents(p.applied)} to its bills"))
    for pid, wp in sorted(w_pays.items()):
        if wp.received:
            ext_side -= wp.amount
            items.append(Item(account, "payment_not_in_books", vid, pid, 0, -wp.amount,
                              wp.amount, False, "the vendor received it; the books hold no "
                                                "such payment"))
    other = sub_by_party.get(vid, 0) - books_side
    if other:
        items.append(Item(account, "books_other", vid, "(subledger)", other, 0, other, False,
                          "subledger movements of this vendor that are not its bills, "
                          "credits or payments"))
    return items, ext_side


class _BillIndex:
    """A vendor's bills looked up by number key and by the number's digits and amount, in
    their order (what :func:`_match_bill` filters for, worked out once per vendor and
    extended as the vendor issues more)."""

    def __init__(self, every: list[VendorBill]) -> None:
        self.counted_by_key: dict[str, list[VendorBill]] = {}
        self.every_by_key: dict[str, list[VendorBill]] = {}
        self.by_digits: dict[tuple[str, int], list[VendorBill]] = {}
        self.extend(every)

    def extend(self, more: Iterable[VendorBill]) -> None:
        """Index bills issued after those already indexed."""
        for w in more:
            key = document_number_key(w.invoice_number)
            self.every_by_key.setdefault(key, []).append(w)
            if w.counted:
                self.counted_by_key.setdefault(key, []).append(w)
            digits = number_digits(w.invoice_number)
            if digits:
                self.by_digits.setdefault((digits, w.total), []).append(w)


_world_bill_facts: Callable[[VendorBill], tuple[Any, ...]] = attrgetter(
    "bill_ref", "invoice_number", "total", "kind", "agreed_total", "duplicate_of")
"""What matching a books bill reads of a vendor's bill (its delivery it does not), as a
tuple (an ``attrgetter``: read for every bill of a changed vendor at every date)."""

_book_bill_facts: Callable[[_Bill], tuple[Any, ...]] = attrgetter(
    "entry_date", "bill_id", "number", "total")
"""What matching reads of a books bill (in the order bills are matched)."""

_BILL_ORDER: Callable[[_Bill], tuple[Any, ...]] = attrgetter("entry_date", "bill_id")
"""The order a vendor's books bills are matched in."""

_CREDIT_ID = attrgetter("credit_id")
_PAYMENT_ID = attrgetter("payment_id")


class _BillMatching:
    """One vendor's books bills matched to its own bills, kept across the dates of
    per-date control, so that a date costs what changed rather than the vendor's history.

    Bills are matched in ``(entry_date, bill_id)`` order, each against the vendor's bills
    and the matches made before it (:func:`_match_bill`). What was worked out for a prefix
    of the books bills stands while neither that prefix nor the vendor's bills it could
    have matched changed: matching starts again at the first books bill that differs from
    the last date's, or whose number (its key or digits) a bill the vendor issued since
    shares (or a bill that names a new one as its original). A vendor's bill that changed
    or went away starts it afresh. The result is the one a match from scratch gives."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.world: list[tuple[Any, ...]] = []
        self.books: list[tuple[Any, ...]] = []
        self.steps: list[tuple[tuple[str, str] | None, list[Item]]] = []
        """Per books bill matched, in order: ``(world bill ref, bill id)`` it took (None when
        it took none) and its items."""
        self.index = _BillIndex([])
        self.by_ref: dict[str, VendorBill] = {}
        self.resends: dict[str, list[VendorBill]] = {}
        self.numbers: dict[str, tuple[str, str]] = {}
        """A books bill's number -> its key and digits."""
        self.matched: dict[str, str] = {}
        self.items: list[Item] = []
        """The matches and items of ``steps``."""

    def _number(self, number: str) -> tuple[str, str]:
        found = self.numbers.get(number)
        if found is None:
            found = self.numbers[number] = (document_number_key(number), number_digits(number))
        return found

    def match(self, account: str, vid: str, w_bills: list[VendorBill],
              book_bills: list[_Bill]) -> tuple[list[Item], dict[str, str]]:
        """The books bills' items and the matches (world bill ref -> books bill id)."""
        world = list(map(_world_bill_facts, w_bills))
        n_old = len(self.world)
        if world[:n_old] != self.world:  # a vendor's bill changed or went away: afresh
            self._clear()
            n_old = 0
        new_bills = w_bills[n_old:]
        self.world = world
        books = list(map(_book_bill_facts, book_bills))
        start = 0
        for start, (old, now) in enumerate(zip(self.books, books, strict=False)):  # noqa: B007
            if old != now:
                break
        else:
            start = min(len(self.books), len(books))
        if new_bills:
            self.index.extend(new_bills)
            keys: set[str] = set()
            digits: set[str] = set()
            for w in new_bills:
                self.by_ref[w.bill_ref] = w
                if w.duplicate_of:
                    self.resends.setdefault(w.duplicate_of, []).append(w)
            leading = [x for n in new_bills for x in self.resends.get(n.bill_ref, ())]
            for x in [*new_bills, *leading]:
                keys.add(document_number_key(x.invoice_number))
                digits.add(number_digits(x.invoice_number))  # "" too: "" == "" counts
            for i in range(start):
                key, dig = self._number(book_bills[i].number)
                if key in keys or dig in digits:
                    start = i
                    break
        if start < len(self.steps):  # the matches and items up to ``start``, replayed
            del self.steps[start:]
            self.matched, self.items = {}, []
            for took, more in self.steps:
                if took is not None:
                    self.matched[took[0]] = took[1]
                self.items += more
        self.books = books
        matched, items = self.matched, self.items
        for b in book_bills[start:]:
            step = self._match(account, vid, b, w_bills, matched)
            self.steps.append(step)
            if step[0] is not None:
                matched[step[0][0]] = step[0][1]
            items += step[1]
        return list(items), dict(matched)

    def _match(self, account: str, vid: str, b: _Bill, w_bills: list[VendorBill],
               matched: Mapping[str, str]) -> tuple[tuple[str, str] | None, list[Item]]:
        w = _match_bill(b, self.index, self.by_ref, matched, self._number(b.number))
        doc = f"{b.bill_id} ({b.number})"
        if w is None:
            return None, [Item(account, "bill_not_issued", vid, doc, b.total, 0, b.total,
                               False, "the vendor's books hold no such bill")]
        if w.bill_ref in matched and matched[w.bill_ref] != b.bill_id:
            key, digits = self._number(b.number)
            resent = next((x for x in w_bills if x.duplicate_of == w.bill_ref
                           and (document_number_key(x.invoice_number) == key
                                or number_digits(x.invoice_number) == digits)), None)
            what = (f"a {resent.kind.replace('_', '-')} of {w.invoice_number}"
                    if resent is not None else f"a second entry of {w.invoice_number}")
            return None, [Item(account, "bill_entered_twice", vid, doc, b.total, 0, b.total,
                               False, f"{what}, already entered as {matched[w.bill_ref]}; "
                                      "the vendor's books count it once")]
        if w.total == b.total:
            return (w.bill_ref, b.bill_id), []
        held = w.kind == "price_variance" and b.total == w.agreed_total
        return (w.bill_ref, b.bill_id), [Item(
            account, "price_variance_disputed" if held else "bill_amount_differs", vid, doc,
            b.total, w.total, b.total - w.total, held,
            f"the vendor billed {display_cents(w.total)}"
            + (", above the agreed price: entered at the agreed "
               f"{display_cents(b.total)}" if held else ""))]


def _match_bill(b: _Bill, index: _BillIndex, by_ref: Mapping[str, VendorBill],
                matched: Mapping[str, str], number: tuple[str, str]) -> VendorBill | None:
    """The vendor's counted bill a books bill records: by number, else by the number's digits
    and the amount; a resend leads to its original (``number``: the books bill's number's
    key and digits)."""
    key, digits = number
    pools = (index.counted_by_key.get(key, ()), index.every_by_key.get(key, ()),
             index.by_digits.get((digits, b.total), ()) if digits else ())
    for pool in pools:
        leads = [w if w.counted else by_ref.get(w.duplicate_of or "") for w in pool]
        found = [w for w in leads if w is not None]
        if found:
            free = [w for w in found if w.bill_ref not in matched]
            return (free or found)[0]
    return None


# --- bank --------------------------------------------------------------------------------------


_BANK_DOC_KIND = {"receipt": "deposit_in_transit", "payment": "outstanding_payment",
                  "refund": "outstanding_refund", "fee": "fee_not_on_statement",
                  "interest": "interest_not_on_statement"}
_LINE_KIND = {"deposit": "unrecorded_deposit", "fee": "unrecorded_fee",
              "interest": "unrecorded_interest", "payment": "unrecorded_payment",
              "refund": "unrecorded_refund", "returned": "returned_item",
              "other": "unrecorded_line"}


def _bank_items(gl_account: str, books: BooksView, world: WorldView,
                docs: Mapping[tuple[str, str], int], unapplied: _OpenOnAccount,
                turn: date | None) -> tuple[list[Item], int | None]:
    """A bank GL account against the bank's statement: each statement line and each book
    document on one side only, or on both with different amounts."""
    accounts = [a for a in books.bank_accounts.values() if a.gl_account == gl_account]
    if not accounts:
        return [], None
    items: list[Item] = []
    statement = 0
    left = {k: v for k, v in docs.items() if v}
    for acct in accounts:
        bank = world.banks.get(acct.bank_account_id)
        opening = bank.opening if bank is not None else acct.opening_balance
        statement += opening
        book_opening = left.pop(("bank_account", acct.bank_account_id), 0)
        lines = sorted(bank.lines if bank else [], key=_line_order)
        by_world: dict[str, list[tuple[str, tuple[ev.MatchTarget, ...]]]] = {}
        for lid, targets in books.matches.items():
            line = books.lines.get(lid)
            if line is not None and line.bank_account_id == acct.bank_account_id:
                by_world.setdefault(books.world_line(lid), []).append((lid, targets))
        statement += sum(x.amount for x in lines)
        items += _bank_account_items(gl_account, acct, opening, book_opening, lines, by_world,
                                     left, books, world, unapplied, turn)
    items += _bank_docs_left(gl_account, books, world, left)
    return items, statement


def _line_order(x: BankLinePosted) -> tuple[date, str]:
    return (x.posted_on, x.line_id)


def _bank_account_items(gl_account: str, acct: ev.BankAccountOpened, opening: int,
                        book_opening: int, lines: list[BankLinePosted],
                        by_world: Mapping[str, list[tuple[str, tuple[ev.MatchTarget, ...]]]],
                        left: dict[tuple[str, str], int], books: BooksView, world: WorldView,
                        unapplied: _OpenOnAccount, turn: date | None) -> list[Item]:
    """One bank account's items: its opening balance, then its statement ``lines`` (in
    statement order) against the documents ``left`` (taking those it accounts for), first by
    the books' matches (``by_world``: the bank's line id -> the books' lines and their
    targets), then by the truth."""
    items: list[Item] = []
    if book_opening != opening:
        items.append(Item(gl_account, "opening_differs", None, acct.bank_account_id,
                          book_opening, opening, book_opening - opening, False,
                          "the books' opening balance is not the bank's"))
    pending: list[BankLinePosted] = []
    for x in lines:
        booked = 0
        found = False
        for _, targets in by_world.get(x.line_id, []):
            for t in targets:
                amount = left.pop((t.kind, t.doc_id), None)
                if amount is not None:
                    booked += amount
                    found = True
        if found:
            if booked != x.amount:
                items.append(Item(gl_account, "amount_differs", None, x.line_id, booked,
                                  x.amount, booked - x.amount, False,
                                  "the books matched documents of another amount to it"))
            elif world.is_bank_copy(x):
                items.append(Item(gl_account, "bank_error", None, x.line_id, booked, x.amount,
                                  0, True, f"a copy of {x.duplicate_of} the bank posted "
                                           "twice; the books recorded it as well (the bank "
                                           "is to reverse it)"))
            continue
        pending.append(x)
    for x in pending:  # lines the books did not match: pair them by the truth
        doc = _pair_line(x, left)
        if doc is not None:
            amount = left.pop(doc)
            if amount != x.amount:
                items.append(Item(gl_account, "amount_differs", None,
                                  f"{x.line_id} / {doc[1]}", amount, x.amount,
                                  amount - x.amount, False, "recorded at another amount"))
            continue
        item = _statement_only(gl_account, x, world, books, unapplied)
        if not item.explained and world.unseen(x.line_id, turn):
            item = Item(item.account, item.kind, item.party, item.document, item.books,
                        item.external, item.difference, True,
                        f"{item.note}; posted on {x.posted_on}, after the clerk's last "
                        "turn (on no statement yet)")
        items.append(item)
    return items


def _bank_docs_left(gl_account: str, books: BooksView, world: WorldView,
                    left: Mapping[tuple[str, str], int]) -> list[Item]:
    """The book documents no statement line accounts for."""
    items: list[Item] = []
    for (kind, doc_id), amount in sorted(left.items()):
        if kind == "bank_account":
            continue
        matched = books.line_of(kind, doc_id)
        if matched is not None and books.world_line(matched) not in world.posted_ids:
            items.append(Item(gl_account, "line_not_at_bank", None, doc_id, amount, 0, amount,
                              False, f"matched to statement line {matched}, which the bank "
                                     "never posted"))
            continue
        name = _BANK_DOC_KIND.get(kind, f"{kind}_not_on_statement")
        explained = name in EXPLAINED_KINDS
        note = {"deposit_in_transit": "recorded in the books, not on the statement yet",
                "outstanding_payment": "paid in the books, not debited by the bank yet",
                "outstanding_refund": "refunded in the books, not debited by the bank yet"}.get(
            name, "recorded in the books; the bank has no such line")
        items.append(Item(gl_account, name, None, doc_id, amount, 0, amount, explained, note))
    return items


def _pair_line(x: BankLinePosted, left: Mapping[tuple[str, str], int]) -> tuple[str, str] | None:
    """The unmatched book document a statement line is, by the bank's own source."""
    if x.kind in ("payment", "refund") and x.source and (x.kind, x.source) in left:
        return (x.kind, x.source)
    if x.kind in ("fee", "interest", "returned"):
        kind = "return" if x.kind == "returned" else x.kind
        same = sorted(k for k, v in left.items() if k[0] == kind and v == x.amount)
        return same[0] if same else None
    if x.kind == "deposit":
        rid = f"RCT-{x.line_id}"
        if ("receipt", rid) in left:
            return ("receipt", rid)
    return None


def _statement_only(account: str, x: BankLinePosted, world: WorldView, books: BooksView,
                    unapplied: _OpenOnAccount) -> Item:
    """A statement line the books do not have."""
    kind = _LINE_KIND.get(x.kind, "unrecorded_line")
    ref = f"{x.line_id} {x.description} {x.reference}".strip()
    if x.kind == "deposit" and world.is_bank_copy(x):
        return Item(account, "bank_error", None, ref, 0, x.amount, -x.amount, True,
                    f"the bank posted {x.duplicate_of} twice; it is to reverse the copy")
    if x.kind == "returned":
        p = world.payments.get(x.source or "")
        held = 0
        if p is not None and p.line_id is not None:
            for lid in books.books_lines(p.line_id):
                held += sum(unapplied.get(t.doc_id, 0) for t in books.matches[lid]
                            if t.kind == "receipt")
        return Item(account, kind, p.customer_id if p else None, ref, 0, x.amount, -x.amount,
                    False, f"returns {p.line_id if p else '?'} unpaid (NSF): "
                    + ("its receipt holds the bounced cash unapplied; the return is not recorded"
                       if held >= -x.amount else
                       "the cash of the returned deposit was applied (or not held) in the books"
                       "; the return is not recorded"))
    what = {"unrecorded_fee": "a bank charge the books have not recorded",
            "unrecorded_interest": "interest the books have not recorded",
            "unrecorded_deposit": "a deposit the books have not recorded",
            "unrecorded_payment": "a payment the books have not recorded",
            "unrecorded_refund": "a refund the books have not recorded"}.get(
        kind, "a bank line the books have not recorded")
    return Item(account, kind, None, ref, 0, x.amount, -x.amount, False, what)


# --- itemizing per date, incrementally ---------------------------------------------------------


Key = tuple[str, str]


class _ItemsBy:
    """Items and external balance per document, with their sum kept as they change: the
    documents with items listed apart, so that putting the date's items together walks
    those only."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[list[Item], int]] = {}
        self._listed: set[str] = set()
        self._external = 0

    def __setitem__(self, doc: str, value: tuple[list[Item], int]) -> None:
        self.pop(doc)
        self._items[doc] = value
        self._external += value[1]
        if value[0]:
            self._listed.add(doc)

    def __getitem__(self, doc: str) -> tuple[list[Item], int]:
        return self._items[doc]

    def pop(self, doc: str, default: None = None) -> tuple[list[Item], int] | None:
        """Forget a document's items (None when it had none)."""
        old = self._items.pop(doc, None)
        if old is not None:
            self._external -= old[1]
            self._listed.discard(doc)
        return old

    def collect(self) -> tuple[list[Item], int]:
        """Every document's items in document order, and the external balances' sum."""
        items: list[Item] = []
        for doc in sorted(self._listed):
            items += self._items[doc][0]
        return items, self._external


@dataclass
class _Receivables:
    """One AR account's items per invoice, kept from the last date."""

    generation: int = -1
    members: set[str] = field(default_factory=set)
    items: _ItemsBy = field(default_factory=_ItemsBy)
    readers: dict[Key, set[str]] = field(default_factory=dict)
    """A document -> the invoices whose answer read it."""
    read: dict[str, set[Key]] = field(default_factory=dict)
    """An invoice -> the documents its last answer read (the other way round)."""
    dated: set[str] = field(default_factory=set)
    """Invoices whose answer read a bank line the clerk's last turn did not see (it changes
    at the next turn)."""


@dataclass
class _Payables:
    """One AP account's items per vendor, kept from the last date."""

    generation: int = -1
    vendors: dict[str, tuple[list[Item], int]] = field(default_factory=dict)
    dated: set[str] = field(default_factory=set)
    """Vendors with a document delivered after the clerk's last turn (its items change at
    the next turn)."""
    matching: dict[str, _BillMatching] = field(default_factory=dict)
    """Each vendor's bill matching, kept from the last date."""


@dataclass
class _Unapplied:
    """One unapplied-cash account's items per receipt, kept from the last date."""

    generation: int = -1
    members: set[str] = field(default_factory=set)
    items: _ItemsBy = field(default_factory=_ItemsBy)
    holds: dict[str, str] = field(default_factory=dict)
    """Receipt -> the payment whose money on account it draws on."""
    groups: dict[str, set[str]] = field(default_factory=dict)
    """Payment -> the receipts drawing on its money on account (in id order)."""
    left: dict[str, int] = field(default_factory=dict)
    """Payment -> its money on account no receipt holds (payments with some)."""
    readers: dict[Key, set[str]] = field(default_factory=dict)
    dated: set[str] = field(default_factory=set)


@dataclass
class _Bank:
    """One bank GL account's statement lines and documents, kept from the last date.

    A line the books matched to documents it alone accounts for first (in statement order),
    at its own amount, and that is no bank copy, is *settled*: it gives no item and takes
    its documents. The items of the date are those the full walk gives over the lines not
    settled and the documents they did not take, which is the same thing (a settled line
    takes documents no earlier line takes, and no later one is given them).
    """

    account: str
    generation: int = -1
    seen: int = 0
    """How many of the bank's lines (appended in order) were read."""
    total: int = 0
    """The amounts of those lines."""
    lines: dict[str, BankLinePosted] = field(default_factory=dict)
    order: dict[str, tuple[date, str]] = field(default_factory=dict)
    targets: dict[str, frozenset[Key]] = field(default_factory=dict)
    """The bank's line id -> the documents the books matched to it (this bank account's
    statement lines)."""
    claims: dict[Key, set[str]] = field(default_factory=dict)
    """A document -> the bank's lines the books matched it to."""
    copies: dict[str, set[str]] = field(default_factory=dict)
    settled: dict[str, tuple[Key, ...]] = field(default_factory=dict)
    taken: dict[Key, str] = field(default_factory=dict)
    free: dict[Key, int] = field(default_factory=dict)
    """The documents with a balance that no settled line takes."""
    open: set[str] = field(default_factory=set)
    """The lines not settled."""
    broken: bool = False
    """A line id the bank posted twice: the full walk is kept to."""


_VENDOR_DOC = {"bill": 0, "credit": 1, "vpayment": 2}
_AWAITING_ENTRY = ("bill_awaiting_entry", "credit_awaiting_entry")


class Itemizer:
    """The reconciliation's itemizing kept across the dates of per-date control.

    Each receipt's bank-line truth and unapplied-cash items, each receivable invoice's
    items and each vendor's payable items are kept with the documents they read; at the
    next date only those whose documents changed (by the folds' ``changes`` since the last
    date) or that depend on the turn are worked out
    again, the settled ones' contributions kept. A fold started afresh starts it afresh.
    """

    def __init__(self, books: BooksFold, world: WorldFold, postings: PostingsFold) -> None:
        self.folds: tuple[BooksFold, WorldFold, PostingsFold] = (books, world, postings)
        self._read = [0, 0, 0]
        self.generation = 0
        self.turn: date | None = None
        self.turn_changed = True
        self.changed: set[Key] = set()
        self.truth: dict[str, _Truth] = {}
        self._truth_readers: dict[Key, set[str]] = {}
        self._on_line: dict[str, set[str]] = {}
        self._rank: dict[str, int] = {}
        self._customer_rank: dict[str, int] = {}
        self._ar: dict[str, _Receivables] = {}
        self._ap: dict[str, _Payables] = {}
        self._unapplied: dict[str, _Unapplied] = {}
        self._vendor_docs: dict[str, tuple[set[str], set[str], set[str]]] = {}
        """Vendor -> the ids of its bills, credits and payments in the books."""
        self._bank: dict[str, _Bank] = {}

    def same(self, books: BooksFold, world: WorldFold, postings: PostingsFold) -> bool:
        """Whether the folds are the ones this itemizer followed (not started afresh)."""
        return all(a is b for a, b in zip(self.folds, (books, world, postings), strict=True))

    def update(self, books: BooksView, world: WorldView, turn: date | None) -> None:
        """Read the folds' changes since the last date and work the receipts' truths out
        again where they changed."""
        changed: set[Key] = set()
        b, w, p = self.folds
        for n, changes in enumerate((b.changes, w.changes, p.changes)):
            changed.update(changes[self._read[n]:])
            self._read[n] = len(changes)
        # receipts are only added (in log order): the new ones are those past the last count
        added = list(islice(books.receipts, len(self._rank), None))
        for rid in added:
            self._rank[rid] = len(self._rank)
        todo = {rid for rid in added if rid not in self.truth}
        for key in changed:
            if key[0] == "receipt" and key[1] in books.receipts:
                todo.add(key[1])
            todo.update(r for r in self._truth_readers.get(key, ()) if r in books.receipts)
        for rid in todo:
            old = self.truth.get(rid)
            new = self.truth[rid] = _receipt_truth(books, world, rid)
            line = new[0]
            for key in self._truth_keys(books, world, rid, line):
                self._truth_readers.setdefault(key, set()).add(rid)
            if old == new:
                continue
            changed.add(("receipt", rid))
            if old is not None and old[0] is not None:
                self._on_line.get(old[0], set()).discard(rid)
                changed.add(("wline", old[0]))
            if line is not None:
                self._on_line.setdefault(line, set()).add(rid)
                changed.add(("wline", line))
        for kind, doc in changed:
            if kind in _VENDOR_DOC:
                n = _VENDOR_DOC[kind]
                found: Any = (books.bills, books.credits, books.payments)[n].get(doc)
                if found is not None:
                    self._vendor_docs.setdefault(found.vendor_id, (set(), set(), set()))[n].add(doc)
        self.changed = changed
        self.turn_changed = turn != self.turn
        self.turn = turn
        self.generation += 1

    @staticmethod
    def _truth_keys(books: BooksView, world: WorldView, rid: str,
                    line: str | None) -> list[Key]:
        keys: list[Key] = [("receipt", rid)]
        if line is not None:
            keys.append(("wline", line))
            x = world.lines.get(line)
            if x is not None:
                if x.source:
                    keys.append(("payment", x.source))
                if x.duplicate_of:
                    keys.append(("wline", x.duplicate_of))
        return keys

    def receipts_on(self, line: str) -> list[str]:
        """The receipts whose bank line is ``line``, in the order the books recorded them."""
        rank = self._rank
        return sorted(self._on_line.get(line, ()), key=rank.__getitem__)

    def ar_items(self, account: str, books: BooksView, world: WorldView,
                 sub: Mapping[tuple[str, str], int], default: bool,
                 turn: date | None) -> tuple[list[Item], int]:
        """:func:`_ar_items`, working out again only the invoices whose documents changed."""
        state = self._ar.get(account)
        if state is None or state.generation != self.generation - 1:
            state = self._ar[account] = _Receivables()
            todo = {i for i, inv in books.invoices.items() if inv.ar_account == account}
            if default:
                todo |= {i for c in world.customers.values() for i in c.invoices
                         if i not in books.invoices}
        else:
            todo = {d for k, d in self.changed if k == "invoice"}
            for key in self.changed:
                todo.update(state.readers.get(key, ()))
            if self.turn_changed:
                todo |= state.dated
        state.generation = self.generation
        for c in islice(world.customers, len(self._customer_rank), None):  # only added
            self._customer_rank[c] = len(self._customer_rank)
        for invoice_id in todo:
            inv = books.invoices.get(invoice_id)
            w = self._world_invoice(world, invoice_id)
            if (inv.ar_account == account) if inv is not None else (default and w is not None):
                state.members.add(invoice_id)
            else:
                state.members.discard(invoice_id)
                state.items.pop(invoice_id, None)
                state.dated.discard(invoice_id)
                continue
            deps: set[Key] = set()
            state.items[invoice_id] = _ar_invoice(account, invoice_id, books, world, w, sub,
                                                  turn, self.truth, self.receipts_on, deps)
            readers = state.readers
            for key in state.read.get(invoice_id, set()) - deps:  # read no more
                readers[key].discard(invoice_id)
            for key in deps:
                readers.setdefault(key, set()).add(invoice_id)
            state.read[invoice_id] = deps
            if any(k == "wline" and world.unseen(d, turn) for k, d in deps):
                state.dated.add(invoice_id)
            else:
                state.dated.discard(invoice_id)
        return state.items.collect()

    def unapplied_items(self, account: str, books: BooksView, world: WorldView,
                        sub: Mapping[tuple[str, str], int], default: bool,
                        turn: date | None) -> tuple[list[Item], int]:
        """:func:`_unapplied_items`, working out again only the receipts whose documents
        changed (with the others drawing on the same payment's money on account)."""
        state = self._unapplied.get(account)
        payments = world.payments
        if state is None or state.generation != self.generation - 1:
            state = self._unapplied[account] = _Unapplied()
            todo = set(books.receipts)
            paid = set(payments)
        else:
            todo = {d for k, d in self.changed if k == "receipt"}
            for key in self.changed:
                todo.update(state.readers.get(key, ()))
            if self.turn_changed:
                todo |= state.dated
            paid = {d for k, d in self.changed if k == "payment" and d in payments}
        state.generation = self.generation
        redo: set[str] = set()
        for rid in todo:
            r = books.receipts.get(rid)
            old = state.holds.pop(rid, None)
            if old is not None:
                state.groups[old].discard(rid)
                paid.add(old)
            if r is None or r.account != account:
                state.members.discard(rid)
                state.items.pop(rid, None)
                state.dated.discard(rid)
                continue
            state.members.add(rid)
            line, p, what = self.truth[rid]
            if what == "deposit" and p is not None:
                state.holds[rid] = p.payment_id
                state.groups.setdefault(p.payment_id, set()).add(rid)
                paid.add(p.payment_id)
            else:
                redo.add(rid)
            keys: list[Key] = [("receipt", rid)]
            if line is not None:
                keys.append(("wline", line))
            if p is not None:
                keys.append(("payment", p.payment_id))
            for key in keys:
                state.readers.setdefault(key, set()).add(rid)
            back = p.returned_line if p is not None else None
            if ((line is not None and world.unseen(line, turn))
                    or (back is not None and world.unseen(back, turn))):
                state.dated.add(rid)
            else:
                state.dated.discard(rid)
        for rid in redo:
            state.items[rid] = _unapplied_receipt(account, rid, books, world, sub, turn,
                                                  self.truth[rid], {})
        for pid in paid:
            p = payments.get(pid)
            held = p.on_account if p is not None else 0
            left = {pid: held} if held else {}
            for rid in sorted(state.groups.get(pid, ())):
                state.items[rid] = _unapplied_receipt(account, rid, books, world, sub, turn,
                                                      self.truth[rid], left)
            if held:
                state.left[pid] = left[pid]
            else:
                state.left.pop(pid, None)
        items, external = state.items.collect()
        more, ext = _unrecorded_on_account(account, world, state.left) if default else ([], 0)
        return items + more, external + ext

    def ap_items(self, account: str, books: BooksView, world: WorldView, default: bool,
                 sub_by_party: Mapping[str, int],
                 turn: date | None) -> tuple[list[Item], int]:
        """:func:`_ap_items`, working out again only the vendors whose documents changed."""
        state = self._ap.get(account)
        if state is None or state.generation != self.generation - 1:
            state = self._ap[account] = _Payables()
            todo = set(self._vendor_docs) | set(world.vendors)
        else:
            todo = {d for k, d in self.changed if k == "vendor"}
            if self.turn_changed:
                todo |= state.dated
        state.generation = self.generation
        for vid in todo:
            bill_ids, credit_ids, payment_ids = self._vendor_docs.get(vid, ((), (), ()))
            bills = [books.bills[i] for i in bill_ids]
            credits = [books.credits[i] for i in credit_ids]
            payments = [books.payments[i] for i in payment_ids]
            if (any(b.account == account for b in bills)
                    or any(c.ap_account == account for c in credits)
                    or any(p.account == account for p in payments)
                    or (default and vid in world.vendors)):
                memo = state.matching.get(vid)
                if memo is None:
                    memo = state.matching[vid] = _BillMatching()
                state.vendors[vid] = found = _ap_vendor(account, vid, world, bills, credits,
                                                        payments, sub_by_party, turn, memo)
                if any(i.kind in _AWAITING_ENTRY for i in found[0]):
                    state.dated.add(vid)
                else:
                    state.dated.discard(vid)
            else:
                state.vendors.pop(vid, None)
                state.dated.discard(vid)
        items: list[Item] = []
        external = 0
        for vid in sorted(state.vendors):
            more, ext = state.vendors[vid]
            items += more
            external += ext
        return items, external

    def bank_items(self, code: str, books: BooksView, world: WorldView,
                   docs: Mapping[tuple[str, str], int], unapplied: _OpenOnAccount,
                   turn: date | None) -> tuple[list[Item], int | None]:
        """:func:`_bank_items`, walking only the statement lines not settled (see
        :class:`_Bank`) and working their settling out again where documents, matches or
        lines changed. A GL account of several bank accounts takes the full walk."""
        accounts = [a for a in books.bank_accounts.values() if a.gl_account == code]
        if len(accounts) != 1:
            return _bank_items(code, books, world, docs, unapplied, turn)
        acct = accounts[0]
        aid = acct.bank_account_id
        state = self._bank.get(code)
        dirty_lines: set[str]
        dirty_docs: set[Key]
        if state is None or state.generation != self.generation - 1 or state.account != aid:
            state = self._bank[code] = _Bank(aid)
            dirty_lines, dirty_docs = set(), set(docs)
        else:
            dirty_lines = {d for k, d in self.changed if k == "wline"}
            dirty_docs = set(self.changed)  # any key may be a document of the bank's ledger
        if state.broken:
            return _bank_items(code, books, world, docs, unapplied, turn)
        state.generation = self.generation
        bank = world.banks.get(aid)
        for x in bank.lines[state.seen:] if bank is not None else ():
            if x.line_id in state.lines:
                state.broken = True
                return _bank_items(code, books, world, docs, unapplied, turn)
            state.lines[x.line_id] = x
            state.order[x.line_id] = _line_order(x)
            state.total += x.amount
            state.open.add(x.line_id)
            dirty_lines.add(x.line_id)
            if x.duplicate_of:
                state.copies.setdefault(x.duplicate_of, set()).add(x.line_id)
        state.seen = len(bank.lines) if bank is not None else 0
        for line_id in dirty_lines:
            old = state.targets.get(line_id, frozenset())
            new = frozenset((t.kind, t.doc_id) for lid in books.books_lines(line_id)
                            if (b := books.lines.get(lid)) is not None
                            and b.bank_account_id == aid for t in books.matches[lid])
            if new != old:
                for k in old - new:
                    state.claims[k].discard(line_id)
                for k in new - old:
                    state.claims.setdefault(k, set()).add(line_id)
                if new:
                    state.targets[line_id] = new
                else:
                    state.targets.pop(line_id, None)
            dirty_docs |= old | new
        recheck = set(dirty_lines)
        for line_id in dirty_lines:
            recheck |= state.copies.get(line_id, set())
        for k in dirty_docs:
            recheck |= state.claims.get(k, set())
        touched = set(dirty_docs)
        for line_id in recheck:  # unsettle first: a document has one taker at a time
            was = state.settled.pop(line_id, None)
            if was is not None:
                for k in was:
                    del state.taken[k]
                touched.update(was)
                state.open.add(line_id)
        own = ("bank_account", aid)
        for line_id in recheck:
            line = state.lines.get(line_id)
            if line is None or world.is_bank_copy(line):
                continue
            found = [k for k in state.targets.get(line_id, ())
                     if k != own and docs.get(k, 0) and self._first(state, k) == line_id]
            if found and sum(docs[k] for k in found) == line.amount:
                state.settled[line_id] = tuple(found)
                for k in found:
                    state.taken[k] = line_id
                touched.update(found)
                state.open.discard(line_id)
        for k in touched:
            v = docs.get(k, 0)
            if v and k not in state.taken:
                state.free[k] = v
            else:
                state.free.pop(k, None)
        opening = bank.opening if bank is not None else acct.opening_balance
        left = dict(state.free)
        book_opening = left.pop(own, 0)
        lines = sorted((state.lines[i] for i in state.open), key=_line_order)
        place = books._place
        by_world: dict[str, list[tuple[str, tuple[ev.MatchTarget, ...]]]] = {}
        for x in lines:
            lids = [lid for lid in books.books_lines(x.line_id)
                    if (b := books.lines.get(lid)) is not None and b.bank_account_id == aid]
            if lids:
                by_world[x.line_id] = [(lid, books.matches[lid])
                                       for lid in sorted(lids, key=place.__getitem__)]
        items = _bank_account_items(code, acct, opening, book_opening, lines, by_world, left,
                                    books, world, unapplied, turn)
        items += _bank_docs_left(code, books, world, left)
        return items, opening + state.total

    @staticmethod
    def _first(state: _Bank, k: Key) -> str | None:
        """The first of the bank's lines (in statement order) the books matched ``k`` to."""
        order = state.order
        found = [c for c in state.claims.get(k, ()) if c in order]
        return min(found, key=order.__getitem__) if found else None

    def _world_invoice(self, world: WorldView, invoice_id: str) -> CustomerInvoice | None:
        """The customer invoice the full walk finds (the last customer's that holds it)."""
        found: CustomerInvoice | None = None
        best = -1
        for w in self.folds[1].invoice_holders(invoice_id):
            n = self._customer_rank[w.customer_id]
            if n > best:
                found, best = w, n
        return found


# --- putting it together ---------------------------------------------------------------------


def reconcile(store: EventStore, *, as_of: date | None = None, position: int | None = None,
              control_accounts: Mapping[str, str] | None = None,
              world: WorldView | None = None, books: BooksView | None = None,
              postings: PostingsFold | None = None,
              itemizer: Itemizer | None = None,
              turn_dates: Iterable[date] = ()) -> Reconciliation:
    """Reconcile every control account as of a date and/or log position.

    ``control_accounts`` adds declared control accounts (``{account: subledger}``); those
    are compared with their subledger only. ``world``, ``books`` and ``postings`` reuse
    views folded already (as of the same moment); ``itemizer`` (per-date control, following
    the folds of ``books``, ``world`` and ``postings``) keeps the itemizing of the last date
    and works out again only what changed since. ``turn_dates``: the dates of the clerk's
    turns; what reached the company after the last turn on or before the date (a bank line,
    a bill, a credit note) is an explained timing item until the next turn (without them:
    a turn every date).
    """
    if postings is None:
        postings = PostingsFold(as_of=as_of)
        postings.advance(store, as_of, position if position is not None else _head(store))
    chart = postings.chart
    world = world if world is not None else fold_world(store, as_of=as_of, position=position)
    books = books if books is not None else fold_books(store, as_of=as_of, position=position)
    company = postings.company
    day = as_of if as_of is not None else _latest_business_date(store, position)
    turn = last_turn(turn_dates, day)
    rows: list[AccountRow] = []
    # A declared account the chart already controls with the same subledger is the chart's.
    declared = {code: ledger for code, ledger in (control_accounts or {}).items()
                if code not in chart or chart[code].control != ledger}
    codes = [a.code for a in chart.values() if a.control is not None]
    codes += [c for c in declared if c not in codes]
    order = {k: n for n, k in enumerate(("bank", "ar", "unapplied_cash", "ap"))}
    codes.sort(key=lambda c: (order.get(_control_of(chart, declared, c), 9), c))
    if itemizer is not None:
        itemizer.update(books, world, turn)
    unapplied_open = _OpenOnAccount([postings.by_document.get(("unapplied_cash", a.code), {})
                                     for a in chart.values() if a.control == "unapplied_cash"])
    for code in codes:
        control = _control_of(chart, declared, code)
        name = chart[code].name if code in chart else code
        sign = SIGN.get(control, 1)
        gl = postings.gl_balance.get(code, 0) * sign
        sub = postings.by_document.get((control, code), {})
        subledger = postings.totals.get((control, code), 0)
        items = gl_subledger_items(store, code, control, postings=postings)
        external: int | None = None
        main = code == company.get(control)
        if code in declared:
            pass
        elif control == "ar":
            more, external = (itemizer.ar_items(code, books, world, sub, main, turn)
                              if itemizer is not None
                              else _ar_items(code, books, world, sub, main, turn))
            items += more
        elif control == "unapplied_cash":
            more, external = (itemizer.unapplied_items(code, books, world, sub, main, turn)
                              if itemizer is not None
                              else _unapplied_items(code, books, world, sub, main, turn))
            items += more
        elif control == "ap":
            by_party = postings.by_party.get(("ap", code), {})
            more, external = (itemizer.ap_items(code, books, world, main, by_party, turn)
                              if itemizer is not None
                              else _ap_items(code, books, world, main, by_party, turn))
            items += more
        elif control == "bank":
            more, ext = (itemizer.bank_items(code, books, world, sub, unapplied_open, turn)
                         if itemizer is not None
                         else _bank_items(code, books, world, sub, unapplied_open, turn))
            items += more
            external = ext
        rows.append(_finish(AccountRow(code, name, control, gl, subledger, external,
                                       EXTERNAL_SOURCE.get(control, "none") if external
                                       is not None else "none", tuple(items))))
    return Reconciliation(as_of, position, tuple(rows), day)


class _OpenOnAccount:
    """Each receipt's balance on the unapplied-cash accounts, looked up when asked (the
    sum over the accounts' subledgers of the receipt's rows)."""

    def __init__(self, ledgers: list[Mapping[tuple[str, str], int]]) -> None:
        self.ledgers = ledgers

    def get(self, receipt_id: str, default: int = 0) -> int:
        """The receipt's balance on account (``default`` when no account holds it)."""
        key = ("receipt", receipt_id)
        found = [d[key] for d in self.ledgers if key in d]
        return sum(found) if found else default


def _latest_business_date(store: EventStore, position: int | None) -> date | None:
    sql = "SELECT MAX(business_date) FROM events"
    params: list[Any] = []
    if position is not None:
        sql += " WHERE position <= ?"
        params.append(position)
    found = _sql(store, sql, params)[0][0]
    return date.fromisoformat(found) if found else None


def _control_of(chart: Mapping[str, q.Account], declared: Mapping[str, str], code: str) -> str:
    if code in declared:
        return declared[code]
    control = chart[code].control
    return control or "none"


def _head(store: EventStore) -> int:
    found = _sql(store, "SELECT MAX(position) FROM events", [])[0][0]
    return int(found or 0)


def _finish(row: AccountRow) -> AccountRow:
    """Add what the items do not account for as an unexplained residual (never expected)."""
    items = list(row.items)
    gl_items = sum(i.difference for i in items if i.kind.startswith("gl_"))
    rest = row.gl_difference - gl_items
    if rest:
        items.append(Item(row.account, "gl_residual", None, "(unitemized)", row.gl,
                          row.subledger, rest, False, "GL minus subledger not itemized"))
    if row.external is not None:
        ext_items = sum(i.difference for i in items if not i.kind.startswith("gl_"))
        rest = (row.subledger - row.external) - ext_items
        if rest:
            items.append(Item(row.account, "residual", None, "(unitemized)", row.subledger,
                              row.external, rest, False,
                              "subledger minus external balance not itemized"))
    return AccountRow(row.account, row.name, row.control, row.gl, row.subledger, row.external,
                      row.external_source, tuple(items))


def reconciliation(ctx: CheckContext, as_of: date | None) -> Reconciliation:
    """:func:`reconcile` as of ``as_of`` at the context's position, with the context's
    declared control accounts, computed once per evaluation (cached in ``ctx.cache``)."""
    key = ("checks.reconcile", as_of, ctx.position, tuple(sorted(ctx.control_accounts.items())))

    def make() -> Reconciliation:
        books = ctx.cached(("checks.books_view", as_of, ctx.position), lambda: _books(ctx, as_of))
        postings = postings_as_of(ctx, as_of)
        world = world_view(ctx, as_of)
        return reconcile(ctx.store, as_of=as_of, position=ctx.position,
                         control_accounts=ctx.control_accounts, world=world, books=books,
                         postings=postings, itemizer=_itemizer(ctx, as_of),
                         turn_dates=ctx.turn_dates)

    return ctx.cached(key, make)


def postings_as_of(ctx: CheckContext, as_of: date | None) -> PostingsFold | None:
    """The GL and subledger rows folded as of ``as_of`` at the context's position, advanced
    from the last date's (per-date control, ``ctx.folds``); None without ``ctx.folds``
    (a single evaluation sums in SQL instead)."""
    folds, position = ctx.folds, ctx.fold_position()
    if folds is None or position is None:
        return None
    if as_of is None:
        folds.carry(("checks.postings", True), ("checks.postings", False), position)
    return ctx.cached(("checks.postings", as_of, position), lambda: folds.get(
        ("checks.postings", as_of is None), lambda d: PostingsFold(as_of=d), ctx.store, as_of,
        position))


def _itemizer(ctx: CheckContext, as_of: date | None) -> Itemizer | None:
    """The itemizing kept with the folds a reconciliation reads: per-date control's, from
    the last date (and the final evaluation's at the log's head, on the folds carried on
    from it); None without kept folds or when they are not all there (a look back folded
    apart), started afresh when a fold was."""
    folds, position = ctx.folds, ctx.fold_position()
    if folds is None or position is None:
        return None
    keys = tuple((k, as_of is None) for k in ("checks.books", "checks.world",
                                                "checks.postings"))
    trio = [folds.peek(k) for k in keys]
    if not _folded_to(trio, as_of, position):
        return None  # the kept folds are not this date's (a look back folded apart)
    books, world, postings = trio
    # per-date control's, which the final evaluation at the log's head takes over with
    # the folds carried on from the last date (``Folds.carry``: the same folds)
    kept: list[Itemizer] = folds.keep(("checks.itemizer", False), list)
    if not kept or not kept[0].same(books, world, postings):
        kept[:] = [Itemizer(books, world, postings)]
    return kept[0]


def _folded_to(trio: list[Any], as_of: date | None, position: int) -> bool:
    """Whether the books', the world's and the postings' folds are there and folded as of
    ``as_of`` to ``position`` (the ones a reconciliation there just read)."""
    return (isinstance(trio[0], BooksFold) and isinstance(trio[1], WorldFold)
            and isinstance(trio[2], PostingsFold)
            and all(f.as_of == as_of and f.position == position for f in trio))


def _books(ctx: CheckContext, as_of: date | None) -> BooksView:
    folds, position = ctx.folds, ctx.fold_position()
    if folds is None or position is None:
        return fold_books(ctx.store, as_of=as_of, position=ctx.position)
    if as_of is None:
        folds.carry(("checks.books", True), ("checks.books", False), position)
    return folds.get(("checks.books", as_of is None), lambda d: BooksFold(as_of=d), ctx.store,
                     as_of, position).books


__all__ = [
    "CSV_COLUMNS",
    "EXPLAINED_KINDS",
    "AccountRow",
    "BooksFold",
    "BooksView",
    "Item",
    "Itemizer",
    "PostingsFold",
    "Reconciliation",
    "fold_books",
    "gl_subledger_items",
    "last_turn",
    "postings_as_of",
    "reconcile",
    "reconciliation",
    "subledger_by_document",
]
