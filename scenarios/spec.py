"""The scenario spec: a pydantic model, strict everywhere (``extra="forbid"``).

A scenario declares its calendar, company (chart, opening balances, policies,
automation), population and behaviour mixtures, injections, turns and checks. A
scenario plus a seed is one concrete instance, deterministically.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails

# counterparties.population imports every module that registers an injection kind: a
# scenario's kinds are known here without the caller having imported the engine's side.
from counterparties import population as _population  # noqa: F401
from counterparties.injections import INJECTIONS
from counterparties.noise import DocumentNoise
from counterparties.profiles import CUSTOMER_PROFILES, VENDOR_PROFILES, resolve_profile
from erp.charts import CHARTS
from erp.events import Policies
from erp.money import DecimalMoney
from scenarios.strict_yaml import validate_strict
from sim.automation import Options
from sim.calendar import BusinessCalendar

Loc = tuple[str | int, ...]


def _problem(loc: Loc, message: str, value: object) -> InitErrorDetails:
    return {"type": "value_error", "loc": loc, "input": value,
            "ctx": {"error": ValueError(message)}}


def _nested(loc: Loc, err: ValidationError) -> list[InitErrorDetails]:
    # A ValidationError raised inside a model validator is reported at the model's own
    # path; re-rooting its errors at ``loc`` makes the path name the offending field.
    out: list[InitErrorDetails] = []
    for e in err.errors(include_url=False):
        detail: InitErrorDetails = {"type": e["type"], "loc": (*loc, *e["loc"]),
                                    "input": e["input"]}
        if "ctx" in e:
            detail["ctx"] = e["ctx"]
        out.append(detail)
    return out


def _raise(title: str, problems: list[InitErrorDetails]) -> None:
    if problems:
        raise ValidationError.from_exception_data(title, problems)


FIRST_DATE, LAST_DATE = date(1900, 1, 1), date(2199, 12, 31)
"""The dates a scenario may name (date arithmetic near year 9999 overflows)."""
MAX_CALENDAR_DAYS = 3660
"""The longest calendar, start to end, in days (ten years)."""


def _in_range(d: date) -> date:
    if not FIRST_DATE <= d <= LAST_DATE:
        raise ValueError(f"{d} is out of range (expected a date from {FIRST_DATE} to "
                         f"{LAST_DATE})")
    return d


SpecDate = Annotated[date, AfterValidator(_in_range)]
"""A date in a scenario: ``YYYY-MM-DD`` from ``FIRST_DATE`` to ``LAST_DATE``."""


def _strict(model: type[BaseModel], data: Any) -> None:
    """Validate ``data`` as ``model``, refusing a boolean made of ``"on"``, ``"no"``, 1..."""
    validate_strict(model, data)


class Strict(BaseModel):
    """Base of every spec model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class CalendarSpec(Strict):
    """When the scenario runs: a start and either a number of business days or an end."""

    start: SpecDate
    business_days: Annotated[int, Field(ge=1, le=2000)] | None = None
    end: SpecDate | None = None
    holidays: tuple[SpecDate, ...] = ()

    @model_validator(mode="after")
    def _one_length(self) -> CalendarSpec:
        if (self.business_days is None) == (self.end is None):
            got = "neither" if self.end is None else "both"
            raise ValueError(f"give exactly one of business_days or end (got {got})")
        if self.end is not None and self.end < self.start:
            raise ValueError(f"end {self.end} is before start {self.start}")
        if self.end is not None and (self.end - self.start).days > MAX_CALENDAR_DAYS:
            raise ValueError(f"end {self.end} is more than {MAX_CALENDAR_DAYS} days after "
                             f"start {self.start} (expected a calendar of at most ten years)")
        return self

    def build(self) -> BusinessCalendar:
        """The business calendar."""
        if self.end is not None:
            return BusinessCalendar(self.start, self.end, frozenset(self.holidays))
        return BusinessCalendar.from_business_days(self.start, self.business_days or 1,
                                                   self.holidays)


class OpeningSpec(Strict):
    """The books on the day before the start."""

    bank_balance: DecimalMoney = 0
    ar_open_invoices: Annotated[int, Field(ge=0, le=100_000)] = 0
    ap_open_bills: Annotated[int, Field(ge=0, le=100_000)] = 0


SIGNED_AMOUNTS = frozenset({"minimum_bank_balance"})
"""Policy amounts that may be negative (a floor below zero is an allowed overdraft);
every other number in ``policies`` and ``automation`` is a limit or a count, 0 or more."""
_CENTS = frozenset({"clerk_write_off_limit", "clerk_fee_allowance_fixed"})


class CompanySpec(Strict):
    """The company: its chart, opening balances, policies and automation."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=200)] = (
        "Northwind Services LLC")
    chart: str = "standard-services"
    opening: OpeningSpec = OpeningSpec()
    policies: Policies = Policies()
    automation: Options = Options()
    control_accounts: dict[Annotated[str, StringConstraints(pattern=r"^[0-9]{3,6}$")],
                           Literal["ar", "ap", "unapplied_cash", "bank"]] = {}
    """Control accounts beyond the chart's own, with the subledger each ties to (checks)."""

    @model_validator(mode="after")
    def _known_chart(self) -> CompanySpec:
        if self.chart not in CHARTS:
            _raise("CompanySpec", [_problem(("chart",), f"unknown chart {self.chart!r} "
                                            f"(expected one of: {', '.join(sorted(CHARTS))})",
                                            self.chart)])
        problems = []
        for section in ("policies", "automation"):
            for name, value in getattr(self, section):
                if (isinstance(value, int) and not isinstance(value, bool) and value < 0
                        and name not in SIGNED_AMOUNTS):
                    problems.append(_problem((section, name), f"{value / 100:.2f} is negative "
                                             "(expected 0 or more)" if name in _CENTS
                                             else f"{value} is negative (expected 0 or more)",
                                             value))
        _raise("CompanySpec", problems)
        return self


def _check_mixture(title: str, kind: str, profiles: dict[str, float],
                   params: dict[str, dict[str, Any]], registry: dict[str, Any],
                   fields: tuple[str, str] = ("profiles", "params")) -> None:
    problems: list[InitErrorDetails] = []
    named: tuple[list[str], list[str]] = (list(profiles), list(params))
    for field, names in zip(fields, named, strict=True):
        for name in names:
            if name not in registry:
                problems.append(_problem((field, name), f"unknown {kind} behaviour {name!r} "
                                         f"(expected one of: {', '.join(sorted(registry))})",
                                         name))
    if profiles and sum(profiles.values()) <= 0:
        problems.append(_problem((fields[0],), "behaviour weights must add up to more than 0",
                                 profiles))
    for name, overrides in params.items():
        if name in registry:
            try:
                profile = resolve_profile(registry, name, overrides)  # validates the overrides
                _strict(type(profile), {**registry[name].model_dump(), **overrides})
            except ValidationError as e:
                problems.extend(_nested((fields[1], name), e))
    _raise(title, problems)


class CustomerPopulation(Strict):
    """How many customers, and the mixture of their behaviours."""

    count: Annotated[int, Field(ge=0, le=100_000)] = 0
    profiles: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=lambda: {"on_time": 1.0})
    params: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> CustomerPopulation:
        _check_mixture("CustomerPopulation", "customer", self.profiles, self.params,
                       CUSTOMER_PROFILES)
        return self


class VendorPopulation(Strict):
    """How many vendors, and the mixture of their behaviours."""

    count: Annotated[int, Field(ge=0, le=100_000)] = 0
    profiles: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=lambda: {"reliable": 1.0})
    params: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> VendorPopulation:
        _check_mixture("VendorPopulation", "vendor", self.profiles, self.params,
                       VENDOR_PROFILES)
        return self


class PopulationSpec(Strict):
    """The counterparties."""

    customers: CustomerPopulation = CustomerPopulation()
    vendors: VendorPopulation = VendorPopulation()


class InjectionSpec(Strict):
    """A planted event on a date."""

    on: SpecDate
    kind: str
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_kind(self) -> InjectionSpec:
        if self.kind not in INJECTIONS:
            _raise("InjectionSpec", [_problem(
                ("kind",), f"unknown injection kind {self.kind!r} (expected one of: "
                f"{', '.join(sorted(INJECTIONS))})", self.kind)])
        try:
            INJECTIONS[self.kind].params.model_validate(self.params)
            _strict(INJECTIONS[self.kind].params, self.params)
        except ValidationError as e:
            _raise("InjectionSpec", _nested(("params",), e))
        return self


def _merged(base: dict[str, dict[str, Any]],
            over: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """Behaviour parameters with a tier's overrides merged in, behaviour by behaviour."""
    out = {k: dict(v) for k, v in base.items()}
    for name, params in (over or {}).items():
        out[name] = {**out.get(name, {}), **params}
    return out


def _inside(path: str) -> str:
    if any(part in (".", "..") for part in path.split("/")):
        raise ValueError(f"{path!r} has a '.' or '..' part (expected a path inside the work "
                         "folder, like out/unapplied.csv)")
    return path


OutputPath = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$"),
                       AfterValidator(_inside)]


class TurnsSpec(Strict):
    """When the agent acts, what it is asked, and which files it must leave."""

    every: Literal["business_day", "week", "once", "none"] = "business_day"
    weekday: Annotated[int, Field(ge=0, le=4)] = 4
    dates: tuple[SpecDate, ...] = ()
    month_end: bool = False
    prompt: str
    files: tuple[OutputPath, ...] = ()
    """Files of the scenario folder delivered to the inbox before the first turn."""
    outputs: tuple[OutputPath, ...] = ()
    timeout_s: Annotated[int, Field(ge=1, le=86_400)] = 1200
    """An external agent's time per turn (``erpsim run --turn-timeout`` overrides it)."""
    on_timeout: Literal["continue", "end"] = "continue"
    """After a turn that timed out: the agent keeps its later turns, or has none (the
    world runs to the end of the calendar either way, and the attempt is graded)."""
    carry_files: bool = True
    roles: dict[SpecDate, Literal["clerk", "controller"]] = {}
    """The role of the turn on a date, when not ``clerk`` (a closing turn as controller)."""

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


TierName = Literal["easy", "medium", "hard"]
"""The difficulty tiers a scenario may declare."""
TIER_NAMES: tuple[TierName, ...] = ("easy", "medium", "hard")

Count = Annotated[int, Field(ge=0, le=100_000)]


class TierSpec(Strict):
    """One difficulty tier: what it changes in the scenario (unset: as the scenario says).

    ``customers``/``vendors`` set the population's size, ``*_profiles`` replace its
    behaviour mixture (the share of hard behaviours), ``*_params`` override behaviour
    parameters (merged over the scenario's own), ``ar_open_invoices``/``ap_open_bills``
    the opening documents, ``documents`` the document noise (``counterparties.noise``).
    """

    description: Annotated[str, StringConstraints(min_length=1, max_length=400)]
    """What the tier changes, in a sentence (the README's tier table shows it)."""
    customers: Count | None = None
    vendors: Count | None = None
    ar_open_invoices: Count | None = None
    ap_open_bills: Count | None = None
    customer_profiles: dict[str, Annotated[float, Field(ge=0)]] | None = None
    vendor_profiles: dict[str, Annotated[float, Field(ge=0)]] | None = None
    customer_params: dict[str, dict[str, Any]] | None = None
    vendor_params: dict[str, dict[str, Any]] | None = None
    documents: DocumentNoise | None = None
    injections: tuple[InjectionSpec, ...] = ()
    """Planted events the tier adds to the scenario's own (more returned items, more
    duplicate bank lines: the share of hard behaviours the bank brings)."""

    @model_validator(mode="after")
    def _known(self) -> TierSpec:
        if self.customer_profiles is not None or self.customer_params is not None:
            _check_mixture("TierSpec", "customer", self.customer_profiles or {},
                           self.customer_params or {}, CUSTOMER_PROFILES,
                           ("customer_profiles", "customer_params"))
        if self.vendor_profiles is not None or self.vendor_params is not None:
            _check_mixture("TierSpec", "vendor", self.vendor_profiles or {},
                           self.vendor_params or {}, VENDOR_PROFILES,
                           ("vendor_profiles", "vendor_params"))
        return self

    def changes(self) -> dict[str, Any]:
        """The parameters the tier sets (JSON-ready; what an attempt's summary records)."""
        out = self.model_dump(mode="json", exclude_none=True, exclude={"description"})
        if not self.injections:
            del out["injections"]
        return out


class Scenario(Strict):
    """A multi-date process scenario."""

    id: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)]
    title: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    category: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9 -]*$",
                                               max_length=64)] | None = None
    """The business category the reports group by (``order to cash``, ``close``...);
    a desk task's is its own. ``None``: uncategorized."""
    description: str = ""
    calendar: CalendarSpec
    company: CompanySpec = CompanySpec()
    population: PopulationSpec = PopulationSpec()
    injections: tuple[InjectionSpec, ...] = ()
    turns: TurnsSpec
    checks: tuple[dict[str, Any], ...] = ()
    """Raw check specs; the loader validates them against the check registry."""
    reference_agent: str | None = None
    documents: DocumentNoise = DocumentNoise()
    """How messy the counterparties' documents are (none by default)."""
    tiers: dict[TierName, TierSpec] = {}
    """The scenario's difficulty tiers (``erpsim run --tier NAME``)."""
    tier: TierName | None = None
    """The tier a run uses when none is asked for; on a tiered instance, the tier it is."""

    @model_validator(mode="after")
    def _tier_declared(self) -> Scenario:
        if self.tier is not None and self.tier not in self.tiers:
            declared = ", ".join(self.tiers) or "none: add a tiers: section"
            _raise("Scenario", [_problem(("tier",), f"tier {self.tier!r} is not declared "
                                         f"under tiers (declared: {declared})", self.tier)])
        return self

    def at_tier(self, name: TierName) -> Scenario:
        """The scenario with a declared tier's parameters applied (``tier`` set to it)."""
        t = self.tiers[name]
        pop = self.population
        customers = CustomerPopulation.model_validate({
            "count": pop.customers.count if t.customers is None else t.customers,
            "profiles": pop.customers.profiles if t.customer_profiles is None
            else t.customer_profiles,
            "params": _merged(pop.customers.params, t.customer_params)})
        vendors = VendorPopulation.model_validate({
            "count": pop.vendors.count if t.vendors is None else t.vendors,
            "profiles": pop.vendors.profiles if t.vendor_profiles is None else t.vendor_profiles,
            "params": _merged(pop.vendors.params, t.vendor_params)})
        opening = self.company.opening.model_copy(update={
            k: v for k, v in (("ar_open_invoices", t.ar_open_invoices),
                              ("ap_open_bills", t.ap_open_bills)) if v is not None})
        return self.model_copy(update={
            "population": PopulationSpec(customers=customers, vendors=vendors),
            "company": self.company.model_copy(update={"opening": opening}),
            "documents": self.documents if t.documents is None else t.documents,
            "injections": self.injections + t.injections,
            "tier": name})

    @model_validator(mode="after")
    def _dates_inside(self) -> Scenario:
        cal = self.calendar.build()
        expected = f"(expected a date from {cal.start} to {cal.end})"
        problems = [_problem(("injections", n, "on"), f"{inj.on} is outside the calendar "
                             f"{expected}", inj.on.isoformat())
                    for n, inj in enumerate(self.injections)
                    if not cal.start <= inj.on <= cal.end]
        problems += [_problem(("tiers", name, "injections", n, "on"), f"{inj.on} is outside "
                              f"the calendar {expected}", inj.on.isoformat())
                     for name, t in self.tiers.items() for n, inj in enumerate(t.injections)
                     if not cal.start <= inj.on <= cal.end]
        problems += [_problem(("turns", "dates", n), f"{d} is outside the calendar {expected}",
                              d.isoformat())
                     for n, d in enumerate(self.turns.dates) if not cal.start <= d <= cal.end]
        turn_dates = set(self.turns.dates_in(cal)) if not problems else set()
        problems += [_problem(("turns", "roles", d.isoformat()), f"{d} is not a turn date "
                              "(expected one of the dates the agent acts on)", d.isoformat())
                     for d in self.turns.roles if turn_dates and d not in turn_dates]
        _raise("Scenario", problems)
        return self
