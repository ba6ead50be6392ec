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
- out/unapplied.csv with reasons that say nothing (``x`` for each line, or "cannot be
  placed" for repeats, bank copies and closed invoices the policy names and the clerk
  knew): only a blank reason was refused. The policy names why each kind stays
  unapplied (rule 6: a repeat payment, a bank line exported twice; rule 7: a closed
  invoice) and asks for each line's reason: ``unapplied-list-rows`` now sets
  ``reason_words`` and refuses them (the words, in ``tests/checks/test_unapplied_reasons.py``);
  the same lines in a clerk's own words are accepted.

Tried and rightly refused or rightly accepted (pinned: the first): out/unapplied.csv
written at the last turn only (``receipts-applied-each-turn``: the repeats and the bank
copy held unapplied at the earlier turns' ends, unlisted); applications dated the
deposit's day (``entries-dated-in-their-period``); short payments closed out by a fee
allowance (the books refuse a clerk's allowance above 5% + 1.00); name-only wires applied
newest due date first (easy, medium, hard: each wire covers every invoice due, so the
books are the same, and accepted); a payment applied to its invoice's twin (two open
invoices of the customer for the same amount, made here: no seed draws them) is refused
by ``receivables-match-customers``, the reference placing each by its reference.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date

import pytest

from erp import commands as c
from erp import queries as q
from erp.ledger import Ledger, StoredEvent
from runs import attempt as attempt_module
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.instance import Instance, build_instance
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.spec import Scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "cash-application"
SEED = 1
solver = load_solver(library_dir() / NAME / "solver.py")


def _own_words(reason: str) -> str:
    """A reference reason as a clerk might put it in its own words."""
    if reason.startswith("duplicate of"):
        return "Customer sent this payment again - hold for refund"
    if "exported this deposit twice" in reason:
        return "bank dup line (one deposit)"
    if "closed invoice" in reason:
        return "Invoice was settled before; customer overpaid"
    return reason


REASONS: dict[str, Callable[[str], str]] = {
    "placeholder-reasons": lambda _: "x",
    "cannot-be-placed": lambda _: "cannot be placed",
    "own-words": _own_words,
}


class _Clerk:
    """The reference, with twists by ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rewritten = 0
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
        if self.name in REASONS:
            solver.reference(desk)
            path = desk.output_dir / "unapplied.csv"
            header, *rows = csv.reader(io.StringIO(path.read_text(encoding="utf-8")))
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(
                [header, *[[line, REASONS[self.name](why)] for line, why in rows]])
            path.write_text(buf.getvalue(), encoding="utf-8")
            self.rewritten += len(rows)
            return
        if self.name == "list-at-the-last-turn-only":
            solver.reference(desk)
            if desk.day < LAST_TURN:
                (desk.output_dir / "unapplied.csv").unlink()
                self.rewritten += 1
            return
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


CLERKS = ("misapplied-put-right-next-turn", "misapplied-put-right-in-the-turn",
          "list-at-the-last-turn-only", *REASONS)
LAST_TURN = date(2026, 3, 13)


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


@pytest.mark.parametrize("clerk", ["placeholder-reasons", "cannot-be-placed"])
def test_unapplied_lines_listed_with_reasons_that_say_nothing_are_refused(
        attempts: dict[str, tuple[AttemptResult, _Clerk]], clerk: str) -> None:
    res, agent = attempts[clerk]
    assert agent.rewritten > 10
    assert failed_checks(res.out) == {"unapplied-list-rows"}
    detail = check_results(res.out)["unapplied-list-rows"]["detail"]
    assert "8 lines listed with a reason that does not say why" in detail, detail
    assert "it is a payment the customer sent again" in detail, detail
    assert "it is the bank's second copy of a line" in detail, detail


def test_unapplied_lines_listed_in_the_clerks_own_words_are_accepted(
        attempts: dict[str, tuple[AttemptResult, _Clerk]]) -> None:
    res, agent = attempts["own-words"]
    assert agent.rewritten > 10
    assert failed_checks(res.out) == set()


def test_the_unapplied_list_kept_at_the_last_turn_only_is_refused(
        attempts: dict[str, tuple[AttemptResult, _Clerk]]) -> None:
    res, clerk = attempts["list-at-the-last-turn-only"]
    assert clerk.rewritten == 9
    assert failed_checks(res.out) == {"receipts-applied-each-turn"}
    detail = check_results(res.out)["receipts-applied-each-turn"]["detail"]
    assert "at the end of the turn of 2026-03-06: RCT-BL-000128" in detail, detail


# --- two open invoices of one customer for the same amount --------------------------------


def _twins(scenario: Scenario, seed: int | str) -> Instance:
    """The seed's instance, with each punctual customer's second opening invoice made the
    twin of its first (same amount): no seed draws two equal invoices of one customer."""
    instance = build_instance(scenario, seed)
    punctual = {cs.customer_id for cs in instance.customers if cs.behaviour == "on_time"}
    first: dict[str, int] = {}
    out = []
    for inv in instance.setup.opening_invoices:
        if inv.customer_id in punctual and inv.customer_id in first:
            inv = replace(inv, amount=first.pop(inv.customer_id))
            punctual.discard(inv.customer_id)
        elif inv.customer_id in punctual:
            first[inv.customer_id] = inv.amount
        out.append(inv)
    instance.setup.opening_invoices = out
    return instance


class _TwinClerk:
    """The reference; with ``wrong``, the first payment of an invoice with a twin applied
    to the twin (the same customer, the same open amount)."""

    def __init__(self, wrong: bool) -> None:
        self.wrong, self.name, self.retargeted = wrong, "twins", ""

    def run_turn(self, desk: TurnContext) -> None:
        def twisted(real: Execute, cmd: c.Command) -> list[StoredEvent] | object:
            if not self.wrong or self.retargeted or not isinstance(cmd, c.ApplyReceipt):
                return real(cmd)
            inv = q.document(desk.store, "invoice", cmd.invoice_id)
            assert inv is not None
            twin = [d["doc_id"] for d in q.documents(desk.store, "invoice")
                    if d["party"] == inv["party"] and d["doc_id"] != cmd.invoice_id
                    and d["open_amount"] == inv["open_amount"]]
            if not twin:
                return real(cmd)
            self.retargeted = f"{cmd.invoice_id} -> {twin[0]}"
            return real(cmd.model_copy(update={"invoice_id": twin[0]}))

        with routed(desk, twisted):
            solver.reference(desk)


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[dict[bool, tuple[AttemptResult, _TwinClerk]]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("twins")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(attempt_module, "build_instance", _twins)
        yield {wrong: (run_attempt(loaded, SEED, "twins", root / str(wrong), agent=clerk), clerk)
               for wrong in (False, True) for clerk in [_TwinClerk(wrong)]}


def test_the_reference_places_payments_between_twin_invoices_by_their_reference(
        twins: dict[bool, tuple[AttemptResult, _TwinClerk]]) -> None:
    res, _ = twins[False]
    ledger = Ledger.open(res.out / "books.db")
    try:
        totals = Counter((d["party"], d["total"]) for d in q.documents(ledger.store, "invoice"))
        paid = [d for d in q.documents(ledger.store, "invoice")
                if totals[d["party"], d["total"]] > 1 and d["open_amount"] < d["total"]]
    finally:
        ledger.close()
    assert len(paid) >= 3, paid  # twins, some of them paid in the fortnight
    assert failed_checks(res.out) == set()


def test_a_payment_applied_to_its_invoices_twin_is_refused(
        twins: dict[bool, tuple[AttemptResult, _TwinClerk]]) -> None:
    res, clerk = twins[True]
    assert clerk.retargeted
    assert {"receivables-match-customers", "receivables-matched-at-each-turn"} <= failed_checks(
        res.out), clerk.retargeted
    wrong, right = clerk.retargeted.split(" -> ")
    detail = check_results(res.out)["receivables-match-customers"]["detail"]
    assert wrong in detail and right in detail, detail
