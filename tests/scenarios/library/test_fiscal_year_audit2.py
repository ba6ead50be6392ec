"""fiscal-year, audited for false accepts (second pass): real attempts of the easy tier,
seed 0, the reference with one twist. No false accept found; what was tried:

- bills approved a turn late (every mid-month turn's approvals held to the month-end
  turn; or every approval held to the month-end turns, the controller's too, also on the
  hard tier): accepted, and rightly in effect. ``due-bills-paid-at-mid-month`` counts only
  the bills approved by a turn, but no bill was due within a mid-month turn's week while it
  waited for its approval (bills arrive some three weeks before they are due), so none was
  paid later than the reference paid it; the prompt asks for no approval on a given turn.
- the aging worked out from the invoice date instead of the due date: refused by every
  ``ar-aging-matches-books*``.
- the reconciliation's items lumped into one deposits row and one payments row: refused
  by ``bank-reconciliation-ties*`` in the months with more than one item of a sign.
- the aging as of the calendar month's last day instead of the turn's (January 30,
  February 27, May 29, October 30 fall before it): refused for the months where it moves
  an invoice to another bucket (pinned here: February, May and October; January's moves
  none).
"""

from __future__ import annotations

import calendar
import csv
import io
from datetime import date
from pathlib import Path

import pytest

from erp import queries as q
from erp.money import format_cents
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks

NAME = "fiscal-year"
SEED = 0
pytestmark = pytest.mark.xdist_group("fiscal-year")
fy = load_solver(library_dir() / NAME / "solver.py")
AGING = "ar_aging.csv"
HEADER = ["customer", "current", "1-30", "31-60", "61-90", "over_90", "total"]


def _aging_as_of(desk: TurnContext, as_of: date) -> list[list[str]]:
    """The books' open receivables at the turn, aged by due date as of ``as_of``."""
    per: dict[str, list[int]] = {}
    for item in q.open_items(desk.store, "ar", as_of=desk.day):
        days = (as_of - date.fromisoformat(item.due_on)).days if item.due_on else 0
        row = per.setdefault(item.party or "(none)", [0] * 5)
        row[sum(days > limit for limit in (0, 30, 60, 90))] += item.open_amount
    return [[p, *(format_cents(b) for b in r), format_cents(sum(r))]
            for p, r in sorted(per.items())]


class _Clerk:
    """The reference, each month-end aging worked out as of the calendar month's last day."""

    name = "aging-as-of-month-end"

    def __init__(self) -> None:
        self.moved: list[str] = []

    def run_turn(self, desk: TurnContext) -> None:
        fy.reference(desk)
        if desk.role != "clerk" or desk.day.day < 25:
            return
        last = desk.day.replace(day=calendar.monthrange(desk.day.year, desk.day.month)[1])
        path = desk.output_dir / AGING
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows([HEADER, *_aging_as_of(desk, last)])
        if buf.getvalue() != path.read_text(encoding="utf-8"):
            self.moved.append(desk.day.strftime("%Y-%m"))
        path.write_text(buf.getvalue(), encoding="utf-8")


def test_an_aging_as_of_the_calendar_month_end_is_refused(tmp_path: Path) -> None:
    clerk = _Clerk()
    res = run_attempt(load_scenario(find_scenario(NAME), tier="easy"), SEED, clerk.name,
                      tmp_path / "a", agent=clerk)
    assert clerk.moved == ["2026-02", "2026-05", "2026-10"]
    assert failed_checks(res.out) == {f"ar-aging-matches-books-{m}" for m in clerk.moved}
    detail = check_results(res.out)["ar-aging-matches-books-2026-05"]["detail"]
    assert "as of 2026-05-29: figures differ" in detail, detail
