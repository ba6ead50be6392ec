"""``erpsim run``: attempts over the library scenarios, deterministic across processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runs.cli", *args], capture_output=True,
                          text=True, check=False)


def summary(out: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((out / "summary.json").read_text())


def test_same_seed_same_hash_in_two_processes(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, seed in ((a, "1"), (b, "1"), (c, "2")):
        res = run_cli("run", "cash-application", "--seed", seed, "--agent", "null", "--out",
                      str(out), "--quiet")
        assert res.returncode == 1, res.stderr  # null is rejected
    assert summary(a)["final_hash"] == summary(b)["final_hash"]
    assert summary(a)["final_hash"] != summary(c)["final_hash"]
    verify = run_cli("ledger", "verify", str(a / "books.db"))
    assert verify.returncode == 0 and summary(a)["final_hash"] in verify.stdout


def test_null_agent_leaves_the_work_undone(tmp_path: Path) -> None:
    out = tmp_path / "m"
    result = CliRunner().invoke(main, ["run", "month-end-close", "--seed", "1", "--agent",
                                       "null", "--out", str(out), "--quiet"])
    assert result.exit_code == 1, result.output  # rejected
    s = summary(out)
    assert s["trial_balance_total"]["difference"] == "0.00"
    assert all(t["difference"] == "0.00" for t in s["control_ties"])
    figures = s["figures"]
    assert figures["unapplied_receipts"] > 0 and figures["unapplied_cash"] != "0.00"
    assert figures["bills_received"] > figures["bills_entered"] == 0
    assert {t["status"] for t in s["turns"]} == {"completed"}
    assert len(s["turns"]) == 6  # weekly, the last business day of May, and June 1's close
    assert s["events"]["by_realm"]["world"] > 0
    assert all(t["missing_outputs"] for t in s["turns"])  # the null agent writes nothing
    assert (out / "turns" / "01" / "workspace" / "prompt.md").read_text().startswith(
        "# Close May")


def test_an_unknown_scenario_lists_the_library(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "cash-aplication", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    for name in ("cash-application", "month-end-close", "procure-to-pay"):
        assert name in result.output
    assert not (tmp_path / "x").exists()


def test_an_attempt_folder_is_never_reused(tmp_path: Path) -> None:
    out = tmp_path / "used"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = CliRunner().invoke(main, ["run", "cash-application", "--agent", "null", "--out",
                                       str(out), "--quiet"])
    assert result.exit_code == 2
    assert f"{out} exists and is not empty; choose another --out" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("name", ["cash-application", "procure-to-pay", "month-end-close"])
def test_every_library_scenario_runs_with_the_null_agent(name: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", name, "--agent", "null", "--out",
                                       str(tmp_path / name), "--quiet"])
    assert result.exit_code == 1, result.output  # the null agent is rejected
    s = summary(tmp_path / name)
    assert s["trial_balance_total"]["difference"] == "0.00"
    assert s["figures"]["company_commands_refused"] == 0


def test_replace_only_replaces_a_finished_attempt(tmp_path: Path) -> None:
    out = tmp_path / "a"
    args = ["run", "cash-application", "--agent", "null", "--out", str(out), "--quiet"]
    assert CliRunner().invoke(main, args).exit_code == 1  # written, and rejected
    again = CliRunner().invoke(main, [*args, "--replace"])
    assert again.exit_code == 1, again.output
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    refused = CliRunner().invoke(main, [*args[:-3], "--out", str(other), "--quiet",
                                        "--replace"])
    assert refused.exit_code == 2
    assert "--replace only replaces an attempt folder" in refused.output
    assert (other / "notes.txt").read_text() == "keep"
