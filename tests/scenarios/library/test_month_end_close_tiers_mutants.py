"""month-end-close's mutants at its easy and hard tiers (``erpsim validate month-end-close
--mutants --seeds 0-2 --tier T``).

At the hard tier, seed 2, ``late_backdated turn 4 #68 ApplyVendorCredit`` survived: a
vendor credit note recorded at the turn it arrived, its application to the bill it credits
held to the next turn and dated back to the day of its own turn, passed every check. The
prompt asks at each turn to record the credit notes and apply each to the bill it credits,
the application dated today (rule 10: every entry dated as it happened); the dating check
now has the application on the day of the turn that makes it, as it has the receipts'.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.attempt import run_attempt
from runs.validate import Mutation, ReplayAgent
from scenarios.loader import find_scenario, load_scenario
from tests.scenarios.library.attempts import shared_attempt

pytestmark = pytest.mark.xdist_group("month-end-close-hard-2")

SEED = 2
TIER = "hard"


def test_a_credit_application_held_a_turn_and_dated_back_fails(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    loaded = load_scenario(find_scenario("month-end-close"), tier=TIER)
    ref, recording = shared_attempt(tmp_path_factory, "month-end-close", SEED, tier=TIER)
    assert ref.summary["verdict"]["accepted"], ref.summary["verdict"]
    last = max(recording.commands)
    n, index = next((t, i) for t in sorted(recording.commands) if t < last
                    for i, cmd in enumerate(recording.commands[t])
                    if type(cmd).__name__ == "ApplyVendorCredit")
    agent = ReplayAgent(recording, ref.out / "turns",
                        Mutation("late_backdated", n, index, "ApplyVendorCredit"))
    res = run_attempt(loaded, SEED, "replay", tmp_path / "late", agent=agent)
    assert agent.applied is not None and "held from turn" in agent.applied
    assert res.summary["verdict"]["failed"] == ["entries-dated-in-their-period"], (
        agent.applied, res.summary["verdict"])
