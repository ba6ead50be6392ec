"""fixed-assets: wrong clerks the checks once accepted (an adversarial audit).

Each clerk is the reference with one twist at the close of June, run as a real attempt
(medium tier, seed 0):

- the sale's gain moved off 4800 by a journal entry (Dr 4800, Cr 6060): the disposal
  itself is right, the gain ends on the wrong account;
- an expensed line recoded by a journal entry (Dr 6050, Cr 6060): the bill is coded as
  the policy says, the expense ends on the other account.

Both are refused by the ``policy-accounts-only-by-documents`` query (no journal entry of
the agent's on 1250, 4800, 6050, 6060 or 6500; one straight to a class account is
``class-accounts-tie``'s); the reference of the same instance passes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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


class _Clerk:
    """The reference, then one journal entry at the close of June."""

    def __init__(self, name: str, debit: str, credit: str) -> None:
        self.name, self.debit, self.credit = name, debit, credit

    def run_turn(self, desk: TurnContext) -> None:
        load_solver(library_dir() / NAME / "solver.py").reference(desk)
        if desk.day == JUNE_CLOSE:
            done = desk.execute(c.PostJournalEntry(
                entry_date=date(2026, 6, 30), memo="reclass",
                lines=(c.JournalLineIn(account=self.debit, debit=10_000),
                       c.JournalLineIn(account=self.credit, credit=10_000))))
            assert isinstance(done, list), done


CLERKS: dict[str, Callable[[], _Clerk]] = {
    "gain-moved": lambda: _Clerk("gain-moved", "4800", "6060"),
    "expense-recoded": lambda: _Clerk("expense-recoded", "6050", "6060"),
}


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("fixed-assets-audit")
    out = {"reference": run_attempt(loaded, 0, "reference", root / "reference")}
    for name, make in CLERKS.items():
        out[name] = run_attempt(loaded, 0, name, root / name, agent=make())
    yield out


def test_the_reference_passes(attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["reference"].out) == set()


@pytest.mark.parametrize(("name", "accounts"), [("gain-moved", ("4800", "6060")),
                                                ("expense-recoded", ("6050", "6060"))])
def test_a_journal_entry_on_the_policys_accounts_is_refused(
        attempts: dict[str, AttemptResult], name: str, accounts: tuple[str, str]) -> None:
    assert failed_checks(attempts[name].out) == {"no-manual-journal-entries",
                                                 "policy-accounts-only-by-documents"}
    detail = check_results(attempts[name].out)["policy-accounts-only-by-documents"]["detail"]
    assert all(f"account='{a}'" in detail for a in accounts), detail
