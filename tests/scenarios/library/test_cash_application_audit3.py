"""cash-application, audited for false accepts (third pass): real attempts of the easy tier,
seed 1, the reference with one twist.

- A receipt applied to another open invoice of its customer at one turn and put right at
  the next (the application reversed, the named invoice paid, both dated that day): the
  final books are right, every receipt applied at its turn, every entry dated its turn's
  day, so only the per-date control (informational: ``summary.json``'s daily checks) saw
  the day's books wrong, and the verdict accepted it. The customer's statement, the aging
  and the dunning of that day read those books. ``receivables-matched-at-each-turn``
  (``books_match_world`` with ``at_turns``) now refuses it, naming the day; the same
  mistake put right within its turn is accepted.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from erp import commands as c
from erp import queries as q
from erp.ledger import StoredEvent
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "cash-application"
SEED = 1
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    """The reference, with twists by ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.fixes: list[tuple[str, str, str, int]] = []  # receipt, wrong, right, amount
        self.misapplied: list[str] = []  # the days of the misapplications
        self.corrected = 0

    def _correct(self, desk: TurnContext) -> None:
        for receipt, wrong, right, amount in self.fixes:
            for cmd in (c.ReverseApplication(receipt_id=receipt, invoice_id=wrong, amount=amount,
                                             entry_date=desk.day),
                        c.ApplyReceipt(receipt_id=receipt, invoice_id=right, amount=amount,
                                       entry_date=desk.day)):
                assert isinstance(desk.execute(cmd), list), cmd
            self.corrected += 1
        self.fixes = []

    def run_turn(self, desk: TurnContext) -> None:
        self._correct(desk)  # the day after: the mistake seen and put right

        def twisted(real: Execute, cmd: c.Command) -> list[StoredEvent] | object:
            if self.misapplied or not isinstance(cmd, c.ApplyReceipt):
                return real(cmd)
            inv = q.document(desk.store, "invoice", cmd.invoice_id)
            assert inv is not None
            others = [d["doc_id"] for d in q.documents(desk.store, "invoice")
                      if d["party"] == inv["party"] and d["doc_id"] != cmd.invoice_id
                      and d["open_amount"] >= cmd.amount]
            if not others:
                return real(cmd)
            self.misapplied.append(desk.day.isoformat())
            self.fixes.append((cmd.receipt_id, others[0], cmd.invoice_id, cmd.amount))
            return real(cmd.model_copy(update={"invoice_id": others[0]}))

        with routed(desk, twisted):
            solver.reference(desk)
        if self.name == "misapplied-put-right-in-the-turn":
            self._correct(desk)


CLERKS = ("misapplied-put-right-next-turn", "misapplied-put-right-in-the-turn")


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, tuple[AttemptResult, _Clerk]]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp(NAME)
    yield {name: (run_attempt(loaded, SEED, name, root / name, agent=clerk), clerk)
           for name in CLERKS for clerk in [_Clerk(name)]}


def test_a_receipt_misapplied_and_put_right_a_turn_later_is_refused(
        attempts: dict[str, tuple[AttemptResult, _Clerk]]) -> None:
    res, clerk = attempts["misapplied-put-right-next-turn"]
    assert clerk.corrected == len(clerk.misapplied) == 1
    assert failed_checks(res.out) == {"receivables-matched-at-each-turn"}
    detail = check_results(res.out)["receivables-matched-at-each-turn"]["detail"]
    day = clerk.misapplied[0]
    assert detail.startswith(f"1 of 10 turn date(s) differ ({day}); the first, {day}:"), detail
    assert "misapplied" in detail and "overapplied" in detail, detail
    # the final books are right: the end-of-attempt comparison has nothing to say
    assert check_results(res.out)["receivables-match-customers"]["passed"]


def test_a_receipt_misapplied_and_put_right_in_its_turn_is_accepted(
        attempts: dict[str, tuple[AttemptResult, _Clerk]]) -> None:
    res, clerk = attempts["misapplied-put-right-in-the-turn"]
    assert clerk.corrected == len(clerk.misapplied) == 1
    assert failed_checks(res.out) == set()
    assert "at the end of each of 10 turn date(s)" in check_results(res.out)[
        "receivables-matched-at-each-turn"]["detail"]

