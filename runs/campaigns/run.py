"""Campaigns: a matrix of scenarios (or desk tasks) x seeds x systems x repetitions.

A campaign runs under a label into ``RESULTS/LABEL/``::

    campaign.json          the matrix and the environment it ran in (see environment())
    results.db             the results ledger (runs.campaigns.ledger): one row per attempt
    .sweep.lock            held (flock) by the sweep running the label
    attempts/<scenario>/<system>/seed-<s>/rep-<r>/    each attempt's folder

Never lose, never double-count:

- a label that exists is refused (:class:`LabelExists`); the folder is built under a
  temporary name and renamed into place, so a label exists whole or not at all;
- each attempt runs into a temporary folder (``.rep-R.partial-*``) renamed into place
  when it ends, and only then is its row written, in one SQLite transaction: a campaign
  killed at any moment leaves whole rows or none, and at worst a folder without a row;
- ``resume`` runs only the attempts without a row or whose row is an infrastructure
  error (a folder left without a row is cleared and run again), after checking that the
  matrix is the one in campaign.json (:class:`MatrixChanged`);
- an attempt whose harness raised is recorded with status ``infrastructure_error`` and
  the error's text, never dropped: it stays in every denominator as not accepted.
- when the environment fails under the campaign's own files (a full or read-only disk,
  the results ledger unwritable) the sweep stops with :class:`CampaignStopped` naming the
  cause: the rows written are whole, and ``resume`` completes it.

Execution: every attempt is an :class:`AttemptJob` (picklable) run by :func:`run_job`,
in this process (``parallel=1``), on a local process pool (``parallel=N``; its worker
processes live for the whole campaign, so imports are paid once per worker) or on a
Dask distributed cluster (``dask_address``): the same function, submitted as tasks.
Workers on other machines need the results folder on a shared filesystem, and their
books are best kept in PostgreSQL (``store_url``: one schema per attempt), since
SQLite's WAL does not work over a network filesystem.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runs.campaigns.executors import executing
from runs.campaigns.ledger import (
    AttemptKey,
    AttemptRow,
    ResultsLedger,
    canonical_json,
    utc_now,
)
from runs.campaigns.plan import (
    ATTEMPTS_DIR,
    CAMPAIGN_FILE,
    CAMPAIGN_FORMAT,
    LOCK_FILE,
    RESULTS_FILE,
    AttemptJob,
    Plan,
    attempt_relpath,
    matrix_identity,
)
from runs.campaigns.systems import System
from runs.errors import CampaignError, LabelExists, MatrixChanged, PreflightFailed
from runs.files import write_text_atomic

# --- the matrix ------------------------------------------------------------------------

def _versions() -> dict[str, str]:
    """Installed versions of erpsim's dependencies (and the Dask ones)."""
    from importlib.metadata import PackageNotFoundError, requires, version

    names = {"dask", "distributed"}
    for req in requires("erpsim") or []:
        if "extra ==" in req:
            continue
        m = re.match(r"[A-Za-z0-9_.-]+", req)
        if m:
            names.add(m.group(0))
    out: dict[str, str] = {}
    for n in sorted(names, key=str.lower):
        try:
            out[n] = version(n)
        except PackageNotFoundError:
            out[n] = "not installed"
    return out


def _git() -> dict[str, Any] | None:
    """The source checkout's commit and whether it has changes (None if not a checkout)."""
    import subprocess

    here = Path(__file__).resolve().parents[2]
    if not (here / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def _docker_images(systems: Iterable[System]) -> dict[str, str]:
    """The image id (digest) of each docker-mode system's image, or what went wrong."""
    images = sorted({s.image for s in systems if s.mode == "docker" and s.image})
    if not images:
        return {}
    out: dict[str, str] = {}
    try:
        import docker

        client = docker.from_env()
    except Exception as e:
        return {i: f"unknown (docker engine: {type(e).__name__}: {e})" for i in images}
    try:
        for i in images:
            try:
                out[i] = str(client.images.get(i).id)
            except Exception as e:
                out[i] = f"unknown ({type(e).__name__}: {e})"
    finally:
        client.close()
    return out


def environment(systems: Iterable[System]) -> dict[str, Any]:
    """What the campaign ran on: versions, platform, source commit, docker images."""
    from importlib.metadata import version

    return {"erpsim_version": version("erpsim"),
            "python": sys.version.split()[0],
            "python_implementation": platform.python_implementation(),
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
            "packages": _versions(),
            "git": _git(),
            "docker_images": _docker_images(systems)}


def redact_url(url: str | None) -> str | None:
    """A database URL without its password."""
    if url is None:
        return None
    try:
        import sqlalchemy as sa

        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Write a JSON file atomically."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def read_campaign(folder: Path) -> dict[str, Any]:
    """A campaign folder's campaign.json (``CampaignError`` if missing or unreadable)."""
    path = folder / CAMPAIGN_FILE
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise CampaignError(f"{folder} is not a campaign folder (no {CAMPAIGN_FILE})") from None
    except (OSError, ValueError) as e:
        raise CampaignError(f"{path}: unreadable ({e})") from None


# --- running a campaign ----------------------------------------------------------------


@dataclass
class CampaignRun:
    """What one ``run_campaign`` call did."""

    folder: Path
    plan: Plan
    pending: int
    """Attempts this call set out to run."""
    recorded: list[AttemptRow] = field(default_factory=list)
    """Rows this call wrote, in the order they finished."""
    wall_s: float = 0.0
    """Seconds from the first submitted attempt to the last row written."""

    def rows(self) -> list[AttemptRow]:
        """Every row of the campaign's ledger (this call's and earlier ones')."""
        with ResultsLedger.open(self.folder / RESULTS_FILE) as ledger:
            return ledger.rows()


def _describe_difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    parts = []
    for key in ("scenarios", "seeds", "systems", "repetitions"):
        if old.get(key) != new.get(key):
            parts.append(f"{key}: recorded {_short(old.get(key))}, now {_short(new.get(key))}")
    return "; ".join(parts)


def _short(value: Any) -> str:
    if isinstance(value, list) and value and isinstance(value[0], dict):
        value = [" ".join(f"{k}={str(v)[:12]}" for k, v in d.items()) for d in value]
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        value = _ranges(value)
    text = str(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _ranges(values: list[int]) -> str:
    out: list[str] = []
    start = prev = values[0]
    for v in [*values[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(out)


def _create_folder(folder: Path, plan: Plan, record: dict[str, Any]) -> None:
    """Make the campaign folder whole under a temporary name, then rename it into place."""
    if folder.exists() or folder.is_symlink():
        raise LabelExists(f"label {plan.label!r} exists already ({folder}); a label is never "
                          "overwritten: choose another --label, or --resume to complete it")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.creating-", dir=folder.parent))
    try:
        _write_json(tmp / CAMPAIGN_FILE, record)
        ResultsLedger.create(tmp / RESULTS_FILE, label=plan.label).close()
        (tmp / ATTEMPTS_DIR).mkdir()
        if folder.exists():  # created meanwhile by another sweep
            raise LabelExists(f"label {plan.label!r} exists already ({folder})")
        os.rename(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class CampaignLock:
    """An exclusive lock on a campaign folder, held while a sweep runs it.

    ``flock`` on ``.sweep.lock``: the operating system releases it when the process
    dies, even by SIGKILL, so a killed sweep never leaves its label locked; a second
    sweep of a label being run is refused instead of racing the first.
    """

    def __init__(self, folder: Path) -> None:
        import fcntl

        self.path = folder / LOCK_FILE
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._fd, 100, 0).decode(errors="replace").strip()
            os.close(self._fd)
            self._fd = None
            raise CampaignError(f"{folder} is being run by another sweep "
                                f"({holder or 'its lock is held'}); wait for it to end "
                                "or stop it, then --resume") from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"pid {os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        """Let another sweep run the label."""
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> CampaignLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def prepare_campaign(plan: Plan, folder: Path, *, resume: bool = False,
                     command: Sequence[str] | None = None, parallel: int = 1,
                     dask_address: str | None = None,
                     store_url: str | None = None) -> tuple[list[AttemptKey], CampaignLock]:
    """Create (or, with ``resume``, check) the campaign folder and lock it.

    Returns the keys still to run and the folder's lock (release it when done).
    Raises :class:`LabelExists` for an existing label without ``resume``,
    :class:`CampaignError` for ``resume`` of a folder that is not a campaign or that
    another sweep is running, and :class:`MatrixChanged` when ``resume`` is given
    another matrix.
    """
    run_record = {"started_at": utc_now(), "command": list(command or []),
                  "parallel": parallel, "dask": dask_address,
                  "store_url": redact_url(store_url)}
    if not folder.exists():
        if resume:
            raise CampaignError(f"--resume: no campaign {plan.label!r} at {folder}")
        env = environment(plan.systems)
        record: dict[str, Any] = {"format": CAMPAIGN_FORMAT, "label": plan.label,
                                  "created_at": utc_now(), "matrix": plan.matrix(),
                                  "environment": env, "command": list(command or []),
                                  "runs": [run_record]}
        if plan.preregistration is not None:
            record["preregistration"] = plan.preregistration
        _create_folder(folder, plan, record)
        return plan.attempt_keys(), CampaignLock(folder)
    if not resume:
        raise LabelExists(f"label {plan.label!r} exists already ({folder}); a label is never "
                          "overwritten: choose another --label, or --resume to complete it")
    record = read_campaign(folder)
    old, new = matrix_identity(record["matrix"]), matrix_identity(plan.matrix())
    if old != new:
        raise MatrixChanged(f"--resume: the matrix differs from {folder / CAMPAIGN_FILE} "
                             f"({_describe_difference(old, new)}); resume with the same "
                             "scenarios, seeds, systems and --runs, or use a new --label")
    lock = CampaignLock(folder)
    try:
        with ResultsLedger.open(folder / RESULTS_FILE) as ledger:
            statuses = ledger.statuses()
        pending = [key for key in plan.attempt_keys()
                   if statuses.get(key) in (None, "infrastructure_error")]
        record.setdefault("runs", []).append({**run_record, "resume": True,
                                              "pending": len(pending),
                                              "environment": environment(plan.systems)})
        _write_json(folder / CAMPAIGN_FILE, record)
    except BaseException:
        lock.release()
        raise
    return pending, lock


MAX_ATTEMPTS = 100_000
"""The most attempts one label's matrix may hold (scenarios x seeds x systems x runs):
every attempt is a job, a results row and a folder, made before the first one runs."""

DASK_CHECK_TIMEOUT_S = 5.0
"""How long the start-up check waits for the Dask scheduler to answer."""


def check_matrix_size(plan: Plan) -> None:
    """:class:`CampaignError` when the plan's matrix holds more than :data:`MAX_ATTEMPTS`
    attempts, naming each factor (checked before anything is made)."""
    if plan.size <= MAX_ATTEMPTS:
        return
    if all(tuple(t.seeds) == tuple(plan.seeds) for t in plan.targets):
        units = f"{len(plan.targets):,} scenario(s) x {len(plan.seeds):,} seed(s)"
    else:
        units = f"{sum(len(t.seeds) for t in plan.targets):,} (scenario, seed) unit(s)"
    raise CampaignError(f"the matrix is {units} x {len(plan.systems):,} system(s) x "
                        f"{plan.repetitions:,} run(s) = {plan.size:,} attempts; expected at "
                        f"most {MAX_ATTEMPTS:,} in one label: split the campaign into labels "
                        "(fewer scenarios, --seeds, --systems or --runs each)")


def dask_problem(address: str, timeout_s: float = DASK_CHECK_TIMEOUT_S) -> str | None:
    """Why no Dask scheduler can be used at ``address`` (``--dask``), or None.

    A ``tcp://`` or ``tls://`` address is first tried as a plain TCP connection (a refused
    port fails at once), then a client connects to the scheduler and leaves.
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port or 8786
    except ValueError as e:
        return f"--dask {address}: not a scheduler address ({e}; expected tcp://host:port)"
    if parts.scheme in ("tcp", "tls"):
        if not host:
            return f"--dask {address}: no host (expected tcp://host:port)"
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
        except OSError as e:
            return (f"--dask {address}: no scheduler answers at {host}:{port} "
                    f"({e.strerror or type(e).__name__})")
    # The client's own timeout covers connecting, not a peer that accepts and then never
    # answers the handshake (the client would wait forever): the probe runs in a daemon
    # thread under a deadline of its own, and is left behind if the deadline passes.
    outcome: list[str | None] = []

    def probe() -> None:
        try:
            from distributed import Client

            client = Client(address, timeout=f"{timeout_s}s", set_as_default=False)
        except Exception as e:
            cause = " ".join(str(e).split())[:300]
            outcome.append(f"--dask {address}: not a Dask scheduler "
                           f"({type(e).__name__}: {cause})")
            return
        client.close()
        outcome.append(None)

    import threading

    thread = threading.Thread(target=probe, name="dask-probe", daemon=True)
    thread.start()
    deadline_s = 2 * timeout_s + 5
    thread.join(deadline_s)
    if not outcome:
        return (f"--dask {address}: not a Dask scheduler (no Dask handshake within "
                f"{deadline_s:g} s)")
    return outcome[0]


def jobs_for(plan: Plan, folder: Path, keys: Iterable[AttemptKey], *,
             store_url: str | None = None) -> list[AttemptJob]:
    """The jobs of these keys (in the plan's order)."""
    targets = {t.name: t for t in plan.targets}
    systems = {s.name: s for s in plan.systems}
    root = folder.absolute()
    out = []
    for key in keys:
        scenario, seed, system, rep = key
        t = targets[scenario]
        out.append(AttemptJob(label=plan.label, scenario=scenario, kind=t.kind,
                              source=t.source, sha256=t.sha256, seed=seed,
                              system=systems[system], repetition=rep,
                              attempt_dir=str(root / attempt_relpath(key)),
                              campaign_dir=str(root), store_url=store_url,
                              preregistration=plan.preregistration, tier=t.tier))
    return out


class CampaignStopped(CampaignError):
    """The environment failed under the campaign itself (its folder's disk full or
    read-only, the results ledger unwritable: :func:`runs.grading.environment_fault`):
    it stopped. The rows written are whole; an attempt whose row could not be written
    has none, and ``--resume`` runs it again once the cause is fixed."""


def _stopped(error: Exception, folder: Path, plan: Plan, recorded: int,
             fresh: bool) -> CampaignStopped | None:
    """The :class:`CampaignStopped` of an error that is a fault of the environment."""
    from runs.grading import environment_fault

    cause = environment_fault(error)
    if cause is None:
        return None
    if fresh and not folder.exists():
        return CampaignStopped(f"label {plan.label!r}: the campaign could not be created at "
                               f"{folder}: the environment failed: {cause}; nothing was "
                               "created")
    return CampaignStopped(f"label {plan.label!r}: the campaign stopped: the environment "
                           f"failed under {folder}: {cause}; {recorded} row(s) were recorded "
                           "in this run, each whole; fix the cause, then run the same "
                           "command with --resume")


def run_campaign(plan: Plan, folder: Path, *, parallel: int = 1,
                 dask_address: str | None = None, store_url: str | None = None,
                 resume: bool = False, command: Sequence[str] | None = None,
                 on_start: Callable[[int, int], None] | None = None,
                 on_row: Callable[[AttemptRow], None] | None = None,
                 check_first: bool = True) -> CampaignRun:
    """Run a campaign's matrix (or, with ``resume``, what is missing) into ``folder``.

    ``on_start(pending, total)`` is called once the workers are ready; ``on_row(row)``
    after each row is written. Rows are written here, in this process, one transaction
    each, as attempts finish. With ``check_first`` the preflight
    (:func:`runs.campaigns.preflight.preflight`: the store, the docker engine and images,
    the adapters, the model endpoints) runs before anything is created and raises
    :class:`~runs.errors.PreflightFailed` listing every problem.

    Always checked first, nothing created when they fail: the matrix's size
    (:func:`check_matrix_size`) and, with ``dask_address``, that a Dask scheduler answers
    there (:func:`dask_problem`, a :class:`PreflightFailed` problem). A new label whose
    executors then fail to start is removed again: a sweep that never ran an attempt
    leaves no label behind. When the environment fails under the campaign's own files (a
    full or read-only disk, an unwritable results ledger) it stops with
    :class:`CampaignStopped`, naming the cause: never a traceback, never a half row.
    """
    if parallel < 1:
        raise CampaignError(f"--parallel must be at least 1 (got {parallel})")
    if store_url is not None and not store_url.startswith(("postgresql", "postgres:")):
        raise CampaignError(f"--store-url {redact_url(store_url)}: expected a PostgreSQL URL "
                            "(postgresql://user@host:port/db)")
    check_matrix_size(plan)
    problems: list[str] = []
    if check_first:
        from runs.campaigns.preflight import preflight

        try:
            preflight(plan, store_url=store_url)
        except PreflightFailed as e:
            problems += e.problems
    if dask_address is not None:
        problem = dask_problem(dask_address)
        problems += [problem] if problem else []
    if problems:
        raise PreflightFailed(problems)
    fresh = not (folder.exists() or folder.is_symlink())
    try:
        pending, lock = prepare_campaign(plan, folder, resume=resume, command=command,
                                         parallel=parallel, dask_address=dask_address,
                                         store_url=store_url)
    except Exception as e:
        stop = None if isinstance(e, CampaignError) else _stopped(e, folder, plan, 0, fresh)
        if stop is None:
            raise
        raise stop from e
    run = CampaignRun(folder=folder, plan=plan, pending=len(pending))
    jobs = jobs_for(plan, folder, pending, store_url=store_url)
    started = time.perf_counter()
    with lock, contextlib.ExitStack() as stack:
        try:
            rows = stack.enter_context(executing(jobs, parallel=parallel,
                                                 dask_address=dask_address))
        except BaseException:
            if fresh:  # no attempt ran: the label is not claimed
                shutil.rmtree(folder, ignore_errors=True)
            raise
        if on_start is not None:
            on_start(len(pending), plan.size)
        try:
            with ResultsLedger.open(folder / RESULTS_FILE) as ledger:
                for row in rows:
                    ledger.write(row)
                    run.recorded.append(row)
                    if on_row is not None:
                        on_row(row)
            record_cli_versions(folder, run.recorded)
        except Exception as e:
            stop = _stopped(e, folder, plan, len(run.recorded), False)
            if stop is None:
                raise
            raise stop from e
    run.wall_s = time.perf_counter() - started
    return run


def record_cli_versions(folder: Path, rows: Iterable[AttemptRow]) -> dict[str, list[str]]:
    """Add the agent CLI versions the attempts' turns recorded (``cli_version`` in each
    turn of summary.json, from the adapters' usage.json) to campaign.json's
    ``cli_versions`` (system -> sorted versions, merged over runs); returns them."""
    found: dict[str, set[str]] = {}
    for row in rows:
        try:
            summary = json.loads((folder / row.attempt_dir / "summary.json")
                                 .read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # an attempt that stopped has no summary
        for turn in summary.get("turns", []):
            version = turn.get("cli_version")
            if isinstance(version, str) and version:
                found.setdefault(row.system, set()).add(version)
    if not found:
        return {}
    record = read_campaign(folder)
    versions: dict[str, list[str]] = dict(record.get("cli_versions") or {})
    for system, seen in found.items():
        versions[system] = sorted(set(versions.get(system, [])) | seen)
    record["cli_versions"] = dict(sorted(versions.items()))
    _write_json(folder / CAMPAIGN_FILE, record)
    return versions


# --- summaries -------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemTally:
    """Per system, for the end-of-campaign table (the full metrics are runs.campaigns.metrics')."""

    system: str
    attempts: int
    accepted: int
    timeouts: int
    crashed: int
    infrastructure_errors: int
    grader_errors: int

    @property
    def pass_at_1(self) -> float:
        """Accepted attempts / all attempts (errored ones included)."""
        return self.accepted / self.attempts if self.attempts else 0.0


def tally(rows: Iterable[AttemptRow], systems: Sequence[str] | None = None
          ) -> list[SystemTally]:
    """Count attempts, acceptances and failures per system (in ``systems`` order)."""
    by: dict[str, list[AttemptRow]] = {}
    for r in rows:
        by.setdefault(r.system, []).append(r)
    order = list(systems) if systems is not None else sorted(by)
    return [SystemTally(system=s, attempts=len(by.get(s, [])),
                        accepted=sum(r.accepted for r in by.get(s, [])),
                        timeouts=sum(r.status == "timeout" for r in by.get(s, [])),
                        crashed=sum(r.status == "crashed" for r in by.get(s, [])),
                        infrastructure_errors=sum(r.status == "infrastructure_error"
                                                  for r in by.get(s, [])),
                        grader_errors=sum(r.verdict_status == "grader_error"
                                          for r in by.get(s, [])))
            for s in order]


def comparable(row: AttemptRow) -> dict[str, Any]:
    """A row without what legitimately differs between two runs of the same attempt
    (timestamps, durations, the folder): equal for equal work, whatever ran it."""
    d = row.to_json()
    for k in ("started_at", "finished_at", "duration_s", "turn_durations", "attempt_dir"):
        d.pop(k)
    return json.loads(canonical_json(d))
