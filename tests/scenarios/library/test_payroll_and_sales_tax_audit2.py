"""payroll-and-sales-tax: a second false-accept audit (real attempts, medium tier, seed 0).

- A clerk who, at the mid-May turn, also files a return for April (the month before the
  authority's letter's first period, 2026-05: zero sales, nothing to pay) was accepted:
  the books take the return, the authority records it, the May checks judge May only.
  ``authority-ties-to-books`` now refuses a return for a month that is no period of the
  account, and the prompt says the returns run from the letter's first period on.
- A tax payment dated after the turn that made it (2026-06-15, written on 2026-06-01) is
  refused by ``may-tax-remitted`` and now also by ``no-posting-after-its-turn``, the check
  the three close templates share (a posting dated after its turn: a month not over yet
  posted ahead).

Still accepted: the reference (May's return only, filed and paid on 2026-06-01).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import pytest

from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "payroll-and-sales-tax"
MID_MAY = date(2026, 5, 18)
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    def __init__(self, name: str, turn: Callable[[TurnContext], None]) -> None:
        self.name = name
        self.run_turn = turn


def _april_filed(desk: TurnContext) -> None:
    solver.reference(desk)
    if desk.day == MID_MAY:
        (jurisdiction,) = desk.ledger.books.payroll_tax.jurisdictions
        done = desk.execute(c.FileSalesTaxReturn(
            jurisdiction_id=jurisdiction, period="2026-04", entry_date=desk.day,
            gross_sales=0, taxable_sales=0, tax_due=0))
        assert isinstance(done, list), done


def _paid_post_dated(desk: TurnContext) -> None:
    def route(real: Execute, cmd: c.Command) -> Any:
        if isinstance(cmd, c.RemitSalesTax):
            cmd = cmd.model_copy(update={"entry_date": date(2026, 6, 15)})
        return real(cmd)

    with routed(desk, route):
        solver.reference(desk)


CLERKS = {"april-filed": _april_filed, "paid-post-dated": _paid_post_dated}


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("payroll-audit2")
    out = {"reference": run_attempt(loaded, 0, "reference", root / "reference")}
    for name, turn in CLERKS.items():
        out[name] = run_attempt(loaded, 0, name, root / name, agent=_Clerk(name, turn))
    yield out


def test_the_reference_is_accepted(attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["reference"].out) == set()


def test_a_return_before_the_accounts_first_period_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    out = attempts["april-filed"].out
    assert failed_checks(out) == {"authority-ties-to-books"}
    assert "is for 2026-04, no period of the account (its periods: 2026-05)" in \
        check_results(out)["authority-ties-to-books"]["detail"]


def test_a_payment_dated_after_its_turn_is_refused(attempts: dict[str, AttemptResult]) -> None:
    out = attempts["paid-post-dated"].out
    assert failed_checks(out) == {"may-tax-remitted", "no-posting-after-its-turn"}
    assert "entry_date='2026-06-15', business_date='2026-06-01'" in \
        check_results(out)["no-posting-after-its-turn"]["detail"]
