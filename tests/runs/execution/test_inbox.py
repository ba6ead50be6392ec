"""Each turn's inbox: the documents delivered since the last turn in ``inbox/``, every
earlier one in ``inbox/archive/``, read-only, the bytes the log's ``DocumentDelivered``
holds. The archive is moved on from turn to turn (one rename, not a link per earlier
document and turn), so an earlier turn's folder keeps only what was new to it; what an
agent added to, removed from or replaced in its archive is undone at the next turn."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from erp.store import EventStore
from runs.attempt import run_attempt
from runs.bench.benchmarks import scale_population
from scenarios.loader import find_scenario, load_scenario
from scenarios.turn import TurnContext
from sim.world_events import DocumentDelivered, decode_world_event


def _documents(out: Path) -> dict[str, DocumentDelivered]:
    store = EventStore.open(out / "books.db")
    try:
        delivered = [decode_world_event(e.type, e.payload)
                     for e in store.read(realm="world", types=["document_delivered"])]
    finally:
        store.close()
    return {d.filename: d for d in delivered if isinstance(d, DocumentDelivered)}


class _ArchiveWatcher:
    """Records, at each turn, what its inbox and archive held (name -> bytes); with
    ``tamper``, then removes one archived document, replaces another with a folder, and
    plants a file and a symbolic link of its own in the archive."""

    name = "archive-watcher"

    def __init__(self, tamper: bool = False) -> None:
        self.tamper = tamper
        self.seen: list[tuple[dict[str, bytes], dict[str, bytes]]] = []

    def run_turn(self, turn: TurnContext) -> None:
        box = turn.workspace / "inbox"
        archive = box / "archive"
        self.seen.append(({p.name: p.read_bytes() for p in box.iterdir() if p.is_file()},
                          {p.name: p.read_bytes() for p in archive.iterdir()}))
        if not self.tamper:
            return
        archived = sorted(p for p in archive.iterdir() if p.is_file())
        if len(archived) >= 2:
            archived[0].unlink()
            archived[1].unlink()
            archived[1].mkdir()
            (archived[1] / "inside.txt").write_text("mine")
        (archive / "planted.txt").write_text("not a document")
        (archive / "link.txt").symlink_to("/etc/hostname")


def _run(tmp_path: Path, agent: _ArchiveWatcher) -> Path:
    loaded = scale_population(load_scenario(find_scenario("month-end-close")), 4, 3)
    out = tmp_path / "attempt"
    run_attempt(loaded, 3, agent.name, out, agent=agent)
    return out


def test_each_turn_holds_the_new_documents_and_archives_every_earlier_one(
        tmp_path: Path) -> None:
    agent = _ArchiveWatcher()
    out = _run(tmp_path, agent)
    docs = _documents(out)
    turns = sorted((out / "turns").iterdir())
    assert len(turns) >= 3 and len(agent.seen) == len(turns) and docs
    earlier: dict[str, bytes] = {}
    for turn, (new, archived) in zip(turns, agent.seen, strict=True):
        assert set(archived) == set(earlier), turn.name  # every earlier document, no other
        assert not set(new) & set(earlier)
        for name, data in {**new, **archived}.items():
            assert data == docs[name].data(), (turn.name, name)
        # the turn's folder keeps what was new to it, read-only
        box = turn / "workspace" / "inbox"
        kept = {p.name for p in box.iterdir() if p.is_file()}
        assert kept == set(new), turn.name
        for name in kept:
            assert not (box / name).stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP
                                                      | stat.S_IWOTH)
        earlier = {**earlier, **new}
    # only the last turn's workspace holds the archive, whole; its files are the earlier
    # turns' inbox copies, linked, not written again
    last = turns[-1] / "workspace" / "inbox" / "archive"
    for turn in turns[:-1]:
        assert not (turn / "workspace" / "inbox" / "archive").exists(), turn.name
        for path in (turn / "workspace" / "inbox").iterdir():
            if path.is_file():
                assert os.path.samefile(path, last / path.name), (turn.name, path.name)


def test_what_an_agent_changed_in_its_archive_is_undone_at_the_next_turn(
        tmp_path: Path) -> None:
    agent = _ArchiveWatcher(tamper=True)
    out = _run(tmp_path, agent)
    docs = _documents(out)
    turns = sorted((out / "turns").iterdir())
    tampered = [i for i, (_, archived) in enumerate(agent.seen) if len(archived) >= 2]
    assert tampered and tampered[0] + 1 < len(agent.seen), "no turn after a tampered archive"
    earlier: dict[str, bytes] = {}
    for turn, (new, archived) in zip(turns, agent.seen, strict=True):
        # exactly the earlier documents, their bytes, whatever the turn before left
        assert set(archived) == set(earlier), turn.name
        assert all(data == docs[name].data() for name, data in archived.items()), turn.name
        earlier = {**earlier, **new}


@pytest.mark.parametrize("gone", ["archive", "inbox"])
def test_an_archive_or_inbox_the_agent_removed_is_written_again(tmp_path: Path,
                                                                gone: str) -> None:
    """A previous turn's archive (or its new documents) removed by its agent: the next
    turn's archive is written from the log's documents."""

    class Remover(_ArchiveWatcher):
        def run_turn(self, turn: TurnContext) -> None:
            super().run_turn(turn)
            box = turn.workspace / "inbox"
            target = box / "archive" if gone == "archive" else box
            for path in sorted(target.iterdir()):
                if path.is_file():
                    path.unlink()

    agent = Remover()
    out = _run(tmp_path, agent)
    docs = _documents(out)
    earlier: dict[str, bytes] = {}
    for new, archived in agent.seen:
        assert archived == {n: docs[n].data() for n in earlier}
        earlier = {**earlier, **{n: docs[n].data() for n in new}}


def test_an_archive_that_cannot_be_cleaned_is_made_afresh(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """What the agent planted cannot be removed (a folder the runner may not delete): the
    archive goes back to the turn that had it and the next turn's is made afresh, whole."""
    import shutil

    def refuse(path: object, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(shutil, "rmtree", refuse)
    agent = _ArchiveWatcher(tamper=True)
    out = _run(tmp_path, agent)
    docs = _documents(out)
    earlier: dict[str, bytes] = {}
    for new, archived in agent.seen:
        assert archived == {n: docs[n].data() for n in earlier}
        earlier = {**earlier, **new}
    turns = sorted((out / "turns").iterdir())
    kept = [t for t in turns[:-1] if (t / "workspace" / "inbox" / "archive").is_dir()]
    assert kept, "no archive was given back"
