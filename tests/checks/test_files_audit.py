"""Audit of the file checks against the methods page: how a written figure is read (signs,
separators, currency symbols that may not merge two numbers into one, figures too large
to be one), and regexes on text whose lines end in CRLF or CR."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from checks.context import CheckContext
from checks.files import parse_number
from checks.registry import CheckResult
from tests.checks.helpers import put, run_one


def check(ctx: CheckContext, **raw: Any) -> CheckResult:
    """Parse one check strictly and run it; its single result."""
    return run_one(raw, ctx)


# --- reading a figure -------------------------------------------------------------------


@pytest.mark.parametrize(("text", "value"), [
    ("\u221230.00", Decimal("-30.00")),  # MINUS SIGN, as typeset reports write it
    ("\u2013 30", Decimal("-30")),  # an en dash used as a minus
    ("$\u22125", Decimal("-5")),
    ("(12.5)%", Decimal("-12.5")),
    ("(12.5%)", Decimal("-12.5")),
    ("1\u00a0240.00", Decimal("1240.00")),  # a non-breaking space grouping thousands
    ("1 240 000", Decimal("1240000")),
    ("\u00a0$1,240.00\u00a0", Decimal("1240.00")),
    ("1,240.00 $", Decimal("1240.00")),
    ("- $ 5", Decimal("-5")),
])
def test_a_written_figure_reads_as_its_value(text: str, value: Decimal) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", [
    "12 5",  # two numbers, not 125
    "4111 1111 1111 1111",  # a card number: an id, not a figure
    "10 20 30",
    "12\u20ac50",  # a currency symbol between digits does not join them
    "1$2",
    "1,240 000",  # separators mixed
    "1  240",  # a run of spaces is no separator
    "1\n240",  # nor is a line break
    "1e999999999",  # no float holds it: not a figure
    "-1E+400",
])
def test_text_that_is_not_one_figure_reads_as_none(text: str) -> None:
    assert parse_number(text) is None


def test_a_unicode_minus_in_a_numeric_column_matches(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", "id,amount\nA,-30.00\nB,12.50\n")
    put(ctx.workspace, "out.csv", "id,amount\nA,\u221230.00\nB,12.50\n")
    r = check(ctx, type="csv_values_match", path="out.csv", ref="ref.csv", key="id",
              columns=["amount"], numeric=["amount"])
    assert r.passed, r.detail


def test_two_numbers_in_one_cell_are_not_the_figure_they_spell(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", "id,amount\nA,125.00\nB,1250.00\n")
    put(ctx.workspace, "out.csv", "id,amount\nA,12 5\nB,12\u20ac50\n")
    r = check(ctx, type="csv_values_match", path="out.csv", ref="ref.csv", key="id",
              columns=["amount"], numeric=["amount"])
    assert not r.passed
    assert r.metrics["matched"] == 0
    assert "key 'A' column 'amount': got '12 5', expected '125.00'" in r.detail


def test_an_absurd_exponent_fails_the_check_not_the_grader(ctx: CheckContext) -> None:
    """A figure beyond any float made the Decimal subtraction overflow: a grader error."""
    put(ctx.reference, "ref.csv", "id,amount\nA,100.00\nB,5\n")
    put(ctx.workspace, "out.csv", "id,amount\nA,1e999999999\nB,5\n")
    r = check(ctx, type="csv_values_match", path="out.csv", ref="ref.csv", key="id",
              columns=["amount"], numeric=["amount"], tolerance=0.01)
    assert not r.passed
    assert r.metrics["matched"] == 1
    assert "key 'A' column 'amount': got '1e999999999', expected '100.00'" in r.detail


def test_numeric_tolerance_boundary(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", "id,amount\nA,100.00\n")
    for written, ok in (("100.01", True), ("99.99", True), ("100.02", False),
                        ("$100.01", True), ("(100.00)", False)):
        put(ctx.workspace, "out.csv", f'id,amount\nA,"{written}"\n')
        r = check(ctx, type="csv_values_match", path="out.csv", ref="ref.csv", key="id",
                  columns=["amount"], numeric=["amount"], tolerance=0.01)
        assert r.passed is ok, (written, r.detail)


# --- line endings -----------------------------------------------------------------------


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_regexes_anchor_at_line_ends_whatever_the_line_ending(ctx: CheckContext,
                                                              newline: str) -> None:
    text = newline.join(["# Close memo", "Net: 100", "- duplicate bill B-17", ""])
    put(ctx.workspace, "memo.md", text.encode())
    r = check(ctx, type="text_matches_all", path="memo.md",
              patterns=[r"^net: 100$", r"^- duplicate bill B-\d+$", r"memo$"])
    assert r.passed, r.detail
    r = check(ctx, type="text_matches_all", path="memo.md", patterns=[r"^net: 10$"])
    assert not r.passed


def test_a_line_ending_does_not_join_or_split_sentences(ctx: CheckContext) -> None:
    put(ctx.workspace, "memo.md", b"Net income was $5.\r\nIt rose.\r\n\r\nNext para\r\n")
    r = check(ctx, type="text_sentence_matches", path="memo.md", all=[r"^net income.*\$5\.$"])
    assert r.passed, r.detail
