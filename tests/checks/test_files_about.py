"""``about`` on text_sentence_matches and text_ref_sentences: a fact stated right in one
sentence and contradicted in another sentence about the same item fails.

Without ``about`` the checks look for one good sentence and ignore the rest, so a memo
saying "Contractors increased by ..." and, in its summary, "contractors fell" passed.
"""

from __future__ import annotations

from typing import Any

import pytest

from checks.context import CheckContext
from checks.registry import CheckResult
from tests.checks.helpers import put, run_one, spec_problems

MEMO = """# May against April

Service revenue decreased by $86,249.11 (22.1%) on lower volumes.
Contractors increased by 2030.96, 19.4% more than April.
"""

VARIANCES = ("name,change,change_pct,direction,explain\n"
             "Service revenue,86249.11,22.1,decreased,yes\n"
             "Contractors,2030.96,19.4,increased,yes\n")

REF = {"type": "text_ref_sentences", "path": "out/memo.md", "ref": "var.csv",
       "rows": {"explain": "yes"}, "columns": ["name", "change", "change_pct"],
       "percent": ["change_pct"],
       "words": {"direction": {"decreased": "decreas|fell", "increased": "increas|rose"}},
       "none": [r"\bnot\b"]}

SENTENCE = {"type": "text_sentence_matches", "path": "out/memo.md",
            "all": ["PO-1", r"\bcapitali[sz]ed\b", r"5,?000\.00"],
            "none": [r"\bexpens(e|ed|ing)\b", r"\bnot\b"]}


def run(ctx: CheckContext, memo: str, raw: dict[str, Any]) -> CheckResult:
    put(ctx.workspace, "out/memo.md", memo)
    put(ctx.reference, "var.csv", VARIANCES)
    return run_one(raw, ctx)


CONTRADICTIONS = [
    "\nIn short, contractors fell.\n",  # the other direction, in a summary
    "\n| Contractors | decreased | $2,030.96 |\n",  # a table row of its own
    "\nContractors did not increase.\n",  # a negation
]


@pytest.mark.parametrize("extra", CONTRADICTIONS)
def test_ref_sentences_about_refuses_a_contradicting_sentence(ctx: CheckContext,
                                                              extra: str) -> None:
    assert run(ctx, MEMO + extra, REF).passed  # without about: the old behaviour
    r = run(ctx, MEMO + extra, {**REF, "about": ["{name}"]})
    assert not r.passed
    assert "1 of 2 rows of var.csv contradicted in another sentence: Contractors" in r.detail


@pytest.mark.parametrize("extra", [
    "\nContractors were 12,499.40 in May.\n",  # restated, no direction: no contradiction
    "\nContractors rose, as said.\n",  # the same direction again
    "\nIn short, revenue fell and costs rose.\n",  # names neither line
])
def test_ref_sentences_about_accepts_consistent_sentences(ctx: CheckContext,
                                                          extra: str) -> None:
    r = run(ctx, MEMO + extra, {**REF, "about": ["{name}"]})
    assert r.passed, r.detail


def test_ref_sentences_about_placeholder_is_the_value_as_stated(ctx: CheckContext) -> None:
    """``{change_pct}`` stands for 19.4% (a percent column), ``{change}`` for 2,030.96."""
    extra = "\nThe 19.4% is a decrease.\n"
    assert not run(ctx, MEMO + extra, {**REF, "about": ["{change_pct}"]}).passed
    assert run(ctx, MEMO + "\nThe 19.4 points are a decrease.\n",
               {**REF, "about": ["{change_pct}"]}).passed
    assert not run(ctx, MEMO + "\n$2,030.96 is a decrease.\n",
                   {**REF, "about": ["{change}"]}).passed


def test_ref_sentences_about_names_only_columns() -> None:
    got = spec_problems({**REF, "about": ["{account}"]})
    assert any("about: {column} must name one of columns; not there: account" in m
               for m in got.values()), got


def test_sentence_matches_about_refuses_a_contradicting_sentence(ctx: CheckContext) -> None:
    memo = "PO-1 is capitalized at $5,000.00 under rule 1.\n\n| PO-1 | expensed |\n"
    assert run(ctx, memo, SENTENCE).passed  # without about: the old behaviour
    r = run(ctx, memo, {**SENTENCE, "about": ["PO-1"]})
    assert not r.passed
    assert r.detail == ("out/memo.md: a sentence about the item contradicts it: "
                        "'| PO-1 | expensed |'")


def test_sentence_matches_about_accepts_other_sentences(ctx: CheckContext) -> None:
    memo = ("PO-1 is capitalized at $5,000.00 under rule 1.\n\nPO-1 has a life of 36 months."
            "\n\nPO-2 was expensed.\n")
    assert run(ctx, memo, {**SENTENCE, "about": ["PO-1"]}).passed
    # about narrows by several regexes (a lookahead leaves out the request's sentence)
    memo += "\nThe CFO's email asked us to expense PO-1; we did not.\n"
    assert not run(ctx, memo, {**SENTENCE, "about": ["PO-1"]}).passed
    assert run(ctx, memo, {**SENTENCE, "about": ["PO-1", r"^(?!.*\bemail\b)"]}).passed


# --- aside: a clause on another subject is that subject's -----------------------------

ASIDE = {**REF, "about": ["{name}"], "aside": ["{name}", r"\bnet income\b"]}
NET = {"type": "text_ref_sentences", "path": "out/memo.md", "ref": "net.csv",
       "columns": ["change"], "all": ["net income"],
       "words": {"direction": {"decreased": "decreas|fell", "increased": "increas|rose"}},
       "none": [r"\bnot\b"], "aside": [r"\b(?:service revenue|contractors)\b"]}


def test_ref_sentences_aside_names_only_columns() -> None:
    got = spec_problems({**ASIDE, "aside": ["{account}"]})
    assert any("aside: {column} must name one of columns; not there: account" in m
               for m in got.values()), got


@pytest.mark.parametrize(("extra", "passed"), [
    # another line's clause, net income's clause: theirs
    ("Contractors rose by 2,030.96, while Service revenue fell.", True),
    ("Net income fell, although Contractors rose.", True),
    # a list sharing its verb: each line's clause reaches the verb
    ("Service revenue and Contractors both fell.", False),
    # elliptical: no direction in the line's clause, the sentence's is the line's
    ("Service revenue fell, as did Contractors.", False),
    # a second clause naming nothing else is still the line's
    ("Contractors rose in May, but fell for the quarter.", False),
    # a negation in the line's own clause
    ("Contractors did not rise, while net income fell.", False),
])
def test_ref_sentences_aside_judges_each_clause_by_its_subject(
        ctx: CheckContext, extra: str, passed: bool) -> None:
    put(ctx.reference, "var.csv", VARIANCES)
    assert run(ctx, MEMO + "\n" + extra + "\n", ASIDE).passed is passed
    # without aside, the sentence is one subject's whole: the summary lines are refused
    if passed:
        assert not run(ctx, MEMO + "\n" + extra + "\n", {**ASIDE, "aside": []}).passed


@pytest.mark.parametrize(("sentence", "passed"), [
    ("Net income fell by 87,805.81, although Contractors rose.", True),
    ("Net income fell by 87,805.81, after Contractors and Service revenue rose.", True),
    ("Net income rose by 87,805.81, although Contractors fell.", False),
    ("Net income did not fall by 87,805.81, although Contractors rose.", False),
    # no direction of its own: what a line did is not net income's
    ("Net income moved by 87,805.81, although Contractors fell.", False),
])
def test_ref_sentences_aside_for_a_total(ctx: CheckContext, sentence: str,
                                         passed: bool) -> None:
    """A row without ``about`` (a total named by ``all``): every clause but the aside
    subjects' states it."""
    put(ctx.reference, "net.csv", "change,direction\n87805.81,decreased\n")
    assert run(ctx, sentence + "\n", NET).passed is passed


def test_ref_sentences_aside_a_lookahead_of_about_names_no_clause(ctx: CheckContext) -> None:
    """An ``about`` lookahead ("not a sentence on the email") matches at the sentence's
    start without naming the row there: the clause the row's name is in is still its."""
    put(ctx.reference, "var.csv", VARIANCES)
    spec = {**ASIDE, "about": ["{name}", r"^(?!.*\bemail\b)"]}
    assert run(ctx, MEMO + "\nService revenue fell, while Contractors rose.\n", spec).passed
    assert not run(ctx, MEMO + "\nService revenue fell, as did Contractors.\n", spec).passed


# --- aside on text_sentence_matches: another item's clause is that item's ------------------

ITEM = {**SENTENCE, "about": ["PO-1", r"^(?!.*\bemail\b)"], "aside": ["PO-2", "PO-3"]}
OWN = "PO-1 is capitalized at $5,000.00 under rule 1.\n\n"


@pytest.mark.parametrize(("summary", "passed"), [
    # another item's clause, with its own decision: that item's
    ("PO-1 was capitalized, while PO-2 was expensed.", True),
    ("PO-2 and PO-3 were expensed, but PO-1 was capitalized.", True),
    ("PO-3 was expensed; PO-1 was capitalized as the policy requires.", True),
    # PO-1 given the other decision beside another item's clause
    ("PO-1 was expensed, while PO-2 was capitalized.", False),
    # a list sharing its verb says it of each
    ("PO-1 and PO-2 were expensed.", False),
    # elliptical: no word of PO-1's own, the sentence's is PO-1's
    ("PO-2 was expensed, as was PO-1.", False),
    # a second clause naming nothing else is still PO-1's
    ("PO-1 was capitalized, but not in full.", False),
])
def test_sentence_matches_aside_judges_each_clause_by_its_item(
        ctx: CheckContext, summary: str, passed: bool) -> None:
    r = run(ctx, OWN + summary + "\n", ITEM)
    assert r.passed is passed, r.detail
    # without aside, every sentence naming PO-1 is PO-1's: any other decision in it refuses
    if "expensed" in summary:
        assert not run(ctx, OWN + summary + "\n", {**ITEM, "aside": []}).passed


def test_sentence_matches_aside_the_items_own_sentence_is_its_part(ctx: CheckContext) -> None:
    """The one sentence that states the item may name another: its part must hold all."""
    assert run(ctx, "PO-1 is capitalized at $5,000.00, and PO-2 was expensed.\n", ITEM).passed
    r = run(ctx, "PO-1 costs $5,000.00, and PO-2 was capitalized.\n", ITEM)
    assert not r.passed  # "capitalized" is PO-2's
    assert "lacks" in r.detail and "capitali" in r.detail, r.detail


def test_sentence_matches_aside_needs_about() -> None:
    got = spec_problems({**SENTENCE, "aside": ["PO-2"]})
    assert any("aside: needs about" in m for m in got.values()), got
