"""Where a campaign's jobs run: in this process, on a local process pool (workers live
for the campaign, die with it) or on a Dask distributed cluster (the same
:func:`~runs.campaigns.jobs.run_job` through ``Client.map``)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any

from runs.campaigns.jobs import error_row, prepare_process, run_job
from runs.campaigns.ledger import (
    AttemptRow,
    utc_now,
)
from runs.campaigns.plan import AttemptJob
from runs.errors import CampaignError

DASK_CONNECT_TIMEOUT = "30s"
"""How long ``--dask`` waits for the scheduler to answer."""





# --- the matrix ------------------------------------------------------------------------



def _init_pool_worker() -> None:
    """A pool worker: die with the campaign (Linux), then prepare once."""
    with contextlib.suppress(Exception):
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no orphan goes on writing
    prepare_process()


def _pool(parallel: int) -> ProcessPoolExecutor:
    """A process pool whose workers start with erpsim imported and the collector tuned.

    With a single thread here, workers are forked from this process after it prepared
    itself (imports paid once, no copy per worker). With threads running (a progress
    display, a server), forking could copy a lock some thread holds: workers then start
    from a forkserver that imported erpsim once.
    """
    import multiprocessing as mp
    import threading
    from multiprocessing.context import BaseContext

    if threading.active_count() == 1:
        prepare_process()
        ctx: BaseContext = mp.get_context("fork")
    else:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["runs.campaigns.jobs", "runs.attempt",
                                   "runs.execution.external"])
    return ProcessPoolExecutor(max_workers=parallel, mp_context=ctx,
                               initializer=_init_pool_worker)


def _result(fut: Any, job: AttemptJob) -> AttemptRow:
    try:
        row = fut.result()
    except Exception as e:
        return error_row(job, f"the worker running this attempt failed: "
                              f"{type(e).__name__}: {e}", started_at=utc_now())
    if not isinstance(row, AttemptRow):  # pragma: no cover - a foreign worker function
        return error_row(job, f"the worker returned {type(row).__name__}, not a row",
                         started_at=utc_now())
    return row


@contextlib.contextmanager
def executing(jobs: Sequence[AttemptJob], *, parallel: int = 1,
              dask_address: str | None = None) -> Iterator[Iterator[AttemptRow]]:
    """Start running jobs (in this process, on a pool or on Dask); rows as they finish.

    On entry the workers exist (the pool's are started, the Dask client connected) and
    every job is submitted; the iterator yields each job's row as it finishes. A job
    whose worker died (a crashed pool process, a lost Dask worker) yields an
    ``infrastructure_error`` row saying so: no job is ever dropped. On exit whatever
    has not run is cancelled.
    """
    if not jobs:
        yield iter(())
    elif dask_address is not None:
        with _dask_rows(jobs, dask_address) as rows:
            yield rows
    elif parallel <= 1:
        yield (run_job(job) for job in jobs)
    else:
        with _pool(parallel) as pool:
            futures: dict[Future[AttemptRow], AttemptJob] = {}
            try:
                for job in jobs:
                    futures[pool.submit(run_job, job)] = job
                yield (_result(f, futures[f]) for f in as_completed(futures))
            finally:
                for f in futures:
                    f.cancel()


def execute(jobs: Sequence[AttemptJob], *, parallel: int = 1,
            dask_address: str | None = None) -> Iterator[AttemptRow]:
    """Run jobs and yield their rows as they finish (see :func:`executing`)."""
    with executing(jobs, parallel=parallel, dask_address=dask_address) as rows:
        yield from rows


@contextlib.contextmanager
def _dask_rows(jobs: Sequence[AttemptJob], address: str) -> Iterator[Iterator[AttemptRow]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError as e:  # pragma: no cover - a dependency of erpsim
        raise CampaignError(f"--dask needs the distributed package ({e})") from None
    try:
        client = Client(address, timeout=DASK_CONNECT_TIMEOUT)
    except Exception as e:
        raise CampaignError(f"--dask: cannot connect to the scheduler at {address} "
                            f"({type(e).__name__}: {e})") from None
    try:
        stamp = f"{os.getpid()}-{time.time_ns()}"
        futures = client.map(run_job, list(jobs), pure=False,
                             key=[f"erpsim-attempt-{j.label}-{j.scenario}-{j.system.name}-"
                                  f"{j.seed}-{j.repetition}-{stamp}" for j in jobs])
        by_key = {f.key: j for f, j in zip(futures, jobs, strict=True)}
        try:
            yield (_result(f, by_key[f.key]) for f in dask_completed(futures))
        finally:
            client.cancel(futures)
    finally:
        client.close()
