"""The workbook checks with real LibreOffice recalculation: a passing and a failing fixture
each with their details, stale cached values, the reading rules (text figures, dates,
ids), the pin-safety rule on supplied inputs, the strict validator, and LibreOffice
missing or hanging.

One workbook (``report.xlsx``, several sheets) is recalculated once per module: the
contexts share one cache. Outside CI the LibreOffice tests skip when ``soffice`` is
absent; under ``CI=true`` they fail (``.ci/run`` installs ``libreoffice-calc``).
"""

from __future__ import annotations

import datetime
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from checks.context import CheckContext
from checks.errors import CheckSpecError
from checks.registry import CheckResult, parse_checks
from checks.verdict import evaluate, run_check
from checks.workbook import (
    CRASH_RETRIES,
    cached_formula_values,
    cell_figure,
    convert_with_soffice,
    find_soffice,
    is_live_formula,
    recalculated,
)
from erp.store import EventStore
from tests.checks.helpers import run_one, spec_problems
from tests.conftest import require_soffice


def inject_cached_value(path: Path, formula: str, cached: str) -> None:
    """Rewrite ``path`` so the cell with ``formula`` carries the (stale) cached ``cached``."""
    with zipfile.ZipFile(path) as z:
        items = [(info, z.read(info.filename)) for info in z.infolist()]
    pattern = re.compile(rb"(<f>" + re.escape(formula.encode()) + rb"</f>)<v\s*/>")
    hits = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info, data in items:
            if info.filename.startswith("xl/worksheets/"):
                data, n = pattern.subn(rb"\1<v>" + cached.encode() + rb"</v>", data)
                hits += n
            out.writestr(info, data)
    assert hits == 1, f"formula {formula} not found once"


def build_report(path: Path) -> None:
    """The agent's workbook: live formulas, text figures, a date, ids, errors, a stale cache."""
    wb = openpyxl.Workbook()
    aging = wb.active
    aging.title = "Aging"
    aging.append(["Customer", "Amount", "Doubled", "As text"])
    aging.append(["Acme", 100, None, "$1,240.00"])
    aging.append(["Beta", 200, None, "(30.00)"])
    aging.append(["Gamma", 300, None, "12.5%"])
    aging["A5"] = "Total"
    aging["B5"] = "=SUM(B2:B4)"
    aging["C5"] = "=B2*2"  # its cached value is made 999 below: a stale value not trusted
    aging["E5"] = "=1240"  # a constant: not a live formula
    ids = wb.create_sheet("Ids")
    ids["A1"] = datetime.date(2026, 3, 31)  # serial 46112: a date, never a figure
    ids["A2"] = "INV-0042"
    ids["A3"] = "2026-03-31"
    ids["A4"] = "0042"
    broken = wb.create_sheet("Broken")
    broken["A1"] = 5
    broken["B1"] = "=A1/0"
    broken["C1"] = "=FOO()"
    broken["D1"] = "=A1+1"
    wb.save(path)
    inject_cached_value(path, "B2*2", "999")


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The module's workspace (``ws/``, ``ref/``) and the cache its contexts share."""
    root = tmp_path_factory.mktemp("book")
    ws = root / "ws"
    ws.mkdir()
    (root / "ref").mkdir()
    build_report(ws / "report.xlsx")
    values = openpyxl.Workbook()
    values.active.append(["Total", 600])
    values.save(ws / "values_only.xlsx")
    (ws / "bank_export.csv").write_text("line,ref,amount\n1,INV-0042,\"1,240.00\"\n"
                                        "2,INV-0043,(30.00)\n", encoding="utf-8")
    (ws / "note.txt").write_text("Stripe fees are 2.9% plus 0.30 per charge.\n",
                                 encoding="utf-8")
    (ws / "garbage.xlsx").write_bytes(b"this is not a zip file")
    return root, {}


def make_ctx(book: tuple[Path, dict[str, Any]], store: EventStore, **kw: Any) -> CheckContext:
    """A context on the module's workspace, sharing its cache (one recalculation)."""
    root, cache = book
    return CheckContext(store, workspace=root / "ws", reference=root / "ref", cache=cache, **kw)


@pytest.fixture
def ctx(book: tuple[Path, dict[str, Any]], sqlite_store: EventStore) -> CheckContext:
    """The shared context, no supplied inputs declared."""
    return make_ctx(book, sqlite_store)


@pytest.fixture
def lo() -> None:
    """Require LibreOffice (skip, or fail under CI)."""
    require_soffice()


def check(ctx: CheckContext, **raw: Any) -> CheckResult:
    """Parse one check strictly and run it; its single result."""
    return run_one(raw, ctx)


problems = spec_problems


VALUE = {"type": "xlsx_value_present", "path": "report.xlsx"}


# --- stripping and recalculation --------------------------------------------------------


def test_openpyxl_write_back_drops_cached_values(tmp_path: Path) -> None:
    path = tmp_path / "a.xlsx"
    build_report(path)
    assert cached_formula_values(path) == ["xl/worksheets/sheet1.xml:C5"]
    wb = openpyxl.load_workbook(path)  # formulas, as the recalculation helper loads it
    wb.save(tmp_path / "b.xlsx")
    assert cached_formula_values(tmp_path / "b.xlsx") == []


def test_a_stale_cached_value_is_not_trusted(ctx: CheckContext, lo: None) -> None:
    stale = openpyxl.load_workbook(ctx.file("report.xlsx"), data_only=True)
    assert stale["Aging"]["C5"].value == 999  # what a reader of cached values would see
    r = check(ctx, **VALUE, expected=999)
    assert not r.passed
    assert "no cell reads 999 ± 0.005" in r.detail
    r = check(ctx, **VALUE, expected=200, near_text="total")
    assert r.passed
    assert r.detail == ("report.xlsx: Aging!C5 = 200 matches 200 ± 0.005 on a row or column "
                        "mentioning 'total'")


def test_one_recalculation_per_file_content(ctx: CheckContext, lo: None) -> None:
    check(ctx, **VALUE, expected=600)
    check(ctx, type="xlsx_no_errors", path="report.xlsx", sheet="Aging")
    keys = [k for k in ctx.cache if k.startswith("xlsx-recalculated:")]
    assert len(keys) == 1
    sheets = recalculated(ctx, "report.xlsx")
    assert [s.title for s in sheets] == ["Aging", "Ids", "Broken"]


# --- xlsx_value_present -----------------------------------------------------------------


def test_value_present_passes_on_a_formula_near_its_label(ctx: CheckContext, lo: None) -> None:
    r = check(ctx, **VALUE, expected=600, near_text="TOTAL")
    assert r.passed
    assert r.detail == ("report.xlsx: Aging!B5 = 600 matches 600 ± 0.005 on a row or column "
                        "mentioning 'TOTAL'")
    assert r.metrics["found_at"] == "Aging!B5"
    assert r.metrics["value"] == 600
    assert check(ctx, **VALUE, expected=600, near_text="amount").passed  # its column


def test_value_present_fails_naming_the_closest_candidates(ctx: CheckContext, lo: None) -> None:
    r = check(ctx, **VALUE, expected=601, near_text="total")
    assert not r.passed
    assert r.detail == ("report.xlsx: no cell reads 601 ± 0.005 on a row or column mentioning "
                        "'total'; closest: Aging!B5 = 600, Aging!C5 = 200, Aging!E5 = 1,240")
    assert r.metrics["closest_distance"] == 1


def test_value_present_away_from_the_text_fails(ctx: CheckContext, lo: None) -> None:
    r = check(ctx, **VALUE, expected=100, near_text="total")
    assert not r.passed
    assert "within tolerance but not near the text: Aging!B2 = 100" in r.detail


def test_text_cells_count_when_they_read_as_one_figure(ctx: CheckContext, lo: None) -> None:
    r = check(ctx, **VALUE, expected=1240, sheet="Aging", near_text="acme")
    assert r.passed and r.metrics["found_at"] == "Aging!D2"
    assert "Aging!D2 = '$1,240.00' matches 1,240" in r.detail
    assert check(ctx, **VALUE, expected=-30).metrics["found_at"] == "Aging!D3"
    assert not check(ctx, **VALUE, expected=30).passed  # "(30.00)" is -30
    assert check(ctx, **VALUE, expected=12.5).metrics["found_at"] == "Aging!D4"
    assert not check(ctx, **VALUE, expected=0.125).passed  # "12.5%" reads 12.5


def test_dates_and_ids_are_never_figures(ctx: CheckContext, lo: None) -> None:
    for expected in (46112, 42, 2026, 31):
        r = check(ctx, **VALUE, expected=expected, sheet="Ids")
        assert not r.passed
        assert r.detail == (f"report.xlsx: no cell reads {expected:,} ± 0.005 in sheet 'Ids' "
                            f"(no figure cells at all)")


def test_cell_figure_rules() -> None:
    assert cell_figure("$1,240.00") == 1240
    assert cell_figure(" (30.00) ") == -30
    assert cell_figure("12.5%") == 12.5
    assert cell_figure(7) == 7
    for value in (True, None, "", "INV-0042", "2026-03-31", "0042", "#DIV/0!", "1,24",
                  datetime.date(2026, 3, 31), datetime.datetime(2026, 3, 31, 9, 0),
                  datetime.time(9, 30), datetime.timedelta(hours=1), float("nan")):
        assert cell_figure(value) is None, value


def test_tolerance_is_relative_with_a_cent_floor(ctx: CheckContext, lo: None) -> None:
    assert check(ctx, **VALUE, expected=600.004).passed  # rounds to the cent: 600.00
    assert check(ctx, **VALUE, expected=600.005).passed  # a half cent
    # to the cent: one cent off either way fails (issue 14)
    r = check(ctx, **VALUE, expected=600.01)
    assert not r.passed and r.metrics["tolerance"] == pytest.approx(0.005)
    assert not check(ctx, **VALUE, expected=599.99).passed
    assert not check(ctx, **VALUE, expected=600.02).passed
    r = check(ctx, **VALUE, expected=600.5, rel_tol=0.001)  # 0.6005
    assert r.passed and r.metrics["tolerance"] == pytest.approx(0.6005)


def test_value_present_sheet_scope(ctx: CheckContext, lo: None) -> None:
    r = check(ctx, **VALUE, expected=600, sheet="Broken")
    assert not r.passed
    assert "in sheet 'Broken'" in r.detail
    assert check(ctx, **VALUE, expected=600, sheet="aging").passed  # case-insensitive
    r = check(ctx, **VALUE, expected=600, sheet="Summary")
    assert not r.passed
    assert r.detail == "report.xlsx: no sheet 'Summary' (sheets: 'Aging', 'Ids', 'Broken')"


def test_a_pin_found_in_a_supplied_input_is_a_grader_error(
        book: tuple[Path, dict[str, Any]], sqlite_store: EventStore, lo: None) -> None:
    ctx = make_ctx(book, sqlite_store, inputs=("bank_export.csv", "note.txt"))
    [spec] = parse_checks([{**VALUE, "expected": 1240}])
    with pytest.raises(ValueError, match=r"unsafe pin: 1,240 \(± 0.005\) appears in the "
                                         r"supplied inputs.*bank_export.csv line 2: "
                                         r"'1,240.00'.*raw_value_ok: true"):
        run_check(spec, 0, ctx)
    verdict = evaluate([spec], ctx)
    assert verdict.status == "grader_error"
    # the sign does not make it safe; a figure in prose counts too
    with pytest.raises(ValueError, match=r"bank_export\.csv line 3: '\(30\.00\)'"):
        check(ctx, **VALUE, expected=30)
    with pytest.raises(ValueError, match=r"note\.txt line 1: '0\.30'"):
        check(ctx, **VALUE, expected=0.3)
    # declared legitimate, or a derived figure: checked as usual
    assert check(ctx, **VALUE, expected=1240, raw_value_ok=True).passed
    assert check(ctx, **VALUE, expected=600).passed
    assert check(ctx, **VALUE, expected=42).detail.startswith("report.xlsx: no cell reads 42")


def test_value_present_missing_or_garbled_workbook_fails(ctx: CheckContext) -> None:
    r = check(ctx, type="xlsx_value_present", path="out/aging.xlsx", expected=1)
    assert not r.passed
    assert r.detail == "out/aging.xlsx: no such file in the workspace"
    r = check(ctx, type="xlsx_value_present", path="garbage.xlsx", expected=1)
    assert not r.passed
    assert r.detail.startswith("garbage.xlsx: not a readable .xlsx workbook (BadZipFile")


# --- xlsx_has_formulas ------------------------------------------------------------------


def test_has_formulas_counts_live_formulas(ctx: CheckContext) -> None:
    r = check(ctx, type="xlsx_has_formulas", path="report.xlsx", min_count=5)
    assert r.passed
    assert r.detail == ("report.xlsx: 5 live formula cells (need 5); by sheet: Aging: 2, "
                        "Broken: 3; 1 constant-only formulas (e.g. =1240) not counted")
    assert r.metrics == {"formulas": 5, "constant_formulas": 1}
    r = check(ctx, type="xlsx_has_formulas", path="report.xlsx", sheet="Aging", min_count=3)
    assert not r.passed
    assert r.detail.startswith("report.xlsx: 2 live formula cells in sheet 'Aging' (need 3)")


def test_has_formulas_fails_on_pasted_values(ctx: CheckContext) -> None:
    r = check(ctx, type="xlsx_has_formulas", path="values_only.xlsx", min_count=1)
    assert not r.passed
    assert r.detail == ("values_only.xlsx: 0 live formula cells (need 1); values only, no "
                        "live formula")


def test_is_live_formula() -> None:
    assert is_live_formula("=SUM(B2:B4)")
    assert is_live_formula("=B2*2")
    assert is_live_formula("=TODAY()")
    assert not is_live_formula("=1240")
    assert not is_live_formula("=100*1.2")
    assert not is_live_formula("=-(5)")


# --- xlsx_no_errors ---------------------------------------------------------------------


def test_no_errors_fails_listing_error_cells(ctx: CheckContext, lo: None) -> None:
    r = check(ctx, type="xlsx_no_errors", path="report.xlsx")
    assert not r.passed
    assert r.detail == ("report.xlsx: 2 formula cells evaluate to an error after recalculation "
                        "(at most 0 allowed): Broken!B1 = #DIV/0! (=A1/0); Broken!C1 = #NAME? "
                        "(=FOO()) [#NAME? is also what a function LibreOffice lacks gives, "
                        "e.g. XLOOKUP before LibreOffice 24.8]")
    assert r.metrics == {"errors": 2, "formula_cells": 6}


def test_no_errors_passes_on_a_clean_sheet_or_within_the_allowance(ctx: CheckContext,
                                                                    lo: None) -> None:
    r = check(ctx, type="xlsx_no_errors", path="report.xlsx", sheet="Aging")
    assert r.passed
    assert r.detail == ("report.xlsx: 0 of 3 formula cells in sheet 'Aging' evaluate to an "
                        "error")
    r = check(ctx, type="xlsx_no_errors", path="report.xlsx", max_errors=2)
    assert r.passed and r.metrics["errors"] == 2


# --- LibreOffice missing or hanging -----------------------------------------------------


def test_missing_soffice_is_a_grader_error(tmp_path: Path, sqlite_store: EventStore,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    build_report(ws / "report.xlsx")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    ctx = CheckContext(sqlite_store, workspace=ws)
    [spec] = parse_checks([{**VALUE, "expected": 600}])
    with pytest.raises(FileNotFoundError, match="install Debian's libreoffice-calc"):
        run_check(spec, 0, ctx)
    verdict = evaluate([spec], ctx)
    assert verdict.status == "grader_error" and not verdict.accepted
    # the formula view needs no LibreOffice
    assert check(ctx, type="xlsx_has_formulas", path="report.xlsx", min_count=1).passed


def test_a_hanging_conversion_times_out(tmp_path: Path, lo: None) -> None:
    build_report(tmp_path / "in.xlsx")
    with pytest.raises(TimeoutError, match=r"did not recalculate in\.xlsx within 0\.05 s"):
        convert_with_soffice(tmp_path / "in.xlsx", tmp_path / "out", timeout=0.05)


def _wrapped_soffice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """A ``soffice`` ahead of the real one on the PATH running ``script`` (sh) first;
    ``$REAL`` is the real one, ``$CALLS`` a file with a line per call."""
    real = find_soffice()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    wrapper = bin_dir / "soffice"
    wrapper.write_text(f"#!/bin/sh\nREAL='{real}'\nCALLS='{calls}'\necho x >> \"$CALLS\"\n"
                       f"{script}\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return calls


def test_a_conversion_libreoffice_aborted_is_run_again(tmp_path: Path, lo: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """LibreOffice aborted (exit 134) under two graders' load: the check was a grader
    error. It is converted again, with a profile of its own, and the figure read."""
    calls = _wrapped_soffice(tmp_path, monkeypatch, '[ "$(wc -l < "$CALLS")" -gt 1 ] || '
                             'kill -ABRT $$\nexec "$REAL" "$@"')
    build_report(tmp_path / "in.xlsx")
    out = convert_with_soffice(tmp_path / "in.xlsx", tmp_path / "out")
    assert openpyxl.load_workbook(out, data_only=True)["Aging"]["B5"].value == 600
    assert len(calls.read_text().splitlines()) == 2


def test_a_workbook_that_crashes_libreoffice_each_time_is_a_grader_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_soffice()
    calls = _wrapped_soffice(tmp_path, monkeypatch, "kill -SEGV $$")
    build_report(tmp_path / "in.xlsx")
    with pytest.raises(RuntimeError, match=r"failed to recalculate in\.xlsx \(exit -11, "
                                           r"then -11\)"):
        convert_with_soffice(tmp_path / "in.xlsx", tmp_path / "out")
    assert len(calls.read_text().splitlines()) == 1 + CRASH_RETRIES


def test_a_conversion_that_fails_without_a_crash_is_not_run_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_soffice()
    calls = _wrapped_soffice(tmp_path, monkeypatch, "echo 'General Error' >&2; exit 1")
    build_report(tmp_path / "in.xlsx")
    with pytest.raises(RuntimeError, match=r"\(exit 1\): General Error"):
        convert_with_soffice(tmp_path / "in.xlsx", tmp_path / "out")
    assert len(calls.read_text().splitlines()) == 1


# --- the grader's environment -----------------------------------------------------------


def recalculated_values(tmp_path: Path, env: dict[str, str],
                        monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Column A of a workbook whose formulas read text as numbers and dates, format a
    number and take today's date, recalculated with ``env`` in the grader's environment."""
    for name in ("LANG", "LANGUAGE", "LC_ALL", "LC_NUMERIC", "LC_TIME", "LC_CTYPE", "TZ"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    wb = openpyxl.Workbook()
    for row, formula in enumerate(['=VALUE("1.5")', '=DATEVALUE("01/02/2026")',
                                   '=TEXT(1234.5,"#,##0.00")', "=TODAY()"], start=1):
        wb.active.cell(row, 1, formula)
    folder = tmp_path / "-".join(env.values()).replace("/", "_")
    (folder / "in").mkdir(parents=True)
    wb.save(folder / "in" / "w.xlsx")
    out = convert_with_soffice(folder / "in" / "w.xlsx", folder / "out")
    return [c.value for c in openpyxl.load_workbook(out, data_only=True).active["A"]]


def test_the_recalculation_does_not_depend_on_the_graders_locale_or_time_zone(
        tmp_path: Path, lo: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """LibreOffice took the locale and time zone of whoever graded: under de_DE
    ``VALUE("1.5")`` was ``#VALUE!``, under tr_TR a date serial, ``TEXT`` wrote
    ``1.234,50``, and ``TODAY()`` at Kiritimati (UTC+14) and Adak (UTC-10) is never the
    same day. The same workbook must read the same wherever it is graded."""
    plain = recalculated_values(tmp_path, {"TZ": "UTC"}, monkeypatch)
    assert plain[:3] == [1.5, 46024, "1,234.50"]
    for env in ({"LANG": "de_DE.UTF-8", "LC_ALL": "de_DE.UTF-8", "TZ": "Pacific/Kiritimati"},
                {"LANG": "tr_TR.UTF-8", "LC_NUMERIC": "tr_TR.UTF-8", "TZ": "America/Adak"}):
        assert recalculated_values(tmp_path, env, monkeypatch) == plain, env


def test_the_recalculation_works_in_any_folder(tmp_path: Path, lo: None) -> None:
    """LibreOffice URL-decodes a plain ``--outdir``: with the grader's temporary folder
    (``TMPDIR``) or an attempt folder named ``a%20b`` it wrote its copy to ``a b`` and
    every recalculating check was a grader error (a desk task's solution with it)."""
    folder = tmp_path / "runs%201 a ü"
    (folder / "in").mkdir(parents=True)
    build_report(folder / "in" / "report.xlsx")
    out = convert_with_soffice(folder / "in" / "report.xlsx", folder / "out")
    assert out == folder / "out" / "report.xlsx"
    assert openpyxl.load_workbook(out, data_only=True)["Aging"]["B5"].value == 600
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]


# --- the strict validator ---------------------------------------------------------------


def test_validator_bounds_the_tolerance() -> None:
    assert problems({**VALUE, "expected": 1000, "rel_tol": 0.01}) == {
        "checks[0]": "rel_tol 0.01 gives a tolerance of 10 on 1,000, above 1.00; a wider "
                     "tolerance needs rounding: conversion|proration|estimate (and then "
                     "rel_tol at most 0.001)"}
    assert problems({**VALUE, "expected": 1000, "rel_tol": 0.01, "rounding": "estimate"}) == {
        "checks[0]": "with rounding (estimate), rel_tol may be at most 0.001; got 0.01 (a "
                     "tolerance of 10)"}
    ok = parse_checks([{**VALUE, "expected": 100, "rel_tol": 0.01},  # 1.00: the bound
                       {**VALUE, "expected": 2_000_000, "rel_tol": 0.001,
                        "rounding": "conversion"},
                       {**VALUE, "expected": 50, "rel_tol": 0.005, "rounding": "proration"}])
    assert len(ok) == 3
    assert "checks[0]" in problems({**VALUE, "expected": 100.01, "rel_tol": 0.01})


def test_validator_rejects_bad_fields_with_their_paths() -> None:
    got = problems({**VALUE, "expected": "600"},
                   {**VALUE, "expected": 1, "rounding": "guess"},
                   {**VALUE, "expected": 1, "rel_tol": 2},
                   {"type": "xlsx_value_present", "path": "out/aging.csv", "expected": 1},
                   {"type": "xlsx_value_present", "path": "../aging.xlsx", "expected": 1},
                   {**VALUE, "expected": 1, "near_text": "  "},
                   {**VALUE, "expected": 1, "sheet": ""},
                   {"type": "xlsx_has_formulas", "path": "report.xlsx", "min_count": 0},
                   {"type": "xlsx_has_formulas", "path": "report.xlsx"},
                   {"type": "xlsx_no_errors", "path": "report.xlsx", "max_errors": -1},
                   {"type": "xlsx_no_errors", "path": "report.xlsx", "tolerance": 1},
                   {**VALUE, "expected": 1, "raw_value_ok": "yes"})
    assert set(got) == {"checks[0].expected", "checks[1].rounding", "checks[2].rel_tol",
                        "checks[3].path", "checks[4].path", "checks[5].near_text",
                        "checks[6].sheet", "checks[7].min_count", "checks[8].min_count",
                        "checks[9].max_errors", "checks[10].tolerance",
                        "checks[11].raw_value_ok"}
    assert got["checks[3].path"] == "expected the path of an .xlsx or .xlsm workbook"
    assert got["checks[8].min_count"] == "required field of xlsx_has_formulas is missing"
    assert got["checks[10].tolerance"].startswith("unknown field for xlsx_no_errors")
    with pytest.raises(CheckSpecError, match=r"checks\[0\].daily"):
        parse_checks([{**VALUE, "expected": 1, "daily": True}])


# --- xlsx_ref_values: the pins read from the generated reference -------------------------

REF_VALUES = {"type": "xlsx_ref_values", "path": "report.xlsx", "ref": "totals.csv",
              "label_column": "bucket", "value_column": "total"}


def _ref(ctx: CheckContext, text: str) -> None:
    (ctx.reference / "totals.csv").write_text(text, encoding="utf-8")


def test_ref_values_pass_when_every_reference_row_is_near_its_label(ctx: CheckContext,
                                                                     lo: None) -> None:
    _ref(ctx, "bucket,invoices,total\nBeta,1,200.00\nTotal,3,600.00\n")
    r = check(ctx, **REF_VALUES)
    assert r.passed, r.detail
    assert r.detail == "report.xlsx: all 2 figures of totals.csv near their labels"
    assert r.metrics["matched"] == 2


def test_ref_values_fail_on_a_cent_or_a_figure_away_from_its_label(ctx: CheckContext,
                                                                   lo: None) -> None:
    _ref(ctx, "bucket,total\nBeta,200.00\nTotal,600.01\n")  # one cent off: fails
    r = check(ctx, **REF_VALUES)
    assert not r.passed
    assert r.detail == ("report.xlsx: 1/2 figures of totals.csv not found near their labels: "
                        "Total: 600.01 (closest: Aging!B5 = 600, Aging!C5 = 200)")
    _ref(ctx, "bucket,total\nAcme,200.00\n")  # 200 is Beta's, not on Acme's row
    r = check(ctx, **REF_VALUES)
    assert not r.passed and "Acme: 200 (closest: Aging!B2 = 100" in r.detail


def test_ref_values_bad_reference_or_pasted_pin_is_a_grader_error(ctx: CheckContext,
                                                                  lo: None) -> None:
    _ref(ctx, "bucket,amount\nTotal,600.00\n")
    with pytest.raises(ValueError, match=r"reference totals.csv has no column total "
                                         r"\(columns: bucket, amount\)"):
        check(ctx, **REF_VALUES)
    _ref(ctx, "bucket,total\nTotal,six hundred\n")
    with pytest.raises(ValueError, match=r"totals.csv line 2: expected a label in 'bucket' and "
                                         r"a figure in 'total', got 'Total', 'six hundred'"):
        check(ctx, **REF_VALUES)
    _ref(ctx, "bucket,total\n")
    with pytest.raises(ValueError, match=r"reference totals\.csv has no rows"):
        check(ctx, **REF_VALUES)


def test_ref_values_pasted_pin_is_refused(book: tuple[Path, dict[str, Any]],
                                          sqlite_store: EventStore, lo: None) -> None:
    ctx = make_ctx(book, sqlite_store, inputs=("bank_export.csv",))
    _ref(ctx, "bucket,total\nAcme,1240.00\n")
    with pytest.raises(ValueError, match=r"unsafe pin: Acme 1,240 appears in the supplied"):
        check(ctx, **REF_VALUES)
    assert check(ctx, **REF_VALUES, raw_value_ok=True).passed  # "$1,240.00" on Acme's row


def test_ref_values_validator() -> None:
    assert problems({**REF_VALUES, "rel_tol": 0.01}) == {
        "checks[0].rel_tol": "Input should be less than or equal to 0.001"}
    assert set(problems({"type": "xlsx_ref_values", "path": "report.xlsx"})) == {
        "checks[0].ref", "checks[0].label_column", "checks[0].value_column"}


# --- xlsx_table_values: each figure in its row and its column ---------------------------

TABLE = {"type": "xlsx_table_values", "path": "report.xlsx", "ref": "table.csv",
         "key": "customer", "columns": {"amount": "amount", "doubled": "doubled"}}


def _table(ctx: CheckContext, text: str) -> None:
    (ctx.reference / "table.csv").write_text(text, encoding="utf-8")


def test_table_values_pass_row_by_row_under_their_headers(ctx: CheckContext, lo: None) -> None:
    # Doubled is empty on the customers' rows (reads 0.00); C5 is =B2*2 (200) on Total's
    _table(ctx, "customer,amount,doubled\nAcme,100.00,0.00\nBeta,200.00,0\nGamma,300,0.00\n"
                "Total,600.00,200.00\n")
    r = check(ctx, **TABLE)
    assert r.passed, r.detail
    assert r.detail == ("report.xlsx: the 4 rows of table.csv in sheet 'Aging' (headers in "
                        "row 1)")
    _table(ctx, "customer,as_text\nacme,1240.00\nBeta,(30.00)\n")  # text figures, key folded
    assert check(ctx, **{**TABLE, "columns": {"as_text": "As text"}}).passed


def test_table_values_fail_on_a_cent_another_column_or_a_missing_row(ctx: CheckContext,
                                                                     lo: None) -> None:
    _table(ctx, "customer,amount,doubled\nAcme,100.01,0\nBeta,200.00,0\nDelta,5.00,0\n"
                "Total,600.00,0.00\n")
    r = check(ctx, **TABLE)
    assert not r.passed
    assert r.detail == ("report.xlsx: 3 wrong of 4 rows of table.csv in sheet 'Aging': "
                        "Acme amount: Aging!B2 = 100, expected 100.01; Delta: no row; "
                        "Total doubled: Aging!C5 = 200, expected 0.00")
    assert r.metrics["wrong"] == 3
    _table(ctx, "customer,amount\nAcme,100.00\n")
    r = check(ctx, **{**TABLE, "columns": {"amount": "Balance"}})
    assert not r.passed
    assert r.detail == "report.xlsx: no row with headers mentioning 'Balance'"


def _summary_after_accounts(path: Path, summary_cash: float) -> None:
    """An account list first (groups repeated, under the same headers), then the summary
    under a title row that mentions every header in one cell."""
    wb = openpyxl.Workbook()
    accounts = wb.active
    accounts.title = "Accounts"
    accounts.append(["account", "group", "current", "prior", "change"])
    for row in (["1000", "Cash", 60, 50], ["1010", "Cash", 40, 30], ["4000", "Revenue", -90, -70]):
        r = accounts.max_row + 1
        accounts.append([*row, f"=C{r}-D{r}"])
    summary = wb.create_sheet("Summary")
    summary.append(["Summary by group: current vs prior balances and change"])
    summary.append(["Group", "Current", "Prior", "Change"])
    summary.append(["Cash", summary_cash, "=SUMIF(Accounts!B2:B4,A3,Accounts!D2:D4)", "=B3-C3"])
    summary.append(["Revenue", "=SUMIF(Accounts!B2:B4,A4,Accounts!C2:C4)",
                    "=SUMIF(Accounts!B2:B4,A4,Accounts!D2:D4)", "=B4-C4"])
    wb.save(path)


@pytest.mark.parametrize("cash,passed", [(100, True), (100.01, False)])
def test_table_values_find_the_summary_after_an_account_list_and_a_title(
        tmp_path: Path, sqlite_store: EventStore, lo: None, cash: float, passed: bool) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ref").mkdir()
    _summary_after_accounts(tmp_path / "ws" / "package.xlsx", cash)
    (tmp_path / "ref" / "groups.csv").write_text(
        "group,current,prior,change\nCash,100.00,80.00,20.00\nRevenue,-90.00,-70.00,-20.00\n",
        encoding="utf-8")
    c = CheckContext(sqlite_store, workspace=tmp_path / "ws", reference=tmp_path / "ref")
    r = check(c, type="xlsx_table_values", path="package.xlsx", ref="groups.csv", key="group",
              columns={"current": "current", "prior": "prior", "change": "change"})
    assert r.passed is passed, r.detail
    assert "sheet 'Summary'" in r.detail
    if not passed:
        assert "Cash current: Summary!B3 = 100.01, expected 100.00" in r.detail


def test_table_values_text_column_and_bad_reference(ctx: CheckContext, lo: None) -> None:
    _table(ctx, "amount,customer\n100,Acme\n300,Beta\n")
    r = check(ctx, **{**TABLE, "key": "amount", "columns": {"customer": "customer"}})
    assert not r.passed
    assert r.detail.endswith("300 customer: Aging!A4 = 'Gamma', expected Beta")
    _table(ctx, "customer,total\nAcme,1\n")
    with pytest.raises(ValueError, match=r"reference table\.csv has no column amount, "
                                         r"doubled \(columns: customer, total\)"):
        check(ctx, **TABLE)
    _table(ctx, "customer,amount,doubled\n")
    with pytest.raises(ValueError, match=r"reference table\.csv has no rows"):
        check(ctx, **TABLE)
    assert set(problems({"type": "xlsx_table_values", "path": "report.xlsx", "ref": "t.csv",
                         "key": "k", "columns": {}})) == {"checks[0].columns"}


def test_table_values_read_dates_as_iso(ctx: CheckContext, lo: None) -> None:
    from checks.workbook import _as_text

    assert _as_text(datetime.date(2026, 3, 31)) == "2026-03-31"
    assert _as_text(datetime.datetime(2026, 3, 31)) == "2026-03-31"
    assert _as_text(1000.0) == "1000" and _as_text(" Total ") == "total"
    assert _as_text(None) == ""


# --- xlsx_ref_formulas: the reference's figures as live formulas near their labels --------

REF_FORMULAS = {"type": "xlsx_ref_formulas", "path": "report.xlsx", "ref": "totals.csv",
                "label_column": "bucket", "value_column": "total"}


def test_ref_formulas_pass_on_a_live_formula_near_its_label(ctx: CheckContext,
                                                            lo: None) -> None:
    _ref(ctx, "bucket,total\nTotal,600.00\n")  # Aging!B5 = SUM(B2:B4)
    r = check(ctx, **REF_FORMULAS)
    assert r.passed, r.detail
    assert r.detail == ("report.xlsx: all 1 figures of totals.csv are live formulas near "
                        "their labels")


def test_ref_formulas_fail_on_a_typed_figure_whatever_formulas_elsewhere(
        ctx: CheckContext, lo: None) -> None:
    """Beta's 200 is typed on its row (the workbook has live formulas elsewhere: the
    count of xlsx_has_formulas would pass): a typed-in total is refused."""
    _ref(ctx, "bucket,total\nBeta,200.00\nTotal,600.00\n")
    r = check(ctx, **REF_FORMULAS)
    assert not r.passed
    assert r.detail == ("report.xlsx: 1/2 figures of totals.csv not a live formula near their "
                        "labels: Beta: 200 typed in (Aging!B3), not a live formula")
    _ref(ctx, "bucket,total\nTotal,600.01\n")  # a cent off: no cell reads it
    r = check(ctx, **REF_FORMULAS)
    assert not r.passed and "Total: 600.01 not found near its label" in r.detail
    _ref(ctx, "bucket,total\nTotal,1240.00\n")  # =1240 is a constant, not a live formula
    r = check(ctx, **REF_FORMULAS)
    assert not r.passed and "Total: 1,240 typed in (Aging!E5)" in r.detail


def test_ref_formulas_bad_reference_is_a_grader_error(ctx: CheckContext, lo: None) -> None:
    _ref(ctx, "bucket,amount\nTotal,600.00\n")
    with pytest.raises(ValueError, match=r"reference totals.csv has no column total"):
        check(ctx, **REF_FORMULAS)
    _ref(ctx, "bucket,total\n")
    with pytest.raises(ValueError, match=r"reference totals\.csv has no rows"):
        check(ctx, **REF_FORMULAS)
    assert set(problems({"type": "xlsx_ref_formulas", "path": "report.xlsx"})) == {
        "checks[0].ref", "checks[0].label_column", "checks[0].value_column"}
