"""The ``payment-proposal-script`` generator: open bills for a rerunnable proposal script.

Two companies are run by the engine with their vendors' opening bills (``BillEntered``:
bill date, due date, amount): the task's seed gives the workspace's ``open_bills.csv``
and ``vendors.csv`` (pay date 2026-04-10); another seed gives the held-out input in
``reference/holdout/`` (pay date 2026-04-13), on which the check runs the agent's script.
Vendors carry AP's hold flag (written ``Y``, ``yes``, ``HOLD`` or empty) and early-payment
terms (a discount percent within some days of the bill date); some bills are partly paid
and some fully paid (balance 0.00), balances are written with thousands separators.
Planted on both inputs: a bill due exactly seven days after the pay date (in), one due
eight days after (out), a discount whose last day is the pay date (taken), and a vendor on
hold with a bill past due (out); on the held-out input also a bill of a vendor without terms
dated on the pay date and due after the window (out: no terms, no discount open) and a
vendor whose terms are 0.01 percent with a bill proposed only for its open discount (in:
any terms count). The expected proposals (``proposal.csv``,
``holdout/expected.csv``) follow the prompt's rules, in integer cents.

``params.tier``: ``easy`` (6 vendors, no partial payments), ``medium`` (8 vendors; the
default), ``hard`` (12 vendors, more partial and zero balances).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import simulate
from erp.money import format_cents
from scenarios.spec import Scenario
from sim.rng import text_random

TIERS = {"easy": (6, 0.0), "medium": (8, 0.25), "hard": (12, 0.4)}
PAY_DATE = date(2026, 4, 10)
HOLDOUT_PAY_DATE = date(2026, 4, 13)
HOLD_WORDS = ("Y", "yes", "HOLD")


def _scenario(vendors: int, day: date) -> Scenario:
    return Scenario.model_validate({
        "id": "payment-proposal-gen", "title": "The payables behind the proposal",
        "calendar": {"start": day.isoformat(), "end": day.isoformat()},
        "company": {"opening": {"bank_balance": "90000.00", "ar_open_invoices": 0,
                                "ap_open_bills": vendors * 4},
                    "automation": {"order_intake": False, "auto_invoicing": False,
                                   "dispatch_invoices": False, "bank_feed": False,
                                   "auto_receipts": False, "month_end_statements": False,
                                   "controller_approves_bank_changes": False}},
        "population": {"customers": {"count": 0},
                       "vendors": {"count": vendors, "profiles": {"reliable": 1.0}}},
        "turns": {"every": "none", "prompt": "none"},
    })


@dataclass
class _Bill:
    bill_id: str
    vendor_id: str
    ref: str
    bill_date: date
    due: date
    total: int
    balance: int


@dataclass
class _Terms:
    hold: bool
    pct_bp: int
    days: int


def proposal_rows(bills: list[_Bill], vendors: dict[str, _Terms], pay: date) -> list[list[str]]:
    """The proposal by the prompt's rules: per vendor, bills, gross, discount, net."""
    out: dict[str, list[int]] = {}
    for b in bills:
        v = vendors[b.vendor_id]
        if b.balance <= 0 or v.hold:
            continue
        discounted = v.pct_bp > 0 and pay <= b.bill_date + timedelta(days=v.days)
        if not (b.due <= pay + timedelta(days=7) or discounted):
            continue
        disc = (b.balance * v.pct_bp + 5_000) // 10_000 if discounted else 0
        row = out.setdefault(b.vendor_id, [0, 0, 0])
        row[0] += 1
        row[1] += b.balance
        row[2] += disc
    return [[vid, str(n), format_cents(g), format_cents(d), format_cents(g - d)]
            for vid, (n, g, d) in sorted(out.items())]


def _money(cents: int) -> str:
    return f"{cents // 100:,}.{cents % 100:02d}"


def _pct(bp: int) -> str:
    """Basis points as the vendor list writes a percent: ``1.5``, ``2.0``, ``0.01``."""
    return f"{bp / 100:.1f}" if bp % 10 == 0 else f"{bp / 100:.2f}"


def _inputs(seed: int | str, label: str, count: int, partial: float, pay: date,
            *, holdout: bool = False) -> tuple[bytes, bytes, list[list[str]]]:
    with simulate(_scenario(count, pay), seed) as sim:
        entered = sim.events("bill_entered")
        names = {v.vendor_id: v.name for v in sim.instance.vendors}
    rng = text_random(f"payment-proposal:{label}")
    vids = sorted(names)
    vendors: dict[str, _Terms] = {}
    for k, vid in enumerate(vids):
        pct = (0, 0, 150, 200)[rng.randrange(4)]
        vendors[vid] = _Terms(hold=k == 1, pct_bp=pct, days=20 if pct else 0)
    bills: list[_Bill] = []
    for e in entered:
        roll = rng.random()
        balance = e.total if roll >= partial else (
            0 if roll < partial / 3 else e.total - rng.randrange(1, e.total // 2))
        bills.append(_Bill(e.bill_id, e.vendor_id, e.vendor_invoice_number, e.entry_date,
                           e.due_on, e.total, balance))
    if len(bills) < 4:
        raise GenerationError(f"{label}: too few bills")
    # the planted edges: due on the last day in, a day later out, a discount ending today
    free = [b for b in bills if not vendors[b.vendor_id].hold]
    free[0].due, free[0].balance = pay + timedelta(days=7), free[0].total
    free[1].due, free[1].balance = pay + timedelta(days=8), free[1].total
    vendors[free[1].vendor_id].pct_bp = 0
    disc = next(b for b in free[2:] if b.vendor_id != free[1].vendor_id)
    vendors[disc.vendor_id].pct_bp = 200
    vendors[disc.vendor_id].days = (pay - disc.bill_date).days
    disc.due, disc.balance = pay + timedelta(days=25), disc.total
    held = next(b for b in bills if vendors[b.vendor_id].hold)
    held.due, held.balance = pay - timedelta(days=3), held.total
    if holdout:  # the edges a script's terms test gets wrong (pct >= 0, pct > 1)
        plain = [b for b in free[2:] if b is not disc and not vendors[b.vendor_id].pct_bp]
        taken = {free[0].vendor_id, free[1].vendor_id, disc.vendor_id}
        if not plain:
            raise GenerationError(f"{label}: no bill of a vendor without terms to plant")
        none = plain[0]
        none.bill_date, none.due, none.balance = pay, pay + timedelta(days=30), none.total
        tiny = next((b for b in free[2:] if b.vendor_id not in taken | {none.vendor_id}),
                    None)
        if tiny is None:
            raise GenerationError(f"{label}: no vendor left for the 0.01 percent terms")
        vendors[tiny.vendor_id].pct_bp, vendors[tiny.vendor_id].days = 1, 20
        tiny.bill_date, tiny.due = pay - timedelta(days=5), pay + timedelta(days=25)
        tiny.balance = tiny.total
    for v in vendors.values():
        if not v.pct_bp:
            v.days = 0
    bill_rows = [[b.bill_id, b.vendor_id, b.ref, b.bill_date.isoformat(), b.due.isoformat(),
                  _money(b.total), _money(b.balance)] for b in bills]
    vendor_rows = [[vid, names[vid], HOLD_WORDS[rng.randrange(3)] if vendors[vid].hold else "",
                    _pct(vendors[vid].pct_bp) if vendors[vid].pct_bp else "",
                    str(vendors[vid].days) if vendors[vid].pct_bp else ""]
                   for vid in vids]
    return (csv_bytes(["bill_id", "vendor_id", "vendor_invoice", "bill_date", "due_date",
                       "amount", "balance"], bill_rows),
            csv_bytes(["vendor_id", "name", "on_hold", "discount_pct", "discount_days"],
                      vendor_rows),
            proposal_rows(bills, vendors, pay))


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """The workspace input, the held-out input, and both expected proposals."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    count, partial = TIERS[tier]
    header = ["vendor_id", "bills", "gross", "discount", "net"]
    bills, vendors, expected = _inputs(ctx.seed, f"{ctx.seed}:workspace", count, partial,
                                       PAY_DATE)
    h_bills, h_vendors, h_expected = _inputs(f"{ctx.seed}:holdout", f"{ctx.seed}:holdout",
                                             count + 2, partial, HOLDOUT_PAY_DATE,
                                             holdout=True)
    if expected == h_expected:
        raise GenerationError(f"seed {ctx.seed}: the held-out proposal equals the workspace's")
    return {
        "workspace/open_bills.csv": bills, "workspace/vendors.csv": vendors,
        "reference/proposal.csv": csv_bytes(header, expected),
        "reference/holdout/open_bills.csv": h_bills,
        "reference/holdout/vendors.csv": h_vendors,
        "reference/holdout/expected.csv": csv_bytes(header, h_expected),
    }
