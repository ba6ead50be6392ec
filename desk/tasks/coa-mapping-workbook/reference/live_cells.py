"""coa-mapping-workbook: the cells the prompt asks for as live formulas hold them.

``lookups-and-totals-are-live`` counts formulas anywhere in the workbook, so typed-in
company accounts (or typed-in debit and credit totals) passed it as soon as other
formulas (a net column, a check cell) made up the count. Here, in the formula view:

- ``company-account-lookups``: on the legacy sheet (the sheet with a header mentioning
  "company account" whose column below holds the most legacy accounts of
  ``legacy_mapped.csv``), every legacy account's "Company account" cell is a live formula
  (a lookup; not a typed number, not a bare constant such as ``=1000``);
- ``company-tb-formulas``: on "Company TB", every account's row of ``company_tb.csv`` and
  the Total row have live formulas in the columns headed "debit" and "credit";
- ``lookups-follow-the-rules``: the lookups look into the rules sheet. Each rule's
  company_account on the rules sheet (the sheet headed legacy_from, legacy_to and
  company_account holding the most rules of ``rules.csv``) is changed to a new account
  (8801, 8802, ...), LibreOffice recalculates, and every legacy account's "Company
  account" must read its rule's new account. A live formula with the ranges typed into it
  (``=IF(AND(A2>=10000,A2<=11999),1000,IF(...))``, right this month) fails: the
  controller reviews and reuses the mapping through the rules sheet.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

BOOK = "out/coa_mapping.xlsx"
NAMES = ("company-account-lookups", "company-tb-formulas", "lookups-follow-the-rules")


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value if value is not None else "").replace("_", " ").split()).casefold()


def _header(sheet: Any, phrases: tuple[str, ...]) -> tuple[int, dict[str, int]] | None:
    """The first row with a text cell mentioning each phrase, and each phrase's column."""
    for row in sheet.iter_rows(max_row=min(sheet.max_row, 50)):
        cols: dict[str, int] = {}
        for ph in phrases:
            hit = next((c.column for c in row if isinstance(c.value, str)
                        and ph in _text(c.value)), None)
            if hit is None:
                break
            cols[ph] = hit
        else:
            return row[0].row, cols
    return None


def _rows_by_key(sheet: Any, head: int, keys: set[str]) -> dict[str, int]:
    """Key -> row, from the column below the header holding the most of ``keys``."""
    best: dict[str, int] = {}
    for col in range(1, sheet.max_column + 1):
        found = {_text(sheet.cell(r, col).value): r for r in range(head + 1, sheet.max_row + 1)
                 if _text(sheet.cell(r, col).value) in keys}
        if len(found) > len(best):
            best = found
    return best


def _live(cell: Any) -> bool:
    from checks.workbook import is_live_formula

    v = cell.value
    text = getattr(v, "text", v)  # an array formula carries its text
    return isinstance(text, str) and text.startswith("=") and is_live_formula(text)


def _read(ref: Path, name: str, column: str) -> set[str]:
    with (ref / name).open(encoding="utf-8", newline="") as f:
        return {_text(r[column]) for r in csv.DictReader(f)}


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    import openpyxl

    book = ws / BOOK
    try:
        wb = openpyxl.load_workbook(book)
    except Exception as e:  # the agent's file
        return [{"name": n, "passed": False, "detail": f"{BOOK}: {type(e).__name__}"}
                for n in NAMES]
    legacy = _read(ref, "legacy_mapped.csv", "legacy_account")
    best: tuple[int, Any, int, dict[str, int]] | None = None
    for sheet in wb.worksheets:
        h = _header(sheet, ("company account",))
        if h is None:
            continue
        rows = _rows_by_key(sheet, h[0], legacy)
        if best is None or len(rows) > best[0]:
            best = (len(rows), sheet, h[1]["company account"], rows)
    out: list[dict[str, object]] = []
    if best is None or not best[3]:
        out.append({"name": NAMES[0], "passed": False,
                    "detail": "no sheet with the legacy accounts under a 'Company account' header"})
    else:
        _, sheet, col, rows = best
        typed = [f"{sheet.title}!{sheet.cell(r, col).coordinate} ({k})"
                 for k, r in sorted(rows.items()) if not _live(sheet.cell(r, col))]
        out.append(_result(NAMES[0], typed, sorted(legacy - set(rows)), "a live lookup",
                           "legacy accounts"))
    out.append(_follows_the_rules(book, ref, best[1].title if best else None))
    accounts = _read(ref, "company_tb.csv", "account")
    if "Company TB" not in wb.sheetnames:
        out.append({"name": NAMES[1], "passed": False, "detail": "no sheet 'Company TB'"})
        return out
    tb = wb["Company TB"]
    h = _header(tb, ("debit", "credit"))
    if h is None:
        out.append({"name": NAMES[1], "passed": False,
                    "detail": "Company TB: no header row with debit and credit"})
        return out
    rows = _rows_by_key(tb, h[0], accounts)
    typed = [f"{tb.cell(r, c).coordinate} ({k} {ph})" for k, r in sorted(rows.items())
             for ph, c in h[1].items() if not _live(tb.cell(r, c))]
    out.append(_result(NAMES[1], typed, sorted(accounts - set(rows)), "a live formula",
                       "rows"))
    return out


def _follows_the_rules(book: Path, ref: Path, legacy_title: str | None) -> dict[str, object]:
    """Each rule's company account changed on the rules sheet, the book recalculated: every
    legacy account's company account reads its rule's new one."""
    import tempfile

    import openpyxl

    from checks.workbook import convert_with_soffice

    name = NAMES[2]
    if legacy_title is None:
        return {"name": name, "passed": False, "detail": "no legacy sheet to read"}
    with (ref / "rules.csv").open(encoding="utf-8", newline="") as f:
        rules = [(int(r["legacy_from"]), int(r["legacy_to"])) for r in csv.DictReader(f)]
    new = {lo: 8801 + i for i, (lo, _) in enumerate(rules)}
    wb = openpyxl.load_workbook(book)
    found: tuple[Any, int, dict[str, int]] | None = None
    for sheet in wb.worksheets:
        h = _header(sheet, ("legacy from", "legacy to", "company account"))
        if h is None:
            continue
        col = h[1]["legacy from"]
        rows = {_text(sheet.cell(r, col).value): r for r in range(h[0] + 1, sheet.max_row + 1)
                if _text(sheet.cell(r, col).value) in {str(lo) for lo in new}}
        if found is None or len(rows) > len(found[2]):
            found = (sheet, h[1]["company account"], rows)
    if found is None or not found[2]:
        return {"name": name, "passed": False,
                "detail": "no rules sheet headed legacy_from, legacy_to, company_account"}
    sheet, col, rows = found
    for key, r in rows.items():
        cell = sheet.cell(r, col)
        cell.value = str(new[int(key)]) if isinstance(cell.value, str) else new[int(key)]
    with tempfile.TemporaryDirectory(prefix="erpsim-coa-") as tmp:
        src = Path(tmp) / "in" / "coa_mapping.xlsx"
        src.parent.mkdir()
        wb.save(src)
        calc = openpyxl.load_workbook(convert_with_soffice(src, Path(tmp) / "out"),
                                      data_only=True)
    legacy = calc[legacy_title]
    h = _header(legacy, ("company account",))
    if h is None:  # pragma: no cover - found in the formula view above
        return {"name": name, "passed": False, "detail": "legacy sheet lost its header"}
    accounts = _read(ref, "legacy_mapped.csv", "legacy_account")
    wrong = []
    for key, r in sorted(_rows_by_key(legacy, h[0], accounts).items()):
        lo = next((lo for lo, hi in rules if lo <= int(key) <= hi), None)
        want = str(new[lo]) if lo is not None and str(lo) in rows else None
        got = _text(legacy.cell(r, h[1]["company account"]).value)
        if want is not None and got != want:
            wrong.append(f"{key}: {got or 'empty'} (rule {lo} now {want})")
    detail = (f"rules sheet {sheet.title!r}: each rule's company account changed to 8801..., "
              f"after recalculation " + (f"{len(wrong)} legacy accounts do not follow: "
                                         + ", ".join(wrong[:6]) if wrong
                                         else "every legacy account follows its rule"))
    return {"name": name, "passed": not wrong, "detail": detail,
            "metrics": {"not_following": len(wrong)}}


def _result(name: str, typed: list[str], missing: list[str], live: str,
            rows: str) -> dict[str, object]:
    """One check's result: the cells typed in instead of ``live`` and the ``rows`` not found."""
    detail = "; ".join(filter(None, [
        f"not {live}: {', '.join(typed[:8])}" if typed else "",
        f"{rows} not found: {', '.join(missing[:8])}" if missing else ""]))
    return {"name": name, "passed": not typed and not missing, "detail": detail,
            "metrics": {"typed": len(typed)}}
