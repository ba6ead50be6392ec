"""The business calendar: dates, business days, holidays, accounting periods.

One simulation day is one unit of ``env.now``: day index 0 is the calendar's start
date, and ``env.now`` 3.5 is noon of the fourth day.
"""

from __future__ import annotations

import calendar as _cal
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cached_property


@dataclass(frozen=True)
class BusinessCalendar:
    """Weekends and holidays off; months are the accounting periods."""

    start: date
    end: date
    holidays: frozenset[date] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"calendar end {self.end} is before its start {self.start}")

    @classmethod
    def from_business_days(cls, start: date, business_days: int,
                           holidays: Iterable[date] = ()) -> BusinessCalendar:
        """A calendar from ``start`` spanning ``business_days`` business days."""
        if business_days < 1:
            raise ValueError(f"business_days must be at least 1 (got {business_days})")
        hol = frozenset(holidays)
        probe = cls(start, start, hol)
        day, n = start, 0
        while True:
            if probe.is_business_day(day):
                n += 1
                if n == business_days:
                    return cls(start, day, hol)
            day += timedelta(days=1)

    # --- days -------------------------------------------------------------------

    def is_business_day(self, day: date) -> bool:
        """Not a weekend, not a holiday."""
        return day.weekday() < 5 and day not in self.holidays

    def days(self) -> Iterator[date]:
        """Every date from start to end."""
        d = self.start
        while d <= self.end:
            yield d
            d += timedelta(days=1)

    def business_days(self) -> list[date]:
        """Every business day from start to end (a new list; the calendar caches it)."""
        return list(self._business_days)

    @cached_property
    def _business_days(self) -> tuple[date, ...]:
        return tuple(d for d in self.days() if self.is_business_day(d))

    def add_business_days(self, day: date, n: int) -> date:
        """The business day ``n`` business days after ``day`` (before it for negative ``n``)."""
        step = 1 if n >= 0 else -1
        d, left = day, abs(n)
        while left:
            d += timedelta(days=step)
            if self.is_business_day(d):
                left -= 1
        return d

    def next_business_day(self, day: date, *, inclusive: bool = True) -> date:
        """``day`` itself if it is a business day (with ``inclusive``), else the next one."""
        d = day if inclusive else day + timedelta(days=1)
        while not self.is_business_day(d):
            d += timedelta(days=1)
        return d

    # --- env.now <-> dates ------------------------------------------------------

    def index(self, day: date) -> int:
        """The day index of a date (0 is the start)."""
        return (day - self.start).days

    def date_at(self, now: float) -> date:
        """The date at simulation time ``now``."""
        return self.start + timedelta(days=int(now))

    def time_of(self, day: date, fraction: float = 0.0) -> float:
        """The simulation time of a moment of a date (``fraction`` of the day, 0 to <1)."""
        if not 0.0 <= fraction < 1.0:
            raise ValueError(f"fraction of a day must be in [0, 1) (got {fraction})")
        return float(self.index(day)) + fraction

    # --- accounting periods -----------------------------------------------------

    @staticmethod
    def period_of(day: date) -> str:
        """The accounting period (``YYYY-MM``) of a date."""
        return f"{day.year:04d}-{day.month:02d}"

    @staticmethod
    def month_end(day: date) -> date:
        """The last calendar day of the month of ``day``."""
        return day.replace(day=_cal.monthrange(day.year, day.month)[1])

    def is_last_business_day_of_month(self, day: date) -> bool:
        """True on the month's last business day."""
        return self.is_business_day(day) and self.next_business_day(
            day, inclusive=False).month != day.month

    def periods(self) -> list[str]:
        """Every accounting period the calendar touches."""
        out: list[str] = []
        for d in self.days():
            p = self.period_of(d)
            if not out or out[-1] != p:
                out.append(p)
        return out
