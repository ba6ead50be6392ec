"""A memo or email stating an item's figure right, and a wrong figure or date beside it.

After tests/desk/test_contradictions2.py two false accepts stayed open: dunning-emails
took "Please remit $29,946.62" beside the right total $32,946.62, an invoice's amount
restated wrong and a due date a day off in a PS; capitalization-memo took "PO-026052 adds
$11,438.35 to fixed assets" beside its $11,843.35. The generators now put what else an
email or memo may state of a row in the (hidden) reference, and text_ref_sentences'
``figures`` wants every money figure (and every date before the business date) of a
sentence naming rows to be theirs, and for the emails of any other sentence too.

Graded through the real path: the solution's attempt folder from ``erpsim desk validate``,
its final workspace edited, ``grade_folder`` (the business date set as in a run). Natural
correct variants (a table, prose, a PS, a pay-by date, rounded figures, the company's
address and phone, a percent) are still accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.desk.output_mutants import failed_names, regrade, solved_attempt

DUNNING = "dunning-emails"
CAPEX = "capitalization-memo"
ASKS = "C0003-asks-each-overdue-invoice"
EMAIL = "out/emails/C0003.txt"
MEMO = "out/capitalization_memo.md"
EACH = "each-purchase-its-vendor-cost-and-decision"


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    out = {}
    for task in (DUNNING, CAPEX):
        tmp = tmp_path_factory.mktemp(task)
        out[task] = (solved_attempt(task, tmp), tmp)
    return out


def graded(attempts: dict[str, tuple[Path, Path]], task: str, rel: str, extra: str = "",
           whole: str | None = None) -> set[str]:
    """The failed required checks with ``extra`` appended to ``rel`` (or ``whole`` as it)."""

    def edit(ws: Path) -> None:
        path = ws / rel
        text = path.read_text(encoding="utf-8") if whole is None else whole
        path.write_text(text.rstrip("\n") + ("\n\n" + extra if extra else "") + "\n",
                        encoding="utf-8")

    attempt, tmp = attempts[task]
    return failed_names(regrade(attempt, task, tmp, edit))


EMAIL_REFUSED = [
    "Please remit $29,946.62 by June 8, 2026.",  # the total's digits changed
    "Please remit $29,946.62.",
    "PS: INV-000111 was due on May 4, 2026.",  # a due date a day off
    "PS: INV-000140 was due May 17.",  # without a year
    "PS: INV-000111, for $6,688.20, is the oldest.",  # an invoice's amount restated wrong
    "INV-000111 for $6,868.20 and INV-000115 for $9,404.48 remain unpaid.",
    "INV-000128 ($10,017.11) was issued on April 11, 2026.",  # its invoice date a day off
    "PS: the oldest invoice fell due on 2026-05-02.",  # naming no invoice
    "The largest invoice is for $10,071.11.",
    "A late fee of $25.00 now applies.",  # a fee the workspace names nowhere
]


@pytest.mark.parametrize("extra", EMAIL_REFUSED)
def test_an_email_with_a_wrong_figure_or_date_is_refused(
        attempts: dict[str, tuple[Path, Path]], extra: str) -> None:
    assert graded(attempts, DUNNING, EMAIL, extra) == {ASKS}


TABLE = """Subject: Overdue invoices - Gilmore-Anderson

Dear Gilmore-Anderson,

As of June 1, 2026 the following invoices are past due:

| Invoice | Invoice date | Due date | Open balance | Days overdue |
|---|---|---|---|---|
| INV-000111 | 2026-04-03 | 2026-05-03 | $6,868.20 | 29 |
| INV-000115 | 2026-04-06 | 2026-05-06 | $9,044.48 | 26 |
| INV-000128 | 2026-04-10 | 2026-05-10 | $10,017.11 | 22 |
| INV-000134 | 2026-04-15 | 2026-05-15 | $2,642.07 | 17 |
| INV-000140 | 2026-04-16 | 2026-05-16 | $4,374.76 | 16 |

Total overdue: $32,946.62.

Please remit $32,946.62 by June 8, 2026. Interest of 1.5% per month may apply after
30 days. Call us on (555) 010-2030 or write to 1200 Market Street, Suite 300,
Springfield 94105.

Kind regards,
Accounts Receivable, Northwind Services LLC
"""

PROSE = """Dear Gilmore-Anderson,

Invoice INV-000111, issued on April 3, 2026 for $6,868.20, fell due on May 3, 2026 and is
now 29 days overdue. Invoice INV-000115 for $9,044.48 was due on 6 May 2026. INV-000128
($10,017.11, invoiced 04/10/2026) fell due on 05/10/2026. INV-000134 for $2,642.07 was due
15-May-2026, and INV-000140 for $4,374.76 on May 16th, 2026.

In total $32,946.62 is past due, about $33k. The largest, $10,017.11, dates from
April 10, 2026.

Please pay the total due of $32,946.62 by Monday, June 8, 2026.

PS: The oldest, INV-000111 ($6,868, as billed on April 3), was due on May 3.

Best regards,
Northwind Services LLC
"""


@pytest.mark.parametrize("whole", [TABLE, PROSE], ids=["table", "prose"])
def test_a_table_or_prose_email_is_accepted(attempts: dict[str, tuple[Path, Path]],
                                             whole: str) -> None:
    assert graded(attempts, DUNNING, EMAIL, whole=whole) == set()


@pytest.mark.parametrize("extra", [
    "PS: INV-000111 ($6,868.20) was due on May 3, 2026, 29 days ago.",
    "Please remit $32,946.62 by June 8, 2026.",
    "If you have already paid, thank you, and please disregard this email.",
    "Five invoices totalling $32,946.62 are past due as of 2026-06-01.",
    "INV-000111 for $6,868.20 and INV-000115 for $9,044.48 are the oldest.",
    "Invoice INV-000128 was billed at $10,017.11 on April 10 and nothing has been received "
    "($0.00).",
])
def test_a_consistent_sentence_is_accepted(attempts: dict[str, tuple[Path, Path]],
                                           extra: str) -> None:
    assert graded(attempts, DUNNING, EMAIL, extra) == set()


MEMO_REFUSED = [
    "PO-026052 adds $11,438.35 to fixed assets.",  # digits transposed
    "PO-026112's installation of $610.50 lifts it over the threshold.",
    "PO-026101 is 15 docking stations at $2,302.15 each.",
    "PO-026088 includes $847.05 of shipping and installation.",
    "PO-026052 exceeds the threshold by $6,483.35.",
    "Norton Ltd's plotter adds $11,438.35 to fixed assets.",  # the purchase by its vendor
]


@pytest.mark.parametrize("extra", MEMO_REFUSED)
def test_a_memo_with_a_wrong_purchase_figure_is_refused(
        attempts: dict[str, tuple[Path, Path]], extra: str) -> None:
    assert graded(attempts, CAPEX, MEMO, extra) == {EACH}


@pytest.mark.parametrize("extra", [
    "PO-026052 adds $11,843.35 to fixed assets.",
    "PO-026112's unit price of $4,594.90 is $405.10 below the $5,000.00 threshold; the "
    "$601.50 installation brings its cost to $5,196.40.",
    "PO-026101 is 15 docking stations at $2,032.15 each, $30,482.25 in all.",
    "PO-026088 cost $19,973.20 plus $874.05 of installation, $20,847.25 in all.",
    "PO-026052 exceeds the $5,000 threshold by $6,843.35.",
    "Capitalized this month: PO-026052, PO-026088, PO-026096 and PO-026112, $42,887.00 in "
    "total.",
    "PO-026096 was bought on May 28, 2026 for $5,000.00 and has a useful life of 36 months.",
    "Of the $112,419.10 total, $42,887.00 is capitalized and $69,532.10 expensed.",
    "The plotter from Norton Ltd, $11,843.35, is the largest single asset this month.",
])
def test_a_memo_with_the_purchase_figures_is_accepted(
        attempts: dict[str, tuple[Path, Path]], extra: str) -> None:
    assert graded(attempts, CAPEX, MEMO, extra) == set()
