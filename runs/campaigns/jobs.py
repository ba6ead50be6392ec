"""One attempt of a campaign: :func:`run_job` runs an :class:`~runs.campaigns.plan.AttemptJob`
into its folder and returns its results-ledger row; it never raises for the attempt's fault
(a harness fault is a row with status ``infrastructure_error``)."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from runs.campaigns.ledger import (
    AttemptRow,
    utc_now,
)
from runs.campaigns.plan import AttemptJob, attempt_schema, desk_tasks
from runs.errors import CampaignError
from runs.execution.turn import stop_left_running
from runs.files import write_text_atomic

_LOADED: dict[tuple[str, str, str | None], tuple[Any, Path | None]] = {}
_PREPARED = False

# --- the matrix ------------------------------------------------------------------------



def prepare_process() -> None:
    """Once per worker process: tune the collector and import what every attempt needs.

    The imports happen once per process (a pool's workers live for the campaign), and
    ``gc.freeze()`` moves everything imported out of the collector's sight, so that its
    passes traverse only an attempt's own objects.
    """
    global _PREPARED
    if _PREPARED:
        return
    import runs.attempt
    import runs.execution.external  # noqa: F401  (external agents: the ERP API's modules)
    from checks.registry import load_builtin
    from scenarios.agents import load_library_solvers

    gc.set_threshold(100_000, 50, 100)  # as the erpsim CLI does (runs.cli.tune_gc)
    load_builtin()
    load_library_solvers()
    gc.collect()
    gc.freeze()
    _PREPARED = True


def _load(job: AttemptJob) -> tuple[Any, Path | None]:
    """The job's loaded scenario (and a desk task's solution), cached per process."""
    cache_key = (job.kind, job.source, job.tier)
    if cache_key not in _LOADED:
        if job.kind == "desk":
            task = desk_tasks().load_task(job.source)
            _LOADED[cache_key] = (task.loaded, Path(task.solution))
        else:
            from scenarios.loader import load_scenario

            _LOADED[cache_key] = (load_scenario(job.source, tier=job.tier), None)
    loaded, solution = _LOADED[cache_key]
    if loaded.sha256 != job.sha256:
        raise CampaignError(f"scenario {job.scenario} ({job.source}) changed since the "
                            f"campaign was planned (sha256 {loaded.sha256[:12]}, expected "
                            f"{job.sha256[:12]})")
    return loaded, solution


def _agent_for(job: AttemptJob, loaded: Any, solution: Path | None) -> tuple[Any, str]:
    """``(agent, agent_name)`` for run_attempt: None for a built-in, else an adapter."""
    from runs.execution.contract import DockerOptions
    from runs.execution.external import ExternalAgent

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
                         env=dict(sy.env), name=sy.name,
                         home_template=sy.home_template), sy.name


def _remove(path: Path) -> None:
    """Remove a folder, a file or a link, if there is one."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _clear_attempt_dir(final: Path) -> None:
    """Remove an attempt's folder and any partial folders a killed run left, after killing
    what the killed run's agent left running (:func:`stop_left_running`)."""
    partials = list(final.parent.glob(f".{final.name}.partial-*"))
    for folder in (final, *partials):
        if folder.is_dir() and not folder.is_symlink():
            stop_left_running(folder)
    _remove(final)
    for partial in partials:
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
    prepare_process()
    from runs.attempt import run_attempt
    from runs.grading import VERDICT_FILE, describe_failure

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
            schema = attempt_schema(job.campaign_dir, job.label, job.key)
            _drop_schema(job.store_url, schema)
        result = run_attempt(loaded, job.seed, agent_name, tmp, agent=agent,
                             store_url=job.store_url, schema=schema)
        verdict = json.loads((tmp / VERDICT_FILE).read_text(encoding="utf-8"))
        if job.preregistration is not None:
            verdict["preregistration"] = job.preregistration
            write_text_atomic(tmp / VERDICT_FILE, json.dumps(verdict, indent=2) + "\n")
        os.rename(tmp, final)
        tmp = None
        return attempt_row(job, result.summary, verdict, started_at=started_at,
                           duration_s=time.perf_counter() - t0)
    except Exception as e:
        text = describe_failure(e)  # SimPy's copy of a process's error names the original
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
