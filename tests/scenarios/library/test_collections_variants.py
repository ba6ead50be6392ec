"""collections, audited for false rejects: correct work done another way than the
reference's is accepted (none was refused).

- the records of a run's emails in another order (the sales manager's rulings first, then
  the promises, the new disputes last), each dispute's reason in other words around the
  customer's own (upper-cased, after a preamble), each hold with another reason and its
  limit of 0.00 given;
- each receipt applied in two parts, and every third application made a cent short,
  reversed and made again at the same run (a correction by reversal);
- each dispute's reason in the clerk's own words, the customer's inflected or spelled
  another way (``Trainer canceled the second day`` for a training day the customer wrote
  was cancelled, ``seat returns`` for seats returned): disputes-recorded refused them, as it
  took only the customer's own words; a reason naming none of them is still refused.

Refused, and now said by the policy: a credit hold for the undisputed rest of an invoice
disputed in part, 61 or more days past due (an invoice disputed in whole or in part is not
an undisputed invoice of step 5).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from erp import commands as c
from erp.errors import CommandRejected
from erp.ledger import StoredEvent
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, failed_checks, routed

NAME = "collections"
solver = load_solver(library_dir() / NAME / "solver.py")
SEED = 0
ORDER = {c.ResolveDispute: 0, c.RecordPromiseToPay: 1, c.RecordDispute: 2}


def _attempt(agent: Any, tmp_path: Path, tier: str | None = None, seed: int = SEED) -> set[str]:
    result = run_attempt(load_scenario(find_scenario(NAME), tier=tier), seed, agent.name,
                         tmp_path / "a", agent=agent)
    return failed_checks(result.out)


class _OtherOrderOtherWords:
    name = "other-order"

    def __init__(self) -> None:
        self.seen = {"reordered": 0, "reasons": 0, "holds": 0}

    def run_turn(self, desk: TurnContext) -> None:
        held: list[c.Command] = []

        def flush(real: Execute) -> None:
            if [type(x) for x in held] != sorted((type(x) for x in held), key=ORDER.__getitem__):
                self.seen["reordered"] += 1
            for x in sorted(held, key=lambda x: ORDER[type(x)]):
                done = real(x)
                assert isinstance(done, list), done
            held.clear()

        def route(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
            if type(cmd) in ORDER:
                if isinstance(cmd, c.RecordDispute):
                    self.seen["reasons"] += 1
                    cmd = cmd.model_copy(update={
                        "reason": f"Customer disputes the invoice by email: {cmd.reason.upper()}"})
                held.append(cmd)
                return []
            flush(real)
            if isinstance(cmd, c.PlaceCreditHold):
                self.seen["holds"] += 1
                cmd = cmd.model_copy(update={"reason": "Policy step 5", "credit_limit": 0})
            return real(cmd)

        with routed(desk, route) as real:
            solver.reference(desk)
            flush(real)


def test_emails_recorded_in_another_order_and_words_are_accepted(tmp_path: Path) -> None:
    agent = _OtherOrderOtherWords()
    assert _attempt(agent, tmp_path) == set()
    assert all(agent.seen.values()), agent.seen


class _OtherSteps:
    name = "other-steps"

    def __init__(self) -> None:
        self.seen = {"split": 0, "reversed": 0}

    def run_turn(self, desk: TurnContext) -> None:
        def route(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
            if not isinstance(cmd, c.ApplyReceipt) or cmd.amount <= 200:
                return real(cmd)
            if sum(self.seen.values()) % 3 == 0:
                self.seen["reversed"] += 1
                short = real(cmd.model_copy(update={"amount": cmd.amount - 1}))
                assert isinstance(short, list), short
                back = real(c.ReverseApplication(receipt_id=cmd.receipt_id,
                                                 invoice_id=cmd.invoice_id,
                                                 amount=cmd.amount - 1))
                assert isinstance(back, list), back
                return real(cmd)
            self.seen["split"] += 1
            first = real(cmd.model_copy(update={"amount": cmd.amount // 2}))
            if isinstance(first, CommandRejected):
                return first
            return real(cmd.model_copy(update={"amount": cmd.amount - cmd.amount // 2}))

        with routed(desk, route):
            solver.reference(desk)


def test_receipts_applied_in_other_steps_are_accepted(tmp_path: Path) -> None:
    agent = _OtherSteps()
    assert _attempt(agent, tmp_path) == set()
    assert all(agent.seen.values()), agent.seen


OWN_WORDS = {"training": "Trainer canceled the second day and it should not be billed",
             "seats": "Licence seat returns in the first week, as the contract allows",
             "support hours": "Overbilling: more hours billed than the portal shows used",
             "list price": "Billed at list prices, not the rate we were quoted",
             "migration": "Data migration unfinished, final milestone not accepted"}
"""The clerk's words for each reason the reference takes from a customer's email."""


class _OwnWords:
    def __init__(self, name: str, words: dict[str, str] | None) -> None:
        self.name = name
        self.words = words
        self.rewritten: list[str] = []

    def run_turn(self, desk: TurnContext) -> None:
        def route(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
            if isinstance(cmd, c.RecordDispute):
                new = ("disputed by email" if self.words is None else
                       next((v for k, v in self.words.items() if k in cmd.reason), cmd.reason))
                self.rewritten.append(new)
                cmd = cmd.model_copy(update={"reason": new})
            return real(cmd)

        with routed(desk, route):
            solver.reference(desk)


def test_dispute_reasons_in_the_clerks_own_words_are_accepted(tmp_path: Path) -> None:
    agent = _OwnWords("own-words", OWN_WORDS)
    assert _attempt(agent, tmp_path, tier="hard") == set()
    assert OWN_WORDS["training"] in agent.rewritten, agent.rewritten  # canceled, trainer


def test_a_dispute_reason_naming_none_of_the_customers_words_is_refused(
        tmp_path: Path) -> None:
    agent = _OwnWords("no-reason", None)
    assert _attempt(agent, tmp_path, tier="hard") == {"disputes-recorded"}
    assert agent.rewritten


class _HoldsForTheUndisputedRest:
    """The reference, and a credit hold on each customer not on hold with an invoice 61 or
    more days past due disputed in part (its undisputed rest read as an undisputed invoice)."""

    name = "holds-for-the-rest"

    def __init__(self) -> None:
        self.placed = 0

    def run_turn(self, desk: TurnContext) -> None:
        solver.reference(desk)
        books = desk.ledger.books
        coll = books.collections
        for iid, did in sorted(coll.open_disputes.items()):
            inv = books.invoices[iid]
            if (coll.disputes[did].amount < inv.open and (desk.day - inv.due_on).days >= 61
                    and inv.customer_id not in coll.on_hold):
                done = desk.execute(c.PlaceCreditHold(customer_id=inv.customer_id,
                                                      reason="undisputed rest 61+ days"))
                assert isinstance(done, list), done
                self.placed += 1


def test_a_hold_for_an_invoice_disputed_in_part_is_refused_and_the_policy_says_so(
        tmp_path: Path) -> None:
    """holds-as-policy counts an invoice disputed in part as disputed (not an undisputed
    invoice 61 or more days past due); the policy said only "undisputed invoice", and now
    says that one disputed in whole or in part is not one. (A letter for it the books
    refuse themselves.)"""
    policy = " ".join((library_dir() / NAME / "policy" / "collections-policy.md").read_text(
        encoding="utf-8").split())
    assert ("A disputed invoice (in whole or in part) gets no dunning letter while the "
            "dispute is open, and is not an undisputed invoice (step 5)") in policy
    agent = _HoldsForTheUndisputedRest()
    assert _attempt(agent, tmp_path, tier="hard", seed=2) == {"holds-as-policy"}
    assert agent.placed
