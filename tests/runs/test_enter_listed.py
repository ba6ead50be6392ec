"""The ``enter_listed`` operator: a turn whose reference entered nothing in the books gets a
mutant entering one of the vendor documents its output lists (a list to work from, entered
instead), so a rule "enter nothing" has a mistake that breaks it."""

from __future__ import annotations

from pathlib import Path

from desk.tasks import load_task
from erp.commands import ApproveBill
from runs.attempt import Recording
from runs.validate import (
    CLASSES,
    ListedItem,
    listed_entries,
    listed_items,
    sample_mutations,
    validate_mutants,
)

ITEMS = ("vendor_id,document,kind,amount\n"
         "V001,INV-7001,invoice,1250.40\n"
         "V001,CN-0042,credit_note,-80.00\n"
         "V002,,payment,-10.00\n"
         "V003,INV-7002,invoice,0.00\n")
BALANCES = "vendor_id,statement_balance,books_balance,difference\nV001,10.00,9.00,1.00\n"


def _turns(tmp_path: Path) -> Path:
    turns = tmp_path / "turns"
    for turn in (1, 2):
        out = turns / f"{turn:02d}" / "outputs"
        out.mkdir(parents=True)
        (out / "reconciling_items.csv").write_text(ITEMS, encoding="utf-8")
        (out / "balances.csv").write_text(BALANCES, encoding="utf-8")
    return turns


def test_a_list_of_vendor_documents_is_read_with_signed_amounts(tmp_path: Path) -> None:
    turns = _turns(tmp_path)
    got = listed_items(turns / "01" / "outputs" / "reconciling_items.csv", "items.csv")
    # a row without a document, or of no amount, is nothing to enter
    assert got == [ListedItem("items.csv", 1, "V001", "INV-7001", 125040),
                   ListedItem("items.csv", 2, "V001", "CN-0042", -8000)]
    assert listed_items(turns / "01" / "outputs" / "balances.csv", "balances.csv") == []
    other = tmp_path / "x.csv"
    other.write_text("invoice_id,amount\nINV-1,10.00\n", encoding="utf-8")
    assert listed_items(other, "x.csv") == []


def test_only_a_turn_that_entered_nothing_gets_the_mutants(tmp_path: Path) -> None:
    turns = _turns(tmp_path)
    rec = Recording(commands={2: [ApproveBill(bill_id="B1")]})
    assert [(t, i.document) for t, i in listed_entries(turns, rec)] == [
        (1, "INV-7001"), (1, "CN-0042")]
    muts = [m for m in sample_mutations(rec, per_operator=6, seed=1, turns=turns)
            if m.op == "enter_listed"]
    assert [(m.turn, m.index, m.command, m.site) for m in muts] == [
        (1, 0, "EnterBill", "reconciling_items.csv row 1"),
        (1, 1, "RecordVendorCredit", "reconciling_items.csv row 2")]
    assert CLASSES["enter_listed"] == "command"


def test_entering_a_listed_statement_entry_is_caught(tmp_path: Path) -> None:
    loaded = load_task("vendor-statement-recon").loaded
    report = validate_mutants(loaded, 0, tmp_path / "m", per_operator=1)
    listed = [o for o in report.outcomes if o.mutation.op == "enter_listed"]
    assert len(listed) == 1 and not listed[0].equivalent, listed
    assert listed[0].change.startswith("entered reconciling_items.csv row ")
    assert listed[0].caught
    assert set(listed[0].failed) & {"no-bills-entered", "no-vendor-credits-recorded"}
