"""loan-amortization-model: the model must still be right for another loan.

The treasurer reuses the workbook by typing another loan's principal and annual rate into
the Inputs sheet (B1 and B2, as the prompt fixes). This check does exactly that with the
held-out loan of ``holdout.csv`` (openpyxl writes the two cells and keeps no cached
values), has LibreOffice recalculate the workbook, and reads each summary figure from the
Summary sheet: the number in column B on the row whose column A holds the label (case,
spacing and a closing colon aside). Each must equal the held-out loan's figure within one
cent (the prompt's reading of workbook figures). A model whose figures are typed in, or
do not all follow from the Inputs cells, fails.
"""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path

BOOK = "out/loan_model.xlsx"


def _label(text: object) -> str:
    """A label compared as summary-figures reads it: case, spacing and a closing colon aside
    ("Monthly payment:" is "Monthly payment")."""
    return " ".join(str(text).lower().split()).rstrip(":").rstrip() if isinstance(text, str) \
        else ""


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    """One result per summary figure of the held-out loan, after the inputs are changed."""
    import openpyxl

    from checks.workbook import convert_with_soffice

    rows = list(csv.DictReader((ref / "holdout.csv").open(encoding="utf-8")))
    given = {r["figure"]: r["value"] for r in rows}
    wanted = [r for r in rows if r["figure"] not in ("Principal", "Annual rate")]
    book = ws / BOOK
    if not book.is_file():
        return [{"name": "model-reused-for-another-loan", "passed": False,
                 "detail": f"no {BOOK}"}]
    with tempfile.TemporaryDirectory(prefix="erpsim-loan-") as tmp:
        src = Path(tmp) / "in" / "loan_model.xlsx"
        src.parent.mkdir()
        try:
            wb = openpyxl.load_workbook(book)
            inputs = wb["Inputs"]
        except Exception as e:  # the agent's file: unreadable or no Inputs sheet
            return [{"name": "model-reused-for-another-loan", "passed": False,
                     "detail": f"{BOOK}: {type(e).__name__}: {str(e)[:200]}"}]
        inputs["B1"] = float(given["Principal"])
        inputs["B2"] = float(given["Annual rate"])
        wb.save(src)
        calc = openpyxl.load_workbook(convert_with_soffice(src, Path(tmp) / "out"),
                                      data_only=True)
    if "Summary" not in calc.sheetnames:
        return [{"name": "model-reused-for-another-loan", "passed": False,
                 "detail": "no Summary sheet"}]
    found: dict[str, object] = {}
    for row in calc["Summary"].iter_rows(min_col=1, max_col=2):
        found.setdefault(_label(row[0].value), row[1].value)
    out: list[dict[str, object]] = []
    for r in wanted:
        want = float(r["value"])
        got = found.get(_label(r["figure"]))
        ok = isinstance(got, int | float) and abs(float(got) - want) <= 0.01 + 1e-9
        out.append({"name": f"reused:{r['figure']}", "passed": ok,
                    "detail": "" if ok else f"Summary B next to {r['figure']!r} reads {got!r} "
                                            f"with the held-out inputs (expected {want:.2f})"})
    return out
