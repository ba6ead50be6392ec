"""Exact postings and event strategies of the accruals and prepaids rules.

The same shapes as ``tests/erp/test_postings.py`` (``EXACT``: event class -> cases of
``(what, event, the exact lines it must post)``; ``STRATEGIES``; the money / no-money
classification), merged there so that its completeness tests cover these events too.
An accrual posts through its ``JournalEntryPosted`` and is reversed by a
``JournalEntryReversed`` (their exact cases are in ``test_postings.py``); only a month of
amortization has a rule of its own.
"""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import strategies as st

from erp import events as ev
from erp.postings import POSTING_TYPES, Posting, post

DAY = date(2026, 5, 31)

_ids = st.from_regex(r"[A-Z]{1,4}-[0-9]{1,6}", fullmatch=True)
_codes = st.sampled_from(["1300", "2100", "6000", "6200", "6300"])
_cents = st.integers(min_value=1, max_value=10**9)
_days = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))
_periods = st.builds(lambda y, m: f"{y:04d}-{m:02d}", st.integers(2000, 2099),
                     st.integers(1, 12))

STRATEGIES: dict[type[ev.Event], st.SearchStrategy[ev.Event]] = {
    ev.AccrualFlagged: st.builds(ev.AccrualFlagged, entry_id=_ids, entry_date=_days,
                                 period=_periods, reverse_on=_days, amount=_cents),
    ev.AccrualsReversed: st.builds(ev.AccrualsReversed, run_id=_ids, period=_periods,
                                   entry_date=_days,
                                   entry_ids=st.lists(_ids, max_size=3).map(tuple),
                                   reversal_ids=st.lists(_ids, max_size=3).map(tuple)),
    ev.PrepaidScheduleRecorded: st.builds(
        ev.PrepaidScheduleRecorded, schedule_id=_ids, bill_id=_ids, vendor_id=_ids,
        entry_date=_days, account=_codes, expense_account=_codes, amount=_cents,
        start_period=_periods, months=st.integers(1, 120), description=st.text(max_size=20)),
    ev.PrepaidAmortized: st.builds(
        ev.PrepaidAmortized, schedule_id=_ids, run_id=_ids, vendor_id=_ids, period=_periods,
        month=st.integers(1, 120), months=st.integers(1, 120), entry_date=_days,
        amount=_cents, account=_codes, expense_account=_codes),
}
"""A strategy per accruals-and-prepaids event class."""

MOVES_MONEY: frozenset[type[ev.Event]] = frozenset({ev.PrepaidAmortized})
POSTS_NOTHING: frozenset[type[ev.Event]] = frozenset({
    ev.AccrualFlagged,  # the entry posted its lines; the flag is when it reverses
    ev.AccrualsReversed,  # each reversal posts through its JournalEntryReversed
    ev.PrepaidScheduleRecorded,  # the bill put the amount on the prepaid account
})

EXACT: dict[type[ev.Event], list[tuple[str, ev.Event, tuple[Posting, ...]]]] = {
    ev.PrepaidAmortized: [
        ("the expense debited and the prepaid account credited with the month, on the "
         "schedule, under its vendor",
         ev.PrepaidAmortized(schedule_id="PPD-000003", run_id="AMR-000002", vendor_id="V7",
                             period="2026-05", month=2, months=12, entry_date=DAY,
                             amount=10_000, account="1300", expense_account="6000"), (
             Posting("6000", 10_000, "V7", "PPD-000003"),
             Posting("1300", -10_000, "V7", "PPD-000003"))),
        ("the last month's remainder, on the accounts the event names",
         ev.PrepaidAmortized(schedule_id="S-1", run_id="AMR-9", vendor_id="V1",
                             period="2027-04", month=12, months=12, entry_date=date(2027, 4, 30),
                             amount=3_334, account="1310", expense_account="6200"), (
             Posting("6200", 3_334, "V1", "S-1"),
             Posting("1310", -3_334, "V1", "S-1"))),
    ],
}
"""Exact postings per accruals-and-prepaids rule."""

EXACT_CASES = [pytest.param(e, lines, id=f"{cls.__name__}: {what}")
               for cls, cases in EXACT.items() for what, e, lines in cases]

NOTHING_CASES = [
    ev.AccrualFlagged(entry_id="JE-000004", entry_date=DAY, period="2026-05",
                      reverse_on=date(2026, 6, 1), amount=50_000),
    ev.AccrualsReversed(run_id="ACR-000001", period="2026-05", entry_date=date(2026, 6, 1),
                        entry_ids=("JE-000004",), reversal_ids=("JE-000009",)),
    ev.PrepaidScheduleRecorded(schedule_id="PPD-000001", bill_id="BILL-000002", vendor_id="V7",
                               entry_date=DAY, account="1300", expense_account="6000",
                               amount=120_000, start_period="2026-05", months=12,
                               description="annual insurance"),
]


@pytest.mark.parametrize(("event", "lines"), EXACT_CASES)
def test_exact_postings(event: ev.Event, lines: tuple[Posting, ...]) -> None:
    posted = post(event)
    assert posted == lines
    assert all(type(p) is Posting and type(p.amount) is int for p in posted)
    assert sum(p.amount for p in posted) == 0


def test_every_accruals_rule_has_a_case_and_is_classified() -> None:
    assert set(EXACT) == MOVES_MONEY and MOVES_MONEY <= POSTING_TYPES
    assert not POSTS_NOTHING & POSTING_TYPES
    assert set(STRATEGIES) == MOVES_MONEY | POSTS_NOTHING


@pytest.mark.parametrize("event", NOTHING_CASES, ids=lambda e: type(e).__name__)
def test_flags_schedules_and_runs_post_nothing(event: ev.Event) -> None:
    assert type(event) not in POSTING_TYPES
    assert post(event) == ()
