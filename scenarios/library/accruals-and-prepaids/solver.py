"""accruals-and-prepaids: the reference solver (the inbox and the books) and the oracle.

Both close last month the same way (:func:`close`): enter every invoice not yet in the
books (a service invoice on its contract's expense account, a prepaid invoice on 1300),
record a schedule for each prepaid bill, reverse the month before last's accruals on the
first day of last month, accrue last month per vendor what was incurred and not invoiced
(a contract's fee prorated by calendar days, a contractor's approved hours of the month
times the rate) and run last month's amortization.

The reference reads only what an external agent sees: the contract list, the timesheet
exports, the invoices in ``inbox/`` and ``inbox/archive/`` (text, PDF read with pypdf,
or inside an email; the cover worded three ways) and the books (vendors, bills,
schedules, accruals). The oracle reads the truth the world recorded: the invoices with
their service months and covers, and what each vendor was owed.
"""

from __future__ import annotations

import csv
import email
import email.policy
import io
import re
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import orjson

from erp import commands as c
from erp import queries as q
from erp.books import document_number_key
from erp.errors import CommandRejected
from erp.events import BillEntered
from erp.money import parse_cents
from scenarios.turn import TurnContext
from sim.world import World

PREPAID = "1300"
ACCRUED = "2100"
SOFTWARE = "6200"
GENERAL = "6000"


@dataclass(frozen=True)
class _Paper:
    """An invoice as read: whose, which, when, how much, and what it covers."""

    vendor_id: str
    number: str
    issued_on: date
    due_on: date
    amount: int
    period: str
    """The service month, or a prepaid cover's first month."""
    months: int
    description: str

    @property
    def prepaid(self) -> bool:
        """An invoice that covers several months in advance."""
        return self.months > 1

    @property
    def key(self) -> tuple[str, str]:
        """``(vendor, number key)``, as the books compare numbers."""
        return self.vendor_id, document_number_key(self.number)


@dataclass
class _Close:
    """What a month's close works from: the invoices received and what each vendor is owed
    for the month (per vendor: account -> amount), besides what the invoices bill."""

    papers: list[_Paper] = field(default_factory=list)
    owed: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Vendor -> (expense account, amount incurred in the month), invoiced or not."""
    accounts: dict[str, str] = field(default_factory=dict)
    """Vendor -> its contract's expense account."""


def _period(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def _month_end(period: str) -> date:
    y, m = int(period[:4]), int(period[5:])
    return date(y + m // 12, m % 12 + 1, 1) - timedelta(days=1)


def _months_between(first: date, last: date) -> int:
    return (last.year * 12 + last.month) - (first.year * 12 + first.month) + 1


def _prepaid_expense(description: str) -> str:
    """Software is expensed to 6200, insurance and maintenance plans to 6000 (the prompt)."""
    return SOFTWARE if "software" in description.casefold() else GENERAL


# --- the clerk's hands on the books ----------------------------------------------------------


def _close(desk: TurnContext, plan: _Close) -> None:
    """_Close last month: invoices, prepaid schedules, last reversal, accruals, amortization."""
    books = desk.ledger.books
    month = _period(desk.day - timedelta(days=1))
    entered = {(d["party"], document_number_key(d["reference"])): d["doc_id"]
               for d in q.documents(desk.store, kind="bill")}
    for p in sorted(plan.papers, key=lambda x: (x.issued_on, x.vendor_id, x.number)):
        if p.key in entered:
            continue
        account = PREPAID if p.prepaid else plan.accounts.get(p.vendor_id)
        if account is None:
            continue
        done = desk.execute(c.EnterBill(
            vendor_id=p.vendor_id, vendor_invoice_number=p.number, entry_date=p.issued_on,
            due_on=p.due_on, lines=(c.BillLineIn(description=p.description[:200],
                                                 amount=p.amount, account=account),)))
        if not isinstance(done, CommandRejected):
            entered[p.key] = next(e.event.bill_id for e in done
                                  if isinstance(e.event, BillEntered))
    scheduled = {s.bill_id for s in books.accrual_books.schedules.values()}
    for p in plan.papers:
        bill_id = entered.get(p.key)
        if p.prepaid and bill_id is not None and bill_id not in scheduled:
            desk.execute(c.RecordPrepaid(bill_id=bill_id, account=PREPAID,
                                         expense_account=_prepaid_expense(p.description),
                                         amount=p.amount, start_period=p.period,
                                         months=p.months, description=p.description[:200]))
    before = _period(date.fromisoformat(f"{month}-01") - timedelta(days=1))
    due = [a for a in books.accrual_books.accruals.values()
           if a.period == before and books.journal[a.entry_id].reversed_by is None]
    if due:
        desk.execute(c.ReverseAccruals(period=before))
    _accrue(desk, plan, month)
    idx = int(month[:4]) * 12 + int(month[5:])
    if any(0 <= idx - (int(s.start_period[:4]) * 12 + int(s.start_period[5:])) < s.months
           and month not in s.posted for s in books.accrual_books.schedules.values()):
        desk.execute(c.RunAmortization(period=month))


def _accrue(desk: TurnContext, plan: _Close, month: str) -> None:
    """Post one accrual per vendor owed for ``month`` whose invoice has not arrived."""
    books = desk.ledger.books
    invoiced = {p.vendor_id for p in plan.papers if not p.prepaid and p.period == month}
    accrued = {books.journal[a.entry_id].lines[0].party
               for a in books.accrual_books.accruals.values() if a.period == month}
    end = _month_end(month)
    for vendor_id, (account, amount) in sorted(plan.owed.items()):
        if amount <= 0 or vendor_id in invoiced or vendor_id in accrued:
            continue
        name = books.vendors[vendor_id].name
        desk.execute(c.PostAccrual(
            entry_date=end, memo=f"Accrue {name} {month} (not invoiced)",
            lines=(c.JournalLineIn(account=account, debit=amount, party=vendor_id),
                   c.JournalLineIn(account=ACCRUED, credit=amount, party=vendor_id))))


# --- the reference: reading the papers ---------------------------------------------------------

_DAY = r"(\d{4}-\d{2}-\d{2})"
_MONTHS = {m: n for n, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"), start=1)}


def _pdf_text(path: Path) -> str | None:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        pages = [page.extract_text(extraction_mode="layout") for page in PdfReader(path).pages]
    except (OSError, ValueError, PyPdfError):
        return None
    return textwrap.dedent("\n".join(pages)) + "\n"


def _text_of(path: Path) -> str | None:
    """A document's text: a text file, a PDF's pages, an email's plain body."""
    if path.suffix == ".pdf":
        return _pdf_text(path)
    if path.suffix == ".eml":
        msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        body = msg.get_body(preferencelist=("plain",))
        return str(body.get_content()) if body is not None else None
    if path.suffix in (".txt", ".csv"):
        return path.read_text(encoding="utf-8")
    return None


def _field(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text, re.M)
    return m.group(1).strip() if m else None


def _cover(text: str) -> tuple[str, int] | None:
    """The first month and the number of months an invoice covers."""
    m = re.search(rf"^\s*(?:Coverage|Service) period:\s*{_DAY}\s+to\s+{_DAY}", text, re.M)
    if m is None:
        m = re.search(rf"^\s*Service term\s+{_DAY}\s+-\s+{_DAY}", text, re.M)
    if m is not None:
        first, last = date.fromisoformat(m.group(1)), date.fromisoformat(m.group(2))
        return _period(first), _months_between(first, last)
    m = re.search(rf"^\s*Term:\s*(\d+)\s+months starting\s+{_DAY}", text, re.M)
    if m is not None:
        return _period(date.fromisoformat(m.group(2))), int(m.group(1))
    m = re.search(r"^\s*Services for (\d{4}-\d{2})\s*$", text, re.M)
    if m is not None:
        return m.group(1), 1
    m = re.search(r"^\s*For services rendered ([A-Za-z]+) (\d{4})\s*$", text, re.M)
    if m is not None and m.group(1).casefold() in _MONTHS:
        return f"{int(m.group(2)):04d}-{_MONTHS[m.group(1).casefold()]:02d}", 1
    return None


def _read_invoice(text: str, vendors: dict[str, str]) -> _Paper | None:
    """An invoice's printed facts (None for anything else, or a vendor not in the books)."""
    number = _field(r"^\s*Invoice number:\s*(\S+)", text)
    issued = _field(rf"^\s*Invoice date:\s*{_DAY}", text)
    due = _field(rf"^\s*Due date:\s*{_DAY}", text)
    total = _field(r"^\s*Total USD\s+([\d,]+\.\d{2})\s*$", text)
    cover = _cover(text)
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    if not (number and issued and due and total and cover and lines):
        return None
    head = re.search(r"^\s*Phone .+\|\s*\S+@\S+\s*$", text, re.M)
    if head is None:
        return None
    above = [x.strip() for x in text[:head.start()].splitlines() if x.strip()]
    vendor = vendors.get(above[-3].casefold()) if len(above) >= 3 else None
    if vendor is None:
        return None
    desc = _field(r"^-{20,}\s*\n\s*(.+?)\s{2,}[\d,]+\.\d{2}\s*$", text) or ""
    return _Paper(vendor, number, date.fromisoformat(issued), date.fromisoformat(due),
                 parse_cents(total), cover[0], cover[1], desc)


def _csv_rows(text: str) -> list[dict[str, str]]:
    return [{k.strip(): (v or "").strip() for k, v in row.items() if k}
            for row in csv.DictReader(io.StringIO(text))]


def _prorated(fee: int, month: str, start: date | None, end: date | None) -> int:
    """A monthly fee for the calendar days of ``month`` the contract ran, to the cent."""
    first, last = date.fromisoformat(f"{month}-01"), _month_end(month)
    lo, hi = max(first, start or first), min(last, end or last)
    days = (hi - lo).days + 1
    if days <= 0:
        return 0
    total = (last - first).days + 1
    return int((Decimal(fee) * days / total).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def reference(desk: TurnContext) -> None:
    """_Close last month from the inbox, its archive and the books."""
    books = desk.ledger.books
    vendors = {v.name.casefold(): v.vendor_id
               for v in sorted(books.vendors.values(), key=lambda v: v.vendor_id)}
    month = _period(desk.day - timedelta(days=1))
    plan = _Close()
    contracts: list[dict[str, str]] = []
    hours: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted([*desk.archive(), *desk.inbox()], key=lambda p: p.name):
        text = _text_of(path)
        if text is None:
            continue
        if path.name.endswith("contracts.csv"):
            contracts = _csv_rows(text)
        elif path.name.endswith(f"timesheets-{month}.csv"):
            hours = _csv_rows(text)
        elif path.suffix != ".csv":
            paper = _read_invoice(text, vendors)
            if paper is not None and paper.key not in seen:
                seen.add(paper.key)
                plan.papers.append(paper)
    for ct in contracts:
        vendor = vendors.get(ct["vendor"].casefold())
        if vendor is None:
            continue
        plan.accounts[vendor] = ct["expense_account"]
        if ct["billing"] == "monthly":
            start = date.fromisoformat(ct["start_date"]) if ct["start_date"] else None
            end = date.fromisoformat(ct["end_date"]) if ct["end_date"] else None
            amount = _prorated(parse_cents(ct["monthly_fee"]), month, start, end)
        else:
            rate = parse_cents(ct["hourly_rate"])
            amount = sum(int(r["hours"]) * rate for r in hours
                         if r["contractor"].casefold() == ct["vendor"].casefold()
                         and r["approved"].casefold() == "yes" and r["date"].startswith(month))
        plan.owed[vendor] = (ct["expense_account"], amount)
    _close(desk, plan)


# --- the oracle --------------------------------------------------------------------------------


def oracle(desk: TurnContext, world: World) -> None:
    """_Close last month from the truth: the invoices delivered so far, what was owed."""
    truth: dict[str, object] = {}
    for e in world.ledger.store.read(realm="world", types=["injection_planted"]):
        data = orjson.loads(e.payload)
        if data.get("kind") == "accrual_materials":
            truth = data["detail"]
    month = _period(desk.day - timedelta(days=1))
    plan = _Close()
    invoices = truth.get("invoices", [])
    assert isinstance(invoices, list)
    for x in invoices:
        delivered = x["delivered_on"]
        if delivered is None or date.fromisoformat(delivered) > desk.day:
            continue
        plan.papers.append(_Paper(x["vendor_id"], x["number"], date.fromisoformat(x["issued_on"]),
                                 date.fromisoformat(x["due_on"]), x["amount"], x["period"],
                                 x["months"], x["description"]))
    contracts = truth.get("contracts", [])
    assert isinstance(contracts, list)
    plan.accounts = {ct["vendor_id"]: ct["account"] for ct in contracts}
    owed: dict[str, int] = defaultdict(int)
    accruals = truth.get("accruals", {})
    assert isinstance(accruals, dict)
    for a in accruals.get(month, []):
        owed[a["vendor_id"]] += a["amount"]
    plan.owed = {v: (plan.accounts[v], n) for v, n in owed.items()}
    _close(desk, plan)


