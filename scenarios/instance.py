"""A scenario plus a seed: one concrete instance, deterministically.

``build_instance`` draws everything the scenario leaves to chance (names,
behaviours, terms, opening documents) from named streams of the seed, each actor
from its own stream, so that adding a customer never changes another's draws.
``Instance.start`` sets up the books and starts the company's automation and the
counterparties on an engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from counterparties.injections import INJECTIONS
from counterparties.population import Population
from counterparties.profiles import CUSTOMER_PROFILES, VENDOR_PROFILES, resolve_profile
from counterparties.specs import CustomerSpec, PlannedInjection, VendorSpec
from erp.events import BankDetails
from scenarios.spec import Scenario
from sim.automation import (
    BANK_ACCOUNT,
    Automation,
    CompanySetup,
    CustomerMaster,
    OpeningBill,
    OpeningInvoice,
    VendorMaster,
    set_up_books,
)
from sim.calendar import BusinessCalendar
from sim.engine import Engine
from sim.rng import Streams


@dataclass
class Instance:
    """Everything decided for one run of a scenario with one seed."""

    scenario: Scenario
    seed: int | str
    streams: Streams
    calendar: BusinessCalendar
    turn_dates: list[date]
    setup: CompanySetup
    customers: list[CustomerSpec]
    vendors: list[VendorSpec]
    injections: list[PlannedInjection]
    population: Population | None = field(default=None, repr=False)
    automation: Automation | None = field(default=None, repr=False)

    def start(self, engine: Engine) -> Population:
        """Write the starting books and start the company and its counterparties."""
        set_up_books(engine, self.setup)
        engine.world.reserve("INV", len(self.setup.opening_invoices))
        population = Population(engine, self.setup.name, BANK_ACCOUNT,
                                noise=self.scenario.documents)
        self.population = population
        self.automation = Automation(engine, self.scenario.company.automation,
                                     unsent_invoices=population.unsent_invoices)
        population.start(self.customers, self.vendors, self.injections)
        return population


def _pick(rng: object, weights: dict[str, float]) -> str:
    names = sorted(n for n, w in weights.items() if w > 0)
    total = sum(weights[n] for n in names)
    x = rng.random() * total  # type: ignore[attr-defined]
    for n in names:
        x -= weights[n]
        if x < 0:
            return n
    return names[-1]


def _draw_party(streams: Streams, kind: str, party_id: str, weights: dict[str, float],
                taken: set[str]) -> tuple[Any, str, str]:
    """A party's own set-up stream, its behaviour from the mixture, and a name no other
    party of its kind has (the bank feed and the documents name parties, not ids)."""
    rng = streams.generator(f"setup:{kind}:{party_id}")
    behaviour = _pick(rng, weights)
    name = streams.faker(f"setup:{kind}:{party_id}").company()
    if name in taken:
        name = f"{name} ({party_id})"
    taken.add(name)
    return rng, behaviour, name


def _domain(name: str) -> str:
    slug = "".join(ch for ch in name.lower() if ch.isalnum())[:20] or "vendor"
    return f"{slug}.example"


def build_instance(scenario: Scenario, seed: int | str) -> Instance:
    """Draw one concrete instance of a scenario for a seed."""
    streams = Streams(f"{scenario.id}/{seed}")
    calendar = scenario.calendar.build()
    pop = scenario.population
    customers: list[CustomerSpec] = []
    names: set[str] = set()
    for i in range(1, pop.customers.count + 1):
        cid = f"C{i:04d}"
        rng, behaviour, name = _draw_party(streams, "customer", cid, pop.customers.profiles,
                                           names)
        customers.append(CustomerSpec(
            customer_id=cid, name=name, behaviour=behaviour,
            profile=resolve_profile(CUSTOMER_PROFILES, behaviour,
                                    pop.customers.params.get(behaviour)),
            terms_days=int(rng.choice([15, 30, 30, 45]))))
    vendors: list[VendorSpec] = []
    vendor_names: set[str] = set()
    for i in range(1, pop.vendors.count + 1):
        vid = f"V{i:03d}"
        rng, behaviour, name = _draw_party(streams, "vendor", vid, pop.vendors.profiles,
                                           vendor_names)
        profile = resolve_profile(VENDOR_PROFILES, behaviour, pop.vendors.params.get(behaviour))
        vendors.append(VendorSpec(
            vendor_id=vid, name=name, behaviour=behaviour, profile=profile,
            bank=BankDetails(account_name=name, routing=f"{int(rng.integers(10**8, 10**9))}",
                             account_number=f"{int(rng.integers(10**9, 10**10))}"),
            terms_days=round(profile.terms_days.draw(rng)),
            email=f"billing@{_domain(name)}"))
    opening = scenario.company.opening
    rng = streams.generator("setup:opening")
    opening_invoices = []
    for n in range(1, opening.ar_open_invoices + 1):
        if not customers:
            break
        cust = customers[int(rng.integers(0, len(customers)))]
        issued = calendar.start - timedelta(days=int(rng.integers(3, 50)))
        amount = round(float(rng.lognormal(7.6, 0.8))) * 100 + int(rng.integers(0, 100))
        opening_invoices.append(OpeningInvoice(f"INV-{n:06d}", cust.customer_id, issued,
                                               max(amount, 5_000)))
    opening_bills = []
    for n in range(1, opening.ap_open_bills + 1):
        if not vendors:
            break
        ven = vendors[int(rng.integers(0, len(vendors)))]
        issued = calendar.start - timedelta(days=int(rng.integers(3, 25)))
        amount = round(float(rng.lognormal(7.0, 0.7))) * 100
        opening_bills.append(OpeningBill(f"BILL-O{n:05d}", ven.vendor_id, f"OB-{n:05d}",
                                         issued, max(amount, 5_000)))
    setup = CompanySetup(
        name=scenario.company.name, chart=scenario.company.chart,
        policies=scenario.company.policies, opening_bank_balance=opening.bank_balance,
        customers=[CustomerMaster(c.customer_id, c.name, c.terms_days, c.credit_limit)
                   for c in customers],
        vendors=[VendorMaster(v.vendor_id, v.name, v.terms_days, v.bank) for v in vendors],
        opening_invoices=opening_invoices, opening_bills=opening_bills)
    injections = [PlannedInjection(inj.on, inj.kind,
                                   INJECTIONS[inj.kind].params.model_validate(inj.params), n)
                  for n, inj in enumerate(scenario.injections)]
    return Instance(scenario, seed, streams, calendar, scenario.turns.dates_in(calendar), setup,
                    customers, vendors, injections)
