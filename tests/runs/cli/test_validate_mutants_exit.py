"""``erpsim validate --mutants`` fails (exit 1) when a counted mutant survived."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from runs.cli import main

ROOT = Path(__file__).resolve().parents[3]


def _small_cash_application(folder: Path, keep_checks: set[str] | None) -> Path:
    """A 4-day cash-application (12 customers, no injections), with only the named checks
    (all of them with None)."""
    shutil.copytree(ROOT / "scenarios" / "library" / "cash-application", folder)
    spec = yaml.safe_load((folder / "scenario.yaml").read_text(encoding="utf-8"))
    spec["calendar"] = {"start": "2026-03-02", "business_days": 4, "holidays": []}
    spec["company"]["opening"]["ar_open_invoices"] = 20
    spec["population"]["customers"]["count"] = 12
    spec["injections"] = []
    if keep_checks is not None:
        spec["checks"] = [c for c in spec["checks"] if c["name"] in keep_checks]
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_a_surviving_mutant_fails_the_validation(tmp_path: Path) -> None:
    """With the trial balance its only check, a receipt applied a cent off (or twice, or
    to another invoice) goes unnoticed: the mutants survive and validate exits 1."""
    sc = _small_cash_application(tmp_path / "weak", {"trial-balance-balances"})
    result = CliRunner().invoke(main, ["validate", str(sc), "--mutants", "--per-operator",
                                       "1"])
    assert result.exit_code == 1, result.output
    assert "SURVIVED" in result.output
    share = next(line for line in result.output.splitlines()
                 if line.startswith("mutants_caught_share:"))
    assert share != "mutants_caught_share: 1.000"
