"""The ``dunning-emails`` generator: three overdue customers, from the engine's receivables.

The books are :mod:`desk.generators.month_books`' company to the task date, with a few
customers paying late or not at all. Their open invoices at the turn are the books' (the
past clerk applied every payment that reached the bank). The collections lead picks the
three customers with the largest overdue balances; one invoice of one of them is
disputed and on hold. The workspace gets the receivables export (``ar_open_items.csv``)
and the lead's note (``collections_note.md``: the customers by name as the lead writes
them, the disputed invoice by its short number). The reference (``dunning.csv``) holds,
per customer, each invoice to ask for with its open amount and due date, the total, and
the invoices that must not be in the email (not yet due, or on hold); and what else an
email may state of an invoice (its amount as billed, invoice date, the part paid) and the
customer's total on every row, so a sentence's other figures can be judged. The reference
is never shown to the agent: its added columns change nothing the agent sees.

Parameters: ``tier`` (``easy``: no disputed invoice; ``medium``, the release, and
``hard``: one disputed invoice; ``hard`` also writes the export's amounts with
thousands separators).
"""

from __future__ import annotations

from datetime import date

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes, text_bytes
from desk.generators.month_books import company_scenario, kept_books
from erp.money import format_cents

BEHAVIOURS = {"C0004": "never_pays", "C0009": "late", "C0013": "never_pays",
              "C0017": "late", "C0021": "never_pays", "C0026": "late"}


def _lead_name(name: str, k: int) -> str:
    """How the collections lead writes a customer's name (not as the ledger does)."""
    return (name.upper(), f"{name} Inc.", name.replace(" and ", " & "))[k % 3]


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``ar_open_items.csv`` and ``collections_note.md``; the reference dunning lines."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in ("easy", "medium", "hard"):
        raise GenerationError(f"params.tier: {tier!r} (expected easy, medium or hard)")
    scenario = company_scenario(date(2026, 3, 2), ctx.day, customers=30, vendors=4)
    with kept_books(scenario, ctx.seed, until=ctx.day, behaviours=BEHAVIOURS) as kb:
        books = kb.sim.ledger.books
        names = {c.customer_id: c.name for c in books.customers.values()}
        invoices = sorted((i for i in books.invoices.values() if i.open > 0),
                          key=lambda i: (i.customer_id, i.due_on, i.invoice_id))
    day = ctx.day
    overdue: dict[str, int] = {}
    for i in invoices:
        if i.due_on < day:
            overdue[i.customer_id] = overdue.get(i.customer_id, 0) + i.open
    chosen = sorted(overdue, key=lambda c: (-overdue[c], c))[:3]
    if len(chosen) < 3:
        raise GenerationError(f"seed {ctx.seed}: fewer than three customers overdue")
    for cid in chosen:
        mine = [i for i in invoices if i.customer_id == cid]
        if sum(1 for i in mine if i.due_on < day) < 2:
            raise GenerationError(f"seed {ctx.seed}: {cid} has one overdue invoice only")
    disputed = None
    if tier != "easy":
        # the middle customer's oldest overdue invoice is disputed
        mine = [i for i in invoices if i.customer_id == chosen[1] and i.due_on < day]
        disputed = mine[0].invoice_id
    if not any(i.due_on >= day for i in invoices if i.customer_id in chosen):
        raise GenerationError(f"seed {ctx.seed}: no chosen customer has an invoice not yet due")
    money = (lambda c: f"{c / 100:,.2f}") if tier == "hard" else format_cents
    export = [[i.customer_id, names[i.customer_id], i.invoice_id, i.entry_date.isoformat(),
               i.due_on.isoformat(), money(i.total), money(i.open)] for i in invoices]
    ref: list[list[str]] = []
    for cid in chosen:
        total = 0
        lines_of: list[list[str]] = []
        for i in (x for x in invoices if x.customer_id == cid):
            action, why = (("exclude", "not yet due") if i.due_on >= day
                           else ("exclude", "disputed") if i.invoice_id == disputed
                           else ("ask", ""))
            if action == "ask":
                total += i.open
            # what else an email may say of the invoice: as billed, when, paid so far
            lines_of.append([cid, i.invoice_id, action, format_cents(i.open),
                             i.due_on.isoformat(), why, format_cents(i.total),
                             i.entry_date.isoformat(), format_cents(i.total - i.open)])
        lines_of.append([cid, "TOTAL", "total", format_cents(total), "", "", "", "", ""])
        ref += [[*r, format_cents(total)] for r in lines_of]
    lines = ["# Collections: this week's dunning", "",
             "Please send the first dunning email to each of these customers today:", ""]
    for k, cid in enumerate(chosen):
        lines.append(f"- {_lead_name(names[cid], k)}")
    if disputed is not None:
        short = int(disputed.split("-")[1])
        lines += ["", f"{_lead_name(names[chosen[1]], 1)} disputes inv {short} (the "
                  "hours billed); it is on hold until the account manager has spoken to "
                  "them, so leave it out of their email and out of their total."]
    lines += ["", "Only invoices past their due date go in an email; the rest are not due "
              "yet.", "Ask for the invoices by number, with each one's open balance and due "
              "date, and the total overdue."]
    return {
        "workspace/ar_open_items.csv": csv_bytes(
            ["customer_id", "customer", "invoice_id", "invoice_date", "due_date", "amount",
             "open_balance"], export),
        "workspace/collections_note.md": text_bytes("\n".join(lines)),
        "reference/dunning.csv": csv_bytes(
            ["customer_id", "invoice_id", "action", "open_balance", "due_date", "why",
             "amount", "invoice_date", "paid", "customer_total"], ref),
    }
