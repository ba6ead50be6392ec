"""Fiscal year: the reference solver (the clerk's own materials) and the oracle (the truth).

A year of month-end closes is month-end-close's work twelve times over, so this solver is
month-end-close's (``solver.py`` beside this folder, loaded through
``scenarios.solvers.load_solver``, not copied): on the clerk's turns (mid-month and each
month's last business day) it applies receipts, enters and approves bills, pays what is
due within the week on the mid-month turns, clears the bank's lines and leaves the
month-end files; on the controller's turns (each month's first business day) it finishes
the month before and closes it. What the year adds is done here:

- the controller also closes every earlier month still open (on January 2 the months of
  2025 the opening books were carried in with);
- once December of a year is closed (2025 on January 2, 2026; 2026 on the first business
  day of 2027) the controller closes the year into retained earnings
  (``CloseFiscalYear``, account 3100), as the prompt says.

The reference (``reference``) reads only what an external agent sees (month-end-close's
reading of the inbox and the books); the oracle (``oracle``) decides the same work from
the world's truth (month-end-close's oracle). Both close months and years from the books'
own list of periods.
"""

from __future__ import annotations

import functools
from datetime import date, timedelta
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from erp import commands as c
from erp import queries as q
from scenarios.turn import TurnContext

if TYPE_CHECKING:
    from sim.world import World

RETAINED_EARNINGS = "3100"
"""The chart's retained-earnings account (services-fiscal-year)."""


@functools.cache
def month_end_close() -> ModuleType:
    """month-end-close's solver, whose clerk and judges this year's turns use."""
    from scenarios.solvers import load_solver  # not scenarios.agents: it brings the graders

    return load_solver(Path(__file__).resolve().parent.parent / "month-end-close" /
                       "solver.py")


def open_months_before(desk: TurnContext) -> list[str]:
    """The periods of the books still open that end before this turn's month."""
    first = desk.day.replace(day=1)
    return sorted(d["doc_id"] for d in q.documents(desk.store, "period")
                  if d["status"] != "closed" and d["due_on"] is not None
                  and date.fromisoformat(str(d["due_on"])) < first)


def close_the_year_end(desk: TurnContext, clerk: Any) -> None:
    """Close every earlier month still open; when that closed a December, close its year."""
    for period in open_months_before(desk):
        clerk.run(c.ClosePeriod(period=period))
    ended = desk.day.replace(day=1) - timedelta(days=1)
    if ended.month == 12:
        clerk.run(c.CloseFiscalYear(fiscal_year=f"{ended.year:04d}",
                                    retained_earnings=RETAINED_EARNINGS,
                                    memo=f"year-end close {ended.year:04d}"))


def _turn(desk: TurnContext, judge: Any, clerk: Any) -> None:
    m = month_end_close()
    if desk.role == "controller":
        m.closing_turn(clerk, judge)
        close_the_year_end(desk, clerk)
    else:
        m.close_turn(clerk, judge)


def reference(desk: TurnContext) -> None:
    """A turn of the year from the workspace's files and the books."""
    m = month_end_close()
    clerk = m._Clerk(desk)
    _turn(desk, m.Reference(desk, clerk), clerk)


def oracle(desk: TurnContext, world: World) -> None:
    """A turn of the year from the world's truth."""
    m = month_end_close()
    clerk = m._Clerk(desk)
    _turn(desk, m.Oracle(desk, clerk, world), clerk)
