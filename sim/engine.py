"""The engine: SimPy time over the books and the world.

One unit of ``env.now`` is one day. Within a day things happen in phases, always
in the same order (``Phase``); processes started in a fixed order keep SimPy's
own tie-breaking deterministic. The engine runs until the next turn boundary,
hands the turn to the runner, and resumes.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Generator
from datetime import date
from enum import Enum
from typing import Any

import simpy

from erp.ledger import Ledger
from erp.store import forget_decoded
from sim.calendar import BusinessCalendar
from sim.rng import Streams
from sim.world import World


def release_heap() -> None:
    """Hand what engines froze back to the collector and collect the whole heap once: call
    it when a run is over and its engine, world, books and store are no longer referred to.

    :meth:`Engine.run_until` freezes the heap at every turn, which restarts the collector's
    generation counts, so the older generations are never collected while engines run; what
    is unfrozen lands in the oldest, and what a run left there in reference cycles (its
    world, engine, books and store refer to one another) waits for a full collection that
    may never come. A process running one run after another (``validate --mutants``, a
    campaign's worker, desk tasks generated one after another) kept every one of them, with
    their database connections. The run's decoded payloads (:func:`erp.store.decoded`) are
    let go first: the next run's log is another (20,000 at the default ``bench engine``,
    some 95,000 objects the collection no longer walks)."""
    forget_decoded()
    gc.unfreeze()
    gc.collect()


class Phase(float, Enum):
    """Moments of a day, as fractions of it."""

    DAY_START = 0.0
    BANK_MORNING = 0.05
    MAIL = 0.1
    COUNTERPARTIES = 0.3
    TURN = 0.5
    COMPANY = 0.7
    PAYMENTS_OUT = 0.8
    BANK_FEED = 0.9
    DAY_END = 0.95


DailyHook = Callable[[date], None]


class Engine:
    """Runs company and counterparty processes between the agent's turns."""

    def __init__(self, calendar: BusinessCalendar, ledger: Ledger, streams: Streams) -> None:
        self.calendar = calendar
        self.ledger = ledger
        self.streams = streams
        self.env = simpy.Environment(initial_time=0)
        self.world = World(ledger, calendar, self.env)
        self.wakeups = 0

    # --- time helpers -------------------------------------------------------------

    def time_of(self, day: date, phase: Phase | float) -> float:
        """Simulation time of a phase of a date."""
        return self.calendar.time_of(day, float(phase))

    def until(self, day: date, phase: Phase | float) -> simpy.Timeout:
        """A timeout that wakes a process at a phase of a date (now, if that has passed)."""
        self.wakeups += 1
        return self.env.timeout(max(0.0, self.time_of(day, phase) - self.env.now))

    @property
    def today(self) -> date:
        """The current business date."""
        return self.world.today

    # --- processes ----------------------------------------------------------------

    def process(self, generator: Generator[Any, Any, Any]) -> simpy.Process:
        """Start a SimPy process."""
        return self.env.process(generator)

    def daily(self, phase: Phase | float, hook: DailyHook, *,
              business_days_only: bool = True) -> None:
        """Call ``hook(date)`` at a phase of every (business) day of the calendar."""
        self.process(self._daily(float(phase), hook, business_days_only))

    def _daily(self, phase: float, hook: DailyHook,
               business_days_only: bool) -> Generator[Any, Any, None]:
        for day in self.calendar.days():
            if business_days_only and not self.calendar.is_business_day(day):
                continue
            yield self.until(day, phase)
            hook(day)

    # --- running ------------------------------------------------------------------

    def run_until(self, t: float) -> None:
        """Advance to time ``t`` (exclusive of events scheduled exactly at ``t``).

        What is alive afterwards (the books, the world, the folds kept across dates) is
        frozen out of the garbage collector's way (``gc.freeze``): an attempt's heap only
        grows, and every full collection walked all of it again, a fifth of an attempt's
        time at 2,000 customers. :meth:`finish` hands it back to the collector.
        """
        self.ledger.refresh()  # an agent may have written through another connection
        if t > self.env.now:
            self.env.run(until=t)
        self.world.flush()
        gc.freeze()

    def run_to_turn(self, day: date) -> None:
        """Advance to the turn moment of a date: everything before it has happened."""
        self.run_until(self.time_of(day, Phase.TURN))

    def finish(self) -> None:
        """Run to the end of the calendar's last day (and unfreeze the heap: cycles that
        died while it was frozen are collected again)."""
        self.run_until(float(self.calendar.index(self.calendar.end) + 1))
        gc.unfreeze()
