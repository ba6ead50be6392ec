"""Month-end close: the reference solver (the clerk's own materials) and the oracle (the truth).

Every turn the clerk of ``month-end-close``:

1. on the month's last business day, brings the books up to the bank's statement: it
   imports the statement's lines the daily feed has not imported yet (that morning's
   deposits, the service charge, the interest) and records each deposit as a receipt
   matched to its line, as the feed would have done after the turn;
2. clears the bank lines left unmatched: a vendor payment's debit is matched to its
   payment, a service charge and interest are recorded against their lines, a returned
   item (NSF) is recorded as a returned deposit against its line (the invoices it had paid
   are re-opened, the bank's reversal posted); a line the bank posted twice is left as a
   reconciling item;
3. applies unapplied receipts: a card payout net, with the processor's fee accepted as a
   fee allowance; an ACH by its remittance advice; otherwise the invoices its reference
   names. A payment naming an invoice already paid, and the receipt the feed recorded
   from a line the bank posted twice, stay unapplied;
4. enters and approves the vendor bills that arrived, once each (a resend under a number
   already entered, or under the same number reformatted for the same total, is
   skipped), records vendor credit notes and applies them to their bills;
5. before the month end, pays the approved bills due within a week (so that the bank
   has debits to reconcile);
6. leaves ``out/bank_reconciliation.csv`` (the statement balance, each reconciling item
   with its sign, the book balance of the bank's GL account: the statement balance plus
   the items is the book balance to the cent) and ``out/ar_aging.csv``. Before the
   month's statement arrives the reconciliation is to the lines imported in the books,
   and its first row says so.

The reference (``Reference``) reads only what an external agent can see: the files of
``inbox/`` and ``inbox/archive/``, the prompt, and the books (``erp.queries``, and from the
erp realm the registers of customers, vendors and bank accounts and a receipt's
applications). The oracle (``Oracle``)
decides the same work from the world's truth (which payment a bank line carries and what
it was meant for, which bill is a resend, which line is a bank error); only it imports
``sim``, inside its own code. Both act through the same ``Clerk``.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
import textwrap
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from email import message_from_string, policy
from email.message import EmailMessage
from email.utils import parseaddr
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from erp import commands as c
from erp import queries as q
from erp.errors import CommandRejected, MoneyError
from erp.money import format_cents, parse_cents, pct_of
from erp.store import EventStore, StoredEvent
from scenarios.turn import TurnContext

if TYPE_CHECKING:
    from sim.world import World

RECONCILIATION = "bank_reconciliation.csv"
AGING = "ar_aging.csv"
RECONCILIATION_COLUMNS = ("item", "reference", "amount")
AGING_COLUMNS = ("customer", "current", "1-30", "31-60", "61-90", "over_90", "total")
STATEMENT_COLUMNS = ("date", "line_id", "description", "reference", "counterparty", "amount",
                     "balance")
PAYOUT_COLUMNS = {"payout_id", "customer", "invoice", "gross", "fee", "net"}
ADVICE_COLUMNS = {"payer", "payment_id", "invoice_id", "amount"}
WIRE_CHARGES_BP = 200
"""An international wire may arrive short of at most 2% (intermediary banks' charges)."""
CARD_FEE = "card processor fee (2.9% + 0.30)"
WIRE_CHARGES = "intermediary bank charges on an international wire"
PAY_AHEAD_DAYS = 7
"""Bills due within this many days are paid now (the clerk works weekly)."""
BANK_DOC_SIGN = {"receipt": 1, "payment": -1, "refund": -1, "fee": -1, "interest": 1}
"""How each book document moves the bank account (deposits positive)."""

_WIRE = re.compile(r"\b(WIRE|FEDWIRE|SWIFT|MT103|WT)\b")
"""How banks name an incoming wire on a statement line (``SWIFT MT103 CR``...)."""
_PAYOUT = re.compile(r"\bSTRIPE PAYOUT (\S+)")
_ADVICE = re.compile(r"\bPMT (\S+)")
_TURN = re.compile(r"\(turn (\d+) of (\d+)\)")
_MONEY = r"-?[\d,]+\.\d{2}"
_BILL_LINE = re.compile(rf"^(?P<desc>\S.*?)\s+(?P<qty>\d+)\s+(?P<unit>{_MONEY})\s+"
                        rf"(?P<amount>{_MONEY})\s*$", re.M)
_DATE = r"\d{4}-\d{2}-\d{2}"

VerdictKind = Literal["deposit", "payment", "refund", "fee", "interest", "returned",
                      "duplicate", "unknown"]


# --- what the solvers decide ---------------------------------------------------------------


@dataclass(frozen=True)
class BankLine:
    """A line of the bank's account, from its statement or as imported in the books."""

    line_id: str
    posted_on: date
    amount: int
    description: str = ""
    reference: str = ""
    counterparty: str = ""

    @property
    def key(self) -> tuple[date, int, str, str, str]:
        """What two copies of one posting share."""
        return (self.posted_on, self.amount, self.description, self.reference,
                self.counterparty)


@dataclass(frozen=True)
class Statement:
    """The bank's statement of a month (or, lacking it, the lines imported in the books)."""

    name: str
    period: str
    start: date
    closing: int
    lines: tuple[BankLine, ...]
    from_books: bool = False


@dataclass(frozen=True)
class _Verdict:
    """What a bank line is: a deposit, a payment's debit, a charge, a bank error..."""

    kind: VerdictKind
    doc_id: str | None = None
    """The payment or refund a debit pays out; the line a duplicate repeats or a returned
    item returns."""
    customer_id: str | None = None
    """A deposit's payer, when known."""


@dataclass(frozen=True)
class Application:
    """Part of a receipt for one invoice, and the processor's fee accepted on it."""

    invoice_id: str
    cash: int
    fee: int = 0
    reason: str = ""


@dataclass(frozen=True)
class ReceiptPlan:
    """Where a receipt goes; ``customer_id`` is assigned first when the receipt has none."""

    receipt_id: str
    customer_id: str | None
    applications: tuple[Application, ...]


@dataclass(frozen=True)
class BillDoc:
    """A vendor's invoice to enter."""

    vendor_id: str
    number: str
    issued_on: date
    due_on: date | None
    lines: tuple[tuple[str, int], ...]
    approve: bool = True

    @property
    def total(self) -> int:
        """The bill's total."""
        return sum(a for _, a in self.lines)


@dataclass(frozen=True)
class CreditDoc:
    """A vendor's credit note, and the number of the invoice it credits."""

    vendor_id: str
    number: str
    issued_on: date
    amount: int
    against: str | None


@dataclass(frozen=True)
class _Receipt:
    """An unapplied receipt as the books show it, with its statement line."""

    receipt_id: str
    customer_id: str | None
    reference: str
    open: int
    line_id: str | None
    description: str = ""


class Judge(Protocol):
    """Who decides the turn's work: the reference (the clerk's materials) or the oracle."""

    month_end: bool

    def statement(self) -> Statement | None:
        """This month's bank statement, if it has arrived."""

    def verdict(self, line: BankLine) -> _Verdict:
        """What a bank line is."""

    def receipt_plans(self, clerk: _Clerk) -> list[ReceiptPlan]:
        """Where each unapplied receipt goes."""

    def bills(self, clerk: _Clerk) -> list[BillDoc]:
        """The bills to enter, in arrival order."""

    def credits(self) -> list[CreditDoc]:
        """The vendor credit notes that arrived, in arrival order."""


def number_key(number: str) -> str:
    """How the books compare vendor document numbers (case and outer spaces aside)."""
    return number.strip().casefold()


def _number_digits(number: str) -> str:
    """A document number's digits without zero padding (what a reformatting keeps)."""
    return re.sub(r"\D", "", number).lstrip("0")


# --- the clerk's hands: reading the books and acting on them ----------------------------------


class _Registers:
    """The books' registers of bank accounts, customers and vendors, read forward: each
    turn reads only the registrations after the last one read (the erp realm, as any
    agent may read it), not the whole log again."""

    _KEYS = {"customer_registered": "customer_id", "vendor_registered": "vendor_id"}

    def __init__(self) -> None:
        self.position = 0
        self.bank_accounts: list[dict[str, Any]] = []
        self.customer_plain: list[tuple[str, str]] = []
        """(name as a bank exports it, customer id), in registration order."""
        self._by_name: dict[str, dict[str, str | None]] = {t: {} for t in self._KEYS}

    def advance(self, store: EventStore) -> None:
        """Read the registrations appended since the last call. On the books' own store,
        up to the head read first, which the next call starts after: registrations come
        early, and a position kept at the last of them would scan the rest of the log at
        every turn. (Over the API the positions number the registrations seen.)"""
        plain = _cash_application().plain_name
        head = store.head()[0] if isinstance(store, EventStore) else None
        types = ["bank_account_opened", *self._KEYS]
        for e in (store.read(after=self.position, realm="erp", types=types) if head is None
                  else store.read(after=self.position, until=head, realm="erp", types=types)):
            self.position = e.position
            data = e.data
            if e.type == "bank_account_opened":
                self.bank_accounts.append(data)
                continue
            by_name = self._by_name[e.type]
            name = data["name"].strip().casefold()
            by_name[name] = None if name in by_name else data[self._KEYS[e.type]]
            if e.type == "customer_registered":
                self.customer_plain.append((plain(data["name"]), data["customer_id"]))
        if head is not None:
            self.position = head

    def names(self, event_type: str) -> dict[str, str]:
        """Name (casefolded) -> id; a name two parties share names neither."""
        return {n: i for n, i in self._by_name[event_type].items() if i is not None}


_REGISTERS: weakref.WeakKeyDictionary[EventStore, _Registers] = weakref.WeakKeyDictionary()


def _registers(store: EventStore) -> _Registers:
    """The store's registers, advanced to its head (kept while the store lives)."""
    found = _REGISTERS.get(store)
    if found is None:
        found = _REGISTERS[store] = _Registers()
    found.advance(store)
    return found


class _Kept:
    """Rows of one of the books' tables as last read, kept in the query's order and brought
    up to date by reading only the rows changed since (each row carries the log position
    of the last event that changed it): a clerk reads the whole bills, receipts and
    statement lines of the year at every step, most of them settled months ago."""

    def __init__(self, key: str, order: Callable[[dict[str, Any]], Any]) -> None:
        self._key, self._order = key, order
        self.rows: dict[str, dict[str, Any]] = {}
        self.seen: int | None = None
        self._ordered: list[dict[str, Any]] = []

    def current(self, read: Callable[[int | None], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """Every row, as the full query returns them (in its order), ``read(after)`` giving
        the rows changed after a position. Rows that carry no position (the books served
        over the API) are read whole every time."""
        changed = read(self.seen)
        if changed:
            added = False
            for row in changed:
                added = added or row[self._key] not in self.rows
                self.rows[row[self._key]] = row
                at = row.get("last_position")
                if at is not None:
                    self.seen = max(self.seen or 0, int(at))
            if added:
                self._ordered = sorted(self.rows.values(), key=self._order)
            else:
                self._ordered = [self.rows[r[self._key]] for r in self._ordered]
        return self._ordered


class _Tables:
    """The books' documents (by kind) and statement lines (by bank account) kept for one
    store while it lives (:class:`_Kept`). It holds no reference to the store: kept in a
    table weakly keyed by the store, it would keep the store alive for good."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], _Kept] = {}

    def documents(self, store: EventStore, kind: str) -> list[dict[str, Any]]:
        """``erp.queries.documents(store, kind)``."""
        found = self.kept.get(("documents", kind))
        if found is None:
            found = self.kept[("documents", kind)] = _Kept("doc_id", lambda r: r["doc_id"])
        return found.current(lambda after: q.documents(store, kind, changed_after=after))

    def lines(self, store: EventStore, bank_account_id: str) -> list[dict[str, Any]]:
        """``erp.queries.statement_lines(store, bank_account_id=...)``."""
        found = self.kept.get(("lines", bank_account_id))
        if found is None:
            found = self.kept[("lines", bank_account_id)] = _Kept(
                "line_id", lambda r: (r["entry_date"], r["line_id"]))
        return found.current(lambda after: q.statement_lines(
            store, bank_account_id=bank_account_id, changed_after=after))


_TABLES: weakref.WeakKeyDictionary[EventStore, _Tables] = weakref.WeakKeyDictionary()


def _tables(store: EventStore) -> _Tables:
    """The store's kept tables (kept while the store lives)."""
    found = _TABLES.get(store)
    if found is None:
        found = _TABLES[store] = _Tables()
    return found


class _Clerk:
    """One turn's clerk: reads the books, runs commands, writes the month-end files."""

    def __init__(self, desk: TurnContext) -> None:
        self.desk = desk
        self.store = desk.store
        self.day = desk.day
        registers = _registers(self.store)
        opened = registers.bank_accounts
        if not opened:
            raise RuntimeError("the books have no bank account to reconcile")
        account = next((a for a in opened if a["gl_account"] == "1000"), opened[0])
        self.bank_account_id: str = account["bank_account_id"]
        self.bank_gl: str = account["gl_account"]
        self.bank_opening: int = int(account.get("opening_balance", 0))
        self.customer_names = registers.names("customer_registered")
        self.customer_plain = registers.customer_plain
        self.vendor_names = registers.names("vendor_registered")
        self._read_at: int | None = None
        self._reads: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}

    def customer_named(self, name: str) -> str | None:
        """The customer registered under this name, or failing that the one customer whose
        name it is as a bank exports it (upper-cased, plain, cut to its field width)."""
        exact = self.customer_names.get(name.strip().casefold())
        cut = _cash_application().plain_name(name) if exact is None else ""
        if not cut:
            return exact
        hits = {cid for plain, cid in self.customer_plain if plain.startswith(cut)}
        return hits.pop() if len(hits) == 1 else None

    def vendor_named(self, name: str) -> str | None:
        """The vendor registered under exactly this name."""
        return self.vendor_names.get(name.strip().casefold())

    def run(self, command: c.Command) -> list[StoredEvent] | None:
        """Run a command; None when the books refused it (the refusal is on the desk)."""
        result = self.desk.execute(command)
        return None if isinstance(result, CommandRejected) else result

    def _read(self, key: tuple[str, ...],
              read: Callable[[], list[dict[str, Any]]]) -> list[Mapping[str, Any]]:
        """``read()``'s rows, read once between two commands of the desk (only a command
        changes the books during a turn; the desk counts them), each read-only (a caller
        that changes one copies it: the rows are kept for the next read)."""
        version = getattr(self.desk, "commands", None)
        if version is None:
            return [MappingProxyType(r) for r in read()]
        if version != self._read_at:
            self._read_at, self._reads = version, {}
        rows = self._reads.get(key)
        if rows is None:
            rows = self._reads[key] = [MappingProxyType(r) for r in read()]
        return list(rows)

    def document_rows(self, kind: str) -> list[Mapping[str, Any]]:
        """The books' documents of a kind (``erp.queries.documents``)."""
        return self._read(("documents", kind),
                          lambda: _tables(self.store).documents(self.store, kind))

    # --- reading ------------------------------------------------------------------------

    def lines(self) -> dict[str, Mapping[str, Any]]:
        """The bank account's imported statement lines by id."""
        return {x["line_id"]: x for x in self._read(
            ("lines",), lambda: _tables(self.store).lines(self.store, self.bank_account_id))}

    @staticmethod
    def bank_line(row: Mapping[str, Any]) -> BankLine:
        """A books statement line as a ``BankLine``."""
        return BankLine(row["line_id"], date.fromisoformat(row["entry_date"]), int(row["amount"]),
                        row["description"] or "", row["reference"] or "",
                        row["counterparty"] or "")

    @staticmethod
    def targets(row: Mapping[str, Any]) -> list[tuple[str, str, int]]:
        """The documents a statement line is matched to: ``(kind, doc_id, amount)``."""
        return list(_matched_to(row["matched_to"] or "[]"))

    def documents(self, kind: str) -> dict[str, Mapping[str, Any]]:
        """The books' documents of a kind by id."""
        return {d["doc_id"]: d for d in self.document_rows(kind)}

    def unapplied_receipts(self) -> list[_Receipt]:
        """Receipts with cash left to apply, with the statement line each came from."""
        lines = self.lines()
        line_of = {doc: lid for lid, row in lines.items()
                   for kind, doc, _ in self.targets(row) if kind == "receipt"}
        out = []
        for d in self.document_rows("receipt"):
            if int(d["open_amount"]) <= 0:
                continue
            line_id = line_of.get(d["doc_id"])
            row = lines.get(line_id or "")
            out.append(_Receipt(d["doc_id"], d["party"], d["reference"] or "",
                               int(d["open_amount"]), line_id,
                               (row["description"] or "") if row else ""))
        return out

    def applied(self, receipt_id: str) -> dict[str, int]:
        """What a receipt has applied to each invoice (applications less reversals)."""
        out: dict[str, int] = {}
        for e in self.store.read(stream=f"receipt:{receipt_id}",
                                 types=["receipt_applied", "application_reversed"]):
            sign = 1 if e.type == "receipt_applied" else -1
            out[e.data["invoice_id"]] = out.get(e.data["invoice_id"], 0) + sign * e.data["amount"]
        return {i: a for i, a in out.items() if a}

    def returned_receipts(self, judge: Judge) -> set[str]:
        """Receipts whose deposit the bank returned unpaid (by the returned items' lines)."""
        return set(self.returns(judge).values())

    def returns(self, judge: Judge) -> dict[str, str]:
        """Returned items' statement lines -> the receipt of the deposit each returns."""
        lines = self.lines()
        out: dict[str, str] = {}
        for row in lines.values():
            v = judge.verdict(self.bank_line(row)) if int(row["amount"]) < 0 else None
            if v is not None and v.kind == "returned" and v.doc_id in lines:
                for k, d, _ in self.targets(lines[v.doc_id]):
                    if k == "receipt":
                        out[row["line_id"]] = d
        return out

    def bills_entered(self) -> dict[tuple[str, str], Mapping[str, Any]]:
        """Bills in the books by ``(vendor, number key)``."""
        return {(d["party"], number_key(d["reference"] or "")): d
                for d in self.document_rows("bill")}

    # --- acting ----------------------------------------------------------------------------

    def import_statement(self, statement: Statement, judge: Judge) -> None:
        """Import the statement's lines the books lack; record their deposits as receipts."""
        have = self.lines()
        missing = [x for x in statement.lines if x.line_id not in have]
        if not missing:
            return
        done = self.run(c.ImportStatementLines(bank_account_id=self.bank_account_id, lines=tuple(
            c.StatementLineIn(line_id=x.line_id, entry_date=x.posted_on, amount=x.amount,
                              description=x.description, reference=x.reference,
                              counterparty=x.counterparty, bank_ref=x.line_id)
            for x in missing)))
        if done is None:
            return
        receipts = self.documents("receipt")
        for x in missing:
            v = judge.verdict(x)
            rid = f"RCT-{x.line_id}"
            if v.kind != "deposit" or x.amount <= 0 or rid in receipts:
                continue
            method = x.description.split(" ")[0].lower() if x.description else ""
            if self.run(c.RecordReceipt(receipt_id=rid, customer_id=v.customer_id,
                                        bank_account_id=self.bank_account_id,
                                        entry_date=x.posted_on, amount=x.amount, method=method,
                                        reference=x.reference, payer=x.counterparty)):
                self.run(c.MatchStatementLine(line_id=x.line_id,
                                              targets=(c.MatchRef(kind="receipt", doc_id=rid),)))

    def clear_lines(self, judge: Judge) -> None:
        """Match payments' debits; record charges and interest against their lines."""
        payments, refunds = self.documents("payment"), self.documents("refund")
        for row in self.lines().values():
            if row["status"] != "unmatched":
                continue
            line = self.bank_line(row)
            v = judge.verdict(line)
            memo = f"{line.description} {line.reference}".strip()
            if v.kind in ("payment", "refund") and v.doc_id:
                doc = (payments if v.kind == "payment" else refunds).get(v.doc_id)
                if doc is not None and doc["status"] != "cleared" and -line.amount == int(
                        doc["total"]):
                    self.run(c.MatchStatementLine(
                        line_id=line.line_id, targets=(c.MatchRef(kind=v.kind, doc_id=v.doc_id),)))
            elif v.kind == "fee" and line.amount < 0:
                self.run(c.RecordBankFee(bank_account_id=self.bank_account_id,
                                         entry_date=line.posted_on, amount=-line.amount,
                                         memo=memo, line_id=line.line_id))
            elif v.kind == "interest" and line.amount > 0:
                self.run(c.RecordInterest(bank_account_id=self.bank_account_id,
                                          entry_date=line.posted_on, amount=line.amount,
                                          memo=memo, line_id=line.line_id))

    def record_returned(self, judge: Judge) -> None:
        """Record each returned (NSF) deposit against its statement line: the invoices it
        had paid are open again (the customer owes them) and the bank's reversal is posted."""
        lines = self.lines()
        receipts = self.documents("receipt")
        for line_id, rid in sorted(self.returns(judge).items()):
            r = receipts.get(rid)
            if lines[line_id]["status"] != "unmatched" or r is None or r["status"] == "returned":
                continue
            self.run(c.RecordReturnedDeposit(receipt_id=rid, line_id=line_id,
                                             entry_date=self.bank_line(lines[line_id]).posted_on))

    def apply(self, plan: ReceiptPlan) -> None:
        """Apply a receipt as planned (naming its customer first, when it has none)."""
        if plan.customer_id is not None and self.run(c.AssignReceiptCustomer(
                receipt_id=plan.receipt_id, customer_id=plan.customer_id)) is None:
            return
        for a in plan.applications:
            if a.cash > 0 and self.run(c.ApplyReceipt(receipt_id=plan.receipt_id,
                                                      invoice_id=a.invoice_id,
                                                      amount=a.cash)) is None:
                continue
            if a.fee > 0:
                self.run(c.GrantFeeAllowance(invoice_id=a.invoice_id, amount=a.fee,
                                             reason=a.reason or CARD_FEE))

    def enter_bills(self, bills: Iterable[BillDoc]) -> None:
        """Enter (and approve) each bill whose number the vendor has not billed before."""
        entered = set(self.bills_entered())
        for bill in bills:
            key = (bill.vendor_id, number_key(bill.number))
            if key in entered:
                continue
            done = self.run(c.EnterBill(
                vendor_id=bill.vendor_id, vendor_invoice_number=bill.number,
                entry_date=bill.issued_on, due_on=bill.due_on,
                lines=tuple(c.BillLineIn(description=d, amount=a) for d, a in bill.lines)))
            if done is None:
                continue
            entered.add(key)
            if bill.approve:
                self.run(c.ApproveBill(bill_id=done[0].data["bill_id"]))

    def record_credits(self, credits: Iterable[CreditDoc]) -> None:
        """Record each new vendor credit note and apply it to the bill it credits."""
        recorded = {(d["party"], number_key(d["reference"] or ""))
                    for d in self.document_rows("vendor_credit")}
        for note in credits:
            if (note.vendor_id, number_key(note.number)) in recorded:
                continue
            done = self.run(c.RecordVendorCredit(vendor_id=note.vendor_id,
                                                 vendor_credit_number=note.number,
                                                 entry_date=note.issued_on, amount=note.amount))
            if done is None:
                continue
            recorded.add((note.vendor_id, number_key(note.number)))
            bill = self.bills_entered().get((note.vendor_id, number_key(note.against or "")))
            if bill is not None and int(bill["open_amount"]) > 0:
                self.run(c.ApplyVendorCredit(credit_id=done[0].data["credit_id"],
                                             bill_id=bill["doc_id"],
                                             amount=min(note.amount, int(bill["open_amount"]))))
        self.apply_open_credits()

    def apply_open_credits(self) -> None:
        """Apply what is left of vendor credits to the vendor's open bills, oldest due first."""
        bills = sorted((dict(d) for d in self.document_rows("bill")
                        if int(d["open_amount"]) > 0),
                       key=lambda d: (d["due_on"] or "", d["doc_id"]))
        for credit in self.document_rows("vendor_credit"):
            left = int(credit["open_amount"])
            for bill in bills:
                if left <= 0:
                    break
                if bill["party"] != credit["party"] or int(bill["open_amount"]) <= 0:
                    continue
                amount = min(left, int(bill["open_amount"]))
                if self.run(c.ApplyVendorCredit(credit_id=credit["doc_id"],
                                                bill_id=bill["doc_id"], amount=amount)):
                    left -= amount
                    bill["open_amount"] = int(bill["open_amount"]) - amount

    def pay_due(self, due_by: date) -> None:
        """Pay every approved open bill due by a date, one payment per vendor."""
        due = sorted(d["doc_id"] for d in self.document_rows("bill")
                     if d["status"] in ("approved", "partially_paid")
                     and int(d["open_amount"]) > 0 and d["due_on"]
                     and date.fromisoformat(d["due_on"]) <= due_by)
        if due:
            self.run(c.RunPayments(bank_account_id=self.bank_account_id, bill_ids=tuple(due)))

    # --- the month-end files --------------------------------------------------------------

    def statement_from_books(self) -> Statement:
        """The bank's account as far as the books imported it (when no statement came)."""
        lines = tuple(sorted((self.bank_line(r) for r in self.lines().values()
                              if date.fromisoformat(r["entry_date"]) <= self.day),
                             key=lambda x: (x.posted_on, x.line_id)))
        start = min((x.posted_on for x in lines), default=self.day)
        return Statement(name=f"bank lines imported in the books through {self.day}",
                         period=f"{self.day:%Y-%m}", start=start,
                         closing=self.bank_opening + sum(x.amount for x in lines), lines=lines,
                         from_books=True)

    def reconciliation(self, statement: Statement, judge: Judge) -> list[tuple[str, str, int]]:
        """Rows ``(item, reference, amount)``: statement balance + items = book balance."""
        books = self.lines()
        # Lines before the statement's own are on earlier statements: the bank's opening.
        bank = list(statement.lines) + [self.bank_line(r) for r in books.values()
                                        if date.fromisoformat(r["entry_date"]) < statement.start
                                        and not statement.from_books]
        items: list[tuple[str, str, int]] = []
        cleared: set[tuple[str, str]] = set()
        for line in sorted(bank, key=lambda x: (x.posted_on, x.line_id)):
            row = books.get(line.line_id)
            matched = row is not None and row["status"] == "matched"
            targets = self.targets(row) if matched and row is not None else []
            cleared.update((k, d) for k, d, _ in targets)
            v = judge.verdict(line)
            if v.kind == "duplicate":
                items.append(("duplicate bank line (bank error; the bank is to reverse it)",
                              f"{line.line_id} repeats {v.doc_id}", -line.amount))
                items += [(f"{k} the books recorded from the duplicate bank line",
                           f"{d} ({line.line_id})", a) for k, d, a in targets]
            elif not matched:
                ref = (f"{line.line_id} returns {v.doc_id}" if v.kind == "returned" and v.doc_id
                       else f"{line.line_id} {line.reference}".strip())
                items.append((_NOT_IN_BOOKS.get(v.kind, "bank line, not in the books"), ref,
                              -line.amount))
        for kind, sign in BANK_DOC_SIGN.items():
            for d in self.document_rows(kind):
                if (kind, d["doc_id"]) in cleared or not d["doc_date"] or (
                        date.fromisoformat(d["doc_date"]) > self.day):
                    continue
                if kind == "payment" and d["account"] != self.bank_gl:
                    continue
                items.append((_NOT_ON_STATEMENT[kind], d["doc_id"], sign * int(d["total"])))
        book = q.account_balance(self.store, self.bank_gl, as_of=self.day)
        gap = book - statement.closing - sum(a for _, _, a in items)
        if gap:
            items.append(("unexplained difference", "", gap))
        if statement.from_books:
            first = ("statement balance per the bank lines imported in the books "
                     f"(no bank statement for {statement.period} received)")
        else:
            first = "statement balance"
        return [(first, f"{statement.name} closing", statement.closing), *items,
                ("book balance", f"account {self.bank_gl} as of {self.day}", book)]

    def write_reconciliation(self, statement: Statement, judge: Judge) -> None:
        """Write ``out/bank_reconciliation.csv``."""
        rows = [(i, r, format_cents(a)) for i, r, a in self.reconciliation(statement, judge)]
        self._write(RECONCILIATION, RECONCILIATION_COLUMNS, rows)

    def write_aging(self) -> None:
        """Write ``out/ar_aging.csv``: open receivables by customer and days past due."""
        rows = [(r.party, *(format_cents(b) for b in r.buckets), format_cents(r.total))
                for r in q.aging(self.store, "ar", as_of=self.day)]
        self._write(AGING, AGING_COLUMNS, rows)

    def _write(self, name: str, header: Iterable[str], rows: Iterable[Iterable[Any]]) -> None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        self.desk.output_dir.mkdir(parents=True, exist_ok=True)
        (self.desk.output_dir / name).write_text(buf.getvalue(), encoding="utf-8")


_NOT_IN_BOOKS = {
    "returned": "returned item (NSF), not in the books",
    "fee": "bank charge, not in the books",
    "interest": "interest credited, not in the books",
    "deposit": "deposit on the statement, not in the books",
    "payment": "payment debited by the bank, not in the books",
    "refund": "refund debited by the bank, not in the books",
}
_NOT_ON_STATEMENT = {
    "receipt": "deposit in transit",
    "payment": "outstanding payment",
    "refund": "outstanding refund",
    "fee": "bank charge recorded, not on the statement",
    "interest": "interest recorded, not on the statement",
}


def finish_books(clerk: _Clerk, judge: Judge) -> None:
    """Match the statement lines, record the returned deposits, apply receipts,
    enter bills and record credit notes."""
    clerk.clear_lines(judge)
    clerk.record_returned(judge)
    for plan in judge.receipt_plans(clerk):
        clerk.apply(plan)
    clerk.enter_bills(judge.bills(clerk))
    clerk.record_credits(judge.credits())


def close_turn(clerk: _Clerk, judge: Judge) -> None:
    """One turn of the close, decided by ``judge`` and done by ``clerk``."""
    statement = judge.statement()
    if statement is not None:
        clerk.import_statement(statement, judge)
    finish_books(clerk, judge)
    if not judge.month_end:  # a payment after the statement's cut would be on no statement
        clerk.pay_due(clerk.day + timedelta(days=PAY_AHEAD_DAYS))
    clerk.write_aging()
    clerk.write_reconciliation(statement or clerk.statement_from_books(), judge)


def closing_turn(clerk: _Clerk, judge: Judge) -> None:
    """The controller's closing turn in the new month: finish the month just ended (its
    last statement lines, receipts, bills and credits), then close it. The month-end
    files were left on its last business day and stay as they are."""
    finish_books(clerk, judge)
    ended = clerk.day.replace(day=1) - timedelta(days=1)
    clerk.run(c.ClosePeriod(period=f"{ended:%Y-%m}"))


def plan_applications(receipt: _Receipt, wanted: Iterable[tuple[str, int | None, int]],
                      invoices: Mapping[str, Mapping[str, Any]], open_: dict[str, int],
                      customer_id: str | None, reason: str = CARD_FEE) -> list[Application]:
    """Applications of a receipt to ``(invoice, amount or None for all, fee)`` in order.

    Only invoices of ``customer_id`` take cash; a fee is accepted only with the full cash
    it goes with. ``open_`` is updated (so plans of one turn never overlap).
    """
    left = receipt.open
    out = []
    for invoice_id, amount, fee in wanted:
        inv = invoices.get(invoice_id)
        if inv is None or inv["party"] != customer_id or open_.get(invoice_id, 0) <= 0:
            continue
        cash = min(left, open_[invoice_id], amount if amount is not None else left)
        accepted = fee if amount is not None and cash == amount else 0
        accepted = min(accepted, open_[invoice_id] - cash)
        if cash <= 0:
            continue
        out.append(Application(invoice_id, cash, accepted, reason if accepted else ""))
        left -= cash
        open_[invoice_id] -= cash + accepted
    return out


@functools.lru_cache(maxsize=65_536)
def _matched_to(text: str) -> tuple[tuple[str, str, int], ...]:
    """A statement line's ``matched_to`` JSON as ``(kind, doc_id, amount)`` triples; a
    month's reconciliation reads every earlier line's again (a year: ~110,000 reads of
    a few thousand texts)."""
    return tuple((k, d, int(a)) for k, d, a in json.loads(text))


# --- the reference: the clerk's own materials ------------------------------------------------


@dataclass(frozen=True)
class _Payout:
    """A card processor's payout advice."""

    customer: str
    invoice_id: str
    gross: int
    fee: int
    net: int


class Reference:
    """Decides the work from the workspace's files and the books."""

    def __init__(self, desk: TurnContext, clerk: _Clerk) -> None:
        self.desk = desk
        self.clerk = clerk
        self.payouts: dict[str, _Payout] = {}
        self.advices: dict[str, list[tuple[str, str, int]]] = {}
        self.statements: dict[str, Statement] = {}
        self._bills: list[tuple[str, str]] = []
        self._credits: list[str] = []
        self._invoice_id_of: dict[str, str] | None = None
        for path in sorted(desk.archive() + desk.inbox(), key=lambda p: p.name):
            if path.suffix.lower() == ".pdf":
                self._read_paper(path, textwrap.dedent(_cash_application().pdf_text(path)))
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.suffix == ".csv":
                self._read_csv(path.name, text)
            elif path.suffix == ".eml":
                sender, body = _email_text(text)
                self._read_text(body, sender)
            else:
                self._read_paper(path, text)
        period = f"{desk.day:%Y-%m}"
        self._statement = self.statements.get(period)
        self.month_end = (self._statement is not None or _next_weekday(desk.day).month
                          != desk.day.month or _last_turn(desk))
        self._duplicates: dict[str, str] | None = None
        self._returns: dict[str, str] | None = None

    # --- reading the papers ------------------------------------------------------------------

    def _read_csv(self, name: str, text: str) -> None:
        rows = list(csv.DictReader(io.StringIO(text)))
        columns = set(rows[0]) if rows else set()
        try:
            if columns >= PAYOUT_COLUMNS:
                for r in rows:
                    self.payouts[r["payout_id"].strip()] = _Payout(
                        r["customer"].strip(), r["invoice"].strip(), parse_cents(r["gross"]),
                        parse_cents(r["fee"]), parse_cents(r["net"]))
            elif columns >= ADVICE_COLUMNS:
                for r in rows:
                    self.advices.setdefault(r["payment_id"].strip(), []).append(
                        (r["payer"].strip(), r["invoice_id"].strip(), parse_cents(r["amount"])))
            elif set(STATEMENT_COLUMNS) <= columns:
                statement = _bank_statement(name, rows)
                if statement is not None:
                    self.statements[statement.period] = statement
        except (MoneyError, KeyError, ValueError):
            return  # a paper the clerk cannot read is left alone

    def _read_paper(self, path: Path, text: str) -> None:
        """A text or PDF paper: a bill or a credit note; else a payout report or remittance
        advice laid out as text, read as cash-application's clerk reads one (its invoice
        numbers however the customer wrote them)."""
        if re.search(r"^(Invoice number:|CREDIT NOTE )", text, re.M):
            self._read_text(text, "")
            return
        papers = _cash_application().read_papers([path])
        for pid, p in papers.payouts.items():
            self.payouts[pid] = _Payout(p.customer, self._invoice_written(p.invoice_id),
                                        p.gross, p.fee, p.net)
        for pid, rows in papers.advices.items():
            self.advices[pid] = [(a.payer, self._invoice_written(a.invoice_id), a.amount)
                                 for a in rows]

    def _invoice_ids(self) -> dict[str, str]:
        """The books' invoice ids by their digits without zero padding."""
        if self._invoice_id_of is None:
            self._invoice_id_of = {re.sub(r"\D", "", i).lstrip("0") or "0": i
                                 for i in self.clerk.documents("invoice")}
        return self._invoice_id_of

    def invoices_quoted(self, text: str) -> list[str]:
        """The invoices a reference names, however written (``INV 47498``, ``/INV/47526``,
        ``Payment for invoice 47512``): the books' ids (an unknown number as issued)."""
        return [self._invoice_ids().get(n, f"INV-{n:0>6}")
                for n in _cash_application().invoice_numbers(text)]

    def _invoice_written(self, written: str) -> str:
        """One invoice as a paper writes it, as the books' id (unread: as written)."""
        quoted = self.invoices_quoted(written)
        return quoted[0] if quoted else written

    def _read_text(self, text: str, sender: str) -> None:
        if re.search(r"^Invoice number:", text, re.M):
            self._bills.append((text, sender))
        elif re.search(r"^CREDIT NOTE ", text, re.M):
            self._credits.append(text)

    def _vendor_of(self, text: str, sender: str) -> str | None:
        """The vendor whose registered name heads the document (or is the sender's name)."""
        for line in [sender, *text.splitlines()[:40]]:
            vendor = self.clerk.vendor_named(line) if line.strip() else None
            if vendor is not None:
                return vendor
        return None

    def _bill(self, text: str, sender: str) -> BillDoc | None:
        vendor = self._vendor_of(text, sender)
        number = re.search(r"^Invoice number:\s*(\S.*?)\s*$", text, re.M)
        issued = re.search(rf"^Invoice date:\s*({_DATE})", text, re.M)
        due = re.search(rf"^Due date:\s*({_DATE})", text, re.M)
        total = re.search(rf"Total USD\s+({_MONEY})", text)
        if vendor is None or number is None or issued is None or total is None:
            return None
        try:
            lines = tuple((m["desc"].strip(), parse_cents(m["amount"]))
                          for m in _BILL_LINE.finditer(text))
            amount = parse_cents(total[1])
        except MoneyError:
            return None
        if not lines or sum(a for _, a in lines) != amount:
            lines = (("Invoice total", amount),)
        return BillDoc(vendor, number[1], date.fromisoformat(issued[1]),
                       date.fromisoformat(due[1]) if due else None, lines)

    def _credit(self, text: str) -> CreditDoc | None:
        vendor = self._vendor_of(text, "")
        number = re.search(r"^CREDIT NOTE (\S+)", text, re.M)
        day = re.search(rf"^Date:\s*({_DATE})", text, re.M)
        against = re.search(r"^Against invoice:\s*(\S+)", text, re.M)
        amount = re.search(rf"^Amount credited:\s*USD\s*({_MONEY})", text, re.M)
        if vendor is None or number is None or day is None or amount is None:
            return None
        try:
            cents = parse_cents(amount[1])
        except MoneyError:
            return None
        return CreditDoc(vendor, number[1], date.fromisoformat(day[1]), cents,
                         against[1] if against else None)

    # --- the judge's answers --------------------------------------------------------------------

    def statement(self) -> Statement | None:
        """This month's bank statement from the inbox (or the archive)."""
        return self._statement

    def duplicates(self) -> dict[str, str]:
        """Lines the bank posted twice: a later line identical to an earlier one -> that one."""
        if self._duplicates is None:
            lines = {x.line_id: x for x in (self.clerk.bank_line(r)
                                            for r in self.clerk.lines().values())}
            for s in self.statements.values():
                lines.update({x.line_id: x for x in s.lines})
            first: dict[tuple[date, int, str, str, str], str] = {}
            self._duplicates = {}
            for x in sorted(lines.values(), key=lambda x: x.line_id):
                if x.amount > 0 and x.key in first:
                    self._duplicates[x.line_id] = first[x.key]
                first.setdefault(x.key, x.line_id)
        return self._duplicates

    def returns(self) -> dict[str, str]:
        """Returned items -> the deposit each returns: the first earlier deposit of the same
        payer, reference and amount (not a bank duplicate, not returned already); a later one
        is the payer's repeat of it, which the bank does not return first."""
        if self._returns is None:
            lines = sorted((self.clerk.bank_line(r) for r in self.clerk.lines().values()),
                           key=lambda x: x.line_id)
            self._returns = {}
            for x in lines:
                desc = x.description.upper()
                if x.amount >= 0 or not ("RETURNED" in desc or "NSF" in desc):
                    continue
                original = next((d for d in lines if d.line_id < x.line_id
                                 and d.amount == -x.amount
                                 and (d.reference, d.counterparty) == (x.reference, x.counterparty)
                                 and d.line_id not in self.duplicates()
                                 and d.line_id not in self._returns.values()), None)
                if original is not None:
                    self._returns[x.line_id] = original.line_id
        return self._returns

    def verdict(self, line: BankLine) -> _Verdict:
        """Judge a line by its description, reference and the books' documents."""
        if line.line_id in self.duplicates():
            return _Verdict("duplicate", self.duplicates()[line.line_id])
        desc = line.description.upper()
        if "RETURNED" in desc or "NSF" in desc:
            return _Verdict("returned", self.returns().get(line.line_id))
        if line.amount < 0:
            debits: tuple[VerdictKind, ...] = ("payment", "refund")
            for kind in debits:
                doc = self.clerk.documents(kind).get(line.reference.strip())
                if doc is not None and int(doc["total"]) == -line.amount:
                    return _Verdict(kind, doc["doc_id"])
            if "CHARGE" in desc or "FEE" in desc:
                return _Verdict("fee")
            return _Verdict("unknown")
        if "INTEREST" in desc:
            return _Verdict("interest")
        return _Verdict("deposit", customer_id=self._payer(line))

    def _payer(self, line: BankLine) -> str | None:
        """A deposit's customer: its payer's registered name, or the payout advice's."""
        customer = self.clerk.customer_named(line.counterparty)
        payout = _PAYOUT.search(line.reference)
        if customer is None and payout and payout[1] in self.payouts:
            customer = self.clerk.customer_named(self.payouts[payout[1]].customer)
        return customer

    def _receipt_payer(self, r: _Receipt) -> str | None:
        """The payer of a receipt the feed could not name (its bank cut or upper-cased the
        name): the customer its statement line's payer name is; a cut name several
        customers' names begin with, the one of them whose invoice the reference quotes."""
        row = self.clerk.lines().get(r.line_id or "")
        if row is None:
            return None
        line = self.clerk.bank_line(row)
        found = self._payer(line)
        cut = _cash_application().plain_name(line.counterparty)
        if found is not None or not cut:
            return found
        invoices = self.clerk.documents("invoice")
        quoted = {invoices[i]["party"] for i in self.invoices_quoted(r.reference)
                  if i in invoices}
        begin = {cid for plain, cid in self.clerk.customer_plain if plain.startswith(cut)}
        both = quoted & begin
        return both.pop() if len(both) == 1 else None

    def receipt_plans(self, clerk: _Clerk) -> list[ReceiptPlan]:
        """Place each receipt by its payout advice, remittance advice or reference."""
        invoices = clerk.documents("invoice")
        open_ = {i: int(d["open_amount"]) for i, d in invoices.items()}
        lines = clerk.lines()
        returned = clerk.returned_receipts(self)
        plans = []
        for r in clerk.unapplied_receipts():
            if r.receipt_id in returned:
                continue  # the money came back
            if r.line_id is not None and r.line_id in lines and self.verdict(
                    clerk.bank_line(lines[r.line_id])).kind == "duplicate":
                continue  # the bank posted the line twice: the money came once
            plan = self._place(r, invoices, open_)
            if plan is not None and plan.applications:
                plans.append(plan)
        return plans

    def _place(self, r: _Receipt, invoices: Mapping[str, Mapping[str, Any]],
               open_: dict[str, int]) -> ReceiptPlan | None:
        payout = _PAYOUT.search(r.reference)
        if payout and payout[1] in self.payouts:
            p = self.payouts[payout[1]]
            inv = invoices.get(p.invoice_id)
            customer = inv["party"] if inv is not None else None
            if customer is None or (r.customer_id or customer) != customer or (
                    self.clerk.customer_named(p.customer) not in (None, customer)):
                return None
            apps = plan_applications(r, [(p.invoice_id, p.net, p.fee)], invoices, open_,
                                     customer)
            return ReceiptPlan(r.receipt_id, customer if r.customer_id is None else None,
                               tuple(apps))
        wanted: list[tuple[str, int | None, int]] = []
        advice = _ADVICE.search(r.reference)
        customer = r.customer_id
        if advice and advice[1] in self.advices:
            rows = self.advices[advice[1]]
            wanted = [(inv, amount, 0) for _, inv, amount in rows]
            customer = customer or self.clerk.customer_named(rows[0][0])
        else:
            wanted = [(inv, None, 0) for inv in self.invoices_quoted(r.reference)]
        if customer is None:
            customer = self._receipt_payer(r)
        if customer is None:
            return None
        reason = CARD_FEE
        if len(wanted) == 1 and (_WIRE.search(r.description.upper()) or "/RFB/" in r.reference):
            inv_id = wanted[0][0]
            inv = invoices.get(inv_id)
            short = open_.get(inv_id, 0) - r.open
            if inv is not None and 0 < short <= pct_of(int(inv["total"]), WIRE_CHARGES_BP):
                wanted, reason = [(inv_id, r.open, short)], WIRE_CHARGES
        apps = plan_applications(r, wanted, invoices, open_, customer, reason)
        if not apps and all(inv in invoices and invoices[inv]["party"] != customer
                            for inv, _, _ in wanted):
            # No reference, or only other customers' invoices (quoted by mistake): the
            # payer's own open invoice of exactly this amount, if it has one.
            same = [i for i, d in invoices.items()
                    if d["party"] == customer and open_.get(i, 0) == r.open]
            if len(same) == 1:
                apps = plan_applications(r, [(same[0], r.open, 0)], invoices, open_, customer)
        return ReceiptPlan(r.receipt_id, customer if r.customer_id is None else None,
                           tuple(apps))

    def bills(self, clerk: _Clerk) -> list[BillDoc]:
        """The bills of the papers, less resends of a bill already entered or read."""
        seen = {(v, number_key(n)) for v, n in clerk.bills_entered()}
        reformatted = {(d["party"], _number_digits(d["reference"] or ""), int(d["total"]))
                       for d in clerk.bills_entered().values()}
        out = []
        for text, sender in self._bills:
            bill = self._bill(text, sender)
            if bill is None:
                continue
            key = (bill.vendor_id, number_key(bill.number))
            near = (bill.vendor_id, _number_digits(bill.number), bill.total)
            if key in seen or near in reformatted:
                continue
            seen.add(key)
            reformatted.add(near)
            out.append(bill)
        return out

    def credits(self) -> list[CreditDoc]:
        """The credit notes of the papers."""
        return [note for note in map(self._credit, self._credits) if note is not None]


@functools.cache
def _cash_application() -> ModuleType:
    """cash-application's solver, whose reading of payer names, invoice numbers, PDFs and
    text remittances this clerk shares (loaded from its folder beside this one)."""
    from scenarios.solvers import load_solver  # not scenarios.agents: it brings the graders

    return load_solver(Path(__file__).resolve().parent.parent / "cash-application" /
                       "solver.py")


@functools.lru_cache(maxsize=4096)
def _email_text(raw: str) -> tuple[str, str]:
    """An email's sender display name and its plain-text body (parsed once per content a
    process: the archive's emails are read again at every turn)."""
    msg = message_from_string(raw, policy=policy.default)
    name, _ = parseaddr(str(msg.get("From", "")))
    if isinstance(msg, EmailMessage):
        part = msg.get_body(preferencelist=("plain",))
        if part is not None:
            return name, str(part.get_content())
    payload = msg.get_payload(decode=True)
    return name, payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""


def _bank_statement(name: str, rows: list[dict[str, str]]) -> Statement | None:
    """A bank statement CSV: opening and closing rows around the month's lines."""
    opening = next((r for r in rows if r["description"].strip() == "OPENING BALANCE"), None)
    closing = next((r for r in rows if r["description"].strip() == "CLOSING BALANCE"), None)
    if opening is None or closing is None:
        return None
    lines = tuple(BankLine(r["line_id"].strip(), date.fromisoformat(r["date"].strip()),
                           parse_cents(r["amount"]), r["description"].strip(),
                           r["reference"].strip(), r["counterparty"].strip())
                  for r in rows if r["line_id"].strip())
    start = date.fromisoformat(opening["date"].strip())
    return Statement(name=name, period=f"{start:%Y-%m}", start=start,
                     closing=parse_cents(closing["balance"]), lines=lines)


def _next_weekday(day: date) -> date:
    d = day + timedelta(days=1)
    while d.weekday() >= 5:
        d += timedelta(days=1)
    return d


def _last_turn(desk: TurnContext) -> bool:
    """Whether the prompt says this is the last turn (``turn N of N``)."""
    try:
        m = _TURN.search(desk.prompt_file.read_text(encoding="utf-8"))
    except OSError:
        return False
    return m is not None and m[1] == m[2]


def reference(desk: TurnContext) -> None:
    """Close the month from the workspace's files and the books."""
    clerk = _Clerk(desk)
    if desk.role == "controller":
        closing_turn(clerk, Reference(desk, clerk))
    else:
        close_turn(clerk, Reference(desk, clerk))


# --- the oracle: the world's truth -------------------------------------------------------------


class _Truth:
    """The world's bank lines, payments and bills, read forward: each turn reads only the
    world events appended since the last turn's reading (a ``LogCursor``: up to the head
    read first, so a stretch without such events is not read again)."""

    def __init__(self) -> None:
        from sim.world import LogCursor
        from sim.world_events import BankLinePosted, BillIssued, PaymentSent

        self._cursor = LogCursor(["bank_line_posted", "payment_sent", "bill_issued"],
                                 realm="world")
        self.lines: dict[str, BankLinePosted] = {}
        self.payments: dict[str, PaymentSent] = {}
        self.bills_issued: dict[tuple[str, str], BillIssued] = {}

    def advance(self, store: EventStore) -> None:
        """Read the world events appended since the last call."""
        from sim.world_events import BankLinePosted, BillIssued, PaymentSent, decode_world_event

        for e in self._cursor.read(store):
            x = decode_world_event(e.type, e.payload)
            if isinstance(x, BankLinePosted):
                self.lines[x.line_id] = x
            elif isinstance(x, PaymentSent):
                self.payments[x.payment_id] = x
            elif isinstance(x, BillIssued):
                self.bills_issued[(x.vendor_id, x.bill_ref)] = x


_TRUTH: weakref.WeakKeyDictionary[World, _Truth] = weakref.WeakKeyDictionary()


def _truth(world: World) -> _Truth:
    """The world's truth, advanced to the log's head (kept while the world lives)."""
    found = _TRUTH.get(world)
    if found is None:
        found = _TRUTH[world] = _Truth()
    found.advance(world.ledger.store)
    return found


class Oracle:
    """Decides the same work from the world's truth."""

    def __init__(self, desk: TurnContext, clerk: _Clerk, world: World) -> None:
        self.clerk = clerk
        self.world = world
        now = desk.sim_time if desk.sim_time is not None else float("inf")
        self.docs = [(t, d) for t, d in world.inbox if t < now]
        truth = _truth(world)
        self.lines = truth.lines
        self.payments = truth.payments
        self.bills_issued = truth.bills_issued
        self.month_end = world.calendar.is_last_business_day_of_month(desk.day)
        self.period = f"{desk.day:%Y-%m}"
        self._verdicts: dict[str, _Verdict] = {}
        """Each known line's verdict (the world stands still during the turn)."""

    def statement(self) -> Statement | None:
        """The bank's statement of this month, from its truth."""
        for _, doc in self.docs:
            t = doc.truth
            if (doc.kind == "statement" and t.get("bank_account_id") == self.clerk.bank_account_id
                    and t.get("period") == self.period):
                lines = tuple(self._line(self.lines[i]) for i in t["line_ids"])
                start = max(date.fromisoformat(f"{self.period}-01"), self.world.calendar.start)
                return Statement(name=doc.filename, period=self.period, start=start,
                                 closing=int(t["closing"]), lines=lines)
        return None

    @staticmethod
    def _line(x: Any) -> BankLine:
        return BankLine(x.line_id, x.posted_on, x.amount, x.description, x.reference,
                        x.counterparty)

    def _bank_copy(self, x: Any) -> bool:
        """A second copy of a line the bank posted (not a customer's second payment)."""
        original = self.lines.get(x.duplicate_of) if x.duplicate_of else None
        return original is not None and original.source == x.source

    def verdict(self, line: BankLine) -> _Verdict:
        """What the bank's own record says the line is (worked out once a line)."""
        found = self._verdicts.get(line.line_id)
        if found is None:
            found = self._verdict(line)
            if found.kind != "unknown":
                self._verdicts[line.line_id] = found
        return found

    def _verdict(self, line: BankLine) -> _Verdict:
        x = self.lines.get(line.line_id)
        if x is None:
            return _Verdict("unknown")
        if x.kind == "deposit":
            if self._bank_copy(x):
                return _Verdict("duplicate", x.duplicate_of)
            p = self.payments.get(x.source or "")
            return _Verdict("deposit", customer_id=p.customer_id if p else None)
        if x.kind in ("payment", "refund"):
            return _Verdict(x.kind, x.source)
        if x.kind == "returned":
            original = next((d.line_id for d in self.lines.values() if d.kind == "deposit"
                             and d.source == x.source and d.duplicate_of is None), None)
            return _Verdict("returned", original)
        if x.kind in ("fee", "interest"):
            return _Verdict(x.kind)
        return _Verdict("unknown")

    def receipt_plans(self, clerk: _Clerk) -> list[ReceiptPlan]:
        """Apply each receipt as its payment meant, the processor's fee accepted."""
        invoices = clerk.documents("invoice")
        open_ = {i: int(d["open_amount"]) for i, d in invoices.items()}
        returned = clerk.returned_receipts(self)
        bounced = {x.source for x in self.lines.values() if x.kind == "returned"}
        plans = []
        for r in clerk.unapplied_receipts():
            x = self.lines.get(r.line_id or "")
            if x is None or x.kind != "deposit" or self._bank_copy(x) or r.receipt_id in returned:
                continue
            p = self.payments.get(x.source or "")
            if p is None or (p.duplicate_of is not None and p.duplicate_of not in bounced):
                continue  # a payment sent twice: the second stays unapplied (unless the
                # first came back unpaid)
            if r.customer_id not in (None, p.customer_id):
                continue
            shortfall = p.amount - p.arrives
            wanted = []
            for a in p.allocations:
                fee = min(shortfall, a.amount)
                shortfall -= fee
                wanted.append((a.doc_id, a.amount - fee, fee))
            apps = plan_applications(r, wanted, invoices, open_, p.customer_id,
                                     WIRE_CHARGES if p.method == "wire" else CARD_FEE)
            if apps:
                plans.append(ReceiptPlan(r.receipt_id,
                                         p.customer_id if r.customer_id is None else None,
                                         tuple(apps)))
        return plans

    def bills(self, clerk: _Clerk) -> list[BillDoc]:
        """Every bill the vendors issued and sent, less their resends (a price over the
        quote is entered and held unapproved)."""
        out, seen = [], set()
        for _, doc in self.docs:
            t = doc.truth
            if t.get("kind") not in ("original", "price_variance") or "bill_ref" not in t:
                continue
            b = self.bills_issued.get((t["vendor_id"], t["bill_ref"]))
            if b is None or (b.vendor_id, b.bill_ref) in seen:
                continue
            seen.add((b.vendor_id, b.bill_ref))
            out.append(BillDoc(b.vendor_id, b.invoice_number, b.issued_on, b.due_on,
                               tuple((x.description, x.quantity * x.unit_price)
                                     for x in b.lines),
                               approve=b.kind == "original"))
        return out

    def credits(self) -> list[CreditDoc]:
        """Every credit note the vendors sent."""
        return [CreditDoc(d.truth["vendor_id"], d.truth["credit_number"],
                          self.world.calendar.date_at(t), int(d.truth["amount"]),
                          d.truth.get("for_invoice_number"))
                for t, d in self.docs if d.kind == "credit_note"]


def oracle(desk: TurnContext, world: World) -> None:
    """Close the month from the world's truth."""
    clerk = _Clerk(desk)
    if desk.role == "controller":
        closing_turn(clerk, Oracle(desk, clerk, world))
    else:
        close_turn(clerk, Oracle(desk, clerk, world))
