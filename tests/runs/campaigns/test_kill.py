"""A real ``erpsim sweep`` killed with SIGKILL mid-campaign, then ``--resume``: whole rows
only, nothing twice, every attempt in the end, and the same verdicts for the same work."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runs.campaigns.jobs import _clear_attempt_dir
from runs.campaigns.ledger import ResultsLedger
from runs.campaigns.run import comparable
from runs.execution.turn import SESSION_FILE
from tests.runs.campaigns.test_campaign import ledger_rows, small_scenario, sweep

pytestmark = pytest.mark.slow


def _rows_so_far(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
    except sqlite3.Error:
        return 0  # the folder is being created


def test_sigkill_then_resume_completes_without_duplicates(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2)
    results = tmp_path / "results"
    args = [str(sc), "--seeds", "0-3", "--systems", "reference,null", "--runs", "2",
            "--label", "k", "--results-dir", str(results), "--quiet", "--parallel", "2"]
    total = 4 * 2 * 2
    proc = subprocess.Popen([sys.executable, "-c", "from runs.cli import main; main()",
                             "sweep", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    db = results / "k" / "results.db"
    deadline = time.monotonic() + 60
    try:
        while _rows_so_far(db) < 2:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no row after 60 s"
            time.sleep(0.02)
        workers = psutil.Process(proc.pid).children(recursive=True)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the pool's workers die with the campaign: nothing goes on writing into the folder
    _gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, alive

    before = ledger_rows(results / "k")  # whole rows only: every one reads back
    assert 2 <= len(before) < total, len(before)

    res = sweep(*args, "--resume")
    assert res.exit_code == 0, res.output
    assert f"{total - len(before)} attempts to run of {total} (resuming)" in " ".join(
        res.output.split())

    after = ledger_rows(results / "k")
    keys = [r.key for r in after]
    assert len(keys) == len(set(keys)) == total
    assert set(keys) == {("cash-application", s, sy, r) for s in range(4)
                         for sy in ("reference", "null") for r in (1, 2)}
    with sqlite3.connect(db) as conn:  # no duplicate can hide behind the ordering either
        assert conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == total
    # the rows written before the kill are untouched
    by = {r.key: r for r in after}
    assert all(by[r.key] == r for r in before)
    # the same seed and system give the same verdict, whichever run recorded it
    for r in after:
        twin = by[r.scenario, r.seed, r.system, 3 - r.repetition]
        a, b = comparable(r), comparable(twin)
        a.pop("repetition"), b.pop("repetition")
        assert a == b, (r.key, twin.key)
        assert r.status == "completed" and r.accepted == (r.system == "reference")
    # every row's folder is whole; no partial folder is left
    folder = results / "k"
    assert all((folder / r.attempt_dir / "verdict.json").is_file() for r in after)
    assert not list(folder.rglob(".*partial*"))
    with ResultsLedger.open(db) as ledger:
        assert ledger.replaced() == []


def test_a_killed_sweeps_leftover_agents_are_stopped_before_its_folders_go(
        tmp_path: Path) -> None:
    # A sweep killed outright leaves its attempts' agents running (their own sessions);
    # --resume clears the attempt's folders, and first what their agents left running.
    final = tmp_path / "k" / "cash-application" / "reference" / "seed-1-run-1"
    partial = final.parent / f".{final.name}.partial-abc"
    agents = []
    try:
        for folder in (final, partial):
            agent = subprocess.Popen(["sleep", "300"], start_new_session=True)
            agents.append(agent)
            start = Path(f"/proc/{agent.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
            logs = folder / "turns" / "01" / "logs"
            logs.mkdir(parents=True)
            (logs / SESSION_FILE).write_text(f"{agent.pid} {start}\n")
        _clear_attempt_dir(final)
        assert [a.wait(timeout=5) for a in agents] == [-signal.SIGKILL] * 2
        assert not final.exists() and not partial.exists()
    finally:
        for agent in agents:
            agent.kill()
            agent.wait()
