"""Faults injected into attempts: a run killed or interrupted, a disk that fills, a store
whose backend dies, an ERP API that fails, a check that cannot read the books.

The standards: a verdict comes only from the verified log; nothing is left half-written;
a fault of the environment is an infrastructure error naming its cause (never the agent's
crash, never a grader error, never a verdict); never a traceback; and a run again after
any of them (``--replace``) gives the hash of an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

from checks.registry import REGISTRY, load_builtin
from runs.attempt import _DailyControl, run_attempt
from runs.cli import main
from runs.errors import AttemptAborted, AttemptError, InfrastructureError
from runs.grading import RUNNING_FILE, environment_fault, grader_error_fault
from scenarios.agents import built_in_agent
from scenarios.loader import load_scenario
from scenarios.turn import TurnContext
from tests.conftest import PG_URL, drop_pg_schema, pg_schema, require_postgres
from tests.runs.test_grading import FILE_CHECK, flat, small_scenario

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "runs" / "adapters" / "script"
DAILY_TB = {"type": "trial_balance_zero", "name": "tb", "daily": True}


def invoke(*args: object) -> Result:
    """``erpsim`` in-process; a traceback is never an answer."""
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        res.output, res.exception)
    return res


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cash-application on 3 dates, with a per-date check and a file check."""
    return small_scenario(tmp_path_factory.mktemp("faults"), [FILE_CHECK, DAILY_TB])


@pytest.fixture(scope="module")
def clean_hash(scenario: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The reference agent's final hash on seed 1, uninterrupted."""
    out = tmp_path_factory.mktemp("clean") / "a"
    return run_attempt(load_scenario(scenario), 1, "reference", out).final_hash


def assert_stopped_without_verdict(out: Path, *causes: str) -> str:
    """The folder of an attempt ended by the environment: error.txt naming the cause, no
    verdict or summary, no mark of a run still going; returns error.txt."""
    assert not (out / "verdict.json").exists()
    assert not (out / "summary.json").exists()
    assert not (out / RUNNING_FILE).exists()
    text = (out / "error.txt").read_text(encoding="utf-8")
    for cause in causes:
        assert cause in text, text
    return text


# --- a run killed or interrupted, then --replace ------------------------------------------


@pytest.mark.slow
def test_a_run_killed_mid_turn_is_replaced_and_gives_the_clean_hash(
        scenario: Path, clean_hash: str, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    pid_file = tmp_path / "agent.pid"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from runs.cli import main; main()", "run", str(scenario),
         "--out", str(out), "--quiet", "--agent-cmd", str(SCRIPT),
         "--agent-env", f"ERPSIM_SCRIPT=echo $$ > {pid_file}; exec sleep 60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    agent: psutil.Process | None = None
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.is_file() and pid_file.read_text().strip()):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the first turn never started"
            time.sleep(0.02)
        agent = psutil.Process(int(pid_file.read_text()))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # The agent's own session outlives its runner, killed outright...
        assert agent.is_running() and agent.status() != psutil.STATUS_ZOMBIE

        assert (out / RUNNING_FILE).is_file()  # the mark of a run that did not end
        res = invoke("check", out)
        assert res.exit_code == 2, res.output
        assert "did not finish" in flat(res.output) and "--replace" in flat(res.output)

        # ...until --replace stops it: it must not write into the new attempt's workspace.
        res = invoke("run", scenario, "--out", out, "--quiet", "--replace")
        assert res.exit_code == 0, res.output
        with contextlib.suppress(psutil.NoSuchProcess):  # killed: gone, or a zombie
            assert agent.status() == psutil.STATUS_ZOMBIE, "the agent outlived --replace"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if agent is not None:
            with contextlib.suppress(psutil.Error):
                agent.kill()
    assert f"final_hash: {clean_hash}" in flat(res.output)
    assert not (out / RUNNING_FILE).exists()
    assert invoke("check", out, "--scenario", scenario).exit_code == 0


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_interrupted_mid_turn_takes_its_agent_with_it_and_exits_130(
        scenario: Path, clean_hash: str, tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "interrupted"
    pid_file = tmp_path / "agent.pid"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from runs.cli import main; main()", "run", str(scenario),
         "--out", str(out), "--quiet", "--agent-cmd", str(SCRIPT),
         "--agent-env", f"ERPSIM_SCRIPT=echo $$ > {pid_file}; exec sleep 60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    agent: psutil.Process | None = None
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.is_file() and pid_file.read_text().strip()):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the first turn never started"
            time.sleep(0.02)
        agent = psutil.Process(int(pid_file.read_text()))
        os.kill(proc.pid, sig)
        code = proc.wait(timeout=30)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 130, stderr
    assert "interrupted: the attempt in" in stderr and "--replace" in stderr
    assert "Traceback" not in stderr
    _gone, alive = psutil.wait_procs([agent], timeout=10)
    assert not alive, "the agent outlived the run it belonged to"
    assert not (out / "verdict.json").exists()
    res = invoke("run", scenario, "--out", out, "--quiet", "--replace")
    assert res.exit_code == 0, res.output
    assert f"final_hash: {clean_hash}" in flat(res.output)


def test_a_run_interrupted_while_graded_is_replaced(scenario: Path, clean_hash: str,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "a"
    loaded = load_scenario(scenario)

    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr("runs.attempt.grade", interrupted)
        with pytest.raises(KeyboardInterrupt):
            run_attempt(loaded, 1, "reference", out)
    assert (out / RUNNING_FILE).is_file() and not (out / "verdict.json").exists()
    with pytest.raises(AttemptError, match="exists and is not empty"):
        run_attempt(loaded, 1, "reference", out)  # without --replace: refused, untouched
    assert run_attempt(loaded, 1, "reference", out, replace=True).final_hash == clean_hash


def test_replace_never_takes_a_folder_being_run(scenario: Path, clean_hash: str,
                                                tmp_path: Path) -> None:
    out = tmp_path / "a"
    out.mkdir()
    (out / "books.db").write_bytes(b"")
    fd = os.open(out / RUNNING_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a run going on holds it
        os.pwrite(fd, b"pid 4242\n", 0)
        with pytest.raises(AttemptError, match=r"still running \(pid 4242\)"):
            run_attempt(load_scenario(scenario), 1, "reference", out, replace=True)
        assert (out / "books.db").exists()
        res = invoke("check", out)
        assert res.exit_code == 2 and "still running (pid 4242)" in flat(res.output)
    finally:
        os.close(fd)
    # once that run is gone (its lock released), the folder is an interrupted attempt
    assert run_attempt(load_scenario(scenario), 1, "reference", out,
                       replace=True).final_hash == clean_hash


def test_replace_still_refuses_a_folder_that_is_no_attempt(scenario: Path,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(AttemptError, match="only replaces an attempt folder"):
        run_attempt(load_scenario(scenario), 1, "reference", out, replace=True)
    assert (out / "notes.txt").read_text() == "keep me"


# --- the environment failing under a run ----------------------------------------------------


def _disk_full() -> sa.exc.OperationalError:
    return sa.exc.OperationalError("INSERT INTO events ...", None,
                                   sqlite3.OperationalError("database or disk is full"))


def test_a_store_error_in_the_engine_is_an_infrastructure_error_naming_it(
        scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SimPy re-raises a process's error by copying it, which SQLAlchemy's errors do not
    survive: the cause must still be named, and the run exit 3 without a traceback."""
    calls = []

    def fails(self: _DailyControl, day: object) -> None:
        calls.append(day)
        if len(calls) == 2:
            raise _disk_full()

    monkeypatch.setattr(_DailyControl, "at_day_end", fails)
    out = tmp_path / "a"
    res = invoke("run", scenario, "--out", out, "--quiet")
    assert res.exit_code == 3, res.output
    assert "infrastructure error" in flat(res.output)
    assert "database or disk is full" in flat(res.output)
    assert_stopped_without_verdict(out, "database or disk is full")
    monkeypatch.undo()
    assert invoke("run", scenario, "--out", out, "--quiet", "--replace").exit_code == 0


class _Agent:
    """A built-in-like agent: the reference's work, and ``fault`` at turn ``at``."""

    def __init__(self, loaded: Any, at: int, fault: Any) -> None:
        self.loaded, self.at, self.fault = loaded, at, fault
        self.inner: Any = None

    def start(self, ledger: Any) -> None:
        """Nothing to start."""

    def run_turn(self, desk: TurnContext) -> None:
        """Fail at turn ``at``; else as the reference does."""
        if desk.turn == self.at:
            self.fault(desk)
        if self.inner is None:
            self.inner = built_in_agent("reference", self.loaded, None)  # type: ignore[arg-type]
        self.inner.run_turn(desk)


def _no_space(desk: TurnContext) -> None:
    raise OSError(errno.ENOSPC, "No space left on device", str(desk.output_dir / "x.csv"))


def test_a_full_disk_in_an_agents_turn_is_no_crash_of_the_agent(scenario: Path,
                                                               tmp_path: Path) -> None:
    loaded = load_scenario(scenario)
    out = tmp_path / "a"
    seen: list[dict[str, Any]] = []
    with pytest.raises(AttemptAborted, match="No space left on device") as info:
        run_attempt(loaded, 1, "x", out, agent=_Agent(loaded, 2, _no_space),
                    on_turn=seen.append)
    assert info.value.turn == 2
    assert [t["status"] for t in seen] == ["completed", "error"]
    assert "No space left on device" in seen[-1]["process"]["infrastructure_error"]
    assert_stopped_without_verdict(out, "turn 2", "No space left on device")


def test_an_agents_own_bug_is_still_a_crash(scenario: Path, tmp_path: Path) -> None:
    """The line between the two: an exception that is not the environment's."""
    loaded = load_scenario(scenario)

    def bug(_desk: TurnContext) -> None:
        raise KeyError("INV-000404")

    result = run_attempt(loaded, 1, "x", tmp_path / "a", agent=_Agent(loaded, 2, bug))
    assert [t["status"] for t in result.summary["turns"]] == [
        "completed", "crashed", "completed"]
    assert (tmp_path / "a" / "verdict.json").is_file()


def test_an_erp_api_that_fails_during_an_external_turn_is_an_infrastructure_error(
        scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's request answered 500 because the store failed: whatever the agent did
    next (here: exit non-zero), the turn is not its failure."""
    from erp.api.context import ApiContext

    @contextlib.contextmanager
    def broken(self: ApiContext, grant: Any) -> Iterator[Any]:
        raise sqlite3.OperationalError("disk I/O error")
        yield  # pragma: no cover

    monkeypatch.setattr(ApiContext, "books", broken)
    out = tmp_path / "a"
    res = invoke("run", scenario, "--out", out, "--quiet", "--agent-cmd", SCRIPT,
                 "--agent-env",
                 'ERPSIM_SCRIPT=erp invoices list --status open --format csv > "$3/x.csv"')
    assert res.exit_code == 3, res.output
    text = flat(res.output)
    assert "the ERP API failed answering 1 request(s), the first GET /v1/invoices: 500" in text
    assert_stopped_without_verdict(out, "turn 1", "the ERP API failed")


def test_a_store_busy_answer_is_no_failure_of_the_api() -> None:
    from runs.attempt import _api_failed

    busy = {"status": 503, "error": "store_busy", "method": "POST", "path": "/v1/receipts"}
    assert _api_failed([busy, {"status": 409, "error": "conflict"}]) is None
    assert "503" in str(_api_failed([{**busy, "error": None}]))


def _failing_check(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    load_builtin()
    original = REGISTRY["trial_balance_zero"]

    def fn(spec: Any, ctx: Any) -> Any:
        raise error

    monkeypatch.setitem(REGISTRY, "trial_balance_zero", dataclasses.replace(original, fn=fn))


def test_a_check_the_store_fails_under_leaves_no_verdict_of_the_run(
        scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_check(monkeypatch, _disk_full())
    out = tmp_path / "a"
    res = invoke("run", scenario, "--out", out, "--quiet")
    assert res.exit_code == 3, res.output
    assert "database or disk is full" in flat(res.output)
    assert_stopped_without_verdict(out, "database or disk is full")


def test_check_write_never_writes_a_verdict_the_store_failed_under(
        scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "a"
    run_attempt(load_scenario(scenario), 1, "reference", out)
    before = (out / "verdict.json").read_bytes()
    _failing_check(monkeypatch, _disk_full())
    res = invoke("check", out, "--scenario", scenario, "--write")
    assert res.exit_code == 2, res.output
    assert "its store failed while it was graded" in flat(res.output)
    assert "nothing was graded or written" in flat(res.output)
    assert (out / "verdict.json").read_bytes() == before
    # a check's own bug stays a grader error, as before
    monkeypatch.undo()
    _failing_check(monkeypatch, ZeroDivisionError("a bug"))
    assert invoke("check", out, "--scenario", scenario).exit_code == 3


def test_what_is_and_is_not_a_fault_of_the_environment() -> None:
    assert environment_fault(_disk_full()) == "OperationalError: database or disk is full"
    assert environment_fault(OSError(errno.EROFS, "Read-only file system"))
    locked = sa.exc.OperationalError("BEGIN", None,
                                     sqlite3.OperationalError("database is locked"))
    assert environment_fault(locked) is None  # a lock wait: asked again, not a fault
    assert environment_fault(OSError(errno.ENOENT, "No such file")) is None
    assert environment_fault(KeyError("x")) is None
    try:  # found where it was raised from
        try:
            raise _disk_full()
        except Exception as e:
            raise RuntimeError("while posting") from e
    except RuntimeError as wrapped:
        assert environment_fault(wrapped) == "OperationalError: database or disk is full"
    from checks.verdict import GraderError, Verdict

    def verdict(error: str, tb: str) -> Verdict:
        return Verdict([], [GraderError("tb", error, tb)], {})

    assert grader_error_fault(verdict(
        "OperationalError: (psycopg.errors.AdminShutdown) terminating connection",
        "Traceback ...\npsycopg.errors.AdminShutdown: terminating connection\n")) is not None
    assert grader_error_fault(verdict("ZeroDivisionError: division by zero",
                                      "Traceback ...\nZeroDivisionError: division by zero\n")
                              ) is None
    assert grader_error_fault(verdict(
        "OperationalError: database is locked",
        "sqlite3.OperationalError: database is locked\n")) is None


# --- PostgreSQL: the backend terminated mid-attempt ----------------------------------------


@pytest.fixture
def pg_schemas(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Schemas of this test, dropped after it."""
    require_postgres()
    made: list[str] = []
    yield made
    for schema in made:
        drop_pg_schema(schema)


def _terminate_own_backend(desk: TurnContext) -> None:
    """The store's connection's backend ends, as pg_terminate_backend does from outside."""
    with desk.ledger.store.engine.connect() as conn:
        conn.exec_driver_sql("SELECT pg_terminate_backend(pg_backend_pid())")


def terminate_idle_backends(engine: Any) -> None:
    """Every idle connection of ``engine``'s pool loses its PostgreSQL backend."""
    import psycopg

    conns = [engine.connect() for _ in range(max(1, engine.pool.checkedin()))]
    pids = [c.exec_driver_sql("SELECT pg_backend_pid()").scalar() for c in conns]
    for c in conns:
        c.close()
    with psycopg.connect(PG_URL.replace("postgresql+psycopg", "postgresql"),
                         autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def _terminate_idle_backends(desk: TurnContext) -> None:
    """Every idle connection of the store's pool loses its backend; the turn goes on."""
    terminate_idle_backends(desk.ledger.store.engine)


@pytest.mark.postgres
@pytest.mark.parametrize("fault", [_terminate_own_backend, _terminate_idle_backends])
def test_a_terminated_backend_is_an_infrastructure_error_and_a_rerun_works(
        scenario: Path, clean_hash: str, tmp_path: Path, pg_schemas: list[str],
        request: pytest.FixtureRequest, fault: Any) -> None:
    loaded = load_scenario(scenario)
    schema = pg_schema(request.node.nodeid)
    drop_pg_schema(schema)
    pg_schemas.append(schema)
    out = tmp_path / "a"
    with pytest.raises(InfrastructureError) as info:
        run_attempt(loaded, 1, "x", out, agent=_Agent(loaded, 2, fault),
                    store_url=PG_URL, schema=schema)
    assert "terminat" in str(info.value) or "connection" in str(info.value), info.value
    assert_stopped_without_verdict(out, "infrastructure error")
    # a rerun (its schema cleared first, as a sweep's --resume does) gives the clean hash
    drop_pg_schema(schema)
    result = run_attempt(loaded, 1, "reference", out, replace=True, store_url=PG_URL,
                         schema=schema)
    assert result.final_hash == clean_hash
    assert result.summary["verdict"]["accepted"] is True
