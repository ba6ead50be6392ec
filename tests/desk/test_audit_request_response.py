"""audit-request-response: the reference passes; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's checks grade its table and
reply. Each mutant of the table (a row dropped or added twice, an item id, a status or a
document changed) and of the reply (a figure a cent up, "supported" flipped to
"unsupported", a sentence negated, two sentences' figures swapped, a line dropped) must
fail a required check; so must citing a near miss for a missing item.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest

from tests.desk.output_mutants import (
    Solved,
    csv_mutants,
    solve,
    survivors,
    text_mutants,
)

TASK = "audit-request-response"
TABLE = "out/audit_support.csv"
REPLY = "out/audit_response.md"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def test_reference_passes(solved: Solved) -> None:
    assert solved.failed() == []


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert {"response-exists", "every-sampled-item-once"} <= set(s.failed())


def test_every_table_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, TABLE, csv_mutants(solved.path(TABLE),
                                                         id_columns=("item",)))
    assert alive == []
    assert {"missing row", "add a row", "wrong identifier", "change a cell"} <= set(counts)


def test_every_reply_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, REPLY, text_mutants(solved.path(REPLY)))
    assert alive == []
    assert {"wrong figure", "wrong qualifier", "wrong sentence", "missing row"} <= set(counts)


def _near_miss(solved: Solved, party: str) -> str:
    """The scan from ``party`` that no item cites (the near miss beside a missing item)."""
    cited = set(solved.path(TABLE).read_text(encoding="utf-8").split())
    for p in sorted((solved.workspace / "support").glob("*.txt")):
        if f"From: {party}" in p.read_text(encoding="utf-8") and \
                not any(p.name in c for c in cited):
            return f"support/{p.name}"
    raise AssertionError(f"no near miss from {party}")


def test_citing_a_near_miss_fails(solved: Solved) -> None:
    """INV-000233's draft timesheet is for another amount: it does not support it."""
    scan = _near_miss(solved, "Castro, Kerr and Tyler")
    path = solved.path(TABLE)
    original = path.read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(original)))
    rows = [["INV-000233", "supported", scan] if r[0] == "INV-000233" else r for r in rows]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    reply = solved.path(REPLY)
    text = reply.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("- INV-000233"))
    try:
        path.write_text(buf.getvalue(), encoding="utf-8")
        reply.write_text(text.replace(line, line.split(":")[0].replace(")", f") is supported "
                                                                          f"by {scan}.")),
                         encoding="utf-8")
        assert {"status-and-document-per-item", "INV-000233-missing"} <= set(solved.failed())
    finally:
        path.write_text(original, encoding="utf-8")
        reply.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(("old", "new", "failing"), [
    # an invoice called a cash receipt: a wrong fact in its sentence
    ("(sales invoice,", "(cash receipt,", "INV-000210-supported"),
    # the reply without the request it answers, or naming another
    ("# PBC-07: supporting documents for the sampled May entries\n", "", "names-the-request"),
    ("PBC-07", "PBC-08", "names-the-request"),
])
def test_a_wrong_type_or_request_fails(solved: Solved, old: str, new: str,
                                       failing: str) -> None:
    reply = solved.path(REPLY)
    text = reply.read_text(encoding="utf-8")
    assert old in text
    try:
        reply.write_text(text.replace(old, new), encoding="utf-8")
        assert failing in solved.failed()
    finally:
        reply.write_text(text, encoding="utf-8")


def test_citing_a_second_document_fails(solved: Solved) -> None:
    """JE-2605-013 said to be supported by its scan and another item's: a wrong fact."""
    reply = solved.path(REPLY)
    text = reply.read_text(encoding="utf-8")
    old = "is supported by support/scan_0597.txt."
    assert old in text
    try:
        reply.write_text(text.replace(old, "is supported by support/scan_0597.txt and "
                                           "support/scan_0299.txt."), encoding="utf-8")
        assert solved.failed() == ["JE-2605-013-supported"]
    finally:
        reply.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("tier", ["easy", "hard"])
def test_solution_answers_every_tier(tmp_path: Path, tier: str) -> None:
    """The other tiers' files, made by the generator, are answered as their reference."""
    import subprocess
    import sys
    from datetime import date

    from desk.generators import GeneratorContext, audit_request_response
    from desk.tasks import load_task

    task = load_task(TASK)
    files = audit_request_response.generate(GeneratorContext(
        task_id=TASK, seed=1, day=date(2026, 6, 1), scenario=task.loaded.scenario,
        params={"tier": tier}))
    ws = tmp_path / "ws"
    for rel, data in files.items():
        if rel.startswith("workspace/"):
            (ws / rel.removeprefix("workspace/")).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel.removeprefix("workspace/")).write_bytes(data)
    subprocess.run([sys.executable, str(task.solution), "--workspace", str(ws),
                    "--output-dir", str(ws / "out")], check=True, timeout=120)
    got = {r["item"]: (r["status"], r["document"]) for r in
           csv.DictReader(io.StringIO((ws / TABLE).read_text(encoding="utf-8")))}
    want = {r["item"]: (r["status"], r["document"]) for r in
            csv.DictReader(io.StringIO(files["reference/audit_support.csv"].decode()))}
    assert got == want


def test_a_total_row_is_refused_as_the_prompt_says(solved: Solved) -> None:
    """'one row per ...' did not say whether a total row may follow; the prompt now says
    no total row, and one is refused."""
    from tests.desk.output_mutants import assert_total_row_refused_as_told

    assert_total_row_refused_as_told(solved, TASK, TABLE)


def test_statuses_capitalized_are_accepted_and_swapped_refused(solved: Solved) -> None:
    """'Supported'/'Missing' for supported/missing (casefold on status); an item's status
    swapped for the other is still refused."""
    path = solved.path(TABLE)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original.replace(",supported,", ",Supported,")
                        .replace(",missing,", ",Missing,"), encoding="utf-8")
        assert solved.failed() == []
        path.write_text(original.replace(",missing,", ",Supported,", 1), encoding="utf-8")
        assert "status-and-document-per-item" in solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


@pytest.mark.parametrize(("summary", "failing"), [
    # each item's clause its own finding: right, whatever the other clause says
    ("In sum, JE-2605-013 is supported by support/scan_0597.txt, while support for "
     "JE-2605-015 is missing.", []),
    ("JE-2605-015 and INV-000233 are missing, but RCT-00126 is supported by "
     "support/scan_0454.txt.", []),
    # a clause giving its item the wrong finding, beside another item's
    ("In sum, JE-2605-013 is missing, while JE-2605-015 is supported by "
     "support/scan_0597.txt.", ["JE-2605-013-supported", "JE-2605-015-missing"]),
    # a list sharing its verb says it of each item
    ("JE-2605-015 and JE-2605-013 are missing.", ["JE-2605-013-supported"]),
])
def test_a_summary_naming_several_items_is_read_clause_by_clause(
        solved: Solved, summary: str, failing: list[str]) -> None:
    """The prompt's reading: in a sentence naming several items, a clause naming one (and
    those after it naming no other) is that item's."""
    assert sorted(solved.failed_with_line(REPLY, summary)) == sorted(failing)
