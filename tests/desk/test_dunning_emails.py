"""dunning-emails: the reference emails pass; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's checks grade its emails.
Each mutant of each email (a figure a cent off, "overdue" turned "not yet due", a line
negated, two invoices' figures swapped, an invoice line dropped) and of the set of
emails (an email under another customer's id, a not-yet-due or disputed invoice added)
must fail at least one required check.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from tests.desk.output_mutants import Solved, solve, survivors, text_mutants

TASK = "dunning-emails"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def _emails(solved: Solved) -> list[str]:
    return sorted(p.name for p in solved.path("out/emails").glob("*.txt"))


def test_reference_emails_pass(solved: Solved) -> None:
    assert solved.failed() == []
    assert len(_emails(solved)) == 3


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert "emails-exist" in s.failed()


def test_every_text_mutant_fails(solved: Solved) -> None:
    seen: set[str] = set()
    for name in _emails(solved):
        rel = f"out/emails/{name}"
        counts, alive = survivors(solved, rel, text_mutants(solved.path(rel)))
        assert alive == [], name
        seen |= set(counts)
    assert {"wrong figure", "wrong qualifier", "wrong sentence", "missing row"} <= seen


def test_wrong_customer_id_fails(solved: Solved) -> None:
    first, second = _emails(solved)[:2]
    a, b = solved.path(f"out/emails/{first}"), solved.path(f"out/emails/{second}")
    ta, tb = a.read_bytes(), b.read_bytes()
    try:
        a.write_bytes(tb)
        b.write_bytes(ta)  # each email under the other customer's id
        assert len(solved.failed()) >= 4
    finally:
        a.write_bytes(ta)
        b.write_bytes(tb)


def test_excluded_invoice_added_fails(solved: Solved) -> None:
    ref = solved.task.loaded.reference_dir
    assert ref is not None
    with open(ref / "dunning.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["action"] == "exclude"]
    assert {r["why"] for r in rows} == {"not yet due", "disputed"}
    for r in rows:
        path = solved.path(f"out/emails/{r['customer_id']}.txt")
        original = path.read_text(encoding="utf-8")
        try:
            path.write_text(original.replace(
                "The total", f"- Invoice {r['invoice_id']}: ${r['open_balance']} open, due "
                             f"{r['due_date']}.\n\nThe total"), encoding="utf-8")
            assert f"{r['customer_id']}-nothing-not-due-or-on-hold" in solved.failed(), r
        finally:
            path.write_text(original, encoding="utf-8")


def test_email_to_a_customer_not_in_the_note_fails(solved: Solved) -> None:
    extra = solved.path("out/emails/C0005.txt")
    extra.write_text("Dear customer,\n\nInvoice INV-000099: $1,000.00 open, due "
                     "2026-05-01.\n\nThe total overdue is $1,000.00.\n", encoding="utf-8")
    try:
        assert "emails-scope/emails-only-the-noted-customers" in solved.failed()
    finally:
        extra.unlink()


@pytest.mark.parametrize(("customer", "line"), [
    # the disputed invoice as the note writes it, with its amount, "explained" as left out
    ("C0004", "Invoice 30 ($939.92) is left out of this reminder while it is on hold."),
    # a not-yet-due invoice by its amount and date alone
    ("C0021", "A further $4,603.74 falls due on 2026-06-07."),
])
def test_left_out_invoice_mentioned_without_its_id_fails(solved: Solved, customer: str,
                                                         line: str) -> None:
    path = solved.path(f"out/emails/{customer}.txt")
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original.replace("Kind regards", f"{line}\n\nKind regards"),
                        encoding="utf-8")
        assert "emails-scope/emails-leave-out-unmentioned" in solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


C0003 = "out/emails/C0003.txt"




@pytest.mark.parametrize("edit", [
    # due dates as people write them (the prompt's formats are examples)
    {"due 2026-05-03.": "due 05/03/2026.", "due 2026-05-06.": "due May 6th, 2026.",
     "due 2026-05-10.": "due 10-May-2026.", "due 2026-05-15.": "due 15 May 2026."},
    # the total in other words
    {"The total overdue is": "Total due:"},
    {"The total overdue is": "The total outstanding is"},
    {"The total overdue is": "Please remit the total of"},
])
def test_email_in_other_words_passes(solved: Solved, edit: dict[str, str]) -> None:
    """Each edit states the same facts the way a collections clerk writes them."""
    assert solved.failed_with_text(C0003, edit) == []


@pytest.mark.parametrize(("edit", "check"), [
    ({"due 2026-05-03.": "due 05/04/2026."}, "C0003-asks-each-overdue-invoice"),
    ({"due 2026-05-03.": "due 03/05/2026."}, "C0003-asks-each-overdue-invoice"),
    ({"due 2026-05-06.": "due May 16th, 2026."}, "C0003-asks-each-overdue-invoice"),
    # the total of every open invoice (not-yet-due ones too) is not the total overdue
    ({"The total overdue is $32,946.62": "Total due: $39,013.46"}, "C0003-total-overdue"),
    ({"The total overdue is": "The total is not"}, "C0003-total-overdue"),
])
def test_email_in_other_words_still_checked(solved: Solved, edit: dict[str, str],
                                            check: str) -> None:
    """A date a day or a month off in the new formats, the wrong total: still refused."""
    assert check in solved.failed_with_text(C0003, edit)
