"""accruals-and-prepaids: a second false-accept audit (real attempts, medium tier, seed 0).

Each clerk is the reference with one twist at the close of June (the turn of 2026-07-01):

- July's amortization run as well (``erp prepaids amortize 2026-07``): the books post it
  dated 2026-07-31, a month not over yet, and ``prepaids-amortized`` judges May and June
  only, ``prepaid-account-ties-to-schedules`` ties (both sides moved);
- a July accrual posted as well, dated 2026-07-31 (``may-accrued``/``june-accrued`` judge
  their own months; ``journal-entries-only-accruals`` passes a flagged accrual).

Both were accepted; ``no-posting-after-its-turn`` (no posting of the agent's dated after
the turn that wrote it) now refuses them. Still accepted: the reference, and a clerk who
records each prepaid schedule by its last month (``end_period``) instead of its months.

Tried and rightly refused (not kept here): a schedule of one month for a 6- or 12-month
cover (``prepaids-scheduled``, ``prepaids-amortized``). Tried and accepted, as harmless:
last month's accruals reversed already at this close, dated the first of this month (the
books' own reversal, on its own day).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import pytest

from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed

NAME = "accruals-and-prepaids"
JUNE_CLOSE = date(2026, 7, 1)
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    def __init__(self, name: str, turn: Callable[[TurnContext], None]) -> None:
        self.name = name
        self.run_turn = turn


def _july_amortized(desk: TurnContext) -> None:
    solver.reference(desk)
    if desk.day == JUNE_CLOSE:
        done = desk.execute(c.RunAmortization(period="2026-07"))
        assert isinstance(done, list) and done, done


def _july_accrued(desk: TurnContext) -> None:
    solver.reference(desk)
    if desk.day == JUNE_CLOSE:
        vendor = sorted(desk.ledger.books.vendors)[0]
        done = desk.execute(c.PostAccrual(
            entry_date=date(2026, 7, 31), memo="July fee",
            lines=(c.JournalLineIn(account="6000", debit=50_000, party=vendor),
                   c.JournalLineIn(account="2100", credit=50_000, party=vendor))))
        assert isinstance(done, list), done


def _by_end_period(desk: TurnContext) -> None:
    def route(real: Execute, cmd: c.Command) -> Any:
        if isinstance(cmd, c.RecordPrepaid) and cmd.months:
            last = int(cmd.start_period[:4]) * 12 + int(cmd.start_period[5:]) - 1 \
                + cmd.months - 1
            cmd = cmd.model_copy(update={"months": None,
                                         "end_period": f"{last // 12:04d}-{last % 12 + 1:02d}"})
        return real(cmd)

    with routed(desk, route):
        solver.reference(desk)


CLERKS = {"july-amortized": _july_amortized, "july-accrued": _july_accrued,
          "by-end-period": _by_end_period}


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("accruals-audit2")
    out = {"reference": run_attempt(loaded, 0, "reference", root / "reference")}
    for name, turn in CLERKS.items():
        out[name] = run_attempt(loaded, 0, name, root / name, agent=_Clerk(name, turn))
    yield out


def test_the_reference_and_a_schedule_by_its_last_month_are_accepted(
        attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["reference"].out) == set()
    assert failed_checks(attempts["by-end-period"].out) == set()
    assert check_results(attempts["reference"].out)["no-posting-after-its-turn"]["passed"]


@pytest.mark.parametrize("clerk", ["july-amortized", "july-accrued"])
def test_a_month_not_over_yet_posted_ahead_is_refused(
        attempts: dict[str, AttemptResult], clerk: str) -> None:
    out = attempts[clerk].out
    assert failed_checks(out) == {"no-posting-after-its-turn"}
    detail = check_results(out)["no-posting-after-its-turn"]["detail"]
    assert "entry_date='2026-07-31', business_date='2026-07-01'" in detail
