"""The ``bank-statement-pdf`` generator: a month's bank statement as a multi-page PDF.

First Harbor Bank's statement of Northwind Services LLC's operating account for May:
an account summary box (opening balance, deposits, withdrawals, closing balance), then
the transactions page after page, as a bank prints them: dates as ``05 MAY`` without a
year, withdrawals and deposits in two columns, a long description carried onto a
second printed line, the bank's reference where it has one, and the balance printed
only after the last transaction of each day. Each page after the first opens with
"BALANCE BROUGHT FORWARD" and each page but the last closes with "BALANCE CARRIED
FORWARD", lines that are not transactions. The reference holds every transaction in
order with its signed amount and the running balance after it, and the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.generators.pdf_docs import DeskPdf, wrap_words
from erp.money import display_cents, format_cents
from sim.rng import Streams

CREDITS = (("ACH CREDIT", ("HARBOR FREIGHT CO", "CASCADE DENTAL GROUP", "PINE RIDGE CLINICS",
                           "BLUE HERON LOGISTICS", "MERIDIAN OUTDOOR SUPPLY"), 80_000, 2_400_000),
           ("WIRE IN", ("OAKWOOD PROPERTY MGMT", "SUMMIT RETAIL PARTNERS"), 500_000, 6_000_000),
           ("REMOTE DEPOSIT", ("CHECK DEPOSIT MOBILE",), 20_000, 450_000),
           ("CARD SETTLEMENT", ("STRIPE PAYMENTS NORTHWIND",), 50_000, 900_000))
DEBITS = (("ACH DEBIT", ("HARBOR OFFICE SUPPLY", "APEX FACILITIES SERVICES", "COASTAL COURIER",
                         "ADP PAYROLL TAX", "PACIFIC POWER"), 20_000, 1_800_000),
          ("CHECK PAID", ("CHECK",), 15_000, 600_000),
          ("WIRE OUT", ("SUMMIT LEGAL PARTNERS", "NORTHGATE PACKAGING"), 300_000, 2_500_000),
          ("CARD PURCHASE", ("AMAZON MKTPLACE SEATTLE", "DELTA AIR LINES ATLANTA",
                             "HILTON HOTELS PORTLAND"), 2_000, 150_000),
          ("SERVICE FEE", ("ACCOUNT ANALYSIS FEE",), 3_500, 9_000))
"""Kinds of transaction: the bank's type, the counterparties and the amount range (cents)."""

TIERS = {"easy": (18, 30), "medium": (34, 26), "hard": (58, 22)}
"""Per tier: the transactions, and how many printed rows fill a page."""

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")


@dataclass(frozen=True)
class _Txn:
    on: date
    description: str
    reference: str
    amount: int


def _transactions(rng: np.random.Generator, count: int, first: date,
                  last: date) -> list[_Txn]:
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    days = [d for d in days if d.weekday() < 5]
    out: list[_Txn] = []
    check_no = 4100 + int(rng.integers(0, 300))
    fee_charged = False
    for _ in range(count):
        credit = rng.random() < 0.45
        kind, parties, lo, hi = (CREDITS if credit else DEBITS)[
            int(rng.integers(0, len(CREDITS if credit else DEBITS)))]
        if kind == "SERVICE FEE" and fee_charged:
            kind, parties, lo, hi = DEBITS[0]
        fee_charged = fee_charged or kind == "SERVICE FEE"
        party = parties[int(rng.integers(0, len(parties)))]
        amount = int(rng.integers(lo, hi))
        on = days[int(rng.integers(0, len(days)))]
        ref = f"FT26{int(rng.integers(10**7, 10**8 - 1))}"
        if kind == "CHECK PAID":
            check_no += 1 + int(rng.integers(0, 3))
            desc, ref = f"CHECK PAID NO {check_no}", str(check_no)
        elif kind == "SERVICE FEE":
            desc, ref = f"SERVICE FEE {party} {MONTHS[(first.month - 2) % 12]}", ""
        elif kind == "CARD PURCHASE":
            desc = f"CARD PURCHASE {on.month:02d}/{on.day:02d} {party} CARD 4471"
            ref = ""
        elif kind == "ACH CREDIT":
            desc = (f"ACH CREDIT {party} PAYMENT REMITTANCE INV "
                    f"{int(rng.integers(47000, 48000))}")
        else:
            desc = f"{kind} {party}"
        out.append(_Txn(on, desc, ref, amount if credit else -amount))
    out.sort(key=lambda t: t.on)
    return out


def _statement(txns: list[_Txn], opening: int, first: date, last: date,
               per_page: int) -> bytes:
    pdf = DeskPdf("Statement of account", author="First Harbor Bank")
    rows: list[tuple[str, ...]] = []   # date, description, reference, three amount cells
    bal = opening
    for i, t in enumerate(txns):
        bal += t.amount
        end_of_day = i + 1 == len(txns) or txns[i + 1].on != t.on
        rows.append((f"{t.on.day:02d} {MONTHS[t.on.month - 1]}", t.description,
                     t.reference, display_cents(-t.amount) if t.amount < 0 else "",
                     display_cents(t.amount) if t.amount > 0 else "",
                     display_cents(bal) if end_of_day else ""))
    pages = [rows[k:k + per_page] for k in range(0, len(rows), per_page)]
    closing = bal
    bal = opening
    for p, page in enumerate(pages, start=1):
        pdf.text(54, 750, "FIRST HARBOR BANK", size=15, bold=True)
        pdf.text(54, 737, "Business Banking - PO Box 4410, Seattle, WA 98104", size=8)
        pdf.text(558, 750, "Statement of Account", size=11, bold=True, align="right")
        pdf.text(558, 737, f"Page {p} of {len(pages)}", size=8, align="right")
        y = 712.0
        if p == 1:
            pdf.lines(54, y, ("NORTHWIND SERVICES LLC", "400 HARBOR POINT BLVD STE 12",
                              "PORTLAND OR 97209"), size=9, leading=11)
            pdf.text(360, y, "Account: Business Checking ...6789", size=9)
            pdf.text(360, y - 11, f"Period: {first.strftime('%B')} {first.day}, {first.year}"
                     f" through {last.strftime('%B')} {last.day}, {last.year}", size=9)
            dep = sum(t.amount for t in txns if t.amount > 0)
            wd = -sum(t.amount for t in txns if t.amount < 0)
            y = 660
            pdf.text(54, y, "ACCOUNT SUMMARY", size=10, bold=True)
            pdf.rule(54, y - 4, 558, y - 4)
            for k, (label, value) in enumerate((
                    (f"Beginning balance on {first.strftime('%B')} {first.day}", opening),
                    (f"Deposits and other credits ({sum(t.amount > 0 for t in txns)})", dep),
                    (f"Withdrawals and other debits ({sum(t.amount < 0 for t in txns)})", -wd),
                    (f"Ending balance on {last.strftime('%B')} {last.day}", closing))):
                pdf.text(54, y - 18 - 13 * k, label, size=9)
                pdf.text(300, y - 18 - 13 * k, f"${display_cents(value)}"
                         if value >= 0 else f"-${display_cents(-value)}", size=9, align="right")
            y = 580
        cols = (("Date", 54, "left"), ("Description", 96, "left"), ("Reference", 330, "left"),
                ("Withdrawals", 430, "right"), ("Deposits", 495, "right"),
                ("Balance", 558, "right"))
        for label, x, align in cols:
            pdf.text(x, y, label, size=8, bold=True, align=align)
        pdf.rule(54, y - 4, 558, y - 4)
        y -= 17
        if p > 1:
            pdf.text(96, y, "BALANCE BROUGHT FORWARD", size=8)
            pdf.text(558, y, display_cents(bal), size=8, align="right")
            y -= 13
        for day, desc, ref, wd_t, dep_t, bal_t in page:
            parts = wrap_words(desc, 40)
            for x, s, align in ((54, day, "left"), (96, parts[0], "left"), (330, ref, "left"),
                                (430, wd_t, "right"), (495, dep_t, "right"),
                                (558, bal_t, "right")):
                if s:
                    pdf.text(x, y, s, size=8, align=align)
            for extra in parts[1:]:
                y -= 10
                pdf.text(96, y, extra, size=8)
            y -= 13
        bal += sum(t.amount for t in txns[(p - 1) * per_page:p * per_page])
        if p < len(pages):
            pdf.text(96, y, "BALANCE CARRIED FORWARD", size=8)
            pdf.text(558, y, display_cents(bal), size=8, align="right")
        pdf.text(54, 50, "Questions about your statement? Call Business Banking at "
                 "1-800-555-0142.", size=7)
        pdf.new_page()
    return pdf.data()


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``statement_may.pdf``; the reference transactions and summary."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    count, per_page = TIERS[tier]
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:bank-statement")
    last = ctx.day.replace(day=1) - timedelta(days=1)
    first = last.replace(day=1)
    txns = _transactions(rng, count, first, last)
    low = run = 0
    for t in txns:
        run += t.amount
        low = min(low, run)
    opening = -low + int(rng.integers(1_500_000, 6_000_000))
    bal = opening
    lines: list[list[str]] = []
    for i, t in enumerate(txns, start=1):
        bal += t.amount
        lines.append([str(i), t.on.isoformat(), t.description, t.reference,
                      format_cents(t.amount), format_cents(bal)])
    dep = [t.amount for t in txns if t.amount > 0]
    wd = [t.amount for t in txns if t.amount < 0]
    if len({t.on for t in txns}) == len(txns):
        raise GenerationError(f"seed {ctx.seed}: no day has two transactions")
    return {
        "workspace/statement_may.pdf": _statement(txns, opening, first, last, per_page),
        "reference/transactions.csv": csv_bytes(
            ["line", "date", "description", "reference", "amount", "balance"], lines),
        "reference/statement_summary.csv": csv_bytes(["item", "value"], [
            ["opening_balance", format_cents(opening)],
            ["deposits_count", str(len(dep))], ["deposits_total", format_cents(sum(dep))],
            ["withdrawals_count", str(len(wd))], ["withdrawals_total", format_cents(sum(wd))],
            ["closing_balance", format_cents(bal)]]),
    }
