"""The ``customer-profitability`` generator: a quarter's revenue and margin by customer.

The books are :mod:`desk.generators.month_books`' company from March to the task date
(its customers order at their own rates and prices; the company invoices them). Every
invoice line of March to May goes to the workspace as the books' invoice register
(``invoice_register.csv``, quantities and each customer's own unit price). The delivery
team's standard cost per unit of each service (``standard_costs.csv``, service names as
that team types them, costs written with a dollar sign or not) is drawn from the seed's
stream ``desk:standard-costs`` as a share of the service's median price: the tier's share.
The reference holds each customer's revenue, cost, margin, margin percentage, revenue
share and rank, the totals, the five largest customers' share and the customers below
the margin floor. The generator refuses a draw without one to three customers below the
floor and at least two just above it (within five points: the near misses).

Parameters: ``tier`` (``easy``: costs at 50% of the median price, margins far apart;
``medium``, the release: 62%; ``hard``: 66%, more customers near the floor).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import date

from counterparties.customers import SERVICES
from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.generators.month_books import company_scenario, kept_books
from erp.events import InvoiceIssued
from erp.money import format_cents
from sim.rng import Streams

FLOOR_PCT = 20
"""A customer whose gross margin is below this share of its revenue is reviewed."""
TOP = 5
CONCENTRATED_PCT = 40
"""Revenue is concentrated when the five largest customers hold at least this share."""
SHARE = {"easy": 0.52, "medium": 0.62, "hard": 0.63}
"""Per tier, the standard cost as a share of the median price."""
PLANTED = {"easy": (1, 3, 0), "medium": (1, 3, 2), "hard": (1, 5, 4)}
"""Per tier, the fewest and most customers below the floor, the fewest just above it."""
TYPED = {"Consulting hours": "CONSULTING - HOURLY", "Licence seats": "licence seats",
         "On-site visit": "Onsite visit", "Data migration": "Data Migration ",
         "Training session": "Training (per session)"}
"""How the delivery team's cost sheet names some services."""


def _pct(part: int, whole: int) -> str:
    """``part`` as a percentage of ``whole``, one decimal, halves away from zero."""
    tenths, rest = divmod(abs(part) * 1000, whole)
    tenths += 1 if rest * 2 >= whole else 0
    sign = "-" if part < 0 and tenths else ""
    return f"{sign}{tenths // 10}.{tenths % 10}"


def _cost_text(cents: int, k: int) -> str:
    return f"${cents / 100:,.2f}" if k % 2 else format_cents(cents)


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``invoice_register.csv``, ``standard_costs.csv``; the reference profitability table."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in SHARE:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(SHARE)})")
    first, last = date(2026, 3, 1), date(2026, 5, 31)
    scenario = company_scenario(date(2026, 3, 2), ctx.day, customers=24, vendors=4)
    with kept_books(scenario, ctx.seed, until=ctx.day) as kb:
        invoices = [e for e in kb.sim.events("invoice_issued") if isinstance(e, InvoiceIssued)]
        names = {c.customer_id: c.name for c in kb.sim.ledger.books.customers.values()}
    register: list[list[str]] = []
    prices: dict[str, list[int]] = defaultdict(list)
    lines = []
    for inv in sorted(invoices, key=lambda i: i.invoice_id):
        if not first <= inv.entry_date <= last:
            continue
        for n, line in enumerate(inv.lines, 1):
            if line.account != "4000":
                continue
            register.append([inv.invoice_id, str(n), inv.entry_date.isoformat(),
                             inv.customer_id, names.get(inv.customer_id, ""), line.description,
                             str(line.quantity), format_cents(line.unit_price),
                             format_cents(line.amount)])
            prices[line.description].append(line.unit_price)
            lines.append((inv.customer_id, line.description, line.quantity, line.amount))
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:standard-costs")
    unit_cost = {}
    for s in SERVICES:
        if not prices[s]:
            raise GenerationError(f"seed {ctx.seed}: no {s} invoiced in the quarter")
        factor = SHARE[tier] * (1.0 + float(rng.uniform(-0.08, 0.08)))
        unit_cost[s] = round(statistics.median(prices[s]) * factor)
    revenue: dict[str, int] = defaultdict(int)
    cost: dict[str, int] = defaultdict(int)
    for cid, service, qty, amount in lines:
        revenue[cid] += amount
        cost[cid] += round(qty * unit_cost[service])
    total = sum(revenue.values())
    order = sorted(revenue, key=lambda c: (-revenue[c], c))
    rows = []
    for rank, cid in enumerate(order, 1):
        margin = revenue[cid] - cost[cid]
        rows.append([cid, names[cid], format_cents(revenue[cid]), format_cents(cost[cid]),
                     format_cents(margin), _pct(margin, revenue[cid]),
                     _pct(revenue[cid], total), str(rank)])
    below = [cid for cid in order
             if (revenue[cid] - cost[cid]) * 100 < FLOOR_PCT * revenue[cid]]
    near = [cid for cid in order if cid not in below
            and (revenue[cid] - cost[cid]) * 100 < (FLOOR_PCT + 5) * revenue[cid]]
    low, high, close = PLANTED[tier]
    if not low <= len(below) <= high or len(near) < close:
        raise GenerationError(f"seed {ctx.seed}: {len(below)} customer(s) below the floor and "
                              f"{len(near)} near it (expected {low}-{high} below and at least "
                              f"{close} near, tier {tier})")
    top = sum(revenue[c] for c in order[:TOP])
    total_cost = sum(cost.values())
    costs = [[TYPED.get(s, s), _cost_text(unit_cost[s], k), "per unit"]
             for k, s in enumerate(SERVICES)]
    costs.sort(key=lambda r: r[0].strip().lower())
    return {
        "workspace/invoice_register.csv": csv_bytes(
            ["invoice_id", "line", "invoice_date", "customer_id", "customer", "service",
             "quantity", "unit_price", "amount"], register),
        "workspace/standard_costs.csv": csv_bytes(["service", "standard_cost", "basis"], costs),
        "reference/profitability.csv": csv_bytes(
            ["customer_id", "customer", "revenue", "cost", "margin", "margin_pct",
             "revenue_share_pct", "rank"], rows),
        "reference/summary.csv": csv_bytes(
            ["total_revenue", "total_cost", "total_margin", "margin_pct", "top5_revenue",
             "top5_share_pct", "concentrated", "below_floor", "near_floor"],
            [[format_cents(total), format_cents(total_cost), format_cents(total - total_cost),
              _pct(total - total_cost, total), format_cents(top), _pct(top, total),
              "yes" if top * 100 >= CONCENTRATED_PCT * total else "no", ";".join(below),
              ";".join(near)]]),
    }
