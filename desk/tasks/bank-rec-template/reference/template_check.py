"""bank-rec-template: this month's inputs, and the template refilled with another month.

The prompt fixes the template's layout on the sheet "Reconciliation": B3 the statement
balance, B4 the book balance, deposits in transit in A8:B27 (reference, amount),
outstanding checks in D8:E27 (check number, amount, positive), B30 the bank charges and
B31 the interest the books do not have yet; G3, G4 and G5 the adjusted bank balance, the
adjusted book balance and the difference.

- ``layout-labels``: the labels the prompt fixes (F3:F5, the item headers A7, B7, D7, E7).
- ``this-month-inputs``: the agent's own input cells hold this month's figures (``month.json``):
  the two balances, the charges and interest, and the deposits in transit and outstanding
  checks as sets of amounts, to the cent.
- ``refilled:<cell>``: the input cells are cleared and the held-out month (``holdout.json``:
  another company, more items, a book balance with a transposition so the difference is not
  zero) typed in; LibreOffice recalculates; G3, G4 and G5 must be that month's figures within
  one cent. Typed-in results, or formulas that miss rows of the input ranges, fail.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

BOOK = "out/bank_rec_template.xlsx"
SHEET = "Reconciliation"
ROWS = range(8, 28)
RESULTS = (("G3", "adjusted_bank"), ("G4", "adjusted_book"), ("G5", "difference"))
LABELS = {"F3": "Adjusted bank balance", "F4": "Adjusted book balance", "F5": "Difference",
          "A7": "Deposit in transit", "B7": "Amount", "D7": "Outstanding check", "E7": "Amount"}


def _cents(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return round(float(value) * 100)


def _amounts(sheet: Any, col: str) -> list[int | None]:
    return sorted((c for c in (_cents(sheet[f"{col}{r}"].value) for r in ROWS) if c),
                  key=lambda c: (c is None, c))


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    """``layout-labels``, ``this-month-inputs`` and one ``refilled:<cell>`` per result cell."""
    import openpyxl

    from checks.workbook import convert_with_soffice

    book = ws / BOOK
    if not book.is_file():
        return [{"name": "layout-labels", "passed": False, "detail": f"no {BOOK}"}]
    try:
        wb = openpyxl.load_workbook(book)
        sheet = wb[SHEET]
    except Exception as e:  # the agent's file
        return [{"name": "layout-labels", "passed": False,
                 "detail": f"{BOOK}: {type(e).__name__}: {str(e)[:200]}"}]
    month = json.loads((ref / "month.json").read_text(encoding="utf-8"))
    want = {"B3": month["statement_balance"], "B4": month["book_balance"],
            "B30": month["bank_charges"], "B31": month["interest"]}
    wrong = [f"{c} = {sheet[c].value!r} (expected {v / 100:.2f})" for c, v in want.items()
             if _cents(sheet[c].value) != v]
    for col, key in (("B", "deposits_in_transit"), ("E", "outstanding_checks")):
        expected = sorted(a for _, a in month[key])
        if _amounts(sheet, col) != expected:
            wrong.append(f"{col}8:{col}27 = {_amounts(sheet, col)} (expected {expected}, cents)")
    labels = [f"{c} = {sheet[c].value!r} (expected {t!r})" for c, t in LABELS.items()
              if " ".join(str(sheet[c].value or "").split()).lower() != t.lower()]
    out: list[dict[str, object]] = [
        {"name": "layout-labels", "passed": not labels, "detail": "; ".join(labels)},
        {"name": "this-month-inputs", "passed": not wrong, "detail": "; ".join(wrong)}]
    held = json.loads((ref / "holdout.json").read_text(encoding="utf-8"))
    for r in ROWS:
        for col in "ABDE":
            sheet[f"{col}{r}"] = None
    sheet["B3"] = held["statement_balance"] / 100
    sheet["B4"] = held["book_balance"] / 100
    sheet["B30"] = held["bank_charges"] / 100
    sheet["B31"] = held["interest"] / 100
    for r, (item, cents) in zip(ROWS, held["deposits_in_transit"], strict=False):
        sheet[f"A{r}"], sheet[f"B{r}"] = item, cents / 100
    for r, (item, cents) in zip(ROWS, held["outstanding_checks"], strict=False):
        sheet[f"D{r}"], sheet[f"E{r}"] = item, cents / 100
    with tempfile.TemporaryDirectory(prefix="erpsim-rec-") as tmp:
        src = Path(tmp) / "in" / "template.xlsx"
        src.parent.mkdir()
        wb.save(src)
        calc = openpyxl.load_workbook(convert_with_soffice(src, Path(tmp) / "out"),
                                      data_only=True)[SHEET]
    for cell, key in RESULTS:
        got = calc[cell].value
        ok = _cents(got) is not None and abs(float(got) * 100 - held[key]) <= 1 + 1e-6
        out.append({"name": f"refilled:{cell}", "passed": ok,
                    "detail": "" if ok else f"{cell} reads {got!r} with the held-out month "
                                            f"(expected {held[key] / 100:.2f})"})
    return out
