"""Tampered attempts: a verdict comes only from books derived from the verified log.

Each attempt is graded, then its books are changed the way a local agent could change
``books.db`` (or its PostgreSQL schema): read-table rows edited or deleted, the log cut at
its end, a byte that is not UTF-8, a damaged page. ``erpsim check`` (and ``reconcile``,
``ledger verify``) must refuse each with exit 1 and a message naming what is wrong, and
never grade it, never crash.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from erp.store import EventStore
from runs.attempt import run_attempt
from runs.cli import main
from runs.grading import open_attempt_store, read_summary
from scenarios.loader import load_scenario
from scenarios.turn import TurnContext
from tests.conftest import PG_URL, drop_pg_schema, pg_schema
from tests.erp.test_verification import _pages, damage
from tests.runs.test_grading import FILE_CHECK, flat, small_scenario

# Checks that read the books: a tampered table could flip each one.
BOOK_CHECKS = [
    {"type": "trial_balance_zero", "name": "tb"},
    {"type": "control_ties", "account": "1200", "name": "ar-ties"},
    {"type": "no_unapplied_receipts", "older_than_days": 0, "name": "all-applied"},
    FILE_CHECK,
]


def invoke(*args: object) -> Result:
    """Run ``erpsim`` in-process; a traceback is never an answer. ``check`` grades with
    the attempts' own (shrunken) scenario."""
    argv = [str(a) for a in args]
    if argv[0] == "check":
        argv += ["--scenario", str(_SCENARIO[0])]
    res = CliRunner().invoke(main, argv)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res


SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
"""For a test about SQLite's own file: the backend fixture, with PostgreSQL deselected."""
POSTGRES_ONLY = pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
"""For a test about what only a PostgreSQL attempt records."""

_SCENARIO: list[Path] = []
"""The module's scenario, for ``invoke``."""


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cash-application, shrunken, with checks that read the books."""
    path = small_scenario(tmp_path_factory.mktemp("tamper"), BOOK_CHECKS)
    _SCENARIO[:] = [path]
    return path


@pytest.fixture
def attempts(backend: str, scenario: Path, tmp_path: Path,
             request: pytest.FixtureRequest) -> Iterator[dict[str, Path]]:
    """A graded reference (accepted) and null (rejected) attempt on the backend under test."""
    loaded = load_scenario(scenario)
    out: dict[str, Path] = {}
    schemas = []
    for agent in ("reference", "null"):
        folder = tmp_path / agent
        if backend == "sqlite":
            run_attempt(loaded, 1, agent, folder)
        else:
            schema = pg_schema(f"{request.node.nodeid}/{agent}")
            drop_pg_schema(schema)
            schemas.append(schema)
            run_attempt(loaded, 1, agent, folder, store_url=PG_URL, schema=schema)
        out[agent] = folder
    yield out
    for schema in schemas:
        drop_pg_schema(schema)


def tamper(folder: Path, *statements: str) -> None:
    """Run SQL on an attempt's books, wherever they are."""
    store = open_attempt_store(folder, read_summary(folder))
    try:
        with store.engine.begin() as conn:
            for sql in statements:
                conn.exec_driver_sql(sql)
    finally:
        store.close()


def test_a_clean_attempt_records_how_its_books_were_verified(attempts: dict[str, Path]) -> None:
    for agent, status in (("reference", "accepted"), ("null", "rejected")):
        folder = attempts[agent]
        verdict = json.loads((folder / "verdict.json").read_text())
        summary = read_summary(folder)
        assert verdict["status"] == status
        books = verdict["books"]
        assert books["verified"] == "rebuilt-and-compared"
        assert books["log_head"] == summary["final_hash"] == verdict["final_log_hash"]
        assert books["log_position"] == summary["final_position"]
        assert {"gl_lines", "subledger", "documents"} <= set(books["tables"])
        res = invoke("check", folder)
        assert res.exit_code == (0 if status == "accepted" else 1), res.output
        assert f"books: rebuilt-and-compared (log head {summary['final_hash']}" in flat(
            res.output)


# Edits that would change the verdict either way if grading read the tables unverified.
TABLE_EDITS = {
    # the accepted attempt's trial balance and AR control no longer tie
    "gl amount": ("reference", "gl_lines", [
        "UPDATE gl_lines SET amount = amount + 100 WHERE position = "
        "(SELECT MAX(position) FROM gl_lines) AND seq = 0"]),
    "subledger rows deleted": ("reference", "subledger", [
        "DELETE FROM subledger WHERE ledger = 'ar' AND position IN "
        "(SELECT position FROM subledger WHERE ledger = 'ar' ORDER BY position LIMIT 3)"]),
    # the rejected attempt's unapplied receipts made to look applied
    "receipts marked applied": ("null", "documents", [
        "UPDATE documents SET open_amount = 0, status = 'applied' WHERE kind = 'receipt'",
        "DELETE FROM subledger WHERE ledger = 'unapplied_cash'"]),
}


@pytest.mark.parametrize("name", list(TABLE_EDITS))
def test_read_table_edits_are_refused_not_graded(attempts: dict[str, Path], name: str) -> None:
    agent, table, statements = TABLE_EDITS[name]
    folder = attempts[agent]
    before = (folder / "verdict.json").read_bytes()
    tamper(folder, *statements)
    res = invoke("check", folder, "--write")
    assert res.exit_code == 1, res.output
    out = flat(res.output)
    assert "the read tables do not match the log" in out and "not graded" in out
    assert f"{table}: " in out and f"first {table} (" in out  # the table and a row's key
    assert "verdict:" not in out  # nothing graded
    assert (folder / "verdict.json").read_bytes() == before  # nothing written
    rec = invoke("reconcile", folder)
    assert rec.exit_code == 1 and "the read tables do not match the log" in flat(rec.output)


def test_a_log_cut_at_its_end_is_refused_naming_both_hashes(attempts: dict[str, Path]) -> None:
    folder = attempts["reference"]
    summary = read_summary(folder)
    final, last = summary["final_hash"], summary["final_position"]
    # the last events go, and so does every read-table row they wrote: only the head tells
    tamper(folder, *(f"DELETE FROM {t} WHERE {col} > {last - 2}" for t, col in (
        ("events", "position"), ("gl_lines", "position"), ("subledger", "position"),
        ("doc_history", "position"))))
    store = open_attempt_store(folder, summary)
    try:
        assert store.verify().ok  # the chain alone cannot see a cut tail
        head = store.head()[1]
    finally:
        store.close()
    res = invoke("check", folder)
    assert res.exit_code == 1, res.output
    out = flat(res.output)
    assert (f"the log's head is {head} at position {last - 2}, but the attempt recorded "
            f"{final} at position {last} (summary.json final_hash): the log was cut short or "
            "rewritten at its end; not graded") in out
    # summary.json rewritten to the cut head: verdict.json still holds the real one
    summary["final_hash"], summary["final_position"] = head, last - 2
    (folder / "summary.json").write_text(json.dumps(summary))
    res = invoke("check", folder)
    assert res.exit_code == 1 and "(verdict.json final_log_hash)" in flat(res.output)


@SQLITE_ONLY  # PostgreSQL refuses to store text that is not UTF-8
def test_a_byte_that_is_not_utf8_is_reported_with_its_position(attempts: dict[str, Path],
                                                                backend: str) -> None:
    folder = attempts["null"]
    with sqlite3.connect(folder / "books.db") as conn:
        conn.execute("UPDATE events SET payload = CAST(CAST(payload AS BLOB) || x'fe' AS TEXT)"
                     " WHERE position = 40")
    for args in (("check", folder), ("ledger", "verify", folder / "books.db"),
                 ("ledger", "trial-balance", folder / "books.db")):
        res = invoke(*args)
        assert res.exit_code == 1, res.output
        assert "position 40: column payload holds a byte that is not UTF-8 (0xfe at byte" in \
            flat(res.output)


@SQLITE_ONLY  # PostgreSQL keeps its own pages
@pytest.mark.parametrize("table", ["events", "gl_lines"])
def test_a_damaged_page_is_reported_never_a_traceback(attempts: dict[str, Path], backend: str,
                                                      table: str) -> None:
    folder = attempts["reference"]
    db = folder / "books.db"
    pages = _pages(db, table)
    damage(db, pages[len(pages) // 2])
    for args in (("check", folder), ("ledger", "verify", db), ("reconcile", folder)):
        res = invoke(*args)
        assert res.exit_code == 1, res.output
        assert "the file is damaged: database disk image is malformed" in flat(res.output)


@POSTGRES_ONLY
def test_a_store_label_only_summary_still_opens(attempts: dict[str, Path], backend: str) -> None:
    """Summaries written before the URL was recorded kept only the display label."""
    folder = attempts["reference"]
    summary = read_summary(folder)
    assert summary["store"]["url"] == PG_URL.replace("postgresql://", "postgresql+psycopg://")
    assert ":***@" not in summary["store"]["url"]
    summary["store"] = {k: summary["store"][k] for k in ("label", "schema")}
    (folder / "summary.json").write_text(json.dumps(summary))
    assert invoke("check", folder).exit_code == 0
    # a URL that names no reachable database: a clear grading error, exit 2
    res = invoke("check", folder, "--store-url", "postgresql://postgres@127.0.0.1:5432/nope")
    assert res.exit_code == 2 and "its books cannot be opened" in flat(res.output)


@SQLITE_ONLY
def test_an_attempt_of_the_sqlite_store_opens_by_its_folder(attempts: dict[str, Path],
                                                             backend: str) -> None:
    store = EventStore.open(attempts["reference"] / "books.db")
    try:
        assert store.url is None
    finally:
        store.close()


# --- books changed during the attempt, by its agent -----------------------------------------


class _TamperingAgent:
    """Applies the reference's work, then, in its first turn, edits a read table directly
    (as a local agent can: the books are a file beside its workspace, or a schema)."""

    name = "tampering"

    def __init__(self, statements: list[str]) -> None:
        self.statements = statements
        self.turns = 0

    def run_turn(self, turn: TurnContext) -> None:
        self.turns += 1
        if self.turns == 1:
            with turn.store.engine.begin() as conn:
                for sql in self.statements:
                    conn.exec_driver_sql(sql)


@pytest.mark.parametrize("beside", [False, True])
def test_books_changed_during_the_run_reject_the_attempt(backend: str, scenario: Path,
                                                         tmp_path: Path, beside: bool,
                                                         request: pytest.FixtureRequest) -> None:
    """The attempt's own grading rejects it, with its summary and verdict written; a
    later regrade of the folder refuses it as not graded. With the checks beside the run,
    their verdict is dropped the same way (they ran; the books did not verify)."""
    loaded = load_scenario(scenario)
    folder = tmp_path / "tampered"
    agent = _TamperingAgent(["UPDATE documents SET open_amount = open_amount + 1 WHERE doc_id "
                             "IN (SELECT doc_id FROM documents WHERE kind = 'invoice' "
                             "ORDER BY doc_id LIMIT 2)"])
    kwargs: dict[str, Any] = {}
    if backend == "postgres":
        kwargs = {"store_url": PG_URL, "schema": pg_schema(request.node.nodeid)}
        drop_pg_schema(kwargs["schema"])
    try:
        result = run_attempt(loaded, 1, "tampering", folder, agent=agent,
                             checks_beside=beside, **kwargs)
        assert result.summary["checks_process"] == ("beside" if beside else "attempt")
        verdict = json.loads((folder / "verdict.json").read_text())
        assert result.summary["verdict"]["status"] == verdict["status"] == "rejected"
        assert verdict["failed"] == ["books-verified"]
        [only] = verdict["results"]
        assert only["detail"].startswith("the books do not verify at the end of the attempt, "
                                         "so no other check was evaluated: ")
        assert "the read tables do not match the log" in only["detail"]
        assert "first documents (kind='invoice', doc_id='INV-" in only["detail"]
        assert verdict["books"]["verified"] == "refused"
        assert verdict["final_log_hash"] == result.summary["final_hash"]
        phases = result.summary["phases_s"]  # the verification ran; no check did
        assert phases["verification"] > 0 and phases["final_checks"] == 0
        res = invoke("check", folder)  # later: the folder's books are refused, not graded
        assert res.exit_code == 1 and "not graded" in flat(res.output), res.output
    finally:
        if backend == "postgres":
            drop_pg_schema(kwargs["schema"])


@SQLITE_ONLY
def test_an_external_agent_editing_books_db_is_rejected_by_the_run(backend: str, scenario: Path,
                                                                   tmp_path: Path) -> None:
    """``erpsim run`` with a local agent that opens ``books.db`` beside its workspace."""
    script = tmp_path / "agent.py"
    script.write_text(
        "import pathlib, sqlite3, sys\n"
        "ws = pathlib.Path(sys.argv[sys.argv.index('--workspace') + 1]).resolve()\n"
        "db = next(p / 'books.db' for p in ws.parents if (p / 'books.db').is_file())\n"
        "with sqlite3.connect(db) as c:\n"
        "    c.execute(\"UPDATE documents SET status = 'applied' WHERE kind = 'invoice'\")\n")
    adapter = tmp_path / "agent"
    adapter.write_text(f"#!/bin/sh\nexec {sys.executable} {script} \"$@\"\n")
    adapter.chmod(0o755)
    folder = tmp_path / "a"
    res = invoke("run", scenario, "--agent-cmd", adapter, "--out", folder, "--quiet")
    assert res.exit_code == 1, res.output
    out = flat(res.output)
    assert "verdict: rejected" in out and "books-verified" in out, out
    assert (folder / "summary.json").is_file() and (folder / "verdict.json").is_file()
