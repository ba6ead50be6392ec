"""payment-run: the cash-constrained payment run as an optimisation problem (OR-Tools CP-SAT).

One run day, a next run two weeks later, the open bills with their terms, and the cash
above the floor. A bill paid today costs its total less its early-payment discount when
that is still live (its discount date is today or later); a bill left for the next run
costs nothing today, but loses its discount, and when it falls due before the next run
its vendor charges the late fee its terms give. A bill of a critical vendor falling due
before the next run is a priority. The plan chosen, in order of precedence:

1. the most of the priority bills (by amount) the cash allows;
2. then the greatest value: discounts captured less late fees incurred;
3. then the least cash paid out (nothing paid that earns nothing).

Each stage is solved to proven optimality (``OPTIMAL``) and fixed before the next, with
one worker and a fixed seed, so the same instance always gives the same plan. The
reference solver builds the instance from the inbox and the books, the oracle and the
grading check from the world's truth; all three use :func:`solve`. It lives with the
checks (which may import only ``erp`` and ``sim``); the scenario's solvers import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any

from erp.books import document_number_key
from erp.store import EventStore
from sim.world_events import BillIssued, DocumentDelivered, decode_world_event

BillKey = tuple[str, str]
"""A bill by ``(vendor_id, document_number_key(invoice number))``: the same in the books
and in the world."""


@dataclass(frozen=True)
class RunBill:
    """One open bill and its terms (amounts in cents)."""

    vendor_id: str
    number: str
    total: int
    due_on: date
    discount: int = 0
    discount_until: date | None = None
    late_fee: int = 0
    critical: bool = False

    @property
    def key(self) -> BillKey:
        """The bill's key."""
        return (self.vendor_id, document_number_key(self.number))


@dataclass(frozen=True)
class RunInstance:
    """A payment run to plan: its day, the next run's, the cash above the floor, the bills."""

    run_on: date
    next_run: date
    available: int
    bills: tuple[RunBill, ...]

    def live_discount(self, b: RunBill) -> int:
        """The discount paying ``b`` today captures (0 when it has none or it is lost)."""
        return b.discount if b.discount_until is not None and b.discount_until >= self.run_on \
            else 0

    def cost(self, b: RunBill) -> int:
        """What paying ``b`` in full today takes from the bank."""
        return b.total - self.live_discount(b)

    def fee_at_risk(self, b: RunBill) -> int:
        """The late fee ``b`` incurs unless paid today (due before the next run)."""
        return b.late_fee if b.due_on < self.next_run else 0

    def is_priority(self, b: RunBill) -> bool:
        """A critical vendor's bill that falls due before the next run."""
        return b.critical and b.due_on < self.next_run

    def worth_paying(self, b: RunBill) -> bool:
        """Whether paying ``b`` today can earn anything (a discount, a fee avoided, a
        priority met); no other bill is paid today."""
        return bool(self.live_discount(b) or self.fee_at_risk(b) or self.is_priority(b))

    def sorted_bills(self) -> list[RunBill]:
        """The bills in a fixed order (by key), whatever order they were read in."""
        return sorted(self.bills, key=lambda b: b.key)


@dataclass(frozen=True)
class Outcome:
    """What paying a set of bills today gives: priority amount paid, value, cash paid."""

    priority: int
    value: int
    cash: int


@dataclass(frozen=True)
class RunPlan:
    """The certified optimum: the bills to pay today and what that gives."""

    pay: frozenset[BillKey]
    outcome: Outcome
    nothing: Outcome
    """What paying nothing gives (the baseline the gap share is measured against)."""


class NotOptimal(RuntimeError):
    """CP-SAT did not prove a stage optimal (it always should: the model is small)."""


def outcome(instance: RunInstance, pay: Iterable[BillKey]) -> Outcome:
    """The priority amount, value and cash of paying exactly ``pay`` today."""
    chosen = set(pay)
    priority = value = cash = 0
    for b in instance.bills:
        if b.key in chosen:
            cash += instance.cost(b)
            value += instance.live_discount(b)
            priority += b.total if instance.is_priority(b) else 0
        else:
            value -= instance.fee_at_risk(b)
    return Outcome(priority, value, cash)


def solve(instance: RunInstance, *, time_limit_s: float = 60.0) -> RunPlan:
    """The lexicographic optimum of the run (priority, then value, then least cash)."""
    # OR-Tools is imported here, not with the module: every process that loads the check
    # registry imports this module, and only a payment run's grading solves.
    from ortools.sat.python import cp_model

    bills = [b for b in instance.sorted_bills() if instance.worth_paying(b)]
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"pay_{n}") for n in range(len(bills))]
    cash = sum(instance.cost(b) * v for b, v in zip(bills, x, strict=True))
    model.add(cash <= max(0, instance.available))
    priority = sum(b.total * v for b, v in zip(bills, x, strict=True)
                   if instance.is_priority(b))
    gain = sum((instance.live_discount(b) + instance.fee_at_risk(b)) * v
               for b, v in zip(bills, x, strict=True))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = time_limit_s
    stages = (("priority", priority, True), ("value", gain, True), ("cash", cash, False))
    for name, expr, maximize in stages:
        if maximize:
            model.maximize(expr)
        else:
            model.minimize(expr)
        status = solver.solve(model)
        if status != cp_model.OPTIMAL:
            raise NotOptimal(f"payment run of {instance.run_on}: the {name} stage ended "
                             f"{solver.status_name(status)}, not OPTIMAL")
        model.add(expr == round(solver.objective_value))
        # the next stage starts from this stage's solution
        model.clear_hints()
        for v in x:
            model.add_hint(v, solver.boolean_value(v))
    pay = frozenset(b.key for b, v in zip(bills, x, strict=True) if solver.boolean_value(v))
    return RunPlan(pay, outcome(instance, pay), outcome(instance, ()))


def gap(plan: RunPlan, achieved: Outcome) -> tuple[int, float]:
    """The optimality gap of an achieved run: the value short of the optimum in cents, and
    as a share of what the optimum improves on paying nothing (0: optimal, 1: no better
    than paying nothing; 0 when the optimum improves on nothing at all)."""
    short = plan.outcome.value - achieved.value
    spread = plan.outcome.value - plan.nothing.value
    return short, (short / spread if spread > 0 else (0.0 if short <= 0 else 1.0))


# --- the true instance, from the world's records -------------------------------------------


def payment_run_bills(store: EventStore, run_on: date) -> list[RunBill]:
    """Every original bill the vendors issued by ``run_on``, with the terms its invoice
    gave (the truth of the delivered document)."""
    issued: dict[str, BillIssued] = {}
    terms: dict[str, dict[str, Any]] = {}
    for e in store.read(realm="world", types=["bill_issued", "document_delivered"]):
        w = decode_world_event(e.type, e.payload)
        if isinstance(w, BillIssued):
            if w.kind == "original" and w.issued_on <= run_on:
                issued[w.bill_ref] = w
        elif isinstance(w, DocumentDelivered) and w.kind == "bill" and "bill_ref" in w.truth:
            terms[str(w.truth["bill_ref"])] = w.truth
    out = []
    for ref, b in sorted(issued.items()):
        t = terms.get(ref, {})
        until = t.get("discount_until")
        out.append(RunBill(vendor_id=b.vendor_id, number=b.invoice_number, total=b.total,
                           due_on=b.due_on, discount=int(t.get("discount") or 0),
                           discount_until=date.fromisoformat(until) if until else None,
                           late_fee=int(t.get("late_fee") or 0),
                           critical=bool(t.get("critical"))))
    return out


def late_fees_charged(store: EventStore) -> dict[BillKey, int]:
    """The late fees the vendors charged in their own books (their notices), by bill."""
    out: dict[BillKey, int] = {}
    for e in store.read(realm="world", types=["document_delivered"]):
        w = decode_world_event(e.type, e.payload)
        if isinstance(w, DocumentDelivered) and w.truth.get("kind") == "late_fee":
            key = (str(w.truth["vendor_id"]),
                   document_number_key(str(w.truth["invoice_number"])))
            out[key] = out.get(key, 0) + int(w.truth["amount"])
    return out
