"""``erpsim demo`` over its whole range of days, and nothing left behind when it fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from erp import queries as q
from runs.bench.demo import DEMO_START, build_demo, demo_months
from runs.bench.workload import business_days
from runs.cli import main


def test_the_periods_cover_every_business_day_of_the_range() -> None:
    for days in (1, 20, 520, 521, 2000):
        last = next(d for n, d in enumerate(business_days(DEMO_START)) if n + 1 == days)
        months = demo_months(days)
        y, m = divmod(DEMO_START.month - 1 + months - 1, 12)
        assert (DEMO_START.year + y, m + 1) == (last.year, last.month)


def test_a_demo_longer_than_two_years_builds(tmp_path: Path) -> None:
    """560 business days run past the 24 periods the workload opened before."""
    ledger, last = build_demo(tmp_path / "books.db", seed=1, days=560)
    try:
        assert last > DEMO_START.replace(year=DEMO_START.year + 2)
        assert ledger.store.verify().ok
        tb = q.trial_balance(ledger.store)
        assert sum(r.debit for r in tb) == sum(r.credit for r in tb)
    finally:
        ledger.close()
    assert [p.name for p in tmp_path.iterdir() if ".building" in p.name] == []


def test_the_whole_documented_range_is_accepted_and_beyond_it_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "x.db"), "--days",
                                       "2001"])
    assert result.exit_code == 2
    assert "2001" in result.output and "1<=x<=2000" in result.output
    assert not list(tmp_path.iterdir())


def test_an_interrupted_demo_leaves_no_partial_file(tmp_path: Path) -> None:
    out = tmp_path / "books.db"
    erpsim = Path(sys.executable).with_name("erpsim")
    # SIGINT as a terminal delivers it: a test run started in the background (a CI job)
    # ignores SIGINT, and its children would inherit that
    proc = subprocess.Popen([str(erpsim), "demo", "--out", str(out), "--days", "2000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    building = out.with_name(out.name + ".building")
    deadline = time.monotonic() + 60
    while not building.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert building.exists(), "the demo never started building"
    time.sleep(0.5)  # well inside the build (2,000 days take several seconds)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
