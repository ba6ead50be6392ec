"""Event strategies and the money classification of the collections events.

The same shapes as ``tests/erp/test_postings.py`` (``STRATEGIES``; the money / no-money
classification), merged there so that its completeness tests cover these events too. No
collections event moves money: a dispute resolved by a credit memo posts through the
``CreditMemoIssued`` written with its ``DisputeResolved`` (its exact case is in
``test_postings.py``).
"""

from __future__ import annotations

from datetime import date

from hypothesis import strategies as st

from erp import events as ev
from erp.postings import POSTING_TYPES

_ids = st.from_regex(r"[A-Z]{1,4}-[0-9]{1,6}", fullmatch=True)
_cents = st.integers(min_value=0, max_value=10**9)
_days = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))
_text = st.text(max_size=20)

STRATEGIES: dict[type[ev.Event], st.SearchStrategy[ev.Event]] = {
    ev.DunningLetterSent: st.builds(ev.DunningLetterSent, letter_id=_ids, invoice_id=_ids,
                                    customer_id=_ids, level=st.integers(1, 3), sent_on=_days,
                                    days_past_due=st.integers(1, 999), amount=_cents),
    ev.InvoiceDisputed: st.builds(ev.InvoiceDisputed, dispute_id=_ids, invoice_id=_ids,
                                  customer_id=_ids, opened_on=_days, amount=_cents,
                                  reason=_text),
    ev.DisputeResolved: st.builds(ev.DisputeResolved, dispute_id=_ids, invoice_id=_ids,
                                  customer_id=_ids, resolved_on=_days,
                                  outcome=st.sampled_from(["credited", "rejected"]),
                                  amount=_cents, credit_memo_id=_ids | st.just(""),
                                  reason=_text),
    ev.PromiseToPayRecorded: st.builds(ev.PromiseToPayRecorded, promise_id=_ids,
                                       invoice_id=_ids, customer_id=_ids, recorded_on=_days,
                                       pay_by=_days, amount=_cents, balance=_cents,
                                       note=_text),
    ev.CreditHoldPlaced: st.builds(ev.CreditHoldPlaced, hold_id=_ids, customer_id=_ids,
                                   placed_on=_days, credit_limit=_cents, reason=_text),
    ev.CreditHoldReleased: st.builds(ev.CreditHoldReleased, hold_id=_ids, customer_id=_ids,
                                     released_on=_days, reason=_text,
                                     released_by_role=st.sampled_from(
                                         ["clerk", "controller", "system"])),
}
"""A strategy per collections event class."""

MOVES_MONEY: frozenset[type[ev.Event]] = frozenset()
POSTS_NOTHING: frozenset[type[ev.Event]] = frozenset(STRATEGIES)
"""Letters, disputes, promises and holds are workflow: no GL lines."""


def test_no_collections_event_has_a_posting_rule() -> None:
    assert not POSTS_NOTHING & POSTING_TYPES
