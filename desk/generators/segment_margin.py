"""The ``board-segment-margin`` generator: May's revenue and gross margin by customer segment.

The books are :mod:`desk.generators.month_books`' company to the task date; May's
revenue is every invoice the engine's automation issued in May (their subtotals, before
tax). The workspace gets the books' invoice register for May (``invoices_may.csv``),
the CRM's customer master with each customer's segment (``customers.csv``: ids written
as the CRM writes them, ``c0003`` or ``C-0003``) and the project-costing export of each
invoice's direct cost (``job_costs.csv``: invoice references in three styles), whose
costs are drawn from the seed's own stream (``desk:job-costs``) as a share of the
invoice that depends on the segment. The reference (``segment_margin.csv``) holds, per
segment and in total, revenue, cost, gross margin and margin percent (one decimal).

Parameters: ``tier`` (``easy``: ids and references in the ledger's form; ``medium``,
the release: the CRM's and the costing export's forms; ``hard``: also a job-cost line
split in two for some invoices).
"""

from __future__ import annotations

from datetime import date

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.generators.month_books import company_scenario, kept_books
from erp.money import format_cents
from sim.rng import Streams

SEGMENTS = (("Enterprise", 0.52), ("Mid-market", 0.61), ("Small business", 0.70),
            ("Public sector", 0.58))
"""Segments and the mean direct-cost share of an invoice."""


def _pct(margin: int, revenue: int) -> str:
    return f"{margin * 100 / revenue:.1f}" if revenue else "0.0"


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """The May register, the customer master and job costs; the segment table."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in ("easy", "medium", "hard"):
        raise GenerationError(f"params.tier: {tier!r} (expected easy, medium or hard)")
    scenario = company_scenario(date(2026, 3, 2), ctx.day, customers=30, vendors=4)
    with kept_books(scenario, ctx.seed, until=ctx.day) as kb:
        books = kb.sim.ledger.books
        customers = sorted((c.customer_id, c.name) for c in books.customers.values())
        issued = [e for e in kb.sim.events("invoice_issued")
                  if e.entry_date.year == 2026 and e.entry_date.month == 5]
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:job-costs")
    segment = {cid: SEGMENTS[int(rng.integers(len(SEGMENTS)))][0] for cid, _ in customers}
    share = dict(SEGMENTS)
    master = []
    for k, (cid, name) in enumerate(customers):
        shown = cid if tier == "easy" else (cid.lower(), f"C-{cid[1:]}", cid)[k % 3]
        master.append([shown, name, segment[cid]])
    register, costs = [], []
    totals: dict[str, list[int]] = {s: [0, 0] for s, _ in SEGMENTS}
    for k, e in enumerate(sorted(issued, key=lambda e: e.invoice_id)):
        register.append([e.invoice_id, e.customer_id, e.entry_date.isoformat(),
                         format_cents(e.subtotal), format_cents(e.tax), format_cents(e.total)])
        cost = int(e.subtotal * float(rng.normal(share[segment[e.customer_id]], 0.06)))
        number = int(e.invoice_id.split("-")[1])
        ref = e.invoice_id if tier == "easy" else (e.invoice_id, f"{number:06d}",
                                                    f"inv {number}")[k % 3]
        if tier == "hard" and k % 4 == 0:
            part = cost // 3
            costs += [[ref, "labour", format_cents(cost - part)],
                      [ref, "materials", format_cents(part)]]
        else:
            costs.append([ref, "labour", format_cents(cost)])
        totals[segment[e.customer_id]][0] += e.subtotal
        totals[segment[e.customer_id]][1] += cost
    if any(rev == 0 for rev, _ in totals.values()):
        raise GenerationError(f"seed {ctx.seed}: a segment has no May revenue")
    table = []
    for s, (rev, cost) in totals.items():
        table.append([s, format_cents(rev), format_cents(cost), format_cents(rev - cost),
                      _pct(rev - cost, rev)])
    rev = sum(t[0] for t in totals.values())
    cost = sum(t[1] for t in totals.values())
    table.append(["Total", format_cents(rev), format_cents(cost), format_cents(rev - cost),
                  _pct(rev - cost, rev)])
    return {
        "workspace/invoices_may.csv": csv_bytes(
            ["invoice_id", "customer_id", "invoice_date", "subtotal", "tax", "total"], register),
        "workspace/customers.csv": csv_bytes(["customer_ref", "name", "segment"], master),
        "workspace/job_costs.csv": csv_bytes(["invoice_ref", "cost_type", "amount"], costs),
        "reference/segment_margin.csv": csv_bytes(
            ["segment", "revenue", "cost", "gross_margin", "margin_pct"], table),
    }
