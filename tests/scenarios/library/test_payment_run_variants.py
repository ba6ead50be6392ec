"""payment-run, audited for false rejects (correct work done another way than the
reference does it), medium tier, seed 1. No check refused correct work the prompt allows;
the one subtle rule pinned here: unlike procure-to-pay and three-way-match, the prompt
asks for no payment run, so the bills paid in full may be paid one payment per bill
(``erp payments pay``) rather than by a run, and the bills approved only once all are
entered, just before paying.

Variants tried and rightly accepted, not pinned here: one payment per vendor for its bills,
one line per bill for its total, the bills paid in full before the discounts are taken,
payments left undated (the books date them the run day). Tried and refused, left open:
the May bank statement's service charge and interest recorded on their statement line's
date (2026-05-29) at the June run (entries-dated-in-their-period: dated outside the
turn's period); the prompt does not ask for them."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks, routed

NAME = "payment-run"
SEED = 1
solver = load_solver(library_dir() / NAME / "solver.py")


class _PaysEachBill:
    """The reference, but every bill it pays in full by a run paid by a payment of its own,
    and the approvals held until the first payment (after every bill is entered)."""

    name = "pays-each-bill"

    def __init__(self) -> None:
        self.payments = 0
        self.approvals: list[c.ApproveBill] = []
        self.entered_before_approval = 0

    def run_turn(self, desk: TurnContext) -> None:
        books = desk.ledger.books

        def route(real: Any, cmd: c.Command) -> Any:
            if isinstance(cmd, c.ApproveBill):
                self.approvals.append(cmd)
                return []
            if self.approvals and isinstance(cmd, (c.PayBillWithDiscount, c.RunPayments)):
                self.entered_before_approval = len(books.bills)
                for a in self.approvals:
                    assert isinstance(real(a), list)
                self.approvals = []
            if isinstance(cmd, c.RunPayments):
                assert cmd.bill_ids
                by_vendor: dict[str, list[str]] = defaultdict(list)
                for b in cmd.bill_ids:
                    by_vendor[books.bills[b].vendor_id].append(b)
                done: list[Any] = []
                for vendor, bills in sorted(by_vendor.items()):
                    for b in bills:
                        paid = real(c.PayVendor(
                            vendor_id=vendor, bank_account_id=cmd.bank_account_id,
                            entry_date=cmd.entry_date,
                            applications=(c.BillPayment(bill_id=b, amount=books.bills[b].open),)))
                        assert isinstance(paid, list), paid
                        self.payments += 1
                        done += paid
                return done
            return real(cmd)

        with routed(desk, route):
            solver.reference(desk)


def test_bills_paid_one_payment_each_after_all_are_entered_are_accepted(
        tmp_path: Path) -> None:
    clerk = _PaysEachBill()
    res: AttemptResult = run_attempt(load_scenario(find_scenario(NAME), tier="medium"), SEED,
                                     clerk.name, tmp_path / "a", agent=clerk)
    assert clerk.payments > 1 and clerk.entered_before_approval > 1
    assert failed_checks(res.out) == set(), check_results(res.out)
    assert check_results(res.out)["payment-run-optimal"]["metrics"]["gap_cents"] == 0
