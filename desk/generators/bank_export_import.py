"""The ``bank-export-import`` generator: a bank portal's messy export and the ERP's import file.

The engine runs a small company through February and March: customers are invoiced and
pay as their behaviours say, the company pays some suppliers, and the bank posts its
month-end fee and interest. The workspace gets March's lines as the bank's portal
exports them (``bank_export.csv``): payer names upper-cased, stripped of punctuation and
cut to a fixed width, dates written three ways (day-first ``DD/MM/YYYY``, ``DD-MON-YY``
and ISO), amounts with thousands separators, ``CR``/``DR`` suffixes or parentheses, a
repeated page header and an opening/closing balance trailer; and the customer and vendor
masters (``customers.csv``, ``vendors.csv``). The reference is the import file the ERP
expects (``bank_import.csv``): one row per bank line with its ISO date, the party (a
customer or a vendor id from the masters, or the bank itself), the signed amount and the
reference, all from the world's record of each line (``BankLinePosted``).

``params.tier``: ``easy`` (names cut at 30 characters, two date styles), ``medium`` (22
characters, three styles; the default) or ``hard`` (16 characters, three styles, more
customers). The generator refuses a draw where a cut name would fit two parties.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from datetime import date
from typing import Any

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import Simulation, simulate, with_behaviours
from erp.money import format_cents
from scenarios.spec import Scenario
from sim.engine import Phase
from sim.rng import text_random

TIERS = {"easy": (30, 2, 12), "medium": (22, 3, 18), "hard": (16, 3, 24)}
"""tier: (name width, date styles, customers)."""

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WINDOW = (date(2026, 3, 2), date(2026, 3, 31))
BEHAVIOURS = ("on_time", "late", "partial", "on_time", "multi_invoice_ach", "late")


def bank_name_key(name: str, width: int) -> str:
    """How the bank's portal writes a party's name: upper case, no punctuation, cut."""
    return re.sub(r"\s+", " ", re.sub(r"[^A-Z0-9 ]", " ", name.upper())).strip()[:width].strip()


def _scenario(customers: int) -> Scenario:
    return Scenario.model_validate({
        "id": "bank-export-import-gen", "title": "The company behind the bank export",
        "calendar": {"start": "2026-02-02", "end": WINDOW[1].isoformat()},
        "company": {"name": "Northwind Services LLC",
                    "opening": {"bank_balance": "84000.00", "ar_open_invoices": 24,
                                "ap_open_bills": 0},
                    "automation": {"order_intake": True, "auto_invoicing": True,
                                   "dispatch_invoices": True, "bank_feed": False,
                                   "auto_receipts": False, "month_end_statements": False,
                                   "controller_approves_bank_changes": False}},
        "population": {"customers": {"count": customers, "profiles": {"on_time": 1.0}},
                       "vendors": {"count": 5, "profiles": {"reliable": 1.0}}},
        "turns": {"every": "none", "prompt": "none"},
    })


def _vendor_payments(sim: Simulation, seed: int) -> Generator[Any, Any, None]:
    """The company pays four of its suppliers by ACH during March."""
    bank = sim.population.bank
    assert bank is not None
    rng = text_random(f"bank-export-import:{seed}:vendor-payments")
    vendors = sorted(sim.instance.vendors, key=lambda v: v.vendor_id)
    for n, (day, v) in enumerate(zip((date(2026, 3, 4), date(2026, 3, 11), date(2026, 3, 18),
                                      date(2026, 3, 25)), vendors, strict=False)):
        yield sim.engine.until(day, Phase.BANK_MORNING)
        bank.post(amount=-rng.randrange(40_000, 900_000), description="ACH DEBIT",
                  reference=f"VENDOR PMT {1040 + n}", counterparty=v.name, kind="payment",
                  source=f"vendor-pmt:{v.vendor_id}")


def _date_text(d: date, style: int) -> str:
    if style == 0:
        return d.strftime("%d/%m/%Y")
    if style == 1:
        return f"{d.day:02d}-{MONTHS[d.month - 1]}-{d.year % 100:02d}"
    return d.isoformat()


def _amount_text(cents: int, style: int) -> str:
    body = f"{abs(cents) // 100:,}.{abs(cents) % 100:02d}"
    if style == 0:
        return f"{body} CR" if cents > 0 else f"{body} DR"
    if style == 1:
        return body if cents > 0 else f"({body})"
    return body.replace(",", "") if cents > 0 else "-" + body.replace(",", "")


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``bank_export.csv``, ``customers.csv``, ``vendors.csv``; the reference import file."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    width, styles, count = TIERS[tier]
    behaviours = {f"C{n:04d}": BEHAVIOURS[n % len(BEHAVIOURS)] for n in range(1, count + 1)}
    with simulate(_scenario(count), ctx.seed, setup=with_behaviours(behaviours)) as sim:
        sim.engine.process(_vendor_payments(sim, ctx.seed))
        sim.engine.run_to_turn(WINDOW[1])
        sim.engine.finish()
        lines = [x for x in sim.events("bank_line_posted")
                 if WINDOW[0] <= x.posted_on <= WINDOW[1]]
        books = sim.ledger.books
        customers = sorted((c.customer_id, c.name) for c in books.customers.values())
        vendors = sorted((v.vendor_id, v.name) for v in books.vendors.values())
        opening = 8_400_000 + sum(x.amount for x in sim.events("bank_line_posted")
                                  if x.posted_on < WINDOW[0])
    keys: dict[str, list[str]] = {}
    for pid, name in customers + vendors:
        keys.setdefault(bank_name_key(name, width), []).append(pid)
    clash = {k: v for k, v in keys.items() if len(v) > 1}
    if clash:
        raise GenerationError(f"seed {ctx.seed}: cut names fit two parties: {clash}")
    cust = {cid for cid, _ in customers}
    rng = text_random(f"bank-export-import:{ctx.seed}:formats")
    header = ["Posting Date", "Bank Ref", "Transaction Details", "Payer / Payee", "Reference",
              "Amount"]
    export: list[list[str]] = [["", "", "OPENING BALANCE", "", "", _amount_text(opening, 1)]]
    ref_rows: list[list[str]] = []
    for n, x in enumerate(sorted(lines, key=lambda x: (x.posted_on, x.line_id))):
        if n and n % 20 == 0:
            export.append(list(header))  # the portal repeats its header on every page
        if x.kind in ("fee", "interest"):
            party_type, party_id, shown = "bank", "", bank_name_key(x.counterparty, width)
        else:
            pid = keys[bank_name_key(x.counterparty, width)][0]
            party_type = "customer" if pid in cust else "vendor"
            party_id, shown = pid, bank_name_key(x.counterparty, width)
        export.append([_date_text(x.posted_on, rng.randrange(styles)), x.line_id,
                       x.description, shown, f" {x.reference} " if n % 7 == 3 else x.reference,
                       _amount_text(x.amount, rng.randrange(3))])
        ref_rows.append([x.line_id, x.posted_on.isoformat(), party_type, party_id,
                         format_cents(x.amount), x.reference])
    closing = opening + sum(x.amount for x in lines)
    export.append(["", "", "CLOSING BALANCE", "", "", _amount_text(closing, 1)])
    if not any(r[2] == "vendor" for r in ref_rows) or not any(r[2] == "bank" for r in ref_rows):
        raise GenerationError(f"seed {ctx.seed}: March has no vendor or no bank line")
    return {
        "workspace/bank_export.csv": csv_bytes(header, export),
        "workspace/customers.csv": csv_bytes(["customer_id", "name"], customers),
        "workspace/vendors.csv": csv_bytes(["vendor_id", "name"], vendors),
        "reference/bank_import.csv": csv_bytes(
            ["line_id", "date", "party_type", "party_id", "amount", "reference"], ref_rows),
    }
