"""Exact postings of the payment-terms rules: an early-payment discount taken.

The same shape as ``tests/erp/test_postings.py``'s ``EXACT`` (event class -> cases of
``(what, event, the exact lines it must post)``), so that a test enumerating the
posting rules can merge these cases with its own.
"""

from __future__ import annotations

from datetime import date

import pytest

from erp import events as ev
from erp.postings import POSTING_TYPES, Posting, post

DAY = date(2026, 3, 2)

EXACT: dict[type[ev.Event], list[tuple[str, ev.Event, tuple[Posting, ...]]]] = {
    ev.PurchaseDiscountTaken: [
        ("AP debited with the discount on the bill, purchase discounts credited",
         ev.PurchaseDiscountTaken(bill_id="BILL-000007", vendor_id="V3", payment_id="PAY-000002",
                                  entry_date=DAY, amount=4_318, ap_account="2000",
                                  discount_account="4950"), (
             Posting("2000", 4_318, "V3", "BILL-000007"),
             Posting("4950", -4_318, "V3", "BILL-000007"))),
        ("another AP account and discount account are used as the event names them",
         ev.PurchaseDiscountTaken(bill_id="B-9", vendor_id="V12", payment_id="PAY-9",
                                  entry_date=DAY, amount=1, ap_account="2010",
                                  discount_account="4960"), (
             Posting("2010", 1, "V12", "B-9"),
             Posting("4960", -1, "V12", "B-9"))),
    ],
}
"""Exact postings per payment-terms rule."""

POSTS_NOTHING: tuple[ev.Event, ...] = (
    ev.BillTermsSet(bill_id="BILL-000007", vendor_id="V3", discount=4_318,
                    discount_until=date(2026, 3, 12)),
)
"""Payment-terms events that move no money."""

EXACT_CASES = [pytest.param(e, lines, id=f"{cls.__name__}: {what}")
               for cls, cases in EXACT.items() for what, e, lines in cases]


@pytest.mark.parametrize(("event", "lines"), EXACT_CASES)
def test_exact_postings(event: ev.Event, lines: tuple[Posting, ...]) -> None:
    posted = post(event)
    assert posted == lines
    assert all(type(p) is Posting and type(p.amount) is int for p in posted)
    assert sum(p.amount for p in posted) == 0


def test_every_payment_terms_rule_has_a_case() -> None:
    assert all(cls in POSTING_TYPES for cls in EXACT)
    assert all(type(e) is cls for cls, cases in EXACT.items() for _, e, _ in cases)


@pytest.mark.parametrize("event", POSTS_NOTHING, ids=lambda e: type(e).__name__)
def test_terms_post_nothing(event: ev.Event) -> None:
    assert type(event) not in POSTING_TYPES
    assert post(event) == ()
