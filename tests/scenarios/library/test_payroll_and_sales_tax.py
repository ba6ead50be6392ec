"""payroll-and-sales-tax: the reference and oracle solvers, run as attempts, against the
world's truth; the reference's reading of the provider's registers (CSV and PDF, either
version); the tax checks, passing and failing on the mistakes they are there for."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from checks.context import CheckContext
from checks.registry import CheckResult, parse_checks
from checks.verdict import run_check
from counterparties.payroll import draw_payroll, register_csv, register_text
from erp import commands as c
from erp.ledger import Ledger
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from sim.calendar import BusinessCalendar
from sim.pdf import render_text_pdf
from sim.rng import Streams
from sim.world_events import decode_world_event
from tests.scenarios.library.attempts import LibraryAttempt, attempt_fixtures

NAME = "payroll-and-sales-tax"
solver = load_solver(library_dir() / NAME / "solver.py")
SEED = 1


class Attempt(LibraryAttempt):
    """A finished payroll-and-sales-tax attempt and the checks' view of it."""

    def check(self, spec: dict[str, Any]) -> CheckResult:
        """Run one check spec against the attempt's books."""
        (parsed,) = parse_checks([spec])
        ctx = CheckContext(store=self.ledger.store,
                           workspace=self.result.out / "turns" / "02" / "workspace",
                           end=date(2026, 6, 23),
                           turn_dates=(date(2026, 5, 18), date(2026, 6, 1)))
        (result,) = run_check(parsed, 0, ctx)
        return result


scenario, reference, oracle = attempt_fixtures(NAME, SEED, Attempt)


def test_reference_and_oracle_are_accepted_with_the_same_books(reference: Attempt,
                                                               oracle: Attempt) -> None:
    for a in (reference, oracle):
        assert a.summary["verdict"]["status"] == "accepted", a.summary["verdict"]
    assert reference.docs("payroll") == oracle.docs("payroll")
    assert [d["total"] for d in reference.docs("tax_return")] == [
        d["total"] for d in oracle.docs("tax_return")]
    (ret,) = reference.docs("tax_return")
    assert (ret["status"], ret["open_amount"], ret["reference"]) == ("paid", 0, "2026-05")


def _registers(revised: float = 1.0) -> list[Any]:
    cal = BusinessCalendar(date(2026, 5, 1), date(2026, 6, 23))
    return draw_payroll(Streams(11).generator("t"), cal, ["2026-05"], employees=9,
                        pdf_share=0.5, revised_share=revised, benefits_share=1.0).registers


@pytest.mark.parametrize("fmt", ["csv", "pdf"])
def test_the_reference_reads_a_register_as_the_provider_wrote_it(fmt: str,
                                                                 tmp_path: Path) -> None:
    for n, reg in enumerate(_registers()):
        path = tmp_path / f"r{n}.{fmt}"
        if fmt == "csv":
            path.write_text(register_csv(reg, "Northwind Services LLC"), encoding="utf-8")
        else:
            path.write_bytes(render_text_pdf(title="register", size=6,
                                             text=register_text(reg, "Northwind Services LLC")))
        got = solver._read_register(path)  # type: ignore[attr-defined]
        t = reg.truth()
        assert (got.register_id, got.version, got.pay_date.isoformat(),
                got.period_start.isoformat()) == (t["register_id"], t["version"],
                                                  t["pay_date"], t["period_start"])
        assert [(r.employee_id, r.gross, r.withheld, r.employer_taxes, r.net)
                for r in got.rows] == [(r["employee_id"], r["gross"], r["withheld"],
                                        r["employer_taxes"], r["net"]) for r in t["rows"]]
        assert (got.gross_total, got.net_total) == (t["gross"], t["net"])


def test_a_file_that_is_no_register_is_not_read(tmp_path: Path) -> None:
    p = tmp_path / "letter.csv"
    p.write_text("a,b\n1,2\n", encoding="utf-8")
    assert solver._read_register(p) is None  # type: ignore[attr-defined]
    q = tmp_path / "broken.pdf"
    q.write_bytes(b"%PDF-1.4 not really")
    assert solver._read_register(q) is None  # type: ignore[attr-defined]


def test_the_checks_pass_on_the_reference(reference: Attempt) -> None:
    for spec in ({"type": "payroll_posted"}, {"type": "sales_tax_return_filed",
                                              "period": "2026-05"},
                 {"type": "sales_tax_remitted", "period": "2026-05"},
                 {"type": "tax_authority_ties"}):
        r = reference.check(spec)
        assert r.passed, r.detail


def _tweaked(tmp: Path, change: Any, tier: str = "medium", seed: int = SEED) -> Attempt:
    """The reference with its commands changed (``change(cmd, desk)``) on the way to the
    books."""

    class Agent:
        name = "tweaked"

        def run_turn(self, desk: Any) -> None:
            class Desk:
                def __getattr__(self, key: str) -> Any:
                    return getattr(desk, key)

                def execute(self, cmd: c.Command) -> Any:
                    return desk.execute(change(cmd, desk))

            solver.reference(Desk())  # type: ignore[attr-defined]

    loaded = load_scenario(find_scenario(NAME), tier=tier)
    result = run_attempt(loaded, seed, "tweaked", tmp, agent=Agent())
    ledger = Ledger.open(tmp / "books.db")
    world = [(e, decode_world_event(e.type, e.payload)) for e in ledger.store.read(realm="world")]
    return Attempt(result, ledger, world)


def test_a_row_posted_wrong_fails_payroll_posted(tmp_path: Path) -> None:
    def bonus_left_out(cmd: c.Command, desk: Any) -> c.Command:
        if isinstance(cmd, c.PostPayroll):
            x = cmd.lines[0]
            lines = (x.model_copy(update={"gross": x.gross - 100, "net": x.net - 100}),
                     *cmd.lines[1:])
            return cmd.model_copy(update={"lines": lines, "gross_total": None,
                                          "net_total": None})
        return cmd
    a = _tweaked(tmp_path / "a", bonus_left_out)
    try:
        r = a.check({"type": "payroll_posted"})
        assert not r.passed and "gross" in r.detail, r.detail
    finally:
        a.ledger.close()


def test_a_late_return_fails_the_return_and_the_authority_checks(tmp_path: Path) -> None:
    def late(cmd: c.Command, desk: Any) -> c.Command:
        if isinstance(cmd, c.FileSalesTaxReturn | c.RemitSalesTax):
            return cmd.model_copy(update={"entry_date": date(2026, 6, 22)})
        return cmd
    a = _tweaked(tmp_path / "a", late)
    try:
        r = a.check({"type": "sales_tax_return_filed", "period": "2026-05"})
        assert not r.passed and "due 2026-06-20" in r.detail, r.detail
        r = a.check({"type": "sales_tax_remitted", "period": "2026-05"})
        assert not r.passed and "paid after the due date" in r.detail, r.detail
        r = a.check({"type": "tax_authority_ties"})
        assert not r.passed and "late filing notice" in r.detail, r.detail
    finally:
        a.ledger.close()


def test_a_return_and_payment_dated_after_the_turn_that_made_them_fail(
        tmp_path: Path) -> None:
    # filed and paid on June 1 but dated June 15 (still by the due date): the prompt asks
    # for the return dated today, and the payment on the day it is made
    def later(cmd: c.Command, desk: Any) -> c.Command:
        if isinstance(cmd, c.FileSalesTaxReturn | c.RemitSalesTax):
            return cmd.model_copy(update={"entry_date": date(2026, 6, 15)})
        return cmd
    a = _tweaked(tmp_path / "a", later)
    try:
        r = a.check({"type": "sales_tax_return_filed", "period": "2026-05"})
        assert not r.passed and "filed in the turn of 2026-06-01" in r.detail, r.detail
        r = a.check({"type": "sales_tax_remitted", "period": "2026-05"})
        assert not r.passed and "made in the turn of 2026-06-01" in r.detail, r.detail
    finally:
        a.ledger.close()


def test_a_payment_alone_dated_later_fails_the_remittance(tmp_path: Path) -> None:
    def paid_later(cmd: c.Command, desk: Any) -> c.Command:
        if isinstance(cmd, c.RemitSalesTax):
            return cmd.model_copy(update={"entry_date": date(2026, 6, 19)})
        return cmd
    a = _tweaked(tmp_path / "a", paid_later)
    try:
        assert a.check({"type": "sales_tax_return_filed", "period": "2026-05"}).passed
        r = a.check({"type": "sales_tax_remitted", "period": "2026-05"})
        assert not r.passed and "dated 2026-06-19" in r.detail, r.detail
    finally:
        a.ledger.close()


def test_a_register_held_to_the_next_turn_and_dated_back_fails(tmp_path: Path) -> None:
    # the mid-May register arrived before the turn of May 18; the clerk leaves it and
    # posts it on June 1, dated its pay date
    def held(cmd: c.Command, desk: Any) -> c.Command | None:
        if isinstance(cmd, c.PostPayroll) and desk.day == date(2026, 5, 18):
            return None
        return cmd

    class Agent:
        name = "held"

        def run_turn(self, desk: Any) -> None:
            class Desk:
                def __getattr__(self, key: str) -> Any:
                    return getattr(desk, key)

                def execute(self, cmd: c.Command) -> Any:
                    new = held(cmd, desk)
                    return None if new is None else desk.execute(new)

            solver.reference(Desk())  # type: ignore[attr-defined]

    out = tmp_path / "a"
    result = run_attempt(load_scenario(find_scenario(NAME)), SEED, "held", out, agent=Agent())
    ledger = Ledger.open(out / "books.db")
    world = [(e, decode_world_event(e.type, e.payload)) for e in ledger.store.read(realm="world")]
    a = Attempt(result, ledger, world)
    try:
        assert result.summary["verdict"]["status"] == "rejected"
        assert "payroll-posted" in result.summary["verdict"]["failed"]
        r = a.check({"type": "payroll_posted"})
        assert not r.passed and "not the turn of 2026-05-18" in r.detail, r.detail
    finally:
        a.ledger.close()


def test_the_first_version_of_a_revised_register_fails(tmp_path: Path) -> None:
    def first_version(cmd: c.Command, desk: Any) -> c.Command:
        if not isinstance(cmd, c.PostPayroll):
            return cmd
        for path in [*desk.archive(), *desk.inbox()]:
            reg = solver._read_register(path)  # type: ignore[attr-defined]
            if reg is not None and reg.register_id == cmd.register_id and reg.version == 1:
                lines = tuple(c.PayrollLineIn(employee_id=x.employee_id, name=x.name,
                                              gross=x.gross, withheld=x.withheld,
                                              employer_taxes=x.employer_taxes, net=x.net)
                              for x in reg.rows)
                return cmd.model_copy(update={"lines": lines, "gross_total": reg.gross_total,
                                              "net_total": reg.net_total})
        return cmd
    a = _tweaked(tmp_path / "a", first_version, tier="hard", seed=1)
    try:
        assert len(a.docs("payroll")) == 2
        r = a.check({"type": "payroll_posted"})
        assert not r.passed and "the register says" in r.detail, r.detail
    finally:
        a.ledger.close()


def test_the_checks_refuse_a_month_outside_the_scenario(reference: Attempt) -> None:
    r = reference.check({"type": "sales_tax_return_filed", "period": "2026-07"})
    assert not r.passed and "not a month of the scenario" in r.detail
