"""The collections checks without their truth, and the problems they name.

On a store without the ``collections_book`` injection every collections check fails with
a message naming what is missing (never passes on nothing). The comparison of a run's
records names a missing record, one not called for and one recorded twice.
"""

from __future__ import annotations

import pytest

from checks.collections import _compare
from checks.context import CheckContext
from checks.registry import parse_checks
from checks.verdict import run_check

TYPES = ("collections_receipts", "collections_disputes", "collections_rulings",
         "collections_promises", "collections_holds", "collections_letters")


@pytest.mark.parametrize("kind", TYPES)
def test_without_the_book_every_check_fails_naming_it(kind: str, ctx: CheckContext) -> None:
    (spec,) = parse_checks([{"type": kind}])
    (result,) = run_check(spec, 0, ctx)
    assert not result.passed
    assert "no collections_book truth in the world realm" in result.detail


def test_a_comparison_names_missing_extra_and_twice() -> None:
    problems = _compare("letter", {("I1", 1), ("I2", 2)}, [("I1", 1), ("I3", 1), ("I3", 1)],
                        lambda x: f"level {x[1]} for {x[0]}")
    assert problems == ["missing letter level 2 for I2", "letter level 1 for I3 not called for",
                        "letter level 1 for I3 recorded twice"]
