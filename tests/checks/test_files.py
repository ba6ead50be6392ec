"""The file check types: a passing and a failing fixture each, the failure details, the
strict validator, and the reading rules (BOM, garbled CSV, missing files, links)."""

from __future__ import annotations

import os
import re
import signal
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from checks.context import CheckContext
from checks.files import call_module, numbers_in_text, parse_number, sentences
from checks.registry import CheckResult, parse_checks
from checks.verdict import evaluate, run_check
from erp.store import EventStore
from tests.checks.helpers import put, run_one, spec_problems


def check(ctx: CheckContext, **raw: Any) -> CheckResult:
    """Parse one check strictly and run it; its single result."""
    return run_one(raw, ctx)


problems = spec_problems


# --- file_exists ------------------------------------------------------------------------


def test_file_exists_passes_on_a_glob_match(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/aging.csv", "a\n")
    r = check(ctx, type="file_exists", path="out/*.csv")
    assert r.passed
    assert r.name == "file_exists#1"
    assert "out/aging.csv" in r.detail
    assert r.metrics["matched"] == 1


def test_file_exists_fails_when_only_a_directory_matches(ctx: CheckContext) -> None:
    assert ctx.workspace is not None
    (ctx.workspace / "out" / "report.md").mkdir(parents=True)
    r = check(ctx, type="file_exists", path="out/*.md")
    assert not r.passed
    assert r.detail == "out/*.md: no file in the workspace matches"


def test_file_exists_recursive_glob(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/deep/x/summary.txt", "hi")
    assert check(ctx, type="file_exists", path="**/summary.txt").passed


def test_file_exists_ignores_a_link_leading_out(ctx: CheckContext, tmp_path: Path) -> None:
    assert ctx.workspace is not None
    secret = put(tmp_path, "elsewhere/answer.csv", "a\n")
    (ctx.workspace / "out").mkdir()
    os.symlink(secret, ctx.workspace / "out" / "answer.csv")
    assert not check(ctx, type="file_exists", path="out/answer.csv").passed


# --- csv_columns ------------------------------------------------------------------------


def test_csv_columns_passes_with_extra_columns(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/a.csv", "customer, total ,extra\nC1,1,x\n")
    assert check(ctx, type="csv_columns", path="out/a.csv", columns=["total", "customer"]).passed


def test_csv_columns_fails_naming_missing_columns_and_a_case_slip(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/a.csv", "customer,Total\nC1,1\n")
    r = check(ctx, type="csv_columns", path="out/a.csv", columns=["customer", "total", "days"])
    assert not r.passed
    assert r.detail == ("out/a.csv: missing columns (2): 'total', 'days' [found 'total' as "
                        "'Total': column names are case-sensitive] (header: ['customer', "
                        "'Total'])")


def test_csv_columns_exact_requires_the_order(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/a.csv", "b,a\n1,2\n")
    assert check(ctx, type="csv_columns", path="out/a.csv", columns=["b", "a"], exact=True).passed
    r = check(ctx, type="csv_columns", path="out/a.csv", columns=["a", "b"], exact=True)
    assert not r.passed
    assert r.detail == "out/a.csv: expected exactly ['a', 'b'] in that order; found ['b', 'a']"


def test_csv_columns_tolerates_a_byte_order_mark(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/a.csv", "\ufeffcustomer,total\r\nC1,1\r\n".encode())
    assert check(ctx, type="csv_columns", path="out/a.csv", columns=["customer"],
                 exact=False).passed


# --- csv_row_count ----------------------------------------------------------------------


def test_csv_row_count_passes_ignoring_blank_lines(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/a.csv", "id\n1\n\n2\n,\n3\n\n")
    r = check(ctx, type="csv_row_count", path="out/a.csv", equals=3)
    assert r.passed
    assert r.metrics == {"rows": 3, "expected": 3}


def test_csv_row_count_fails_with_both_counts(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/a.csv", "id\n1\n2\n3\n")
    r = check(ctx, type="csv_row_count", path="out/a.csv", equals=5)
    assert not r.passed
    assert r.detail == "out/a.csv: 3 data rows; expected 5"


def test_csv_row_count_against_a_reference_with_tolerance(ctx: CheckContext) -> None:
    put(ctx.reference, "expected.csv", "id\n1\n2\n3\n4\n")
    put(ctx.workspace, "out/a.csv", "id\n1\n2\n3\n")
    assert check(ctx, type="csv_row_count", path="out/a.csv", equals_ref="expected.csv",
                 tolerance=1).passed
    r = check(ctx, type="csv_row_count", path="out/a.csv", equals_ref="expected.csv")
    assert not r.passed
    assert r.detail == "out/a.csv: 3 data rows; expected 4 (the rows of expected.csv)"


# --- csv_set_equal ----------------------------------------------------------------------


def test_csv_set_equal_passes_with_normalization(ctx: CheckContext) -> None:
    put(ctx.reference, "r.csv", "invoice\nINV-1\nINV-2\nINV-2\n")
    put(ctx.workspace, "out/a.csv", "inv,x\n inv-2 ,1\ninv-1,2\n")
    assert check(ctx, type="csv_set_equal", path="out/a.csv", column="inv", ref="r.csv",
                 ref_column="invoice", normalize=["strip", "casefold"]).passed


def test_csv_set_equal_fails_listing_missing_and_extra(ctx: CheckContext) -> None:
    put(ctx.reference, "r.csv", "invoice\nINV-1\nINV-2\nINV-3\n")
    put(ctx.workspace, "out/a.csv", "invoice\nINV-1\nINV-9\n")
    r = check(ctx, type="csv_set_equal", path="out/a.csv", column="invoice", ref="r.csv")
    assert not r.passed
    assert r.detail == ("out/a.csv: values of 'invoice' differ from r.csv 'invoice': "
                        "missing (2): 'INV-2', 'INV-3'; extra (1): 'INV-9'")
    assert r.metrics == {"expected": 3, "got": 2, "missing": 2, "extra": 1}


def test_csv_set_equal_default_is_case_sensitive_and_raw_keeps_spaces(ctx: CheckContext) -> None:
    put(ctx.reference, "r.csv", "v\nA\n")
    put(ctx.workspace, "out/a.csv", "v\n\"A \"\n")
    assert check(ctx, type="csv_set_equal", path="out/a.csv", column="v", ref="r.csv").passed
    assert not check(ctx, type="csv_set_equal", path="out/a.csv", column="v", ref="r.csv",
                     normalize=[]).passed
    put(ctx.workspace, "out/a.csv", "v\na\n")
    assert not check(ctx, type="csv_set_equal", path="out/a.csv", column="v", ref="r.csv").passed


def test_csv_set_equal_basename_reads_a_path_as_its_file_name(ctx: CheckContext) -> None:
    """A file-name column written as paths (receipts/r1.pdf, ./in/r2.pdf, C:\\x\\r3.pdf)
    holds the same names; a wrong name is still wrong, and without basename a path is not
    a name."""
    put(ctx.reference, "r.csv", "file\nr1.pdf\nr2.pdf\nr3.pdf\n")
    put(ctx.workspace, "out/a.csv", "file\nreceipts/r1.pdf\n./in/r2.pdf\nC:\\x\\r3.pdf\n")
    spec = {"type": "csv_set_equal", "path": "out/a.csv", "column": "file", "ref": "r.csv"}
    assert check(ctx, **spec, normalize=["strip", "basename"]).passed
    assert not check(ctx, **spec).passed
    put(ctx.workspace, "out/a.csv", "file\nreceipts/r1.pdf\nr2.pdf\nreceipts/r4.pdf\n")
    assert not check(ctx, **spec, normalize=["strip", "basename"]).passed


# --- csv_values_match -------------------------------------------------------------------

REF = ("customer,invoice,amount,status\n"
       "C1,1,1234.50,paid\n"
       "C1,2,-30.00,open\n"
       "C2,1,10.00,open\n"
       "C3,7,99.99,paid\n")


def values_check(ctx: CheckContext, **kw: Any) -> CheckResult:
    """csv_values_match of out/a.csv against ref.csv on the composite key."""
    raw: dict[str, Any] = {"type": "csv_values_match", "path": "out/a.csv", "ref": "ref.csv",
                           "key": ["customer", "invoice"], "columns": ["amount", "status"],
                           "numeric": ["amount"]}
    raw.update(kw)
    return check(ctx, **raw)


def test_csv_values_match_passes_on_accounting_number_formats(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv",
        "status,amount,invoice,customer,note\n"
        'paid,"$1,234.50",1,C1,x\n'
        "open,(30.00),2,C1,\n"
        "open,10,1,C2,\n"
        "paid, 99.99 ,7,C3,\n"
        "open,5,8,C9,an extra key does not count\n")
    r = values_check(ctx)
    assert r.passed, r.detail
    assert r.metrics["accuracy"] == 1.0
    assert (r.metrics["matched"], r.metrics["total"], r.metrics["extra_keys"]) == (4, 4, 1)


def test_csv_values_match_casefold_columns(ctx: CheckContext) -> None:
    """A casefold column compares case-insensitively (Paid is paid); a wrong value still
    fails, and without casefold the case counts."""
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv",
        "customer,invoice,amount,status\n"
        "C1,1,1234.50,Paid\nC1,2,-30.00,OPEN\nC2,1,10.00,open\nC3,7,99.99,PAID\n")
    assert values_check(ctx, casefold=["status"]).passed
    assert not values_check(ctx).passed
    put(ctx.workspace, "out/a.csv",
        "customer,invoice,amount,status\n"
        "C1,1,1234.50,Open\nC1,2,-30.00,OPEN\nC2,1,10.00,open\nC3,7,99.99,PAID\n")
    assert not values_check(ctx, casefold=["status"]).passed
    problems = spec_problems({"type": "csv_values_match", "path": "out/a.csv",
                              "ref": "ref.csv", "key": "customer", "columns": ["amount"],
                              "numeric": ["amount"], "casefold": ["amount"]})
    assert any("casefold columns" in m for m in problems.values()), problems


def test_csv_values_match_basename_columns(ctx: CheckContext) -> None:
    """A basename key or compared column reads a path as its file name, on both sides;
    the figures are still compared, and basename must name a key or compared text column."""
    put(ctx.reference, "ref.csv", "file,total,source\nr1.pdf,10.00,a.pdf\nr2.pdf,5.00,b.pdf\n")
    put(ctx.workspace, "out/a.csv",
        "file,total,source\nreceipts/r1.pdf,10.00,in/a.pdf\n./receipts/r2.pdf,5.00,b.pdf\n")
    spec = {"type": "csv_values_match", "path": "out/a.csv", "ref": "ref.csv", "key": "file",
            "columns": ["total", "source"], "numeric": ["total"]}
    assert check(ctx, **spec, basename=["file", "source"]).passed
    assert not check(ctx, **spec).passed
    assert not check(ctx, **spec, basename=["file"]).passed  # in/a.pdf is not a.pdf
    put(ctx.workspace, "out/a.csv",
        "file,total,source\nreceipts/r1.pdf,10.01,a.pdf\nreceipts/r2.pdf,5.00,b.pdf\n")
    assert not check(ctx, **spec, basename=["file", "source"]).passed
    problems = spec_problems({**spec, "basename": ["total"]})
    assert any("basename columns" in m for m in problems.values()), problems


def test_csv_values_match_fails_naming_the_mismatches(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv",
        "customer,invoice,amount,status\n"
        "C1,1,1234.50,open\n"      # wrong status
        "C1,2,30.00,open\n"        # wrong sign
        "C2,1,10.00,open\n")       # C3|7 missing
    r = values_check(ctx)
    assert not r.passed
    assert r.detail == (
        "out/a.csv: 1/4 reference keys match (accuracy 0.250, required 1.000); first "
        "mismatches: key 'C1|1' column 'status': got 'open', expected 'paid'; key 'C1|2' "
        "column 'amount': got '30.00', expected '-30.00'; key 'C3|7': missing from out/a.csv")
    assert (r.metrics["accuracy"], r.metrics["matched"], r.metrics["total"]) == (0.25, 1, 4)


def test_csv_values_match_min_accuracy_and_must_match_keys(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv",
        "customer,invoice,amount,status\n"
        "C1,1,1234.50,paid\nC1,2,-30,open\nC2,1,10.01,open\nC3,7,99.99,paid\n")
    assert not values_check(ctx).passed
    assert values_check(ctx, min_accuracy=0.75).passed
    assert values_check(ctx, tolerance=0.01).passed
    r = values_check(ctx, min_accuracy=0.5, must_match_keys=["C2|1", ["C1", "1"]])
    assert not r.passed
    assert "must-match keys wrong (1): 'C2|1'" in r.detail
    assert r.metrics["must_match_wrong"] == ["C2|1"]
    assert values_check(ctx, min_accuracy=0.5, must_match_keys=[["C1", "2"], "C3|7"]).passed


def test_csv_values_match_duplicate_agent_key_is_wrong(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", "id,v\nA,1\nB,2\n")
    put(ctx.workspace, "out/a.csv", "id,v\nA,1\nA,1\nB,2\n")
    r = check(ctx, type="csv_values_match", path="out/a.csv", ref="ref.csv", key="id",
              columns=["v"])
    assert not r.passed
    assert "key 'A': appears 2 times" in r.detail


def test_csv_values_match_text_in_a_numeric_column_is_a_mismatch(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", "id,v\nA,1\n")
    put(ctx.workspace, "out/a.csv", "id,v\nA,one\n")
    r = check(ctx, type="csv_values_match", path="out/a.csv", ref="ref.csv", key="id",
              columns=["v"], numeric=["v"])
    assert not r.passed
    assert "key 'A' column 'v': got 'one', expected '1'" in r.detail


def test_csv_values_match_if_present_compares_the_columns_written(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", REF)
    # status not written: amount alone compared, and right
    put(ctx.workspace, "out/a.csv",
        "customer,invoice,amount\nC1,1,1234.50\nC1,2,-30.00\nC2,1,10.00\nC3,7,99.99\n")
    r = values_check(ctx, if_present=True)
    assert r.passed, r.detail
    assert r.detail.endswith("; not written, not compared: status")
    assert not values_check(ctx).passed  # without if_present the column is required
    # a written column one cent off fails
    put(ctx.workspace, "out/a.csv",
        "customer,invoice,amount\nC1,1,1234.51\nC1,2,-30.00\nC2,1,10.00\nC3,7,99.99\n")
    r = values_check(ctx, if_present=True)
    assert not r.passed
    assert "key 'C1|1' column 'amount': got '1234.51', expected '1234.50'" in r.detail
    # the key is always required
    put(ctx.workspace, "out/a.csv", "customer,amount\nC1,1234.50\n")
    r = values_check(ctx, if_present=True)
    assert not r.passed and "missing columns" in r.detail and "invoice" in r.detail


def test_csv_values_match_missing_agent_column_fails(ctx: CheckContext) -> None:
    put(ctx.reference, "ref.csv", REF)
    put(ctx.workspace, "out/a.csv", "customer,invoice,amount\nC1,1,1234.50\n")
    r = values_check(ctx)
    assert not r.passed
    assert r.detail.startswith("out/a.csv: missing columns (1): 'status'")
    assert r.metrics == {"accuracy": 0.0, "matched": 0, "total": 4}


@pytest.mark.parametrize(("ref_text", "extra", "message"), [
    (None, {}, "reference file ref.csv not found"),
    ("customer,invoice,amount\nC1,1,1\n", {}, "reference ref.csv: lacks columns (1): 'status'"),
    ("customer,invoice,amount,status\nC1,1,1,x\nC1,1,2,y\n", {}, "key 'C1|1' appears twice"),
    (REF, {"must_match_keys": ["C9|9"]}, "must_match_keys[0] 'C9|9' is not a key of ref.csv"),
    ("customer,invoice,amount,status\nC1,1,n/a,x\n", {}, "'n/a' is not a number"),
])
def test_csv_values_match_a_broken_reference_is_a_grader_error(
        ctx: CheckContext, ref_text: str | None, extra: dict[str, Any], message: str) -> None:
    if ref_text is not None:
        put(ctx.reference, "ref.csv", ref_text)
    put(ctx.workspace, "out/a.csv", REF)
    specs = parse_checks([{"type": "csv_values_match", "path": "out/a.csv", "ref": "ref.csv",
                           "key": ["customer", "invoice"], "columns": ["amount", "status"],
                           "numeric": ["amount"], **extra}])
    verdict = evaluate(specs, ctx, version="test")
    assert verdict.status == "grader_error"
    assert verdict.results == []
    assert message in verdict.grader_errors[0].error


# --- text_* -----------------------------------------------------------------------------

MEMO = """# Close memo

Net income for May was $12,345.67. The bank reconciliation ties;
the unapplied cash of (1,200.00) was applied to Acme Inc. invoices.

- Refund to Beta Co. approved: no.
- Duplicate bill B-17 was not entered.
"""


def test_text_contains_all(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", MEMO)
    assert check(ctx, type="text_contains_all", path="out/memo.md",
                 phrases=["NET INCOME", "reconciliation ties; the unapplied"]).passed
    r = check(ctx, type="text_contains_all", path="out/memo.md",
              phrases=["net income", "accrual", "period closed"])
    assert not r.passed
    assert r.detail == "out/memo.md: phrases missing (2): 'accrual', 'period closed'"
    assert r.metrics == {"found": 1, "total": 3}


def test_text_contains_any(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", MEMO)
    assert check(ctx, type="text_contains_any", path="out/memo.md",
                 phrases=["accrual", "Bank Reconciliation"]).passed
    r = check(ctx, type="text_contains_any", path="out/memo.md", phrases=["accrual", "FX"])
    assert not r.passed
    assert r.detail == "out/memo.md: none of the phrases appear: ['accrual', 'FX']"


def test_text_not_contains(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", MEMO)
    assert check(ctx, type="text_not_contains", path="out/memo.md",
                 phrases=["paid twice"]).passed
    r = check(ctx, type="text_not_contains", path="out/memo.md",
              phrases=["paid twice", "DUPLICATE BILL"])
    assert not r.passed
    assert r.detail == "out/memo.md: forbidden phrases present (1): 'DUPLICATE BILL'"


def test_text_matches_all(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", MEMO)
    assert check(ctx, type="text_matches_all", path="out/memo.md",
                 patterns=[r"net income .* \$12,345\.67", r"^- duplicate bill B-\d+"]).passed
    r = check(ctx, type="text_matches_all", path="out/memo.md",
              patterns=[r"net income", r"B-18\b"])
    assert not r.passed
    assert r.detail == "out/memo.md: patterns not matched (1): 'B-18\\\\b'"


def test_text_numbers_present(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", MEMO)
    assert check(ctx, type="text_numbers_present", path="out/memo.md",
                 numbers=[12345.67, -1200, 17]).passed
    assert check(ctx, type="text_numbers_present", path="out/memo.md",
                 numbers=[12345.0], rel_tol=0.001).passed
    r = check(ctx, type="text_numbers_present", path="out/memo.md",
              numbers=[12345.67, 12345.0, 999])
    assert not r.passed
    assert r.detail == "out/memo.md: 1/3 figures present (need 3); missing (2): '12,345.00', '999'"
    assert check(ctx, type="text_numbers_present", path="out/memo.md",
                 numbers=[12345.67, 12345.0, 999], min_count=1).passed
    # to the cent: a figure one cent off is absent, a half cent is the same cent
    for off_by_a_cent in (12345.66, 12345.68):
        r = check(ctx, type="text_numbers_present", path="out/memo.md", numbers=[off_by_a_cent])
        assert not r.passed, off_by_a_cent
    assert check(ctx, type="text_numbers_present", path="out/memo.md",
                 numbers=[12345.674]).passed


VARIANCE_MEMO = """# May against April

Service revenue decreased by $86,249.11 (22.1%) on fewer projects.
Contractors increased by 2030.96, 19.4% more than April.
Rent is unchanged.
"""

VARIANCES = ("name,change,change_pct,direction,explain\n"
             "Service revenue,86249.11,22.1,decreased,yes\n"
             "Contractors,2030.96,19.4,increased,yes\n"
             "Rent,0.00,0.0,unchanged,no\n")

REF_SENTENCES = {"type": "text_ref_sentences", "path": "out/memo.md", "ref": "var.csv",
                 "rows": {"explain": "yes"}, "columns": ["name", "change", "change_pct"],
                 "percent": ["change_pct"],
                 "words": {"direction": {"decreased": "decreas", "increased": "increas"}},
                 "none": [r"\bnot\b"]}


def test_text_ref_sentences_pass_on_each_row_stated(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", VARIANCE_MEMO)
    put(ctx.reference, "var.csv", VARIANCES)
    r = check(ctx, **REF_SENTENCES)
    assert r.passed, r.detail
    assert r.detail == "out/memo.md: each of the 2 rows of var.csv stated in a sentence"


@pytest.mark.parametrize(("old", "new"), [
    ("$86,249.11", "$86,249.12"),  # a cent
    ("22.1%", "22.2%"),  # the percent
    ("Service revenue decreased", "Service revenue increased"),  # the direction
    ("on fewer projects", "and did not increase"),  # the other direction named too
    ("Contractors increased", "Consultants increased"),  # the name
])
def test_text_ref_sentences_fail_on_one_wrong_fact(ctx: CheckContext, old: str,
                                                   new: str) -> None:
    put(ctx.workspace, "out/memo.md", VARIANCE_MEMO.replace(old, new))
    put(ctx.reference, "var.csv", VARIANCES)
    r = check(ctx, **REF_SENTENCES)
    assert not r.passed
    assert r.detail.startswith("out/memo.md: 1 of 2 rows of var.csv stated in no sentence: ")
    assert r.metrics["missing"] == 1


def test_text_ref_sentences_bad_reference_is_a_grader_error(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", VARIANCE_MEMO)
    put(ctx.reference, "var.csv", "name,change\nRent,0.00\n")
    with pytest.raises(ValueError, match=r"reference var\.csv: lacks columns"):
        check(ctx, **REF_SENTENCES)
    put(ctx.reference, "var.csv", VARIANCES.replace("yes", "no"))
    with pytest.raises(ValueError, match=r"no row matches \{'explain': 'yes'\}"):
        check(ctx, **REF_SENTENCES)
    put(ctx.reference, "var.csv", VARIANCES.replace("decreased,yes", "fell,yes"))
    with pytest.raises(ValueError, match=r"direction 'fell' has no regex in words"):
        check(ctx, **REF_SENTENCES)


def test_text_ref_sentences_signs(ctx: CheckContext) -> None:
    put(ctx.reference, "v.csv", "service,variance\nSupport,-8784.42\nTraining,9204.97\n")
    spec = {"type": "text_ref_sentences", "path": "out/memo.md", "ref": "v.csv",
            "columns": ["service", "variance"],
            "signs": {"variance": [r"\b(under|below)\b", r"\b(over|above)\b"]}}
    good = "Support came in under budget by $8,784.42. Training ran over by 9,204.97."
    put(ctx.workspace, "out/memo.md", good)
    assert check(ctx, **spec).passed
    for bad in (good.replace("under budget", "over budget"),
                good.replace("ran over", "ran over, not under")):
        put(ctx.workspace, "out/memo.md", bad)
        r = check(ctx, **spec)
        assert not r.passed and r.metrics["missing"] == 1, bad
    put(ctx.reference, "v.csv", "service,variance\nSupport,0.00\n")
    with pytest.raises(ValueError, match=r"variance '0\.00' is not a non-zero figure"):
        check(ctx, **spec)
    assert "checks[0].signs.variance" in problems({**spec, "signs": {"variance": ["x"]}})


def test_text_ref_absent(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", VARIANCE_MEMO.replace("Rent is unchanged.\n",
                                                            "The current ratio held.\n"))
    put(ctx.reference, "var.csv", VARIANCES)
    spec = {"type": "text_ref_absent", "path": "out/memo.md", "ref": "var.csv",
            "column": "name", "rows": {"explain": "no"}}
    r = check(ctx, **spec)  # "Rent" is not in "current"
    assert r.passed, r.detail
    assert r.detail == "out/memo.md: none of the 1 excluded rows of var.csv named"
    put(ctx.workspace, "out/memo.md", VARIANCE_MEMO)  # "Rent is unchanged."
    r = check(ctx, **spec)
    assert not r.passed
    assert r.detail == "out/memo.md: names 1 of the 1 excluded rows of var.csv: 'Rent'"
    with pytest.raises(ValueError, match=r"no row matches \{'explain': 'maybe'\}"):
        check(ctx, **{**spec, "rows": {"explain": "maybe"}})
    with pytest.raises(ValueError, match=r"reference var\.csv: lacks columns"):
        check(ctx, **{**spec, "column": "label"})


def test_text_ref_sentences_validator() -> None:
    assert problems({**REF_SENTENCES, "percent": ["other"]}) == {
        "checks[0]": "percent columns must be among columns; not there: other"}
    assert problems({**REF_SENTENCES, "words": {"direction": {}}}) == {
        "checks[0]": "words: give each column's values and regexes; none for direction"}


def test_figure_pattern() -> None:
    from checks.files import figure_pattern

    rx = figure_pattern("1234567.05")
    for ok in ("$1,234,567.05", "1234567.05", "$ 1234,567.05"):
        assert re.search(rx, ok), ok
    for bad in ("1,234,567.06", "11,234,567.05", "1234567.051"):
        assert not re.search(rx, bad), bad
    assert re.search(figure_pattern("22.1", percent=True), "by 22.1 %")
    assert not re.search(figure_pattern("22.1", percent=True), "by 122.1%")
    for ok in ("22.1 percent", "22.1 per cent", "22.1percent"):  # as prose writes it
        assert re.search(figure_pattern("22.1", percent=True), ok), ok
    for bad in ("22.1 percentile", "22.1 points", "22.1"):
        assert not re.search(figure_pattern("22.1", percent=True), bad), bad
    date = figure_pattern("2026-05-03")
    for ok in ("due 2026-05-03.", "due May 3, 2026", "due 03 May 2026", "May 03 2026"):
        assert re.search(date, ok, re.IGNORECASE), ok
    for bad in ("2026-05-04", "May 13, 2026", "3 June 2026"):
        assert not re.search(date, bad, re.IGNORECASE), bad
    # as people write dates: an ordinal, an abbreviated month, day-month-year, US numeric
    for ok in ("May 3rd, 2026", "3rd of May, 2026", "03-May-2026", "05/03/2026", "5/3/2026"):
        assert re.search(date, ok, re.IGNORECASE), ok
    for bad in ("13-May-2026", "15/03/2026", "05/03/20261", "5/13/2026", "May 30, 2026"):
        assert not re.search(date, bad, re.IGNORECASE), bad
    sep = figure_pattern("2026-09-07")
    for ok in ("Sept 7, 2026", "Sep. 7th, 2026", "07-Sep-2026", "09/07/2026"):
        assert re.search(sep, ok, re.IGNORECASE), ok
    assert not re.search(sep, "Sep 17, 2026", re.IGNORECASE)
    assert re.search(figure_pattern("Rent"), "rent rose", re.IGNORECASE)
    assert not re.search(figure_pattern("Rent"), "Rental", re.IGNORECASE)


def test_text_sentence_matches(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", MEMO)
    assert check(ctx, type="text_sentence_matches", path="out/memo.md",
                 all=[r"unapplied", r"acme"], none=[r"\bnot\b"]).passed
    # The facts sit in different sentences: scattered phrases do not pass.
    r = check(ctx, type="text_sentence_matches", path="out/memo.md",
              all=[r"net income", r"reconciliation"])
    assert not r.passed
    assert r.detail.startswith("out/memo.md: none of the 5 sentences matches; closest: "
                               "'Net income for May was $12,345.67.' (lacks (1): "
                               "'reconciliation')")


def test_text_sentence_matches_none_vetoes_a_negation(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.md", MEMO)
    r = check(ctx, type="text_sentence_matches", path="out/memo.md",
              all=[r"duplicate bill"], none=[r"\bnot\b"])
    assert not r.passed
    assert r.detail == ("out/memo.md: none of the 5 sentences matches; closest: '- Duplicate "
                        "bill B-17 was not entered.' (matches a 'none' pattern (1): "
                        "'\\\\bnot\\\\b')")


def test_sentences_rule() -> None:
    assert sentences(MEMO) == [
        "# Close memo",
        "Net income for May was $12,345.67.",
        "The bank reconciliation ties; the unapplied cash of (1,200.00) was applied to Acme "
        "Inc. invoices.",
        "- Refund to Beta Co. approved: no.",
        "- Duplicate bill B-17 was not entered.",
    ]
    cut = sentences("Paid invoice No. 42 e.g. today. Was it paid? No. J. Smith said so!\n"
                    "| a | b |\nnext")
    assert cut == ["Paid invoice No. 42 e.g. today.", "Was it paid?", "No.",
                   "J. Smith said so!", "| a | b |", "next"]


def test_numbers_in_text_reads_magnitudes() -> None:
    assert numbers_in_text("-$1,234.50 ($30) 12.5% INV-1001 1,200,000. 12,34") == [
        1234.5, 30.0, 12.5, 1001.0, 1200000.0, 12.0, 34.0]


@pytest.mark.parametrize(("text", "value"), [
    ("1,234.50", Decimal("1234.50")), ("$1,234.50", Decimal("1234.50")),
    ("(30.00)", Decimal("-30.00")), ("($1,000)", Decimal("-1000")), ("-$5", Decimal("-5")),
    ("$-5", Decimal("-5")), (" 7 ", Decimal("7")), ("12.5%", Decimal("12.5")),
    ("1e-05", Decimal("0.00001")), ("€ 3", Decimal("3")),
    ("12,34", None), ("1,0000", None), ("abc", None), ("", None), ("1.2.3", None),
])
def test_parse_number(text: str, value: Decimal | None) -> None:
    assert parse_number(text) == value


# --- custom -----------------------------------------------------------------------------

CUSTOM = '''
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Found:
    ok: bool


def check(ws: Path, ref: Path) -> list[dict]:
    ok = Found((ws / "out" / "x.txt").is_file())
    return [{"name": "has_x", "passed": ok.ok, "detail": "x present" if ok.ok else "no x"},
            {"name": "ref_seen", "passed": (ref / "expected.txt").is_file(),
             "metrics": {"n": 1}}]
'''


def test_custom_results_are_named_after_the_check(ctx: CheckContext) -> None:
    put(ctx.reference, "checks/mine.py", CUSTOM)
    put(ctx.reference, "expected.txt", "")
    specs = parse_checks([{"type": "custom", "module": "checks/mine.py", "name": "mine"}])
    [fail, ok] = run_check(specs[0], 0, ctx)
    assert (fail.name, fail.passed, fail.detail) == ("mine/has_x", False, "no x")
    assert (ok.name, ok.passed, ok.detail, dict(ok.metrics)) == ("mine/ref_seen", True, "",
                                                                 {"n": 1})
    put(ctx.workspace, "out/x.txt", "")
    assert all(r.passed for r in run_check(specs[0], 0, ctx))


@pytest.mark.parametrize(("returned", "message"), [
    ("None", "must return a non-empty list of dicts, got NoneType"),
    ("[]", "must return a non-empty list of dicts, got list (empty)"),
    ("['x']", "result [0] is a str, not a dict"),
    ("[{'name': 'a', 'passed': 'yes'}]", "'passed' must be true or false, got 'yes'"),
    ("[{'name': 'a', 'pass': True}]", "unknown keys ['pass']"),
    ("[{'passed': True}]", "'name' must be a non-empty string, got None"),
    ("[{'name': 'a', 'passed': True}, {'name': 'a', 'passed': True}]", "name 'a' used twice"),
    ("[{'name': 'a', 'passed': True, 'detail': 3}]", "'detail' must be a string"),
])
def test_custom_bad_shape_is_a_grader_error(ctx: CheckContext, returned: str,
                                            message: str) -> None:
    put(ctx.reference, "c.py", f"def check(ws, ref):\n    return {returned}\n")
    put(ctx.workspace, "out/a.csv", "id\n1\n")
    specs = parse_checks([{"type": "custom", "module": "c.py"},
                          {"type": "csv_row_count", "path": "out/a.csv", "equals": 1}])
    verdict = evaluate(specs, ctx, version="test")
    assert verdict.status == "grader_error"
    assert [g.check for g in verdict.grader_errors] == ["custom#1"]
    assert message in verdict.grader_errors[0].error
    assert [r.name for r in verdict.results] == ["csv_row_count#2"]  # the others still ran


def test_custom_module_is_never_taken_from_the_workspace(ctx: CheckContext) -> None:
    put(ctx.workspace, "c.py", "def check(ws, ref):\n    return [{'name': 'a', 'passed': True}]\n")
    verdict = evaluate(parse_checks([{"type": "custom", "module": "c.py"}]), ctx, version="t")
    assert verdict.status == "grader_error"
    assert "reference file c.py not found" in verdict.grader_errors[0].error


def test_custom_module_without_check_is_a_grader_error(ctx: CheckContext) -> None:
    put(ctx.reference, "c.py", "x = 1\n")
    verdict = evaluate(parse_checks([{"type": "custom", "module": "c.py"}]), ctx, version="t")
    assert "c.py defines no check(ws, ref) function" in verdict.grader_errors[0].error


@pytest.mark.parametrize(("body", "message"), [
    ("import sys\nsys.exit(3)\ndef check(ws, ref):\n    return []\n",
     "c.py: importing it failed: SystemExit: 3"),
    ("def check(ws, ref):\n    raise SystemExit('stop')\n",
     "c.py: check(ws, ref) raised SystemExit: stop"),
    ("def check(ws, ref):\n    return {}['missing']\n",
     "c.py: check(ws, ref) raised KeyError: 'missing'"),
])
def test_a_custom_module_that_exits_or_raises_is_one_grader_error_naming_it(
        ctx: CheckContext, body: str, message: str) -> None:
    put(ctx.reference, "c.py", body)
    put(ctx.workspace, "out/a.csv", "id\n1\n")
    specs = parse_checks([{"type": "custom", "module": "c.py"},
                          {"type": "csv_row_count", "path": "out/a.csv", "equals": 1}])
    verdict = evaluate(specs, ctx, version="test")  # never SystemExit out of the evaluation
    assert [(g.check, g.error) for g in verdict.grader_errors] == [
        ("custom#1", f"RuntimeError: {message}")]
    assert [r.name for r in verdict.results] == ["csv_row_count#2"]  # the others still ran


@pytest.mark.parametrize(("body", "step"), [
    ("def check(ws, ref):\n    while True:\n        pass\n", "check(ws, ref)"),
    ("def check(ws, ref):\n    while True:\n        try:\n            sum(range(10**6))\n"
     "        except Exception:\n            pass\n", "check(ws, ref)"),
    ("import time\ndef check(ws, ref):\n    time.sleep(600)\n", "check(ws, ref)"),
    ("import time\ntime.sleep(600)\ndef check(ws, ref):\n    return []\n", "importing it"),
], ids=["loop", "loop-catching-exception", "sleep", "sleep-on-import"])
def test_a_custom_module_that_never_returns_is_a_grader_error_at_the_bound(
        ctx: CheckContext, monkeypatch: pytest.MonkeyPatch, body: str, step: str) -> None:
    monkeypatch.setenv("ERPSIM_MODULE_TIMEOUT_S", "0.5")
    put(ctx.reference, "c.py", body)
    put(ctx.workspace, "out/a.csv", "id\n1\n")
    specs = parse_checks([{"type": "custom", "module": "c.py"},
                          {"type": "csv_row_count", "path": "out/a.csv", "equals": 1}])
    handler, (left, _) = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)
    started = time.monotonic()
    verdict = evaluate(specs, ctx, version="test")
    assert time.monotonic() - started < 5
    assert [(g.check, g.error) for g in verdict.grader_errors] == [
        ("custom#1", f"RuntimeError: c.py: {step} did not end within 0.5 s (the bound of "
                     "ERPSIM_MODULE_TIMEOUT_S)")]
    assert [r.name for r in verdict.results] == ["csv_row_count#2"]  # the others still ran
    # an alarm set before (pytest-timeout's, when it runs) keeps its handler and its time
    assert signal.getsignal(signal.SIGALRM) == handler
    after, _ = signal.getitimer(signal.ITIMER_REAL)
    assert (after == 0) if left == 0 else (left - 5 < after < left)


def test_an_alarm_set_before_fires_when_due_and_the_module_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ERPSIM_MODULE_TIMEOUT_S", "20")
    put(tmp_path, "c.py", "import time\ndef check(ws, ref):\n    time.sleep(0.6)\n"
                          "    return 'done'\n")
    fired: list[float] = []
    before = signal.signal(signal.SIGALRM, lambda *_: fired.append(time.monotonic()))
    saved = signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        started = time.monotonic()
        assert call_module(tmp_path / "c.py", "c.py", "check", tmp_path, tmp_path) == "done"
        time.sleep(0.3)  # an alarm re-armed after it was delivered would fire again here
        assert len(fired) == 1 and 0.15 < fired[0] - started < 0.55, fired
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, before)
        signal.setitimer(signal.ITIMER_REAL, *saved)


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf"])
def test_a_bad_module_bound_is_a_grader_error_naming_it(
        ctx: CheckContext, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ERPSIM_MODULE_TIMEOUT_S", value)
    put(ctx.reference, "c.py", "def check(ws, ref):\n    return [{'name': 'a', 'passed': True}]\n")
    verdict = evaluate(parse_checks([{"type": "custom", "module": "c.py"}]), ctx, version="t")
    assert verdict.grader_errors[0].error == (
        f"ValueError: ERPSIM_MODULE_TIMEOUT_S={value!r}: expected a positive number of seconds")


def test_a_module_within_its_bound_leaves_no_timer(ctx: CheckContext,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ERPSIM_MODULE_TIMEOUT_S", "30")
    put(ctx.reference, "c.py", "def check(ws, ref):\n    return [{'name': 'a', 'passed': True}]\n")
    handler = signal.getsignal(signal.SIGALRM)
    verdict = evaluate(parse_checks([{"type": "custom", "module": "c.py"}]), ctx, version="t")
    assert verdict.status == "accepted"
    assert signal.getsignal(signal.SIGALRM) == handler


def test_a_custom_module_that_changes_directory_has_it_put_back(ctx: CheckContext,
                                                                tmp_path: Path) -> None:
    put(ctx.reference, "c.py", "import os\ndef check(ws, ref):\n    os.chdir(ws)\n"
                               "    return [{'name': 'a', 'passed': True}]\n")
    before = os.getcwd()
    verdict = evaluate(parse_checks([{"type": "custom", "module": "c.py"}]), ctx, version="t")
    assert verdict.status == "accepted"
    assert os.getcwd() == before


# --- missing and unusable files ---------------------------------------------------------

ONE_OF_EACH: list[dict[str, Any]] = [
    {"type": "csv_columns", "columns": ["a"]},
    {"type": "csv_row_count", "equals": 1},
    {"type": "csv_set_equal", "column": "a", "ref": "r.csv"},
    {"type": "csv_values_match", "key": "a", "columns": ["b"], "ref": "r.csv"},
    {"type": "text_contains_all", "phrases": ["x"]},
    {"type": "text_contains_any", "phrases": ["x"]},
    {"type": "text_not_contains", "phrases": ["x"]},
    {"type": "text_matches_all", "patterns": ["x"]},
    {"type": "text_numbers_present", "numbers": [1]},
    {"type": "text_sentence_matches", "all": ["x"]},
]
IDS = [c["type"] for c in ONE_OF_EACH]


@pytest.mark.parametrize("raw", ONE_OF_EACH, ids=IDS)
def test_a_missing_file_fails_naming_the_path(ctx: CheckContext, raw: dict[str, Any]) -> None:
    put(ctx.reference, "r.csv", "a,b\n1,2\n")
    r = check(ctx, path="out/missing.csv", **raw)
    assert not r.passed
    assert r.detail == "out/missing.csv: no such file in the workspace"


@pytest.mark.parametrize("raw", ONE_OF_EACH, ids=IDS)
def test_a_non_utf8_file_fails(ctx: CheckContext, raw: dict[str, Any]) -> None:
    put(ctx.reference, "r.csv", "a,b\n1,2\n")
    put(ctx.workspace, "out/a.csv", b"a,b\n\xff\xfe,1\n")
    r = check(ctx, path="out/a.csv", **raw)
    assert not r.passed
    assert r.detail == "out/a.csv: not UTF-8 text (invalid byte 0xff at offset 4)"


@pytest.mark.parametrize(("content", "detail"), [
    ('a,b\n"x"y,2\n', "out/a.csv: not a readable CSV (line 2: ',' expected after '\"')"),
    ("a,b\n1,2,3\n", "out/a.csv: not a readable CSV (line 2 has 3 fields, the header 2; an "
                     "unquoted comma?)"),
    ("a,b\nx\x00,1\n", "out/a.csv: not a readable CSV (contains NUL bytes; a binary file?)"),
    ("\n\n", "out/a.csv: empty (no header row)"),
    ("", "out/a.csv: empty (no header row)"),
])
def test_a_garbled_csv_fails_with_a_clear_detail(ctx: CheckContext, content: str,
                                                 detail: str) -> None:
    put(ctx.workspace, "out/a.csv", content)
    r = check(ctx, type="csv_row_count", path="out/a.csv", equals=1)
    assert not r.passed
    assert r.detail == detail


def test_trailing_empty_fields_and_short_rows_are_tolerated(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/a.csv", "a,b\n1,2,,\n3\n")
    assert check(ctx, type="csv_row_count", path="out/a.csv", equals=2).passed


def test_a_tsv_is_tab_separated(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/a.tsv", "a\tb\n1,5\t2\n")
    assert check(ctx, type="csv_columns", path="out/a.tsv", columns=["a", "b"],
                 exact=True).passed


def test_a_directory_or_a_link_out_of_the_workspace_fails(ctx: CheckContext,
                                                          tmp_path: Path) -> None:
    assert ctx.workspace is not None
    (ctx.workspace / "out" / "d.csv").mkdir(parents=True)
    r = check(ctx, type="csv_row_count", path="out/d.csv", equals=0)
    assert r.detail == "out/d.csv: a directory, not a file"
    secret = put(tmp_path, "ref/answer.csv", "a\n1\n")
    os.symlink(secret, ctx.workspace / "out" / "answer.csv")
    r = check(ctx, type="csv_row_count", path="out/answer.csv", equals=1)
    assert not r.passed
    assert r.detail == "out/answer.csv: a link leading outside the workspace; not read"
    os.symlink(ctx.workspace / "out" / "gone.csv", ctx.workspace / "out" / "dangling.csv")
    r = check(ctx, type="csv_row_count", path="out/dangling.csv", equals=1)
    assert r.detail == "out/dangling.csv: no such file in the workspace (a dangling link)"


def test_no_workspace_is_a_grader_error(sqlite_store: EventStore) -> None:
    ctx = CheckContext(sqlite_store)
    verdict = evaluate(parse_checks([{"type": "file_exists", "path": "x"}]), ctx, version="t")
    assert verdict.status == "grader_error"
    assert "no workspace" in verdict.grader_errors[0].error


# --- the strict validator ---------------------------------------------------------------


def test_validator_unknown_and_missing_fields() -> None:
    got = problems({"type": "csv_columns", "path": "out/a.csv", "columns": ["a"], "colums": 1},
                   {"type": "csv_set_equal", "path": "out/a.csv", "column": "a"})
    assert got["checks[0].colums"].startswith("unknown field for csv_columns; expected one "
                                              "of: at_turn, columns, daily, exact, name, path")
    assert got["checks[1].ref"] == "required field of csv_set_equal is missing"


@pytest.mark.parametrize(("raw", "path", "message"), [
    ({"type": "csv_values_match", "path": "a.csv", "ref": "r.csv", "key": "k",
      "columns": ["v"], "min_accuracy": 1.5}, "checks[0].min_accuracy",
     "Input should be less than or equal to 1"),
    ({"type": "csv_values_match", "path": "a.csv", "ref": "r.csv", "key": "k",
      "columns": ["v"], "tolerance": -0.01}, "checks[0].tolerance",
     "Input should be greater than or equal to 0"),
    ({"type": "csv_values_match", "path": "a.csv", "ref": "r.csv", "key": "k",
      "columns": ["v"], "tolerance": float("nan")}, "checks[0].tolerance",
     "Input should be a finite number"),
    ({"type": "text_numbers_present", "path": "a.md", "numbers": [1], "rel_tol": 1.01},
     "checks[0].rel_tol", "Input should be less than or equal to 1"),
    ({"type": "text_numbers_present", "path": "a.md", "numbers": [1], "min_count": 0},
     "checks[0].min_count", "Input should be greater than or equal to 1"),
    ({"type": "text_numbers_present", "path": "a.md", "numbers": [1, 2], "min_count": 3},
     "checks[0]", "min_count 3 exceeds the 2 numbers listed"),
    ({"type": "csv_row_count", "path": "a.csv", "equals": 1, "tolerance": -1},
     "checks[0].tolerance", "Input should be greater than or equal to 0"),
    ({"type": "csv_row_count", "path": "a.csv", "equals": 1, "equals_ref": "r.csv"},
     "checks[0]", "set exactly one of equals, equals_ref"),
    ({"type": "text_matches_all", "path": "a.md", "patterns": ["ok", "(unclosed"]},
     "checks[0].patterns[1]", "not a valid regular expression: missing ), unterminated "
                              "subpattern at position 0"),
    ({"type": "text_sentence_matches", "path": "a.md", "all": ["x"], "none": ["[z"]},
     "checks[0].none[0]", "not a valid regular expression"),
    ({"type": "text_contains_all", "path": "a.md", "phrases": []},
     "checks[0].phrases", "List should have at least 1 item"),
    ({"type": "text_not_contains", "path": "a.md", "phrases": ["ok", "  "]},
     "checks[0].phrases[1]", "a phrase must not be blank"),
    ({"type": "csv_columns", "path": "/etc/passwd", "columns": ["a"]},
     "checks[0].path", "expected a relative path inside the workspace"),
    ({"type": "file_exists", "path": "out/../../x"},
     "checks[0].path", "expected a relative path inside the workspace"),
    ({"type": "csv_columns", "path": "out/*.csv", "columns": ["a"]},
     "checks[0].path", "expected the path of one file, not a glob"),
    ({"type": "csv_set_equal", "path": "a.csv", "column": "a", "ref": "../answers.csv"},
     "checks[0].ref", "expected a relative path inside the reference folder"),
    ({"type": "csv_set_equal", "path": "a.csv", "column": "a", "ref": "r.csv",
      "normalize": ["lower"]}, "checks[0].normalize[0]",
     "Input should be 'strip', 'casefold', 'space' or 'basename'"),
    ({"type": "custom", "module": "/tmp/c.py"}, "checks[0].module",
     "expected a relative path inside the reference folder"),
    ({"type": "custom", "module": "c.txt"}, "checks[0].module", "expected a .py file"),
    ({"type": "csv_values_match", "path": "a.csv", "ref": "r.csv", "key": ["a", "b"],
      "columns": ["v"], "must_match_keys": ["x", ["x", "y", "z"]]}, "checks[0]",
     "must_match_keys[0] has 1 part(s); the key has 2 column(s)"),
    ({"type": "csv_values_match", "path": "a.csv", "ref": "r.csv", "key": "k",
      "columns": ["v"], "numeric": ["w"]}, "checks[0]",
     "numeric columns must be among columns; not there: w"),
    ({"type": "csv_columns", "path": "a.csv", "columns": ["a", "a"]}, "checks[0].columns",
     "column listed twice: a"),
    ({"type": "csv_columns", "path": "a.csv", "columns": ["a"], "exact": "yes"},
     "checks[0].exact", "Input should be a valid boolean"),
    ({"type": "csv_row_count", "path": "a.csv", "equals": "3"}, "checks[0].equals",
     "Input should be a valid integer"),
])
def test_validator_rejects_with_the_path(raw: dict[str, Any], path: str, message: str) -> None:
    got = problems(raw)
    assert path in got, got
    assert message in got[path]


def test_validator_reports_every_bad_check_at_once() -> None:
    got = problems({"type": "csv_columns", "path": "a.csv", "columns": ["a"]},
                   {"type": "text_matches_all", "path": "a.md", "patterns": ["("]},
                   {"type": "csv_values_match", "path": "a.csv", "ref": "r.csv", "key": "k",
                    "columns": ["v"], "min_accuracy": -1},
                   {"type": "file_exists", "path": "x", "daily": True})
    assert sorted(got) == ["checks[1].patterns[0]", "checks[2].min_accuracy", "checks[3].daily"]


def test_valid_specs_keep_their_defaults() -> None:
    [values, numbers, sets] = parse_checks([
        {"type": "csv_values_match", "path": "a.csv", "ref": "r.csv", "key": ["a", "b"],
         "columns": ["v"], "must_match_keys": ["x | y", ["p", "q"]], "tolerance": 1},
        {"type": "text_numbers_present", "path": "a.md", "numbers": [1, 2.5]},
        {"type": "csv_set_equal", "path": "a.csv", "column": "c", "ref": "r.csv"}])
    assert values.min_accuracy == 1.0 and values.tolerance == 1.0  # type: ignore[attr-defined]
    assert values.must_keys() == [("x", "y"), ("p", "q")]  # type: ignore[attr-defined]
    assert numbers.min_count is None and numbers.rel_tol == 0.0  # type: ignore[attr-defined]
    assert sets.normalize == ["strip"] and sets.required  # type: ignore[attr-defined]
    # A one-column key written as a list: an "a|b" must-match key is one literal value.
    [single] = parse_checks([{"type": "csv_values_match", "path": "a.csv", "ref": "r.csv",
                              "key": ["id"], "columns": ["v"], "must_match_keys": ["A|1"]}])
    assert single.must_keys() == [("A|1",)]  # type: ignore[attr-defined]


# --- typography: a curly apostrophe is the ' a phrase or pattern names ----------------------

TYPESET = ("The customer didn\u2019t pay the \u201cdisputed\u201d invoice; it is "
           "pre\u2011approved for write\u2013off.\n")


@pytest.mark.parametrize("spec", [
    {"type": "text_contains_all", "phrases": ["didn't pay", '"disputed"', "pre-approved",
                                              "write-off"]},
    {"type": "text_contains_any", "phrases": ["didn't pay"]},
    {"type": "text_matches_all", "patterns": [r"didn't\s+pay", r"pre-approved"]},
    {"type": "text_sentence_matches", "all": [r"didn't", r"write-off"]},
    {"type": "text_contains_all", "phrases": ["didn\u2019t pay"]},  # typeset phrase, too
])
def test_typeset_quotes_and_dashes_read_as_their_ascii_forms(ctx: CheckContext,
                                                             spec: dict[str, Any]) -> None:
    put(ctx.workspace, "out/memo.txt", TYPESET)
    result = check(ctx, path="out/memo.txt", **spec)
    assert result.passed, result.detail


def test_a_forbidden_phrase_is_found_however_it_is_typeset(ctx: CheckContext) -> None:
    put(ctx.workspace, "out/memo.txt", TYPESET)
    result = check(ctx, type="text_not_contains", path="out/memo.txt", phrases=["didn't pay"])
    assert not result.passed
    put(ctx.workspace, "out/memo.txt", "The customer didn't pay.\n")
    result = check(ctx, type="text_not_contains", path="out/memo.txt",
                   phrases=["didn\u2019t pay"])
    assert not result.passed
