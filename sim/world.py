"""The world realm of one attempt: records what happens outside the books.

``World`` buffers world events (one transaction per flush keeps the engine fast),
tells in-process subscribers about each event as it happens (the bank reacts to a
customer's payment, the company's bank feed to the bank's lines), keeps the
documents delivered to the company's inbox, and runs the company's own automated
commands (``system:*`` actors) through the ledger, flushing the world first so the
log keeps the order in which things happened.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import date
from typing import Any, TypeVar, cast

import simpy

from erp.commands import Command
from erp.errors import CommandRejected
from erp.events import Role
from erp.ledger import Ledger, Recorded, Submission
from erp.store import EventStore, StoredEvent
from sim.calendar import BusinessCalendar
from sim.world_events import DocumentDelivered, WorldEvent

Listener = Callable[[WorldEvent, str], None]
E = TypeVar("E", bound=WorldEvent)
T = TypeVar("T")


class LogCursor:
    """Where a reading of the log stopped, for events of some types and optionally one
    realm (the payments the bank debits, the returns the tax authority takes in, the
    world's truth month-end-close's oracle follows).

    Each read goes from the last read's end to the log's head at the time of the read,
    whether or not it found an event: a reader that kept the position of the last event
    it found read every later event again at every date until the next one of its types
    came (a year without a reported bank error re-read the year's log every day)."""

    def __init__(self, types: list[str], *, realm: str | None = None) -> None:
        self.types = types
        self.realm = realm
        self.position = 0
        """The log position the last read went up to."""

    def read(self, store: EventStore) -> list[StoredEvent]:
        """The events of the cursor's types (and realm) after its position, up to the
        log's head."""
        head, _ = store.head()
        found = list(store.read(after=self.position, until=head, realm=self.realm,
                                types=self.types))
        self.position = head
        return found


class World:
    """World events, their listeners, the company inbox and the company's own commands."""

    def __init__(self, ledger: Ledger, calendar: BusinessCalendar,
                 env: simpy.Environment) -> None:
        self.ledger = ledger
        self.calendar = calendar
        self.env = env
        self._buffer: list[Recorded] = []
        self._listeners: dict[type[WorldEvent], list[Listener]] = defaultdict(list)
        self.inbox: list[tuple[float, DocumentDelivered]] = []
        self._counters: dict[str, int] = defaultdict(int)
        self.rejections: list[tuple[str, str, CommandRejected]] = []
        self._kept: dict[str, Any] = {}

    def kept(self, key: str, make: Callable[[], T]) -> T:
        """State another layer keeps for this world under ``key``, made by ``make`` on first
        use: it lives and dies with the world. (A module-level table keyed by the world, even
        a weak one, keeps the world alive for good when the state refers back to it, as a
        table of the world's customers does.)"""
        if key not in self._kept:
            self._kept[key] = make()
        return cast(T, self._kept[key])

    @property
    def today(self) -> date:
        """The business date at the engine's current time."""
        return self.calendar.date_at(self.env.now)

    def reserve(self, prefix: str, n: int) -> None:
        """Mark ``n`` ids of a prefix as taken (documents that exist before the start)."""
        self._counters[prefix] = max(self._counters[prefix], n)

    def next_id(self, prefix: str, width: int = 6) -> str:
        """A deterministic id ``PREFIX-000001`` from a per-prefix counter."""
        self._counters[prefix] += 1
        return f"{prefix}-{self._counters[prefix]:0{width}d}"

    # --- world events ---------------------------------------------------------------

    def subscribe(self, event_type: type[E], listener: Callable[[E, str], None]) -> None:
        """Call ``listener(event, actor)`` for every event of this type, as it happens."""
        # Stored as a Listener: emit() calls it only with events of ``event_type``.
        self._listeners[event_type].append(cast(Listener, listener))

    def emit(self, event: WorldEvent, actor: str) -> None:
        """Record a world event (buffered) and tell its listeners."""
        self._buffer.append(Recorded(event.stream, event.type,
                                     event.model_dump_json(), actor, self.today,
                                     round(self.env.now, 6)))
        if isinstance(event, DocumentDelivered):
            self.inbox.append((self.env.now, event))
        for listener in self._listeners.get(type(event), ()):
            listener(event, actor)

    def flush(self) -> list[StoredEvent]:
        """Write buffered world events to the log in one transaction."""
        if not self._buffer:
            return []
        items, self._buffer = self._buffer, []
        return self.ledger.record_many("world", items)

    # --- the company's own commands ---------------------------------------------------

    def execute(self, command: Command, *, actor: str,
                role: Role = "system") -> list[StoredEvent] | CommandRejected:
        """Run one company command now; a rejection is returned (and kept), not raised."""
        return self.execute_batch([command], actor=actor, role=role)

    def execute_batch(self, commands: list[Command], *, actor: str,
                      role: Role = "system") -> list[StoredEvent] | CommandRejected:
        """Run company commands now, in one transaction, after the pending world events."""
        if not commands:
            return []
        self.flush()
        subs = [Submission(cmd, actor, role, self.today, None,
                           round(self.env.now, 6)) for cmd in commands]
        try:
            return self.ledger.execute_batch(subs)
        except CommandRejected as e:
            self.rejections.append((actor, type(commands[0]).__name__, e))
            return e

    def read_new(self, cursor: LogCursor) -> list[StoredEvent]:
        """The events of ``cursor``'s types written since its last read (pending world
        events flushed first), each once; see :class:`LogCursor`."""
        self.flush()
        return cursor.read(self.ledger.store)

    def documents_between(self, start: float, end: float) -> list[DocumentDelivered]:
        """Documents delivered at ``start <= time < end``."""
        return [d for t, d in self.inbox if start <= t < end]

    def snapshot(self) -> dict[str, Any]:
        """Counters worth reporting."""
        return {"documents": len(self.inbox), "rejected_company_commands": len(self.rejections)}
