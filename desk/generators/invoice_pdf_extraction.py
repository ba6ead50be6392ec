"""The ``invoice-pdf-extraction`` generator: a month's vendor invoices as PDFs.

Six vendors bill Northwind Services LLC, each in its own house layout (ReportLab text
PDFs, ``desk.generators.pdf_docs``): a classic invoice with a label-value block on the
right ("Invoice No.:", "Due Date:"), a tax invoice whose header is a row of labels over
a row of values ("Inv #", "Terms", "Customer PO") with the quantity column first, and a
consulting statement of hours ("Invoice Number", "Payment Terms: Net 15", no sales
tax). Dates are printed four ways (``May 4, 2026``, ``04-May-2026``, ``2026-05-04``,
``4 May 2026``); due dates are printed or follow from the terms; tax lines are there or
not; amounts carry thousands separators. Medium and hard tiers wrap long descriptions
over two lines and run one or two invoices onto a second page ("continued"); hard adds
a discount line printed in parentheses. The reference holds every header field and
every line, amounts to the cent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.generators.pdf_docs import DeskPdf, wrap_words
from erp.money import display_cents, format_cents, pct_of
from sim.rng import Streams

BILL_TO = ("Northwind Services LLC", "Accounts Payable", "400 Harbor Point Blvd, Suite 12",
           "Portland, OR 97209")


@dataclass(frozen=True)
class _Vendor:
    name: str
    address: tuple[str, ...]
    layout: str            # classic | rowhead | hours
    number: str            # a format with {n}
    dates: str             # long | dmy | iso | dmy_text
    tax_bp: int            # sales tax in basis points (0: none printed)
    terms_days: int        # 0: the due date is printed
    items: tuple[tuple[str, int, int], ...]   # description, unit price range in cents


VENDORS = (
    _Vendor("Harbor Office Supply Co.", ("1180 Industrial Way", "Tacoma, WA 98421"),
            "classic", "INV-{n}", "long", 825, 0,
            (("Copy paper, letter, 10-ream case", 4200, 6900),
             ("Toner cartridge, black, high yield", 8900, 16900),
             ("Ergonomic desk chair, mesh back, adjustable lumbar support", 21900, 38900),
             ("Whiteboard markers, assorted, box of 12", 1100, 1900),
             ("Archive storage boxes with lids, pack of 10", 3400, 5200))),
    _Vendor("Apex Facilities Services LLC", ("77 Commerce Park Drive", "Beaverton, OR 97005"),
            "rowhead", "AFS{n}", "dmy", 0, 30,
            (("Janitorial service, monthly contract", 180000, 260000),
             ("HVAC filter replacement, floors 2 and 3", 42000, 69000),
             ("After-hours emergency call-out, plumbing", 24000, 39000),
             ("Window cleaning, exterior, quarterly visit", 65000, 98000))),
    _Vendor("Brightline IT Consulting", ("2300 Pearl Street, Floor 4", "Boulder, CO 80302"),
            "hours", "{n}", "iso", 0, 15,
            (("Senior consultant - ERP integration workshop and follow-up design notes",
              17500, 22500),
             ("Network engineer - firewall rule review", 14000, 16500),
             ("Project management", 12000, 13500),
             ("Developer - payment file export changes", 13000, 15500))),
    _Vendor("Northgate Packaging Inc.", ("5 Riverside Terminal", "Vancouver, WA 98660"),
            "classic", "NP-{n}-26", "dmy_text", 700, 0,
            (("Corrugated cartons 18x12x12, bundle of 25", 3600, 5400),
             ("Stretch film, 18 in x 1500 ft, hand roll", 2100, 3300),
             ("Printed shipping labels 4x6, roll of 500", 1900, 2900),
             ("Pallet, heat-treated, 48x40", 1400, 2300))),
    _Vendor("Coastal Courier Ltd", ("Unit 9, 300 Dockside Road", "Seattle, WA 98134"),
            "rowhead", "CC/{n}", "long", 650, 45,
            (("Same-day courier, downtown zone", 2800, 4900),
             ("Overnight freight, pallet, Portland to Seattle and return", 18500, 29500),
             ("Fuel surcharge", 900, 2200),
             ("Document shredding pickup", 6500, 9500))),
    _Vendor("Summit Legal Partners LLP", ("1 Summit Plaza, Suite 2100", "Portland, OR 97204"),
            "hours", "SLP-{n}", "dmy", 0, 30,
            (("Partner - review of supplier master agreement and negotiation of liability cap",
              42000, 52000),
             ("Associate - drafting of amendment No. 2", 26000, 31000),
             ("Paralegal - filing and document management", 12500, 15000))),
)

@dataclass(frozen=True)
class _Tier:
    count: int
    lines: tuple[int, int]
    wrap: bool
    pages2: int
    discount: int


TIERS = {"easy": _Tier(6, (1, 4), False, 0, 0), "medium": _Tier(10, (1, 7), True, 1, 0),
         "hard": _Tier(14, (1, 8), True, 2, 2)}
"""Per tier: invoices, lines per invoice, long descriptions wrapped, invoices run onto a
second page, invoices with a discount line."""

SITES = ("Portland office", "Tacoma warehouse", "Seattle branch", "Boise depot",
         "Salem office", "Eugene workshop")
"""Where the extra lines of a two-page invoice were delivered (each one line)."""

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")


def _date_text(d: date, style: str) -> str:
    if style == "long":
        return f"{MONTHS[d.month - 1]} {d.day}, {d.year}"
    if style == "dmy":
        return f"{d.day:02d}-{MONTHS[d.month - 1][:3]}-{d.year}"
    if style == "dmy_text":
        return f"{d.day} {MONTHS[d.month - 1]} {d.year}"
    return d.isoformat()


def _money(cents: int, *, parens: bool = False) -> str:
    if cents < 0 and parens:
        return f"({display_cents(-cents)})"
    return display_cents(cents)


def _qty_text(milli: int) -> str:
    whole, frac = divmod(milli, 1000)
    return str(whole) if not frac else f"{whole}.{frac:03d}".rstrip("0")


@dataclass
class _Invoice:
    vendor: _Vendor
    number: str
    file: str
    issued: date
    due: date
    po: str
    lines: list[tuple[str, int, int, int]] = field(default_factory=list)
    """Each line: description, quantity in thousandths, unit price and amount in cents."""
    two_pages: bool = False

    @property
    def subtotal(self) -> int:
        return sum(a for *_, a in self.lines)

    @property
    def tax(self) -> int:
        return pct_of(self.subtotal, self.vendor.tax_bp)

    @property
    def total(self) -> int:
        return self.subtotal + self.tax


# --- layouts --------------------------------------------------------------------------

def _letterhead(pdf: DeskPdf, v: _Vendor, y: float = 740) -> None:
    pdf.text(54, y, v.name, size=16, bold=True)
    pdf.lines(54, y - 16, v.address, size=9, leading=11)


def _bill_to(pdf: DeskPdf, x: float, y: float, label: str) -> None:
    pdf.text(x, y, label, size=9, bold=True)
    pdf.lines(x, y - 12, BILL_TO, size=9, leading=11)


def _table(pdf: DeskPdf, inv: _Invoice, cols: Sequence[tuple[str, float, str]], y: float,
           wrap: int, bottom: float, row: str) -> float:
    """Draw the line table from y; a second page when the invoice runs over. ``row`` is
    the column order: d(escription), q(uantity), u(nit), a(mount)."""
    def header(y: float) -> float:
        for label, x, align in cols:
            pdf.text(x, y, label, size=9, bold=True, align=align)
        pdf.rule(54, y - 4, 558, y - 4)
        return y - 18

    y = header(y)
    split = len(inv.lines) // 2 + 1 if inv.two_pages else len(inv.lines) + 1
    for i, (desc, qty, unit, amount) in enumerate(inv.lines):
        if i + 1 == split:
            pdf.text(558, 60, "continued on page 2", size=8, italic=True, align="right")
            pdf.new_page()
            _letterhead(pdf, inv.vendor)
            pdf.text(558, 740, f"{inv.number} - page 2 of 2", size=9, align="right")
            y = header(680)
        parts = wrap_words(desc, wrap) if wrap else [desc]
        cells = {"d": parts[0], "q": _qty_text(qty), "u": _money(unit, parens=True),
                 "a": _money(amount, parens=True)}
        for (_, x, align), k in zip(cols, row, strict=True):
            pdf.text(x, y, cells[k], size=9, align=align)
        for extra in parts[1:]:
            y -= 11
            x = next(x for (_, x, _), k in zip(cols, row, strict=True) if k == "d")
            pdf.text(x, y, extra, size=9)
        y -= 15
        if y < bottom and i + 1 < len(inv.lines) and not inv.two_pages:
            raise GenerationError(f"{inv.file}: the lines do not fit one page")
    pdf.rule(54, y + 8, 558, y + 8)
    return y - 6


def _classic(inv: _Invoice, wrap: int) -> bytes:
    v = inv.vendor
    pdf = DeskPdf(f"Invoice {inv.number}", author=v.name)
    _letterhead(pdf, v)
    pdf.text(558, 740, "INVOICE", size=20, bold=True, align="right")
    labels = ["Invoice No.:", "Invoice Date:", "Due Date:"] + (["PO Number:"] if inv.po else [])
    values = [inv.number, _date_text(inv.issued, v.dates), _date_text(inv.due, v.dates)] + \
        ([inv.po] if inv.po else [])
    y: float = 712
    for label, text in zip(labels, values, strict=True):
        pdf.text(400, y, label, size=9, bold=True)
        pdf.text(558, y, text, size=9, align="right")
        y -= 13
    _bill_to(pdf, 54, 660, "Bill To:")
    cols = [("Description", 54, "left"), ("Qty", 380, "right"), ("Unit Price", 470, "right"),
            ("Amount", 558, "right")]
    y = _table(pdf, inv, cols, 580, wrap, 140, "dqua")
    totals: list[tuple[str, int]] = [("Subtotal", inv.subtotal)]
    if v.tax_bp:
        totals.append((f"Sales Tax ({v.tax_bp / 100:g}%)", inv.tax))
    totals.append(("Total Due", inv.total))
    for label, value in totals:
        pdf.text(470, y, label, size=9, bold=label == "Total Due", align="right")
        pdf.text(558, y, f"${_money(value)}", size=9, bold=label == "Total Due",
                 align="right")
        y -= 14
    pdf.text(54, 80, f"Please remit to {v.name}, {', '.join(v.address)}. "
             "Thank you for your business.", size=8)
    return pdf.data()


def _rowhead(inv: _Invoice, wrap: int) -> bytes:
    v = inv.vendor
    pdf = DeskPdf(f"Tax invoice {inv.number}", author=v.name)
    _letterhead(pdf, v)
    pdf.text(558, 744, "TAX INVOICE", size=14, bold=True, align="right")
    _bill_to(pdf, 360, 716, "Invoice to")
    heads = (("Inv #", inv.number), ("Date", _date_text(inv.issued, v.dates)),
             ("Terms", f"Net {v.terms_days} days"), ("Customer PO", inv.po or "-"))
    for k, (label, text) in enumerate(heads):
        pdf.text(54 + 126 * k, 640, label, size=8, bold=True)
        pdf.text(54 + 126 * k, 627, text, size=10)
    pdf.rule(54, 620, 558, 620)
    cols = [("Qty", 84, "right"), ("Item", 100, "left"), ("Rate", 470, "right"),
            ("Line Total", 558, "right")]
    y = _table(pdf, inv, cols, 596, wrap, 150, "qdua")
    rows: list[tuple[str, int]] = [("Net amount", inv.subtotal)]
    if v.tax_bp:
        rows.append((f"Tax {v.tax_bp / 100:g}%", inv.tax))
    rows.append(("Amount payable USD", inv.total))
    for label, value in rows:
        pdf.text(470, y, label, size=9, bold=label.startswith("Amount"), align="right")
        pdf.text(558, y, _money(value), size=9, bold=label.startswith("Amount"),
                 align="right")
        y -= 14
    pdf.text(54, 80, f"Payment due {v.terms_days} days from the invoice date. "
             "Quote the invoice number with your payment.", size=8)
    return pdf.data()


def _hours(inv: _Invoice, wrap: int) -> bytes:
    v = inv.vendor
    pdf = DeskPdf(f"Invoice {inv.number}", author=v.name)
    _letterhead(pdf, v)
    y = pdf.lines(54, 690, (f"Invoice Number: {inv.number}",
                            f"Issued: {_date_text(inv.issued, v.dates)}",
                            f"Payment Terms: Net {v.terms_days}"), size=10, leading=14)
    if inv.po:
        pdf.text(54, y, f"Your reference: {inv.po}", size=10)
    _bill_to(pdf, 360, 690, "Client")
    pdf.text(54, 615, "Professional services rendered", size=11, bold=True)
    cols = [("Service", 54, "left"), ("Hours", 380, "right"), ("Rate", 470, "right"),
            ("Amount", 558, "right")]
    y = _table(pdf, inv, cols, 592, wrap, 140, "dqua")
    pdf.text(470, y, "Total (no sales tax applies)", size=9, align="right")
    pdf.text(558, y, _money(inv.subtotal), size=9, align="right")
    pdf.text(470, y - 16, "Amount Due", size=10, bold=True, align="right")
    pdf.text(558, y - 16, f"USD {_money(inv.total)}", size=10, bold=True, align="right")
    return pdf.data()


LAYOUTS = {"classic": _classic, "rowhead": _rowhead, "hours": _hours}


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``invoices/*.pdf``; the reference header fields and line items."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    t = TIERS[tier]
    rng = Streams(f"{ctx.task_id}/{ctx.seed}").generator("desk:invoices")
    first = ctx.day.replace(day=1)
    days = [first + timedelta(days=i) for i in range((ctx.day - first).days)]
    days = [d for d in days if d.weekday() < 5]
    invoices: list[_Invoice] = []
    used: set[str] = set()
    count = int(t.count)
    lo, hi = t.lines
    for k in range(count):
        v = VENDORS[k % len(VENDORS)] if k < len(VENDORS) else \
            VENDORS[int(rng.integers(0, len(VENDORS)))]
        while True:
            number = v.number.format(n=int(rng.integers(1000, 99999)))
            if number not in used:
                used.add(number)
                break
        issued = days[int(rng.integers(0, len(days)))]
        due = issued + timedelta(days=v.terms_days or int(rng.choice([14, 30, 30, 45])))
        po = f"PO-{int(rng.integers(26000, 26999))}" if rng.random() < 0.6 else ""
        inv = _Invoice(v, number, f"{v.name.split()[0].lower()}_{number.replace('/', '-')}.pdf",
                       issued, due, po)
        n_lines = min(int(rng.integers(lo, hi + 1)), len(v.items))
        picks = [int(i) for i in rng.permutation(len(v.items))]
        for j in range(n_lines):
            desc, ulo, uhi = v.items[picks[j]]
            if not t.wrap and len(desc) > 52:
                desc = desc[:desc.rfind(" ", 0, 50)]
            unit = int(rng.integers(ulo, uhi))
            qty = (int(rng.integers(1, 33)) * 500 if v.layout == "hours"
                   else int(rng.integers(1, 25)) * 1000)
            amount = pct_of(unit * qty, 10)   # unit x qty/1000, rounded to the cent
            inv.lines.append((desc, qty, unit, amount))
        invoices.append(inv)
    slots = [int(i) for i in rng.permutation(count)]
    for s in slots[:int(t.pages2)]:
        inv = invoices[s]
        for site in SITES:
            desc, ulo, uhi = inv.vendor.items[int(rng.integers(0, len(inv.vendor.items)))]
            qty = (500 if inv.vendor.layout == "hours" else 1000) * int(rng.integers(1, 6))
            unit = int(rng.integers(ulo, uhi))
            inv.lines.append((f"{desc} - {site}", qty, unit, pct_of(unit * qty, 10)))
        inv.two_pages = True
    for s in slots[int(t.pages2):int(t.pages2) + int(t.discount)]:
        inv = invoices[s]
        off = -pct_of(inv.subtotal, 300)
        inv.lines.append(("Early payment discount 3%", 1000, off, off))
    files: dict[str, bytes] = {}
    headers: list[list[str]] = []
    lines: list[list[str]] = []
    wrap = 46 if t.wrap else 0
    for inv in sorted(invoices, key=lambda i: i.file):
        files[f"workspace/invoices/{inv.file}"] = LAYOUTS[inv.vendor.layout](inv, wrap)
        headers.append([inv.file, inv.number, inv.vendor.name, inv.issued.isoformat(),
                        inv.due.isoformat(), inv.po, format_cents(inv.subtotal),
                        format_cents(inv.tax), format_cents(inv.total)])
        for j, (desc, qty, unit, amount) in enumerate(inv.lines, start=1):
            lines.append([inv.number, str(j), desc, _qty_text(qty), format_cents(unit),
                          format_cents(amount)])
    files["reference/invoices.csv"] = csv_bytes(
        ["file", "invoice_number", "vendor", "invoice_date", "due_date", "po_number",
         "subtotal", "tax", "total"], headers)
    files["reference/invoice_lines.csv"] = csv_bytes(
        ["invoice_number", "line", "description", "quantity", "unit_price", "amount"], lines)
    return files
