"""payment-run: a wrong clerk the checks once accepted (an adversarial audit).

The clerk enters the invoices as the reference does, then, before paying, records
interest the bank never paid (30,000.00, on no statement line) and plans the run with that
made-up cash: its payments take more than the operating account held above the floor, so
it captures more discounts than the certified optimum and the books' balance stays above
the floor. ``payment_run_optimality`` refuses it (the run's payments may take no more
than the cash above the floor before the agent's first write); the reference passes.
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
MADE_UP = 3_000_000


class _MadeUpCash:
    """The reference with 30,000.00 of interest recorded before its first payment, and
    that much more cash to plan with."""

    name = "made-up-cash"

    def run_turn(self, desk: TurnContext) -> None:
        s = load_solver(library_dir() / NAME / "solver.py")
        recorded: list[Any] = []

        def first_pay(real: Execute, cmd: c.Command) -> Any:
            if isinstance(cmd, (c.PayBillWithDiscount, c.RunPayments)) and not recorded:
                recorded.append(real(c.RecordInterest(bank_account_id="B-OPER",
                                                      entry_date=desk.day, amount=MADE_UP)))
            return real(cmd)

        honest = s.available_cash
        setattr(s, "available_cash", lambda d: honest(d) + MADE_UP)  # noqa: B010
        try:
            with routed(desk, first_pay):
                s.reference(desk)
        finally:
            setattr(s, "available_cash", honest)  # noqa: B010
        assert recorded and isinstance(recorded[0], list), recorded


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("payment-run-audit")
    yield {"reference": shared_attempt(tmp_path_factory, NAME, 0)[0],
           "made-up-cash": run_attempt(loaded, 0, "made-up-cash", root / "made-up-cash",
                                       agent=_MadeUpCash())}


def test_the_reference_pays_within_the_cash(attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["reference"].out)
    assert all(x["passed"] for x in r.values())
    m = r["payment-run-optimal"]["metrics"]
    assert m["cash_paid"] == m["optimum_cash"] <= m["available"]


def test_a_run_paid_with_made_up_cash_is_refused(attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["made-up-cash"].out)
    failed = sorted(n for n, x in r.items() if not x["passed"])
    assert failed == ["payment-run-optimal"], failed
    m = r["payment-run-optimal"]["metrics"]
    assert m["cash_paid"] > m["available"]
    assert m["achieved_value"] > m["optimum_value"]  # more than the cash could capture
    assert "more than the 35,000.00 the operating account held above the cash floor" in \
        r["payment-run-optimal"]["detail"]
