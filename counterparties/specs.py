"""What a scenario instance decides for each counterparty, and what an actor sees of the rest.

``CustomerSpec`` and ``VendorSpec`` are what an instance decides for each actor (id,
name, behaviour and its resolved profile, terms, bank details); ``PlannedInjection`` is
one of the scenario's injections with its validated parameters. ``PopulationView`` is
the part of the ``Population`` (``population.py``) an actor or an injection reads: the
engine, the company and the other actors. The actor modules import this module, and
``population.py`` imports the actor modules to start them, so the dependency points one
way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

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


class InjectionFailed(ValueError):
    """An injection that cannot be planted with the scenario's settings (too few vendors
    for it, a calendar too short): the message names the injection and what it needs."""


class PopulationView(Protocol):
    """What an actor sees of its population: the engine, the company, the other actors.

    ``customers``, ``vendors`` and ``bank`` hold the actors of ``customers.py``,
    ``vendors.py`` and ``bank.py``; each module narrows them where it uses them.
    """

    engine: Engine
    company_name: str
    bank_account_id: str
    customers: dict[str, Any]
    vendors: dict[str, Any]
    bank: Any
    unsent_invoices: set[str]
    noise: Any
    """The scenario's ``counterparties.noise.DocumentNoise``."""
