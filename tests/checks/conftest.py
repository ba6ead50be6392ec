"""Fixtures of the file-check tests: an empty store and a context with ``ws/`` and ``ref/``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from checks.context import CheckContext
from erp.store import EventStore


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EventStore]:
    """An empty SQLite store, shared: file checks never read it (one backend is enough)."""
    s = EventStore.open(tmp_path_factory.mktemp("store") / "b.db", create=True)
    yield s
    s.close()


@pytest.fixture
def ctx(tmp_path: Path, sqlite_store: EventStore) -> CheckContext:
    """A context with an empty workspace ``ws/`` and reference folder ``ref/``."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ref").mkdir()
    return CheckContext(sqlite_store, workspace=tmp_path / "ws", reference=tmp_path / "ref")
