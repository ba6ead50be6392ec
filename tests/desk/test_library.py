"""The desk library as a whole: the seven categories, and how many tasks each holds.

A task's ``category`` must be one of the seven names of the seed benchmark's desk track
(``desk.spec.CATEGORIES``); anything else is refused naming the file, the value and the
seven. The library grows to at least 30 tasks with at least four in each category
(issue 18).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from desk.errors import DeskTaskError
from desk.spec import CATEGORIES
from desk.tasks import list_tasks, load_task

MakeTask = Callable[..., Path]

EXISTING = {"ar-aging-workbook": "reports", "payments-match": "reconciliation",
            "vendor-statement-recon": "reconciliation", "contractor-accrual": "tooling",
            "demand-forecast": "analysis"}


def _categories() -> Counter[str]:
    return Counter(load_task(name).category for name in list_tasks())


def test_the_seven_categories() -> None:
    assert CATEGORIES == ("reports", "drafting", "reformatting", "tooling", "reconciliation",
                          "analysis", "extraction")


@pytest.mark.parametrize("value", ["cash application", "Reports", "report", "planning", ""])
def test_a_category_outside_the_seven_is_refused(make_task: MakeTask, value: str) -> None:
    folder = make_task(category=value)
    with pytest.raises(DeskTaskError) as info:
        load_task(folder)
    message = str(info.value)
    assert message.startswith("task tiny/task.yaml: category: ")
    assert f"{value!r} is not a desk category" in message
    assert ("(expected one of: reports, drafting, reformatting, tooling, reconciliation, "
            "analysis, extraction)") in message


def test_a_category_that_is_not_text_is_refused(make_task: MakeTask) -> None:
    with pytest.raises(DeskTaskError, match=r"category: Input should be a valid string"):
        load_task(make_task(category=3))


@pytest.mark.parametrize("category", CATEGORIES)
def test_each_of_the_seven_is_accepted(make_task: MakeTask, category: str) -> None:
    assert load_task(make_task(category=category)).category == category


def test_every_library_task_is_in_one_of_the_seven() -> None:
    for name in list_tasks():
        assert load_task(name).category in CATEGORIES, name


def test_the_first_five_tasks_categories() -> None:
    assert {name: load_task(name).category for name in EXISTING} == EXISTING


def test_thirty_tasks_at_least_four_per_category() -> None:
    counts = _categories()
    assert sum(counts.values()) >= 30, dict(counts)
    short = {c: counts.get(c, 0) for c in CATEGORIES if counts.get(c, 0) < 4}
    assert not short, f"categories with fewer than four tasks: {short}"
