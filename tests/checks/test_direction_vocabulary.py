"""text_ref_sentences' named direction vocabularies (checks.files.DIRECTIONS): a name in
``words`` or ``signs`` reads as its regexes, the tasks that share a vocabulary name it,
and each vocabulary's words, including those it refuses on purpose."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from checks.context import CheckContext
from checks.files import _RE_FLAGS, DIRECTIONS, TextRefSentences
from checks.registry import parse_checks
from tests.checks.helpers import put, run_one, spec_problems

TASKS = Path(__file__).resolve().parents[2] / "desk" / "tasks"


def _spec(**raw: Any) -> TextRefSentences:
    [spec] = parse_checks([{"type": "text_ref_sentences", "path": "out/memo.md",
                            "ref": "v.csv", "columns": ["name"], **raw}])
    assert isinstance(spec, TextRefSentences)
    return spec


@pytest.mark.parametrize("name", sorted(DIRECTIONS))
def test_a_name_reads_as_its_regexes(name: str) -> None:
    d = DIRECTIONS[name]
    typed = {d.values[0]: d.down, d.values[1]: d.up}
    assert _spec(words={"direction": name}) == _spec(words={"direction": typed})
    assert _spec(signs={"change": name}) == _spec(signs={"change": [d.down, d.up]})
    # the definitions' fingerprint holds the regexes, not the name
    assert _spec(words={"direction": name}).model_dump(mode="json")["words"] == {
        "direction": typed}


def test_an_unknown_name_is_refused_where_it_is_written() -> None:
    raw = {"type": "text_ref_sentences", "path": "out/memo.md", "ref": "v.csv",
           "columns": ["name"]}
    problems = spec_problems({**raw, "signs": {"variance": "over_under"}})
    [(where, message)] = problems.items()
    assert where == "checks[0].signs.variance"
    assert "no direction vocabulary 'over_under'" in message
    assert "against_budget" in message and "month_on_month" in message
    assert "checks[0].words.direction" in spec_problems(
        {**raw, "words": {"direction": "rising"}})
    # a pair is still a pair, a table still a table of regexes
    assert "checks[0].signs.variance" in spec_problems({**raw, "signs": {"variance": ["x"]}})
    assert "checks[0].words.direction.up" in spec_problems(
        {**raw, "words": {"direction": {"up": "("}}})


def _task_checks(task: str) -> list[Any]:
    raw = yaml.safe_load((TASKS / task / "task.yaml").read_text(encoding="utf-8"))
    return parse_checks(raw["checks"])


def test_the_tasks_name_their_shared_vocabulary() -> None:
    mom = DIRECTIONS["month_on_month"]
    pl = [s for s in _task_checks("pl-variance-memo") if isinstance(s, TextRefSentences)]
    assert [s.words for s in pl] == [{"direction": {"decreased": mom.down,
                                                    "increased": mom.up}}] * 2
    bud = DIRECTIONS["against_budget"]
    rbv = [s for s in _task_checks("revenue-budget-variance")
           if isinstance(s, TextRefSentences)]
    assert [s.signs for s in rbv] == [{"variance": [bud.down, bud.up]},
                                      {"total_variance": [bud.down, bud.up]}]


def _says(rx: str, text: str) -> bool:
    return re.search(rx, text, _RE_FLAGS) is not None


MONTH_ON_MONTH = [
    # (text, down, up)
    ("Contractors increased by $2,030.96 (19.4%).", False, True),
    ("Contractors rose $2,030.96.", False, True),
    ("Contractors grew by 19.4%.", False, True),
    ("Contractors were up $2,030.96.", False, True),
    ("Contractors cost $2,030.96 more than in April.", False, True),
    ("Contractors came in $2,030.96 above the prior month.", False, True),
    ("Software subscriptions decreased by $1,711.51.", True, False),
    ("Software subscriptions fell $1,711.51.", True, False),
    ("Software subscriptions were down $1,711.51.", True, False),
    ("Software subscriptions cost $1,711.51 (42.3%) less than in April.", True, False),
    ("Software subscriptions were $1,711.51 below April.", True, False),
    ("Software subscriptions were $1,711.51 lower.", True, False),
    # refused on purpose: a bare "less" or "below", and "more"/"above" without April
    ("Net income (revenue less expenses) was $273,697.94 in May.", False, False),
    ("Card processing fees are below the threshold.", False, False),
    ("Contractors cost more than budgeted.", False, False),
    ("Contractors stayed above plan.", False, False),
]


@pytest.mark.parametrize(("text", "down", "up"), MONTH_ON_MONTH)
def test_month_on_month(text: str, down: bool, up: bool) -> None:
    d = DIRECTIONS["month_on_month"]
    assert (_says(d.down, text), _says(d.up, text)) == (down, up)


AGAINST_BUDGET = [
    ("Data migration came in under budget by 19,469.85.", True, False),
    ("Data migration fell short of its budget by 19,469.85.", True, False),
    ("Data migration trailed its budget.", True, False),
    ("An unfavorable variance of 19,469.85 on Data migration.", True, False),
    ("Data migration missed budget.", True, False),
    ("Managed services ran over budget by 10,532.06.", False, True),
    ("Managed services had a 10,532.06 overrun.", False, True),
    ("Managed services exceeded budget.", False, True),
    ("Managed services beat its budget.", False, True),
    ("A favourable variance on Managed services.", False, True),
    ("Managed services outperformed its budget.", False, True),
    # "over the month" and "overall" are no direction
    ("Over the month we invoiced 575,434.38.", False, False),
    ("Overall, we invoiced 575,434.38.", False, False),
]


@pytest.mark.parametrize(("text", "down", "up"), AGAINST_BUDGET)
def test_against_budget(text: str, down: bool, up: bool) -> None:
    d = DIRECTIONS["against_budget"]
    assert (_says(d.down, text), _says(d.up, text)) == (down, up)


@pytest.mark.parametrize(("total", "sentence", "passed"), [
    ("-3765.62", "In total we invoiced $575,434.38 against $579,200.00, "
                 "$3,765.62 under budget.", True),
    ("-3765.62", "In total we invoiced $575,434.38 against $579,200.00, "
                 "$3,765.62 under budget, after the Managed services overrun.", False),
    ("3765.62", "In total we invoiced $582,965.62 against $579,200.00, "
                "a $3,765.62 overrun.", True),
])
def test_a_total_names_the_vocabulary_too(ctx: CheckContext, total: str, sentence: str,
                                          passed: bool) -> None:
    """The totals' check takes the lines' words, "overrun" among them (its own list
    lacked it: before, the last two verdicts were the other way; no test or reference
    output had an "overrun" in a totals' sentence)."""
    actual = f"{579200 + float(total):.2f}"
    put(ctx.reference, "totals.csv", f"total_actual,total_budget,total_variance\n"
                                     f"{actual},579200.00,{total}\n")
    put(ctx.workspace, "out/commentary.txt", sentence)
    r = run_one({"type": "text_ref_sentences", "path": "out/commentary.txt",
                 "ref": "totals.csv", "columns": ["total_actual", "total_budget",
                                                  "total_variance"],
                 "signs": {"total_variance": "against_budget"},
                 "all": [r"\btotal"], "none": [r"\bnot\b"]}, ctx)
    assert r.passed is passed, r.detail
