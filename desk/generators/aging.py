"""The ``ar-aging-workbook`` generator: open receivables from the engine, and their aging.

The engine runs a company for about three months: customers order, are invoiced and
pay as their behaviour says (on time, late, partly, never). An invoice's balance on
the task date is its total less what its customer's payments that reached the bank
by then meant to pay (``PaymentSent.allocations``, the world's truth), so the export
is what a ledger kept perfectly would show. The reference holds each invoice's days
past due (negative when not yet due) and balance, and each aging bucket's
total (days past due on the task date: current, 1-30, 31-60, 61-90, over 90) and the
grand total; the generator refuses a draw where a bucket is empty or its total is a
figure of the export itself (a pin the agent could satisfy by pasting).
"""

from __future__ import annotations

from datetime import date

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import simulate, with_behaviours
from erp.money import format_cents
from scenarios.spec import Scenario

BUCKETS = (("Current", None, 0), ("1-30", 1, 30), ("31-60", 31, 60), ("61-90", 61, 90),
           ("Over 90", 91, None))
"""Aging buckets by days past due: (label, low, high), inclusive."""

BEHAVIOURS = {"C0001": "on_time", "C0002": "late", "C0003": "partial", "C0004": "never_pays",
              "C0005": "late", "C0006": "on_time", "C0007": "never_pays", "C0008": "partial",
              "C0009": "late", "C0010": "on_time", "C0011": "late", "C0012": "never_pays"}


def bucket_of(days_past_due: int) -> str:
    """The label of the bucket a number of days past due falls in."""
    for label, low, high in BUCKETS:
        if (low is None or days_past_due >= low) and (high is None or days_past_due <= high):
            return label
    raise AssertionError(days_past_due)  # pragma: no cover - the buckets cover every integer


def _books_scenario(day: date) -> Scenario:
    """Three months of a small company up to the task date."""
    return Scenario.model_validate({
        "id": "ar-aging-gen", "title": "Receivables behind the aging task",
        "calendar": {"start": "2026-01-05", "end": day.isoformat()},
        "company": {"opening": {"bank_balance": "50000.00", "ar_open_invoices": 25},
                    "automation": {"order_intake": True, "auto_invoicing": True,
                                   "dispatch_invoices": True, "bank_feed": False,
                                   "auto_receipts": False, "month_end_statements": False,
                                   "controller_approves_bank_changes": False}},
        "population": {"customers": {"count": len(BEHAVIOURS), "profiles": {"on_time": 1.0}}},
        "turns": {"every": "none", "prompt": "none"},
    })


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``open_invoices.csv`` in the workspace; bucket totals and each invoice's days past
    due and balance in the reference."""
    day = ctx.day
    with simulate(_books_scenario(day), ctx.seed, setup=with_behaviours(BEHAVIOURS)) as sim:
        sim.engine.run_to_turn(day)
        lines = sim.events("bank_line_posted")
        payments = {p.payment_id: p for p in sim.events("payment_sent")}
        books = sim.ledger.books
        names = {c.customer_id: c.name for c in books.customers.values()}
        invoices = [i for i in books.invoices.values() if i.entry_date <= day]
    balance = {i.invoice_id: i.total for i in invoices}
    for x in lines:
        if x.kind == "deposit" and x.duplicate_of is None and x.posted_on <= day:
            for a in payments[x.source].allocations:
                if a.doc_id in balance:
                    balance[a.doc_id] = max(0, balance[a.doc_id] - a.amount)
    rows = sorted((i for i in invoices if balance[i.invoice_id] > 0),
                  key=lambda i: (names[i.customer_id], i.due_on, i.invoice_id))
    totals = {label: 0 for label, _, _ in BUCKETS}
    counts = {label: 0 for label, _, _ in BUCKETS}
    for i in rows:
        label = bucket_of((day - i.due_on).days)
        totals[label] += balance[i.invoice_id]
        counts[label] += 1
    grand = sum(totals.values())
    figures = {i.total for i in rows} | {balance[i.invoice_id] for i in rows}
    for label, n in counts.items():
        if n < 2:
            raise GenerationError(f"seed {ctx.seed}: bucket {label} has {n} invoice(s)")
        if any(abs(totals[label] - f) <= 1 for f in figures):
            raise GenerationError(f"seed {ctx.seed}: bucket {label}'s total is in the export")
    export = csv_bytes(["invoice_id", "customer_id", "customer", "invoice_date", "due_date",
                        "amount", "balance"],
                       [[i.invoice_id, i.customer_id, names[i.customer_id],
                         i.entry_date.isoformat(), i.due_on.isoformat(), format_cents(i.total),
                         format_cents(balance[i.invoice_id])] for i in rows])
    per_invoice = csv_bytes(["invoice_id", "days_past_due", "balance"],
                            [[i.invoice_id, (day - i.due_on).days,
                              format_cents(balance[i.invoice_id])] for i in rows])
    reference = csv_bytes(["bucket", "invoices", "total"],
                          [[label, counts[label], format_cents(totals[label])]
                           for label, _, _ in BUCKETS]
                          + [["Total", len(rows), format_cents(grand)]])
    return {"workspace/open_invoices.csv": export, "reference/aging_totals.csv": reference,
            "reference/aging_invoices.csv": per_invoice}
