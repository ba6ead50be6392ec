"""month-end-close, audited for false accepts: wrong work a sloppy clerk does that the
checks let through.

- The weekly bill payments: the prompt asks each weekly turn before the month's last
  business day to pay the approved bills due within the next 7 days, and the checks only
  refused a bill paid too early. A clerk that never ran a payment (every bill left to go
  overdue) or whose runs each left a due bill out was accepted: the vendors' own records
  agree with books that owe them. ``due-bills-paid-at-their-turn``
  (``due_bills_paid_at_turns``) now refuses a bill open when a weekly turn ended though due
  within its 7 days.
- The bank reconciliation was judged by its first row (the statement's balance), its last
  (the book balance) and their tie: items made up (a deposit in transit and an outstanding
  payment that no book or statement holds, netting to nothing), or the month's only items
  left out (the duplicate bank line and the receipt the feed recorded from it, which net to
  nothing), were accepted. ``bank-reconciliation-ties`` (``items_as_books``) now asks the
  items to be the account's reconciling items when the turn ended, amount for amount.
- The receivables were checked as they stood at the Friday turns of May 8, 15 and 22, not
  at the month-end turn of May 29: a clerk that left that turn's receipts unapplied (its
  aging showing paid invoices open) and applied them as the controller on June 1 was
  accepted, June's work leaving the month's end as it should be.
  ``receivables-matched-at-the-may-29-turn`` now checks them as they stood then too.

Tried and rightly refused already: a receipt the reference leaves unapplied (a duplicate
payment, the receipt of the bank's duplicate line) applied to the customer's oldest open
invoice (``receivables-match-customers``, by document); the month-end statement left for
the feed (the service charge and interest not recorded by May's end: ``bank-reconciles``).
Tried and rightly accepted: the controller closing May before finishing June 1's work
(nothing dated in May was left to do then, at seeds 0-2 of the medium and hard tiers).
Still accepted, left as is: a real item's amount under a label or reference of the
clerk's own (``timing differences``, or a deposit in transit naming no receipt of the
books); the prompt gives the item column no vocabulary and the reference column no form.
A false reject met on the way: the receipt recorded from the duplicate line, labelled
"Receipt recorded from duplicate bank line", was refused as signed the wrong way
(``item_sign`` read "duplicate" as the bank's side before "recorded" as the books').
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from erp import commands as c
from erp.errors import CommandRejected
from erp.ledger import StoredEvent
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "month-end-close"
SEED = 0
MONTH_END = date(2026, 5, 29)
mec = load_solver(library_dir() / NAME / "solver.py")

Route = Callable[[Execute, c.Command], "list[StoredEvent] | CommandRejected"]
Rows = Callable[[list[list[str]]], list[list[str]]]


class _Clerk:
    """The reference, each command through ``route``, and its month-end reconciliation's
    rows rewritten by ``rows``."""

    name = "audit"

    def __init__(self, route: Route | None = None, rows: Rows | None = None) -> None:
        self.route, self.rows = route, rows

    def run_turn(self, desk: TurnContext) -> None:
        route = self.route
        if route is None:
            mec.reference(desk)
        else:
            with routed(desk, route):
                mec.reference(desk)
        if self.rows is not None and desk.day == MONTH_END:
            path = desk.output_dir / mec.RECONCILIATION
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(
                [rows[0], *self.rows(rows[1:])])
            path.write_text(buf.getvalue(), encoding="utf-8")


def _run(tmp: Path, clerk: Any) -> tuple[set[str], dict[str, Any]]:
    res = run_attempt(load_scenario(find_scenario(NAME)), SEED, clerk.name, tmp / "a",
                      agent=clerk)
    return failed_checks(res.out), check_results(res.out)


# --- the weekly payments ------------------------------------------------------------------


def _no_payments(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
    return [] if isinstance(cmd, c.RunPayments) else real(cmd)


def _one_bill_left_out(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
    if isinstance(cmd, c.RunPayments) and len(cmd.bill_ids) > 1:
        return real(cmd.model_copy(update={"bill_ids": cmd.bill_ids[:-1]}))
    return real(cmd)


@pytest.mark.parametrize("route", [_no_payments, _one_bill_left_out],
                         ids=["never-pays", "leaves-one-out"])
def test_due_bills_left_unpaid_at_the_weekly_turns_are_refused(route: Route,
                                                               tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk(route=route))
    assert failed == {"due-bills-paid-at-their-turn"}, failed
    detail = results["due-bills-paid-at-their-turn"]["detail"]
    assert "left open at it" in detail and "after the turn of 2026-05-" in detail, detail


def _one_payment_per_bill(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
    if isinstance(cmd, c.RunPayments):
        done: list[StoredEvent] = []
        for bill in cmd.bill_ids:
            out = real(cmd.model_copy(update={"bill_ids": (bill,)}))
            assert isinstance(out, list), out
            done += out
        return done
    return real(cmd)


def test_each_due_bill_paid_by_a_run_of_its_own_is_accepted(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk(route=_one_payment_per_bill))
    assert not failed, failed
    metrics = results["due-bills-paid-at-their-turn"]["metrics"]
    assert metrics == {"turns": 4, "left_unpaid": 0}, metrics  # May 1, 8, 15 and 22


# --- the month-end turn's receipts ---------------------------------------------------------


class _ReceiptsLeftToJune:
    """The reference, except that the month-end turn applies no receipt (nor accepts a card
    fee): the controller's June 1 turn applies them all."""

    name = "receipts-left-to-june"

    def run_turn(self, desk: TurnContext) -> None:
        def route(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
            if desk.day == MONTH_END and isinstance(
                    cmd, (c.ApplyReceipt, c.GrantFeeAllowance, c.AssignReceiptCustomer)):
                return []
            return real(cmd)

        with routed(desk, route):
            mec.reference(desk)


def test_the_month_end_turns_receipts_left_to_june_are_refused(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _ReceiptsLeftToJune())
    assert failed == {"receivables-matched-at-the-may-29-turn"}, failed
    assert "by document" in results["receivables-matched-at-the-may-29-turn"]["detail"]


# --- the bank reconciliation's items --------------------------------------------------------


def _made_up(rows: list[list[str]]) -> list[list[str]]:
    return [*rows[:-1], ["deposit in transit", "RCT-000999", "500.00"],
            ["outstanding payment", "PAY-000999", "-500.00"], rows[-1]]


def _pair_left_out(rows: list[list[str]]) -> list[list[str]]:
    assert len(rows) == 4 and "duplicate bank line" in rows[1][0], rows
    return [rows[0], rows[-1]]


@pytest.mark.parametrize(("rows", "says"), [
    (_made_up, "no reconciling item of the account when the turn ended: -500.00; 500.00"),
    (_pair_left_out, "reconciling items not listed: -3,127.37 (BL-000051, the bank's copy"),
], ids=["made-up", "left-out"])
def test_reconciling_items_made_up_or_left_out_are_refused_though_they_tie(
        rows: Rows, says: str, tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk(rows=rows))
    assert failed == {"bank-reconciliation-ties"}, failed
    detail = results["bank-reconciliation-ties"]["detail"]
    assert says in detail, detail


def _own_way(rows: list[list[str]]) -> list[list[str]]:
    """The items in the other order, worded the clerk's own way, a negative in parentheses."""
    first, dup, receipt, last = rows
    amount = dup[2].lstrip("-")
    return [first, ["Receipt RCT-BL-000051 the books recorded from it", receipt[1],
                    receipt[2]],
            ["Duplicate deposit line BL-000051 (bank error)", "", f"({amount})"], last]


def test_the_items_in_another_order_and_wording_are_accepted(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk(rows=_own_way))
    assert not failed, failed
    assert results["bank-reconciliation-ties"]["passed"]


# --- false rejects met on the way -----------------------------------------------------------


def _recorded_from(rows: list[list[str]]) -> list[list[str]]:
    first, dup, receipt, last = rows
    return [first, ["Duplicate deposit posted by the bank (bank error)", dup[1], dup[2]],
            ["Receipt recorded from duplicate bank line", receipt[1], receipt[2]], last]


def test_a_receipt_recorded_from_the_duplicate_line_so_labelled_is_accepted(
        tmp_path: Path) -> None:
    """The receipt the feed recorded from the bank's duplicate line, labelled "Receipt
    recorded from duplicate bank line", was read as a bank line the books lack ("duplicate"
    said the bank's side before "recorded" said the books') and its positive amount refused
    as signed the wrong way: a label saying what the books recorded from something is the
    books' side."""
    failed, _ = _run(tmp_path, _Clerk(rows=_recorded_from))
    assert not failed, failed


def test_what_the_books_recorded_from_a_bank_line_is_the_books_side() -> None:
    from checks.policy import item_sign
    assert [item_sign(x) for x in (
        "Receipt recorded from duplicate bank line",
        "Receipt RCT-BL-000051 booked from the duplicate line",
        "receipt the books recorded from the duplicate bank line")] == [1, 1, 1]
    # the bank's copy itself stays the bank's side: subtracted
    assert item_sign("Duplicate deposit posted by the bank (bank error)") == -1


class _SkipsOneWeek(_Clerk):
    """The reference, with no payment run at the turn of ``day`` only."""

    def __init__(self, day: date) -> None:
        super().__init__()
        self.day = day

    def run_turn(self, desk: TurnContext) -> None:
        self.route = _no_payments if desk.day == self.day else None
        super().run_turn(desk)


def test_due_bills_paid_at_turns_after_judges_only_the_later_turns(tmp_path: Path) -> None:
    # ``after`` is how one month's weekly turns are judged of several (bench --months):
    # a turn on or before it is not that month's.
    loaded = load_scenario(find_scenario(NAME))
    (spec,) = [s for s in loaded.checks if s.name == "due-bills-paid-at-their-turn"]
    later = spec.model_copy(update={"after": date(2026, 5, 8), "name": "after-may-8"})
    loaded = replace(loaded, checks=(*loaded.checks, later))
    res = run_attempt(loaded, SEED, "audit", tmp_path / "a", agent=_SkipsOneWeek(date(2026, 5, 8)))
    results = check_results(res.out)
    assert "after the turn of 2026-05-08" in results["due-bills-paid-at-their-turn"]["detail"]
    assert results["after-may-8"]["passed"], results["after-may-8"]["detail"]
    assert results["after-may-8"]["metrics"] == {"turns": 2, "left_unpaid": 0}  # May 15, 22


def test_due_bills_paid_at_turns_refuses_after_not_before_before() -> None:
    from pydantic import ValidationError

    from checks.policy import DueBillsPaidAtTurns

    with pytest.raises(ValidationError, match=r"after \(2026-05-29\) must be earlier than "
                                              r"before \(2026-05-29\)"):
        DueBillsPaidAtTurns(type="due_bills_paid_at_turns", days_after=7,
                            before=date(2026, 5, 29), after=date(2026, 5, 29))
