"""A small company on a real engine, with real customers and a real bank, run to its end."""

from __future__ import annotations

import csv
import importlib.util
import io
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from counterparties.bank import Bank
from counterparties.customers import Customer
from counterparties.injections import INJECTIONS
from counterparties.population import Population
from counterparties.profiles import CUSTOMER_PROFILES, CustomerProfile, resolve_profile
from counterparties.specs import CustomerSpec, PlannedInjection, VendorSpec
from erp.events import Policies
from erp.ledger import Ledger
from erp.store import StoredEvent
from sim.automation import (
    BANK_ACCOUNT,
    Automation,
    CompanySetup,
    CustomerMaster,
    OpeningBill,
    OpeningInvoice,
    Options,
    VendorMaster,
    set_up_books,
)
from sim.calendar import BusinessCalendar
from sim.engine import Engine, Phase
from sim.rng import Streams
from sim.world_events import (
    BankLinePosted,
    DocumentDelivered,
    InjectionPlanted,
    PaymentSent,
    WorldEvent,
    decode_world_event,
)

START = date(2026, 3, 2)
OPENING_BANK = 250_000_00
NO_ORDERS: dict[str, Any] = {"orders_per_month": 0}

Agent = Callable[["Run", date], None]


def spec(cid: str, behaviour: str, name: str | None = None, terms_days: int = 30,
         **overrides: Any) -> CustomerSpec:
    """A customer with a behaviour's profile and the given parameter overrides."""
    profile = resolve_profile(CUSTOMER_PROFILES, behaviour, overrides)  # type: ignore[arg-type]
    assert isinstance(profile, CustomerProfile)
    return CustomerSpec(customer_id=cid, name=name or f"Customer {cid} Inc", behaviour=behaviour,
                        profile=profile, terms_days=terms_days)


@dataclass
class Run:
    """An engine run to its end, and what it recorded."""

    engine: Engine
    ledger: Ledger
    population: Population
    automation: Automation

    def events(self, *types: type[WorldEvent]) -> list[tuple[StoredEvent, Any]]:
        """World events of these classes, with their envelopes, in log order."""
        names = [t.model_fields["type"].default for t in types]
        return [(e, decode_world_event(e.type, e.payload))
                for e in self.ledger.store.read(realm="world", types=names)]

    def payments(self, customer_id: str | None = None) -> list[PaymentSent]:
        """Customers' payments (of one customer), in the order they were sent."""
        return [p for _, p in self.events(PaymentSent)
                if customer_id is None or p.customer_id == customer_id]

    def sent_on(self, payment_id: str) -> date:
        """The business date a payment was sent."""
        return next(date.fromisoformat(e.business_date) for e, p in self.events(PaymentSent)
                    if p.payment_id == payment_id)

    def lines(self) -> list[BankLinePosted]:
        """The bank's lines, in posting order."""
        return [x for _, x in self.events(BankLinePosted)]

    def documents(self, kind: str | None = None) -> list[DocumentDelivered]:
        """Documents delivered to the inbox (of one kind)."""
        return [d for _, d in self.events(DocumentDelivered) if kind is None or d.kind == kind]

    def planted(self) -> list[InjectionPlanted]:
        """Injections' records."""
        return [x for _, x in self.events(InjectionPlanted)]

    def customer(self, cid: str) -> Customer:
        """A customer actor."""
        return self.population.customers[cid]  # type: ignore[no-any-return]

    @property
    def bank(self) -> Bank:
        """The bank actor."""
        assert isinstance(self.population.bank, Bank)
        return self.population.bank


def simulate(tmp_path: Path, customers: Sequence[CustomerSpec], *,
             opening: Sequence[OpeningInvoice] = (), days: int = 20, seed: int | str = 7,
             start: date = START, vendors: Sequence[VendorSpec] = (),
             opening_bills: Sequence[OpeningBill] = (),
             injections: Sequence[tuple[date, str, dict[str, Any]]] = (),
             unsent: Sequence[str] = (), agent: Agent | None = None,
             db: str = "books.db") -> Run:
    """Set up the books, start automation, bank and customers, and run every day."""
    ledger = Ledger.open(tmp_path / db, create=True)
    cal = BusinessCalendar.from_business_days(start, days)
    engine = Engine(cal, ledger, Streams(seed))
    set_up_books(engine, CompanySetup(
        "Northwind Services LLC", "standard-services", Policies(), OPENING_BANK,
        [CustomerMaster(c.customer_id, c.name, c.terms_days) for c in customers],
        [VendorMaster(v.vendor_id, v.name, v.terms_days, v.bank) for v in vendors],
        list(opening), list(opening_bills)))
    engine.world.reserve("INV", len(opening))
    population = Population(engine, "Northwind Services LLC", BANK_ACCOUNT)
    population.unsent_invoices.update(unsent)
    automation = Automation(engine, Options(), unsent_invoices=population.unsent_invoices)
    run = Run(engine, ledger, population, automation)
    planned = [PlannedInjection(on, kind, INJECTIONS[kind].params.model_validate(params), n)
               for n, (on, kind, params) in enumerate(injections)]
    if importlib.util.find_spec("counterparties.vendors") is not None and not vendors:
        population.start(list(customers), [], planned)
    else:  # the vendors' module is another's work: start what Population.start would
        population.bank = Bank(engine, population)
        for c in customers:
            population.customers[c.customer_id] = Customer(engine, population, c)
        for v in vendors:
            population.vendors[v.vendor_id] = v  # a vendor's genuine bank is its spec's
        population.bank.start()
        for actor in population.customers.values():
            actor.start()
        for inj in planned:
            engine.process(_plant(population, inj))
    if agent is not None:
        engine.daily(Phase.TURN, lambda day: agent(run, day))
    engine.finish()
    return run


def _plant(population: Population, inj: PlannedInjection) -> Generator[Any, Any, None]:
    yield population.engine.until(inj.on, 0.2)
    plant = INJECTIONS[inj.kind].plant
    assert plant is not None
    plant(population, inj)


def read_csv(text: str) -> list[dict[str, str]]:
    """CSV text as rows of dicts."""
    return list(csv.DictReader(io.StringIO(text)))
