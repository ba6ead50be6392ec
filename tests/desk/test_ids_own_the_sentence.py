"""text_ref_sentences with ``figures.ids``: a sentence naming ids belongs to the rows they name.

capitalization-memo's ``each-purchase-its-vendor-cost-and-decision`` judges the money
figures of a sentence naming purchases (``figures.about``: the purchase id or the vendor)
against those purchases' figures, and reads purchase ids (``figures.ids``). A sentence
naming one purchase by its id and another by its vendor was about both, so either's cost
passed beside the id: "PO-026069 (Norton Ltd) adds $11,843.35 to fixed assets." (Davis
LLC's chair given Norton Ltd's plotter's cost) was accepted. Now a sentence naming one or
more ids belongs only to the rows its ids name (a vendor or customer name matched by
``figures.about`` adds none); a sentence naming no id keeps the ``about`` rule (a vendor
alone names its purchase).

dunning-emails has no such case: its ``figures.about`` is the invoice id alone (the
customer's name names no row), and each email is judged only against its own customer's
invoices; the pin below shows the customer's name beside an id with another invoice's
figure refused before and after.

Graded through the real path (the solution's attempt folder from ``erpsim desk validate``,
its final workspace edited, ``grade_folder``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.desk.output_mutants import failed_with_edit, solved_attempt

CAP = "capitalization-memo"
MEMO = "out/capitalization_memo.md"
EACH = "each-purchase-its-vendor-cost-and-decision"

DUN = "dunning-emails"
C0003 = "out/emails/C0003.txt"
ASKS3 = "C0003-asks-each-overdue-invoice"


def _attempt(factory: pytest.TempPathFactory, task: str) -> tuple[Path, Path]:
    tmp = factory.mktemp(task)
    return solved_attempt(task, tmp / "solved"), tmp


@pytest.fixture(scope="module")
def cap(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _attempt(tmp_path_factory, CAP)


@pytest.fixture(scope="module")
def dun(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _attempt(tmp_path_factory, DUN)


def graded(solved: tuple[Path, Path], task: str, rel: str, extra: str) -> set[str]:
    """The failed required checks with ``extra`` appended to ``rel``."""
    attempt, tmp = solved
    return failed_with_edit(attempt, task, tmp, rel, extra=extra)


# --- an id beside another purchase's vendor and cost: accepted before ------------------

ANOTHERS_VENDOR = {
    # Davis LLC's chair (expensed, $1,148.45) given Norton Ltd's plotter's cost
    "in-brackets": "PO-026069 (Norton Ltd) adds $11,843.35 to fixed assets.",
    "vendor-first": "Norton Ltd's PO-026069 adds $11,843.35 to fixed assets.",
    "from-the-vendor": "PO-026069 from Norton Ltd comes to $11,843.35.",
    # two capitalized purchases crossed: Martinez, Compton and Simmons' fit-out
    # ($20,847.25) given Norton Ltd's cost
    "same-decision": "PO-026088 (Norton Ltd) adds $11,843.35 to fixed assets.",
    # a list of ids judged by all the rows it names: the vendor's row was among them
    "respectively": "PO-026069 (Norton Ltd) and PO-026096 come to $11,843.35 and "
                    "$5,000.00 respectively.",
}


@pytest.mark.parametrize("name", sorted(ANOTHERS_VENDOR))
def test_an_id_beside_another_purchases_vendor_and_cost_is_refused(
        cap: tuple[Path, Path], name: str) -> None:
    assert graded(cap, CAP, MEMO, ANOTHERS_VENDOR[name]) == {EACH}


# --- refused before and after ------------------------------------------------------------

@pytest.mark.parametrize("extra", [
    "Davis LLC's chair adds $11,843.35 to fixed assets.",  # a vendor alone: its purchase
    "PO-026069 adds $11,843.35 to fixed assets.",
    # each clause's figure its own id's: the first clause's vendor was never its row
    "PO-026069 (Norton Ltd) comes to $11,843.35 and PO-026096 to $5,000.00.",
])
def test_a_vendor_or_an_id_alone_with_anothers_cost_was_and_is_refused(
        cap: tuple[Path, Path], extra: str) -> None:
    assert graded(cap, CAP, MEMO, extra) == {EACH}


def test_dunning_a_customer_name_beside_an_id_adds_no_invoice(dun: tuple[Path, Path]) -> None:
    """The dunning analogue (INV-000111 is $6,868.20; $9,044.48 is INV-000115's): refused
    before and after, the customer's name matching no ``figures.about``."""
    extra = "PS: Gilmore-Anderson's INV-000111 for $9,044.48 remains unpaid."
    assert graded(dun, DUN, C0003, extra) == {ASKS3}


# --- natural correct sentences: accepted -------------------------------------------------

ACCEPTED = [
    "PO-026052 (Norton Ltd) adds $11,843.35 to fixed assets.",
    "Norton Ltd's PO-026052 adds $11,843.35 to fixed assets.",
    "PO-026052 from Norton Ltd comes to $11,843.35, above the $5,000.00 threshold.",
    "PO-026052 (Norton Ltd) for $11,843.35 and PO-026069 (Davis LLC) for $1,148.45 are "
    "the largest and the smallest purchase.",
    "PO-026052 (Norton Ltd) at $11,843.35 and PO-026096 (Smith Ltd) at $5,000.00 are "
    "both added to fixed assets.",
    "Norton Ltd's plotter adds $11,843.35 to fixed assets.",
    "PO-026069 (Davis LLC) comes to $1,148.45, far less than Norton Ltd's plotter.",
    "Of the $42,887.00 added to fixed assets, PO-026052 (Norton Ltd) accounts for "
    "$11,843.35.",
]


@pytest.mark.parametrize("extra", ACCEPTED)
def test_an_id_with_its_own_vendor_and_figures_is_accepted(cap: tuple[Path, Path],
                                                           extra: str) -> None:
    assert graded(cap, CAP, MEMO, extra) == set()


def test_dunning_a_customer_name_beside_its_invoice_is_accepted(
        dun: tuple[Path, Path]) -> None:
    extra = "PS: Gilmore-Anderson's INV-000111 for $6,868.20 was due on May 3, 2026."
    assert graded(dun, DUN, C0003, extra) == set()
