"""The ``vendor-statement-recon`` generator: vendors' month-end statements against the books.

The task's books run from ``books.start`` to the task date (the month's last business
day). Vendors bill through the month and send, that morning, a statement of account
from their own books (``Vendor.send_statement``): the balance brought forward (the
bills open when the month began, which the company's books also hold) and every
invoice and credit note since. Nobody has entered the month's documents in the books
yet, so each statement entry is a reconciling item. The workspace gets each vendor's
statement as the vendor sent it (``statements/<vendor_id>.csv``) and the books'
open payables (``ap_open_items.csv``); the reference lists the reconciling items and
each vendor's two balances, computed from the vendors' and the books' own records.
"""

from __future__ import annotations

import csv
import io

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import books_at_turn
from erp import queries as q
from erp.money import format_cents, parse_cents


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``statements/*.csv``, ``ap_open_items.csv``; reference items and balances."""
    with books_at_turn(ctx.scenario, ctx.seed, ctx.day) as sim:
        docs = sim.events("document_delivered")
        entered = {e.bill_id: e for e in sim.events("bill_entered")}
        books = sim.ledger.books
        vendors = {v.vendor_id: v.name for v in books.vendors.values()}
        open_ap = q.open_items(sim.ledger.store, "ap")
    statements: dict[str, str] = {}
    for d in docs:
        vid = d.truth.get("vendor_id")
        if d.kind == "statement" and vid in vendors and d.truth.get("period") == \
                ctx.day.strftime("%Y-%m"):
            statements[vid] = d.content
    if not statements:
        raise GenerationError(f"seed {ctx.seed}: no vendor sent a statement by {ctx.day}")
    files: dict[str, bytes] = {}
    items: list[list[str]] = []
    balances: list[list[str]] = []
    kinds: set[str] = set()
    book_rows = []
    for item in sorted(open_ap, key=lambda i: (i.party or "", i.doc_id)):
        bill = entered[item.doc_id]
        book_rows.append([item.doc_id, bill.vendor_id, vendors[bill.vendor_id],
                          bill.vendor_invoice_number, bill.entry_date.isoformat(),
                          bill.due_on.isoformat(), format_cents(sum(x.amount for x in bill.lines)
                                                               + bill.tax),
                          format_cents(item.open_amount)])
    for vid in sorted(statements):
        text = statements[vid]
        files[f"workspace/statements/{vid}.csv"] = text.encode("utf-8")
        rows = _rows(text)
        forward = parse_cents(rows[0]["balance"])
        in_books = {r[3]: parse_cents(r[7]) for r in book_rows if r[1] == vid}
        books_total = sum(in_books.values())
        if forward != books_total:
            raise GenerationError(f"{vid}: balance forward {forward} is not the books' "
                                  f"{books_total} (the opening bills should agree)")
        for r in rows[1:]:
            charge = parse_cents(r["charges"]) if r["charges"] else 0
            credit = parse_cents(r["credits"]) if r["credits"] else 0
            if r["document"] in in_books:
                continue
            kind = ("invoice" if charge else
                    "credit_note" if r["description"].lower().startswith("credit note")
                    else "payment")
            kinds.add(kind)
            items.append([vid, r["document"], kind, format_cents(charge - credit)])
        statement_balance = parse_cents(rows[-1]["balance"])
        balances.append([vid, format_cents(statement_balance), format_cents(books_total),
                         format_cents(statement_balance - books_total)])
    if "credit_note" not in kinds or sum(1 for i in items if i[2] == "invoice") < 3:
        raise GenerationError(f"seed {ctx.seed}: the month has kinds {sorted(kinds)} and "
                              f"{len(items)} items (expected invoices and a credit note)")
    files["workspace/ap_open_items.csv"] = csv_bytes(
        ["bill_id", "vendor_id", "vendor", "vendor_invoice_number", "bill_date", "due_date",
         "amount", "open_balance"], book_rows)
    files["reference/reconciling_items.csv"] = csv_bytes(
        ["vendor_id", "document", "kind", "amount"], items)
    files["reference/balances.csv"] = csv_bytes(
        ["vendor_id", "statement_balance", "books_balance", "difference"], balances)
    return files

