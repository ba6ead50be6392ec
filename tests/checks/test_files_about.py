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
