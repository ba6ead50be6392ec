"""The ``accrual-journal-import`` generator: May's accrual schedule and the journal import file.

The vendors and the chart are the engine's (the population for the task's seed, the
company's chart). The workspace's ``accruals.csv`` is the schedule the team keeps by
hand: one row per accrual with the vendor id, a description, the expense account
written as a code, a name, or both (``6300``, ``Contractors``, ``6300 - Contractors``,
``contractors (6300)``), the cost center and the amount written with a currency sign,
thousands separators, or parentheses / a minus sign for a release of an earlier
over-accrual. The reference is the journal import file: one entry per vendor dated
2026-05-31, a line per accrual in the schedule's order (a debit to the expense account,
a release a credit) and a last line to accrued liabilities (2100) for the vendor's net,
each entry balanced.

``params.tier``: ``easy`` (5 vendors, no releases, codes only), ``medium`` (8 vendors,
releases, the four ways of writing accounts; the default), ``hard`` (12 vendors, a
vendor whose net is a release).
"""

from __future__ import annotations

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import simulate
from erp.money import format_cents
from scenarios.spec import Scenario
from sim.rng import text_random

TIERS = {"easy": (5, False), "medium": (8, True), "hard": (12, True)}
EXPENSES = ("6000", "6100", "6200", "6300")
CENTERS = ("CC-100 Ops", "CC-200 Sales", "CC-300 Admin")
DESCRIPTIONS = ("services rendered, not yet billed", "May hours per timesheet",
                "usage to month end", "milestone delivered", "support retainer")
ENTRY_DATE = "2026-05-31"


def _scenario(vendors: int) -> Scenario:
    return Scenario.model_validate({
        "id": "accrual-journal-gen", "title": "The vendors and chart behind the accruals",
        "calendar": {"start": "2026-06-01", "end": "2026-06-01"},
        "company": {"opening": {"bank_balance": "10000.00", "ap_open_bills": 0,
                                "ar_open_invoices": 0},
                    "automation": {"order_intake": False, "auto_invoicing": False,
                                   "dispatch_invoices": False, "bank_feed": False,
                                   "auto_receipts": False, "month_end_statements": False,
                                   "controller_approves_bank_changes": False}},
        "population": {"customers": {"count": 0},
                       "vendors": {"count": vendors, "profiles": {"reliable": 1.0}}},
        "turns": {"every": "none", "prompt": "none"},
    })


def _amount_text(cents: int, style: int) -> str:
    body = f"{abs(cents) // 100:,}.{abs(cents) % 100:02d}"
    if cents >= 0:
        return (body, "$" + body, body.replace(",", ""))[style]
    return (f"({body})", "-" + body.replace(",", ""), f"-${body}")[style]


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``accruals.csv`` and ``chart.csv``; the reference ``journal_import.csv``."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    count, releases = TIERS[tier]
    with simulate(_scenario(count), ctx.seed) as sim:
        sim.engine.run_to_turn(sim.instance.calendar.end)
        vendors = sorted((v.vendor_id, v.name) for v in sim.instance.vendors)
        chart = sorted((a.code, a.name, a.account_type)
                       for a in sim.ledger.books.accounts.values())
    names = {code: name for code, name, _ in chart}
    rng = text_random(f"accrual-journal:{ctx.seed}")
    schedule: list[list[str]] = []
    journal: list[list[str]] = []
    n = 0
    for k, (vid, vname) in enumerate(vendors):
        lines: list[tuple[str, str, int]] = []
        for _ in range(rng.randint(1, 4)):
            account = EXPENSES[rng.randrange(len(EXPENSES))]
            cents = rng.randrange(15_000, 1_200_000)
            if releases and lines and rng.random() < 0.3:
                cents = -rng.randrange(5_000, 60_000)
            lines.append((account, CENTERS[rng.randrange(len(CENTERS))], cents))
        if tier == "hard" and k == 0:
            lines = [(EXPENSES[3], CENTERS[0], -rng.randrange(120_000, 300_000)),
                     (EXPENSES[3], CENTERS[0], rng.randrange(20_000, 90_000))]
        entry = f"ACC-2605-{vid}"
        for i, (account, center, cents) in enumerate(lines, start=1):
            n += 1
            style = rng.randrange(4) if releases else 0
            written = (account, names[account], f"{account} - {names[account]}",
                       f"{names[account].lower()} ({account})")[style]
            schedule.append([f"A-{n:03d}", vid, vname, DESCRIPTIONS[rng.randrange(5)],
                             written, center, _amount_text(cents, rng.randrange(3))])
            journal.append([entry, str(i), ENTRY_DATE, account, center,
                            format_cents(max(cents, 0)), format_cents(max(-cents, 0))])
        net = sum(c for _, _, c in lines)
        if net == 0:
            raise GenerationError(f"seed {ctx.seed}: vendor {vid}'s accruals net to zero")
        journal.append([entry, str(len(lines) + 1), ENTRY_DATE, "2100", "",
                        format_cents(max(-net, 0)), format_cents(max(net, 0))])
    return {
        "workspace/accruals.csv": csv_bytes(
            ["accrual_ref", "vendor_id", "vendor_name", "description", "expense_account",
             "cost_center", "amount"], schedule),
        "workspace/chart.csv": csv_bytes(["account", "name", "type"], chart),
        "reference/journal_import.csv": csv_bytes(
            ["entry_id", "line", "date", "account", "cost_center", "debit", "credit"],
            journal),
    }
