"""Memos written the way people write them, graded through the real grading path.

Whole outputs in the styles a capable writer uses (headings and bullets, bold labels, a
table beside the sentences, flowing prose) were graded by the tasks' checks; these were
right and refused:

- pl-variance-memo: "Net income — $273,697.94 in May, a decrease of ..." (the dash, made a
  hyphen by the typography step, read as a minus sign: a loss), and a line or net income
  "$1,711.51 (42.3%) below April" (above/below April are directions too).
- revenue-budget-variance: "ran ahead of budget", "beat budget by", "missed budget by",
  "behind budget by $X over the month" (the "over" of "over the month" read as over
  budget), a favorable/unfavorable variance, and the totals' "a shortfall of $3,765.62"
  (the lines' checks took "shortfall", the totals' did not).
- customer-profitability: a percentage whose one decimal is .0 written whole ("35%" for
  35.0, "9%", "18%"), and "under the 40% threshold" / "under our 20% floor" for below.
- contractor-accrual: the entry "dated May 29" in a memo written that day (the date
  without its year).

Each is accepted now; the same output with a wrong fact put in is still refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.desk.output_mutants import failed_names, regrade, solved_attempt

FILES = {"pl-variance-memo": "out/variance_memo.md",
         "revenue-budget-variance": "out/commentary.txt",
         "customer-profitability": "out/memo.txt",
         "contractor-accrual": "out/accrual_memo.txt"}

PL_DASH = """# May P&L commentary

1. Service revenue — decreased $86,249.11 (22.1%).
2. Software subscriptions — decreased $1,711.51 (42.3%).
3. Contractors — increased $2,030.96 (19.4%).
4. Card processing fees — increased $1,123.82 (136.9%).

Net income — $273,697.94 in May, a decrease of $87,805.81 from April.
"""
PL_BELOW = """# May P&L commentary

- Service revenue: $86,249.11 (22.1%) below April, so revenue decreased.
- Software subscriptions were $1,711.51 (42.3%) below April.
- Contractors came in $2,030.96 (19.4%) above April.
- Card processing fees were $1,123.82 (136.9%) above the prior month.

May closed with net income of $273,697.94, $87,805.81 below April.
"""
RBV_WORDS = """## May revenue vs budget — flagged lines

1. **Managed services** ran ahead of budget: $68,832.06 actual against $58,300.00 budgeted, \
a variance of $10,532.06 (+18.1%).
2. **Training session** beat budget by $9,204.97, with $79,804.97 actual against a \
$70,600.00 budget (+13.0%).
3. **Support subscription** missed budget by $8,784.42, with $49,915.58 actual against a \
$58,700.00 budget (-15.0%).
4. **Data migration** was behind budget by $19,469.85 over the month, with $68,930.15 \
actual against a $88,400.00 budget (-22.0%).

**Total:** $575,434.38 actual against a $579,200.00 total budget, a shortfall of $3,765.62.
"""
RBV_FAVORABLE = """\
Data migration had an unfavorable variance of $19,469.85, with actual revenue of \
$68,930.15 against a budget of $88,400.00.
Support subscription had an unfavorable variance of $8,784.42, with actual revenue of \
$49,915.58 against a budget of $58,700.00.
Managed services had a favorable variance of $10,532.06, with actual revenue of \
$68,832.06 against a budget of $58,300.00.
Training session had a favorable variance of $9,204.97, with actual revenue of \
$79,804.97 against a budget of $70,600.00.
In total, actual revenue of $575,434.38 against a total budget of $579,200.00 gives an \
unfavorable variance of $3,765.62.
"""
CP_WHOLE = """Quarterly customer profitability (March-May 2026)

Total revenue: $654,936.64; total gross margin: $229,372.40 (35%).
The five largest customers brought in $229,160.31 combined, a 35% share that is under our \
40% concentration threshold, so we are not concentrated.
The largest customer, Vasquez-Nguyen, billed $58,977.99, a 9% share of revenue.
Jones, Brown and Cunningham should get a pricing review: $12,920.38 revenue, $2,320.43 \
margin (18%), below our 20% floor.
Walls Group should get a pricing review: $11,836.49 revenue, $88.20 margin (0.7%), under \
our 20% floor.
Marshall, Welch and Barnes should get a pricing review: $11,247.35 revenue, $840.82 margin \
(7.5%), below our 20% floor.
"""
CA_NO_YEAR = """Hi,

Today I accrued 17,015.51 USD for the 198.5 hours our contractors worked in May that have \
yet to be billed. The accrual was posted as a manual journal entry dated May 29 that \
debited 6300 Contractors and credited 2100 Accrued liabilities for 17,015.51 USD.

Thanks
"""

ACCEPTED = {
    "pl-dash": ("pl-variance-memo", PL_DASH),
    "pl-below-above-april": ("pl-variance-memo", PL_BELOW),
    "rbv-ahead-beat-missed-behind": ("revenue-budget-variance", RBV_WORDS),
    "rbv-favorable": ("revenue-budget-variance", RBV_FAVORABLE),
    "cp-whole-percent-under": ("customer-profitability", CP_WHOLE),
    "ca-date-without-year": ("contractor-accrual", CA_NO_YEAR),
}

# the same outputs with one wrong fact: (task, text, the checks that fail)
REFUSED = {
    "pl-net-income-negative": (
        "pl-variance-memo", PL_DASH.replace("Net income — $273", "Net income: -$273"),
        {"net-income-sentence"}),
    "pl-above-april-for-a-decrease": (
        "pl-variance-memo",
        PL_BELOW.replace("$1,711.51 (42.3%) below April", "$1,711.51 (42.3%) above April"),
        {"explains-each-line-the-rule-explains"}),
    "rbv-ahead-for-an-under": (
        "revenue-budget-variance",
        RBV_WORDS.replace("was behind budget by $19,469.85",
                          "was ahead of budget by $19,469.85"),
        {"commentary-each-flagged-line"}),
    "rbv-favorable-total": (
        "revenue-budget-variance",
        RBV_FAVORABLE.replace("gives an unfavorable", "gives a favorable"),
        {"commentary-totals"}),
    "cp-whole-percent-wrong": (
        "customer-profitability", CP_WHOLE.replace("(18%)", "(19%)"), {"memo-review-C0017"}),
    "cp-not-under": (
        "customer-profitability", CP_WHOLE.replace("is under our", "is not under our"),
        {"memo-concentration-below-threshold"}),
    "ca-another-year": (
        "contractor-accrual", CA_NO_YEAR.replace("dated May 29", "dated May 29, 2025"),
        {"memo-states-the-entry"}),
    "ca-another-day": (
        "contractor-accrual", CA_NO_YEAR.replace("dated May 29", "dated May 28"),
        {"memo-states-the-entry"}),
}


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Each task's solution attempt, solved on first use."""
    return {}


def _failed(attempts: dict[str, tuple[Path, Path]], tmp_path_factory: pytest.TempPathFactory,
            task: str, text: str) -> set[str]:
    if task not in attempts:
        tmp = tmp_path_factory.mktemp(task)
        attempts[task] = (solved_attempt(task, tmp / "solved"), tmp)
    attempt, tmp = attempts[task]

    def edit(ws: Path) -> None:
        (ws / FILES[task]).write_text(text, encoding="utf-8")

    return failed_names(regrade(attempt, task, tmp, edit))


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_a_right_output_in_natural_words_is_accepted(
        attempts: dict[str, tuple[Path, Path]], tmp_path_factory: pytest.TempPathFactory,
        name: str) -> None:
    task, text = ACCEPTED[name]
    assert _failed(attempts, tmp_path_factory, task, text) == set()


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_same_output_with_a_wrong_fact_is_refused(
        attempts: dict[str, tuple[Path, Path]], tmp_path_factory: pytest.TempPathFactory,
        name: str) -> None:
    task, text, checks = REFUSED[name]
    assert _failed(attempts, tmp_path_factory, task, text) == checks
