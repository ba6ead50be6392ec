"""The payroll provider: the company's employees, its pay runs and the registers it sends.

The provider (``PayFlow Payroll Services``) runs the company's payroll twice a month (the
15th and the month's last day, moved back to the business day before when that is a
weekend) and sends each run's register: one row per employee with the gross pay, what was
withheld (federal and state income tax, the employee's Social Security and Medicare, a
benefits deduction) and net pay, and the employer's own taxes on the row (its Social
Security and Medicare match, federal and state unemployment). Registers come as CSV or as
a printed PDF, money written ``$3,000.00`` or ``3000.00``, dates ``05/15/2026``; a
register the provider corrects is sent again as version 2 (``REVISED``), which replaces
the first (the truth records which version stands).
"""

from __future__ import annotations

import calendar as cal_mod
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any

import numpy as np

from erp.money import display_cents
from sim.calendar import BusinessCalendar
from sim.documents import render_csv

PROVIDER = "PayFlow Payroll Services"
PROVIDER_EMAIL = "registers@payflow-payroll.example"
SS_BP, MEDICARE_BP, FUTA_BP, SUTA_BP = 620, 145, 60, 270
"""Social Security and Medicare (employee and employer alike), unemployment (employer)."""

FIRST = ("Dana", "Luis", "Priya", "Marcus", "Elena", "Tomas", "Aisha", "Grace", "Omar",
         "Hannah", "Victor", "Mei", "Jonah", "Sofia", "Kwame", "Ines", "Ravi", "Lena")
LAST = ("Lee", "Ortega", "Raman", "Whitfield", "Kovacs", "Brandt", "Okafor", "Nguyen", "Haddad",
        "Schultz", "Moreau", "Chen", "Baptiste", "Rossi", "Mensah", "Duarte", "Iyer", "Park")


def _pct(cents: int, bp: int) -> int:
    """Basis points of an amount, half a cent rounding up."""
    return (cents * bp * 2 + 10_000) // 20_000


@dataclass(frozen=True)
class RegisterRow:
    """One employee's row of a pay run."""

    employee_id: str
    name: str
    gross: int
    federal: int
    social_security: int
    medicare: int
    state: int
    benefits: int
    er_social_security: int
    er_medicare: int
    er_futa: int
    er_suta: int

    @property
    def withheld(self) -> int:
        """Everything withheld from the gross."""
        return self.federal + self.social_security + self.medicare + self.state + self.benefits

    @property
    def employer_taxes(self) -> int:
        """The employer's own taxes on the row."""
        return self.er_social_security + self.er_medicare + self.er_futa + self.er_suta

    @property
    def net(self) -> int:
        """Net pay."""
        return self.gross - self.withheld


@dataclass(frozen=True)
class Register:
    """A pay run's register as the provider sends it (one version of it)."""

    register_id: str
    version: int
    pay_date: date
    period_start: date
    period_end: date
    rows: tuple[RegisterRow, ...]
    fmt: str
    """``csv`` or ``pdf``."""
    delivered_on: date
    dollar_signs: bool = True

    def truth(self) -> dict[str, Any]:
        """The register's figures (JSON-ready)."""
        return {"register_id": self.register_id, "version": self.version,
                "pay_date": self.pay_date.isoformat(),
                "period_start": self.period_start.isoformat(),
                "period_end": self.period_end.isoformat(), "fmt": self.fmt,
                "delivered_on": self.delivered_on.isoformat(),
                "rows": [{**asdict(r), "withheld": r.withheld,
                          "employer_taxes": r.employer_taxes, "net": r.net} for r in self.rows],
                "gross": sum(r.gross for r in self.rows),
                "withheld": sum(r.withheld for r in self.rows),
                "employer_taxes": sum(r.employer_taxes for r in self.rows),
                "net": sum(r.net for r in self.rows)}


@dataclass
class Payroll:
    """The company's employees and their pay runs over the months given."""

    employees: list[tuple[str, str, int, int, int, int]] = field(default_factory=list)
    """(id, name, semi-monthly gross, federal bp, state bp, benefits)."""
    registers: list[Register] = field(default_factory=list)


def pay_dates(calendar: BusinessCalendar, period: str) -> list[tuple[date, date, date]]:
    """A month's two pay runs: ``(period start, period end, pay date)``."""
    y, m = int(period[:4]), int(period[5:])
    last = cal_mod.monthrange(y, m)[1]
    out = []
    for start, end in ((date(y, m, 1), date(y, m, 15)), (date(y, m, 16), date(y, m, last))):
        pay = end
        while not calendar.is_business_day(pay):
            pay -= timedelta(days=1)
        out.append((start, end, pay))
    return out


def draw_payroll(rng: np.random.Generator, calendar: BusinessCalendar, periods: list[str], *,
                 employees: int, pdf_share: float, revised_share: float,
                 benefits_share: float) -> Payroll:
    """Draw the employees and every pay run of ``periods`` (in a fixed order of draws)."""
    p = Payroll()
    for n in range(employees):
        name = f"{FIRST[n % len(FIRST)]} {LAST[(n * 7 + 3) % len(LAST)]}"
        gross = int(rng.integers(1_600, 6_500)) * 100 + int(rng.integers(0, 4)) * 25
        federal_bp = int(rng.integers(8, 19)) * 100
        state_bp = int(rng.integers(2, 6)) * 100
        benefits = int(rng.integers(4, 25)) * 500 if rng.random() < benefits_share else 0
        p.employees.append((f"E{101 + n}", name, gross, federal_bp, state_bp, benefits))
    for period in periods:
        for start, end, pay in pay_dates(calendar, period):
            rows = tuple(_row(rng, e) for e in p.employees)
            rid = f"PR-{pay.strftime('%Y%m%d')}"
            fmt = "pdf" if rng.random() < pdf_share else "csv"
            signs = bool(rng.random() < 0.5)
            p.registers.append(Register(rid, 1, pay, start, end, rows, fmt, pay, signs))
            if rng.random() < revised_share:
                k = int(rng.integers(0, len(rows)))
                fixed = list(rows)
                extra = int(rng.integers(2, 9)) * 2_500  # a missed bonus or overtime
                fixed[k] = _row_of(rows[k].employee_id, rows[k].name, rows[k].gross + extra,
                                   p.employees[k])
                p.registers.append(Register(rid, 2, pay, start, end, tuple(fixed), fmt,
                                            pay, signs))
    return p


def _row(rng: np.random.Generator, e: tuple[str, str, int, int, int, int]) -> RegisterRow:
    hours = int(rng.integers(0, 3)) * 5_000 if rng.random() < 0.3 else 0  # overtime, a bonus
    return _row_of(e[0], e[1], e[2] + hours, e)


def _row_of(emp: str, name: str, gross: int,
            e: tuple[str, str, int, int, int, int]) -> RegisterRow:
    return RegisterRow(emp, name, gross, _pct(gross, e[3]), _pct(gross, SS_BP),
                       _pct(gross, MEDICARE_BP), _pct(gross, e[4]), e[5], _pct(gross, SS_BP),
                       _pct(gross, MEDICARE_BP), _pct(gross, FUTA_BP), _pct(gross, SUTA_BP))


COLUMNS = ("Employee ID", "Employee", "Gross Pay", "Federal Income Tax", "Social Security",
           "Medicare", "State Income Tax", "Benefits", "Net Pay", "ER Social Security",
           "ER Medicare", "ER FUTA", "ER SUTA")


def _money(cents: int, signs: bool) -> str:
    return ("$" if signs else "") + display_cents(cents)


def _cells(r: RegisterRow, signs: bool) -> list[str]:
    return [r.employee_id, r.name, *(_money(x, signs) for x in (
        r.gross, r.federal, r.social_security, r.medicare, r.state, r.benefits, r.net,
        r.er_social_security, r.er_medicare, r.er_futa, r.er_suta))]


def _totals(reg: Register) -> list[str]:
    sums = [sum(getattr(r, k) for r in reg.rows) for k in (
        "gross", "federal", "social_security", "medicare", "state", "benefits", "net",
        "er_social_security", "er_medicare", "er_futa", "er_suta")]
    return ["TOTALS", f"{len(reg.rows)} employees", *(_money(x, reg.dollar_signs) for x in sums)]


def _head(reg: Register, company: str) -> list[str]:
    version = (f"Version: {reg.version} (REVISED - replaces version {reg.version - 1})"
               if reg.version > 1 else "Version: 1")
    return [f"{PROVIDER} - Payroll Register", f"Client: {company}",
            f"Register: {reg.register_id}",
            f"Pay period: {reg.period_start.strftime('%m/%d/%Y')} - "
            f"{reg.period_end.strftime('%m/%d/%Y')}",
            f"Pay date: {reg.pay_date.strftime('%m/%d/%Y')}", version]


def register_csv(reg: Register, company: str) -> str:
    """The register as the provider's CSV export: a heading block, the rows, the totals."""
    table = render_csv(COLUMNS, [*(_cells(r, reg.dollar_signs) for r in reg.rows),
                                 _totals(reg)])
    return "\n".join(_head(reg, company)) + "\n\n" + table


def register_text(reg: Register, company: str) -> str:
    """The register as the provider prints it (the PDF's text): fixed-width columns."""
    widths = (8, 20, *([11] * 11))
    short = ("Emp ID", "Employee", "Gross", "Fed WH", "Soc Sec", "Medicare", "State WH",
             "Benefits", "Net Pay", "ER SS", "ER Medic", "ER FUTA", "ER SUTA")

    def line(cells: list[str]) -> str:
        return "".join(c.ljust(w) if i < 2 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    body = [line(list(short)), "-" * sum(widths),
            *(line(_cells(r, False)) for r in reg.rows), "-" * sum(widths),
            line([*_totals(reg)[:1], "", *(x.lstrip("$") for x in _totals(reg)[2:])])]
    return "\n".join([*_head(reg, company), "", *body, "",
                      "Net pay is drawn from the client's operating account on the pay date.",
                      ""])
