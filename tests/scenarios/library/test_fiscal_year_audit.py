"""fiscal-year, audited for false accepts as month-end-close was (its
``test_month_end_close_audit.py``): the same clerk twelve times, the same holes? Real
attempts of the easy tier, seed 0: the reference with one twist.

- The mid-month bill payments (the prompt asks for none on another turn): a clerk that
  never pays, or whose runs each leave one due bill out, was already refused by
  ``due-bills-paid-at-mid-month`` (pinned here; the cash-floor excuse it states is
  ``test_fiscal_year_gaps.py``'s).
- The bank reconciliations were judged by their first row, their last and the tie: items
  made up (a deposit in transit and an outstanding payment netting to nothing) in every
  month's file, or the duplicate bank line and the receipt recorded from it left out of
  March's to November's, were accepted. Every ``bank-reconciliation-ties*`` now sets
  ``items_as_books``: the items are the account's reconciling items when the turn ended.
- The receivables were judged at the year's end (``receivables-match-customers``) and
  through the aging of each month-end turn, which follows the books as the turn left them:
  the month-end turn's receipts left unapplied to the controller's next day, a mid-month
  turn's to the month-end one (each application dated the day of the turn that made it,
  as ``entries-dated-in-their-period`` asks) were accepted.
  ``receivables-matched-at-each-turn`` (``books_match_world`` with ``at_turns``: the books
  at the end of each turn's date, the controller's too) now refuses each, naming the
  dates. (The controller's receipts left to the mid-month turn could not be tried here: at
  easy seed 0 the reference's controller applies none.)
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
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

NAME = "fiscal-year"
SEED = 0
TIER = "easy"
pytestmark = pytest.mark.xdist_group("fiscal-year")
fy = load_solver(library_dir() / NAME / "solver.py")
RECONCILIATION = "bank_reconciliation.csv"
RECEIPT_WORK = (c.ApplyReceipt, c.GrantFeeAllowance, c.AssignReceiptCustomer)

Route = Callable[[TurnContext, Execute, c.Command], "list[StoredEvent] | CommandRejected"]
Rows = Callable[[list[list[str]]], "list[list[str]] | None"]


def _month_end(desk: TurnContext) -> bool:
    return desk.role == "clerk" and desk.day.day >= 25


class _Clerk:
    """The reference, each command through ``route`` and each month-end reconciliation's
    rows (the statement balance first, the book balance last) rewritten by ``rows``."""

    name = "audit"

    def __init__(self, route: Route | None = None, rows: Rows | None = None) -> None:
        self.route, self.rows, self.hits = route, rows, 0

    def run_turn(self, desk: TurnContext) -> None:
        def twisted(real: Execute, cmd: c.Command) -> Any:
            assert self.route is not None
            out = self.route(desk, real, cmd)
            if out is not _UNTOUCHED:
                self.hits += 1
                return out
            return real(cmd)

        if self.route is None:
            fy.reference(desk)
        else:
            with routed(desk, twisted):
                fy.reference(desk)
        if self.rows is not None and _month_end(desk):
            path = desk.output_dir / RECONCILIATION
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
            new = self.rows(rows[1:])
            if new is not None:
                self.hits += 1
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerows([rows[0], *new])
                path.write_text(buf.getvalue(), encoding="utf-8")


_UNTOUCHED: Any = object()


def _run(tmp: Path, clerk: _Clerk) -> tuple[set[str], dict[str, Any]]:
    res = run_attempt(load_scenario(find_scenario(NAME), tier=TIER), SEED, clerk.name,
                      tmp / "a", agent=clerk)
    assert clerk.hits > 0
    return failed_checks(res.out), check_results(res.out)


# --- the mid-month payments (already refused) -----------------------------------------------


def _never_pays(desk: TurnContext, real: Execute, cmd: c.Command) -> Any:
    return [] if isinstance(cmd, c.RunPayments) else _UNTOUCHED


def _one_bill_left_out(desk: TurnContext, real: Execute, cmd: c.Command) -> Any:
    if isinstance(cmd, c.RunPayments) and len(cmd.bill_ids) > 1:
        return real(cmd.model_copy(update={"bill_ids": cmd.bill_ids[:-1]}))
    return _UNTOUCHED


@pytest.mark.parametrize("route", [_never_pays, _one_bill_left_out],
                         ids=["never-pays", "leaves-one-out"])
def test_due_bills_left_unpaid_at_the_mid_month_turns_are_refused(route: Route,
                                                                  tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk(route=route))
    assert failed == {"due-bills-paid-at-mid-month"}, failed
    assert "turn='2026-01-15'" in results["due-bills-paid-at-mid-month"]["detail"]


# --- the bank reconciliations' items ------------------------------------------------------


def _made_up(rows: list[list[str]]) -> list[list[str]]:
    return [*rows[:-1], ["deposit in transit", "RCT-000999", "500.00"],
            ["outstanding payment", "PAY-000999", "-500.00"], rows[-1]]


def _pairs_left_out(rows: list[list[str]]) -> list[list[str]] | None:
    """Every item left out of a file whose items net to nothing (the duplicate bank line
    and the receipt the books recorded from it, March to December)."""
    items = rows[1:-1]
    if not items or sum(round(float(r[2]) * 100) for r in items) != 0:
        return None
    return [rows[0], rows[-1]]


MONTHS = [f"2026-{m:02d}" for m in range(1, 12)]


@pytest.mark.parametrize(("rows", "months", "says"), [
    (_made_up, MONTHS, "no reconciling item of the account when the turn ended: -500.00; 500.00"),
    (_pairs_left_out, MONTHS[2:],
     "reconciling items not listed: -4,405.14 (BL-000076, the bank's copy of a line)"),
], ids=["made-up", "left-out"])
def test_reconciling_items_made_up_or_left_out_are_refused_though_they_tie(
        rows: Rows, months: list[str], says: str, tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk(rows=rows))
    want = {"bank-reconciliation-ties", *(f"bank-reconciliation-ties-{m}" for m in months)}
    assert failed == want, failed
    for name in want:
        assert says in results[name]["detail"], results[name]["detail"]


def _own_way(rows: list[list[str]]) -> list[list[str]] | None:
    """The items in the other order, worded the clerk's own way, negatives in parentheses."""
    items = rows[1:-1]
    if not items:
        return None
    out = []
    for _, ref, amount in reversed(items):
        if amount.startswith("-"):
            out.append([f"Duplicate deposit line {ref.split()[0]} (bank error)", "",
                        f"({amount[1:]})"])
        else:
            out.append([f"Receipt {ref.split()[0]} the books recorded from it", ref, amount])
    return [rows[0], *out, rows[-1]]


def test_the_items_in_another_order_and_wording_are_accepted(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk(rows=_own_way))
    assert not failed, failed
    assert results["bank-reconciliation-ties-2026-09"]["passed"]


# --- a turn's receipts left to a later turn -----------------------------------------------


def _left_at(turn: Callable[[TurnContext], bool]) -> Route:
    def route(desk: TurnContext, real: Execute, cmd: c.Command) -> Any:
        return [] if turn(desk) and isinstance(cmd, RECEIPT_WORK) else _UNTOUCHED
    return route


MONTH_END_TURNS = ["2026-01-30", "2026-02-27", "2026-03-31", "2026-04-30", "2026-05-29",
                   "2026-06-30", "2026-07-31", "2026-08-31", "2026-09-30", "2026-10-30",
                   "2026-11-30", "2026-12-31"]
MID_MONTH_TURNS = ["2026-01-15", "2026-02-16", "2026-03-16", "2026-04-15", "2026-05-15",
                   "2026-06-15", "2026-07-15", "2026-08-17", "2026-09-15", "2026-10-15",
                   "2026-11-16", "2026-12-15"]


@pytest.mark.parametrize(("turn", "refused_at"), [
    (_month_end, MONTH_END_TURNS),
    (lambda d: d.role == "clerk" and d.day.day < 25, MID_MONTH_TURNS),
], ids=["month-end-to-the-controller", "mid-month-to-the-month-end"])
def test_a_turns_receipts_left_to_the_next_turn_are_refused(
        turn: Callable[[TurnContext], bool], refused_at: list[str], tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk(route=_left_at(turn)))
    assert failed == {"receivables-matched-at-each-turn"}, failed
    detail = results["receivables-matched-at-each-turn"]["detail"]
    assert detail.startswith(f"{len(refused_at)} of 37 turn date(s) differ "
                             f"({', '.join(refused_at)}); the first, {refused_at[0]}:"), detail
    assert "receipt_not_applied" in detail and "by document" in detail, detail

