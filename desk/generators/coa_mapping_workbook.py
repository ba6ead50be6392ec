"""The ``coa-mapping-workbook`` generator: a legacy trial balance, mapping rules, the chart.

The books are the library's ``month-end-close`` company run by the engine to the end of
May (no agent: receipts wait unapplied, bills are entered). Its trial balance is written
as the legacy system would have kept it: each of the company's accounts split over two
to four legacy accounts (five-digit codes, the legacy names), amounts with thousands
separators. ``mapping_rules.csv`` maps ranges of legacy codes to the company's accounts,
with one carved-out range (legacy ``12050-12099``, unidentified receipts kept in
receivables, belongs to unapplied cash); ``chart.csv`` is the company's chart. The
reference holds the trial balance restated in the company's chart, which is the engine's
own trial balance, and the rules as the workbook's rules sheet keeps them.

``params.tier``: ``easy`` (two legacy accounts per company account, no carved-out range),
``medium`` (two or three, the carve-out; the default), ``hard`` (three or four, the
carve-out).
"""

from __future__ import annotations

from datetime import date

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import books_at_turn
from erp import queries as q
from scenarios.loader import library_dir, load_scenario
from sim.rng import text_random

TB_DATE = date(2026, 5, 29)
TIERS = {"easy": (2, 2, False), "medium": (2, 3, True), "hard": (3, 4, True)}
"""tier: (fewest and most legacy accounts per company account, carve-out)."""

LEGACY = {
    "1000": [("10100", "Cash - Operating"), ("10150", "Cash - Lockbox"),
             ("10190", "Cash - Sweep"), ("10200", "Cash - Payroll clearing")],
    "1200": [("12000", "A/R - Trade"), ("12010", "A/R - Retainage"),
             ("12100", "A/R - Progress billings"), ("12200", "A/R - Other")],
    "2000": [("20000", "A/P - Trade"), ("20010", "A/P - Manual checks"),
             ("20100", "A/P - Expense reports"), ("20200", "A/P - Other")],
    "2150": [("21500", "Suspense - Receipts"), ("21510", "Suspense - Lockbox"),
             ("21520", "Suspense - Wires"), ("21590", "Suspense - Other")],
    "3900": [("39000", "Conversion equity"), ("39100", "Opening balances - AR"),
             ("39200", "Opening balances - AP"), ("39900", "Opening balances - Other")],
    "4000": [("40000", "Revenue - Projects"), ("40100", "Revenue - Retainers"),
             ("40200", "Revenue - Time and materials"), ("40300", "Revenue - Other")],
    "6000": [("60000", "G&A - Office"), ("60100", "G&A - Travel"),
             ("60200", "G&A - Supplies"), ("60900", "G&A - Other")],
}
CARVE_OUT = ("12050", "A/R - Unidentified receipts")
RULES = [("10000", "11999", "1000"), ("12000", "12049", "1200"), ("12050", "12099", "2150"),
         ("12100", "12999", "1200"), ("20000", "20999", "2000"), ("21000", "21999", "2150"),
         ("39000", "39999", "3900"), ("40000", "49999", "4000"), ("60000", "69999", "6000")]


def _money_text(cents: int) -> str:
    """Cents as the legacy export writes them: ``12,345.67``."""
    return f"{cents // 100:,}.{cents % 100:02d}"


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``legacy_tb.csv``, ``mapping_rules.csv``, ``chart.csv``; the restated trial balance."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    low, high, carve = TIERS[tier]
    scenario = load_scenario(str(library_dir() / "month-end-close" / "scenario.yaml")).scenario
    with books_at_turn(scenario, ctx.seed, TB_DATE) as sim:
        tb = q.trial_balance(sim.ledger.store, as_of=TB_DATE)
        chart = sorted((a.code, a.name, a.account_type)
                       for a in sim.ledger.books.accounts.values())
    rng = text_random(f"coa-mapping:{ctx.seed}")
    legacy: list[tuple[str, str, int, int]] = []
    for row in tb:
        if row.account not in LEGACY:
            raise GenerationError(f"seed {ctx.seed}: account {row.account} has no legacy names")
        names = list(LEGACY[row.account])
        if carve and row.account == "2150":
            names = [CARVE_OUT, *names]
        n = rng.randint(low, high)
        total = row.debit or row.credit
        cuts = sorted(rng.sample(range(total // 10, total - total // 10), n - 1))
        pieces = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
        for (code, name), piece in zip(names[:n], pieces, strict=True):
            legacy.append((code, name, piece if row.debit else 0, 0 if row.debit else piece))
    figures = {p for _, _, d, c in legacy for p in (d, c) if p}
    totals = {r.debit or r.credit for r in tb} | {sum(r.debit for r in tb)}
    if figures & totals:
        raise GenerationError(f"seed {ctx.seed}: a restated figure is in the legacy export")
    rules = RULES if carve else sorted(
        [r for r in RULES if r[0] not in ("12000", "12050", "12100")]
        + [("12000", "12999", "1200")])
    chart_names = {code: name for code, name, _ in chart}

    def company(code: str) -> str:
        return next(acct for lo, hi, acct in rules if int(lo) <= int(code) <= int(hi))

    return {
        "workspace/legacy_tb.csv": csv_bytes(
            ["legacy_account", "legacy_name", "debit", "credit"],
            [[c, n, _money_text(d) if d else "", _money_text(k) if k else ""]
             for c, n, d, k in sorted(legacy)]),
        "workspace/mapping_rules.csv": csv_bytes(
            ["legacy_from", "legacy_to", "company_account"], rules),
        "workspace/chart.csv": csv_bytes(["account", "name", "type"], chart),
        # each legacy row as the workbook's legacy sheet shows it: its company account by
        # the rules, its debit and credit (what the lookups and their sums are checked by)
        "reference/legacy_mapped.csv": csv_bytes(
            ["legacy_account", "company_account", "debit", "credit"],
            [[c, company(c), f"{d / 100:.2f}", f"{k / 100:.2f}"] for c, _, d, k in sorted(legacy)]),
        # the agreed rules, as the workbook's rules sheet must keep them (for reuse)
        "reference/rules.csv": csv_bytes(["legacy_from", "legacy_to", "company_account"], rules),
        "reference/company_tb.csv": csv_bytes(
            ["account", "name", "debit", "credit"],
            [[r.account, chart_names[r.account], f"{r.debit / 100:.2f}", f"{r.credit / 100:.2f}"]
             for r in tb] + [["Total", "", f"{sum(r.debit for r in tb) / 100:.2f}",
                              f"{sum(r.credit for r in tb) / 100:.2f}"]]),
    }
