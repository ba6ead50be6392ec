"""The drafting tasks refuse a memo that states a fact right and contradicts it elsewhere.

Each text check used to look for one good sentence and ignore the rest: a memo with the
right per-line sentence plus a summary saying the other direction ("In short, contractors
fell"), a summary table giving a capitalized purchase as expensed, or a list of missing
items naming a supported one passed. The checks now carry ``about`` (checks/files.py):
every other sentence about the item must be free of the check's vetoes. Graded by the
tasks' real checks on the reference solution's files with one sentence appended; the
solution and sentences consistent with it are still accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.desk.output_mutants import Solved, solve

FILES = {"pl-variance-memo": "out/variance_memo.md",
         "capitalization-memo": "out/capitalization_memo.md",
         "audit-request-response": "out/audit_response.md",
         "revenue-budget-variance": "out/commentary.txt",
         "expense-receipts-review": "out/review_notes.md",
         "customer-profitability": "out/memo.txt"}

REFUSED = [
    ("pl-variance-memo", "In short, service revenue rose and contractors fell.",
     ["explains-each-line-the-rule-explains"]),
    ("pl-variance-memo", "| Contractors | decreased | $2,030.96 |",
     ["explains-each-line-the-rule-explains"]),
    ("capitalization-memo", "| PO-026096 | expensed | $5,000.00 |",
     ["each-purchase-its-vendor-cost-and-decision", "PO-026096-capitalized-at-threshold"]),
    ("capitalization-memo", "PO-026112 was expensed at $5,196.40.",
     ["each-purchase-its-vendor-cost-and-decision", "PO-026112-capitalized-installation"]),
    ("capitalization-memo", "PO-026101 is capitalized as computer equipment.",
     ["each-purchase-its-vendor-cost-and-decision", "PO-026101-expensed-per-unit"]),
    ("audit-request-response",
     "Support is missing for JE-2605-013, JE-2605-015, INV-000233 and RCT-00091.",
     ["JE-2605-013-supported"]),
    ("audit-request-response", "RCT-00091 is supported by support/scan_0111.txt.",
     ["RCT-00091-missing"]),
    ("revenue-budget-variance", "Data migration exceeded its budget.",
     ["commentary-each-flagged-line"]),
    ("expense-receipts-review", "EC-1054 also has no receipt.",
     ["notes-each-rejected-claim-and-reason"]),
    ("customer-profitability",
     "Revenue is concentrated: our top five customers account for a large share.",
     ["memo-concentration-below-threshold"]),
    ("customer-profitability", "Walls Group's margin is comfortably above the 20% floor.",
     ["memo-review-C0012"]),
]

ACCEPTED = [
    ("pl-variance-memo", "In short, revenue fell while costs rose."),
    ("pl-variance-memo", "Contractors rose on the new implementation projects."),
    # a sentence on a total may explain it by the lines (the totals carry no about)
    ("pl-variance-memo", "Net income decreased mainly because revenue fell while costs rose."),
    ("capitalization-memo",
     "Of the $112,419.10 total, $42,887.00 is capitalized and $69,532.10 expensed."),
    ("revenue-budget-variance",
     "Total revenue came in below the total budget, although two lines exceeded theirs."),
    ("capitalization-memo", "PO-026096 has a useful life of 36 months."),
    ("capitalization-memo",
     "Dana Whitfield's email asked us to expense PO-026052 and everything else; we did "
     "not follow that request."),
    ("audit-request-response", "Support is missing for JE-2605-015, INV-000233 and RCT-00091."),
    ("revenue-budget-variance", "Data migration fell short of its budget on delayed projects."),
    ("revenue-budget-variance",
     "Managed services exceeded its budget, the largest gain within the total."),
    ("expense-receipts-review", "EC-1043 can be resubmitted with its receipt."),
    ("customer-profitability", "No single customer exceeds 10% of revenue."),
    ("customer-profitability", "Walls Group has bought from us since 2019."),
]


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Solved]:
    return {t: solve(t, tmp_path_factory.mktemp(t)) for t in FILES}


def graded(s: Solved, task: str, sentence: str) -> list[str]:
    path: Path = s.path(FILES[task])
    text = path.read_text(encoding="utf-8")
    return s.failed_with_text(FILES[task], {text: text.rstrip("\n") + "\n\n" + sentence + "\n"})


@pytest.mark.parametrize(("task", "sentence", "checks"), REFUSED,
                         ids=[f"{t}:{s[:30]}" for t, s, _ in REFUSED])
def test_a_contradicting_sentence_is_refused(solved: dict[str, Solved], task: str,
                                             sentence: str, checks: list[str]) -> None:
    assert solved[task].failed() == []
    assert sorted(graded(solved[task], task, sentence)) == sorted(checks)


@pytest.mark.parametrize(("task", "sentence"), ACCEPTED,
                         ids=[f"{t}:{s[:30]}" for t, s in ACCEPTED])
def test_a_consistent_sentence_is_accepted(solved: dict[str, Solved], task: str,
                                           sentence: str) -> None:
    assert graded(solved[task], task, sentence) == []


def test_two_lines_facts_in_one_sentence_are_read_clause_by_clause(
        solved: dict[str, Solved]) -> None:
    """The prompt asks for each line's facts in its own sentence; a summary naming lines
    that went different ways is read clause by clause (``aside``): right as written, it
    passes, and a clause giving a line the wrong direction is refused (it was refused
    whole before, right or wrong)."""
    from desk.tasks import load_task

    prompt = " ".join(load_task("pl-variance-memo").loaded.prompt_template.split())
    assert "Keep each line's facts in its own sentence" in prompt
    right = "Net income fell as service revenue fell while contractors rose."
    assert graded(solved["pl-variance-memo"], "pl-variance-memo", right) == []
    wrong = "Net income fell as service revenue rose while contractors rose."
    assert graded(solved["pl-variance-memo"], "pl-variance-memo", wrong) == [
        "explains-each-line-the-rule-explains"]


@pytest.mark.parametrize(("task", "words"), [
    ("pl-variance-memo", "Any sentence naming a line, a summary's too, is read as stating "
                         "that line's facts, clause by clause: in a sentence naming several "
                         "lines or net income, a clause naming one (and those after it "
                         "naming no other) is that one's."),
    ("capitalization-memo", "Any other sentence naming a purchase, a summary's too, is read "
                            "as stating that purchase's facts, clause by clause: in a "
                            "sentence naming several purchases, a clause naming one (and "
                            "those after it naming no other purchase) is that purchase's."),
    ("audit-request-response", "Any other sentence naming an item, a summary's too, is read "
                               "as stating that item's facts, clause by clause: in a sentence "
                               "naming several items, a clause naming one (and those after it "
                               "naming no other item) is that item's."),
    ("revenue-budget-variance", "Any sentence naming a line is read as stating that line's "
                                "facts, clause by clause: in a sentence naming several lines "
                                "or the total, a clause naming one (and those after it naming "
                                "no other) is that one's."),
    ("expense-receipts-review", "any other line naming a rejected claim is read as giving its "
                                "reason, clause by clause: in a sentence naming several "
                                "claims, a clause naming one, and those after it naming no "
                                "other, is that claim's"),
])
def test_the_prompt_says_other_sentences_are_read_as_the_items(task: str, words: str) -> None:
    """The about rule refuses a summary stating several items' facts together (below); the
    prompts say each item's facts go in its own sentence and how another sentence reads."""
    from desk.tasks import load_task

    assert words in " ".join(load_task(task).loaded.prompt_template.split())


def test_a_summary_of_several_decisions_in_one_sentence_is_read_clause_by_clause(
        solved: dict[str, Solved]) -> None:
    """Each purchase's clause, a list reaching its shared verb: right as it is (refused
    before aside, as a contradiction of every purchase it named)."""
    sentence = ("In short, PO-026052 and PO-026088 are capitalized and PO-026058 is "
                "expensed.")
    assert graded(solved["capitalization-memo"], "capitalization-memo", sentence) == []
    # one sentence per decision reads the same
    split = "In short, PO-026052 and PO-026088 are capitalized. PO-026058 is expensed."
    assert graded(solved["capitalization-memo"], "capitalization-memo", split) == []
    # a purchase given the other decision in its clause is refused
    wrong = ("In short, PO-026052 and PO-026058 are capitalized and PO-026088 is "
             "expensed.")
    assert sorted(graded(solved["capitalization-memo"], "capitalization-memo", wrong)) == [
        "PO-026058-expensed-useful-life", "PO-026088-capitalized-improvement",
        "each-purchase-its-vendor-cost-and-decision"]
