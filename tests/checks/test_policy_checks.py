"""The policy checks on small books and files: each passes on the work done right and fails,
naming what is wrong, on the one mistake it is for."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from checks.context import CheckContext
from checks.policy import (
    BankMinimumBalance,
    BillsCodedToDefault,
    CsvTies,
    EntriesDated,
    PaymentsDueBy,
    bank_minimum_balance,
    bills_coded_to_default,
    csv_ties,
    entries_dated,
    payments_due_by,
)
from erp import commands as c
from erp.ledger import Ledger, Recorded, Submission
from sim.world_events import DocumentDelivered
from tests.erp.helpers import BANK, set_up_company

D = date(2026, 3, 5)
AGENT = {"actor": "agent:turn-1", "role": "clerk", "business_date": D}


def _run(ledger: Ledger, *cmds: c.Command, who: dict[str, Any] = AGENT) -> None:
    ledger.execute_batch([Submission(x, **who) for x in cmds])


def _bills(ledger: Ledger, account: str | None = None) -> None:
    set_up_company(ledger)
    _run(ledger,
         c.EnterBill(bill_id="B1", vendor_id="V1", vendor_invoice_number="1", entry_date=D,
                     due_on=date(2026, 3, 13),
                     lines=(c.BillLineIn(description="x", amount="4000.00"),)),
         c.EnterBill(bill_id="B2", vendor_id="V1", vendor_invoice_number="2", entry_date=D,
                     due_on=date(2026, 3, 30),
                     lines=(c.BillLineIn(description="y", amount="7000.00", account=account),)),
         c.ApproveBill(bill_id="B1"), c.ApproveBill(bill_id="B2"))


def _ctx(ledger: Ledger, ws: Path | None = None) -> CheckContext:
    return CheckContext(store=ledger.store, workspace=ws, agent_actors=("agent:turn-1",))


def test_payments_due_by_names_a_bill_paid_early(ledger: Ledger) -> None:
    _bills(ledger)
    spec = PaymentsDueBy(type="payments_due_by", weeks_after=1)  # due by Sunday 03-15
    _run(ledger, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 3, 15)))
    assert payments_due_by(spec, _ctx(ledger)).passed
    _run(ledger, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 3, 31)))
    r = payments_due_by(spec, _ctx(ledger))
    assert not r.passed and "B2 (due 2026-03-30, paid 2026-03-05" in r.detail
    assert "cutoff 2026-03-15" in r.detail


def test_bank_minimum_balance_names_the_write_that_overdrew(ledger: Ledger) -> None:
    _bills(ledger)
    spec = BankMinimumBalance(type="bank_minimum_balance", minimum="0.00")
    _run(ledger, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 3, 15)))
    assert bank_minimum_balance(spec, _ctx(ledger)).passed
    _run(ledger, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 3, 31)))
    r = bank_minimum_balance(spec, _ctx(ledger))
    assert not r.passed and "RunPayments" in r.detail and "-1,000.00" in r.detail


def test_bills_coded_to_default_names_the_wrong_line(ledger: Ledger) -> None:
    _bills(ledger, account="6100")
    r = bills_coded_to_default(BillsCodedToDefault(type="bills_coded_to_default"),
                               _ctx(ledger))
    assert not r.passed and "B2 line 1 (V1, 7,000.00) on 6100, not 6000" in r.detail
    per_vendor = BillsCodedToDefault(type="bills_coded_to_default", accounts={"V1": "6100"})
    assert "B1 line 1" in bills_coded_to_default(per_vendor, _ctx(ledger)).detail


def test_csv_ties_fails_one_wrong_ordinary_row(ledger: Ledger, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "open.csv").write_text("invoice_id,balance\nI1,100.00\nI2,50.00\nI3,70.00\n")
    (tmp_path / "out" / "m.csv").write_text(
        "line_id,invoice_id,amount_applied\nL1,I1,100.00\nL2,I2,20.00\n")
    (tmp_path / "out" / "o.csv").write_text("invoice_id,balance\nI2,30.00\nI3,70.00\n")
    spec = CsvTies(type="csv_ties", path="out/m.csv", key="invoice_id", opening="open.csv",
                   closing="out/o.csv")
    ctx = CheckContext(store=ledger.store, workspace=tmp_path)
    assert csv_ties(spec, ctx).passed
    # one cent off in one match
    (tmp_path / "out" / "m.csv").write_text(
        "line_id,invoice_id,amount_applied\nL1,I1,100.00\nL2,I2,20.01\n")
    r = csv_ties(spec, ctx)
    assert not r.passed and "I2: 50.00 - 20.01 applied = 29.99" in r.detail
    # a wrong invoice, the row count kept
    (tmp_path / "out" / "m.csv").write_text(
        "line_id,invoice_id,amount_applied\nL1,I3,100.00\nL2,I2,20.00\n")
    r = csv_ties(spec, ctx)
    assert not r.passed and "I1:" in r.detail and "I3:" in r.detail
    # an unreadable amount is the agent's failure, not a grader error
    (tmp_path / "out" / "m.csv").write_text("line_id,invoice_id,amount_applied\nL1,I1,abc\n")
    r = csv_ties(spec, ctx)
    assert not r.passed and "'abc' is not an amount" in r.detail


# --- entries_dated: bills_at_arrival ------------------------------------------------------

def _delivered(ledger: Ledger, number: str, day: date, moment: float) -> None:
    """Vendor V1's invoice ``number`` reaching the inbox on ``day`` at ``moment`` of it (the
    turn's moment is 0.5)."""
    doc = DocumentDelivered(doc_id=f"D{number}", filename=f"bill-{number}.txt", kind="bill",
                            sender="v1@example.com", subject=f"Invoice {number}",
                            content="...", truth={"vendor_id": "V1", "invoice_number": number})
    ledger.record_many("world", [Recorded(f"world:{doc.stream}", doc.type, doc.model_dump_json(),
                                          "vendor:V1", day, day.toordinal() + moment)])


def _bill(ledger: Ledger, number: str, written: date) -> None:
    _run(ledger, c.EnterBill(bill_id=f"B{number}", vendor_id="V1", vendor_invoice_number=number,
                             entry_date=D, due_on=date(2026, 3, 31),
                             lines=(c.BillLineIn(description="x", amount="100.00"),)),
         who={**AGENT, "business_date": written})


def test_entries_dated_names_a_bill_held_past_the_turn_it_arrived_for(ledger: Ledger) -> None:
    set_up_company(ledger)
    turns = (D, date(2026, 3, 6), date(2026, 3, 9))
    _delivered(ledger, "1", D, 0.1)      # before the turn of 03-05: that turn's
    _delivered(ledger, "2", D, 0.7)      # after it: the turn of 03-06's
    _delivered(ledger, "3", D, 0.5)      # at the turn's moment: counted as after it
    _bill(ledger, "2", date(2026, 3, 6))
    _bill(ledger, "3", date(2026, 3, 6))
    spec = EntriesDated(type="entries_dated", bills_at_arrival=True)
    ctx = CheckContext(store=ledger.store, turn_dates=turns)
    assert entries_dated(spec, ctx).passed, entries_dated(spec, ctx).detail
    _bill(ledger, "1", date(2026, 3, 6))  # held a turn, dated as invoiced
    r = entries_dated(spec, ctx)
    assert not r.passed
    assert ("bill B1 (V1 invoice 1) arrived 2026-03-05 and was entered in the turn of "
            "2026-03-06, not the turn of 2026-03-05") in r.detail
    assert "B2" not in r.detail and "B3" not in r.detail
    # without the option the same books pass: only bills_at_arrival judges the turn
    assert entries_dated(EntriesDated(type="entries_dated"), ctx).passed


def test_entries_dated_leaves_bills_never_delivered_or_after_the_last_turn(
        ledger: Ledger) -> None:
    set_up_company(ledger)
    _delivered(ledger, "4", date(2026, 3, 10), 0.1)  # after the last turn
    _bill(ledger, "4", date(2026, 3, 10))
    _bill(ledger, "5", date(2026, 3, 10))            # never delivered: other checks' business
    spec = EntriesDated(type="entries_dated", bills_at_arrival=True)
    ctx = CheckContext(store=ledger.store, turn_dates=(D, date(2026, 3, 9)))
    assert entries_dated(spec, ctx).passed
