"""bank-rec-template: this month's inputs, and the template refilled with another month.

The prompt fixes the template's layout on the sheet "Reconciliation": B3 the statement
balance, B4 the book balance, deposits in transit in A8:B27 (reference, amount),
outstanding checks in D8:E27 (check number, amount, positive), B30 the bank charges and
B31 the interest the books do not have yet; G3, G4 and G5 the adjusted bank balance, the
adjusted book balance and the difference.

- ``layout-labels``: the labels the prompt fixes (F3:F5, the item headers A7, B7, D7, E7).
- ``this-month-inputs``: the agent's own input cells hold this month's figures (``month.json``):
  the two balances, the charges and interest, and the deposits in transit and outstanding
  checks as sets of amounts, to the cent, each beside its ledger reference or check number
  (a check by its number however written: the ledger's "CHK 2045", 2045, "#2045").
- ``refilled:<cell>``: the input cells are cleared and the held-out month (``holdout.json``:
  another company, more items, a book balance with a transposition so the difference is not
  zero) typed in; LibreOffice recalculates; G3, G4 and G5 must be that month's figures to
  the cent (half a cent for float recalculation). Typed-in results, or formulas that miss
  rows of the input ranges, fail.
- ``refilled-20-rows:<cell>``: the same with all 20 rows of each item block filled (the
  held-out items repeated at other amounts): a range one row short of the 20 the prompt
  gives fails, though it computes this month's and the held-out month's figures.
"""

from __future__ import annotations

import json
import re
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


def _text(value: Any) -> str:
    return " ".join(str(value if value is not None else "").split()).casefold()


_CHECK_NO = re.compile(r"^(?:chk|check|cheque|ck)?\.?\s*(?:no\.?|number)?\s*#?\s*(\d+)$")


def _item(value: Any, *, check: bool) -> str:
    """An item's reference compared: folded text; a check by its number, however written
    (the ledger's "CHK 2045" as 2045, "#2045", "Check 2045" or "Chk no. 2045")."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = _text(value)
    m = _CHECK_NO.match(text) if check else None
    return m.group(1) if m else text


def _amounts(sheet: Any, col: str) -> list[int | None]:
    return sorted((c for c in (_cents(sheet[f"{col}{r}"].value) for r in ROWS) if c),
                  key=lambda c: (c is None, c))


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    """``layout-labels``, ``this-month-inputs`` and one ``refilled:<cell>`` and one
    ``refilled-20-rows:<cell>`` per result cell."""
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
    for item, col, key in (("A", "B", "deposits_in_transit"), ("D", "E", "outstanding_checks")):
        expected = sorted(a for _, a in month[key])
        if _amounts(sheet, col) != expected:
            wrong.append(f"{col}8:{col}27 = {_amounts(sheet, col)} (expected {expected}, cents)")
            continue
        check = key == "outstanding_checks"
        pairs = sorted((_item(sheet[f"{item}{r}"].value, check=check),
                        _cents(sheet[f"{col}{r}"].value) or 0)
                       for r in ROWS if _cents(sheet[f"{col}{r}"].value))
        want_pairs = sorted((_item(i, check=check), a) for i, a in month[key])
        if pairs != want_pairs:
            wrong.append(f"{item}8:{col}27 = {pairs} (expected {want_pairs}: each item's "
                         "reference beside its amount)")
    labels = [f"{c} = {sheet[c].value!r} (expected {t!r})" for c, t in LABELS.items()
              if " ".join(str(sheet[c].value or "").split()).lower() != t.lower()]
    out: list[dict[str, object]] = [
        {"name": "layout-labels", "passed": not labels, "detail": "; ".join(labels)},
        {"name": "this-month-inputs", "passed": not wrong, "detail": "; ".join(wrong)}]
    held = json.loads((ref / "holdout.json").read_text(encoding="utf-8"))
    for name, month_in, how in (("refilled", held, ""),
                                ("refilled-20-rows", _full(held), " on all 20 item rows")):
        calc = _refill(book, month_in, convert_with_soffice)
        for cell, key in RESULTS:
            got = calc[cell].value
            ok = _cents(got) is not None and abs(float(got) * 100 - month_in[key]) <= 0.5 + 1e-6
            out.append({"name": f"{name}:{cell}", "passed": ok,
                        "detail": "" if ok else f"{cell} reads {got!r} with the held-out "
                                                f"month{how} (expected {month_in[key] / 100:.2f})"})
    return out


def _full(held: dict[str, Any]) -> dict[str, Any]:
    """The held-out month with all 20 rows of both item blocks filled (its items repeated
    at other amounts) and its results recomputed: a formula over 19 of the 20 rows the
    prompt gives each block fails it."""
    out = dict(held)
    for key in ("deposits_in_transit", "outstanding_checks"):
        items = held[key]
        out[key] = [(f"{items[i % len(items)][0]}-{i}", items[i % len(items)][1] + 100 * i + 7)
                    for i in range(len(ROWS))]
    extra_dep = sum(a for _, a in out["deposits_in_transit"]) - sum(
        a for _, a in held["deposits_in_transit"])
    extra_chk = sum(a for _, a in out["outstanding_checks"]) - sum(
        a for _, a in held["outstanding_checks"])
    out["adjusted_bank"] = held["adjusted_bank"] + extra_dep - extra_chk
    out["difference"] = out["adjusted_bank"] - held["adjusted_book"]
    return out


def _refill(book: Path, month: dict[str, Any], convert: Any) -> Any:
    """The workbook's sheet recalculated by LibreOffice after its input cells are cleared
    and ``month`` typed in."""
    import openpyxl

    wb = openpyxl.load_workbook(book)
    sheet = wb[SHEET]
    for r in ROWS:
        for col in "ABDE":
            sheet[f"{col}{r}"] = None
    sheet["B3"] = month["statement_balance"] / 100
    sheet["B4"] = month["book_balance"] / 100
    sheet["B30"] = month["bank_charges"] / 100
    sheet["B31"] = month["interest"] / 100
    for r, (item, cents) in zip(ROWS, month["deposits_in_transit"], strict=False):
        sheet[f"A{r}"], sheet[f"B{r}"] = item, cents / 100
    for r, (item, cents) in zip(ROWS, month["outstanding_checks"], strict=False):
        sheet[f"D{r}"], sheet[f"E{r}"] = item, cents / 100
    with tempfile.TemporaryDirectory(prefix="erpsim-rec-") as tmp:
        src = Path(tmp) / "in" / "template.xlsx"
        src.parent.mkdir()
        wb.save(src)
        return openpyxl.load_workbook(convert(src, Path(tmp) / "out"), data_only=True)[SHEET]
