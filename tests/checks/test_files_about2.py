"""``change`` on text_ref_sentences: a sentence about the row stating a second, other change.

With ``about`` alone, a memo saying "Contractors increased by $2,030.96 (19.4%)" and, in
another sentence, "Contractors were up $2,300.96 on new projects" passed: the second
figure is in no veto list. ``change: change`` reads the figure a direction word states as
the change ("up $X", "by X", "an increase of $X", "a $X overrun") and wants the row's;
levels (April's and May's amounts), percents and dates are free.
"""

from __future__ import annotations

from typing import Any

import pytest

from checks.context import CheckContext
from checks.registry import CheckResult
from tests.checks.helpers import put, run_one, spec_problems

MEMO = """# May against April

Service revenue decreased by $86,249.11 (22.1%) on lower volumes.
Contractors increased by $2,030.96, 19.4% more than April.
"""

VARIANCES = ("name,april,may,change,change_pct,direction\n"
             "Service revenue,390284.66,304035.55,86249.11,22.1,decreased\n"
             "Contractors,10468.44,12499.40,2030.96,19.4,increased\n")

REF = {"type": "text_ref_sentences", "path": "out/memo.md", "ref": "var.csv",
       "columns": ["name", "change", "change_pct"], "percent": ["change_pct"],
       "words": {"direction": {"decreased": r"\b(decreas|fell|lower\b|down\b|shortfall)",
                               "increased": r"\b(increas|rose|higher\b|up\b|overrun)"}},
       "none": [r"\bnot\b"], "about": ["{name}"]}


def run(ctx: CheckContext, memo: str, raw: dict[str, Any]) -> CheckResult:
    put(ctx.workspace, "out/memo.md", memo)
    put(ctx.reference, "var.csv", VARIANCES)
    return run_one(raw, ctx)


OTHER_CHANGES = [
    "Contractors were up $2,300.96 on new projects.",  # direction word, then the figure
    "Contractors rose by $2,300.00 on new projects.",
    "The contractors increase of $2,300.96 reflects new projects.",  # 'of'
    "A $2,300.96 increase in contractors reflects new projects.",  # a noun after it
    "Contractors were $2,300.96 higher than April.",  # a comparative, then 'than'
    "The $15,000 overrun on contractors reflects new projects.",  # no cents
    "Service revenue fell $90k on lower volumes.",  # a scale word
    "Service revenue was down by 90,000.00, the bulk of the total.",
]


@pytest.mark.parametrize("extra", OTHER_CHANGES)
def test_a_second_change_is_refused(ctx: CheckContext, extra: str) -> None:
    memo = MEMO + "\n" + extra + "\n"
    assert run(ctx, memo, REF).passed  # without change: the second figure is not vetoed
    r = run(ctx, memo, {**REF, "change": "change"})
    assert not r.passed
    assert "contradicted in another sentence" in r.detail


@pytest.mark.parametrize("extra", [
    "Contractors rose to $12,499.40 from $10,468.44 on new projects.",  # levels
    "Contractors rose by $2,030.96 to $12,499.40 on new projects.",
    "Contractors ended May at $12,499.40, up $2,030.96 from April.",
    "Contractors ended May at $12,499.40 up $2,030.96 from April.",
    "Contractors were up about $2,031 on new projects.",  # rounded as written
    "Contractors were up $2.0k on new projects.",
    "Service revenue fell $86k on lower volumes.",
    "Service revenue decreased 22.1% to $304,035.55 in May.",  # a percent, a level
    "Service revenue of $304,035.55 fell short of April's $390,284.66.",
    "Contractors at $12,499.40 were higher than April.",  # a level ahead of 'higher'
    "Contractors rose on two new projects started in May 2026.",  # a date
    "Contractors rose as 3 new engineers joined on 12 May.",  # counts
    "A $2,030.96 increase in contractors reflects new projects.",  # the same change
])
def test_levels_percents_and_the_same_change_are_accepted(ctx: CheckContext,
                                                          extra: str) -> None:
    r = run(ctx, MEMO + "\n" + extra + "\n", {**REF, "change": "change"})
    assert r.passed, r.detail


def test_change_outside_the_rows_sentences_is_free(ctx: CheckContext) -> None:
    """A sentence naming neither line (about) is not read: net income's own change."""
    memo = MEMO + "\nNet income decreased by $87,805.81.\n"
    assert run(ctx, memo, {**REF, "change": "change"}).passed


def test_change_needs_a_column_about_and_direction_words() -> None:
    for bad in ({**REF, "change": "april"}, {**REF, "change": "change", "about": []},
                {**REF, "change": "change", "words": {}}):
        got = spec_problems(bad)
        assert any("change: " in m and "must be one of columns, with about and words or "
                   "signs" in m for m in got.values()), got
