"""erpsim sweep --tier: every scenario of the sweep at that difficulty tier, recorded in
campaign.json and each attempt's summary, labelled in the report; a tier that is none, or
one a scenario does not declare, refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from runs.campaigns.run import read_campaign
from runs.cli import main
from tests.runs.campaigns.test_campaign import ledger_rows, small_scenario, sweep

TIERS = {"easy": {"description": "as written"},
         "hard": {"description": "more customers, messy bank lines", "customers": 30,
                  "documents": {"references": 0.5, "payer_names": 0.5}}}


def test_a_sweep_at_a_tier_runs_records_and_labels_it(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2, tier="easy", tiers=TIERS)
    res = sweep(str(sc), "--seeds", "0-1", "--systems", "reference,null", "--tier", "hard",
                "--label", "hard", "--results-dir", str(tmp_path / "r"), "--quiet")
    assert res.exit_code == 0, res.output
    assert "hard, tier hard: 4 of 4 attempts" in " ".join(res.output.split())
    folder = tmp_path / "r" / "hard"
    m = read_campaign(folder)["matrix"]
    assert m["tier"] == "hard" and [t["tier"] for t in m["scenarios"]] == ["hard"]
    rows = ledger_rows(folder)
    assert len(rows) == 4
    for r in rows:
        summary = json.loads((folder / r.attempt_dir / "summary.json").read_text())
        assert summary["tier"]["name"] == "hard"
        assert summary["tier"]["params"]["customers"] == 30
    report = CliRunner().invoke(main, ["report", "hard", "--results-dir", str(tmp_path / "r")],
                                catch_exceptions=False)
    out = " ".join(report.output.split())
    assert "difficulty tier: hard" in out, report.output
    assert "cash-application (tier hard)" in out, report.output


def test_a_sweep_without_a_tier_records_none(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2, tier="easy", tiers=TIERS)
    res = sweep(str(sc), "--seeds", "0", "--systems", "null", "--label", "plain",
                "--results-dir", str(tmp_path / "r"), "--quiet")
    assert res.exit_code == 0, res.output
    m = read_campaign(tmp_path / "r" / "plain")["matrix"]
    assert "tier" not in m and "tier" not in m["scenarios"][0]
    report = CliRunner().invoke(main, ["report", "plain", "--results-dir",
                                       str(tmp_path / "r")], catch_exceptions=False)
    assert "difficulty tier" not in report.output and "(tier " not in report.output
    # the same label at a tier is another matrix
    res = sweep(str(sc), "--seeds", "0", "--systems", "null", "--label", "plain",
                "--results-dir", str(tmp_path / "r"), "--quiet", "--tier", "hard", "--resume")
    assert res.exit_code == 2
    assert "--resume: the matrix differs from" in " ".join(res.output.split())


def test_a_tier_that_is_no_tier_is_refused(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2)
    res = sweep(str(sc), "--seeds", "0", "--systems", "null", "--tier", "extreme",
                "--label", "x", "--results-dir", str(tmp_path / "r"))
    assert res.exit_code == 2
    assert "'extreme' is not one of 'easy', 'medium', 'hard'" in res.output
    assert not (tmp_path / "r").exists()


def test_a_tier_the_scenario_does_not_declare_names_it_and_its_tiers(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2, tier="easy", tiers=TIERS)
    res = sweep(str(sc), "--seeds", "0", "--systems", "null", "--tier", "medium",
                "--label", "x", "--results-dir", str(tmp_path / "r"))
    assert res.exit_code == 2
    assert ("error: --tier medium: scenario cash-application does not declare tier "
            "'medium' (its tiers: easy, hard)") in " ".join(res.output.split())
    assert "Traceback" not in res.output and not (tmp_path / "r").exists()


def test_a_scenario_without_tiers_is_refused_at_any_tier(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2, name="untiered", tier=None, tiers={})
    other = small_scenario(tmp_path, days=2, name="tiered", tier="easy", tiers=TIERS)
    data = sc.read_text().replace("id: cash-application", "id: untiered-cash")
    sc.write_text(data)
    res = sweep(str(other), str(sc), "--seeds", "0", "--systems", "null", "--tier", "hard",
                "--label", "x", "--results-dir", str(tmp_path / "r"))
    assert res.exit_code == 2
    assert ("--tier hard: scenario untiered-cash does not declare tier 'hard' (it declares "
            "no tiers") in " ".join(res.output.split())
    assert not (tmp_path / "r").exists()


def test_desk_tasks_take_no_tier(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2, tier="easy", tiers=TIERS)
    res = sweep(str(sc), "--desk", "all", "--seeds", "0", "--systems", "null", "--tier",
                "hard", "--label", "x", "--results-dir", str(tmp_path / "r"))
    assert res.exit_code == 2
    assert "--tier hard: desk tasks have no difficulty tiers" in " ".join(res.output.split())
    assert not (tmp_path / "r").exists()
