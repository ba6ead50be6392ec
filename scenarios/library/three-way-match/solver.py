"""three-way-match: the reference solver (the inbox and the books) and the oracle (the truth).

Both do the clerk's three weeks: issue purchasing's requisitions as purchase orders, record
each receiving report as a goods receipt, enter every vendor invoice against the PO it
names (the books match it and hold what is outside tolerance) and approve it; on the
payment day, as the controller, release the holds the goods received since have cleared,
pay every approved bill not on hold in one run, and list the holds that stand in
``out/holds.csv``.

The reference reads only what an external agent sees: the files of ``inbox/`` and
``inbox/archive/`` (CSV requisitions and receiving reports; invoices as text, PDF or
inside an email) and the books as the turn's role. It keeps no memory between turns: every
turn it reads every document again and acts only where the books do not show the work
done. The oracle takes the same facts from the world's truth (the requisitions planted,
the vendors' shipments and bills).
"""

from __future__ import annotations

import csv
import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from email import message_from_string, policy
from email.message import EmailMessage
from pathlib import Path

from erp import commands as c
from erp import queries as q
from erp.books import document_number_key
from erp.errors import CommandRejected
from erp.money import parse_cents
from scenarios.turn import TurnContext
from sim.world import World
from sim.world_events import (
    BillIssued,
    DocumentDelivered,
    GoodsShipped,
    InjectionPlanted,
    decode_world_event,
)

OPERATING_ACCOUNT = "B-OPER"
PAYMENT_DAY = date(2026, 7, 22)
HOLDS_FILE = "holds.csv"
HOLD_COLUMNS = ("bill", "vendor", "reason")
PRICE_TOLERANCE_BP = 200


# --- what the clerk works from (read from documents, or taken from the truth) -------------


@dataclass(frozen=True)
class _Req:
    """A requisition: its vendor, the day it arrived, its lines (item, quantity, price)."""

    requisition: str
    vendor_id: str
    on: date
    lines: tuple[tuple[str, str, int, int], ...]


@dataclass(frozen=True)
class _Receipt:
    """A receiving report: what arrived against one PO, line by line."""

    report: str
    po_id: str
    on: date
    lines: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class _Invoice:
    """A vendor invoice against a PO: its vendor (by name), number, dates, billed lines."""

    vendor: str
    number: str
    issued_on: date
    due_on: date
    po_id: str
    lines: tuple[tuple[int, int, int], ...]


# --- acting on the books (shared by the reference and the oracle) ----------------------------


def _issue(desk: TurnContext, req: _Req) -> None:
    """Issue a requisition as a PO unless the books hold one to its vendor with its lines."""
    want = [(item, qty, price) for item, _, qty, price in req.lines]
    for po in desk.ledger.books.purchasing.orders.values():
        if po.vendor_id == req.vendor_id and [
                (x.item, x.quantity, x.unit_price) for _, x in sorted(po.lines.items())] == want:
            return
    desk.execute(c.IssuePurchaseOrder(vendor_id=req.vendor_id, order_date=req.on, lines=tuple(
        c.PurchaseOrderLineIn(item=item, description=desc, quantity=qty, unit_price=price)
        for item, desc, qty, price in req.lines)))


def _receive(desk: TurnContext, r: _Receipt) -> None:
    """Record a receiving report once (its number is the goods receipt's id)."""
    if r.report in desk.ledger.books.purchasing.receipts:
        return
    if r.po_id not in desk.ledger.books.purchasing.orders:
        return
    desk.execute(c.RecordGoodsReceipt(receipt_id=r.report, po_id=r.po_id, entry_date=r.on,
                                      reference=r.report, lines=tuple(
        c.GoodsReceiptLineIn(line=n, quantity=k) for n, k in r.lines)))


def _enter(desk: TurnContext, vendor_id: str, inv: _Invoice) -> None:
    """Enter an invoice once against its PO, and approve the bill."""
    books = desk.ledger.books
    key = document_number_key(inv.number)
    if key not in books.vendors[vendor_id].invoice_numbers:
        po = books.purchasing.orders.get(inv.po_id)
        if po is None or po.vendor_id != vendor_id:
            return
        done = desk.execute(c.EnterMatchedBill(
            po_id=inv.po_id, vendor_invoice_number=inv.number, entry_date=inv.issued_on,
            due_on=inv.due_on, lines=tuple(c.MatchedBillLineIn(line=n, quantity=k, unit_price=p)
                                           for n, k, p in inv.lines)))
        if isinstance(done, CommandRejected):
            return
    for b in q.documents(desk.store, kind="bill", party=vendor_id):
        if document_number_key(b["reference"]) == key and b["status"] == "entered":
            desk.execute(c.ApproveBill(bill_id=b["doc_id"]))


def _still_held(desk: TurnContext, bill_id: str) -> str | None:
    """Why a standing hold still applies now (None: the bill matches what was received)."""
    books = desk.ledger.books
    po_id = books.purchasing.bill_orders[bill_id]
    lines = {r.line: r for r in q.purchase_order_lines(desk.store, po_id=po_id)}
    why = []
    for reason in books.purchasing.holds[bill_id].reasons:
        line = lines[reason.line]
        if reason.code == "price":
            why.append(reason.detail)
        elif line.billed > line.received:
            why.append(f"line {line.line} {line.item} billed {line.billed}, {line.received} "
                       "received")
    return "; ".join(why) or None


def _payment_day(desk: TurnContext) -> None:
    """As the controller: release cleared holds, then pay every bill not on hold, once."""
    books = desk.ledger.books
    for bill_id in sorted(books.purchasing.holds):
        if books.purchasing.on_hold(bill_id) is None:
            continue
        po_id = books.purchasing.bill_orders[bill_id]
        receipts = sorted(d["doc_id"] for d in q.documents(desk.store, kind="goods_receipt")
                          if d["reference"] == po_id)
        release = c.ReleaseBillHold(bill_id=bill_id, reason=(
            f"goods received in full against {po_id} ({', '.join(receipts)})"))
        why = _still_held(desk, bill_id)
        if why is None:
            desk.execute(release)
        else:
            desk.decline(release, f"{bill_id} still outside tolerance: {why}")
    if any(d["doc_date"] == desk.day.isoformat()
           for d in q.documents(desk.store, kind="payment_run")):
        return
    payable = [b for b in books.bills.values() if b.approved and b.open > 0
               and books.purchasing.on_hold(b.bill_id) is None]
    if payable:
        desk.execute(c.RunPayments(bank_account_id=OPERATING_ACCOUNT, entry_date=desk.day,
                                   due_by=max(b.due_on for b in payable)))


def _write_holds(desk: TurnContext) -> Path:
    """``out/holds.csv``: every bill on hold in the books now, with its vendor and why."""
    desk.output_dir.mkdir(parents=True, exist_ok=True)
    path = desk.output_dir / HOLDS_FILE
    books = desk.ledger.books
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HOLD_COLUMNS)
        for bill_id in sorted(books.purchasing.holds):
            if books.purchasing.on_hold(bill_id) is not None:
                why = _still_held(desk, bill_id) or "on hold"
                w.writerow((bill_id, books.bills[bill_id].vendor_id, why))
    return path


def _work(desk: TurnContext, reqs: Iterable[_Req], receipts: Iterable[_Receipt],
          invoices: Iterable[tuple[str, _Invoice]]) -> None:
    for req in reqs:
        _issue(desk, req)
    for r in receipts:
        _receive(desk, r)
    for vendor_id, inv in invoices:
        _enter(desk, vendor_id, inv)
    if desk.day >= PAYMENT_DAY:
        _payment_day(desk)
    _write_holds(desk)


# --- the reference: reading the documents ------------------------------------------------------

_DOC_NUMBER = re.compile(r"^DOC-(\d+)-")
_ROW = re.compile(r"^(?P<line>\d+)\s+(?P<item>\S+)\s+(?P<desc>.*?)\s+(?P<qty>\d+)\s+"
                  r"(?P<unit>[\d,]+\.\d{2})\s+(?P<amount>[\d,]+\.\d{2})\s*$", re.M)


def _arrival(path: Path) -> tuple[int, str]:
    m = _DOC_NUMBER.match(path.name)
    return (int(m.group(1)) if m else 10**9, path.name)


def _field(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text, re.M)
    return m.group(1).strip() if m else None


def _pdf_text(path: Path) -> str | None:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        pages = [page.extract_text(extraction_mode="layout") for page in PdfReader(path).pages]
    except (OSError, ValueError, PyPdfError):
        return None
    return textwrap.dedent("\n".join(pages)) + "\n"


def _email_text(path: Path) -> str:
    msg = message_from_string(path.read_text(encoding="utf-8"), policy=policy.default)
    assert isinstance(msg, EmailMessage)
    body = msg.get_body(preferencelist=("plain",))
    return body.get_content() if body is not None else ""


def read_po_invoice(text: str) -> _Invoice | None:
    """An invoice against a PO as printed, or None when the text is not one."""
    number = _field(r"^\s*Invoice number:\s*(.+)$", text)
    issued = _field(r"^\s*Invoice date:\s*(\d{4}-\d{2}-\d{2})", text)
    due = _field(r"^\s*Due date:\s*(\d{4}-\d{2}-\d{2})", text)
    po = _field(r"^\s*Your PO:\s*(\S+)", text)
    lines = tuple((int(m["line"]), int(m["qty"]), parse_cents(m["unit"].replace(",", "")))
                  for m in _ROW.finditer(text))
    head = [x.strip() for x in text.split("\n") if x.strip()]
    start = next((i for i, x in enumerate(head) if x.startswith("Phone ")), None)
    if None in (number, issued, due, po) or not lines or start is None or start < 3:
        return None
    assert number and issued and due and po
    return _Invoice(head[start - 3], number, date.fromisoformat(issued), date.fromisoformat(due),
                    po, lines)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _read_inbox(desk: TurnContext, names: dict[str, str]) -> tuple[
        list[_Req], list[_Receipt], list[tuple[str, _Invoice]]]:
    reqs: dict[str, _Req] = {}
    receipts: list[_Receipt] = []
    invoices: list[tuple[str, _Invoice]] = []
    for path in sorted([*desk.archive(), *desk.inbox()], key=_arrival):
        name = path.name
        m = re.search(r"purchase-requisitions-(\d{4}-\d{2}-\d{2})\.csv$", name)
        if m:
            for row in _rows(path):
                r = reqs.get(row["requisition"]) or _Req(row["requisition"], row["vendor_id"],
                                                         date.fromisoformat(m.group(1)), ())
                reqs[r.requisition] = _Req(r.requisition, r.vendor_id, r.on, (*r.lines, (
                    row["item"], row["description"], int(row["quantity"]),
                    parse_cents(row["unit_price"]))))
            continue
        if re.search(r"receiving-report-.+\.csv$", name):
            rows = _rows(path)
            if rows:
                receipts.append(_Receipt(rows[0]["report"], rows[0]["po"],
                                         date.fromisoformat(rows[0]["date"]),
                                         tuple((int(x["line"]), int(x["quantity_received"]))
                                               for x in rows)))
            continue
        text = (_pdf_text(path) if path.suffix == ".pdf" else _email_text(path)
                if path.suffix == ".eml" else path.read_text(encoding="utf-8")
                if path.suffix == ".txt" else None)
        inv = read_po_invoice(text) if text else None
        if inv is not None and inv.vendor.casefold() in names:
            invoices.append((names[inv.vendor.casefold()], inv))
    return list(reqs.values()), receipts, invoices


def reference(desk: TurnContext) -> None:
    """The clerk's (or, on the payment day, the controller's) turn from its own materials."""
    names = {v.name.casefold(): v.vendor_id for v in desk.ledger.books.vendors.values()}
    _work(desk, *_read_inbox(desk, names))


# --- the oracle --------------------------------------------------------------------------------


def oracle(desk: TurnContext, world: World) -> None:
    """The same turn from the truth: requisitions, shipments and bills as the world has them."""
    reqs: list[_Req] = []
    receipts: list[_Receipt] = []
    invoices: list[tuple[str, _Invoice]] = []
    po_of: dict[tuple[str, str], str] = {}
    shipped: list[GoodsShipped] = []
    reports: dict[str, str] = {}
    for e in world.ledger.store.read(realm="world", types=[
            "injection_planted", "goods_shipped", "bill_issued", "document_delivered"]):
        w = decode_world_event(e.type, e.payload)
        on = date.fromisoformat(e.business_date)
        if isinstance(w, InjectionPlanted) and w.kind == "purchase_requisitions":
            reqs += [_Req(s["requisition"], s["vendor_id"], on, tuple(
                (x[1], x[2], int(x[3]), int(x[4])) for x in s["lines"]))
                for s in w.detail["supplies"]]
        elif isinstance(w, GoodsShipped):
            shipped.append(w)
        elif isinstance(w, DocumentDelivered) and "invoice_number" in w.truth:
            po_of[(w.truth["vendor_id"], w.truth["invoice_number"])] = w.truth["po_id"]
        elif isinstance(w, DocumentDelivered) and "shipment_ref" in w.truth:
            m = re.search(r"receiving-report-(.+)\.csv$", w.filename)
            if m:
                reports[w.truth["shipment_ref"]] = m.group(1)
        elif isinstance(w, BillIssued):
            invoices.append((w.vendor_id, _Invoice(
                w.vendor_id, w.invoice_number, w.issued_on, w.due_on, "", tuple(
                    (n, x.quantity, x.unit_price) for n, x in enumerate(w.lines, start=1)))))
    receipts = [_Receipt(reports.get(w.shipment_ref, w.shipment_ref), w.po_id, w.shipped_on,
                         tuple((x.line, x.quantity) for x in w.lines)) for w in shipped]
    invoices = [(v, _Invoice(i.vendor, i.number, i.issued_on, i.due_on,
                             po_of.get((v, i.number), ""), i.lines)) for v, i in invoices]
    _work(desk, reqs, receipts, invoices)


__all__: Sequence[str] = ("oracle", "read_po_invoice", "reference")
