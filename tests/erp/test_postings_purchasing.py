"""Exact postings and event strategies of the purchasing rules (three-way match).

The same shapes as ``tests/erp/test_postings.py`` (``EXACT``: event class -> cases of
``(what, event, the exact lines it must post)``; ``STRATEGIES``; the money / no-money
classification), merged there so that its completeness tests cover these events too.
"""

from __future__ import annotations

import typing
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from erp import events as ev
from erp.postings import POSTING_TYPES, Posting, post

DAY = date(2026, 7, 6)

_ids = st.from_regex(r"[A-Z]{1,4}-[0-9]{1,6}", fullmatch=True)
_codes = st.sampled_from(["1400", "2050", "5900", "6000", "6100"])
_cents = st.integers(min_value=1, max_value=10**9)
_qty = st.integers(min_value=1, max_value=10_000)
_days = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))
_text = st.text(max_size=20)


@st.composite
def _received(draw: st.DrawFn) -> ev.GoodsReceived:
    """A goods receipt whose total is its lines' quantity times the PO price."""
    lines = []
    for n in range(1, draw(st.integers(1, 4)) + 1):
        q, p = draw(_qty), draw(_cents)
        lines.append(ev.ReceivedLine(line=n, item=draw(_text), quantity=q, unit_price=p,
                                     amount=q * p, account=draw(_codes)))
    return ev.GoodsReceived(receipt_id=draw(_ids), po_id=draw(_ids), vendor_id=draw(_ids),
                            entry_date=draw(_days), reference=draw(_text), lines=tuple(lines),
                            total=sum(x.amount for x in lines), grni_account="2050")


@st.composite
def _ordered(draw: st.DrawFn) -> ev.PurchaseOrderIssued:
    lines = []
    for n in range(1, draw(st.integers(1, 4)) + 1):
        q, p = draw(_qty), draw(_cents)
        lines.append(ev.PurchaseOrderLine(line=n, item=draw(_text), description=draw(_text),
                                          quantity=q, unit_price=p, amount=q * p,
                                          account=draw(_codes)))
    return ev.PurchaseOrderIssued(po_id=draw(_ids), vendor_id=draw(_ids),
                                  order_date=draw(_days), expected_on=draw(st.none() | _days),
                                  lines=tuple(lines), total=sum(x.amount for x in lines))


_reasons = st.lists(st.builds(ev.HoldReason, code=st.sampled_from(typing.get_args(ev.HoldCode)),
                              line=st.integers(1, 9), detail=_text), min_size=1, max_size=3)
_matched_lines = st.lists(st.builds(ev.MatchedLine, line=st.integers(1, 9), item=_text,
                                    quantity=_qty, unit_price=_cents, po_unit_price=_cents,
                                    received=st.integers(0, 10_000),
                                    billed_before=st.integers(0, 10_000)),
                          min_size=1, max_size=3)

STRATEGIES: dict[type[ev.Event], st.SearchStrategy[ev.Event]] = {
    ev.PurchaseOrderIssued: _ordered(),
    ev.GoodsReceived: _received(),
    ev.BillMatched: st.builds(ev.BillMatched, bill_id=_ids, po_id=_ids, vendor_id=_ids,
                              lines=_matched_lines.map(tuple), grni_amount=_cents,
                              price_variance=st.integers(-10**6, 10**6),
                              holds=st.lists(st.builds(
                                  ev.HoldReason, code=st.sampled_from(["price", "quantity"]),
                                  line=st.integers(1, 9), detail=_text), max_size=2).map(tuple)),
    ev.BillHeld: st.builds(ev.BillHeld, bill_id=_ids, vendor_id=_ids, po_id=_ids,
                           reasons=_reasons.map(tuple)),
    ev.BillHoldReleased: st.builds(ev.BillHoldReleased, bill_id=_ids, vendor_id=_ids,
                                   reason=_text,
                                   released_by_role=st.sampled_from(["controller", "system"])),
}
"""A strategy per purchasing event class."""

MOVES_MONEY: frozenset[type[ev.Event]] = frozenset({ev.GoodsReceived})
POSTS_NOTHING: frozenset[type[ev.Event]] = frozenset({
    ev.PurchaseOrderIssued,  # a commitment, not a transaction
    ev.BillMatched,  # the matched bill posts through its BillEntered (Dr GRNI, PPV; Cr AP)
    ev.BillHeld, ev.BillHoldReleased,  # workflow: a hold blocks payment, moves no money
})

EXACT: dict[type[ev.Event], list[tuple[str, ev.Event, tuple[Posting, ...]]]] = {
    ev.GoodsReceived: [
        ("each line's account debited at the PO price, GRNI credited with the total",
         ev.GoodsReceived(
             receipt_id="GR-000004", po_id="PO-000002", vendor_id="V7", entry_date=DAY,
             reference="RR-1042",
             lines=(ev.ReceivedLine(line=1, item="TONER", quantity=8, unit_price=2_500,
                                    amount=20_000, account="6000"),
                    ev.ReceivedLine(line=3, item="PAPER", quantity=3, unit_price=4_199,
                                    amount=12_597, account="1400")),
             total=32_597, grni_account="2050"), (
             Posting("6000", 20_000, "V7", "GR-000004"),
             Posting("1400", 12_597, "V7", "GR-000004"),
             Posting("2050", -32_597, "V7", "GR-000004"))),
        ("another GRNI account is used as the event names it",
         ev.GoodsReceived(
             receipt_id="GR-9", po_id="PO-9", vendor_id="V12", entry_date=DAY, reference="",
             lines=(ev.ReceivedLine(line=2, item="X", quantity=1, unit_price=1, amount=1,
                                    account="6100"),), total=1, grni_account="2060"), (
             Posting("6100", 1, "V12", "GR-9"),
             Posting("2060", -1, "V12", "GR-9"))),
    ],
}
"""Exact postings per purchasing rule."""

EXACT_CASES = [pytest.param(e, lines, id=f"{cls.__name__}: {what}")
               for cls, cases in EXACT.items() for what, e, lines in cases]


@pytest.mark.parametrize(("event", "lines"), EXACT_CASES)
def test_exact_postings(event: ev.Event, lines: tuple[Posting, ...]) -> None:
    posted = post(event)
    assert posted == lines
    assert all(type(p) is Posting and type(p.amount) is int for p in posted)
    assert sum(p.amount for p in posted) == 0


def test_every_purchasing_rule_has_a_case() -> None:
    assert set(EXACT) == MOVES_MONEY
    assert MOVES_MONEY <= POSTING_TYPES
    assert not POSTS_NOTHING & POSTING_TYPES
    assert set(STRATEGIES) == MOVES_MONEY | POSTS_NOTHING


@pytest.mark.parametrize("cls", sorted(POSTS_NOTHING, key=lambda c: c.__name__),
                         ids=lambda c: c.__name__)
@settings(max_examples=20)
@given(data=st.data())
def test_workflow_events_post_nothing(cls: type[ev.Event], data: st.DataObject) -> None:
    assert post(data.draw(STRATEGIES[cls])) == ()
