"""The ``pl-variance-memo`` generator: May's P&L against April, and what the memo must say.

The books are :mod:`desk.generators.month_books`' company from March to the task date.
Each P&L account's month activity is the change of its balance over the month (the trial
balances at the month ends). The workspace gets ``pl_by_month.csv`` as the GL shows it
(revenue as credits, negative; expenses positive) and the commentary rule
(``commentary_rule.md``: which lines to explain). The reference (``variances.csv``)
holds each line's two months, its change, the change as a percentage of April, the
direction and whether the rule selects it, and May's net income against April's.

Parameters: ``tier`` (``easy``: explain lines that moved by more than 5,000.00;
``medium``, the release: more than 1,000.00 and more than 10% of April; ``hard``: more
than 500.00 and more than 5%).
"""

from __future__ import annotations

from datetime import date

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes, text_bytes
from desk.generators.month_books import company_scenario, kept_books
from erp import queries as q
from erp.money import format_cents

TIERS = {"easy": (500_000, 0.0), "medium": (100_000, 10.0), "hard": (50_000, 5.0)}
"""Per tier: the amount a line must move by (cents) and the share of April (percent)."""

MONTH_ENDS = (date(2026, 3, 31), date(2026, 4, 30), date(2026, 5, 31))


def _pct(change: int, base: int) -> str:
    return f"{abs(change) * 100 / abs(base):.1f}" if base else ""


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``pl_by_month.csv`` and ``commentary_rule.md``; the reference variances."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of {', '.join(TIERS)})")
    amount_floor, share_floor = TIERS[tier]
    scenario = company_scenario(date(2026, 3, 2), ctx.day, customers=30, vendors=6)
    with kept_books(scenario, ctx.seed, until=ctx.day,
                    opening={"1300": 600_000, "1500": 4_200_000}) as kb:
        names = kb.names()
        chart = {x.code: x.account_type for x in q.chart(kb.sim.ledger.store).values()}
        tbs = [kb.trial_balances[d] for d in MONTH_ENDS]
    pl = sorted(a for a, t in chart.items() if t in ("revenue", "expense"))
    rows, ref = [], []
    net = {"april": 0, "may": 0}
    for a in pl:
        april = tbs[1].get(a, 0) - tbs[0].get(a, 0)
        may = tbs[2].get(a, 0) - tbs[1].get(a, 0)
        if april == 0 and may == 0:
            continue
        rows.append([a, names[a], chart[a], format_cents(april), format_cents(may)])
        sign = -1 if chart[a] == "revenue" else 1  # as amounts: revenue positive
        a_amt, m_amt = sign * april, sign * may
        net["april"] += -april
        net["may"] += -may
        change = m_amt - a_amt
        share = abs(change) * 100 / abs(a_amt) if a_amt else float("inf")
        explain = abs(change) > amount_floor and share > share_floor
        ref.append([a, names[a], format_cents(a_amt), format_cents(m_amt),
                    format_cents(abs(change)), _pct(change, a_amt),
                    "increased" if change > 0 else "decreased" if change < 0 else "unchanged",
                    "yes" if explain else "no"])
    explained = [r for r in ref if r[7] == "yes"]
    directions = {r[6] for r in explained}
    if len(explained) < 3 or directions != {"increased", "decreased"}:
        raise GenerationError(f"seed {ctx.seed}: {len(explained)} lines to explain, "
                              f"directions {sorted(directions)} (expected at least three, "
                              "both directions)")
    near = [r for r in ref if r[7] == "no" and r[6] != "unchanged"]
    if not near:
        raise GenerationError(f"seed {ctx.seed}: no line moved without crossing the rule")
    ni_change = net["may"] - net["april"]
    floor = format_cents(amount_floor)
    rule = (f"Explain every P&L line whose May amount differs from April's by more than "
            f"{floor}" + (f" and by more than {share_floor:.0f}% of April's amount"
                          if share_floor else "") + ".")
    files = {
        "workspace/pl_by_month.csv": csv_bytes(["account", "name", "type", "april", "may"],
                                               rows),
        "workspace/commentary_rule.md": text_bytes(
            "# Month-end P&L commentary: the rule\n\n" + rule + "\n\n"
            "Lines under the rule are not commented on: the board pack lists them in the "
            "table.\nAmounts in pl_by_month.csv are as the general ledger shows them: "
            "revenue accounts carry credits, so a revenue figure is negative.\n"),
        "reference/variances.csv": csv_bytes(
            ["account", "name", "april", "may", "change", "change_pct", "direction",
             "explain"], ref),
        "reference/net_income.csv": csv_bytes(
            ["april", "may", "change", "direction"],
            [[format_cents(net["april"]), format_cents(net["may"]),
              format_cents(abs(ni_change)),
              "increased" if ni_change > 0 else "decreased"]]),
    }
    return files
