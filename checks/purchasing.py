"""Purchasing checks (family ``control``): purchase orders, receipts and holds against the world.

- ``purchase_orders_as_requisitioned``: each of purchasing's requisitions is one PO in
  the books, to its vendor, dated the day it arrived, line for line (item, quantity, unit
  price); no other PO. With ``issued_at_arrival_turn``, each issued at the turn its
  requisition arrived (not caught up later and dated back).
- ``receipts_as_shipped``: per PO line, the goods received in the books are what the
  vendor shipped (its ``GoodsShipped``), shipment by shipment: each receipt dated on a
  shipment day with what arrived that day, and recorded by the first turn after it.
- ``holds_as_matched``: every vendor invoice against a PO is a matched bill of that PO, on
  hold at the end exactly when it bills a unit above the PO price beyond the price
  tolerance, or more than was shipped beyond the quantity tolerance.
- ``holds_listed``: the holds file lists exactly the bills on hold in the books, one row
  each, under their vendor.
- ``po_bills_as_invoiced``: every vendor invoice against a PO entered as invoiced: dated as
  issued, due as invoiced, each line (PO line, quantity, unit price) as billed, at the
  first turn after it arrived, and approved in that turn.
- ``purchasing_writes``: the agent writes only events of the types the work asks for.
- ``payments_in_one_run``: every vendor payment the agent makes is one of a payment run
  made at a turn of the paying role, dated that day, from the operating account.

The truth is the world's: purchasing's requisitions (the ``purchase_requisitions``
injection's ``InjectionPlanted``), the vendors' shipments and bills (``GoodsShipped``,
``BillIssued``, ``DocumentDelivered.truth``). A check returns a failure naming the
offending documents; it never raises one.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from datetime import date
from typing import Any, ClassVar, Literal

from pydantic import Field

from checks.audit import read_log
from checks.context import CheckContext
from checks.files import Unusable, agent_csv
from checks.registry import CheckResult, CheckSpec, check_type
from checks.state import bill_not_as_invoiced, held_past_its_turn, listing, plural
from erp import events as ev
from erp.books import document_number_key
from sim.engine import Phase

REQUISITIONS = "purchase_requisitions"


class _PurchasingSpec(CheckSpec):
    family: ClassVar[str] = "control"


def _requisitions(ctx: CheckContext) -> list[dict[str, Any]]:
    """Purchasing's requisitions, each with ``arrived``: the day it reached the clerk."""
    out: list[dict[str, Any]] = []
    for e in read_log(ctx, "world", ["injection_planted"]):
        d = e.data
        if d.get("kind") == REQUISITIONS:
            out += [{**x, "arrived": e.business_date, "arrived_at": e.sim_time}
                    for x in d.get("detail", {}).get("supplies", [])]
    return out


def _orders(ctx: CheckContext) -> dict[str, ev.PurchaseOrderIssued]:
    return {x.po_id: x for x in (e.decoded() for e in read_log(ctx, "erp",
                                                             ["purchase_order_issued"]))}


class PurchaseOrdersAsRequisitioned(_PurchasingSpec):
    """Each requisition is issued as exactly one purchase order to its vendor, dated the day
    the requisition arrived, with its lines in order (item, quantity, unit price to the
    cent); no PO without one."""

    type: Literal["purchase_orders_as_requisitioned"]
    issued_at_arrival_turn: bool = False
    """When set, each PO is also issued at the first of the agent's turns after its
    requisition arrived: one caught up at a later turn and dated back fails (the vendor may
    have shipped against a PO the books did not hold yet)."""


@check_type(PurchaseOrdersAsRequisitioned)
def purchase_orders_as_requisitioned(spec: PurchaseOrdersAsRequisitioned,
                                     ctx: CheckContext) -> CheckResult:
    """Compare the books' purchase orders with purchasing's requisitions."""
    reqs = _requisitions(ctx)
    wanted = {(r["vendor_id"], tuple((x[1], x[3], x[4]) for x in r["lines"])): r["requisition"]
              for r in reqs}
    arrived = {r["requisition"]: r["arrived"] for r in reqs}
    found: dict[tuple[str, tuple[tuple[str, int, int], ...]], list[str]] = defaultdict(list)
    dated: dict[str, str] = {}
    written: dict[str, str] = {}
    if spec.issued_at_arrival_turn:
        written = {e.data["po_id"]: e.business_date
                   for e in read_log(ctx, "erp", ["purchase_order_issued"])}
    for po in _orders(ctx).values():
        found[(po.vendor_id, tuple((x.item, x.quantity, x.unit_price) for x in po.lines))].append(
            po.po_id)
        dated[po.po_id] = po.order_date.isoformat()
    bad = [f"requisition {req} ({key[0]}) has no purchase order with its lines"
           for key, req in sorted(wanted.items(), key=lambda kv: kv[1]) if key not in found]
    bad += [f"requisition {wanted[key]} issued {len(ids)} times ({', '.join(ids)})"
            for key, ids in sorted(found.items()) if key in wanted and len(ids) > 1]
    bad += [f"{', '.join(ids)} to {key[0]} matches no requisition (lines "
            + "; ".join(f"{i} {q} x {p / 100:.2f}" for i, q, p in key[1]) + ")"
            for key, ids in sorted(found.items()) if key not in wanted]
    bad += [f"{po_id} (requisition {wanted[key]}) is dated {dated[po_id]}, the requisition "
            f"arrived {arrived[wanted[key]]}"
            for key, ids in sorted(found.items()) if key in wanted for po_id in ids
            if dated[po_id] != arrived[wanted[key]]]
    if spec.issued_at_arrival_turn:
        # a requisition planted before a turn's moment of its day is that turn's
        moment = {r["requisition"]: r["arrived_at"] for r in reqs}
        bad += [late for key, ids in sorted(found.items()) if key in wanted for po_id in ids
                if po_id in written and (late := held_past_its_turn(
                    f"requisition {wanted[key]} ({po_id})",
                    date.fromisoformat(arrived[wanted[key]]),
                    date.fromisoformat(written[po_id]), ctx.turn_dates, "issued",
                    before_turn=moment[wanted[key]] is None
                    or moment[wanted[key]] % 1.0 < float(Phase.TURN))) is not None]
    metrics = {"requisitions": len(wanted), "purchase_orders": sum(map(len, found.values()))}
    if not wanted:
        return CheckResult("", False, "the run planted no requisitions (nothing to compare)",
                           metrics)
    if bad:
        return CheckResult("", False, listing(bad), metrics)
    return CheckResult("", True, f"{plural(len(wanted), 'requisition')} issued as purchase "
                                 "orders line for line, on the day each arrived", metrics)


class ReceiptsAsShipped(_PurchasingSpec):
    """Per PO line, the books' goods received equal what the vendor shipped by the end
    (or ``as_of``), shipment by shipment: what arrived on a day is received dated that day
    (the receiving report's date), so every goods receipt is dated on a day its PO had a
    shipment and holds that shipment's quantities, recorded at the latest at the first of
    the agent's turns after that day (a receipt caught up later and dated back fails)."""

    type: Literal["receipts_as_shipped"]


@check_type(ReceiptsAsShipped)
def receipts_as_shipped(spec: ReceiptsAsShipped, ctx: CheckContext) -> CheckResult:
    """Compare goods receipts with the vendors' shipments, line by line."""
    shipped: dict[tuple[str, int], int] = defaultdict(int)
    ship_days: dict[str, set[str]] = defaultdict(set)
    by_day: dict[tuple[str, str, int], int] = defaultdict(int)
    shipped_at: dict[tuple[str, str], float] = {}
    for e in read_log(ctx, "world", ["goods_shipped"]):
        d = e.data
        ship_days[d["po_id"]].add(d["shipped_on"])
        if e.sim_time is not None:
            shipped_at[(d["po_id"], d["shipped_on"])] = e.sim_time
        for x in d["lines"]:
            shipped[(d["po_id"], int(x["line"]))] += int(x["quantity"])
            by_day[(d["po_id"], d["shipped_on"], int(x["line"]))] += int(x["quantity"])
    received: dict[tuple[str, int], int] = defaultdict(int)
    got_by_day: dict[tuple[str, str, int], int] = defaultdict(int)
    bad: list[str] = []
    for e in read_log(ctx, "erp", ["goods_received"]):
        g: ev.GoodsReceived = e.decoded()
        # recorded at the first turn after the goods arrived (its report then in the inbox),
        # not caught up at a later one and dated back
        due = _first_turn_after(ctx, g.entry_date, shipped_at.get((g.po_id,
                                                                   g.entry_date.isoformat())))
        if due is not None and e.business_date > due.isoformat():
            bad.append(f"{g.receipt_id} of {g.po_id} (goods of {g.entry_date.isoformat()}) "
                       f"was recorded on {e.business_date}, after the turn of "
                       f"{due.isoformat()} that had its report")
        if g.entry_date.isoformat() not in ship_days.get(g.po_id, set()):
            bad.append(f"{g.receipt_id} of {g.po_id} is dated {g.entry_date.isoformat()}, no "
                       "day its vendor shipped (" + (", ".join(sorted(ship_days.get(
                           g.po_id, set()))) or "nothing shipped") + ")")
        for x in g.lines:
            received[(g.po_id, x.line)] += x.quantity
            got_by_day[(g.po_id, g.entry_date.isoformat(), x.line)] += x.quantity
    for key in sorted(set(shipped) | set(received)):
        if shipped.get(key, 0) != received.get(key, 0):
            bad.append(f"{key[0]} line {key[1]}: shipped {shipped.get(key, 0)}, received in "
                       f"the books {received.get(key, 0)}")
    for po, day, line in sorted(set(by_day) | set(got_by_day)):
        want, got = by_day.get((po, day, line), 0), got_by_day.get((po, day, line), 0)
        if want != got and day in ship_days.get(po, set()) and shipped.get(
                (po, line), 0) == received.get((po, line), 0):
            bad.append(f"{po} line {line}: {want} arrived on {day}, received dated that day "
                       f"in the books {got}")
    metrics = {"po_lines_shipped": len(shipped), "wrong": len(bad)}
    if bad:
        return CheckResult("", False, listing(bad), metrics)
    return CheckResult("", True, f"{plural(len(shipped), 'PO line')} received as shipped",
                       metrics)


def _first_turn_after(ctx: CheckContext, day: date, moment: float | None) -> date | None:
    """The first of the agent's turns that came after ``moment`` (a world event's sim time)
    of ``day``: the turn of that day when the event came before the day's turn moment
    (:attr:`Phase.TURN`), else the next turn's date. Whether the agent wrote anything at
    that turn does not matter: a turn that did nothing still had the document."""
    if moment is not None and day in ctx.turn_dates and moment % 1.0 < float(Phase.TURN):
        return day
    return min((t for t in ctx.turn_dates if t > day), default=None)


class HoldsAsMatched(_PurchasingSpec):
    """Every vendor invoice against a PO is a matched bill of that PO, on hold at the end
    exactly when it bills a unit above the PO price beyond ``price_tolerance_bp``, or more
    of a line than the vendor shipped by the end beyond ``quantity_tolerance_bp``; with
    ``release_names_receipt``, each release names the goods receipt that cleared it."""

    type: Literal["holds_as_matched"]
    price_tolerance_bp: int = Field(ge=0, le=10_000)
    quantity_tolerance_bp: int = Field(ge=0, le=10_000)
    release_names_receipt: bool = False
    """When set, every release's reason names a goods receipt of the bill's PO: its id, its
    reference, or the number of a receiving report of that PO the company was sent (what
    the books call a goods receipt, recorded without its number as reference)."""


def report_numbers(content: str) -> set[str]:
    """The report numbers (column ``report``, casefolded) of a receiving report's CSV."""
    try:
        return {str(r.get("report") or "").strip().casefold()
                for r in csv.DictReader(io.StringIO(content))} - {""}
    except csv.Error:
        return set()


def _beyond(actual: int, allowed: int, bp: int) -> bool:
    return actual * 10_000 > allowed * (10_000 + bp)


@check_type(HoldsAsMatched)
def holds_as_matched(spec: HoldsAsMatched, ctx: CheckContext) -> CheckResult:
    """Recompute each invoice's three-way match from the world and compare its hold."""
    prices = {(r["vendor_id"], int(x[0])): int(x[4]) for r in _requisitions(ctx)
              for x in r["lines"]}
    po_of: dict[tuple[str, str], str] = {}
    receipts: dict[str, set[str]] = defaultdict(set)
    for e in read_log(ctx, "world", ["document_delivered"]):
        t = e.data.get("truth", {})
        if "po_id" in t and "invoice_number" in t:
            po_of[(t["vendor_id"], document_number_key(t["invoice_number"]))] = t["po_id"]
        elif t.get("kind") == "receiving_report" and "po_id" in t and spec.release_names_receipt:
            receipts[t["po_id"]] |= report_numbers(str(e.data.get("content") or ""))
    shipped: dict[tuple[str, int], int] = defaultdict(int)
    for e in read_log(ctx, "world", ["goods_shipped"]):
        for x in e.data["lines"]:
            shipped[(e.data["po_id"], int(x["line"]))] += int(x["quantity"])
    entered: dict[tuple[str, str], str] = {}
    for e in read_log(ctx, "erp", ["bill_entered"]):
        entered[(e.data["vendor_id"], document_number_key(e.data["vendor_invoice_number"]))] = (
            e.data["bill_id"])
    matched: dict[str, str] = {}
    for e in read_log(ctx, "erp", ["bill_matched"]):
        matched[e.data["bill_id"]] = e.data["po_id"]
    held: set[str] = set()
    bad: list[str] = []
    for e in read_log(ctx, "erp", ["goods_received"]):
        receipts[e.data["po_id"]] |= {str(e.data["receipt_id"]).casefold(),
                                      str(e.data.get("reference") or "").casefold()} - {""}
    for e in read_log(ctx, "erp", ["bill_held", "bill_hold_released"]):
        (held.add if e.type == "bill_held" else held.discard)(e.data["bill_id"])
        if e.type == "bill_hold_released" and spec.release_names_receipt:
            of = matched.get(e.data["bill_id"], "")
            said = str(e.data["reason"]).casefold()
            if not any(r in said for r in receipts.get(of, set())):
                bad.append(f"the release of {e.data['bill_id']} ({e.data['reason']!r}) names "
                           f"no goods receipt of {of or 'its PO'}")
    judged = 0
    for e in read_log(ctx, "world", ["bill_issued"]):
        d = e.data
        key = (d["vendor_id"], document_number_key(d["invoice_number"]))
        po = po_of.get(key)
        if po is None:
            continue
        judged += 1
        bill = entered.get(key)
        if bill is None:
            bad.append(f"{d['vendor_id']} invoice {d['invoice_number']} is not in the books")
            continue
        if matched.get(bill) != po:
            bad.append(f"{bill} ({d['vendor_id']} invoice {d['invoice_number']}) is not "
                       f"matched to {po}" + (f" (matched to {matched[bill]})"
                                             if bill in matched else ""))
            continue
        why = []
        for n, x in enumerate(d["lines"], start=1):
            po_price = prices.get((d["vendor_id"], n), int(x["unit_price"]))
            if _beyond(int(x["unit_price"]), po_price, spec.price_tolerance_bp):
                why.append(f"line {n} billed at {int(x['unit_price']) / 100:.2f}, PO price "
                           f"{po_price / 100:.2f}")
            if _beyond(int(x["quantity"]), shipped.get((po, n), 0), spec.quantity_tolerance_bp):
                why.append(f"line {n} billed {x['quantity']}, shipped {shipped.get((po, n), 0)}")
        should = bool(why)
        if should and bill not in held:
            bad.append(f"{bill} ({d['vendor_id']} invoice {d['invoice_number']}) is not on hold "
                       f"but should be: {'; '.join(why)}")
        elif not should and bill in held:
            bad.append(f"{bill} ({d['vendor_id']} invoice {d['invoice_number']}) is on hold but "
                       "matches its PO and what was shipped (release it)")
    metrics = {"invoices": judged, "on_hold": len(held), "wrong": len(bad)}
    if bad:
        return CheckResult("", False, listing(bad), metrics)
    return CheckResult("", True, f"{plural(judged, 'PO invoice')} matched, "
                                 f"{plural(len(held), 'bill')} on hold as the match says",
                       metrics)


class HoldsListed(_PurchasingSpec):
    """The holds file (``path``: columns ``column`` and ``vendor_column``) lists exactly
    the bills on hold in the books at the end, one row each, each under its vendor (its id
    or the books' name for it), with the hold's reason when ``reason_column`` is set; a
    bill is named by its id or its vendor invoice number."""

    family: ClassVar[str] = "files"
    type: Literal["holds_listed"]
    path: str = Field(min_length=1)
    column: str = Field(default="bill", min_length=1)
    vendor_column: str = Field(default="vendor", min_length=1)
    reason_column: str | None = None
    """When set, each row's reason names the hold: ``price`` for a bill held for a price
    above tolerance, else ``quantity``, ``received`` or ``short`` for one billed beyond
    what was received."""


@check_type(HoldsListed)
def holds_listed(spec: HoldsListed, ctx: CheckContext) -> CheckResult:
    """Compare the file's rows with the books' standing holds."""
    held: dict[str, str] = {}
    codes: dict[str, set[str]] = {}
    for e in read_log(ctx, "erp", ["bill_held", "bill_hold_released"]):
        if e.type == "bill_held":
            held[e.data["bill_id"]] = e.data["vendor_id"]
            codes[e.data["bill_id"]] = {str(r["code"]) for r in e.data.get("reasons", [])}
        else:
            held.pop(e.data["bill_id"], None)
    names: dict[str, str] = {}
    numbers: dict[str, str] = {}
    for e in read_log(ctx, "erp", ["vendor_registered", "bill_entered"]):
        if e.type == "vendor_registered":
            names[e.data["vendor_id"]] = e.data["name"]
        else:
            numbers[document_number_key(e.data["vendor_invoice_number"])] = e.data["bill_id"]
    try:
        table = agent_csv(ctx, spec.path)
    except Unusable as err:
        return CheckResult("", False, str(err), {})
    idx, missing, _ = table.locate([spec.column, spec.vendor_column]
                                   + ([spec.reason_column] if spec.reason_column else []))
    if missing:
        return CheckResult("", False, f"{spec.path} has no column {', '.join(missing)} "
                                      f"(columns: {', '.join(table.header)})", {})
    bad: list[str] = []
    listed: dict[str, int] = defaultdict(int)
    for n, row in enumerate(table.rows, start=2):
        cell = row[idx[spec.column]].strip()
        bill = cell if cell in held else numbers.get(document_number_key(cell), cell)
        vendor = row[idx[spec.vendor_column]].strip()
        if bill not in held:
            bad.append(f"row {n}: {cell!r} is not a bill on hold")
            continue
        listed[bill] += 1
        v = held[bill]
        if vendor.casefold() not in (v.casefold(), names.get(v, v).casefold()):
            bad.append(f"row {n}: {cell} is {v}'s ({names.get(v, v)}), not {vendor!r}'s")
        if spec.reason_column:
            why = row[idx[spec.reason_column]].casefold()
            words = (("price",) if "price" in codes.get(bill, set())
                     else ("quantity", "received", "short"))
            if not any(w in why for w in words):
                bad.append(f"row {n}: {cell}'s reason {row[idx[spec.reason_column]]!r} does not "
                           f"say it is held for {' or '.join(words)}")
    bad += [f"{b} listed {k} times" for b, k in sorted(listed.items()) if k > 1]
    bad += [f"{b} ({held[b]}) is on hold and not listed" for b in sorted(held) if b not in listed]
    metrics = {"on_hold": len(held), "rows": len(table.rows)}
    if bad:
        return CheckResult("", False, listing(bad), metrics)
    return CheckResult("", True, f"{plural(len(held), 'bill')} on hold, each listed once",
                       metrics)


class POBillsAsInvoiced(_PurchasingSpec):
    """Every vendor invoice against a PO is entered as the vendor invoiced it: dated as
    issued, due as invoiced, each billed line (its PO line, quantity and unit price) as
    billed, at the first of the agent's turns after it arrived (not held to a later turn
    and dated back), and approved in the turn it was entered. Whether it is entered at
    all, once, matched to its PO, is ``holds_as_matched``'s and ``books_match_world``'s."""

    type: Literal["po_bills_as_invoiced"]


@check_type(POBillsAsInvoiced)
def po_bills_as_invoiced(spec: POBillsAsInvoiced, ctx: CheckContext) -> CheckResult:
    """Compare each entered PO bill with the vendor's invoice."""
    arrived: dict[tuple[str, str], tuple[date, float | None]] = {}
    for e in read_log(ctx, "world", ["document_delivered"]):
        t = e.data.get("truth", {})
        if "po_id" in t and "invoice_number" in t:
            key = (t["vendor_id"], document_number_key(t["invoice_number"]))
            arrived.setdefault(key, (date.fromisoformat(e.business_date), e.sim_time))
    entered: dict[tuple[str, str], tuple[ev.BillEntered, str]] = {}
    for e in read_log(ctx, "erp", ["bill_entered"]):
        b: ev.BillEntered = e.decoded()
        entered.setdefault((b.vendor_id, document_number_key(b.vendor_invoice_number)),
                           (b, e.business_date))
    approved: dict[str, str] = {}
    for e in read_log(ctx, "erp", ["bill_approved"]):
        approved.setdefault(e.data["bill_id"], e.business_date)
    lines: dict[str, tuple[tuple[int, int, int], ...]] = {}
    for e in read_log(ctx, "erp", ["bill_matched"]):
        m: ev.BillMatched = e.decoded()
        lines[m.bill_id] = tuple((x.line, x.quantity, x.unit_price) for x in m.lines)
    bad: list[str] = []
    judged = 0
    for e in read_log(ctx, "world", ["bill_issued"]):
        d = e.data
        key = (d["vendor_id"], document_number_key(d["invoice_number"]))
        if key not in arrived or key not in entered:
            continue   # not a PO invoice, or not entered (holds_as_matched says so)
        judged += 1
        bill, made = entered[key]
        name = f"{bill.bill_id} ({d['vendor_id']} invoice {d['invoice_number']})"
        bad += bill_not_as_invoiced(name, bill.entry_date.isoformat(),
                                    bill.due_on.isoformat(), d)
        want = tuple((n, int(x["quantity"]), int(x["unit_price"]))
                     for n, x in enumerate(d["lines"], start=1))
        got = lines.get(bill.bill_id)
        if got is not None and sorted(got) != sorted(want):
            bad.append(f"{name} bills " + "; ".join(f"line {n} {k} x {p / 100:.2f}"
                                                    for n, k, p in sorted(got))
                       + ", the invoice " + "; ".join(f"line {n} {k} x {p / 100:.2f}"
                                                      for n, k, p in want))
        if approved.get(bill.bill_id, made) != made:
            bad.append(f"{name} was entered in the turn of {made} and approved in the turn "
                       f"of {approved[bill.bill_id]}")
        day, moment = arrived[key]
        due = _first_turn_after(ctx, day, moment)
        if due is not None and made > due.isoformat():
            bad.append(f"{name} arrived {day.isoformat()} and was entered in the turn of "
                       f"{made}, not the turn of {due.isoformat()}")
    metrics = {"invoices": judged, "wrong": len(bad)}
    if bad:
        return CheckResult("", False, listing(bad), metrics)
    return CheckResult("", True, f"{plural(judged, 'PO invoice')} entered as invoiced, each "
                                 "at the turn after it arrived", metrics)


class PaymentsInOneRun(_PurchasingSpec):
    """Every vendor payment of the agent is one of a payment run, and every payment run is
    made at a turn of ``role`` (the payment day's), dated that day, from
    ``bank_account`` (how many runs there are is ``event_present``'s)."""

    type: Literal["payments_in_one_run"]
    role: str = Field(default="controller", min_length=1)
    bank_account: str = Field(min_length=1)


@check_type(PaymentsInOneRun)
def payments_in_one_run(spec: PaymentsInOneRun, ctx: CheckContext) -> CheckResult:
    """List payments outside a run, and runs made or dated off the payment day."""
    bad: list[str] = []
    runs = payments = 0
    for e in read_log(ctx, "erp", ["payment_run_created", "vendor_paid"]):
        if not e.actor.startswith("agent:"):
            continue
        x = e.decoded()
        if isinstance(x, ev.VendorPaid):
            payments += 1
            if x.run_id is None:
                bad.append(f"{x.payment_id} to {x.vendor_id} ({x.amount / 100:,.2f}, turn of "
                           f"{e.business_date}) is paid outside a payment run")
        elif isinstance(x, ev.PaymentRunCreated):
            runs += 1
            role = ctx.turn_roles.get(e.actor, "clerk")
            if role != spec.role:
                bad.append(f"{x.run_id} was made in the turn of {e.business_date} as the "
                           f"{role}, not the {spec.role}'s payment day")
            if x.entry_date.isoformat() != e.business_date:
                bad.append(f"{x.run_id} made in the turn of {e.business_date} is dated "
                           f"{x.entry_date.isoformat()}")
            if x.bank_account_id != spec.bank_account:
                bad.append(f"{x.run_id} pays from {x.bank_account_id}, not "
                           f"{spec.bank_account}")
    metrics = {"runs": runs, "payments": payments, "wrong": len(bad)}
    if bad:
        return CheckResult("", False, listing(bad), metrics)
    return CheckResult("", True, f"{plural(payments, 'payment')}, each of a run made and "
                                 f"dated on the {spec.role}'s payment day", metrics)


class PurchasingWrites(_PurchasingSpec):
    """The agent writes only events of the ``allowed`` types (the books' events of the
    work the prompt asks for): no journal entry, vendor credit or other document."""

    family: ClassVar[str] = "audit"
    type: Literal["purchasing_writes"]
    allowed: list[str] = Field(min_length=1)


@check_type(PurchasingWrites)
def purchasing_writes(spec: PurchasingWrites, ctx: CheckContext) -> CheckResult:
    """List the agent's writes of types outside ``allowed``."""
    other: dict[str, list[str]] = defaultdict(list)
    writes = 0
    for e in read_log(ctx, "erp", None, payload=False):
        if not e.actor.startswith("agent:"):
            continue
        writes += 1
        if e.type not in spec.allowed:
            other[e.type].append(f"{e.stream} on {e.business_date}")
    bad = [f"{plural(len(where), t.replace('_', ' '))} (" + ", ".join(where[:3])
           + (", ..." if len(where) > 3 else "") + ")" for t, where in sorted(other.items())]
    metrics = {"writes": writes, "other": sum(map(len, other.values()))}
    if bad:
        return CheckResult("", False, "writes the work asks for none of: " + "; ".join(bad),
                           metrics)
    return CheckResult("", True, f"{plural(writes, 'write')}, each of the work asked for",
                       metrics)


__all__ = [
    "HoldsAsMatched",
    "HoldsListed",
    "POBillsAsInvoiced",
    "PaymentsInOneRun",
    "PurchaseOrdersAsRequisitioned",
    "PurchasingWrites",
    "ReceiptsAsShipped",
    "holds_as_matched",
    "holds_listed",
    "payments_in_one_run",
    "po_bills_as_invoiced",
    "purchase_orders_as_requisitioned",
    "purchasing_writes",
    "receipts_as_shipped",
]
