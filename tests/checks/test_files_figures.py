"""``figures`` on text_ref_sentences: every money figure and past date a sentence states is
its rows' (a dunning email's "Please remit $29,946.62" beside the total $32,946.62).

Without it a sentence stating the row right passed whatever another sentence said. With
``figures`` a sentence naming rows (``figures.about``) may state only their figures
(``figures.columns``: money values to the precision written, dates as people write them);
with ``everywhere``, a sentence naming none only those of some row. Counts, percents, ids,
phone numbers and dates from the business date on are free.
"""

from __future__ import annotations

import dataclasses
from datetime import date
from typing import Any

import pytest

from checks.context import CheckContext
from checks.registry import CheckResult
from tests.checks.helpers import put, run_one, spec_problems

EMAIL = """Dear Gilmore-Anderson,

- Invoice INV-000111: $6,868.20 open, due 2026-05-03.
- Invoice INV-000115: $9,044.48 open, due 2026-05-06.

The total overdue is $15,912.68.
"""

DUNNING = ("customer_id,invoice_id,action,open_balance,due_date,amount,invoice_date,paid,"
           "customer_total\n"
           "C0003,INV-000111,ask,6868.20,2026-05-03,6868.20,2026-04-03,0.00,15912.68\n"
           "C0003,INV-000115,ask,9044.48,2026-05-06,10044.48,2026-04-06,1000.00,15912.68\n"
           "C0003,INV-000220,exclude,2715.75,2026-06-19,2715.75,2026-05-20,0.00,15912.68\n")

REF = {"type": "text_ref_sentences", "path": "out/C0003.txt", "ref": "dunning.csv",
       "rows": {"customer_id": "C0003", "action": "ask"},
       "columns": ["invoice_id", "open_balance", "due_date"], "none": [r"\bnot\b"]}
FIGURES = {"columns": ["open_balance", "amount", "paid", "customer_total", "due_date",
                       "invoice_date"], "about": ["{invoice_id}"]}


def run(ctx: CheckContext, text: str, raw: dict[str, Any],
        today: date | None = date(2026, 6, 1)) -> CheckResult:
    put(ctx.workspace, "out/C0003.txt", text)
    put(ctx.reference, "dunning.csv", DUNNING)
    return run_one(raw, dataclasses.replace(ctx, end=today))


#: (sentence, names no invoice)
STRAY = [
    ("Please remit $13,912.68.", True),  # a total's digits changed, naming no invoice
    ("PS: INV-000111 was due on May 4, 2026.", False),  # a due date a day off
    ("PS: INV-000111 was due 4 May.", False),  # no year
    ("PS: INV-000111 was due 05/04/2026.", False),
    ("INV-000111 ($6,688.20) is the oldest.", False),  # an amount restated wrong
    ("INV-000111 was for 6,868.02.", False),
    ("INV-000111 and INV-000115 ($9,404.48) remain open.", False),
    ("INV-000111 is about $6,900 overdue.", False),  # rounded, but not its figure
    ("The oldest fell due on 2026-05-02.", True),
    ("A late fee of $25.00 applies.", True),
    ("Please remit 13,912.68 USD.", True),  # two decimals, no currency sign
]


@pytest.mark.parametrize(("extra", "unnamed"), STRAY)
def test_a_figure_or_date_of_no_row_is_refused(ctx: CheckContext, extra: str,
                                               unnamed: bool) -> None:
    text = EMAIL + "\n" + extra + "\n"
    assert run(ctx, text, REF).passed  # without figures any other sentence is free
    figures = {**FIGURES, "everywhere": True}
    r = run(ctx, text, {**REF, "figures": figures})
    assert not r.passed
    assert "figures or dates not those of dunning.csv" in r.detail
    assert r.metrics["stray"] == 1
    # a sentence naming no invoice is read only with everywhere
    assert run(ctx, text, {**REF, "figures": FIGURES}).passed is unnamed


def test_the_detail_names_the_figure_and_the_sentence(ctx: CheckContext) -> None:
    r = run(ctx, EMAIL + "\nINV-000111 ($6,688.20) is the oldest.\n",
            {**REF, "figures": FIGURES})
    assert ("1 figures or dates not those of dunning.csv: $6,688.20 is none of its rows' "
            "figures in 'INV-000111 ($6,688.20) is the oldest.'") in r.detail


@pytest.mark.parametrize("extra", [
    "INV-000115 was billed at $10,044.48 on April 6, 2026; $1,000.00 has been paid.",
    "INV-000111 ($6,868.20) was due on May 3, 2026, 29 days ago.",
    "INV-000111 for about $6,868 was due on the 3rd of May.",  # rounded as written
    "INV-000111, invoiced 04/03/2026, fell due 03-May-2026.",
    "INV-000111 and INV-000115 total $15,912.68.",  # the customer's total
    "Please remit $15,912.68 by June 8, 2026.",  # a later date is a pay-by date
    "As of June 1, 2026, two invoices are past due; the largest is $9,044.48.",
    "Interest of 1.50% a month applies after 30 days.",  # a percent, a count
    "Call (555) 010-2030 or write to 1200 Market St, Suite 300, Springfield 94105.",
    "Your account C0003 shows INV-000111 and INV-000115, 2 items.",
    "Total: $15.9k.",  # a scale word after a currency sign, to the precision written
    "Write to Suite 4.10, 12 Harbor Way, or call before 10.30 am.",  # labels, a time
    "Per section 12.05 of our terms, INV-000111 for 6,868.20 USD is due.",
])
def test_the_rows_figures_and_free_ones_are_accepted(ctx: CheckContext, extra: str) -> None:
    r = run(ctx, EMAIL + "\n" + extra + "\n", {**REF, "figures": {**FIGURES,
                                                                  "everywhere": True}})
    assert r.passed, r.detail
    assert r.metrics["stray"] == 0


def test_without_a_business_date_every_date_is_judged(ctx: CheckContext) -> None:
    text = EMAIL + "\nPlease remit $15,912.68 by June 8, 2026.\n"
    raw = {**REF, "figures": {**FIGURES, "everywhere": True}}
    assert run(ctx, text, raw).passed
    assert not run(ctx, text, raw, today=None).passed


def test_an_excluded_rows_figure_is_not_a_chosen_rows(ctx: CheckContext) -> None:
    """Only the chosen rows' figures count (the exclude row's 2,715.75 is none of them)."""
    r = run(ctx, EMAIL + "\nWe also hold $2,715.75 not yet due.\n",
            {**REF, "figures": {**FIGURES, "everywhere": True}})
    assert not r.passed


def test_figures_about_names_known_columns() -> None:
    got = spec_problems({**REF, "figures": {"columns": ["amount"], "about": ["{vendor}"]}})
    assert any("figures.about: {column} must name one of columns or figures.columns; not "
               "there: vendor" in m for m in got.values()), got
    got = spec_problems({**REF, "figures": {"columns": [], "about": ["{invoice_id}"]}})
    assert got
