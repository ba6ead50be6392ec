"""The ``bank-rec-template`` generator: March's bank statement and cash ledger for a template.

The engine runs a small company through February to early April: customers pay as their
behaviours say, the company's checks to its suppliers clear when the bank says, the bank
charges its fee and pays interest at the month end. The workspace gets March's bank
statement (``bank_statement.csv``, the bank's lines with the opening and closing balance)
and the books' cash ledger for March (``cash_ledger.csv``): every receipt the books
recorded (the deposits the bank posted on the first three business days of April were sent
in March and recorded on 31 March: deposits in transit) and every check written in March
(those the bank clears in April are outstanding), without the bank's fee and interest.
The reference holds this month's reconciliation figures (``reconciliation.csv``, and with
its items ``month.json``) and a
held-out month (``holdout.csv``: another company's figures, more items, and a book balance
with a transposition error so the difference is not zero) that the custom check types into
the agent's template before LibreOffice recalculates it.

``params.tier``: ``easy`` (few items), ``medium`` (the default), ``hard`` (more
customers and checks).
"""

from __future__ import annotations

import json
from collections.abc import Generator
from datetime import date, timedelta
from typing import Any

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes, text_bytes
from desk.simulate import Simulation, simulate, with_behaviours
from erp.money import format_cents
from scenarios.spec import Scenario
from sim.engine import Phase
from sim.rng import text_random

TIERS = {"easy": (8, 5), "medium": (14, 9), "hard": (20, 14)}
"""tier: (customers, checks written in March)."""
MONTH = (date(2026, 3, 1), date(2026, 3, 31))
TRANSIT_UNTIL = date(2026, 4, 3)
MAX_ITEMS = 20
"""The template holds up to 20 deposits in transit and 20 outstanding checks."""


def _scenario(customers: int) -> Scenario:
    return Scenario.model_validate({
        "id": "bank-rec-template-gen", "title": "The company behind the reconciliation",
        "calendar": {"start": "2026-02-02", "end": "2026-04-03"},
        "company": {"name": "Northwind Services LLC",
                    "opening": {"bank_balance": "60000.00", "ar_open_invoices": customers * 2,
                                "ap_open_bills": 0},
                    "automation": {"order_intake": True, "auto_invoicing": True,
                                   "dispatch_invoices": True, "bank_feed": False,
                                   "auto_receipts": False, "month_end_statements": False,
                                   "controller_approves_bank_changes": False}},
        "population": {"customers": {"count": customers, "profiles": {"on_time": 1.0}},
                       "vendors": {"count": 6, "profiles": {"reliable": 1.0}}},
        "turns": {"every": "none", "prompt": "none"},
    })


def _checks(sim: Simulation, plan: list[tuple[date, date, int, str, int]]
            ) -> Generator[Any, Any, None]:
    """The bank clears each check on its clearing date."""
    bank = sim.population.bank
    assert bank is not None
    for _, cleared, number, payee, cents in sorted(plan, key=lambda p: (p[1], p[2])):
        yield sim.engine.until(cleared, Phase.BANK_MORNING)
        bank.post(amount=-cents, description="CHECK PAID", reference=f"CHK {number}",
                  counterparty=payee, kind="payment", source=f"check:{number}")


def _month(seed: int | str, label: str, customers: int, checks: int
           ) -> tuple[dict[str, Any], list[list[str]], list[list[str]]]:
    rng = text_random(f"bank-rec-template:{label}")
    behaviours = {f"C{n:04d}": ("on_time", "late", "partial")[n % 3]
                  for n in range(1, customers + 1)}
    with simulate(_scenario(customers), seed, setup=with_behaviours(behaviours)) as sim:
        payees = sorted(v.name for v in sim.instance.vendors)
        plan = []
        for k in range(checks):
            written = MONTH[0] + timedelta(days=rng.randrange(2, 31))
            plan.append((written, written + timedelta(days=rng.randrange(2, 9)), 2041 + k,
                         payees[rng.randrange(len(payees))], rng.randrange(20_000, 600_000)))
        sim.engine.process(_checks(sim, plan))
        sim.engine.finish()
        lines = sim.events("bank_line_posted")
    opening = 6_000_000 + sum(x.amount for x in lines if x.posted_on < MONTH[0])
    march = [x for x in lines if MONTH[0] <= x.posted_on <= MONTH[1]]
    closing = opening + sum(x.amount for x in march)
    transit = [x for x in lines if MONTH[1] < x.posted_on <= TRANSIT_UNTIL
               and x.kind == "deposit"]
    outstanding = [p for p in plan if p[0] <= MONTH[1] < p[1]]
    fees = -sum(x.amount for x in march if x.kind == "fee")
    interest = sum(x.amount for x in march if x.kind == "interest")
    ledger = [[x.posted_on.isoformat(), "receipt", x.reference, x.counterparty,
               format_cents(x.amount)] for x in march + transit if x.kind == "deposit"]
    for written, _, number, payee, cents in plan:
        if written <= MONTH[1]:
            ledger.append([written.isoformat(), "check", f"CHK {number}", payee,
                           format_cents(-cents)])
    for row in ledger:
        if row[1] == "receipt" and row[0] > MONTH[1].isoformat():
            row[0] = MONTH[1].isoformat()
    ledger.sort(key=lambda r: (r[0], r[2]))
    book = opening + sum(round(float(r[4]) * 100) for r in ledger)
    adjusted_bank = closing + sum(x.amount for x in transit) - sum(p[4] for p in outstanding)
    adjusted_book = book - fees + interest
    if adjusted_bank != adjusted_book:
        raise GenerationError(f"{label}: the month does not reconcile "
                              f"({adjusted_bank} vs {adjusted_book})")
    if not transit or not outstanding or len(transit) > MAX_ITEMS or len(outstanding) > MAX_ITEMS:
        raise GenerationError(f"{label}: {len(transit)} deposits in transit and "
                              f"{len(outstanding)} outstanding checks (need 1..{MAX_ITEMS})")
    figures = {"statement_balance": closing, "book_balance": book, "bank_charges": fees,
               "interest": interest,
               "deposits_in_transit": [[x.reference, x.amount] for x in transit],
               "outstanding_checks": [[f"CHK {p[2]}", p[4]] for p in outstanding],
               "adjusted_bank": adjusted_bank, "adjusted_book": adjusted_book}
    statement = [["", "OPENING BALANCE", "", "", format_cents(opening)]] + [
        [x.posted_on.isoformat(), x.description, x.reference, x.counterparty,
         format_cents(x.amount)] for x in march] + [
        ["", "CLOSING BALANCE", "", "", format_cents(closing)]]
    return figures, statement, ledger


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """The statement and ledger; this month's figures and the held-out month's."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    customers, checks = TIERS[tier]
    figures, statement, ledger = _month(ctx.seed, f"{ctx.seed}:workspace", customers, checks)
    held, _, _ = _month(f"{ctx.seed}:holdout", f"{ctx.seed}:holdout", customers + 6, checks + 6)
    held["book_balance"] += 9_000  # a transposition in the held-out month's ledger total
    held["adjusted_book"] += 9_000
    held["difference"] = held["adjusted_bank"] - held["adjusted_book"]
    figures["difference"] = 0
    rec = csv_bytes(["figure", "value"], [[k, format_cents(v)] for k, v in figures.items()
                                          if isinstance(v, int)])
    return {
        "workspace/bank_statement.csv": csv_bytes(
            ["date", "description", "reference", "counterparty", "amount"], statement),
        "workspace/cash_ledger.csv": csv_bytes(
            ["date", "type", "reference", "party", "amount"], ledger),
        "reference/reconciliation.csv": rec,
        # the three results as the sheet labels them (F3:F5), for the workbook check
        "reference/results.csv": csv_bytes(["label", "value"], [
            ["Adjusted bank balance", format_cents(figures["adjusted_bank"])],
            ["Adjusted book balance", format_cents(figures["adjusted_book"])],
            ["Difference", format_cents(figures["difference"])]]),
        "reference/month.json": text_bytes(json.dumps(figures, indent=1, sort_keys=True)),
        "reference/holdout.json": text_bytes(json.dumps(held, indent=1, sort_keys=True)),
    }
