"""The garbage collector's thresholds while an attempt runs, and after."""

from __future__ import annotations

import gc
from datetime import date
from pathlib import Path

import pytest

from runs.attempt import ATTEMPT_GC_THRESHOLD, collector_for_attempt, run_attempt
from scenarios.loader import load_scenario
from tests.runs.test_grading import FILE_CHECK, small_scenario


def test_an_attempt_runs_with_its_thresholds_and_restores_the_callers(tmp_path: Path) -> None:
    before = gc.get_threshold()
    assert before != ATTEMPT_GC_THRESHOLD
    seen: list[tuple[int, ...]] = []

    def on_day(day: date, events: int) -> None:
        seen.append(gc.get_threshold())

    run_attempt(load_scenario(small_scenario(tmp_path, [FILE_CHECK])), 1, "null",
                tmp_path / "a", on_day=on_day)
    assert seen and set(seen) == {ATTEMPT_GC_THRESHOLD}
    assert gc.get_threshold() == before


def test_an_attempt_that_raises_restores_the_callers_thresholds(tmp_path: Path) -> None:
    before = gc.get_threshold()

    def on_day(day: date, events: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_attempt(load_scenario(small_scenario(tmp_path, [FILE_CHECK])), 1, "null",
                    tmp_path / "a", on_day=on_day)
    assert gc.get_threshold() == before


def test_nested_use_restores_each_level() -> None:
    before = gc.get_threshold()
    gc.set_threshold(900, 11, 12)
    try:
        with collector_for_attempt():
            with collector_for_attempt():
                assert gc.get_threshold() == ATTEMPT_GC_THRESHOLD
            assert gc.get_threshold() == ATTEMPT_GC_THRESHOLD
        assert gc.get_threshold() == (900, 11, 12)
    finally:
        gc.set_threshold(*before)
