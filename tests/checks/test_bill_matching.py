"""A vendor's bill matching kept across dates (``_BillMatching``) gives at every date what
matching from scratch gives: the same items, in the same order, and the same matches."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from checks.reconcile import _Bill, _BillMatching
from checks.world import VendorBill

NUMBERS = ("INV-0042", "inv-0042 ", "42", "INV-0043", "INV 43", "B-7", "7", "X", "x", "")
KINDS = ("original", "price_variance", "duplicate", "near_duplicate")
DAY = date(2026, 5, 1)


@st.composite
def _world_step(draw: st.DrawFn, refs: list[str]) -> tuple[str, tuple[Any, ...]]:
    """Issue a bill (maybe a resend of an earlier or later ref) or change one."""
    if refs and draw(st.integers(0, 9)) == 0:
        return "change", (draw(st.integers(0, len(refs) - 1)),
                          draw(st.sampled_from((100, 200, 250))))
    kind = draw(st.sampled_from(KINDS))
    resend_of = None
    if kind in ("duplicate", "near_duplicate"):
        resend_of = draw(st.sampled_from([*refs, f"R{len(refs) + 1}", "R-missing"]))
    return "issue", (draw(st.sampled_from(NUMBERS)), draw(st.sampled_from((100, 200, 250))),
                     kind, resend_of)


@st.composite
def _history(draw: st.DrawFn) -> list[tuple[list[VendorBill], list[_Bill]]]:
    """A vendor's bills and the books' bills at each of a few dates."""
    w_bills: list[VendorBill] = []
    book_bills: list[_Bill] = []
    out = []
    for _ in range(draw(st.integers(1, 8))):
        for _ in range(draw(st.integers(0, 3))):
            what, args = draw(_world_step([w.bill_ref for w in w_bills]))
            if what == "change":
                i, total = args
                w_bills[i] = replace(w_bills[i], total=total)
            else:
                number, total, kind, resend_of = args
                w_bills.append(VendorBill("V1", f"R{len(w_bills) + 1}", number, DAY, total,
                                          kind, agreed_total=100, duplicate_of=resend_of))
        for _ in range(draw(st.integers(0, 3))):
            if book_bills and draw(st.integers(0, 7)) == 0:
                del book_bills[draw(st.integers(0, len(book_bills) - 1))]
                continue
            book_bills.append(_Bill(f"BILL-{len(book_bills) + 1:03d}-{draw(st.integers(0, 99))}",
                                    "V1", draw(st.sampled_from(NUMBERS)),
                                    draw(st.sampled_from((100, 200, 250))), "2000",
                                    DAY + timedelta(days=draw(st.integers(0, 5)))))
        ordered = sorted(book_bills, key=lambda b: (b.entry_date, b.bill_id))
        out.append((list(w_bills), ordered))
    return out


@settings(max_examples=500, deadline=None)
@given(_history())
def test_kept_matching_equals_matching_from_scratch(
        history: list[tuple[list[VendorBill], list[_Bill]]]) -> None:
    kept = _BillMatching()
    for w_bills, book_bills in history:
        assert kept.match("2000", "V1", w_bills, book_bills) == _BillMatching().match(
            "2000", "V1", w_bills, book_bills)


def test_a_bill_issued_later_rematches_the_books_bill_that_shares_its_number() -> None:
    """The books entered INV-0042 before the vendor's bill was folded: not issued; once the
    vendor's bill is there the kept matching finds it (and keeps the bills before it)."""
    first = VendorBill("V1", "R1", "B-7", DAY, 100, "original")
    books = [_Bill("BILL-1", "V1", "B-7", 100, "2000", DAY),
             _Bill("BILL-2", "V1", "INV-0042", 200, "2000", DAY + timedelta(days=1))]
    kept = _BillMatching()
    items, matched = kept.match("2000", "V1", [first], books)
    assert [i.kind for i in items] == ["bill_not_issued"] and matched == {"R1": "BILL-1"}
    later = VendorBill("V1", "R2", "inv-0042", DAY, 200, "original")
    items, matched = kept.match("2000", "V1", [first, later], books)
    assert items == [] and matched == {"R1": "BILL-1", "R2": "BILL-2"}


def test_a_bill_that_a_resend_names_as_its_original_rematches_through_the_resend() -> None:
    """A resend (R1, INV-0042) was folded before its original (R2, B-7): the books' INV-0042
    led nowhere; once R2 is issued the resend leads to it, though R2's number is another."""
    resend = VendorBill("V1", "R1", "INV-0042", DAY, 100, "duplicate", duplicate_of="R2")
    books = [_Bill("BILL-1", "V1", "INV-0042", 100, "2000", DAY)]
    kept = _BillMatching()
    items, _ = kept.match("2000", "V1", [resend], books)
    assert [i.kind for i in items] == ["bill_not_issued"]
    original = VendorBill("V1", "R2", "B-7", DAY, 100, "original")
    assert kept.match("2000", "V1", [resend, original], books) == (
        [], {"R2": "BILL-1"}) == _BillMatching().match("2000", "V1", [resend, original], books)


def test_a_resend_without_digits_names_the_second_entry_of_a_number_without_digits() -> None:
    """Numbers without digits compare equal by their (empty) digits, as matching from scratch
    compares them: a resend issued later renames the books' second entry's item."""
    first = VendorBill("V1", "R1", "X", DAY, 100, "original")
    books = [_Bill("BILL-1", "V1", "X", 100, "2000", DAY),
             _Bill("BILL-2", "V1", "x", 100, "2000", DAY + timedelta(days=1))]
    kept = _BillMatching()
    items, _ = kept.match("2000", "V1", [first], books)
    assert [i.note.split(",")[0] for i in items] == ["a second entry of X"]
    resend = VendorBill("V1", "R2", "Y", DAY, 100, "near_duplicate", duplicate_of="R1")
    items, _ = kept.match("2000", "V1", [first, resend], books)
    assert [i.note.split(",")[0] for i in items] == ["a near-duplicate of X"]
    assert (items, _) == _BillMatching().match("2000", "V1", [first, resend], books)
