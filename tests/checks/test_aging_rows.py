"""``aging_matches_books``: the rows of an aging as an accountant writes them. A customer
named by its id, its registered name or both; a registered customer with nothing open on a
row of zeros; one total row holding the books' totals. A wrong figure, a wrong total, an
unknown name and a customer left out still fail. Amounts as people write them: blank
buckets, dollar signs (``written_cents``)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from checks.context import CheckContext
from checks.policy import AgingMatchesBooks, aging_matches_books, ids_by_folded, party_written
from erp import commands as c
from erp.ledger import Ledger, Submission
from tests.erp.helpers import set_up_company

D = date(2026, 3, 5)
AGENT = {"actor": "agent:turn-1", "role": "clerk", "business_date": D}
HEAD = "customer,current,1-30,31-60,61-90,over_90,total\n"


@pytest.fixture
def books(ledger: Ledger) -> Ledger:
    """Acme (C1) owes 1,234.50 not yet due, Globex (C2) 80.00 1-30 days past due."""
    set_up_company(ledger)
    ledger.execute_batch([Submission(x, **AGENT) for x in (
        c.IssueInvoice(invoice_id="I1", customer_id="C1", entry_date=D, due_on=date(2026, 3, 20),
                       lines=(c.InvoiceLineIn(description="x", unit_price="1234.50"),)),
        c.IssueInvoice(invoice_id="I2", customer_id="C2", entry_date=date(2026, 2, 2),
                       due_on=date(2026, 2, 17),
                       lines=(c.InvoiceLineIn(description="y", unit_price="80.00"),)))])
    return ledger


def _aging(ledger: Ledger, ws: Path, text: str) -> tuple[bool, str]:
    (ws / "out").mkdir(exist_ok=True)
    (ws / "out" / "ar_aging.csv").write_text(text, encoding="utf-8")
    spec = AgingMatchesBooks(type="aging_matches_books", path="out/ar_aging.csv", as_of=D)
    r = aging_matches_books(spec, CheckContext(store=ledger.store, workspace=ws))
    return r.passed, r.detail


C1 = "1234.50,0.00,0.00,0.00,0.00,1234.50\n"
C2 = "0.00,80.00,0.00,0.00,0.00,80.00\n"


@pytest.mark.parametrize("one, two", [
    ("C1", "C2"),                          # the books' ids
    ("Acme", "Globex"),                    # the registered names
    ("ACME", " globex "),                  # in other case and spacing
    ("Acme (C1)", "C2 - Globex"),          # both
])
def test_a_customer_by_id_or_by_name(books: Ledger, tmp_path: Path, one: str, two: str) -> None:
    ok, detail = _aging(books, tmp_path, HEAD + f'"{one}",{C1}"{two}",{C2}')
    assert ok, detail


def test_a_row_of_zeros_for_a_customer_with_nothing_open(books: Ledger, tmp_path: Path) -> None:
    set_up = HEAD + f"C1,{C1}C2,{C2}"
    books.execute(c.RegisterCustomer(customer_id="C3", name="Initrode"), **AGENT)
    ok, detail = _aging(books, tmp_path, set_up + "C3,0.00,0.00,0.00,0.00,0.00,0.00\n")
    assert ok, detail
    # ... but not a figure for it, nor a row of zeros for a customer the books do not know
    ok, detail = _aging(books, tmp_path, set_up + "C3,5.00,0.00,0.00,0.00,0.00,5.00\n")
    assert not ok and "not open in the books: C3" in detail, detail
    ok, detail = _aging(books, tmp_path, set_up + "Nobody Ltd,0,0,0,0,0,0\n")
    assert not ok and "not open in the books: Nobody Ltd" in detail, detail
    # ... nor a row of zeros in place of one owing
    ok, detail = _aging(books, tmp_path, HEAD + f"C1,{C1}C2,0,0,0,0,0,0\n")
    assert not ok and "figures differ: C2" in detail, detail


@pytest.mark.parametrize("label", ["TOTAL", "Total", "Grand total", "Totals",
                                   "Total receivables"])
def test_a_total_row_holding_the_books_totals(books: Ledger, tmp_path: Path,
                                              label: str) -> None:
    ok, detail = _aging(books, tmp_path,
                        HEAD + f"C1,{C1}C2,{C2}{label},1234.50,80.00,0.00,0.00,0.00,1314.50\n")
    assert ok, detail


def test_a_wrong_total_row_and_two_fail(books: Ledger, tmp_path: Path) -> None:
    rows = HEAD + f"C1,{C1}C2,{C2}"
    ok, detail = _aging(books, tmp_path, rows + "TOTAL,1234.50,80.00,0,0,0,1314.00\n")
    assert not ok and "a total row that is not the sum: row 4 'TOTAL'" in detail, detail
    ok, detail = _aging(books, tmp_path, rows + "TOTAL,1234.50,80.00,0,0,0,1314.50\n"
                                                "Grand total,1234.50,80.00,0,0,0,1314.50\n")
    assert not ok and "2 total rows" in detail, detail


def test_a_customer_left_out_or_twice_still_fails(books: Ledger, tmp_path: Path) -> None:
    ok, detail = _aging(books, tmp_path, HEAD + f"Acme,{C1}TOTAL,1234.50,0,0,0,0,1234.50\n")
    assert not ok and "missing C2" in detail, detail
    ok, detail = _aging(books, tmp_path, HEAD + f"Acme,{C1}C1,{C1}C2,{C2}")
    assert not ok and "listed twice: C1" in detail, detail
    ok, detail = _aging(books, tmp_path, HEAD + f"Acme,{C2}C2,{C1}")
    assert not ok and "figures differ: C1" in detail and "C2" in detail, detail


def test_party_written_needs_one_id_or_an_exact_name() -> None:
    ids, named = ids_by_folded({"C1", "C2"}), {"acme": "C1", "globex": "C2"}
    assert party_written("Acme", ids, named) == "C1"
    assert party_written("c2", ids, named) == "C2"
    assert party_written("Acme Corp", ids, named) is None      # not its registered name
    assert party_written("C1 and C2", ids, named) is None      # two ids
    assert party_written("C12", ids, named) is None            # not an id as a word


def test_blank_buckets_and_dollar_amounts(books: Ledger, tmp_path: Path) -> None:
    assert _aging(books, tmp_path, HEAD + f"C1,{C1}C2,{C2}")[0]
    # the same figures, empty buckets blank, amounts with a dollar sign
    assert _aging(books, tmp_path, HEAD + 'C1,"$1,234.50",,,,,"$1,234.50"\n'
                                          "C2,,$80.00,,,,$80.00\n")[0]
    # a blank where an amount is owed is a wrong figure, not zero read right
    ok, detail = _aging(books, tmp_path, HEAD + "C1,,,,,,1234.50\nC2,,80.00,,,,80.00\n")
    assert not ok and "figures differ" in detail and "C1" in detail, detail
    # the total is written, never blank
    ok, detail = _aging(books, tmp_path, HEAD + "C1,1234.50,,,,,\nC2,,80.00,,,,80.00\n")
    assert not ok and "is not an amount" in detail, detail
