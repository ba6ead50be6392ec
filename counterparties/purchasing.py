"""Purchasing: requisitions, the vendors that supply against purchase orders, their bills.

The ``purchase_requisitions`` injection (planted once, on the calendar's first day) sends
purchasing's approved requisitions (``purchase-requisitions-YYYY-MM-DD.csv``: one
requisition per vendor, its lines with item, quantity and agreed unit price) and starts,
for every vendor of a ``po_*`` behaviour, the process that supplies it:

- each business day it looks in the books for a purchase order to it; the first one it
  finds it records as received (``PurchaseOrderReceived``: the vendor's copy);
- a few business days later it ships (``GoodsShipped``) and the company's dock sends a
  receiving report (``receiving-report-RR-NNNN.csv``, what arrived per PO line);
- a day or so after shipping it bills (``BillIssued``, an invoice naming the PO, as text, a
  PDF or inside an email by the scenario's document noise).

What goes wrong is the vendor's behaviour: ``po_clean`` ships and bills the order as
placed; ``po_short_ships`` ships one line short, bills the whole order, and ships the rest
about a week later; ``po_price_within`` bills one line a little above the PO's price
(within the company's 2% tolerance); ``po_price_over`` bills one line 5% to 12% above it.
The truth (requisitions, each vendor's behaviour, lead times) is an ``InjectionPlanted``
event; the vendors' records are their own world events. Every draw comes from the
vendor's own stream ``purchasing:<vendor_id>`` (and ``purchasing`` for the list), so no
other actor's draws move.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from counterparties.injections import RequisitionParams, register
from counterparties.noise import bill_format, email_request
from counterparties.planting import ACTOR, mark_planted
from counterparties.specs import PlannedInjection, PopulationView
from counterparties.vendors import TRADES
from erp.money import display_cents
from sim.documents import deliver, deliver_binary, deliver_email, render_csv
from sim.engine import Engine, Phase
from sim.pdf import render_text_pdf
from sim.world_events import BillIssued, GoodsShipped, OrderLine, PurchaseOrderReceived, ShippedLine

KIND = "purchase_requisitions"
BEHAVIOURS = ("po_clean", "po_short_ships", "po_price_within", "po_price_over")
"""The vendor behaviours that supply against purchase orders."""
PURCHASING_SENDER = "Purchasing <purchasing@northwind.example>"
RECEIVING_SENDER = "Receiving dock <receiving@northwind.example>"
REQUISITION_COLUMNS = ("requisition", "vendor_id", "vendor", "line", "item", "description",
                       "quantity", "unit_price")
RECEIVING_COLUMNS = ("report", "date", "vendor", "po", "line", "item", "quantity_received")

SHIP_PHASE = Phase.COUNTERPARTIES + 0.01
BILL_PHASE = Phase.COUNTERPARTIES + 0.02



@dataclass(frozen=True)
class RequisitionLine:
    """One line purchasing approved: item, quantity, the unit price agreed with the vendor."""

    line: int
    item: str
    description: str
    quantity: int
    unit_price: int


@dataclass(frozen=True)
class Supply:
    """What one vendor will do with its purchase order (drawn once, from its own stream)."""

    vendor_id: str
    requisition: str
    behaviour: str
    lines: tuple[RequisitionLine, ...]
    lead_days: int
    """Business days from receiving the PO to the first shipment."""
    bill_days: int
    """Business days from the first shipment to the invoice."""
    rest_days: int
    """Business days from the first shipment to the rest (``po_short_ships``)."""
    odd_line: int
    """The line shipped short or billed above its price."""
    short_share: float
    price_bp: int
    """How far above the PO price the odd line is billed (basis points; 0: at the price)."""
    invoice_seq: int


def _draw_supply(vendor: Any, requisition: str, params: RequisitionParams,
                 rng: np.random.Generator) -> Supply:
    behaviour = vendor.spec.behaviour
    items = TRADES[sorted(TRADES)[int(rng.integers(len(TRADES)))]]
    n = int(rng.integers(params.min_lines, max(params.min_lines, params.max_lines) + 1))
    picks = sorted(rng.choice(len(items), size=min(n, len(items)), replace=False).tolist())
    lines = tuple(RequisitionLine(
        line=k + 1, item=f"{_code(items[i])}-{int(rng.integers(10, 99))}",
        description=items[i], quantity=int(rng.integers(4, 60)),
        unit_price=int(rng.integers(5, 400)) * 100 + int(rng.choice([0, 25, 50, 75, 99])))
        for k, i in enumerate(picks))
    lead, bill_days = int(rng.integers(2, 5)), int(rng.integers(0, 3))
    rest = int(rng.integers(5, 8))
    odd = int(rng.integers(1, len(lines) + 1))
    short = float(rng.uniform(0.5, 0.8))
    bp = {"po_price_within": int(rng.integers(40, 180)),
          "po_price_over": int(rng.integers(500, 1200))}.get(behaviour, 0)
    return Supply(vendor.vendor_id, requisition, behaviour, lines, lead, bill_days, rest, odd,
                  short, bp, int(rng.integers(1000, 9000)))


def _code(description: str) -> str:
    """An item code's letters: the description's first word, upper-cased (``TRADE``)."""
    return re.sub(r"[^A-Z]", "", description.split()[0].upper())[:6] or "ITEM"


@register(KIND, RequisitionParams)
def plant_purchase_requisitions(population: PopulationView, inj: PlannedInjection) -> None:
    """Send purchasing's requisitions and start every PO vendor's supply process."""
    engine = population.engine
    params: RequisitionParams = inj.params
    supplies: list[Supply] = []
    for n, vendor_id in enumerate(sorted(population.vendors), start=1):
        vendor = population.vendors[vendor_id]
        if vendor.spec.behaviour not in BEHAVIOURS:
            continue
        rng = engine.streams.generator(f"purchasing:{vendor_id}")
        supplies.append(_draw_supply(vendor, f"REQ-{engine.today:%m%d}-{n:02d}", params, rng))
    rows = [(s.requisition, s.vendor_id, population.vendors[s.vendor_id].name, x.line, x.item,
             x.description, x.quantity, display_cents(x.unit_price))
            for s in supplies for x in s.lines]
    mark_planted(engine, inj, supplies=[_truth(s) for s in supplies])
    deliver(engine, actor=ACTOR, kind="other",
            filename=f"purchase-requisitions-{engine.today.isoformat()}.csv",
            sender=PURCHASING_SENDER, subject="Approved purchase requisitions",
            content=render_csv(REQUISITION_COLUMNS, rows),
            truth={"kind": "requisitions", "requisitions": [s.requisition for s in supplies]})
    for s in supplies:
        engine.process(_supplies(population, s, params))


def _truth(s: Supply) -> dict[str, Any]:
    return {"vendor_id": s.vendor_id, "requisition": s.requisition, "behaviour": s.behaviour,
            "lines": [[x.line, x.item, x.description, x.quantity, x.unit_price]
                      for x in s.lines],
            "odd_line": s.odd_line, "price_bp": s.price_bp}


def _order_in_books(engine: Engine, s: Supply) -> str | None:
    """The first purchase order in the books to this vendor for its requisition's items."""
    items = [(x.item, x.quantity) for x in s.lines]
    for po in engine.ledger.books.purchasing.orders.values():
        if po.vendor_id == s.vendor_id and [
                (x.item, x.quantity) for _, x in sorted(po.lines.items())] == items:
            return po.po_id
    return None


def _supplies(population: PopulationView, s: Supply,
              params: RequisitionParams) -> Generator[Any, Any, None]:
    """The vendor's side of one purchase order: receive it, ship, bill (and ship the rest)."""
    engine = population.engine
    cal = engine.calendar
    vendor = population.vendors[s.vendor_id]
    po_id: str | None = None
    for day in cal.business_days():
        if day <= engine.today:
            continue
        yield engine.until(day, Phase.COUNTERPARTIES)
        po_id = _order_in_books(engine, s)
        if po_id is not None:
            break
    if po_id is None:
        return
    received_on = engine.today
    engine.world.emit(PurchaseOrderReceived(
        vendor_id=s.vendor_id, po_id=po_id, requisition=s.requisition, received_on=received_on,
        lines=tuple(ShippedLine(line=x.line, item=x.item, quantity=x.quantity)
                    for x in s.lines)), vendor.actor)
    first = {x.line: x.quantity for x in s.lines}
    if s.behaviour == "po_short_ships":
        odd = next(x for x in s.lines if x.line == s.odd_line)
        first[odd.line] = max(1, int(odd.quantity * s.short_share))
    ship_on = cal.add_business_days(received_on, s.lead_days)
    yield engine.until(ship_on, SHIP_PHASE)
    _ship(population, s, po_id, first, 1)
    bill_on = cal.add_business_days(ship_on, s.bill_days)
    if s.behaviour == "po_short_ships":
        rest_on = cal.add_business_days(ship_on, s.rest_days)
        rest = {x.line: x.quantity - first[x.line] for x in s.lines
                if x.quantity > first[x.line]}
        if bill_on <= rest_on:
            yield engine.until(bill_on, BILL_PHASE)
            _bill(population, s, po_id, params)
            yield engine.until(rest_on, SHIP_PHASE)
            _ship(population, s, po_id, rest, 2)
        else:
            yield engine.until(rest_on, SHIP_PHASE)
            _ship(population, s, po_id, rest, 2)
            yield engine.until(bill_on, BILL_PHASE)
            _bill(population, s, po_id, params)
        return
    yield engine.until(bill_on, BILL_PHASE)
    _bill(population, s, po_id, params)


def _ship(population: PopulationView, s: Supply, po_id: str, quantities: dict[int, int],
          n: int) -> None:
    engine = population.engine
    vendor = population.vendors[s.vendor_id]
    lines = tuple(ShippedLine(line=x.line, item=x.item, quantity=quantities[x.line])
                  for x in s.lines if quantities.get(x.line))
    ref = f"SH-{s.vendor_id}-{n}"
    engine.world.emit(GoodsShipped(vendor_id=s.vendor_id, po_id=po_id, shipment_ref=ref,
                                   shipped_on=engine.today, lines=lines), vendor.actor)
    report = f"RR-{engine.world.next_id('RR').rsplit('-', 1)[-1]}"
    rows = [(report, engine.today.isoformat(), vendor.name, po_id, x.line, x.item, x.quantity)
            for x in lines]
    deliver(engine, actor=ACTOR, kind="other", filename=f"receiving-report-{report}.csv",
            sender=RECEIVING_SENDER, subject=f"Receiving report {report}: {po_id}",
            content=render_csv(RECEIVING_COLUMNS, rows),
            truth={"kind": "receiving_report", "vendor_id": s.vendor_id, "po_id": po_id,
                   "shipment_ref": ref})


def _billed_price(s: Supply, x: RequisitionLine) -> int:
    if x.line != s.odd_line or not s.price_bp:
        return x.unit_price
    return (x.unit_price * (10_000 + s.price_bp) + 5_000) // 10_000


def _bill(population: PopulationView, s: Supply, po_id: str,
          params: RequisitionParams) -> None:
    engine = population.engine
    vendor = population.vendors[s.vendor_id]
    today = engine.today
    number = vendor.number_format.render(today.year, s.invoice_seq)
    lines = tuple(OrderLine(description=f"{x.item} {x.description}", quantity=x.quantity,
                            unit_price=_billed_price(s, x)) for x in s.lines)
    total = sum(x.quantity * x.unit_price for x in lines)
    agreed = sum(x.quantity * x.unit_price for x in s.lines)
    due = today.fromordinal(today.toordinal() + params.terms_days)
    ref = f"{s.vendor_id}-PO-BILL"
    engine.world.emit(BillIssued(vendor_id=s.vendor_id, bill_ref=ref, invoice_number=number,
                                 issued_on=today, due_on=due, lines=lines, total=total,
                                 agreed_total=agreed, kind="original"), vendor.actor)
    text = render_po_invoice(vendor, number, po_id, today, due, s.lines, lines, total)
    truth = {"vendor_id": s.vendor_id, "bill_ref": ref, "kind": "original", "po_id": po_id,
             "invoice_number": number}
    fmt = bill_format(engine.streams, f"{s.vendor_id}:{number}", population.noise)
    slug = f"invoice-{number}".replace("/", "-").replace(" ", "_")
    if fmt == "pdf":
        deliver_binary(engine, actor=vendor.actor, kind="bill", filename=f"{slug}.pdf",
                       sender=vendor.email, subject=f"Invoice {number}",
                       data=render_text_pdf(title=f"Invoice {number}", text=text), truth=truth)
    elif fmt == "email":
        ask = email_request(engine.streams, f"{s.vendor_id}:{number}")
        deliver_email(engine, actor=vendor.actor, sender=f"{vendor.name} <{vendor.email}>",
                      subject=f"Invoice {number} from {vendor.name}", body=f"{ask}\n\n{text}",
                      kind="bill", truth=truth, slug=slug)
    else:
        deliver(engine, actor=vendor.actor, kind="bill", filename=f"{slug}.txt",
                sender=vendor.email, subject=f"Invoice {number}", content=text, truth=truth)


def render_po_invoice(vendor: Any, number: str, po_id: str, issued_on: date, due_on: date,
                      ordered: tuple[RequisitionLine, ...], lines: tuple[OrderLine, ...],
                      total: int) -> str:
    """A vendor's invoice against a purchase order, as its system prints it."""
    head = [vendor.name, *vendor.address, f"Phone {vendor.phone} | {vendor.email}", "",
            "INVOICE", f"Invoice number: {number}", f"Invoice date: {issued_on.isoformat()}",
            f"Due date: {due_on.isoformat()}", f"Your PO: {po_id}", "",
            f"{'PO line':<8} {'Item':<10} {'Description':<28} {'Qty':>5} {'Unit':>10} "
            f"{'Amount':>11}"]
    body = [f"{o.line:<8} {o.item:<10} {o.description[:28]:<28} {x.quantity:>5} "
            f"{display_cents(x.unit_price):>10} {display_cents(x.quantity * x.unit_price):>11}"
            for o, x in zip(ordered, lines, strict=True)]
    return "\n".join([*head, *body, "", f"Total USD {display_cents(total)}", ""])
