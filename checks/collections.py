"""Checks of a collections desk's weekly runs against its written policy and the world.

The truth is what happened in the world realm: the ``collections_book`` injection's
record (:mod:`counterparties.collections`: the starting invoices and the days of the
weekly runs, the scenario's turns), every email delivered with its truth (a customer's
dispute, the sales manager's ruling, a promise to pay), every payment a customer sent
(``PaymentSent``: what it meant to pay) and the bank line it arrived on. From these,
:func:`expected_runs` works the policy run by run as a faithful clerk would (receipts,
disputes, rulings, promises, holds, letters): what each run should have recorded. The
books are read from the erp realm.

- ``collections_receipts``: every deposit of a customer payment that reached the books
  before the last run is applied, at the first run after it (made at that run and dated
  as it), to the invoices the payment meant, for what it meant (its receipt's customer
  the payer); nothing else is applied.
- ``collections_disputes``: each emailed dispute recorded at the first run after it, on
  its invoice, for the amount disputed, with the customer's reason (naming a word of it,
  however inflected or spelled: :func:`names_reason`); no other dispute.
- ``collections_rulings``: each dispute resolved at the first run after the sales
  manager's ruling, as ruled (credited for the amount ruled, or rejected); no other; and
  no credit memo of the agent's but a ruling's, each on the sales returns account.
- ``collections_promises``: each emailed promise recorded at the first run after it
  (invoice, amount, date); no other.
- ``collections_holds``: holds placed (limit 0.00) and released on the runs the policy
  calls for, on those customers only (a hold placed and released at the same run, a
  mistake corrected at once, counts as neither).
- ``collections_letters``: at every run, one letter per overdue, undisputed invoice with
  no promise running whose days past due call for a level not sent yet, at that level;
  no other letter.
- ``collections_writes``: the agent writes nothing the policy's steps do not (no
  write-off, fee allowance, refund, own credit memo, invoice or journal entry).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from typing import Any, ClassVar, Literal

import orjson

from checks.context import CheckContext
from checks.registry import CheckResult, CheckSpec, check_type
from checks.state import listing, plural
from erp import events as ev
from erp.events import decode_event
from erp.money import display_cents
from erp.store import StoredEvent

_KIND = "collections_book"
LEVEL_DAYS = ((61, 3), (31, 2), (1, 1))
"""Days past due from which each level is due (highest first)."""
HOLD_DAYS = 61


def level_for(days_past_due: int) -> int:
    """The letter level a number of days past due calls for (0: not overdue)."""
    return next((level for days, level in LEVEL_DAYS if days_past_due >= days), 0)


@dataclass(frozen=True)
class Email:
    """An email the collections desk acts on, as its truth says."""

    what: str
    delivered_on: date
    customer_id: str
    invoice_id: str
    amount: int
    outcome: str = ""
    pay_by: date | None = None
    reason: str = ""
    """A dispute's reason, short (``training day cancelled``): the customer's words for it
    name at least one of its words."""


@dataclass
class Facts:
    """What happened in the world: invoices, emails, payments and their bank lines."""

    invoices: dict[str, tuple[str, date, int]] = field(default_factory=dict)
    """Invoice -> (customer, due date, amount)."""
    emails: list[Email] = field(default_factory=list)
    deposits: list[tuple[date, str, str, tuple[tuple[str, int], ...]]] = field(
        default_factory=list)
    """(posted on, bank line, customer, ((invoice, amount), ...)) per deposit."""
    runs: tuple[date, ...] = ()
    """The days of the weekly runs (the scenario's turns), as the injection recorded them."""


@dataclass
class Run:
    """What one run should record."""

    day: date
    disputes: set[tuple[str, int]] = field(default_factory=set)
    rulings: set[tuple[str, str, int]] = field(default_factory=set)
    promises: set[tuple[str, int, date]] = field(default_factory=set)
    holds: set[str] = field(default_factory=set)
    releases: set[str] = field(default_factory=set)
    letters: set[tuple[str, int]] = field(default_factory=set)


def world_facts(ctx: CheckContext) -> Facts:
    """The instance's collections facts from the world realm (cached per context)."""
    def load() -> Facts:
        f = Facts()
        payments: dict[str, tuple[str, tuple[tuple[str, int], ...]]] = {}
        for e in ctx.store.read(realm="world", types=["injection_planted", "document_delivered",
                                                      "payment_sent", "bank_line_posted"]):
            data = orjson.loads(e.payload)
            if e.type == "injection_planted" and data.get("kind") == _KIND:
                f.runs = tuple(date.fromisoformat(d) for d in data["detail"].get("runs", []))
                for x in data["detail"].get("invoices", []):
                    f.invoices[x["invoice_id"]] = (x["customer_id"],
                                                   date.fromisoformat(x["due_on"]), x["amount"])
            elif e.type == "document_delivered":
                t = data.get("truth") or {}
                if t.get("collections") in ("dispute", "resolution", "promise"):
                    f.emails.append(Email(
                        t["collections"], date.fromisoformat(str(e.business_date)),
                        t["customer_id"], t["invoice_id"], int(t.get("amount", 0)),
                        t.get("outcome", ""),
                        date.fromisoformat(t["pay_by"]) if t.get("pay_by") else None,
                        str(t.get("reason", ""))))
            elif e.type == "payment_sent":
                payments[data["payment_id"]] = (data["customer_id"], tuple(
                    (a["doc_id"], a["amount"]) for a in data["allocations"]))
            elif e.type == "bank_line_posted" and data.get("source") in payments:
                cust, allocs = payments[data["source"]]
                f.deposits.append((date.fromisoformat(data["posted_on"]), data["line_id"],
                                   cust, allocs))
        return f
    return ctx.cached(("collections.facts",), load)


class _Clerk:
    """A faithful clerk's state from run to run (what the policy has recorded so far)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.sent: dict[str, int] = {}
        self.disputed: dict[str, int] = {}
        self.credited: dict[str, int] = defaultdict(int)
        self.promises: dict[str, tuple[int, date, int]] = {}
        self.held: set[str] = set()
        self.paid: dict[str, int] = defaultdict(int)
        self.day = date.min
        self.by_customer: dict[str, list[str]] = defaultdict(list)
        for iid, (cust, _, _) in sorted(facts.invoices.items()):
            self.by_customer[cust].append(iid)

    def open_(self, iid: str) -> int:
        return self.facts.invoices[iid][2] - self.paid[iid] - self.credited[iid]

    def days(self, iid: str) -> int:
        return (self.day - self.facts.invoices[iid][1]).days

    def overdue(self, iid: str) -> bool:
        return self.open_(iid) > 0 and iid not in self.disputed and self.days(iid) >= 1

    def kept(self, iid: str) -> bool:
        amount, _, base = self.promises[iid]
        return self.paid[iid] - base >= amount

    def running(self, iid: str) -> bool:
        return iid in self.promises and self.promises[iid][1] >= self.day and not self.kept(iid)

    def broken(self, iid: str) -> bool:
        return (iid in self.promises and self.promises[iid][1] < self.day
                and not self.kept(iid) and self.open_(iid) > 0)

    def work(self, day: date, prev: date) -> Run:
        """One run: receipts, disputes, rulings, promises, holds, letters."""
        run, f = Run(day), self.facts
        self.day = day
        self.paid = defaultdict(int)
        for posted, _, _, allocs in f.deposits:
            if posted < day:
                for iid, amount in allocs:
                    self.paid[iid] += amount
        new = [m for m in f.emails if prev < m.delivered_on <= day]
        for m in new:
            if m.what == "dispute" and m.invoice_id not in self.disputed:
                self.disputed[m.invoice_id] = m.amount
                run.disputes.add((m.invoice_id, m.amount))
        for m in new:
            if m.what == "resolution" and m.invoice_id in self.disputed:
                del self.disputed[m.invoice_id]
                self.credited[m.invoice_id] += m.amount
                run.rulings.add((m.invoice_id, m.outcome, m.amount))
        for m in new:
            if m.what == "promise" and m.pay_by is not None and self.open_(m.invoice_id) > 0:
                self.promises[m.invoice_id] = (m.amount, m.pay_by, self.paid[m.invoice_id])
                run.promises.add((m.invoice_id, m.amount, m.pay_by))
        for cust in sorted(self.held):
            if not any(self.overdue(i) for i in self.by_customer[cust]):
                self.held.discard(cust)
                run.releases.add(cust)
        for cust, iids in sorted(self.by_customer.items()):
            if cust not in self.held and any(
                    (self.overdue(i) and self.days(i) >= HOLD_DAYS) or self.broken(i)
                    for i in iids):
                self.held.add(cust)
                run.holds.add(cust)
        for iid in sorted(f.invoices):
            if not self.overdue(iid) or self.running(iid):
                continue
            level = level_for(self.days(iid))
            if level > self.sent.get(iid, 0):
                self.sent[iid] = level
                run.letters.add((iid, level))
        return run


def expected_runs(facts: Facts, turns: tuple[date, ...]) -> list[Run]:
    """Work the policy over the runs as a faithful clerk would, from the world's facts."""
    clerk, runs, prev = _Clerk(facts), [], date.min
    for day in sorted(turns):
        runs.append(clerk.work(day, prev))
        prev = day
    return runs


def _erp(ctx: CheckContext, *types: str) -> list[ev.Event]:
    return [e for _, e in _erp_rows(ctx, *types)]


def _erp_rows(ctx: CheckContext, *types: str) -> list[tuple[StoredEvent, ev.Event]]:
    """The books' events of the types with their rows (the business date they were made)."""
    return [(e, decode_event(e.type, e.schema_version, e.payload))
            for e in ctx.store.read(realm="erp", types=list(types), until=ctx.position)]


def _runs(ctx: CheckContext) -> list[Run]:
    facts = world_facts(ctx)
    return ctx.cached(("collections.runs",), lambda: expected_runs(facts, facts.runs))


def _compare(what: str, want: set[Any], got: list[Any], show: Any) -> list[str]:
    """Missing and extra records (``got`` may hold one twice)."""
    problems = [f"missing {what} {show(x)}" for x in sorted(want - set(got), key=repr)]
    problems += [f"{what} {show(x)} not called for" for x in sorted(set(got) - want, key=repr)]
    seen: set[Any] = set()
    for x in got:
        if x in seen:
            problems.append(f"{what} {show(x)} recorded twice")
        seen.add(x)
    return problems


def _result(ok: str, problems: list[str], metrics: dict[str, Any]) -> CheckResult:
    if problems:
        return CheckResult("", False, f"{plural(len(problems), 'problem')}: {listing(problems)}",
                           {**metrics, "problems": len(problems)})
    return CheckResult("", True, ok, {**metrics, "problems": 0})


def _no_truth() -> CheckResult:
    return CheckResult("", False, f"no {_KIND} truth in the world realm (the scenario plants "
                                  "none)")


def _day(d: date) -> str:
    return d.isoformat()


def _same_word(word: str, written: str) -> bool:
    """Whether ``written`` is ``word`` inflected or spelled another way: they begin alike
    for five letters (``cancelled``/``canceled``, ``training``/``trainer``,
    ``returned``/``returns``), or the shorter, of four letters and at most two short of the
    other, is how the other begins (``seats``/``seat``, ``hours``/``hour``; not
    ``overbilled``/``over``)."""
    n = 0
    for a, b in zip(word, written, strict=False):
        if a != b:
            break
        n += 1
    return n >= 5 or (n >= 4 and n == min(len(word), len(written))
                      and abs(len(word) - len(written)) <= 2)


def names_reason(reason: str, recorded: str) -> bool:
    """Whether a dispute's recorded reason names the customer's ``reason`` (short, as its
    truth gives it: ``training day cancelled``): one of its words of five letters or more is
    in the recorded text (its hyphenated words joined: ``over-billed``), or a word of the
    recorded text is that word inflected or spelled another way (:func:`_same_word`:
    ``Trainer canceled the second day``). A reason with no such word is named by anything."""
    words = [w for w in reason.casefold().split() if len(w) >= 5]
    text = recorded.casefold()
    joined = re.sub(r"(?<=\w)[-\u2010\u2011](?=\w)", "", text)  # over-billed: overbilled
    written = re.findall(r"[^\W\d_]+", text)
    return not words or any(w in joined or any(_same_word(w, x) for x in written)
                            for w in words)


# --- the checks ---------------------------------------------------------------------------


class CollectionsReceipts(CheckSpec):
    """Every customer deposit applied as the payment meant, at the first run after it."""

    family: ClassVar[str] = "state"
    type: Literal["collections_receipts"]


@check_type(CollectionsReceipts)
def collections_receipts(spec: CollectionsReceipts, ctx: CheckContext) -> CheckResult:
    """Compare the receipts' applications with the payments' allocations."""
    facts = world_facts(ctx)
    if not facts.invoices:
        return _no_truth()
    turns = sorted(facts.runs)
    if not turns:
        return CheckResult("", False, f"the {_KIND} truth records no runs")
    customers: dict[str, str | None] = {}
    applied: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    dated: dict[str, set[date]] = defaultdict(set)
    for row, e in _erp_rows(ctx, "receipt_recorded", "receipt_customer_assigned",
                            "receipt_applied", "application_reversed"):
        if isinstance(e, ev.ReceiptRecorded | ev.ReceiptCustomerAssigned):
            customers[e.receipt_id] = e.customer_id
        elif isinstance(e, ev.ReceiptApplied):
            applied[e.receipt_id][e.invoice_id] += e.amount
            # dated as the run and made at it: an application made at a later run and
            # dated back to the run it was due at is still late
            dated[e.receipt_id] |= {e.entry_date, date.fromisoformat(row.business_date)}
        elif isinstance(e, ev.ApplicationReversed):
            applied[e.receipt_id][e.invoice_id] -= e.amount
    problems: list[str] = []
    due = 0
    expected_receipts: set[str] = set()
    for posted, line, cust, allocs in facts.deposits:
        after = [t for t in turns if t > posted]
        if not after:
            continue
        due += 1
        rid = f"RCT-{line}"
        expected_receipts.add(rid)
        want = {i: a for i, a in allocs}
        got = {i: a for i, a in applied.get(rid, {}).items() if a}
        if rid not in customers:
            problems.append(f"bank line {line} ({cust}) has no receipt {rid}")
            continue
        if customers[rid] != cust:
            problems.append(f"receipt {rid} is {customers[rid] or 'without a customer'}, "
                            f"paid by {cust}")
        if got != want:
            problems.append(f"receipt {rid} applied {_allocs(got)}, paid {_allocs(want)}")
        elif dated.get(rid, set()) - {after[0]}:
            problems.append(f"receipt {rid} applied or dated on "
                            f"{', '.join(map(_day, sorted(dated[rid])))}, expected "
                            f"{after[0]} (the first run after the deposit)")
    for rid in sorted(set(applied) - expected_receipts):
        if any(applied[rid].values()):
            problems.append(f"receipt {rid} applied ({_allocs(applied[rid])}) is no customer "
                            "payment of a run")
    return _result(f"{plural(due, 'deposit')} applied as paid", problems, {"deposits": due})


def _allocs(m: dict[str, int]) -> str:
    return ", ".join(f"{i} {display_cents(a)}" for i, a in sorted(m.items()) if a) or "nothing"


class CollectionsDisputes(CheckSpec):
    """Each emailed dispute recorded at the next run, on its invoice, for its amount."""

    family: ClassVar[str] = "state"
    type: Literal["collections_disputes"]


@check_type(CollectionsDisputes)
def collections_disputes(spec: CollectionsDisputes, ctx: CheckContext) -> CheckResult:
    """Compare the books' disputes with the customers' dispute emails."""
    if not world_facts(ctx).invoices:
        return _no_truth()
    want = {(r.day, i, a) for r in _runs(ctx) for i, a in r.disputes}
    recorded = [e for e in _erp(ctx, "invoice_disputed") if isinstance(e, ev.InvoiceDisputed)]
    got = [(e.opened_on, e.invoice_id, e.amount) for e in recorded]
    problems = _compare("dispute", want, got,
                        lambda x: f"of {x[1]} for {display_cents(x[2])} on {_day(x[0])}")
    # with the customer's reason: the recorded reason names at least one word of it
    reasons = {m.invoice_id: m.reason for m in world_facts(ctx).emails
               if m.what == "dispute" and m.reason}
    for e in recorded:
        if not names_reason(reasons.get(e.invoice_id, ""), e.reason):
            problems.append(f"dispute {e.dispute_id} of {e.invoice_id} gives the reason "
                            f"{e.reason[:60]!r}, not the customer's ({reasons[e.invoice_id]})")
    return _result(f"{plural(len(want), 'dispute')} recorded as emailed", problems,
                   {"disputes": len(want)})


class CollectionsRulings(CheckSpec):
    """Each dispute resolved at the next run after the sales manager's ruling, as ruled."""

    family: ClassVar[str] = "state"
    type: Literal["collections_rulings"]


@check_type(CollectionsRulings)
def collections_rulings(spec: CollectionsRulings, ctx: CheckContext) -> CheckResult:
    """Compare the books' resolutions with the sales manager's rulings."""
    if not world_facts(ctx).invoices:
        return _no_truth()
    want = {(r.day, i, o, a) for r in _runs(ctx) for i, o, a in r.rulings}
    resolved = [e for e in _erp(ctx, "dispute_resolved") if isinstance(e, ev.DisputeResolved)]
    got = [(e.resolved_on, e.invoice_id, e.outcome, e.amount) for e in resolved]
    problems = _compare("resolution", want, got,
                        lambda x: f"of {x[1]} {x[2]} {display_cents(x[3])} on {_day(x[0])}")
    # a credit only as ruled: every credit memo is a resolution's, on sales returns (the
    # books' default for a dispute's credit), never one of the clerk's own
    ruled = {e.credit_memo_id for e in resolved if e.outcome == "credited"}
    returns = _sales_returns(ctx)
    for row, e in _erp_rows(ctx, "credit_memo_issued"):
        if not isinstance(e, ev.CreditMemoIssued) or not row.actor.startswith("agent:"):
            continue
        memo = (f"credit memo {e.credit_memo_id} of {e.invoice_id} for "
                f"{display_cents(e.amount)} on {_day(e.entry_date)}")
        if e.credit_memo_id not in ruled:
            problems.append(f"{memo} resolves no dispute (a credit is made only as the sales "
                            "manager rules, by resolving the dispute)")
        elif returns is not None and e.account != returns:
            problems.append(f"{memo} is on account {e.account}, not sales returns {returns}")
    return _result(f"{plural(len(want), 'dispute')} resolved as ruled", problems,
                   {"rulings": len(want)})


def _sales_returns(ctx: CheckContext) -> str | None:
    """The company's sales returns account (where a dispute's credit memo goes)."""
    found = None
    for e in _erp(ctx, "company_set_up"):
        if isinstance(e, ev.CompanySetUp):
            found = e.accounts.sales_returns
    return found


class CollectionsPromises(CheckSpec):
    """Each emailed promise to pay recorded at the next run: invoice, amount and date."""

    family: ClassVar[str] = "state"
    type: Literal["collections_promises"]


@check_type(CollectionsPromises)
def collections_promises(spec: CollectionsPromises, ctx: CheckContext) -> CheckResult:
    """Compare the books' promises with the customers' promise emails."""
    if not world_facts(ctx).invoices:
        return _no_truth()
    want = {(r.day, i, a, d) for r in _runs(ctx) for i, a, d in r.promises}
    got = [(e.recorded_on, e.invoice_id, e.amount, e.pay_by)
           for e in _erp(ctx, "promise_to_pay_recorded") if isinstance(e, ev.PromiseToPayRecorded)]
    problems = _compare("promise", want, got,
                        lambda x: f"on {x[1]} of {display_cents(x[2])} by {_day(x[3])} "
                                  f"(recorded {_day(x[0])})")
    return _result(f"{plural(len(want), 'promise')} recorded as emailed", problems,
                   {"promises": len(want)})


class CollectionsHolds(CheckSpec):
    """Credit holds placed and released on the runs the policy calls for (a hold placed and
    released at the same run counts as neither)."""

    family: ClassVar[str] = "state"
    type: Literal["collections_holds"]


@check_type(CollectionsHolds)
def collections_holds(spec: CollectionsHolds, ctx: CheckContext) -> CheckResult:
    """Compare the books' holds with the policy's, run by run."""
    if not world_facts(ctx).invoices:
        return _no_truth()
    runs = _runs(ctx)
    want = {("place", r.day, cust) for r in runs for cust in r.holds}
    want |= {("release", r.day, cust) for r in runs for cust in r.releases}
    # a hold placed and released at the same run is a mistake corrected at that run (the
    # customer was never on hold between runs): neither counts, as an application reversed
    # at its run does not
    got: list[tuple[str, date, str]] = []
    limits: dict[int, str] = {}
    for e in _erp(ctx, "credit_hold_placed", "credit_hold_released"):
        if isinstance(e, ev.CreditHoldPlaced):
            if e.credit_limit != 0:
                limits[len(got)] = (f"hold {e.hold_id} on {e.customer_id} has limit "
                                    f"{display_cents(e.credit_limit)}, policy 0.00")
            got.append(("place", e.placed_on, e.customer_id))
        elif isinstance(e, ev.CreditHoldReleased):
            same_run = ("place", e.released_on, e.customer_id)
            if same_run in got:
                at = len(got) - 1 - got[::-1].index(same_run)
                got[at] = ("", e.released_on, "")
                limits.pop(at, None)
                continue
            got.append(("release", e.released_on, e.customer_id))
    problems = list(limits.values())
    got = [x for x in got if x[0]]
    problems += _compare("hold", want, got, lambda x: f"{x[0]} {x[2]} on {_day(x[1])}")
    placed = sum(1 for x in want if x[0] == "place")
    return _result(f"{plural(placed, 'hold')} placed and "
                   f"{plural(len(want) - placed, 'release')} as the policy says", problems,
                   {"holds": placed, "releases": len(want) - placed})


class CollectionsLetters(CheckSpec):
    """At every run, the dunning letters the policy calls for, and no other."""

    family: ClassVar[str] = "state"
    type: Literal["collections_letters"]


@check_type(CollectionsLetters)
def collections_letters(spec: CollectionsLetters, ctx: CheckContext) -> CheckResult:
    """Compare the books' letters with the policy's, run by run."""
    if not world_facts(ctx).invoices:
        return _no_truth()
    want = {(r.day, i, lv) for r in _runs(ctx) for i, lv in r.letters}
    got = [(e.sent_on, e.invoice_id, e.level) for e in _erp(ctx, "dunning_letter_sent")
           if isinstance(e, ev.DunningLetterSent)]
    problems = _compare("letter", want, got,
                        lambda x: f"level {x[2]} for {x[1]} on {_day(x[0])}")
    return _result(f"{plural(len(want), 'letter')} sent as the policy says", problems,
                   {"letters": len(want), "sent": len(got)})


class CollectionsWrites(CheckSpec):
    """The agent writes only what the policy's steps write: receipts assigned, applied (and
    an application reversed to correct it), disputes recorded and resolved (with a ruling's
    credit memo), promises, holds and letters; no write-off, fee allowance, refund, credit
    memo of its own, invoice or journal entry."""

    family: ClassVar[str] = "audit"
    type: Literal["collections_writes"]


POLICY_WRITES = frozenset({
    "receipt_customer_assigned", "receipt_applied", "application_reversed",
    "invoice_disputed", "dispute_resolved", "credit_memo_issued", "promise_to_pay_recorded",
    "credit_hold_placed", "credit_hold_released", "dunning_letter_sent"})
"""The books' events the policy's steps write (a ruling's credit memo is judged by
``collections_rulings``)."""


@check_type(CollectionsWrites)
def collections_writes(spec: CollectionsWrites, ctx: CheckContext) -> CheckResult:
    """List the agent's writes the policy calls for none of."""
    other: dict[str, list[str]] = defaultdict(list)
    writes = 0
    for e in ctx.store.read(realm="erp", until=ctx.position):
        if not e.actor.startswith("agent:"):
            continue
        writes += 1
        if e.type not in POLICY_WRITES:
            other[e.type].append(f"{e.stream} on {e.business_date}")
    problems = [f"{plural(len(where), t.replace('_', ' '))} ("
                + ", ".join(where[:3]) + (", ..." if len(where) > 3 else "") + ")"
                for t, where in sorted(other.items())]
    if problems:
        return CheckResult("", False, "writes no step of the policy calls for: "
                                      + "; ".join(problems),
                           {"writes": writes, "other": sum(map(len, other.values()))})
    return CheckResult("", True, f"{plural(writes, 'write')}, each of a step of the policy",
                       {"writes": writes, "other": 0})
