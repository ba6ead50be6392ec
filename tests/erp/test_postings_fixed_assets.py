"""Exact postings and event strategies of the fixed-asset rules.

The same shapes as ``tests/erp/test_postings.py`` (``EXACT``: event class -> cases of
``(what, event, the exact lines it must post)``; ``STRATEGIES``; the money / no-money
classification), merged there so that its completeness tests cover these events too.
"""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import strategies as st

from erp import events as ev
from erp.postings import POSTING_TYPES, Posting, post

DAY = date(2026, 5, 31)

_ids = st.from_regex(r"[A-Z]{1,4}-[0-9]{1,6}", fullmatch=True)
_codes = st.sampled_from(["1250", "1500", "1590", "4800", "6000", "6500"])
_cents = st.integers(min_value=1, max_value=10**9)
_days = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))
_periods = st.builds(lambda y, m: f"{y:04d}-{m:02d}", st.integers(2000, 2099),
                     st.integers(1, 12))

STRATEGIES: dict[type[ev.Event], st.SearchStrategy[ev.Event]] = {
    ev.AssetClassDefined: st.builds(ev.AssetClassDefined, class_id=_ids,
                                    name=st.text(min_size=1, max_size=20), cost_account=_codes,
                                    accumulated_account=_codes, expense_account=_codes),
    ev.AssetCapitalized: st.builds(
        ev.AssetCapitalized, asset_id=_ids, class_id=_ids,
        source_kind=st.sampled_from(["bill", "journal"]), source_id=_ids,
        vendor_id=st.none() | _ids, entry_date=_days, in_service_date=_days, amount=_cents,
        salvage=st.integers(0, 10**6), life_months=st.integers(1, 600), cost_account=_codes,
        accumulated_account=_codes, expense_account=_codes, source_account=_codes,
        description=st.text(max_size=20)),
    ev.AssetDepreciated: st.builds(
        ev.AssetDepreciated, asset_id=_ids, run_id=_ids, class_id=_ids, period=_periods,
        month=st.integers(1, 600), life_months=st.integers(1, 600), entry_date=_days,
        amount=_cents, expense_account=_codes, accumulated_account=_codes),
    ev.AssetDisposed: st.builds(
        ev.AssetDisposed, asset_id=_ids, class_id=_ids, entry_date=_days,
        proceeds=st.integers(0, 10**9), cost=_cents, accumulated=st.integers(0, 10**9),
        gain=st.integers(-10**9, 10**9), cost_account=_codes, accumulated_account=_codes,
        proceeds_account=_codes, gain_loss_account=_codes,
        reference=st.text(max_size=20)).map(
            lambda e: e.model_copy(update={"gain": e.proceeds + e.accumulated - e.cost})),
}
"""A strategy per fixed-asset event class (a disposal's gain as its own figures give it)."""

MOVES_MONEY: frozenset[type[ev.Event]] = frozenset({
    ev.AssetCapitalized, ev.AssetDepreciated, ev.AssetDisposed})
POSTS_NOTHING: frozenset[type[ev.Event]] = frozenset({
    ev.AssetClassDefined,  # a class names accounts; its assets post
})


def _disposal(proceeds: int, cost: int, accumulated: int,
              cost_account: str = "1500") -> ev.AssetDisposed:
    """A disposal of FA-000002 (equipment) with its gain from its own figures."""
    return ev.AssetDisposed(
        asset_id="FA-000002", class_id="equipment", entry_date=DAY, proceeds=proceeds,
        cost=cost, accumulated=accumulated, gain=proceeds - (cost - accumulated),
        cost_account=cost_account, accumulated_account="1590",
        proceeds_account="1250", gain_loss_account="4800", reference="bill of sale BS-7")


EXACT: dict[type[ev.Event], list[tuple[str, ev.Event, tuple[Posting, ...]]]] = {
    ev.AssetCapitalized: [
        ("the class's cost account debited, the account the bill's line was booked on "
         "credited, on the asset, with no party",
         ev.AssetCapitalized(
             asset_id="FA-000001", class_id="equipment", source_kind="bill",
             source_id="BILL-000004", vendor_id="V7", entry_date=DAY,
             in_service_date=date(2026, 5, 12), amount=1_250_000, salvage=50_000,
             life_months=60, cost_account="1500", accumulated_account="1590",
             expense_account="6500", source_account="6000", description="CNC router"), (
             Posting("1500", 1_250_000, None, "FA-000001"),
             Posting("6000", -1_250_000, None, "FA-000001"))),
        ("from a journal entry, on the accounts the event names",
         ev.AssetCapitalized(
             asset_id="A-9", class_id="software", source_kind="journal", source_id="JE-3",
             vendor_id=None, entry_date=DAY, in_service_date=DAY, amount=99_999, salvage=0,
             life_months=36, cost_account="1520", accumulated_account="1592",
             expense_account="6500", source_account="6200", description=""), (
             Posting("1520", 99_999, None, "A-9"),
             Posting("6200", -99_999, None, "A-9"))),
    ],
    ev.AssetDepreciated: [
        ("depreciation expense debited and accumulated depreciation credited with the month",
         ev.AssetDepreciated(asset_id="FA-000001", run_id="DEP-000001", class_id="equipment",
                             period="2026-05", month=1, life_months=60, entry_date=DAY,
                             amount=20_000, expense_account="6500",
                             accumulated_account="1590"), (
             Posting("6500", 20_000, None, "FA-000001"),
             Posting("1590", -20_000, None, "FA-000001"))),
        ("the last month's remainder, on the accounts the event names",
         ev.AssetDepreciated(asset_id="A-9", run_id="DEP-4", class_id="software",
                             period="2029-04", month=36, life_months=36,
                             entry_date=date(2029, 4, 30), amount=2_814,
                             expense_account="6510", accumulated_account="1592"), (
             Posting("6510", 2_814, None, "A-9"),
             Posting("1592", -2_814, None, "A-9"))),
    ],
    ev.AssetDisposed: [
        ("a sale at a gain: proceeds and accumulated depreciation debited, cost credited, "
         "the gain credited",
         _disposal(600_000, 1_000_000, 500_000), (
             Posting("1250", 600_000, None, "FA-000002"),
             Posting("1590", 500_000, None, "FA-000002"),
             Posting("1500", -1_000_000, None, "FA-000002"),
             Posting("4800", -100_000, None, "FA-000002"))),
        ("a sale at a loss: the loss debited",
         _disposal(300_000, 1_000_000, 500_000), (
             Posting("1250", 300_000, None, "FA-000002"),
             Posting("1590", 500_000, None, "FA-000002"),
             Posting("1500", -1_000_000, None, "FA-000002"),
             Posting("4800", 200_000, None, "FA-000002"))),
        ("scrapped before any depreciation: no proceeds line, no accumulated line, the whole "
         "cost a loss",
         _disposal(0, 80_000, 0, cost_account="1510"), (
             Posting("1510", -80_000, None, "FA-000002"),
             Posting("4800", 80_000, None, "FA-000002"))),
        ("sold at exactly its net book value: no gain line",
         _disposal(250_000, 1_000_000, 750_000), (
             Posting("1250", 250_000, None, "FA-000002"),
             Posting("1590", 750_000, None, "FA-000002"),
             Posting("1500", -1_000_000, None, "FA-000002"))),
    ],
}
"""Exact postings per fixed-asset rule."""

EXACT_CASES = [pytest.param(e, lines, id=f"{cls.__name__}: {what}")
               for cls, cases in EXACT.items() for what, e, lines in cases]


@pytest.mark.parametrize(("event", "lines"), EXACT_CASES)
def test_exact_postings(event: ev.Event, lines: tuple[Posting, ...]) -> None:
    posted = post(event)
    assert posted == lines
    assert all(type(p) is Posting and type(p.amount) is int and p.amount for p in posted)
    assert sum(p.amount for p in posted) == 0


def test_every_fixed_asset_rule_has_a_case_and_is_classified() -> None:
    assert set(EXACT) == MOVES_MONEY and MOVES_MONEY <= POSTING_TYPES
    assert not POSTS_NOTHING & POSTING_TYPES
    assert set(STRATEGIES) == MOVES_MONEY | POSTS_NOTHING


def test_a_class_posts_nothing() -> None:
    e = ev.AssetClassDefined(class_id="equipment", name="Equipment", cost_account="1500",
                             accumulated_account="1590", expense_account="6500")
    assert type(e) not in POSTING_TYPES
    assert post(e) == ()
