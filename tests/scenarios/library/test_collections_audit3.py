"""collections, audited a third time (hard tier, seed 1): the reference with one mistake of
today's classes (work left a run and caught up, a mistake put right a run later), each a
real attempt. None was accepted; each is refused by the check that owns the rule:

- a credit hold due at the 06-01 run placed at the next (``holds-as-policy``: the books
  date a hold the day of its run, no date of the clerk's own to move back);
- a level 2 letter due at 06-01 sent at 06-08, and a level 1 letter sent where level 2
  was due (``letters-as-policy``);
- a receipt applied to another open invoice of its customer at its run and put right at
  the next by reversing the application and applying it again
  (``receipts-applied-as-paid``: the application is made and dated at a later run).

Not tried: the collections desk leaves no file, so no listing of letters could be wrong.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "collections"
SEED = 1
FIRST = date(2026, 6, 1)
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    """The reference with one mistake (``name``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.done = False
        self.fix: tuple[c.ApplyReceipt, str, date] | None = None

    def _route(self, desk: TurnContext, real: Execute, cmd: c.Command) -> Any:
        books = desk.ledger.books
        if self.done or (desk.day != FIRST and self.name != "misapplied-put-right-next-run"):
            return real(cmd)
        if self.name == "hold-late" and isinstance(cmd, c.PlaceCreditHold):
            self.done = True
            return []
        if self.name == "letter-late" and isinstance(cmd, c.SendDunningLetter):
            self.done = True
            return []
        if self.name == "letter-lower" and isinstance(cmd, c.SendDunningLetter) \
                and cmd.level >= 2:
            self.done = True
            return real(cmd.model_copy(update={"level": cmd.level - 1}))
        if self.name == "misapplied-put-right-next-run" and isinstance(cmd, c.ApplyReceipt):
            inv = books.invoices[cmd.invoice_id]
            other = sorted(i.invoice_id for i in books.invoices.values()
                           if i.customer_id == inv.customer_id
                           and i.invoice_id != inv.invoice_id and i.open >= cmd.amount)
            if other:
                self.done = True
                self.fix = (cmd, other[0], desk.day)
                return real(cmd.model_copy(update={"invoice_id": other[0]}))
        return real(cmd)

    def run_turn(self, desk: TurnContext) -> None:
        if self.fix is not None and desk.day != self.fix[2]:
            (cmd, wrong, _), self.fix = self.fix, None
            undone = desk.execute(c.ReverseApplication(
                receipt_id=cmd.receipt_id, invoice_id=wrong, amount=cmd.amount))
            assert isinstance(undone, list), undone
            redone = desk.execute(cmd)
            assert isinstance(redone, list), redone
        with routed(desk, lambda real, cmd: self._route(desk, real, cmd)):
            solver.reference(desk)


def _run(tmp: Path, name: str) -> tuple[set[str], dict[str, Any]]:
    res = run_attempt(load_scenario(find_scenario(NAME), tier="hard"), SEED, name, tmp / "a",
                      agent=_Clerk(name))
    return failed_checks(res.out), check_results(res.out)


@pytest.mark.parametrize(("name", "check", "says"), [
    ("hold-late", "holds-as-policy", "missing hold place C0002 on 2026-06-01"),
    ("letter-late", "letters-as-policy", "missing letter level 2 for INV-000001 on 2026-06-01"),
    ("letter-lower", "letters-as-policy", "letter level 1 for INV-000001 on 2026-06-01 not "
                                          "called for"),
    ("misapplied-put-right-next-run", "receipts-applied-as-paid",
     "(the first run after the deposit)"),
])
def test_work_left_a_run_or_put_right_a_run_later_is_refused(name: str, check: str, says: str,
                                                             tmp_path: Path) -> None:
    failed, results = _run(tmp_path, name)
    assert check in failed, failed
    assert says in results[check]["detail"], results[check]["detail"]
