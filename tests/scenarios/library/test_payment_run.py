"""payment-run: the CP-SAT optimum is the optimum, and the grading checks tell runs apart.

- The model (:mod:`checks.payment_run`): on small instances CP-SAT's plan equals the
  best plan found by enumerating every subset of bills (priority, then value, then least
  cash), and the value it reports is the plan's.
- The checks (:mod:`checks.optimality`) on real attempts: the reference is at the
  optimum (gap 0); a greedy clerk (pays by due date while cash lasts, never takes a
  discount) is short of it and refused at the declared threshold, accepted at a loose
  one; a clerk who also pays a bill that could wait is refused by
  ``paid_only_with_cause``; the null agent leaves the invoices out of the books.
- The vendors' late fees: a bill left unpaid past its due date gets its vendor's late
  fee notice; the refusal of a discount claimed after its date.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from checks.context import CheckContext
from checks.optimality import (
    PaidOnlyWithCause,
    PaymentRunOptimality,
    paid_only_with_cause,
    payment_run_optimality,
)
from checks.payment_run import RunBill, RunInstance, late_fees_charged, outcome, solve
from erp import commands as c
from erp.errors import CommandRejected
from erp.store import EventStore
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, routed, shared_attempt

pytestmark = pytest.mark.xdist_group("payment-run")  # one worker with test_payment_run_audit:
# the shared reference

RUN_ON, NEXT_RUN = date(2026, 6, 10), date(2026, 6, 24)


# --- the model against brute force -----------------------------------------------------------


def _brute_force(inst: RunInstance) -> tuple[int, int, int]:
    """The best (priority, value, -cash) over every subset of the bills."""
    best: tuple[int, int, int] | None = None
    keys = [b.key for b in inst.bills]
    for k in range(len(keys) + 1):
        for chosen in itertools.combinations(keys, k):
            o = outcome(inst, chosen)
            if o.cash > inst.available:
                continue
            t = (o.priority, o.value, -o.cash)
            if best is None or t > best:
                best = t
    assert best is not None
    return best


def _instance(rng: random.Random, n: int) -> RunInstance:
    bills = []
    for i in range(n):
        total = rng.randint(1_000, 900_000)
        discount = total * rng.choice((1, 2, 3)) // 100 if rng.random() < 0.5 else 0
        bills.append(RunBill(
            vendor_id=f"V{i % 4:03d}", number=f"INV-{i}", total=total,
            due_on=RUN_ON + timedelta(days=rng.randint(0, 25)), discount=discount,
            discount_until=RUN_ON + timedelta(days=rng.randint(-8, 6)) if discount else None,
            late_fee=total * rng.choice((10, 15, 25)) // 1000 if rng.random() < 0.5 else 0,
            critical=rng.random() < 0.2))
    return RunInstance(RUN_ON, NEXT_RUN, rng.randint(0, 3_000_000), tuple(bills))


@pytest.mark.parametrize("seed", range(40))
def test_cp_sat_plan_is_the_brute_force_optimum(seed: int) -> None:
    inst = _instance(random.Random(seed), n=9)
    plan = solve(inst)
    o = plan.outcome
    assert o == outcome(inst, plan.pay)
    assert o.cash <= inst.available
    assert (o.priority, o.value, -o.cash) == _brute_force(inst)
    assert plan.nothing == outcome(inst, ())
    assert all(inst.worth_paying(b) for b in inst.bills if b.key in plan.pay)


def test_the_plan_does_not_depend_on_the_order_bills_are_read() -> None:
    inst = _instance(random.Random(7), n=12)
    shuffled = list(inst.bills)
    random.Random(1).shuffle(shuffled)
    again = RunInstance(inst.run_on, inst.next_run, inst.available, tuple(shuffled))
    assert solve(again).pay == solve(inst).pay


def test_a_lost_discount_and_a_later_due_date_earn_nothing() -> None:
    lost = RunBill("V1", "A", 100_000, NEXT_RUN, discount=2_000,
                   discount_until=RUN_ON - timedelta(days=1))
    later = RunBill("V1", "B", 100_000, NEXT_RUN, late_fee=1_500)
    inst = RunInstance(RUN_ON, NEXT_RUN, 10**9, (lost, later))
    assert not inst.worth_paying(lost) and not inst.worth_paying(later)
    assert solve(inst).pay == frozenset()


def test_priorities_come_before_value() -> None:
    critical = RunBill("V1", "C", 50_000, RUN_ON + timedelta(days=3), critical=True)
    discounted = RunBill("V2", "D", 50_000, NEXT_RUN, discount=5_000, discount_until=RUN_ON)
    inst = RunInstance(RUN_ON, NEXT_RUN, 50_000, (critical, discounted))
    plan = solve(inst)
    assert plan.pay == frozenset({critical.key})
    assert plan.outcome.value == 0 and plan.outcome.priority == 50_000


# --- the checks on real attempts ---------------------------------------------------------------


def _solver() -> ModuleType:
    return load_solver(library_dir() / "payment-run" / "solver.py")


class _Greedy:
    """Enters the invoices as the reference does, then pays every bill due before the next
    run in due-date order while the cash lasts, in full (never a discount)."""

    name = "greedy"

    def run_turn(self, desk: TurnContext) -> None:
        s = _solver()
        vendors = {v.name.casefold(): v.vendor_id for v in desk.ledger.books.vendors.values()}
        invoices = [inv for p in sorted(desk.inbox()) if p.suffix == ".txt"
                    and (inv := s._read_invoice(p.read_text(encoding="utf-8"), vendors))]
        entered = s.books_bills(desk)
        for inv in invoices:
            s.enter(desk, inv, entered)
        cash = s.available_cash(desk)
        for inv in sorted(invoices, key=lambda i: (i.bill.due_on, i.bill.key)):
            if inv.bill.due_on < NEXT_RUN and inv.bill.total <= cash:
                cash -= inv.bill.total
                desk.execute(c.RunPayments(bank_account_id="B-OPER", entry_date=desk.day,
                                           bill_ids=(entered[inv.bill.key],)))


class _Spender:
    """The reference, then one more bill paid that could have waited for the next run."""

    name = "spender"

    def run_turn(self, desk: TurnContext) -> None:
        s = _solver()
        s.reference(desk)
        books = desk.ledger.books
        waiting = sorted((b for b in books.bills.values()
                          if b.open == b.total and b.due_on >= NEXT_RUN
                          and (b.discount_until is None or b.discount_until < desk.day)),
                         key=lambda b: b.total)
        assert waiting, "the instance has no bill that can wait"
        done = desk.execute(c.RunPayments(bank_account_id="B-OPER", entry_date=desk.day,
                                          bill_ids=(waiting[0].bill_id,)))
        assert not isinstance(done, CommandRejected), done


class _LateClaimer:
    """The reference, then a discount claimed on a bill whose discount date has passed."""

    name = "late-claimer"
    refused: list[CommandRejected] = []

    def run_turn(self, desk: TurnContext) -> None:
        _solver().reference(desk)
        lost = sorted(b.bill_id for b in desk.ledger.books.bills.values()
                      if b.discount_until is not None and b.discount_until < desk.day
                      and b.open == b.total)
        assert lost, "the instance has no lost discount"
        done = desk.execute(c.PayBillWithDiscount(
            bill_id=lost[0], bank_account_id="B-OPER", entry_date=desk.day,
            discount=desk.ledger.books.bills[lost[0]].discount))
        assert isinstance(done, CommandRejected)
        type(self).refused.append(done)


class _Backdater:
    """The reference, its payments (made on the run day) dated June 1: the discounts were
    still open on the run day, so the books take them; only the date is wrong."""

    name = "backdater"

    def run_turn(self, desk: TurnContext) -> None:
        def dated_back(real: Execute, cmd: c.Command) -> Any:
            if isinstance(cmd, (c.RunPayments, c.PayBillWithDiscount)):
                cmd = cmd.model_copy(update={"entry_date": date(2026, 6, 1)})
            return real(cmd)

        with routed(desk, dated_back):
            _solver().reference(desk)


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario("payment-run"))
    root = tmp_path_factory.mktemp("payment-run")
    agents: dict[str, Any] = {"null": None, "greedy": _Greedy(),
                              "spender": _Spender(), "late-claimer": _LateClaimer(),
                              "backdater": _Backdater()}
    out = {name: run_attempt(loaded, 0, name, root / name, agent=agent)
           for name, agent in agents.items() if name != "spender"}
    out["reference"] = shared_attempt(tmp_path_factory, "payment-run", 0)[0]
    # the easy tier leaves cash above the floor after the optimum's payments
    easy = load_scenario(find_scenario("payment-run"), tier="easy")
    out["spender"] = run_attempt(easy, 0, "spender", root / "spender", agent=agents["spender"])
    yield out


def _context(res: AttemptResult) -> Iterator[CheckContext]:
    store = EventStore.open(res.out / "books.db")
    try:
        yield CheckContext(store=store)
    finally:
        store.close()


def test_the_reference_is_at_the_optimum(attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["reference"].out)
    assert all(x["passed"] for x in r.values()), [x for x in r.values() if not x["passed"]]
    m = r["payment-run-optimal"]["metrics"]
    assert m["gap_cents"] == 0 and m["gap_share"] == 0.0
    assert m["achieved_value"] == m["optimum_value"] > m["nothing_value"]
    assert m["optimum_cash"] <= m["available"]
    gap = attempts["reference"].summary["optimality_gap"]["payment-run-optimal"]
    assert gap == {k: m[k] for k in ("optimum_value", "achieved_value", "nothing_value",
                                     "gap_cents", "gap_share", "max_gap_share")}


def test_a_greedy_run_is_short_of_the_optimum(attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["greedy"].out)["payment-run-optimal"]
    assert not r["passed"]
    m = r["metrics"]
    assert m["gap_cents"] > 0 and m["gap_share"] > 0
    assert m["discounts_captured"] == 0
    assert "short of the optimum" in r["detail"] or "priority" in r["detail"]
    # the same run is accepted at a threshold above its gap, refused below it
    for ctx in _context(attempts["greedy"]):
        spec = dict(type="payment_run_optimality", run_on=RUN_ON, next_run=NEXT_RUN)
        if m["priority_paid"] >= m["priority_optimum"]:
            loose = PaymentRunOptimality(**spec, max_gap_share=min(1.0, m["gap_share"] + 0.01))
            assert payment_run_optimality(loose, ctx).passed
        tight = PaymentRunOptimality(**spec, max_gap_share=max(0.0, m["gap_share"] - 0.01))
        assert not payment_run_optimality(tight, ctx).passed


def test_the_null_agent_enters_nothing(attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["null"].out)
    assert not r["bills-as-invoiced"]["passed"]
    assert not r["payment-run-optimal"]["passed"]
    m = r["payment-run-optimal"]["metrics"]
    assert m["achieved_value"] == m["nothing_value"] < m["optimum_value"]


def test_a_bill_paid_that_could_wait_is_refused(attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["spender"].out)
    assert not r["paid-only-what-earns"]["passed"]
    assert "earn nothing today" in r["paid-only-what-earns"]["detail"]
    # the value is the optimum's (cash spent, nothing earned): the cause check catches it
    assert r["payment-run-optimal"]["passed"]
    for ctx in _context(attempts["reference"]):
        ok = paid_only_with_cause(PaidOnlyWithCause(type="paid_only_with_cause", run_on=RUN_ON,
                                                    next_run=NEXT_RUN), ctx)
        assert ok.passed and ok.metrics["paid_without_cause"] == 0


def test_a_discount_claimed_late_is_refused_by_the_books(
        attempts: dict[str, AttemptResult]) -> None:
    assert attempts["late-claimer"].summary
    refused = _LateClaimer.refused[-1]
    assert refused.code == "discount_lost"
    assert "cannot claim it (the discount is lost" in refused.message
    r = check_results(attempts["late-claimer"].out)
    assert all(x["passed"] for x in r.values())  # refused: nothing written


def test_payments_made_on_the_run_day_and_dated_back_are_refused(
        attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["backdater"].out)
    failed = sorted(n for n, x in r.items() if not x["passed"])
    assert failed == ["payment-run-optimal"], failed
    assert "not dated the day they were made" in r["payment-run-optimal"]["detail"]
    assert "made in the turn of 2026-06-10" in r["payment-run-optimal"]["detail"]
    assert r["payment-run-optimal"]["metrics"]["misdated_payments"] > 0
    assert check_results(attempts["reference"].out)["payment-run-optimal"]["metrics"][
        "misdated_payments"] == 0


def test_vendors_charge_late_fees_on_what_the_run_left_unpaid(
        attempts: dict[str, AttemptResult]) -> None:
    for name in ("reference", "null"):
        for ctx in _context(attempts[name]):
            fees = late_fees_charged(ctx.store)
            m = check_results(attempts[name].out)["payment-run-optimal"]["metrics"]
            assert sum(fees.values()) == m["late_fees_charged"]
            if name == "null":
                assert sum(fees.values()) == -m["nothing_value"] > 0


def test_the_scenario_declares_its_tiers() -> None:
    loaded = load_scenario(find_scenario("payment-run"))
    assert set(loaded.scenario.tiers) == {"easy", "medium", "hard"}
    assert loaded.scenario.tier == "medium"
    assert Path(library_dir() / "payment-run" / "README.md").read_text().count("| hard |") == 1
