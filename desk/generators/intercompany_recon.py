"""The ``intercompany-recon`` generator: two entities' intercompany ledgers for one month.

Northwind Services LLC (the parent) and Northwind Labs LLC (its subsidiary) charge each
other through the month: management fees, shared software, payroll recharges, cash
sweeps. Each transaction is drawn from the seed's stream ``desk:intercompany`` and
recorded in both ledgers: the parent's 1400 Due from Northwind Labs (a charge to Labs
a debit) and Labs' 2400 Due to Northwind Services (the same charge a credit), each in
its own house style of reference (``IC-2026-0042`` in the parent's, ``ic 42`` or
``IC42 recharge`` in Labs'). Planted differences, per tier: charges only one side
has booked, an amount keyed with two digits swapped, a charge Labs entered twice, a
sweep booked by Labs with the wrong sign. The reference lists every difference by
intercompany number with both sides' amounts and the reason, and the two balances.
"""

from __future__ import annotations

from datetime import date, timedelta

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from erp.money import format_cents
from sim.rng import Streams

KINDS = (("Management fee", 1_250_000, 1_850_000), ("Shared software licences", 180_000, 460_000),
         ("Payroll recharge", 2_400_000, 4_100_000), ("Office rent share", 520_000, 640_000),
         ("Travel recharge", 35_000, 290_000), ("Cash sweep", 5_000_000, 12_000_000))
"""Kinds of intercompany charge and their amount range in cents (a sweep runs the other
way: Services lends Labs cash, recorded as a debit by Services too)."""

TIERS = {"easy": (14, ("missing_in_labs", "missing_in_services", "amount_mismatch")),
         "medium": (22, ("missing_in_labs", "missing_in_labs", "missing_in_services",
                         "amount_mismatch", "duplicate_in_labs")),
         "hard": (32, ("missing_in_labs", "missing_in_labs", "missing_in_services",
                       "amount_mismatch", "amount_mismatch", "duplicate_in_labs",
                       "sign_reversed_in_labs"))}
"""Per tier: the number of transactions and the planted differences."""


def _swap_digits(cents: int) -> int:
    """The amount with its two leading digits swapped (a keying error), never equal."""
    s = str(cents)
    for i in range(len(s) - 3):
        if s[i] != s[i + 1]:
            return int(s[:i] + s[i + 1] + s[i] + s[i + 2:])
    return cents + 900


def _labs_ref(n: int, pick: int) -> str:
    return (f"ic {n}", f"IC{n:03d} recharge", f"Northwind IC-{n:04d}")[pick % 3]


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``services_1400.csv``, ``labs_2400.csv``; the reference differences and balances."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    count, planted = TIERS[tier]
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:intercompany")
    first = ctx.day.replace(day=1)
    days = [d for d in (first + timedelta(days=i) for i in range((ctx.day - first).days + 1))
            if d.weekday() < 5]
    base = 40 + int(rng.integers(0, 60))
    txns: list[tuple[int, date, str, int]] = []
    for k in range(count):
        kind, lo, hi = KINDS[int(rng.integers(0, len(KINDS)))]
        amount = int(rng.integers(lo // 100, hi // 100)) * 100 + int(rng.integers(0, 100))
        txns.append((base + k, days[int(rng.integers(0, len(days)))], kind, amount))
    txns.sort(key=lambda t: (t[1], t[0]))
    slots = [int(i) for i in rng.permutation(count)[:len(planted)]]
    what = {txns[s][0]: reason for s, reason in zip(slots, planted, strict=True)}
    services: list[list[str]] = []
    labs: list[list[str]] = []
    diffs: list[list[str]] = []
    for n, on, kind, amount in txns:
        reason = what.get(n)
        ref = f"IC-{on.year}-{n:04d}"
        s_amount = amount
        l_amounts: list[int] = [amount]
        if reason == "missing_in_labs":
            l_amounts = []
        elif reason == "missing_in_services":
            s_amount = 0
        elif reason == "amount_mismatch":
            l_amounts = [_swap_digits(amount)]
        elif reason == "duplicate_in_labs":
            l_amounts = [amount, amount]
        elif reason == "sign_reversed_in_labs":
            l_amounts = [-amount]
        if s_amount:
            services.append([on.isoformat(), ref, f"{kind} - Northwind Labs",
                             format_cents(s_amount), ""])
        for j, a in enumerate(l_amounts):
            booked = on + timedelta(days=j)
            desc = f"{kind} from Services"
            labs.append([booked.isoformat(), _labs_ref(n, n + j), desc,
                         "" if a > 0 else format_cents(-a), format_cents(a) if a > 0 else ""])
        if reason:
            la = sum(l_amounts)
            diffs.append([ref, format_cents(s_amount), format_cents(la),
                          format_cents(s_amount - la), reason])
    if len(diffs) != len(planted):
        raise GenerationError(f"seed {ctx.seed}: {len(diffs)} differences planted "
                              f"(expected {len(planted)})")
    s_bal = sum(int(r[3].replace(".", "")) for r in services)
    l_bal = sum(int(r[4].replace(".", "") or 0) - int(r[3].replace(".", "") or 0)
                for r in labs)
    return {
        "workspace/services_1400.csv": csv_bytes(
            ["date", "reference", "description", "debit", "credit"], services),
        "workspace/labs_2400.csv": csv_bytes(
            ["posting_date", "their_ref", "memo", "debit", "credit"],
            sorted(labs, key=lambda r: (r[0], r[1]))),
        "reference/differences.csv": csv_bytes(
            ["ic_ref", "services_amount", "labs_amount", "difference", "reason"],
            sorted(diffs)),
        "reference/balances.csv": csv_bytes(
            ["entity", "balance"],
            [["Northwind Services", format_cents(s_bal)], ["Northwind Labs", format_cents(l_bal)],
             ["difference", format_cents(s_bal - l_bal)]]),
    }
