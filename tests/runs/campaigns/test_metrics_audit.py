"""Audit of the campaign metrics and the campaign folder reader against the methods'
definitions: pass^k as the observed joint outcome of every recorded repetition,
acceptance only from an accepted verdict, and a campaign folder whose campaign.json,
ledger or attempt summaries are malformed read as a :class:`BadInput` naming the file,
the field, the value and what was expected (never a traceback, never a silent guess).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from runs.campaigns.ledger import AttemptRow, ResultsLedger
from runs.campaigns.metrics import by_scenario, is_accepted, summarize
from runs.campaigns.reading import (
    Campaign,
    attempt_usage,
    check_campaign_fields,
    matrix_from_campaign,
    monthly_accuracy,
    open_campaign,
    read_rows,
)
from runs.errors import BadInput
from tests.runs.campaigns.test_metrics import row


def _unit(accepted: list[bool], *, seed: int = 0, system: str = "A") -> list[AttemptRow]:
    return [row("s", seed, system, i + 1, passed=4 if ok else 1)
            for i, ok in enumerate(accepted)]


# --- pass^k: every observed repetition accepted ----------------------------------------------

def test_a_rejected_repetition_beyond_k_is_not_outvoted_by_k_accepted_ones() -> None:
    # repetitions 1, 2 and 4 accepted, 3 rejected: not every observed repetition passed
    rows = _unit([True, True, False, True])
    s = summarize(rows, k=3)
    assert (s.all_k_units, s.units, s.pass_hat_k) == (0, 1, 0.0)
    assert (s.accepted, s.attempts, s.at_least_once_units) == (3, 4, 1)
    assert by_scenario(rows, k=3)["s", "A"].all_k_units == 0


def test_pass_hat_k_below_the_recorded_repetitions_needs_all_of_them() -> None:
    # k = 1 on units of two repetitions: one accepted of two is not "all accepted"
    rows = _unit([True, False], seed=0) + _unit([True, True], seed=1)
    s = summarize(rows, k=1)
    assert (s.all_k_units, s.units) == (1, 2)


def test_pass_hat_k_still_counts_complete_units_and_refuses_short_ones() -> None:
    rows = (_unit([True, True, True], seed=0) + _unit([True, True], seed=1)
            + _unit([True, False, True], seed=2) + _unit([False, False, False], seed=3))
    s = summarize(rows, k=3)
    # only seed 0: seed 1 has two of three recorded (cannot count), seed 2 one rejected
    assert (s.all_k_units, s.units, s.at_least_once_units) == (1, 4, 3)
    assert s.pass_hat_k == 0.25


# --- acceptance comes from the verdict ---------------------------------------------------------

@pytest.mark.parametrize("status, verdict", [("infrastructure_error", None),
                                             ("completed", "rejected"),
                                             ("completed", "grader_error")])
def test_a_row_flagged_accepted_without_an_accepted_verdict_is_not_accepted(
        status: str, verdict: str | None) -> None:
    base = row(status=status, passed=4, total=4,
               verdict=verdict if verdict is not None else "auto")
    forged = AttemptRow(**{**base.to_json(), "accepted": True, "verdict_status": verdict})
    assert not is_accepted(forged)
    s = summarize([forged, row(seed=1)])
    assert (s.accepted, s.attempts, s.pass_at_1) == (1, 2, 0.5)
    assert is_accepted(row())  # an accepted verdict still is


# --- campaign.json: every field the report reads, checked with its name ------------------------

def _matrix(**overrides: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"scenarios": [{"name": "s1"}, {"name": "s2"}], "seeds": [0, 1],
                         "systems": [{"name": "A"}, {"name": "B"}], "runs": 3}
    m.update(overrides)
    return {"matrix": m}


@pytest.mark.parametrize("overrides, expected", [
    ({"seeds": [0.5, 1]}, "matrix.seeds: 0.5 is not a seed"),
    ({"seeds": [True, 1]}, "matrix.seeds: True is not a seed"),
    ({"seeds": [0, -3]}, "matrix.seeds: -3 is not a seed"),
    ({"seeds": [0, 1, 0]}, "matrix.seeds lists seed 0 more than once"),
    ({"seeds": None}, "matrix.seeds is NoneType None (expected a list of seeds"),
    ({"seeds": "0-x"}, "matrix.seeds '0-x' unreadable"),
    ({"scenarios": [{"name": "s1", "seeds": ["x"]}]}, "scenario s1: seeds: 'x' is not a seed"),
    ({"scenarios": [{"name": "s1", "seeds": 7}]}, "scenario s1: seeds is int 7"),
    ({"scenarios": ["s1", "s1"]}, "matrix.scenarios names 's1' more than once"),
    ({"systems": [{"name": "A"}, {"name": "A"}]}, "matrix.systems names 'A' more than once"),
    ({"systems": "A,B"}, "matrix.systems is str (expected a list)"),
    ({"runs": 3.0}, "matrix.runs 3.0 is not a positive whole number"),
])
def test_a_malformed_matrix_is_named_with_its_file_field_and_value(
        overrides: dict[str, Any], expected: str) -> None:
    with pytest.raises(BadInput) as info:
        matrix_from_campaign(_matrix(**overrides), "results/x/campaign.json")
    assert str(info.value).startswith("results/x/campaign.json: ")
    assert expected in str(info.value)


def test_a_well_formed_matrix_still_reads() -> None:
    m = matrix_from_campaign(_matrix(scenarios=[{"name": "s1", "seeds": [0, 1]},
                                                {"name": "task", "seeds": [28]}]))
    assert m.size == 3 * 2 * 3 and m.seeds_of("task") == (28,)
    assert matrix_from_campaign(_matrix(seeds="0-2")).seeds == (0, 1, 2)


@pytest.mark.parametrize("scenario, system, expected", [
    ({"category": 5}, {}, "scenario s1: category 5 is int (expected text, or null"),
    ({"tier": ["hard"]}, {}, "scenario s1: tier ['hard'] is list (expected text"),
    ({}, {"price": [1, 2]}, "system A: price [1, 2] is list (expected a mapping of input"),
    ({}, {"price": {"input": 1, "cached_input": 0.1}}, "system A: price.output missing is "
                                                       "not a price"),
    ({}, {"price": {"input": "x", "cached_input": 0, "output": 1}},
     "system A: price.input 'x' is not a price"),
    ({}, {"price": {"input": 1, "cached_input": 0, "output": -2}},
     "system A: price.output -2 is not a price"),
])
def test_a_malformed_category_tier_or_price_is_named(
        scenario: dict[str, Any], system: dict[str, Any], expected: str) -> None:
    data = _matrix(scenarios=[{"name": "s1", **scenario}],
                   systems=[{"name": "A", **system}])
    with pytest.raises(BadInput) as info:
        check_campaign_fields(data, "results/x/campaign.json")
    assert str(info.value).startswith("results/x/campaign.json: ")
    assert expected in str(info.value)


def test_well_formed_categories_tiers_and_prices_pass() -> None:
    check_campaign_fields(_matrix(
        scenarios=[{"name": "s1", "category": "cash", "tier": "hard"},
                   {"name": "s2", "category": None}],
        systems=[{"name": "A", "price": {"input": 1, "cached_input": 0.1, "output": 4}},
                 {"name": "B", "price": None}]))


# --- the ledger and the attempt summaries --------------------------------------------------

def _campaign(tmp_path: Path, rows: list[AttemptRow]) -> Path:
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "campaign.json").write_text(json.dumps(_matrix(
        scenarios=["s"], seeds=[0], systems=["A"], runs=len(rows))))
    with ResultsLedger.create(folder / "results.db", label="c") as ledger:
        for r in rows:
            ledger.write(r)
    return folder


@pytest.mark.parametrize("damage, expected", [
    ("UPDATE attempts SET checks = '{not json'", "JSONDecodeError"),
    ("ALTER TABLE attempts DROP COLUMN cost_usd", "no such column: cost_usd"),
])
def test_a_damaged_ledger_is_named_not_a_traceback(tmp_path: Path, damage: str,
                                                     expected: str) -> None:
    folder = _campaign(tmp_path, [row("s", 0)])
    conn = sqlite3.connect(folder / "results.db")
    conn.execute(damage)
    conn.commit()
    conn.close()
    with pytest.raises(BadInput) as info:
        read_rows(folder / "results.db")
    assert f"{folder / 'results.db'}: unreadable results ledger" in str(info.value)
    assert expected in str(info.value)
    with pytest.raises(BadInput, match="unreadable results ledger"):
        open_campaign(tmp_path, "c")


def test_a_summary_of_another_shape_is_unknown_usage_and_no_month(tmp_path: Path) -> None:
    rows = [row("s", 0, repetition=1), row("s", 0, repetition=2)]
    folder = _campaign(tmp_path, rows)
    attempt = folder / "x"  # the rows' attempt_dir
    attempt.mkdir()
    (attempt / "summary.json").write_text(json.dumps({
        "turns": [{"process": "oops"}, {"process": {"usage": {"input_tokens": 5,
                                                              "output_tokens": 1}}}],
        "daily_by_month": {"2026-01": {"checks": 3, "passed": "x"},
                           "2026-02": {"checks": 2, "passed": 5},
                           "2026-03": {"checks": True, "passed": 1},
                           "2026-04": {"checks": 4, "passed": 3}}}))
    c = open_campaign(tmp_path, "c")
    assert isinstance(c, Campaign)
    usage = attempt_usage(c)
    assert set(usage.values()) == {None}  # one turn's usage unknown: the attempt's is
    (attempt / "summary.json").write_text(json.dumps({"turns": {"not": "a list"}}))
    assert set(attempt_usage(c).values()) == {None}
    (attempt / "summary.json").write_text(json.dumps({"daily_by_month": {
        "2026-01": {"checks": 3, "passed": "x"}, "2026-02": {"checks": 2, "passed": 5},
        "2026-03": {"checks": True, "passed": 1}, "2026-04": {"checks": 4, "passed": 3}}}))
    # only the well-formed month counts (both attempts share the folder: pooled twice)
    assert monthly_accuracy(c) == {("s", "A"): {"2026-04": (6, 8)}}
