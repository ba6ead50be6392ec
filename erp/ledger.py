"""The ledger: the single writer of a store.

It owns the log head (position and hash), the stream versions, the books'
working state and the projection caches. A command is decided by its handler
against the in-memory books; its events, their GL lines and the read tables are
written in one transaction. A rejected command writes nothing; a failed write
leaves the store untouched and the ledger reloads its state from the log.

Several ledgers may share one store (the engine between turns, the API during a
turn): each write takes the store's write lock and first catches up with anything
another writer appended.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from erp import events as ev
from erp.books import Books
from erp.commands import Command
from erp.errors import CommandRejected
from erp.handlers import Context, handle
from erp.projections import Projections
from erp.rebuild import rebuild_tables
from erp.store import (
    GENESIS,
    LOCK_WAIT_S,
    EnvelopeBuilder,
    EventStore,
    StoredEvent,
    VerifyReport,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

ROLES = ("clerk", "controller", "system")
"""The roles a submission may carry."""


def is_role(value: str) -> TypeGuard[ev.Role]:
    """Whether ``value`` is one of ``ROLES``."""
    return value in ROLES


@dataclass(frozen=True, slots=True)
class Submission:
    """A command with who submits it, in which role, on which business date."""

    command: Command
    actor: str
    role: ev.Role
    business_date: date
    correlation_id: str | None = None
    sim_time: float | None = None


@dataclass(frozen=True, slots=True)
class Recorded:
    """An event of another realm to append: its stream, type, JSON payload and envelope."""

    stream: str
    type: str
    payload: str
    actor: str
    business_date: date
    sim_time: float | None = None
    role: ev.Role = "system"
    command: str = ""
    correlation_id: str | None = None


@dataclass(frozen=True, slots=True)
class RebuildStats:
    """What ``rebuild`` did."""

    events: int
    seconds: float
    workers: int = 1
    """How many processes folded the log."""


class Ledger:
    """The company's books over an event store."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._conn = store.engine.connect()
        self._sql = store.sql
        self.books = Books()
        self.projections = Projections()
        self.position, self.head_hash = 0, GENESIS
        self._forgotten = False
        self._catch_up()

    @classmethod
    def open(cls, target: str | Path, *, schema: str | None = None,
             create: bool = False, lock_wait_s: float = LOCK_WAIT_S) -> Ledger:
        """Open (or with ``create`` make) the books in an SQLite file or PostgreSQL URL
        (``lock_wait_s``: how long a write waits for another writer, see ``EventStore``)."""
        return cls(EventStore.open(target, schema=schema, create=create,
                                   lock_wait_s=lock_wait_s))

    def forget_state(self) -> None:
        """Let go of the books' working state (its documents, balances and projections)
        when nothing more is to be written, only the store read (an attempt's end, while
        its books are verified): it is collected then, not when the ledger goes. A
        command after it is refused (``RuntimeError``)."""
        self.books = Books()
        self.projections = Projections()
        self._forgotten = True

    def _writes(self) -> None:
        """Refuse a write once the books were let go (:meth:`forget_state`)."""
        if self._forgotten:
            raise RuntimeError(f"{self.store.label}: the ledger let go of its books "
                               "(forget_state); it writes nothing more")

    def close(self) -> None:
        """Release the connection and the store."""
        self._conn.close()
        self.store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- state ------------------------------------------------------------------

    def _catch_up(self) -> None:
        """Fold events other writers appended after our head into the in-memory state."""
        books, projections = self.books, self.projections
        for e in self.store.read(after=self.position):
            if e.realm == "erp":
                event = e.event
                books.apply(event)
                projections.apply(e.position, e.business_date, event)
            books.versions[e.stream] = e.version
            self.position, self.head_hash = e.position, e.hash
        projections.discard()  # the tables already hold these rows

    def refresh(self) -> int:
        """Catch up with events other writers appended; how many were new."""
        before = self.position
        self._catch_up()
        return self.position - before

    def _reload(self) -> None:
        self.books = Books()
        self.projections = Projections()
        self.position, self.head_hash = 0, GENESIS
        self._catch_up()
        if self._conn.in_transaction():
            self._conn.rollback()

    # --- writing ----------------------------------------------------------------

    def execute(self, command: Command, *, actor: str, role: ev.Role, business_date: date,
                correlation_id: str | None = None,
                sim_time: float | None = None) -> list[StoredEvent]:
        """Run one command in its own transaction; its stored events, or ``CommandRejected``."""
        return self.execute_batch([Submission(command, actor, role, business_date,
                                              correlation_id, sim_time)])

    def execute_batch(self, submissions: Iterable[Submission]) -> list[StoredEvent]:
        """Run commands in one transaction: all are written, or none (first rejection raises)."""
        self._writes()
        conn = self._conn
        staged = False  # handlers are pure: until something is staged, nothing changed
        gc_was = gc.isenabled()
        gc.disable()  # a batch allocates many long-lived objects; collect after it, not during
        try:
            with self.store.write_transaction(conn):
                self._sync(conn)
                chain = EnvelopeBuilder(self.position, self.head_hash, self.books.versions)
                for sub in submissions:
                    if sub.role not in ROLES:
                        raise ValueError(f"role {sub.role!r} of {sub.actor}: expected one of "
                                         f"{', '.join(ROLES)}")
                    ctx = Context(sub.actor, sub.role, sub.business_date)
                    events = handle(sub.command, self.books, ctx)
                    staged = True
                    self._stage(events, sub, chain)
                self.store.insert_rows(conn, chain.rows)
                self.projections.flush(conn, self._sql)
            # Made while the collector is still off: a batch's worth of new objects would
            # set off a full collection over the ledger's whole state.
            return chain.stored()
        except BaseException:
            if staged:
                self._reload()
            raise
        finally:
            if gc_was:
                gc.enable()

    def _sync(self, conn: Connection) -> None:
        position, digest = self.store.head(conn)
        if position != self.position or digest != self.head_hash:
            if position < self.position:
                self._reload()
            else:
                self._catch_up()

    def _stage(self, events: Sequence[ev.Event], sub: Submission,
               chain: EnvelopeBuilder) -> None:
        books, projections, add = self.books, self.projections, chain.add
        command = type(sub.command).__name__
        cause = f"cmd-{chain.position + 1}"
        correlation = sub.correlation_id or cause
        day = sub.business_date.isoformat()
        sim_time, actor, role = sub.sim_time, sub.actor, sub.role
        for e in events:
            position = add(e.stream, e.type, e.schema_version, "erp", day, sim_time, actor, role,
                           command, cause, correlation, ev.encode_event(e).decode())
            books.apply(e)
            projections.apply(position, day, e)
        self.position, self.head_hash = chain.position, chain.prev_hash

    def record(self, realm: str, items: Sequence[tuple[str, str, str]], *, actor: str,
               business_date: date, role: ev.Role = "system", command: str = "",
               correlation_id: str | None = None,
               sim_time: float | None = None) -> list[StoredEvent]:
        """Append events of another realm (``world``): ``(stream, type, payload_json)`` each.

        They share the log and its hash chain but post nothing to the books. Their
        streams carry the realm as a prefix (``world:customer:C1``).
        """
        return self.record_many(realm, [
            Recorded(stream, type_, payload, actor, business_date, sim_time, role, command,
                     correlation_id) for stream, type_, payload in items])

    def record_many(self, realm: str, items: Sequence[Recorded]) -> list[StoredEvent]:
        """Append events of another realm, each with its own actor, date and time, in one
        transaction (see ``record``)."""
        if realm == "erp":
            raise ValueError("erp-realm events are written only by commands (execute)")
        for item in items:
            if not item.stream.startswith(f"{realm}:"):
                raise ValueError(f"stream {item.stream!r}: a {realm}-realm stream must start "
                                 f"with '{realm}:' so that it never shares versions with the "
                                 "books")
        if not items:
            return []
        self._writes()
        conn = self._conn
        try:
            with self.store.write_transaction(conn):
                self._sync(conn)
                chain = EnvelopeBuilder(self.position, self.head_hash, self.books.versions)
                for it in items:
                    chain.add(it.stream, it.type, 1, realm, it.business_date.isoformat(),
                              it.sim_time, it.actor, it.role, it.command, None,
                              it.correlation_id, it.payload)
                self.store.insert_rows(conn, chain.rows)
                self.position, self.head_hash = chain.position, chain.prev_hash
        except BaseException:
            self._reload()
            raise
        return chain.stored()

    def try_execute(self, command: Command, **kwargs: Any) -> list[StoredEvent] | CommandRejected:
        """``execute``, returning a rejection as a value instead of raising it."""
        try:
            return self.execute(command, **kwargs)
        except CommandRejected as e:
            return e

    # --- rebuilding and verifying -------------------------------------------------

    def rebuild(self, *, workers: int | None = None) -> RebuildStats:
        """Recreate every read table from the log, in one transaction.

        ``workers``: 1 folds in this process; 2 (an SQLite file only; elsewhere one)
        folds the GL lines and subledger movements in a forked second process meanwhile
        (``erp.rebuild``); ``None`` chooses two for a log of at least
        ``PARALLEL_MIN_EVENTS`` events when two CPUs are free to use and this process runs
        no other thread. The tables come out the same either way.
        """
        import time

        started = time.perf_counter()
        try:
            done = rebuild_tables(self.store, self._conn, workers=workers)
        except BaseException:
            self._reload()
            raise
        # The books' working state does not depend on the read tables: keep it.
        self.projections = done.projections
        return RebuildStats(done.events, time.perf_counter() - started, done.workers)

    def verify(self) -> VerifyReport:
        """Recompute the log's hash chain (see ``EventStore.verify``)."""
        return self.store.verify()
