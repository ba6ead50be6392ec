"""Campaign metrics against hand-computed fixtures (runs.campaigns.metrics: pure functions).

The rows are real ``runs.campaigns.ledger.AttemptRow`` objects built by :func:`row`; the figures
follow the definitions of pass@1, pass^k, at-least-once, the mean within-attempt check
fraction and the pooled check rate, and the paired bootstrap over scenario-seed units.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runs.campaigns.ledger import AttemptRow
from runs.campaigns.metrics import (
    DEFAULT_BOOTSTRAP_SEED,
    Matrix,
    UnpairedSystems,
    bootstrap_differences,
    by_scenario,
    by_seed,
    by_system,
    check_fraction,
    completeness,
    is_accepted,
    nearest_rank,
    paired_bootstrap,
    repeatability,
    seed_variation,
    summarize,
    transitions,
)


def row(scenario: str = "s1", seed: int = 0, system: str = "A", repetition: int = 1, *,
        passed: int | None = 4, total: int | None = 4, status: str = "completed",
        verdict: str | None = "auto", cost: float | None = None,
        duration: float = 1.0) -> AttemptRow:
    """One attempt row. ``verdict="auto"``: accepted iff every required check passed;
    ``infrastructure_error`` rows have no verdict and no checks unless told otherwise."""
    if status == "infrastructure_error" and verdict == "auto":
        verdict, passed, total = None, None, None
    if verdict == "auto":
        verdict = "accepted" if passed == total else "rejected"
    return AttemptRow(
        label="t", scenario=scenario, kind="scenario", seed=seed, system=system,
        repetition=repetition, status=status, exit_codes=(), grader_error=(
            "custom#2: boom" if verdict == "grader_error" else None),
        verdict_status=verdict, accepted=verdict == "accepted", checks=(),
        required_passed=passed, required_total=total,
        check_fraction=None if not total else (passed or 0) / total,
        turn_durations=(), duration_s=duration, input_tokens=None, output_tokens=None,
        cost_usd=cost, outputs={}, final_hash=None, scorer=None, attempt_dir="x",
        started_at="", finished_at="", error=None)


def fixture_a() -> list[AttemptRow]:
    """System A, 4 units x 3 repetitions (hand-computed figures in the tests below).

    (s1,0): accepted x3                     -> all 3, fractions 1, 1, 1
    (s1,1): accepted, accepted, 3/4         -> 2 of 3, fractions 1, 1, .75
    (s2,0): 2/4, 0/4, 1/4                   -> 0 of 3, fractions .5, 0, .25
    (s2,1): accepted, timeout 3/4, infra    -> 1 of 3, fractions 1, .75, 0
    """
    return [
        row("s1", 0, repetition=1), row("s1", 0, repetition=2), row("s1", 0, repetition=3),
        row("s1", 1, repetition=1), row("s1", 1, repetition=2),
        row("s1", 1, repetition=3, passed=3),
        row("s2", 0, repetition=1, passed=2), row("s2", 0, repetition=2, passed=0),
        row("s2", 0, repetition=3, passed=1),
        row("s2", 1, repetition=1), row("s2", 1, repetition=2, passed=3, status="timeout"),
        row("s2", 1, repetition=3, status="infrastructure_error"),
    ]


def test_pass_at_1_keeps_errors_and_timeouts_in_the_denominator() -> None:
    s = summarize(fixture_a())
    assert (s.attempts, s.accepted) == (12, 6)
    assert s.pass_at_1 == 0.5
    assert (s.timeouts, s.infrastructure_errors, s.completed) == (1, 1, 10)


def test_pass_hat_3_counts_only_units_with_all_3_accepted() -> None:
    s = summarize(fixture_a())
    assert s.k == 3 and s.units == 4
    # (s1,1) has 2 of 3 accepted: not counted; only (s1,0) is
    assert s.all_k_units == 1 and s.pass_hat_k == 0.25
    # the observed joint outcome, not pass@1 ** 3
    assert s.pass_hat_k != pytest.approx(0.5 ** 3)


def test_at_least_once() -> None:
    s = summarize(fixture_a())
    assert s.at_least_once_units == 3 and s.at_least_once == 0.75


def test_mean_check_fraction_and_pooled_rate() -> None:
    s = summarize(fixture_a())
    # (1+1+1) + (1+1+.75) + (.5+0+.25) + (1+.75+0) = 8.25 over 12 attempts
    assert s.mean_check_fraction == pytest.approx(8.25 / 12)
    # passed 12 + 11 + 3 + 7 = 33 of 11 graded attempts x 4 = 44 (the infra error has none)
    assert (s.pooled_passed, s.pooled_total) == (33, 44)
    assert s.pooled_check_rate == 0.75


def test_pooled_rate_weighs_attempts_by_their_number_of_checks() -> None:
    rows = [row("s1", 0, passed=1, total=1), row("s2", 0, passed=1, total=9)]
    s = summarize(rows)
    assert s.mean_check_fraction == pytest.approx((1 + 1 / 9) / 2)  # each attempt weighs 1/2
    assert s.pooled_check_rate == pytest.approx(2 / 10)  # each check weighs 1/10


def test_an_infrastructure_error_without_checks_counts_zero() -> None:
    infra = row(status="infrastructure_error")
    assert check_fraction(infra) == 0.0 and not is_accepted(infra)
    # an accepted attempt of a contract with no required check counts 1
    assert check_fraction(row(passed=0, total=0)) == 1.0


def test_a_grader_error_is_never_accepted() -> None:
    ungraded = row(passed=2, total=2, verdict="grader_error")
    assert not is_accepted(ungraded)
    forged = AttemptRow(**{**ungraded.to_json(), "accepted": True})  # inconsistent row
    assert not is_accepted(forged)
    s = summarize([ungraded, row()])
    assert (s.accepted, s.grader_errors, s.pass_at_1) == (1, 1, 0.5)


def test_cost_per_accepted_attempt_is_unknown_when_any_cost_is() -> None:
    known = [row("s1", 0, cost=1.0), row("s1", 1, cost=2.0, passed=0),
             row("s2", 0, cost=0.5)]
    s = summarize(known)
    assert s.total_cost_usd == pytest.approx(3.5)
    assert s.cost_per_accepted == pytest.approx(3.5 / 2)  # failures' spending included
    s = summarize([*known, row("s2", 1, cost=None)])
    assert s.total_cost_usd is None and s.cost_per_accepted is None and s.cost_known == 3
    none_accepted = summarize([row(cost=1.0, passed=0)])
    assert none_accepted.total_cost_usd == 1.0 and none_accepted.cost_per_accepted is None


def test_nearest_rank_median_and_p90() -> None:
    values = [50.0, 15.0, 40.0, 20.0, 35.0]
    assert nearest_rank(values, 0.5) == 35.0  # ceil(2.5) = 3rd smallest
    assert nearest_rank(values, 0.9) == 50.0  # ceil(4.5) = 5th
    ten = [float(x) for x in range(10, 0, -1)]
    assert nearest_rank(ten, 0.9) == 9.0  # ceil(9) = 9th, not the 10th
    assert nearest_rank(ten, 0.5) == 5.0  # the lower middle, not an average
    assert nearest_rank([7.0], 0.9) == 7.0
    assert nearest_rank([], 0.5) is None
    with pytest.raises(ValueError):
        nearest_rank(values, 0)
    s = summarize([row("s", i, duration=d) for i, d in enumerate(values)])
    assert (s.median_duration_s, s.p90_duration_s) == (35.0, 50.0)


def test_tables_per_scenario_and_per_seed() -> None:
    rows = fixture_a()
    per = by_scenario(rows, k=3)
    assert per["s1", "A"].accepted == 5 and per["s1", "A"].pass_hat_k == 0.5
    assert per["s2", "A"].accepted == 1 and per["s2", "A"].at_least_once == 0.5
    seeds = by_seed(rows, k=3)
    assert seeds[0, "A"].accepted == 3 and seeds[0, "A"].units == 2
    assert seeds[1, "A"].accepted == 3 and seeds[1, "A"].pass_hat_k == 0.0
    assert list(by_system([*rows, row(system="B")], k=3)) == ["A", "B"]


def test_repeatability_is_reported_apart_from_variation_across_seeds() -> None:
    rows = fixture_a()
    rep = repeatability(rows, k=3)
    # (s1,0) all accepted and (s2,0) none: they agree; (s1,1) and (s2,1) are mixed
    assert rep.distribution == {0: 1, 1: 1, 2: 1, 3: 1}
    assert (rep.agreeing, rep.mixed, rep.share) == (2, 2, 0.5)
    s1 = seed_variation([r for r in rows if r.scenario == "s1"])
    assert s1.rates == {0: 1.0, 1: pytest.approx(2 / 3)}
    assert (s1.low, s1.high) == (pytest.approx(2 / 3), 1.0)
    assert s1.sd == pytest.approx(1 / 6)
    # an incomplete unit (2 of 3 recorded, none accepted) does not count as agreeing
    assert repeatability([row(passed=0), row(passed=0, repetition=2)], k=3).agreeing == 0


def test_completeness_lists_missing_duplicated_and_stray_cells() -> None:
    m = Matrix(("s1", "s2"), (0, 1), ("A",), (1, 2, 3))
    rows = fixture_a()
    assert completeness(rows, m).complete and m.size == 12
    c = completeness([*rows[1:], rows[4], row("s9", 0)], m)
    assert not c.complete
    assert c.missing == [("s1", 0, "A", 1)]
    assert c.duplicates == [("s1", 1, "A", 2)]
    assert c.unexpected == [("s9", 0, "A", 1)]
    msg = c.message()
    assert "INCOMPLETE" in msg and "11 of 12" in msg and "s1 seed 0 A rep 1" in msg


def test_a_desk_task_with_its_own_seed_completes_the_matrix() -> None:
    from runs.campaigns.reading import matrix_from_campaign

    m = matrix_from_campaign({"matrix": {
        "scenarios": [{"name": "s1", "seeds": [0, 1]}, {"name": "task", "seeds": [28]}],
        "seeds": [0, 1], "systems": [{"name": "A"}], "repetitions": 1}})
    assert m.seeds_of("task") == (28,) and m.seeds_of("s1") == (0, 1) and m.size == 3
    rows = [row("s1", 0), row("s1", 1), row("task", 28)]
    assert completeness(rows, m).complete
    assert completeness(rows[:2], m).missing == [("task", 28, "A", 1)]


@st.composite
def row_sets(draw: Any) -> list[AttemptRow]:
    """Random consistent rows: several systems, units and repetitions, every status."""
    out = []
    for system in ("A", "B")[: draw(st.integers(1, 2))]:
        for unit in range(draw(st.integers(1, 5))):
            for rep in range(1, draw(st.integers(1, 4)) + 1):
                status = draw(st.sampled_from(["completed", "timeout", "crashed",
                                               "infrastructure_error"]))
                total = draw(st.integers(0, 6))
                passed = draw(st.integers(0, total))
                verdict = draw(st.sampled_from(["auto", "auto", "grader_error"]))
                out.append(row(f"s{unit % 2}", unit, system, rep, passed=passed,
                               total=total, status=status, verdict=verdict))
    return out


@settings(max_examples=200, deadline=None)
@given(row_sets())
def test_mean_check_fraction_is_never_below_acceptance(rows: list[AttemptRow]) -> None:
    for s in by_system(rows).values():
        assert s.mean_check_fraction is not None and s.pass_at_1 is not None
        assert s.mean_check_fraction >= s.pass_at_1 - 1e-12
        assert s.at_least_once is not None and s.pass_hat_k is not None
        assert s.at_least_once >= s.pass_hat_k


# --- the paired bootstrap ----------------------------------------------------------------

def pairs(a: list[list[bool]], b: list[list[bool]]) -> list[AttemptRow]:
    """Rows of systems A and B: ``a[u][r]`` says whether A's repetition r of unit u passed."""
    out = []
    for system, outcomes in (("A", a), ("B", b)):
        for u, reps in enumerate(outcomes):
            for r, ok in enumerate(reps, 1):
                out.append(row("s", u, system, r, passed=4 if ok else 1))
    return out


def test_the_bootstrap_is_reproducible_from_its_seed() -> None:
    rng = np.random.default_rng(5)
    a = rng.random((15, 3)) < 0.8
    b = rng.random((15, 3)) < 0.6
    rows = pairs(a.tolist(), b.tolist())
    one = paired_bootstrap(rows, "A", "B", resamples=2000, seed=11)
    two = paired_bootstrap(rows, "A", "B", resamples=2000, seed=11)
    assert (one.low, one.high) == (two.low, two.high)
    assert one.seed == 11 and one.resamples == 2000
    other = paired_bootstrap(rows, "A", "B", resamples=2000, seed=12)
    assert (other.low, other.high) != (one.low, one.high)
    assert one.difference == other.difference  # the estimate does not depend on the draws
    d, n = np.array([1, -1, 0, 2]), np.array([3, 3, 3, 3])
    first = bootstrap_differences(d, n, resamples=500, seed=1)
    assert np.array_equal(first, bootstrap_differences(d, n, resamples=500, seed=1))
    assert not np.array_equal(first, bootstrap_differences(d, n, resamples=500, seed=2))
    assert paired_bootstrap(rows, "A", "B", resamples=10).seed == DEFAULT_BOOTSTRAP_SEED


def test_the_bootstrap_resamples_units_with_all_their_repetitions() -> None:
    # A passes all 3 repetitions on 10 of 20 units and none on the others; B never passes.
    a = [[u < 10] * 3 for u in range(20)]
    b = [[False] * 3 for _ in range(20)]
    rows = pairs(a, b)
    cmp = paired_bootstrap(rows, "A", "B", resamples=4000, seed=3)
    assert cmp.difference == 0.5 and cmp.units == 20 and cmp.attempts == 60
    d = np.array([3 if u < 10 else 0 for u in range(20)])
    reps = bootstrap_differences(d, np.full(20, 3), resamples=4000, seed=3)
    # every replicate counts whole units (multiples of 1/20), never single attempts (1/60)
    assert np.allclose(reps * 20, np.round(reps * 20))
    # resampling the 60 attempts as if independent would understate the spread ~ sqrt(3) x
    flat = np.repeat(d / 3, 3)
    rng = np.random.default_rng(3)
    naive = flat[rng.integers(0, 60, size=(4000, 60))].mean(axis=1)
    naive_width = np.subtract(*np.percentile(naive, [97.5, 2.5]))
    assert cmp.high - cmp.low > 1.4 * naive_width
    assert cmp.low < 0.5 < cmp.high


def test_the_bootstrap_pairs_both_systems_on_each_drawn_unit() -> None:
    # on every unit A passes 2 of 3 and B 1 of 3, though units differ in which ones:
    # drawn together, every replicate's difference is exactly 1/3
    a = [[True, True, False], [False, True, True], [True, False, True]] * 4
    b = [[False, False, True], [True, False, False], [False, True, False]] * 4
    rows = pairs([list(x) for x in a], [list(x) for x in b])
    cmp = paired_bootstrap(rows, "A", "B", resamples=1000, seed=9)
    assert cmp.low == pytest.approx(1 / 3) and cmp.high == pytest.approx(1 / 3)
    assert cmp.attempts_table.both == 0 and cmp.attempts_table.neither == 0
    assert (cmp.attempts_table.only_a, cmp.attempts_table.only_b) == (24, 12)


def test_the_two_by_two_tables_over_attempts_and_units() -> None:
    a = [[True, True, True], [True, False, True], [False, False, False]]
    b = [[True, True, True], [True, True, False], [True, False, False]]
    cmp = paired_bootstrap(pairs(a, b), "A", "B", resamples=100, seed=1)
    t = cmp.attempts_table
    assert (t.both, t.only_a, t.only_b, t.neither) == (4, 1, 2, 2) and t.total == 9
    u = cmp.units_table  # all-3 acceptance per unit: A only unit 0, B only unit 0
    assert (u.both, u.only_a, u.only_b, u.neither) == (1, 0, 0, 2)
    assert (cmp.accepted_a, cmp.accepted_b) == (5, 6)
    assert cmp.difference == pytest.approx(-1 / 9)
    assert math.isclose(cmp.pass_a - cmp.pass_b, cmp.difference)


def test_compare_refuses_systems_run_on_different_matrices() -> None:
    rows = pairs([[True] * 3] * 4, [[False] * 3] * 4)
    missing_rep = [r for r in rows if not (r.system == "B" and r.seed == 2
                                           and r.repetition == 3)]
    with pytest.raises(UnpairedSystems, match=r"s seed 2: A has repetitions \[1, 2, 3\], B "
                                             r"has \[1, 2\]"):
        paired_bootstrap(missing_rep, "A", "B")
    extra_unit = [*rows, row("s", 99, "A", 1)]
    with pytest.raises(UnpairedSystems, match="s seed 99 only has attempts of A"):
        paired_bootstrap(extra_unit, "A", "B")
    with pytest.raises(ValueError, match="'C' has no attempts"):
        paired_bootstrap(rows, "A", "C")


def test_transitions_between_verdicts() -> None:
    table = transitions([("A", "accepted", "rejected"), ("A", "rejected", "accepted"),
                         ("A", "grader_error", "accepted"), ("A", None, None),
                         ("B", "rejected", "rejected")])
    assert table["A"]["accepted", "rejected"] == 1
    assert table["A"]["rejected", "accepted"] == 1
    assert table["A"]["ungraded", "accepted"] == 1
    assert table["A"]["no verdict", "no verdict"] == 1
    assert table["B"] == {("rejected", "rejected"): 1}
