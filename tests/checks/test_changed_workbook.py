"""checks.changed_workbook: a built-in workbook check run on a changed copy of a workbook
against changed reference rows (LibreOffice recalculates the copy).

A total over the rows follows a changed row; a total typed in does not; the result is the
built-in check's own (its detail); the temporary folders are removed; an invalid spec
and no rows raise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl
import pytest

from checks.changed_workbook import check_changed_workbook
from checks.errors import CheckSpecError

pytestmark = pytest.mark.usefixtures("soffice")  # LibreOffice recalculates

SPEC = {"type": "xlsx_ref_values", "path": "out/book.xlsx", "ref": "totals.csv",
        "label_column": "label", "value_column": "total"}


def _book(total: str | float) -> Any:
    """Two amounts and their total (a formula or a typed figure)."""
    wb = openpyxl.Workbook()
    sheet = wb.active
    sheet.title = "Sheet1"
    sheet.append(["label", "amount"])
    sheet.append(["North", 100.0])
    sheet.append(["South", 250.5])
    sheet.append(["Total", total])
    return wb


def _raised(wb: Any) -> Any:
    """The North amount raised by 1,000.00 in the copy."""
    wb["Sheet1"]["B2"] = 1100.0
    return wb


ROWS = [{"label": "North", "total": "1100.00"}, {"label": "Total", "total": "1350.50"}]


def test_a_formula_over_the_rows_follows_the_change() -> None:
    result = check_changed_workbook(_raised(_book("=SUM(B2:B3)")), ROWS, SPEC)
    assert result.passed, result.detail
    assert result.detail == "out/book.xlsx: all 2 figures of totals.csv near their labels"


def test_a_typed_total_does_not_follow() -> None:
    result = check_changed_workbook(_raised(_book(350.5)), ROWS, SPEC)
    assert not result.passed
    assert result.detail == ("out/book.xlsx: 1/2 figures of totals.csv not found near their "
                             "labels: Total: 1,350.5 (closest: Sheet1!B4 = 350.5)")


def test_the_rows_keep_their_columns_and_nothing_is_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference CSV's header is the first row's keys (other columns kept); a ``ref``
    in a subfolder and a workbook at the workspace's top are written where the spec says;
    the temporary folders are gone afterwards."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spec = {**SPEC, "path": "book.xlsx", "ref": "sub/totals.csv"}
    rows = [{"extra": "x", "label": "Total", "total": "1350.50"}]
    result = check_changed_workbook(_raised(_book("=SUM(B2:B3)")), rows, spec)
    assert result.passed, result.detail
    assert result.detail == "book.xlsx: all 1 figures of sub/totals.csv near their labels"
    assert list(tmp_path.iterdir()) == []


def test_an_invalid_spec_and_no_rows_raise() -> None:
    with pytest.raises(CheckSpecError):
        check_changed_workbook(_book(1.0), ROWS, {**SPEC, "value_column": None})
    with pytest.raises(ValueError, match="no reference rows"):
        check_changed_workbook(_book(1.0), [], SPEC)
