"""payroll-and-sales-tax: the reference solver (the inbox and the books) and the oracle.

Both work a turn the same way (:func:`_work`): post every register that stands (the
revised version where the provider sent one) and is not in the books yet; once a month of
the tax account has ended, reverse any journal entry of that month that moved 2200 (a
misposting: the return would not tie), file the month's return with the books' figures
and pay its tax in full.

The reference reads only what an external agent sees: the registers in ``inbox/`` and
``inbox/archive/`` (CSV, or a PDF read with pypdf), the authority's letter (the account id,
the first period) and the books (the registers posted, the month's invoices and journal
entries, the returns filed). The oracle reads the truth the world recorded: the registers
as they stand, the jurisdiction, the month's figures.
"""

from __future__ import annotations

import csv
import io
import re
import textwrap
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from erp import commands as c
from erp.errors import CommandRejected
from erp.events import SalesTaxReturnFiled
from erp.money import parse_cents
from scenarios.turn import TurnContext
from sim.world import World

BANK = "B-OPER"
TAX_ACCOUNT = "2200"


@dataclass(frozen=True)
class _Row:
    employee_id: str
    name: str
    gross: int
    withheld: int
    employer_taxes: int
    net: int


@dataclass(frozen=True)
class _Register:
    register_id: str
    version: int
    pay_date: date
    period_start: date
    period_end: date
    rows: tuple[_Row, ...]
    gross_total: int | None = None
    net_total: int | None = None


def _period(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def _month_end(period: str) -> date:
    y, m = int(period[:4]), int(period[5:])
    return date(y + m // 12, m % 12 + 1, 1) - timedelta(days=1)


def _erp(desk: TurnContext, *types: str) -> list[dict[str, Any]]:
    """The books' events of some types (payloads), as the journal and listings show them."""
    return [orjson.loads(e.payload) for e in desk.store.read(realm="erp", types=list(types))]


# --- the clerk's hands on the books ----------------------------------------------------------


def _post(desk: TurnContext, registers: list[_Register]) -> None:
    posted = set(desk.ledger.books.payroll_tax.registers)
    for r in sorted(registers, key=lambda x: (x.pay_date, x.register_id)):
        if r.register_id in posted:
            continue
        desk.execute(c.PostPayroll(
            register_id=r.register_id, entry_date=r.pay_date, period_start=r.period_start,
            period_end=r.period_end, bank_account_id=BANK,
            lines=tuple(c.PayrollLineIn(employee_id=x.employee_id, name=x.name, gross=x.gross,
                                        withheld=x.withheld, employer_taxes=x.employer_taxes,
                                        net=x.net) for x in r.rows),
            gross_total=r.gross_total, net_total=r.net_total,
            memo=f"Payroll register {r.register_id} v{r.version}"))


def _stray_entries(desk: TurnContext, period: str) -> list[tuple[str, date]]:
    """Journal entries of ``period`` with a line on 2200, not reversed (a misposting)."""
    reversed_ = {d["entry_id"] for d in _erp(desk, "journal_entry_reversed")}
    out = []
    for d in _erp(desk, "journal_entry_posted"):
        day = date.fromisoformat(d["entry_date"])
        if (_period(day) == period and d["entry_id"] not in reversed_
                and any(x["account"] == TAX_ACCOUNT for x in d["lines"])):
            out.append((d["entry_id"], day))
    return out


def _figures(desk: TurnContext, period: str) -> tuple[int, int, int]:
    """The month's gross sales, taxable sales and tax, from the books' invoices."""
    gross = taxable = tax = 0
    for d in _erp(desk, "invoice_issued"):
        if d["entry_date"].startswith(period):
            gross += d["subtotal"]
            taxable += d["subtotal"] if d["tax"] else 0
            tax += d["tax"]
    return gross, taxable, tax


def _file_and_pay(desk: TurnContext, jurisdiction: str, period: str,
                  figures: tuple[int, int, int], strays: list[tuple[str, date]]) -> None:
    """Reverse the month's mispostings on 2200, file its return, pay its tax in full."""
    books = desk.ledger.books
    if any(r.filed.period == period and r.filed.jurisdiction_id == jurisdiction
           for r in books.payroll_tax.returns.values()):
        filed = [r for r in books.payroll_tax.returns.values() if r.filed.period == period]
    else:
        for entry_id, _day in strays:
            desk.execute(c.ReverseJournalEntry(
                entry_id=entry_id, entry_date=_month_end(period),
                memo=f"Reverse {entry_id}: sales tax is not revenue (2200 ties to invoices)"))
        gross, taxable, tax = figures
        done = desk.execute(c.FileSalesTaxReturn(
            jurisdiction_id=jurisdiction, period=period, entry_date=desk.day,
            gross_sales=gross, taxable_sales=taxable, tax_due=tax))
        if isinstance(done, CommandRejected):
            return
        filed = [books.payroll_tax.returns[e.event.return_id] for e in done
                 if isinstance(e.event, SalesTaxReturnFiled)]
    for r in filed:
        if r.unpaid > 0:
            desk.execute(c.RemitSalesTax(return_id=r.filed.return_id, bank_account_id=BANK,
                                         entry_date=desk.day, amount=r.unpaid))


# --- the reference: reading the papers ---------------------------------------------------------


def _pdf_text(path: Path) -> str | None:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        pages = [page.extract_text(extraction_mode="layout") for page in PdfReader(path).pages]
    except (OSError, ValueError, PyPdfError):
        return None
    return textwrap.dedent("\n".join(pages)) + "\n"


def _us_day(text: str) -> date:
    return datetime.strptime(text.strip(), "%m/%d/%Y").date()


def _money(text: str) -> int:
    return parse_cents(text.strip().replace("$", "") or "0")


def _head(text: str) -> tuple[str, int, date, date, date] | None:
    rid = re.search(r"^\s*Register:\s*(\S+)", text, re.M)
    span = re.search(r"^\s*Pay period:\s*(\S+)\s*-\s*(\S+)", text, re.M)
    pay = re.search(r"^\s*Pay date:\s*(\S+)", text, re.M)
    version = re.search(r"^\s*Version:\s*(\d+)", text, re.M)
    if not (rid and span and pay and version):
        return None
    return (rid.group(1), int(version.group(1)), _us_day(pay.group(1)),
            _us_day(span.group(1)), _us_day(span.group(2)))


def _row(cells: list[str]) -> _Row:
    """A register row: id, name, gross, 5 withholdings, net, 4 employer taxes."""
    money = [_money(x) for x in cells[2:13]]
    return _Row(cells[0], cells[1], money[0], sum(money[1:6]), sum(money[7:11]), money[6])


def _read_register(path: Path) -> _Register | None:
    """A register as the provider sent it (None for anything else)."""
    if path.suffix == ".pdf":
        text = _pdf_text(path)
        if text is None:
            return None
        table = [re.split(r"\s{2,}", x.strip()) for x in text.splitlines()]
        rows = [t for t in table if len(t) == 13 and re.match(r"^E\d+$", t[0])]
        totals = next((t for t in table if t and t[0] == "TOTALS"), None)
        tot = (_money(totals[1]), _money(totals[7])) if totals and len(totals) == 12 else None
    elif path.suffix == ".csv":
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        start = next((i for i, x in enumerate(lines) if x.startswith("Employee ID,")), None)
        if start is None:
            return None
        table = list(csv.reader(io.StringIO("\n".join(lines[start + 1:]))))
        rows = [t for t in table if len(t) == 13 and t[0] != "TOTALS"]
        totals = next((t for t in table if t and t[0] == "TOTALS"), None)
        tot = (_money(totals[2]), _money(totals[8])) if totals else None
    else:
        return None
    head = _head(text)
    if head is None or not rows:
        return None
    return _Register(*head, tuple(_row(t) for t in rows), *(tot or (None, None)))


def _letter(paths: list[Path]) -> tuple[str, str] | None:
    """The sales-tax account id and the first period, from the authority's letter."""
    for path in paths:
        if not path.name.endswith("sales-tax-account.txt"):
            continue
        text = path.read_text(encoding="utf-8")
        acct = re.search(r"^Sales tax account:\s*(\S+)", text, re.M)
        first = re.search(r"^First period:\s*(\d{4}-\d{2})", text, re.M)
        if acct and first:
            return acct.group(1), first.group(1)
    return None


def reference(desk: TurnContext) -> None:
    """Post the registers that stand, then file and pay last month's sales tax."""
    paths = sorted([*desk.archive(), *desk.inbox()], key=lambda p: p.name)
    latest: dict[str, _Register] = {}
    for path in paths:
        reg = _read_register(path)
        if reg is not None and (reg.register_id not in latest
                                or reg.version > latest[reg.register_id].version):
            latest[reg.register_id] = reg
    _post(desk, list(latest.values()))
    account = _letter(paths)
    month = _period(desk.day.replace(day=1) - timedelta(days=1))
    if account is not None and month >= account[1]:
        _file_and_pay(desk, account[0], month, _figures(desk, month),
                      _stray_entries(desk, month))


# --- the oracle --------------------------------------------------------------------------------


def oracle(desk: TurnContext, world: World) -> None:
    """Post the registers as they stand, file and pay last month's tax, from the truth."""
    truth: dict[str, Any] = {}
    for e in world.ledger.store.read(realm="world", types=["injection_planted"]):
        data = orjson.loads(e.payload)
        if data.get("kind") == "payroll_tax_materials":
            truth = data["detail"]
    registers = [_Register(r["register_id"], r["version"], date.fromisoformat(r["pay_date"]),
                           date.fromisoformat(r["period_start"]),
                           date.fromisoformat(r["period_end"]),
                           tuple(_Row(x["employee_id"], x["name"], x["gross"], x["withheld"],
                                      x["employer_taxes"], x["net"]) for x in r["rows"]),
                           r["gross"], r["net"])
                 for r in truth.get("registers", [])
                 if date.fromisoformat(r["delivered_on"]) <= desk.day]
    _post(desk, registers)
    month = _period(desk.day.replace(day=1) - timedelta(days=1))
    if month in truth.get("due", {}):
        s = truth["sales"].get(month, {"gross_sales": 0, "taxable_sales": 0, "tax_due": 0})
        stray = truth.get("stray")
        strays = [] if not stray else [
            (eid, day) for eid, day in _stray_entries(desk, month)
            if day.isoformat() == stray["entry_date"]]
        _file_and_pay(desk, truth["jurisdiction_id"], month,
                      (s["gross_sales"], s["taxable_sales"], s["tax_due"]), strays)
