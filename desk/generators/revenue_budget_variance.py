"""The ``revenue-budget-variance`` generator: May's invoiced revenue per service line vs budget.

The books are the task's (the library's ``month-end-close`` company from the first of
the month to the task date): the invoices the engine issued in the month, line by line,
go to the workspace as the books' invoice register (``invoice_register.csv``). The
budget (``budget.csv``) is drawn from the seed's own stream (``desk:budget``) around
each service line's actual, rounded to the hundred dollars as a budget is, with the
service names as the planning team types them (another case, a trailing space). Each
line gets a planted shape: well over, well under, near the threshold (a percentage just
below it, or above it on an amount below the dollar floor), or on budget. The reference
holds the variance table and the flagged lines; the generator refuses a draw without at
least two flagged lines over and two under budget and one near-miss of each kind.
"""

from __future__ import annotations

from collections import defaultdict

from counterparties.customers import SERVICES
from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import books_at_turn
from erp.events import InvoiceIssued
from erp.money import format_cents
from sim.rng import Streams

THRESHOLD_PCT = 10
"""A line is flagged when its variance is at least this share of budget ..."""
THRESHOLD_CENTS = 100_000
"""... and at least this amount (1,000.00), either direction."""

SHAPES = {"easy": (0.25, -0.25, 0.2, -0.2, 0.02, -0.03, 0.09, -0.08),
          "medium": (0.18, -0.22, 0.13, -0.15, 0.04, -0.02, 0.094, -0.092),
          "hard": (0.14, -0.12, 0.11, -0.111, 0.099, -0.097, 0.095, -0.09)}
"""Per tier, the planted variances (actual over budget, as a share of budget)."""

TYPED = {"Consulting hours": "CONSULTING HOURS", "Licence seats": "Licence Seats ",
         "On-site visit": "on-site visit", "Data migration": "Data Migration"}
"""How the budget spreadsheet spells some service lines."""


def _flagged(budget: int, variance: int) -> bool:
    """The prompt's rule: at least 10% of budget and at least 1,000.00, either way."""
    return abs(variance) * 100 >= THRESHOLD_PCT * abs(budget) and \
        abs(variance) >= THRESHOLD_CENTS


def _pct(variance: int, budget: int) -> str:
    """The variance as a percentage of budget, one decimal, halves away from zero."""
    tenths, rest = divmod(abs(variance) * 1000, budget)
    tenths += 1 if rest * 2 >= budget else 0
    sign = "-" if variance < 0 and tenths else ""
    return f"{sign}{tenths // 10}.{tenths % 10}"


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``invoice_register.csv``, ``budget.csv``; the reference variance table."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in SHAPES:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(SHAPES)})")
    first = ctx.day.replace(day=1)
    with books_at_turn(ctx.scenario, ctx.seed, ctx.day) as sim:
        invoices = [e for e in sim.events("invoice_issued") if isinstance(e, InvoiceIssued)]
        names = {c.customer_id: c.name for c in sim.ledger.books.customers.values()}
    register: list[list[str]] = []
    actual: dict[str, int] = defaultdict(int)
    for inv in sorted(invoices, key=lambda i: i.invoice_id):
        if not first <= inv.entry_date <= ctx.day:
            continue
        for n, line in enumerate(inv.lines, 1):
            register.append([inv.invoice_id, str(n), inv.entry_date.isoformat(),
                             inv.customer_id, names.get(inv.customer_id, ""), line.description,
                             str(line.quantity), format_cents(line.unit_price),
                             format_cents(line.amount)])
            if line.account == "4000":
                actual[line.description] += line.amount
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:budget")
    shapes = list(SHAPES[tier])
    order = [int(i) for i in rng.permutation(len(SERVICES))]
    rows: list[list[str]] = []
    budget_rows: list[list[str]] = []
    kinds: dict[str, int] = defaultdict(int)
    for k, service in enumerate(SERVICES):
        got = actual.get(service, 0)
        if got <= 0:
            raise GenerationError(f"seed {ctx.seed}: no {service} invoiced in the month")
        share = shapes[order[k] % len(shapes)]
        budget = max(10_000, round(got / (1 + share) / 10_000) * 10_000)
        variance = got - budget
        flag = _flagged(budget, variance)
        near_pct = not flag and abs(variance) >= THRESHOLD_CENTS
        near_amount = not flag and abs(variance) * 100 >= THRESHOLD_PCT * budget
        kinds["over" if flag and variance > 0 else "under" if flag else
              "near_pct" if near_pct else "near_amount" if near_amount else "on"] += 1
        rows.append([service, format_cents(budget), format_cents(got), format_cents(variance),
                     _pct(variance, budget), "yes" if flag else "no"])
        budget_rows.append([first.strftime("%Y-%m"), TYPED.get(service, service),
                            format_cents(budget)])
    if kinds["over"] < 2 or kinds["under"] < 2 or kinds["near_pct"] < 1:
        raise GenerationError(f"seed {ctx.seed}: planted {dict(kinds)} (expected two flagged "
                              "lines each way and a near-miss below the percentage)")
    total_budget = sum(int(r[1].replace(".", "")) for r in rows)
    total_actual = sum(actual[s] for s in SERVICES)
    budget_rows.sort(key=lambda r: r[1].strip().lower())
    return {
        "workspace/invoice_register.csv": csv_bytes(
            ["invoice_id", "line", "invoice_date", "customer_id", "customer", "service",
             "quantity", "unit_price", "amount"], register),
        "workspace/budget.csv": csv_bytes(["period", "service_line", "budget"], budget_rows),
        "reference/variance.csv": csv_bytes(
            ["service", "budget", "actual", "variance", "variance_pct", "flag"], rows),
        "reference/totals.csv": csv_bytes(
            ["total_budget", "total_actual", "total_variance"],
            [[format_cents(total_budget), format_cents(total_actual),
              format_cents(total_actual - total_budget)]]),
    }
