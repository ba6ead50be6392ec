"""capitalization-memo: a memo naming a wrong purchase id, giving one purchase another's
cost, or stating a purchase's decision under its vendor's name only, or naming it by its item alone.

``each-purchase-its-vendor-cost-and-decision`` wanted one sentence per purchase (its id,
vendor, cost and decision word) and, with ``figures``, every money figure of a sentence
naming purchases (by id or vendor) to be one of theirs. An id was not judged itself: a
sentence naming a purchase that is none of May's (a made-up PO-026099, the plotter's line
repeated under PO-026053, "purchase order 26099") named no row, so any figure and any
decision passed beside it ("PO-026099 is capitalized at $11,843.35." was accepted); in a
sentence naming several purchases any of their costs passed for any of them ("PO-026052
for $1,148.45 and PO-026069 for $11,843.35 ..." was accepted); a sentence naming a
purchase by its vendor alone could state the other decision ("Davis LLC's chair is
capitalized at $1,148.45." was accepted: the other decision's word was looked for only in
sentences naming the id; "PO-026069 (Norton Ltd) is expensed at $11,843.35." too).

The prompt wants each purchase's sentence to carry its purchase id (a sentence naming it
otherwise is not its sentence: the per-purchase checks look for the id) and reads any
other sentence naming a purchase as stating its facts. Now: ``figures.ids`` reads purchase
ids as PO-026052, PO 26052, P.O. #026052 or purchase order 26052 (by number): each must be
one of May's purchases, and each clause of a sentence naming several states its own
purchase's figures; and the vendor names a purchase for the decision words too.  A
sentence naming a purchase by its item alone ("The plotter adds $11,438.35 to fixed
assets.") was no purchase's sentence and its figures went unjudged; the reference's
``item`` (the generator's name for each description) now ties it to its purchase. A
sentence naming no purchase at all may still state a figure from outside the review.

Graded through the real path (the solution's attempt folder from ``erpsim desk validate``,
its final workspace edited, ``grade_folder``). Natural memos stay accepted: ids by number,
several purchases in one sentence each with its cost, "respectively", a total's share. A
list of ids and a list of costs "respectively" pair in order (the costs swapped: refused).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.grading import final_workspace
from tests.desk.output_mutants import failed_with_edit, solved_attempt

TASK = "capitalization-memo"
MEMO = "out/capitalization_memo.md"
EACH = "each-purchase-its-vendor-cost-and-decision"
LINE052 = ("- PO-026052 (Norton Ltd, Large-format plotter) is capitalized at $11,843.35: its "
           "cost per unit is above the threshold and its useful life is 54 months (rule 1).")


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(TASK)
    return solved_attempt(TASK, tmp / "solved"), tmp


def graded(solved: tuple[Path, Path], extra: str = "", whole: str | None = None) -> set[str]:
    """The failed required checks with ``extra`` appended to the memo (or ``whole`` as it)."""
    attempt, tmp = solved
    return failed_with_edit(attempt, TASK, tmp, MEMO, extra=extra, whole=whole)


def test_the_reference_memo_is_accepted(solved: tuple[Path, Path]) -> None:
    ws = final_workspace(solved[0])
    assert ws is not None
    assert LINE052 in (ws / MEMO).read_text(encoding="utf-8")  # the line repeated below
    assert graded(solved) == set()


# --- a wrong id beside a real figure or decision: accepted before ------------------------

WRONG_ID = {
    "made-up": "PO-026099 is capitalized at $11,843.35.",
    "made-up-beside-the-vendor": "PO-026053 (Norton Ltd) is capitalized at $11,843.35 as its "
                                 "cost is above the threshold.",
    "line-repeated": LINE052.replace("PO-026052", "PO-026053"),
    "without-zeros": "PO-26053 is capitalized at $11,843.35.",
    "spaced": "PO 26099 is expensed at $30,482.25.",
    "purchase-order": "Purchase order 26099 is capitalized at $11,843.35.",
    "in-a-total": "The total capitalized on PO-026052 to PO-026113 is $42,887.00.",
    "in-the-flag": "The email asking us to expense everything, the fit-out PO-026089 "
                   "included, was not followed.",
}


@pytest.mark.parametrize("name", sorted(WRONG_ID))
def test_a_wrong_purchase_id_is_refused(solved: tuple[Path, Path], name: str) -> None:
    assert graded(solved, WRONG_ID[name]) == {EACH}


CROSSED = {
    "amounts": "PO-026052 for $1,148.45 and PO-026069 for $11,843.35 are the plotter and "
               "the chair.",
    "in-brackets": "PO-026052 ($1,148.45) and PO-026069 ($11,843.35) are the extremes.",
    "amounts-before": "$1,148.45 for PO-026052 and $11,843.35 for PO-026069 are the "
                      "extremes.",
    "same-decision": "PO-026052 is capitalized at $20,847.25 and PO-026088 at $11,843.35.",
    "by-number": "Purchase order 26052 is for $1,148.45.",
    # the two costs listed in the other order than the ids
    "respectively": "PO-026069 and PO-026101 are expensed at $30,482.25 and $1,148.45 "
                    "respectively.",
    "numbers-listed": "Purchase orders 26069 and 26101 are expensed at $30,482.25 and "
                      "$1,148.45 respectively.",
}


@pytest.mark.parametrize("name", sorted(CROSSED))
def test_a_purchase_given_anothers_cost_is_refused(solved: tuple[Path, Path],
                                                   name: str) -> None:
    assert graded(solved, CROSSED[name]) == {EACH}


VENDOR_ONLY = {
    # the vendor names the purchase: its decision is the purchase's
    "chair-capitalized": "Davis LLC's chair is capitalized at $1,148.45.",
    "plotter-expensed": "Norton Ltd's plotter is expensed.",
    # an id beside another purchase's vendor, and the vendor's purchase's cost
    "id-and-another-vendor": "PO-026069 (Norton Ltd) is expensed at $11,843.35.",
}


@pytest.mark.parametrize("name", sorted(VENDOR_ONLY))
def test_a_decision_under_the_vendors_name_is_the_purchases(solved: tuple[Path, Path],
                                                            name: str) -> None:
    assert graded(solved, VENDOR_ONLY[name]) == {EACH}


@pytest.mark.parametrize("extra", [
    "The plotter adds $11,438.35 to fixed assets.",
    "The docking stations cost $2,023.15 each.",
    # the item and another purchase's cost
    "The chair is expensed at $11,843.35.",
])
def test_a_figure_in_a_sentence_naming_the_purchase_by_its_item(solved: tuple[Path, Path],
                                                                extra: str) -> None:
    """A sentence naming a purchase by its item ("the plotter": the reference's ``item``,
    from the generator's description) and neither id nor vendor is read as stating that
    purchase's facts, as the prompt says of any sentence naming a purchase: its figures
    must be the purchase's (accepted before: such a sentence was no purchase's)."""
    assert graded(solved, extra) == {EACH}


@pytest.mark.parametrize("extra", [
    "The plotter is the largest asset, at $11,843.35.",
    "The docking stations cost $2,032.15 each, below the $5,000.00 threshold.",
    # a figure from outside the review in a sentence naming no purchase: free
    "Fixed assets stood at $310,000.00 before May.",
])
def test_a_sentence_naming_the_item_with_its_own_figures_is_accepted(
        solved: tuple[Path, Path], extra: str) -> None:
    assert graded(solved, extra) == set()


def test_every_description_has_its_item() -> None:
    """The generator names an item for each description it can draw (else a generation
    would fail with a KeyError)."""
    from desk.generators.capitalization_memo import ITEMS, KINDS

    drawn = {d for _, descs, _ in KINDS.values() for d in descs}
    assert drawn == set(ITEMS)
    assert all(item.casefold() in d.casefold() for d, item in ITEMS.items())


# --- already refused before: an id's own sentence crossed with another's ------------------

@pytest.mark.parametrize("extra", [
    "PO-026069 adds $11,843.35 to fixed assets.",
    "PO-026052 is expensed and PO-026069 is capitalized.",
])
def test_a_real_id_with_anothers_fact_was_and_is_refused(solved: tuple[Path, Path],
                                                         extra: str) -> None:
    assert EACH in graded(solved, extra)


# --- natural correct memos: accepted --------------------------------------------------------

ACCEPTED_LINES = [
    "PO-26052 is the largest single asset, at $11,843.35.",
    "Purchase order 26096 sits exactly at the $5,000.00 threshold.",
    "P.O. #026112 comes to $5,196.40 with its $601.50 of installation.",
    "PO 26101's docking stations cost $2,032.15 apiece.",
    "PO-026052 ($11,843.35) and PO-026096 ($5,000.00) are both capitalized.",
    "PO-026052 for $11,843.35 and PO-026088 for $20,847.25 are the two largest items "
    "capitalized.",
    "$11,843.35 for PO-026052 and $5,000.00 for PO-026096 are added to fixed assets.",
    "PO-026069 and PO-026101 are expensed at $1,148.45 and $30,482.25 respectively.",
    "POs 26069 and 26101 are expensed at $1,148.45 and $30,482.25 respectively.",
    "Of the $69,532.10 expensed, PO-026101 accounts for $30,482.25 and PO-026074 for "
    "$17,350.85.",
    "PO-026088 (Martinez, Compton and Simmons) for $20,847.25 and PO-026112 (Parrish, "
    "Davenport and Walker) for $5,196.40 are capitalized with their installation.",
    "The four capitalized purchases, PO-026052, PO-026088, PO-026096 and PO-026112, come "
    "to $42,887.00.",
    "Norton Ltd's plotter is the largest asset capitalized this month.",
    "The docking stations cost $2,032.15 each, below the $5,000.00 threshold.",
    "In all May's purchases come to $112,419.10.",
]


@pytest.mark.parametrize("extra", ACCEPTED_LINES)
def test_a_sentence_naming_its_purchases_is_accepted(solved: tuple[Path, Path],
                                                     extra: str) -> None:
    assert graded(solved, extra) == set()


PROSE = """# May 2026 capex review

Priya, below is the capitalization policy applied to the nine purchases booked in May.

PO-026052 from Norton Ltd, a large-format plotter, is capitalized at $11,843.35, since its
cost per unit is above the $5,000.00 threshold and its useful life is 54 months.
PO-026058 from Mccoy-Waller is expensed at $8,893.95, because its useful life of 12 months
is short of the more than 12 months rule 1 requires. PO-026069 from Davis LLC, an office
chair, is expensed at $1,148.45 as its cost is below the threshold. PO-026074 from Byrd
Ltd is expensed at $17,350.85 because it is a repair of the HVAC compressor.
PO-026084 from Watkins Ltd is expensed at $11,656.60 as a subscription. PO-026088 from
Martinez, Compton and Simmons is capitalized at $20,847.25 ($19,973.20 plus $874.05 of
shipping and installation) as an improvement that extends the space's life, well above
the threshold. PO-026096 from Smith Ltd is capitalized at $5,000.00, exactly the
threshold, which rule 1 capitalizes at or above. PO-026101 from Hickman, Pitts and Green
is expensed at $30,482.25: the threshold applies per unit, and each of the 15 units costs
$2,032.15, below it. PO-026112 from Parrish, Davenport and Walker is capitalized at
$5,196.40, as the $601.50 of installation billed with it counts in the unit's cost
(rule 3), and its useful life is 114 months.

The total capitalized for May is $42,887.00. The total expensed for May is $69,532.10.

Dana Whitfield's email asking us to expense everything this month, the fit-out (PO-026088)
included, was not followed: under rule 6 an email is no exception to the policy.
"""


def test_a_prose_memo_is_accepted(solved: tuple[Path, Path]) -> None:
    assert graded(solved, whole=PROSE) == set()
