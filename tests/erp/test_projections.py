"""The projectors' plumbing on both backends: which handlers read which events, how rows are
written (many to a statement, COPY in a rebuild on PostgreSQL), and a rebuild whose documents
change across pages."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from erp import events as ev
from erp import queries as q
from erp.errors import StoreError
from erp.ledger import Ledger
from erp.postings import POSTING_TYPES
from erp.projections import (
    _DOCUMENT_UPSERT,
    _GL_INSERT,
    ROWS_PER_STATEMENT,
    Projections,
    load,
    write,
)
from erp.store import EventStore
from tests.erp.test_queries import run_workload

SIZES = [0, 1, ROWS_PER_STATEMENT - 1, ROWS_PER_STATEMENT, ROWS_PER_STATEMENT + 1,
         2 * ROWS_PER_STATEMENT + 50]


def _gl_row(i: int) -> tuple[Any, ...]:
    return (i, 0, "2026-03-02", "1200", 100 + i, None if i % 3 else f"C{i}", f"INV-{i}")


def _doc_row(i: int, open_amount: int) -> list[Any]:
    return ["invoice", f"INV-{i:04d}", "C1", "1200", "2026-03-02", None, 500, open_amount,
            "open", "", i]


def _rows(store: EventStore, sql: str) -> list[tuple[Any, ...]]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.exec_driver_sql(sql)]


def test_every_event_class_has_a_dispatch_entry_and_the_gl_reads_the_posting_types() -> None:
    p = Projections()
    assert set(p._dispatch) == set(ev.EVENT_CLASSES.values())
    assert set(p.gl.handlers()) == POSTING_TYPES
    for projector in (p.subledgers, p.documents, p.statement):
        assert projector.handlers(), f"{type(projector).__name__} reads no event"
        assert set(projector.handlers()) <= set(ev.EVENT_CLASSES.values())


@pytest.mark.parametrize("n", SIZES)
def test_write_inserts_every_row_whatever_the_count(store: EventStore, n: int) -> None:
    rows = [_gl_row(i) for i in range(n)]
    with store.write_transaction() as conn:
        write(conn, store.sql, [(_GL_INSERT, rows)])
    assert _rows(store, "SELECT position, seq, entry_date, account, amount, party, doc_id "
                        "FROM gl_lines ORDER BY position") == rows


@pytest.mark.parametrize("n", SIZES)
def test_write_upserts_across_statements(store: EventStore, n: int) -> None:
    with store.write_transaction() as conn:
        write(conn, store.sql, [(_DOCUMENT_UPSERT, [tuple(_doc_row(i, 500)) for i in range(n)])])
    # Every other document changes; new ones arrive after them, in the same statements.
    changed = [tuple(_doc_row(i, 200)) for i in range(0, n, 2)]
    new = [tuple(_doc_row(i, 500)) for i in range(n, n + 30)]
    with store.write_transaction() as conn:
        write(conn, store.sql, [(_DOCUMENT_UPSERT, changed + new)])
    got = _rows(store, "SELECT doc_id, open_amount FROM documents ORDER BY doc_id")
    assert got == [(f"INV-{i:04d}", 200 if i < n and i % 2 == 0 else 500)
                   for i in range(n + 30)]


def test_load_takes_rows_as_lists_and_tuples(store: EventStore) -> None:
    """A rebuild hands over documents as the projector's own lists (``take_states``)."""
    n = ROWS_PER_STATEMENT + 7
    docs = [_doc_row(i, i) for i in range(n)]
    with store.write_transaction() as conn:
        load(conn, store, [(_DOCUMENT_UPSERT, docs), (_GL_INSERT, [_gl_row(1), _gl_row(2)])])
    assert _rows(store, "SELECT * FROM documents ORDER BY doc_id") == [tuple(d) for d in docs]
    assert len(_rows(store, "SELECT * FROM gl_lines")) == 2


def test_clear_tables_empties_only_the_tables_named(store: EventStore) -> None:
    with store.write_transaction() as conn:
        write(conn, store.sql, [(_GL_INSERT, [_gl_row(1)]),
                                (_DOCUMENT_UPSERT, [tuple(_doc_row(1, 5))])])
    with store.write_transaction() as conn:
        store.clear_tables(conn, ["gl_lines"])
    assert _rows(store, "SELECT COUNT(*) FROM gl_lines") == [(0,)]
    assert _rows(store, "SELECT COUNT(*) FROM documents") == [(1,)]


def test_copy_rows_is_postgresql_only(store: EventStore) -> None:
    rows = [_gl_row(i) for i in range(5)]
    with store.write_transaction() as conn:
        if store.dialect != "postgresql":
            with pytest.raises(StoreError, match="COPY is a PostgreSQL statement"):
                store.copy_rows(conn, "gl_lines", _GL_INSERT.columns, rows)
            return
        store.copy_rows(conn, "gl_lines", _GL_INSERT.columns, rows)
    assert _rows(store, "SELECT position, seq, entry_date, account, amount, party, doc_id "
                        "FROM gl_lines ORDER BY position") == rows


def test_rebuild_in_small_pages_reproduces_every_read_table(ledger: Ledger,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """Documents change on many pages; a rebuild writes each once, as it ended."""
    run_workload(ledger, days=12)
    live = q.table_snapshot(ledger.store)
    monkeypatch.setattr(ledger.store, "scan_pages",
                        functools.partial(ledger.store.scan_pages, page=37))
    ledger.rebuild()
    assert q.table_snapshot(ledger.store) == live
