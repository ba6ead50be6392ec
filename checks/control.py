"""Control-account checks (family ``control``): the books against themselves and the world.

| type | passes when |
| --- | --- |
| ``control_ties`` | a control account's GL balance equals its subledger (one, or all) |
| ``bank_reconciles`` | a bank GL balance equals the statement adjusted by reconciling items |
| ``books_match_world`` | each customer's (vendor's) balance equals its own records |
| ``zero_balance`` | clearing or suspense accounts are at zero |
| ``trial_balance_zero`` | debits equal credits |

Every type answers as of a date: the spec's own (``as_of``, ``statement_as_of``; during
per-date control no later than the date being checked), else the context's (per-date
control: the business date being checked, with ``ctx.position`` the log head at that
date's end), else the scenario's end, else the whole log. ``tolerance`` is a decimal
string from ``"0.00"`` to ``"1.00"``: the largest total of unexplained differences (their
magnitudes) that still passes. Amounts in metrics are integer cents (``*_cents``);
details show them as ``1,234.56``.

The reconciling items, and what counts as explained, are :mod:`checks.reconcile`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import date
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from checks.context import CheckContext, Folds
from checks.reconcile import (
    SIGN,
    AccountRow,
    Item,
    gl_subledger_items,
    postings_as_of,
    reconciliation,
)
from checks.registry import CheckResult, CheckSpec, Lookback, check_type, reconciled_on
from checks.state import turn_contexts
from erp import queries as q
from erp.errors import MoneyError
from erp.money import display_cents, parse_cents
from erp.store import EventStore

MAX_TOLERANCE = "1.00"
LISTED = 10
"""How many items a detail names by default before it says "and N more"."""
METRIC_ITEMS = 200
"""At most this many items are listed in a result's metrics."""


def _tolerance(value: Any) -> str:
    """A tolerance: a decimal string of money from 0.00 to ``MAX_TOLERANCE``."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError("expected a decimal string like '0.00' (quote it in YAML), not "
                         f"{type(value).__name__}")
    try:
        cents = parse_cents(value, what="tolerance")
    except MoneyError as e:
        raise ValueError(str(e)) from None
    if not 0 <= cents <= parse_cents(MAX_TOLERANCE):
        raise ValueError(f"tolerance must be between 0.00 and {MAX_TOLERANCE}")
    return value


class ControlSpec(CheckSpec):
    """Base of the control checks: a tolerance and how many items a detail names."""

    family: ClassVar[str] = "control"
    tolerance: str = "0.00"
    max_listed: int = Field(default=LISTED, ge=1, le=100)

    @field_validator("tolerance", mode="before")
    @classmethod
    def _check_tolerance(cls, v: Any) -> str:
        return _tolerance(v)

    @property
    def tolerance_cents(self) -> int:
        """The tolerance in cents."""
        return parse_cents(self.tolerance)


def _money(cents: int | None) -> str:
    return "-" if cents is None else display_cents(cents)


def _effective(ctx: CheckContext, explicit: date | None) -> date | None:
    """The date a check answers as of: the spec's, the context's (per-date control), the
    scenario's end; a spec's date later than the date being checked cannot be seen yet,
    so the earlier of the two."""
    if explicit is not None and ctx.as_of is not None:
        return min(explicit, ctx.as_of)
    return explicit or ctx.as_of or ctx.end


def _when(as_of: date | None, ctx: CheckContext) -> str:
    parts = [f"as of {as_of.isoformat()}"] if as_of else []
    if ctx.position is not None:
        parts.append(f"at log position {ctx.position}")
    return " ".join(parts) or "at the end of the log"


def _listing(lines: Sequence[str], limit: int) -> str:
    shown = "; ".join(lines[:limit])
    return shown + (f"; ... and {len(lines) - limit} more" if len(lines) > limit else "")


def _item_json(i: Item) -> dict[str, Any]:
    return {"account": i.account, "kind": i.kind, "party": i.party, "document": i.document,
            "books_cents": i.books, "external_cents": i.external,
            "difference_cents": i.difference, "explained": i.explained, "note": i.note}


def _chart_control(store: EventStore, ctx: CheckContext) -> dict[str, str]:
    """Every control account: the chart's (by their control kind) and the declared ones."""
    folded = postings_as_of(ctx, ctx.as_of)
    chart = folded.chart if folded is not None else q.chart(store, ctx.position)
    out = {a.code: a.control for a in chart.values() if a.control is not None}
    out.update(ctx.control_accounts)
    return out


# --- control_ties ---------------------------------------------------------------------------


class ControlTies(ControlSpec):
    """A control account's GL balance equals its subledger's total (``account``), or every
    control account's does (no ``account``: receivables, payables, unapplied cash, bank
    accounts, and the scenario's declared control accounts). The detail itemizes each
    difference by the event that made it (a journal entry posted to the control account,
    say)."""

    type: Literal["control_ties"]
    account: str | None = Field(default=None, min_length=1, max_length=32)
    as_of: date | None = None


@check_type(ControlTies)
def check_control_ties(spec: ControlTies, ctx: CheckContext) -> CheckResult:
    """Compare GL and subledger of one or every control account."""
    as_of = _effective(ctx, spec.as_of)
    folded = postings_as_of(ctx, as_of)  # per-date control: the rows folded forward
    controls = _chart_control(ctx.store, ctx)
    if spec.account is not None and spec.account not in controls:
        chart = q.chart(ctx.store, ctx.position)
        what = ("is not a control account" if spec.account in chart
                else "is not in the chart of accounts")
        raise ValueError(f"control_ties: account {spec.account} {what} (control accounts: "
                         f"{', '.join(sorted(controls)) or 'none'}); declare it in the "
                         "scenario's control accounts")
    codes = [spec.account] if spec.account is not None else sorted(controls)
    names = {a.code: a.name for a in (folded.chart if folded is not None
                                      else q.chart(ctx.store, ctx.position)).values()}
    totals = (folded.totals if folded is not None
              else q.subledger_totals(ctx.store, as_of=as_of, position=ctx.position))
    tol = spec.tolerance_cents
    parts: list[str] = []
    problems: list[str] = []
    metrics: dict[str, Any] = {"accounts": {}}
    items: list[Item] = []
    worst = 0
    for code in codes:
        control = controls[code]
        gl = (folded.gl_balance.get(code, 0) if folded is not None
              else q.account_balance(ctx.store, code, as_of=as_of,
                                     position=ctx.position)) * SIGN.get(control, 1)
        sub = totals.get((control, code), 0)
        diff = gl - sub
        worst = max(worst, abs(diff))
        metrics["accounts"][code] = {"control": control, "gl_cents": gl, "subledger_cents": sub,
                                     "difference_cents": diff}
        label = f"{code} {names.get(code, '')}".strip()
        if diff == 0:
            parts.append(f"{label}: GL {_money(gl)} = subledger")
            continue
        found = gl_subledger_items(ctx.store, code, control, as_of=as_of, position=ctx.position,
                                   postings=folded)
        items += found
        parts.append(f"{label}: GL {_money(gl)} vs subledger {_money(sub)}, difference "
                     f"{_money(diff)}")
        problems += [f"{label}: {i.describe()}" for i in found]
    ok = worst <= tol
    head = f"{_when(as_of, ctx)}: " + "; ".join(parts)
    detail = head if not problems else (f"{head}. Itemized: "
                                        f"{_listing(problems, spec.max_listed)}")
    if ok and worst:
        detail += f" (within the tolerance of {_money(tol)})"
    metrics.update(difference_cents=sum(a["difference_cents"]
                                        for a in metrics["accounts"].values()),
                   items=[_item_json(i) for i in items[:METRIC_ITEMS]])
    return CheckResult("", ok, detail, metrics)


# --- bank_reconciles --------------------------------------------------------------------------


class BankReconciles(ControlSpec):
    """A bank GL account (``account``; every bank account when absent) equals the bank's
    statement balance as of ``statement_as_of`` adjusted by reconciling items: deposits in
    transit and outstanding payments (timing), a line the bank posted twice (its error),
    and lines posted after the clerk's last turn are explained; a bank charge, interest, a
    returned (NSF) deposit or a deposit the books have not recorded, a book entry the bank
    never saw, a journal entry to the bank account or an amount recorded wrongly are not.
    Passes when the unexplained items total at most ``tolerance``. Every item is listed in
    the metrics."""

    type: Literal["bank_reconciles"]
    account: str | None = Field(default=None, min_length=1, max_length=32)
    statement_as_of: date | None = None

    def lookbacks(self) -> frozenset[Lookback]:
        """The statement date (the reconciliation as of it, at the log's head)."""
        return reconciled_on(self.statement_as_of)


@check_type(BankReconciles)
def bank_reconciles(spec: BankReconciles, ctx: CheckContext) -> CheckResult:
    """Reconcile bank GL accounts to the bank's statement."""
    as_of = _effective(ctx, spec.statement_as_of)
    rec = reconciliation(ctx, as_of)
    rows = [a for a in rec.accounts if a.control == "bank" and a.external is not None]
    if spec.account is not None:
        rows = [a for a in rows if a.account == spec.account]
        if not rows:
            raise ValueError(f"bank_reconciles: account {spec.account} is not the GL account of "
                             "a bank account in the books (bank accounts: "
                             + (", ".join(a.account for a in rec.accounts
                                          if a.control == "bank" and a.external is not None)
                                or "none") + ")")
    tol = spec.tolerance_cents
    unexplained = sum(a.unexplained_total for a in rows)
    ok = unexplained <= tol
    parts: list[str] = []
    listed: list[str] = []
    metrics: dict[str, Any] = {"accounts": {}}
    for a in rows:
        statement = a.external or 0
        parts.append(f"{a.account} {a.name}: GL {_money(a.gl)}, statement {_money(statement)}, "
                     f"difference {_money(a.gl - statement)}: explained {_money(a.explained_total)}"
                     f" ({len(a.explained)} items), unexplained {_money(a.unexplained_total)} "
                     f"({len(a.unexplained)} items)")
        listed += [f"{a.account}: {i.describe()}" for i in a.unexplained]
        metrics["accounts"][a.account] = {
            "gl_cents": a.gl, "statement_cents": statement, "difference_cents": a.gl - statement,
            "explained_cents": a.explained_total, "unexplained_cents": a.unexplained_total,
            "items": [_item_json(i) for i in a.items if i.difference][:METRIC_ITEMS]}
    explained = [f"{a.account}: {i.describe()}" for a in rows for i in a.explained]
    detail = f"{_when(as_of, ctx)}: " + "; ".join(parts)
    if listed:
        detail += f". Unexplained: {_listing(listed, spec.max_listed)}"
    if explained:
        detail += f". Reconciling items: {_listing(explained, spec.max_listed)}"
    if ok and unexplained:
        detail += f" (within the tolerance of {_money(tol)})"
    metrics.update(unexplained_cents=unexplained,
                   explained_cents=sum(a.explained_total for a in rows),
                   unexplained_items=sum(len(a.unexplained) for a in rows),
                   explained_items=sum(len(a.explained) for a in rows))
    return CheckResult("", ok, detail, metrics)


# --- books_match_world -----------------------------------------------------------------------


class BooksMatchWorld(ControlSpec):
    """Each party's balance in the books equals what its own records say (``parties``):

    - ``customers``: receivables less unapplied cash of the customer, against what the
      customer's records say it owes (less its money the company holds on account: a
      payment it sent twice, an overpayment). A payment in transit, or posted after the
      clerk's last turn, is a timing item; a receipt held under another customer, or
      under none, counts under the customer the money came from.
    - ``vendors``: payables of the vendor against its own books (its statement of
      account); a bill not delivered yet and a payment the bank has not paid out yet are
      timing items, a bill held for a price above the agreed quote is explained.

    ``by: balance`` (the default) compares each party's balance: a receipt left unapplied
    under the right customer does not change it. ``by: document`` also requires every
    document to agree (every receipt applied as the customer meant it). The detail names
    the differing parties and their documents (the first ``max_listed``)."""

    type: Literal["books_match_world"]
    parties: Literal["customers", "vendors"]
    by: Literal["balance", "document"] = "balance"
    as_of: date | None = None
    at_turns: bool = False
    """Judge the books as they stood at the end of each date of the agent's turns (to the
    scenario's end), folding the log forward once: work a turn left to a later turn (a
    receipt applied a turn late) fails at the turn that left it. Not with ``as_of``."""

    def lookbacks(self) -> frozenset[Lookback]:
        """Its own date (not ``at_turns``: each turn's end is another position)."""
        return reconciled_on(None if self.at_turns else self.as_of)

    def ahead(self, ctx: CheckContext, day: date) -> None:
        """With ``at_turns``, on a turn's date: the comparison at that date's end."""
        if self.at_turns and day in ctx.turn_dates:
            _at_turn_results(self, ctx, [day])

    @model_validator(mode="after")
    def _one_date_rule(self) -> BooksMatchWorld:
        if self.at_turns and self.as_of is not None:
            raise ValueError("at_turns judges every turn's date: give it no as_of")
        if self.at_turns and self.daily:
            raise ValueError("at_turns judges every turn's date once, at the end: "
                             "not daily")
        return self


def _party_items(rows: Iterable[AccountRow], parties: str) -> list[tuple[Item, int]]:
    """Items of the party accounts with the sign they take in a party's balance."""
    out: list[tuple[Item, int]] = []
    for a in rows:
        if parties == "customers" and a.control in ("ar", "unapplied_cash"):
            sign = 1 if a.control == "ar" else -1
        elif parties == "vendors" and a.control == "ap":
            sign = 1
        else:
            continue
        out += [(i, sign) for i in a.items if not i.kind.startswith("gl_")]
    return out


@check_type(BooksMatchWorld)
def books_match_world(spec: BooksMatchWorld, ctx: CheckContext) -> CheckResult:
    """Compare each customer's or vendor's balance in the books with its own records."""
    return _at_turns(spec, ctx) if spec.at_turns else _books_match_world(spec, ctx)


def _books_match_world(spec: BooksMatchWorld, ctx: CheckContext) -> CheckResult:
    """:func:`books_match_world` as of one date (the spec's, the context's or the end)."""
    as_of = _effective(ctx, spec.as_of)
    rec = reconciliation(ctx, as_of)
    pairs = _party_items(rec.accounts, spec.parties)
    rows = [a for a in rec.accounts
            if a.control in (("ar", "unapplied_cash") if spec.parties == "customers" else ("ap",))]
    books_total = sum(a.subledger * (-1 if a.control == "unapplied_cash" else 1) for a in rows)
    world_total = sum((a.external or 0) * (-1 if a.control == "unapplied_cash" else 1)
                      for a in rows)
    per: dict[str, dict[str, Any]] = {}
    for i, sign in pairs:
        party = i.party or "(none)"
        p = per.setdefault(party, {"unexplained_cents": 0, "explained_cents": 0, "items": []})
        if i.difference:
            key = "explained_cents" if i.explained else "unexplained_cents"
            p[key] += sign * i.difference
            p["items"].append(i)
    tol = spec.tolerance_cents
    if spec.by == "balance":
        off = {k: v for k, v in per.items() if v["unexplained_cents"]}
        measure = sum(abs(v["unexplained_cents"]) for v in off.values())
    else:
        off = {k: v for k, v in per.items()
               if any(not i.explained for i in v["items"])}
        measure = sum(abs(i.difference) for v in off.values() for i in v["items"]
                      if not i.explained)
    ok = measure <= tol
    word = "customer" if spec.parties == "customers" else "vendor"
    lines = []
    for party in sorted(off, key=lambda k: (-abs(off[k]["unexplained_cents"]), k)):
        v = off[party]
        docs = [i.describe() for i in v["items"] if not i.explained]
        lines.append(f"{party}: unexplained {_money(v['unexplained_cents'])} ({', '.join(docs)})")
    timing = [i for i, _ in pairs if i.explained and i.difference]
    n_parties = len({i.party for i, _ in pairs} | set(per))
    head = (f"{spec.parties} {_when(as_of, ctx)} by {spec.by}: books {_money(books_total)}, "
            f"their records {_money(world_total)}; {len(off)} {word}(s) differ beyond the "
            f"explained items ({len(timing)} explained items, "
            f"{_money(sum(i.difference * s for i, s in pairs if i.explained))})")
    detail = head + (f": {_listing(lines, spec.max_listed)}" if lines else "")
    if ok and measure:
        detail += f" (within the tolerance of {_money(tol)})"
    metrics = {"parties_with_items": n_parties, "parties_differing": len(off),
               "books_cents": books_total, "world_cents": world_total,
               "unexplained_cents": measure,
               "explained_items": len(timing),
               "differing": {k: {"unexplained_cents": v["unexplained_cents"],
                                 "explained_cents": v["explained_cents"],
                                 "items": [_item_json(i) for i in v["items"]][:20]}
                             for k, v in sorted(off.items())[:METRIC_ITEMS]}}
    return CheckResult("", ok, detail, metrics)


def _at_turns(spec: BooksMatchWorld, ctx: CheckContext) -> CheckResult:
    """:func:`books_match_world` at the end of every turn's date in order, as per-date
    control evaluates it: one forward fold (``Folds``) for all the dates."""
    last = ctx.as_of or ctx.end
    days = sorted(d for d in set(ctx.turn_dates) if last is None or d <= last)
    failed = [(day, r) for day, r in _at_turn_results(spec, ctx, days) if not r.passed]
    metrics: dict[str, Any] = {"dates": len(days), "dates_differing": len(failed)}
    if not failed:
        return CheckResult("", True, f"{spec.parties} match their records by {spec.by} at the "
                                     f"end of each of {len(days)} turn date(s)", metrics)
    metrics["first"] = failed[0][1].metrics
    first_day, first = failed[0]
    return CheckResult("", False, f"{len(failed)} of {len(days)} turn date(s) differ "
                                  f"({', '.join(d.isoformat() for d, _ in failed[:12])}"
                                  f"{', ...' if len(failed) > 12 else ''}); the first, "
                                  f"{first_day.isoformat()}: {first.detail}", metrics)


def _at_turn_results(spec: BooksMatchWorld, ctx: CheckContext,
                     days: Iterable[date]) -> list[tuple[date, CheckResult]]:
    """The comparison at the end of each of ``days`` (turn dates, in order) with a recorded
    end, each worked out once and kept in ``ctx.turn_ends`` (the checks beside the run work
    each out once its date is over, :meth:`BooksMatchWorld.ahead`; the log up to a date's
    end never changes), on from the last date's folds."""
    one = spec.model_copy(update={"at_turns": False, "as_of": None})
    name = ("checks.at_turns", one.model_dump_json(), tuple(sorted(ctx.control_accounts.items())),
            tuple(sorted(set(ctx.turn_dates))))
    memo: dict[tuple[date, int | None], CheckResult] = ctx.turn_ends.keep(name, dict)
    folds = ctx.turn_ends.keep((*name, "folds"), Folds)
    out: list[tuple[date, CheckResult]] = []
    for day, at in turn_contexts(ctx, days, day_end=True):
        r = memo.get((day, at.position))
        if r is None:
            r = memo[(day, at.position)] = _books_match_world(
                one, replace(at, as_of=day, folds=folds))
        out.append((day, r))
    return out


# --- zero_balance ---------------------------------------------------------------------------


class ZeroBalance(ControlSpec):
    """Clearing or suspense ``accounts`` are at zero as of ``as_of`` (default: the date
    being checked, else the scenario's end). The detail itemizes what is left by document."""

    type: Literal["zero_balance"]
    accounts: list[str] = Field(min_length=1, max_length=50)
    as_of: date | None = None

    @field_validator("accounts")
    @classmethod
    def _codes(cls, v: list[str]) -> list[str]:
        if any(not code or len(code) > 32 for code in v):
            raise ValueError("each account is a code of 1 to 32 characters")
        if len(set(v)) != len(v):
            raise ValueError("an account is listed twice")
        return v


@check_type(ZeroBalance)
def zero_balance(spec: ZeroBalance, ctx: CheckContext) -> CheckResult:
    """Check that clearing and suspense accounts are empty."""
    as_of = _effective(ctx, spec.as_of)
    chart = q.chart(ctx.store, ctx.position)
    missing = [a for a in spec.accounts if a not in chart]
    if missing:
        raise ValueError(f"zero_balance: account(s) {', '.join(missing)} not in the chart of "
                         "accounts")
    tol = spec.tolerance_cents
    parts, listed = [], []
    metrics: dict[str, Any] = {"accounts": {}}
    total = 0
    for code in spec.accounts:
        bal = q.account_balance(ctx.store, code, as_of=as_of, position=ctx.position)
        total += abs(bal)
        metrics["accounts"][code] = {"balance_cents": bal}
        parts.append(f"{code} {chart[code].name} {_money(bal)}")
        if bal:
            listed += [f"{code}: {doc} {_money(amount)}"
                       for doc, amount in _open_documents(ctx.store, code, as_of, ctx.position)]
    ok = total <= tol
    detail = f"{_when(as_of, ctx)}: " + "; ".join(parts) + " (debit-positive)"
    if listed:
        detail += f". Left in them: {_listing(listed, spec.max_listed)}"
    if ok and total:
        detail += f" (within the tolerance of {_money(tol)})"
    metrics["total_abs_cents"] = total
    return CheckResult("", ok, detail, metrics)


def _open_documents(store: EventStore, account: str, as_of: date | None,
                    position: int | None) -> list[tuple[str, int]]:
    """What remains in an account, by the document its GL lines name."""
    clauses: list[str] = ["account = ?"]
    params: list[str | int] = [account]
    if as_of is not None:
        clauses.append("entry_date <= ?")
        params.append(as_of.isoformat())
    if position is not None:
        clauses.append("position <= ?")
        params.append(position)
    with store.engine.connect() as conn:
        found = conn.exec_driver_sql(store.sql(
            f"SELECT doc_id, SUM(amount) FROM gl_lines WHERE {' AND '.join(clauses)} "
            "GROUP BY doc_id HAVING SUM(amount) <> 0 ORDER BY doc_id"), tuple(params)).all()
    return [(d, int(t)) for d, t in found]


# --- trial_balance_zero ------------------------------------------------------------------------


class TrialBalanceZero(CheckSpec):
    """The trial balance balances: debits equal credits (exactly) as of ``as_of``. The
    detail names the log positions whose GL lines do not balance."""

    family: ClassVar[str] = "control"
    type: Literal["trial_balance_zero"]
    as_of: date | None = None


@check_type(TrialBalanceZero)
def trial_balance_zero(spec: TrialBalanceZero, ctx: CheckContext) -> CheckResult:
    """Compare the trial balance's debits and credits."""
    as_of = _effective(ctx, spec.as_of)
    tb = q.trial_balance(ctx.store, as_of=as_of, position=ctx.position)
    debit, credit = sum(r.debit for r in tb), sum(r.credit for r in tb)
    diff = debit - credit
    detail = (f"{_when(as_of, ctx)}: debits {_money(debit)}, credits {_money(credit)}, "
              f"difference {_money(diff)}")
    if diff:
        clauses: list[str] = ["1=1"]
        params: list[str | int] = []
        if as_of is not None:
            clauses.append("entry_date <= ?")
            params.append(as_of.isoformat())
        if ctx.position is not None:
            clauses.append("position <= ?")
            params.append(ctx.position)
        with ctx.store.engine.connect() as conn:
            bad = conn.exec_driver_sql(ctx.store.sql(
                f"SELECT position, SUM(amount) FROM gl_lines WHERE {' AND '.join(clauses)} "
                "GROUP BY position HAVING SUM(amount) <> 0 ORDER BY position"),
                tuple(params)).all()
        detail += ". Unbalanced: " + _listing([f"position {p} off by {_money(int(t))}"
                                               for p, t in bad], LISTED)
    return CheckResult("", diff == 0, detail, {"debit_cents": debit, "credit_cents": credit,
                                               "difference_cents": diff})


__all__ = ["MAX_TOLERANCE", "BankReconciles", "BooksMatchWorld", "ControlSpec", "ControlTies",
           "TrialBalanceZero", "ZeroBalance", "bank_reconciles", "books_match_world",
           "check_control_ties", "trial_balance_zero", "zero_balance"]
