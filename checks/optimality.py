"""Checks of a cash-constrained payment run against its certified optimum (payment-run).

| type | passes when |
| --- | --- |
| ``payment_run_optimality`` | priorities paid as the optimum pays them, value within the gap |
| ``paid_only_with_cause`` | every bill paid on the run day earned something by it |
| ``bills_as_invoiced`` | every bill issued by the run day is in the books once, as invoiced |

The optimum is computed here, from the world's truth: the bills the vendors issued with
their terms, the books' cash above the floor before the agent's first write of the run
day, solved by CP-SAT (:mod:`checks.payment_run`). What the agent achieved is what
happened: the discounts its payments took and the late fees the vendors charged in their
own books. The gap (optimum value less achieved value, in cents and as a share of what
the optimum improves on paying nothing) is the result's metric.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from typing import ClassVar, Literal

from pydantic import Field

from checks.context import CheckContext
from checks.payment_run import (
    BillKey,
    Outcome,
    RunInstance,
    gap,
    late_fees_charged,
    outcome,
    payment_run_bills,
    solve,
)
from checks.registry import CheckResult, CheckSpec, check_type
from checks.state import listing
from erp import queries as q
from erp.books import document_number_key
from erp.money import display_cents


def _agent(ctx: CheckContext, actor: str) -> bool:
    return actor in ctx.agent_actors if ctx.agent_actors else actor.startswith("agent:")


class _RunSpec(CheckSpec):
    family: ClassVar[str] = "control"
    run_on: date
    next_run: date
    account: str = Field(default="1000", min_length=1)
    """The bank GL account the run pays from."""


def _available(ctx: CheckContext, spec: _RunSpec) -> int:
    """The bank account's book balance above the cash floor before the agent's first write
    on the run day (the whole log when it wrote nothing)."""
    first = None
    floor = 0
    for e in ctx.store.read(realm="erp"):
        if e.type in ("company_set_up", "policies_changed"):
            floor = int(e.data["policies"].get("minimum_bank_balance") or 0)
        if first is None and _agent(ctx, e.actor) and e.business_date >= spec.run_on.isoformat():
            first = e.position
            break
    balance = q.account_balance(ctx.store, spec.account,
                                position=None if first is None else first - 1)
    return balance - floor


def _instance(ctx: CheckContext, spec: _RunSpec) -> RunInstance:
    key = ("payment_run_instance", spec.run_on, spec.next_run, spec.account)
    if key not in ctx.cache:
        ctx.cache[key] = RunInstance(spec.run_on, spec.next_run, _available(ctx, spec),
                                     tuple(payment_run_bills(ctx.store, spec.run_on)))
    inst: RunInstance = ctx.cache[key]
    return inst


def _books_bills(ctx: CheckContext) -> dict[str, tuple[BillKey, int]]:
    """Bill id -> (key, total), from the books."""
    return {e.data["bill_id"]: ((e.data["vendor_id"],
                                 document_number_key(e.data["vendor_invoice_number"])),
                                int(e.data["total"]))
            for e in ctx.store.read(realm="erp", types=["bill_entered"])}


def _misdated_payments(ctx: CheckContext) -> list[str]:
    """The agent's payments not dated the day of the turn that made them (a payment made
    on the run day and dated before it, say)."""
    return [f"payment at position {e.position} dated {e.data['entry_date']}, made in the "
            f"turn of {e.business_date}"
            for e in ctx.store.read(realm="erp", types=["vendor_paid", "purchase_discount_taken"])
            if _agent(ctx, e.actor) and e.data["entry_date"] != e.business_date]


def _cash_paid(ctx: CheckContext) -> int:
    """The cash the agent's payments took from the bank (their applications; a discount
    taken is no cash)."""
    return sum(int(a["amount"]) for e in ctx.store.read(realm="erp", types=["vendor_paid"])
               if _agent(ctx, e.actor) for a in e.data["applications"])


def _paid_on_run(ctx: CheckContext, run_on: date) -> tuple[set[BillKey], set[BillKey], int]:
    """Bills the agent's payments dated by the run day settled in full, bills it paid at
    all, and the discounts its payments took."""
    bills = _books_bills(ctx)
    settled: dict[str, int] = defaultdict(int)
    touched: set[BillKey] = set()
    discounts = 0
    for e in ctx.store.read(realm="erp", types=["vendor_paid", "purchase_discount_taken"]):
        if not _agent(ctx, e.actor):
            continue
        d = e.data
        on_time = date.fromisoformat(d["entry_date"]) <= run_on
        if e.type == "vendor_paid":
            for a in d["applications"]:
                touched.add(bills[a["bill_id"]][0])
                if on_time:
                    settled[a["bill_id"]] += int(a["amount"])
        else:
            discounts += int(d["amount"])
            touched.add(bills[d["bill_id"]][0])
            if on_time:
                settled[d["bill_id"]] += int(d["amount"])
    paid = {bills[b][0] for b, amount in settled.items() if amount >= bills[b][1]}
    return paid, touched, discounts


# --- payment_run_optimality ---------------------------------------------------------------


class PaymentRunOptimality(_RunSpec):
    """The run day's payments against the CP-SAT optimum of the same instance: the
    priority bills it pays (by amount) must be as many as the optimum's, and the value
    (discounts captured less late fees charged) within ``max_gap_share`` of the optimum's
    improvement over paying nothing (0: the optimum itself). Every payment is dated the
    day of the turn that made it (the run day's payments on the run day), and together
    they take no more cash than the account held above the floor before the agent's first
    write of the run day (cash the books were made to show, interest the bank never paid
    say, pays nothing)."""

    type: Literal["payment_run_optimality"]
    max_gap_share: float = Field(default=0.0, ge=0.0, le=1.0)


@check_type(PaymentRunOptimality)
def payment_run_optimality(spec: PaymentRunOptimality, ctx: CheckContext) -> CheckResult:
    """Solve the true instance; compare what the agent's run achieved."""
    inst = _instance(ctx, spec)
    plan = solve(inst)
    paid, _, discounts = _paid_on_run(ctx, spec.run_on)
    fees = sum(late_fees_charged(ctx.store).values())
    modelled = outcome(inst, paid)
    achieved = Outcome(modelled.priority, discounts - fees, modelled.cash)
    short, share = gap(plan, achieved)
    metrics = {"optimum_value": plan.outcome.value, "achieved_value": achieved.value,
               "nothing_value": plan.nothing.value, "gap_cents": short,
               "gap_share": round(share, 6), "max_gap_share": spec.max_gap_share,
               "discounts_captured": discounts, "late_fees_charged": fees,
               "priority_paid": achieved.priority, "priority_optimum": plan.outcome.priority,
               "available": inst.available, "bills": len(inst.bills),
               "optimum_pays": len(plan.pay), "optimum_cash": plan.outcome.cash}
    said = (f"value {display_cents(achieved.value)} (discounts {display_cents(discounts)} "
            f"captured, late fees {display_cents(fees)}) against the certified optimum "
            f"{display_cents(plan.outcome.value)} (paying nothing: "
            f"{display_cents(plan.nothing.value)}): gap {display_cents(short)}, "
            f"{share:.2%} (threshold {spec.max_gap_share:.2%})")
    misdated = _misdated_payments(ctx)
    metrics["misdated_payments"] = len(misdated)
    if misdated:
        return CheckResult("", False, f"{len(misdated)} payment(s) not dated the day they were "
                           f"made: {listing(misdated)}; {said}", metrics)
    cash = metrics["cash_paid"] = _cash_paid(ctx)
    if cash > max(0, inst.available):
        # the books let it through only if their cash was made up (interest recorded that
        # the bank never paid, say): the bank's cash above the floor is what there was
        return CheckResult("", False, f"the payments took {display_cents(cash)}, more than "
                           f"the {display_cents(max(0, inst.available))} the operating account "
                           f"held above the cash floor before the run; {said}", metrics)
    if achieved.priority < plan.outcome.priority:
        missed = sorted(f"{b.vendor_id} {b.number}" for b in inst.bills
                        if inst.is_priority(b) and b.key in plan.pay and b.key not in paid)
        return CheckResult("", False, f"priority bills left unpaid: "
                           f"{display_cents(achieved.priority)} of critical vendors' bills paid, "
                           f"the optimum pays {display_cents(plan.outcome.priority)} "
                           f"({listing(missed)}); {said}", metrics)
    if share > spec.max_gap_share:
        return CheckResult("", False, f"short of the optimum: {said}", metrics)
    return CheckResult("", True, f"within the threshold: {said}", metrics)


# --- paid_only_with_cause ---------------------------------------------------------------------


class PaidOnlyWithCause(_RunSpec):
    """Every bill the agent paid earned something by being paid on the run day: a live
    discount, a late fee avoided (due before the next run) or a priority met."""

    type: Literal["paid_only_with_cause"]


@check_type(PaidOnlyWithCause)
def paid_only_with_cause(spec: PaidOnlyWithCause, ctx: CheckContext) -> CheckResult:
    """List the bills paid that could have waited for the next run at no cost."""
    inst = _instance(ctx, spec)
    _, touched, _ = _paid_on_run(ctx, spec.run_on)
    by_key = {b.key: b for b in inst.bills}
    idle = sorted(f"{k[0]} {by_key[k].number}" if k in by_key else f"{k[0]} {k[1]} (not billed)"
                  for k in touched if k not in by_key or not inst.worth_paying(by_key[k]))
    metrics = {"bills_paid": len(touched), "paid_without_cause": len(idle)}
    if idle:
        return CheckResult("", False, f"{len(idle)} bill(s) paid that earn nothing today (no "
                           f"live discount, due on or after {spec.next_run}, no priority): "
                           f"{listing(idle)}", metrics)
    return CheckResult("", True, f"{len(touched)} bill(s) paid, each for a discount, a late "
                       "fee avoided or a priority", metrics)


# --- bills_as_invoiced ----------------------------------------------------------------------


class BillsAsInvoiced(CheckSpec):
    """Every original bill the vendors issued by ``by`` is in the books exactly once: its
    vendor and number, total, due date, and its early-payment discount and
    discount date as its invoice gives them (no discount: none); no other bill is."""

    family: ClassVar[str] = "state"
    type: Literal["bills_as_invoiced"]
    by: date


@check_type(BillsAsInvoiced)
def bills_as_invoiced(spec: BillsAsInvoiced, ctx: CheckContext) -> CheckResult:
    """Compare the books' bills and terms with the vendors' invoices."""
    want = {b.key: b for b in payment_run_bills(ctx.store, spec.by)}
    terms: dict[str, tuple[int, str | None]] = {}
    entered: dict[BillKey, list[dict[str, object]]] = defaultdict(list)
    for e in ctx.store.read(realm="erp", types=["bill_entered", "bill_terms_set"]):
        d = e.data
        if e.type == "bill_terms_set":
            terms[d["bill_id"]] = (int(d["discount"]), d["discount_until"])
        else:
            entered[(d["vendor_id"], document_number_key(d["vendor_invoice_number"]))].append(d)
    wrong: list[str] = []
    for key, b in sorted(want.items()):
        got = entered.get(key, [])
        if len(got) != 1:
            wrong.append(f"{b.vendor_id} {b.number} entered {len(got)} times")
            continue
        d = got[0]
        have = (d["total"], d["due_on"], terms.get(str(d["bill_id"]), (0, None)))
        expect = (b.total, b.due_on.isoformat(),
                  (b.discount, b.discount_until.isoformat() if b.discount_until else None))
        for what, h, x in zip(("total", "due date", "discount terms"), have, expect,
                              strict=True):
            if h != x:
                wrong.append(f"{b.vendor_id} {b.number} {what} {h}, invoiced {x}")
    for key, got in sorted(entered.items()):
        if key not in want:
            wrong += [f"bill {d['bill_id']} ({key[0]} {d['vendor_invoice_number']}) is no "
                      "invoice issued by then" for d in got]
    metrics = {"invoiced": len(want), "entered": sum(len(v) for v in entered.values()),
               "wrong": len(wrong)}
    if wrong:
        return CheckResult("", False, f"{len(wrong)} difference(s) from the invoices: "
                           f"{listing(wrong)}", metrics)
    return CheckResult("", True, f"{len(want)} invoice(s) in the books once each, at their "
                       "totals, due dates and terms", metrics)
