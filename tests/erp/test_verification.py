"""Verifying books: the read tables against a fold of the verified log (both backends), a
stored byte that is not UTF-8 and damaged SQLite pages (reported, never raised)."""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from erp.errors import IntegrityError, StoreError
from erp.ledger import Ledger
from erp.store import EventStore
from erp.verification import METHOD, require_verified_books, verify_books
from tests.erp.test_queries import run_workload


@pytest.fixture
def books(ledger: Ledger) -> Iterator[Ledger]:
    """Books with a generated company's business in them."""
    run_workload(ledger, days=15)
    yield ledger


def _exec(store: EventStore, sql: str) -> None:
    with store.engine.begin() as conn:
        conn.exec_driver_sql(sql)


def test_untouched_books_verify_with_a_digest_per_table(books: Ledger) -> None:
    report = verify_books(books.store)
    assert report.ok and report.message == ""
    data = report.to_json()
    assert data["verified"] == METHOD == "rebuilt-and-compared"
    assert data["log_head"] == books.head_hash and data["log_position"] == books.position
    assert set(data["tables"]) == {"gl_lines", "subledger", "documents", "doc_history",
                                   "statement_lines"}
    assert all(t["rows"] > 0 and len(t["sha256"]) == 64 for t in data["tables"].values())
    # a rebuild writes the same tables: the same digests
    books.rebuild()
    assert verify_books(books.store).to_json() == data


def test_the_same_books_give_the_same_digests_on_either_backend(
        books: Ledger, tmp_path: Path) -> None:
    other = Ledger.open(tmp_path / "other.db", create=True)
    try:
        run_workload(other, days=15)
        assert verify_books(other.store).to_json() == verify_books(books.store).to_json()
    finally:
        other.close()


TAMPERS = {
    "gl amount": ("UPDATE gl_lines SET amount = amount + 1 WHERE position = "
                  "(SELECT MIN(position) FROM gl_lines) AND seq = 0",
                  "gl_lines", "changed", "amount: stored"),
    "subledger rows deleted": ("DELETE FROM subledger WHERE ledger = 'ar'",
                               "subledger", "missing", "the table lacks it"),
    "an extra gl line": ("INSERT INTO gl_lines (position, seq, entry_date, account, amount, "
                         "party, doc_id) VALUES (1, 99, '2026-01-05', '1000', 500, NULL, 'X')",
                         "gl_lines", "extra", "a row the log does not give"),
    "a document's status": ("UPDATE documents SET status = 'paid', open_amount = 0 "
                            "WHERE kind = 'invoice' AND open_amount > 0",
                            "documents", "changed", "status: stored 'paid'"),
    "history rows": ("DELETE FROM doc_history WHERE kind = 'receipt'",
                     "doc_history", "missing", ""),
    "a statement line added": ("INSERT INTO statement_lines (line_id, bank_account_id, "
                               "entry_date, amount, description, reference, counterparty, "
                               "bank_ref, status, matched_to, last_position) VALUES ('L-X', "
                               "'B1', '2026-01-05', 100, '', '', '', '', 'matched', '[]', 1)",
                               "statement_lines", "extra", "a row the log does not give"),
    "a table dropped": ("DROP TABLE statement_lines", "statement_lines", "unreadable", ""),
}


@pytest.mark.parametrize("name", list(TAMPERS))
def test_an_edited_read_table_is_named_with_its_key(books: Ledger, name: str) -> None:
    sql, table, problem, detail = TAMPERS[name]
    assert books.store.verify().ok
    _exec(books.store, sql)
    assert books.store.verify().ok  # the chain cannot see it
    report = verify_books(books.store)
    assert not report.ok and report.difference_count >= 1
    first = report.differences[0]
    assert (first.table, first.problem) == (table, problem)
    assert detail in first.detail
    assert f"the read tables do not match the log ({report.difference_count} row(s) differ " \
           f"in {table}): {table}: {report.difference_count} row(s); first {first.describe()}" \
           in report.message
    with pytest.raises(IntegrityError, match=table):
        require_verified_books(books.store)


def test_an_edit_names_the_key_and_both_values(books: Ledger) -> None:
    with books.store.engine.connect() as conn:
        position, seq, amount = conn.exec_driver_sql(
            "SELECT position, seq, amount FROM gl_lines ORDER BY position DESC, seq "
            "LIMIT 1").one()
    _exec(books.store, f"UPDATE gl_lines SET amount = {amount + 700} "
                       f"WHERE position = {position} AND seq = {seq}")
    (d,) = verify_books(books.store).differences
    assert d.key == {"position": position, "seq": seq}
    assert d.describe() == (f"gl_lines (position={position}, seq={seq}): changed: amount: "
                            f"stored {amount + 700}, the log gives {amount}")


def test_a_redefined_audit_trail_is_refused(books: Ledger) -> None:
    _exec(books.store, "DROP VIEW audit_trail")
    _exec(books.store, "CREATE VIEW audit_trail AS SELECT position, business_date, "
                       "'system' AS actor, role, command, causation_id, correlation_id, type, "
                       "stream FROM events WHERE realm = 'erp'")
    report = verify_books(books.store)
    assert not report.ok
    assert report.differences[-1].table == "audit_trail"
    assert "the view was redefined" in report.message


def test_many_differences_are_counted_and_a_few_kept(books: Ledger) -> None:
    _exec(books.store, "UPDATE gl_lines SET amount = amount * 2")
    report = verify_books(books.store)
    assert report.difference_count > len(report.differences) == 20
    assert f"gl_lines: {report.difference_count} row(s); first gl_lines (" in report.message


def test_a_log_that_does_not_verify_is_reported_before_any_table(books: Ledger) -> None:
    _exec(books.store, "UPDATE events SET payload = replace(payload, '1', '2') "
                       "WHERE position = 9")
    _exec(books.store, "DELETE FROM gl_lines")
    report = verify_books(books.store)
    assert not report.ok and report.log.first_bad_position == 9
    assert report.message.startswith("position 9: stored hash")
    assert report.tables == ()


# --- bytes that are not UTF-8, damaged pages (SQLite) ----------------------------------------

@pytest.fixture
def sqlite_books(tmp_path: Path) -> Path:
    """A closed SQLite store with a generated company's books."""
    path = tmp_path / "books.db"
    led = Ledger.open(path, create=True)
    run_workload(led, days=15)
    led.close()
    return path


def _pages(path: Path, table: str) -> list[int]:
    with sqlite3.connect(path) as conn:
        return [p for (p,) in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno",
            (table,))]


def damage(path: Path, page: int, *, at: int = 0) -> None:
    """Overwrite one page of an SQLite file (from byte ``at`` of it) with garbage."""
    with sqlite3.connect(path) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    with path.open("r+b") as f:
        f.seek((page - 1) * size + at)
        f.write((b"\xde\xad\xbe\xef" * (size // 4))[:size - at])


def test_a_byte_that_is_not_utf8_is_reported_at_its_position(sqlite_books: Path) -> None:
    with sqlite3.connect(sqlite_books) as conn:
        conn.execute("UPDATE events SET payload = CAST(CAST(payload AS BLOB) || x'ff' AS TEXT) "
                     "WHERE position = 12")
    store = EventStore.open(sqlite_books)
    try:
        report = store.verify()
        assert not report.ok and report.first_bad_position == 12 and report.events == 11
        assert report.message.startswith("position 12: column payload holds a byte that is "
                                         "not UTF-8 (0xff at byte ")
        with pytest.raises(IntegrityError, match="position 12: column payload"):
            store.require_valid()
        # another column, another position
        with sqlite3.connect(sqlite_books) as conn:
            conn.execute("UPDATE events SET actor = CAST(x'61c3' AS TEXT) WHERE position = 3")
        report = store.verify()
        assert report.first_bad_position == 3 and "column actor" in report.message
        assert "(0xc3 at byte 1 of the value)" in report.message
    finally:
        store.close()


def test_a_damaged_log_page_is_reported_after_the_last_readable_position(
        sqlite_books: Path) -> None:
    pages = _pages(sqlite_books, "events")
    damage(sqlite_books, pages[len(pages) // 2])
    store = EventStore.open(sqlite_books)
    try:
        report = store.verify()
        assert not report.ok
        assert report.message.startswith("the file is damaged: database disk image is "
                                         "malformed (the log reads up to position ")
        assert report.first_bad_position == report.events + 1 > 1
        assert store.check_file() == "the file is damaged: database disk image is malformed"
    finally:
        store.close()


def test_a_damaged_read_table_page_is_found_by_the_file_check(
        sqlite_books: Path, tmp_path: Path) -> None:
    pages = _pages(sqlite_books, "gl_lines")
    damage(sqlite_books, pages[len(pages) // 2])
    store = EventStore.open(sqlite_books)
    try:
        assert store.verify().ok  # the log's pages are whole
        report = verify_books(store)
        assert not report.ok and report.file_problem is not None
        assert report.message.startswith("the file is damaged: ")
    finally:
        store.close()


def test_a_damaged_first_page_is_damage_and_a_foreign_file_is_not_a_store(
        sqlite_books: Path, tmp_path: Path) -> None:
    schema_broken = tmp_path / "p1.db"
    shutil.copy(sqlite_books, schema_broken)
    damage(schema_broken, 1, at=100)  # the header stays, the schema page goes
    with pytest.raises(IntegrityError, match=re.escape("p1.db: the file is damaged: ")):
        EventStore.open(schema_broken)
    header_broken = tmp_path / "hdr.db"
    shutil.copy(sqlite_books, header_broken)
    damage(header_broken, 1)
    with pytest.raises(StoreError, match=re.escape(
            "is not an erpsim store (file is not a database; if it was one, its first page "
            "is damaged)")) as e:
        EventStore.open(header_broken)
    assert not isinstance(e.value, IntegrityError)


def test_the_collector_is_as_the_caller_had_it(books: Ledger) -> None:
    """verify_books pauses the cyclic collector while it folds and compares, and leaves it
    as it found it: on, off, and on again after a difference is found."""
    import gc

    assert gc.isenabled()
    assert verify_books(books.store).ok and gc.isenabled()
    gc.disable()
    try:
        assert verify_books(books.store).ok and not gc.isenabled()
    finally:
        gc.enable()
    _exec(books.store, "UPDATE gl_lines SET amount = amount + 1 WHERE seq = 0 AND position = "
                       "(SELECT MIN(position) FROM gl_lines)")
    report = verify_books(books.store)
    assert not report.ok and "gl_lines" in report.message and gc.isenabled()
