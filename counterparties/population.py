"""The counterparties of one instance and how they are started on an engine.

``Population.start`` creates the processes (customers, vendors, the bank) from their
specs (``specs.py``) and plants the scenario's injections on their dates. The actor
modules see a population only through ``specs.PopulationView``, so this module imports
them and none of them imports it.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from counterparties import accruals as _accruals  # noqa: F401  (registers its injection)
from counterparties import bank_multi as _bank_multi  # noqa: F401  (registers its injection)
from counterparties import collections as _collections  # noqa: F401  (registers its injection)
from counterparties import fixed_assets as _fixed_assets  # noqa: F401  (registers its injection)
from counterparties import purchasing as _purchasing  # noqa: F401  (registers its injection)
from counterparties import tax_authority as _tax_authority  # noqa: F401  (registers its injection)
from counterparties.bank import Bank
from counterparties.customers import Customer, UnsentInvoices
from counterparties.injections import INJECTIONS
from counterparties.noise import CLEAN, DocumentNoise
from counterparties.specs import CustomerSpec, InjectionFailed, PlannedInjection, VendorSpec
from counterparties.vendors import Vendor
from sim.engine import Engine


@dataclass
class Population:
    """Every counterparty of an instance, once started."""

    engine: Engine
    company_name: str
    bank_account_id: str
    customers: dict[str, Customer] = field(default_factory=dict)
    vendors: dict[str, Vendor] = field(default_factory=dict)
    bank: Bank | None = None
    noise: DocumentNoise = CLEAN
    """How messy the counterparties' documents are (``counterparties.noise``)."""
    unsent_invoices: set[str] = field(init=False)
    """Invoices the company's dispatch must not send (the automation reads this set); an
    ``UnsentInvoices``, so that ``invoice_not_sent`` can withhold a customer's next one."""

    def __post_init__(self) -> None:
        self.unsent_invoices = UnsentInvoices(self.engine)

    def start(self, customers: list[CustomerSpec], vendors: list[VendorSpec],
              injections: list[PlannedInjection]) -> None:
        """Create the bank, the customers and the vendors, and plant the injections."""
        self.bank = Bank(self.engine, self)
        for customer in customers:
            self.customers[customer.customer_id] = Customer(self.engine, self, customer)
        for vendor in vendors:
            self.vendors[vendor.vendor_id] = Vendor(self.engine, self, vendor)
        self.bank.start()
        for customer_actor in self.customers.values():
            customer_actor.start()
        for vendor_actor in self.vendors.values():
            vendor_actor.start()
        for inj in injections:
            self.engine.process(self._plant(inj))

    def _plant(self, inj: PlannedInjection) -> Generator[Any, Any, None]:
        yield self.engine.until(inj.on, 0.2)
        kind = INJECTIONS[inj.kind]
        if kind.plant is None:
            raise NotImplementedError(f"injection kind {inj.kind!r} has no implementation")
        try:
            kind.plant(self, inj)
        except ValueError as e:  # the scenario asks what the injection cannot do
            if isinstance(e, InjectionFailed):
                raise
            raise InjectionFailed(f"the injection {inj.kind} on {inj.on.isoformat()} cannot "
                                  f"be planted: {e}") from e
