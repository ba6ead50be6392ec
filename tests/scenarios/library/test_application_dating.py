"""A receipt's application dated the day it is made, said by the prompt of every template
that asks the clerk to apply receipts.

Dating an application on its deposit's day is a reading of "date every entry as it
happened" that the checks refuse, because an application held a turn and dated back
looks the same (cash-application and month-end-close: entries-dated-in-their-period;
collections: receipts-applied-as-paid). So every turn's prompt says the application is
dated today, and the clerk who dates it as deposited is refused by that check alone.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from tests.scenarios.library.attempts import Execute, routed


def dated_as_deposited(desk: Any) -> Callable[[Execute, c.Command], Any]:
    """A route (``routed``) for a clerk who dates each application (and the fee allowance
    after it) on the day of the receipt's deposit, not the day it applies it."""
    last: dict[str, date] = {}

    def execute(real: Execute, cmd: c.Command) -> Any:
        if isinstance(cmd, c.ApplyReceipt):
            (d,) = [e.data for e in desk.store.read(realm="erp", types=["receipt_recorded"])
                    if e.data["receipt_id"] == cmd.receipt_id]
            last["day"] = date.fromisoformat(d["entry_date"])
            cmd = cmd.model_copy(update={"entry_date": last["day"]})
        elif isinstance(cmd, c.GrantFeeAllowance) and "day" in last:
            cmd = cmd.model_copy(update={"entry_date": last["day"]})
        return real(cmd)
    return execute


@pytest.mark.parametrize(("name", "seed", "check"), [
    ("cash-application", 1, "entries-dated-in-their-period"),
    ("month-end-close", 1, "entries-dated-in-their-period"),
    ("collections", 1, "receipts-applied-as-paid"),
])
def test_the_prompt_says_applications_are_dated_the_day_they_are_made(
        name: str, seed: int, check: str, tmp_path: Path) -> None:
    loaded = load_scenario(find_scenario(name))
    solver = load_solver(library_dir() / name / "solver.py")

    class Agent:
        name = "dated-as-deposited"

        def run_turn(self, desk: Any) -> None:
            with routed(desk, dated_as_deposited(desk)):
                solver.reference(desk)

    res = run_attempt(loaded, seed, "dated-as-deposited", tmp_path / "a", agent=Agent())
    verdict = res.summary["verdict"]
    assert verdict["failed"] == [check], verdict
    prompts = sorted((tmp_path / "a" / "turns").glob("*/workspace/prompt.md"))
    assert prompts
    for p in prompts:
        text = " ".join(p.read_text(encoding="utf-8").split())
        assert "today, the day" in text and "(not the day of the deposit)" in text, p
