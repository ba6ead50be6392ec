"""``erpsim validate --mutants`` fails (exit 1) when a counted mutant survived."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from runs.cli import main
from tests.runs.cli.small import small_cash_application


def test_a_surviving_mutant_fails_the_validation(tmp_path: Path) -> None:
    """With the trial balance its only check, a receipt applied a cent off (or twice, or
    to another invoice) goes unnoticed: the mutants survive and validate exits 1."""
    sc = small_cash_application(tmp_path / "weak", {"trial-balance-balances"})
    result = CliRunner().invoke(main, ["validate", str(sc), "--mutants", "--per-operator",
                                       "1"])
    assert result.exit_code == 1, result.output
    assert "SURVIVED" in result.output
    share = next(line for line in result.output.splitlines()
                 if line.startswith("mutants_caught_share:"))
    assert share != "mutants_caught_share: 1.000"
