"""``--repeat``: each figure's median over a bench's runs, and every run's values."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from runs.bench.benchmarks import median_figures
from runs.cli import main


def test_an_odd_number_of_runs_gives_the_middle_run_value_as_printed() -> None:
    runs = [["engine_events_per_s: 7941", "engine_wall_s: 3.78", "ratio: 1.40"],
            ["engine_events_per_s: 8655", "engine_wall_s: 3.47", "ratio: 1.32"],
            ["engine_events_per_s: 8174", "engine_wall_s: 3.67", "ratio: 1.42"]]
    medians, each = median_figures(runs)
    assert medians == ["engine_events_per_s: 8174", "engine_wall_s: 3.67", "ratio: 1.40"]
    assert each == ["engine_events_per_s: 7941, 8655, 8174", "engine_wall_s: 3.78, 3.47, 3.67",
                    "ratio: 1.40, 1.32, 1.42"]


def test_an_even_number_of_runs_averages_the_middle_two_at_the_figures_decimals() -> None:
    medians, _ = median_figures([["a: 10", "b: 1.25"], ["a: 13", "b: 1.50"],
                                 ["a: 11", "b: 1.00"], ["a: 20", "b: 2.00"]])
    assert medians == ["a: 12", "b: 1.38"]


def test_a_figure_some_runs_lack_is_the_median_of_the_runs_that_print_it() -> None:
    medians, each = median_figures([["a: 1", "b: 5.0"], ["a: 3"], ["a: 2", "b: 7.0"]])
    assert medians == ["a: 2", "b: 6.0"]
    assert each == ["a: 1, 3, 2", "b: 5.0, 7.0"]


def test_a_line_that_is_not_a_figure_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="'# heading'"):
        median_figures([["a: 1"], ["# heading"]])


def test_bench_ledger_repeat_prints_the_medians_then_each_run_on_stderr() -> None:
    one = CliRunner().invoke(main, ["bench", "ledger", "--events", "1000", "--single", "100"])
    result = CliRunner().invoke(main, ["bench", "ledger", "--events", "1000", "--single", "100",
                                       "--repeat", "3"])
    assert result.exit_code == 0, result.output
    names = [line.split(": ")[0] for line in one.stdout.splitlines()]
    assert [line.split(": ")[0] for line in result.stdout.splitlines()] == names
    runs = {line[2:].split(": ")[0]: line.split(": ")[1].split(", ")
            for line in result.stderr.splitlines() if line.startswith("# ") and ": " in line
            and line[2:].split(": ")[0] in names}
    assert sorted(runs) == sorted(names)
    for line in result.stdout.splitlines():
        name, value = line.split(": ")
        assert len(runs[name]) == 3
        assert sorted(runs[name], key=float)[1] == value  # the middle of the three
    assert "# run 3 of 3" in result.stderr


@pytest.mark.parametrize("command", [["bench", "engine"], ["bench", "ledger"]])
@pytest.mark.parametrize("value", ["0", "-1", "abc", "100"])
def test_a_repeat_outside_1_to_99_is_refused(command: list[str], value: str) -> None:
    result = CliRunner().invoke(main, [*command, "--repeat", value])
    assert result.exit_code == 2
    assert "Invalid value for '--repeat'" in result.output
