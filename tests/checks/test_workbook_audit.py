"""Audit of the workbook checks against the methods page: which text cells read as one
figure (a typeset minus, never two numbers or a card number spelled as one), which
formulas are live (a reference to column E is not an exponent), and ``near_text`` on a
row or column a merged label spans.

The recalculating tests share one workbook, recalculated once (the contexts share a
cache); they skip without LibreOffice outside CI, as ``test_workbook.py``'s do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl
import pytest

from checks.context import CheckContext
from checks.registry import CheckResult
from checks.workbook import cell_figure, is_live_formula
from erp.store import EventStore
from tests.checks.helpers import run_one
from tests.conftest import require_soffice


def build_audit_book(path: Path) -> None:
    """Text figures with a typeset minus, texts that are no figure, a merged label."""
    wb = openpyxl.Workbook()
    s = wb.active
    s.title = "Summary"
    s.append(["Label", "Value"])
    s.append(["Refund", "\u221230.00"])  # row 2: MINUS SIGN
    s.append(["Card", "4111 1111 1111 1111"])  # row 3: an id, not a figure
    s.append(["Two counts", "12 5"])  # row 4: two numbers, not 125
    s.append(["Euro price", "12\u20ac50"])  # row 5: not 1250
    s.append(["Padded", "\u00a0$1,240.00\u00a0"])  # row 6
    s.merge_cells("D1:F1")
    s["D1"] = "Quarter one"
    s["D2"], s["E2"], s["F2"] = 100, 4321, "=D2+E2"  # under the merged label
    s["H2"] = 9876  # beyond it
    wb.save(path)


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The module's workspace with ``audit.xlsx``, and the cache its contexts share."""
    root = tmp_path_factory.mktemp("audit-book")
    (root / "ws").mkdir()
    (root / "ref").mkdir()
    build_audit_book(root / "ws" / "audit.xlsx")
    return root, {}


@pytest.fixture
def ctx(book: tuple[Path, dict[str, Any]], sqlite_store: EventStore) -> CheckContext:
    """A context on the module's workspace, sharing its cache (one recalculation)."""
    root, cache = book
    return CheckContext(sqlite_store, workspace=root / "ws", reference=root / "ref",
                        cache=cache)


@pytest.fixture
def lo() -> None:
    """Require LibreOffice (skip, or fail under CI)."""
    require_soffice()


def value(ctx: CheckContext, **raw: Any) -> CheckResult:
    """Run one ``xlsx_value_present`` on ``audit.xlsx`` (no supplied inputs)."""
    return run_one({"type": "xlsx_value_present", "path": "audit.xlsx", **raw}, ctx)


# --- what reads as one figure -----------------------------------------------------------


def test_cell_figure_reads_a_typeset_minus() -> None:
    assert cell_figure("\u221230.00") == -30
    assert cell_figure("\u2013 5") == -5


@pytest.mark.parametrize("text", [
    "4111 1111 1111 1111", "12 5", "12\u20ac50", "1$2", "\u22120042", "(\u2212 0042)",
    "- 0042", "1e999999999"])
def test_cell_figure_never_reads_ids_or_joined_numbers(text: str) -> None:
    assert cell_figure(text) is None


def test_cell_figure_of_an_integer_beyond_a_float_is_none() -> None:
    """openpyxl reads a long digit string as an int; float() of it overflowed."""
    assert cell_figure(10 ** 400) is None
    assert cell_figure(-(10 ** 400)) is None
    assert cell_figure(10 ** 20) == 1e20


def test_text_figures_after_recalculation(ctx: CheckContext, lo: None) -> None:
    r = value(ctx, expected=-30, near_text="refund")
    assert r.passed and r.metrics["found_at"] == "Summary!B2", r.detail
    assert value(ctx, expected=1240, near_text="padded").passed
    for expected in (4111111111111111, 125, 1250):
        r = value(ctx, expected=expected)
        assert not r.passed, r.detail
        # the figures: B2, B6 and D2:F2, H2; not the card number, "12 5" or "12€50"
        assert r.metrics["figures"] == 6, r.detail


# --- near_text over a merged label ------------------------------------------------------


def test_near_text_covers_every_column_a_merged_label_spans(ctx: CheckContext,
                                                            lo: None) -> None:
    for expected, cell in ((100, "D2"), (4321, "E2"), (4421, "F2")):
        r = value(ctx, expected=expected, near_text="quarter one")
        assert r.passed and r.metrics["found_at"] == f"Summary!{cell}", r.detail
    r = value(ctx, expected=9876, near_text="quarter one")
    assert not r.passed
    assert "within tolerance but not near the text: Summary!H2 = 9,876" in r.detail


# --- live formulas ----------------------------------------------------------------------


@pytest.mark.parametrize("formula", [
    "=E5", "=e5*2", "=E10-E9", "=-E5", "=1E5+E5", "=SUM(E1:E9)", "=$E$2", "=E2%"])
def test_a_reference_to_column_e_is_live(formula: str) -> None:
    assert is_live_formula(formula)


@pytest.mark.parametrize("formula", [
    "=1E5", "=2.5e-3*4", "=1e+3/2", "=.5", "=5.", "=(1+2)*3%", "= 1240 ", "=--5"])
def test_a_constant_with_an_exponent_is_not_live(formula: str) -> None:
    assert not is_live_formula(formula)


def test_has_formulas_counts_references_to_column_e(tmp_path: Path,
                                                    sqlite_store: EventStore) -> None:
    wb = openpyxl.Workbook()
    s = wb.active
    s["E1"], s["E2"] = 5, 7
    s["A1"], s["A2"], s["A3"] = "=E1", "=E1*E2", "=1E3"
    (tmp_path / "ws").mkdir()
    wb.save(tmp_path / "ws" / "e.xlsx")
    ctx = CheckContext(sqlite_store, workspace=tmp_path / "ws", reference=tmp_path)
    r = run_one({"type": "xlsx_has_formulas", "path": "e.xlsx", "min_count": 2}, ctx)
    assert r.passed, r.detail
    assert (r.metrics["formulas"], r.metrics["constant_formulas"]) == (2, 1)
