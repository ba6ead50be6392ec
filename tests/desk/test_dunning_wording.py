"""dunning-emails: the total overdue, as people word it.

``C*-total-overdue`` asked for the word "total" beside the customer's overdue amount: a
right email saying "Together these come to $32,946.62, which we ask you to pay now." or
"In all, $32,946.62 is overdue ..." was refused. The amount with a word that sums it up
(total, in all, altogether, together, sum, combined, comes to, amounts to, adds up to) and
one that asks for it is the total; a wrong amount so worded is still refused (and named).
Written as a whole email in a table, a numbered list and prose (graded through the real
grading path: the business date is the task's).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.desk.output_mutants import failed_names, regrade, solved_attempt

TASK, EMAIL = "dunning-emails", "out/emails/C0003.txt"
LINES = [("INV-000111", "$6,868.20", "May 3, 2026"), ("INV-000115", "$9,044.48", "May 6, 2026"),
         ("INV-000128", "$10,017.11", "May 10, 2026"), ("INV-000134", "$2,642.07", "May 15, 2026"),
         ("INV-000140", "$4,374.76", "May 16, 2026")]
LISTED = "\n".join(f"- Invoice {n}: {a} open, due {d}." for n, a, d in LINES)
TABLE = "\n".join(["| Invoice | Due date | Open balance |", "|---|---|---|",
                   *(f"| {n} | {d} | {a} |" for n, a, d in LINES),
                   "| **Total overdue** | | **$32,946.62** |"])
ACCEPTED = {
    "table": f"Dear Gilmore-Anderson,\n\nThe invoices below are past due:\n\n{TABLE}\n\n"
             "We ask that you remit the total overdue amount of $32,946.62 by June 8, 2026.\n",
    "together": f"Dear Gilmore-Anderson,\n\n{LISTED}\n\nTogether these come to $32,946.62, "
                "which we ask you to pay now.\n",
    "in-all": f"Dear Gilmore-Anderson,\n\n{LISTED}\n\nIn all, $32,946.62 is overdue and we ask "
              "that you pay it this week.\n",
}


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(TASK)
    return solved_attempt(TASK, tmp / "solved"), tmp


def _failed(solved: tuple[Path, Path], body: str) -> set[str]:
    attempt, tmp = solved

    def edit(ws: Path) -> None:
        (ws / EMAIL).write_text(body, encoding="utf-8")

    return failed_names(regrade(attempt, TASK, tmp, edit))


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_the_total_in_other_words_is_accepted(solved: tuple[Path, Path], name: str) -> None:
    assert _failed(solved, ACCEPTED[name]) == set()


def test_a_wrong_total_so_worded_is_refused(solved: tuple[Path, Path]) -> None:
    body = ACCEPTED["together"].replace("$32,946.62", "$30,000.00")
    assert _failed(solved, body) == {"C0003-asks-each-overdue-invoice", "C0003-total-overdue"}
