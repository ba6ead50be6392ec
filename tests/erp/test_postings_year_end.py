"""Exact postings and event strategies of the year-end close.

The same shapes as ``tests/erp/test_postings.py`` (``EXACT``, ``STRATEGIES``, the money /
no-money classification), merged there so that its completeness tests cover this event too.
"""

from __future__ import annotations

from datetime import date

from hypothesis import strategies as st

from erp import events as ev
from erp.postings import Posting

DEC31 = date(2026, 12, 31)

_codes = st.sampled_from(["4000", "4900", "6000", "6100", "6800"])


def _closing(balances: list[tuple[str, int]], fiscal_year: str = "2026",
             retained: str = "3100") -> ev.FiscalYearClosed:
    """The closing entry of these revenue/expense balances (debit positive)."""
    lines = [ev.JournalLine(account=a, amount=-b) for a, b in balances if b]
    net = sum(x.amount for x in lines)
    if net:
        lines.append(ev.JournalLine(account=retained, amount=-net))
    return ev.FiscalYearClosed(
        fiscal_year=fiscal_year, entry_id=f"YE-{fiscal_year}",
        entry_date=date(int(fiscal_year), 12, 31),
        periods=tuple(f"{fiscal_year}-{m:02d}" for m in range(1, 13)),
        retained_earnings=retained, net_income=net, memo=f"year-end close {fiscal_year}",
        lines=tuple(lines))


STRATEGIES: dict[type[ev.Event], st.SearchStrategy[ev.Event]] = {
    ev.FiscalYearClosed: st.builds(
        _closing,
        st.lists(st.tuples(_codes, st.integers(-10**9, 10**9).filter(bool)), min_size=1,
                 max_size=6),
        st.integers(2000, 2099).map(str)),
}
"""A strategy for the closing entry (balanced as the handler builds it)."""

MOVES_MONEY: frozenset[type[ev.Event]] = frozenset({ev.FiscalYearClosed})
POSTS_NOTHING: frozenset[type[ev.Event]] = frozenset()

EXACT: dict[type[ev.Event], list[tuple[str, ev.Event, tuple[Posting, ...]]]] = {
    ev.FiscalYearClosed: [
        ("a profit: revenue debited, expenses credited, the net income credited to "
         "retained earnings, on the closing entry, with no party",
         _closing([("4000", -500_000), ("4900", -1_234), ("6000", 300_000)]), (
             Posting("4000", 500_000, None, "YE-2026"),
             Posting("4900", 1_234, None, "YE-2026"),
             Posting("6000", -300_000, None, "YE-2026"),
             Posting("3100", -201_234, None, "YE-2026"))),
        ("break-even: no retained-earnings line",
         _closing([("4000", -100_000), ("6000", 100_000)]), (
             Posting("4000", 100_000, None, "YE-2026"),
             Posting("6000", -100_000, None, "YE-2026"))),
        ("a loss: retained earnings debited with it",
         _closing([("4000", -100_000), ("6100", 250_000)], "2027", "3000"), (
             Posting("4000", 100_000, None, "YE-2027"),
             Posting("6100", -250_000, None, "YE-2027"),
             Posting("3000", 150_000, None, "YE-2027"))),
    ],
}
"""Exact postings of the closing entry."""
