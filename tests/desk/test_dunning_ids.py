"""dunning-emails: an email naming a wrong invoice id, or giving an id another's figure.

``C*-asks-each-overdue-invoice`` wanted a sentence per invoice asked for and, with
``figures``, every money figure and past date of a sentence to be a figure of the invoices
it names (of any invoice asked for in a sentence naming none). An id was not judged
itself: a sentence naming an invoice that is none of the email's (another customer's
INV-000107, C0004's INV-000003, a made-up INV-000999, written "invoice 107" too) was a
sentence naming no row, so any invoice's figure passed beside it ("PS: INV-000107
($4,374.76) was due on May 16, 2026." was accepted); and in a sentence naming several
invoices any of their figures passed for any of them ("INV-000111 for $9,044.48 and
INV-000115 for $6,868.20 remain unpaid." was accepted). A customer would be dunned for the
wrong invoice. A plain swap of one listed id for another was already refused (the
swapped-out invoice is then asked for nowhere), and an invoice of the customer's not yet
due by the checks that keep left-out invoices out.

``figures.ids`` (text_ref_sentences) names the id column and how an id is written: every
id a sentence names must be one of the rows asked for, and in a sentence naming several,
each clause's figures are its own invoice's. Natural correct emails stay accepted: ids as
in the export or as "invoice 111", several invoices in one sentence (each with its figures,
or listed "respectively", which pairs the lists in order: swapped, refused), a total
sentence naming the invoices, a whole prose email.
Graded through the real path (the solution's attempt folder from ``erpsim desk validate``,
its final workspace edited, ``grade_folder`` with the run's business date).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from checks.context import CheckContext
from checks.registry import CheckResult
from erp.store import EventStore
from tests.checks.helpers import run_one, spec_problems
from tests.desk.output_mutants import failed_with_edit, solved_attempt

TASK = "dunning-emails"
C0003, C0021 = "out/emails/C0003.txt", "out/emails/C0021.txt"
ASKS3, ASKS21 = "C0003-asks-each-overdue-invoice", "C0021-asks-each-overdue-invoice"
LINE140 = "- Invoice INV-000140: $4,374.76 open, due 2026-05-16."


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(TASK)
    return solved_attempt(TASK, tmp / "solved"), tmp


def graded(solved: tuple[Path, Path], rel: str, old: str = "", new: str = "",
           extra: str = "", whole: str | None = None) -> set[str]:
    """The failed required checks with ``old`` replaced by ``new`` in ``rel``, ``extra``
    appended (or ``whole`` as the email)."""
    attempt, tmp = solved
    return failed_with_edit(attempt, TASK, tmp, rel, old=old, new=new, extra=extra,
                            whole=whole)


# --- a wrong id beside a real figure: accepted before ----------------------------------

WRONG_ID = {
    # another customer's real invoice (C0002's), beside INV-000140's figures
    "other-customer": "PS: INV-000107 ($4,374.76) was due on May 16, 2026.",
    # an invoice of another email of the same run (C0004's, itself asked for there)
    "other-email": "PS: INV-000003 for $4,374.76 is also overdue.",
    "made-up": "PS: INV-000999 ($4,374.76) was due on May 16, 2026.",
    # the id as the collections note writes ids
    "short-form": "PS: invoice 107 ($4,374.76) was due on May 16, 2026.",
    "in-the-total": "The total overdue on INV-000111 to INV-000145 is $32,946.62.",
    # one invoice's line repeated under another customer's id
    "line-repeated": LINE140.replace("INV-000140", "INV-000107"),
}


@pytest.mark.parametrize("name", sorted(WRONG_ID))
def test_a_wrong_invoice_id_is_refused(solved: tuple[Path, Path], name: str) -> None:
    assert graded(solved, C0003, extra=WRONG_ID[name]) == {ASKS3}


def test_a_wrong_id_in_another_email_is_refused(solved: tuple[Path, Path]) -> None:
    line = "- Invoice INV-000123: $8,252.39 open, due 2026-05-25."
    assert graded(solved, C0021, old=line,
                  new=f"{line}\n{line.replace('INV-000123', 'INV-000128')}") == {ASKS21}


def test_the_customers_invoice_not_yet_due_is_refused_by_each_check(
        solved: tuple[Path, Path]) -> None:
    """INV-000220 is C0003's, not due till June 19: named beside another invoice's figures
    it was refused only as a left-out invoice mentioned; now as a wrong id too."""
    assert graded(solved, C0003, extra="PS: INV-000220 ($4,374.76) was due on May 16, 2026."
                  ) == {ASKS3, "C0003-nothing-not-due-or-on-hold",
                        "emails-scope/emails-leave-out-unmentioned"}


CROSSED = {
    "amounts": "INV-000111 for $9,044.48 and INV-000115 for $6,868.20 remain unpaid.",
    "amounts-before": "$9,044.48 for INV-000111 and $6,868.20 for INV-000115 remain unpaid.",
    "due-dates": "INV-000111 was due on May 6, 2026 and INV-000115 on May 3, 2026.",
    "commas": "INV-000111, for $9,044.48, INV-000115, for $6,868.20, are the oldest.",
    "short-form": "Invoice 111 is for $9,044.48.",
    # a list of ids and a list of figures "respectively", paired in the other order
    "respectively": "INV-000111 and INV-000115 are for $9,044.48 and $6,868.20 "
                    "respectively.",
    "respectively-dates": "INV-000111 ($6,868.20) and INV-000115 ($9,044.48) were due on "
                          "May 6 and May 3, 2026, respectively.",
    "respectively-short": "Invoices 111 and 115 come to $9,044.48 and $6,868.20, "
                          "respectively.",
}


@pytest.mark.parametrize("name", sorted(CROSSED))
def test_an_invoice_given_anothers_figure_is_refused(solved: tuple[Path, Path],
                                                     name: str) -> None:
    assert graded(solved, C0003, extra=CROSSED[name]) == {ASKS3}


# --- a plain swap: refused before and after ---------------------------------------------

@pytest.mark.parametrize("other", ["INV-000107", "INV-000111", "INV-000220", "INV-000999"],
                         ids=["other-customer", "same-customer", "not-yet-due", "made-up"])
def test_a_swapped_id_is_refused(solved: tuple[Path, Path], other: str) -> None:
    assert ASKS3 in graded(solved, C0003, old="INV-000140", new=other)


# --- natural correct emails: accepted -----------------------------------------------------

ACCEPTED_LINES = [
    "PS: The oldest, invoice 111 ($6,868.20), was due on May 3.",
    "PS: Inv #115 for $9,044.48 was issued on April 6, 2026.",
    "INV-000111 for $6,868.20 and INV-000115 for $9,044.48 are the oldest.",
    "$6,868.20 for INV-000111 and $9,044.48 for INV-000115 remain unpaid.",
    "INV-000111 and INV-000115 are for $6,868.20 and $9,044.48 respectively.",
    "INV-000111, due May 3, 2026, and INV-000115, due May 6, 2026, are the oldest.",
    "Of the $32,946.62, INV-000128 accounts for $10,017.11 and INV-000111 for $6,868.20.",
    "The total overdue for INV-000111 through INV-000140 is $32,946.62.",
    "Together INV-000111, INV-000115, INV-000128, INV-000134 and INV-000140 come to "
    "$32,946.62.",
    "INV-000128 ($10,017.11) is the largest; INV-000134 ($2,642.07) the smallest.",
    "Your invoice 29 days past due is INV-000111.",
    "INV-000111 ($6,868.20) and INV-000115 ($9,044.48) were due on May 3 and May 6, 2026, "
    "respectively.",
    "The oldest, INV-000111, was due May 3, 2026, while the newest, INV-000140, was due "
    "May 16, 2026.",
    "INV-000128 is the largest, at $10,017.11, and the smallest, at $2,642.07, is INV-000134.",
    "INV-000111 fell due on May 3 and INV-000140 on May 16; all five come to $32,946.62.",
    "INV-000111 ($6,868.20) and INV-000115 ($9,044.48) bring the total overdue to $32,946.62.",
    "Invoices 111 and 115 come to $6,868.20 and $9,044.48, respectively.",
    # "respectively" with a total besides: not paired, every figure one of the rows'
    "INV-000111 and INV-000115, $6,868.20 and $9,044.48 respectively, are the oldest of "
    "the five.",
]


@pytest.mark.parametrize("extra", ACCEPTED_LINES)
def test_a_sentence_naming_its_invoices_is_accepted(solved: tuple[Path, Path],
                                                    extra: str) -> None:
    assert graded(solved, C0003, extra=extra) == set()


PROSE = """Subject: Overdue invoices - Gilmore-Anderson

Dear Gilmore-Anderson,

Our records show five invoices past due as of June 1, 2026. Invoices INV-000111
($6,868.20, due May 3, 2026) and INV-000115 ($9,044.48, due May 6, 2026) are the oldest.
INV-000128 for $10,017.11 fell due on 05/10/2026, INV-000134 for $2,642.07 on
15-May-2026, and INV-000140 for $4,374.76 on May 16th, 2026.

In total $32,946.62 is past due on INV-000111 through INV-000140. Please pay it by
June 8, 2026, quoting invoice 111, 115, 128, 134 and 140.

Kind regards,
Accounts Receivable, Northwind Services LLC
"""


EVANS = """Dear Evans-Mann,

We have not yet received payment for four invoices that are now past due. The oldest,
INV-000024 for $3,859.90, fell due on March 19, 2026, and INV-000033 for $1,974.44 on
April 16, 2026. INV-000044 ($3,401.59) was due April 20, 2026; INV-000123 ($8,252.39) was
due May 25, 2026. Together they come to $17,488.32, the total overdue on your account.

Please pay by June 8, 2026, quoting inv 24, 33, 44 and 123.

Regards,
Northwind Services LLC
"""


def test_a_prose_email_is_accepted(solved: tuple[Path, Path]) -> None:
    assert graded(solved, C0003, whole=PROSE) == set()
    assert graded(solved, C0021, whole=EVANS) == set()


def test_the_reference_emails_are_accepted(solved: tuple[Path, Path]) -> None:
    assert graded(solved, C0003) == set()


# --- the option on text_ref_sentences ---------------------------------------------------

ROWS = ("customer_id,invoice_id,action,open_balance,due_date\n"
        "C0003,INV-000111,ask,6868.20,2026-05-03\n"
        "C0003,INV-000115,ask,9044.48,2026-05-06\n")
EMAIL = ("- Invoice INV-000111: $6,868.20 open, due 2026-05-03.\n"
         "- Invoice INV-000115: $9,044.48 open, due 2026-05-06.\n")
SPEC: dict[str, Any] = {
    "type": "text_ref_sentences", "path": "out/C0003.txt", "ref": "dunning.csv",
    "rows": {"customer_id": "C0003", "action": "ask"},
    "columns": ["invoice_id", "open_balance", "due_date"],
    "figures": {"columns": ["open_balance", "due_date"], "about": ["{invoice_id}"],
                "everywhere": True}}
IDS = {"invoice_id": r"\bINV-(?P<number>\d+)\b"}


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[CheckContext]:
    store = EventStore.open(tmp_path / "b.db", create=True)
    for d in ("ws", "ref"):
        (tmp_path / d).mkdir()
    (tmp_path / "ref" / "dunning.csv").write_text(ROWS, encoding="utf-8")
    yield CheckContext(store, workspace=tmp_path / "ws", reference=tmp_path / "ref",
                       end=date(2026, 6, 1))
    store.close()


def run(ctx: CheckContext, extra: str, ids: dict[str, str] | None) -> CheckResult:
    assert ctx.workspace is not None
    (ctx.workspace / "out").mkdir(exist_ok=True)
    (ctx.workspace / "out" / "C0003.txt").write_text(EMAIL + "\n" + extra + "\n",
                                                     encoding="utf-8")
    figures = SPEC["figures"] if ids is None else {**SPEC["figures"], "ids": ids}
    return run_one({**SPEC, "figures": figures}, ctx)


@pytest.mark.parametrize(("extra", "says"), [
    ("PS: INV-000107 ($6,868.20) was due on May 3, 2026.",
     "INV-000107 names none of the rows in 'PS: INV-000107"),
    ("INV-000111 for $9,044.48 and INV-000115 for $6,868.20 remain unpaid.",
     "$9,044.48 is none of INV-000111's figures"),
    ("INV-000111 was due May 6, 2026 and INV-000115 May 3, 2026.",
     "May 6, 2026 is none of INV-000111's dates"),
])
def test_without_ids_accepted_with_them_refused(ctx: CheckContext, extra: str,
                                                says: str) -> None:
    assert run(ctx, extra, None).passed  # the option absent: as before
    r = run(ctx, extra, IDS)
    assert not r.passed
    assert says in r.detail, r.detail


def test_an_id_without_a_number_group_is_compared_as_written(ctx: CheckContext) -> None:
    ids = {"invoice_id": r"\bINV-\d+\b"}
    assert run(ctx, "PS: inv-000111 ($6,868.20) is the oldest.", ids).passed
    assert not run(ctx, "PS: INV-111 ($6,868.20) is the oldest.", ids).passed


def test_a_regex_not_reading_the_rows_ids_is_a_grader_error(ctx: CheckContext) -> None:
    with pytest.raises(ValueError) as e:
        run(ctx, "", {"invoice_id": r"\binvoice (?P<number>\d+)"})
    assert "figures.ids: invoice_id 'INV-000111' is not an id its regex reads as that " \
           "row's" in str(e.value)


@pytest.mark.parametrize(("ids", "message"), [
    ({"vendor": r"\bV\d+"}, "figures.ids: each must be one of columns or figures.columns; "
                            "not there: vendor"),
    ({"invoice_id": r"(INV-\d+)?"}, "ids: the regex of invoice_id matches an empty text"),
    ({"invoice_id": r"INV-(?P<n>\d+)"}, "ids: the regex of invoice_id may name one group, "
                                        "number; not n"),
    ({"invoice_id": r"INV-(\d+"}, "not a valid regular expression"),
])
def test_ids_are_validated(ids: dict[str, str], message: str) -> None:
    got = spec_problems({**SPEC, "figures": {**SPEC["figures"], "ids": ids}})
    assert any(message in m for m in got.values()), got


# --- "respectively" and lists of numbers after an id --------------------------------------

def _numbered() -> dict[str, str]:
    return {"invoice_id": r"\b(?:INV-|inv(?:oice)?s?\s*#?\s*)0*(?P<number>\d+)\b"}


@pytest.mark.parametrize(("extra", "says"), [
    # the lists paired in order: the second figure is the second invoice's
    ("INV-000111 and INV-000115 are for $9,044.48 and $6,868.20 respectively.",
     "$9,044.48 is none of INV-000111's figures"),
    ("INV-000111 and INV-000115 fell due on May 6, 2026 and May 3, 2026, respectively.",
     "May 6, 2026 is none of INV-000111's dates"),
    # the numbers listed after an id name their invoices too
    ("Invoices 111 and 115 come to $9,044.48 and $6,868.20, respectively.",
     "$9,044.48 is none of INV-000111's figures"),
    ("Invoice 111, 115: $9,044.48 and $6,868.20 respectively.",
     "$9,044.48 is none of INV-000111's figures"),
])
def test_respectively_pairs_the_lists_in_order(ctx: CheckContext, extra: str,
                                               says: str) -> None:
    r = run(ctx, extra, _numbered())
    assert not r.passed
    assert says in r.detail, r.detail


@pytest.mark.parametrize("extra", [
    "INV-000111 and INV-000115 are for $6,868.20 and $9,044.48 respectively.",
    "Invoices 111 and 115 come to $6,868.20 and $9,044.48, respectively.",
    "Invoices 111 & 115 fell due on May 3, 2026 and May 6, 2026 respectively.",
    # not paired (the figures before the ids): judged by both invoices, as before
    "$9,044.48 and $6,868.20 are what INV-000115 and INV-000111 respectively come to.",
    # a count after an id is no id: the list ends there
    "Invoice 111 and 2 others are overdue; invoice 111 is for $6,868.20.",
])
def test_respectively_in_order_and_counts_are_accepted(ctx: CheckContext, extra: str) -> None:
    r = run(ctx, extra, _numbered())
    assert r.passed, r.detail
