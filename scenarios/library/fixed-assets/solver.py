"""fixed-assets: the reference solver (the inbox and the books) and the oracle.

Both close last month the same way (:func:`_close`): enter every bill not yet in the books
(one line per invoice line: work on the register's assets on 6050, everything else on
6060), capitalize from each bill what the policy capitalizes (an item whose cost per unit,
its delivery and installation included, is the threshold or more, one asset per line in
its class; an upgrade in the class of the asset it improves), dated the invoice date,
with the class's life and the date placed in service; take the asset sold last month off
the register on the day of the sale (the price on 1250, the gain or loss on 4800); then
run last month's depreciation.

The reference reads only what an external agent sees: the written policy, the bills in
``inbox/`` and ``inbox/archive/`` (text, PDF read with pypdf, or inside an email), the
sale's email, quotations it leaves alone, and the books (vendors, bills, the register's
assets and the descriptions they were capitalized with). The oracle reads the truth the
world recorded: the policy, the bills with the assets due, the sale.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from erp import commands as c
from erp import queries as q
from erp.books import document_number_key
from erp.errors import CommandRejected
from erp.events import BillEntered
from erp.money import parse_cents
from scenarios.turn import TurnContext
from sim.world import World

SMALL = "6060"
REPAIRS = "6050"
_WORK = re.compile(r"^(repair|service call|maintenance|upgrade|improvement|retrofit)\b", re.I)
_UPGRADE = re.compile(r"^(upgrade|improvement|retrofit)\b", re.I)
_INSTALL = re.compile(r"^delivery and installation, item (\d+)", re.I)
_DAY = r"(\d{4}-\d{2}-\d{2})"
_MONEY = r"([\d,]+\.\d{2})"


@dataclass(frozen=True)
class _Class:
    """A class of the policy: its id, life and the words that name its items."""

    class_id: str
    life_months: int
    words: tuple[str, ...]


@dataclass
class _Policy:
    """The written policy as read."""

    threshold: int = 0
    classes: dict[str, _Class] = field(default_factory=dict)
    proceeds_account: str = "1250"
    gain_loss_account: str = "4800"


@dataclass(frozen=True)
class _Line:
    """A bill's line as printed."""

    description: str
    quantity: int
    unit: int
    amount: int
    account: str
    """The policy's coding: work on an asset on 6050, everything else on 6060."""


@dataclass(frozen=True)
class _Asset:
    """An asset a bill gives: class, cost, in-service date, life, source account."""

    class_id: str
    amount: int
    in_service: date
    life_months: int
    source_account: str
    description: str


@dataclass
class _Bill:
    """A purchase bill as read, and the assets it gives."""

    vendor_id: str
    number: str
    issued_on: date
    due_on: date
    in_service: date
    lines: list[_Line]
    assets: list[_Asset] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        """``(vendor, number key)``, as the books compare numbers."""
        return self.vendor_id, document_number_key(self.number)


@dataclass(frozen=True)
class _Sale:
    """An asset sold: which, when, for how much."""

    asset_id: str
    day: date
    proceeds: int


@dataclass
class _Plan:
    """What a close works from."""

    policy: _Policy
    bills: list[_Bill] = field(default_factory=list)
    sales: list[_Sale] = field(default_factory=list)


def _period(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def _index(period: str) -> int:
    return int(period[:4]) * 12 + int(period[5:]) - 1


# --- the clerk's hands on the books ----------------------------------------------------------


def _close(desk: TurnContext, plan: _Plan) -> None:
    """Close last month: bills, capitalizations, the sale, the month's depreciation."""
    books = desk.ledger.books
    month = _period(desk.day - timedelta(days=1))
    entered = {(d["party"], document_number_key(d["reference"])): d["doc_id"]
               for d in q.documents(desk.store, kind="bill")}
    capitalized = {bill_id for (kind, bill_id, _) in books.fixed_assets.capitalized
                   if kind == "bill"}
    for b in sorted(plan.bills, key=lambda x: (x.issued_on, x.vendor_id, x.number)):
        if b.key not in entered:
            done = desk.execute(c.EnterBill(
                vendor_id=b.vendor_id, vendor_invoice_number=b.number, entry_date=b.issued_on,
                due_on=b.due_on, lines=tuple(
                    c.BillLineIn(description=x.description[:200], amount=x.amount,
                                 account=x.account) for x in b.lines)))
            if isinstance(done, CommandRejected):
                continue
            entered[b.key] = next(e.event.bill_id for e in done
                                  if isinstance(e.event, BillEntered))
        bill_id = entered[b.key]
        if bill_id in capitalized:
            continue
        for a in b.assets:
            desk.execute(c.CapitalizeAsset(
                class_id=a.class_id, bill_id=bill_id, source_account=a.source_account,
                amount=a.amount, entry_date=b.issued_on, in_service_date=a.in_service,
                life_months=a.life_months, description=a.description[:200]))
    for s in plan.sales:
        asset = books.fixed_assets.assets.get(s.asset_id)
        if asset is not None and not asset.disposed:
            desk.execute(c.DisposeAsset(
                asset_id=s.asset_id, entry_date=s.day, proceeds=s.proceeds,
                proceeds_account=plan.policy.proceeds_account,
                gain_loss_account=plan.policy.gain_loss_account,
                reference=f"Sale of {s.asset_id}"))
    idx = _index(month)
    if any(not a.disposed and 0 <= idx - _index(a.start_period) < a.life_months
           and month not in a.posted for a in books.fixed_assets.assets.values()):
        desk.execute(c.RunDepreciation(period=month))


# --- the reference: reading the papers ---------------------------------------------------------


def _accruals() -> ModuleType:
    """The accruals-and-prepaids solver, whose reading of a document's text this shares."""
    from scenarios.solvers import load_solver

    return load_solver(Path(__file__).resolve().parent.parent / "accruals-and-prepaids" /
                       "solver.py")


def _field(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text, re.M)
    return m.group(1).strip() if m else None


def read_policy(text: str) -> _Policy | None:
    """The written capitalization policy's threshold, classes and disposal accounts."""
    threshold = _field(rf"An item costing USD {_MONEY} or more", text)
    if threshold is None:
        return None
    policy = _Policy(parse_cents(threshold))
    for m in re.finditer(r"^\s+([A-Z]{2,4})\s+.+?\s+(\d{4})\s+(\d{4})\s+(\d+) months\s+(.+)$",
                         text, re.M):
        words = tuple(w.strip().casefold() for w in m.group(5).split(",") if w.strip())
        policy.classes[m.group(1)] = _Class(m.group(1), int(m.group(4)), words)
    proceeds = _field(r"owed by the\s+buyer on (\d{4})", text)
    gain = _field(r"gain or loss on\s+(\d{4})", text)
    policy.proceeds_account = proceeds or policy.proceeds_account
    policy.gain_loss_account = gain or policy.gain_loss_account
    return policy


def _read_lines(text: str) -> list[_Line]:
    out = []
    for m in re.finditer(rf"^\s*(\d+) (.+?)\s+(\d+)\s+{_MONEY}\s+{_MONEY}\s*$", text, re.M):
        what = m.group(2).strip()
        out.append(_Line(what, int(m.group(3)), parse_cents(m.group(4)),
                         parse_cents(m.group(5)), REPAIRS if _WORK.match(what) else SMALL))
    return out


def read_bill(text: str, vendors: dict[str, str]) -> _Bill | None:
    """A purchase bill's printed facts (None for anything else, or a vendor not in the
    books)."""
    number = _field(r"^\s*Invoice number:\s*(\S+)", text)
    issued = _field(rf"^\s*Invoice date:\s*{_DAY}", text)
    due = _field(rf"^\s*Due date:\s*{_DAY}", text)
    service = _field(rf"^\s*(?:Placed in service|Work completed):\s*{_DAY}", text)
    total = _field(rf"^\s*Total USD\s+{_MONEY}\s*$", text)
    head = re.search(r"^\s*Phone .+\|\s*\S+@\S+\s*$", text, re.M)
    if not (number and issued and due and service and total and head):
        return None
    above = [x.strip() for x in text[:head.start()].splitlines() if x.strip()]
    vendor = vendors.get(above[-3].casefold()) if len(above) >= 3 else None
    lines = _read_lines(text)
    if vendor is None or not lines or sum(x.amount for x in lines) != parse_cents(total):
        return None
    return _Bill(vendor, number, date.fromisoformat(issued), date.fromisoformat(due),
                 date.fromisoformat(service), lines)


def assets_of(bill: _Bill, policy: _Policy, class_of: dict[str, str]) -> list[_Asset]:
    """What the policy capitalizes from a bill (``class_of``: the register's asset -> its
    class, for an upgrade)."""
    installs: dict[int, int] = {}
    for x in bill.lines:
        m = _INSTALL.match(x.description)
        if m:
            installs[int(m.group(1))] = installs.get(int(m.group(1)), 0) + x.amount
    out = []
    for n, x in enumerate(bill.lines, start=1):
        if _UPGRADE.match(x.description):
            aid = re.search(r"\bFA-\d+\b", x.description)
            cid = class_of.get(aid.group(0)) if aid else None
            if cid in policy.classes and x.amount >= policy.threshold:
                out.append(_Asset(cid, x.amount, bill.in_service,
                                  policy.classes[cid].life_months, REPAIRS, x.description))
            continue
        if _WORK.match(x.description) or _INSTALL.match(x.description):
            continue
        cost = x.amount + installs.get(n, 0)
        if cost < policy.threshold * x.quantity:
            continue
        words = x.description.casefold()
        cls = next((k for k in policy.classes.values()
                    if any(re.search(rf"\b{re.escape(w)}\b", words) for w in k.words)), None)
        if cls is not None:
            out.append(_Asset(cls.class_id, cost, bill.in_service, cls.life_months, SMALL,
                              x.description))
    return out


def read_sale(text: str, serials: dict[str, str]) -> _Sale | None:
    """An email of an asset sold: the asset (by its register id, else its serial number),
    the day and the price."""
    flat = re.sub(r"\s+", " ", text)
    m = re.search(rf"We sold our old (.+?) to .+? on {_DAY}\.", flat)
    price = re.search(rf"price is USD {_MONEY}", flat)
    if m is None or price is None:
        return None
    aid = re.search(r"\basset (FA-\d+)\b", m.group(1))
    serial = re.search(r"\((SN [A-Z0-9 ]+)\)", m.group(1))
    asset = aid.group(1) if aid else serials.get(serial.group(1)) if serial else None
    if asset is None:
        return None
    return _Sale(asset, date.fromisoformat(m.group(2)), parse_cents(price.group(1)))


def reference(desk: TurnContext) -> None:
    """Close last month from the inbox, its archive and the books."""
    books = desk.ledger.books
    vendors = {v.name.casefold(): v.vendor_id
               for v in sorted(books.vendors.values(), key=lambda v: v.vendor_id)}
    register = [e.event for e in desk.store.read(realm="erp", types=["asset_capitalized"])]
    class_of = {e.asset_id: e.class_id for e in register}
    serials = {m.group(1): e.asset_id for e in register
               if (m := re.search(r"\((SN [A-Z0-9 ]+)\)", e.description))}
    texts = []
    for path in sorted([*desk.archive(), *desk.inbox()], key=lambda p: p.name):
        text = _accruals()._text_of(path)
        if text is not None:
            texts.append(text)
    policy = next((p for t in texts if (p := read_policy(t)) is not None), None)
    if policy is None:
        return
    plan = _Plan(policy)
    seen: set[tuple[str, str]] = set()
    for text in texts:
        bill = read_bill(text, vendors)
        if bill is not None and bill.key not in seen:
            seen.add(bill.key)
            bill.assets = assets_of(bill, policy, class_of)
            plan.bills.append(bill)
            continue
        sale = read_sale(text, serials)
        if sale is not None:
            plan.sales.append(sale)
    _close(desk, plan)


# --- the oracle --------------------------------------------------------------------------------


def _truth(world: World) -> dict[str, Any]:
    for e in world.ledger.store.read(realm="world", types=["injection_planted"]):
        data = orjson.loads(e.payload)
        if data.get("kind") == "fixed_asset_materials":
            detail: dict[str, Any] = data["detail"]
            return detail
    return {}


def oracle(desk: TurnContext, world: World) -> None:
    """Close last month from the truth: the bills delivered so far, the assets due, the
    sale once told."""
    truth = _truth(world)
    if not truth:
        return
    pol = truth["policy"]
    plan = _Plan(_Policy(pol["threshold"], {}, pol["proceeds_account"],
                         pol["gain_loss_account"]))
    for x in truth["bills"]:
        if date.fromisoformat(x["delivered_on"]) > desk.day:
            continue
        plan.bills.append(_Bill(
            x["vendor_id"], x["number"], date.fromisoformat(x["issued_on"]),
            date.fromisoformat(x["due_on"]), date.fromisoformat(x["in_service"]),
            [_Line(y["description"], y["quantity"], y["unit"], y["amount"], y["account"])
             for y in x["lines"]],
            [_Asset(a["class_id"], a["amount"], date.fromisoformat(a["in_service"]),
                    a["life_months"], a["source_account"], a["description"])
             for a in x["assets"]]))
    sale = truth["disposal"]
    if date.fromisoformat(sale["told_on"]) <= desk.day:
        plan.sales.append(_Sale(sale["asset_id"], date.fromisoformat(sale["date"]),
                                sale["proceeds"]))
    _close(desk, plan)
