"""The month-end materials of accruals and prepaids: contracts, timesheets, invoices.

The ``accrual_materials`` injection (planted once, on the calendar's first day) gives the
company's service vendors their roles and sends the papers a month-end close works from:

- the contract list (``contracts.csv``, on the first day): each fixed-fee contract's
  monthly fee, its start and end (a contract starting or ending inside a month is charged
  for the days it ran: a partial month), and each hourly contractor's rate, with the
  expense account each is booked to;
- a timesheet export per month (``timesheets-YYYY-MM.csv``, on the first day of the next
  month): contractors' hours by day, approved or not, the export running a day into the
  next month;
- the vendors' invoices for each month's services (text, PDF or inside an email, as the
  scenario's document noise draws them), dated in the month when they arrive before the
  close, or a few days into the next month when they arrive after it (or after the last
  close: never, within the calendar);
- prepaid invoices (annual insurance, software subscriptions, maintenance plans) covering
  a stated run of months, starting this month or next.

What is due (the truth the checks grade against) is recorded in an ``InjectionPlanted``
event: per month the accrual each vendor is owed (the fee or approved hours of a month
whose invoice had not arrived by the close), every invoice with its service month,
account and delivery day, and every prepaid schedule. Vendors keep no books of these
papers (the scenario's vendors bill nothing of their own).
"""

from __future__ import annotations

import calendar as cal_mod
from collections import defaultdict
from collections.abc import Generator
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from typing import Any

from counterparties.injections import AccrualParams, register
from counterparties.noise import bill_format, email_request
from counterparties.planting import ACTOR, injection_rng, mark_planted
from counterparties.specs import PlannedInjection, PopulationView
from erp.money import display_cents
from sim.documents import deliver, deliver_binary, deliver_email, render_csv
from sim.engine import Engine, Phase
from sim.pdf import render_text_pdf

KIND = "accrual_materials"

PREPAID_ACCOUNT = "1300"
ACCRUED_ACCOUNT = "2100"

CONTRACT_SERVICES = (("Office cleaning", "6000"), ("Facilities maintenance", "6000"),
                     ("Security monitoring", "6000"), ("Office lease", "6100"),
                     ("Managed IT services", "6000"), ("Payroll bureau", "6000"))
"""Fixed-fee services and the expense account each is booked to."""
CONTRACTOR_ROLES = ("Bookkeeping support", "Software development", "Marketing consulting",
                    "Data analysis", "Technical writing")
CONTRACTOR_ACCOUNT = "6300"
PREPAID_KINDS = (("Annual liability insurance", "6000", (12,)),
                 ("Software subscription", "6200", (12, 6)),
                 ("Equipment maintenance plan", "6000", (6, 3)))
"""Prepaid invoices: what, the expense account, the terms (months) it may run."""


@dataclass(frozen=True)
class Contract:
    """A fixed-fee contract or an hourly contractor's engagement."""

    contract_id: str
    vendor_id: str
    vendor_name: str
    service: str
    billing: str  # "monthly" or "hourly"
    fee: int  # the monthly fee, or the hourly rate (cents)
    start: date
    end: date | None
    account: str


@dataclass(frozen=True)
class VendorPaper:
    """A vendor's invoice as sent: for a month's services or a prepaid cover."""

    vendor_id: str
    number: str
    issued_on: date
    due_on: date
    delivered_on: date | None
    amount: int
    account: str
    kind: str  # "service" or "prepaid"
    period: str  # the service month, or the cover's first month
    description: str
    months: int = 1
    expense_account: str = ""
    """Where the cost is expensed (a prepaid's account as it is amortized)."""


def period_of(day: date) -> str:
    """``YYYY-MM`` of a day."""
    return f"{day.year:04d}-{day.month:02d}"


def month_days(period: str) -> tuple[date, date]:
    """The first and last day of a ``YYYY-MM`` month."""
    y, m = int(period[:4]), int(period[5:])
    return date(y, m, 1), date(y, m, cal_mod.monthrange(y, m)[1])


def add_months(period: str, n: int) -> str:
    """The month ``n`` months after ``period``."""
    k = int(period[:4]) * 12 + int(period[5:]) - 1 + n
    return f"{k // 12:04d}-{k % 12 + 1:02d}"


def prorated_fee(fee: int, period: str, start: date, end: date | None) -> int:
    """A monthly fee for the days of ``period`` a contract ran (half a cent rounds up)."""
    first, last = month_days(period)
    lo, hi = max(first, start), min(last, end) if end else last
    days = (hi - lo).days + 1
    if days <= 0:
        return 0
    total = (last - first).days + 1
    return (fee * days * 2 + total) // (2 * total)


def closed_months(engine: Engine) -> list[str]:
    """The months the calendar closes: every month whose last day is before its end."""
    cal = engine.calendar
    out, p = [], period_of(cal.start)
    while month_days(p)[1] < cal.end:
        out.append(p)
        p = add_months(p, 1)
    return out


def _close_day(engine: Engine, period: str) -> date:
    """The first business day after the month: the day its close is worked."""
    return engine.calendar.next_business_day(month_days(period)[1] + timedelta(days=1))


class _Plan:
    """The draws of one instance's materials, in a fixed order."""

    def __init__(self, population: PopulationView, inj: PlannedInjection) -> None:
        self.engine = population.engine
        self.params: AccrualParams = inj.params
        self.rng = injection_rng(self.engine, inj)
        p = self.params
        vendors = [population.vendors[k] for k in sorted(population.vendors)]
        need = p.contracts + p.contractors + p.prepaids
        if len(vendors) < need:
            raise ValueError(f"injection {KIND}: needs {need} vendors ({p.contracts} contracts, "
                             f"{p.contractors} contractors, {p.prepaids} prepaids), the "
                             f"population has {len(vendors)} (raise population.vendors.count)")
        self.vendors = {v.vendor_id: v for v in vendors}
        self.months = closed_months(self.engine)
        first = month_days(self.months[0])[0] if self.months else self.engine.calendar.start
        self.contracts: list[Contract] = []
        for n, v in enumerate(vendors[:p.contracts]):
            service, account = CONTRACT_SERVICES[n % len(CONTRACT_SERVICES)]
            fee = int(self.rng.integers(8, 61)) * 10_000 + int(self.rng.integers(0, 4)) * 2_500
            start, end = date(first.year - 1, 1, 1), None
            if self.rng.random() < p.partial_share and self.months:
                month = self.months[int(self.rng.integers(0, len(self.months)))]
                lo, hi = month_days(month)
                cut = lo + timedelta(days=int(self.rng.integers(4, (hi - lo).days - 3)))
                if self.rng.random() < 0.5:
                    start = cut
                else:
                    end = cut
            self.contracts.append(Contract(f"CT-{n + 1:03d}", v.vendor_id, v.name, service,
                                           "monthly", fee, start, end, account))
        for n, v in enumerate(vendors[p.contracts:p.contracts + p.contractors]):
            rate = int(self.rng.integers(6, 19)) * 500
            self.contracts.append(Contract(
                f"CT-{p.contracts + n + 1:03d}", v.vendor_id, v.name,
                CONTRACTOR_ROLES[n % len(CONTRACTOR_ROLES)], "hourly", rate,
                date(first.year - 1, 1, 1), None, CONTRACTOR_ACCOUNT))
        self.prepaid_vendors = vendors[p.contracts + p.contractors:need]
        self.timesheets: dict[str, list[tuple[date, str, str, int, bool]]] = {}
        self.invoices: list[VendorPaper] = []
        self.accruals: dict[str, list[dict[str, Any]]] = {}
        self._draw_months()
        self._draw_prepaids()

    def _number(self, vendor_id: str, seq: int) -> str:
        return f"{vendor_id.replace('V-', 'V')}-{seq:04d}"

    def _arrival(self, period: str) -> tuple[date, date | None]:
        """The invoice's date and delivery: in the month before the close, or after it."""
        _, last = month_days(period)
        close = _close_day(self.engine, period)
        if self.rng.random() < self.params.invoiced_share:
            issued = last - timedelta(days=int(self.rng.integers(0, 3)))
            return issued, max(issued, self.engine.calendar.start)
        issued = close + timedelta(days=int(self.rng.integers(1, 8)))
        return issued, issued if issued <= self.engine.calendar.end else None

    def _hours(self) -> dict[date, list[tuple[date, str, str, int, bool]]]:
        """Every contractor's hours by day, over the closed months and a day after."""
        by_day: dict[date, list[tuple[date, str, str, int, bool]]] = defaultdict(list)
        if not self.months:
            return by_day
        day, last = month_days(self.months[0])[0], month_days(self.months[-1])[1]
        while day <= last + timedelta(days=1):
            for ct in self.contracts:
                if ct.billing == "hourly" and day.weekday() < 5 and self.rng.random() < 0.7:
                    ok = bool(self.rng.random() >= self.params.unapproved_share)
                    by_day[day].append((day, ct.vendor_id, ct.vendor_name,
                                        int(self.rng.integers(2, 9)), ok))
            day += timedelta(days=1)
        return by_day

    def _draw_months(self) -> None:
        seq = {c.vendor_id: int(self.rng.integers(100, 900)) for c in self.contracts}
        hours = self._hours()
        for period in self.months:
            first, last = month_days(period)
            rows = [r for d in sorted(hours) if first <= d <= last + timedelta(days=1)
                    for r in hours[d]]
            due: list[dict[str, Any]] = []
            for ct in self.contracts:
                if ct.billing == "monthly":
                    amount = prorated_fee(ct.fee, period, ct.start, ct.end)
                else:
                    amount = sum(h * ct.fee for d, vid, _, h, ok in rows
                                 if vid == ct.vendor_id and ok and d <= last)
                if amount <= 0:
                    continue
                issued, delivered = self._arrival(period)
                seq[ct.vendor_id] += 1
                inv = VendorPaper(ct.vendor_id, self._number(ct.vendor_id, seq[ct.vendor_id]),
                              issued, issued + timedelta(days=30), delivered, amount,
                              ct.account, "service", period, f"{ct.service} {period}", 1,
                              ct.account)
                self.invoices.append(inv)
                arrived = delivered is not None and delivered <= _close_day(self.engine, period)
                if not arrived:
                    due.append({"vendor_id": ct.vendor_id, "account": ct.account,
                                "amount": amount, "contract_id": ct.contract_id,
                                "invoice": inv.number})
            self.timesheets[period] = rows
            self.accruals[period] = due

    def _draw_prepaids(self) -> None:
        cal = self.engine.calendar
        for n, v in enumerate(self.prepaid_vendors):
            what, expense, terms = PREPAID_KINDS[n % len(PREPAID_KINDS)]
            months = terms[int(self.rng.integers(0, len(terms)))]
            period = self.months[0] if self.months else period_of(cal.start)
            issued = month_days(period)[0] + timedelta(days=int(self.rng.integers(3, 20)))
            start = period if self.rng.random() >= self.params.next_start_share \
                else add_months(period, 1)
            amount = int(self.rng.integers(12, 240)) * 10_000 + int(self.rng.integers(0, 100))
            self.invoices.append(VendorPaper(
                v.vendor_id, self._number(v.vendor_id, int(self.rng.integers(1000, 9000))),
                issued, issued + timedelta(days=30), issued, amount, PREPAID_ACCOUNT, "prepaid",
                start, what, months, expense))

    def truth(self) -> dict[str, Any]:
        """What the checks grade against (JSON-ready)."""
        def inv(x: VendorPaper) -> dict[str, Any]:
            d = asdict(x)
            for k in ("issued_on", "due_on", "delivered_on"):
                d[k] = d[k].isoformat() if d[k] else None
            return d
        return {"months": self.months,
                "closes": {p: _close_day(self.engine, p).isoformat() for p in self.months},
                "contracts": [{**asdict(ct), "start": ct.start.isoformat(),
                               "end": ct.end.isoformat() if ct.end else None}
                              for ct in self.contracts],
                "invoices": [inv(x) for x in self.invoices],
                "accruals": self.accruals}


def contract_list(contracts: list[Contract]) -> str:
    """The contract list as the company keeps it (CSV)."""
    return render_csv(
        ["contract_id", "vendor", "service", "billing", "monthly_fee", "hourly_rate",
         "start_date", "end_date", "expense_account", "invoiced"],
        [(ct.contract_id, ct.vendor_name, ct.service, ct.billing,
          display_cents(ct.fee).replace(",", "") if ct.billing == "monthly" else "",
          display_cents(ct.fee).replace(",", "") if ct.billing == "hourly" else "",
          ct.start.isoformat(), ct.end.isoformat() if ct.end else "", ct.account,
          "monthly in arrears") for ct in contracts])


def timesheet(rows: list[tuple[date, str, str, int, bool]]) -> str:
    """A month's timesheet export (CSV), running a day into the next month."""
    return render_csv(["date", "contractor", "hours", "approved"],
                      [(d.isoformat(), name, str(h), "yes" if ok else "no")
                       for d, _, name, h, ok in sorted(rows, key=lambda r: (r[0], r[2]))])


def render_invoice(vendor: Any, company: str, inv: VendorPaper, wording: int) -> str:
    """An invoice as the vendor's system prints it (plain text)."""
    letterhead = [vendor.name.upper(), vendor.address[0], vendor.address[1],
                  f"Phone {vendor.phone} | {vendor.email}"]
    head = [*letterhead, "", f"INVOICE {inv.number}", "",
            f"Invoice number: {inv.number}",
            f"Invoice date:   {inv.issued_on.isoformat()}",
            f"Due date:       {inv.due_on.isoformat()}",
            f"Bill to:        {company}", ""]
    if inv.kind == "prepaid":
        first = month_days(inv.period)[0]
        last = month_days(add_months(inv.period, inv.months - 1))[1]
        cover = [f"Coverage period: {first.isoformat()} to {last.isoformat()}",
                 f"Term: {inv.months} months starting {first.isoformat()}",
                 f"Service term {first.isoformat()} - {last.isoformat()} "
                 f"({inv.months} months), billed in advance"][wording % 3]
    else:
        first, last = month_days(inv.period)
        cover = [f"Service period: {first.isoformat()} to {last.isoformat()}",
                 f"Services for {inv.period}",
                 f"For services rendered {first.strftime('%B %Y')}"][wording % 3]
    amount = display_cents(inv.amount)
    return "\n".join([
        *head, cover, "",
        f"{'Description':<44}{'Amount':>16}", "-" * 60,
        f"{inv.description[:43]:<44}{amount:>16}", "-" * 60,
        f"{'Total USD':>44}{amount:>16}", "",
        f"Please quote invoice {inv.number} with your payment.", ""])


def _send(population: PopulationView, inv: VendorPaper) -> None:
    engine = population.engine
    vendor = population.vendors[inv.vendor_id]
    key = f"accruals:{inv.vendor_id}:{inv.number}"
    wording = int(engine.streams.generator(f"noise:wording:{key}").integers(0, 3))
    text = render_invoice(vendor, population.company_name, inv, wording)
    truth = {"invoice": inv.number, "vendor_id": inv.vendor_id, "kind": inv.kind,
             "amount": inv.amount, "period": inv.period}
    fmt = bill_format(engine.streams, key, population.noise)
    name = f"invoice-{inv.number}"
    subject = f"Invoice {inv.number} from {vendor.name}"
    if fmt == "pdf":
        deliver_binary(engine, actor=vendor.actor, kind="bill", filename=f"{name}.pdf",
                       sender=vendor.email, subject=subject,
                       data=render_text_pdf(title=subject, text=text), truth=truth)
    elif fmt == "email":
        body = f"Hello,\n\n{email_request(engine.streams, key)}\n\n{text}"
        deliver_email(engine, actor=vendor.actor, sender=f"{vendor.name} <{vendor.email}>",
                      subject=subject, body=body, slug=name, truth=truth)
    else:
        deliver(engine, actor=vendor.actor, kind="bill", filename=f"{name}.txt",
                sender=vendor.email, subject=subject, content=text, truth=truth)


def _delivers(population: PopulationView, plan: _Plan) -> Generator[Any, Any, None]:
    engine = population.engine
    days: dict[date, list[Any]] = {}
    days.setdefault(engine.calendar.start, []).append(("contracts", None))
    for period in plan.months:
        day = month_days(period)[1] + timedelta(days=1)
        if day <= engine.calendar.end:
            days.setdefault(day, []).append(("timesheet", period))
    for inv in plan.invoices:
        if inv.delivered_on is not None:
            days.setdefault(inv.delivered_on, []).append(("invoice", inv))
    for day in sorted(days):
        yield engine.until(day, Phase.MAIL)
        for what, item in days[day]:
            if what == "contracts":
                deliver(engine, actor=ACTOR, kind="other", filename="contracts.csv",
                        sender="procurement@northwind-services.example",
                        subject="Service contracts and contractor rates",
                        content=contract_list(plan.contracts))
            elif what == "timesheet":
                deliver(engine, actor=ACTOR, kind="other",
                        filename=f"timesheets-{item}.csv",
                        sender="timesheets@northwind-services.example",
                        subject=f"Contractor timesheets {item}",
                        content=timesheet(plan.timesheets[item]))
            else:
                _send(population, item)


@register(KIND, AccrualParams)
def plant_accrual_materials(population: PopulationView, inj: PlannedInjection) -> None:
    """Draw the contracts, timesheets and invoices, record what is due, send the papers."""
    plan = _Plan(population, inj)
    mark_planted(population.engine, inj, **plan.truth())
    population.engine.process(_delivers(population, plan))
