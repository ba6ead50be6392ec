"""collections: wrong clerks the checks once accepted, each refused by the check that owns
the rule, and a correct variant still accepted (medium tier, seed 1: a ruling credits).

- a ruling's credit memo put on bad debt expense instead of sales returns (a write-off in
  all but name) and a credit memo of the clerk's own on a customer's claim:
  ``disputes-resolved-as-ruled``;
- a fee allowance and a manual journal entry no step of the policy calls for:
  ``only-the-policys-writes``;
- a dispute recorded with the reason ``x`` instead of the customer's:
  ``disputes-recorded``; the reference reads the reason whatever way the customer writes
  the invoice reference (``INV.12`` and ``Invoice No. 12`` cut it short before);
- a receipt applied to the wrong invoice and corrected in the same run by reversing the
  application, and a dispute's reason recorded in capitals after a note, are accepted.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from counterparties.collections import DISPUTE_WORDINGS
from counterparties.noise import REFERENCE_STYLES
from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from sim.documents import render_email
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "collections"
LAST_RUN = date(2026, 6, 29)


class _Clerk:
    """The reference with one mistake (or one correct detour)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.done = False

    def run_turn(self, desk: TurnContext) -> None:
        solver = load_solver(library_dir() / NAME / "solver.py")

        def twisted(real: Execute, cmd: c.Command) -> Any:
            books = desk.ledger.books
            if self.name == "credit-to-bad-debt" and isinstance(cmd, c.ResolveDispute) \
                    and cmd.resolution == "credit_memo":
                cmd = cmd.model_copy(update={"account": "6900"})
            if isinstance(cmd, c.RecordDispute) and self.name == "dispute-reason-x":
                cmd = cmd.model_copy(update={"reason": "x"})
            if isinstance(cmd, c.RecordDispute) and self.name == "dispute-reason-noted":
                cmd = cmd.model_copy(update={"reason": f"per email: {cmd.reason.upper()}"})
            if self.name == "misapply-corrected" and isinstance(cmd, c.ApplyReceipt) \
                    and not self.done:
                inv = books.invoices[cmd.invoice_id]
                other = [i for i in sorted(books.invoices.values(), key=lambda i: i.invoice_id)
                         if i.customer_id == inv.customer_id
                         and i.invoice_id != inv.invoice_id and i.open >= cmd.amount]
                if other:
                    self.done = True
                    wrong = other[0].invoice_id
                    real(cmd.model_copy(update={"invoice_id": wrong}))
                    real(c.ReverseApplication(receipt_id=cmd.receipt_id, invoice_id=wrong,
                                              amount=cmd.amount))
            return real(cmd)

        with routed(desk, twisted):
            solver.reference(desk)
        if desk.day != LAST_RUN:
            return
        books = desk.ledger.books
        inv = next(i for i in sorted(books.invoices.values(), key=lambda i: i.invoice_id)
                   if i.open > 1000 and i.invoice_id not in books.collections.open_disputes)
        extra: c.Command | None = None
        if self.name == "own-credit-memo":   # "the customer says a credit was agreed"
            extra = c.IssueCreditMemo(invoice_id=inv.invoice_id, amount=inv.open,
                                      reason="credit agreed, the customer says")
        elif self.name == "fee-allowance":
            extra = c.GrantFeeAllowance(invoice_id=inv.invoice_id, amount=100)
        elif self.name == "journal":
            extra = c.PostJournalEntry(entry_date=desk.day, memo="clean-up", lines=(
                c.JournalLineIn(account="6900", debit=1000),
                c.JournalLineIn(account="4000", credit=1000)))
        if extra is not None:
            assert isinstance(desk.execute(extra), list), self.name


CLERKS = ("credit-to-bad-debt", "own-credit-memo", "fee-allowance", "journal",
          "misapply-corrected", "dispute-reason-x", "dispute-reason-noted")


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME), tier="medium")
    root = tmp_path_factory.mktemp(NAME)
    yield {name: run_attempt(loaded, 1, name, root / name, agent=_Clerk(name))
           for name in CLERKS}


def test_a_rulings_credit_on_bad_debt_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["credit-to-bad-debt"]
    assert failed_checks(res.out) == {"disputes-resolved-as-ruled"}
    detail = check_results(res.out)["disputes-resolved-as-ruled"]["detail"]
    assert "is on account 6900, not sales returns 4050" in detail


def test_a_credit_memo_on_a_customers_claim_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["own-credit-memo"]
    assert failed_checks(res.out) == {"disputes-resolved-as-ruled"}
    assert "resolves no dispute" in check_results(res.out)["disputes-resolved-as-ruled"]["detail"]


@pytest.mark.parametrize(("clerk", "what"), [("fee-allowance", "1 fee allowance granted"),
                                             ("journal", "1 journal entry posted")])
def test_a_write_no_step_calls_for_is_refused(attempts: dict[str, AttemptResult], clerk: str,
                                              what: str) -> None:
    res = attempts[clerk]
    assert failed_checks(res.out) == {"only-the-policys-writes"}
    assert what in check_results(res.out)["only-the-policys-writes"]["detail"]


def test_a_misapplication_reversed_in_the_same_run_is_accepted(
        attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["misapply-corrected"].out) == set()


def test_a_dispute_without_the_customers_reason_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["dispute-reason-x"]
    assert failed_checks(res.out) == {"disputes-recorded"}
    detail = check_results(res.out)["disputes-recorded"]["detail"]
    assert "gives the reason 'x', not the customer's" in detail


def test_a_dispute_reason_in_other_case_after_a_note_is_accepted(
        attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["dispute-reason-noted"].out) == set()


@pytest.mark.parametrize("style", REFERENCE_STYLES)
@pytest.mark.parametrize("wording", range(len(DISPUTE_WORDINGS)))
def test_the_reference_reads_the_reason_whatever_the_reference_style(
        style: str, wording: int, tmp_path: Path) -> None:
    solver = load_solver(library_dir() / NAME / "solver.py")
    ref = style.format(n=12)
    words = "the support hours billed are more than our portal shows were used"
    subject, body = DISPUTE_WORDINGS[wording]
    path = tmp_path / "m.eml"
    path.write_text(render_email(
        sender="ap@x.example", to="ar@company.example", subject=subject.format(ref=ref),
        body="Hello,\n\n" + body.format(ref=ref, words=words, amount="1,300.00 of it"),
        when=datetime(2026, 6, 2, 9, 0, tzinfo=UTC), message_id="MSG-1"), encoding="utf-8")
    plan = solver._Plan()
    solver._read_email(path, {"INV-000012"}, plan, 2026)
    assert plan.disputes == [("INV-000012", 130_000, words)]
