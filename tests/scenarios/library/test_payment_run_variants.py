"""payment-run, audited for false rejects (correct work done another way than the
reference does it).

- The prompt said to pay a critical vendor's invoices due before the next run "first, as
  far as the cash allows", and the check wants the largest total of them the cash allows:
  a clerk paying them earliest-due first until the cash ran out (hard seed 2: 33,702.42
  of the optimum's 34,911.18) was refused by payment-run-optimal on a reading the prompt
  allowed. The prompt now says so (the largest total, not simply the earliest due first);
  that clerk is still refused, now against what it was told.
- A subtle rule pinned (medium seed 1): unlike procure-to-pay and three-way-match, the
  prompt asks for no payment run, so the bills paid in full may be paid one payment per
  bill (``erp payments pay``) rather than by a run, and the bills approved only once all
  are entered, just before paying.

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

from checks.payment_run import RunBill, RunInstance
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


class _CriticalEarliestDueFirst:
    """The reference, but a critical vendor's invoices due before the next run paid first
    in due-date order as long as the cash lasts, then the optimum of the other bills with
    the cash left (each payment its own: a discount taken where live)."""

    name = "critical-earliest-due-first"

    def __init__(self) -> None:
        self.critical_paid = 0

    def _pay(self, desk: TurnContext, invoices: Any, entered: dict[Any, str]) -> None:
        inst = RunInstance(desk.day, solver.NEXT_RUN, solver.available_cash(desk),
                           tuple(inv.bill for inv in invoices if inv.bill.key in entered))
        cash = inst.available
        first: list[RunBill] = []
        for b in sorted((b for b in inst.bills if inst.is_priority(b)),
                        key=lambda b: (b.due_on, b.key)):
            if inst.cost(b) <= cash:
                cash -= inst.cost(b)
                first.append(b)
        rest = RunInstance(desk.day, solver.NEXT_RUN, cash,
                           tuple(b for b in inst.bills if not inst.is_priority(b)))
        plan = solver.solve(rest)
        self.critical_paid = sum(b.total for b in first)
        for b in first + [b for b in rest.sorted_bills() if b.key in plan.pay]:
            cmd: c.Command = (
                c.PayBillWithDiscount(bill_id=entered[b.key], bank_account_id="B-OPER",
                                      entry_date=desk.day, discount=b.discount)
                if inst.live_discount(b) else
                c.RunPayments(bank_account_id="B-OPER", entry_date=desk.day,
                              bill_ids=(entered[b.key],)))
            assert isinstance(desk.execute(cmd), list)

    def run_turn(self, desk: TurnContext) -> None:
        real = solver.pay_plan
        solver.pay_plan = lambda d, invoices, entered: self._pay(d, invoices, entered)
        try:
            solver.reference(desk)
        finally:
            solver.pay_plan = real


def test_critical_invoices_paid_earliest_due_first_are_refused_as_the_prompt_says(
        tmp_path: Path) -> None:
    clerk = _CriticalEarliestDueFirst()
    res = run_attempt(load_scenario(find_scenario(NAME), tier="hard"), 2, clerk.name,
                      tmp_path / "a", agent=clerk)
    prompt = (res.out / "turns" / "01" / "workspace" / "prompt.md").read_text(encoding="utf-8")
    assert "pay those with the largest total it can (not simply the earliest\n    due first)" \
        in prompt
    assert clerk.critical_paid == 3370242
    assert failed_checks(res.out) == {"payment-run-optimal"}
    detail = check_results(res.out)["payment-run-optimal"]["detail"]
    assert "priority bills left unpaid: 33,702.42 of critical vendors' bills paid, the " \
           "optimum pays 34,911.18" in detail
