"""accruals-and-prepaids: wrong clerks the checks once accepted (an adversarial audit).

Each clerk is the reference with one twist, run as a real attempt (medium tier, seed 0):

- one accrual entry for all of a month's vendors, its one credit on 2100 naming the first
  vendor (the right totals per vendor on the debits, the liability on the wrong party):
  refused by ``accruals_as_due`` (one vendor per accrual, its credit what its debits
  accrue);
- June's amortization run at the close of May, ahead of the month it expenses (and not
  again at June's close): refused by ``prepaids_amortized`` (a period's month posted at
  the close of that period) and ``no-posting-after-its-turn`` (dated 2026-06-30);
- a plain journal entry on 2100 besides the accruals (an unflagged accrual, never
  reversed), and one recoding a cost from 6000 to 6200: refused by the
  ``journal-entries-only-accruals`` query (the agent's journal entries are its accruals).

- one of May's accruals reversed by hand on June 15, the others by the reversal run
  (seed 1, five May accruals): refused by the ``may-reversal-run-on-june-1`` query (the
  run reversed every May accrual).

The reference of the same instance passes each of those checks.
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
MAY_CLOSE, JUNE_CLOSE = date(2026, 6, 1), date(2026, 7, 1)


def _reference(desk: TurnContext) -> None:
    load_solver(library_dir() / NAME / "solver.py").reference(desk)


class _Clerk:
    def __init__(self, name: str, turn: Callable[[TurnContext], None]) -> None:
        self.name = name
        self.run_turn = turn


def _merged(desk: TurnContext) -> None:
    held: list[c.PostAccrual] = []

    def hold(real: Execute, cmd: c.Command) -> Any:
        if isinstance(cmd, c.PostAccrual):
            held.append(cmd)
            return []
        return real(cmd)

    with routed(desk, hold):
        _reference(desk)
    if held:
        debits = [line for cmd in held for line in cmd.lines if line.debit]
        total = sum(x.debit or 0 for x in debits)
        desk.execute(c.PostAccrual(
            entry_date=held[0].entry_date, memo="month-end accruals",
            lines=(*debits, c.JournalLineIn(account="2100", credit=total,
                                            party=debits[0].party))))


def _june_ahead(desk: TurnContext) -> None:
    _reference(desk)
    if desk.day == MAY_CLOSE:
        desk.execute(c.RunAmortization(period="2026-06"))


def _plain_accrual(desk: TurnContext) -> None:
    _reference(desk)
    if desk.day == JUNE_CLOSE:
        vendor = sorted(desk.ledger.books.vendors)[0]
        desk.execute(c.PostJournalEntry(entry_date=date(2026, 6, 30), memo="accrue by hand",
                                        lines=(c.JournalLineIn(account="6000", debit=12_345,
                                                               party=vendor),
                                               c.JournalLineIn(account="2100", credit=12_345,
                                                               party=vendor))))


def _recode(desk: TurnContext) -> None:
    _reference(desk)
    if desk.day == JUNE_CLOSE:
        desk.execute(c.PostJournalEntry(entry_date=date(2026, 6, 30), memo="recode",
                                        lines=(c.JournalLineIn(account="6200", debit=10_000),
                                               c.JournalLineIn(account="6000", credit=10_000))))


def _one_by_hand(desk: TurnContext) -> None:
    def by_hand(real: Execute, cmd: c.Command) -> Any:
        if not isinstance(cmd, c.ReverseAccruals):
            return real(cmd)
        due = sorted(a.entry_id for a in desk.ledger.books.accrual_books.accruals.values()
                     if a.period == cmd.period)
        assert len(due) > 1, due
        real(c.ReverseJournalEntry(entry_id=due[0], entry_date=date(2026, 6, 15)))
        return real(cmd.model_copy(update={"entry_ids": tuple(due[1:])}))

    with routed(desk, by_hand):
        _reference(desk)


CLERKS = {"merged": _merged, "june-ahead": _june_ahead, "plain-accrual": _plain_accrual,
          "recode": _recode}


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp("accruals-audit")
    out = {"reference": run_attempt(loaded, 0, "reference", root / "reference")}
    for name, turn in CLERKS.items():
        out[name] = run_attempt(loaded, 0, name, root / name, agent=_Clerk(name, turn))
    # seed 1 has five May accruals (seed 0 one)
    out["reference-1"] = run_attempt(loaded, 1, "reference", root / "reference-1")
    out["one-by-hand"] = run_attempt(loaded, 1, "one-by-hand", root / "one-by-hand",
                                     agent=_Clerk("one-by-hand", _one_by_hand))
    yield out


def test_the_reference_passes_the_audited_checks(attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["reference"].out) == set()
    assert failed_checks(attempts["reference-1"].out) == set()


def test_one_accrual_for_all_vendors_on_one_vendors_credit_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["merged"].out) == {"june-accrued"}
    detail = check_results(attempts["merged"].out)["june-accrued"]["detail"]
    assert "vendors" in detail and "not one" in detail
    assert "credit on 2100 differs from its debits by" in detail


def test_a_month_amortized_ahead_of_its_close_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    # dated 2026-06-30, written on 2026-06-01: also a posting dated after its turn
    assert failed_checks(attempts["june-ahead"].out) == {"prepaids-amortized",
                                                         "no-posting-after-its-turn"}
    detail = check_results(attempts["june-ahead"].out)["prepaids-amortized"]["detail"]
    assert "for 2026-06 written in the turn of 2026-06-01, not the close of 2026-06" in detail


def test_a_plain_journal_entry_on_accrued_liabilities_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["plain-accrual"].out) == {"journal-entries-only-accruals"}
    assert "amount=-12345" in check_results(attempts["plain-accrual"].out)[
        "journal-entries-only-accruals"]["detail"]


def test_a_journal_entry_recoding_a_cost_is_refused(attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["recode"].out) == {"journal-entries-only-accruals"}
    detail = check_results(attempts["recode"].out)["journal-entries-only-accruals"]["detail"]
    assert "account='6200'" in detail and "account='6000'" in detail


def test_an_accrual_reversed_by_hand_on_another_day_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    assert failed_checks(attempts["one-by-hand"].out) == {"may-reversal-run-on-june-1"}
