"""The business calendar."""

from __future__ import annotations

from datetime import date

import pytest

from sim.calendar import BusinessCalendar

GOOD_FRIDAY = date(2026, 4, 3)


def test_business_days_skip_weekends_and_holidays() -> None:
    cal = BusinessCalendar.from_business_days(date(2026, 3, 30), 5, [GOOD_FRIDAY])
    assert cal.business_days() == [date(2026, 3, 30), date(2026, 3, 31), date(2026, 4, 1),
                                   date(2026, 4, 2), date(2026, 4, 6)]
    assert cal.end == date(2026, 4, 6)
    assert not cal.is_business_day(GOOD_FRIDAY)
    assert not cal.is_business_day(date(2026, 4, 4))


def test_business_day_arithmetic() -> None:
    cal = BusinessCalendar(date(2026, 3, 1), date(2026, 4, 30), frozenset({GOOD_FRIDAY}))
    assert cal.add_business_days(date(2026, 4, 2), 1) == date(2026, 4, 6)
    assert cal.add_business_days(date(2026, 4, 6), -1) == date(2026, 4, 2)
    assert cal.add_business_days(date(2026, 4, 6), 0) == date(2026, 4, 6)
    assert cal.next_business_day(date(2026, 4, 4)) == date(2026, 4, 6)
    assert cal.next_business_day(date(2026, 4, 6), inclusive=False) == date(2026, 4, 7)


def test_now_and_dates() -> None:
    cal = BusinessCalendar(date(2026, 3, 2), date(2026, 3, 31))
    assert cal.index(date(2026, 3, 5)) == 3
    assert cal.date_at(3.0) == date(2026, 3, 5)
    assert cal.date_at(3.99) == date(2026, 3, 5)
    assert cal.time_of(date(2026, 3, 5), 0.5) == 3.5
    with pytest.raises(ValueError, match=r"fraction of a day must be in \[0, 1\) \(got 1.0\)"):
        cal.time_of(date(2026, 3, 5), 1.0)


def test_periods_and_month_ends() -> None:
    cal = BusinessCalendar(date(2026, 4, 20), date(2026, 6, 2), frozenset({date(2026, 5, 29)}))
    assert cal.periods() == ["2026-04", "2026-05", "2026-06"]
    assert BusinessCalendar.month_end(date(2026, 2, 10)) == date(2026, 2, 28)
    assert cal.is_last_business_day_of_month(date(2026, 4, 30))
    # May 29 (a Friday) is a holiday, so the 28th is May's last business day.
    assert cal.is_last_business_day_of_month(date(2026, 5, 28))
    assert not cal.is_last_business_day_of_month(date(2026, 5, 27))


def test_bad_calendars_are_refused() -> None:
    with pytest.raises(ValueError, match="calendar end 2026-03-01 is before its start"):
        BusinessCalendar(date(2026, 3, 2), date(2026, 3, 1))
    with pytest.raises(ValueError, match=r"business_days must be at least 1 \(got 0\)"):
        BusinessCalendar.from_business_days(date(2026, 3, 2), 0)
