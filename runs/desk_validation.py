"""Validating desk tasks: positive and negative controls, run as one-date scenarios.

For each task, through ``run_attempt``:

1. the reference solution (``solution/solve``) as an external local agent: it must be
   accepted;
2. the null agent on the untouched workspace: it must be rejected (without a grader
   error);
3. the generator twice with the task's seed: the same bytes both times;

and the files whose committed (supplied) bytes differ from a fresh generation (a
warning: the supplied bytes define the release). ``erpsim desk validate`` prints it.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from desk.errors import GeneratorFailed
from desk.tasks import DeskTask, differs_from, generate_task

REPORT_FILE = "validation.json"
"""Where :func:`validate_tasks` writes its findings when it keeps the folder."""


@dataclass
class TaskValidation:
    """What validating one task found."""

    task: str
    category: str
    solution_accepted: bool | None = None
    solution_detail: str = ""
    null_rejected: bool | None = None
    null_detail: str = ""
    deterministic: bool | None = None
    """None for a task without a generator (nothing to regenerate)."""
    supplied_differs: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Accepted solution, rejected null, deterministic generation (when generated)."""
        return bool(self.solution_accepted) and bool(self.null_rejected) \
            and self.deterministic is not False


def _verdict_detail(summary: dict[str, Any]) -> str:
    v = summary.get("verdict", {})
    status = v.get("status", "?")
    failed = v.get("failed") or []
    errors = v.get("grader_errors") or []
    turns = summary.get("turns") or []
    process = turns[0].get("status") if turns else "no turn"
    parts = [f"{status} (agent {process})"]
    if failed:
        parts.append("failed: " + ", ".join(failed[:6]) + (" ..." if len(failed) > 6 else ""))
    if errors:
        parts.append("grader errors: " + ", ".join(errors[:6]))
    return "; ".join(parts)


def validate_task(task: DeskTask, workdir: Path) -> TaskValidation:
    """Run the three controls on one task; attempt folders under ``workdir/<task>/``."""
    from runs.attempt import run_attempt
    from runs.execution.external import ExternalAgent

    result = TaskValidation(task=task.id, category=task.category)
    base = workdir / task.id
    if base.exists():
        shutil.rmtree(base)
    started = time.perf_counter()
    agent = ExternalAgent(task.solution, mode="local", timeout_s=task.timeout_s,
                          name="solution")
    solved = run_attempt(task.loaded, task.seed, "solution", base / "solution", agent=agent)
    result.seconds["solution"] = round(time.perf_counter() - started, 2)
    result.solution_accepted = bool(solved.summary["verdict"]["accepted"])
    result.solution_detail = _verdict_detail(solved.summary)
    started = time.perf_counter()
    null = run_attempt(task.loaded, task.seed, "null", base / "null")
    result.seconds["null"] = round(time.perf_counter() - started, 2)
    result.null_rejected = null.summary["verdict"]["status"] == "rejected"
    result.null_detail = _verdict_detail(null.summary)
    if task.spec.generator is not None:
        started = time.perf_counter()
        first, second = generate_task(task), generate_task(task)
        result.deterministic = first == second
        result.seconds["generate"] = round((time.perf_counter() - started) / 2, 2)
        result.supplied_differs = differs_from(task, first)
    return result


def validate_tasks(tasks: Sequence[DeskTask], workdir: Path, *,
                   keep: bool) -> list[TaskValidation]:
    """Validate every task under ``workdir``; write :data:`REPORT_FILE` there if ``keep``,
    else remove the folder. A generator that fails is a finding, not an exception."""
    workdir.mkdir(parents=True, exist_ok=True)
    results: list[TaskValidation] = []
    try:
        for t in tasks:
            try:
                results.append(validate_task(t, workdir))
            except GeneratorFailed as e:
                r = TaskValidation(task=t.id, category=t.category, deterministic=False,
                                   solution_detail=str(e))
                results.append(r)
    finally:
        if keep:
            (workdir / REPORT_FILE).write_text(
                json.dumps([asdict(r) | {"passed": r.passed} for r in results], indent=2)
                + "\n", encoding="utf-8")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return results
