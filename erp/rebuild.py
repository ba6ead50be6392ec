"""Rebuilding the read tables from the log (``Ledger.rebuild``), in one process or two.

Serial (any store): one fold of the log feeds every projector. The rows that only append
(GL lines, subledger movements, document history) go in page by page; the documents and
statement lines go in once each, in their final state.

In two processes (an SQLite file): a forked second process folds the GL lines and
subledger movements (each a function of one event, nothing the books keep working with)
into a side file next to the books, with no journal. Meanwhile this process folds and
writes the documents, their history and the statement lines, whose state the books go on
with. Then each side table is copied in with one ``INSERT ... SELECT *``, which SQLite runs
as a transfer of whole records into the emptied table.

Both processes read the same log. The rebuild's transaction holds the write lock
throughout, and both stop at the head it read. Each decodes only the events its
projectors read. The tables come out row for row as the serial rebuild writes them.
The side file is removed whatever happens. If the second process fails, the rebuild
raises ``StoreError`` and the transaction rolls back: the read tables stay as they were.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing as mp
import os
import sqlite3
import tempfile
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import TYPE_CHECKING, Any

from erp.errors import StoreError
from erp.projections import Projections, load
from erp.schema import PROJECTION_TABLES
from erp.store import EventStore, load_sqlite_rows, scan_cursor_pages

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

SIDE_PARTS = ("gl", "subledgers")
"""The projectors the second process folds: the GL lines and subledger movements, each a
function of one event."""
SIDE_TABLES = ("gl_lines", "subledger")
"""Their tables, copied in from the side file."""
HERE_PARTS = ("documents", "statement")
"""The projectors this process folds: the documents, whose state (approvals, say) is more
than their rows, and the statement lines, whose events the documents read as well (their
state goes on in the books: folded here, it needs no reading back)."""

PARALLEL_MIN_EVENTS = 20_000
"""Below this many events in the log, ``workers=None`` rebuilds in one process: forking
and the side file cost more than a small fold (a few hundredths of a second)."""


@dataclass(frozen=True)
class Rebuilt:
    """What a rebuild folded: the books' projections (as a live fold leaves them), the
    erp-realm events it read, and how many processes did the work."""

    projections: Projections
    events: int
    workers: int


def choose_workers(store: EventStore, requested: int | None, head: int) -> int:
    """How many processes a rebuild uses: ``requested`` (1 or 2), or with ``None`` two
    when the store is an SQLite file, the log holds at least ``PARALLEL_MIN_EVENTS``
    events, this process may use two CPUs and it runs no other thread (a forked child
    gets only the forking thread, and a lock another thread held stays locked in it).

    Two on a PostgreSQL store is one (its rebuild loads with ``COPY`` in one session),
    and so is two where processes cannot be forked or this one may start none (a
    multiprocessing pool's worker).
    """
    if requested is not None and requested not in (1, 2):
        raise ValueError(f"workers {requested!r}: expected 1, 2 or None (chosen)")
    if (store.dialect != "sqlite" or _sqlite_path(store) is None
            or "fork" not in mp.get_all_start_methods()
            or mp.current_process().daemon):  # a pool's worker may start no process
        return 1
    if requested is not None:
        return requested
    if head < PARALLEL_MIN_EVENTS or threading.active_count() > 1:
        return 1
    return 2 if usable_cpus() >= 2 else 1


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def rebuild_tables(store: EventStore, conn: Connection, *, workers: int | None) -> Rebuilt:
    """Empty every read table and write it again from the log, in one write transaction
    on ``conn`` (``workers``: see ``choose_workers``)."""
    gc_was = gc.isenabled()
    gc.disable()  # a long fold allocates many objects that live on; the GC only slows it
    try:
        with store.write_transaction(conn):
            head, _ = store.head(conn)
            if choose_workers(store, workers, head) == 1:
                return _one_process(store, conn)
        # The side file can be let go of only after the transaction that read it ended.
        with _side_file(store, conn) as side, store.write_transaction(conn):
            return _two_processes(store, conn, side)
    finally:
        if gc_was:
            gc.enable()


def _one_process(store: EventStore, conn: Connection) -> Rebuilt:
    projections = Projections()
    n = 0
    with store.engine.connect() as reader:
        store.clear_tables(conn, [t.name for t in PROJECTION_TABLES])
        for page in store.scan_pages(reader, realm="erp"):
            projections.fold(page)
            n += len(page)
            load(conn, store, projections.take_rows())
        # Documents and statement lines change many times: write each once, as it ended.
        load(conn, store, projections.take_states())
    return Rebuilt(projections, n, 1)


def _sqlite_path(store: EventStore) -> str | None:
    """The SQLite store's file, or None for an in-memory database."""
    database = store.engine.url.database
    return None if not database or database == ":memory:" else database


@contextlib.contextmanager
def _side_file(store: EventStore, conn: Connection) -> Iterator[str]:
    """A new file next to the books for the second process's tables, attached to the
    store's connection as ``rebuild_side``; detached and removed at the end."""
    path = _sqlite_path(store)
    assert path is not None
    books = Path(path)
    fd, side = tempfile.mkstemp(prefix=f".{books.name}.rebuild-", suffix=".db",
                                dir=books.parent)
    os.close(fd)
    try:
        yield side
    finally:
        with contextlib.suppress(sqlite3.OperationalError):  # not attached: nothing to do
            db: Any = conn.connection.driver_connection
            db.execute("DETACH DATABASE rebuild_side")
        for leftover in (side, side + "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


def _two_processes(store: EventStore, conn: Connection, side: str) -> Rebuilt:
    path = _sqlite_path(store)
    assert path is not None
    head, _ = store.head(conn)
    ctx = mp.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_side_fold, args=(path, side, head, send),
                        name="erpsim-rebuild", daemon=True)
    db: Any = conn.connection.driver_connection
    try:
        child.start()
        send.close()
        projections = Projections(only=HERE_PARTS)
        n = 0
        with store.engine.connect() as reader:
            store.clear_tables(conn, [t.name for t in PROJECTION_TABLES])
            for page in store.scan_pages(reader, realm="erp", upto=head):
                projections.fold(page)
                n += len(page)
                load(conn, store, projections.take_rows())
            load(conn, store, projections.take_states())
        side_events = _outcome(child, receive, side)
        if side_events != n:
            raise StoreError(f"{store.label}: the rebuild's second process read {side_events} "
                             f"events of the log and this one {n}; nothing was rebuilt")
        db.execute("ATTACH DATABASE ? AS rebuild_side", (side,))
        for table in SIDE_TABLES:  # emptied above: SQLite copies the records whole
            db.execute(f"INSERT INTO main.{table} SELECT * FROM rebuild_side.{table}")
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        if child.pid is not None:
            child.join()
    projections.route()  # from now on every projector reads what the books write
    return Rebuilt(projections, n, 2)


def _outcome(child: mp.process.BaseProcess, receive: Pipe, side: str) -> int:
    """The second process's event count, or ``StoreError`` saying how it failed."""
    try:
        status, value = receive.recv()
    except EOFError:
        child.join()
        raise StoreError(f"the rebuild's second process ended (exit code {child.exitcode}) "
                         f"before writing {side}; nothing was rebuilt") from None
    child.join()
    if status != "ok":
        raise StoreError(f"the rebuild's second process failed: {value}; nothing was rebuilt")
    return int(value)


def _side_fold(path: str, side: str, head: int, send: Pipe) -> None:
    """In the forked process: fold the GL lines and subledger movements of the log's
    erp-realm events up to ``head`` into ``side``, and send ``("ok", events)`` or
    ``("error", what went wrong)``."""
    try:
        send.send(("ok", _fold_into(path, side, head)))
    except BaseException as e:  # the parent reports it; the traceback's last line says where
        where = traceback.extract_tb(e.__traceback__)[-1]
        send.send(("error", f"{type(e).__name__}: {e} (at {Path(where.filename).name}:"
                            f"{where.lineno})"))
    finally:
        send.close()


def _fold_into(path: str, side: str, head: int) -> int:
    """Fold and write the side tables (see ``_side_fold``); the events read."""
    source = sqlite3.connect(path, isolation_level=None)
    out = sqlite3.connect(side, isolation_level=None)
    try:
        source.execute("PRAGMA query_only = ON")
        for pragma in ("journal_mode = OFF", "synchronous = OFF"):
            out.execute(f"PRAGMA {pragma}")
        # The books' own definitions, so that the copy back is one of equal tables.
        for table in SIDE_TABLES:
            (definition,) = source.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                (table,)).fetchone()
            out.execute(definition)
        projections = Projections(only=SIDE_PARTS)
        n = 0
        source.execute("BEGIN")
        out.execute("BEGIN")
        for page in scan_cursor_pages(source.cursor(), str, realm="erp", upto=head):
            projections.fold(page)
            n += len(page)
            for insert, rows in projections.take_rows():
                load_sqlite_rows(out, insert.table, insert.columns, rows)
        for insert, rows in projections.take_states():
            load_sqlite_rows(out, insert.table, insert.columns, rows)
        out.execute("COMMIT")
        source.execute("COMMIT")
        return n
    finally:
        out.close()
        source.close()
