"""The ``loan-amortization-model`` generator: a term loan's terms and its schedule's figures.

Not about the books: the loan's principal and fixed rate are drawn from the seed's stream
(``sim.rng``), its term and dates are the tier's. The workspace gets the bank's term sheet
(``term_sheet.txt``, the figures in prose among covenants and fees); the reference the
schedule's summary figures (``summary.csv``) and those of a second, held-out loan of the
same term and dates (``holdout.csv``: another principal and rate) that the custom check
types into the agent's Inputs sheet before LibreOffice recalculates it. Every figure is
computed in exact decimals with the prompt's rounding (payment and each month's interest
rounded to the cent, half away from zero; the last payment clears the balance); the
generator refuses a draw where a month's interest falls within a millionth of a cent of
a half cent (floating-point recalculation could round it either way).

``params.tier``: ``easy`` (36 months), ``medium`` (60 months; the default), ``hard``
(84 months).
"""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_UP, Decimal, getcontext

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes, text_bytes
from sim.rng import text_random

TIERS = {"easy": 36, "medium": 60, "hard": 84}
DRAWN = date(2025, 12, 31)
YEAR_END = date(2026, 12, 31)
LABELS = ("Monthly payment", "Final instalment", "Total interest", "Interest expense 2026",
          "Balance at 2026-12-31", "Current portion at 2026-12-31")
CENT = Decimal("0.01")


def _month_ends(n: int) -> list[date]:
    out = []
    y, m = DRAWN.year, DRAWN.month
    for _ in range(n):
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
        nxt = date(y + 1, 1, 1) if m == 12 else date(y, m + 1, 1)
        out.append(date.fromordinal(nxt.toordinal() - 1))
    return out


Row = tuple[int, date, Decimal, Decimal, Decimal, Decimal, Decimal]
"""One instalment: number, date, opening balance, instalment, interest, principal, closing."""


def schedule_rows(principal: Decimal, rate: Decimal, months: int) -> list[Row]:
    """The prompt's schedule, row by row, exactly (refused: a half-cent interest, or a last
    instalment equal to the level one)."""
    getcontext().prec = 40
    r = rate / 12
    payment = (principal * r / (1 - (1 + r) ** -months)).quantize(CENT, ROUND_HALF_UP)
    balance = principal
    rows: list[Row] = []
    for k, when in enumerate(_month_ends(months), start=1):
        raw = balance * r
        frac = (raw * 100) % 1
        if abs(frac - Decimal("0.5")) < Decimal("1e-6"):
            raise GenerationError(f"month {k}: interest {raw} is a half cent")
        interest = raw.quantize(CENT, ROUND_HALF_UP)
        pay = balance + interest if k == months else payment
        repaid = pay - interest
        rows.append((k, when, balance, pay, interest, repaid, balance - repaid))
        balance -= repaid
    if rows[-1][3] == payment:
        raise GenerationError("the last instalment equals the level one (nothing to adjust)")
    return rows


def schedule_summary(principal: Decimal, rate: Decimal, months: int) -> list[Decimal]:
    """The six summary figures (``LABELS``) of the prompt's schedule, exactly."""
    rows = schedule_rows(principal, rate, months)
    return [rows[0][3], rows[-1][3], sum((x[4] for x in rows), Decimal(0)),
            sum((x[4] for x in rows if x[1].year == 2026), Decimal(0)),
            next(x[6] for x in rows if x[1] == YEAR_END),
            sum((x[5] for x in rows if x[1].year == 2027), Decimal(0))]


def _draw(label: str) -> tuple[Decimal, Decimal]:
    rng = text_random(label)
    principal = Decimal(rng.randrange(120, 480) * 1000 + rng.choice((0, 250, 500)))
    rate = Decimal(rng.randrange(42, 70) * 125) / Decimal(100_000)  # 5.250% .. 8.625%
    return principal, rate


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``term_sheet.txt``; the reference summary and the held-out loan's summary."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    months = TIERS[tier]
    principal, rate = _draw(f"loan:{ctx.seed}:workspace")
    h_principal, h_rate = _draw(f"loan:{ctx.seed}:holdout")
    try:
        rows = schedule_rows(principal, rate, months)
        figures = schedule_summary(principal, rate, months)
        h_figures = schedule_summary(h_principal, h_rate, months)
    except GenerationError as e:
        raise GenerationError(f"seed {ctx.seed}: {e}") from None
    pct = f"{rate * 100:.3f}".rstrip("0").rstrip(".")
    sheet = f"""FIRST HARBOR BANK - COMMERCIAL LENDING
INDICATIVE TERM SHEET (EXECUTED)

Borrower:            Northwind Services LLC
Facility:            Senior secured term loan
Principal:           USD {principal:,.2f}, drawn in full on {DRAWN:%d %B %Y}
Interest:            fixed at {pct}% per annum, calculated monthly on the outstanding
                     principal (annual rate / 12), each month's interest rounded to
                     the cent
Repayment:           {months} equal monthly instalments of principal and interest,
                     the first on {_month_ends(1)[0]:%d %B %Y} and then on the last day
                     of each month; the instalment is rounded to the cent and the last
                     instalment is adjusted to repay the loan in full
Arrangement fee:     0.50% of the principal, paid at drawdown (not part of the schedule)
Prepayment:          permitted on any payment date with 30 days' notice, subject to a
                     1.00% fee in the first 24 months
Covenants:           minimum cash of USD 50,000.00 at each month end; leverage tested
                     quarterly
"""
    summary = csv_bytes(["figure", "value"], [[k, f"{v:.2f}"] for k, v in
                                              zip(LABELS, figures, strict=True)])
    holdout = csv_bytes(["figure", "value"],
                        [["Principal", f"{h_principal:.2f}"], ["Annual rate", f"{h_rate}"],
                         *[[k, f"{v:.2f}"] for k, v in zip(LABELS, h_figures, strict=True)]])
    schedule = csv_bytes(
        ["number", "date", "opening", "instalment", "interest", "principal", "closing"],
        [[k, when.isoformat(), *(f"{v:.2f}" for v in figures_of_row)]
         for k, when, *figures_of_row in rows])
    return {"workspace/term_sheet.txt": text_bytes(sheet), "reference/summary.csv": summary,
            "reference/schedule.csv": schedule,
            "reference/holdout.csv": holdout}
