"""pl-variance-memo: the reference memo passes; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's checks grade its memo. Each
mutant (a figure a cent off, a direction word turned to its opposite, a sentence
negated, two lines' figures swapped between sentences, a line dropped, a line the rule
leaves out added) must fail at least one required check.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.desk.output_mutants import Solved, solve, survivors, text_mutants

TASK = "pl-variance-memo"
MEMO = "out/variance_memo.md"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def test_reference_memo_passes(solved: Solved) -> None:
    assert solved.failed() == []


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert "memo-exists" in s.failed()


def test_every_text_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, MEMO, text_mutants(solved.path(MEMO)))
    assert alive == []
    assert {"wrong figure", "wrong qualifier", "wrong sentence", "missing row"} <= set(counts)


def test_a_line_the_rule_leaves_out_fails(solved: Solved) -> None:
    path = solved.path(MEMO)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original + "\n- Bank fees increased by $124.06 (77.3% of April).\n",
                        encoding="utf-8")
        assert solved.failed() == ["no-line-the-rule-leaves-out"]
    finally:
        path.write_text(original, encoding="utf-8")


def test_revenue_sign_read_the_ledger_way_fails(solved: Solved) -> None:
    """Revenue's ledger figure grew less negative: reading it as an increase is wrong."""
    path = solved.path(MEMO)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original.replace("Service revenue decreased", "Service revenue increased"),
                        encoding="utf-8")
        assert "explains-each-line-the-rule-explains" in solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


@pytest.mark.parametrize("new", ["Net income for May was -$273,697.94",
                                 "Net income for May was a loss of $273,697.94",
                                 "Net income for May was ($273,697.94)"])
def test_net_income_with_the_wrong_sign_fails(solved: Solved, new: str) -> None:
    """May's net income is a profit; the figure with a loss's sign is wrong."""
    path = solved.path(MEMO)
    original = path.read_text(encoding="utf-8")
    assert "Net income for May was $273,697.94" in original
    try:
        path.write_text(original.replace("Net income for May was $273,697.94", new),
                        encoding="utf-8")
        assert "net-income-sentence" in solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


SYNONYMS = [("decreased", "fell"), ("increased", "rose"), ("decreased", "declined"),
            ("increased", "grew"), ("decreased by", "was down"), ("increased by", "was up")]




@pytest.mark.parametrize("old,new", SYNONYMS)
def test_direction_in_other_words_passes(solved: Solved, old: str, new: str) -> None:
    """The prompt asks whether a line increased or decreased, not for those words: "rose",
    "fell", "was up $2,030.96" state the direction too."""
    assert solved.failed_with_text(MEMO, {old: new}) == []


@pytest.mark.parametrize("line,new", [("Contractors increased", "Contractors fell"),
                                      ("Service revenue decreased", "Service revenue rose"),
                                      ("Service revenue decreased by", "Service revenue was up"),
                                      ("Contractors increased by", "Contractors declined by")])
def test_the_other_direction_in_other_words_fails(solved: Solved, line: str, new: str) -> None:
    """A synonym of the wrong direction is as wrong as the wrong word."""
    assert solved.failed_with_text(MEMO, {line: new}) == ["explains-each-line-the-rule-explains"]


def test_net_income_in_other_words(solved: Solved) -> None:
    """Net income "fell" is accepted; "rose" (it decreased) is refused."""
    assert solved.failed_with_text(MEMO, {"it decreased by": "it fell by"}) == []
    assert solved.failed_with_text(MEMO, {"it decreased by": "it rose by"}) == [
        "net-income-sentence"]


def test_percent_spelled_out_passes(solved: Solved) -> None:
    """22.1 percent is 22.1%; a percent a tenth off still fails."""
    assert solved.failed_with_text(MEMO, {"22.1%": "22.1 percent"}) == []
    assert solved.failed_with_text(MEMO, {"22.1%": "22.2 percent"}) == [
        "explains-each-line-the-rule-explains"]


NET = "Net income for May was $273,697.94; it decreased by $87,805.81 from April."
CONTRACTORS = "- Contractors increased by $2,030.96 (19.4% of April's amount)."


@pytest.mark.parametrize("edit", [
    {NET: NET[:-1] + ", although Contractors and Card processing fees increased."},
    {NET: NET[:-1] + ", while costs rose."},
    {CONTRACTORS: CONTRACTORS[:-1] + ", while net income decreased."},
    {CONTRACTORS: CONTRACTORS[:-1] + ", whereas Service revenue fell."},
])
def test_a_clause_on_another_subject_is_its_own(solved: Solved, edit: dict[str, str]) -> None:
    """Net income's sentence may say a line went the other way, and a line's net income:
    each clause is its subject's (the false refusals of the summary sentences)."""
    assert solved.failed_with_text(MEMO, edit) == []


@pytest.mark.parametrize(("edit", "check"), [
    # "as did": Service revenue's clause says no direction, the sentence's is its
    ({CONTRACTORS: CONTRACTORS[:-1] + ", as did Service revenue."},
     "explains-each-line-the-rule-explains"),
    ({NET: NET.replace("decreased", "increased")[:-1] + ", although Service revenue fell."},
     "net-income-sentence"),
    ({CONTRACTORS: CONTRACTORS.replace("increased", "decreased")[:-1]
      + ", although net income decreased too."}, "explains-each-line-the-rule-explains"),
])
def test_a_clause_on_its_own_subject_is_still_judged(solved: Solved, edit: dict[str, str],
                                                     check: str) -> None:
    """What a subject's clauses say of it is judged: an elliptical clause, the other
    direction in its own clause."""
    assert check in solved.failed_with_text(MEMO, edit)


def test_the_net_income_aside_names_every_profit_and_loss_account() -> None:
    """Net income's check names the lines it sets aside in a regex of the task: every
    revenue and expense account of the charts must match it."""
    import re

    import yaml

    from erp.charts import CHARTS

    task = yaml.safe_load((Path(__file__).parents[2] / "desk" / "tasks" / "pl-variance-memo"
                           / "task.yaml").read_text())
    (net,) = [c for c in task["checks"] if c.get("name") == "net-income-sentence"]
    (aside,) = net["aside"]
    names = {row[1] for chart in CHARTS.values() for row in chart
             if row[2] in ("revenue", "expense")}
    assert names and all(re.fullmatch(aside, n, re.IGNORECASE) for n in names)
