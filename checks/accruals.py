"""Checks of a month-end's accruals and prepaids against what was really due.

The truth is the ``accrual_materials`` injection's record (``InjectionPlanted`` in the
world realm, :mod:`counterparties.accruals`): every vendor invoice with its service month,
account and the day it was delivered; per closed month the accrual each vendor was owed
(its fee or approved hours of a month whose invoice had not arrived by the close); every
prepaid invoice's cover. The books are read from the erp realm of the log.

- ``invoices_entered``: every invoice delivered by the last close is a bill once (vendor,
  number, date, due date, total), its lines on the account the truth names (a service's
  expense account, or 1300 for a prepaid), entered at the first close on or after the day
  it arrived (one held to a later close and dated back fails); no bill the vendors did not
  send.
- ``accruals_as_due``: the accruals flagged for a period (``PostAccrual``), dated its last
  day, per vendor: debits on the truth's expense account of exactly what was owed, the
  credit on accrued liabilities (2100) naming the vendor of the debit, for what its debits
  accrue (one vendor per accrual), posted at the close of the period (not ahead of it, not
  held to a later one); no accrual for a vendor owed nothing (an invoice that arrived
  before the close). An accrual reversed by hand before its reversal day (a mistake taken
  back in its own period) accrues nothing and is not looked at.
- ``prepaids_scheduled``: every prepaid invoice has one schedule on its bill: the whole
  amount, its first month, its months and its expense account; no other schedule.
- ``prepaids_amortized``: in each period named, each schedule running in it posted its
  month once (equal whole cents, the last month the remainder), nothing else, at the close
  of that period (a month not amortized ahead of time, nor held to a later close).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from typing import Any, ClassVar, Literal

from pydantic import Field

from checks.context import CheckContext, planted_truth
from checks.registry import CheckResult, CheckSpec, check_type
from checks.state import held_past_its_turn, listing, plural
from erp import events as ev
from erp.books import document_number_key
from erp.events import decode_event
from erp.handlers import amortization_amount
from erp.money import display_cents

_KIND = "accrual_materials"
_ACCRUED = "2100"
_PREPAID = "1300"
_Period = str


def accrual_truth(ctx: CheckContext) -> dict[str, Any]:
    """The recorded truth of the instance's month-end papers (empty when none was planted)."""
    return planted_truth(ctx, _KIND)


def _erp_events(ctx: CheckContext, *types: str) -> list[tuple[str, ev.Event]]:
    """Erp-realm events of some types, decoded, up to the checked position (with actor)."""
    out = []
    for e in ctx.store.read(realm="erp", types=list(types), until=ctx.position):
        out.append((e.business_date, decode_event(e.type, e.schema_version, e.payload)))
    return out


def _last_close(truth: dict[str, Any]) -> date:
    """The day of the last close (the invoices delivered by then are due in the books)."""
    return max(date.fromisoformat(d) for d in truth["closes"].values())


def _month_number(period: str, start: str) -> int:
    return (int(period[:4]) * 12 + int(period[5:])) - (int(start[:4]) * 12 + int(start[5:])) + 1


def _closing_turn(period: str, turns: list[date]) -> date | None:
    """The turn that closes ``period``: the first on or after the next month's first day
    (None when no turn comes after the period)."""
    year, month = int(period[:4]), int(period[5:])
    after = date(year + month // 12, month % 12 + 1, 1)
    return min((t for t in turns if t >= after), default=None)


def _wrong_turn(what: str, period: str, written: str, turns: list[date]) -> str | None:
    """The problem of a period's posting written at another turn than the one closing the
    period: before the period ended (posted ahead of time) or held to a later close."""
    due = _closing_turn(period, turns)
    if due is None or date.fromisoformat(written) == due:
        return None
    return f"{what} written in the turn of {written}, not the close of {period} ({due})"


def _result(ok_detail: str, problems: list[str], metrics: dict[str, Any]) -> CheckResult:
    if problems:
        return CheckResult("", False, f"{plural(len(problems), 'problem')}: {listing(problems)}",
                           {**metrics, "problems": len(problems)})
    return CheckResult("", True, ok_detail, {**metrics, "problems": 0})


# --- invoices_entered -------------------------------------------------------------------


class InvoicesEntered(CheckSpec):
    """Every vendor invoice delivered by the last turn entered once, as invoiced, at the
    first turn on or after the day it arrived."""

    family: ClassVar[str] = "state"
    type: Literal["invoices_entered"]


@check_type(InvoicesEntered)
def invoices_entered(spec: InvoicesEntered, ctx: CheckContext) -> CheckResult:
    """Compare the books' bills with the invoices the vendors sent."""
    truth = accrual_truth(ctx)
    if not truth:
        return CheckResult("", False, f"no {_KIND} truth in the world realm (the scenario "
                                      "plants none)")
    last = _last_close(truth)
    sent = {(x["vendor_id"], document_number_key(x["number"])): x for x in truth["invoices"]}
    due = {k: x for k, x in sent.items()
           if x["delivered_on"] and date.fromisoformat(x["delivered_on"]) <= last}
    bills: dict[tuple[str, str], list[ev.BillEntered]] = defaultdict(list)
    written: dict[tuple[str, str], date] = {}
    for day, e in _erp_events(ctx, "bill_entered"):
        assert isinstance(e, ev.BillEntered)
        key = (e.vendor_id, document_number_key(e.vendor_invoice_number))
        bills[key].append(e)
        written.setdefault(key, date.fromisoformat(day))
    turns = sorted(ctx.turn_dates or {date.fromisoformat(d) for d in truth["closes"].values()})
    problems: list[str] = []
    for key, x in sorted(due.items()):
        found = bills.get(key, [])
        what = f"{x['vendor_id']} invoice {x['number']}"
        if not found:
            problems.append(f"{what} ({display_cents(x['amount'])}) not entered")
            continue
        held = held_past_its_turn(what, date.fromisoformat(x["delivered_on"]), written[key],
                                  turns)
        if held:
            problems.append(held)
        if len(found) > 1:
            problems.append(f"{what} entered {len(found)} times")
        b = found[0]
        if b.total != x["amount"]:
            problems.append(f"{what}: total {display_cents(b.total)}, invoiced "
                            f"{display_cents(x['amount'])}")
        if b.entry_date.isoformat() != x["issued_on"]:
            problems.append(f"{what}: dated {b.entry_date}, invoiced {x['issued_on']}")
        if b.due_on.isoformat() != x["due_on"]:
            problems.append(f"{what}: due {b.due_on}, the invoice says {x['due_on']}")
        off = sorted({line.account for line in b.lines if line.account != x["account"]})
        if off:
            problems.append(f"{what}: lines on {', '.join(off)}, expected {x['account']}")
    for key, found in sorted(bills.items()):
        if key not in due:
            b = found[0]
            problems.append(f"bill {b.bill_id} ({b.vendor_id} {b.vendor_invoice_number}) is no "
                            "invoice the vendor had sent by the last turn")
    return _result(f"{plural(len(due), 'invoice')} entered once each, as invoiced", problems,
                   {"invoices": len(due), "bills": sum(len(v) for v in bills.values())})


# --- accruals_as_due ----------------------------------------------------------------------


class AccrualsAsDue(CheckSpec):
    """A period's accruals: per vendor, what was incurred and not invoiced by the close."""

    family: ClassVar[str] = "state"
    type: Literal["accruals_as_due"]
    period: str = Field(pattern=r"^[0-9]{4}-[0-9]{2}$")


def cancelled_accruals(ctx: CheckContext) -> set[str]:
    """The accruals reversed by hand before the day they were due to reverse (a mistaken
    accrual taken back in its own period, the ERP's way to correct it): they accrue
    nothing. One reversed on or after that day (instead of by the reversal run) is not."""
    due = {e.entry_id: e.reverse_on for _, e in _erp_events(ctx, "accrual_flagged")
           if isinstance(e, ev.AccrualFlagged)}
    return {e.entry_id for _, e in _erp_events(ctx, "journal_entry_reversed")
            if isinstance(e, ev.JournalEntryReversed) and e.entry_id in due
            and e.entry_date < due[e.entry_id]}


@check_type(AccrualsAsDue)
def accruals_as_due(spec: AccrualsAsDue, ctx: CheckContext) -> CheckResult:
    """Compare a period's flagged accruals with what each vendor was owed."""
    truth = accrual_truth(ctx)
    if not truth:
        return CheckResult("", False, f"no {_KIND} truth in the world realm")
    owed: dict[tuple[str, str], int] = defaultdict(int)
    for a in truth["accruals"].get(spec.period, []):
        owed[(a["vendor_id"], a["account"])] += a["amount"]
    entries = {e.entry_id: e for _, e in _erp_events(ctx, "journal_entry_posted")
               if isinstance(e, ev.JournalEntryPosted)}
    booked: dict[tuple[str, str], int] = defaultdict(int)
    problems: list[str] = []
    flagged = [(day, e) for day, e in _erp_events(ctx, "accrual_flagged")
               if isinstance(e, ev.AccrualFlagged) and e.period == spec.period]
    cancelled = cancelled_accruals(ctx)
    flagged = [(day, f) for day, f in flagged if f.entry_id not in cancelled]
    turns = sorted(ctx.turn_dates)
    for day, f in flagged:
        entry = entries[f.entry_id]
        if f.entry_date != f.reverse_on - timedelta(days=1):
            problems.append(f"accrual {f.entry_id} dated {f.entry_date}, not the period's last "
                            "day")
        early_or_late = _wrong_turn(f"accrual {f.entry_id}", spec.period, day, turns)
        if early_or_late:
            problems.append(early_or_late)
        vendors = {line.party for line in entry.lines if line.amount > 0 and line.party}
        if len(vendors) > 1:
            problems.append(f"accrual {f.entry_id} accrues {len(vendors)} vendors "
                            f"({', '.join(sorted(vendors))}), not one")
        # each vendor's credit on accrued liabilities is what its debits accrue
        owes: dict[str | None, int] = defaultdict(int)
        for line in entry.lines:
            if line.amount > 0 or line.account == _ACCRUED:
                owes[line.party] += line.amount
        for party, rest in sorted(owes.items(), key=str):
            if rest and party in vendors:
                problems.append(f"accrual {f.entry_id}: {party}'s credit on {_ACCRUED} "
                                f"differs from its debits by {display_cents(abs(rest))}")
        for line in entry.lines:
            if line.amount > 0:
                if line.party is None:
                    problems.append(f"accrual {f.entry_id}: a debit on {line.account} names no "
                                    "vendor")
                booked[(line.party or "", line.account)] += line.amount
            elif line.account != _ACCRUED:
                problems.append(f"accrual {f.entry_id}: credits {line.account}, expected "
                                f"{_ACCRUED} accrued liabilities")
            elif line.party is None or line.party not in vendors:
                problems.append(f"accrual {f.entry_id}: the credit on {line.account} names "
                                f"{line.party or 'no vendor'}, not the vendor of its debit")
    for key in sorted(set(owed) | set(booked)):
        want, got = owed.get(key, 0), booked.get(key, 0)
        if want != got:
            problems.append(f"{key[0]} on {key[1]}: accrued {display_cents(got)}, owed "
                            f"{display_cents(want)}")
    return _result(f"{plural(len(owed), 'vendor')} accrued for {spec.period} as owed "
                   f"({display_cents(sum(owed.values()))})", problems,
                   {"owed_cents": sum(owed.values()), "accrued_cents": sum(booked.values()),
                    "accruals": len(flagged)})


# --- prepaids_scheduled / prepaids_amortized ------------------------------------------------


def _prepaid_invoices(truth: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(x["vendor_id"], document_number_key(x["number"])): x for x in truth["invoices"]
            if x["kind"] == "prepaid"}


def _schedules(ctx: CheckContext) -> tuple[list[ev.PrepaidScheduleRecorded],
                                           dict[str, tuple[str, str]]]:
    """The books' schedules, and each bill's (vendor, number key)."""
    bills = {e.bill_id: (e.vendor_id, document_number_key(e.vendor_invoice_number))
             for _, e in _erp_events(ctx, "bill_entered") if isinstance(e, ev.BillEntered)}
    scheds = [e for _, e in _erp_events(ctx, "prepaid_schedule_recorded")
              if isinstance(e, ev.PrepaidScheduleRecorded)]
    return scheds, bills


class PrepaidsScheduled(CheckSpec):
    """Every prepaid invoice scheduled once on its bill: amount, start, months, account."""

    family: ClassVar[str] = "state"
    type: Literal["prepaids_scheduled"]


@check_type(PrepaidsScheduled)
def prepaids_scheduled(spec: PrepaidsScheduled, ctx: CheckContext) -> CheckResult:
    """Compare the books' prepaid schedules with the prepaid invoices."""
    truth = accrual_truth(ctx)
    if not truth:
        return CheckResult("", False, f"no {_KIND} truth in the world realm")
    want = _prepaid_invoices(truth)
    scheds, bills = _schedules(ctx)
    by_invoice: dict[tuple[str, str], list[ev.PrepaidScheduleRecorded]] = defaultdict(list)
    problems: list[str] = []
    for s in scheds:
        key = bills.get(s.bill_id)
        if key is None or key not in want:
            problems.append(f"schedule {s.schedule_id} on bill {s.bill_id}, no prepaid invoice")
            continue
        by_invoice[key].append(s)
    for key, x in sorted(want.items()):
        what = f"{x['vendor_id']} prepaid invoice {x['number']}"
        found = by_invoice.get(key, [])
        if not found:
            problems.append(f"{what} ({display_cents(x['amount'])}) has no schedule")
            continue
        if len(found) > 1:
            problems.append(f"{what} has {len(found)} schedules")
        s = found[0]
        if s.amount != x["amount"]:
            problems.append(f"{what}: amount {display_cents(s.amount)}, expected "
                            f"{display_cents(x['amount'])}")
        for name, got, exp in (("first month", s.start_period, x["period"]),
                               ("months", s.months, x["months"]),
                               ("expense account", s.expense_account, x["expense_account"]),
                               ("prepaid account", s.account, _PREPAID)):
            if got != exp:
                problems.append(f"{what}: {name} {got}, expected {exp}")
    return _result(f"{plural(len(want), 'prepaid invoice')} scheduled as invoiced", problems,
                   {"prepaids": len(want), "schedules": len(scheds)})


class PrepaidsAmortized(CheckSpec):
    """In each period named, each prepaid's month posted once, to the cent."""

    family: ClassVar[str] = "state"
    type: Literal["prepaids_amortized"]
    periods: tuple[_Period, ...] = Field(min_length=1)


@check_type(PrepaidsAmortized)
def prepaids_amortized(spec: PrepaidsAmortized, ctx: CheckContext) -> CheckResult:
    """Compare each period's amortization with the prepaid invoices' months."""
    truth = accrual_truth(ctx)
    if not truth:
        return CheckResult("", False, f"no {_KIND} truth in the world realm")
    want = _prepaid_invoices(truth)
    scheds, bills = _schedules(ctx)
    sched_key = {s.schedule_id: bills.get(s.bill_id) for s in scheds}
    posted: dict[tuple[tuple[str, str] | None, str], list[ev.PrepaidAmortized]] = \
        defaultdict(list)
    problems: list[str] = []
    turns = sorted(ctx.turn_dates)
    for day, e in _erp_events(ctx, "prepaid_amortized"):
        assert isinstance(e, ev.PrepaidAmortized)
        posted[(sched_key.get(e.schedule_id), e.period)].append(e)
        if e.period in spec.periods:
            early_or_late = _wrong_turn(f"amortization of {e.schedule_id} for {e.period}",
                                        e.period, day, turns)
            if early_or_late:
                problems.append(early_or_late)
    expected_total = 0
    for period in spec.periods:
        for key, x in sorted(want.items()):
            n = _month_number(period, x["period"])
            exp = amortization_amount(x["amount"], x["months"], n) if 1 <= n <= x["months"] else 0
            expected_total += exp
            got = posted.get((key, period), [])
            amount = sum(e.amount for e in got)
            if amount != exp or len(got) > 1:
                problems.append(f"{x['vendor_id']} prepaid {x['number']} in {period}: "
                                f"amortized {display_cents(amount)}"
                                + (f" in {len(got)} postings" if len(got) > 1 else "")
                                + f", expected {display_cents(exp)}")
            for e in got:
                if e.expense_account != x["expense_account"]:
                    problems.append(f"{x['vendor_id']} prepaid {x['number']} in {period}: "
                                    f"expensed to {e.expense_account}, expected "
                                    f"{x['expense_account']}")
    for (owner, period), found in sorted(posted.items(), key=str):
        if owner not in want and period in spec.periods:
            problems.append(f"amortization {found[0].schedule_id} in {period} of no prepaid "
                            "invoice")
    return _result(f"{plural(len(want), 'prepaid')} amortized as due in "
                   f"{', '.join(spec.periods)} ({display_cents(expected_total)})", problems,
                   {"expected_cents": expected_total})


__all__ = ["AccrualsAsDue", "InvoicesEntered", "PrepaidsAmortized", "PrepaidsScheduled",
           "accrual_truth", "accruals_as_due", "invoices_entered",
           "prepaids_amortized", "prepaids_scheduled"]
