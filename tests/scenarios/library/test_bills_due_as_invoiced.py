"""A vendor bill entered due later than its invoice says (so that it falls out of the
payments it was due for) is refused where the prompt asks for bills due as invoiced:
entries-dated-in-their-period's ``bills_due_as_invoiced``. Procure-to-pay's own variant
tests pin it there; these are the recurring-close templates."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, routed


class _DueLater:
    """The reference, but its first bill with a due date entered due 30 days later."""

    name = "due-later"

    def __init__(self, scenario: str) -> None:
        self.solver = load_solver(library_dir() / scenario / "solver.py")
        self.late: str | None = None

    def _route(self, real: Any, cmd: c.Command) -> Any:
        if self.late is None and isinstance(cmd, c.EnterBill) and cmd.due_on is not None:
            done = real(cmd.model_copy(update={"due_on": cmd.due_on + timedelta(days=30)}))
            assert isinstance(done, list), done
            self.late = done[0].data["bill_id"]
            return done
        return real(cmd)

    def run_turn(self, desk: TurnContext) -> None:
        with routed(desk, self._route):
            self.solver.reference(desk)


@pytest.mark.parametrize("name", ["month-end-close", "fiscal-year"])
def test_a_bill_entered_due_later_than_invoiced_is_refused(name: str, tmp_path: Path) -> None:
    clerk = _DueLater(name)
    res = run_attempt(load_scenario(find_scenario(name)), 1, clerk.name, tmp_path / "a",
                      agent=clerk)
    assert clerk.late is not None
    verdict = res.summary["verdict"]
    assert verdict["failed"] == ["entries-dated-in-their-period"], verdict
    detail = check_results(tmp_path / "a")["entries-dated-in-their-period"]["detail"]
    assert f"bill {clerk.late} due " in detail and "the invoice says" in detail, detail


@pytest.mark.parametrize("name", ["month-end-close", "fiscal-year"])
def test_the_prompt_asks_for_the_invoices_due_date(name: str) -> None:
    prompt = (library_dir() / name / "prompts" / "turn.md").read_text(encoding="utf-8")
    assert "due on the due date it gives" in " ".join(prompt.split())
