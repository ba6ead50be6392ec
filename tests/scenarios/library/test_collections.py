"""collections: the world's reactions, the reference's reading, and the checks.

- The world (:mod:`counterparties.collections`): the injection records the runs' days,
  which are the scenario's turn dates; every customer of the book has invoices; the
  customers' emails carry what they mean in their truth.
- The reference's reading: every way a customer writes a date and an invoice reference.
- The checks (:mod:`checks.collections`) on real attempts of the easy tier: the reference
  is accepted (and the book holds letters, disputes, promises and holds to grade); the
  null agent fails every collections check; a clerk who sends no level 2 letters, one who
  dunns a disputed invoice (by recording no disputes), one who records promises a cent
  short, one who never releases a hold, one who puts another customer on hold and one who
  applies a receipt a run late dated back to the run it was due at are each refused by the
  check that owns the rule, with the message naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from checks.collections import Email, Facts, expected_runs, level_for
from counterparties.collections import (
    DISPUTE_WORDINGS,
    NOISE_EMAILS,
    PROMISE_WORDINGS,
    date_text,
)
from erp import commands as c
from erp.store import EventStore
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from sim.documents import render_email
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "collections"


def _solver() -> ModuleType:
    return load_solver(library_dir() / NAME / "solver.py")


# --- the reading ---------------------------------------------------------------------------


@pytest.mark.parametrize("style", range(4))
def test_every_way_a_customer_writes_a_date_reads_back(style: int) -> None:
    day = date(2026, 6, 12)
    assert _solver()._when(f"by {date_text(day, style)}", 2026) == day


@pytest.mark.parametrize(("reference", "expected"), [
    ("INV-000012", ["INV-000012"]), ("INV 12", ["INV-000012"]), ("Inv#000012", ["INV-000012"]),
    ("/INV/12", ["INV-000012"]), ("Payment for invoice 12", ["INV-000012"]),
    ("inv-12 INV.7", ["INV-000012", "INV-000007"]), ("Invoice No. 99", []),
])
def test_a_reference_names_the_invoices_it_quotes(reference: str, expected: list[str]) -> None:
    known = {"INV-000012", "INV-000007"}
    assert _solver()._invoice_refs(reference, known) == expected


def _eml(tmp_path: Path, subject: str, body: str, sender: str = "ap@x.example") -> Path:
    path = tmp_path / f"m{len(list(tmp_path.iterdir()))}.eml"
    path.write_text(render_email(sender=sender, to="ar@company.example", subject=subject,
                                 body=body, when=datetime(2026, 6, 2, 9, 0, tzinfo=UTC),
                                 message_id="MSG-1"), encoding="utf-8")
    return path


@pytest.mark.parametrize("wording", range(len(PROMISE_WORDINGS)))
@pytest.mark.parametrize("style", range(4))
@pytest.mark.parametrize("ref", ["INV 12", "Inv#000012", "Payment for invoice 12"])
def test_every_promise_wording_reads_back(wording: int, style: int, ref: str,
                                          tmp_path: Path) -> None:
    subject, body = PROMISE_WORDINGS[wording]
    day = date(2026, 6, 12)
    text = body.format(ref=ref, amount="1,200.00", which="600.00 now, the rest later",
                       day=date_text(day, style))
    plan = _solver()._Plan()
    _solver()._read_email(_eml(tmp_path, subject.format(ref=ref), "Hello,\n\n" + text),
                          {"INV-000012"}, plan, 2026)
    assert plan.promises == [("INV-000012", 120_000, day)] and not plan.disputes


@pytest.mark.parametrize("wording", range(len(DISPUTE_WORDINGS)))
@pytest.mark.parametrize("amount", ["the whole invoice (4,650.26)", "1,300.00 of it"])
def test_every_dispute_wording_reads_back(wording: int, amount: str, tmp_path: Path) -> None:
    subject, body = DISPUTE_WORDINGS[wording]
    text = body.format(ref="/INV/12", words="the seats were returned", amount=amount)
    plan = _solver()._Plan()
    _solver()._read_email(_eml(tmp_path, subject.format(ref="/INV/12"), "Hello,\n\n" + text),
                          {"INV-000012"}, plan, 2026)
    ((iid, disputed, reason),) = plan.disputes
    assert (iid, disputed) == ("INV-000012", None if "whole" in amount else 130_000)
    assert reason.strip() and not plan.promises


@pytest.mark.parametrize("n", range(len(NOISE_EMAILS)))
def test_a_distractor_email_asks_for_nothing(n: int, tmp_path: Path) -> None:
    subject, body = NOISE_EMAILS[n]
    plan = _solver()._Plan()
    _solver()._read_email(_eml(tmp_path, subject.format(ref="INV 12"),
                               "Hello,\n\n" + body.format(ref="INV 12")),
                          {"INV-000012"}, plan, 2026)
    assert plan == _solver()._Plan()


# --- the policy worked from the facts ---------------------------------------------------------


def test_the_policy_escalates_skips_disputes_and_holds() -> None:
    runs = (date(2026, 6, 1), date(2026, 6, 8), date(2026, 6, 15))
    facts = Facts(invoices={"I1": ("C1", date(2026, 5, 1), 1000),   # 31 days: level 2
                            "I2": ("C2", date(2026, 5, 28), 500),   # 4 days: level 1
                            "I3": ("C3", date(2026, 3, 30), 700),   # 63 days: level 3, hold
                            "I4": ("C1", date(2026, 6, 20), 100)},  # not due
                  emails=[Email("dispute", date(2026, 6, 2), "C2", "I2", 500),
                          Email("resolution", date(2026, 6, 9), "C2", "I2", 200,
                                "credited")],
                  deposits=[(date(2026, 6, 3), "L1", "C3", (("I3", 700),))], runs=runs)
    first, second, third = expected_runs(facts, runs)
    assert first.letters == {("I1", 2), ("I2", 1), ("I3", 3)} and first.holds == {"C3"}
    assert second.disputes == {("I2", 500)} and second.releases == {"C3"}
    assert second.letters == set()
    assert third.rulings == {("I2", "credited", 200)} and third.letters == set()
    assert [level_for(d) for d in (0, 1, 30, 31, 60, 61)] == [0, 1, 1, 2, 2, 3]


def test_a_running_promise_stops_a_letter_and_a_broken_one_holds() -> None:
    runs = (date(2026, 6, 1), date(2026, 6, 8), date(2026, 6, 15))
    facts = Facts(invoices={"I1": ("C1", date(2026, 5, 20), 1000)},
                  emails=[Email("promise", date(2026, 6, 2), "C1", "I1", 400,
                                pay_by=date(2026, 6, 10))], runs=runs)
    first, second, third = expected_runs(facts, runs)
    assert first.letters == {("I1", 1)}
    assert second.promises == {("I1", 400, date(2026, 6, 10))} and not second.letters
    assert third.holds == {"C1"} and third.letters == set()  # level 1 already sent


# --- real attempts ---------------------------------------------------------------------------


class _Twist:
    """The reference with one mistake."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.held: dict[str, date] = {}
        self.applications = 0

    def run_turn(self, desk: TurnContext) -> None:
        def twisted(real: Execute, cmd: c.Command) -> Any:
            if self.name == "no-level-2" and isinstance(cmd, c.SendDunningLetter) \
                    and cmd.level == 2:
                return None
            if self.name == "no-disputes" and isinstance(cmd, c.RecordDispute):
                return None
            if self.name == "short-promise" and isinstance(cmd, c.RecordPromiseToPay):
                cmd = cmd.model_copy(update={"amount": cmd.amount - 1})
            if self.name == "never-release" and isinstance(cmd, c.ReleaseCreditHold):
                return None
            if self.name == "late-receipt" and isinstance(cmd, c.ApplyReceipt):
                # the second application held to the next run, dated back to its own
                if cmd.receipt_id in self.held:
                    cmd = cmd.model_copy(update={"entry_date": self.held[cmd.receipt_id]})
                else:
                    self.applications += 1
                    if self.applications == 2:
                        self.held[cmd.receipt_id] = desk.day
                        return None
            if self.name == "wrong-hold" and isinstance(cmd, c.PlaceCreditHold):
                books = desk.ledger.books
                others = sorted(x for x in books.customers if x != cmd.customer_id
                                and x not in books.collections.on_hold)
                cmd = cmd.model_copy(update={"customer_id": others[0]})
            return real(cmd)
        with routed(desk, twisted):
            _solver().reference(desk)


TWISTS = ("no-level-2", "no-disputes", "short-promise", "never-release", "wrong-hold",
          "late-receipt")


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME), tier="medium")
    root = tmp_path_factory.mktemp(NAME)
    agents: dict[str, Any] = {"reference": None, "null": None}
    agents.update({n: _Twist(n) for n in TWISTS})
    yield {name: run_attempt(loaded, 1, name, root / name, agent=agent)
           for name, agent in agents.items()}


def test_the_reference_is_accepted_with_every_kind_of_record(
        attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["reference"].out)
    assert all(x["passed"] for x in r.values()), [x for x in r.values() if not x["passed"]]
    for name, key in (("letters-as-policy", "letters"), ("disputes-recorded", "disputes"),
                      ("disputes-resolved-as-ruled", "rulings"),
                      ("promises-recorded", "promises"), ("holds-as-policy", "holds"),
                      ("holds-as-policy", "releases"), ("receipts-applied-as-paid",
                                                        "deposits")):
        assert r[name]["metrics"][key] > 0, (name, key)


def test_the_runs_recorded_are_the_scenarios_turns(attempts: dict[str, AttemptResult]) -> None:
    loaded = load_scenario(find_scenario(NAME), tier="medium")
    turns = [d.isoformat() for d in loaded.scenario.turns.dates]
    store = EventStore.open(attempts["reference"].out / "books.db")
    try:
        planted = [orjson.loads(e.payload) for e in store.read(realm="world",
                                                               types=["injection_planted"])]
    finally:
        store.close()
    (book,) = [x for x in planted if x["kind"] == "collections_book"]
    assert book["detail"]["runs"] == turns


def test_the_null_agent_fails_the_collections_rules(
        attempts: dict[str, AttemptResult]) -> None:
    failed = failed_checks(attempts["null"].out)
    assert {"letters-as-policy", "disputes-recorded", "holds-as-policy",
            "receipts-applied-as-paid"} <= failed
    detail = check_results(attempts["null"].out)["letters-as-policy"]["detail"]
    assert "missing letter level" in detail


def test_skipping_level_2_letters_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["no-level-2"]
    assert "letters-as-policy" in failed_checks(res.out)
    detail = check_results(res.out)["letters-as-policy"]["detail"]
    assert "missing letter level 2 for INV-" in detail


def test_recording_no_disputes_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["no-disputes"]
    assert {"disputes-recorded", "letters-as-policy"} <= failed_checks(res.out)
    assert "missing dispute of INV-" in check_results(res.out)["disputes-recorded"]["detail"]


def test_a_promise_a_cent_short_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["short-promise"]
    assert "promises-recorded" in failed_checks(res.out)
    assert "not called for" in check_results(res.out)["promises-recorded"]["detail"]


def test_a_hold_never_released_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["never-release"]
    assert failed_checks(res.out) == {"holds-as-policy"}
    assert "missing hold release C" in check_results(res.out)["holds-as-policy"]["detail"]


def test_a_hold_on_the_wrong_customer_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["wrong-hold"]
    assert "holds-as-policy" in failed_checks(res.out)
    assert "not called for" in check_results(res.out)["holds-as-policy"]["detail"]


def test_a_receipt_applied_a_run_late_and_dated_back_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["late-receipt"]
    assert failed_checks(res.out) == {"receipts-applied-as-paid"}
    detail = check_results(res.out)["receipts-applied-as-paid"]["detail"]
    assert "(the first run after the deposit)" in detail
