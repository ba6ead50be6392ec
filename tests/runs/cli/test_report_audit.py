"""``erpsim report`` and ``compare`` on bad or unusual campaign folders: each problem is
one ``error:`` line naming the file, the field and the value (exit 2), never a
traceback; and pass^k printed as the observed joint outcome of every repetition."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from runs.cli import main
from tests.runs.campaigns.test_metrics import row
from tests.runs.campaigns.test_report import flat, make_campaign, two_systems

KW: dict[str, Any] = {"scenarios": ["s1", "s2"], "seeds": [0, 1], "systems": ["A", "B"],
                      "runs": 3}


def run(*args: str | Path) -> Any:
    """The command line, exceptions left to the result (a traceback is a failure)."""
    return CliRunner().invoke(main, [str(a) for a in args])


def _edit(key: str, value: Any, *, entry: str | None = None) -> Callable[[Path], None]:
    """Set ``matrix[key] = value``, or on the first ``entry`` (scenarios/systems) item."""
    def apply(folder: Path) -> None:
        data = json.loads((folder / "campaign.json").read_text())
        target = data["matrix"] if entry is None else data["matrix"][entry][0]
        target[key] = value
        (folder / "campaign.json").write_text(json.dumps(data))
    return apply


def _sql(statement: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        conn = sqlite3.connect(folder / "results.db")
        conn.execute(statement)
        conn.commit()
        conn.close()
    return apply


def _duplicate_system(folder: Path) -> None:
    data = json.loads((folder / "campaign.json").read_text())
    data["matrix"]["systems"].append(dict(data["matrix"]["systems"][0]))
    (folder / "campaign.json").write_text(json.dumps(data))


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "scenario-seeds": (_edit("seeds", ["x"], entry="scenarios"),
                       "campaign.json: scenario s1: seeds: 'x' is not a seed (expected whole "
                       "numbers 0 or more)"),
    "float-seed": (_edit("seeds", [0.5, 1]), "campaign.json: matrix.seeds: 0.5 is not a seed"),
    "system-twice": (_duplicate_system, "campaign.json: matrix.systems names 'A' more than "
                                        "once (expected each name once)"),
    "category": (_edit("category", 5, entry="scenarios"),
                 "campaign.json: scenario s1: category 5 is int (expected text, or null for "
                 "none)"),
    "price": (_edit("price", [1, 2], entry="systems"),
              "campaign.json: system A: price [1, 2] is list (expected a mapping"),
    "ledger-json": (_sql("UPDATE attempts SET checks = '{oops'"),
                    "results.db: unreadable results ledger (JSONDecodeError"),
    "ledger-column": (_sql("ALTER TABLE attempts DROP COLUMN cost_usd"),
                      "results.db: unreadable results ledger (OperationalError: no such "
                      "column: cost_usd"),
}


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One campaign folder per case of :data:`CASES`, each a copy of a good one damaged."""
    results = tmp_path_factory.mktemp("audit") / "results"
    make_campaign(results, "good", two_systems(), **KW)
    for name, (damage, _) in CASES.items():
        shutil.copytree(results / "good", results / name)
        damage(results / name)
    return results


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("case", list(CASES))
def test_bad_folder_is_one_error_line_naming_file_field_and_value(
        bad: Path, case: str, command: str) -> None:
    args = ["--a", "A", "--b", "B", "--resamples", "20"] if command == "compare" else []
    res = run(command, case, *args, "--results-dir", bad)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 2, res.output
    out = flat(res.output)
    assert f"error: {bad / case}/" in out  # the file's full path, so the label shows
    assert CASES[case][1] in out


def test_the_good_copy_still_reports(bad: Path) -> None:
    assert run("report", "good", "--results-dir", bad).exit_code == 0


def test_a_malformed_attempt_summary_is_unknown_usage_not_a_traceback(tmp_path: Path) -> None:
    results = tmp_path / "results"
    folder = make_campaign(results, "c", two_systems(), **KW)
    (folder / "x").mkdir()  # every row's attempt_dir
    (folder / "x" / "summary.json").write_text(json.dumps({
        "turns": [{"process": "oops"}],
        "daily_by_month": {"2026-01": {"checks": 3, "passed": "x"},
                           "2026-02": {"checks": 3, "passed": 1}}}))
    res = run("report", "c", "--results-dir", results)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 0, res.output
    assert "Usage known" in flat(res.output) and "0/12" in flat(res.output)


def test_report_pass_hat_k_does_not_count_a_unit_with_a_rejected_extra_repetition(
        tmp_path: Path) -> None:
    # A: 4 units x 3 repetitions all accepted, and unit (s1, 0) also has a repetition 4
    # (outside the matrix) that was rejected: that unit's repetitions are not all accepted
    a = [row(sc, seed, "A", rep) for sc in ("s1", "s2") for seed in (0, 1) for rep in (1, 2, 3)]
    b = [row(r.scenario, r.seed, "B", r.repetition, passed=0) for r in a]
    extra = row("s1", 0, "A", 4, passed=1)
    results = tmp_path / "results"
    make_campaign(results, "x", [*a, *b, extra], **KW)
    res = run("report", "x", "--results-dir", results)
    assert res.exit_code == 1  # rows outside the matrix: flagged as incomplete
    out = flat(res.output)
    assert "1 outside the matrix: s1 seed 0 A rep 4" in out
    # 13 attempts, 12 accepted; pass^3 3 of 4 units (not 4 of 4); at least once 4 of 4
    assert "A 13 12 92.3% 75.0% (3/4) 100.0% (4/4)" in out
