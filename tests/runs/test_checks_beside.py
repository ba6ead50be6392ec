"""The attempt's checks beside its run (``runs.daily``): the same results as in its own
process, on every library scenario and on PostgreSQL; the choice; its failures."""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import sqlalchemy as sa

import runs.daily
from desk.tasks import load_task
from erp.store import EventStore
from runs.attempt import run_attempt
from runs.daily import BesideFailed, DailyChecks, choose_beside
from runs.errors import InfrastructureError
from runs.grading import running_holder
from scenarios.loader import LoadedScenario, find_scenario, load_scenario
from tests.conftest import PG_URL, drop_pg_schema, pg_schema, require_postgres

LIBRARY = sorted(p.name for p in (Path(__file__).parents[2] / "scenarios" / "library").iterdir()
                 if (p / "scenario.yaml").is_file())


def _loaded(name: str) -> LoadedScenario:
    return load_scenario(find_scenario(name))


def _results(out: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on where the checks ran."""
    verdict = json.loads((out / "verdict.json").read_text(encoding="utf-8"))
    return {"verdict": verdict, "daily_checks": summary["daily_checks"],
            "daily_by_month": summary["daily_by_month"],
            "dates": summary["daily_timing"]["dates"], "final_hash": summary["final_hash"]}


@pytest.mark.parametrize("name", LIBRARY)
def test_every_library_scenario_grades_the_same_beside_as_in_the_attempt(
        name: str, tmp_path: Path) -> None:
    """The reference's and the null agent's attempts (failing per-date checks on many
    dates), seed 0: verdict, per-date results by check and by month, the log."""
    loaded = _loaded(name)
    for agent in ("reference", "null"):
        got = {}
        for beside in (False, True):
            out = tmp_path / f"{agent}-{beside}"
            result = run_attempt(loaded, 0, agent, out, checks_beside=beside)
            assert result.summary["checks_process"] == ("beside" if beside else "attempt")
            assert ("waited_for_checks" in result.summary["phases_s"]) is beside
            got[beside] = _results(out, result.summary)
        assert got[True] == got[False], (name, agent)
    assert LIBRARY and "fiscal-year" in LIBRARY


def test_a_desk_task_grades_the_same_beside(tmp_path: Path) -> None:
    task = load_task("ar-aging-workbook")
    got = {}
    for beside in (False, True):
        out = tmp_path / str(beside)
        result = run_attempt(task.loaded, task.seed, "null", out, checks_beside=beside)
        got[beside] = _results(out, result.summary)
    assert got[True] == got[False]
    assert got[True]["verdict"]["results"]  # graded, and rejected
    assert not all(r["passed"] for r in got[True]["verdict"]["results"])



def test_a_turn_waits_for_the_checks_beside_only_when_one_reads_its_files(
        tmp_path: Path) -> None:
    """The library's per-date checks read the books and the world's records: a turn does
    not wait for the second process (it catches up during the turn). A per-date check that
    reads a turn's files (a list the agent wrote) is handed the latest workspace, and
    each turn waits for the dates before it; the results are the same either way."""
    import dataclasses

    from checks.registry import parse_checks

    loaded = _loaded("month-end-close")
    out = tmp_path / "library"
    summary = run_attempt(loaded, 0, "null", out, checks_beside=True).summary
    assert summary["turns_wait_for_checks"] is False
    reading = dataclasses.replace(loaded, checks=loaded.checks + tuple(parse_checks([
        {"type": "no_unapplied_receipts", "older_than_days": 2, "daily": True,
         "except_listed_in": "out/unapplied.csv", "name": "unapplied-listed"}])))
    got = {}
    for beside in (False, True):
        out = tmp_path / f"reading-{beside}"
        result = run_attempt(reading, 0, "reference", out, checks_beside=beside)
        assert result.summary.get("turns_wait_for_checks") is (True if beside else None)
        got[beside] = _results(out, result.summary)
    assert got[True] == got[False]
    assert "unapplied-listed" in got[True]["daily_checks"]

@pytest.mark.postgres
def test_beside_on_postgresql_grades_as_on_sqlite(tmp_path: Path) -> None:
    require_postgres()
    loaded = _loaded("month-end-close")
    schema = pg_schema("beside")
    try:
        pg = run_attempt(loaded, 1, "null", tmp_path / "pg", store_url=PG_URL, schema=schema,
                         checks_beside=True)
        assert pg.summary["checks_process"] == "beside"
        lite = run_attempt(loaded, 1, "null", tmp_path / "lite", checks_beside=False)
        assert _results(tmp_path / "pg", pg.summary) == _results(tmp_path / "lite",
                                                                 lite.summary)
    finally:
        drop_pg_schema(schema)


# --- the choice -------------------------------------------------------------------------


def test_the_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = _loaded("cash-application")
    store = EventStore.open(tmp_path / "b.db", create=True)
    memory = EventStore.open(tmp_path / "m.db", create=True)
    memory.engine = sa.create_engine("sqlite://")  # an in-memory database
    try:
        assert choose_beside(store, loaded, True)
        assert not choose_beside(store, loaded, False)
        assert not choose_beside(memory, loaded, True)  # no second connection sees it
        monkeypatch.setattr(runs.daily, "usable_cpus", lambda: 2)
        assert choose_beside(store, loaded, None) is (threading.active_count() == 1)
        monkeypatch.setattr(runs.daily, "usable_cpus", lambda: 1)
        assert not choose_beside(store, loaded, None)  # one CPU: no gain
        assert choose_beside(store, loaded, True)
        monkeypatch.setattr(runs.daily, "usable_cpus", lambda: 2)
        stop = threading.Event()
        other = threading.Thread(target=stop.wait)
        other.start()
        try:  # another thread: its locks would stay locked in the child
            assert not choose_beside(store, loaded, None)
        finally:
            stop.set()
            other.join()
        desk = load_task("ar-aging-workbook").loaded  # one date: never chosen, may be asked
        assert not choose_beside(store, desk, None) and choose_beside(store, desk, True)
        monkeypatch.setattr(runs.daily.mp, "get_all_start_methods", lambda: ["spawn"])
        assert not choose_beside(store, loaded, True)
    finally:
        store.close()
        memory.close()


def _in_pool_worker(path: str) -> bool:
    loaded = _loaded("cash-application")
    store = EventStore.open(path)
    try:
        return choose_beside(store, loaded, True)
    finally:
        store.close()


def test_a_pool_worker_checks_in_its_own_process(tmp_path: Path) -> None:
    """A multiprocessing pool's worker may start no process: never beside there."""
    EventStore.open(tmp_path / "b.db", create=True).close()
    with mp.get_context("fork").Pool(1) as pool:
        assert pool.apply(_in_pool_worker, (str(tmp_path / "b.db"),)) is False


# --- its failures -------------------------------------------------------------------------


def _disk_full() -> sa.exc.OperationalError:
    return sa.exc.OperationalError("SELECT ...", None,
                                   sqlite3.OperationalError("disk I/O error"))


def _fails_on_second_date(error: BaseException, monkeypatch: pytest.MonkeyPatch) -> None:
    original = DailyChecks.evaluate
    calls: list[object] = []

    def evaluate(self: DailyChecks, *args: Any) -> None:
        calls.append(args)  # the second process's copy of the list
        if len(calls) == 2:
            raise error
        original(self, *args)

    monkeypatch.setattr(DailyChecks, "evaluate", evaluate)


def test_an_environment_fault_beside_is_an_infrastructure_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fails_on_second_date(_disk_full(), monkeypatch)
    out = tmp_path / "a"
    with pytest.raises(InfrastructureError, match="disk I/O error"):
        run_attempt(_loaded("month-end-close"), 0, "reference", out, checks_beside=True)
    assert "disk I/O error" in (out / "error.txt").read_text(encoding="utf-8")
    assert not (out / "verdict.json").exists() and not (out / "summary.json").exists()


class _SentJustAfterTheLook:
    """The checks process's pipe as the attempt sees it when the second process sends
    its failure and ends just after the attempt looked for a message: the look that
    would have found the failure finds none (the second process has ended by then), and
    the attempt's next send meets a closed pipe. Other messages pass as they come."""

    def __init__(self, conn: Any, child: Any) -> None:
        self._conn, self._child = conn, child
        self._read: list[Any] = []  # taken from the pipe, not yet handed over
        self._armed = True

    def poll(self, timeout: float = 0.0) -> bool:
        if self._read:
            return True
        if not self._conn.poll(timeout):
            return False
        self._read.append(self._conn.recv())
        if self._armed and self._read[0][0] in ("fault", "error"):
            self._armed = False
            self._child.join()  # it has sent its failure and ended ...
            return False  # ... a moment after this look
        return True

    def recv(self) -> Any:
        return self._read.pop(0) if self._read else self._conn.recv()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@pytest.mark.parametrize(("error", "reported", "says"), [
    (_disk_full(), InfrastructureError, "disk I/O error"),
    (KeyError("no-such-account"), BesideFailed, "checks process failed: KeyError"),
], ids=["fault", "bug"])
def test_a_failure_beside_sent_just_after_a_look_is_still_the_one_reported(
        error: BaseException, reported: type[Exception], says: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The second process's message is read even when the attempt finds its pipe closed
    first (it sent the message and ended between the attempt's look and its next send):
    the failure reported is the one it sent, never a bare "ended before its verdict"."""
    _fails_on_second_date(error, monkeypatch)
    start = runs.daily.ChecksBeside.__init__

    def late(self: runs.daily.ChecksBeside, *args: Any) -> None:
        start(self, *args)
        self._conn = _SentJustAfterTheLook(self._conn, self._child)  # type: ignore[assignment]

    monkeypatch.setattr(runs.daily.ChecksBeside, "__init__", late)
    with pytest.raises(reported, match=says):
        run_attempt(_loaded("month-end-close"), 0, "reference", tmp_path / "a",
                    checks_beside=True)


def test_a_bug_beside_names_itself_and_where(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _fails_on_second_date(KeyError("no-such-account"), monkeypatch)
    with pytest.raises(BesideFailed, match=r"checks process failed: KeyError: "
                                           r"'no-such-account' \(at test_checks_beside.py:"):
        run_attempt(_loaded("month-end-close"), 0, "reference", tmp_path / "a",
                    checks_beside=True)



def test_a_check_raising_in_the_work_done_ahead_is_its_grader_error_either_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check whose work done ahead raises (month-end-close's reconciliation file, its
    items at the turn's end) does not fail the attempt beside the run: the final
    evaluation works it out again and reports that check's grader error, as the
    attempt's own process does."""
    import checks.policy

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("no-such-line")

    monkeypatch.setattr(checks.policy, "_reconciling_items", broken)
    loaded = _loaded("month-end-close")
    got = {}
    for beside in (False, True):
        out = tmp_path / str(beside)
        result = run_attempt(loaded, 0, "reference", out, checks_beside=beside)
        got[beside] = _results(out, result.summary)
    assert got[True] == got[False]
    errors = got[True]["verdict"]["grader_errors"]
    assert any("no-such-line" in g["error"] for g in errors), errors


@pytest.mark.parametrize(("beside", "verdict_first"),
                         [(True, False), (True, True), (False, False)])
def test_the_run_is_let_go_while_the_checks_beside_finish(
        beside: bool, verdict_first: bool, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside the run, the attempt lets its engine, world and books go once the run is
    over and collects them while the second process works on the final checks (the
    heap release, done again, cheaply, at the attempt's end); nothing of the run is left
    by then. In one process, the release comes at the end alone. The same holds when
    the second process's verdict is there before the attempt asks for it (the clean-clone
    run once found the early release skipped then)."""
    import weakref

    import runs.attempt
    from sim.engine import Engine, release_heap

    made: list[weakref.ref[Engine]] = []

    class Watched(Engine):
        """This attempt's engine, watched (other tests' may live on in this process)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))

    seen: list[int] = []

    def release() -> None:
        release_heap()
        seen.append(sum(1 for r in made if r() is not None))

    monkeypatch.setattr(runs.attempt, "Engine", Watched)
    monkeypatch.setattr(runs.attempt, "release_heap", release)
    if verdict_first:
        original = runs.attempt.grade

        def grade_late(*args: Any, **kwargs: Any) -> Any:
            elsewhere = kwargs["elsewhere"]
            while elsewhere._verdict is None:  # the verdict is in before it is asked for
                elsewhere._take(block=True)
            return original(*args, **kwargs)

        monkeypatch.setattr(runs.attempt, "grade", grade_late)
    result = run_attempt(_loaded("month-end-close"), 0, "reference", tmp_path / "a",
                         checks_beside=beside)
    assert result.summary["verdict"]["accepted"] in (True, False)
    assert len(made) == 1 and seen == ([0, 0] if beside else [0])
    # both releases timed: the one in the wait in summary.json, the end's on the result
    assert (result.summary["phases_s"].get("heap_release", 0) > 0) is beside
    assert result.released_s > 0

def test_the_checks_process_killed_is_an_infrastructure_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = DailyChecks.evaluate

    def evaluate(self: DailyChecks, *args: Any) -> None:
        if self.days == 3:
            os.kill(os.getpid(), signal.SIGKILL)  # in the second process
        original(self, *args)

    monkeypatch.setattr(DailyChecks, "evaluate", evaluate)
    out = tmp_path / "a"
    with pytest.raises(InfrastructureError, match=r"checks process was killed \(signal 9\)"):
        run_attempt(_loaded("month-end-close"), 0, "reference", out, checks_beside=True)
    assert not (out / "verdict.json").exists()


def test_no_checks_process_is_left_running(tmp_path: Path) -> None:
    before = {c.pid for c in mp.active_children()}
    run_attempt(_loaded("cash-application"), 0, "reference", tmp_path / "a",
                checks_beside=True)
    assert {c.pid for c in mp.active_children()} <= before


def _run_in_a_turn(out: Path, pid_file: Path) -> subprocess.Popen[bytes]:
    """``erpsim run`` of cash-application, run alone (so it checks beside itself), its
    agent in a turn of a minute when this returns."""
    script = Path(__file__).parents[2] / "runs" / "adapters" / "script"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from runs.cli import main; main()", "run",
         str(find_scenario("cash-application")), "--out", str(out), "--quiet",
         "--agent-cmd", str(script),
         "--agent-env", f"ERPSIM_SCRIPT=echo $$ > {pid_file}; exec sleep 60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while not (pid_file.is_file() and pid_file.read_text().strip()):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the first turn never started"
        time.sleep(0.02)
    return proc


def _stop(proc: subprocess.Popen[bytes], pid_file: Path) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    with contextlib.suppress(ValueError, OSError):  # the agent's own session
        os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_an_attempt_killed_leaves_no_checks_process_and_its_folder_free(
        tmp_path: Path) -> None:
    """Killed outright in a turn, the attempt's checks process dies with it and lets go
    of the folder's lock at once."""
    out, pid_file = tmp_path / "a", tmp_path / "agent.pid"
    proc = _run_in_a_turn(out, pid_file)
    try:
        runner = psutil.Process(proc.pid)
        beside = [c for c in runner.children() if c.cmdline() == runner.cmdline()]
        assert len(beside) == 1, runner.children()  # its checks process, forked
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        beside[0].wait(timeout=10)  # killed with it (or ended on its pipe's end)
        assert running_holder(out) is None
    finally:
        _stop(proc, pid_file)


def test_ctrl_c_to_the_process_group_is_the_attempts_interruption(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches every process of the group: the checks process leaves
    the interruption to the attempt (exit 130, interrupted), never fails on it first."""
    out, pid_file = tmp_path / "a", tmp_path / "agent.pid"
    proc = _run_in_a_turn(out, pid_file)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=30)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        _stop(proc, pid_file)
    assert code == 130, stderr
    assert "interrupted: the attempt in" in stderr and "checks process" not in stderr
    assert running_holder(out) is None


def test_the_final_checks_with_work_to_do_ahead() -> None:
    """fiscal-year's twelve reconciliation files (each judged at its turn's end) and its
    comparison at every turn are handed to the checks beside the run, which work each
    out once its date is over; a scenario with none has nothing to do ahead."""
    from collections import Counter

    from checks.context import Folds
    from runs.daily import LookbacksAhead

    ahead = LookbacksAhead(_loaded("fiscal-year"), Folds())
    kinds = Counter(s.type for s in ahead._ahead)
    assert kinds["reconciliation_ties"] >= 12, kinds
    assert any(getattr(s, "at_turns", False) for s in ahead._ahead)
    assert not LookbacksAhead(_loaded("payment-run"), Folds())._ahead


@pytest.mark.parametrize("choice", ["attempt", "beside"])
def test_erpsim_run_checks_process(choice: str, tmp_path: Path) -> None:
    """``erpsim run --checks-process``: the choice is the attempt's, recorded in
    summary.json; the verdict the same."""
    from click.testing import CliRunner

    from runs.cli import main

    out = tmp_path / choice
    res = CliRunner().invoke(main, ["run", "cash-application", "--out", str(out), "--quiet",
                                    "--checks-process", choice])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["checks_process"] == choice
    assert summary["verdict"]["status"] == "accepted"


def test_erpsim_run_refuses_an_unknown_checks_process(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from runs.cli import main

    res = CliRunner().invoke(main, ["run", "cash-application", "--out", str(tmp_path / "a"),
                                    "--checks-process", "thread"])
    assert res.exit_code == 2
    assert "--checks-process" in res.output and "'thread' is not one of" in res.output
    assert not (tmp_path / "a").exists()
