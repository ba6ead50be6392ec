"""The ``audit-overpaid-bills-sql`` generator: a payables extract in SQLite for an audit query.

Two companies are run by the engine with their vendors' opening bills (``BillEntered``:
vendor, vendor invoice number, date, total); the task's seed gives the workspace's
``ap_extract.sqlite``, another seed the held-out ``reference/holdout.sqlite`` on which the
check runs the agent's query. Each extract has the payables as an ERP's export has them:
``vendors``, ``bills`` (totals in integer cents), ``payments`` (with a status, ``cleared``
or ``void``) and ``payment_lines`` (a payment may pay several bills). The payment history
is drawn from the seed's stream around the engine's bills: most bills paid once in full,
some in two instalments that add up exactly, some paid twice (a duplicate run), some
overpaid by a few cents or by a rounding, and some paid, voided and paid again (not
overpaid: a void does not count). The reference is the audit's answer for each extract
(``overpaid.csv``, ``holdout_expected.csv``), computed in Python from the same rows.

``params.tier``: ``easy`` (one vendor's bills per payment, no voids), ``medium`` (payments
over several bills, voids; the default), ``hard`` (more vendors, more of every case).
"""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import date, timedelta
from pathlib import Path

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import simulate
from scenarios.spec import Scenario
from sim.rng import text_random

TIERS = {"easy": (6, False), "medium": (8, True), "hard": (12, True)}
DAY = date(2026, 3, 31)
SCHEMA = """
CREATE TABLE vendors (vendor_id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE bills (bill_id TEXT PRIMARY KEY, vendor_id TEXT NOT NULL REFERENCES vendors,
  vendor_invoice TEXT NOT NULL, bill_date TEXT NOT NULL, total_cents INTEGER NOT NULL);
CREATE TABLE payments (payment_id TEXT PRIMARY KEY, vendor_id TEXT NOT NULL REFERENCES vendors,
  paid_on TEXT NOT NULL, method TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE payment_lines (payment_id TEXT NOT NULL REFERENCES payments,
  bill_id TEXT NOT NULL REFERENCES bills, amount_cents INTEGER NOT NULL);
"""


def _scenario(vendors: int) -> Scenario:
    return Scenario.model_validate({
        "id": "audit-overpaid-gen", "title": "The payables behind the audit extract",
        "calendar": {"start": DAY.isoformat(), "end": DAY.isoformat()},
        "company": {"opening": {"bank_balance": "90000.00", "ar_open_invoices": 0,
                                "ap_open_bills": vendors * 5},
                    "automation": {"order_intake": False, "auto_invoicing": False,
                                   "dispatch_invoices": False, "bank_feed": False,
                                   "auto_receipts": False, "month_end_statements": False,
                                   "controller_approves_bank_changes": False}},
        "population": {"customers": {"count": 0},
                       "vendors": {"count": vendors, "profiles": {"reliable": 1.0}}},
        "turns": {"every": "none", "prompt": "none"},
    })


def _extract(seed: int | str, label: str, vendors_n: int, voids: bool
             ) -> tuple[bytes, list[list[str]]]:
    with simulate(_scenario(vendors_n), seed) as sim:
        bills = sorted(sim.events("bill_entered"), key=lambda e: e.bill_id)
        vendors = sorted((v.vendor_id, v.name) for v in sim.instance.vendors)
    rng = text_random(f"audit-overpaid:{label}")
    payments: list[tuple[str, str, str, str, str]] = []
    lines: list[tuple[str, str, int]] = []
    paid: dict[str, int] = {}

    def pay(vendor: str, on: date, parts: list[tuple[str, int]], status: str = "cleared"
            ) -> None:
        pid = f"PAY-{len(payments) + 1:05d}"
        payments.append((pid, vendor, on.isoformat(), ("ACH", "CHECK", "WIRE")[
            rng.randrange(3)], status))
        for bill_id, cents in parts:
            lines.append((pid, bill_id, cents))
            if status == "cleared":
                paid[bill_id] = paid.get(bill_id, 0) + cents

    cases = ["once"] * 6 + ["split", "twice", "cents", "together"] + (
        ["void_reissue", "void_only"] if voids else [])
    pending: dict[str, list[tuple[str, int]]] = {}
    for b in bills:
        case = cases[rng.randrange(len(cases))]
        on = b.entry_date + timedelta(days=rng.randrange(5, 40))
        if case == "once":
            pay(b.vendor_id, on, [(b.bill_id, b.total)])
        elif case == "split":
            first = rng.randrange(b.total // 4, b.total * 3 // 4)
            pay(b.vendor_id, on, [(b.bill_id, first)])
            pay(b.vendor_id, on + timedelta(days=14), [(b.bill_id, b.total - first)])
        elif case == "twice":
            pay(b.vendor_id, on, [(b.bill_id, b.total)])
            pay(b.vendor_id, on + timedelta(days=rng.randrange(0, 8)), [(b.bill_id, b.total)])
        elif case == "cents":
            pay(b.vendor_id, on, [(b.bill_id, b.total + rng.randrange(1, 100))])
        elif case == "void_reissue":
            pay(b.vendor_id, on, [(b.bill_id, b.total)], status="void")
            pay(b.vendor_id, on + timedelta(days=3), [(b.bill_id, b.total)])
        elif case == "void_only":
            pay(b.vendor_id, on, [(b.bill_id, b.total)], status="void")
        else:  # paid together with the vendor's next bill in one payment
            pending.setdefault(b.vendor_id, []).append((b.bill_id, b.total))
            if len(pending[b.vendor_id]) == 2:
                pay(b.vendor_id, on, pending.pop(b.vendor_id))
    for vendor, parts in sorted(pending.items()):
        pay(vendor, DAY, parts)
    totals = {b.bill_id: b for b in bills}
    over = sorted(((bid, paid[bid] - totals[bid].total) for bid in paid
                   if paid[bid] > totals[bid].total), key=lambda x: (-x[1], x[0]))
    if len(over) < 3 or not any(d < 100 for _, d in over):
        raise GenerationError(f"{label}: too few overpaid bills ({len(over)})")
    if voids and not any(p[4] == "void" for p in payments):
        raise GenerationError(f"{label}: no void payment")
    rows = [[bid, totals[bid].vendor_id, str(totals[bid].total), str(paid[bid]), str(d)]
            for bid, d in over]
    with tempfile.TemporaryDirectory(prefix="erpsim-audit-") as tmp:
        path = Path(tmp) / "extract.sqlite"
        con = sqlite3.connect(path)
        con.executescript("PRAGMA page_size = 4096;" + SCHEMA)
        con.executemany("INSERT INTO vendors VALUES (?, ?)", vendors)
        con.executemany("INSERT INTO bills VALUES (?, ?, ?, ?, ?)",
                        [(b.bill_id, b.vendor_id, b.vendor_invoice_number,
                          b.entry_date.isoformat(), b.total) for b in bills])
        con.executemany("INSERT INTO payments VALUES (?, ?, ?, ?, ?)", payments)
        con.executemany("INSERT INTO payment_lines VALUES (?, ?, ?)", lines)
        con.commit()
        con.execute("VACUUM")
        con.close()
        data = path.read_bytes()
    return data, rows


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``ap_extract.sqlite``; the held-out extract and both expected answers."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    n, voids = TIERS[tier]
    header = ["bill_id", "vendor_id", "total_cents", "paid_cents", "overpaid_cents"]
    data, rows = _extract(ctx.seed, f"{ctx.seed}:workspace", n, voids)
    h_data, h_rows = _extract(f"{ctx.seed}:holdout", f"{ctx.seed}:holdout", n + 3, voids)
    return {"workspace/ap_extract.sqlite": data, "reference/holdout.sqlite": h_data,
            "reference/overpaid.csv": csv_bytes(header, rows),
            "reference/holdout_expected.csv": csv_bytes(header, h_rows)}
