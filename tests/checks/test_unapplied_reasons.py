"""``unapplied_listed`` with ``reason_words``: a listed line's reason says why in any words
of the line's kind (the bank's second copy of a line, a payment the customer sent again, a
payment for an invoice already paid), however the clerk puts it; a placeholder, or only the
words of another kind, does not. Off by default (the reasons of a scenario that does not
ask for it stay free). The real attempts are test_cash_application_audit3.py's."""

from __future__ import annotations

import pytest

from checks.policy import UNAPPLIED_REASON_WORDS, UnappliedListed, _reason_says


@pytest.mark.parametrize(("kind", "reason"), [
    # the reference's and the oracle's own reasons
    ("copy", "the bank exported this deposit twice: a second copy of BL-000127 (one deposit)"),
    ("copy", "the bank exported BL-000127 twice"),
    ("repeat", "duplicate of BL-000024: the same payment (customer, amount and reference) "
               "was already applied"),
    ("repeat", "the customer paid PAY-C0119-0001 twice"),
    ("closed", "names INV-000048, already paid (closed invoice)"),
    ("closed", "pays an invoice already paid"),
    # a clerk's own words
    ("copy", "Bank dup line"),
    ("copy", "Duplicate deposit line (bank error)"),
    ("repeat", "Customer sent this payment again - hold for refund"),
    ("repeat", "Repeat payment"),
    ("repeat", "INV-000017 is closed: paid by BL-000017"),
    ("closed", "Invoice was settled before; customer overpaid"),
    ("closed", "Payment for closed invoice INV-000048"),
    # a line of no kind of its own: any reason
    (None, "payer 'ACME' is not a customer and no remittance names the customer"),
])
def test_a_reason_in_its_kinds_words_says_why(kind: str | None, reason: str) -> None:
    assert _reason_says(reason, kind, UNAPPLIED_REASON_WORDS)


@pytest.mark.parametrize(("kind", "reason"), [
    ("copy", "x"), ("repeat", "n/a"), ("closed", "-"), (None, "TBD"), (None, "  "),
    ("copy", "cannot be placed"),
    ("repeat", "cannot be placed"),
    ("closed", "unidentified receipt"),
    ("copy", "closed invoice"),          # a bank copy called a payment for a closed invoice
    ("repeat", "pending remittance"),
])
def test_a_placeholder_or_another_kinds_words_says_nothing(kind: str | None,
                                                           reason: str) -> None:
    assert not _reason_says(reason, kind, UNAPPLIED_REASON_WORDS)


def test_reason_words_are_off_unless_asked() -> None:
    spec = UnappliedListed(type="unapplied_listed", path="out/unapplied.csv")
    assert spec.reason_words is False
    assert UnappliedListed(type="unapplied_listed", path="out/unapplied.csv",
                           reason_words=True).reason_words
