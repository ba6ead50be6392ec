"""Every library scenario grades on PostgreSQL as on SQLite: the reference's log (its golden
hash) and every check's result are the same on both stores.

The checks read the books through SQL; a statement one driver reads differently (psycopg
took the ``%`` of ``LIKE 'agent:%'`` for a placeholder) made month-end-close and
fiscal-year a grader error on PostgreSQL only, while every test of them ran on SQLite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runs.attempt import AttemptResult, run_attempt
from scenarios.loader import find_scenario, list_library, load_scenario
from tests.conftest import PG_URL, drop_pg_schema, pg_schema, require_postgres
from tests.scenarios.library.attempts import read_verdict
from tests.scenarios.library.test_golden_hashes import GOLDEN

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _results(res: AttemptResult) -> tuple[str, dict[str, bool], list[Any]]:
    """The verdict's status, each check's result and the grader errors (verdict.json)."""
    verdict = read_verdict(res.out)
    return (verdict["status"], {r["name"]: r["passed"] for r in verdict["results"]},
            verdict["grader_errors"])


@pytest.mark.parametrize("name", sorted(list_library()))
def test_the_reference_grades_the_same_on_both_stores(name: str, tmp_path: Path) -> None:
    require_postgres()
    loaded = load_scenario(find_scenario(name))
    lite = run_attempt(loaded, 1, "reference", tmp_path / "sqlite")
    schema = pg_schema(f"pg-verdicts/{name}")
    drop_pg_schema(schema)
    try:
        pg = run_attempt(loaded, 1, "reference", tmp_path / "postgres", store_url=PG_URL,
                         schema=schema)
    finally:
        drop_pg_schema(schema)
    assert pg.final_hash == lite.final_hash == GOLDEN[name, 1]
    status, results, errors = _results(lite)
    assert (status, errors) == ("accepted", [])
    assert _results(pg) == (status, results, errors)
