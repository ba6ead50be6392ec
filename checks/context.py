"""What a check sees: the final books and log, the scenario's facts, the files.

Everything comes from stored material (the attempt's store and folders), so a verdict
can be computed again later without running anything (``erpsim check``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

import orjson

from erp.store import EventStore, StoredEvent

T = TypeVar("T")
F = TypeVar("F", bound="ForwardFold")


class ForwardFold:
    """A fold of the log kept from one evaluation to the next, advanced from where it stopped.

    A subclass names the event ``types`` (and ``realm``) it reads and implements
    :meth:`apply`; an event that does not count yet as of the fold's date (its date is
    after ``as_of``) is left out and noted with :meth:`defer`. :meth:`advance` reads only
    the events after the last position folded. The fold can go on to a later date and
    position as long as no event it left out has come due by then
    (:meth:`resumable`): folding such an event now would put it after events that came
    later in the log, so :class:`Folds` starts a fresh fold instead (a from-scratch fold
    and an advanced one are then the same thing).
    """

    types: list[str]
    realm: str | None = None

    def __init__(self, *, as_of: date | None = None) -> None:
        self.as_of = as_of
        self.position = 0
        """The last log position folded."""
        self.events_read = 0
        """How many events :meth:`advance` read from the log, over every call (each at most
        once: a fold goes on from where it stopped)."""
        self._next_due: date | None = None
        self.reads: LogReads | None = None
        """Shared reads from the start of the log (set by :class:`Folds`), or None."""

    def apply(self, e: StoredEvent) -> None:  # pragma: no cover - every fold overrides it
        """Fold one event of the log."""
        raise NotImplementedError

    def defer(self, day: date) -> None:
        """Note an event left out because it counts only from ``day`` (after ``as_of``)."""
        if self._next_due is None or day < self._next_due:
            self._next_due = day

    def resumable(self, as_of: date | None, position: int) -> bool:
        """Whether advancing to ``as_of`` and ``position`` gives what a fresh fold gives
        (a dated fold goes on without a date limit when it left nothing out by date)."""
        if position < self.position:
            return False
        if self.as_of is None:
            return as_of is None
        if as_of is not None and as_of < self.as_of:
            return False
        return self._next_due is None or (as_of is not None and as_of < self._next_due)

    def advance(self, store: EventStore, as_of: date | None, position: int) -> None:
        """Fold the events after the last position folded, up to ``position``, as of
        ``as_of`` (the caller checked :meth:`resumable`)."""
        self.as_of = as_of
        n = 0
        read = (self.reads.events if self.reads is not None else _read)
        for e in read(store, self.position, position, self.realm, self.types):
            self.apply(e)
            n += 1
        self.events_read += n
        self.position = position


def _read(store: EventStore, after: int, until: int, realm: str | None,
          types: Sequence[str]) -> Iterable[StoredEvent]:
    return store.read(after=after, until=until, realm=realm, types=types)


class LogReads:
    """Reads from the start of the log, kept for the folds started afresh at the same end.

    The final evaluation folds the log afresh once per earlier date its checks look back
    to (month-end-close: its statement date and each weekly turn's), each fold reading
    the same events and table rows from the start to the head; kept here, the log is read
    once. A read is kept while the reads end at the same position (a new end forgets them)
    and only up to ``limit`` rows (a longer one streams, as without this)."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._until: tuple[EventStore, int] | None = None
        self._kept: dict[Hashable, list[Any]] = {}
        self.served = 0
        """How many reads were answered from a kept one."""
        self._window: tuple[EventStore, int, int, list[StoredEvent]] | None = None
        self.window_limit = 20_000
        """The longest stretch of the log (in positions) the window holds."""
        self.window_served = 0
        """How many reads on from a position were answered from the kept window."""

    def rows(self, store: EventStore, until: int, key: Hashable,
             make: Callable[[], Iterable[T]]) -> Iterable[T]:
        """``make()``'s rows (a read from the start of ``store``'s log to ``until``), kept
        under ``key`` for the next fresh fold to the same end."""
        end = (store, until)
        if self._until is None or self._until[0] is not store or self._until[1] != until:
            self._until, self._kept = end, {}
        kept = self._kept.get(key)
        if kept is not None:
            self.served += 1
            return kept
        return self._keep(key, make())

    def _keep(self, key: Hashable, rows: Iterable[T]) -> Iterator[T]:
        buffer: list[Any] | None = []
        for row in rows:
            if buffer is not None:
                buffer.append(row)
                if len(buffer) > self.limit:
                    buffer = None
            yield row
        if buffer is not None:
            self._kept[key] = buffer

    def events(self, store: EventStore, after: int, until: int, realm: str | None,
               types: Sequence[str]) -> Iterable[StoredEvent]:
        """``store.read`` of the events after ``after`` up to ``until`` of ``realm`` and
        ``types``, kept when read from the start (``after`` 0); on from a position, from a
        window of the log kept for the next fold that reads within it (:meth:`window`)."""
        if after != 0:
            return self.window(store, after, until, realm, types)
        return self.rows(store, until, ("events", realm, tuple(types)),
                         lambda: _read(store, 0, until, realm, types))

    def window(self, store: EventStore, after: int, until: int, realm: str | None,
               types: Sequence[str]) -> Iterable[StoredEvent]:
        """The events after ``after`` up to ``until`` of ``realm`` and ``types``, from a
        window of the log kept for the folds that read within it: every event of the
        stretch, whatever its realm and type, read once. A stretch next to or over the
        window's is read only where it goes beyond, and joined to it; a reader going on
        forward lets go of what lies before its start (up to ``window_limit`` positions;
        a longer stretch streams, as without this). The folds a date advances go
        on from the same position, or (look backs that had less time) from a little
        earlier, to the same end: each read the log for itself (a query and its
        connection, ~0.3 ms each on SQLite), where one read now serves them all."""
        if not types:
            return ()
        kept = self._window
        if kept is not None and (kept[0] is not store or after > kept[2] or until < kept[1]
                                 or max(until, kept[2]) - min(after, kept[1])
                                 > self.window_limit):
            kept = None  # another stretch: read it afresh
        if kept is None:
            if until - after > self.window_limit:
                return _read(store, after, until, realm, types)
            kept = (store, after, until, list(store.read(after=after, until=until)))
        elif after < kept[1]:  # a reader further back: joined
            kept = (store, after, max(until, kept[2]),
                    list(store.read(after=after, until=kept[1])) + kept[3]
                    + (list(store.read(after=kept[2], until=until)) if until > kept[2] else []))
        elif until > kept[2]:  # on forward: joined, what lies before this reader let go
            held = kept[3][bisect.bisect_right(kept[3], after, key=_position):]
            kept = (store, after, until, held + list(store.read(after=kept[2], until=until)))
        else:
            self.window_served += 1
        self._window = kept
        events = kept[3]
        start = bisect.bisect_right(events, after, key=_position)
        end = bisect.bisect_right(events, until, key=_position)
        wanted = frozenset(types)
        return [e for e in events[start:end]
                if e.type in wanted and (realm is None or e.realm == realm)]


def _position(e: StoredEvent) -> int:
    return e.position


_KEYS_OF: dict[tuple[type, tuple[tuple[str, str], ...]], tuple[tuple[str, str], ...]] = {}


def change_keys(cls: type, keys: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The ``(attribute, change kind)`` pairs of ``keys`` an event class has (worked out
    once per class; all of them for a class without pydantic fields): the ids a fold's
    ``changes`` record for its events."""
    found = _KEYS_OF.get((cls, keys))
    if found is None:
        fields = getattr(cls, "model_fields", None)
        found = _KEYS_OF[(cls, keys)] = tuple(
            (name, kind) for name, kind in keys
            if fields is None or name in fields)
    return found


class Folds:
    """The folds of one attempt's per-date evaluations, each advanced from the last date.

    Per-date control evaluates its checks at every business date's end, always later in
    the log and never at an earlier date; keeping the folds between dates makes a date
    cost what the log gained since the one before. ``fresh`` counts the folds started
    from the beginning of the log (the first, and any an event coming due forced). The
    final evaluation goes on from the last date's folds (:meth:`carry`); a fold asked for
    an earlier date than the one kept is made apart and not kept.

    ``follow``: a fold started afresh is always the one kept, an earlier date's too: for
    look backs asked in any order (a last month's check, then every month's from the
    first), each goes on from the one before when it can.
    """

    def __init__(self, *, follow: bool = False) -> None:
        self.follow = follow
        self._folds: dict[Hashable, Any] = {}
        self._kept: dict[Hashable, Any] = {}
        self.fresh = 0
        self.reads = LogReads()
        """Reads from the start of the log shared by the folds started afresh."""
        self._makers: dict[Hashable, Callable[[date | None], Any]] = {}
        self._plan: dict[tuple[date, str], int | None] = {}
        """The prepared look backs: (date, fold name) -> the position each is folded to
        (None: as far as the log goes)."""
        self._prepared: dict[tuple[Hashable, date], Any] = {}
        self.prepared_used = 0
        """How many look backs were answered by a prepared fold (:meth:`prepare`)."""

    def get(self, key: Hashable, make: Callable[[date | None], F], store: EventStore,
            as_of: date | None, position: int) -> F:
        """The fold ``key`` (made by ``make(as_of)``) advanced to ``as_of`` and ``position``."""
        if as_of is not None:
            self._makers[key] = make
        fold: F | None = self._folds.get(key)
        if fold is None or not fold.resumable(as_of, position):
            ready: F | None = (self._prepared.get((key, as_of)) if as_of is not None
                               else None)
            if ready is not None and ready.resumable(as_of, position):
                ready.advance(store, as_of, position)  # a look back prepared beside the run
                self.prepared_used += 1
                return ready
            kept = fold
            fold = make(as_of)
            fold.reads = self.reads
            self.fresh += 1
            # A look back to an earlier date (the final evaluation's statement date) is
            # folded apart: the kept fold stays for the dates that go on from it.
            if (self.follow or kept is None or as_of is None or kept.as_of is None
                    or as_of >= kept.as_of):
                self._folds[key] = fold
        fold.advance(store, as_of, position)
        return fold

    def prepare(self, lookbacks: Iterable[tuple[date, str]], *,
                position: int | None = None) -> None:
        """Look backs a later evaluation will ask for, each a date and the name of the fold
        kept for it (the first part of its key: ``checks.world``), as of that date at a
        later position: the log's head (``position`` None: the final evaluation's
        reconciliation as of a statement date) or ``position`` (the end of that date's
        turn, in :attr:`CheckContext.turn_ends`). :meth:`advance_prepared` folds each from
        the first date on, as the log grows, so that the look back folds only what the log
        gained since (nothing, at a position of its own). Worth it where the folding is
        done in time that would be idle (the checks beside the run, between dates); a
        prepared fold is the fold a fresh one would be."""
        for lookback in lookbacks:
            self._plan[lookback] = position

    def advance_prepared(self, store: EventStore, position: int, *,
                         stop: Callable[[], bool] | None = None, step: int = 4000,
                         makers: Folds | None = None) -> bool:
        """Advance the prepared look backs (:meth:`prepare`) to ``position`` (or their own,
        when earlier), each of the dated fold kinds the evaluations asked for (of this
        :class:`Folds` or ``makers``), at most ``step`` log positions at a time; before
        each step, ``stop()`` may say to leave the rest for later (work waiting). True when
        every one reached its end. A look back to a date still to come is folded already:
        its date holds, and what comes after it waits (is deferred), as in a fold made
        later."""
        for key, make in (makers or self)._makers.items():
            name = key[0] if isinstance(key, tuple) else key
            for (day, wanted), end in sorted(self._plan.items()):
                if wanted != name:
                    continue
                goal = position if end is None else min(end, position)
                fold = self._prepared.get((key, day))
                if fold is None or not fold.resumable(day, goal):
                    fold = self._prepared[(key, day)] = make(day)
                    fold.reads = self.reads  # the look backs fold the same stretches
                while fold.position < goal:
                    if stop is not None and stop():
                        return False
                    fold.advance(store, day, min(goal, fold.position + step))
        return True

    def carry(self, key: Hashable, dated: Hashable, position: int) -> None:
        """Before the first undated fold under ``key`` (the final evaluation after per-date
        control), take over the dated fold under ``dated`` if it can go on to ``position``
        without a date limit: the final evaluation then folds only what came after the
        last date's end, not the whole log again."""
        fold = self._folds.get(dated)
        if key not in self._folds and fold is not None and fold.resumable(None, position):
            self._folds[key] = self._folds.pop(dated)

    def peek(self, key: Hashable) -> Any:
        """The fold ``key`` as last advanced (None before the first :meth:`get`)."""
        return self._folds.get(key)

    def keep(self, key: Hashable, make: Callable[[], T]) -> T:
        """A state kept across evaluations under ``key`` (made by ``make()`` the first
        time), such as what a check derived from the folds at the last date."""
        if key not in self._kept:
            self._kept[key] = make()
        value: T = self._kept[key]
        return value


@dataclass
class CheckContext:
    """The inputs of every check.

    - ``store``: the attempt's event store (both realms) and its read tables.
    - ``workspace``: the folder the ``path`` of file checks is relative to (for a
      process scenario, the last turn's workspace, whose ``out/`` holds the outputs).
    - ``reference``: reference files the checks compare with (never shown to the agent).
    - ``start`` / ``end``: the scenario's first and last business dates.
    - ``as_of`` / ``position``: when set, books checks answer as of that date and log
      position (per-date control at a business date's end).
    - ``agent_actors``: the actors of the agent's turns (``agent:turn-N``), in order;
      ``turn_roles`` the role of those the scenario runs as another role than clerk.
    - ``control_accounts``: extra control accounts the scenario declares, with the
      subledger each ties to.
    - ``cache``: shared by the checks of one evaluation (derived views of the log).
    - ``inputs``: workspace-relative paths of the files supplied to the agent (desk
      tasks); ``xlsx_value_present`` refuses a pin that pasting one of them satisfies.
    - ``folds``: folds kept across evaluations (per-date control), advanced from the last
      date rather than folded again from the start; None folds afresh. The views they
      give are live: good for this evaluation, changed by the next.
    - ``turn_dates``: the dates of the agent's turns (the scenario's); what reaches the
      company after the last turn on or before a date is not yet expected in the books.
    - ``turn_workspaces``: each turn's workspace by its date, as that turn left it (the
      files a check with ``at_turn`` reads, see :meth:`for_turn`).
    - ``turn_ends``: folds of the log as of a turn's date at the end of that turn, shared
      by the checks of one evaluation that look back to turns (a reconciliation file
      judged as each month's closing turn left it): advanced from one turn to the next,
      in date order, instead of folded again from the start for each (kept by
      :meth:`for_turn`, whose cache is the turn's own).
    """

    store: EventStore
    workspace: Path | None = None
    reference: Path | None = None
    start: date | None = None
    end: date | None = None
    as_of: date | None = None
    position: int | None = None
    agent_actors: tuple[str, ...] = ()
    turn_roles: dict[str, str] = field(default_factory=dict)
    """The role of each turn's actor when the scenario gives it one other than ``clerk``."""
    control_accounts: dict[str, str] = field(default_factory=dict)
    cache: dict[Hashable, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    folds: Folds | None = None
    turn_dates: tuple[date, ...] = ()
    turn_workspaces: dict[date, Path] = field(default_factory=dict)
    turn_ends: Folds = field(default_factory=lambda: Folds(follow=True))

    def for_turn(self, day: date) -> CheckContext:
        """This context with the workspace the agent's turn of ``day`` left (a check's
        ``at_turn``): a turn that did not run has no files (its folder is absent). A
        day that is no turn of the scenario raises ``ValueError`` (the spec's error)."""
        if day not in self.turn_dates:
            raise ValueError(f"at_turn {day.isoformat()} is not a turn of the scenario "
                             f"(turns: {', '.join(d.isoformat() for d in self.turn_dates)})")
        workspace = self.turn_workspaces.get(day)
        if workspace is None and self.workspace is not None:
            workspace = self.workspace.parent / f"no-turn-{day.isoformat()}"
        # its own cache: a file's derived views are cached by its path in the workspace
        return replace(self, workspace=workspace, cache={})

    def file(self, rel: str) -> Path:
        """The absolute path of a workspace-relative file (the caller checks existence)."""
        if self.workspace is None:
            raise FileNotFoundError(f"{rel}: this evaluation has no workspace")
        return self.workspace / rel

    def ref(self, rel: str) -> Path:
        """The absolute path of a reference file."""
        if self.reference is None:
            raise FileNotFoundError(f"{rel}: this evaluation has no reference folder")
        return self.reference / rel

    def fold_position(self) -> int | None:
        """The log position folds advance to: ``position``, or, with ``folds`` and no
        position (the final evaluation, folding on from per-date control's), the log's
        head; None without ``folds`` (fold afresh)."""
        if self.folds is None or self.position is not None:
            return self.position
        return self.cached(("checks.head",), lambda: self.store.head()[0])

    def cached(self, key: Hashable, make: Callable[[], T]) -> T:
        """``cache[key]``, computed once with ``make()`` (a key names what ``make`` builds,
        so the value is the type it returns)."""
        if key not in self.cache:
            self.cache[key] = make()
        value: T = self.cache[key]
        return value


def planted_truth(ctx: CheckContext, kind: str) -> dict[str, Any]:
    """The truth an injection of ``kind`` recorded when it was planted (its
    ``InjectionPlanted`` detail: what the papers mean), or ``{}`` when none was planted;
    read once per context."""
    def load() -> dict[str, Any]:
        for e in ctx.store.read(realm="world", types=["injection_planted"]):
            data = orjson.loads(e.payload)
            if data.get("kind") == kind:
                detail: dict[str, Any] = data["detail"]
                return detail
        return {}
    return ctx.cached(("planted_truth", kind), load)
