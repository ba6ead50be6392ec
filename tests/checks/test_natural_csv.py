"""csv_values_match ``plain`` columns, and the CSV forms writers produce, read alike.

Several desk prompts ask for amounts as "plain decimals to the cent (no currency symbol,
no thousands separators)" and compared them as text, which refused ``1234.5``, the same
amount as pandas writes a float column. A ``plain`` column compares as a number, written
only as an optional minus, digits and at most two decimals.
"""

from __future__ import annotations

import codecs
import csv
import io
from typing import Any

import pytest

from checks.context import CheckContext
from checks.registry import CheckResult
from tests.checks.helpers import put, run_one, spec_problems

REF = ("invoice,amount,open_amount\n"
       "INV-1,1234.50,1234.50\n"
       "INV-2,-30.00,\n"
       "INV-3,9582.00,9582.00\n")


def plain_check(ctx: CheckContext, **kw: Any) -> CheckResult:
    """csv_values_match of out/a.csv against ref.csv, both amounts ``plain``."""
    raw: dict[str, Any] = {"type": "csv_values_match", "path": "out/a.csv", "ref": "ref.csv",
                           "key": "invoice", "columns": ["amount", "open_amount"],
                           "plain": ["amount", "open_amount"]}
    raw.update(kw)
    return run_one(raw, ctx)


def test_a_plain_column_takes_the_amount_as_pandas_writes_it(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv", "invoice,amount,open_amount\n"
                                    "INV-1,1234.5,1234.50\nINV-2,-30.0,\nINV-3,9582,9582.0\n")
    r = plain_check(ctx)
    assert r.passed, r.detail


@pytest.mark.parametrize("written", ["1,234.50", "$1234.50", "(1234.50)", "+1234.50",
                                     "1234.505", "1234.51", "1 234.50", "1234.50 USD", ""])
def test_a_plain_column_refuses_display_forms_and_wrong_figures(ctx: CheckContext,
                                                                 written: str) -> None:
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv", "invoice,amount,open_amount\n"
                                    f'INV-1,"{written}",1234.50\nINV-2,-30.00,\n'
                                    "INV-3,9582.00,9582.00\n")
    r = plain_check(ctx)
    assert not r.passed
    assert f"key 'INV-1' column 'amount': got {written!r}, expected '1234.50'" in r.detail


def test_an_empty_reference_cell_wants_an_empty_cell(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv", "invoice,amount,open_amount\n"
                                    "INV-1,1234.50,1234.50\nINV-2,-30.00,0.00\n"
                                    "INV-3,9582.00,9582.00\n")
    r = plain_check(ctx)
    assert not r.passed
    assert "key 'INV-2' column 'open_amount': got '0.00', expected ''" in r.detail


def test_without_plain_the_column_is_still_text(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv", "invoice,amount,open_amount\n"
                                    "INV-1,1234.5,1234.50\nINV-2,-30.00,\nINV-3,9582.00,9582.00\n")
    assert not plain_check(ctx, plain=[]).passed


def test_plain_columns_are_validated() -> None:
    base = {"type": "csv_values_match", "path": "out/a.csv", "ref": "ref.csv",
            "key": "invoice", "columns": ["amount"]}
    assert "plain columns must be among columns" in " ".join(
        spec_problems({**base, "plain": ["total"]}).values())
    assert "not numeric" in " ".join(
        spec_problems({**base, "plain": ["amount"], "numeric": ["amount"]}).values())


def _written(rows: list[list[str]], **kw: Any) -> str:
    buf = io.StringIO()
    csv.writer(buf, **kw).writerows(rows)
    return buf.getvalue()


ROWS = [["invoice", "amount", "open_amount"], ["INV-1", "1234.50", "1234.50"],
        ["INV-2", "-30.00", ""], ["INV-3", "9582.00", "9582.00"]]


@pytest.mark.parametrize("form", ["crlf", "bom", "quote_all", "excel", "no_final_newline",
                                  "blank_last_line"])
def test_the_forms_writers_produce_read_alike(ctx: CheckContext, form: str) -> None:
    """Excel and pandas on Windows (CRLF, a BOM), csv.QUOTE_ALL, a hand-written file
    without its last newline or with a blank line after it: the same table."""
    text = _written(ROWS, lineterminator="\n")
    data: bytes = {
        "crlf": lambda: _written(ROWS).encode(),
        "bom": lambda: codecs.BOM_UTF8 + text.encode(),
        "quote_all": lambda: _written(ROWS, quoting=csv.QUOTE_ALL).encode(),
        "excel": lambda: codecs.BOM_UTF8 + _written(ROWS, quoting=csv.QUOTE_ALL).encode(),
        "no_final_newline": lambda: text.rstrip("\n").encode(),
        "blank_last_line": lambda: (text + "\n").encode(),
    }[form]()
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv", data)
    r = plain_check(ctx)
    assert r.passed, r.detail
    assert run_one({"type": "csv_columns", "path": "out/a.csv", "exact": True,
                    "columns": ROWS[0]}, ctx).passed
