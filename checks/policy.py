"""Policy checks: the rules a scenario's prompt and policy state, one check each.

Each reads the books (read tables and the log), the world realm's truth where the rule
depends on it, and the agent's output files, and fails on the one plausible mistake it
names. They are what makes a wrong row, a wrong account or a payment made too early
fail, where the other checks look at totals only.

| type | passes when |
| --- | --- |
| ``payments_due_by`` | every bill the agent paid was due by the cutoff the policy gives |
| ``bank_minimum_balance`` | no write of the agent left a bank account below the minimum |
| ``bills_coded_to_default`` | every line of the agent's bills is on its vendor's account |
| ``entries_dated`` | the agent's entries are dated in their period (a bill on its invoice date) |
| ``credits_applied_as_named`` | each vendor credit went to the bill its note credits |
| ``event_accounts`` | the agent's fees, charges, interest... are on the accounts the policy gives |
| ``documents_listed`` | the exceptions file lists exactly the documents not acted on |
| ``genuine_bank_changes_requested`` | every genuine bank-detail change the agent saw is requested |
| ``unapplied_listed`` | the unapplied list names every receipt left unapplied, and only those |
| ``reconciliation_ties`` | a bank reconciliation file ties the statement to the books |
| ``aging_matches_books`` | an aging file holds the books' aging, row by row, to the cent |
| ``csv_ties`` | opening balances less what was applied equal the closing balances, per key |
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, replace
from datetime import date, timedelta
from email.utils import parseaddr
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from checks.context import CheckContext
from checks.errors import Unusable
from checks.files import Table, agent_csv, file_path, plain_typography
from checks.reconcile import reconciliation
from checks.registry import (
    CheckResult,
    CheckSpec,
    FileCheckSpec,
    Lookback,
    check_type,
    reconciled_on,
)
from checks.state import (
    bill_not_as_invoiced,
    end_of_turn,
    held_past_its_turn,
    listing,
    plural,
    rows,
    turn_contexts,
)
from checks.world import world_view
from erp import queries as q
from erp.books import document_number_key
from erp.errors import MoneyError
from erp.money import display_cents, parse_cents
from sim.engine import Phase
from sim.world_events import (
    BankChangeAsked,
    BankLinePosted,
    BillIssued,
    DocumentDelivered,
    PaymentSent,
    decode_world_event,
)


def _fails_on_unusable(fn: Callable[[Any, CheckContext], CheckResult]
                       ) -> Callable[[Any, CheckContext], CheckResult]:
    """A problem with the agent's file (:class:`Unusable`) is a failed result, not an error."""

    @functools.wraps(fn)
    def wrapper(spec: Any, ctx: CheckContext) -> CheckResult:
        try:
            return fn(spec, ctx)
        except Unusable as e:
            return CheckResult("", False, str(e))

    return wrapper


def _agent(ctx: CheckContext, actor: str) -> bool:
    return actor in ctx.agent_actors if ctx.agent_actors else actor.startswith("agent:")


def _until(ctx: CheckContext) -> int | None:
    return ctx.position


def written_cents(cell: str) -> int:
    """An amount in cents as a person or a spreadsheet writes it in a file: ``1234.5``,
    ``1,234.50``, ``-1234.50``, with a dollar sign (``$1,234.50``, ``-$1,234.50``) or, an
    accountant's negative, in parentheses (``(1,234.50)``, ``($1,234.50)``); MoneyError for
    anything else (a negative in parentheses as well, a word, more than two decimals, commas
    that do not group thousands: ``12,34.00`` is no amount, as :func:`parse_cents` says)."""
    text = cell.strip()
    negative = len(text) > 2 and text[0] == "(" and text[-1] == ")"
    if negative:
        text = text[1:-1].strip()
    if text[:2] in ("-$", "+$"):
        text = text[0] + text[2:]
    elif text[:1] == "$":
        text = text[1:]
    cents = parse_cents(text)
    if negative and text[:1] in ("-", "+"):
        raise MoneyError(f"amount: {cell!r} has a sign inside its parentheses")
    return -cents if negative else cents


def _cents(cell: str, what: str, *, blank: int | None = None) -> int:
    """:func:`written_cents` of an agent's cell (``blank`` for an empty cell, when given);
    :class:`Unusable` when it is no amount."""
    if blank is not None and not cell.strip():
        return blank
    try:
        return written_cents(cell)
    except MoneyError:
        raise Unusable(f"{what}: {cell!r} is not an amount (expected e.g. 1234.56)") from None


def _column(table: Table, name: str, rel: str) -> int:
    if name not in table.header:
        raise Unusable(f"{rel}: no column {name!r} (header: {', '.join(table.header)})")
    return table.header.index(name)


def _twice(values: Iterable[str]) -> list[str]:
    return sorted(v for v, n in Counter(values).items() if n > 1)


# --- payments_due_by ------------------------------------------------------------------------


class PaymentsDueBy(CheckSpec):
    """Every bill the agent paid was due by the cutoff: ``due_by`` (a date), the end
    (Sunday) of the week ``weeks_after`` weeks after the week of the payment (``1``: "due by
    the end of the following week"), or ``days_after`` days after the payment. Fails naming
    each bill paid early, with its due date."""

    family: ClassVar[str] = "audit"
    type: Literal["payments_due_by"]
    due_by: date | None = None
    weeks_after: int | None = Field(default=None, ge=0, le=52)
    days_after: int | None = Field(default=None, ge=0, le=366)
    all_due_paid_on: date | None = None
    """The day the policy's payment run is due (a month's last business day): when set,
    also fail on a bill open at the end that was due by that day's cutoff. The run pays
    everything then due, not some of it nor part of a bill, and not on another day."""

    @model_validator(mode="after")
    def _one_cutoff(self) -> PaymentsDueBy:
        if sum(x is not None for x in (self.due_by, self.weeks_after, self.days_after)) != 1:
            raise ValueError("give exactly one of due_by (a date), weeks_after (weeks after "
                             "the payment's week) or days_after (days after the payment)")
        return self

    def cutoff(self, paid_on: date) -> date:
        """The last due date a bill paid on ``paid_on`` may have."""
        if self.due_by is not None:
            return self.due_by
        if self.weeks_after is not None:
            return week_end_cutoff(paid_on, self.weeks_after)
        return paid_on + timedelta(days=self.days_after or 0)


def week_end_cutoff(day: date, weeks_after: int) -> date:
    """The end (Sunday) of the week ``weeks_after`` weeks after ``day``'s week."""
    return day + timedelta(days=6 - day.weekday() + 7 * weeks_after)


@check_type(PaymentsDueBy)
def payments_due_by(spec: PaymentsDueBy, ctx: CheckContext) -> CheckResult:
    """List bills the agent's payments paid before the policy let them be paid."""
    due: dict[str, str] = {}
    early: list[str] = []
    paid = 0
    for e in ctx.store.read(realm="erp", types=["bill_entered", "vendor_paid"],
                            until=_until(ctx)):
        d = e.data
        if e.type == "bill_entered":
            due[d["bill_id"]] = d["due_on"]
            continue
        if not _agent(ctx, e.actor):
            continue
        day = date.fromisoformat(d["entry_date"])
        cutoff = spec.cutoff(day)
        for a in d["applications"]:
            paid += 1
            on = date.fromisoformat(due.get(a["bill_id"], d["entry_date"]))
            if on > cutoff:
                early.append(f"{a['bill_id']} (due {on}, paid {day} by {d['payment_id']}; "
                             f"cutoff {cutoff})")
    unpaid: list[str] = []
    run_on = spec.all_due_paid_on
    run_cutoff = spec.cutoff(run_on) if run_on is not None else None
    if (run_on is not None and run_cutoff is not None
            and (ctx.as_of is None or ctx.as_of >= run_on)):
        unpaid = [f"{i.doc_id} ({i.party}, due {i.due_on}, {display_cents(i.open_amount)} "
                  "open)" for i in q.open_items(ctx.store, "ap", position=ctx.position)
                  if i.doc_kind == "bill" and i.open_amount > 0 and i.due_on is not None
                  and i.due_on <= run_cutoff.isoformat()]
    metrics = {"bills_paid": paid, "paid_early": len(early), "due_left_unpaid": len(unpaid)}
    problems = []
    if early:
        problems.append(f"{plural(len(early), 'bill')} paid before the policy allows: "
                        f"{listing(early)}")
    if unpaid:
        problems.append(f"{plural(len(unpaid), 'bill')} due by the cutoff {run_cutoff} of "
                        f"the payment run of {run_on} left open: {listing(unpaid)}")
    if problems:
        return CheckResult("", False, "; ".join(problems), metrics)
    return CheckResult("", True, f"{plural(paid, 'bill payment')} by the agent, each due by "
                                 "its cutoff" + (f", and every bill due by {run_cutoff} "
                                                 "paid" if run_cutoff is not None else ""),
                       metrics)


# --- bank_minimum_balance -------------------------------------------------------------------


class BankMinimumBalance(CheckSpec):
    """After every write of the agent that moved it, the bank GL ``account`` holds at
    least ``minimum`` (``"0.00"``: no overdraft)."""

    family: ClassVar[str] = "control"
    type: Literal["bank_minimum_balance"]
    account: str = Field(default="1000", min_length=1)
    minimum: str = "0.00"

    @field_validator("minimum")
    @classmethod
    def _money(cls, v: str) -> str:
        parse_cents(v)
        return v


@check_type(BankMinimumBalance)
def bank_minimum_balance(spec: BankMinimumBalance, ctx: CheckContext) -> CheckResult:
    """Walk the account's GL balance position by position; name the agent's writes that
    left it below the minimum."""
    floor = parse_cents(spec.minimum)
    limit = "" if ctx.position is None else " AND g.position <= ?"
    params: list[object] = [spec.account] + ([] if ctx.position is None else [ctx.position])
    moved = rows(ctx.store, "SELECT g.position, SUM(g.amount), e.actor, e.command FROM gl_lines g"
                            " JOIN events e ON e.position = g.position WHERE g.account = ?"
                            f"{limit} GROUP BY g.position, e.actor, e.command ORDER BY g.position",
                 params)
    balance, lowest, below = 0, None, []
    for position, amount, actor, command in moved:
        balance += int(amount)
        if _agent(ctx, actor):
            lowest = balance if lowest is None else min(lowest, balance)
            if balance < floor:
                below.append(f"{command} at position {position} by {actor}: "
                             f"{display_cents(balance)}")
    metrics = {"lowest_after_agent_cents": lowest, "writes_below": len(below)}
    if below:
        return CheckResult("", False, f"account {spec.account} went below "
                                      f"{display_cents(floor)} after "
                                      f"{plural(len(below), 'write')} of the agent: "
                                      f"{listing(below)}", metrics)
    return CheckResult("", True, f"account {spec.account} stayed at or above "
                                 f"{display_cents(floor)} after every write of the agent",
                       metrics)


# --- bills_coded_to_default -----------------------------------------------------------------


class BillsCodedToDefault(CheckSpec):
    """Every line of every bill the agent entered is coded to its vendor's default expense
    account: ``accounts[vendor]`` when given, else ``default`` (absent: the company's default
    expense account, the one the books use when a line names none)."""

    family: ClassVar[str] = "state"
    type: Literal["bills_coded_to_default"]
    default: str | None = Field(default=None, min_length=1)
    accounts: dict[str, str] = Field(default_factory=dict)


@check_type(BillsCodedToDefault)
def bills_coded_to_default(spec: BillsCodedToDefault, ctx: CheckContext) -> CheckResult:
    """List bill lines on another account than their vendor's."""
    default = spec.default
    if default is None:
        setup = next(iter(ctx.store.read(realm="erp", types=["company_set_up"])), None)
        default = setup.data["accounts"]["expense"] if setup is not None else "6000"
    wrong: list[str] = []
    lines = 0
    for e in ctx.store.read(realm="erp", types=["bill_entered"], until=_until(ctx)):
        if not _agent(ctx, e.actor):
            continue
        d = e.data
        want = spec.accounts.get(d["vendor_id"], default)
        for n, line in enumerate(d["lines"]):
            lines += 1
            if line["account"] != want:
                wrong.append(f"{d['bill_id']} line {n + 1} ({d['vendor_id']}, "
                             f"{display_cents(line['amount'])}) on {line['account']}, "
                             f"not {want}")
    metrics = {"bill_lines": lines, "miscoded": len(wrong)}
    if wrong:
        return CheckResult("", False, f"{plural(len(wrong), 'bill line')} coded to another "
                                      f"account than the vendor's: {listing(wrong)}", metrics)
    return CheckResult("", True, f"{plural(lines, 'bill line')} of the agent, each on its "
                                 "vendor's account", metrics)


# --- event_accounts -------------------------------------------------------------------------


class EventAccounts(CheckSpec):
    """Every event of the agent of a type in ``accounts`` posts its counter-account (the
    payload's ``account`` or ``discount_account``, or each line's) only to one of the
    accounts ``by_event`` lists for that type (``{fee_allowance_granted: ["6810"],
    bank_fee_recorded: ["6800"]}``): the policy's coding of card fees, bank charges,
    interest, credit notes, purchase discounts taken and journal entries."""

    family: ClassVar[str] = "audit"
    type: Literal["event_accounts"]
    by_event: dict[str, list[str]] = Field(min_length=1)


_ACCOUNT_FIELDS = ("account", "discount_account")
"""The payload fields an event names its counter-account in (``purchase_discount_taken``
keeps it in ``discount_account``)."""


@check_type(EventAccounts)
def event_accounts(spec: EventAccounts, ctx: CheckContext) -> CheckResult:
    """List the agent's postings on an account the policy does not give their kind."""
    wrong: list[str] = []
    seen = 0
    for e in ctx.store.read(realm="erp", types=sorted(spec.by_event), until=_until(ctx)):
        if not _agent(ctx, e.actor):
            continue
        d = e.data
        allowed = spec.by_event[e.type]
        codes = ([d[f] for f in _ACCOUNT_FIELDS if f in d]
                 or [x["account"] for x in d.get("lines", ())])
        for code in codes:
            seen += 1
            if code not in allowed:
                wrong.append(f"{e.type} at position {e.position} on {code} (expected "
                             f"{' or '.join(allowed)})")
    metrics = {"postings": seen, "miscoded": len(wrong)}
    if wrong:
        return CheckResult("", False, f"{plural(len(wrong), 'posting')} on an account the "
                                      f"policy does not give: {listing(wrong)}", metrics)
    return CheckResult("", True, f"{plural(seen, 'posting')} of the agent, each on its "
                                 "account", metrics)


# --- entries_dated --------------------------------------------------------------------------


class EntriesDated(CheckSpec):
    """The agent dates its entries as they happened: a bill on the vendor's invoice date
    (the world's ``issued_on``), and every other entry with an ``entry_date`` in the
    accounting month of its turn's business date, or of the business day before it (a
    turn early in a month finishes the month before). A date moved into another period
    fails."""

    family: ClassVar[str] = "audit"
    type: Literal["entries_dated"]
    max_days_back: int = Field(default=3, ge=0, le=31)
    on_turn_day: list[str] = Field(default_factory=list)
    """Event types of work a rule asks for at its own turn, dated when it is done: each
    dated the business date of the turn that wrote it (not done a turn late and dated
    back to the turn it was due)."""
    by_next_turn: list[str] = Field(default_factory=list)
    """Event types dated as on a paper (a statement line's day): each written at the first
    turn after that day, no turn of the agent's falling after it and before the turn that
    wrote it (not left a turn and recorded later under the paper's date)."""
    as_on_line: dict[str, str] = Field(default_factory=dict)
    """Event type -> the payload field naming its document: each such event dated as the
    statement line matched to that document (a returned deposit on the bank's day)."""
    bills_at_arrival: bool = False
    """Each vendor invoice entered at the first turn that had it in the inbox (its first
    delivery came before that turn's moment of the day), not held to a later turn and
    dated back to its invoice date; an invoice never delivered is not judged here."""
    bills_due_as_invoiced: bool = False
    """Each vendor invoice's bill also due on the date the invoice says (not a later one
    that keeps it out of a payment run)."""
    credits_at_arrival: bool = False
    """Each vendor credit note recorded at the first turn that had it in the inbox (as
    ``bills_at_arrival``), not held to a later turn and dated back to its own date."""


def bill_arrivals(ctx: CheckContext, number: str = "invoice_number"
                  ) -> dict[tuple[str, str], tuple[date, bool]]:
    """The first delivery of each vendor invoice (with ``number="credit_number"``: credit
    note) to the company's inbox, by ``(vendor_id, document_number_key(number))``: its
    business date, and whether it came before the moment of the day an agent's turn has
    (``Phase.TURN``); a delivery at that moment or later is counted as after the turn."""
    out: dict[tuple[str, str], tuple[date, bool]] = {}
    for e in ctx.store.read(realm="world", types=["document_delivered"], until=_until(ctx)):
        truth = e.data.get("truth") or {}
        vendor, written = truth.get("vendor_id"), truth.get(number)
        if not isinstance(vendor, str) or not isinstance(written, str):
            continue
        key = (vendor, document_number_key(written))
        if key not in out:
            before = e.sim_time is not None and (e.sim_time % 1.0) < float(Phase.TURN) - 1e-9
            out[key] = (date.fromisoformat(e.business_date), before)
    return out


@check_type(EntriesDated)
def entries_dated(spec: EntriesDated, ctx: CheckContext) -> CheckResult:
    """List the agent's entries dated outside their period (or a bill not on its date)."""
    issued: dict[tuple[str, str], dict[str, Any]] = {}
    for e in ctx.store.read(realm="world", types=["bill_issued"]):
        d = e.data
        issued[(d["vendor_id"], document_number_key(d["invoice_number"]))] = d
    wrong: list[str] = []
    seen = 0
    turn_days = sorted(set(ctx.turn_dates))
    line_day: dict[str, str] = {}
    doc_day: dict[str, str] = {}
    arrivals = bill_arrivals(ctx) if spec.bills_at_arrival else {}
    entered: set[tuple[str, str]] = set()
    credit_arrivals = bill_arrivals(ctx, "credit_number") if spec.credits_at_arrival else {}
    recorded: set[tuple[str, str]] = set()
    due_wrong = 0
    if spec.as_on_line:
        for e in ctx.store.read(realm="erp", until=_until(ctx), types=[
                "statement_line_imported", "statement_line_matched"]):
            d = e.data
            if e.type == "statement_line_imported":
                line_day[d["line_id"]] = d["entry_date"]
            elif d["line_id"] in line_day:
                for t in d.get("targets") or ():
                    doc_day[t["doc_id"]] = line_day[d["line_id"]]
    for e in ctx.store.read(realm="erp", until=_until(ctx)):
        if not _agent(ctx, e.actor) or '"entry_date"' not in e.payload:
            continue
        d = e.data
        day = date.fromisoformat(d["entry_date"])
        seen += 1
        if e.type in spec.on_turn_day and d["entry_date"] != e.business_date:
            wrong.append(f"{e.type} at position {e.position} dated {day}, written at the "
                         f"turn of {e.business_date}")
            continue
        if e.type in spec.as_on_line:
            want = doc_day.get(str(d.get(spec.as_on_line[e.type])))
            if want is not None and d["entry_date"] != want:
                wrong.append(f"{e.type} at position {e.position} dated {day}, its statement "
                             f"line {want}")
                continue
        if e.type in spec.by_next_turn:
            skipped = [t for t in turn_days
                       if day < t < date.fromisoformat(e.business_date)]
            if skipped:
                wrong.append(f"{e.type} at position {e.position} dated {day}, written at "
                             f"the turn of {e.business_date}, not at the turn of {skipped[0]}")
                continue
        if e.type == "bill_entered":
            key = (d["vendor_id"], document_number_key(d["vendor_invoice_number"]))
            invoice = issued.get(key)
            off = [] if invoice is None else bill_not_as_invoiced(
                f"bill {d['bill_id']}", d["entry_date"], d["due_on"], invoice,
                due=spec.bills_due_as_invoiced)
            wrong += off
            due_wrong += bool(off) and spec.bills_due_as_invoiced and invoice is not None \
                and d["due_on"] != invoice["due_on"]
            arrival = arrivals.get(key)
            if not off and arrival is not None and key not in entered:
                held = held_past_its_turn(
                    f"bill {d['bill_id']} ({d['vendor_id']} invoice "
                    f"{d['vendor_invoice_number']})", arrival[0],
                    date.fromisoformat(e.business_date), turn_days, before_turn=arrival[1])
                if held:
                    wrong.append(held)
            entered.add(key)
            continue
        if e.type == "vendor_credit_recorded" and credit_arrivals:
            key = (d["vendor_id"], document_number_key(d["vendor_credit_number"]))
            arrival = credit_arrivals.get(key)
            if arrival is not None and key not in recorded:
                recorded.add(key)
                held = held_past_its_turn(
                    f"vendor credit {d['credit_id']} ({d['vendor_id']} credit note "
                    f"{d['vendor_credit_number']})", arrival[0],
                    date.fromisoformat(e.business_date), turn_days, verb="recorded",
                    before_turn=arrival[1])
                if held:
                    wrong.append(held)
                    continue
        business = date.fromisoformat(e.business_date)
        months = {(business.year, business.month)}
        back = business - timedelta(days=spec.max_days_back)
        if back.month != business.month and business.day <= spec.max_days_back:
            months.add((back.year, back.month))
        if (day.year, day.month) not in months:
            wrong.append(f"{e.type} at position {e.position} dated {day} in a turn of "
                         f"{business}")
    metrics = {"dated_entries": seen, "misdated": len(wrong)}

    def entries(n: int) -> str:
        return f"{n} {'entry' if n == 1 else 'entries'}"

    if wrong:
        return CheckResult("", False, f"{entries(len(wrong))} dated outside their period"
                                      f"{' or not as invoiced' if due_wrong else ''}: "
                                      f"{listing(wrong)}", metrics)
    return CheckResult("", True, f"{entries(seen)} of the agent dated, each in its period",
                       metrics)


# --- statement_lines_as_posted -----------------------------------------------------------


class StatementLinesAsPosted(CheckSpec):
    """Every statement line the agent imported is a line its bank posted, under the bank's
    line id, with its date and amount (not an id of the clerk's own), and is matched in the
    books by the end (a bank charge or interest recorded with its statement line)."""

    family: ClassVar[str] = "control"
    type: Literal["statement_lines_as_posted"]


@check_type(StatementLinesAsPosted)
def statement_lines_as_posted(spec: StatementLinesAsPosted, ctx: CheckContext) -> CheckResult:
    """List the agent's imported lines the bank never posted so, or left unmatched."""
    bank: dict[tuple[str, str], tuple[str, int]] = {}
    for e in ctx.store.read(realm="world", types=["bank_line_posted"]):
        d = e.data
        bank[(d["bank_account_id"], d["line_id"])] = (d["posted_on"], d["amount"])
    imported: dict[tuple[str, str], tuple[str, int]] = {}
    matched: dict[tuple[str, str], bool] = {}
    for e in ctx.store.read(realm="erp", until=_until(ctx), types=[
            "statement_line_imported", "statement_line_matched", "statement_line_unmatched"]):
        d = e.data
        key = (d["bank_account_id"], d["line_id"])
        if e.type == "statement_line_imported":
            if _agent(ctx, e.actor):
                imported[key] = (d["entry_date"], d["amount"])
        else:
            matched[key] = e.type == "statement_line_matched"
    wrong: list[str] = []
    for key, (day, amount) in sorted(imported.items()):
        account, line_id = key
        posted = bank.get(key)
        if posted is None:
            wrong.append(f"{account} line {line_id} of {day} for {display_cents(amount)} is "
                         "no line of the bank's under that id")
        elif posted != (day, amount):
            wrong.append(f"{account} line {line_id} imported as {day} {display_cents(amount)}, "
                         f"posted by the bank as {posted[0]} {display_cents(posted[1])}")
        elif not matched.get(key):
            wrong.append(f"{account} line {line_id} of {day} left unmatched")
    metrics = {"imported": len(imported), "wrong": len(wrong)}
    if wrong:
        return CheckResult("", False, f"{len(wrong)} of {len(imported)} imported statement "
                                      f"lines not as the bank posted them or unmatched: "
                                      f"{listing(wrong)}", metrics)
    return CheckResult("", True, f"{len(imported)} imported statement lines, each as the bank "
                                 "posted it and matched", metrics)


# --- credits_applied_as_named -------------------------------------------------------------


class CreditsAppliedAsNamed(CheckSpec):
    """Every vendor credit the agent applied went to the bill its credit note names (the
    world's ``for_bill_ref``: the bill entered under that invoice's number), not to another
    bill of the vendor."""

    family: ClassVar[str] = "audit"
    type: Literal["credits_applied_as_named"]


@check_type(CreditsAppliedAsNamed)
def credits_applied_as_named(spec: CreditsAppliedAsNamed, ctx: CheckContext) -> CheckResult:
    """List credit applications to another bill than the one the note credits."""
    numbers: dict[str, tuple[str, str]] = {}
    named: dict[tuple[str, str], str] = {}
    for e in ctx.store.read(realm="world", types=["bill_issued", "credit_note_issued"]):
        d = e.data
        if e.type == "bill_issued":
            numbers[d["bill_ref"]] = (d["vendor_id"], document_number_key(d["invoice_number"]))
        elif d.get("for_bill_ref") in numbers:
            named[(d["vendor_id"], document_number_key(d["number"]))] = d["for_bill_ref"]
    bills: dict[str, tuple[str, str]] = {}
    credits: dict[str, tuple[str, str]] = {}
    wrong: list[str] = []
    seen = 0
    for e in ctx.store.read(realm="erp", types=["bill_entered", "vendor_credit_recorded",
                                                "vendor_credit_applied"], until=_until(ctx)):
        d = e.data
        if e.type == "bill_entered":
            bills[d["bill_id"]] = (d["vendor_id"], document_number_key(d["vendor_invoice_number"]))
        elif e.type == "vendor_credit_recorded":
            credits[d["credit_id"]] = (d["vendor_id"],
                                       document_number_key(d["vendor_credit_number"]))
        elif _agent(ctx, e.actor):
            ref = named.get(credits.get(d["credit_id"], ("", "")))
            if ref is None:
                continue
            seen += 1
            if bills.get(d["bill_id"]) != numbers[ref]:
                wrong.append(f"{d['credit_id']} applied to {d['bill_id']}, not to the bill of "
                             f"invoice {numbers[ref][1]}")
    metrics = {"applications": seen, "misapplied": len(wrong)}
    if wrong:
        return CheckResult("", False, f"{plural(len(wrong), 'credit application')} to another "
                                      f"bill than the note credits: {listing(wrong)}", metrics)
    return CheckResult("", True, f"{plural(seen, 'credit application')}, each to the bill its "
                                 "note credits", metrics)


# --- documents_listed -----------------------------------------------------------------------


class DocumentsListed(FileCheckSpec):
    """The exceptions file (``path``, one row per document named in ``column`` by its file
    name) lists exactly the vendor documents the agent saw (in ``inbox/`` and
    ``inbox/archive/``) and did not act on: a second copy of an invoice (same or reformatted
    number), a bill above its quote, a bank-detail change that is not genuine, and any
    owed invoice, credit note or genuine change the books do not have. A document the books
    did act on must not be listed; none may be listed twice. A document may be named by its
    path in the workspace too (``inbox/NAME``, ``inbox/archive/NAME``: "its file name in
    ``inbox/``" read as a path names the same file), and a row naming no file the agent
    was sent (a name made up) fails. With ``vendor_column``, each
    listed document's row names its vendor: the vendor's id or the books' name for it, or
    the sender's name as the document writes it (for a vendor the books do not have)."""

    type: Literal["documents_listed"]
    column: str = Field(default="document", min_length=1)
    vendor_column: str | None = Field(default=None, min_length=1)
    reason_column: str | None = Field(default=None, min_length=1)
    """When set, each listed row's reason says why, in any words of the document's kind
    (:data:`REASON_WORDS`): a second copy (``duplicate``, ``already``, ``renumbered``...), a
    bill above its quote (``price``, ``quote``, ``above``, ``held``...), a credit note
    against a bill not entered (``held``, ``not entered``...), an unverified bank-detail
    change (``verified``, ``fraud``, ``address``, ``phone``...); any reason that is not
    blank for another document. A blank reason, a placeholder (``x``, ``-``) or the words
    of another kind (a resend listed as above its quote) fails."""
    each_turn: bool = False
    """When set, the file is judged as every agent turn left it (a file the prompt asks to
    keep): the documents that turn's inbox held and the books had not acted on when the
    turn ended. A turn may leave no file while it has nothing to list."""

    @field_validator("path")
    @classmethod
    def _one_file(cls, v: str) -> str:
        return file_path(v)


def _seen(ctx: CheckContext) -> set[str]:
    if ctx.workspace is None:
        return set()
    out: set[str] = set()
    for folder in ("inbox", "inbox/archive"):
        d = ctx.workspace / folder
        if d.is_dir():
            out.update(p.name for p in d.iterdir() if p.is_file())
    return out


def listed_document(cell: str) -> str:
    """The file name a row's document cell names: the cell stripped, and a path into the
    inbox (``inbox/NAME`` or ``inbox/archive/NAME``, with or without a leading ``./``)
    as its ``NAME``."""
    name = cell.strip()
    path = name.replace("\\", "/").removeprefix("./")
    for folder in ("inbox/archive/", "inbox/"):
        rest = path.removeprefix(folder)
        if rest != path and rest and "/" not in rest:
            return rest
    return name


def _names_key(name: str) -> str:
    return " ".join(name.split()).casefold()


def _written_names(doc: DocumentDelivered) -> set[str]:
    """The names a document gives its sender (keys of :func:`_names_key`): the email's display
    name, the name after "from" or "-" in the subject, and a text document's lines (its
    letterhead)."""
    out = {_names_key(parseaddr(doc.sender)[0])}
    for sep in (" from ", " - "):
        if sep in doc.subject:
            out.add(_names_key(doc.subject.rsplit(sep, 1)[1]))
    if doc.encoding is None:
        out.update(_names_key(line) for line in doc.content.splitlines())
    out.discard("")
    return out


def document_vendors(ctx: CheckContext) -> dict[str, set[str]]:
    """The vendor names (keys of :func:`_names_key`) a row may give each vendor document the
    agent saw, by file name: the vendor's id, the books' name for it, and the names the
    document gives its sender (all the clerk has when the books do not have the vendor, or
    the document names it otherwise)."""
    seen = _seen(ctx)
    books: dict[str, str] = {}
    for e in ctx.store.read(realm="erp", types=["vendor_registered"], until=_until(ctx)):
        books[str(e.data["vendor_id"])] = str(e.data["name"])
    out: dict[str, set[str]] = {}
    for w in _vendor_papers(ctx).docs:
        if w.filename not in seen:
            continue
        vendor = str(w.truth.get("vendor_id", ""))
        if not vendor:
            continue
        names = {_names_key(vendor)} | _written_names(w)
        if vendor in books:
            names.add(_names_key(books[vendor]))
        out[w.filename] = names
    return out


def expected_exceptions(ctx: CheckContext,
                        seen: set[str] | None = None) -> tuple[set[str], set[str]]:
    """``(documents to list, documents acted on)`` among those the agent saw (``seen``:
    the file names; by default those in the context's ``inbox/`` and ``inbox/archive/``)."""
    seen = _seen(ctx) if seen is None else seen
    papers = _vendor_papers(ctx)
    bills, asked = papers.bills, papers.asked
    docs = [w for w in papers.docs if w.filename in seen]
    entered: set[tuple[str, str]] = set()
    credited: set[tuple[str, str]] = set()
    requested: set[tuple[str, str, str]] = set()
    for e in ctx.store.read(realm="erp", types=["bill_entered", "vendor_credit_recorded",
                                                "vendor_bank_change_requested"],
                            until=_until(ctx)):
        d = e.data
        if e.type == "bill_entered":
            entered.add((d["vendor_id"], document_number_key(d["vendor_invoice_number"])))
        elif e.type == "vendor_credit_recorded":
            credited.add((d["vendor_id"], document_number_key(d["vendor_credit_number"])))
        else:
            b = d["new_bank"]
            requested.add((d["vendor_id"], b["routing"], b["account_number"]))
    listed: set[str] = set()
    acted: set[str] = set()
    for doc in docs:
        t = doc.truth
        vendor = str(t.get("vendor_id", ""))
        if "request_ref" in t and t["request_ref"] in asked:
            ch = asked[t["request_ref"]]
            done = (ch.vendor_id, ch.new_bank.routing, ch.new_bank.account_number) in requested
            (acted if ch.genuine and done else listed).add(doc.filename)
        elif "credit_number" in t:
            key = (vendor, document_number_key(str(t["credit_number"])))
            (acted if key in credited else listed).add(doc.filename)
        elif "bill_ref" in t and t.get("kind") != "quote" and t["bill_ref"] in bills:
            bill = bills[t["bill_ref"]]
            key = (bill.vendor_id, document_number_key(bill.invoice_number))
            ok = bill.kind == "original" and key in entered
            (acted if ok else listed).add(doc.filename)
    return listed, acted


REASON_WORDS: dict[str, tuple[str, ...]] = {
    "copy": ("duplicate", "dupe", "copy", "already", "again", "twice", "double", "repeat",
             "resen", "re-sen", "resubmi", "renumber", "re-number", "reformat", "reissue",
             "re-issue", "rebill", "re-bill", "same", "identical", "second", "earlier",
             "previous"),
    "price": ("pric", "quot", "above", "agreed", "over", "higher", "exceed", "more than",
              "variance", "held", "hold", "discrepan"),
    "credit": ("held", "hold", "not entered", "not in the books", "not recorded", "not booked",
               "no bill", "not found", "missing", "no matching", "unmatched", "pric",
               "quot", "above", "reject", "declin", "disput", "not owed", "no such",
               "not on file", "never"),
    "bank": ("verif", "fraud", "phone", "call", "address", "domain", "suspicious", "look-alike",
             "lookalike", "spoof", "phish", "genuine", "sender", "impersonat", "scam",
             "confirm", "unusual", "match", "mobile", "unknown", "red flag", "urgen"),
}
"""The words a listed document's reason may use to say why, by the document's kind."""


def exception_kinds(ctx: CheckContext) -> dict[str, str]:
    """The kind of each vendor document the truth says is not to be acted on (a key of
    :data:`REASON_WORDS`), by file name: a resend or renumbered copy, a bill above its
    quote, a credit note (listed only when its bill is not in the books), a bank-detail
    change that is not genuine."""
    papers = _vendor_papers(ctx)
    bills, asked = papers.bills, papers.asked
    out: dict[str, str] = {}
    for w in papers.docs:
        t = w.truth
        if "request_ref" in t and t["request_ref"] in asked:
            if not asked[t["request_ref"]].genuine:
                out[w.filename] = "bank"
        elif "credit_number" in t:
            out[w.filename] = "credit"
        elif "bill_ref" in t and t.get("kind") != "quote" and t["bill_ref"] in bills:
            kind = bills[t["bill_ref"]].kind
            if kind in ("duplicate", "near_duplicate"):
                out[w.filename] = "copy"
            elif kind == "price_variance":
                out[w.filename] = "price"
    return out


@dataclass(frozen=True)
class _VendorPapers:
    """The vendors' side of the documents the company received: their bills by reference,
    the bank-detail changes they asked for by request, and every document delivered."""

    bills: dict[str, BillIssued]
    asked: dict[str, BankChangeAsked]
    docs: list[DocumentDelivered]


_VENDOR_PAPERS = ("checks.policy.vendor_papers",)
"""The cache key of :func:`_vendor_papers`."""


def _vendor_papers(ctx: CheckContext) -> _VendorPapers:
    """:class:`_VendorPapers` from the world realm, read once per evaluation: the whole
    realm, whatever the context's position or workspace (its documents are filtered by
    those the agent saw where they are used), so one read serves every turn's context."""
    def read() -> _VendorPapers:
        papers = _VendorPapers({}, {}, [])
        for e in ctx.store.read(realm="world", types=["bill_issued", "bank_change_asked",
                                                      "document_delivered"]):
            w = decode_world_event(e.type, e.payload)
            if isinstance(w, BillIssued):
                papers.bills[w.bill_ref] = w
            elif isinstance(w, BankChangeAsked):
                papers.asked[w.request_ref] = w
            elif isinstance(w, DocumentDelivered):
                papers.docs.append(w)
        return papers
    return ctx.cached(_VENDOR_PAPERS, read)


_KIND_SAYS = {"copy": "a second copy of an invoice already received",
              "price": "a bill above its quote", "credit": "a credit note",
              "bank": "a bank-detail change that cannot be verified"}


def _reason_says(reason: str, kind: str | None,
                 words: dict[str, tuple[str, ...]] = REASON_WORDS) -> bool:
    """Whether a listed document's reason says why in its kind's words (``words[kind]``;
    any reason with a letter or digit in it for a document of no kind)."""
    said = " ".join(plain_typography(reason).casefold().split())
    if not re.search(r"[a-z0-9]", said) or said in ("x", "n/a", "na", "tbd", "todo", "none"):
        return False
    return kind is None or any(w in said for w in words[kind])


@check_type(DocumentsListed)
@_fails_on_unusable
def documents_listed(spec: DocumentsListed, ctx: CheckContext) -> CheckResult:
    """Compare the file's documents with those the truth and the books say to list."""
    if spec.each_turn:
        return _documents_listed_each_turn(spec, ctx)
    return _documents_listed(spec, ctx)


def _documents_listed_each_turn(spec: DocumentsListed, ctx: CheckContext) -> CheckResult:
    """:func:`documents_listed` as each agent turn left the file and the books: the
    documents seen by then are those of that turn's inbox and every earlier one's (a turn's
    folder keeps the inbox it was given; later turns find it in ``inbox/archive/``)."""
    bad: list[str] = []
    seen: set[str] = set()
    papers = _vendor_papers(ctx)
    for day, at in turn_contexts(ctx):
        at.cache[_VENDOR_PAPERS] = papers  # the whole world realm's, whatever the turn
        seen |= _seen(at)
        if at.workspace is None or not (at.workspace / spec.path).exists():
            if expected_exceptions(at, seen)[0]:
                bad.append(f"the turn of {day.isoformat()} left no {spec.path}")
            continue
        try:
            r = _documents_listed(spec, at, set(seen))
        except Unusable as e:
            bad.append(f"the turn of {day.isoformat()}: {e}")
            continue
        if not r.passed:
            bad.append(f"the turn of {day.isoformat()}: {r.detail}")
    metrics = {"turns": len(set(ctx.turn_dates)), "turns_failed": len(bad)}
    if bad:
        return CheckResult("", False, f"{plural(len(bad), 'turn')} left {spec.path} wrong: "
                                      + "; ".join(bad[:3])
                                      + (f"; and {len(bad) - 3} more" if len(bad) > 3 else ""),
                           metrics)
    return CheckResult("", True, f"{spec.path} listed what was not acted on as each of "
                                 f"{plural(metrics['turns'], 'turn')} left it", metrics)


def _documents_listed(spec: DocumentsListed, ctx: CheckContext,
                      seen: set[str] | None = None) -> CheckResult:
    """:func:`documents_listed` once: the context's file against its books (``seen``: the
    documents the agent had been sent, by default its workspace's inbox and archive)."""
    table = agent_csv(ctx, spec.path)
    col = _column(table, spec.column, spec.path)
    names = [listed_document(r[col]) for r in table.rows]
    seen = _seen(ctx) if seen is None else seen
    want, acted = expected_exceptions(ctx, seen)
    got = set(names)
    missing = sorted(want - got)
    wrong = sorted(got & acted)
    twice = _twice(names)
    unknown = sorted(n for n in got if seen and n not in seen)
    other: list[str] = []
    if spec.vendor_column is not None:
        vcol = _column(table, spec.vendor_column, spec.path)
        vendors = document_vendors(ctx)
        for r in table.rows:
            name, given = listed_document(r[col]), r[vcol].strip()
            if name in want and name in vendors and _names_key(given) not in vendors[name]:
                other.append(f"{name} ({given!r})")
    unsaid: list[str] = []
    if spec.reason_column is not None:
        rcol = _column(table, spec.reason_column, spec.path)
        kinds = exception_kinds(ctx)
        for r in table.rows:
            name = listed_document(r[col])
            if name in want and not _reason_says(r[rcol], kinds.get(name)):
                unsaid.append(f"{name} ({r[rcol].strip()!r}" + (
                    f"; it is {_KIND_SAYS[kinds[name]]})" if name in kinds else ")"))
    metrics = {"expected": len(want), "listed": len(names), "missing": len(missing),
               "listed_but_acted_on": len(wrong), "twice": len(twice),
               "wrong_vendor": len(other), "reason_unsaid": len(unsaid),
               "not_in_inbox": len(unknown)}
    problems = []
    if unknown:
        problems.append(f"{plural(len(unknown), 'row')} naming no document the clerk was "
                        f"sent (in inbox/ or inbox/archive/): {listing(unknown)}")
    if unsaid:
        problems.append(f"{plural(len(unsaid), 'document')} listed with a reason that does "
                        f"not say why: {listing(unsaid)}")
    if other:
        problems.append(f"{plural(len(other), 'document')} listed under another vendor than "
                        f"the one that sent {'it' if len(other) == 1 else 'them'}: "
                        f"{listing(other)}")
    if missing:
        problems.append(f"{plural(len(missing), 'document')} not acted on but not listed: "
                        f"{listing(missing)}")
    if wrong:
        problems.append(f"{plural(len(wrong), 'document')} listed though the books acted on "
                        f"{'it' if len(wrong) == 1 else 'them'}: {listing(wrong)}")
    if twice:
        problems.append(f"listed twice: {listing(twice)}")
    if problems:
        return CheckResult("", False, f"{spec.path}: " + "; ".join(problems), metrics)
    return CheckResult("", True, f"{spec.path} lists the {plural(len(want), 'document')} not "
                                 "acted on, and only those", metrics)


# --- genuine_bank_changes_requested ---------------------------------------------------------


class GenuineBankChangesRequested(CheckSpec):
    """Every genuine bank-detail change a vendor asked for (the world's ``BankChangeAsked``
    with ``genuine: true``: from its usual address, offering the phone of its earlier
    documents) in a document the agent saw (in ``inbox/`` or ``inbox/archive/``) is
    requested in the books for that vendor with the new bank details: a verifiable change
    left unrequested (declined, listed as an exception) leaves the vendor paid to an
    account it is closing. Whether a fraudulent one is acted on is
    ``fraudulent_change_not_approved``'s."""

    family: ClassVar[str] = "audit"
    type: Literal["genuine_bank_changes_requested"]

    def reads_workspace(self) -> bool:
        """It reads which documents the agent was given (its inbox)."""
        return True


@check_type(GenuineBankChangesRequested)
def genuine_bank_changes_requested(spec: GenuineBankChangesRequested,
                                   ctx: CheckContext) -> CheckResult:
    """List the genuine changes the agent saw and the books do not request."""
    seen = _seen(ctx)
    asked: dict[str, BankChangeAsked] = {}
    files: dict[str, str] = {}
    for e in ctx.store.read(realm="world", types=["bank_change_asked", "document_delivered"]):
        w = decode_world_event(e.type, e.payload)
        if isinstance(w, BankChangeAsked) and w.genuine:
            asked[w.request_ref] = w
        elif (isinstance(w, DocumentDelivered) and w.filename in seen
              and "request_ref" in w.truth):
            files.setdefault(str(w.truth["request_ref"]), w.filename)
    requested: set[tuple[str, str, str]] = set()
    for e in ctx.store.read(realm="erp", types=["vendor_bank_change_requested"],
                            until=_until(ctx)):
        b = e.data["new_bank"]
        requested.add((e.data["vendor_id"], b["routing"], b["account_number"]))
    due = {ref: ch for ref, ch in asked.items() if ref in files}
    missing = [f"{files[ref]} ({ch.vendor_id}, {ch.new_bank.masked()})"
               for ref, ch in sorted(due.items())
               if (ch.vendor_id, ch.new_bank.routing, ch.new_bank.account_number)
               not in requested]
    metrics = {"genuine_seen": len(due), "not_requested": len(missing)}
    if missing:
        return CheckResult("", False, f"{plural(len(missing), 'genuine bank-detail change')} "
                                      f"not requested in the books: {listing(missing)}",
                           metrics)
    return CheckResult("", True, f"{plural(len(due), 'genuine bank-detail change')} seen, "
                                 "each requested in the books", metrics)


# --- unapplied_listed -----------------------------------------------------------------------


class UnappliedListed(FileCheckSpec):
    """The unapplied list (``path``: one row per statement line left unapplied, ``column``
    naming the line (or the receipt), ``reason_column`` not blank) names every receipt that
    holds unapplied cash at the end and that the clerk could see on its last turn (recorded
    before the last turn's date: the bank feed records a day's deposits at its end, after
    the turn), however recent; and it names no receipt that is applied, none the feed
    recorded after the last turn (a line the clerk never had), no line twice."""

    type: Literal["unapplied_listed"]
    column: str = Field(default="line_id", min_length=1)
    reason_column: str = Field(default="reason", min_length=1)
    reason_words: bool = False
    """When set, each listed row's reason says why in any words of its line's kind, as the
    truth knows the line (:data:`UNAPPLIED_REASON_WORDS`): the bank's second copy of a line
    (``copy``, ``duplicate``, ``twice``, ``bank``...), a payment the customer sent again
    (``duplicate``, ``again``, ``already``, ``repeat``...), a payment for an invoice already
    paid (``closed``, ``paid``, ``already``...); any reason for another line. A placeholder
    (``x``, ``n/a``, ``-``) or only the words of another kind (a bank copy listed as a
    closed invoice, a known repeat as "cannot be placed") fails."""

    @field_validator("path")
    @classmethod
    def _one_file(cls, v: str) -> str:
        return file_path(v)


UNAPPLIED_REASON_WORDS: dict[str, tuple[str, ...]] = {
    "copy": ("duplicate", "dupe", "copy", "copies", "twice", "double", "export", "bank",
             "same", "identical", "repeat", "second", "one deposit", "already", "again"),
    "repeat": ("duplicate", "dupe", "twice", "again", "repeat", "double", "already", "second",
               "same", "previous", "earlier", "overpa", "refund", "resen", "re-sen", "closed",
               "paid"),
    "closed": ("closed", "paid", "settled", "duplicate", "dupe", "twice", "again", "already",
               "no open", "overpa", "refund", "double", "repeat"),
}
"""Words that say why a line stays unapplied, by its kind (``unapplied_listed``'s
``reason_words``): the bank exported it twice, the customer paid again, the payment names
an invoice already paid (a repeat names one too, so its words include the closed
invoice's)."""

_UNAPPLIED_SAYS = {"copy": "the bank's second copy of a line",
                   "repeat": "a payment the customer sent again",
                   "closed": "a payment for an invoice already paid"}


def unapplied_kinds(ctx: CheckContext) -> dict[str, str]:
    """The kind of each bank line the truth says stays unapplied for a reason of its own (a
    key of :data:`UNAPPLIED_REASON_WORDS`), by line id."""
    lines: dict[str, BankLinePosted] = {}
    payments: dict[str, PaymentSent] = {}
    for e in ctx.store.read(realm="world", types=["bank_line_posted", "payment_sent"]):
        w = decode_world_event(e.type, e.payload)
        if isinstance(w, BankLinePosted):
            lines[w.line_id] = w
        elif isinstance(w, PaymentSent):
            payments[w.payment_id] = w
    out: dict[str, str] = {}
    for line in lines.values():
        first = lines.get(line.duplicate_of or "")
        payment = payments.get(line.source or "")
        if first is not None and first.source == line.source:
            out[line.line_id] = "copy"
        elif payment is not None and payment.duplicate_of is not None:
            out[line.line_id] = "repeat"
        elif payment is not None and payment.behaviour == "pays_closed_invoice":
            out[line.line_id] = "closed"
    return out


@check_type(UnappliedListed)
@_fails_on_unusable
def unapplied_listed(spec: UnappliedListed, ctx: CheckContext) -> CheckResult:
    """Compare the listed lines with the receipts the books hold unapplied."""
    table = agent_csv(ctx, spec.path)
    col = _column(table, spec.column, spec.path)
    why = _column(table, spec.reason_column, spec.path)
    names = [r[col].strip() for r in table.rows]
    blank = [r[col].strip() for r in table.rows if not r[why].strip()]
    lines_of: dict[str, set[str]] = {}
    for line_id, matched in rows(ctx.store, "SELECT line_id, matched_to FROM statement_lines"):
        for kind, doc_id, *_ in json.loads(matched or "[]"):
            if kind == "receipt":
                lines_of.setdefault(doc_id, set()).add(line_id)
    last = ctx.end
    open_ = {i.doc_id: i for i in q.open_items(ctx.store, "unapplied_cash",
                                               position=ctx.position) if i.open_amount > 0}
    receipts = {d["doc_id"]: d for d in q.documents(ctx.store, "receipt")}
    got = set(names)
    missing = []
    for rid, item in sorted(open_.items()):
        if last is not None and item.doc_date is not None and item.doc_date >= last.isoformat():
            continue  # recorded after the last turn
        if not ({rid} | lines_of.get(rid, set())) & got:
            line = ", ".join(sorted(lines_of.get(rid, ()))) or "no line"
            missing.append(f"{rid} ({line}, {item.doc_date}, {display_cents(item.open_amount)})")
    by_name = {n: r for r, ls in lines_of.items() for n in ls} | {r: r for r in receipts}
    applied = sorted(n for n in got if n in by_name and by_name[n] not in open_)
    unknown = sorted(n for n in got if n not in by_name)
    # the bank feed's receipts of the last day came after the clerk's turn: a row naming one
    # is a line the clerk never had (an id made up that hit a later deposit)
    later = set()
    if last is not None:
        for e in ctx.store.read(realm="erp", types=["receipt_recorded"], until=_until(ctx)):
            if e.data["entry_date"] >= last.isoformat() and not e.actor.startswith("agent:"):
                later.add(str(e.data["receipt_id"]))
    unseen = sorted(n for n in got if n in by_name and by_name[n] in open_
                    and by_name[n] in later)
    twice = _twice(names)
    unsaid: list[str] = []
    if spec.reason_words:
        kinds = unapplied_kinds(ctx)
        for r in table.rows:
            name, reason = r[col].strip(), r[why]
            kind = kinds.get(name) or next(
                (kinds[x] for x in sorted(lines_of.get(name, ())) if x in kinds), None)
            if reason.strip() and not _reason_says(reason, kind, UNAPPLIED_REASON_WORDS):
                unsaid.append(f"{name} ({reason.strip()!r}"
                              + (f"; it is {_UNAPPLIED_SAYS[kind]})" if kind else ")"))
    metrics = {"listed": len(names), "missing": len(missing), "applied_listed": len(applied),
               "unknown": len(unknown), "twice": len(twice), "no_reason": len(blank),
               "unseen_listed": len(unseen), "reason_unsaid": len(unsaid)}
    problems = []
    if unseen:
        problems.append(f"listed though the bank feed recorded it after the last turn (the "
                        f"clerk could not have seen it): {listing(unseen)}")
    if missing:
        problems.append(f"{plural(len(missing), 'receipt')} left unapplied but not listed: "
                        f"{listing(missing)}")
    if applied:
        problems.append(f"listed though applied: {listing(applied)}")
    if unknown:
        problems.append(f"no such statement line or receipt: {listing(unknown)}")
    if twice:
        problems.append(f"listed twice: {listing(twice)}")
    if blank:
        problems.append(f"listed without a reason: {listing(blank)}")
    if unsaid:
        problems.append(f"{plural(len(unsaid), 'line')} listed with a reason that does not "
                        f"say why: {listing(unsaid)}")
    if problems:
        return CheckResult("", False, f"{spec.path}: " + "; ".join(problems), metrics)
    return CheckResult("", True, f"{spec.path} lists every receipt left unapplied "
                                 f"({len(names)}), each with a reason", metrics)


# --- reconciliation_ties --------------------------------------------------------------------


class ReconciliationTies(FileCheckSpec):
    """A bank reconciliation file (``path``, columns ``item``, ``amount``) made on
    ``as_of``: its first row is the bank's statement balance of the account as of that
    date, its last row the book balance of GL ``account`` when the turn ended, and the first
    row plus every reconciling item equals the last, to the cent; no item is an
    unexplained difference, and no row between the first and the last is named as a
    balance (``statement balance``, ``book balance``, ``balance per bank``...): a
    reconciliation holds one of each, and a reconciling item under a balance's name is
    mislabelled even when the figures tie. So is a first row named as the book balance, a
    last one named as the statement's, and an item whose label says which way it moves the
    statement balance (:func:`item_sign`) with an amount of the other sign (two items'
    labels swapped). Amounts are read as :func:`written_cents` reads them (``-972.00``,
    ``(972.00)``, ``-$972.00``)."""

    type: Literal["reconciliation_ties"]
    as_of: date
    account: str = Field(default="1000", min_length=1)
    bank_account: str = Field(default="B-OPER", min_length=1)
    items_as_books: bool = False
    """Also: the items (the rows between the first and the last, zero amounts aside) are,
    amount for amount, the account's reconciling items when the turn ended
    (:func:`reconciling_items`); an item made up or left out fails even when the figures
    tie (a real item's amount under a label of the clerk's own is not judged here)."""

    @field_validator("path")
    @classmethod
    def _one_file(cls, v: str) -> str:
        return file_path(v)

    def lookbacks(self) -> frozenset[Lookback]:
        """Its date: the bank's records as of it at the log's head (the statement)."""
        return frozenset({(self.as_of, "checks.world")})

    def turn_lookbacks(self) -> frozenset[Lookback]:
        """With ``items_as_books``, the reconciliation as of its date when that date's
        turn ended (:func:`reconciling_items`)."""
        return reconciled_on(self.as_of) if self.items_as_books else frozenset()

    def ahead(self, ctx: CheckContext, day: date) -> None:
        """With ``items_as_books``, on its date: the reconciling items at that turn's end."""
        if self.items_as_books and day == self.as_of:
            reconciling_items(ctx, self)


STATEMENT_NAMES = ("statement balance", "bank statement balance", "balance per bank",
                   "balance per statement", "balance per the bank", "bank balance")
"""How a reconciliation's item column names the bank's statement balance (lower-cased, spaces
collapsed, at its start)."""

BOOK_NAMES = ("book balance", "books balance", "balance per book", "balance per the book")
"""How it names the book balance."""

BALANCE_NAMES = (*STATEMENT_NAMES, *BOOK_NAMES, "ending balance", "closing balance")
"""How a reconciliation's item column names a balance; ``reconciliation_ties`` refuses one
on a row between the first and the last, the book balance's name on the first row and the
statement's on the last."""

_BOOKS_SIDE_FIRST = ("books recorded", "book recorded", "recorded in the books",
                     "recorded in books", "recorded from", "booked from")
_BANK_SIDE = ("not in the books", "not in books", "not in our books", "not recorded",
              "unrecorded", "not yet recorded", "returned", "nsf", "duplicate", "bank error")
_BOOKS_SIDE = ("in transit", "outstanding", "uncleared", "not cleared", "not on the statement",
               "not on statement", "not yet on the statement", "recorded")
_INFLOW = ("deposit", "receipt", "interest")
_OUTFLOW = ("payment", "cheque", "check", "fee", "charge", "refund", "withdrawal", "debit",
            "returned", "nsf")


def item_sign(label: str) -> int | None:
    """The sign a reconciling item's amount must have (the statement balance plus the items
    is the book balance) by what its label says, or None when it does not say enough.

    Its side: something the books recorded that the bank has not (``deposit in transit``,
    ``outstanding payment``, ``... recorded, not on the statement``, ``receipt the books
    recorded from the duplicate bank line``) or a bank line the books lack (``... not in the
    books``, ``returned item (NSF)``, ``duplicate bank line``); its direction: money in
    (deposit, receipt, interest) or out (payment, cheque, fee, charge, refund, NSF). Money
    in that the books hold and the bank not yet is added; out, subtracted; a bank line's the
    other way round. A label naming both directions, or neither side, gives None."""
    text = " ".join(label.casefold().split())
    if any(k in text for k in _BOOKS_SIDE_FIRST):
        side = 1
    elif any(k in text for k in _BANK_SIDE):
        side = -1
    elif any(k in text for k in _BOOKS_SIDE):
        side = 1
    else:
        return None
    inflow = any(k in text for k in _INFLOW)
    outflow = any(k in text for k in _OUTFLOW)
    if inflow == outflow:
        return None
    return side if inflow else -side


def reconciling_items(ctx: CheckContext, spec: ReconciliationTies) -> list[tuple[int, str]]:
    """The reconciling items of ``spec.account`` a reconciliation made on ``spec.as_of``
    lists, each ``(amount, what)`` signed as the file signs it (the statement balance plus
    the items is the book balance): the account's items in
    :func:`checks.reconcile.reconciliation` as of that date at the end of that day's turn (a
    statement line the books lack, a book entry the statement lacks: its difference), and
    for a line the bank posted twice that the books recorded as well, the bank's copy (its
    amount turned) and what the books recorded from it. A line the bank posted that day
    after sending its statement (a same-day wire) is on no statement yet: the line is no
    item, what the books recorded of it is one."""
    # Worked out once per turn's end and kept in ``ctx.turn_ends``: the checks beside the
    # run work each out as soon as its turn is over (:meth:`ReconciliationTies.ahead`), and
    # the log up to a turn's end never changes.
    end = end_of_turn(ctx, spec.as_of)
    memo: dict[Hashable, list[tuple[int, str]]] = ctx.turn_ends.keep(
        ("checks.reconciling_items",), dict)
    key = (spec.account, spec.bank_account, spec.as_of, end,
           tuple(sorted(ctx.control_accounts.items())), tuple(sorted(set(ctx.turn_dates))))
    found = memo.get(key)
    if found is None:
        found = memo[key] = _reconciling_items(ctx, spec, end)
    return list(found)


def _reconciling_items(ctx: CheckContext, spec: ReconciliationTies,
                       end: int | None) -> list[tuple[int, str]]:
    # Folded on from the last look back to a turn's end (``ctx.turn_ends``): checks of
    # every month's file (fiscal-year's twelve) cost what the log gained since the last.
    at = replace(ctx, position=end, cache={}, folds=ctx.turn_ends)
    items: list[tuple[int, str, str]] = []
    for a in reconciliation(at, spec.as_of).accounts:
        if a.account != spec.account:
            continue
        for i in a.items:
            line = i.document.split(" ")[0]
            if i.difference:
                items.append((i.difference, f"{i.kind} {i.document}", line))
            elif i.kind == "bank_error" and i.external:
                items.append((-i.external, f"{i.document}, the bank's copy of a line", line))
                items.append((i.books or 0, f"what the books recorded from {i.document}", ""))
    world = world_view(at, spec.as_of)
    bank = world.banks.get(spec.bank_account)
    if bank is not None and any(d == spec.as_of for d in world.stated.values()):
        for x in bank.lines:
            if x.posted_on != spec.as_of or x.line_id in world.stated:
                continue
            own = next((k for k, (a, _, line) in enumerate(items)
                        if line == x.line_id and a == -x.amount), None)
            if own is not None:
                items.pop(own)
            else:
                items.append((x.amount, f"what the books recorded of {x.line_id}, a line "
                                        "posted after the statement", ""))
    return [(a, what) for a, what, _ in items]


@check_type(ReconciliationTies)
@_fails_on_unusable
def reconciliation_ties(spec: ReconciliationTies, ctx: CheckContext) -> CheckResult:
    """Read the file's amounts and set them against the bank and the books."""
    table = agent_csv(ctx, spec.path)
    item, amount = _column(table, "item", spec.path), _column(table, "amount", spec.path)
    if len(table.rows) < 2:
        raise Unusable(f"{spec.path}: expected the statement balance, the items and the book "
                       "balance (fewer than two rows)")
    amounts = [_cents(r[amount], f"{spec.path} row {n + 2}") for n, r in enumerate(table.rows)]
    world = world_view(ctx, spec.as_of)
    bank = world.banks.get(spec.bank_account)
    statement = None
    if bank is not None:
        # A statement sent on as_of shows what the bank had posted by then: a line it
        # posted later that day (a same-day wire) is on no statement yet.
        sent = any(d == spec.as_of for d in world.stated.values())
        statement = bank.opening + sum(
            x.amount for x in bank.lines if x.posted_on < spec.as_of or (
                x.posted_on == spec.as_of and (not sent or x.line_id in world.stated)))
    book = q.account_balance(ctx.store, spec.account, as_of=spec.as_of,
                             position=end_of_turn(ctx, spec.as_of))
    problems = []
    if statement is not None and amounts[0] != statement:
        problems.append(f"the first row says {display_cents(amounts[0])}, the bank's statement "
                        f"balance as of {spec.as_of} is {display_cents(statement)}")
    if amounts[-1] != book:
        problems.append(f"the last row says {display_cents(amounts[-1])}, the books' balance of "
                        f"{spec.account} at the end of the turn is {display_cents(book)}")
    total = sum(amounts[:-1])
    if total != amounts[-1]:
        problems.append(f"the statement balance plus the items is {display_cents(total)}, not "
                        f"the book balance {display_cents(amounts[-1])} (off by "
                        f"{display_cents(amounts[-1] - total)})")
    loose = [f"{display_cents(a)}" for r, a in zip(table.rows, amounts, strict=True)
             if "unexplained" in r[item].casefold() and a]
    if loose:
        problems.append(f"unexplained differences: {listing(loose)}")
    named = [f"row {n} {r[item].strip()!r}" for n, r in enumerate(table.rows[1:-1], start=3)
             if " ".join(r[item].casefold().split()).startswith(BALANCE_NAMES)]
    if named:
        problems.append(f"named as a balance between the statement balance (first row) and the "
                        f"book balance (last row), where the reconciling items go: "
                        f"{listing(named)}")
    first, last = (" ".join(r[item].casefold().split()) for r in (table.rows[0], table.rows[-1]))
    if first.startswith(BOOK_NAMES):
        problems.append(f"the first row is named as the book balance "
                        f"({table.rows[0][item].strip()!r}); it is the bank's statement balance")
    if last.startswith(STATEMENT_NAMES):
        problems.append(f"the last row is named as the statement balance "
                        f"({table.rows[-1][item].strip()!r}); it is the book balance")
    signs = [(n, r[item].strip(), a, item_sign(r[item]))
             for n, (r, a) in enumerate(zip(table.rows[1:-1], amounts[1:-1], strict=True),
                                        start=3)]
    wrong = [f"row {n} {label!r} ({display_cents(a)})" for n, label, a, sign in signs
             if sign is not None and a and (a > 0) != (sign > 0)]
    if wrong:
        problems.append("labelled as moving the statement balance the other way than its "
                        "amount does (money in that the books hold and the bank not yet is "
                        "added, money out subtracted; a bank line the books lack the other "
                        f"way round): {listing(wrong)}")
    if spec.items_as_books:
        left = Counter(a for a in amounts[1:-1] if a)
        lacking = []
        for a, what in reconciling_items(ctx, spec):
            if a and left[a] > 0:
                left[a] -= 1
            elif a:
                lacking.append(f"{display_cents(a)} ({what})")
        made_up = sorted((+left).elements())
        if lacking:
            problems.append(f"reconciling items not listed: {listing(lacking)}")
        if made_up:
            problems.append("items that are no reconciling item of the account when the turn "
                            f"ended: {listing([display_cents(a) for a in made_up])}")
    metrics = {"rows": len(amounts), "statement_cents": statement, "book_cents": book}
    if problems:
        return CheckResult("", False, f"{spec.path}: " + "; ".join(problems), metrics)
    return CheckResult("", True, f"{spec.path}: statement {display_cents(amounts[0])} + "
                                 f"{plural(len(amounts) - 2, 'item')} = book "
                                 f"{display_cents(book)}", metrics)


# --- due_bills_paid_at_turns ----------------------------------------------------------------


class DueBillsPaidAtTurns(CheckSpec):
    """At each of the agent's turns dated before ``before`` (the weekly turns of a close,
    whose rule is to pay what falls due within the week), every bill open in the books when
    the turn ended and due within ``days_after`` days of the turn's date (overdue included)
    was paid at that turn: one left open then is paid late or never, even when a later turn
    pays it. A turn pays only bills in the books: one entered later is judged at the turns
    after it (entered at its turn: ``entries_dated``'s ``bills_at_arrival``). With
    ``after``, only the turns dated after it (one month's weekly turns of several, after
    the last close's turn)."""

    family: ClassVar[str] = "audit"
    type: Literal["due_bills_paid_at_turns"]
    days_after: int = Field(ge=0, le=366)
    before: date
    after: date | None = None

    @model_validator(mode="after")
    def _after_before(self) -> DueBillsPaidAtTurns:
        if self.after is not None and self.after >= self.before:
            raise ValueError(f"after ({self.after}) must be earlier than before "
                             f"({self.before})")
        return self


@check_type(DueBillsPaidAtTurns)
def due_bills_paid_at_turns(spec: DueBillsPaidAtTurns, ctx: CheckContext) -> CheckResult:
    """List the bills each weekly turn left open though due within its week."""
    turns = sorted(d for d in set(ctx.turn_dates) if d < spec.before
                   and (spec.after is None or d > spec.after)
                   and (ctx.as_of is None or d <= ctx.as_of))
    left: list[str] = []
    # each turn's end as the whole log has it: this check has never held it to the
    # context's position (the same in grading, where the position is none or the log's head)
    for day, at in turn_contexts(replace(ctx, position=None), turns):
        cutoff = (day + timedelta(days=spec.days_after)).isoformat()
        left += [f"{i.doc_id} ({i.party}, due {i.due_on}, {display_cents(i.open_amount)} open "
                 f"after the turn of {day})"
                 for i in q.open_items(ctx.store, "ap", position=at.position)
                 if i.doc_kind == "bill" and i.due_on is not None and i.due_on <= cutoff]
    metrics = {"turns": len(turns), "left_unpaid": len(left)}
    if left:
        return CheckResult("", False, f"{plural(len(left), 'bill')} due within "
                                      f"{spec.days_after} days of a weekly turn left open at "
                                      f"it: {listing(left)}", metrics)
    return CheckResult("", True, f"every bill due within {spec.days_after} days of each of "
                                 f"{plural(len(turns), 'weekly turn')} paid at it", metrics)


# --- aging_matches_books --------------------------------------------------------------------


AGING_BUCKETS = ("current", "1-30", "31-60", "61-90", "over_90")


class AgingMatchesBooks(FileCheckSpec):
    """An aging file (``path``: ``customer``, the five buckets, ``total``) made on ``as_of``
    holds, customer by customer and to the cent, the books' open receivables by days past
    due as of that date when the turn ended; every customer with an open balance once.
    Amounts are read as :func:`written_cents` reads them, and an empty bucket may be blank.

    A row names its party as the books do (``C0002``), by the name the party is registered
    under (``Holmes, Robinson and Kim``; case, spaces and typography aside) or by both
    (``Holmes, Robinson and Kim (C0002)``: the one id it holds); a registered party with
    nothing open may have a row of zeros (an aging of every customer); one row whose party
    is a total (``TOTAL``, ``Grand total``) holds the books' totals of every column."""

    type: Literal["aging_matches_books"]
    as_of: date
    ledger: Literal["ar", "ap"] = "ar"
    party_column: str = Field(default="customer", min_length=1)

    @field_validator("path")
    @classmethod
    def _one_file(cls, v: str) -> str:
        return file_path(v)


_AGING_TOTAL = re.compile(r"^(grand )?totals?\b|\btotals?$")
"""How an aging's total row names itself (folded: :func:`_folded`): ``TOTAL``, ``Grand
total``, ``Total receivables``, ``All customers total``."""


def _folded(text: str) -> str:
    """A name as compared: typography plain, case folded, spaces collapsed."""
    return " ".join(plain_typography(text).casefold().split())


def registered_parties(ctx: CheckContext, ledger: str) -> tuple[set[str], dict[str, str]]:
    """The ids of the customers (``ledger`` ``ar``) or vendors (``ap``) registered in the
    books, and each one's name (:func:`_folded`) -> id; a name two share names neither."""
    kind, key = (("customer_registered", "customer_id") if ledger == "ar"
                 else ("vendor_registered", "vendor_id"))
    ids: set[str] = set()
    named: dict[str, str | None] = {}
    for e in ctx.store.read(realm="erp", types=[kind], until=_until(ctx)):
        pid, name = str(e.data[key]), _folded(str(e.data.get("name") or ""))
        ids.add(pid)
        if name:
            named[name] = None if named.get(name, pid) != pid else pid
    return ids, {n: i for n, i in named.items() if i is not None}


def ids_by_folded(ids: Iterable[str]) -> dict[str, str]:
    """Party ids keyed as :func:`party_written` looks them up (case folded)."""
    return {i.casefold(): i for i in ids}


def party_written(cell: str, by_id: dict[str, str], named: dict[str, str]) -> str | None:
    """The party id an aging's row names (:class:`AgingMatchesBooks`): its id, its
    registered name, or a text holding exactly one id as a word; None when none.
    ``by_id`` is :func:`ids_by_folded` of the ids, ``named`` registered name -> id."""
    folded = _folded(cell)
    if folded in by_id:
        return by_id[folded]
    if folded in named:
        return named[folded]
    held = {by_id[w] for w in re.findall(r"[\w-]+", folded) if w in by_id}
    return held.pop() if len(held) == 1 else None


@check_type(AgingMatchesBooks)
@_fails_on_unusable
def aging_matches_books(spec: AgingMatchesBooks, ctx: CheckContext) -> CheckResult:
    """Compare every row with the books' aging."""
    table = agent_csv(ctx, spec.path)
    party = _column(table, spec.party_column, spec.path)
    cols = [_column(table, c, spec.path) for c in (*AGING_BUCKETS, "total")]
    books = {a.party: (*a.buckets, a.total) for a in q.aging(
        ctx.store, spec.ledger, as_of=spec.as_of, position=end_of_turn(ctx, spec.as_of))}
    want = {p: f for p, f in books.items() if any(f)}
    ids, named = registered_parties(ctx, spec.ledger)
    ids |= set(books)
    by_id = ids_by_folded(ids)
    got: dict[str, tuple[int, ...]] = {}
    totals: list[tuple[int, str, tuple[int, ...]]] = []
    names = []
    for n, r in enumerate(table.rows):
        cell = r[party].strip()
        # an empty bucket may be left blank, as aging reports print it; the total is written
        figures = tuple(_cents(r[c], f"{spec.path} row {n + 2}",
                               blank=0 if c != cols[-1] else None) for c in cols)
        who = party_written(cell, by_id, named)
        if who is None and _AGING_TOTAL.search(_folded(cell)):
            totals.append((n + 2, cell, figures))
            continue
        key = who if who is not None else cell
        names.append(key)
        got[key] = figures
    missing = sorted(set(want) - set(got))
    # a registered party's row of zeros is a party with nothing open (an aging of all)
    extra = sorted(p for p in set(got) - set(want) if any(got[p]) or p not in ids)
    differ = [f"{p} ({', '.join(display_cents(x) for x in got[p])} vs the books "
              f"{', '.join(display_cents(x) for x in want[p])})"
              for p in sorted(set(got) & set(want)) if got[p] != want[p]]
    twice = _twice(names)
    whole = tuple(sum(f[i] for f in want.values()) for i in range(len(cols)))
    wrong_total = [f"row {n} {cell!r} ({', '.join(display_cents(x) for x in f)} vs the books' "
                   f"totals {', '.join(display_cents(x) for x in whole)})"
                   for n, cell, f in totals if f != whole]
    metrics = {"rows": len(names), "parties": len(want), "missing": len(missing),
               "extra": len(extra), "differ": len(differ), "twice": len(twice),
               "total_rows": len(totals)}
    problems = []
    if missing:
        problems.append(f"missing {listing(missing)}")
    if extra:
        problems.append(f"not open in the books: {listing(extra)}")
    if differ:
        problems.append(f"figures differ: {listing(differ)}")
    if twice:
        problems.append(f"listed twice: {listing(twice)}")
    if len(totals) > 1:
        problems.append(f"{len(totals)} total rows (one at most)")
    if wrong_total:
        problems.append(f"a total row that is not the sum: {listing(wrong_total)}")
    if problems:
        return CheckResult("", False, f"{spec.path} against the books' aging as of "
                                      f"{spec.as_of}: " + "; ".join(problems), metrics)
    who = "customer" if spec.ledger == "ar" else "vendor"
    return CheckResult("", True, f"{spec.path} is the books' aging as of {spec.as_of} "
                                 f"({plural(len(want), who)})", metrics)


# --- csv_ties -------------------------------------------------------------------------------


class CsvTies(FileCheckSpec):
    """For every key: the opening balance (``opening``, a supplied workspace file) less the
    amounts applied to it (``applied`` = ``path``, summed over its rows) equals the closing
    balance (``closing``; a key absent there is closed at zero), to the cent (``tolerance``
    in cents); applications to a key that was not open fail. Ties each output's figures to
    the others, so a single wrong row fails even when the totals elsewhere agree."""

    type: Literal["csv_ties"]
    key: str = Field(min_length=1)
    opening: str
    opening_column: str = Field(default="balance", min_length=1)
    applied_column: str = Field(default="amount_applied", min_length=1)
    closing: str
    closing_column: str = Field(default="balance", min_length=1)
    tolerance: int = Field(default=0, ge=0, le=100)

    @field_validator("path", "opening", "closing")
    @classmethod
    def _one_file(cls, v: str) -> str:
        return file_path(v)


def _sums(table: Table, key: int, amount: int, rel: str, *, unique: bool) -> dict[str, int]:
    out: dict[str, int] = {}
    for n, r in enumerate(table.rows):
        k = r[key].strip()
        if unique and k in out:
            raise Unusable(f"{rel}: {k} appears twice (one row per key)")
        out[k] = out.get(k, 0) + _cents(r[amount], f"{rel} row {n + 2}")
    return out


@check_type(CsvTies)
@_fails_on_unusable
def csv_ties(spec: CsvTies, ctx: CheckContext) -> CheckResult:
    """opening - applied == closing, key by key."""
    opening_t = agent_csv(ctx, spec.opening)
    applied_t = agent_csv(ctx, spec.path)
    closing_t = agent_csv(ctx, spec.closing)
    opening = _sums(opening_t, _column(opening_t, spec.key, spec.opening),
                    _column(opening_t, spec.opening_column, spec.opening), spec.opening,
                    unique=True)
    applied = _sums(applied_t, _column(applied_t, spec.key, spec.path),
                    _column(applied_t, spec.applied_column, spec.path), spec.path, unique=False)
    closing = _sums(closing_t, _column(closing_t, spec.key, spec.closing),
                    _column(closing_t, spec.closing_column, spec.closing), spec.closing,
                    unique=True)
    off = []
    for k in sorted(set(opening) | set(applied) | set(closing)):
        if k not in opening:
            off.append(f"{k}: not open at the start")
            continue
        want = opening[k] - applied.get(k, 0)
        have = closing.get(k, 0)
        if abs(want - have) > spec.tolerance:
            off.append(f"{k}: {display_cents(opening[k])} - {display_cents(applied.get(k, 0))} "
                       f"applied = {display_cents(want)}, {spec.closing} says "
                       f"{display_cents(have)}")
    metrics = {"keys": len(opening), "off": len(off)}
    if off:
        return CheckResult("", False, f"{plural(len(off), 'key')} where {spec.opening} less "
                                      f"{spec.path} is not {spec.closing}: {listing(off)}",
                           metrics)
    return CheckResult("", True, f"{spec.opening} less {spec.path} is {spec.closing} for every "
                                 f"{spec.key} ({len(opening)})", metrics)


