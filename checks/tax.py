"""Checks of a month's payroll and sales tax against the registers, the sales and the
tax authority's own records.

The truth is the ``payroll_tax_materials`` injection's record (``InjectionPlanted`` in the
world realm, :mod:`counterparties.tax_authority`): every pay run's register as it stands
(the revised version where the provider sent one), each month's gross sales, taxable sales
and tax as invoiced, the due dates. The authority's records are its world events
(``TaxReturnReceived``, ``TaxPaymentReceived``, ``TaxNoticeSent``); the books are read from
the erp realm of the log.

- ``payroll_posted``: every register the provider sent (all arrive before the last turn)
  is posted once, as it
  stands: its pay date and period, per employee the gross, what was withheld, the
  employer's taxes and net pay, on the payroll accounts (6400, 6410, 2300, 2310) and out of
  the bank, first posted at the first turn on or after the day it arrived (one held to a
  later turn and dated back fails); no register the provider did not send. A posting
  reversed (a register posted before its revised version) is reversed in its pay date's
  month. With ``standing_at_its_turn``, the version that stands was posted at the first
  turn on or after it arrived too (a first version posted while the revision was already
  in, put right at a later turn, fails).
- ``sales_tax_return_filed``: one return for the month, filed after it ended and by its due
  date, dated the day it was filed (the turn that wrote it), with the month's gross sales,
  taxable sales and tax as invoiced.
- ``sales_tax_remitted``: the month's return paid in full, by its due date, each payment
  dated the day it was made (the turn that wrote it), and no more.
- ``tax_authority_ties``: the authority's records tie to the books (every return and
  payment the books hold it received, with the same figures, and nothing else), no return
  is for a month outside the account's periods (one before the letter's first period), and
  it sent no notice.
"""

from __future__ import annotations

from datetime import date
from typing import Any, ClassVar, Literal

import orjson
from pydantic import Field

from checks.context import CheckContext, planted_truth
from checks.registry import CheckResult, CheckSpec, check_type
from checks.state import held_past_its_turn, listing, plural
from erp import events as ev
from erp.events import decode_event
from erp.money import display_cents

_KIND = "payroll_tax_materials"
_ACCOUNTS = {"wage_account": "6400", "employer_tax_account": "6410",
             "withholding_account": "2300", "employer_tax_payable_account": "2310"}


def tax_truth(ctx: CheckContext) -> dict[str, Any]:
    """The recorded truth of the instance's payroll and sales tax (empty when none)."""
    return planted_truth(ctx, _KIND)


def _erp(ctx: CheckContext, *types: str) -> list[ev.Event]:
    """Erp-realm events of some types, decoded, up to the checked position."""
    return [decode_event(e.type, e.schema_version, e.payload)
            for e in ctx.store.read(realm="erp", types=list(types), until=ctx.position)]


def _erp_written(ctx: CheckContext, *types: str) -> list[tuple[ev.Event, date]]:
    """Erp-realm events of some types, decoded, each with the business date of the turn
    (or the world's day) that wrote it."""
    return [(decode_event(e.type, e.schema_version, e.payload),
             date.fromisoformat(e.business_date))
            for e in ctx.store.read(realm="erp", types=list(types), until=ctx.position)]


def _world(ctx: CheckContext, type_: str) -> list[dict[str, Any]]:
    """The authority's records of one type (payloads), up to the checked position."""
    return [orjson.loads(e.payload)
            for e in ctx.store.read(realm="world", types=[type_], until=ctx.position)]


def _result(ok: str, problems: list[str], metrics: dict[str, Any]) -> CheckResult:
    if problems:
        return CheckResult("", False, f"{plural(len(problems), 'problem')}: {listing(problems)}",
                           {**metrics, "problems": len(problems)})
    return CheckResult("", True, ok, {**metrics, "problems": 0})


def _no_truth() -> CheckResult:
    return CheckResult("", False, f"no {_KIND} truth in the world realm (the scenario plants "
                                  "none)")


# --- payroll_posted -------------------------------------------------------------------


class PayrollPostedSpec(CheckSpec):
    """Every register the provider sent posted once, as it stands."""

    family: ClassVar[str] = "state"
    type: Literal["payroll_posted"]
    standing_at_its_turn: bool = False
    """When set, the posting that stands (the register's latest version) must be written at
    the first turn on or after that version arrived, not only the register's first posting:
    the books held the superseded version from that turn to the one that put it right."""


def _register_problems(want: dict[str, Any], got: ev.PayrollPosted) -> list[str]:
    what = f"register {want['register_id']}"
    out = []
    for k in ("pay_date", "period_start", "period_end"):
        field = "entry_date" if k == "pay_date" else k
        if getattr(got, field).isoformat() != want[k]:
            out.append(f"{what}: {k} {getattr(got, field)}, the register says {want[k]}")
    rows = {r.employee_id: r for r in got.lines}
    for r in want["rows"]:
        x = rows.pop(r["employee_id"], None)
        if x is None:
            out.append(f"{what}: {r['employee_id']} ({r['name']}) not posted")
            continue
        for k in ("gross", "withheld", "employer_taxes", "net"):
            if getattr(x, k) != r[k]:
                out.append(f"{what}: {r['employee_id']} {k} {display_cents(getattr(x, k))}, "
                           f"the register says {display_cents(r[k])}")
    out += [f"{what}: {emp} is on no row of the register" for emp in sorted(rows)]
    off = [f"{k} {getattr(got, k)}" for k, code in _ACCOUNTS.items() if getattr(got, k) != code]
    if off:
        out.append(f"{what}: posted to {', '.join(off)} (expected {', '.join(_ACCOUNTS.values())})")
    return out


@check_type(PayrollPostedSpec)
def payroll_posted(spec: PayrollPostedSpec, ctx: CheckContext) -> CheckResult:
    """Compare the books' payroll journals with the registers as they stand."""
    truth = tax_truth(ctx)
    if not truth:
        return _no_truth()
    due = {r["register_id"]: r for r in truth["registers"]}
    posted: dict[str, list[ev.PayrollPosted]] = {}
    first_written: dict[str, date] = {}
    standing_written: dict[str, list[date]] = {}
    problems: list[str] = []
    for e, written in _erp_written(ctx, "payroll_posted", "payroll_reversed"):
        if isinstance(e, ev.PayrollPosted):
            posted.setdefault(e.register_id, []).append(e)
            first_written.setdefault(e.register_id, written)
            standing_written.setdefault(e.register_id, []).append(written)
        elif isinstance(e, ev.PayrollReversed):  # a reversed posting no longer stands
            undone = posted[e.register_id].pop()
            standing_written[e.register_id].pop()
            if e.entry_date.strftime("%Y-%m") != undone.entry_date.strftime("%Y-%m"):
                problems.append(f"register {e.register_id}: its posting of {undone.entry_date} "
                                f"reversed on {e.entry_date}, not in its pay date's month "
                                f"({undone.entry_date:%Y-%m} still holds it)")
    posted = {k: v for k, v in posted.items() if v}
    for rid, want in sorted(due.items()):
        found = posted.get(rid, [])
        if not found:
            problems.append(f"register {rid} ({display_cents(want['gross'])} gross) not posted")
            continue
        problems += _register_problems(want, found[-1])
        held = held_past_its_turn(f"register {rid}", date.fromisoformat(want["delivered_on"]),
                                  first_written[rid], ctx.turn_dates, "first posted")
        if held:
            problems.append(held)
        elif spec.standing_at_its_turn:
            held = held_past_its_turn(
                f"register {rid} as it stands (version {want['version']})",
                date.fromisoformat(want["delivered_on"]), standing_written[rid][-1],
                ctx.turn_dates, "posted")
            if held:
                problems.append(held + " (another version stood until then)")
    problems += [f"register {rid} posted, but the provider sent no such register"
                 for rid in sorted(set(posted) - set(due))]
    return _result(f"{plural(len(due), 'register')} posted once each, as they stand",
                   problems, {"registers": len(due), "posted": len(posted),
                              "gross_cents": sum(r["gross"] for r in due.values())})


# --- sales_tax_return_filed / sales_tax_remitted ---------------------------------------


class SalesTaxReturnFiledSpec(CheckSpec):
    """One return for the month, filed after it and by its due date, with its figures."""

    family: ClassVar[str] = "state"
    type: Literal["sales_tax_return_filed"]
    period: str = Field(pattern=r"^[0-9]{4}-[0-9]{2}$")


def _month(truth: dict[str, Any], period: str) -> tuple[dict[str, Any], date]:
    sales = truth["sales"].get(period, {"gross_sales": 0, "taxable_sales": 0, "tax_due": 0})
    return sales, date.fromisoformat(truth["due"][period])


@check_type(SalesTaxReturnFiledSpec)
def sales_tax_return_filed(spec: SalesTaxReturnFiledSpec, ctx: CheckContext) -> CheckResult:
    """Compare the month's filed return with the month's sales as invoiced."""
    truth = tax_truth(ctx)
    if not truth:
        return _no_truth()
    if spec.period not in truth["due"]:
        return CheckResult("", False, f"period {spec.period} is not a month of the scenario "
                           f"(its months: {', '.join(truth['due'])})")
    sales, due = _month(truth, spec.period)
    written = [(e, day) for e, day in _erp_written(ctx, "sales_tax_return_filed")
               if isinstance(e, ev.SalesTaxReturnFiled) and e.period == spec.period
               and e.jurisdiction_id == truth["jurisdiction_id"]]
    filed = [e for e, _ in written]
    problems: list[str] = []
    if not filed:
        problems.append(f"no {spec.period} return filed (due {due.isoformat()})")
    elif len(filed) > 1:
        problems.append(f"{len(filed)} returns filed for {spec.period}")
    for r, day in written[:1]:
        if r.entry_date > due:
            problems.append(f"return {r.return_id} filed {r.entry_date}, due {due}")
        if r.entry_date != day:
            problems.append(f"return {r.return_id} dated {r.entry_date}, filed in the turn "
                            f"of {day}")
        for k in ("gross_sales", "taxable_sales", "tax_due"):
            if getattr(r, k) != sales[k]:
                problems.append(f"return {r.return_id}: {k} {display_cents(getattr(r, k))}, "
                                f"invoiced {display_cents(sales[k])}")
    return _result(f"the {spec.period} return filed by {due} with the month's figures "
                   f"({display_cents(sales['tax_due'])} tax)", problems,
                   {"tax_due_cents": sales["tax_due"], "returns": len(filed)})


class SalesTaxRemittedSpec(CheckSpec):
    """The month's tax paid in full, by its due date, and no more."""

    family: ClassVar[str] = "state"
    type: Literal["sales_tax_remitted"]
    period: str = Field(pattern=r"^[0-9]{4}-[0-9]{2}$")


@check_type(SalesTaxRemittedSpec)
def sales_tax_remitted(spec: SalesTaxRemittedSpec, ctx: CheckContext) -> CheckResult:
    """Compare what the books paid the authority for the month with the tax due."""
    truth = tax_truth(ctx)
    if not truth:
        return _no_truth()
    if spec.period not in truth["due"]:
        return CheckResult("", False, f"period {spec.period} is not a month of the scenario")
    sales, due = _month(truth, spec.period)
    written = [(e, day) for e, day in _erp_written(ctx, "sales_tax_remitted")
               if isinstance(e, ev.SalesTaxRemitted) and e.period == spec.period]
    paid = [e for e, _ in written]
    on_time = sum(e.amount for e in paid if e.entry_date <= due)
    total = sum(e.amount for e in paid)
    problems: list[str] = [f"payment {e.payment_id} dated {e.entry_date}, made in the turn of "
                           f"{day}" for e, day in written if e.entry_date != day]
    if on_time != sales["tax_due"]:
        problems.append(f"paid {display_cents(on_time)} by {due}, the tax due is "
                        f"{display_cents(sales['tax_due'])}")
    if total != on_time:
        problems.append(f"{display_cents(total - on_time)} paid after the due date {due}")
    return _result(f"{display_cents(total)} of {spec.period}'s tax paid by {due}", problems,
                   {"paid_cents": total, "tax_due_cents": sales["tax_due"],
                    "payments": len(paid)})


# --- tax_authority_ties ------------------------------------------------------------------


class TaxAuthorityTiesSpec(CheckSpec):
    """The tax authority's records tie to the books, every return is for one of the
    account's periods, and it sent no notice."""

    family: ClassVar[str] = "control"
    type: Literal["tax_authority_ties"]


@check_type(TaxAuthorityTiesSpec)
def tax_authority_ties(spec: TaxAuthorityTiesSpec, ctx: CheckContext) -> CheckResult:
    """Compare the authority's returns, payments and notices with the books."""
    truth = tax_truth(ctx)
    if not truth:
        return _no_truth()
    j = truth["jurisdiction_id"]
    books_returns = {e.return_id: e for e in _erp(ctx, "sales_tax_return_filed")
                     if isinstance(e, ev.SalesTaxReturnFiled) and e.jurisdiction_id == j}
    books_pay = {e.payment_id: e for e in _erp(ctx, "sales_tax_remitted")
                 if isinstance(e, ev.SalesTaxRemitted) and e.jurisdiction_id == j}
    got_returns = {r["return_id"]: r for r in _world(ctx, "tax_return_received")}
    got_pay = {p["payment_id"]: p for p in _world(ctx, "tax_payment_received")}
    problems: list[str] = []
    periods = list(truth["periods"])
    for rid, r in sorted(books_returns.items()):
        if r.period not in periods:  # a month before the account's first period
            problems.append(f"return {rid} is for {r.period}, no period of the account (its "
                            f"periods: {', '.join(periods)})")
        a = got_returns.pop(rid, None)
        if a is None:
            problems.append(f"return {rid} ({r.period}) is in the books; the authority has "
                            "no record of it")
            continue
        for k in ("gross_sales", "taxable_sales", "tax_due"):
            if a[k] != getattr(r, k):
                problems.append(f"return {rid}: the authority has {k} {display_cents(a[k])}, "
                                f"the books {display_cents(getattr(r, k))}")
    problems += [f"the authority received return {rid} the books do not hold"
                 for rid in sorted(got_returns)]
    for pid, p in sorted(books_pay.items()):
        b = got_pay.pop(pid, None)
        if b is None:
            problems.append(f"payment {pid} ({display_cents(p.amount)}) is in the books; the "
                            "authority has not received it")
        elif b["amount"] != p.amount or b["paid_on"] != p.entry_date.isoformat():
            problems.append(f"payment {pid}: the authority has {display_cents(b['amount'])} on "
                            f"{b['paid_on']}, the books {display_cents(p.amount)} on "
                            f"{p.entry_date}")
    problems += [f"the authority received payment {pid} the books do not hold"
                 for pid in sorted(got_pay)]
    for n in _world(ctx, "tax_notice_sent"):
        problems.append(f"the authority sent a {n['kind'].replace('_', ' ')} notice for "
                        f"{n['period']}: {display_cents(n['unpaid'])} unpaid, penalty "
                        f"{display_cents(n['penalty'])}")
    counts = f"{plural(len(books_returns), 'return')}, {plural(len(books_pay), 'payment')}"
    return _result(f"the authority's records tie to the books ({counts}), no notice", problems,
                   {"returns": len(books_returns), "payments": len(books_pay)})
