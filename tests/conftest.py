"""Shared fixtures: stores on SQLite and on a real PostgreSQL server.

PostgreSQL comes from ``ERPSIM_TEST_PG_URL`` (default: the local server,
``postgresql://postgres@127.0.0.1:5432/test``). With ``CI=true`` a test that needs
it fails loudly when the server is unreachable; elsewhere it is skipped with a
message saying how to enable it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from erp.ledger import Ledger
from erp.store import EventStore

# In CI the property tests are derandomized: a red run is reproducible from its log.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")

PG_URL = os.environ.get("ERPSIM_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

_pg_status: dict[str, str | None] = {}


def _pg_error() -> str | None:
    if "error" not in _pg_status:
        import psycopg

        try:
            with psycopg.connect(PG_URL.replace("postgresql+psycopg", "postgresql"),
                                 connect_timeout=5):
                _pg_status["error"] = None
        except Exception as e:
            _pg_status["error"] = f"{type(e).__name__}: {e}".strip()
    return _pg_status["error"]


def require_postgres() -> None:
    """Fail (in CI) or skip (elsewhere) when the PostgreSQL server does not answer."""
    err = _pg_error()
    if err is None:
        return
    msg = f"PostgreSQL unreachable at {PG_URL}: {err}"
    if IN_CI:
        pytest.fail(msg + " (CI=true: the PostgreSQL tests must run)", pytrace=False)
    pytest.skip(msg + "; start the server or set ERPSIM_TEST_PG_URL to enable these tests")



def require_soffice() -> None:
    """Fail (in CI) or skip (elsewhere) when LibreOffice's ``soffice`` is not installed."""
    if shutil.which("soffice"):
        return
    msg = "LibreOffice (soffice) is not installed"
    if IN_CI:
        pytest.fail(msg + " (CI=true: .ci/setup installs libreoffice-calc; the workbook tests "
                    "must run)", pytrace=False)
    pytest.skip(msg + "; apt-get install -y --no-install-recommends libreoffice-calc to run "
                "the workbook tests")


SHARED_FIXTURE = re.compile(r"""scope=["'](module|package|session)["']|attempt_fixtures\(""")
"""A test module's fixture shared by several of its tests: each pytest worker that runs one
of those tests runs it (a module's attempts) once more."""
FOLDER_FIXTURE = re.compile(r"""scope=["'](package|session)["']""")
"""A conftest's fixture shared by the tests of its folder (a module-scoped one is not: each
module has its own)."""
GROUP_MARK = re.compile(r"""^pytestmark = pytest\.mark\.xdist_group\(["']([^"']+)["']\)""",
                        re.MULTILINE)


@functools.cache
def _shares(path: Path, pattern: re.Pattern[str]) -> bool:
    return path.is_file() and pattern.search(path.read_text(encoding="utf-8")) is not None


@functools.cache
def xdist_unit(rootdir: Path, module: str) -> str | None:
    """The unit of work that keeps the tests of the module ``module`` (a path from
    ``rootdir``) on one pytest worker, or None (each of its tests may go to either).

    The module's own ``pytestmark = pytest.mark.xdist_group("NAME")`` names it (modules that
    share an attempt, ``tests.scenarios.library.attempts.shared_attempt``, name one group);
    else a conftest below ``tests/`` whose fixtures are session- or package-wide groups its
    folder; else a module that defines a module-scoped fixture (its attempts) is its own
    unit. Read from the files' text: the controller that schedules collects nothing.
    """
    path = rootdir / module
    if not path.is_file():
        return None
    named = GROUP_MARK.search(path.read_text(encoding="utf-8"))
    if named:
        return named.group(1)
    folder = path.parent
    tests = rootdir / "tests"
    while folder != tests and tests in folder.parents:  # the root conftest's are cheap
        if _shares(folder / "conftest.py", FOLDER_FIXTURE):
            return folder.relative_to(rootdir).as_posix()
        folder = folder.parent
    return module if _shares(path, SHARED_FIXTURE) else None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` (``make test``): the tests of a module that shares attempts between
    its tests (``xdist_unit``) run on one worker, each other test on whichever is free.

    ``--dist load`` spread a module's tests over both workers, and each ran the module's
    attempts again; xdist's own ``loadgroup`` reads ``xdist_group`` marks from node ids
    that pytest 9 no longer lets it change. Units go out largest first (xdist's
    ``loadscope`` order), the single tests after them in collection order.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    rootdir = Path(str(config.rootpath))

    class ModuleUnits(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            unit = xdist_unit(rootdir, module)
            return nodeid if unit is None else unit

    return ModuleUnits(config, log)


@pytest.fixture(scope="session")
def soffice() -> None:
    """LibreOffice is installed (``require_soffice``); session-wide, so it is asked before a
    module's fixtures recalculate anything."""
    require_soffice()

def pg_schema(nodeid: str) -> str:
    """A schema name unique to one test in this process (parallel runs never collide)."""
    return f"t_{hashlib.sha256(nodeid.encode()).hexdigest()[:16]}_{os.getpid()}"


DROP_LOCK_TIMEOUT = "30s"
"""How long dropping a test's schema waits for the locks of other sessions."""


def drop_pg_schema(schema: str) -> None:
    """Remove a test's schema and everything in it.

    DROP SCHEMA waits for every lock on the schema's tables. A connection a test left open
    in a transaction (in this process or another worker) would make that wait endless:
    the worker blocks, the run stalls. So the drop waits at most ``DROP_LOCK_TIMEOUT``; then
    the sessions holding locks in the schema are ended, named in a warning (a leak to fix),
    and the drop is retried.
    """
    import psycopg
    from psycopg import errors, sql

    statement = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
    with psycopg.connect(PG_URL.replace("postgresql+psycopg", "postgresql"),
                         autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(DROP_LOCK_TIMEOUT)))
        for _ in range(3):
            try:
                conn.execute(statement)
                return
            except errors.LockNotAvailable:
                holders = conn.execute(
                    "SELECT DISTINCT a.pid, a.state, left(a.query, 120) FROM pg_locks l "
                    "JOIN pg_class c ON c.oid = l.relation "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE n.nspname = %s AND l.pid <> pg_backend_pid()", (schema,)).fetchall()
                warnings.warn(f"schema {schema}: sessions left open by a test held locks "
                              f"for {DROP_LOCK_TIMEOUT}; ending them: {holders}", stacklevel=2)
                for pid, _state, _query in holders:
                    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        conn.execute(statement)


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The store backend under test: ``sqlite`` or ``postgres``."""
    if request.param == "postgres":
        require_postgres()
    return request.param


@pytest.fixture
def store_target(backend: str, tmp_path: Path,
                 request: pytest.FixtureRequest) -> Iterator[tuple[str, str | None]]:
    """``(target, schema)`` of a fresh, empty store on the backend under test."""
    if backend == "sqlite":
        yield str(tmp_path / "books.db"), None
        return
    schema = pg_schema(request.node.nodeid)
    drop_pg_schema(schema)
    yield PG_URL, schema
    drop_pg_schema(schema)


@pytest.fixture
def store(store_target: tuple[str, str | None]) -> Iterator[EventStore]:
    """A fresh event store on the backend under test."""
    target, schema = store_target
    s = EventStore.open(target, schema=schema, create=True)
    yield s
    s.close()


@pytest.fixture
def ledger(store_target: tuple[str, str | None]) -> Iterator[Ledger]:
    """Empty books on the backend under test."""
    target, schema = store_target
    led = Ledger.open(target, schema=schema, create=True)
    yield led
    led.close()
