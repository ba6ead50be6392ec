"""The ``contractor-accrual`` generator: the month's unbilled contractor hours, and the books.

The books are the task's (the engine's company up to the month's last business day):
their trial balance at the turn goes to the workspace (``trial_balance.csv``), with
the balances of the two accounts the accrual moves kept in the reference. The
timesheets are drawn from the seed's own stream (``desk:timesheets``): each
contractor's days in the month, some already billed (their vendor invoice came in),
and a rate card. The reference holds the accrual: the unbilled hours at each
contractor's rate, and what accounts 6300 and 2100 must show once it is posted.
"""

from __future__ import annotations

from datetime import timedelta

from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import books_at_turn
from erp import queries as q
from erp.money import format_cents
from sim.rng import Streams

CONTRACTORS = (("Avery Quinn", 8_500), ("Jordan Blake", 9_250), ("Riley Chen", 7_800),
               ("Sam Ortiz", 11_000), ("Taylor Brooks", 6_900))
"""Contractors and their hourly rates in cents."""

EXPENSE, ACCRUED = "6300", "2100"


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``timesheets.csv``, ``rates.csv``, ``trial_balance.csv``; the expected accrual."""
    with books_at_turn(ctx.scenario, ctx.seed, ctx.day) as sim:
        tb = q.trial_balance(sim.ledger.store)
        company = sim.instance.setup.name
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:timesheets")
    first = ctx.day.replace(day=1)
    days = [first + timedelta(days=i) for i in range((ctx.day - first).days + 1)]
    workdays = [d for d in days if d.weekday() < 5]
    rows: list[list[str]] = []
    unbilled_hours = 0
    accrual = 0
    for name, rate in CONTRACTORS:
        billed_through = workdays[int(rng.integers(len(workdays) // 3, 2 * len(workdays) // 3))]
        for d in workdays:
            if rng.random() < 0.25:
                continue
            quarter_hours = int(rng.integers(16, 37))  # 4 to 9 hours, in quarters
            hours = quarter_hours / 4
            billed = d <= billed_through
            rows.append([d.isoformat(), name, f"{hours:.2f}", "yes" if billed else "no"])
            if not billed:
                unbilled_hours += quarter_hours
                accrual += _round_quarter(rate * quarter_hours)
    balance = {r.account: r.debit - r.credit for r in tb}
    expense_after = balance.get(EXPENSE, 0) + accrual
    accrued_after = balance.get(ACCRUED, 0) - accrual
    tb_rows = [[r.account, r.name, format_cents(r.debit), format_cents(r.credit)] for r in tb]
    return {
        "workspace/timesheets.csv": csv_bytes(["date", "contractor", "hours", "billed"],
                                              sorted(rows, key=lambda r: (r[1], r[0]))),
        "workspace/rates.csv": csv_bytes(["contractor", "hourly_rate"],
                                         [[n, format_cents(r)] for n, r in CONTRACTORS]),
        "workspace/trial_balance.csv": csv_bytes(["account", "name", "debit", "credit"],
                                                 tb_rows),
        "reference/expected.csv": csv_bytes(
            ["company", "entry_date", "unbilled_hours", "accrual", "account_6300_after",
             "account_2100_after"],
            [[company, ctx.day.isoformat(), f"{unbilled_hours / 4:.2f}",
              format_cents(accrual), format_cents(expense_after),
              format_cents(accrued_after)]]),
    }


def _round_quarter(cents_times_four: int) -> int:
    """A quarter-hour amount (rate x quarters) in cents, halves away from zero."""
    q4, r = divmod(cents_times_four, 4)
    return q4 + (1 if r * 2 >= 4 else 0)

