"""Every desk task grades on PostgreSQL as on SQLite: its solution's log (the final hash)
and every check's result are the same on both stores.

Checks read the books through SQL; a statement only one backend runs (a select-list
alias in ``WHERE``, SQLite's ``date(t, '+7 days')``) made fiscal-year's reference a
grader error on PostgreSQL only, while its tests ran on SQLite
(tests/scenarios/library/test_postgres_verdicts.py holds the library's scenarios).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from desk.tasks import list_tasks, load_task
from runs.attempt import AttemptResult, run_attempt
from runs.execution.external import ExternalAgent
from tests.conftest import PG_URL, drop_pg_schema, pg_schema, require_postgres

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _results(res: AttemptResult) -> tuple[str, dict[str, bool], list[Any]]:
    """The verdict's status, each check's result and the grader errors (verdict.json)."""
    verdict = json.loads((res.out / "verdict.json").read_text(encoding="utf-8"))
    return (verdict["status"], {r["name"]: r["passed"] for r in verdict["results"]},
            verdict["grader_errors"])


@pytest.mark.parametrize("name", list_tasks())
def test_the_solution_grades_the_same_on_both_stores(name: str, tmp_path: Path) -> None:
    require_postgres()
    task = load_task(name)

    def solve(out: Path, **store: Any) -> AttemptResult:
        agent = ExternalAgent(task.solution, mode="local", timeout_s=task.timeout_s,
                              name="solution")
        return run_attempt(task.loaded, task.seed, "solution", out, agent=agent, **store)

    lite = solve(tmp_path / "sqlite")
    schema = pg_schema(f"pg-desk/{name}")
    drop_pg_schema(schema)
    try:
        pg = solve(tmp_path / "postgres", store_url=PG_URL, schema=schema)
    finally:
        drop_pg_schema(schema)
    assert pg.final_hash == lite.final_hash
    status, results, errors = _results(lite)
    assert (status, errors) == ("accepted", []), (status, errors)
    assert _results(pg) == (status, results, errors)
