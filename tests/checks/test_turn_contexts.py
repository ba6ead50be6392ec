"""``turn_contexts``: the context as each agent turn left things, as the per-turn checks
(``no_unapplied_receipts``/``documents_listed`` ``each_turn``, ``books_match_world``
``at_turns``, ``due_bills_paid_at_turns``) walk the turns; and ``documents_listed``
``each_turn`` reading the vendors' papers once, not once per turn."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any, cast

import pytest

from checks.context import CheckContext
from checks.state import end_of_day, end_of_turn, turn_contexts
from erp.store import EventStore, NewEvent
from tests.checks.helpers import put, run_one

BEFORE, D1, D2, D3 = date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3), date(2026, 3, 4)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    """Six events: on D1 the system (1), the agent's turn (2), the system after it (3); on
    D2 only the system (4: the agent wrote nothing); on D3 the agent (5), the system (6)."""
    s = EventStore.open(tmp_path / "b.db", create=True)
    for n, (day, actor) in enumerate([(D1, "system:x"), (D1, "agent:turn-1"), (D1, "system:x"),
                                      (D2, "system:x"), (D3, "agent:turn-3"),
                                      (D3, "system:x")], start=1):
        s.append([NewEvent(stream=f"thing:{n}", type="thing_happened", payload=f'{{"n": {n}}}',
                           business_date=day.isoformat(), actor=actor)])
    yield s
    s.close()


@pytest.fixture
def ctx(tmp_path: Path, store: EventStore) -> CheckContext:
    spaces = {d: tmp_path / "turns" / f"{n:02d}" / "workspace"
              for n, d in enumerate((D1, D2, D3), start=1)}
    for p in spaces.values():
        p.mkdir(parents=True)
    return CheckContext(store, workspace=spaces[D3], turn_dates=(D1, D2, D3),
                        turn_workspaces=spaces)


def _walk(ctx: CheckContext, *args: Any, **kw: Any) -> list[tuple[date, int | None]]:
    return [(day, at.position) for day, at in turn_contexts(ctx, *args, **kw)]


def test_each_turn_at_the_end_of_the_agents_turn(ctx: CheckContext) -> None:
    # D2: the agent wrote nothing, so the last event before the day
    assert _walk(ctx) == [(D1, 2), (D2, 3), (D3, 5)]
    assert [end_of_turn(ctx, d) for d in (D1, D2, D3)] == [2, 3, 5]


def test_never_past_the_contexts_position_nor_its_as_of(ctx: CheckContext) -> None:
    ctx.position = 4
    assert _walk(ctx) == [(D1, 2), (D2, 3), (D3, 4)]
    ctx.position, ctx.as_of = None, D2
    assert _walk(ctx) == [(D1, 2), (D2, 3)]


def test_days_given_are_walked_as_given(ctx: CheckContext) -> None:
    ctx.as_of = D1  # the default's cut only: days given are the caller's
    assert _walk(ctx, (D3, D1, D3)) == [(D3, 5), (D1, 2), (D3, 5)]


def test_a_turn_before_any_event_has_no_position_but_the_contexts(ctx: CheckContext) -> None:
    ctx.turn_dates = (BEFORE, *ctx.turn_dates)
    assert _walk(ctx)[0] == (BEFORE, None)
    ctx.position = 4
    assert _walk(ctx)[0] == (BEFORE, 4)


def test_at_the_days_end_what_came_after_the_turn_counts(ctx: CheckContext) -> None:
    assert _walk(ctx, day_end=True) == [(D1, 3), (D2, 4), (D3, 6)]
    ctx.position = 4
    assert _walk(ctx, day_end=True) == [(D1, 3), (D2, 4), (D3, 4)]
    assert end_of_day(ctx, D3) == 4
    ctx.turn_dates = (BEFORE, *ctx.turn_dates)  # nothing recorded by then: skipped
    assert [d for d, _ in turn_contexts(ctx, day_end=True)] == [D1, D2, D3]


def test_each_turns_files_and_a_cache_of_its_own(ctx: CheckContext) -> None:
    ctx.cache["x"] = 1
    for day, at in turn_contexts(ctx):
        assert at.workspace == ctx.turn_workspaces[day]
        assert at.cache == {} and at.store is ctx.store
        assert (at.as_of, at.turn_dates) == (ctx.as_of, ctx.turn_dates)


class _CountingStore:
    """A store that counts its reads of the world realm."""

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self.world_reads = 0

    def read(self, **kw: Any) -> Any:
        if kw.get("realm") == "world":
            self.world_reads += 1
        return self._store.read(**kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_documents_listed_each_turn_reads_the_vendors_papers_once(ctx: CheckContext) -> None:
    counting = _CountingStore(ctx.store)
    ctx.store = cast(EventStore, counting)
    for day in (D1, D3):  # two turns left a file, one (nothing to list) none
        put(ctx.turn_workspaces[day], "out/exceptions.csv", "document,vendor\n")
    r = run_one({"type": "documents_listed", "path": "out/exceptions.csv",
                 "vendor_column": "vendor", "each_turn": True}, ctx)
    assert r.passed, r.detail
    assert r.metrics == {"turns": 3, "turns_failed": 0}
    assert counting.world_reads == 1  # 5 before: the papers at each turn, the documents again
