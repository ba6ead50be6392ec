"""counterparties.tax_authority and counterparties.payroll: the authority's own records and
notices, the materials the injection plants, the provider's registers.

- The registers tie: every row's net is its gross less what was withheld, the employer's
  taxes are the statutory shares of the gross, a revised register differs from its first
  version in one row only; the pay dates are the 15th and the month's last business day.
- On real attempts: the authority records each return and payment on its date; a return
  not filed by the due date gets a late-filing notice (and a letter), tax paid after the
  due date or short an underpayment notice with the unpaid tax and a 5% penalty; on time
  and in full, nothing. The jurisdiction and customers are set up by the scenario, May's
  invoices issued by the billing system taxed at the rate (exempt customers at 0), and
  the truth's month figures are the books' invoices.
- Refusals: parameters out of range name the field.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from counterparties.payroll import FUTA_BP, SS_BP, draw_payroll, pay_dates
from counterparties.tax_authority import PayrollTaxParams, due_date
from erp import commands as c
from erp.ledger import Ledger
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from sim.calendar import BusinessCalendar
from sim.rng import Streams
from sim.world_events import (
    InjectionPlanted,
    TaxNoticeSent,
    TaxPaymentReceived,
    TaxReturnReceived,
    decode_world_event,
)

NAME = "payroll-and-sales-tax"
solver = load_solver(library_dir() / NAME / "solver.py")


def test_the_registers_tie_and_a_revision_changes_one_row() -> None:
    cal = BusinessCalendar(date(2026, 5, 1), date(2026, 6, 23))
    p = draw_payroll(Streams(3).generator("t"), cal, ["2026-05"], employees=6, pdf_share=0.5,
                     revised_share=1.0, benefits_share=0.5)
    assert [r.version for r in p.registers] == [1, 2, 1, 2]
    for reg in p.registers:
        for row in reg.rows:
            assert row.net == row.gross - row.withheld > 0
            assert row.er_social_security == row.social_security
            assert row.er_futa == (row.gross * FUTA_BP * 2 + 10_000) // 20_000
            assert abs(row.social_security * 10_000 - row.gross * SS_BP) <= 5_000
    first, revised = p.registers[0], p.registers[1]
    assert first.register_id == revised.register_id == "PR-20260515"
    assert sum(a != b for a, b in zip(first.rows, revised.rows, strict=True)) == 1
    assert [x[2] for x in pay_dates(cal, "2026-05")] == [date(2026, 5, 15), date(2026, 5, 29)]
    assert due_date("2026-05", 20) == date(2026, 6, 20)
    assert due_date("2026-12", 20) == date(2027, 1, 20)


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("employees", 0, "greater than or equal to 1"),
    ("employees", 19, "less than or equal to 18"),
    ("rate_bp", 0, "greater than or equal to 1"),
    ("exempt_share", 1.5, "less than or equal to 1"),
    ("due_day", 29, "less than or equal to 28"),
])
def test_parameters_out_of_range_are_refused(field: str, value: Any, expected: str) -> None:
    with pytest.raises(ValidationError) as info:
        PayrollTaxParams.model_validate({field: value})
    assert field in str(info.value) and expected in str(info.value)


class _Tweaked:
    """The reference solver, its commands changed on the way to the books."""

    name = "tweaked"

    def __init__(self, change: Any) -> None:
        self.change = change

    def run_turn(self, desk: TurnContext) -> None:
        """Run the reference's turn through a desk that changes its commands."""
        change = self.change

        class Desk:
            def __getattr__(self, key: str) -> Any:
                return getattr(desk, key)

            def execute(self, cmd: c.Command) -> Any:
                return desk.execute(change(cmd))

        solver.reference(Desk())  # type: ignore[attr-defined]


def _attempt(tmp: Path, agent: str = "reference", change: Any = None,
             tier: str = "medium", seed: int = 1) -> tuple[dict[str, Any], Ledger, list[Any]]:
    loaded = load_scenario(find_scenario(NAME), tier=tier)
    run_attempt(loaded, seed, agent, tmp, agent=_Tweaked(change) if change else None)
    ledger = Ledger.open(tmp / "books.db")
    world = [decode_world_event(e.type, e.payload) for e in ledger.store.read(realm="world")]
    truth = next(w.detail for w in world
                 if isinstance(w, InjectionPlanted) and w.kind == "payroll_tax_materials")
    return truth, ledger, world


def _of(world: list[Any], kind: type) -> list[Any]:
    return [w for w in world if isinstance(w, kind)]


def test_on_time_and_in_full_the_authority_records_both_and_sends_nothing(
        tmp_path: Path) -> None:
    truth, ledger, world = _attempt(tmp_path / "a")
    try:
        (ret,) = _of(world, TaxReturnReceived)
        (pay,) = _of(world, TaxPaymentReceived)
        may = truth["sales"]["2026-05"]
        assert (ret.period, ret.gross_sales, ret.taxable_sales, ret.tax_due) == (
            "2026-05", may["gross_sales"], may["taxable_sales"], may["tax_due"])
        assert ret.filed_on == pay.paid_on == date(2026, 6, 1) and pay.amount == may["tax_due"]
        assert not _of(world, TaxNoticeSent)
        books = ledger.books
        j = books.payroll_tax.jurisdictions[truth["jurisdiction_id"]]
        assert (j.rate_bp, j.account, j.due_day) == (725, "2200", 20)
        invoices = [e for e in ledger.store.read(realm="erp", types=["invoice_issued"])]
        assert {e.actor for e in invoices} == {"system:billing"}
        exempt = set(truth["exempt"])
        assert exempt and all((e.data["tax"] == 0) == (e.data["customer_id"] in exempt)
                              for e in invoices)
        assert sum(e.data["tax"] for e in invoices) == may["tax_due"]
        assert sum(e.data["subtotal"] for e in invoices) == may["gross_sales"]
    finally:
        ledger.close()


def test_no_return_by_the_due_date_gets_a_late_filing_notice(tmp_path: Path) -> None:
    _, ledger, world = _attempt(tmp_path / "a", agent="null")
    ledger.close()
    assert not _of(world, TaxReturnReceived)
    (n,) = _of(world, TaxNoticeSent)
    assert (n.kind, n.period, n.due_on, n.unpaid, n.penalty) == (
        "late_filing", "2026-05", date(2026, 6, 20), 0, 5_000)
    assert any(getattr(w, "filename", "").endswith("notice-2026-05-late-filing.txt")
               for w in world)


def test_a_short_payment_gets_an_underpayment_notice(tmp_path: Path) -> None:
    def short(cmd: c.Command) -> c.Command:
        if isinstance(cmd, c.RemitSalesTax):
            return cmd.model_copy(update={"amount": cmd.amount - 100})
        return cmd
    truth, ledger, world = _attempt(tmp_path / "a", change=short)
    ledger.close()
    (n,) = _of(world, TaxNoticeSent)
    assert (n.kind, n.unpaid, n.penalty) == ("underpayment", 100, 5)
    (pay,) = _of(world, TaxPaymentReceived)
    assert pay.amount == truth["sales"]["2026-05"]["tax_due"] - 100


def test_a_payment_after_the_due_date_is_received_on_its_date_and_assessed(
        tmp_path: Path) -> None:
    def late(cmd: c.Command) -> c.Command:
        if isinstance(cmd, c.RemitSalesTax):
            return cmd.model_copy(update={"entry_date": date(2026, 6, 22)})
        return cmd
    truth, ledger, world = _attempt(tmp_path / "a", change=late)
    ledger.close()
    (pay,) = _of(world, TaxPaymentReceived)
    assert pay.paid_on == date(2026, 6, 22)
    (n,) = _of(world, TaxNoticeSent)
    assert (n.kind, n.unpaid) == ("underpayment", truth["sales"]["2026-05"]["tax_due"])


def test_the_hard_tier_misposts_2200_and_revises_registers(tmp_path: Path) -> None:
    truth, ledger, world = _attempt(tmp_path / "a", agent="null", tier="hard", seed=1)
    try:
        assert truth["stray"] is not None and truth["revised"]
        stray = [e for e in ledger.store.read(realm="erp", types=["journal_entry_posted"])
                 if e.data["entry_date"] == truth["stray"]["entry_date"]]
        assert len(stray) == 1 and stray[0].actor == "system:bookkeeping"
        assert all(r["version"] == (2 if r["register_id"] in truth["revised"] else 1)
                   for r in truth["registers"])
        files = [getattr(w, "filename", "") for w in world]
        assert any("-v2." in f for f in files) and any(f.endswith(".pdf") for f in files)
    finally:
        ledger.close()


def test_the_same_seed_gives_the_same_log(tmp_path: Path) -> None:
    loaded = load_scenario(find_scenario(NAME), tier="easy")
    hashes = {run_attempt(loaded, 5, "null", tmp_path / str(n)).final_hash for n in range(2)}
    other = run_attempt(loaded, 6, "null", tmp_path / "other").final_hash
    assert len(hashes) == 1 and other not in hashes
