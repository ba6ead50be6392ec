"""Running the engine for a desk task: a scenario and a seed, up to a moment, in a scratch store.

Generators use :func:`simulate` to make a task's files from the engine (the company's
books, the counterparties' own records, the simulated future after the task date), so
that every figure in a workspace or reference file comes from the same processes as a
process scenario's. The books of a task with ``books:`` are made the same way the
attempt makes them (``build_instance`` + ``Engine`` + ``Instance.start``), so the state a
generator exports at the task date is the state the agent's turn starts from.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from counterparties.population import Population
from counterparties.profiles import CUSTOMER_PROFILES, CustomerProfile, resolve_profile
from counterparties.specs import CustomerSpec
from erp.ledger import Ledger
from scenarios.instance import Instance, build_instance
from scenarios.spec import Scenario
from sim.engine import Engine, release_heap
from sim.world_events import decode_world_event


@dataclass
class Simulation:
    """An instance started on an engine, over a scratch store."""

    instance: Instance
    engine: Engine
    ledger: Ledger
    population: Population

    def events(self, *types: str, realm: str | None = None) -> list[Any]:
        """The events of some types so far, in log order (their payload models)."""
        self.engine.world.flush()
        return [e.event if e.realm == "erp" else decode_world_event(e.type, e.payload)
                for e in self.ledger.store.read(types=list(types), realm=realm)]


Setup = Callable[[Instance], Instance]


def with_behaviours(behaviours: dict[str, str]) -> Setup:
    """A setup that gives named customers a behaviour (and its default profile).

    ``behaviours`` maps a customer id (``C0003``) to a behaviour of
    ``CUSTOMER_PROFILES``; the customer keeps its name, terms and stream.
    """
    unknown = sorted(set(behaviours.values()) - set(CUSTOMER_PROFILES))
    if unknown:
        raise ValueError(f"unknown customer behaviour(s) {', '.join(unknown)} (expected one "
                         f"of: {', '.join(sorted(CUSTOMER_PROFILES))})")

    def setup(instance: Instance) -> Instance:
        ids = {c.customer_id for c in instance.customers}
        missing = sorted(set(behaviours) - ids)
        if missing:
            raise ValueError(f"no customer(s) {', '.join(missing)} in the instance "
                             f"({len(ids)} customers)")
        customers: list[CustomerSpec] = []
        for c in instance.customers:
            name = behaviours.get(c.customer_id)
            if name is None:
                customers.append(c)
                continue
            profile = resolve_profile(CUSTOMER_PROFILES, name)
            assert isinstance(profile, CustomerProfile)
            customers.append(dataclasses.replace(c, behaviour=name, profile=profile))
        instance.customers = customers
        return instance

    return setup


@contextmanager
def simulate(scenario: Scenario, seed: int | str, *, setup: Setup | None = None,
             folder: Path | None = None) -> Iterator[Simulation]:
    """Build the scenario's instance for ``seed``, start it on an engine, yield it.

    Nothing runs until the caller asks (``sim.engine.run_to_turn(day)``,
    ``sim.engine.finish()``). The store lives in ``folder`` (default: a temporary
    folder removed afterwards).
    """
    instance = build_instance(scenario, seed)
    if setup is not None:
        instance = setup(instance)
    with tempfile.TemporaryDirectory(prefix="erpsim-desk-") as tmp:
        where = (folder or Path(tmp)) / "books.db"
        ledger = Ledger.open(where, create=True)
        try:
            engine = Engine(instance.calendar, ledger, instance.streams)
            population = instance.start(engine)
            yield Simulation(instance, engine, ledger, population)
        finally:
            ledger.close()
            # the heap the engine froze handed back (else it is never collected), and what
            # earlier simulations left collected; this one goes with the caller's last use
            release_heap()


@contextmanager
def books_at_turn(scenario: Scenario, seed: int | str, day: date) -> Iterator[Simulation]:
    """The books as the agent's turn on ``day`` finds them (a task with ``books:``).

    The engine is advanced business day by business day to each day's turn moment, as
    the attempt does, so the state (and every id in it) is the one the turn starts from.
    """
    with simulate(scenario, seed) as sim:
        for d in sim.instance.calendar.business_days():
            if d > day:
                break
            sim.engine.run_to_turn(d)
        yield sim
