"""collections: the reference solver (the inbox and the books) and the oracle.

Both work a run the same way (:func:`_work`): apply the receipts, record the new disputes
and the sales manager's rulings, record the promises to pay, then the policy's own steps
read from the books: release the holds of customers with nothing undisputed overdue, hold
the customers with an undisputed invoice 61 or more days past due or a broken promise,
and send each overdue, undisputed invoice without a running promise the letter its days
past due call for when that level was not sent yet.

The reference reads only what an external agent sees: the receipts in the books (their
references as the customers wrote them: ``INV 12``, ``Inv#000012``, ``/INV/12``...), and
the emails of ``inbox/`` (a dispute in the customer's words, a promise with its date
written one of four ways, the sales manager's ruling; anything else asks for nothing).
The oracle reads the truth the world recorded: what each payment paid, and what each
email meant.
"""

from __future__ import annotations

import email
import email.policy
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from erp import commands as c
from erp.handlers import DUNNING_LEVEL_DAYS, overdue_invoices
from erp.money import parse_cents
from scenarios.turn import TurnContext

if TYPE_CHECKING:
    from sim.world import World

HOLD_DAYS = 61
SALES_MANAGER = "sales.manager@"


@dataclass
class _Plan:
    """What a run records besides the policy's own steps."""

    receipts: list[tuple[str, str, list[tuple[str, int]]]] = field(default_factory=list)
    """(receipt, customer, [(invoice, amount), ...])."""
    disputes: list[tuple[str, int | None, str]] = field(default_factory=list)
    rulings: list[tuple[str, str, int]] = field(default_factory=list)
    promises: list[tuple[str, int, date]] = field(default_factory=list)


def _level(days: int) -> int:
    return max((lv for lv, d in DUNNING_LEVEL_DAYS.items() if days >= d), default=0)


def _work(desk: TurnContext, plan: _Plan) -> None:
    """Work one run: the plan's records, then holds and letters from the books."""
    books = desk.ledger.books
    for rid, cust, allocs in plan.receipts:
        if books.receipts[rid].customer_id is None:
            desk.execute(c.AssignReceiptCustomer(receipt_id=rid, customer_id=cust))
        for iid, amount in allocs:
            if amount > 0:
                desk.execute(c.ApplyReceipt(receipt_id=rid, invoice_id=iid, amount=amount))
    for iid, disputed, reason in plan.disputes:
        desk.execute(c.RecordDispute(invoice_id=iid, reason=reason[:500] or "disputed",
                                     amount=disputed))
    coll = books.collections
    for iid, outcome, amount in plan.rulings:
        did = coll.open_disputes.get(iid)
        if did is None:
            continue
        if outcome == "credited":
            desk.execute(c.ResolveDispute(dispute_id=did, resolution="credit_memo",
                                          amount=amount, reason="credit per the sales manager"))
        else:
            desk.execute(c.ResolveDispute(dispute_id=did, resolution="rejected",
                                          reason="rejected by the sales manager"))
    for iid, amount, pay_by in plan.promises:
        if books.invoices[iid].open > 0:
            desk.execute(c.RecordPromiseToPay(invoice_id=iid, amount=amount, pay_by=pay_by,
                                              note="promised by email"))
    day = desk.day
    for cust in sorted(coll.on_hold):
        if not overdue_invoices(books, cust, day):
            desk.execute(c.ReleaseCreditHold(customer_id=cust, reason="nothing overdue"))
    for cust in sorted(books.customers):
        if cust in coll.on_hold:
            continue
        late = [i for i in overdue_invoices(books, cust, day)
                if (day - i.due_on).days >= HOLD_DAYS]
        broken = []
        for inv in books.invoices.values():
            pid = coll.last_promise.get(inv.invoice_id)
            if inv.customer_id != cust or pid is None or inv.open <= 0:
                continue
            p = coll.promises[pid]
            if p.pay_by < day and inv.open > p.balance - p.amount:
                broken.append(inv.invoice_id)
        if late or broken:
            why = (f"{late[0].invoice_id} {(day - late[0].due_on).days} days past due" if late
                   else f"promise on {broken[0]} broken")
            desk.execute(c.PlaceCreditHold(customer_id=cust, reason=why))
    for inv in sorted(books.invoices.values(), key=lambda i: i.invoice_id):
        days = (day - inv.due_on).days
        if (inv.open <= 0 or days < 1 or inv.invoice_id in coll.open_disputes
                or coll.promise_pending(inv, day) is not None):
            continue
        level = _level(days)
        if level > coll.levels.get(inv.invoice_id, 0):
            desk.execute(c.SendDunningLetter(invoice_id=inv.invoice_id, level=level))


# --- the reference: reading the books and the inbox -------------------------------------------

_MONEY = r"(\d{1,3}(?:,\d{3})*\.\d{2})"
_MONTHS = {m: n for n, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"), start=1)}


def _invoice_refs(text: str, known: set[str]) -> list[str]:
    """The invoices a reference names, in order (its digit groups as invoice numbers)."""
    out = []
    for digits in re.findall(r"\d+", text):
        iid = f"INV-{int(digits):06d}"
        if iid in known and iid not in out:
            out.append(iid)
    return out


def _when(text: str, year: int) -> date | None:
    """A date written ``2026-06-12``, ``12 June 2026``, ``Friday, June 12`` or
    ``06/12/2026``."""
    m = re.search(r"(\d{4})-(\d{2})-(\d{2})", text)
    if m:
        return date(int(m[1]), int(m[2]), int(m[3]))
    m = re.search(r"(\d{2})/(\d{2})/(\d{4})", text)
    if m:
        return date(int(m[3]), int(m[1]), int(m[2]))
    for m in re.finditer(r"(\d{1,2}) ([A-Za-z]+) (\d{4})", text):
        if m[2].casefold() in _MONTHS:
            return date(int(m[3]), _MONTHS[m[2].casefold()], int(m[1]))
    for m in re.finditer(r"([A-Za-z]+) (\d{1,2})\b", text):
        if m[1].casefold() in _MONTHS:
            return date(year, _MONTHS[m[1].casefold()], int(m[2]))
    return None


def _email(path: Path) -> tuple[str, str, str] | None:
    """(sender, subject, plain body) of an ``.eml`` file."""
    if path.suffix != ".eml":
        return None
    msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    body = msg.get_body(preferencelist=("plain",))
    if body is None:
        return None
    return str(msg["From"] or ""), str(msg["Subject"] or ""), str(body.get_content())


def _read_email(path: Path, known: set[str], plan: _Plan, year: int) -> None:
    """Add what an email asks the desk to record to the plan (nothing for the rest)."""
    found = _email(path)
    if found is None:
        return
    sender, subject, body = found
    if SALES_MANAGER in sender:
        refs = re.findall(r"INV-\d{6}", subject + " " + body)
        if not refs or refs[0] not in known:
            return
        m = re.search(rf"credit of {_MONEY}", body)
        if m:
            plan.rulings.append((refs[0], "credited", parse_cents(m[1].replace(",", ""))))
        elif "rejected" in body:
            plan.rulings.append((refs[0], "rejected", 0))
        return
    head = subject.casefold()
    refs = _invoice_refs(subject, known)
    if not refs:
        return
    money = re.findall(_MONEY, body)
    if "disput" in head:
        part = re.search(_MONEY + " of it", body)
        amount = parse_cents(part[1].replace(",", "")) if part else None
        # the customer's reason: the clause after the reference (the reference as the
        # subject writes it taken out first: ``INV.42`` or ``inv: 42`` would cut it short)
        m = re.search(r"invoice (.+?)(?: - we dispute it)?$", subject.strip(), re.I)
        text = body.replace(m[1], "REF") if m else body
        words = [x.strip() for x in re.split(r"[:.]|, ", text, maxsplit=3)[1:2]]
        plan.disputes.append((refs[0], amount, words[0] if words else "disputed by email"))
        return
    when = _when(body, year)
    if money and when is not None and re.search(r"\bby\b|no later than|payment run", body):
        plan.promises.append((refs[0], parse_cents(money[0].replace(",", "")), when))


def _receipt_reference(desk: TurnContext, rid: str) -> str:
    for e in desk.store.read(stream=f"receipt:{rid}", types=["receipt_recorded"]):
        return str(orjson.loads(e.payload).get("reference", ""))
    return ""


def reference(desk: TurnContext) -> None:
    """Work today's run from the books and the inbox."""
    books = desk.ledger.books
    known = set(books.invoices)
    plan = _Plan()
    for rid, r in sorted(books.receipts.items()):
        if r.unapplied <= 0:
            continue
        refs = _invoice_refs(_receipt_reference(desk, rid), known)
        if not refs:
            continue
        cust = r.customer_id or books.invoices[refs[0]].customer_id
        left, allocs = r.unapplied, []
        for iid in refs:
            inv = books.invoices[iid]
            if inv.customer_id != cust:
                continue
            take = min(left, inv.open)
            allocs.append((iid, take))
            left -= take
        plan.receipts.append((rid, cust, allocs))
    for path in desk.inbox():
        _read_email(path, known, plan, desk.day.year)
    _work(desk, plan)


# --- the oracle --------------------------------------------------------------------------------


def oracle(desk: TurnContext, world: World) -> None:
    """Work today's run from the truth: what each payment paid, what each email meant."""
    books = desk.ledger.books
    coll = books.collections
    plan = _Plan()
    payments: dict[str, tuple[str, list[tuple[str, int]]]] = {}
    recorded = {(p.invoice_id, p.pay_by) for p in coll.promises.values()}
    disputed = {d.invoice_id for d in coll.disputes.values()}
    for e in world.ledger.store.read(realm="world", types=[
            "payment_sent", "bank_line_posted", "document_delivered"]):
        data = orjson.loads(e.payload)
        if e.type == "payment_sent":
            payments[data["payment_id"]] = (data["customer_id"], [
                (a["doc_id"], a["amount"]) for a in data["allocations"]])
        elif e.type == "bank_line_posted" and data.get("source") in payments:
            rid = f"RCT-{data['line_id']}"
            r = books.receipts.get(rid)
            if r is not None and r.unapplied > 0:
                cust, allocs = payments[data["source"]]
                plan.receipts.append((rid, cust, allocs))
        elif e.type == "document_delivered" and date.fromisoformat(
                str(e.business_date)) <= desk.day:
            t = data.get("truth") or {}
            what, iid = t.get("collections"), t.get("invoice_id", "")
            if what == "dispute" and iid not in disputed:
                whole = t["amount"] == books.invoices[iid].open
                plan.disputes.append((iid, None if whole else t["amount"], t["reason"]))
            elif what == "resolution" and iid in coll.open_disputes:
                plan.rulings.append((iid, t["outcome"], t["amount"]))
            elif what == "promise" and (iid, date.fromisoformat(t["pay_by"])) not in recorded:
                plan.promises.append((iid, t["amount"], date.fromisoformat(t["pay_by"])))
    _work(desk, plan)
