"""``validate --mutants --parallel N``: the drawn mutants run N at once in worker
processes, and the report is the one a single process gives (same outcomes, same order).

A fiscal-year tier's mutants are some 300 attempts of a few seconds each; one process at a
time left the second core idle for half an hour a tier."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main
from runs.validate import validate_mutants
from scenarios.loader import find_scenario, load_scenario

pytestmark = pytest.mark.slow


def test_parallel_mutants_give_the_report_of_one_process(tmp_path: Path) -> None:
    loaded = load_scenario(find_scenario("collections"), tier="easy")
    seen: list[str] = []
    one = validate_mutants(loaded, 0, tmp_path / "one", per_operator=1)
    two = validate_mutants(loaded, 0, tmp_path / "two", per_operator=1, parallel=2,
                           on_done=lambda o: seen.append(o.mutation.describe()))
    assert len(one.outcomes) >= 10
    assert two.outcomes == one.outcomes  # every field: mutation, change, verdict, failed
    assert seen == [o.mutation.describe() for o in one.outcomes]  # told in the drawn order
    assert (two.candidates, two.candidates_by_op) == (one.candidates, one.candidates_by_op)


def test_the_cli_runs_mutants_in_parallel(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["validate", "payroll-and-sales-tax", "--mutants", "--seed",
                                    "0", "--per-operator", "1", "--parallel", "2",
                                    "--work", str(tmp_path)])
    assert res.exit_code == 0, res.output
    total = re.search(r"mutants_total: (\d+)", res.output)
    assert total is not None and int(total.group(1)) > 0, res.output
    assert "mutants_caught_share: 1.000" in res.output
