"""payment-run: a discount earned on another account than 4950 (an adversarial audit, 3).

The clerk does what the reference does, except that its first discount taken is booked to
4900 (interest income) instead of 4950 Purchase discounts: ``pay-bill-with-discount``
takes an ``account`` (``erp command``), and the ``purchase_discount_taken`` event keeps it
in ``discount_account``. The optimum, the cash and the bills are untouched, so every other
check passes; once nothing read that field and the prompt did not name the account, the
attempt was accepted. The prompt now names 4950 and ``discounts-on-purchase-discounts``
(``event_accounts``, which reads ``discount_account`` too) refuses it; the reference passes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, routed, shared_attempt

NAME = "payment-run"
pytestmark = pytest.mark.xdist_group("payment-run")  # one worker with test_payment_run:
# the shared reference
CHECK = "discounts-on-purchase-discounts"


class _DiscountOn4900:
    """The reference, with its first discount earned on 4900 instead of 4950."""

    name = "discount-on-4900"

    def __init__(self) -> None:
        self.twisted: list[str] = []

    def run_turn(self, desk: TurnContext) -> None:
        s = load_solver(library_dir() / NAME / "solver.py")

        def first_discount(real: Execute, cmd: c.Command) -> Any:
            if isinstance(cmd, c.PayBillWithDiscount) and not self.twisted:
                self.twisted.append(cmd.bill_id)
                cmd = cmd.model_copy(update={"account": "4900"})
            return real(cmd)

        with routed(desk, first_discount):
            s.reference(desk)


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[dict[str, AttemptResult], list[str]]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("payment-run-audit3")
    agent = _DiscountOn4900()
    yield ({"reference": shared_attempt(tmp_path_factory, NAME, 0)[0],
            "discount-on-4900": run_attempt(loaded, 0, agent.name, root / agent.name,
                                            agent=agent)},
           agent.twisted)


def test_the_prompt_names_the_discounts_account() -> None:
    text = (library_dir() / NAME / "prompts" / "turn.md").read_text(encoding="utf-8")
    assert "a discount taken is earned on account 4950\n    (Purchase discounts" in text


def test_the_reference_books_its_discounts_on_4950(
        attempts: tuple[dict[str, AttemptResult], list[str]]) -> None:
    r = check_results(attempts[0]["reference"].out)
    assert all(x["passed"] for x in r.values()), [n for n, x in r.items() if not x["passed"]]
    assert r[CHECK]["metrics"]["postings"] > 0  # the reference takes discounts at seed 0
    assert r[CHECK]["metrics"]["miscoded"] == 0


def test_a_discount_on_4900_is_refused(
        attempts: tuple[dict[str, AttemptResult], list[str]]) -> None:
    results, twisted = attempts
    assert len(twisted) == 1, twisted  # the attempt did take a discount, on 4900
    r = check_results(results["discount-on-4900"].out)
    failed = sorted(n for n, x in r.items() if not x["passed"])
    assert failed == [CHECK], failed
    assert r[CHECK]["metrics"]["miscoded"] == 1
    assert "purchase_discount_taken" in r[CHECK]["detail"]
    assert "on 4900 (expected 4950)" in r[CHECK]["detail"]
    # the optimum is still reached: only the account tells the attempt from the reference
    m = r["payment-run-optimal"]["metrics"]
    assert m["gap_cents"] == 0
