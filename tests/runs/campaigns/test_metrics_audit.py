"""Audit of the campaign metrics against the methods' definitions: pass^k as the
observed joint outcome of every recorded repetition, acceptance only from an accepted
verdict."""

from __future__ import annotations

import pytest

from runs.campaigns.ledger import AttemptRow
from runs.campaigns.metrics import by_scenario, is_accepted, summarize
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
