"""three-way-match: purchase orders caught up a turn late and dated back (audit 2, medium
tier, seed 0, real attempts).

A clerk who leaves purchasing's requisitions of July 1 to its next turn and then issues
them dated July 1 (``dated the day it arrived``) had every check pass: the POs were as
requisitioned and dated as asked, the vendors shipped and billed against them, the books
matched the bills. But the vendors shipped on July 6 against orders the books did not hold
until July 8: POs written after the fact. The prompt now says to issue each requisition at
the turn it arrives, and ``pos-as-requisitioned`` (``issued_at_arrival_turn``) refuses a PO
written at a later turn than the one that had its requisition. Issuing the same POs at the
right turn in another order (other PO numbers) is still accepted.

The other mistakes tried in this audit were refused by the checks that own them: a bill's
lines swapped between PO lines (bills-as-invoiced), a short shipment billed at what was
received or an over-priced line at the PO price (bills-as-invoiced, payables-match-vendors),
every hold released, price holds too (holds-as-matched), a short receipt recorded in full or
dated on the turn's day (receipts-as-shipped), the run made before the cleared holds were
released (every-bill-not-on-hold-paid), the holds file left as the previous turn wrote it or
with the reasons swapped (holds-list-rows).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest

from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "three-way-match"
SEED = 0
FIRST_TURN = date(2026, 7, 1)


class _Clerk:
    """The reference, its July 1 purchase orders issued a turn late or in reverse order."""

    def __init__(self, name: str) -> None:
        self.name = name

    def run_turn(self, desk: TurnContext) -> None:
        solver = load_solver(library_dir() / NAME / "solver.py")
        held: list[c.IssuePurchaseOrder] = []

        def twisted(real: Execute, cmd: c.Command) -> Any:
            if isinstance(cmd, c.IssuePurchaseOrder) and desk.day == FIRST_TURN:
                if self.name == "pos-a-turn-late":
                    return None     # the reference issues them, dated July 1, next turn
                held.append(cmd)
                return None
            return real(cmd)

        with routed(desk, twisted) as real:
            solver.reference(desk)
            for cmd in reversed(held):   # pos-in-reverse-order: before the turn ends
                assert isinstance(real(cmd), list)
            if held:
                solver.reference(desk)   # the rest of the turn's work, on the POs issued


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME), tier="medium")
    root = tmp_path_factory.mktemp("twm-audit2")
    yield {name: run_attempt(loaded, SEED, name, root / name, agent=_Clerk(name))
           for name in ("pos-a-turn-late", "pos-in-reverse-order")}


def test_purchase_orders_issued_a_turn_late_and_dated_back_are_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["pos-a-turn-late"]
    assert failed_checks(res.out) == {"pos-as-requisitioned"}
    detail = check_results(res.out)["pos-as-requisitioned"]["detail"]
    assert ("requisition REQ-0701-01 (PO-000001) arrived 2026-07-01 and was issued in the "
            "turn of 2026-07-08, not the turn of 2026-07-01") in detail


def test_purchase_orders_issued_at_their_turn_in_another_order_are_accepted(
        attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["pos-in-reverse-order"].out) == set()


def test_the_prompt_says_to_issue_at_the_turn_a_requisition_arrives() -> None:
    text = (library_dir() / NAME / "prompts" / "turn.md").read_text(encoding="utf-8")
    assert "Issue every requisition, at the turn it arrives, as one purchase order" in text
