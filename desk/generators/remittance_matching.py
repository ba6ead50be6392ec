"""The ``remittance-matching`` generator: customers' remittance advices against open invoices.

Northwind Services' receivables team gets a remittance advice with each customer payment:
a PDF advice from the customer's AP system (drawn with :mod:`desk.generators.pdf_docs`),
an email typed by a clerk, or a CSV export. Each names the invoices it pays, written
the customer's way (``INV 47498``, ``Inv#47511``, ``/INV/47526/``, ``Payment for invoice
47512``, ``Invoice No. 47533``), with the amount paid. Planted per tier: lines paying
less than the invoice's open amount (a deduction taken) and lines naming an invoice
number that is not on the open list. Every draw is from the seed's stream
``desk:remittances``; the open list also holds invoices nobody paid this time.
"""

from __future__ import annotations

from datetime import date, timedelta

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes, text_bytes
from desk.generators.pdf_docs import DeskPdf
from erp.money import display_cents, format_cents
from sim.rng import Streams

CUSTOMERS = (("Brightline Logistics Inc", "brightline"), ("Cedar Hollow Foods", "cedarhollow"),
             ("Harbor & Finch LLP", "harborfinch"), ("Kestrel Aviation Services", "kestrel"),
             ("Maple Ridge Clinics", "mapleridge"), ("Orion Retail Group", "orion"),
             ("Pinecrest Builders", "pinecrest"), ("Quarry Lane Studios", "quarrylane"),
             ("Silverline Hotels", "silverline"), ("Tidewater Marine Supply", "tidewater"),
             ("Upland Dairy Cooperative", "upland"), ("Westbrook Schools District", "westbrook"))
"""Customers: the name printed on their advice and the slug of their file names."""

TIERS = {"easy": (4, 3, 1, 1), "medium": (7, 4, 1, 1), "hard": (10, 5, 2, 2)}
"""Per tier: remittances, most lines on one, short-paid lines, unknown references."""

FORMATS = ("pdf", "email", "csv")


def _ref(number: int, style: int, fmt: str) -> str:
    """An invoice number written one of the customers' ways."""
    if fmt == "csv":
        return (f"/INV/{number}/", f"INV {number}", f"Inv#{number}")[style % 3]
    if fmt == "email":
        return (f"Payment for invoice {number}", f"Inv#{number}", f"INV {number}",
                f"invoice no. {number}")[style % 4]
    return (f"INV {number}", f"Invoice No. {number}", f"INV-{number}", f"Inv#{number}")[style % 4]


def _long_date(d: date) -> str:
    return f"{d.strftime('%B')} {d.day}, {d.year}"


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``open_invoices.csv``, ``remittances/*``; the reference ``remittance_lines.csv``."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    n_rem, most, n_short, n_unknown = TIERS[tier]
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:remittances")
    picks = [int(i) for i in rng.permutation(len(CUSTOMERS))[:n_rem]]
    number = 47480 + int(rng.integers(0, 20))
    open_rows: list[tuple[int, str, date, int]] = []
    # (remittance index, invoice number, paid cents, open cents or None)
    lines: list[tuple[int, int, int, int | None]] = []
    for r, c in enumerate(picks):
        customer = CUSTOMERS[c][0]
        k = int(rng.integers(2, most + 1))
        for j in range(k + 1 + int(rng.integers(0, 2))):
            number += 1 + int(rng.integers(0, 3))
            issued = ctx.day - timedelta(days=int(rng.integers(20, 70)))
            amount = int(rng.integers(30_000, 1_800_000))
            open_rows.append((number, customer, issued, amount))
            if j < k:
                lines.append((r, number, amount, amount))
    slots = [int(i) for i in rng.permutation(len(lines))[:n_short]]
    for s in slots:
        r, n, paid, owed = lines[s]
        lines[s] = (r, n, paid - int(rng.integers(1_500, min(paid // 4, 90_000))), owed)
    known = {n for n, *_ in open_rows}
    for _ in range(n_unknown):
        r = int(rng.integers(0, n_rem))
        while True:
            n = 47300 + int(rng.integers(0, 160))
            if n not in known:
                break
        known.add(n)
        lines.append((r, n, int(rng.integers(20_000, 600_000)), None))
    files: dict[str, bytes] = {}
    ref_rows: list[list[str]] = []
    open_by_number = {n: (cust, issued, amt) for n, cust, issued, amt in open_rows}
    paid_on = ctx.day - timedelta(days=3)
    for r, c in enumerate(picks):
        customer, slug = CUSTOMERS[c]
        fmt = FORMATS[r % 3]
        mine = [ln for ln in lines if ln[0] == r]
        order = [int(i) for i in rng.permutation(len(mine))]
        mine = [mine[i] for i in order]
        total = sum(p for _, _, p, _ in mine)
        day = paid_on - timedelta(days=int(rng.integers(0, 6)))
        name = f"{slug}_{day:%m%d}.{'txt' if fmt == 'email' else fmt}"
        styles = [int(rng.integers(0, 12)) for _ in mine]
        if fmt == "pdf":
            files[f"workspace/remittances/{name}"] = _pdf(customer, r, day, mine, styles,
                                                          open_by_number, total)
        elif fmt == "email":
            files[f"workspace/remittances/{name}"] = _email(customer, slug, day, mine, styles,
                                                            total)
        else:
            files[f"workspace/remittances/{name}"] = csv_bytes(
                ["Payment Ref", "Payer", "Payment Date", "Doc Reference", "Amount Paid (USD)"],
                [[f"PMT-{40_100 + r * 37:06d}", customer, day.strftime("%m/%d/%Y"),
                  _ref(n, st, "csv"), format_cents(p)]
                 for (_, n, p, _), st in zip(mine, styles, strict=True)])
        for _, n, p, owed in mine:
            status = ("unknown_reference" if owed is None else
                      "paid" if p == owed else "short_paid")
            ref_rows.append([name, f"INV-{n}", format_cents(p),
                             "" if owed is None else format_cents(owed), status])
    statuses = [row[4] for row in ref_rows]
    if statuses.count("short_paid") != n_short or statuses.count("unknown_reference") != n_unknown:
        raise GenerationError(f"seed {ctx.seed}: planted exceptions did not come out")
    files["workspace/open_invoices.csv"] = csv_bytes(
        ["invoice_id", "customer", "invoice_date", "due_date", "open_amount"],
        [[f"INV-{n}", cust, issued.isoformat(), (issued + timedelta(days=30)).isoformat(),
          format_cents(amt)] for n, cust, issued, amt in open_rows])
    files["reference/remittance_lines.csv"] = csv_bytes(
        ["remittance", "invoice_id", "amount", "open_amount", "status"], sorted(ref_rows))
    return files


def _pdf(customer: str, r: int, day: date, mine: list[tuple[int, int, int, int | None]],
         styles: list[int], open_by_number: dict[int, tuple[str, date, int]],
         total: int) -> bytes:
    pdf = DeskPdf(f"Remittance advice {customer}", author=customer)
    pdf.text(54, 740, customer, size=15, bold=True)
    pdf.text(558, 740, "REMITTANCE ADVICE", size=16, bold=True, align="right")
    pdf.lines(54, 712, ["Accounts Payable", f"Advice no. RA-2026-{118 + r * 7}",
                        f"Payment date: {_long_date(day)}",
                        f"Payment method: ACH trace {7_700_140 + r * 913}"], size=9, leading=12)
    pdf.lines(360, 712, ["Paid to:", "Northwind Services LLC", "PO Box 4410, Chicago IL 60680"],
              size=9, leading=12)
    y = 630
    cols = ((54, "Invoice", "left"), (190, "Invoice date", "left"),
            (360, "Invoice amount", "right"), (450, "Deduction", "right"),
            (558, "Amount paid", "right"))
    for x, label, align in cols:
        pdf.text(x, y, label, size=9, bold=True, align=align)
    pdf.rule(54, y - 4, 558, y - 4)
    for (_, n, paid, owed), st in zip(mine, styles, strict=True):
        y -= 16
        gross = owed if owed is not None else paid
        issued = (open_by_number[n][1] if n in open_by_number
                  else day - timedelta(days=45 + n % 9))
        cells = (_ref(n, st, "pdf"), issued.strftime("%m/%d/%Y"), display_cents(gross),
                 display_cents(gross - paid) if gross != paid else "",
                 display_cents(paid))
        for (x, _, align), cell in zip(cols, cells, strict=True):
            if cell:
                pdf.text(x, y, cell, size=9, align=align)
    pdf.rule(54, y - 6, 558, y - 6)
    pdf.text(450, y - 20, "Total paid", size=9, bold=True, align="right")
    pdf.text(558, y - 20, f"${display_cents(total)}", size=9, bold=True, align="right")
    pdf.text(54, 90, "Questions about this payment: ap@" + customer.split()[0].lower()
             + ".example or 312-555-0142", size=8, italic=True)
    return pdf.data()


def _email(customer: str, slug: str, day: date, mine: list[tuple[int, int, int, int | None]],
           styles: list[int], total: int) -> bytes:
    body = [f"From: Accounts Payable <ap@{slug}.example>",
            "To: receivables@northwind-services.example",
            f"Date: {_long_date(day)}",
            f"Subject: Remittance - {customer} payment",
            "",
            "Hello,",
            "",
            f"We sent a wire of ${display_cents(total)} today (our batch 55-{day:%m%d}). "
            "It covers the following:",
            ""]
    for (_, n, p, _), st in zip(mine, styles, strict=True):
        ref = _ref(n, st, "email")
        body.append(f"  {ref}: ${display_cents(p)}" if st % 2 else f"  {ref} - {display_cents(p)}")
    body += ["", f"Total: ${display_cents(total)}", "",
             "Please apply accordingly and let us know of any questions.", "",
             "Regards,", f"{customer} - Accounts Payable", "Tel. 312 555 0199"]
    return text_bytes("\n".join(body))
