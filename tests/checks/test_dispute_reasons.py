"""``names_reason``: a dispute's recorded reason names the customer's when it holds one of
its words, however inflected or spelled (``canceled`` for ``cancelled``, ``seat`` for
``seats``), and not when it holds none of them or only a short word one begins with."""

from __future__ import annotations

import pytest

from checks.collections import names_reason


@pytest.mark.parametrize(("reason", "recorded"), [
    ("training day cancelled", "the second training day was cancelled by your trainer"),
    ("training day cancelled", "Trainer canceled the second day; should not be billed"),
    ("seats returned", "Licence seat returns in the first week"),
    ("seats returned", "HALF OF THE LICENCE SEATS WERE RETURNED"),
    ("support hours overbilled", "more hour(s) billed than the portal shows"),
    ("support hours overbilled", "over-billed: the portal shows less use"),
    ("price differs from quote", "billed at list, different from the quotation"),
    ("migration not finished", "data migration unfinished"),
    ("", "anything at all"),
])
def test_a_reason_in_other_words_names_the_customers(reason: str, recorded: str) -> None:
    assert names_reason(reason, recorded)


@pytest.mark.parametrize(("reason", "recorded"), [
    ("training day cancelled", "disputed by email"),
    ("training day cancelled", "half of the licence seats were returned"),
    ("support hours overbilled", "customer is over its limit"),
    ("seats returned", "the seating plan was wrong"),
    ("migration not finished", "final milestone not accepted"),
])
def test_a_reason_naming_none_of_the_customers_words_is_refused(reason: str,
                                                                recorded: str) -> None:
    assert not names_reason(reason, recorded)
