"""--dask: the same attempts submitted to a Dask LocalCluster of worker processes give
the ledger contents of the local process pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.campaigns.plan import plan_campaign
from runs.campaigns.run import comparable, run_campaign
from runs.campaigns.systems import resolve_systems
from runs.errors import CampaignError
from tests.runs.campaigns.test_campaign import ledger_rows, small_scenario, sweep

pytestmark = pytest.mark.slow


def test_dask_local_cluster_gives_the_rows_of_the_local_pool(tmp_path: Path) -> None:
    from distributed import LocalCluster

    sc = small_scenario(tmp_path, days=2)
    systems = resolve_systems(["reference", "null"])

    def plan() -> object:
        return plan_campaign("same", scenarios=[str(sc)], seeds=[0, 1, 2], systems=systems,
                             repetitions=1)

    pool = run_campaign(plan(), tmp_path / "pool" / "same", parallel=2)  # type: ignore[arg-type]
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=None) as cluster:
        res = sweep(str(sc), "--seeds", "0-2", "--systems", "reference,null", "--label",
                    "same", "--results-dir", str(tmp_path / "dask"), "--quiet", "--dask",
                    cluster.scheduler_address)
    assert res.exit_code == 0, res.output
    dask_rows = ledger_rows(tmp_path / "dask" / "same")
    assert len(dask_rows) == 6
    assert [comparable(r) for r in dask_rows] == [comparable(r) for r in pool.rows()]
    assert all((tmp_path / "dask" / "same" / r.attempt_dir / "verdict.json").is_file()
               for r in dask_rows)


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import runs.campaigns.executors

    monkeypatch.setattr(runs.campaigns.executors, "DASK_CONNECT_TIMEOUT", "1s")
    sc = small_scenario(tmp_path, days=2)
    plan = plan_campaign("x", scenarios=[str(sc)], seeds=[0],
                         systems=resolve_systems(["null"]))
    with pytest.raises(CampaignError, match=r"--dask tcp://127\.0\.0\.1:9: no scheduler "
                                            r"answers at 127\.0\.0\.1:9 \(Connection refused\)"):
        run_campaign(plan, tmp_path / "x", dask_address="tcp://127.0.0.1:9")
    assert not (tmp_path / "x").exists()  # checked before the label is created


def test_parallel_and_dask_are_exclusive(tmp_path: Path) -> None:
    res = sweep("cash-application", "--systems", "null", "--label", "x", "--parallel", "2",
                "--dask", "tcp://127.0.0.1:9", "--results-dir", str(tmp_path))
    assert res.exit_code == 2 and "--parallel and --dask are exclusive" in res.output


def test_a_peer_that_accepts_and_never_answers_is_no_scheduler_within_the_deadline() -> None:
    """The client's timeout does not cover a silent handshake; the probe's own deadline does."""
    import socket
    import threading

    from runs.campaigns.run import dask_problem

    held: list[socket.socket] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        stop = threading.Event()

        def hold() -> None:  # accepts every connection and keeps it open, saying nothing
            server.settimeout(0.2)
            while not stop.is_set():
                try:
                    held.append(server.accept()[0])
                except OSError:
                    continue

        thread = threading.Thread(target=hold, daemon=True)
        thread.start()
        try:
            problem = dask_problem(f"tcp://127.0.0.1:{port}", timeout_s=1.0)
        finally:
            stop.set()
            thread.join(5)
            for conn in held:
                conn.close()
    assert problem is not None
    assert problem.startswith(f"--dask tcp://127.0.0.1:{port}: not a Dask scheduler (")
