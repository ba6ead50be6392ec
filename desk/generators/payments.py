"""The ``payments-match`` generator: two weeks of a bank export against the open invoices.

The engine runs a small company for about two months: customers order, are invoiced
and pay the way their behaviour says (by card through a processor, by international
wire, partly, several invoices in one ACH, by a wire naming only themselves, on
time); injections plant a payment quoting another customer's invoice, a payment for
an invoice already paid, and a deposit the bank exports twice; the bank posts its
month-end fee and interest; a supplier refunds a credit note and the company pays a
supplier. The workspace gets the last two weeks of the bank's lines
(``bank_export.csv``), the invoices open before those two weeks (``open_invoices.csv``,
balances after everything earlier was applied as the customers meant) and the
policy (``note.txt``). The reference comes from the world's truth: what each customer
meant each payment to pay (``PaymentSent.allocations``) and what each line really is.

The generator refuses a seed whose draw leaves a case unplanted or ambiguous (two
open invoices that a card payout's net amount could belong to, a wrong reference
quoting an invoice that is not open): the task's seed is one that plants every case.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from datetime import date
from typing import Any

from counterparties.customers import PROCESSOR_NAME, card_fee
from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes, text_bytes
from desk.simulate import Simulation, simulate, with_behaviours
from erp.money import format_cents
from scenarios.spec import Scenario
from sim.engine import Phase

BEHAVIOURS = {
    "C0001": "card_processor", "C0002": "card_processor",
    "C0003": "intl_wire", "C0004": "intl_wire",
    "C0005": "partial", "C0006": "partial",
    "C0007": "multi_invoice_ach", "C0008": "customer_only_wire",
    "C0009": "on_time", "C0010": "on_time", "C0011": "on_time", "C0012": "late",
    "C0013": "on_time", "C0014": "on_time",
}
"""Who pays how (every case of the policy at least once; nobody pays twice on purpose)."""

START = date(2026, 2, 9)
END = date(2026, 4, 3)
WINDOW = date(2026, 3, 23)
"""The export covers WINDOW..END (two weeks, with the March month end in it)."""

REASONS = ("duplicate", "closed_invoice", "supplier_refund", "interest")


def _books_scenario() -> Scenario:
    """The company and counterparties behind the export."""
    return Scenario.model_validate({
        "id": "payments-match-gen",
        "title": "Payments behind the payments-match task",
        "calendar": {"start": START.isoformat(), "end": END.isoformat()},
        "company": {
            "name": "Northwind Services LLC",
            "opening": {"bank_balance": "120000.00", "ar_open_invoices": 30,
                        "ap_open_bills": 0},
            "automation": {"order_intake": True, "auto_invoicing": True,
                           "dispatch_invoices": True, "bank_feed": False,
                           "auto_receipts": False, "controller_approves_bank_changes": False,
                           "month_end_statements": False},
        },
        "population": {
            "customers": {"count": len(BEHAVIOURS), "profiles": {"on_time": 1.0},
                          "params": {}},
            "vendors": {"count": 2, "profiles": {"reliable": 1.0}},
        },
        "injections": [
            {"on": "2026-03-24", "kind": "payment_for_closed_invoice"},
            {"on": "2026-03-25", "kind": "payment_quotes_other_customers_invoice",
             "params": {"customer": "C0011"}},
            {"on": "2026-04-01", "kind": "duplicate_bank_line"},
        ],
        "turns": {"every": "none", "prompt": "none"},
    })


def _supplier_lines(sim: Simulation) -> Generator[Any, Any, None]:
    """A supplier refunds a credit note, and the company pays the other supplier."""
    engine = sim.engine
    bank = sim.population.bank
    assert bank is not None, "the simulation's population has no bank"
    vendors = sorted(sim.instance.vendors, key=lambda v: v.vendor_id)
    yield engine.until(date(2026, 3, 27), Phase.BANK_MORNING)
    bank.post(amount=41_250, description="ACH CREDIT", reference="REFUND CREDIT NOTE CN-2",
              counterparty=vendors[0].name, kind="refund",
              source=f"vendor-refund:{vendors[0].vendor_id}")
    yield engine.until(date(2026, 3, 30), Phase.BANK_MORNING)
    bank.post(amount=-186_000, description="ACH DEBIT", reference="VENDOR PMT 0042",
              counterparty=vendors[1].name, kind="payment",
              source=f"vendor-pmt:{vendors[1].vendor_id}")


@dataclass
class _Open:
    invoice_id: str
    customer_id: str
    issued: date
    due: date
    total: int
    balance: int


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """The workspace (bank_export.csv, open_invoices.csv, note.txt) and the reference."""
    with simulate(_books_scenario(), ctx.seed, setup=with_behaviours(BEHAVIOURS)) as sim:
        sim.engine.process(_supplier_lines(sim))
        sim.engine.finish()
        lines = sim.events("bank_line_posted")
        payments = {p.payment_id: p for p in sim.events("payment_sent")}
        books = sim.ledger.books
        names = {c.customer_id: c.name for c in books.customers.values()}
        invoices = {i.invoice_id: _Open(i.invoice_id, i.customer_id, i.entry_date, i.due_on,
                                        i.total, i.total)
                    for i in books.invoices.values() if i.entry_date <= END}
    # Before the window: everything applied as the customers meant it.
    for x in lines:
        if x.posted_on < WINDOW and x.kind == "deposit" and x.duplicate_of is None:
            for a in payments[x.source].allocations:
                inv = invoices.get(a.doc_id)
                if inv is not None:
                    inv.balance = max(0, inv.balance - a.amount)
    open_before = {k: v for k, v in invoices.items() if v.balance > 0}
    window = [x for x in lines if WINDOW <= x.posted_on <= END]
    matches: list[tuple[str, str, int]] = []
    unapplied: list[tuple[str, int, str]] = []
    balance = {k: v.balance for k, v in open_before.items()}
    cases: dict[str, list[str]] = {}
    for x in window:
        if x.amount <= 0:
            cases.setdefault("debit", []).append(x.line_id)
            continue
        if x.kind == "interest":
            unapplied.append((x.line_id, x.amount, "interest"))
            cases.setdefault("interest", []).append(x.line_id)
            continue
        if x.kind == "refund":
            unapplied.append((x.line_id, x.amount, "supplier_refund"))
            cases.setdefault("supplier_refund", []).append(x.line_id)
            continue
        if x.kind != "deposit":
            raise GenerationError(f"{x.line_id}: an unexpected {x.kind} line")
        p = payments[x.source]
        if x.duplicate_of is not None:
            if p.duplicate_of is not None:
                raise GenerationError(f"{x.line_id}: a customer paid twice (not in this task)")
            unapplied.append((x.line_id, x.amount, "duplicate"))
            cases.setdefault("duplicate", []).append(x.line_id)
            continue
        targets = [a for a in p.allocations if balance.get(a.doc_id, 0) > 0]
        if not targets:
            unapplied.append((x.line_id, x.amount, "closed_invoice"))
            cases.setdefault("closed_invoice", []).append(x.line_id)
            continue
        if len(targets) != len(p.allocations):
            raise GenerationError(f"{x.line_id}: pays open and closed invoices at once")
        for a in targets:
            applied = min(a.amount, balance[a.doc_id])
            balance[a.doc_id] -= applied
            matches.append((x.line_id, a.doc_id, applied))
        cases.setdefault(p.behaviour, []).append(x.line_id)
        _check_solvable(x, p, open_before, names)
    missing = [c for c in ("card_processor", "intl_wire", "partial", "multi_invoice_ach",
                           "customer_only_wire", "wrong_reference", "closed_invoice",
                           "duplicate", "supplier_refund", "interest", "debit")
               if not cases.get(c)]
    if missing:
        raise GenerationError(f"seed {ctx.seed}: no {', '.join(missing)} in the export window")
    return _files(lines, open_before, names, matches, unapplied, balance, cases)


def _check_solvable(x: Any, p: Any, open_before: dict[str, _Open],
                    names: dict[str, str]) -> None:
    """Refuse a draw whose case the note's policy would not decide one way."""
    if p.behaviour == "card_processor":
        fits = [i for i in open_before.values()
                if i.balance - card_fee(i.balance) == x.amount]
        if len(fits) != 1:
            raise GenerationError(f"{x.line_id}: {len(fits)} open invoices fit the card payout")
    if p.behaviour == "wrong_reference":
        quoted = open_before.get(x.reference)
        if quoted is None or quoted.customer_id == p.customer_id:
            raise GenerationError(f"{x.line_id}: quotes {x.reference}, not another customer's "
                                  "open invoice")
        same = [i for i in open_before.values()
                if i.customer_id == p.customer_id and i.balance == x.amount]
        if len(same) != 1:
            raise GenerationError(f"{x.line_id}: {len(same)} of the payer's invoices fit")
    if x.counterparty not in names.values() and x.counterparty != PROCESSOR_NAME:
        raise GenerationError(f"{x.line_id}: payer {x.counterparty!r} is not a customer")


def _files(lines: list[Any], open_before: dict[str, _Open], names: dict[str, str],
           matches: list[tuple[str, str, int]], unapplied: list[tuple[str, int, str]],
           balance: dict[str, int], cases: dict[str, list[str]]) -> dict[str, bytes]:
    window = [x for x in lines if WINDOW <= x.posted_on <= END]
    export = csv_bytes(["line_id", "date", "description", "reference", "counterparty",
                        "amount"],
                       [[x.line_id, x.posted_on.isoformat(), x.description, x.reference,
                         x.counterparty, format_cents(x.amount)] for x in window])
    ordered = sorted(open_before.values(), key=lambda i: (i.customer_id, i.due, i.invoice_id))
    opened = csv_bytes(["invoice_id", "customer_id", "customer", "issue_date", "due_date",
                        "amount", "balance"],
                       [[i.invoice_id, i.customer_id, names[i.customer_id], i.issued.isoformat(),
                         i.due.isoformat(), format_cents(i.total), format_cents(i.balance)]
                        for i in ordered])
    ref_matches = csv_bytes(["line_id", "invoice_id", "amount_applied"],
                            [[line, inv, format_cents(a)] for line, inv, a in matches])
    ref_open = csv_bytes(["invoice_id", "customer_id", "balance"],
                         [[i.invoice_id, i.customer_id, format_cents(balance[i.invoice_id])]
                          for i in ordered if balance[i.invoice_id] > 0])
    ref_unapplied = csv_bytes(["line_id", "amount", "reason"],
                              [[line, format_cents(a), why] for line, a, why in unapplied])
    planted = csv_bytes(["case", "line_ids"],
                        [[k, " ".join(v)] for k, v in sorted(cases.items())])
    return {
        "workspace/bank_export.csv": export,
        "workspace/open_invoices.csv": opened,
        "workspace/note.txt": text_bytes(NOTE),
        "reference/matches.csv": ref_matches,
        "reference/open_invoices.csv": ref_open,
        "reference/unapplied.csv": ref_unapplied,
        "reference/cases.csv": planted,
    }


NOTE = """\
From: Dana Whitfield (Controller)
Subject: Cash application for the last two weeks

bank_export.csv is every line on the operating account from 2026-03-23 to 2026-04-03.
open_invoices.csv is what was open before those two weeks, with each invoice's balance
after everything earlier was applied. Please apply the two weeks' receipts under our
policy:

1. Debits (money leaving the account) are not receipts: leave them out of all three
   files.
2. Card payouts from STRIPE PAYMENTS arrive net of the processor's fee of 2.9% of the
   invoice plus 0.30. A payout that equals an open invoice less that fee pays that
   invoice in full.
3. International wires (WIRE IN) arrive short of intermediary bank charges. A wire
   short of its invoice by up to about 2% pays the invoice in full.
4. Anything else short of its invoice is a genuine partial payment: apply what
   arrived and leave the rest open.
5. Payer and amount come first. If a payment quotes an invoice of another customer,
   apply it to the payer's own open invoice of that amount.
6. A payment that names an invoice that is no longer open (already paid) stays
   unapplied (reason closed_invoice); we will refund it.
7. An ACH naming several invoices pays each of them in full. A wire that names only
   the customer pays that customer's open invoices oldest due date first.
8. The export sometimes repeats a line (same date, description, reference,
   counterparty and amount under a new line id). Count it once: the first line is the
   receipt, the repeat stays unapplied (reason duplicate).
9. Refunds from suppliers (reason supplier_refund) and bank interest (reason
   interest) are not customer receipts: they stay unapplied.

Please leave three files in out/:
- out/matches.csv: line_id, invoice_id, amount_applied (one row per bank line and
  invoice it pays; amount_applied is what comes off the invoice's balance)
- out/open_invoices.csv: invoice_id, customer_id, balance (every invoice still open
  afterwards, with its remaining balance)
- out/unapplied.csv: line_id, amount, reason (every credit line not applied, with one
  of the reasons above)
"""
