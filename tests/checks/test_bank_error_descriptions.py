"""``bank_errors_reported`` with ``description_words``: a report of one of the bank's errors
says what the bank got wrong in any words of its kind (a charge posted twice, another
client's deposit), however the clerk puts it; a placeholder, or only the words of the other
kind, does not. Off by default. The real attempts are
test_bank_reconciliation_multi_audit3.py's."""

from __future__ import annotations

import pytest

from checks.bank_multi import BankErrorsReported, description_says


@pytest.mark.parametrize(("kind", "description"), [
    # the reference's and the oracle's own descriptions
    ("duplicate_fee", "service charge FEE 2026-05 posted twice"),
    ("duplicate_fee", "the bank's error (duplicate fee)"),
    ("misposted_deposit", "deposit for account ...1413 (not ours) credited to B-SAVE"),
    ("misposted_deposit", "the bank's error (misposted deposit)"),
    # a clerk's own words
    ("duplicate_fee", "Duplicate service charge"),
    ("duplicate_fee", "Fee charged twice - please refund one"),
    ("duplicate_fee", "Service charge posted a second time"),
    ("duplicate_fee", "double charge"),
    ("misposted_deposit", "Deposit belongs to another customer (acct ending 1413)"),
    ("misposted_deposit", "Not our deposit - Northside Auto Glass, for acct ...1413"),
    ("misposted_deposit", "Credited to the wrong account; please reverse"),
    ("misposted_deposit", "Misposted deposit"),
    # a kind of no words: any description
    ("other", "the bank's mistake"),
])
def test_a_description_in_its_kinds_words_says_what_went_wrong(kind: str,
                                                                description: str) -> None:
    assert description_says(description, kind)


@pytest.mark.parametrize(("kind", "description"), [
    ("duplicate_fee", "x"), ("misposted_deposit", "n/a"), ("duplicate_fee", "-"),
    ("other", "..."), ("duplicate_fee", "  "),
    ("duplicate_fee", "bank error"),
    ("misposted_deposit", "bank error"),
    ("misposted_deposit", "error, see statement"),
    ("duplicate_fee", "deposit for another client"),   # another kind's words
    ("misposted_deposit", "posted twice"),
])
def test_a_placeholder_or_another_kinds_words_says_nothing(kind: str,
                                                           description: str) -> None:
    assert not description_says(description, kind)


def test_description_words_are_off_unless_asked() -> None:
    assert BankErrorsReported(type="bank_errors_reported", name="b").description_words is False
    assert BankErrorsReported(type="bank_errors_reported", name="b",
                              description_words=True).description_words
