"""cash-application, audited for false accepts: wrong clerks the checks once accepted, each
refused by the check that owns the rule, and the correct variants still accepted (seed 1).

The prompt asks for each unapplied receipt to be applied every business day ("each
application ... dated today") and out/unapplied.csv kept current at the end of each turn;
the checks judged only the end (receivables-match-customers, unapplied-list-rows) and
receipts-applied-within-two-days the last days. Accepted before, refused now by
``receipts-applied-each-turn`` (``no_unapplied_receipts`` with ``each_turn``):

- receipts applied a cent short at their turn and the cent applied the next turn (dated
  that day, so entries-dated-in-their-period had nothing to say);
- a receipt's application put off to the next turn and dated that day;
- the same, the receipt put on that turn's list with a reason ("to be confirmed"): every
  remittance and payout report arrives with or before its deposit, so what a later turn
  places the listing turn could have placed (``listed_stays_unapplied``).

Still accepted: the receipts the reference lists at every turn and never applies
(repeats, a bank copy, a closed invoice), an application reversed and made again at a
later turn (a correction: nothing of the receipt was left unapplied), and the
other-steps variants of test_cash_application_variants.py (a cent short reversed and
redone in the same turn).

Tried and rightly refused by the declared checks: a card fee or a wire's shortfall not
allowed, an allowance on another invoice of the customer, a receipt the remittance places
listed as unclear and never applied (receivables-match-customers, by document).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from checks.state import NoUnappliedReceipts
from erp import commands as c
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
    """The reference, with some applications (or a cent of them) held to the next turn."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.held: list[c.ApplyReceipt] = []
        self.twisted = 0
        self.carried = 0
        self.last: c.ApplyReceipt | None = None
        self.rows_listed = 0

    def run_turn(self, desk: TurnContext) -> None:
        for cmd in self.held:  # the day after: applied and dated that day
            done = desk.execute(cmd.model_copy(update={"entry_date": desk.day}))
            assert isinstance(done, list), done
            self.carried += 1
        self.held = []
        listed: list[str] = []
        if self.name == "corrected-next-turn" and self.last is not None and not self.carried:
            undo = c.ReverseApplication(receipt_id=self.last.receipt_id,
                                        invoice_id=self.last.invoice_id, amount=self.last.amount,
                                        entry_date=desk.day)
            for cmd in (undo, self.last.model_copy(update={"entry_date": desk.day})):
                assert isinstance(desk.execute(cmd), list), cmd
            self.carried += 1

        def twisted(real: Execute, cmd: c.Command) -> list[StoredEvent] | object:
            if isinstance(cmd, c.ApplyReceipt) and self.name == "corrected-next-turn":
                self.last = self.last or cmd
                self.twisted = 1
            if self.name in ("reference", "corrected-next-turn") or not isinstance(
                    cmd, c.ApplyReceipt) or self.twisted >= 3 or cmd.amount <= 500:
                return real(cmd)
            self.twisted += 1
            if self.name == "cent-next-day":
                self.held.append(cmd.model_copy(update={"amount": 1}))
                return real(cmd.model_copy(update={"amount": cmd.amount - 1}))
            self.held.append(cmd)
            if self.name == "held-and-listed":
                line = desk.ledger.books.receipts[cmd.receipt_id].matched_line
                listed.append(line or cmd.receipt_id)
            return []  # the clerk's own view moves on; the books wait a turn

        with routed(desk, twisted):
            solver.reference(desk)
        text = (desk.output_dir / "unapplied.csv").read_text(encoding="utf-8")
        self.rows_listed += len(text.splitlines()) - 1
        if listed:
            path = desk.output_dir / "unapplied.csv"
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
            rows += [[line, "the remittance is to be confirmed; applied tomorrow"]
                     for line in listed]
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(rows)
            path.write_text(buf.getvalue(), encoding="utf-8")


CLERKS = ("cent-next-day", "held-a-turn", "held-and-listed", "reference", "corrected-next-turn")


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, tuple[AttemptResult, _Clerk]]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp(NAME)
    out = {}
    for name in CLERKS:
        clerk = _Clerk(name)
        out[name] = (run_attempt(loaded, SEED, name, root / name, agent=clerk), clerk)
    yield out


@pytest.mark.parametrize("clerk", ["cent-next-day", "held-a-turn", "held-and-listed"])
def test_a_receipt_left_unapplied_over_a_turn_is_refused(
        attempts: dict[str, tuple[AttemptResult, _Clerk]], clerk: str) -> None:
    res, agent = attempts[clerk]
    assert agent.twisted == agent.carried == 3, (agent.twisted, agent.carried)
    # the books of the turn's day were wrong too (test_cash_application_audit3.py)
    assert failed_checks(res.out) == {"receipts-applied-each-turn",
                                      "receivables-matched-at-each-turn"}
    detail = check_results(res.out)["receipts-applied-each-turn"]["detail"]
    assert "3 receipts the clerk had left unapplied at a turn's end" in detail, detail
    if clerk == "cent-next-day":
        assert "0.01 open" in detail, detail
    if clerk == "held-and-listed":
        assert "listed, then" in detail and "applied at a later turn" in detail, detail


@pytest.mark.parametrize("clerk", ["reference", "corrected-next-turn"])
def test_receipts_listed_and_kept_and_a_later_correction_are_accepted(
        attempts: dict[str, tuple[AttemptResult, _Clerk]], clerk: str) -> None:
    res, agent = attempts[clerk]
    assert failed_checks(res.out) == set()
    assert agent.rows_listed > 10, "no turn's list named a receipt"
    assert clerk == "reference" or agent.carried == 1


def test_each_turn_is_not_a_per_date_check() -> None:
    with pytest.raises(ValidationError, match="each_turn"):
        NoUnappliedReceipts(type="no_unapplied_receipts", older_than_days=0, each_turn=True,
                            daily=True)
