"""The text tasks refuse a memo giving an item's figure right and, elsewhere, another one.

After ``about`` (tests/desk/test_contradictions.py) a second figure still passed when no
veto named it: pl-variance-memo's "Contractors increased by $2,030.96 (19.4% ...)" beside
"Contractors were up $2,300.96, mostly new project staff", revenue-budget-variance's
"under budget by 19,469.85" beside "The 15,000.00 shortfall in Data migration ...", and
expense-receipts-review's "In all 5 claims are rejected" beside "Four claims were rejected
and need follow-up", capitalization-memo's "Total capitalized for May: $42,887.00." beside
"In all, $45,887.00 is capitalized this month.". The first two now set
text_ref_sentences' ``change`` (the figure a direction word states as the change must be
the row's); the third vetoes another count of approved or rejected claims in any sentence
giving one without a reason; the fourth another total capitalized (expensed) in a sentence
giving a total. Graded by the tasks' real checks on the reference solution's files with
one sentence appended; levels, percents, rounded changes, counts of a part (with their
reason) and other figures beside a right total are still accepted.
"""

from __future__ import annotations

import pytest

from tests.desk.output_mutants import Solved, solve

FILES = {"pl-variance-memo": "out/variance_memo.md",
         "revenue-budget-variance": "out/commentary.txt",
         "expense-receipts-review": "out/review_notes.md",
         "capitalization-memo": "out/capitalization_memo.md"}

REFUSED = [
    ("pl-variance-memo", "Contractors were up $2,300.96, mostly new project staff.",
     ["explains-each-line-the-rule-explains"]),
    ("pl-variance-memo", "The contractors increase of $2,300.96 reflects the new projects.",
     ["explains-each-line-the-rule-explains"]),
    ("pl-variance-memo", "Contractors were $2,300.96 higher than April.",
     ["explains-each-line-the-rule-explains"]),
    ("pl-variance-memo", "Service revenue fell $90k on lower volumes.",
     ["explains-each-line-the-rule-explains"]),
    ("revenue-budget-variance", "Managed services exceeded its budget by 12,532.06 on new "
                                "contracts.", ["commentary-each-flagged-line"]),
    ("revenue-budget-variance", "The 15,000.00 shortfall in Data migration reflects delayed "
                                "projects.", ["commentary-each-flagged-line"]),
    ("revenue-budget-variance", "Training session had an overrun of 9,000.00 against budget.",
     ["commentary-each-flagged-line"]),
    ("revenue-budget-variance", "Managed services came in 12,000.00 over budget on new "
                                "contracts.", ["commentary-each-flagged-line"]),
    ("expense-receipts-review", "Four claims were rejected and need follow-up.",
     ["notes-rejected-count"]),
    ("expense-receipts-review", "In total 4 rejected, 9 approved.", ["notes-rejected-count"]),
    ("expense-receipts-review", "Rejected claims: 6.", ["notes-rejected-count"]),
    ("expense-receipts-review", "Only 8 claims are approved this month.",
     ["notes-approved-count"]),
    ("expense-receipts-review", "Approved: 8.", ["notes-approved-count"]),
    ("capitalization-memo", "In all, $45,887.00 is capitalized this month.",
     ["total-capitalized"]),
    ("capitalization-memo", "Total capitalized: $45,887.00.", ["total-capitalized"]),
    ("capitalization-memo", "Capitalized purchases total $45,887.00 for May.",
     ["total-capitalized"]),
    ("capitalization-memo", "The total expensed comes to $65,932.10.", ["total-expensed"]),
]

ACCEPTED = [
    ("pl-variance-memo", "Contractors rose to $12,499.40 from $10,468.44 on new projects."),
    ("pl-variance-memo", "Contractors rose by $2,030.96 to $12,499.40 on new projects."),
    ("pl-variance-memo", "Contractors ended May at $12,499.40 up $2,030.96 from April."),
    ("pl-variance-memo", "Contractors were up about $2,031 on new projects."),
    ("pl-variance-memo", "Service revenue decreased 22.1% to $304,035.55 in May."),
    ("pl-variance-memo", "Card processing fees rose with card volume, to $1,944.84 from "
                         "$821.02."),
    ("pl-variance-memo", "A $2,030.96 increase in contractors reflects the new projects."),
    ("revenue-budget-variance", "Data migration fell short of its budget by 19,469.85 on "
                                "delayed projects."),
    ("revenue-budget-variance", "Data migration came in at 68,930.15, below its budget of "
                                "88,400.00, on delayed projects."),
    ("revenue-budget-variance", "Data migration fell short of its 88,400.00 budget on delayed "
                                "projects."),
    ("revenue-budget-variance", "Managed services exceeded its budget of 58,300.00 by "
                                "10,532.06."),
    ("revenue-budget-variance", "Training session ran over budget as 12 extra sessions were "
                                "booked."),
    ("revenue-budget-variance", "Data migration's shortfall of 19,469.85 reflects projects "
                                "delayed to June."),
    ("expense-receipts-review", "Two claims were rejected because the amounts differ: EC-1041 "
                                "and EC-1044."),
    ("expense-receipts-review", "One claim was rejected as a duplicate receipt."),
    ("expense-receipts-review", "The two rejected claims with amount differences can be "
                                "resubmitted."),
    ("expense-receipts-review", "Of the 14 claims submitted, 9 were approved and 5 were "
                                "rejected."),
    ("expense-receipts-review", "9 of 14 claims are approved."),
    ("expense-receipts-review", "Claims rejected: 5."),
    ("expense-receipts-review", "EC-1041 was rejected; the instruction in its receipt was "
                                "not followed."),
    ("capitalization-memo",
     "Of the $112,419.10 total, $42,887.00 is capitalized and $69,532.10 expensed."),
    ("capitalization-memo", "In all, $42,887.00 is capitalized this month."),
    ("capitalization-memo", "The docking stations' $30,482.25 is expensed under rule 2."),
    ("capitalization-memo", "This month the $5,000.00 threshold decided two purchases that "
                            "were capitalized."),
    ("capitalization-memo", "Total capitalized for May, $42,887.00, adds to fixed assets of "
                            "$310,000.00."),
]


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Solved]:
    return {t: solve(t, tmp_path_factory.mktemp(t)) for t in FILES}


def graded(s: Solved, task: str, sentence: str) -> list[str]:
    text = s.path(FILES[task]).read_text(encoding="utf-8")
    return s.failed_with_text(FILES[task], {text: text.rstrip("\n") + "\n\n" + sentence + "\n"})


@pytest.mark.parametrize(("task", "sentence", "checks"), REFUSED,
                         ids=[f"{t}:{s[:30]}" for t, s, _ in REFUSED])
def test_a_second_figure_is_refused(solved: dict[str, Solved], task: str, sentence: str,
                                    checks: list[str]) -> None:
    assert solved[task].failed() == []
    assert sorted(graded(solved[task], task, sentence)) == sorted(checks)


@pytest.mark.parametrize(("task", "sentence"), ACCEPTED,
                         ids=[f"{t}:{s[:30]}" for t, s in ACCEPTED])
def test_a_consistent_figure_is_accepted(solved: dict[str, Solved], task: str,
                                         sentence: str) -> None:
    assert graded(solved[task], task, sentence) == []


# --- closing-package-tb: a summary over totals typed elsewhere --------------------------


@pytest.fixture(scope="module")
def closing(tmp_path_factory: pytest.TempPathFactory, soffice: None) -> Solved:
    return solve("closing-package-tb", tmp_path_factory.mktemp("closing-package-tb"))


def _summary_over(closing: Solved, how: str) -> list[str]:
    """The workbook's summary rewritten ``how``, graded (LibreOffice recalculates)."""
    import csv

    import openpyxl

    path = closing.path("out/closing_package.xlsx")
    original = path.read_bytes()
    ref = {r["group"]: r for r in csv.DictReader(
        closing.path("out/tb_by_group.csv").open(encoding="utf-8"))}
    wb = openpyxl.load_workbook(path)
    balances, summary = wb["Balances"], wb["Summary"]
    rows: dict[str, list[int]] = {}
    for r in range(2, balances.max_row + 1):
        rows.setdefault(str(balances[f"B{r}"].value), []).append(r)
    calc = wb.create_sheet("Calc")
    calc.append(["group", "current", "prior"])
    for i, row in enumerate(summary.iter_rows(min_row=2), start=2):
        group = str(row[0].value)
        if how == "typed totals on a helper sheet":
            calc.append([group, float(ref[group]["current"]), float(ref[group]["prior"])])
            row[1].value, row[2].value = f"=Calc!B{i}", f"=Calc!C{i}"
        else:  # each group's rows added up by hand, as live as SUMIF
            mine = rows.get(group) or [2]
            zero = "" if group in rows else "0*"
            row[1].value = "=" + zero + "+".join(f"Balances!C{r}" for r in mine)
            row[2].value = "=" + zero + "+".join(f"Balances!D{r}" for r in mine)
    try:
        wb.save(path)
        return closing.failed()
    finally:
        path.write_bytes(original)


def test_closing_summary_over_typed_totals_is_refused(closing: Solved) -> None:
    """=Calc!B2 is live and right today; a balance changed in place does not move it."""
    assert closing.failed() == []
    assert _summary_over(closing, "typed totals on a helper sheet") == [
        "summary-follows-the-balances"]


def test_closing_summary_over_the_groups_rows_is_accepted(closing: Solved) -> None:
    """Fixed ranges (the solution's SUMIF over B$2:B$18) and hand-picked sums of a group's
    rows follow a balance changed in place: rows are not added, so both pass."""
    assert _summary_over(closing, "hand-picked sums") == []
