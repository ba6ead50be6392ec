"""Campaign metrics pinned where the mutation gate found them loose: repeatability's
distribution and agreement on units chosen so no two rules give the same figures, seed
variation's figures (and none for no rows), and the bootstrap's refusals and shape."""

from __future__ import annotations

import numpy as np
import pytest

from runs.campaigns.ledger import AttemptRow
from runs.campaigns.metrics import (
    Repeatability,
    SeedVariation,
    UnpairedSystems,
    bootstrap_differences,
    check_fraction,
    is_accepted,
    nearest_rank,
    paired_bootstrap,
    repeatability,
    repetitions_per_unit,
    seed_variation,
    summarize,
)
from tests.runs.campaigns.test_metrics import row


def _unit(scenario: str, seed: int, accepted: list[bool]) -> list[AttemptRow]:
    return [row(scenario, seed, repetition=i + 1, passed=4 if ok else 0)
            for i, ok in enumerate(accepted)]


def test_repeatability_counts_each_number_of_accepted_repetitions() -> None:
    rows = (_unit("s", 0, [True, True, True]) + _unit("s", 1, [False, False, False])
            + _unit("s", 2, [False, False, False]) + _unit("s", 3, [True, False, False]))
    rep = repeatability(rows, k=3)
    assert rep == Repeatability(k=3, units=4, distribution={0: 2, 1: 1, 2: 0, 3: 1},
                                agreeing=3, share=0.75)
    assert rep.mixed == 1


def test_a_unit_with_one_accepted_repetition_of_k_does_not_agree() -> None:
    rep = repeatability(_unit("s", 0, [True, False, False, False]), k=4)
    assert (rep.agreeing, rep.share, rep.distribution) == (0, 0.0, {0: 0, 1: 1, 2: 0, 3: 0,
                                                                    4: 0})


def test_repeatability_k_defaults_to_the_most_repetitions_recorded() -> None:
    rows = _unit("s", 0, [True, True]) + _unit("s", 1, [True])
    rep = repeatability(rows)
    assert rep.k == 2
    assert rep.distribution == {0: 0, 1: 1, 2: 1}
    assert (rep.agreeing, rep.units) == (1, 2)  # the unit of one repetition is incomplete


def test_repeatability_of_no_rows() -> None:
    assert repeatability([], k=2) == Repeatability(k=2, units=0,
                                                   distribution={0: 0, 1: 0, 2: 0},
                                                   agreeing=0, share=None)


def test_seed_variation_figures() -> None:
    rows = (_unit("s", 0, [True, True]) + _unit("s", 1, [True, False])
            + _unit("s", 2, [False, False]))
    v = seed_variation(rows)
    assert v.rates == {0: 1.0, 1: 0.5, 2: 0.0}
    assert (v.mean, v.low, v.high) == (0.5, 0.0, 1.0)
    assert v.sd == pytest.approx(np.std([1.0, 0.5, 0.0]))


def test_seed_variation_of_no_rows_is_all_unknown() -> None:
    assert seed_variation([]) == SeedVariation({}, None, None, None, None)


def test_the_bootstrap_refuses_no_units_and_no_resamples() -> None:
    with pytest.raises(ValueError) as info:
        bootstrap_differences(np.array([]), np.array([]), resamples=10, seed=1)
    assert str(info.value) == "no units to resample"
    with pytest.raises(ValueError) as info:
        bootstrap_differences(np.array([1.0]), np.array([1]), resamples=0, seed=1)
    assert str(info.value) == "resamples must be at least 1, got 0"


def test_one_unit_and_one_resample_are_enough() -> None:
    out = bootstrap_differences(np.array([1.0]), np.array([2]), resamples=1, seed=3)
    assert out.dtype == np.float64 and out.tolist() == [0.5]
    out = bootstrap_differences(np.array([1.0, -1.0]), np.array([2, 2]), resamples=1, seed=3)
    assert out.shape == (1,) and out[0] in (-0.5, 0.0, 0.5)


def test_the_bootstrap_reads_integer_differences_as_fractions() -> None:
    # integer arrays in: the replicates are still exact fractions, never floor-divided
    out = bootstrap_differences(np.array([1, 1, 1]), np.array([3, 3, 3]), resamples=4, seed=0)
    assert out.tolist() == [1 / 3] * 4


def test_nearest_rank_takes_p_up_to_one_and_names_a_bad_p() -> None:
    assert nearest_rank([3.0, 1.0, 2.0], 1) == 3.0
    for p in (0, 1.5, 2, -0.1):
        with pytest.raises(ValueError) as info:
            nearest_rank([1.0], p)
        assert str(info.value) == f"p must be in (0, 1], got {p}"


def test_repetitions_per_unit() -> None:
    assert repetitions_per_unit([]) == 0
    assert repetitions_per_unit(_unit("s", 0, [True, False]) + _unit("s", 1, [True])) == 2


def test_summarize_no_rows() -> None:
    s = summarize([])
    assert (s.attempts, s.k, s.units, s.all_k_units, s.pass_at_1, s.pass_hat_k,
            s.mean_check_fraction, s.total_cost_usd, s.durations_known,
            s.median_duration_s) == (0, 0, 0, 0, None, None, None, None, 0, None)


def test_pass_hat_k_for_k_one_and_zero() -> None:
    rows = _unit("s", 0, [True]) + _unit("s", 1, [False]) + _unit("s", 2, [True])
    assert summarize(rows, k=1).all_k_units == 2
    assert summarize(rows, k=0).all_k_units == 0  # k = 0 asks for nothing: no unit counts


def test_summarize_counts_statuses_and_known_durations() -> None:
    rows = [row(repetition=1, status="crashed", passed=0), row(repetition=2, status="timeout",
                                                              passed=0),
            row(repetition=3), row(repetition=4, duration=None)]  # type: ignore[arg-type]
    s = summarize(rows)
    assert (s.completed, s.crashed, s.timeouts) == (2, 1, 1)
    assert s.durations_known == 3


def test_a_repetition_recorded_twice_is_named() -> None:
    rows = [row(system="A"), row(system="A"), row(system="B")]
    with pytest.raises(UnpairedSystems) as info:
        paired_bootstrap(rows, "A", "B", resamples=10)
    assert str(info.value) == "system A: s1 seed 0 repetition 1 is recorded twice"


def test_the_check_fraction_comparison_fields() -> None:
    rows = [row(system="A", passed=3, total=4), row(system="B", passed=1, total=4),
            row(system="A", seed=1, passed=4, total=4), row(system="B", seed=1, passed=2,
                                                            total=4)]
    c = paired_bootstrap(rows, "A", "B", resamples=50, seed=7, level=0.9,
                         measure="check-fraction")
    assert (c.a, c.b, c.units, c.attempts, c.level, c.resamples, c.seed, c.measure) == (
        "A", "B", 2, 2, 0.9, 50, 7, "check-fraction")
    assert (c.pass_a, c.pass_b) == (pytest.approx(7 / 8), pytest.approx(3 / 8))
    assert c.difference == pytest.approx(0.5)
    assert c.low <= 0.5 <= c.high


def test_check_fraction_of_one_required_check_is_its_result_not_the_verdict() -> None:
    # one required check: the fraction is passed / 1, whatever the verdict says
    assert check_fraction(row(passed=1, total=1, verdict="rejected")) == 1.0
    assert check_fraction(row(passed=0, total=1, verdict="accepted")) == 0.0
    # no required check: the verdict decides
    assert check_fraction(row(passed=0, total=0, verdict="accepted")) == 1.0
    assert check_fraction(row(passed=0, total=0, verdict="rejected")) == 0.0


def test_summarize_counts_grader_errors() -> None:
    rows = [row(repetition=1, verdict="grader_error"), row(repetition=2),
            row(repetition=3, passed=1)]
    assert summarize(rows).grader_errors == 1
    assert summarize(rows[1:]).grader_errors == 0


def test_repeatability_with_more_repetitions_than_k_counts_them_all() -> None:
    # k below the repetitions recorded: a unit's accepted count can exceed k, and it is
    # counted once under that number (the unit has too many repetitions to agree)
    rep = repeatability(_unit("s", 0, [True, True]) + _unit("s", 1, [True]), k=1)
    assert rep.distribution == {0: 0, 1: 1, 2: 1}
    assert (rep.units, rep.agreeing, rep.share) == (2, 1, 0.5)


def test_an_unknown_measure_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError) as info:
        paired_bootstrap([row(system="A"), row(system="B")], "A", "B", measure="pass^k")
    assert str(info.value) == ("unknown measure 'pass^k' (expected one of: acceptance, "
                               "check-fraction)")


def test_the_bootstrap_draws_one_stream_whatever_the_chunking() -> None:
    # 666,667 units: chunks of 2 replicates, so 3 resamples end on a chunk of 1; the
    # replicates are those of one block of draws from numpy.random.default_rng(seed)
    units = 666_667
    d = (np.arange(units) % 3 - 1).astype(np.float64)
    n = np.full(units, 2)
    out = bootstrap_differences(d, n, resamples=3, seed=5)
    idx = np.random.default_rng(5).integers(0, units, size=(3, units))
    assert out.tolist() == (d[idx].sum(axis=1) / n[idx].sum(axis=1)).tolist()


def test_integer_differences_are_summed_as_floats_without_wrapping() -> None:
    # int64 would wrap 2**62 + 2**62 to -2**63; the replicates are computed in float64
    out = bootstrap_differences(np.array([2**62, 2**62]), np.array([1, 1]), resamples=3,
                                seed=1)
    assert out.tolist() == [float(2**62)] * 3


def _spread_rows() -> list[AttemptRow]:
    """A and B on 12 units of 2 repetitions, with varied differences and fractions."""
    rows = []
    for seed in range(12):
        for rep in (1, 2):
            a_ok = (seed + rep) % 3 != 0
            b_ok = seed % 4 == 0 and rep == 1
            rows.append(row("s", seed, "A", rep, passed=4 if a_ok else seed % 4, total=4))
            rows.append(row("s", seed, "B", rep, passed=4 if b_ok else rep, total=4))
    return rows


@pytest.mark.parametrize("measure, level, tails", [("acceptance", 0.95, [2.5, 97.5]),
                                                   ("check-fraction", 0.8, [10.0, 90.0])])
def test_the_interval_is_the_percentile_interval_of_the_replicates(
        measure: str, level: float, tails: list[float]) -> None:
    rows = _spread_rows()
    c = paired_bootstrap(rows, "A", "B", resamples=400, seed=11, level=level, measure=measure)
    by = {(r.system, r.seed, r.repetition): r for r in rows}
    value = (is_accepted if measure == "acceptance" else check_fraction)
    diff = np.array([sum(float(value(by["A", s, k])) - float(value(by["B", s, k]))
                         for k in (1, 2)) for s in range(12)])
    reps = bootstrap_differences(diff, np.full(12, 2), resamples=400, seed=11)
    low, high = np.percentile(reps, tails)
    assert (c.low, c.high) == (float(low), float(high))
    # the replicates are spread, so another tail would give another interval
    assert np.percentile(reps, [tails[0] * 0.6, 100 - tails[0] * 0.6]).tolist() != [low, high]
    assert low < c.difference < high
