"""``purchase_orders_as_requisitioned``'s ``issued_at_arrival_turn``: a purchase order
written at a later turn than the one that had its requisition, dated back, fails; one
written at that turn passes; without the option neither is judged on its turn.

The books are two real attempts at three-way-match (easy tier, seed 0): the reference,
and the reference with its July 1 purchase orders held to the July 8 turn (dated July 1).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from checks.registry import CheckResult
from erp import commands as c
from erp.store import EventStore
from runs.attempt import run_attempt
from runs.grading import context_for
from scenarios.agents import load_solver
from scenarios.loader import LoadedScenario, find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.checks.helpers import run_one
from tests.scenarios.library.attempts import Execute, routed

NAME = "three-way-match"


class _LateClerk:
    """The reference, its first turn's purchase orders left to the next turn."""

    name = "pos-a-turn-late"

    def run_turn(self, desk: TurnContext) -> None:
        solver = load_solver(library_dir() / NAME / "solver.py")

        def late(real: Execute, cmd: c.Command) -> Any:
            if isinstance(cmd, c.IssuePurchaseOrder) and desk.day == date(2026, 7, 1):
                return None
            return real(cmd)

        with routed(desk, late):
            solver.reference(desk)


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[LoadedScenario, dict[str, Path]]]:
    loaded = load_scenario(find_scenario(NAME), tier="easy")
    root = tmp_path_factory.mktemp("po-turn")
    run_attempt(loaded, 0, "reference", root / "reference")
    run_attempt(loaded, 0, _LateClerk.name, root / "late", agent=_LateClerk())
    yield loaded, {"reference": root / "reference" / "books.db",
                   "late": root / "late" / "books.db"}


def _judge(books: tuple[LoadedScenario, dict[str, Path]], which: str,
           **option: bool) -> CheckResult:
    loaded, dbs = books
    store = EventStore.open(dbs[which])
    try:
        return run_one({"type": "purchase_orders_as_requisitioned", "name": "pos", **option},
                       context_for(store, loaded, workspace=None))
    finally:
        store.close()


def test_a_purchase_order_written_a_turn_late_fails_with_the_option(
        books: tuple[LoadedScenario, dict[str, Path]]) -> None:
    res = _judge(books, "late", issued_at_arrival_turn=True)
    assert not res.passed
    assert ("requisition REQ-0701-01 (PO-000001) arrived 2026-07-01 and was issued in the "
            "turn of 2026-07-08, not the turn of 2026-07-01") in res.detail


def test_purchase_orders_written_at_their_turn_pass_with_the_option(
        books: tuple[LoadedScenario, dict[str, Path]]) -> None:
    res = _judge(books, "reference", issued_at_arrival_turn=True)
    assert res.passed, res.detail


def test_without_the_option_the_turn_is_not_judged(
        books: tuple[LoadedScenario, dict[str, Path]]) -> None:
    assert _judge(books, "late").passed
    assert _judge(books, "reference").passed
