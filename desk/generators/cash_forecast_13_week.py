"""The ``cash-forecast-13-week`` generator: open AR and AP at the task date, the future as truth.

The books are :mod:`desk.generators.month_books`' company from January to the task date,
kept by the past clerk, with some customers paying late and two paying nothing. The
workspace gets the books' open receivables (``ar_open_items.csv``), every receipt
application since January with the invoice's due date (``payment_history.csv``: the
customers' payment behaviour), the open payables (``ap_open_bills.csv``), treasury's
schedule of fixed outflows (``recurring_payments.csv``, drawn from the seed's stream
``desk:cash-outflows``, amounts written as treasury writes them) and the cash position
(``cash_position.csv``: the operating and the savings account at the task date).

The truth of the receipts is the simulated future: the same company and seed run on
past the task date, the bank lines that reached the operating account in each of the 13
weeks, applied as the clerk applies them (in the payment's own allocation order, capped
by each invoice's open balance), counted only on the invoices open at the task date.
Disbursements follow the prompt's rule and are exact: each open bill on its due date
(past-due bills in week 1) and each recurring payment on its dates.

Parameters: ``tier`` (``easy``: no customer pays late and none pays nothing; ``medium``,
the release: six late payers, two that pay nothing; ``hard``: ten late payers, four that
pay nothing).
"""

from __future__ import annotations

from datetime import date, timedelta

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.generators.month_books import company_scenario, kept_books
from desk.simulate import simulate, with_behaviours
from erp.money import format_cents
from sim.rng import Streams

WEEKS = 13
TIERS: dict[str, dict[str, str]] = {
    "easy": {},
    "medium": {"C0004": "never_pays", "C0009": "late", "C0013": "late", "C0017": "late",
               "C0021": "never_pays", "C0026": "late", "C0005": "late", "C0028": "late"},
    "hard": {"C0004": "never_pays", "C0009": "late", "C0013": "late", "C0017": "late",
             "C0021": "never_pays", "C0026": "late", "C0005": "late", "C0028": "late",
             "C0002": "never_pays", "C0011": "never_pays", "C0014": "late", "C0019": "late"},
}
"""Per tier, the customers given a behaviour other than the population's draw."""

HISTORY_START = date(2026, 1, 5)
OUTFLOWS = (("Payroll (net pay and taxes)", "biweekly", 3_650_000, 0.04),
            ("Office rent", "monthly", 1_250_000, 0.0),
            ("Software subscriptions", "monthly", 310_000, 0.2),
            ("Contractor invoices (accrued)", "monthly", 1_800_000, 0.3),
            ("Insurance premium", "quarterly", 285_000, 0.0),
            ("Loan repayment", "monthly", 420_000, 0.0))
"""(payee, frequency, base cents, relative spread): treasury's fixed outflows."""


def _week_starts(day: date) -> list[date]:
    """The Mondays of the 13 weeks after ``day``'s week."""
    first = day + timedelta(days=7 - day.weekday())
    return [first + timedelta(weeks=k) for k in range(WEEKS)]


def _treasury(cents: int, k: int) -> str:
    """How treasury writes an amount (a dollar sign, separators), varying by row."""
    return (f"${cents / 100:,.2f}", f"{cents / 100:,.2f}", format_cents(cents))[k % 3]


def _dates(first: date, frequency: str, last: date) -> list[date]:
    """A recurring payment's dates from ``first`` through ``last``."""
    out, d, n = [], first, 0
    while d <= last:
        out.append(d)
        n += 1
        if frequency == "biweekly":
            d = first + timedelta(weeks=2 * n)
        else:
            step = {"monthly": 1, "quarterly": 3}[frequency]
            m = first.month - 1 + step * n
            d = first.replace(year=first.year + m // 12, month=m % 12 + 1)
    return out


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """The five workspace files; the weeks, disbursements and actual receipts (reference)."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    behaviours = TIERS[tier]
    weeks = _week_starts(ctx.day)
    end = weeks[-1] + timedelta(days=6)
    scenario = company_scenario(HISTORY_START, end + timedelta(days=14), customers=30,
                                vendors=4)
    with kept_books(scenario, ctx.seed, until=ctx.day, behaviours=behaviours or None) as kb:
        books = kb.sim.ledger.books
        names = {c.customer_id: c.name for c in books.customers.values()}
        vendors = {v.vendor_id: v.name for v in books.vendors.values()}
        open_ar = {i.invoice_id: i for i in books.invoices.values() if i.open > 0}
        all_invoices = {i.invoice_id: i for i in books.invoices.values()}
        bills = sorted((b for b in books.bills.values() if b.open > 0),
                       key=lambda b: (b.due_on, b.bill_id))
        cash = kb.trial_balances[ctx.day]
    setup = with_behaviours(behaviours) if behaviours else None
    with simulate(scenario, ctx.seed, setup=setup) as sim:
        sim.engine.finish()
        payments = {p.payment_id: p for p in sim.events("payment_sent")}
        lines = sorted(sim.events("bank_line_posted"), key=lambda x: (x.posted_on, x.line_id))
    # mirror the clerk: each deposit applied in its payment's allocation order
    remaining = {k: i.total for k, i in all_invoices.items()}
    history: list[list[str]] = []
    actual = [0] * WEEKS
    at_day: dict[str, int] | None = None
    for line in lines:
        pay = payments.get(line.source or "")
        if line.amount <= 0 or pay is None or line.duplicate_of is not None:
            continue
        if line.posted_on > ctx.day and at_day is None:
            at_day = dict(remaining)
        if line.posted_on > end:
            break
        money = line.amount
        for a in pay.allocations:
            left = remaining.get(a.doc_id, a.amount)
            meant = min(a.amount, left)
            applied = min(meant, money)
            short = meant - applied if pay.amount > pay.arrives else 0
            remaining[a.doc_id] = left - applied - short  # the fee allowed, as the clerk does
            money -= applied
            if applied <= 0:
                continue
            if line.posted_on <= ctx.day:
                inv = all_invoices.get(a.doc_id)
                if inv is not None:
                    history.append([line.posted_on.isoformat(), pay.customer_id, a.doc_id,
                                    inv.entry_date.isoformat(), inv.due_on.isoformat(),
                                    format_cents(applied)])
            elif a.doc_id in open_ar and line.posted_on >= weeks[0]:
                actual[(line.posted_on - weeks[0]).days // 7] += applied
    off = sorted(k for k, i in open_ar.items() if (at_day or remaining).get(k) != i.open)
    if off:
        raise GenerationError(f"seed {ctx.seed}: the future run's AR differs from the books' "
                              f"at the task date on {', '.join(off[:5])}")
    if sum(actual) <= 0:
        raise GenerationError(f"seed {ctx.seed}: nothing of the open AR is collected")
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:cash-outflows")
    disb = [0] * WEEKS
    recurring: list[list[str]] = []
    for k, (payee, frequency, base, spread) in enumerate(OUTFLOWS):
        factor = 1.0 + (float(rng.uniform(-spread, spread)) if spread else 0.0)
        amount = round(base * factor / 100.0) * 100
        offset = int(rng.integers(0, 14 if frequency == "biweekly" else 28))
        first = weeks[0] + timedelta(days=offset)
        if frequency == "biweekly":
            first = weeks[0] + timedelta(days=4 + 7 * (offset % 2))  # a Friday
        recurring.append([payee, _treasury(amount, k), frequency, first.isoformat()])
        for d in _dates(first, frequency, end):
            disb[(d - weeks[0]).days // 7] += amount
    ap_rows: list[list[str]] = []
    for b in bills:
        due = max(b.due_on, weeks[0])
        if due <= end:
            disb[(due - weeks[0]).days // 7] += b.open
        ap_rows.append([b.vendor_id, vendors.get(b.vendor_id, ""), b.bill_id,
                        b.due_on.isoformat(), format_cents(b.total), format_cents(b.open)])
    ar_rows = [[i.customer_id, names.get(i.customer_id, ""), i.invoice_id,
                i.entry_date.isoformat(), i.due_on.isoformat(), format_cents(i.total),
                format_cents(i.open)]
               for i in sorted(open_ar.values(), key=lambda i: (i.customer_id, i.invoice_id))]
    opening = cash.get("1000", 0)
    ref_weeks, balance = [], opening
    for k, start in enumerate(weeks):
        ref_weeks.append([str(k + 1), start.isoformat(), (start + timedelta(days=6)).isoformat(),
                          format_cents(disb[k]), format_cents(actual[k])])
        balance += actual[k] - disb[k]
    history.sort(key=lambda r: (r[0], r[1], r[2]))
    return {
        "workspace/ar_open_items.csv": csv_bytes(
            ["customer_id", "customer", "invoice_id", "invoice_date", "due_date", "amount",
             "open_balance"], ar_rows),
        "workspace/payment_history.csv": csv_bytes(
            ["received_on", "customer_id", "invoice_id", "invoice_date", "due_date",
             "amount_applied"], history),
        "workspace/ap_open_bills.csv": csv_bytes(
            ["vendor_id", "vendor", "bill_id", "due_date", "amount", "open_balance"], ap_rows),
        "workspace/recurring_payments.csv": csv_bytes(
            ["payee", "amount", "frequency", "first_payment"], recurring),
        "workspace/cash_position.csv": csv_bytes(
            ["account", "name", "balance_as_of", "balance"],
            [["1000", "Operating account", ctx.day.isoformat(), format_cents(opening)],
             ["1010", "Savings account", ctx.day.isoformat(), format_cents(cash.get("1010", 0))]]),
        "reference/weeks.csv": csv_bytes(
            ["week", "week_start", "week_end", "disbursements", "receipts"], ref_weeks),
        "reference/opening.csv": csv_bytes(["week", "opening"], [["1", format_cents(opening)]]),
    }
