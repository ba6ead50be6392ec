"""The workbook checks of the methods page: ``xlsx_value_present``, ``xlsx_has_formulas``,
``xlsx_no_errors``.

A workbook is never trusted for its cached values: :func:`recalculated` copies the agent's
file into a private temporary folder, loads it with openpyxl (formulas, not values) and
writes it back, which leaves every formula cell without a cached value (checked in the
written XML, :func:`cached_formula_values`), then has LibreOffice headless recalculate it
(``soffice --headless --norestore --convert-to xlsx``, with a private profile per
conversion, set to recalculate on load, in a fixed locale and time zone whatever the
grader's, and a timeout) and reads the result with
``data_only=True``. The result is cached per sha256 of the agent's bytes in ``ctx.cache``.
Without ``soffice`` on the ``PATH`` the checks that need recalculation raise (a grader
error saying to install Debian's ``libreoffice-calc``); they never pass.
``xlsx_has_formulas`` reads only the formula view and needs no LibreOffice.

Who is at fault decides the outcome, as in ``files.py``: the agent's workbook missing, not
a readable ``.xlsx``, or lacking the named ``sheet`` **fails** with a detail naming the
path; LibreOffice missing, failing or timing out, and an unsafe pin (below) **raise**.

Reading rules:

- A cell is a *figure* (:func:`cell_figure`) when it holds a number (not a boolean, not a
  date, time or duration: openpyxl reads cells with a date format as dates), or text that
  reads as one figure by ``files.parse_number``: ``"$1,240.00"`` is 1240, ``"(30.00)"`` is
  -30, ``"12.5%"`` is **12.5** (the figure as written, as in the CSV checks; a numeric cell
  formatted as a percentage holds 0.125 and reads 0.125). Dates (``"2026-03-31"``), ids
  (``"INV-0042"``, ``"4111 1111 1111 1111"``), digit strings with a leading zero
  (``"0042"``, ``"-0042"``) and numbers joined by a space or a currency symbol (``"12 5"``,
  ``"12€50"``) are not figures, nor are error cells, nor a number beyond a float's range.
- Figures compare signed: ``"(30.00)"`` matches -30, not 30.
- ``near_text`` is found, case-insensitive with whitespace runs collapsed, in the text
  cells (after recalculation) of the figure's row or column, in its sheet; a merged
  cell's text is on every row and column its range spans (a label merged over D1:F1
  heads columns D, E and F).
- ``sheet`` names a sheet exactly, or else case-insensitively (as Excel does).
- A *live* formula (``xlsx_has_formulas``) is a formula cell (each cell of an array
  formula's range counts) whose formula is not a bare constant: ``=1240`` or
  ``=100*1.2`` compute nothing from the workbook and are not counted.
- LibreOffice writes its own errors in Excel's terms; a function it does not know (some
  of Excel's newest, by LibreOffice version) evaluates to ``#NAME?``.

The strict validator (``xlsx_value_present``): the methods page says the tolerance,
``max(expected x rel_tol, 0.01)``, must be "at most 1.00 unless the check sets
rounding: <reason> (conversion, proration, estimate), which allows rel_tol up to 0.001".
Both bounds cannot be on ``rel_tol`` (0.001 < 1.00 would make ``rounding`` tighten, not
allow), so we read "it" as the tolerance: **the tolerance ``max(|expected| x rel_tol,
0.01)`` may be at most 1.00 (one currency unit); above that the check must set
``rounding`` and then ``rel_tol`` may be at most 0.001**. ``rel_tol`` is within [0, 1]
in any case. The floor here is half a cent, not the page's 0.01: a figure is read **to
the cent** (issue 14: a pin that accepts a figure one cent off does not check the cent),
so the tolerance is ``max(|expected| x rel_tol, 0.005)``.

``raw_value_ok``: the page's validator "rejects pins an agent could satisfy by pasting
the export". A spec cannot see the task's files when it is parsed, so the rule runs when
the check does: unless ``raw_value_ok: true``, if a figure within the check's tolerance
of ``expected`` (by magnitude: pasting and flipping a sign is still pasting) appears in
one of the supplied input files (``ctx.inputs``: CSV/TSV cells, workbook cells as
supplied, or whitespace-separated tokens of other UTF-8 text, each read as a figure by
the rules above), the check raises: the pin is unsafe. The inputs are read from the
workspace; one the agent removed is not seen, so the task's validation run on the
untouched workspace is where an unsafe pin shows. With no ``ctx.inputs`` the rule
cannot apply.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import io
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from xml.etree import ElementTree

from pydantic import ConfigDict, Field, field_validator, model_validator

from checks.context import CheckContext
from checks.errors import Unusable
from checks.files import (
    SHOW,
    Column,
    Phrase,
    RefPath,
    _failing,
    _fold,
    _listing,
    _result,
    decode,
    file_path,
    parse_number,
    reference_csv,
    workspace_file,
)
from checks.registry import CheckResult, FileCheckSpec, check_type

#: The suffixes a workbook path may have.
WORKBOOK_SUFFIXES = (".xlsx", ".xlsm")

#: Seconds one LibreOffice conversion may take before it is killed (a grader error).
RECALC_TIMEOUT = 180.0

#: The largest tolerance a pin may have without ``rounding``.
MAX_TOLERANCE = 1.00
#: The floor of a pin's tolerance: half a cent, so that a figure is read to the cent (one
#: cent off fails; a formula's unrounded 10.1249999 for 10.12 passes).
CENT_TOLERANCE = 0.005
#: The largest ``rel_tol`` a pin with ``rounding`` may have when its tolerance exceeds
#: :data:`MAX_TOLERANCE`.
ROUNDING_MAX_REL_TOL = 0.001

Rounding = Literal["conversion", "proration", "estimate"]

#: The error values a formula cell can evaluate to.
EXCEL_ERRORS = ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A")

_INSTALL_HINT = ("LibreOffice is needed to recalculate workbooks: install Debian's "
                 "libreoffice-calc (apt-get install -y --no-install-recommends "
                 "libreoffice-calc) so that `soffice` is on the PATH")


# --- spec models ------------------------------------------------------------------------


def workbook_path(value: str) -> str:
    """A relative path to one ``.xlsx`` / ``.xlsm`` file of the workspace."""
    file_path(value)
    if not value.lower().endswith(WORKBOOK_SUFFIXES):
        raise ValueError("expected the path of an .xlsx or .xlsm workbook")
    return value


class _WorkbookSpec(FileCheckSpec):
    """A check on one workbook, optionally on one ``sheet``. Strict, no unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    sheet: str | None = Field(default=None, min_length=1, max_length=31)

    @field_validator("path")
    @classmethod
    def _workbook(cls, v: str) -> str:
        return workbook_path(v)


class XlsxValuePresent(_WorkbookSpec):
    """Some cell reads ``expected`` after recalculation, optionally near ``near_text``.

    Tolerance: ``max(|expected| x rel_tol, 0.005)`` (to the cent). The validator allows a tolerance
    above 1.00 only with ``rounding`` (``conversion``, ``proration``, ``estimate``), and
    then ``rel_tol`` at most 0.001. Unless ``raw_value_ok``, the figure must not appear in
    a supplied input (checked when the check runs; see the module docstring).
    """

    type: Literal["xlsx_value_present"]
    expected: float = Field(allow_inf_nan=False)
    rel_tol: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    near_text: Phrase | None = None
    rounding: Rounding | None = None
    raw_value_ok: bool = False

    @property
    def tolerance(self) -> float:
        """``max(|expected| x rel_tol, 0.005)``."""
        return tolerance(self.expected, self.rel_tol)

    @model_validator(mode="after")
    def _bounded(self) -> XlsxValuePresent:
        tol = self.tolerance
        if tol <= MAX_TOLERANCE + 1e-12:
            return self
        if self.rounding is None:
            raise ValueError(f"rel_tol {self.rel_tol} gives a tolerance of {_number(tol)} on "
                             f"{_number(self.expected)}, above {MAX_TOLERANCE:.2f}; a wider "
                             f"tolerance needs rounding: conversion|proration|estimate (and "
                             f"then rel_tol at most {ROUNDING_MAX_REL_TOL})")
        if self.rel_tol > ROUNDING_MAX_REL_TOL + 1e-15:
            raise ValueError(f"with rounding ({self.rounding}), rel_tol may be at most "
                             f"{ROUNDING_MAX_REL_TOL}; got {self.rel_tol} (a tolerance of "
                             f"{_number(tol)})")
        return self


class XlsxRefValues(_WorkbookSpec):
    """Every row of the reference CSV ``ref``: a cell on a row or column mentioning the
    row's ``label_column`` reads the row's ``value_column`` (after recalculation), to the cent.

    The figures come from the generated reference, not typed into the task: the pins of
    :class:`XlsxValuePresent`, one per reference row, with the same tolerance
    (``max(|value| x rel_tol, 0.005)``), the same bound on it, and the same pin-safety
    rule unless ``raw_value_ok``.
    """

    type: Literal["xlsx_ref_values"]
    ref: RefPath
    label_column: Column
    value_column: Column
    rel_tol: float = Field(default=0.0, ge=0.0, le=ROUNDING_MAX_REL_TOL, allow_inf_nan=False)
    raw_value_ok: bool = False


class XlsxRefFormulas(_WorkbookSpec):
    """Every row of the reference CSV ``ref``: a cell on a row or column mentioning the
    row's ``label_column`` reads the row's ``value_column`` (after recalculation, to the
    cent, as :class:`XlsxRefValues` finds it) **and holds a live formula** there: the
    figures a prompt asks for as live formulas are not typed in, whatever formulas the
    rest of the workbook holds (``xlsx_has_formulas`` counts formulas anywhere).
    """

    type: Literal["xlsx_ref_formulas"]
    ref: RefPath
    label_column: Column
    value_column: Column
    rel_tol: float = Field(default=0.0, ge=0.0, le=ROUNDING_MAX_REL_TOL, allow_inf_nan=False)


class XlsxTableValues(_WorkbookSpec):
    """The reference CSV ``ref`` laid out as a table of the sheet: for every reference row,
    the sheet row whose cell reads the row's ``key`` holds, in the column whose header
    mentions ``columns[c]`` (one header row above the data, case-insensitive), the row's
    value of ``c``: figures to the cent (an empty cell reads 0.00), other values as text
    (case-insensitive; a whole number reads as its digits, a date as YYYY-MM-DD). The key
    is looked up in the column below the headers that holds the most of the reference's
    keys once each; without ``sheet``, the table is the sheet with the headers whose key
    column holds the most (an account list repeating its groups under the same headers is
    not the summary). Each header in its own cell: a title mentioning them all is not the
    header row.

    Each figure is tied to its row and its column, not only to a label: a total pointed
    at the wrong range, a debit in the credit column, another row's figure all fail. No
    pin-safety rule: a supplied figure in the right cell is the right figure.
    """

    type: Literal["xlsx_table_values"]
    ref: RefPath
    key: Column
    columns: dict[Column, Phrase] = Field(min_length=1)


class XlsxHasFormulas(_WorkbookSpec):
    """At least ``min_count`` cells hold live formulas (the formula view, not values)."""

    type: Literal["xlsx_has_formulas"]
    min_count: int = Field(ge=1)


class XlsxNoErrors(_WorkbookSpec):
    """After recalculation at most ``max_errors`` formula cells evaluate to an Excel error."""

    type: Literal["xlsx_no_errors"]
    max_errors: int = Field(default=0, ge=0)


RECALCULATING = (XlsxValuePresent, XlsxRefValues, XlsxRefFormulas, XlsxTableValues,
                 XlsxNoErrors)
"""The workbook checks that read values after LibreOffice recalculates (they need
``soffice``); ``xlsx_has_formulas`` reads the formulas as written."""


def tolerance(expected: float, rel_tol: float) -> float:
    """The tolerance of a pin: ``max(|expected| x rel_tol, 0.005)``: to the cent (a figure
    that rounds to the expected cent) unless ``rel_tol`` allows more."""
    return max(abs(expected) * rel_tol, CENT_TOLERANCE)


# --- the workbook views -----------------------------------------------------------------


Cell = tuple[int, int]


@dataclass(frozen=True)
class Sheet:
    """One sheet: its formulas (formula view), and its values after recalculation.

    ``values`` holds every non-empty cell's value (``None`` when only the formula view
    was read); ``errors`` the cells whose value is an Excel error; ``merged`` the merged
    ranges as ``(min_row, min_col, max_row, max_col)``.
    """

    title: str
    formulas: dict[Cell, str]
    values: dict[Cell, Any] | None = None
    errors: dict[Cell, str] | None = None
    merged: tuple[tuple[int, int, int, int], ...] = ()


def cell_name(sheet: str, cell: Cell) -> str:
    """``Sheet!B5`` (the sheet name quoted when it needs to be, as Excel writes it)."""
    from openpyxl.utils import get_column_letter

    title = sheet if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", sheet) else (
        "'" + sheet.replace("'", "''") + "'")
    return f"{title}!{get_column_letter(cell[1])}{cell[0]}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _load(data: bytes, rel: str, *, data_only: bool) -> Any:
    """An openpyxl workbook from bytes; :class:`Unusable` when it is not a readable one."""
    import openpyxl

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unsupported extensions, print settings, ...
            return openpyxl.load_workbook(io.BytesIO(data), data_only=data_only)
    except Exception as e:
        raise Unusable(f"{rel}: not a readable .xlsx workbook ({type(e).__name__}: "
                       f"{str(e)[:200]})") from None


def _formula_cells(ws: Any) -> dict[Cell, str]:
    """Every formula cell of a worksheet with its formula (array ranges expanded)."""
    from openpyxl.utils.cell import range_boundaries
    from openpyxl.worksheet.formula import ArrayFormula, DataTableFormula

    out: dict[Cell, str] = {}
    for row in ws.iter_rows():
        for c in row:
            v = c.value
            if isinstance(v, ArrayFormula | DataTableFormula):
                text = v.text if isinstance(v, ArrayFormula) else "TABLE()"
                text = text if (text or "").startswith("=") else f"={text or ''}"
                try:
                    min_col, min_row, max_col, max_row = range_boundaries(v.ref)
                except (TypeError, ValueError):
                    min_col, min_row, max_col, max_row = c.column, c.row, c.column, c.row
                for r in range(min_row, max_row + 1):
                    for col in range(min_col, max_col + 1):
                        out[(r, col)] = text
            elif c.data_type == "f" and isinstance(v, str):
                out[(c.row, c.column)] = v
    return out


def _workbook_bytes(ctx: CheckContext, rel: str) -> bytes:
    return workspace_file(ctx, rel).read_bytes()


def formula_view(ctx: CheckContext, rel: str) -> list[Sheet]:
    """The agent's workbook as written: each sheet's formula cells (cached per sha256)."""
    data = _workbook_bytes(ctx, rel)
    key = f"xlsx-formulas:{_sha256(data)}"
    if key not in ctx.cache:
        wb = _load(data, rel, data_only=False)
        ctx.cache[key] = [Sheet(ws.title, _formula_cells(ws)) for ws in wb.worksheets]
    return list(ctx.cache[key])


def find_soffice() -> str:
    """The ``soffice`` executable; ``FileNotFoundError`` (a grader error) when absent."""
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if exe is None:
        raise FileNotFoundError(_INSTALL_HINT)
    return exe


_MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def cached_formula_values(path: Path) -> list[str]:
    """Cells of the workbook at ``path`` whose formula carries a cached value.

    Reads the sheets' XML directly: a ``<c>`` with an ``<f>`` and a non-empty ``<v>``.
    """
    found: list[str] = []
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if not (name.startswith("xl/worksheets/") and name.endswith(".xml")):
                continue
            with z.open(name) as f:
                for _, el in ElementTree.iterparse(f):
                    if el.tag == f"{_MAIN_NS}c":
                        v = el.find(f"{_MAIN_NS}v")
                        if el.find(f"{_MAIN_NS}f") is not None and v is not None and (
                                v.text or "").strip():
                            found.append(f"{name}:{el.get('r')}")
                        el.clear()
    return found


_RECALC_SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode"
 oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode"
 oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""


RECALC_LOCALE = "C.UTF-8"
"""The locale LibreOffice recalculates in (its en-US: ``.`` decimals, ``,`` thousands,
month-first dates), whatever the grader's."""
RECALC_TZ = "UTC"
"""The time zone LibreOffice recalculates in (``TODAY()``, ``NOW()``)."""


def recalculation_env() -> dict[str, str]:
    """The grader's environment without its locale and time zone, which LibreOffice reads
    (``VALUE("1.5")`` is ``#VALUE!`` under de_DE and a date under tr_TR, ``TEXT``
    writes ``1.234,50``): a workbook recalculates the same wherever it is graded."""
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("LC_") or k in ("LANG", "LANGUAGE", "TZ"))}
    return {**env, "LANG": RECALC_LOCALE, "LC_ALL": RECALC_LOCALE, "TZ": RECALC_TZ}


CRASH_RETRIES = 1
"""Times a conversion is run again, with a fresh profile, after LibreOffice died of a
signal (an abort under load: exit 134 was seen with two graders converting at once).
A workbook that crashes it every time is still a grader error, naming each exit."""


def convert_with_soffice(src: Path, outdir: Path, *, timeout: float = RECALC_TIMEOUT) -> Path:
    """Have LibreOffice headless load ``src`` (recalculating) and write it to ``outdir``.

    A private profile (``-env:UserInstallation``) under ``outdir``'s parent, set to
    recalculate every formula on load, keeps parallel conversions apart. A LibreOffice
    killed by a signal is run again (:data:`CRASH_RETRIES`). Raises on a missing
    ``soffice``, a timeout (the process group is killed) or no output.
    """
    exe = find_soffice()
    exits: list[int] = []
    for attempt in range(CRASH_RETRIES + 1):
        proc, out, err = _soffice_once(exe, src, outdir, attempt, timeout)
        result = outdir / (src.stem + ".xlsx")
        if proc.returncode == 0 and result.is_file():
            return result
        exits.append(proc.returncode)
        if not _died_of_signal(proc.returncode):
            break
    tail = (err or out).decode("utf-8", "replace").strip()[-500:]
    raise RuntimeError(f"LibreOffice failed to recalculate {src.name} (exit "
                       f"{', then '.join(str(x) for x in exits)}): {tail or 'no output'}")


def _died_of_signal(returncode: int) -> bool:
    """Whether a process ended by a signal (negative, or 128 + the signal as a shell or
    LibreOffice's own launcher reports it)."""
    return returncode < 0 or 128 < returncode < 160


def _soffice_once(exe: str, src: Path, outdir: Path, attempt: int,
                  timeout: float) -> tuple[subprocess.Popen[bytes], bytes, bytes]:
    """One LibreOffice conversion of ``src`` into ``outdir`` with a profile of its own
    (``lo-profile`` beside ``outdir``, a new one for each attempt)."""
    work = outdir.parent
    profile = work / ("lo-profile" if attempt == 0 else f"lo-profile-{attempt}")
    (profile / "user").mkdir(parents=True, exist_ok=True)
    (profile / "user" / "registrymodifications.xcu").write_text(_RECALC_SETTINGS,
                                                                encoding="utf-8")
    outdir.mkdir(parents=True, exist_ok=True)
    env = {**recalculation_env(), "HOME": str(work)}
    cmd = [exe, f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore",
           "--nologo", "--nolockcheck", "--convert-to", "xlsx",
           # as file URLs: LibreOffice URL-decodes a plain --outdir ('a%20b' is 'a b')
           "--outdir", outdir.resolve().as_uri(), src.resolve().as_uri()]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=work,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # soffice forks: end its whole group
        proc.communicate()
        raise TimeoutError(f"LibreOffice did not recalculate {src.name} within {timeout:g} s"
                           ) from None
    return proc, out, err


def _recalculated_sheets(data: bytes, rel: str, timeout: float) -> list[Sheet]:
    wb = _load(data, rel, data_only=False)
    formulas = {ws.title: _formula_cells(ws) for ws in wb.worksheets}
    with tempfile.TemporaryDirectory(prefix="erpsim-recalc-") as tmp:
        src = Path(tmp) / "in" / "workbook.xlsx"
        src.parent.mkdir()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                wb.save(src)
        except Exception as e:  # openpyxl cannot write back what it read: the file's fault
            raise Unusable(f"{rel}: cannot be rewritten without its cached values "
                           f"({type(e).__name__}: {str(e)[:200]})") from None
        stale = cached_formula_values(src)
        if stale:  # openpyxl never writes cached values; if one ever does, do not trust it
            raise RuntimeError(f"cached formula values survived stripping: {stale[:SHOW]}")
        out = convert_with_soffice(src, Path(tmp) / "out", timeout=timeout)
        try:
            calc = _load(out.read_bytes(), rel, data_only=True)
        except Unusable as e:  # LibreOffice's own output: the instrument's problem
            raise RuntimeError(f"LibreOffice's recalculated copy is unreadable: {e}") from None
    sheets: list[Sheet] = []
    for ws in calc.worksheets:
        values: dict[Cell, Any] = {}
        errors: dict[Cell, str] = {}
        for row in ws.iter_rows():
            for c in row:
                if c.value is None or c.value == "":
                    continue
                if c.data_type == "e":
                    errors[(c.row, c.column)] = str(c.value)
                else:
                    values[(c.row, c.column)] = c.value
        merged = tuple((m.min_row, m.min_col, m.max_row, m.max_col)
                       for m in ws.merged_cells.ranges)
        sheets.append(Sheet(ws.title, formulas.get(ws.title, {}), values, errors, merged))
    return sheets


def recalculated(ctx: CheckContext, rel: str, *, timeout: float = RECALC_TIMEOUT
                 ) -> list[Sheet]:
    """The agent's workbook recalculated by LibreOffice (cached per sha256 in ``ctx.cache``).

    :class:`Unusable` when the file is missing or not a workbook; raises when LibreOffice
    is missing or fails (a grader error).
    """
    data = _workbook_bytes(ctx, rel)
    key = f"xlsx-recalculated:{_sha256(data)}"
    if key not in ctx.cache:  # the agent's file is judged first: garbage fails, then a
        ctx.cache[key] = _recalculated_sheets(data, rel, timeout)  # missing soffice raises
    return list(ctx.cache[key])


def select_sheets(sheets: Sequence[Sheet], name: str | None, rel: str) -> list[Sheet]:
    """All sheets, or the one named (exactly, else case-insensitively); else :class:`Unusable`."""
    if name is None:
        return list(sheets)
    for wanted in (lambda s: s.title == name, lambda s: s.title.casefold() == name.casefold()):
        hit = [s for s in sheets if wanted(s)]
        if hit:
            return hit[:1]
    titles = ", ".join(repr(s.title) for s in sheets)
    raise Unusable(f"{rel}: no sheet {name!r} (sheets: {titles})")


# --- figures ------------------------------------------------------------------------------

#: A digit string with a leading zero (``0042``, ``-0042``, ``(\u2212 0042)``): an id, whatever
#: sign, bracket, currency symbol or space is written before it.
_ID_LIKE = re.compile(r"^[\s(+\-\u2212\u2012\u2013\ufe63\uff0d$€£¥]*0\d")


def cell_figure(value: Any) -> float | None:
    """A cell's value read as one figure, or None (see the module's reading rules)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            x = float(value)
        except OverflowError:  # an int beyond any float: no figure
            return None
        return x if math.isfinite(x) else None
    if isinstance(value, str):
        text = value.strip()
        if not text or _ID_LIKE.match(text):
            return None
        d = parse_number(text)
        return None if d is None else float(d)
    return None  # dates, times, durations, errors, rich objects


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float) and value.is_integer():
        return f"{value:,.0f}" if abs(value) < 1e15 else repr(value)
    if isinstance(value, float):
        return f"{value:,.10g}" if abs(value) < 1000 else f"{value:,.6f}".rstrip("0").rstrip(".")
    return str(value)


def _number(x: float) -> str:
    return f"{x:,.10g}" if abs(x) < 1e6 else f"{x:,.4f}".rstrip("0").rstrip(".")


def _mentions(sheet: Sheet, text: str) -> tuple[set[int], set[int]]:
    """The rows and columns of ``sheet`` with a text cell mentioning ``text``; a merged
    cell's text mentions it on every row and column the merged range spans."""
    want = _fold(text)
    spans = {(r0, c0): (r1, c1) for r0, c0, r1, c1 in sheet.merged}
    rows: set[int] = set()
    cols: set[int] = set()
    for (r, c), v in (sheet.values or {}).items():
        if isinstance(v, str) and want in _fold(v):
            r1, c1 = spans.get((r, c), (r, c))
            rows.update(range(r, r1 + 1))
            cols.update(range(c, c1 + 1))
    return rows, cols


# --- raw inputs: the pin-safety rule -----------------------------------------------------


def _input_figures(ctx: CheckContext, rel: str) -> list[tuple[str, float, str]]:
    """``(where, figure, as written)`` for every figure of one supplied input file."""
    key = f"input-figures:{rel}"
    if key in ctx.cache:
        return list(ctx.cache[key])
    out: list[tuple[str, float, str]] = []
    try:
        path: Path | None = workspace_file(ctx, rel)
    except Unusable:  # removed, replaced by a directory or a link out: nothing to read
        path = None
    if path is not None:
        data = path.read_bytes()
        if rel.lower().endswith(WORKBOOK_SUFFIXES):
            try:
                wb = _load(data, rel, data_only=True)
            except Unusable:
                wb = None
            for ws in wb.worksheets if wb is not None else []:
                for row in ws.iter_rows():
                    for c in row:
                        x = cell_figure(c.value) if c.data_type != "e" else None
                        if x is not None:
                            out.append((f"{rel} {cell_name(ws.title, (c.row, c.column))}", x,
                                        _shown(c.value)))
        else:
            out = _text_figures(data, rel)
    ctx.cache[key] = out
    return list(out)


def _text_figures(data: bytes, rel: str) -> list[tuple[str, float, str]]:
    try:
        text = decode(data, rel)
    except Unusable:
        return []  # not text: nothing an agent could paste as figures from it
    out: list[tuple[str, float, str]] = []
    if rel.lower().endswith((".csv", ".tsv")):
        delimiter = "\t" if rel.lower().endswith(".tsv") else ","
        try:
            reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
            for row in reader:
                for cell in row:
                    x = cell_figure(cell)
                    if x is not None:
                        out.append((f"{rel} line {reader.line_num}", x, repr(cell.strip())))
            return out
        except csv.Error:
            out = []  # garbled: read it as plain text
    for n, line in enumerate(text.splitlines(), 1):
        for token in line.split():
            token = token.strip(".,;:!?\"'[]{}")
            x = cell_figure(token)
            if x is not None:
                out.append((f"{rel} line {n}", x, repr(token)))
    return out


def unsafe_pin(ctx: CheckContext, expected: float, tol: float) -> list[str]:
    """Where a figure within ``tol`` of ``expected`` (by magnitude) appears in the inputs."""
    hits: list[str] = []
    for rel in ctx.inputs:
        for where, x, written in _input_figures(ctx, rel):
            if abs(abs(x) - abs(expected)) <= tol + 1e-9:
                hits.append(f"{where}: {written}")
    return hits


# --- the checks -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    distance: float
    near: bool
    where: str
    value: Any

    def shown(self) -> str:
        return f"{self.where} = {_shown(self.value)}"


def _candidates(sheets: Iterable[Sheet], expected: float, near_text: str | None
                ) -> Iterator[_Candidate]:
    for sheet in sheets:
        rows, cols = _mentions(sheet, near_text) if near_text else (set(), set())
        for cell, v in sorted((sheet.values or {}).items()):
            x = cell_figure(v)
            if x is None:
                continue
            near = near_text is None or cell[0] in rows or cell[1] in cols
            yield _Candidate(abs(x - expected), near, cell_name(sheet.title, cell), v)


@check_type(XlsxValuePresent)
@_failing
def xlsx_value_present(spec: XlsxValuePresent, ctx: CheckContext) -> CheckResult:
    """Pass when a figure cell (after recalculation) is within tolerance of ``expected``."""
    tol = spec.tolerance
    if not spec.raw_value_ok:
        pinned = unsafe_pin(ctx, spec.expected, tol)
        if pinned:
            raise ValueError(f"unsafe pin: {_number(spec.expected)} (± {_number(tol)}) appears "
                             f"in the supplied inputs, so pasting the export would satisfy "
                             f"it; " + _listing("found", pinned) + "; pin a derived figure, or "
                             "set raw_value_ok: true if the figure legitimately appears in "
                             "the raw inputs")
    sheets = select_sheets(recalculated(ctx, spec.path), spec.sheet, spec.path)
    found = list(_candidates(sheets, spec.expected, spec.near_text))
    within = [c for c in found if c.distance <= tol + 1e-9]
    hits = [c for c in within if c.near]
    want = f"{_number(spec.expected)} ± {_number(tol)}"
    where = f" in sheet {sheets[0].title!r}" if spec.sheet is not None else ""
    near = f" on a row or column mentioning {spec.near_text!r}" if spec.near_text else ""
    metrics: dict[str, Any] = {"expected": spec.expected, "tolerance": tol,
                               "figures": len(found), "matches": len(hits)}
    if hits:
        first = hits[0]
        metrics.update(found_at=first.where, value=cell_figure(first.value))
        more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
        return _result(True, f"{spec.path}: {first.shown()} matches {want}{near}{more}",
                       **metrics)
    detail = f"{spec.path}: no cell reads {want}{near}{where}"
    if not found:
        detail += " (no figure cells at all)"
    off = [c for c in within if not c.near]
    if off:
        detail += ("; within tolerance but not near the text: "
                   + ", ".join(c.shown() for c in off[:SHOW]))
    pool = [c for c in found if c.near] or found
    closest = sorted(pool, key=lambda c: c.distance)[:SHOW]
    if closest:
        detail += "; closest: " + ", ".join(c.shown() for c in closest)
        metrics["closest_distance"] = closest[0].distance
    return _result(False, detail, **metrics)


def _labelled_figures(ctx: CheckContext, ref_path: str, label_column: str,
                      value_column: str) -> list[tuple[str, float]]:
    """Each row of the reference ``ref_path``: its label and its figure (``ValueError``,
    a grader error, naming a missing column, a row without both, or no rows)."""
    ref = reference_csv(ctx, ref_path)
    names = (label_column, value_column)
    missing_cols = [c for c in names if c not in ref.header]
    if missing_cols:
        raise ValueError(f"reference {ref_path} has no column {', '.join(missing_cols)} "
                         f"(columns: {', '.join(ref.header)})")
    li, vi = ref.header.index(label_column), ref.header.index(value_column)
    wanted: list[tuple[str, float]] = []
    for n, row in enumerate(ref.rows, 2):
        label, figure = row[li].strip(), parse_number(row[vi])
        if not label or figure is None:
            raise ValueError(f"reference {ref_path} line {n}: expected a label in "
                             f"{label_column!r} and a figure in {value_column!r}, got "
                             f"{row[li]!r}, {row[vi]!r}")
        wanted.append((label, float(figure)))
    if not wanted:
        raise ValueError(f"reference {ref_path} has no rows")
    return wanted


@check_type(XlsxRefValues)
@_failing
def xlsx_ref_values(spec: XlsxRefValues, ctx: CheckContext) -> CheckResult:
    """Pass when every reference row's figure is in a cell near the row's label."""
    wanted = _labelled_figures(ctx, spec.ref, spec.label_column, spec.value_column)
    if not spec.raw_value_ok:
        for label, x in wanted:
            pinned = unsafe_pin(ctx, x, tolerance(x, spec.rel_tol))
            if pinned:
                raise ValueError(f"unsafe pin: {label} {_number(x)} appears in the supplied "
                                 f"inputs, so pasting the export would satisfy it; "
                                 + _listing("found", pinned) + "; set raw_value_ok: true if "
                                 "the figure legitimately appears in the raw inputs")
    sheets = select_sheets(recalculated(ctx, spec.path), spec.sheet, spec.path)
    wrong: list[str] = []
    for label, x in wanted:
        tol = tolerance(x, spec.rel_tol)
        found = [c for c in _candidates(sheets, x, label) if c.near]
        if any(c.distance <= tol + 1e-9 for c in found):
            continue
        closest = sorted(found, key=lambda c: c.distance)[:2]
        shown = ", ".join(c.shown() for c in closest) or "no figure near it"
        wrong.append(f"{label}: {_number(x)} (closest: {shown})")
    passed = not wrong
    detail = (f"{spec.path}: all {len(wanted)} figures of {spec.ref} near their labels"
              if passed else f"{spec.path}: {len(wrong)}/{len(wanted)} figures of {spec.ref} "
              f"not found near their labels: " + "; ".join(wrong[:SHOW]))
    return _result(passed, detail, expected=len(wanted), matched=len(wanted) - len(wrong))


@check_type(XlsxRefFormulas)
@_failing
def xlsx_ref_formulas(spec: XlsxRefFormulas, ctx: CheckContext) -> CheckResult:
    """Pass when every reference row's figure is in a live formula cell near its label."""
    wanted = _labelled_figures(ctx, spec.ref, spec.label_column, spec.value_column)
    sheets = select_sheets(recalculated(ctx, spec.path), spec.sheet, spec.path)
    wrong: list[str] = []
    for label, x in wanted:
        tol = tolerance(x, spec.rel_tol) + 1e-9
        typed: list[str] = []
        live = False
        for sheet in sheets:
            rows, cols = _mentions(sheet, label)
            for cell, v in sorted((sheet.values or {}).items()):
                if cell[0] not in rows and cell[1] not in cols:
                    continue
                fig = cell_figure(v)
                if fig is None or abs(fig - x) > tol:
                    continue
                formula = sheet.formulas.get(cell)
                if formula is not None and is_live_formula(formula):
                    live = True
                    break
                typed.append(cell_name(sheet.title, cell))
            if live:
                break
        if not live:
            wrong.append(f"{label}: {_number(x)} " + (
                f"typed in ({', '.join(typed[:SHOW])}), not a live formula" if typed
                else "not found near its label"))
    passed = not wrong
    detail = (f"{spec.path}: all {len(wanted)} figures of {spec.ref} are live formulas near "
              f"their labels" if passed else
              f"{spec.path}: {len(wrong)}/{len(wanted)} figures of {spec.ref} not a live "
              f"formula near their labels: " + "; ".join(wrong[:SHOW]))
    return _result(passed, detail, expected=len(wanted), matched=len(wanted) - len(wrong))


def _as_text(value: Any) -> str:
    """A cell's value compared as text: a whole number as its digits, a date (or a date
    and midnight) as YYYY-MM-DD, text folded."""
    if isinstance(value, datetime.datetime) and value.time() == datetime.time(0):
        return value.date().isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bool):
        return str(value).casefold()
    if isinstance(value, (int, float)) and math.isfinite(value) and float(value).is_integer():
        return str(int(value))
    return _fold(str(value)).strip() if value is not None else ""


def _header_row(sheet: Sheet, phrases: Sequence[str]) -> tuple[int, dict[str, int]] | None:
    """The first row with a text cell mentioning each phrase, each in its own cell, and each
    phrase's column. A title mentioning them all in one cell ("current vs prior and
    change") is no header row."""
    by_row: dict[int, list[tuple[int, str]]] = {}
    for (r, c), v in (sheet.values or {}).items():
        if isinstance(v, str):
            by_row.setdefault(r, []).append((c, _fold(v)))
    for r in sorted(by_row):
        cells = sorted(by_row[r])
        cols: dict[str, int] = {}
        for ph in phrases:
            hit = next((c for c, text in cells
                        if _fold(ph) in text and c not in cols.values()), None)
            if hit is None:
                break
            cols[ph] = hit
        else:
            return r, cols
    return None


def _once(keys: set[str], rows: dict[str, list[int]]) -> int:
    """How many of ``keys`` a column holds on exactly one row: the table's key column holds
    each key once; an account list's group column repeats its groups."""
    return sum(1 for k in keys if len(set(rows.get(k, []))) == 1)


@check_type(XlsxTableValues)
@_failing
def xlsx_table_values(spec: XlsxTableValues, ctx: CheckContext) -> CheckResult:
    """Pass when every reference row's values sit in its sheet row, under their headers."""
    ref = reference_csv(ctx, spec.ref)
    lacking = [c for c in (spec.key, *spec.columns) if c not in ref.header]
    if lacking:
        raise ValueError(f"reference {spec.ref} has no column {', '.join(lacking)} "
                         f"(columns: {', '.join(ref.header)})")
    if not ref.rows:
        raise ValueError(f"reference {spec.ref} has no rows")
    k = ref.header.index(spec.key)
    sheets = select_sheets(recalculated(ctx, spec.path), spec.sheet, spec.path)
    phrases = list(spec.columns.values())
    keys = {_as_text(row[k].strip()) for row in ref.rows}
    # per sheet with the headers, its key column: the column below the headers holding the
    # most of the reference's keys; the sheet whose key column holds the most is the table
    tables: list[tuple[int, Sheet, int, dict[str, int], dict[str, list[int]]]] = []
    for sh in sheets:
        h = _header_row(sh, phrases)
        if h is None:
            continue
        by_col: dict[int, dict[str, list[int]]] = {}
        for (r, c), v in sorted((sh.values or {}).items()):
            if r > h[0]:
                by_col.setdefault(c, {}).setdefault(_as_text(v), []).append(r)
        col = max(sorted(by_col), key=lambda c: _once(keys, by_col[c]), default=None)
        rows = by_col[col] if col is not None else {}
        tables.append((_once(keys, rows), sh, h[0], h[1], rows))
    if not tables:
        shown = ", ".join(repr(p) for p in phrases)
        return _result(False, f"{spec.path}: no row with headers mentioning {shown}",
                       expected=len(ref.rows), wrong=len(ref.rows))
    _, sheet, head, head_cols, rows_by_key = max(tables, key=lambda t: t[0])
    wrong: list[str] = []
    for row in ref.rows:
        key = row[k].strip()
        at = sorted(set(rows_by_key.get(_as_text(key), [])))
        if not at:
            wrong.append(f"{key}: no row")
            continue
        if len(at) > 1:
            wrong.append(f"{key}: {len(at)} rows ({', '.join(str(r) for r in at)})")
            continue
        for name, phrase in spec.columns.items():
            want_text = row[ref.header.index(name)].strip()
            cell = (at[0], head_cols[phrase])
            have = (sheet.values or {}).get(cell)
            want = parse_number(want_text)
            if want is not None:
                x = cell_figure(have) if have not in (None, "") else 0.0
                ok = x is not None and abs(x - float(want)) <= CENT_TOLERANCE + 1e-9
            else:
                ok = _as_text(have) == _as_text(want_text)
            if not ok:
                wrong.append(f"{key} {name}: {cell_name(sheet.title, cell)} = {_shown(have)}, "
                             f"expected {want_text}")
    n = len(ref.rows)
    if wrong:
        return _result(False, f"{spec.path}: {len(wrong)} wrong of {n} rows of {spec.ref} in "
                              f"sheet {sheet.title!r}: " + "; ".join(wrong[:SHOW]),
                       expected=n, wrong=len(wrong))
    return _result(True, f"{spec.path}: the {n} rows of {spec.ref} in sheet {sheet.title!r} "
                         f"(headers in row {head})", expected=n, wrong=0)


#: A number literal of a formula: an exponent only right after digits (``1E5``), so the
#: ``E5`` of ``=E5`` (a reference to column E) is no number.
_NUMBER_LITERAL = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_ARITHMETIC_ONLY = re.compile(r"[\s+\-*/^%()]*")


def is_live_formula(formula: str) -> bool:
    """True unless the formula is a bare constant (``=1240``, ``=100*1.2``, ``=-(5)``,
    ``=1E5``): once its number literals are taken out, only operators and brackets are left.
    """
    body = formula.strip()
    if not body.startswith("="):
        return True
    return not _ARITHMETIC_ONLY.fullmatch(_NUMBER_LITERAL.sub(" ", body[1:]))


@check_type(XlsxHasFormulas)
@_failing
def xlsx_has_formulas(spec: XlsxHasFormulas, ctx: CheckContext) -> CheckResult:
    """Pass when at least ``min_count`` cells hold live formulas (the formula view)."""
    sheets = select_sheets(formula_view(ctx, spec.path), spec.sheet, spec.path)
    live = {s.title: sum(is_live_formula(f) for f in s.formulas.values()) for s in sheets}
    constant = sum(len(s.formulas) for s in sheets) - sum(live.values())
    total = sum(live.values())
    where = f" in sheet {sheets[0].title!r}" if spec.sheet is not None else ""
    detail = f"{spec.path}: {total} live formula cells{where} (need {spec.min_count})"
    per_sheet = [f"{t}: {n}" for t, n in live.items() if n]
    if per_sheet and spec.sheet is None:
        detail += "; by sheet: " + ", ".join(per_sheet)
    if constant:
        detail += f"; {constant} constant-only formulas (e.g. =1240) not counted"
    if total == 0:
        detail += "; values only, no live formula"
    return _result(total >= spec.min_count, detail, formulas=total, constant_formulas=constant)


@check_type(XlsxNoErrors)
@_failing
def xlsx_no_errors(spec: XlsxNoErrors, ctx: CheckContext) -> CheckResult:
    """Pass when at most ``max_errors`` formula cells evaluate to an Excel error."""
    sheets = select_sheets(recalculated(ctx, spec.path), spec.sheet, spec.path)
    bad: list[str] = []
    formulas = 0
    for s in sheets:
        formulas += len(s.formulas)
        for cell in sorted(s.formulas):
            err = (s.errors or {}).get(cell)
            if err is not None:
                bad.append(f"{cell_name(s.title, cell)} = {err} ({s.formulas[cell]})")
    where = f" in sheet {sheets[0].title!r}" if spec.sheet is not None else ""
    metrics = {"errors": len(bad), "formula_cells": formulas}
    if len(bad) <= spec.max_errors:
        allowed = f" (at most {spec.max_errors} allowed)" if spec.max_errors else ""
        return _result(True, f"{spec.path}: {len(bad)} of {formulas} formula cells{where} "
                             f"evaluate to an error{allowed}", **metrics)
    shown = "; ".join(bad[:10]) + (f"; ... ({len(bad) - 10} more)" if len(bad) > 10 else "")
    hint = (" [#NAME? is also what a function LibreOffice lacks gives, e.g. XLOOKUP before "
            "LibreOffice 24.8]" if any(" = #NAME? " in b for b in bad) else "")
    return _result(False, f"{spec.path}: {len(bad)} formula cells{where} evaluate to an error "
                          f"after recalculation (at most {spec.max_errors} allowed): {shown}"
                          f"{hint}", **metrics)


__all__ = ["CENT_TOLERANCE", "CRASH_RETRIES", "EXCEL_ERRORS", "MAX_TOLERANCE", "RECALCULATING",
           "RECALC_TIMEOUT",
           "ROUNDING_MAX_REL_TOL", "Sheet", "XlsxHasFormulas", "XlsxNoErrors", "XlsxRefFormulas",
           "XlsxRefValues",
           "XlsxTableValues", "XlsxValuePresent",
           "cached_formula_values", "cell_figure", "cell_name", "convert_with_soffice",
           "find_soffice", "formula_view", "is_live_formula", "recalculated",
           "select_sheets", "tolerance", "unsafe_pin", "workbook_path"]
