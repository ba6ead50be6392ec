"""The sales-tax authority, and the ``payroll_tax_materials`` injection that sets the scene.

The authority (the State of Example's Department of Revenue) is a counterparty with its
own records: it receives the company's sales-tax returns and payments (it reads the returns
the books file and the payments they make, each on its own date), records them
(``TaxReturnReceived``, ``TaxPaymentReceived``) and, the day after a month's due date,
assesses the month: a return not filed by then, or tax not paid in full by then, gets a
notice (``TaxNoticeSent``, and a letter in the company's inbox) saying what is owed, with a
penalty of 5% of the unpaid tax (at least 50.00 for a late return).

The injection (planted on the calendar's first day):

- registers the jurisdiction in the books (its rate, 2200, returns due on the 20th) and the
  company's customers, some of them exempt (a resale certificate on file), and sends the
  authority's letter stating the rate, the jurisdiction id and when returns are due;
- issues the month's sales invoices as the company's billing system (taxed at the rate, an
  exempt customer's at 0) on their days;
- with ``stray_entry``, posts in the month a journal entry that wrongly debits 2200 (a
  bookkeeper's misposting, so the return does not tie until it is reversed);
- has the payroll provider (:mod:`counterparties.payroll`) send each pay run's register on
  its pay date (a revised one again the same day).

The truth (``InjectionPlanted``): the jurisdiction, each month's gross sales, taxable sales
and tax, the registers (the version that stands), the stray entry.
"""

from __future__ import annotations

import calendar as cal_mod
from collections.abc import Generator
from datetime import date, timedelta
from typing import Any

from pydantic import Field

from counterparties.injections import Params, register
from counterparties.payroll import (
    PROVIDER,
    PROVIDER_EMAIL,
    draw_payroll,
    register_csv,
    register_text,
)
from counterparties.planting import ACTOR, injection_rng, mark_planted
from counterparties.specs import PlannedInjection, PopulationView
from erp import commands as c
from erp.money import display_cents, pct_of
from sim.documents import deliver, deliver_binary
from sim.engine import Engine, Phase
from sim.pdf import render_text_pdf
from sim.world import LogCursor
from sim.world_events import TaxNoticeSent, TaxPaymentReceived, TaxReturnReceived

KIND = "payroll_tax_materials"
AUTHORITY = "State of Example Department of Revenue"
AUTHORITY_ACTOR = "counterparty:tax-authority"
AUTHORITY_EMAIL = "salestax@revenue.example.gov"
BILLING = "system:billing"
PENALTY_BP = 500
LATE_MINIMUM = 5_000

GOODS = ("Office chairs", "Standing desks", "Monitor arms", "Filing cabinets", "Desk lamps",
         "Whiteboards", "Conference tables", "Bookshelves", "Printer stands")
CUSTOMERS = ("Harbor Dental Group", "Maple Street Bakery", "Brightline Architects",
             "Summit Physical Therapy", "Cedar & Vine Law", "Northgate Realty",
             "Bluewater Veterinary", "Pioneer Office Resale", "Keystone Furniture Outlet",
             "Lakeside Library Friends", "Orchard Hill School", "Redwood Supply Co-op")


class PayrollTaxParams(Params):
    """The papers of a month's payroll and sales tax: how many employees and invoices, and
    how tricky they are."""

    jurisdiction_id: str = "ST-EX"
    rate_bp: int = Field(default=725, ge=1, le=5000)
    due_day: int = Field(default=20, ge=1, le=28)
    employees: int = Field(default=6, ge=1, le=18)
    invoices: int = Field(default=12, ge=1, le=200)
    customers: int = Field(default=6, ge=1, le=12)
    exempt_share: float = Field(default=0.25, ge=0, le=1)
    """The share of customers with a resale certificate (invoiced without tax)."""
    pdf_share: float = Field(default=0.5, ge=0, le=1)
    """The share of registers sent as PDF (the rest CSV)."""
    revised_share: float = Field(default=0.0, ge=0, le=1)
    """The share of registers the provider corrects and sends again (version 2)."""
    benefits_share: float = Field(default=0.5, ge=0, le=1)
    stray_entry: bool = False
    """A journal entry in the month that wrongly debits the tax account."""


def _months(engine: Engine) -> list[str]:
    """The months that end before the calendar does."""
    cal = engine.calendar
    out: list[str] = []
    day = date(cal.start.year, cal.start.month, 1)
    while True:
        last = date(day.year, day.month, cal_mod.monthrange(day.year, day.month)[1])
        if last >= cal.end:
            return out
        out.append(f"{day.year:04d}-{day.month:02d}")
        day = last + timedelta(days=1)


def due_date(period: str, due_day: int) -> date:
    """The day of the month after ``period`` its return and tax are due."""
    y, m = int(period[:4]), int(period[5:])
    return date(y + m // 12, m % 12 + 1, due_day)


class TaxAuthority:
    """The authority's records of one jurisdiction: returns, payments, notices."""

    def __init__(self, engine: Engine, jurisdiction_id: str, due_day: int,
                 periods: list[str]) -> None:
        self.engine = engine
        self.jurisdiction_id = jurisdiction_id
        self.due_day = due_day
        self.periods = periods
        self.returns: dict[str, TaxReturnReceived] = {}
        """Period -> the return received for it (the first)."""
        self.payments: list[TaxPaymentReceived] = []
        self.notices: list[TaxNoticeSent] = []
        self._filings = LogCursor(["sales_tax_return_filed", "sales_tax_remitted"])
        self._waiting: list[dict[str, Any]] = []
        self._assessed: set[str] = set()

    def start(self) -> None:
        """Open for business every day (weekends too: the assessment is due-date driven)."""
        self.engine.daily(Phase.COUNTERPARTIES, self.works, business_days_only=False)

    def works(self, day: date) -> None:
        """Take in what the company filed and paid by today; assess months past due."""
        for e in self.engine.world.read_new(self._filings):
            data = dict(e.data)
            data["_type"] = e.type
            if data["jurisdiction_id"] == self.jurisdiction_id:
                self._waiting.append(data)
        due = [d for d in self._waiting if date.fromisoformat(d["entry_date"]) <= day]
        self._waiting = [d for d in self._waiting if date.fromisoformat(d["entry_date"]) > day]
        for d in due:
            self._receive(d)
        for period in self.periods:
            if period not in self._assessed and day > due_date(period, self.due_day):
                self._assessed.add(period)
                self._assess(period)

    def _receive(self, d: dict[str, Any]) -> None:
        world = self.engine.world
        if d["_type"] == "sales_tax_return_filed":
            r = TaxReturnReceived(jurisdiction_id=self.jurisdiction_id,
                                  return_id=d["return_id"], period=d["period"],
                                  filed_on=date.fromisoformat(d["entry_date"]),
                                  gross_sales=d["gross_sales"],
                                  taxable_sales=d["taxable_sales"], tax_due=d["tax_due"])
            self.returns.setdefault(r.period, r)
            world.emit(r, AUTHORITY_ACTOR)
        else:
            p = TaxPaymentReceived(jurisdiction_id=self.jurisdiction_id,
                                   payment_id=d["payment_id"], return_id=d["return_id"],
                                   period=d["period"],
                                   paid_on=date.fromisoformat(d["entry_date"]),
                                   amount=d["amount"])
            self.payments.append(p)
            world.emit(p, AUTHORITY_ACTOR)

    def paid(self, period: str, by: date) -> int:
        """What the authority received for a month's tax, paid by ``by``."""
        return sum(p.amount for p in self.payments if p.period == period and p.paid_on <= by)

    def _assess(self, period: str) -> None:
        due = due_date(period, self.due_day)
        r = self.returns.get(period)
        if r is None or r.filed_on > due:
            self._notice(period, "late_filing", due, r.tax_due - self.paid(period, due)
                         if r else 0)
        elif self.paid(period, due) < r.tax_due:
            self._notice(period, "underpayment", due, r.tax_due - self.paid(period, due))

    def _notice(self, period: str, kind: Any, due: date, unpaid: int) -> None:
        penalty = max(pct_of(unpaid, PENALTY_BP), LATE_MINIMUM if kind == "late_filing" else 0)
        n = TaxNoticeSent(jurisdiction_id=self.jurisdiction_id, period=period, kind=kind,
                          due_on=due, unpaid=unpaid, penalty=penalty)
        self.notices.append(n)
        self.engine.world.emit(n, AUTHORITY_ACTOR)
        what = ("no return for the period was received by the due date" if kind == "late_filing"
                else "the tax reported was not paid in full by the due date")
        deliver(self.engine, actor=AUTHORITY_ACTOR, kind="other",
                filename=f"notice-{period}-{kind.replace('_', '-')}.txt",
                sender=AUTHORITY_EMAIL, subject=f"Notice: sales tax {period}",
                content=(f"{AUTHORITY}\nNOTICE - SALES AND USE TAX\n\nAccount: "
                         f"{self.jurisdiction_id}\nPeriod: {period}\nDue date: "
                         f"{due.isoformat()}\n\nOur records show that {what}.\n"
                         f"Unpaid tax: {display_cents(unpaid)}\nPenalty: "
                         f"{display_cents(penalty)}\n"),
                truth={"kind": kind, "period": period, "unpaid": unpaid, "penalty": penalty})


def _letter(params: PayrollTaxParams, company: str, exempt: list[str], first: str) -> str:
    rate = f"{params.rate_bp / 100:.2f}".rstrip("0").rstrip(".")
    lines = [AUTHORITY, "Sales and Use Tax Division", "", f"To: {company}", "",
             f"Sales tax account: {params.jurisdiction_id}", f"Rate: {rate}%",
             "Filing frequency: monthly", f"First period: {first}",
             f"Returns and payment due: the {params.due_day}th of the following month", "",
             "Each month's return reports gross sales, taxable sales and the tax due. File "
             "after the month ends and pay the tax due in full by the due date; a late or short "
             "filing is assessed a penalty of 5% of the unpaid tax (at least 50.00 for a late "
             "return).", ""]
    if exempt:
        lines += ["Resale certificates on file (sales to these customers are exempt):",
                  *(f"  - {name}" for name in exempt), ""]
    return "\n".join(lines)


class _Plan:
    """The draws of one instance's materials, in a fixed order."""

    def __init__(self, population: PopulationView, inj: PlannedInjection) -> None:
        self.engine = population.engine
        self.params: PayrollTaxParams = inj.params
        p = self.params
        rng = injection_rng(self.engine, inj)
        self.periods = _months(self.engine)
        self.customers = [(f"C-T{n + 1:02d}", CUSTOMERS[n % len(CUSTOMERS)])
                          for n in range(p.customers)]
        k = round(p.customers * p.exempt_share)
        self.exempt = {cid for cid, _ in self.customers[len(self.customers) - k:]}
        cal = self.engine.calendar
        self.invoices: list[tuple[date, str, tuple[tuple[str, int, int], ...]]] = []
        for period in self.periods:
            y, m = int(period[:4]), int(period[5:])
            days = [date(y, m, d) for d in range(1, cal_mod.monthrange(y, m)[1] + 1)
                    if cal.is_business_day(date(y, m, d)) and date(y, m, d) >= cal.start]
            for _ in range(p.invoices):
                day = days[int(rng.integers(0, len(days)))]
                cid = self.customers[int(rng.integers(0, len(self.customers)))][0]
                lines = tuple((GOODS[int(rng.integers(0, len(GOODS)))],
                               int(rng.integers(1, 9)), int(rng.integers(40, 900)) * 100
                               + int(rng.integers(0, 4)) * 25)
                              for _ in range(int(rng.integers(1, 4))))
                self.invoices.append((day, cid, lines))
        self.invoices.sort(key=lambda x: (x[0], x[1]))
        self.stray: tuple[date, int] | None = None
        if p.stray_entry and self.periods:
            y, m = int(self.periods[-1][:4]), int(self.periods[-1][5:])
            days = [date(y, m, d) for d in range(10, 25) if cal.is_business_day(date(y, m, d))]
            self.stray = (days[int(rng.integers(0, len(days)))],
                          int(rng.integers(50, 400)) * 100 + int(rng.integers(0, 100)))
        self.payroll = draw_payroll(rng, cal, self.periods, employees=p.employees,
                                    pdf_share=p.pdf_share, revised_share=p.revised_share,
                                    benefits_share=p.benefits_share)

    def sales(self) -> dict[str, dict[str, Any]]:
        """Each month's gross sales, taxable sales and tax, as invoiced."""
        out: dict[str, dict[str, Any]] = {}
        for day, cid, lines in self.invoices:
            m = out.setdefault(f"{day.year:04d}-{day.month:02d}",
                               {"gross_sales": 0, "taxable_sales": 0, "tax_due": 0,
                                "invoices": 0})
            subtotal = sum(q * price for _, q, price in lines)
            tax = 0 if cid in self.exempt else pct_of(subtotal, self.params.rate_bp)
            m["gross_sales"] += subtotal
            m["taxable_sales"] += subtotal if tax else 0
            m["tax_due"] += tax
            m["invoices"] += 1
        return out

    def truth(self) -> dict[str, Any]:
        """What the checks grade against (JSON-ready)."""
        p = self.params
        standing: dict[str, dict[str, Any]] = {}
        for reg in self.payroll.registers:
            standing[reg.register_id] = reg.truth()  # a later version replaces the first
        return {"jurisdiction_id": p.jurisdiction_id, "rate_bp": p.rate_bp,
                "due_day": p.due_day, "periods": self.periods,
                "due": {m: due_date(m, p.due_day).isoformat() for m in self.periods},
                "sales": self.sales(), "exempt": sorted(self.exempt),
                "registers": sorted(standing.values(), key=lambda r: r["pay_date"]),
                "revised": sorted({r.register_id for r in self.payroll.registers
                                   if r.version > 1}),
                "stray": None if self.stray is None else {
                    "entry_date": self.stray[0].isoformat(), "amount": self.stray[1]}}


def _setup(plan: _Plan) -> list[c.Command]:
    p = plan.params
    cmds: list[c.Command] = [c.RegisterTaxJurisdiction(
        jurisdiction_id=p.jurisdiction_id, name=AUTHORITY, rate_bp=p.rate_bp,
        due_day=p.due_day)]
    cmds += [c.RegisterCustomer(customer_id=cid, name=name, terms_days=30)
             for cid, name in plan.customers]
    return cmds


def _runs(population: PopulationView, plan: _Plan) -> Generator[Any, Any, None]:
    engine = population.engine
    world = engine.world
    events: list[tuple[date, int, Any]] = [(d, 0, ("invoice", cid, lines))
                                           for d, cid, lines in plan.invoices]
    events += [(reg.delivered_on, 1, ("register", reg)) for reg in plan.payroll.registers]
    if plan.stray is not None:
        events.append((plan.stray[0], 2, ("stray", plan.stray[1])))
    for day, _, item in sorted(events, key=lambda x: (x[0], x[1])):
        yield engine.until(day, Phase.COMPANY if item[0] != "register" else Phase.MAIL)
        if item[0] == "invoice":
            _, cid, lines = item
            rate = 0 if cid in plan.exempt else plan.params.rate_bp
            world.execute(c.IssueInvoice(customer_id=cid, entry_date=day, tax_rate_bp=rate,
                                         lines=tuple(c.InvoiceLineIn(
                                             description=g, quantity=q, unit_price=price)
                                             for g, q, price in lines)), actor=BILLING)
        elif item[0] == "stray":
            world.execute(c.PostJournalEntry(
                entry_date=day, memo="Reclass sales tax to revenue", lines=(
                    c.JournalLineIn(account="2200", debit=item[1]),
                    c.JournalLineIn(account="4000", credit=item[1]))),
                actor="system:bookkeeping", role="controller")
        else:
            _send_register(population, item[1])


def _send_register(population: PopulationView, reg: Any) -> None:
    engine = population.engine
    company = population.company_name
    name = f"payroll-register-{reg.register_id}" + (f"-v{reg.version}" if reg.version > 1
                                                     else "")
    subject = (f"{'REVISED ' if reg.version > 1 else ''}Payroll register {reg.register_id} "
               f"(pay date {reg.pay_date.isoformat()})")
    truth = {"register_id": reg.register_id, "version": reg.version}
    if reg.fmt == "pdf":
        deliver_binary(engine, actor=f"counterparty:{PROVIDER}", kind="other",
                       filename=f"{name}.pdf", sender=PROVIDER_EMAIL, subject=subject,
                       data=render_text_pdf(title=subject, text=register_text(reg, company),
                                            size=6), truth=truth)
    else:
        deliver(engine, actor=f"counterparty:{PROVIDER}", kind="other", filename=f"{name}.csv",
                sender=PROVIDER_EMAIL, subject=subject, content=register_csv(reg, company),
                truth=truth)


@register(KIND, PayrollTaxParams)
def plant_payroll_tax_materials(population: PopulationView, inj: PlannedInjection) -> None:
    """Set up the jurisdiction and customers, start the authority, record the truth, and run
    the month's invoices, registers and letter."""
    plan = _Plan(population, inj)
    engine = population.engine
    result = engine.world.execute_batch(_setup(plan), actor=ACTOR)
    if not isinstance(result, list):
        raise RuntimeError(f"injection {KIND}: the set-up was refused: {result.message}")
    p = plan.params
    deliver(engine, actor=AUTHORITY_ACTOR, kind="other", filename="sales-tax-account.txt",
            sender=AUTHORITY_EMAIL, subject="Your sales tax account",
            content=_letter(p, population.company_name,
                            [n for cid, n in plan.customers if cid in plan.exempt],
                            plan.periods[0] if plan.periods else ""))
    TaxAuthority(engine, p.jurisdiction_id, p.due_day, plan.periods).start()
    mark_planted(engine, inj, **plan.truth())
    engine.process(_runs(population, plan))
