"""Campaigns: a matrix of scenarios (or desk tasks) x seeds x systems x repetitions.

A campaign runs under a label into ``RESULTS/LABEL/``::

    campaign.json          the matrix and the environment it ran in (see environment())
    results.db             the results ledger (runs.results): one row per attempt
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
  matrix is the one in campaign.json (:class:`MatrixMismatch`);
- an attempt whose harness raised is recorded with status ``infrastructure_error`` and
  the error's text, never dropped: it stays in every denominator as not accepted.

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
import gc
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runs.results import (
    AttemptKey,
    AttemptRow,
    ResultsLedger,
    canonical_json,
    utc_now,
)
from runs.systems import System

CAMPAIGN_FILE = "campaign.json"
RESULTS_FILE = "results.db"
ATTEMPTS_DIR = "attempts"
LOCK_FILE = ".sweep.lock"
CAMPAIGN_FORMAT = "erpsim-campaign/1"
LABEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"
DASK_CONNECT_TIMEOUT = "30s"
"""How long ``--dask`` waits for the scheduler to answer."""


class CampaignError(RuntimeError):
    """A campaign that cannot be planned or run as asked; the message says why."""


class LabelExists(CampaignError):
    """The label's results folder exists (labels are never overwritten)."""


class MatrixMismatch(CampaignError):
    """``resume`` with a matrix other than the one recorded in campaign.json."""


# --- the matrix ------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A scenario or desk task of the matrix."""

    name: str
    """The scenario id (or the desk task's), used in rows and folder names."""
    kind: str
    """``scenario`` or ``desk``."""
    source: str
    """What loads it: a scenario YAML path (absolute), or a desk task name or path."""
    sha256: str
    """The loaded scenario's sha256 (YAML, prompt, files): what the attempts ran."""
    seeds: tuple[int, ...]
    """The seeds it runs with: the campaign's for a scenario; a desk task's own seed
    (its supplied files were generated with it, and its books are drawn with it)."""


@dataclass(frozen=True)
class Plan:
    """A campaign's matrix."""

    label: str
    targets: tuple[Target, ...]
    seeds: tuple[int, ...]
    """The campaign's seeds (those of its scenarios; see :attr:`Target.seeds`)."""
    systems: tuple[System, ...]
    repetitions: int

    @property
    def size(self) -> int:
        """The number of attempts in the matrix."""
        return sum(len(t.seeds) for t in self.targets) * len(self.systems) * self.repetitions

    def attempt_keys(self) -> list[AttemptKey]:
        """Every attempt's key, in run order (scenario, seed, system, repetition)."""
        return [(t.name, s, sy.name, r) for t in self.targets for s in t.seeds
                for sy in self.systems for r in range(1, self.repetitions + 1)]

    def matrix(self) -> dict[str, Any]:
        """The matrix as campaign.json records it."""
        return {"scenarios": [{"name": t.name, "kind": t.kind, "source": t.source,
                               "sha256": t.sha256, "seeds": list(t.seeds)}
                              for t in self.targets],
                "seeds": list(self.seeds),
                "systems": [s.record() for s in self.systems],
                "repetitions": self.repetitions,
                "attempts": self.size}


def matrix_identity(matrix: dict[str, Any]) -> dict[str, Any]:
    """What must be equal for two matrices to be the same campaign (not where files were)."""
    return {"scenarios": [{k: t.get(k) for k in ("name", "kind", "sha256", "seeds")}
                          for t in matrix["scenarios"]],
            "seeds": list(matrix["seeds"]),
            "systems": [{k: s[k] for k in ("name", "sha256")} for s in matrix["systems"]],
            "repetitions": matrix["repetitions"]}


def _desk_tasks() -> Any:
    try:
        import desk.tasks as tasks
    except ImportError as e:
        raise CampaignError(f"--desk: desk tasks are not available in this installation "
                            f"(desk.tasks cannot be imported: {e})") from None
    return tasks


def plan_campaign(label: str, *, scenarios: Sequence[str] = (),
                  desk: Sequence[str] | None = None, seeds: Sequence[int],
                  systems: Sequence[System], repetitions: int = 1) -> Plan:
    """Load the scenarios and desk tasks and build the matrix (``CampaignError``).

    ``desk`` is a list of task names or paths (``["all"]`` for every task of
    ``desk.tasks.list_tasks()``). Scenario errors surface as
    ``scenarios.errors.ScenarioError``.
    """
    from scenarios.loader import find_scenario, load_scenario

    if not re.fullmatch(LABEL_PATTERN, label):
        raise CampaignError(f"label {label!r}: expected letters, digits, '.', '_' or '-' "
                            "(it names a folder), starting with a letter or digit")
    if repetitions < 1:
        raise CampaignError(f"--runs must be at least 1 (got {repetitions})")
    scenario_seeds = tuple(sorted(set(seeds)))
    if scenarios and not scenario_seeds:
        raise CampaignError("no seed given")
    if not systems:
        raise CampaignError("no system given")
    targets: list[Target] = []
    for s in scenarios:
        loaded = load_scenario(find_scenario(s))
        targets.append(Target(loaded.scenario.id, "scenario", str(loaded.path),
                              loaded.sha256, scenario_seeds))
    if desk:
        tasks = _desk_tasks()
        names = list(tasks.list_tasks()) if list(desk) == ["all"] else list(desk)
        if not names:
            raise CampaignError("--desk all: there are no desk tasks")
        for n in names:
            task = tasks.load_task(n)
            source = str(Path(n).absolute()) if ("/" in n or os.sep in n) else n
            targets.append(Target(task.loaded.scenario.id, "desk", source,
                                  task.loaded.sha256, (int(task.seed),)))
        if any(s.name == "oracle" for s in systems):
            raise CampaignError("system oracle: desk tasks have no oracle (their "
                                "reference is the task's solution: use reference)")
    if not targets:
        raise CampaignError("nothing to run: name scenarios, or desk tasks with --desk")
    seen: dict[str, Target] = {}
    for t in targets:
        if t.name in seen:
            raise CampaignError(f"scenario {t.name!r} is in the matrix twice "
                                f"({seen[t.name].source} and {t.source})")
        seen[t.name] = t
    if not scenarios:  # desk tasks only: their own seeds
        scenario_seeds = tuple(sorted({s for t in targets for s in t.seeds}))
    return Plan(label=label, targets=tuple(targets), seeds=scenario_seeds,
                systems=tuple(systems), repetitions=repetitions)


# --- one attempt as a job --------------------------------------------------------------


@dataclass(frozen=True)
class AttemptJob:
    """Everything a worker needs to run one attempt (picklable; paths absolute)."""

    label: str
    scenario: str
    kind: str
    source: str
    sha256: str
    seed: int
    system: System
    repetition: int
    attempt_dir: str
    """The attempt's final folder (absolute)."""
    campaign_dir: str
    """The campaign folder (absolute): the row records ``attempt_dir`` relative to it."""
    store_url: str | None = None
    """A PostgreSQL URL: the books go to a schema of their own (see :func:`attempt_schema`)."""

    @property
    def key(self) -> AttemptKey:
        """``(scenario, seed, system, repetition)``."""
        return (self.scenario, self.seed, self.system.name, self.repetition)


def attempt_relpath(key: AttemptKey) -> str:
    """``attempts/<scenario>/<system>/seed-<s>/rep-<r>`` (POSIX)."""
    scenario, seed, system, rep = key
    return f"{ATTEMPTS_DIR}/{scenario}/{system}/seed-{seed}/rep-{rep}"


def attempt_schema(label: str, key: AttemptKey) -> str:
    """The PostgreSQL schema of an attempt's books: ``c_`` + 24 hex digits of sha256.

    Derived from the label and the key, so that a rerun finds (and clears) it; short
    enough for PostgreSQL's 63-character identifiers.
    """
    scenario, seed, system, rep = key
    text = f"{label}\x00{scenario}\x00{seed}\x00{system}\x00{rep}"
    return "c_" + hashlib.sha256(text.encode()).hexdigest()[:24]


_LOADED: dict[tuple[str, str], tuple[Any, Path | None]] = {}
_PREPARED = False


def _prepare_process() -> None:
    """Once per worker process: tune the collector and import what every attempt needs.

    The imports happen once per process (a pool's workers live for the campaign), and
    ``gc.freeze()`` moves everything imported out of the collector's sight, so that its
    passes traverse only an attempt's own objects.
    """
    global _PREPARED
    if _PREPARED:
        return
    import runs.attempt
    import runs.external  # noqa: F401  (external agents: the ERP API's modules)
    from checks.registry import load_builtin
    from runs.agents import load_solvers

    gc.set_threshold(100_000, 50, 100)  # as the erpsim CLI does (runs.cli.tune_gc)
    load_builtin()
    load_solvers()
    gc.collect()
    gc.freeze()
    _PREPARED = True


def _load(job: AttemptJob) -> tuple[Any, Path | None]:
    """The job's loaded scenario (and a desk task's solution), cached per process."""
    cache_key = (job.kind, job.source)
    if cache_key not in _LOADED:
        if job.kind == "desk":
            task = _desk_tasks().load_task(job.source)
            _LOADED[cache_key] = (task.loaded, Path(task.solution))
        else:
            from scenarios.loader import load_scenario

            _LOADED[cache_key] = (load_scenario(job.source), None)
    loaded, solution = _LOADED[cache_key]
    if loaded.sha256 != job.sha256:
        raise CampaignError(f"scenario {job.scenario} ({job.source}) changed since the "
                            f"campaign was planned (sha256 {loaded.sha256[:12]}, expected "
                            f"{job.sha256[:12]})")
    return loaded, solution


def _agent_for(job: AttemptJob, loaded: Any, solution: Path | None) -> tuple[Any, str]:
    """``(agent, agent_name)`` for run_attempt: None for a built-in, else an adapter."""
    from runs.execution import DockerOptions
    from runs.external import ExternalAgent

    sy = job.system
    timeout = sy.timeout_s or loaded.scenario.turns.timeout_s
    if sy.builtin:
        if job.kind == "desk" and sy.name == "reference":
            if solution is None:
                raise CampaignError(f"desk task {job.scenario} has no solution")
            return ExternalAgent(solution, mode="local", timeout_s=timeout,
                                 name="reference"), "reference"
        return None, sy.name
    if sy.adapter is None:  # pragma: no cover - resolve_systems always sets it
        raise CampaignError(f"system {sy.name} has no adapter")
    docker = DockerOptions(image=sy.image or DockerOptions().image, cpus=sy.cpus,
                           memory=sy.memory, network=sy.network,
                           network_mode=sy.network_mode)
    return ExternalAgent(sy.adapter, mode=sy.mode, timeout_s=timeout, docker=docker,
                         env=dict(sy.env), name=sy.name), sy.name


def _remove(path: Path) -> None:
    """Remove a folder, a file or a link, if there is one."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _clear_attempt_dir(final: Path) -> None:
    """Remove an attempt's folder and any partial folders a killed run left."""
    _remove(final)
    for partial in final.parent.glob(f".{final.name}.partial-*"):
        shutil.rmtree(partial, ignore_errors=True)


def _drop_schema(store_url: str, schema: str) -> None:
    """Drop an attempt's schema left by an earlier, unfinished run (if any)."""
    from erp.errors import StoreError
    from erp.store import EventStore

    try:
        store = EventStore.open(store_url, schema=schema)
    except StoreError:
        return  # no such schema (or not a store): nothing to clear
    try:
        store.drop()
    finally:
        store.close()


def run_job(job: AttemptJob) -> AttemptRow:
    """Run one attempt into its folder and return its row; never raises for its faults.

    The attempt runs into ``.rep-R.partial-*`` beside its final folder, which is
    renamed into place at the end (an existing final folder, from a run that ended
    without a row, is removed first). Any exception is recorded as an
    ``infrastructure_error`` row with its text; the traceback goes to ``error.txt`` in
    the attempt folder.
    """
    _prepare_process()
    from runs.attempt import run_attempt
    from runs.grading import VERDICT_FILE

    started_at = utc_now()
    t0 = time.perf_counter()
    final = Path(job.attempt_dir)
    tmp: Path | None = None
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        _clear_attempt_dir(final)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
        tmp.chmod(0o755)  # as erpsim run makes it (mkdtemp makes it private)
        loaded, solution = _load(job)
        agent, agent_name = _agent_for(job, loaded, solution)
        schema = None
        if job.store_url is not None:
            schema = attempt_schema(job.label, job.key)
            _drop_schema(job.store_url, schema)
        result = run_attempt(loaded, job.seed, agent_name, tmp, agent=agent,
                             store_url=job.store_url, schema=schema)
        verdict = json.loads((tmp / VERDICT_FILE).read_text(encoding="utf-8"))
        os.rename(tmp, final)
        tmp = None
        return attempt_row(job, result.summary, verdict, started_at=started_at,
                           duration_s=time.perf_counter() - t0)
    except Exception as e:
        text = f"{type(e).__name__}: {e}"
        tb = traceback.format_exc()
        with contextlib.suppress(OSError):
            where = tmp if tmp is not None and tmp.is_dir() else final
            where.mkdir(parents=True, exist_ok=True)
            (where / "error.txt").write_text(tb, encoding="utf-8")
            if where != final:
                _remove(final)
                os.rename(where, final)
        return error_row(job, text, started_at=started_at,
                         duration_s=time.perf_counter() - t0)
    finally:
        gc.collect(0)


def _sum_usage(turns: list[dict[str, Any]], key: str) -> float | None:
    """A usage figure summed over turns; None when any turn's is unknown."""
    total: float = 0
    for t in turns:
        usage = (t.get("process") or {}).get("usage")
        value = usage.get(key) if isinstance(usage, dict) else None
        if value is None:
            return None
        total += value
    return total if turns else None


def execution_status(turns: list[dict[str, Any]]) -> tuple[str, str | None]:
    """``(status, error)`` of an attempt from its turns' records (see AttemptRow.status)."""
    statuses = [t.get("status") for t in turns]
    if "error" in statuses:
        errors = [f"turn {t['turn']}: {(t.get('process') or {}).get('infrastructure_error')}"
                  for t in turns if t.get("status") == "error"]
        return "infrastructure_error", "; ".join(errors)
    if "timeout" in statuses:
        return "timeout", None
    if "crashed" in statuses:
        return "crashed", None
    return "completed", None


def _rel(job: AttemptJob) -> str:
    return Path(job.attempt_dir).relative_to(job.campaign_dir).as_posix()


def attempt_row(job: AttemptJob, summary: dict[str, Any], verdict: dict[str, Any], *,
                started_at: str, duration_s: float) -> AttemptRow:
    """The row of a finished attempt, from its summary and its verdict.json."""
    turns: list[dict[str, Any]] = list(summary.get("turns", []))
    status, error = execution_status(turns)
    grader = [f"{g['check']}: {g['error']}" for g in verdict.get("grader_errors", [])]
    total = verdict.get("required_total")
    passed = verdict.get("required_passed")
    tokens_in = _sum_usage(turns, "input_tokens")
    tokens_out = _sum_usage(turns, "output_tokens")
    cost = _sum_usage(turns, "cost_usd")
    return AttemptRow(
        label=job.label, scenario=job.scenario, kind=job.kind, seed=job.seed,
        system=job.system.name, repetition=job.repetition, status=status,
        exit_codes=tuple((t.get("process") or {}).get("exit_code") for t in turns),
        grader_error="; ".join(grader) or None,
        verdict_status=verdict["status"], accepted=bool(verdict["accepted"]),
        checks=tuple({"name": r["name"], "passed": r["passed"], "required": r["required"],
                      "detail": r["detail"], "metrics": r["metrics"]}
                     for r in verdict.get("results", [])),
        required_passed=passed, required_total=total,
        check_fraction=(round(passed / total, 6) if total else 1.0),
        turn_durations=tuple(float(t.get("duration_s", 0.0)) for t in turns),
        duration_s=round(duration_s, 3),
        input_tokens=None if tokens_in is None else int(tokens_in),
        output_tokens=None if tokens_out is None else int(tokens_out),
        cost_usd=None if cost is None else round(float(cost), 6),
        outputs=dict(verdict.get("outputs", {})),
        final_hash=summary.get("final_hash"), scorer=verdict.get("scorer"),
        attempt_dir=_rel(job), started_at=started_at, finished_at=utc_now(), error=error)


def error_row(job: AttemptJob, error: str, *, started_at: str,
              duration_s: float = 0.0) -> AttemptRow:
    """The row of an attempt the harness could not run or finish."""
    return AttemptRow(
        label=job.label, scenario=job.scenario, kind=job.kind, seed=job.seed,
        system=job.system.name, repetition=job.repetition, status="infrastructure_error",
        exit_codes=(), grader_error=None, verdict_status=None, accepted=False, checks=(),
        required_passed=None, required_total=None, check_fraction=None,
        turn_durations=(), duration_s=round(duration_s, 3), input_tokens=None,
        output_tokens=None, cost_usd=None, outputs={}, final_hash=None, scorer=None,
        attempt_dir=_rel(job), started_at=started_at, finished_at=utc_now(), error=error)


# --- the environment record ------------------------------------------------------------


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

    here = Path(__file__).resolve().parent.parent
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
    """Write a JSON file atomically (temporary file, fsync, rename)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=2) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(name, 0o644)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


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
    another sweep is running, and :class:`MatrixMismatch` when ``resume`` is given
    another matrix.
    """
    run_record = {"started_at": utc_now(), "command": list(command or []),
                  "parallel": parallel, "dask": dask_address,
                  "store_url": redact_url(store_url)}
    if not folder.exists():
        if resume:
            raise CampaignError(f"--resume: no campaign {plan.label!r} at {folder}")
        env = environment(plan.systems)
        record = {"format": CAMPAIGN_FORMAT, "label": plan.label, "created_at": utc_now(),
                  "matrix": plan.matrix(), "environment": env,
                  "command": list(command or []), "runs": [run_record]}
        _create_folder(folder, plan, record)
        return plan.attempt_keys(), CampaignLock(folder)
    if not resume:
        raise LabelExists(f"label {plan.label!r} exists already ({folder}); a label is never "
                          "overwritten: choose another --label, or --resume to complete it")
    record = read_campaign(folder)
    old, new = matrix_identity(record["matrix"]), matrix_identity(plan.matrix())
    if old != new:
        raise MatrixMismatch(f"--resume: the matrix differs from {folder / CAMPAIGN_FILE} "
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
                              campaign_dir=str(root), store_url=store_url))
    return out


def _init_pool_worker() -> None:
    """A pool worker: die with the campaign (Linux), then prepare once."""
    with contextlib.suppress(Exception):
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no orphan goes on writing
    _prepare_process()


def _pool(parallel: int) -> ProcessPoolExecutor:
    """A process pool whose workers start with erpsim imported and the collector tuned.

    With a single thread here, workers are forked from this process after it prepared
    itself (imports paid once, no copy per worker). With threads running (a progress
    display, a server), forking could copy a lock some thread holds: workers then start
    from a forkserver that imported erpsim once.
    """
    import multiprocessing as mp
    import threading

    if threading.active_count() == 1:
        _prepare_process()
        ctx = mp.get_context("fork")
    else:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["runs.campaign", "runs.attempt", "runs.external"])
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


def run_campaign(plan: Plan, folder: Path, *, parallel: int = 1,
                 dask_address: str | None = None, store_url: str | None = None,
                 resume: bool = False, command: Sequence[str] | None = None,
                 on_start: Callable[[int, int], None] | None = None,
                 on_row: Callable[[AttemptRow], None] | None = None) -> CampaignRun:
    """Run a campaign's matrix (or, with ``resume``, what is missing) into ``folder``.

    ``on_start(pending, total)`` is called once the workers are ready; ``on_row(row)``
    after each row is written. Rows are written here, in this process, one transaction
    each, as attempts finish.
    """
    if parallel < 1:
        raise CampaignError(f"--parallel must be at least 1 (got {parallel})")
    if store_url is not None and not store_url.startswith(("postgresql", "postgres:")):
        raise CampaignError(f"--store-url {redact_url(store_url)}: expected a PostgreSQL URL "
                            "(postgresql://user@host:port/db)")
    pending, lock = prepare_campaign(plan, folder, resume=resume, command=command,
                                     parallel=parallel, dask_address=dask_address,
                                     store_url=store_url)
    run = CampaignRun(folder=folder, plan=plan, pending=len(pending))
    jobs = jobs_for(plan, folder, pending, store_url=store_url)
    started = time.perf_counter()
    with lock, executing(jobs, parallel=parallel, dask_address=dask_address) as rows:
        if on_start is not None:
            on_start(len(pending), plan.size)
        with ResultsLedger.open(folder / RESULTS_FILE) as ledger:
            for row in rows:
                ledger.write(row)
                run.recorded.append(row)
                if on_row is not None:
                    on_row(row)
    run.wall_s = time.perf_counter() - started
    return run


# --- summaries -------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemTally:
    """Per system, for the end-of-campaign table (the full metrics are runs.metrics')."""

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
