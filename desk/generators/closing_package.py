"""The ``closing-package-tb`` generator: May's trial balance by account group, against April.

The company's books are kept month by month by :mod:`desk.generators.month_books` (the
engine's customers, invoices and payments; the past clerk's receipts and month-end
entries). The workspace gets the two month-end trial balances as two systems exported
them: May from the new ERP (``tb_2026-05-31.csv``: account, name, debit, credit), April
from the old one (``tb_2026-04-30.csv``: account numbers with a ``-00`` sub-account
suffix, one signed balance column with thousands separators and credits in
parentheses; at ``tier: hard`` rent and contractors split over two sub-accounts each),
and the reporting groups (``account_groups.csv``: ranges, and single-account rows that
override a range). The reference holds each group's balance at both month ends and the
change.

Parameters: ``tier`` (``easy``: 15 customers and April in the new format; ``medium``, the
default: 30 customers; ``hard``: 50 customers and the sub-accounts split).
"""

from __future__ import annotations

from datetime import date

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.generators.month_books import company_scenario, kept_books
from erp.money import format_cents
from sim.rng import Streams

GROUPS: tuple[tuple[str, str, str], ...] = (
    ("Cash and equivalents", "1000", "1099"),
    ("Short-term deposits", "", ""),
    ("Receivables", "1100", "1299"),
    ("Prepaids and other assets", "1300", "1499"),
    ("Fixed assets", "1500", "1999"),
    ("Payables", "2000", "2099"),
    ("Accrued and other liabilities", "2100", "2999"),
    ("Equity", "3000", "3999"),
    ("Revenue", "4000", "4999"),
    ("Operating expenses", "5000", "6999"),
)
"""Reporting groups by account range (inclusive)."""

OVERRIDES = (("Short-term deposits", "1010"), ("Receivables", "2150"))
"""Single accounts reported in another group than their range's: the savings account
apart from cash, unapplied cash against receivables."""

TIERS = {"easy": 15, "medium": 30, "hard": 50}

PRIOR, CURRENT = date(2026, 4, 30), date(2026, 5, 31)


def group_of(account: str) -> str:
    """The reporting group of an account (an override first, then the ranges)."""
    for name, acct in OVERRIDES:
        if acct == account:
            return name
    for name, lo, hi in GROUPS:
        if lo and lo <= account <= hi:
            return name
    raise GenerationError(f"account {account} is in no reporting group")


def _money(cents: int) -> str:
    text = f"{abs(cents) / 100:,.2f}"
    return f"({text})" if cents < 0 else text


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """Two trial balances and the group map; the reference group table."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of {', '.join(TIERS)})")
    scenario = company_scenario(date(2026, 3, 2), ctx.day, customers=TIERS[tier], vendors=6)
    with kept_books(scenario, ctx.seed, until=ctx.day,
                    opening={"1300": 600_000, "1500": 4_200_000}) as kb:
        names = kb.names()
        current, prior = kb.trial_balances[CURRENT], kb.trial_balances[PRIOR]
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:tb-export")
    files: dict[str, bytes] = {}
    rows = [[a, names[a], format_cents(v) if v > 0 else "", format_cents(-v) if v < 0 else ""]
            for a, v in sorted(current.items()) if v != 0]
    files[f"workspace/tb_{CURRENT}.csv"] = csv_bytes(["account", "name", "debit", "credit"],
                                                   rows)
    if tier == "easy":
        old = [[a, names[a], format_cents(v) if v > 0 else "", format_cents(-v) if v < 0 else ""]
               for a, v in sorted(prior.items()) if v != 0]
        files[f"workspace/tb_{PRIOR}.csv"] = csv_bytes(["account", "name", "debit", "credit"],
                                                     old)
    else:
        old = []
        for a, v in sorted(prior.items()):
            if v == 0:
                continue
            if tier == "hard" and a in ("6100", "6300"):
                part = int(v * float(rng.uniform(0.3, 0.7)))
                old.append([f"{a}-01", f"{names[a]} - main office", _money(part)])
                old.append([f"{a}-02", f"{names[a]} - branch", _money(v - part)])
            else:
                old.append([f"{a}-00", names[a].upper(), _money(v)])
        files[f"workspace/tb_{PRIOR}.csv"] = csv_bytes(
            ["Acct No", "Account Description", "Balance"], old)
    files["workspace/account_groups.csv"] = csv_bytes(
        ["group", "from_account", "to_account"],
        [[g, lo, hi] for g, lo, hi in GROUPS if lo] + [[g, a, a] for g, a in OVERRIDES])
    table = []
    inputs = {abs(v) for v in current.values()} | {abs(v) for v in prior.values()}
    for g, _, _ in GROUPS:
        cur = sum(v for a, v in current.items() if group_of(a) == g)
        pri = sum(v for a, v in prior.items() if group_of(a) == g)
        table.append([g, format_cents(cur), format_cents(pri), format_cents(cur - pri)])
        if cur != pri and abs(cur - pri) in inputs:
            raise GenerationError(f"seed {ctx.seed}: {g}'s change {cur - pri} is a figure of "
                                  "the exports (an unsafe pin)")
    if sum(current.values()) != 0 or sum(prior.values()) != 0:
        raise GenerationError("a trial balance does not balance")  # pragma: no cover
    files["reference/tb_by_group.csv"] = csv_bytes(["group", "current", "prior", "change"],
                                                   table)
    return files
