"""The event store: one append-only log per attempt, on SQLAlchemy Core.

Backends: an SQLite file in WAL mode (the embedded default) or a PostgreSQL
database by URL, one schema per store. Appends are atomic batches with optimistic
concurrency on ``(stream, version)``; every row is chained to the one before it by
sha256 over a canonical encoding that leaves out wall-clock time, so the same
events give the same head hash on any machine and either backend.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import orjson
import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Connection, Engine

from erp import schema as s
from erp.errors import ConcurrencyConflict, ErpError, IntegrityError, StoreBusy, StoreError

if TYPE_CHECKING:
    import psycopg

MAX_POSITION = 2**63 - 1
"""The largest log position (and row count) a store holds: a signed 64-bit integer, SQLite's
INTEGER and PostgreSQL's BIGINT; a larger one asked of a read is refused at the edge."""

GENESIS = "0" * 64
"""The ``prev_hash`` of the first event of every log."""

EVENT_COLUMNS = tuple(c.name for c in s.events.columns)

LOCK_WAIT_S = 30.0
"""How long a writer waits for the store's write lock, held by another writer, before it
gives up with a ``StoreBusy`` (nothing written): SQLite's busy timeout, PostgreSQL's
``lock_timeout`` (set for each connection) on the advisory lock."""

LOAD_ROWS = 100
"""How many rows one of ``EventStore.load_rows``'s SQLite statements carries (50 to 1,000
all measured alike)."""


@cache
def _load_statements(table: str, columns: str) -> tuple[str, str]:
    """SQLite ``INSERT`` statements of one row and of ``LOAD_ROWS`` rows into ``table``."""
    group = f"({','.join('?' * (columns.count(',') + 1))})"
    head = f"INSERT INTO {table} ({columns}) VALUES "
    return head + group, head + ",".join([group] * LOAD_ROWS)


def load_sqlite_rows(db: sqlite3.Connection, table: str, columns: str,
                     rows: Sequence[Sequence[Any]]) -> None:
    """Append rows to an SQLite table on a ``sqlite3`` connection, in its open
    transaction: ``LOAD_ROWS`` rows a statement, the rest one a statement (see
    ``EventStore.load_rows``)."""
    if not rows:
        return
    one, many = _load_statements(table, columns)
    n = LOAD_ROWS
    whole = len(rows) - len(rows) % n
    cur = db.cursor()
    try:
        if whole:
            cur.executemany(many, (tuple(chain.from_iterable(rows[i:i + n]))
                                   for i in range(0, whole, n)))
        if whole < len(rows):
            cur.executemany(one, rows[whole:])
    finally:
        cur.close()


def scan_sql(*, realm: bool, upto: bool, page: int) -> str:
    """The query of one page of ``EventStore.scan_pages`` (``?`` placeholders: the last
    position read, then the realm and the last position wanted when they are asked for)."""
    where = "position > ?" + (" AND realm = ?" if realm else "") + (
        " AND position <= ?" if upto else "")
    return ("SELECT position, type, schema_version, business_date, payload FROM events "
            f"WHERE {where} ORDER BY position LIMIT {int(page)}")


def scan_cursor_pages(cur: Any, sql: Callable[[str], str], *, after: int = 0,
                      realm: str | None = None, upto: int | None = None, page: int = 20_000,
                      ) -> Iterator[Sequence[tuple[int, str, int, str, str]]]:
    """``EventStore.scan_pages`` on a driver cursor (closed at the end); ``sql`` adapts
    the ``?`` placeholders to the driver."""
    q = sql(scan_sql(realm=realm is not None, upto=upto is not None, page=page))
    extra = tuple(x for x in (realm, upto) if x is not None)
    try:
        last = after
        while True:
            cur.execute(q, (last, *extra))
            rows = cur.fetchall()
            if rows:
                yield rows
            if len(rows) < page:
                return
            last = rows[-1][0]
    finally:
        cur.close()


def chain_hash(prev_hash: str, position: int, stream: str, version: int, type_: str,
               schema_version: int, realm: str, business_date: str, sim_time: float | None,
               actor: str, role: str, command: str, causation_id: str | None,
               correlation_id: str | None, payload: str) -> str:
    """The hash of one event row, chained to ``prev_hash``.

    ``sim_time`` is hashed as a float whatever the caller passed (an int 3 is stored,
    and read back, as 3.0).
    """
    if sim_time is not None:
        sim_time = float(sim_time)
    head = orjson.dumps([position, stream, version, type_, schema_version, realm, business_date,
                         sim_time, actor, role, command, causation_id, correlation_id])
    return hashlib.sha256(b"%s\n%s\n%s" % (prev_hash.encode(), head, payload.encode())).hexdigest()


EventRow = tuple[int, str, int, str, int, str, str, float | None, str, str, str, str | None,
                 str | None, str, str, str]
"""One ``events`` row in ``EVENT_COLUMNS`` order: the envelope, the payload and both hashes."""


class EnvelopeBuilder:
    """The one builder of event rows: it numbers, versions and chains them onto a log head.

    Every writer (``EventStore.append``, the ledger's commands and its world-realm
    records) builds its rows here, so position, version, envelope and hash are made
    one way. ``versions`` is the caller's map of stream -> current version; it is
    updated as rows are added (a missing stream starts at 0).
    """

    __slots__ = ("position", "prev_hash", "rows", "versions")

    def __init__(self, position: int, prev_hash: str, versions: dict[str, int]) -> None:
        self.position = position
        self.prev_hash = prev_hash
        self.versions = versions
        self.rows: list[EventRow] = []

    def add(self, stream: str, type_: str, schema_version: int, realm: str, business_date: str,
            sim_time: float | None, actor: str, role: str, command: str,
            causation_id: str | None, correlation_id: str | None, payload: str) -> int:
        """Append the next row (position + 1, the stream's next version, chained); its
        position."""
        position = self.position + 1
        version = self.versions.get(stream, 0) + 1
        prev = self.prev_hash
        digest = chain_hash(prev, position, stream, version, type_, schema_version, realm,
                            business_date, sim_time, actor, role, command, causation_id,
                            correlation_id, payload)
        self.rows.append((position, stream, version, type_, schema_version, realm,
                          business_date, sim_time, actor, role, command, causation_id,
                          correlation_id, payload, prev, digest))
        self.versions[stream] = version
        self.position, self.prev_hash = position, digest
        return position

    def stored(self) -> list[StoredEvent]:
        """The rows built so far as stored events."""
        return [StoredEvent._make(r) for r in self.rows]


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append, before the store gives it a position, version and hash."""

    stream: str
    type: str
    payload: str
    business_date: str
    realm: str = "erp"
    schema_version: int = 1
    actor: str = "system"
    role: str = "system"
    command: str = ""
    sim_time: float | None = None
    causation_id: str | None = None
    correlation_id: str | None = None


class StoredEvent(NamedTuple):
    """One row of the log: the envelope and the JSON payload (in ``EVENT_COLUMNS``
    order). A named tuple: a row read or written becomes one for a tenth of a frozen
    dataclass's cost (16 ``object.__setattr__`` calls), and every fold reads thousands."""

    position: int
    stream: str
    version: int
    type: str
    schema_version: int
    realm: str
    business_date: str
    sim_time: float | None
    actor: str
    role: str
    command: str
    causation_id: str | None
    correlation_id: str | None
    payload: str
    prev_hash: str
    hash: str

    @property
    def data(self) -> dict[str, Any]:
        """The payload as a dict."""
        return orjson.loads(self.payload)

    @property
    def event(self) -> Any:
        """The payload decoded into its event class (erp realm only; kept, see
        :func:`decoded`)."""
        from erp.events import decode_event

        if self.realm != "erp":
            raise TypeError(f"event {self.position} is in realm {self.realm!r}; decode it with "
                            "that realm's event registry")
        return decoded("erp", self.type, self.schema_version, self.payload, decode_event)


DECODED_KEEP = 100_000
"""How many decoded payloads :func:`decoded` keeps before it starts again empty."""

_DECODED: dict[tuple[str, str, int, str | bytes], Any] = {}


def decoded(realm: str, type_: str, version: int, payload: str | bytes,
            decode: Callable[[str, int, Any], Any]) -> Any:
    """``decode(type_, version, payload)``, kept by ``(realm, type, schema_version,
    payload)``: an attempt's per-date folds, its final evaluation's, a look back to an
    earlier date and the books' verification each decode the same stored payloads again.
    The key is the payload's own text, so what comes back is exactly what decoding it
    gives; events are frozen, so one object serves every fold. At most
    :data:`DECODED_KEEP` are kept (then the store empties and starts again)."""
    key = (realm, type_, version, payload)
    found = _DECODED.get(key)
    if found is None:
        if len(_DECODED) >= DECODED_KEEP:
            _DECODED.clear()
        found = _DECODED[key] = decode(type_, version, payload)
    return found


def forget_decoded() -> None:
    """Empty :func:`decoded`'s store: when a run is over its payloads will not come again
    (the next run's log is another), and a process running one after another would
    otherwise carry up to :data:`DECODED_KEEP` of them, each walked by every full
    collection."""
    _DECODED.clear()


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The result of recomputing the hash chain."""

    ok: bool
    events: int
    head_hash: str
    first_bad_position: int | None = None
    message: str = ""


SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def sqlite_damage(error: BaseException) -> str | None:
    """The SQLite message when ``error`` says the file itself is damaged (a corrupt page,
    a malformed schema), else ``None`` (a locked database, a missing table, ...)."""
    orig = getattr(error, "orig", error)
    if not isinstance(orig, sqlite3.DatabaseError):
        return None
    name = getattr(orig, "sqlite_errorname", "") or ""
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else name
    if name.startswith("SQLITE_CORRUPT") or "malformed" in text:
        return text
    return None


def _check_sqlite_file(path: Path) -> None:
    """Refuse, read-only and without leaving files behind, what is not an erpsim store
    (``StoreError``) or is one whose file is damaged (``IntegrityError``)."""
    from erp.schema import STORE_FORMAT

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise StoreError(f"{path} cannot be opened: {e}") from e
    try:
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'format'").fetchone()
    except sqlite3.DatabaseError as e:
        damage = sqlite_damage(e)
        if damage is None and getattr(e, "sqlite_errorname", "") == "SQLITE_NOTADB" \
                and _has_sqlite_magic(path):  # an SQLite file whose first page is broken
            damage = str(e)
        if damage is not None:
            raise IntegrityError(f"{path}: the file is damaged: {damage} (SQLite could not "
                                 "read its schema)") from e
        hint = ("; if it was one, its first page is damaged"
                if getattr(e, "sqlite_errorname", "") == "SQLITE_NOTADB" else "")
        raise StoreError(f"{path} is not an erpsim store ({e}{hint})") from e
    finally:
        conn.close()
    if row is None or row[0] != STORE_FORMAT:
        raise StoreError(f"{path} is not an erpsim store (format "
                         f"{row[0] if row else 'missing'!r}, expected {STORE_FORMAT!r})")


def _has_sqlite_magic(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError:
        return False


class _NotUtf8(Exception):
    """A text column of an event row holds bytes that are not UTF-8."""

    def __init__(self, position: object, column: str, error: UnicodeDecodeError) -> None:
        super().__init__(column)
        self.position, self.column, self.error = position, column, error


def _lock_wait_ran_out(error: BaseException) -> bool:
    """Whether a driver error says the write lock was not had in time: SQLite's "database
    is locked" (its busy timeout ran out), PostgreSQL's lock_not_available (55P03)."""
    orig = getattr(error, "orig", error)
    if isinstance(orig, sqlite3.OperationalError):
        return "locked" in str(orig)
    return getattr(orig, "sqlstate", None) == "55P03"


def _wait_ms(seconds: float) -> int:
    """A lock wait in the whole milliseconds SQLite's and PostgreSQL's settings take."""
    return max(1, round(seconds * 1000))


def _pg_lock_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


POSTGRES_PREFIXES = ("postgresql:", "postgresql+psycopg:", "postgres:")
"""How a PostgreSQL store URL starts (anything else is an SQLite path or URL)."""


class EventStore:
    """An event log with its read tables, in SQLite or PostgreSQL."""

    def __init__(self, engine: Engine, *, label: str, schema: str | None = None,
                 url: str | None = None, lock_wait_s: float = LOCK_WAIT_S) -> None:
        self.engine = engine
        self.lock_wait_s = lock_wait_s
        """How long a writer waits for another's write lock (:data:`LOCK_WAIT_S`)."""
        self.label = label
        """How the store reads in messages (a path; a PostgreSQL URL without password and
        its schema)."""
        self.schema = schema
        self.url = url
        """PostgreSQL: the URL to open it again with ``schema``, without its password (the
        server or ``PGPASSWORD`` supplies that); SQLite: ``None`` (the path is the label)."""
        self.dialect = engine.dialect.name
        self._qmark = engine.dialect.paramstyle == "qmark"
        self._lock_key = _pg_lock_key(schema or "public")

    # --- opening --------------------------------------------------------------

    @classmethod
    def open(cls, target: str | Path, *, schema: str | None = None,
             create: bool = False, lock_wait_s: float = LOCK_WAIT_S) -> EventStore:
        """Open a store: an SQLite path (or ``sqlite:///`` URL) or a PostgreSQL URL.

        With ``create`` a missing store is created; otherwise a missing file, a
        missing schema or a database that is not an erpsim store is a ``StoreError``.
        ``lock_wait_s``: how long a write waits for another writer's lock.
        """
        if not lock_wait_s > 0:
            raise StoreError(f"lock_wait_s {lock_wait_s!r}: expected a number of seconds > 0")
        text = str(target)
        if text.startswith(POSTGRES_PREFIXES):
            store = cls._open_postgres(text, schema, lock_wait_s)
        else:
            if text.startswith("sqlite:///"):
                path = Path(text.removeprefix("sqlite:///"))
            elif "://" in text:
                raise StoreError(f"{text}: unsupported store URL (expected an SQLite file path, "
                                 "sqlite:///PATH or postgresql://...)")
            else:
                path = Path(text)
            if not create and not path.exists():
                raise StoreError(f"no store at {path}: the file does not exist")
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
            else:
                _check_sqlite_file(path)  # before anything could change a foreign file
            store = cls._open_sqlite(path, lock_wait_s)
        try:
            if create:
                store.create()
            store._check_format()
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _open_sqlite(cls, path: Path, lock_wait_s: float) -> EventStore:
        # A pooled connection may be used by another thread than the one that opened it
        # (one user at a time), as with PostgreSQL.
        # The path as the URL's database, never parsed from URL text: '%20' would be
        # decoded and '?' or '#' would cut it (the books opened in another file).
        engine = sa.create_engine(sa.engine.URL.create("sqlite", database=str(path)),
                                  connect_args={"check_same_thread": False})

        @sa_event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "wal_autocheckpoint=10000",
                           f"busy_timeout={_wait_ms(lock_wait_s)}",
                           "cache_size=-65536"):
                cur.execute(f"PRAGMA {pragma}")
            cur.close()

        @sa_event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            write = conn.get_execution_options().get("erpsim_write", False)
            cur = conn.connection.cursor()  # the driver's: see EventStore.cursor
            try:
                cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            finally:
                cur.close()

        return cls(engine, label=str(path), lock_wait_s=lock_wait_s)

    @classmethod
    def _open_postgres(cls, url: str, schema: str | None, lock_wait_s: float) -> EventStore:
        u = sa.engine.make_url(url)
        if u.drivername in ("postgresql", "postgres"):
            u = u.set(drivername="postgresql+psycopg")
        schema = schema or u.query.get("schema") or "erpsim"  # type: ignore[assignment]
        if not isinstance(schema, str) or not schema.replace("_", "").isalnum():
            raise StoreError(f"PostgreSQL schema {schema!r}: expected letters, digits and _")
        u = u.difference_update_query(["schema"])
        # lock_timeout: set with the connection, not per transaction (the write path's
        # advisory lock is the wait it bounds; a round trip a write would cost otherwise).
        options = f"-c search_path={schema} -c lock_timeout={_wait_ms(lock_wait_s)}"
        engine = sa.create_engine(u, connect_args={"options": options}, pool_pre_ping=False)
        store = cls(engine, label=f"{u.render_as_string(hide_password=True)} schema {schema}",
                    schema=schema,
                    url=u.set(password=None).render_as_string(hide_password=False),
                    lock_wait_s=lock_wait_s)
        try:
            with engine.connect():
                pass
        except sa.exc.OperationalError as e:
            raise StoreError(f"cannot connect to PostgreSQL at "
                             f"{u.render_as_string(hide_password=True)}: "
                             f"{str(e.orig).strip().splitlines()[0]}") from e
        return store

    def create(self) -> None:
        """Create the log and read tables if they are missing."""
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":
                conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        with self.engine.begin() as conn:
            s.metadata.create_all(conn)
            exists = conn.execute(sa.select(s.store_meta.c.value).where(
                s.store_meta.c.key == "format")).first()
            if exists is None:
                conn.execute(s.store_meta.insert().values(key="format", value=s.STORE_FORMAT))
            has_view = sa.inspect(conn).get_view_names()
            if "audit_trail" not in has_view:
                conn.exec_driver_sql(s.AUDIT_VIEW)

    def _check_format(self) -> None:
        try:
            with self.engine.connect() as conn:
                row = conn.execute(sa.select(s.store_meta.c.value).where(
                    s.store_meta.c.key == "format")).first()
        except sa.exc.DatabaseError as e:
            raise StoreError(f"{self.label} is not an erpsim store "
                             f"({str(getattr(e, 'orig', e)).strip().splitlines()[0]})") from e
        if row is None or row[0] != s.STORE_FORMAT:
            raise StoreError(f"{self.label} is not an erpsim store (format "
                             f"{row[0] if row else 'missing'!r}, expected {s.STORE_FORMAT!r})")

    def close(self) -> None:
        """Release every connection."""
        self.engine.dispose()

    def drop(self) -> None:
        """Delete the store's tables (PostgreSQL: its whole schema)."""
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            else:
                conn.exec_driver_sql("DROP VIEW IF EXISTS audit_trail")
                s.metadata.drop_all(conn)

    # --- SQL helpers ------------------------------------------------------------

    def sql(self, text: str) -> str:
        """Adapt a statement written with ``?`` placeholders to the driver.

        psycopg reads every ``%`` as the start of a placeholder (with parameters or
        without), so a literal one (``LIKE 'agent:%'``) is doubled before ``?`` becomes
        ``%s``: the statement then reads the same on both backends."""
        return text if self._qmark else text.replace("%", "%%").replace("?", "%s")

    def clear_tables(self, conn: Connection, names: Sequence[str]) -> None:
        """Delete every row of these tables inside the caller's transaction.

        PostgreSQL: ``TRUNCATE``. ``DELETE`` would leave every old row dead in the
        table and its indexes until a vacuum, and a rebuild's inserts, which put the
        same keys back, would step over them (loading 60,000 events' rows took 0.72 s
        after ``DELETE``, 0.33 s after ``TRUNCATE``). The price: until the
        transaction ends, other sessions that read these tables wait instead of
        seeing the old rows. SQLite: ``DELETE`` without ``WHERE``, which it already
        runs as a truncation, and readers keep seeing the old rows.
        """
        for name in names:
            conn.exec_driver_sql(f"TRUNCATE {name}" if self.dialect == "postgresql"
                                 else f"DELETE FROM {name}")

    def copy_rows(self, conn: Connection, table: str, columns: str,
                  rows: Iterable[Sequence[Any]]) -> None:
        """Append rows to a table with PostgreSQL's ``COPY`` (PostgreSQL only), inside the
        caller's transaction; ``columns`` is the comma-separated column list."""
        if self.dialect != "postgresql":
            raise StoreError(f"{self.label}: COPY is a PostgreSQL statement")
        cur = cast("psycopg.Cursor[Any]", conn.connection.cursor())  # PostgreSQL: psycopg's
        with cur, cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def load_rows(self, conn: Connection, table: str, columns: str,
                  rows: Sequence[Sequence[Any]]) -> None:
        """Append rows to a table (a rebuild's emptied read tables) inside the caller's
        transaction, the cheapest way each backend has; ``columns`` is the comma-separated
        column list.

        PostgreSQL: ``COPY``. SQLite: plain ``INSERT`` statements of ``LOAD_ROWS`` rows
        each, flattened here and run by the driver's own cursor ``executemany`` (the rest
        of the rows one a statement). One row a statement pays SQLite's per-statement
        step and reset for every row; 200,000 events' rows (841,000) took 3.3 s of CPU
        this way against 4.4 s one a statement, flattening included (a loaded machine).
        """
        if self.dialect == "postgresql":
            self.copy_rows(conn, table, columns, rows)
            return
        if not rows:
            return
        # The driver's own cursor (sqlite3's; it takes any iterable of rows): SQLAlchemy's
        # execute adds its own work per call.
        load_sqlite_rows(conn.connection.driver_connection, table, columns, rows)  # type: ignore[arg-type]

    @contextmanager
    def write_transaction(self, conn: Connection | None = None) -> Iterator[Connection]:
        """A transaction that holds the store's write lock until it ends."""
        own = conn is None
        if conn is None:
            conn = self.engine.connect()
        try:
            conn.execution_options(erpsim_write=True)
            try:
                tx = conn.begin()  # SQLite: BEGIN IMMEDIATE, which waits for the lock
            except sqlite3.OperationalError as e:
                if not _lock_wait_ran_out(e):
                    raise
                raise self._lock_error(e) from e
            with tx:
                if self.dialect == "postgresql":  # lock_timeout bounds the wait (see open)
                    try:
                        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)",
                                             (self._lock_key,))
                    except sa.exc.OperationalError as e:
                        if not _lock_wait_ran_out(e):
                            raise
                        raise self._lock_error(e) from e
                yield conn
        finally:
            if own:
                conn.close()

    def _lock_error(self, error: BaseException) -> StoreBusy:
        """The error of a write that did not get the store's write lock in time."""
        orig = getattr(error, "orig", error)
        first = str(orig).strip().splitlines()[0] if str(orig).strip() else ""
        return StoreBusy(f"{self.label}: another writer held the store's write lock for "
                          f"{self.lock_wait_s:g} s ({first or type(orig).__name__}); nothing "
                          "was written")

    def head(self, conn: Connection | None = None) -> tuple[int, str]:
        """The last position and its hash (``(0, GENESIS)`` for an empty log)."""
        q = "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"
        if conn is None:
            with self.engine.connect() as c:
                row = c.exec_driver_sql(q).first()
        else:
            cur = self.cursor(conn)
            try:
                cur.execute(q)
                row = cur.fetchone()
            finally:
                cur.close()
        return (int(row[0]), row[1]) if row else (0, GENESIS)

    @staticmethod
    def cursor(conn: Connection) -> Any:
        """The driver's own cursor on ``conn``'s database connection, in whatever
        transaction ``conn`` has open. A write transaction's statements (the head, the
        event rows, the read tables' rows) go through it: SQLAlchemy's execution layer
        costs more than SQLite's own work for a one-command transaction. Its errors are
        the driver's (``dbapi_integrity_error``), not SQLAlchemy's wrappers."""
        return conn.connection.cursor()

    @property
    def dbapi_integrity_error(self) -> type[Exception]:
        """The driver's ``IntegrityError`` (``sqlite3``'s or ``psycopg``'s)."""
        return cast("type[Exception]", self.engine.dialect.dbapi.IntegrityError)  # type: ignore[union-attr]

    def stream_versions(self, conn: Connection, streams: Sequence[str]) -> dict[str, int]:
        """The current version of each stream (0 for a stream with no events)."""
        found: dict[str, int] = dict.fromkeys(streams, 0)
        uniq = list(found)
        for i in range(0, len(uniq), 500):
            chunk = uniq[i:i + 500]
            marks = ",".join("?" * len(chunk))
            rows = conn.exec_driver_sql(
                self.sql(f"SELECT stream, MAX(version) FROM events WHERE stream IN ({marks}) "
                         "GROUP BY stream"), tuple(chunk)).all()
            for stream, version in rows:
                found[stream] = int(version)
        return found

    def insert_rows(self, conn: Connection, rows: Sequence[EventRow]) -> None:
        """Insert event rows (in ``EVENT_COLUMNS`` order) inside the caller's transaction.

        A duplicate ``(stream, version)`` or position raises ``ConcurrencyConflict``.
        """
        if not rows:
            return
        cur = self.cursor(conn)
        try:
            cur.executemany(self._insert_events, rows)
        except (sa.exc.IntegrityError, self.dbapi_integrity_error) as e:
            raise self._conflict(conn, rows, e) from e
        finally:
            cur.close()

    @functools.cached_property
    def _insert_events(self) -> str:
        """The event rows' INSERT in the driver's placeholders (made once per store)."""
        marks = ",".join("?" * len(EVENT_COLUMNS))
        return self.sql(f"INSERT INTO events ({','.join(EVENT_COLUMNS)}) VALUES ({marks})")

    def _conflict(self, conn: Connection, rows: Sequence[EventRow],
                  error: Exception) -> ErpError:
        # Runs in an aborted transaction on PostgreSQL: look in a fresh connection.
        with self.engine.connect() as fresh:
            current = self.stream_versions(fresh, [r[1] for r in rows])
            head = self.head(fresh)[0]
        for r in rows:
            if current.get(r[1], 0) >= r[2]:
                return ConcurrencyConflict(r[1], r[2] - 1, current[r[1]])
        if head >= rows[0][0]:
            return ConcurrencyConflict("<log head>", rows[0][0] - 1, head)
        reason = str(getattr(error, "orig", error)).strip().splitlines()[0]
        return StoreError(f"{self.label}: the database refused event rows "
                          f"{rows[0][0]}..{rows[-1][0]}: {reason}")

    # --- appending --------------------------------------------------------------

    def append(self, new: Sequence[NewEvent],
               expected_versions: Mapping[str, int] | None = None) -> list[StoredEvent]:
        """Append events atomically; all or nothing.

        ``expected_versions`` maps a stream to the version the caller last saw
        (0: the stream must be new). A mismatch raises ``ConcurrencyConflict`` naming
        the stream and both versions, and nothing is written.
        """
        with self.write_transaction() as conn:
            position, prev = self.head(conn)
            current = self.stream_versions(conn, [n.stream for n in new])
            for stream, expected in (expected_versions or {}).items():
                actual = current.get(stream)
                if actual is None:
                    actual = self.stream_versions(conn, [stream])[stream]
                if actual != expected:
                    raise ConcurrencyConflict(stream, expected, actual)
            chain = EnvelopeBuilder(position, prev, current)
            for n in new:
                chain.add(n.stream, n.type, n.schema_version, n.realm, n.business_date,
                          n.sim_time, n.actor, n.role, n.command, n.causation_id,
                          n.correlation_id, n.payload)
            self.insert_rows(conn, chain.rows)
        return chain.stored()

    # --- reading ----------------------------------------------------------------

    def read(self, *, after: int = 0, until: int | None = None, stream: str | None = None,
             realm: str | None = None, types: Sequence[str] | None = None,
             actor: str | None = None, page: int = 20_000) -> Iterator[StoredEvent]:
        """Events in position order, filtered by range, stream, realm, types and actor."""
        if types is not None and not types:
            return
        where: list[str] = ["position > ?"]
        params: list[Any] = []
        if until is not None:
            where.append("position <= ?")
            params.append(until)
        if stream is not None:
            where.append("stream = ?")
            params.append(stream)
        if realm is not None:
            where.append("realm = ?")
            params.append(realm)
        if types:
            where.append(f"type IN ({','.join('?' * len(types))})")
            params.extend(types)
        if actor is not None:
            where.append("actor = ?")
            params.append(actor)
        q = self.sql(f"SELECT {','.join(EVENT_COLUMNS)} FROM events WHERE {' AND '.join(where)} "
                     f"ORDER BY position LIMIT {int(page)}")
        last = after
        make = StoredEvent._make
        with self.engine.connect() as conn:
            # The driver's own cursor: its rows are plain tuples, made into events as they
            # are (SQLAlchemy's result rows cost more than the read itself on short reads).
            cur = conn.connection.cursor()
            try:
                while True:
                    cur.execute(q, (last, *params))
                    rows = cur.fetchall()
                    yield from map(make, rows)
                    if len(rows) < page:
                        return
                    last = rows[-1][0]
            finally:
                cur.close()

    def scan_pages(self, conn: Connection, *, after: int = 0, realm: str | None = None,
                   upto: int | None = None, page: int = 20_000,
                   ) -> Iterator[Sequence[tuple[int, str, int, str, str]]]:
        """Fast full read for folds, a page at a time: ``(position, type, schema_version,
        business_date, payload)`` rows in position order, on the caller's connection
        (``upto``: the last position to read, the head when ``None``)."""
        yield from scan_cursor_pages(conn.connection.cursor(), self.sql, after=after,
                                     realm=realm, upto=upto, page=page)

    def count(self) -> int:
        """How many events the log holds."""
        with self.engine.connect() as conn:
            return int(conn.exec_driver_sql("SELECT COUNT(*) FROM events").scalar_one())

    def _rows_to_verify(self, page: int = 20_000) -> Iterator[tuple[Any, ...]]:
        """Every event row in ``EVENT_COLUMNS`` order, in position order, for ``verify``.

        On SQLite a page whose text the driver cannot decode (a stored byte that is not
        UTF-8) is read again with its text columns as bytes and decoded here, so that the
        byte is found at its row (``_NotUtf8``) instead of failing the whole page inside
        the driver (every page read as bytes and decoded here cost ~4 us a row).
        """
        q = self.sql(f"SELECT {','.join(EVENT_COLUMNS)} FROM events WHERE position > ? "
                     "ORDER BY position LIMIT ?")
        with self.engine.connect() as conn:
            raw: Any = conn.connection.driver_connection
            sqlite = self.dialect == "sqlite"
            old_factory = raw.text_factory if sqlite else None
            as_bytes = False
            cur = raw.cursor()
            try:
                last: Any = 0
                while True:
                    try:
                        cur.execute(q, (last, page))
                        rows = cur.fetchall()
                    except sqlite3.DatabaseError as e:
                        if (sqlite and not as_bytes and isinstance(e, sqlite3.OperationalError)
                                and _UNDECODABLE in str(e)):
                            as_bytes, raw.text_factory = True, bytes  # this page as bytes
                            continue
                        if page == 1 or not sqlite:
                            raise
                        page = 1  # a damaged page: go on row by row, to the first unreadable
                        continue
                    for r in rows:
                        if as_bytes:
                            r = _decoded(r)
                        yield r
                    if len(rows) < page:
                        return
                    last = rows[-1][0]
                    if as_bytes:  # the next page as text again
                        as_bytes, raw.text_factory = False, old_factory
            finally:
                cur.close()
                if sqlite:
                    raw.text_factory = old_factory

    def verify(self) -> VerifyReport:
        """Recompute the chain; name the first position whose row does not check out.

        A text column holding a byte that is not UTF-8 is reported at its position, and
        an SQLite file whose pages cannot be read as "the file is damaged", after the
        last position that could be read: never an exception for either.
        """
        prev, expected_pos, n = GENESIS, 1, 0
        try:
            for r in self._rows_to_verify():
                e = StoredEvent._make(r)
                if e.position != expected_pos:
                    return VerifyReport(False, n, prev, e.position,
                                        f"position {e.position}: expected position "
                                        f"{expected_pos} (a row is missing)")
                if e.prev_hash != prev:
                    return VerifyReport(False, n, prev, e.position,
                                        f"position {e.position}: prev_hash {e.prev_hash[:12]}... "
                                        f"does not link to the hash of position "
                                        f"{e.position - 1} ({prev[:12]}...)")
                h = chain_hash(prev, e.position, e.stream, e.version, e.type, e.schema_version,
                               e.realm, e.business_date, e.sim_time, e.actor, e.role, e.command,
                               e.causation_id, e.correlation_id, e.payload)
                if h != e.hash:
                    return VerifyReport(False, n, prev, e.position,
                                        f"position {e.position}: stored hash {e.hash[:12]}... "
                                        f"does not match its content (recomputed {h[:12]}...); "
                                        "the row was changed after it was written")
                prev, expected_pos, n = e.hash, expected_pos + 1, n + 1
        except _NotUtf8 as bad:
            u = bad.error
            return VerifyReport(False, n, prev, expected_pos,
                                f"position {bad.position}: column {bad.column} holds a byte "
                                f"that is not UTF-8 (0x{u.object[u.start]:02x} at byte "
                                f"{u.start} of the value); the row was changed after it was "
                                "written")
        except (sa.exc.DatabaseError, sqlite3.DatabaseError) as err:
            damage = sqlite_damage(err)
            if damage is None:
                raise StoreError(f"{self.label}: the log cannot be read after position {n}: "
                                 f"{str(getattr(err, 'orig', err)).strip()}") from err
            return VerifyReport(False, n, prev, expected_pos,
                                f"the file is damaged: {damage} (the log reads up to position "
                                f"{n}; position {expected_pos} on cannot be read)")
        return VerifyReport(True, n, prev)

    def check_file(self) -> str | None:
        """SQLite: ``PRAGMA quick_check`` over every page of the file (the log, the read
        tables, their indexes); what it found, or ``None`` when the file is sound.
        PostgreSQL keeps its own pages: always ``None``."""
        if self.dialect != "sqlite":
            return None
        try:
            with self.engine.connect() as conn:
                found = [str(r[0]) for r in conn.exec_driver_sql("PRAGMA quick_check")]
        except (sa.exc.DatabaseError, sqlite3.DatabaseError) as err:
            damage = sqlite_damage(err)
            if damage is None:
                raise StoreError(f"{self.label}: cannot check the file: "
                                 f"{str(getattr(err, 'orig', err)).strip()}") from err
            return f"the file is damaged: {damage}"
        if found == ["ok"]:
            return None
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        return f"the file is damaged: {'; '.join(found[:3])}{more}"

    def require_valid(self) -> VerifyReport:
        """``verify()``, raising ``IntegrityError`` when the log does not check out."""
        report = self.verify()
        if not report.ok:
            raise IntegrityError(f"{self.label}: {report.message}", report.first_bad_position)
        return report


_UNDECODABLE = "Could not decode to UTF-8"
"""How sqlite3 says a text column holds a byte that is not UTF-8."""

_TEXT_COLUMNS = tuple(i for i, c in enumerate(s.events.columns)
                      if isinstance(c.type, sa.Text))


def _decoded(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """An SQLite row read with bytes for text, its text columns decoded (``_NotUtf8``)."""
    out = list(row)
    for i in _TEXT_COLUMNS:
        v = out[i]
        if type(v) is bytes:
            try:
                out[i] = v.decode()
            except UnicodeDecodeError as u:
                raise _NotUtf8(row[0], EVENT_COLUMNS[i], u) from None
    return tuple(out)

