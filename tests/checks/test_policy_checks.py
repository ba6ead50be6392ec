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
    DocumentsListed,
    EntriesDated,
    PaymentsDueBy,
    bank_minimum_balance,
    bills_coded_to_default,
    csv_ties,
    documents_listed,
    entries_dated,
    payments_due_by,
)
from checks.registry import CheckResult
from erp import commands as c
from erp.ledger import Ledger, Recorded, Submission
from sim.world_events import BillIssued, DocumentDelivered, OrderLine
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


# --- entries_dated: bills_due_as_invoiced ---------------------------------------------------

def _issued(ledger: Ledger, number: str, issued_on: date, due_on: date) -> None:
    """Vendor V1's invoice ``number`` in its own books: issued and due as given."""
    w = BillIssued(vendor_id="V1", bill_ref=f"V1-B{number}", invoice_number=number,
                   issued_on=issued_on, due_on=due_on,
                   lines=(OrderLine(description="x", quantity=1, unit_price=10000),),
                   total=10000, agreed_total=10000, kind="original")
    ledger.record_many("world", [Recorded(f"world:{w.stream}", w.type, w.model_dump_json(),
                                          "vendor:V1", issued_on, issued_on.toordinal() + 0.1)])


def test_entries_dated_names_a_bill_due_later_than_invoiced(ledger: Ledger) -> None:
    set_up_company(ledger)
    _issued(ledger, "1", D, date(2026, 3, 31))
    _issued(ledger, "2", D, date(2026, 3, 31))
    _bill(ledger, "1", D)                       # due 03-31, as invoiced
    spec = EntriesDated(type="entries_dated", bills_due_as_invoiced=True)
    ctx = _ctx(ledger)
    assert entries_dated(spec, ctx).passed, entries_dated(spec, ctx).detail
    _run(ledger, c.EnterBill(bill_id="B2", vendor_id="V1", vendor_invoice_number="2",
                             entry_date=D, due_on=date(2026, 4, 30),
                             lines=(c.BillLineIn(description="x", amount="100.00"),)))
    r = entries_dated(spec, ctx)
    assert not r.passed
    assert "bill B2 due 2026-04-30, the invoice says 2026-03-31" in r.detail
    assert r.detail.startswith("1 entry dated outside their period or not as invoiced: ")
    assert "B1" not in r.detail
    # without the option only the bill's own date is judged
    assert entries_dated(EntriesDated(type="entries_dated"), ctx).passed


def test_entries_dated_names_a_bill_dated_otherwise_than_invoiced(ledger: Ledger) -> None:
    set_up_company(ledger)
    _issued(ledger, "1", date(2026, 3, 4), date(2026, 3, 31))
    _bill(ledger, "1", D)                       # dated 03-05, invoiced 03-04
    for spec in (EntriesDated(type="entries_dated"),
                 EntriesDated(type="entries_dated", bills_due_as_invoiced=True)):
        r = entries_dated(spec, _ctx(ledger))
        assert not r.passed and "bill B1 dated 2026-03-05, invoiced 2026-03-04" in r.detail
        assert r.detail.startswith("1 entry dated outside their period: ")


# --- documents_listed: a document named by its path in the inbox ----------------------------

def test_documents_listed_takes_a_document_by_its_inbox_path(ledger: Ledger,
                                                            tmp_path: Path) -> None:
    set_up_company(ledger)
    for number, kind in (("1", "original"), ("1", "duplicate")):
        w = BillIssued(vendor_id="V1", bill_ref=f"V1-{kind}", invoice_number=number,
                       issued_on=D, due_on=date(2026, 3, 31),
                       lines=(OrderLine(description="x", quantity=1, unit_price=10000),),
                       total=10000, agreed_total=10000, kind=kind)  # type: ignore[arg-type]
        doc = DocumentDelivered(doc_id=f"D-{kind}", filename=f"bill-{kind}.txt", kind="bill",
                                sender="v1@example.com", subject="Invoice 1", content="...",
                                truth={"vendor_id": "V1", "invoice_number": number,
                                       "bill_ref": w.bill_ref})
        ledger.record_many("world", [
            Recorded(f"world:{w.stream}", w.type, w.model_dump_json(), "vendor:V1", D, None),
            Recorded(f"world:{doc.stream}", doc.type, doc.model_dump_json(), "vendor:V1", D,
                     None)])
    _bill(ledger, "1", D)  # the original entered; its resend is the one exception
    (tmp_path / "inbox" / "archive").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    for name in ("bill-original.txt", "bill-duplicate.txt"):
        (tmp_path / "inbox" / "archive" / name).write_text("...")
    spec = DocumentsListed(type="documents_listed", path="out/exceptions.csv",
                           vendor_column="vendor")
    ctx = CheckContext(store=ledger.store, workspace=tmp_path, agent_actors=("agent:turn-1",))

    def listed(*cells: str) -> CheckResult:
        (tmp_path / "out" / "exceptions.csv").write_text(
            "document,vendor,reason\n" + "".join(f"{x},V1,resend\n" for x in cells))
        return documents_listed(spec, ctx)

    for cell in ("bill-duplicate.txt", "inbox/bill-duplicate.txt",
                 "inbox/archive/bill-duplicate.txt", "./inbox/bill-duplicate.txt"):
        assert listed(cell).passed, (cell, listed(cell).detail)
    # another folder's file, or the original by its path, is still not the exception
    r = listed("out/bill-duplicate.txt")
    assert not r.passed and "not listed: bill-duplicate.txt" in r.detail
    r = listed("bill-duplicate.txt", "inbox/archive/bill-original.txt")
    assert not r.passed and "acted on it: bill-original.txt" in r.detail
    r = listed("bill-duplicate.txt", "inbox/bill-duplicate.txt")
    assert not r.passed and "listed twice: bill-duplicate.txt" in r.detail
