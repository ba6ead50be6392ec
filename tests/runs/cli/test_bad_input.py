"""Bad command-line input refused with a clear message and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main
from runs.validate import MAX_SEEDS, parse_seeds


@pytest.mark.parametrize("command", [
    ["run", "cash-application", "--out", "{tmp}/a", "--seed", "-1"],
    ["validate", "cash-application", "--mutants", "--seed", "-1"],
    ["demo", "--out", "{tmp}/d.db", "--seed", "-1"],
    ["bench", "turn", "--seed", "-1"],
    ["bench", "engine", "--seed", "-1"],
    ["bench", "ledger", "--seed", "-1"],
])
def test_a_negative_seed_is_refused_by_every_command(tmp_path: Path,
                                                     command: list[str]) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--seed': -1 is not in the range x>=0." in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_huge_seed_range_is_refused_before_it_is_made(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sweep", "cash-application", "--seeds", "0-10000000",
                                       "--systems", "reference", "--label", "big",
                                       "--results-dir", str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    assert ("Invalid value for --seeds: '0-10000000' names more than 10,000 seeds "
            "(0-10000000 alone is 10,000,001; expected at most 10,000: split the campaign "
            "into labels)") in result.output
    assert not (tmp_path / "results").exists()


def test_many_small_ranges_are_bounded_too() -> None:
    text = ",".join(f"{n * 100}-{n * 100 + 99}" for n in range(MAX_SEEDS // 100 + 1))
    with pytest.raises(ValueError, match="names more than 10,000 seeds"):
        parse_seeds(text)
    assert len(parse_seeds(f"0-{MAX_SEEDS - 1}")) == MAX_SEEDS
