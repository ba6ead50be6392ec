"""Desk tables written the way agents write them, graded by the tasks' own checks.

card-statement-recon, remittance-matching, invoice-pdf-extraction, cash-position,
bank-statement-pdf, board-segment-margin, capitalization-memo and closing-package-tb
(tests/desk/test_closing_package_tb.py) ask for
amounts as
"plain decimals to the cent (no currency symbol, no thousands separators)" and compared
them as text: a table whose amounts pandas wrote from a float column (``9582.0``,
``1234.5``, ``-30.0``) was refused though every amount is right to the cent. Those
columns are now ``plain`` (compared as numbers, written plainly); the display forms the
prompts rule out (``1,234.50``, ``$1234.50``) and a cent off are still refused.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from tests.desk.output_mutants import Solved, solve

# task -> {file: (its amount columns, the check comparing them)}
AMOUNTS = {
    "card-statement-recon": {
        "out/card_recon.csv": (["amount"], "recon-date-and-amount"),
        "out/summary.csv": (["amount"], "summary-figures-to-the-cent")},
    "remittance-matching": {
        "out/remittance_lines.csv": (["amount", "open_amount"], "lines-amounts-to-the-cent")},
    "invoice-pdf-extraction": {
        "out/invoices.csv": (["subtotal", "tax", "total"], "invoices-amounts-to-the-cent"),
        "out/invoice_lines.csv": (["unit_price", "amount"], "lines-figures-to-the-cent")},
    "cash-position": {
        "out/cash_position.csv": (["book_balance", "bank_balance", "outstanding_payments",
                                   "deposits_in_transit", "bank_items_not_in_books",
                                   "adjusted_balance"], "position-figures-to-the-cent"),
        "out/uncleared_items.csv": (["amount"], "items-account-date-amount-type")},
    "bank-statement-pdf": {
        "out/transactions.csv": (["amount", "balance"], "transactions-amounts-to-the-cent")},
    "board-segment-margin": {
        "out/segment_margin.csv": (["revenue", "cost", "gross_margin"],
                                   "segment-figures-to-the-cent")},
    "capitalization-memo": {
        "out/capitalization.csv": (["amount"], "decisions-and-costs-to-the-cent")},
}
CASES = [(t, f) for t, files in AMOUNTS.items() for f in files]
#: the files with an amount ending in a zero cent (pandas writes 76.40 as 76.4); none of
#: card-statement-recon's summary.csv amounts does, nor board-segment-margin's
SHORTENED = [c for c in CASES if c not in {("card-statement-recon", "out/summary.csv"),
                                            ("board-segment-margin", "out/segment_margin.csv")}]
#: an amount written with fewer than two decimals: 76.4, 9582.0, 120
SHORT = re.compile(r"-?\d+(?:\.\d)?")


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Solved]:
    return {t: solve(t, tmp_path_factory.mktemp(t)) for t in AMOUNTS}


def _rewritten(path: Path, columns: list[str],
               money: Callable[[float], str] | None = None) -> str:
    """The file as pandas writes it with ``columns`` as floats, each written by ``money``
    when given (else as pandas does)."""
    df = pd.read_csv(io.StringIO(path.read_text(encoding="utf-8")), dtype=str,
                     keep_default_na=False)
    for c in columns:
        df[c] = pd.to_numeric(df[c].replace("", None))
        if money is not None:
            df[c] = df[c].map(lambda x: "" if pd.isna(x) else money(x))
    return str(df.to_csv(index=False))


def _graded(solved: Solved, rel: str, text: str) -> list[str]:
    path = solved.path(rel)
    original = path.read_text(encoding="utf-8")
    return solved.failed_with_text(rel, {original: text})


@pytest.mark.parametrize(("task", "rel"), SHORTENED)
def test_amounts_pandas_wrote_from_floats_are_accepted(solved: dict[str, Solved], task: str,
                                                       rel: str) -> None:
    s = solved[task]
    assert s.failed() == []
    text = _rewritten(s.path(rel), AMOUNTS[task][rel][0])
    columns = AMOUNTS[task][rel][0]
    df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert any(SHORT.fullmatch(v) for c in columns for v in df[c]), text
    assert _graded(s, rel, text) == []


DISPLAY = {"separators": lambda x: f"{x:,.2f}", "dollar sign": lambda x: f"${x:.2f}",
           "parentheses": lambda x: f"({-x:.2f})" if x < 0 else f"{x:.2f}"}


#: the files a display form leaves as they are, their data having nothing it changes (no
#: negative amount to put in parentheses, none of 1,000 or more to group): not cases
UNCHANGED = {
    ("remittance-matching", "out/remittance_lines.csv", "parentheses"),
    ("invoice-pdf-extraction", "out/invoices.csv", "parentheses"),
    ("invoice-pdf-extraction", "out/invoice_lines.csv", "parentheses"),
    ("cash-position", "out/cash_position.csv", "parentheses"),
    ("board-segment-margin", "out/segment_margin.csv", "parentheses"),
    ("capitalization-memo", "out/capitalization.csv", "parentheses"),
    ("card-statement-recon", "out/card_recon.csv", "separators"),
}
DISPLAY_CASES = [(t, f, form) for t, f in CASES for form in sorted(DISPLAY)
                 if (t, f, form) not in UNCHANGED]


def _displayed(s: Solved, task: str, rel: str, form: str) -> tuple[str, bool]:
    """The file with its amounts in ``form``, and whether that changed any amount."""
    columns = AMOUNTS[task][rel][0]
    text = _rewritten(s.path(rel), columns, DISPLAY[form])
    return text, text != _rewritten(s.path(rel), columns, lambda x: f"{x:.2f}")


@pytest.mark.parametrize(("task", "rel", "form"), DISPLAY_CASES)
def test_amounts_in_display_forms_are_refused(solved: dict[str, Solved], task: str,
                                              rel: str, form: str) -> None:
    s = solved[task]
    text, changed = _displayed(s, task, rel, form)
    assert changed, f"no amount {form} changes in {rel}: list it in UNCHANGED"
    assert AMOUNTS[task][rel][1] in _graded(s, rel, text)


@pytest.mark.parametrize(("task", "rel", "form"), sorted(UNCHANGED))
def test_the_forms_left_out_change_nothing(solved: dict[str, Solved], task: str, rel: str,
                                           form: str) -> None:
    """A case left out of the refusals must be one its data cannot show (else it is a
    refusal untested)."""
    assert not _displayed(solved[task], task, rel, form)[1]


@pytest.mark.parametrize(("task", "rel"), CASES)
def test_an_amount_a_cent_off_is_still_refused(solved: dict[str, Solved], task: str,
                                               rel: str) -> None:
    s = solved[task]
    columns, check = AMOUNTS[task][rel]
    assert check in s.failed_with_column(
        rel, columns[0], lambda v: f"{float(v) + 0.01:.2f}" if v else v, row=0)
