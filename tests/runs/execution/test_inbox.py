"""Each turn's inbox: the documents delivered since the last turn in ``inbox/``, every
earlier one in ``inbox/archive/``, read-only, the bytes the log's ``DocumentDelivered``
holds, an earlier turn's file linked rather than written again."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from erp.store import EventStore
from runs.attempt import run_attempt
from runs.bench.benchmarks import scale_population
from scenarios.loader import find_scenario, load_scenario
from sim.world_events import DocumentDelivered, decode_world_event


def test_each_turn_holds_the_new_documents_and_archives_every_earlier_one(
        tmp_path: Path) -> None:
    loaded = scale_population(load_scenario(find_scenario("month-end-close")), 4, 3)
    out = tmp_path / "attempt"
    run_attempt(loaded, 3, "null", out)
    store = EventStore.open(out / "books.db")
    delivered = [decode_world_event(e.type, e.payload) for e in store.read(realm="world",
                                                            types=["document_delivered"])]
    docs = {d.filename: d for d in delivered if isinstance(d, DocumentDelivered)}
    turns = sorted((out / "turns").iterdir())
    assert len(turns) >= 3 and docs
    seen: dict[str, Path] = {}
    for turn in turns:
        box = turn / "workspace" / "inbox"
        new = {p.name: p for p in box.iterdir() if p.is_file()}
        archived = {p.name: p for p in (box / "archive").iterdir()}
        assert set(archived) == set(seen), turn.name  # every earlier document, no other
        assert not set(new) & set(seen)
        for name, path in {**new, **archived}.items():
            assert path.read_bytes() == docs[name].data()
            assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
        for name, path in archived.items():  # linked to the copy the turn before had
            assert os.path.samefile(path, seen[name]), (turn.name, name)
        seen = {**{n: p for n, p in archived.items()}, **new}
    assert set(seen) <= set(docs)
