"""fixed-assets: a second false-accept audit (real attempts, medium tier, seed 0).

Tried and rightly refused: depreciation run before the month's disposal (the sold asset
depreciated in its month of sale: ``depreciation-run``, ``sale-disposed``), the disposal
dated the turn's day instead of the sale's (``sale-disposed``). July's depreciation run at
the close of June (dated 2026-07-31, a month not over yet) was refused by
``class-accounts-tie`` alone; it is now also ``no-posting-after-its-turn``'s, the check
the three close templates share. The reference is accepted.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest

from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks

NAME = "fixed-assets"
JUNE_CLOSE = date(2026, 7, 1)
solver = load_solver(library_dir() / NAME / "solver.py")


class _JulyAhead:
    name = "july-depreciated"

    def run_turn(self, desk: TurnContext) -> None:
        solver.reference(desk)
        if desk.day == JUNE_CLOSE:
            done = desk.execute(c.RunDepreciation(period="2026-07"))
            assert isinstance(done, list) and done, done


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("fixed-assets-audit2")
    yield {"reference": run_attempt(loaded, 0, "reference", root / "reference"),
           "july": run_attempt(loaded, 0, "july", root / "july", agent=_JulyAhead())}


def test_the_reference_is_accepted(attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["reference"].out) == set()


def test_next_months_depreciation_posted_ahead_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    out = attempts["july"].out
    assert failed_checks(out) == {"class-accounts-tie", "no-posting-after-its-turn"}
    assert "entry_date='2026-07-31', business_date='2026-07-01'" in \
        check_results(out)["no-posting-after-its-turn"]["detail"]
