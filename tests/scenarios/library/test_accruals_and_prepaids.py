"""accruals-and-prepaids: the papers, the reference's reading of them, and the checks.

- The papers (:mod:`counterparties.accruals`): a fee prorated by calendar days (half a
  cent up); the truth's accruals are the months whose invoice had not arrived by the
  close; a timesheet export runs a day into the next month.
- The reference's reading: every wording of a service month and a prepaid cover, as text.
- The checks (:mod:`checks.accruals`) on real attempts of the easy tier: the reference is
  accepted; the null agent fails every check of the papers; a clerk who also accrues a
  vendor whose invoice arrived, one who forgets last month's reversal, one who schedules a
  prepaid a cent short and one who enters a service invoice on another account are each
  refused by the check that owns the rule, with the message naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from counterparties.accruals import (
    VendorPaper,
    add_months,
    closed_months,
    month_days,
    prorated_fee,
    render_invoice,
)
from erp import commands as c
from erp.errors import CommandRejected
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "accruals-and-prepaids"


def _solver() -> ModuleType:
    return load_solver(library_dir() / NAME / "solver.py")


# --- the papers -------------------------------------------------------------------------


@pytest.mark.parametrize(("fee", "start", "end", "expected"), [
    (300_000, date(2025, 1, 1), None, 300_000),            # the whole month
    (300_000, date(2026, 5, 18), None, 135_484),           # 14 of 31 days: 1354.838... up
    (100_000, None, date(2026, 6, 12), 40_000),            # 12 of 30 days
    (100, date(2026, 5, 31), None, 3),                     # 1/31 of a dollar: 3.2 cents
    (155, date(2026, 5, 31), None, 5),                     # 5.0 cents exactly
    (300_000, date(2026, 7, 1), None, 0),                  # not started yet
    (300_000, date(2025, 1, 1), date(2026, 4, 30), 0),     # ended before
])
def test_a_fee_is_prorated_by_calendar_days(fee: int, start: date | None, end: date | None,
                                            expected: int) -> None:
    period = "2026-06" if end == date(2026, 6, 12) else "2026-05"
    assert prorated_fee(fee, period, start or date(2000, 1, 1), end) == expected
    assert _solver()._prorated(fee, period, start, end) == expected


def test_month_arithmetic() -> None:
    assert add_months("2026-11", 3) == "2027-02"
    assert month_days("2028-02") == (date(2028, 2, 1), date(2028, 2, 29))


class _FakeVendor:
    name, address = "Acme Cleaning", ("1 Main St", "Springfield, IL 62701")
    phone, email = "+1 (217) 555-0100", "billing@acme.example"


@pytest.mark.parametrize("wording", [0, 1, 2])
@pytest.mark.parametrize(("kind", "period", "months"), [("service", "2026-05", 1),
                                                        ("prepaid", "2026-06", 12),
                                                        ("prepaid", "2026-05", 6)])
def test_the_reference_reads_every_wording(wording: int, kind: str, period: str,
                                           months: int) -> None:
    inv = VendorPaper("V001", "V001-0123", date(2026, 5, 29), date(2026, 6, 28),
                      date(2026, 5, 29), 1_234_567, "1300" if kind == "prepaid" else "6000",
                      kind, period, "Software subscription" if kind == "prepaid"
                      else "Office cleaning 2026-05", months)
    text = render_invoice(_FakeVendor(), "Northwind Services LLC", inv, wording)
    paper = _solver()._read_invoice(text, {"acme cleaning": "V001"})
    assert paper is not None, text
    assert (paper.vendor_id, paper.number, paper.issued_on, paper.due_on, paper.amount,
            paper.period, paper.months) == ("V001", "V001-0123", date(2026, 5, 29),
                                             date(2026, 6, 28), 1_234_567, period, months)
    assert paper.prepaid == (kind == "prepaid")
    assert _solver()._read_invoice(text, {"someone else": "V002"}) is None


# --- the checks on real attempts -----------------------------------------------------------


class _Twist:
    """The reference, then one mistake after it (or instead of part of it)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.held: list[c.EnterBill] = []

    def run_turn(self, desk: TurnContext) -> None:
        s = _solver()
        books = desk.ledger.books
        if self.name == "no-reversal" and desk.turn == 2:
            def skip(real: Execute, cmd: c.Command) -> Any:
                return None if isinstance(cmd, c.ReverseAccruals) else real(cmd)
            with routed(desk, skip):
                s.reference(desk)
            return
        if self.name == "short-prepaid":
            def short(real: Execute, cmd: c.Command) -> Any:
                if isinstance(cmd, c.RecordPrepaid):
                    cmd = cmd.model_copy(update={"amount": cmd.amount - 1})
                return real(cmd)
            with routed(desk, short):
                s.reference(desk)
            return
        if self.name == "recoded":
            def recode(real: Execute, cmd: c.Command) -> Any:
                if isinstance(cmd, c.EnterBill) and cmd.lines[0].account != "1300":
                    to = "6200" if cmd.lines[0].account == "6000" else "6000"
                    line = cmd.lines[0].model_copy(update={"account": to})
                    cmd = cmd.model_copy(update={"lines": (line,)})
                return real(cmd)
            with routed(desk, recode):
                s.reference(desk)
            return
        if self.name == "late-bill":
            def held(real: Execute, cmd: c.Command) -> Any:
                # the first service invoice of May's close held to June's, dated as invoiced
                if (desk.turn == 1 and isinstance(cmd, c.EnterBill) and not self.held
                        and all(line.account != "1300" for line in cmd.lines)):
                    self.held.append(cmd)
                    return CommandRejected("held", "held to the next close")
                return real(cmd)
            with routed(desk, held) as real:
                s.reference(desk)
            have = {(b.vendor_id, b.vendor_invoice_number) for b in books.bills.values()}
            if desk.turn == 2:
                for cmd in self.held:
                    if (cmd.vendor_id, cmd.vendor_invoice_number) not in have:
                        real(cmd)
            return
        if self.name == "credit-no-vendor":
            def unnamed(real: Execute, cmd: c.Command) -> Any:
                if isinstance(cmd, c.PostAccrual):
                    cmd = cmd.model_copy(update={"lines": tuple(
                        line if line.debit else line.model_copy(update={"party": None})
                        for line in cmd.lines)})
                return real(cmd)
            with routed(desk, unnamed):
                s.reference(desk)
            return
        s.reference(desk)
        if self.name == "over-accrues" and desk.turn == 1:
            billed = sorted(b.vendor_id for b in books.bills.values()
                            if b.vendor_id in {v for v in books.vendors})
            vendor = billed[0]
            desk.execute(c.PostAccrual(
                entry_date=date(2026, 5, 31), memo="accrued though invoiced",
                lines=(c.JournalLineIn(account="6300", debit="100.00", party=vendor),
                       c.JournalLineIn(account="2100", credit="100.00", party=vendor))))


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME), tier="easy")
    root = tmp_path_factory.mktemp(NAME)
    agents: dict[str, Any] = {"reference": None, "null": None}
    agents.update({n: _Twist(n) for n in ("over-accrues", "no-reversal", "short-prepaid",
                                          "recoded", "credit-no-vendor")})
    out = {name: run_attempt(loaded, 0, name, root / name, agent=agent)
           for name, agent in agents.items()}
    # the medium tier: May's close has service invoices to hold
    medium = load_scenario(find_scenario(NAME))
    out["late-bill"] = run_attempt(medium, 0, "late-bill", root / "late-bill",
                                   agent=_Twist("late-bill"))
    yield out


def test_the_reference_is_accepted(attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["reference"].out)
    assert all(x["passed"] for x in r.values()), [x for x in r.values() if not x["passed"]]
    assert r["may-accrued"]["metrics"]["owed_cents"] > 0
    assert r["prepaids-amortized"]["metrics"]["expected_cents"] > 0


def test_the_null_agent_fails_every_rule_of_the_papers(
        attempts: dict[str, AttemptResult]) -> None:
    failed = failed_checks(attempts["null"].out)
    assert {"invoices-entered", "may-accrued", "june-accrued", "may-reversal-run-on-june-1",
            "prepaids-scheduled", "prepaids-amortized"} <= failed
    detail = check_results(attempts["null"].out)["may-accrued"]["detail"]
    assert "accrued 0.00, owed" in detail


def test_accruing_a_vendor_whose_invoice_arrived_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["over-accrues"]
    assert failed_checks(res.out) == {"may-accrued"}
    assert "on 6300: accrued 100.00, owed 0.00" in check_results(res.out)["may-accrued"]["detail"]


def test_an_accrual_whose_credit_names_no_vendor_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    # the prompt: "credit 2100 Accrued liabilities, both lines naming the vendor"
    res = attempts["credit-no-vendor"]
    assert failed_checks(res.out) <= {"may-accrued", "june-accrued"} and failed_checks(res.out)
    detail = check_results(res.out)["may-accrued"]["detail"]
    assert "the credit on 2100 names no vendor, not the vendor of its debit" in detail


def test_an_invoice_held_to_the_next_close_and_dated_back_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["late-bill"]
    assert failed_checks(res.out) == {"invoices-entered"}, failed_checks(res.out)
    detail = check_results(res.out)["invoices-entered"]["detail"]
    assert "was entered in the turn of 2026-07-01, not the turn of 2026-06-01" in detail


def test_forgetting_the_reversal_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["no-reversal"]
    assert {"may-accruals-reversed", "may-reversal-run-on-june-1"} <= failed_checks(res.out)
    assert "status='due'" in check_results(res.out)["may-accruals-reversed"]["detail"]


def test_a_prepaid_scheduled_a_cent_short_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["short-prepaid"]
    failed = failed_checks(res.out)
    assert {"prepaids-scheduled", "prepaid-account-ties-to-schedules"} <= failed
    assert "amount" in check_results(res.out)["prepaids-scheduled"]["detail"]


def test_a_service_invoice_on_another_account_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["recoded"]
    assert "invoices-entered" in failed_checks(res.out)
    detail = check_results(res.out)["invoices-entered"]["detail"]
    assert "lines on 6200, expected 6000" in detail or "lines on 6000, expected 6" in detail


def test_the_scenario_declares_its_tiers() -> None:
    base = load_scenario(find_scenario(NAME))
    assert base.scenario.tier == "medium" and set(base.scenario.tiers) == {"easy", "medium",
                                                                          "hard"}
    for tier, vendors in (("easy", 5), ("medium", 9), ("hard", 14)):
        s = load_scenario(find_scenario(NAME), tier=tier).scenario
        (inj,) = s.injections
        p = inj.params
        assert s.population.vendors.count == vendors
        assert p["contracts"] + p["contractors"] + p["prepaids"] == vendors


def test_the_calendar_closes_two_months() -> None:
    class _Cal:
        start, end = date(2026, 5, 1), date(2026, 7, 1)

    class _Engine:
        calendar = _Cal()

    assert closed_months(_Engine()) == ["2026-05", "2026-06"]  # type: ignore[arg-type]


def test_every_attempt_left_its_books(attempts: dict[str, AttemptResult]) -> None:
    assert all(Path(res.out / "books.db").exists() for res in attempts.values())
