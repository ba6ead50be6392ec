"""payment-run: the reference solver (the inbox and the books) and the oracle (the truth).

Both do the clerk's run day: enter every vendor invoice issued so far once, dated as
invoiced, with its due date and its early-payment discount terms, and approve it; then
plan the run with CP-SAT (:func:`checks.payment_run.solve`: the priority bills first,
then the most discounts captured less late fees incurred, then the least cash) within
the cash above the floor, and pay the plan: a bill with a live discount with
``PayBillWithDiscount``, the others in one ``RunPayments``.

The reference reads only what an external agent sees: the invoices in ``inbox/`` (the
terms as each vendor words them: ``2/10 net 30 - deduct USD ...``, ``Early payment
discount: 2% (USD ...)``, ``Discount available until ...``; the late fee and the service
warning likewise) and the books (vendors, bills, the bank balance, the cash policy). A
discount whose date has passed is noted as declined (the books would refuse it). The
oracle reads the world's truth: the bills the vendors issued with their terms.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from checks.payment_run import RunBill, RunInstance, payment_run_bills, solve
from erp import commands as c
from erp import queries as q
from erp.books import document_number_key
from erp.errors import CommandRejected
from erp.events import BillEntered
from erp.money import display_cents, parse_cents
from scenarios.turn import TurnContext
from sim.world import World
from sim.world_events import BillIssued, decode_world_event

OPERATING_ACCOUNT = "B-OPER"
"""The company's operating bank account (the prompt's "operating account")."""

NEXT_RUN = date(2026, 6, 24)
"""The next payment run (the prompt states it)."""


@dataclass(frozen=True)
class _Line:
    """A billed line: what, how many, at which unit price (cents)."""

    description: str
    quantity: int
    unit_price: int


@dataclass(frozen=True)
class Invoice:
    """A vendor invoice as read (or as the truth gives it), with its terms."""

    vendor_id: str
    bill: RunBill
    issued_on: date
    lines: tuple[_Line, ...]


# --- shared: the clerk's hands on the books ----------------------------------------------


def enter(desk: TurnContext, inv: Invoice, entered: dict[tuple[str, str], str]) -> str | None:
    """Enter and approve an invoice once (with its discount terms); its bill id."""
    b = inv.bill
    bill_id = entered.get(b.key)
    if bill_id is None:
        done = desk.execute(c.EnterBill(
            vendor_id=inv.vendor_id, vendor_invoice_number=b.number, entry_date=inv.issued_on,
            due_on=b.due_on, discount=b.discount, discount_until=b.discount_until,
            lines=tuple(c.BillLineIn(
                description=f"{x.description} ({x.quantity} x {display_cents(x.unit_price)})",
                amount=x.quantity * x.unit_price) for x in inv.lines)))
        if isinstance(done, CommandRejected):
            return None
        bill_id = next(e.event.bill_id for e in done if isinstance(e.event, BillEntered))
        entered[b.key] = bill_id
    if not desk.ledger.books.bills[bill_id].approved:
        desk.execute(c.ApproveBill(bill_id=bill_id))
    return bill_id


def books_bills(desk: TurnContext) -> dict[tuple[str, str], str]:
    """The books' bills by ``(vendor, number key)``."""
    return {(d["party"], document_number_key(d["reference"])): d["doc_id"]
            for d in q.documents(desk.store, kind="bill")}


def available_cash(desk: TurnContext) -> int:
    """The operating account's book balance above the cash policy's minimum."""
    books = desk.ledger.books
    floor = books.policies.minimum_bank_balance or 0
    return books.bank_accounts[OPERATING_ACCOUNT].balance - floor


def pay_plan(desk: TurnContext, invoices: Sequence[Invoice],
             entered: dict[tuple[str, str], str]) -> None:
    """Solve the run over the invoices and pay the optimum (once a day)."""
    if any(d["doc_date"] == desk.day.isoformat() and d["status"] == "paid"
           for d in q.documents(desk.store, kind="payment")):
        return
    instance = RunInstance(desk.day, NEXT_RUN, available_cash(desk),
                           tuple(inv.bill for inv in invoices if inv.bill.key in entered))
    plan = solve(instance)
    in_full: list[str] = []
    for b in instance.sorted_bills():
        bill_id = entered[b.key]
        if b.key not in plan.pay:
            if b.discount and not instance.live_discount(b) and instance.worth_paying(b):
                desk.decline(c.PayBillWithDiscount(
                    bill_id=bill_id, bank_account_id=OPERATING_ACCOUNT, entry_date=desk.day,
                    discount=b.discount), f"bill {bill_id}: discount lost on {b.discount_until}")
            continue
        if instance.live_discount(b):
            desk.execute(c.PayBillWithDiscount(bill_id=bill_id,
                                               bank_account_id=OPERATING_ACCOUNT,
                                               entry_date=desk.day, discount=b.discount))
        else:
            if b.discount:  # lost: paid in full; claiming it would be refused
                desk.decline(c.PayBillWithDiscount(
                    bill_id=bill_id, bank_account_id=OPERATING_ACCOUNT, entry_date=desk.day,
                    discount=b.discount), f"bill {bill_id}: discount lost on {b.discount_until}")
            in_full.append(bill_id)
    if in_full:
        desk.execute(c.RunPayments(bank_account_id=OPERATING_ACCOUNT, entry_date=desk.day,
                                   bill_ids=tuple(in_full)))


# --- the reference: reading the invoices ---------------------------------------------------

_DOC_NUMBER = re.compile(r"^DOC-(\d+)-")
_LETTERHEAD = re.compile(r"^Phone\s+.+?\s+\|\s+\S+@\S+\s*$", re.M)
_ROW = re.compile(r"^(?P<desc>\S.*?)\s+(?P<qty>\d+)\s+(?P<unit>[\d,]+\.\d{2})\s+"
                  r"(?P<amount>[\d,]+\.\d{2})\s*$", re.M)
_TOTAL = re.compile(r"^\s*Total USD\s+(?P<total>[\d,]+\.\d{2})\s*$", re.M)
_USD = re.compile(r"USD\s+([\d,]+\.\d{2})")
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})")


def _field(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text, re.M)
    return m.group(1).strip() if m else None


def _terms(text: str) -> tuple[int, date | None, int, bool]:
    """The discount, its last day, the late fee and the service warning an invoice gives."""
    discount, until, fee = 0, None, 0
    for line in text.splitlines():
        low = line.casefold()
        amount = _USD.search(line)
        if "discount" in low or low.startswith("terms:"):
            day = _DAY.search(line)
            if amount and day:
                discount, until = parse_cents(amount.group(1)), date.fromisoformat(day.group(1))
        elif amount and ((("late" in low or "overdue" in low) and "fee" in low)
                         or "late payment" in low):
            fee = parse_cents(amount.group(1))
    return discount, until, fee, "suspended" in text.casefold()


def _read_invoice(text: str, vendors: dict[str, str]) -> Invoice | None:
    """An invoice's printed facts (None for anything else or a vendor not in the books)."""
    head = _LETTERHEAD.search(text)
    number = _field(r"^Invoice number:\s*(.+)$", text)
    issued = _field(r"^Invoice date:\s*(\d{4}-\d{2}-\d{2})", text)
    due = _field(r"^Due date:\s*(\d{4}-\d{2}-\d{2})", text)
    total = _TOTAL.search(text)
    if head is None or not (number and issued and due and total):
        return None
    name_lines = text[:head.start()].rstrip("\n").split("\n")
    vendor = vendors.get(name_lines[-3].strip().casefold()) if len(name_lines) >= 3 else None
    if vendor is None:
        return None
    lines = tuple(_Line(m["desc"].strip(), int(m["qty"]), parse_cents(m["unit"]))
                  for m in _ROW.finditer(text))
    amount = parse_cents(total["total"])
    if not lines or sum(x.quantity * x.unit_price for x in lines) != amount:
        return None
    discount, until, fee, critical = _terms(text)
    return Invoice(vendor, RunBill(vendor_id=vendor, number=number, total=amount,
                                   due_on=date.fromisoformat(due), discount=discount,
                                   discount_until=until, late_fee=fee, critical=critical),
                   date.fromisoformat(issued), lines)


def _arrival_order(path: Path) -> tuple[int, str]:
    """Sort key: the delivery number in the file name (``DOC-000123-...``), then the name."""
    m = _DOC_NUMBER.match(path.name)
    return (int(m.group(1)) if m else 10**9, path.name)


def reference(desk: TurnContext) -> None:
    """The run day, from the inbox, the archive and the books."""
    vendors = {v.name.casefold(): v.vendor_id
               for v in sorted(desk.ledger.books.vendors.values(), key=lambda v: v.vendor_id)}
    invoices: list[Invoice] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted([*desk.archive(), *desk.inbox()], key=_arrival_order):
        if path.suffix != ".txt":
            continue
        inv = _read_invoice(path.read_text(encoding="utf-8"), vendors)
        if inv is not None and inv.bill.key not in seen:
            seen.add(inv.bill.key)
            invoices.append(inv)
    entered = books_bills(desk)
    for inv in invoices:
        enter(desk, inv, entered)
    pay_plan(desk, invoices, entered)


# --- the oracle ------------------------------------------------------------------------------


def oracle(desk: TurnContext, world: World) -> None:
    """The run day from the truth: the vendors' bills and terms as issued."""
    store = world.ledger.store
    lines: dict[tuple[str, str], tuple[date, tuple[_Line, ...]]] = {}
    for e in store.read(realm="world", types=["bill_issued"]):
        w = decode_world_event(e.type, e.payload)
        if isinstance(w, BillIssued) and w.kind == "original":
            lines[(w.vendor_id, document_number_key(w.invoice_number))] = (
                w.issued_on, tuple(_Line(x.description, x.quantity, x.unit_price)
                                   for x in w.lines))
    invoices = [Invoice(b.vendor_id, b, *lines[b.key])
                for b in payment_run_bills(store, desk.day) if b.key in lines]
    entered = books_bills(desk)
    for inv in invoices:
        enter(desk, inv, entered)
    pay_plan(desk, invoices, entered)
