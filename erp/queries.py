"""Read-side queries over the projection tables, each answerable as of a date or position.

``as_of`` filters by accounting date (the document's date); ``position`` by log
position (the books exactly as they were after that event). Amounts are cents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from erp.events import AccountOpened, AssetClassDefined
from erp.projections import _status
from erp.store import EventStore

AGING_BUCKETS = ("current", "1-30", "31-60", "61-90", "over_90")


@dataclass(frozen=True, slots=True)
class Account:
    """A chart-of-accounts entry."""

    code: str
    name: str
    account_type: str
    normal_side: str
    control: str | None


@dataclass(frozen=True, slots=True)
class TrialBalanceRow:
    """One account's debit or credit balance."""

    account: str
    name: str
    account_type: str
    debit: int
    credit: int

    @property
    def balance(self) -> int:
        """Signed balance, debit positive."""
        return self.debit - self.credit


@dataclass(frozen=True, slots=True)
class OpenItem:
    """A document with an open balance in a subledger."""

    doc_kind: str
    doc_id: str
    party: str | None
    account: str
    doc_date: str | None
    due_on: str | None
    open_amount: int


@dataclass(frozen=True, slots=True)
class AgingRow:
    """One party's open balance split into aging buckets."""

    party: str
    buckets: tuple[int, int, int, int, int]

    @property
    def total(self) -> int:
        """The party's whole open balance."""
        return sum(self.buckets)


@dataclass(frozen=True, slots=True)
class ControlTie:
    """A control account's GL balance against its subledger total."""

    account: str
    name: str
    control: str
    gl_balance: int
    subledger_total: int

    @property
    def difference(self) -> int:
        """GL minus subledger, in the account's natural sign."""
        return self.gl_balance - self.subledger_total


def _where(as_of: date | None, position: int | None, date_col: str = "entry_date",
           pos_col: str = "position") -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if as_of is not None:
        clauses.append(f"{date_col} <= ?")
        params.append(as_of.isoformat())
    if position is not None:
        clauses.append(f"{pos_col} <= ?")
        params.append(position)
    return (" AND ".join(clauses) or "1=1"), params


def _rows(store: EventStore, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> list[Any]:
    """The rows of a query, as the driver's plain tuples (its own cursor: SQLAlchemy's
    result rows cost as much as reading them on the tables agents read every step)."""
    with store.engine.connect() as conn:
        cur = store.cursor(conn)
        try:
            cur.execute(store.sql(sql), tuple(params))
            return list(cur.fetchall())
        finally:
            cur.close()


def chart(store: EventStore, position: int | None = None) -> dict[str, Account]:
    """The chart of accounts by code."""
    out: dict[str, Account] = {}
    for e in store.read(types=["account_opened"], until=position):
        a: AccountOpened = e.event
        out[a.code] = Account(a.code, a.name, a.account_type, a.normal_side, a.control)
    return out


def trial_balance(store: EventStore, *, as_of: date | None = None,
                  position: int | None = None) -> list[TrialBalanceRow]:
    """Every account with a balance, from the GL lines, as of a date or position."""
    where, params = _where(as_of, position)
    rows = _rows(store, f"SELECT account, SUM(amount) FROM gl_lines WHERE {where} "
                        "GROUP BY account ORDER BY account", params)
    accounts = chart(store)
    out = []
    for account, total in rows:
        total = int(total)
        if total == 0:
            continue
        a = accounts.get(account)
        out.append(TrialBalanceRow(account, a.name if a else "?", a.account_type if a else "?",
                                   max(total, 0), max(-total, 0)))
    return out


def account_balance(store: EventStore, account: str, *, as_of: date | None = None,
                    position: int | None = None) -> int:
    """One account's GL balance, debit positive."""
    where, params = _where(as_of, position)
    rows = _rows(store, f"SELECT COALESCE(SUM(amount), 0) FROM gl_lines WHERE account = ? "
                        f"AND {where}", [account, *params])
    return int(rows[0][0])


def open_items(store: EventStore, ledger: str, *, as_of: date | None = None,
               position: int | None = None, party: str | None = None) -> list[OpenItem]:
    """Documents with an open balance in a subledger (``ar``, ``ap``, ``unapplied_cash``)."""
    where, params = _where(as_of, position, "s.entry_date", "s.position")
    party_sql = ""
    if party is not None:
        party_sql = " AND d.party = ?"
        params.append(party)
    rows = _rows(store, f"""
        SELECT s.doc_kind, s.doc_id, d.party, s.account, d.doc_date, d.due_on, SUM(s.amount)
        FROM subledger s JOIN documents d ON d.kind = s.doc_kind AND d.doc_id = s.doc_id
        WHERE s.ledger = ? AND {where}{party_sql}
        GROUP BY s.doc_kind, s.doc_id, d.party, s.account, d.doc_date, d.due_on
        HAVING SUM(s.amount) <> 0
        ORDER BY d.party IS NULL, d.party, d.due_on IS NULL, d.due_on, s.doc_id""",
                 [ledger, *params])  # NULLs last on both backends (SQLite sorts them first)
    items = [OpenItem(k, i, p, a, dd, due, int(t)) for k, i, p, a, dd, due, t in rows]
    if ledger == "unapplied_cash" and (as_of is not None or position is not None):
        # A receipt's customer can be named after it was recorded: as of an earlier
        # moment, take the party its history had then.
        where, params = _where(as_of, position)
        then: dict[str, str | None] = {}
        for doc_id, who in _rows(store, f"SELECT doc_id, party FROM doc_history WHERE "
                                        f"kind = 'receipt' AND {where} ORDER BY position",
                                 params):
            then[doc_id] = who
        items = [i if i.doc_kind != "receipt" else OpenItem(
            i.doc_kind, i.doc_id, then.get(i.doc_id, i.party), i.account, i.doc_date, i.due_on,
            i.open_amount) for i in items]
        if party is not None:
            items = [i for i in items if i.party == party]
    return items


def aging(store: EventStore, ledger: str, *, as_of: date,
          position: int | None = None) -> list[AgingRow]:
    """Open balances per party in buckets of days past due, as of a date."""
    per_party: dict[str, list[int]] = {}  # five buckets each
    for item in open_items(store, ledger, as_of=as_of, position=position):
        days = (as_of - date.fromisoformat(item.due_on)).days if item.due_on else 0
        bucket = sum(days > limit for limit in (0, 30, 60, 90))  # current, 1-30, ..., over 90
        row = per_party.setdefault(item.party or "(none)", [0, 0, 0, 0, 0])
        row[bucket] += item.open_amount
    return [AgingRow(p, (b[0], b[1], b[2], b[3], b[4])) for p, b in sorted(per_party.items())]


def subledger_totals(store: EventStore, *, as_of: date | None = None,
                     position: int | None = None) -> dict[tuple[str, str], int]:
    """Total of each subledger per control account: ``{(ledger, account): cents}``."""
    where, params = _where(as_of, position)
    rows = _rows(store, f"SELECT ledger, account, SUM(amount) FROM subledger WHERE {where} "
                        "GROUP BY ledger, account", params)
    return {(ledger, account): int(t) for ledger, account, t in rows}


_SIGN = {"ar": 1, "bank": 1, "ap": -1, "unapplied_cash": -1}


def control_ties(store: EventStore, *, as_of: date | None = None,
                 position: int | None = None) -> list[ControlTie]:
    """Every control account's GL balance against its own subledger's total.

    Both are in the account's natural sign (AR and bank as debits, AP and
    unapplied cash as credits).
    """
    sub = subledger_totals(store, as_of=as_of, position=position)
    out = []
    for a in chart(store, position).values():
        if a.control is None:
            continue
        gl = account_balance(store, a.code, as_of=as_of, position=position) * _SIGN[a.control]
        out.append(ControlTie(a.code, a.name, a.control, gl, sub.get((a.control, a.code), 0)))
    return out


# --- accruals and prepaids -------------------------------------------------------


def prepaid_ties(store: EventStore, *, as_of: date | None = None,
                 position: int | None = None) -> list[ControlTie]:
    """Every prepaid account's GL balance against its schedules' unamortized remainder.

    A prepaid account is one a prepaid schedule names; both sides are debits. A bill's
    line on it that no schedule covers shows as a difference.
    """
    sub = subledger_totals(store, as_of=as_of, position=position)
    accounts = chart(store, position)
    return [ControlTie(code, accounts[code].name, "prepaid",
                       account_balance(store, code, as_of=as_of, position=position), total)
            for (ledger, code), total in sorted(sub.items()) if ledger == "prepaid"]

# --- fixed assets ----------------------------------------------------------------


def fixed_asset_ties(store: EventStore, *, as_of: date | None = None,
                     position: int | None = None) -> list[ControlTie]:
    """Every asset class's cost and accumulated-depreciation accounts' GL balances against
    the fixed-asset subledger (debit positive: accumulated depreciation is negative).

    The accounts are those of the classes defined; an entry on one that is no asset's (a
    journal straight to the cost account) shows as a difference.
    """
    sub = subledger_totals(store, as_of=as_of, position=position)
    accounts = chart(store, position)
    codes: dict[str, str] = {}
    for e in _asset_classes(store, position):
        codes[e.cost_account] = "fixed_asset"
        codes[e.accumulated_account] = "accumulated_depreciation"
    return [ControlTie(code, accounts[code].name, ledger,
                       account_balance(store, code, as_of=as_of, position=position),
                       sub.get((ledger, code), 0))
            for code, ledger in sorted(codes.items())]


def _asset_classes(store: EventStore, position: int | None) -> list[AssetClassDefined]:
    """The asset classes defined (up to ``position``)."""
    return [e.event for e in store.read(types=["asset_class_defined"], until=position)]


def document(store: EventStore, kind: str, doc_id: str, *, as_of: date | None = None,
             position: int | None = None) -> dict[str, Any] | None:
    """A document's state now, or as it stood at a date or position."""
    rows = _rows(store, "SELECT kind, doc_id, party, account, doc_date, due_on, total, "
                        "open_amount, status, reference, last_position FROM documents "
                        "WHERE kind = ? AND doc_id = ?", [kind, doc_id])
    if not rows:
        return None
    keys = ("kind", "doc_id", "party", "account", "doc_date", "due_on", "total", "open_amount",
            "status", "reference", "last_position")
    doc = dict(zip(keys, rows[0], strict=True))
    if as_of is not None or position is not None:
        where, params = _where(as_of, position)
        hist = _rows(store, f"SELECT status, open_amount, position, party FROM doc_history "
                            f"WHERE kind = ? AND doc_id = ? AND {where} "
                            "ORDER BY position DESC LIMIT 1", [kind, doc_id, *params])
        if not hist:
            return None
        doc.update(status=hist[0][0], open_amount=int(hist[0][1]), last_position=hist[0][2],
                   party=hist[0][3])
        if as_of is not None and kind in _OPEN_FROM:
            # History rows hold the state after each event in log order, so an event dated
            # before one already logged carries the later one's effect: sum dated movements.
            ledger, sign = _OPEN_FROM[kind]
            moved = _rows(store, f"SELECT COALESCE(SUM(amount), 0) FROM subledger WHERE "
                                 f"ledger = ? AND doc_kind = ? AND doc_id = ? AND {where}",
                          [ledger, kind, doc_id, *params])
            open_ = sign * int(moved[0][0])
            if open_ != doc["open_amount"]:
                doc.update(open_amount=open_, status=_status(kind, doc["total"], open_,
                                                             doc["status"] != "entered"))
    return doc


_OPEN_FROM = {"invoice": ("ar", 1), "receipt": ("unapplied_cash", 1), "bill": ("ap", 1),
              "vendor_credit": ("ap", -1)}
"""Kinds whose open amount is the sum of their subledger movements (ledger, sign)."""


def documents(store: EventStore, kind: str | None = None, status: str | None = None,
              party: str | None = None, *,
              changed_after: int | None = None) -> list[dict[str, Any]]:
    """Current documents, filtered by kind, status and party (and with ``changed_after``,
    only those an event after that log position made or changed: a reader that keeps the
    rows it read brings them up to date with these)."""
    clauses, params = [], []
    for col, val in (("kind", kind), ("status", status), ("party", party),
                     ("last_position", changed_after)):
        if val is not None:
            clauses.append(f"{col} > ?" if col == "last_position" else f"{col} = ?")
            params.append(val)
    where = " AND ".join(clauses) or "1=1"
    keys = ("kind", "doc_id", "party", "account", "doc_date", "due_on", "total", "open_amount",
            "status", "reference", "last_position")
    rows = _rows(store, f"SELECT {', '.join(keys)} FROM documents WHERE {where} "
                        "ORDER BY kind, doc_id", params)
    return [dict(zip(keys, r, strict=True)) for r in rows]


def count_documents(store: EventStore, kind: str, *, statuses: Sequence[str] | None = None,
                    open_only: bool = False) -> int:
    """How many current documents of a kind there are (in one of ``statuses``; with
    ``open_only``, an open amount above zero), counted by the database."""
    sql = "SELECT COUNT(*) FROM documents WHERE kind = ?"
    params: list[Any] = [kind]
    if statuses is not None:
        if not statuses:
            return 0
        sql += f" AND status IN ({', '.join('?' * len(statuses))})"
        params.extend(statuses)
    if open_only:
        sql += " AND open_amount > 0"
    return int(_rows(store, sql, params)[0][0])


def latest_document_date(store: EventStore, kind: str, *, through: date) -> str | None:
    """The latest document date of a kind on or before ``through`` (ISO), or None."""
    found = _rows(store, "SELECT MAX(doc_date) FROM documents WHERE kind = ? AND "
                         "doc_date IS NOT NULL AND doc_date <= ?", [kind, through.isoformat()])
    return str(found[0][0]) if found and found[0][0] is not None else None


def count_statement_lines(store: EventStore, *, status: str | None = None) -> int:
    """How many statement lines are imported (with ``status``, in that status now)."""
    sql, params = "SELECT COUNT(*) FROM statement_lines", []
    if status is not None:
        sql, params = sql + " WHERE status = ?", [status]
    return int(_rows(store, sql, params)[0][0])


def statement_lines(store: EventStore, *, bank_account_id: str | None = None,
                    unmatched: bool = False, as_of: date | None = None,
                    changed_after: int | None = None) -> list[dict[str, Any]]:
    """Imported statement lines with their match (status as of a date when given; with
    ``changed_after``, only the lines an event after that log position imported or
    changed)."""
    clauses: list[str] = ["1=1"]
    params: list[Any] = []
    if bank_account_id is not None:
        clauses.append("bank_account_id = ?")
        params.append(bank_account_id)
    if changed_after is not None:
        clauses.append("last_position > ?")
        params.append(changed_after)
    if as_of is not None:
        clauses.append("entry_date <= ?")
        params.append(as_of.isoformat())
    keys = ("line_id", "bank_account_id", "entry_date", "amount", "description", "reference",
            "counterparty", "bank_ref", "status", "matched_to", "last_position")
    rows = _rows(store, f"SELECT {', '.join(keys)} FROM statement_lines WHERE "
                        f"{' AND '.join(clauses)} ORDER BY entry_date, line_id", params)
    out = [dict(zip(keys, r, strict=True)) for r in rows]
    if as_of is not None:
        for line in out:
            doc = document(store, "statement_line", line["line_id"], as_of=as_of)
            line["status"] = doc["status"] if doc else line["status"]
    return [x for x in out if not unmatched or x["status"] == "unmatched"]


def audit_trail(store: EventStore, *, actor: str | None = None, after: int = 0,
                as_of: date | None = None, position: int | None = None,
                limit: int | None = None) -> list[dict[str, Any]]:
    """Who did what, when, by which command (erp realm), up to a business date or position."""
    clauses: list[str] = ["position > ?"]
    params: list[Any] = [after]
    if actor is not None:
        clauses.append("actor = ?")
        params.append(actor)
    if as_of is not None:
        clauses.append("business_date <= ?")
        params.append(as_of.isoformat())
    if position is not None:
        clauses.append("position <= ?")
        params.append(position)
    keys = ("position", "business_date", "actor", "role", "command", "causation_id",
            "correlation_id", "type", "stream")
    lim = f" LIMIT {int(limit)}" if limit else ""
    rows = _rows(store, f"SELECT {', '.join(keys)} FROM audit_trail WHERE "
                        f"{' AND '.join(clauses)} ORDER BY position{lim}", params)
    return [dict(zip(keys, r, strict=True)) for r in rows]


def table_snapshot(store: EventStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every read table's rows in a stable order (to compare live tables with a rebuild)."""
    from erp.schema import PROJECTION_TABLES

    out = {}
    for t in PROJECTION_TABLES:
        cols = [c.name for c in t.columns]
        keys = [c.name for c in t.primary_key.columns]
        out[t.name] = [tuple(r) for r in _rows(
            store, f"SELECT {', '.join(cols)} FROM {t.name} ORDER BY {', '.join(keys)}")]
    return out


# --- purchasing: purchase-order lines and the goods-received-not-invoiced accrual ---------


@dataclass(frozen=True, slots=True)
class PurchaseOrderLineRow:
    """A purchase-order line: ordered, received and billed quantities at the PO's price."""

    po_id: str
    vendor_id: str
    line: int
    item: str
    description: str
    ordered: int
    unit_price: int
    account: str
    received: int
    billed: int

    @property
    def to_receive(self) -> int:
        """Quantity ordered and not received yet."""
        return self.ordered - self.received

    @property
    def not_invoiced(self) -> int:
        """Goods received and not billed yet, at the PO's price (negative: billed before
        received): this line's share of the goods-received-not-invoiced accrual."""
        return (self.received - self.billed) * self.unit_price


_PURCHASING_TYPES = ("purchase_order_issued", "goods_received", "bill_matched")


def purchase_order_lines(store: EventStore, *, po_id: str | None = None,
                         vendor_id: str | None = None,
                         position: int | None = None) -> list[PurchaseOrderLineRow]:
    """Every purchase-order line (of one PO or vendor) with what was received and billed,
    folded from the log (erp realm) up to ``position``."""
    from erp.events import BillMatched, GoodsReceived, PurchaseOrderIssued, decode_event

    lines: dict[tuple[str, int], list[Any]] = {}
    for s in store.read(realm="erp", types=_PURCHASING_TYPES, until=position):
        e = decode_event(s.type, s.schema_version, s.payload)
        if isinstance(e, PurchaseOrderIssued):
            for x in e.lines:
                lines[(e.po_id, x.line)] = [e.po_id, e.vendor_id, x.line, x.item,
                                            x.description, x.quantity, x.unit_price, x.account,
                                            0, 0]
        elif isinstance(e, GoodsReceived):
            for r in e.lines:
                lines[(e.po_id, r.line)][8] += r.quantity
        elif isinstance(e, BillMatched):
            for m in e.lines:
                lines[(e.po_id, m.line)][9] += m.quantity
    rows = [PurchaseOrderLineRow(*v) for _, v in sorted(lines.items())]
    return [r for r in rows if (po_id is None or r.po_id == po_id)
            and (vendor_id is None or r.vendor_id == vendor_id)]


def grni_open(store: EventStore, *, position: int | None = None) -> int:
    """Goods received and not invoiced, at PO prices, over every PO line: what the
    goods-received-not-invoiced account's credit balance must be when only goods receipts
    and matched bills post to it."""
    return sum(r.not_invoiced for r in purchase_order_lines(store, position=position))
