"""State checks over the books' read tables (family ``state``).

Every type here answers as of a date and, during per-date control, as of a log
position: a spec's own ``as_of`` when it has one, else the context's ``as_of`` (the
business date being checked), else the scenario's end; ``ctx.position`` (when set)
limits every read to the log as it stood at that position. Amounts are integer cents
inside and decimal strings in specs (``"1234.56"``, quoted in YAML: a float is refused).

| type | passes when |
| --- | --- |
| ``account_balance`` | an account's GL balance (debit-positive) is ``expected`` ± ``tolerance`` |
| ``document_state`` | one document, or all of a kind (of a party), is in one of ``status`` |
| ``no_unapplied_receipts`` | no receipt has open unapplied cash older than N calendar days |
| ``open_items_count`` | the number of open items of a subledger is within bounds |
| ``sql_assert`` | one read-only ``SELECT`` over the read tables gives what ``expect`` says |
| ``period_closed`` | the accounting period holding a date is closed in the books |
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from sqlalchemy.engine import Connection

from checks.context import CheckContext
from checks.registry import CheckResult, CheckSpec, check_type, workspace_path
from erp import queries as q
from erp.errors import MoneyError
from erp.money import display_cents, parse_cents
from erp.store import EventStore

# --- shared helpers (audit.py uses them too) ----------------------------------------------

LISTED = 10
"""How many offenders a detail names before it says "and N more"."""


def rows(store: EventStore, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """Run one of our own statements (``?`` placeholders) on either backend."""
    with store.engine.connect() as conn:
        return list(conn.exec_driver_sql(store.sql(sql), tuple(params)).all())


def listing(items: Sequence[str], limit: int = LISTED) -> str:
    """``a; b; c`` naming at most ``limit`` items, then ``... and N more``."""
    shown = "; ".join(items[:limit])
    return shown + (f"; ... and {len(items) - limit} more" if len(items) > limit else "")


def plural(n: int, word: str) -> str:
    """``1 receipt``, ``3 receipts``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def held_past_its_turn(what: str, arrived: date, written: date, turns: Sequence[date],
                       verb: str = "entered", before_turn: bool = True) -> str | None:
    """The problem of a document the agent first wrote (``written``: the business date of
    its first event) at a later turn than the first of ``turns`` that had it: the turn of
    the day it ``arrived`` when it came ``before_turn`` (the turn's moment of that day),
    else the next one; held to a later turn and dated back. None when it was written by
    that turn, or when no turn came after its arrival."""
    turn = min((t for t in turns if t > arrived or (t == arrived and before_turn)),
               default=None)
    if turn is None or written <= turn:
        return None
    return (f"{what} arrived {arrived} and was {verb} in the turn of {written}, not the "
            f"turn of {turn}")


def bill_not_as_invoiced(what: str, entry_date: str, due_on: str, invoice: dict[str, Any],
                         *, due: bool = True) -> list[str]:
    """How a bill the agent entered (its ``entry_date`` and ``due_on``, ISO dates) differs
    from the vendor's invoice (a ``bill_issued`` payload: ``issued_on``, ``due_on``): dated
    otherwise than invoiced, and with ``due`` due otherwise than the invoice says. Empty
    when it is as invoiced."""
    out = []
    if entry_date != invoice["issued_on"]:
        out.append(f"{what} dated {entry_date}, invoiced {invoice['issued_on']}")
    if due and due_on != invoice["due_on"]:
        out.append(f"{what} due {due_on}, the invoice says {invoice['due_on']}")
    return out


def latest_business_date(ctx: CheckContext) -> date | None:
    """The last business date in the books' log (up to ``ctx.position``), if any."""
    sql = "SELECT MAX(business_date) FROM events WHERE realm = 'erp'"
    params: list[Any] = []
    if ctx.position is not None:
        sql += " AND position <= ?"
        params.append(ctx.position)
    found = rows(ctx.store, sql, params)[0][0]
    return date.fromisoformat(found) if found else None


def effective_date(ctx: CheckContext, explicit: date | None = None) -> date | None:
    """The date a check answers as of: the spec's, the context's, the scenario's end,
    or (without any) the last business date of the log."""
    return explicit or ctx.as_of or ctx.end or latest_business_date(ctx)


def money_string(value: Any) -> str:
    """Validate money written as a decimal string (``"1234.56"``); return it unchanged."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"expected money as a decimal string like '1234.56' (quote it in "
                         f"YAML), not {type(value).__name__}")
    try:
        parse_cents(value)
    except MoneyError as e:
        raise ValueError(str(e)) from None
    return value


def _when(as_of: date | None, position: int | None) -> str:
    parts = [f"as of {as_of.isoformat()}"] if as_of else []
    if position is not None:
        parts.append(f"at log position {position}")
    return " ".join(parts) or "now"


# --- account_balance ------------------------------------------------------------------------

MAX_TOLERANCE = "1.00"


class AccountBalance(CheckSpec):
    """An account's GL balance as of a date equals ``expected`` within ``tolerance``.

    Sign convention: debit-positive, whatever the account's normal side (a liability
    or revenue account with a credit balance of 500.00 has ``expected: "-500.00"``).
    ``tolerance`` is a decimal string from ``"0.00"`` to ``"1.00"``.
    """

    family: ClassVar[str] = "state"
    type: Literal["account_balance"]
    account: str = Field(min_length=1, max_length=32)
    expected: str
    as_of: date | None = None
    tolerance: str = "0.00"

    @field_validator("expected", mode="before")
    @classmethod
    def _expected(cls, v: Any) -> str:
        return money_string(v)

    @field_validator("tolerance", mode="before")
    @classmethod
    def _tolerance(cls, v: Any) -> str:
        cents = parse_cents(money_string(v))
        if not 0 <= cents <= parse_cents(MAX_TOLERANCE):
            raise ValueError(f"tolerance must be between 0.00 and {MAX_TOLERANCE}")
        return str(v)


@check_type(AccountBalance)
def check_account_balance(spec: AccountBalance, ctx: CheckContext) -> CheckResult:
    """Compare an account's GL balance (debit-positive) with the expected amount."""
    as_of = effective_date(ctx, spec.as_of)
    chart = q.chart(ctx.store, ctx.position)
    expected, tol = parse_cents(spec.expected), parse_cents(spec.tolerance)
    if spec.account not in chart:
        return CheckResult("", False, f"account {spec.account} is not in the chart of accounts "
                                      f"{_when(None, ctx.position)}",
                           {"expected_cents": expected})
    balance = q.account_balance(ctx.store, spec.account, as_of=as_of, position=ctx.position)
    diff = balance - expected
    ok = abs(diff) <= tol
    head = (f"{spec.account} {chart[spec.account].name} {_when(as_of, ctx.position)}: "
            f"{display_cents(balance)} (debit-positive), expected {display_cents(expected)}"
            + (f" ± {display_cents(tol)}" if tol else ""))
    detail = head if ok else f"{head}; off by {display_cents(diff)}"
    return CheckResult("", ok, detail, {"balance_cents": balance, "expected_cents": expected,
                                        "difference_cents": diff})


# --- document_state -------------------------------------------------------------------------

DocKind = Literal["invoice", "receipt", "credit_memo", "refund", "bill", "vendor_credit",
                  "payment", "payment_run", "statement_line", "fee", "interest", "journal",
                  "bank_change", "period"]
DocStatus = Literal["open", "partially_paid", "paid", "unapplied", "partially_applied",
                    "applied", "issued", "entered", "approved", "cleared", "completed",
                    "unmatched", "matched", "recorded", "posted", "reversed", "pending",
                    "rejected", "closed"]

STATUSES: dict[str, tuple[str, ...]] = {
    "invoice": ("open", "partially_paid", "paid"),
    "receipt": ("unapplied", "partially_applied", "applied"),
    "credit_memo": ("issued",),
    "refund": ("paid", "cleared"),
    "bill": ("entered", "approved", "partially_paid", "paid"),
    "vendor_credit": ("open", "partially_applied", "applied"),
    "payment": ("paid", "cleared"),
    "payment_run": ("completed",),
    "statement_line": ("unmatched", "matched"),
    "fee": ("recorded", "cleared"),
    "interest": ("recorded", "cleared"),
    "journal": ("posted", "reversed"),
    "bank_change": ("pending", "approved", "rejected"),
    "period": ("open", "closed"),
}
"""The statuses ``erp.projections.DocumentStates`` writes, per document kind."""


class DocumentState(CheckSpec):
    """One document (``id``), several (``ids``), or every document of a ``kind`` (of a
    ``party``) is in one of the ``status`` values (one status or a list).

    Selecting by party uses the document's current party. A selection that finds no
    document fails unless ``allow_empty``; a named document that does not exist (as of
    the date) fails.
    """

    family: ClassVar[str] = "state"
    type: Literal["document_state"]
    kind: DocKind
    id: str | None = Field(default=None, min_length=1)
    ids: tuple[str, ...] | None = Field(default=None, min_length=1)
    party: str | None = Field(default=None, min_length=1)
    status: tuple[DocStatus, ...] = Field(min_length=1)
    as_of: date | None = None
    allow_empty: bool = False

    @field_validator("status", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return (v,) if isinstance(v, str) else v

    @field_validator("status")
    @classmethod
    def _status_of_kind(cls, v: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        kind = info.data.get("kind")
        if kind is None:
            return v
        wrong = [s for s in v if s not in STATUSES[kind]]
        if wrong:
            raise ValueError(f"no {kind} is ever {' or '.join(map(repr, wrong))}; its statuses "
                             f"are: {', '.join(STATUSES[kind])}")
        return v

    @model_validator(mode="after")
    def _selector(self) -> DocumentState:
        if self.id is not None and self.ids is not None:
            raise ValueError("give id or ids, not both")
        if self.party is not None and (self.id is not None or self.ids is not None):
            raise ValueError("party selects documents by their party: give it without id/ids")
        return self


def _doc_at(store: EventStore, kind: str, doc_id: str, as_of: date | None,
            position: int | None) -> dict[str, Any] | None:
    return q.document(store, kind, doc_id, as_of=as_of, position=position)


def _describe_doc(d: dict[str, Any]) -> str:
    bits = [str(d["status"])]
    if d["kind"] in ("invoice", "receipt", "bill", "vendor_credit"):
        bits.append(f"open {display_cents(int(d['open_amount']))} "
                    f"of {display_cents(int(d['total']))}")
    if d.get("party"):
        bits.append(str(d["party"]))
    return f"{d['doc_id']} ({', '.join(bits)})"


@check_type(DocumentState)
def document_state(spec: DocumentState, ctx: CheckContext) -> CheckResult:
    """Check that the selected documents are in one of the expected statuses."""
    as_of, pos = spec.as_of or ctx.as_of, ctx.position
    wanted = " or ".join(spec.status)
    docs: list[dict[str, Any]] = []
    missing: list[str] = []
    if spec.id is not None or spec.ids is not None:
        for doc_id in (spec.id,) if spec.id is not None else spec.ids or ():
            d = _doc_at(ctx.store, spec.kind, doc_id, as_of, pos)
            if d is None:
                missing.append(f"{doc_id} (no such {spec.kind})")
            else:
                docs.append(d)
        what = f"{spec.kind} {', '.join((spec.id,) if spec.id else spec.ids or ())}"
    else:
        current = q.documents(ctx.store, kind=spec.kind, party=spec.party)
        if as_of is None and pos is None:
            docs = current
        else:
            found = (_doc_at(ctx.store, spec.kind, d["doc_id"], as_of, pos) for d in current)
            docs = [d for d in found if d is not None]
        what = f"every {spec.kind}" + (f" of {spec.party}" if spec.party else "")
    when = _when(as_of, pos)
    wrong = [_describe_doc(d) for d in docs if d["status"] not in spec.status]
    metrics = {"documents": len(docs), "wrong": len(wrong), "missing": len(missing)}
    if not docs and not missing:
        ok = spec.allow_empty
        return CheckResult("", ok, f"{what}: no document found {when}"
                           + ("" if ok else " (nothing to be " + wanted + ")"), metrics)
    if wrong or missing:
        bad = missing + wrong
        return CheckResult("", False, f"{len(bad)} of {len(docs) + len(missing)} "
                                      f"{spec.kind}(s) not {wanted} {when}: {listing(bad)}",
                           metrics)
    return CheckResult("", True, f"{what}: all {plural(len(docs), spec.kind)} {wanted} {when}",
                       metrics)


# --- no_unapplied_receipts ------------------------------------------------------------------


class NoUnappliedReceipts(CheckSpec):
    """No receipt keeps open (unapplied) cash for more than ``older_than_days`` days.

    Age is counted in calendar days from the receipt's date to the date checked (a
    receipt of Friday is 3 days old on Monday): the books alone decide it, without the
    scenario's holidays. A partially applied receipt counts (its open part is unapplied
    cash). ``except_listed_in`` names a workspace CSV (e.g. ``out/unapplied.csv``) whose
    ``column`` lists receipts left unapplied on purpose, each by receipt id or by the
    id of the bank statement line it is matched to; with ``reason_column`` (default
    ``reason``) only rows with a non-blank reason exempt.

    ``each_turn`` judges it at the end of every agent turn instead of once: the books as
    the turn left them (:func:`end_of_turn`), ages counted to the turn's date and
    ``except_listed_in`` as that turn's workspace holds it. A receipt the clerk could see
    at a turn (with ``older_than_days: 0``, any recorded before the turn's day) and left
    unapplied over it, unlisted, fails even when a later turn applied it (a cent held to
    the next day, an application put off a turn and dated honestly). With
    ``listed_stays_unapplied`` a turn's row exempts only unapplied cash that no later turn
    applies: where every paper that places a payment reaches the clerk before its deposit
    (cash-application), a receipt listed at a turn and applied at a later one could have
    been applied when it was listed.
    """

    family: ClassVar[str] = "state"
    type: Literal["no_unapplied_receipts"]
    older_than_days: int = Field(ge=0, le=3660)
    except_listed_in: str | None = None
    column: str = Field(default="line_id", min_length=1)
    reason_column: str | None = Field(default="reason", min_length=1)
    as_of: date | None = None
    each_turn: bool = False
    listed_stays_unapplied: bool = False

    @field_validator("except_listed_in")
    @classmethod
    def _relative(cls, v: str | None) -> str | None:
        return None if v is None else workspace_path(v)

    def reads_workspace(self) -> bool:
        """It reads the agent's list of ``except_listed_in``, when given."""
        return self.except_listed_in is not None

    @model_validator(mode="after")
    def _turns(self) -> NoUnappliedReceipts:
        if self.each_turn and (self.daily or self.as_of is not None):
            raise ValueError("each_turn judges every turn's end: not with daily or as_of")
        if self.listed_stays_unapplied and not (self.each_turn and self.except_listed_in):
            raise ValueError("listed_stays_unapplied judges each turn's list: give each_turn "
                             "and except_listed_in")
        return self


def read_listed(ctx: CheckContext, rel: str, column: str,
                reason_column: str | None) -> tuple[set[str], str]:
    """Values of ``column`` in a workspace CSV (rows with a reason, when asked), and a note
    saying why none could be read (empty when the file was read)."""
    try:
        path = ctx.file(rel)
    except FileNotFoundError as e:
        return set(), f"{e}; no receipt is exempt"
    if not path.is_file():
        return set(), f"{rel} does not exist; no receipt is exempt"
    try:
        text = path.read_text(encoding="utf-8-sig")
        reader = csv.DictReader(io.StringIO(text))
        header = {(h or "").strip().casefold(): h for h in reader.fieldnames or ()}
        records = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        return set(), f"{rel} cannot be read ({e}); no receipt is exempt"
    key = header.get(column.casefold())
    if key is None:
        return set(), f"{rel} has no column {column!r}; no receipt is exempt"
    why = None
    if reason_column is not None:
        why = header.get(reason_column.casefold())
        if why is None:
            return set(), f"{rel} has no column {reason_column!r}; no receipt is exempt"
    out = set()
    for r in records:
        value = (r.get(key) or "").strip()
        if value and (why is None or (r.get(why) or "").strip()):
            out.add(value)
    return out, ""


def receipt_lines(store: EventStore) -> dict[str, list[str]]:
    """Receipt id -> the statement lines it is matched to."""
    out: dict[str, list[str]] = {}
    for line_id, matched in rows(store, "SELECT line_id, matched_to FROM statement_lines"):
        for kind, doc_id, *_ in json.loads(matched or "[]"):
            if kind == "receipt":
                out.setdefault(doc_id, []).append(line_id)
    return out


def end_of_turn(ctx: CheckContext, day: date) -> int | None:
    """The log position when the agent's turn of ``day`` ended: its last write that day,
    or (it wrote nothing) the last event before that day."""
    found = rows(ctx.store, "SELECT MAX(position) FROM events WHERE business_date = ? AND "
                            "actor LIKE 'agent:%'", [day.isoformat()])
    if found and found[0][0] is not None:
        return int(found[0][0])
    before = rows(ctx.store, "SELECT MAX(position) FROM events WHERE business_date < ?",
                  [day.isoformat()])
    return int(before[0][0]) if before and before[0][0] is not None else None


def end_of_day(ctx: CheckContext, day: date) -> int | None:
    """The log position at the end of business date ``day`` within the context's position:
    its last event, what the counterparties did after the agent's turn that day included
    (None when nothing was recorded by then)."""
    sql = "SELECT MAX(position) FROM events WHERE business_date <= ?"
    params: list[Any] = [day.isoformat()]
    if ctx.position is not None:
        sql += " AND position <= ?"
        params.append(ctx.position)
    found = rows(ctx.store, sql, params)
    return int(found[0][0]) if found and found[0][0] is not None else None


def turn_contexts(ctx: CheckContext, days: Iterable[date] | None = None, *,
                  day_end: bool = False) -> Iterator[tuple[date, CheckContext]]:
    """Each agent turn's date with the context as that turn left things, for the checks
    that judge every turn (``each_turn``, ``at_turns``...): the files of the turn's own
    workspace (:meth:`CheckContext.for_turn`, with a cache of its own) and ``position`` the
    log's when the turn ended (:func:`end_of_turn`), never past the context's own position
    (with none there, the context's).

    ``days``: the turns to judge, in the order given (each a date of ``ctx.turn_dates``);
    by default every turn's date once, in date order, up to the context's ``as_of`` when
    it has one. ``day_end``: the position at the end of the turn's business date instead
    (:func:`end_of_day`: what the counterparties did after the turn that day included); a
    date with nothing recorded by then is skipped.
    """
    if days is None:
        days = [d for d in sorted(set(ctx.turn_dates)) if ctx.as_of is None or d <= ctx.as_of]
    for day in days:
        if day_end:
            position = end_of_day(ctx, day)
            if position is None:
                continue
        else:
            position = end_of_turn(ctx, day)
            if ctx.position is not None:
                position = ctx.position if position is None else min(position, ctx.position)
        yield day, replace(ctx.for_turn(day), position=position)


@check_type(NoUnappliedReceipts)
def no_unapplied_receipts(spec: NoUnappliedReceipts, ctx: CheckContext) -> CheckResult:
    """List receipts whose unapplied cash is older than the limit and not exempt."""
    if spec.each_turn:
        return _unapplied_each_turn(spec, ctx)
    as_of = effective_date(ctx, spec.as_of)
    offenders, exempt, items, note = _unapplied_offenders(spec, ctx, as_of, ctx.position)
    metrics = {"offenders": len(offenders), "exempt": exempt,
               "unapplied_receipts": sum(1 for i in items if i.open_amount > 0),
               "unapplied_cents": sum(i.open_amount for i in items if i.open_amount > 0)}
    limit = f"more than {plural(spec.older_than_days, 'day')}"
    tail = (f"; {exempt} listed in {spec.except_listed_in} exempt" if exempt else "") + (
        f" ({note})" if note else "")
    if offenders:
        return CheckResult("", False, f"{plural(len(offenders), 'receipt')} unapplied for "
                                      f"{limit} {_when(as_of, ctx.position)}: "
                                      f"{listing(offenders)}{tail}", metrics)
    return CheckResult("", True, f"no receipt unapplied for {limit} "
                                 f"{_when(as_of, ctx.position)}{tail}", metrics)


def _unapplied_each_turn(spec: NoUnappliedReceipts, ctx: CheckContext) -> CheckResult:
    """The check at the end of every agent turn, with that turn's list."""
    bad: list[str] = []
    offenders = exempt = 0
    kept: dict[str, int] | None = None
    if spec.listed_stays_unapplied:  # what each receipt holds unapplied at the end
        kept = {i.doc_id: i.open_amount for i in q.open_items(
            ctx.store, "unapplied_cash", position=ctx.position) if i.open_amount > 0}
    for day, at in turn_contexts(ctx, ctx.turn_dates):
        found, listed, _, note = _unapplied_offenders(spec, at, day, at.position, kept)
        offenders += len(found)
        exempt += listed
        if found:
            bad.append(f"at the end of the turn of {day.isoformat()}: {listing(found)}"
                       + (f" ({note})" if note else ""))
    metrics = {"offenders": offenders, "exempt": exempt, "turns": len(ctx.turn_dates),
               "turns_failed": len(bad)}
    limit = (f" for more than {plural(spec.older_than_days, 'day')}"
             if spec.older_than_days else "")
    where = f", nor listed in {spec.except_listed_in}" if spec.except_listed_in else ""
    if bad:
        return CheckResult("", False, f"{plural(offenders, 'receipt')} the clerk had left "
                                      f"unapplied{limit} at a turn's end{where}: "
                           + "; ".join(bad[:5])
                           + (f"; and {len(bad) - 5} more turns" if len(bad) > 5 else ""),
                           metrics)
    return CheckResult("", True, f"no receipt the clerk had left unapplied{limit} at the end "
                                 f"of any of {plural(len(ctx.turn_dates), 'turn')}{where}",
                       metrics)


def _unapplied_offenders(spec: NoUnappliedReceipts, ctx: CheckContext, as_of: date | None,
                         position: int | None, kept: dict[str, int] | None = None
                         ) -> tuple[list[str], int, list[Any], str]:
    """The receipts unapplied for more than the limit as of ``as_of`` at ``position`` and
    not listed in ``ctx``'s workspace (with ``kept``, what each receipt still holds
    unapplied at the end: listed and applied later is not exempt): (offenders, how many
    were exempt, the open items, why the list could not be read)."""
    items = q.open_items(ctx.store, "unapplied_cash", as_of=as_of, position=position)
    lines = receipt_lines(ctx.store)
    listed: set[str] = set()
    note = ""
    if spec.except_listed_in is not None:
        listed, note = read_listed(ctx, spec.except_listed_in, spec.column, spec.reason_column)
    offenders, exempt = [], 0
    for item in items:
        if item.open_amount <= 0 or item.doc_date is None or as_of is None:
            continue
        age = (as_of - date.fromisoformat(item.doc_date)).days
        if age <= spec.older_than_days:
            continue
        ids = {item.doc_id, *lines.get(item.doc_id, ())}
        later = ""
        if ids & listed:
            if kept is None or kept.get(item.doc_id, 0) >= item.open_amount:
                exempt += 1
                continue
            later = (f", listed, then {display_cents(item.open_amount - kept.get(item.doc_id, 0))}"
                     " of it applied at a later turn")
        doc = q.document(ctx.store, "receipt", item.doc_id)
        of = f" of {display_cents(int(doc['total']))}" if doc else ""
        line = f"line {', '.join(lines[item.doc_id])}, " if item.doc_id in lines else ""
        offenders.append(f"{item.doc_id} ({line}{item.doc_date}, {age} days, "
                         f"{display_cents(item.open_amount)} open{of}, customer "
                         f"{item.party or '(unknown)'}{later})")
    return offenders, exempt, items, note


# --- open_items_count -----------------------------------------------------------------------


class OpenItemsCount(CheckSpec):
    """The number of open items of a subledger (``ar``, ``ap``, ``unapplied_cash``), of a
    ``party`` if given, is within bounds (``max``, ``min``, or ``equals``).

    ``older_than_days`` counts only items whose document date is more than N days before
    the date checked; ``past_due_days`` only items more than N days past their due date
    (items without a due date never count then).
    """

    family: ClassVar[str] = "state"
    type: Literal["open_items_count"]
    subledger: Literal["ar", "ap", "unapplied_cash"]
    party: str | None = Field(default=None, min_length=1)
    older_than_days: int | None = Field(default=None, ge=0, le=3660)
    past_due_days: int | None = Field(default=None, ge=0, le=3660)
    max: int | None = Field(default=None, ge=0)
    min: int | None = Field(default=None, ge=0)
    equals: int | None = Field(default=None, ge=0)
    as_of: date | None = None

    @model_validator(mode="after")
    def _bounds(self) -> OpenItemsCount:
        if self.max is None and self.min is None and self.equals is None:
            raise ValueError("give max, min or equals")
        if self.equals is not None and (self.max is not None or self.min is not None):
            raise ValueError("equals excludes min and max")
        if self.max is not None and self.min is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


@check_type(OpenItemsCount)
def open_items_count(spec: OpenItemsCount, ctx: CheckContext) -> CheckResult:
    """Count a subledger's open items (filtered) and compare with the bounds."""
    as_of = effective_date(ctx, spec.as_of)
    items = [i for i in q.open_items(ctx.store, spec.subledger, as_of=as_of,
                                     position=ctx.position, party=spec.party)
             if i.open_amount != 0]
    if spec.older_than_days is not None and as_of is not None:
        items = [i for i in items if i.doc_date is not None
                 and (as_of - date.fromisoformat(i.doc_date)).days > spec.older_than_days]
    if spec.past_due_days is not None and as_of is not None:
        items = [i for i in items if i.due_on is not None
                 and (as_of - date.fromisoformat(i.due_on)).days > spec.past_due_days]
    n = len(items)
    ok = ((spec.equals is None or n == spec.equals) and (spec.max is None or n <= spec.max)
          and (spec.min is None or n >= spec.min))
    bounds = (f"exactly {spec.equals}" if spec.equals is not None else
              " and ".join(x for x in (f"at least {spec.min}" if spec.min is not None else "",
                                       f"at most {spec.max}" if spec.max is not None else "")
                           if x))
    filters = "".join([f" of {spec.party}" if spec.party else "",
                       f" older than {spec.older_than_days} days"
                       if spec.older_than_days is not None else "",
                       f" more than {spec.past_due_days} days past due"
                       if spec.past_due_days is not None else ""])
    head = (f"{n} open {spec.subledger} item(s){filters} {_when(as_of, ctx.position)}, "
            f"expected {bounds}")
    metrics = {"count": n, "open_cents": sum(i.open_amount for i in items)}
    if ok:
        return CheckResult("", True, head, metrics)
    shown = [f"{i.doc_kind} {i.doc_id} ({i.party or '-'}, {i.doc_date}, due {i.due_on or '-'},"
             f" {display_cents(i.open_amount)})" for i in items]
    return CheckResult("", False, f"{head}: {listing(shown)}" if shown else head, metrics)


# --- sql_assert -----------------------------------------------------------------------------

READ_TABLES = ("gl_lines", "subledger", "documents", "doc_history", "statement_lines",
               "audit_trail")
"""The tables (and the view) a ``sql_assert`` query may read."""

_REFUSED_WORDS = frozenset((
    "insert", "update", "delete", "merge", "upsert", "drop", "create", "alter", "truncate",
    "attach", "detach", "pragma", "vacuum", "reindex", "analyze", "grant", "revoke", "copy",
    "call", "execute", "exec", "do", "lock", "set", "reset", "begin", "commit", "rollback",
    "savepoint", "release", "listen", "notify", "unlisten", "load", "into", "events",
    "store_meta", "information_schema", "set_config", "load_extension", "writefile",
    "readfile", "dblink", "edit"))
_REFUSED_PREFIXES = ("pg_", "sqlite_", "lo_", "dblink")
_TOKENS = re.compile(r"""
    (?P<str>'(?:[^']|'')*')
  | (?P<qid>"(?:[^"]|"")*")
  | (?P<lc>--[^\n]*)
  | (?P<bc>/\*.*?\*/)
  | (?P<param>:(?:as_of|position)\b)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<space>\s+)
  | (?P<other>.)
""", re.S | re.X)

SQL_TIMEOUT_S = 30.0
"""A ``sql_assert`` query running longer is interrupted (a grader error)."""
SHOWN_ROWS = 5


def _tokens(query: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "", m.group()) for m in _TOKENS.finditer(query)]


def validate_select(query: str) -> str:
    """Refuse what is not one read-only ``SELECT``/``WITH`` over the read tables.

    Checked on the text (string literals and comments aside): one statement (a final
    ``;`` is dropped); it starts with SELECT or WITH; no word that writes, changes the
    session or reaches outside the read tables (INSERT, INTO, PRAGMA, ``events``,
    ``store_meta``, ``pg_*``, ``sqlite_*``...); no ``$`` (dollar quoting); and every
    table after FROM or JOIN is one of :data:`READ_TABLES` or a name the query's own
    WITH defines. The query also runs in a read-only transaction. ``:as_of`` and
    ``:position`` are the only parameters. Returns the query without its final ``;``.
    """
    toks = _tokens(query)
    significant = [i for i, (k, _) in enumerate(toks) if k not in ("space", "lc", "bc")]
    if not significant:
        raise ValueError("the query is empty")
    if toks[significant[-1]] == ("other", ";"):
        toks = toks[:significant[-1]]
    code = [(k, t) for k, t in toks if k not in ("space", "lc", "bc")]
    if not code:
        raise ValueError("the query is empty")
    for i, (k, t) in enumerate(code):
        if k != "other":
            continue
        if t in ("'", '"'):
            raise ValueError("the query has an unterminated quoted string or identifier")
        if t == "/" and i + 1 < len(code) and code[i + 1] == ("other", "*"):
            raise ValueError("the query has an unterminated comment")
        if t == "$":
            raise ValueError("'$' (dollar quoting) is not allowed")
        if t == ":":
            raise ValueError("':' is not allowed: the only parameters are :as_of and "
                             ":position (and '::' casts are PostgreSQL's only)")
        if t == ";":
            raise ValueError("one statement only (no ';' inside the query)")
    first = next((t for k, t in code if t != "("), "")
    if first.lower() not in ("select", "with"):
        raise ValueError(f"the query must start with SELECT or WITH (it starts with "
                         f"{first!r})")
    words = [(k, t.strip('"').replace('""', '"').lower() if k == "qid" else t.lower())
             for k, t in code if k in ("word", "qid")]
    for _, w in words:
        if w in _REFUSED_WORDS or w.startswith(_REFUSED_PREFIXES):
            what = ("the log (events) may not be read: use audit_trail for the erp realm"
                    if w == "events" else f"{w!r} is not allowed in a read-only query "
                    f"over the read tables ({', '.join(READ_TABLES)})")
            raise ValueError(what)
    flat = [(k, t.strip('"').lower() if k == "qid" else t.lower()) for k, t in code]
    ctes = {flat[i][1] for i in range(len(flat) - 2)
            if flat[i][0] in ("word", "qid") and flat[i + 1] == ("word", "as")
            and flat[i + 2] == ("other", "(")}
    for i, (_, t) in enumerate(flat[:-1]):
        if t in ("from", "join") and not (i > 0 and flat[i - 1] == ("word", "distinct")):
            nxt = flat[i + 1][1]
            if nxt == "(":
                continue
            if nxt not in READ_TABLES and nxt not in ctes:
                raise ValueError(f"{t.upper()} {nxt}: the query may read only "
                                 f"{', '.join(READ_TABLES)}")
            if i + 2 < len(flat) and flat[i + 2] == ("other", "."):
                raise ValueError(f"{nxt}.: schema-qualified names are not allowed")
    return "".join(t for _, t in toks).strip()


def _expect(v: Any) -> str | dict[str, Any]:
    if v in ("no_rows", "rows"):
        return str(v)
    if isinstance(v, dict) and set(v) == {"count"}:
        n = v["count"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError("count must be a whole number >= 0")
        return {"count": n}
    if isinstance(v, dict) and set(v) == {"scalar"}:
        s = v["scalar"]
        if isinstance(s, float):
            raise ValueError("scalar: write a number as an integer or a decimal string "
                             "('12.50'), not a float")
        if s is not None and not isinstance(s, str | int | bool):
            raise ValueError("scalar must be a string, an integer, a boolean or null")
        return {"scalar": s}
    raise ValueError("expected 'no_rows', 'rows', {count: N} or {scalar: VALUE}")


class SqlAssert(CheckSpec):
    """A single read-only ``SELECT`` (or ``WITH``) over the read tables, and what it must give.

    Tables: ``gl_lines``, ``subledger``, ``documents``, ``doc_history``,
    ``statement_lines`` and the ``audit_trail`` view (the erp realm of the log; the log
    itself, with the world realm, is refused). ``expect``: ``no_rows`` (the default: the
    query selects offenders), ``rows`` (at least one), ``{count: N}`` (exactly N rows),
    or ``{scalar: VALUE}`` (one row whose first column equals VALUE; numbers compare as
    decimals, ``"12.50"`` equals 12.5). ``:as_of`` (an ISO date string) and ``:position``
    are bound to the date and log position checked (per-date control); a query that
    names neither sees the read tables as they are. The same text must run on SQLite
    and PostgreSQL: keep to common SQL (no ``::`` casts, no dollar quoting).
    """

    family: ClassVar[str] = "state"
    type: Literal["sql_assert"]
    query: str = Field(min_length=1, max_length=20_000)
    expect: str | dict[str, Any] = "no_rows"

    @field_validator("query")
    @classmethod
    def _select_only(cls, v: str) -> str:
        return validate_select(v)

    @field_validator("expect", mode="before")
    @classmethod
    def _expectation(cls, v: Any) -> str | dict[str, Any]:
        return _expect(v)


@contextmanager
def read_only(store: EventStore, timeout_s: float = SQL_TIMEOUT_S) -> Iterator[Connection]:
    """A connection in a read-only transaction (rolled back), with a time limit."""
    with store.engine.connect() as conn:
        if store.dialect == "sqlite":
            raw = conn.connection.driver_connection
            if raw is None:  # a pooled connection is always open while it is checked out
                raise RuntimeError("the SQLite connection has no DBAPI connection")
            deadline = time.monotonic() + timeout_s
            raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
            conn.exec_driver_sql("PRAGMA query_only = ON")
            conn.commit()
            try:
                with conn.begin() as tx:
                    yield conn
                    tx.rollback()
            finally:
                if conn.in_transaction():
                    conn.rollback()
                raw.set_progress_handler(None, 0)
                conn.exec_driver_sql("PRAGMA query_only = OFF")
                conn.commit()
        else:
            with conn.begin() as tx:
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(timeout_s * 1000)}")
                yield conn
                tx.rollback()


def bind_params(query: str, store: EventStore, as_of: date | None,
                position: int | None) -> tuple[str, tuple[Any, ...]]:
    """Replace ``:as_of`` and ``:position`` (outside literals) with the driver's
    placeholders; on PostgreSQL double every ``%`` (the driver parses the text for
    placeholders even without parameters)."""
    params: list[Any] = []
    out = []
    mark = "?" if store.dialect == "sqlite" else "%s"
    for kind, text in _tokens(query):
        if kind == "param":
            params.append((as_of or date.max).isoformat() if text == ":as_of"
                          else (position if position is not None else 2**62))
            out.append(mark)
        else:
            out.append(text.replace("%", "%%") if store.dialect != "sqlite" else text)
    if not params and store.dialect == "sqlite":
        return query, ()
    return "".join(out), tuple(params)


def _same(actual: Any, expected: Any) -> bool:
    if expected is None or actual is None:
        return actual is expected
    if isinstance(expected, bool):
        return actual in (0, 1) and bool(actual) is expected
    try:
        return Decimal(str(actual)) == Decimal(str(expected))
    except InvalidOperation:
        return str(actual) == str(expected)


def _plain(v: Any) -> Any:
    """A value as both backends should show it (PostgreSQL sums are Decimals)."""
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else str(v)
    return v


def _show_rows(cols: Sequence[str], found: Sequence[Sequence[Any]]) -> str:
    return "; ".join("{" + ", ".join(f"{c}={_plain(v)!r}" for c, v in zip(cols, r, strict=False))
                     + "}" for r in found[:SHOWN_ROWS])


@check_type(SqlAssert)
def sql_assert(spec: SqlAssert, ctx: CheckContext) -> CheckResult:
    """Run the query read-only and compare what it returns with ``expect``."""
    as_of = effective_date(ctx)
    sql, params = bind_params(spec.query, ctx.store, as_of, ctx.position)
    with read_only(ctx.store) as conn:
        result = conn.exec_driver_sql(sql, params)
        cols = list(result.keys())
        first = [tuple(r) for r in result.fetchmany(SHOWN_ROWS)]
        n = len(first) + sum(1 for _ in result) if len(first) == SHOWN_ROWS else len(first)
    shown = _show_rows(cols, first)
    more = f" (first {SHOWN_ROWS} shown)" if n > SHOWN_ROWS else ""
    metrics = {"rows": n}
    exp = spec.expect
    if exp == "no_rows":
        return CheckResult("", n == 0, "no rows" if n == 0 else
                           f"{plural(n, 'row')}, expected none{more}: {shown}", metrics)
    if exp == "rows":
        return CheckResult("", n > 0, f"{plural(n, 'row')}{more}: {shown}" if n else
                           "no rows, expected at least one", metrics)
    assert isinstance(exp, dict)
    if "count" in exp:
        ok = n == exp["count"]
        return CheckResult("", ok, f"{plural(n, 'row')}, expected {exp['count']}"
                           + (f"{more}: {shown}" if n and not ok else ""), metrics)
    if n != 1:
        return CheckResult("", False, f"{plural(n, 'row')}, expected one row whose first "
                                      f"column is {exp['scalar']!r}"
                           + (f"{more}: {shown}" if n else ""), metrics)
    value = _plain(first[0][0]) if first[0] else None
    ok = _same(value, exp["scalar"])
    return CheckResult("", ok, f"{cols[0] if cols else 'value'} = {value!r}"
                       + ("" if ok else f", expected {exp['scalar']!r}"),
                       {**metrics, "value": value if isinstance(value, int | str | None)
                        else repr(value)})


# --- period_closed --------------------------------------------------------------------------


class PeriodClosedSpec(CheckSpec):
    """The accounting period ``period`` (e.g. ``2026-05``), or the one holding the date
    ``on`` (default: the scenario's end), is closed in the books (``PeriodClosed`` and not
    reopened since), as of the log position checked."""

    family: ClassVar[str] = "state"
    type: Literal["period_closed"]
    period: str | None = Field(default=None, min_length=1, max_length=16)
    on: date | None = None

    @model_validator(mode="after")
    def _one(self) -> PeriodClosedSpec:
        if self.period is not None and self.on is not None:
            raise ValueError("give period or on, not both")
        return self


@check_type(PeriodClosedSpec)
def period_closed(spec: PeriodClosedSpec, ctx: CheckContext) -> CheckResult:
    """Check that the period is closed (as of ``ctx.position``)."""
    store = ctx.store
    if spec.period is not None:
        found = rows(store, "SELECT doc_id, doc_date, due_on FROM documents WHERE "
                            "kind = 'period' AND doc_id = ?", [spec.period])
        where = f"period {spec.period}"
    else:
        day = spec.on or ctx.end or ctx.as_of or latest_business_date(ctx)
        if day is None:
            return CheckResult("", False, "no date to find the period of (no scenario end "
                                          "and an empty log)")
        found = rows(store, "SELECT doc_id, doc_date, due_on FROM documents WHERE "
                            "kind = 'period' AND doc_date <= ? AND due_on >= ?",
                     [day.isoformat(), day.isoformat()])
        where = f"the period holding {day.isoformat()}"
    if not found:
        return CheckResult("", False, f"{where}: no such accounting period in the books")
    period, start, end = found[0]
    doc = q.document(store, "period", period, position=ctx.position)
    status = doc["status"] if doc else "not opened yet"
    head = f"period {period} ({start}..{end}) is {status} {_when(None, ctx.position)}"
    if status != "closed":
        return CheckResult("", False, head, {"closed": False})
    sql = ("SELECT position, actor, role, business_date FROM events WHERE stream = ? AND "
           "type = 'period_closed'")
    params: list[Any] = [f"period:{period}"]
    if ctx.position is not None:
        sql += " AND position <= ?"
        params.append(ctx.position)
    closes = rows(store, sql + " ORDER BY position DESC", params)
    by = (f": closed by {closes[0][1]} ({closes[0][2]}) on {closes[0][3]}, position "
          f"{closes[0][0]}") if closes else ""
    return CheckResult("", True, head + by, {"closed": True})


__all__ = ["READ_TABLES", "STATUSES", "AccountBalance", "DocumentState", "NoUnappliedReceipts",
           "OpenItemsCount", "PeriodClosedSpec", "SqlAssert", "effective_date", "end_of_day",
           "end_of_turn", "listing", "read_only", "rows", "turn_contexts", "validate_select"]
