"""Amounts in an agent's files as people and spreadsheets write them (``written_cents``):
a dollar sign, thousands separators, an accountant's negative in parentheses; and an aging
whose empty buckets are blank. Each is read as the same figure; a wrong figure still fails."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from checks.context import CheckContext
from checks.policy import AgingMatchesBooks, aging_matches_books, written_cents
from erp import commands as c
from erp.errors import MoneyError
from erp.ledger import Ledger, Submission
from tests.erp.helpers import set_up_company

D = date(2026, 3, 5)
AGENT = {"actor": "agent:turn-1", "role": "clerk", "business_date": D}


@pytest.mark.parametrize(("cell", "cents"), [
    ("1234.50", 123450), ("1234.5", 123450), ("1,234.50", 123450), (" 1234.50 ", 123450),
    ("$1,234.50", 123450), ("-1234.50", -123450), ("-$1,234.50", -123450),
    ("$-1,234.50", -123450), ("(1,234.50)", -123450), ("($1,234.50)", -123450),
    ("( 972.00 )", -97200), ("0", 0), ("+12.00", 1200)])
def test_written_cents_reads_the_usual_ways(cell: str, cents: int) -> None:
    assert written_cents(cell) == cents


@pytest.mark.parametrize("cell", ["", "()", "(-5.00)", "abc", "1234.505", "$", "12.00$x",
                                  "1e3", "(12.00", "USD 12.00"])
def test_written_cents_refuses_what_is_no_amount(cell: str) -> None:
    with pytest.raises(MoneyError):
        written_cents(cell)


def _aging(ledger: Ledger, ws: Path, text: str) -> tuple[bool, str]:
    (ws / "out").mkdir(exist_ok=True)
    (ws / "out" / "ar_aging.csv").write_text(text, encoding="utf-8")
    spec = AgingMatchesBooks(type="aging_matches_books", path="out/ar_aging.csv", as_of=D)
    r = aging_matches_books(spec, CheckContext(store=ledger.store, workspace=ws))
    return r.passed, r.detail


HEAD = "customer,current,1-30,31-60,61-90,over_90,total\n"


def test_aging_reads_blank_buckets_and_dollar_amounts(ledger: Ledger, tmp_path: Path) -> None:
    set_up_company(ledger)
    ledger.execute_batch([Submission(x, **AGENT) for x in (
        c.IssueInvoice(invoice_id="I1", customer_id="C1", entry_date=D, due_on=date(2026, 3, 20),
                       lines=(c.InvoiceLineIn(description="x", unit_price="1234.50"),)),
        c.IssueInvoice(invoice_id="I2", customer_id="C2", entry_date=date(2026, 2, 2),
                       due_on=date(2026, 2, 17),
                       lines=(c.InvoiceLineIn(description="y", unit_price="80.00"),)))])
    assert _aging(ledger, tmp_path, HEAD + "C1,1234.50,0.00,0.00,0.00,0.00,1234.50\n"
                                           "C2,0.00,80.00,0.00,0.00,0.00,80.00\n")[0]
    # the same figures, empty buckets blank, amounts with a dollar sign
    assert _aging(ledger, tmp_path, HEAD + 'C1,"$1,234.50",,,,,"$1,234.50"\n'
                                           "C2,,$80.00,,,,$80.00\n")[0]
    # a blank where an amount is owed is a wrong figure, not zero read right
    ok, detail = _aging(ledger, tmp_path, HEAD + "C1,,,,,,1234.50\nC2,,80.00,,,,80.00\n")
    assert not ok and "figures differ" in detail and "C1" in detail, detail
    # the total is written, never blank
    ok, detail = _aging(ledger, tmp_path, HEAD + "C1,1234.50,,,,,\nC2,,80.00,,,,80.00\n")
    assert not ok and "is not an amount" in detail, detail
