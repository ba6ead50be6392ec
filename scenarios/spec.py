"""The scenario spec: a pydantic model, strict everywhere (``extra="forbid"``).

A scenario declares its calendar, company (chart, opening balances, policies,
automation), population and behaviour mixtures, injections, turns and checks. A
scenario plus a seed is one concrete instance, deterministically.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from counterparties.injections import INJECTIONS
from counterparties.profiles import CUSTOMER_PROFILES, VENDOR_PROFILES, resolve_profile
from erp.charts import CHARTS
from erp.events import Policies
from erp.money import Cents
from sim.calendar import BusinessCalendar


class Strict(BaseModel):
    """Base of every spec model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class CalendarSpec(Strict):
    """When the scenario runs: a start and either a number of business days or an end."""

    start: date
    business_days: Annotated[int, Field(ge=1, le=2000)] | None = None
    end: date | None = None
    holidays: tuple[date, ...] = ()

    @model_validator(mode="after")
    def _one_length(self) -> CalendarSpec:
        if (self.business_days is None) == (self.end is None):
            raise ValueError("give exactly one of business_days or end")
        if self.end is not None and self.end < self.start:
            raise ValueError(f"end {self.end} is before start {self.start}")
        return self

    def build(self) -> BusinessCalendar:
        """The business calendar."""
        if self.end is not None:
            return BusinessCalendar(self.start, self.end, frozenset(self.holidays))
        return BusinessCalendar.from_business_days(self.start, self.business_days or 1,
                                                   self.holidays)


class OpeningSpec(Strict):
    """The books on the day before the start."""

    bank_balance: Cents = 0
    ar_open_invoices: Annotated[int, Field(ge=0, le=100_000)] = 0
    ap_open_bills: Annotated[int, Field(ge=0, le=100_000)] = 0


class AutomationSpec(Strict):
    """Which company processes run by themselves (actors ``system:*``)."""

    order_intake: bool = True
    auto_invoicing: bool = True
    dispatch_invoices: bool = True
    bank_feed: bool = True
    auto_receipts: bool = True
    execute_payments: bool = True
    controller_approves_bank_changes: bool = True
    month_end_statements: bool = True


class CompanySpec(Strict):
    """The company: its chart, opening balances, policies and automation."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=200)] = (
        "Northwind Services LLC")
    chart: str = "standard-services"
    opening: OpeningSpec = OpeningSpec()
    policies: Policies = Policies()
    automation: AutomationSpec = AutomationSpec()

    @model_validator(mode="after")
    def _known_chart(self) -> CompanySpec:
        if self.chart not in CHARTS:
            raise ValueError(f"unknown chart {self.chart!r} (expected one of: "
                             f"{', '.join(sorted(CHARTS))})")
        return self


def _check_mixture(kind: str, profiles: dict[str, float], params: dict[str, dict[str, Any]],
                   registry: dict[str, Any]) -> None:
    for name in [*profiles, *params]:
        if name not in registry:
            raise ValueError(f"unknown {kind} behaviour {name!r} (expected one of: "
                             f"{', '.join(sorted(registry))})")
    if profiles and sum(profiles.values()) <= 0:
        raise ValueError("behaviour weights must add up to more than 0")
    for name, overrides in params.items():
        resolve_profile(registry, name, overrides)  # validates the overrides


class CustomerPopulation(Strict):
    """How many customers, and the mixture of their behaviours."""

    count: Annotated[int, Field(ge=0, le=100_000)] = 0
    profiles: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=lambda: {"on_time": 1.0})
    params: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> CustomerPopulation:
        _check_mixture("customer", self.profiles, self.params, CUSTOMER_PROFILES)
        return self


class VendorPopulation(Strict):
    """How many vendors, and the mixture of their behaviours."""

    count: Annotated[int, Field(ge=0, le=100_000)] = 0
    profiles: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=lambda: {"reliable": 1.0})
    params: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> VendorPopulation:
        _check_mixture("vendor", self.profiles, self.params, VENDOR_PROFILES)
        return self


class PopulationSpec(Strict):
    """The counterparties."""

    customers: CustomerPopulation = CustomerPopulation()
    vendors: VendorPopulation = VendorPopulation()


class InjectionSpec(Strict):
    """A planted event on a date."""

    on: date
    kind: str
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_kind(self) -> InjectionSpec:
        if self.kind not in INJECTIONS:
            raise ValueError(f"unknown injection kind {self.kind!r} (expected one of: "
                             f"{', '.join(sorted(INJECTIONS))})")
        INJECTIONS[self.kind].params.model_validate(self.params)
        return self


OutputPath = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")]


class TurnsSpec(Strict):
    """When the agent acts, what it is asked, and which files it must leave."""

    every: Literal["business_day", "week", "once", "none"] = "business_day"
    weekday: Annotated[int, Field(ge=0, le=4)] = 4
    dates: tuple[date, ...] = ()
    month_end: bool = False
    prompt: str
    outputs: tuple[OutputPath, ...] = ()
    timeout_s: Annotated[int, Field(ge=1, le=86_400)] = 1200
    carry_files: bool = True

    def dates_in(self, calendar: BusinessCalendar) -> list[date]:
        """The turn dates on a calendar, in order, each once."""
        days = calendar.business_days()
        chosen: set[date] = set(self.dates)
        if self.every == "business_day":
            chosen.update(days)
        elif self.every == "week":
            chosen.update(d for d in days if d.weekday() == self.weekday)
        elif self.every == "once":
            chosen.add(days[-1])
        if self.month_end:
            chosen.update(d for d in days if calendar.is_last_business_day_of_month(d))
        for d in self.dates:
            if not calendar.start <= d <= calendar.end:
                raise ValueError(f"turn date {d} is outside the calendar "
                                 f"{calendar.start}..{calendar.end}")
        return sorted(chosen)


class Scenario(Strict):
    """A multi-date process scenario."""

    id: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)]
    title: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    description: str = ""
    calendar: CalendarSpec
    company: CompanySpec = CompanySpec()
    population: PopulationSpec = PopulationSpec()
    injections: tuple[InjectionSpec, ...] = ()
    turns: TurnsSpec
    checks: tuple[dict[str, Any], ...] = ()
    reference_agent: str | None = None

    @model_validator(mode="after")
    def _dates_inside(self) -> Scenario:
        cal = self.calendar.build()
        for n, inj in enumerate(self.injections):
            if not cal.start <= inj.on <= cal.end:
                raise ValueError(f"injections[{n}].on {inj.on} is outside the calendar "
                                 f"{cal.start}..{cal.end}")
        self.turns.dates_in(cal)
        return self
