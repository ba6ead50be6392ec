"""The ``working-capital-dso-dpo`` generator: DSO and DPO by month from the engine's books.

The books are :mod:`desk.generators.month_books`' company from January to the task date
(the past clerk records every customer deposit). An AP clerk then enters each original
bill the vendors issued (duplicates were caught and never entered) on its issue date,
approves it, and pays it a vendor's habitual number of days after its due date (drawn
per vendor from the seed's stream ``desk:ap-habits``) when that falls by the task date.
The workspace gets the trial balance at each month end (``trial_balances.csv``), the
invoices issued (``invoice_register.csv``) and the bills entered (``bill_register.csv``);
the reference holds, per month, closing receivables and payables, credit sales and
purchases, DSO, DPO and their difference, by the prompt's formulas.

Parameters: ``tier`` (``easy``: vendors paid on the due date; ``medium``, the release:
0-20 days late; ``hard``: 0-45 days late, and the trial balance written with
thousands separators).
"""

from __future__ import annotations

import calendar
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.generators.month_books import company_scenario, kept_books
from erp import commands as c
from erp import queries as q
from erp.money import format_cents
from sim.rng import Streams

LATE = {"easy": 0, "medium": 20, "hard": 45}
"""Per tier, the most days after due a vendor is habitually paid."""
AP_CLERK = "clerk:ap-history"


def _ratio(balance: int, flow: int, days: int) -> Decimal:
    """balance / flow x days, unrounded."""
    return Decimal(balance) / Decimal(flow) * days


def _one(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.1"), ROUND_HALF_UP))


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``trial_balances.csv``, ``invoice_register.csv``, ``bill_register.csv``; the months."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in LATE:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(LATE)})")
    start = date(2026, 1, 5)
    months = [(2026, m) for m in range(1, ctx.day.month)]
    if not months:
        raise GenerationError(f"date {ctx.day}: no whole month before it")
    last_day = date(*months[-1], calendar.monthrange(*months[-1])[1])
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:ap-habits")
    scenario = company_scenario(start, ctx.day, customers=24, vendors=6)
    money = (lambda v: f"{v / 100:,.2f}") if tier == "hard" else format_cents
    with kept_books(scenario, ctx.seed, until=ctx.day) as kb:
        sim = kb.sim
        books = sim.ledger.books
        vendors = {v.vendor_id: v.name for v in books.vendors.values()}
        customers = {x.customer_id: x.name for x in books.customers.values()}
        bank = sorted(books.bank_accounts)[0]
        habit = {v: int(rng.integers(0, LATE[tier] + 1)) for v in sorted(vendors)}

        def run(cmd: c.Command) -> None:
            sim.ledger.execute(cmd, actor=AP_CLERK, role="controller",
                               business_date=ctx.day)

        issued = sorted((b for b in sim.events("bill_issued")
                         if b.kind == "original" and b.issued_on <= last_day),
                        key=lambda b: (b.issued_on, b.bill_ref))
        bill_rows: list[list[str]] = []
        for k, b in enumerate(issued, 1):
            bid = f"BILL-{k:05d}"
            run(c.EnterBill(bill_id=bid, vendor_id=b.vendor_id,
                            vendor_invoice_number=b.invoice_number, entry_date=b.issued_on,
                            due_on=b.due_on, lines=(c.BillLineIn(
                                description=b.lines[0].description, amount=b.total,
                                account="6300"),)))
            run(c.ApproveBill(bill_id=bid))
            pay_on = b.due_on + timedelta(days=habit[b.vendor_id])
            if pay_on <= ctx.day:
                run(c.PayVendor(payment_id=f"VP-{k:05d}", vendor_id=b.vendor_id,
                                bank_account_id=bank, entry_date=pay_on,
                                applications=(c.BillPayment(bill_id=bid, amount=b.total),)))
            bill_rows.append([bid, b.vendor_id, vendors.get(b.vendor_id, ""), b.invoice_number,
                              b.issued_on.isoformat(), b.due_on.isoformat(),
                              format_cents(b.total)])
        invoices = sorted((i for i in books.invoices.values()
                           if date(2026, 1, 1) <= i.entry_date <= last_day),
                          key=lambda i: i.invoice_id)
        names = kb.names()
        tb_rows: list[list[str]] = []
        balances: dict[tuple[int, int], dict[str, int]] = {}
        for y, m in months:
            end = date(y, m, calendar.monthrange(y, m)[1])
            tb = {r.account: r.debit - r.credit
                  for r in q.trial_balance(sim.ledger.store, as_of=end)}
            balances[(y, m)] = tb
            for account in sorted(tb):
                v = tb[account]
                tb_rows.append([end.isoformat(), account, names.get(account, ""),
                                money(v) if v > 0 else "", money(-v) if v < 0 else ""])
    ref: list[list[str]] = []
    for y, m in months:
        days = calendar.monthrange(y, m)[1]
        sales = sum(i.total for i in invoices if (i.entry_date.year, i.entry_date.month) == (y, m))
        buys = sum(b.total for b in issued if (b.issued_on.year, b.issued_on.month) == (y, m))
        if sales <= 0 or buys <= 0:
            raise GenerationError(f"seed {ctx.seed}: {y}-{m:02d} has no credit sales or "
                                  "purchases")
        ar = balances[(y, m)].get("1200", 0)
        ap = -balances[(y, m)].get("2000", 0)
        dso, dpo = _ratio(ar, sales, days), _ratio(ap, buys, days)
        ref.append([f"{y}-{m:02d}", format_cents(ar), format_cents(sales), _one(dso),
                    format_cents(ap), format_cents(buys), _one(dpo),
                    _one(Decimal(_one(dso)) - Decimal(_one(dpo)))])
    inv_rows = [[i.invoice_id, i.customer_id, customers.get(i.customer_id, ""),
                 i.entry_date.isoformat(), i.due_on.isoformat(), format_cents(i.total)]
                for i in invoices]
    return {
        "workspace/trial_balances.csv": csv_bytes(
            ["period_end", "account", "name", "debit", "credit"], tb_rows),
        "workspace/invoice_register.csv": csv_bytes(
            ["invoice_id", "customer_id", "customer", "invoice_date", "due_date", "total"],
            inv_rows),
        "workspace/bill_register.csv": csv_bytes(
            ["bill_id", "vendor_id", "vendor", "vendor_invoice", "bill_date", "due_date",
             "total"], bill_rows),
        "reference/months.csv": csv_bytes(
            ["month", "closing_ar", "credit_sales", "dso", "closing_ap", "purchases", "dpo",
             "dso_less_dpo"], ref),
    }
