"""collections, audited again (hard tier, seed 1): sloppy clerks, each the reference with
one mistake, as real attempts.

Refused by the check that owns the rule (none was accepted): a promise recorded with its
date a day off (``promises-recorded``), a partial dispute recorded for the whole invoice
(``disputes-recorded``), a ruling's part credit made for the whole disputed amount
(``disputes-resolved-as-ruled``), a receipt without a customer assigned to another customer
(``receipts-applied-as-paid``), a hold placed on a customer with nothing overdue and
released (by the reference) only at the next run (``holds-as-policy``). The books
themselves refuse a letter of a level already sent, a letter to a disputed invoice or one
under a running promise, and a hold released while an undisputed invoice is overdue.

A false reject, fixed: a hold placed by mistake and released at the same run (the customer
was never on hold between runs) failed ``holds-as-policy``, where a receipt misapplied and
reversed at its run passes; such a pair now counts as neither.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from erp import commands as c
from erp.handlers import overdue_invoices
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "collections"
SEED = 1
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    """The reference with one mistake (or a mistake corrected at its run)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.done = 0
        self.wrong_hold: str | None = None

    def run_turn(self, desk: TurnContext) -> None:
        def twisted(real: Execute, cmd: c.Command) -> Any:
            books = desk.ledger.books
            if self.name == "promise-date-off" and isinstance(cmd, c.RecordPromiseToPay) \
                    and not self.done:
                self.done += 1
                cmd = cmd.model_copy(update={"pay_by": cmd.pay_by + timedelta(days=1)})
            elif not self.done and (
                    (self.name == "dispute-whole" and isinstance(cmd, c.RecordDispute)
                     and cmd.amount is not None
                     and cmd.amount != books.invoices[cmd.invoice_id].open)
                    or (self.name == "credit-whole" and isinstance(cmd, c.ResolveDispute)
                        and cmd.resolution == "credit_memo")):
                self.done += 1  # the whole open balance: the books' default amount
                cmd = cmd.model_copy(update={"amount": None})
            elif self.name == "assign-other" and isinstance(cmd, c.AssignReceiptCustomer) \
                    and not self.done:
                self.done += 1
                others = sorted(x for x in books.customers if x != cmd.customer_id)
                return real(cmd.model_copy(update={"customer_id": others[0]}))
            return real(cmd)

        with routed(desk, twisted):
            solver.reference(desk)
        books = desk.ledger.books
        if self.wrong_hold is not None:  # the run after the mistake: the reference released it
            assert self.wrong_hold not in books.collections.holds
            self.wrong_hold = None
            self.done += 1
        if self.name not in ("hold-released-at-once", "hold-released-a-run-later") \
                or self.done:
            return
        week = desk.day + timedelta(days=7)  # nothing overdue by the next run either
        cust = next((x for x in sorted(books.customers)
                     if x not in books.collections.holds
                     and not overdue_invoices(books, x, week)), None)
        if cust is None:
            return
        assert isinstance(desk.execute(c.PlaceCreditHold(customer_id=cust, reason="overdue")),
                          list)
        if self.name == "hold-released-at-once":
            assert isinstance(desk.execute(c.ReleaseCreditHold(
                customer_id=cust, reason="placed by mistake: nothing is overdue")), list)
            self.done += 1
        else:
            self.wrong_hold = cust


REFUSED = {"promise-date-off": "promises-recorded", "dispute-whole": "disputes-recorded",
           "credit-whole": "disputes-resolved-as-ruled", "assign-other": "receipts-applied-as-paid",
           "hold-released-a-run-later": "holds-as-policy"}


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, tuple[AttemptResult, _Clerk]]]:
    loaded = load_scenario(find_scenario(NAME), tier="hard")
    root = tmp_path_factory.mktemp(NAME)
    out = {}
    for name in (*REFUSED, "hold-released-at-once"):
        clerk = _Clerk(name)
        out[name] = (run_attempt(loaded, SEED, name, root / name, agent=clerk), clerk)
    yield out


@pytest.mark.parametrize("clerk", sorted(REFUSED))
def test_a_sloppy_clerk_is_refused_by_the_rules_check(
        attempts: dict[str, tuple[AttemptResult, _Clerk]], clerk: str) -> None:
    res, agent = attempts[clerk]
    assert agent.done, "the mistake was never made"
    assert REFUSED[clerk] in failed_checks(res.out)


def test_a_hold_standing_a_run_is_refused_for_both_runs(
        attempts: dict[str, tuple[AttemptResult, _Clerk]]) -> None:
    res, _ = attempts["hold-released-a-run-later"]
    detail = check_results(res.out)["holds-as-policy"]["detail"]
    assert "hold place" in detail and "hold release" in detail and "not called for" in detail


def test_a_hold_placed_and_released_at_one_run_is_accepted(
        attempts: dict[str, tuple[AttemptResult, _Clerk]]) -> None:
    res, agent = attempts["hold-released-at-once"]
    assert agent.done == 1
    assert failed_checks(res.out) == set()
