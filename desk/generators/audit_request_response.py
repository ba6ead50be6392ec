"""The ``audit-request-response`` generator: the auditors' sample of May's entries, and
the scanned support in the workspace (some of it missing, some of it a near miss).

The books are :mod:`desk.generators.month_books`' company from March to the task date:
the sample is drawn (``desk:audit`` stream) from what the past clerk and the engine left
in May: month-end journal entries (rent, software, contractor accrual), the customer
invoices the engine issued and the receipts the clerk recorded. Each sampled item gets a
document from its counterparty for its amount, dated in May (a landlord's or software
vendor's invoice, the contractor agency's hours summary, the customer's approved
timesheet, the customer's remittance advice), written as documents are (the invoice
number as ``inv 000123`` or ``INV000123``, amounts with ``$`` and separators). Some items
are left without support, each with a near miss beside it: the same vendor's document for
April, the customer's timesheet for another amount, the customer's remittance of an
earlier payment. Unrelated scans are mixed in. File names are the scanner's
(``support/scan_0412.txt``).

The workspace gets ``audit_request.md`` (the auditors' list, written their way),
``ledger_sample.csv`` (the ledger's view of the sampled items) and ``support/``; the
reference ``audit_support.csv`` (item, status, document).

Parameters: ``tier`` (``easy``: six items, one missing, no near misses; ``medium``, the
release: eight items, three missing each with a near miss; ``hard``: ten items, four
missing, the near misses plus a document for the right amount from another party).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes, text_bytes
from desk.generators.month_books import company_scenario, kept_books
from erp.money import display_cents, format_cents
from sim.rng import Streams

TIERS = {"easy": (2, 2, 2, 1, False), "medium": (3, 3, 2, 3, True),
         "hard": (3, 4, 3, 4, True)}
"""Per tier: journal entries, invoices, receipts sampled; items missing; near misses."""

VENDORS = {"Office rent": ("Harbor Property Management", "Vendor invoice", "Office rent"),
           "Software subscriptions": ("Cloudline Software Inc.", "Vendor invoice",
                                      "Software subscriptions"),
           "Contractor hours accrued": ("Brightwork Staffing LLC", "Hours summary",
                                        "Contractor hours")}
"""The counterparty and document of each month-end entry the auditors may sample."""
COMPANY = "Northwind Services LLC"


def _doc(kind: str, party: str, day: date, ref: str, cents: int, text: str) -> bytes:
    return text_bytes(f"Document: {kind}\nFrom: {party}\nTo: {COMPANY}\n"
                      f"Date: {day:%d %B %Y}\nReference: {ref}\n"
                      f"Amount: ${display_cents(cents)}\nDescription: {text}\n")


def _inv_style(inv: str, rng: Any) -> str:
    digits = inv.split("-")[-1]
    return (f"inv {digits}", f"INV{digits}", inv, f"Invoice no. {int(digits)}")[
        int(rng.integers(0, 4))]


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """The auditors' request, the ledger's sample, the support scans; the reference."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of {', '.join(TIERS)})")
    n_je, n_inv, n_rct, n_missing, near = TIERS[tier]
    rng = Streams(f"audit-request/{ctx.seed}").generator("desk:audit")
    scenario = company_scenario(date(2026, 3, 2), ctx.day, customers=30, vendors=6)
    with kept_books(scenario, ctx.seed, until=ctx.day,
                    opening={"1300": 600_000, "1500": 4_200_000}) as kb:
        customers = {c.customer_id: c.name for c in kb.sim.ledger.books.customers.values()}
        invoices = sorted((i for i in kb.sim.ledger.books.invoices.values()
                           if i.entry_date.month == 5 and i.entry_date.year == 2026),
                          key=lambda i: i.invoice_id)
        receipts = [r for r in kb.receipts if r["entry_date"].month == 5]
        entries = [e for e in kb.entries if e["entry_date"].month in (4, 5)]
    may_jes = [e for e in entries if e["entry_date"].month == 5
               and any(e["memo"].startswith(k) for k in VENDORS)]
    if len(may_jes) < n_je or len(invoices) < n_inv or len(receipts) < n_rct:
        raise GenerationError(f"seed {ctx.seed}: too few May items to sample")
    items: list[dict[str, Any]] = []
    for i in sorted(int(x) for x in rng.choice(len(may_jes), n_je, replace=False)):
        e = may_jes[i]
        key = next(k for k in VENDORS if e["memo"].startswith(k))
        items.append({"id": e["entry_id"], "type": "journal entry", "date": e["entry_date"],
                      "party": VENDORS[key][0], "amount": e["lines"][0][1],
                      "memo": e["memo"], "key": key})
    for i in sorted(int(x) for x in rng.choice(len(invoices), n_inv, replace=False)):
        inv = invoices[i]
        items.append({"id": inv.invoice_id, "type": "sales invoice", "date": inv.entry_date,
                      "party": customers[inv.customer_id], "amount": inv.total,
                      "memo": f"Invoice to {customers[inv.customer_id]}", "key": "invoice"})
    for i in sorted(int(x) for x in rng.choice(len(receipts), n_rct, replace=False)):
        r = receipts[i]
        items.append({"id": r["receipt_id"], "type": "cash receipt", "date": r["entry_date"],
                      "party": customers[r["customer_id"]], "amount": r["amount"],
                      "memo": f"Receipt {r['reference']}", "key": "receipt",
                      "ref": r["reference"]})
    # Missing: one of each type first, then any.
    order = [int(x) for x in rng.permutation(len(items))]
    missing: list[int] = []
    for typ in ("journal entry", "sales invoice", "cash receipt"):
        pick = next((i for i in order if items[i]["type"] == typ), None)
        if pick is not None and len(missing) < n_missing:
            missing.append(pick)
    missing += [i for i in order if i not in missing][:n_missing - len(missing)]
    docs: list[tuple[bytes, int | None]] = []  # (bytes, the item it supports)
    for i, it in enumerate(items):
        d, amt, party = it["date"], it["amount"], it["party"]
        if it["key"] in VENDORS:
            _, kind, text = VENDORS[it["key"]]
            ref = f"{kind[:3].upper()}-{d:%y%m}-{int(rng.integers(100, 999))}"
            good = _doc(kind, party, d, ref, amt, f"{text}, {d:%B %Y}")
            april = next((e for e in entries if e["entry_date"].month == 4
                          and e["memo"].startswith(it["key"])), None)
            miss = _doc(kind, party, april["entry_date"], f"{kind[:3].upper()}-"
                        f"{april['entry_date']:%y%m}-{int(rng.integers(100, 999))}",
                        april["lines"][0][1], f"{text}, {april['entry_date']:%B %Y}") \
                if april else None
        elif it["key"] == "invoice":
            ref = _inv_style(it["id"], rng)
            good = _doc("Approved timesheet", party, d, ref, amt,
                        f"Hours approved by the customer for {ref}")
            other = amt - int(rng.integers(5_000, 60_000))
            miss = _doc("Approved timesheet", party, d, ref, other,
                        f"Hours approved by the customer for {ref} (first draft)")
        else:
            good = _doc("Remittance advice", party, d, it["ref"], amt,
                        f"Payment of {it['ref']}")
            miss = _doc("Remittance advice", party, date(2026, 4, int(rng.integers(6, 28))),
                        "earlier payment", amt + int(rng.integers(10_000, 90_000)),
                        "Payment of an earlier invoice")
        if i in missing:
            if near and miss is not None:
                docs.append((miss, None))
        else:
            docs.append((good, i))
    if tier == "hard":
        it = items[missing[-1]]
        docs.append((_doc("Vendor invoice", "Quayside Office Supplies", it["date"], "QOS-5531",
                          it["amount"], "Office supplies"), None))
    docs.append((_doc("Vendor invoice", "Quayside Office Supplies", date(2026, 5, 12),
                      "QOS-5518", int(rng.integers(8_000, 40_000)), "Office supplies"), None))
    docs.append((_doc("Credit note", "Cloudline Software Inc.", date(2026, 3, 16), "CN-0091",
                      int(rng.integers(2_000, 9_000)), "Seat count corrected"), None))
    numbers = sorted(int(x) for x in rng.choice(range(100, 999), len(docs), replace=False))
    shuffled = [docs[int(x)] for x in rng.permutation(len(docs))]
    files: dict[str, bytes] = {}
    supported_by: dict[int, str] = {}
    for num, (data, item) in zip(numbers, shuffled, strict=True):
        name = f"support/scan_{num:04d}.txt"
        files[f"workspace/{name}"] = data
        if item is not None:
            supported_by[item] = name
    lines: list[str] = []
    for it in items:
        auditor_id = {"journal entry": lambda s: "JE " + s.removeprefix("JE-"),
                      "sales invoice": lambda s: "no. " + s.split("-")[-1],
                      "cash receipt": lambda s: s}[it["type"]](it["id"])
        lines.append(f"{len(lines) + 1}. {it['type'].capitalize()} {auditor_id}, "
                     f"${display_cents(it['amount'])}")
    request = ("# Audit request PBC-07: supporting documents for sampled May entries\n\n"
               "From: Ellery & Marsh LLP, audit team\n\n"
               "For each item of our sample below, please send the supporting document. A "
               "document supports an item when it comes from the item's counterparty "
               "(vendor or customer), is for the item's amount to the cent and is dated in "
               "the item's month (May 2026). Where you hold no such document, tell us it is "
               "missing.\n\nSample:\n\n" + "\n".join(lines) + "\n")
    files["workspace/audit_request.md"] = text_bytes(request)
    files["workspace/ledger_sample.csv"] = csv_bytes(
        ["item", "type", "date", "counterparty", "amount", "memo"],
        [[it["id"], it["type"], it["date"].isoformat(), it["party"],
          format_cents(it["amount"]), it["memo"]] for it in items])
    files["reference/audit_support.csv"] = csv_bytes(
        ["item", "status", "document", "amount"],
        [[it["id"], "supported" if i in supported_by else "missing",
          supported_by.get(i, ""), format_cents(it["amount"])]
         for i, it in enumerate(items)])
    return files
