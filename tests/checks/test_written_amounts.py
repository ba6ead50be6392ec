"""Amounts in an agent's files as people and spreadsheets write them (``written_cents``):
a dollar sign, thousands separators, an accountant's negative in parentheses. Each is read
as the same figure; what is no amount is refused. (An aging's blank buckets:
``test_aging_rows``.)"""

from __future__ import annotations

import pytest

from checks.policy import written_cents
from erp.errors import MoneyError


@pytest.mark.parametrize(("cell", "cents"), [
    ("1234.50", 123450), ("1234.5", 123450), ("1,234.50", 123450), (" 1234.50 ", 123450),
    ("$1,234.50", 123450), ("-1234.50", -123450), ("-$1,234.50", -123450),
    ("$-1,234.50", -123450), ("(1,234.50)", -123450), ("($1,234.50)", -123450),
    ("( 972.00 )", -97200), ("0", 0), ("+12.00", 1200), ("1,234,567.5", 123456750),
    ("-1,234", -123400)])
def test_written_cents_reads_the_usual_ways(cell: str, cents: int) -> None:
    assert written_cents(cell) == cents


@pytest.mark.parametrize("cell", ["", "()", "(-5.00)", "abc", "1234.505", "$", "12.00$x",
                                  "1e3", "(12.00", "USD 12.00", "12,34.00", "1,2,34.00",
                                  "$1,2345.00"])
def test_written_cents_refuses_what_is_no_amount(cell: str) -> None:
    with pytest.raises(MoneyError):
        written_cents(cell)
