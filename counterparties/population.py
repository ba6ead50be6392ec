"""The counterparties of one instance and how they are started on an engine.

``CustomerSpec`` and ``VendorSpec`` are what a scenario instance decides for each
actor (id, name, behaviour and its resolved profile, terms, bank details).
``Population.start`` creates the processes (customers, vendors, the bank) and
plants the scenario's injections on their dates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from counterparties.profiles import CustomerProfile, VendorProfile
from erp.events import BankDetails
from sim.engine import Engine


@dataclass(frozen=True)
class CustomerSpec:
    """One customer of an instance."""

    customer_id: str
    name: str
    behaviour: str
    profile: CustomerProfile
    terms_days: int = 30
    credit_limit: int | None = None


@dataclass(frozen=True)
class VendorSpec:
    """One vendor of an instance; ``bank`` is its genuine account."""

    vendor_id: str
    name: str
    behaviour: str
    profile: VendorProfile
    bank: BankDetails
    terms_days: int = 30
    email: str = ""


@dataclass(frozen=True)
class PlannedInjection:
    """An injection of the scenario, with its validated parameters."""

    on: date
    kind: str
    params: Any
    index: int


@dataclass
class Population:
    """Every counterparty of an instance, once started."""

    engine: Engine
    company_name: str
    bank_account_id: str
    customers: dict[str, Any] = field(default_factory=dict)
    vendors: dict[str, Any] = field(default_factory=dict)
    bank: Any = None
    unsent_invoices: set[str] = field(init=False)
    """Invoices the company's dispatch must not send (the automation reads this set); an
    ``UnsentInvoices``, so that ``invoice_not_sent`` can withhold a customer's next one."""

    def __post_init__(self) -> None:
        from counterparties.customers import UnsentInvoices

        self.unsent_invoices = UnsentInvoices(self.engine)

    def start(self, customers: list[CustomerSpec], vendors: list[VendorSpec],
              injections: list[PlannedInjection]) -> None:
        """Create the bank, the customers and the vendors, and plant the injections."""
        from counterparties.bank import Bank
        from counterparties.customers import Customer
        from counterparties.vendors import Vendor

        self.bank = Bank(self.engine, self)
        for spec in customers:
            self.customers[spec.customer_id] = Customer(self.engine, self, spec)
        for spec in vendors:
            self.vendors[spec.vendor_id] = Vendor(self.engine, self, spec)
        for actor in [self.bank, *self.customers.values(), *self.vendors.values()]:
            actor.start()
        for inj in injections:
            self.engine.process(self._plant(inj))

    def _plant(self, inj: PlannedInjection) -> Any:
        from counterparties.injections import INJECTIONS

        yield self.engine.until(inj.on, 0.2)
        kind = INJECTIONS[inj.kind]
        if kind.plant is None:
            raise NotImplementedError(f"injection kind {inj.kind!r} has no implementation")
        kind.plant(self, inj)
