"""bank-reconciliation-multi, audited again for false accepts (after
test_bank_reconciliation_multi_audit.py), as a sloppy clerk gets the month wrong.

Found: no check read the receivables beyond the returned cheques' invoices. A clerk who,
seeing a cheque in the books that is not on the statement (the deposit in transit), reversed
its receipt's application (the invoice open again, the cash on account) was accepted: the
bank accounts are untouched by it. ``returned-items-reopened`` now also asks the invoice of
every cheque the bank paid to stay paid.

Tried and rightly refused already: a transfer that arrived recorded as received on the day
it left (``transfers-recorded``, ``statement-lines-explained``); the transfer in transit
recorded as arrived on the day it left (``transfers-recorded``, ``book-balances-as-bank``);
savings interest recorded on the operating account (refused by the books: the line is
another account's); both lines of the duplicated service charge reported and the fee
recorded on no line (``bank-errors-reported-not-booked``, ``statement-lines-explained``);
another client's deposit booked as interest, a returned cheque booked as a bank fee (the
checks of errors, returns and balances). A fee recorded twice on its line is refused by the
books (the line is already matched).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks

NAME = "bank-reconciliation-multi"
SEED = 0
solver = load_solver(library_dir() / NAME / "solver.py")


class _Unapplies:
    """The reference, then each receipt the bank has not credited (the deposit in transit)
    unapplied from its invoice, dated the month's last day."""

    name = "unapplies"

    def __init__(self) -> None:
        self.unapplied: list[str] = []

    def run_turn(self, desk: TurnContext) -> None:
        solver.reference(desk)
        waiting = {r.receipt_id for r in desk.ledger.books.receipts.values()
                   if r.matched_line is None and not r.returned}
        for e in desk.store.read(types=["receipt_applied"]):
            if e.data["receipt_id"] in waiting:
                done = desk.execute(c.ReverseApplication(
                    receipt_id=e.data["receipt_id"], invoice_id=e.data["invoice_id"],
                    amount=e.data["amount"], entry_date=date(2026, 5, 31)))
                assert isinstance(done, list), done
                self.unapplied.append(e.data["invoice_id"])


def _run(tmp: Path, agent: Any) -> tuple[set[str], dict[str, Any]]:
    res = run_attempt(load_scenario(find_scenario(NAME)), SEED, agent.name, tmp / "a",
                      agent=agent)
    return failed_checks(res.out), check_results(res.out)


def test_a_paid_cheques_invoice_reopened_is_refused(tmp_path: Path) -> None:
    agent = _Unapplies()
    failed, results = _run(tmp_path, agent)
    assert agent.unapplied == ["INV-4106"], agent.unapplied  # seed 0: one deposit in transit
    assert failed == {"returned-items-reopened"}, failed
    detail = results["returned-items-reopened"]["detail"]
    assert "invoice INV-4106 open for 6,984.52; its cheque (receipt RCP-0006) was not " \
           "returned" in detail, detail


class _Reference:
    name = "reference"

    def run_turn(self, desk: TurnContext) -> None:
        solver.reference(desk)


def test_the_returned_cheque_reopened_and_the_paid_ones_paid_are_accepted(
        tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Reference())
    assert not failed, failed
    metrics = results["returned-items-reopened"]["metrics"]
    assert (metrics["returned"], metrics["paid"]) == (1, 5), metrics
