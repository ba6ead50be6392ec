"""Every fact a library scenario's prompt states is true of the books and the inbox at the turn.

An agent wrapping the reference reads each turn's rendered prompt before acting and checks
every count, date and role it states against the books, queried another way than the
prompt was filled (the log and the subledgers rather than the documents table), and
against the turn's workspace. Every turn of every library scenario, on 20 seeds (the
full set is marked slow; seeds 0-1 run always).
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from erp import queries as q
from erp.store import EventStore
from runs.attempt import run_attempt
from scenarios.agents import Agent, built_in_agent
from scenarios.loader import find_scenario, load_scenario
from scenarios.turn import TurnContext

LIBRARY = ("cash-application", "procure-to-pay", "month-end-close")


def _unapplied(store: EventStore) -> int:
    return sum(1 for i in q.open_items(store, "unapplied_cash") if i.open_amount > 0)


def _latest_receipt(store: EventStore) -> str:
    days = [e.data["entry_date"] for e in store.read(realm="erp", types=["receipt_recorded"])]
    return max(days) if days else "none yet"


def _unmatched(store: EventStore) -> int:
    matched: dict[str, bool] = {}
    for e in store.read(realm="erp", types=["statement_line_imported", "statement_line_matched",
                                            "statement_line_unmatched"]):
        matched[e.data["line_id"]] = e.type == "statement_line_matched"
    return sum(1 for m in matched.values() if not m)


def _open_approved_bills(store: EventStore) -> int:
    approved = {e.data["bill_id"] for e in store.read(realm="erp", types=["bill_approved"])}
    return sum(1 for i in q.open_items(store, "ap") if i.doc_kind == "bill"
               and i.doc_id in approved and i.open_amount > 0)


class FactChecker:
    """Checks the turn's prompt against the books, then lets the reference act."""

    name = "fact-checker"

    def __init__(self, inner: Agent, scenario: str) -> None:
        self.inner = inner
        self.scenario = scenario
        self.checked: list[str] = []
        self.wrong: list[str] = []
        """What the prompt got wrong (a turn's exception would be kept by the runner as
        the turn's error, so the checker records instead of raising)."""

    def _fact(self, pattern: str, text: str, want: object, what: str) -> None:
        m = re.search(pattern, text, re.S)
        assert m is not None, f"{self.scenario}: the prompt no longer states {what}:\n{text}"
        assert m.group(1) == str(want), (f"{self.scenario}: the prompt says {what} is "
                                         f"{m.group(1)!r}; the books say {want!r}")
        self.checked.append(what)

    def run_turn(self, desk: TurnContext) -> None:
        """Check every stated fact (recording what is wrong), then act as the reference."""
        try:
            self._check(desk)
        except AssertionError as e:
            self.wrong.append(f"turn {desk.turn} ({desk.day}): {e}")
        self.inner.run_turn(desk)

    def _check(self, desk: TurnContext) -> None:
        text = desk.prompt_file.read_text(encoding="utf-8")
        store = desk.store
        self._fact(r"(\d+) (?:new|in `inbox/`)", text, len(desk.inbox()),
                   "the new documents in inbox/")
        self._fact(r"\(turn (\d+) of \d+\)", text, desk.turn, "the turn's number")
        if self.scenario == "cash-application":
            self._fact(r"now hold (\d+) unapplied\s+receipts", text, _unapplied(store),
                       "the unapplied receipts")
            self._fact(r"deposits of\s+(.+?);", text, _latest_receipt(store),
                       "the latest deposits recorded")
            policy = "cash-application-policy.md"
            where = {p.name for p in (desk.inbox() if desk.turn == 1 else desk.archive())}
            assert policy in where, f"the policy is not where the prompt says (turn {desk.turn})"
            self.checked.append("where the policy is")
        if self.scenario == "month-end-close":
            self._fact(r"You are the (\w+) of", text, desk.role, "the role")
            self._fact(r"\(role `(\w+)` in the books\)", text, desk.role, "the role in the books")
            self._fact(r"hold\s+(\d+) unapplied receipts", text, _unapplied(store),
                       "the unapplied receipts")
            self._fact(r"(\d+) unmatched statement lines", text, _unmatched(store),
                       "the unmatched statement lines")
            self._fact(r"(\d+)\s+approved bills still open", text, _open_approved_bills(store),
                       "the approved bills still open")
            if desk.day == date(2026, 6, 1):
                assert desk.role == "controller", "June 1 is said to be the controller's turn"
        assert f"{desk.day:%A} {desk.day.isoformat()}" in text.splitlines()[0], "the date"
        if self.scenario == "procure-to-pay":
            self._fact(r"(\d+) approved bills still open", text, _open_approved_bills(store),
                       "the approved bills still open")


def _run(name: str, seed: int, tmp: Path) -> FactChecker:
    loaded = load_scenario(find_scenario(name))
    # The reference solver reads only the turn (it takes no world).
    checker = FactChecker(built_in_agent("reference", loaded, None), name)  # type: ignore[arg-type]
    res = run_attempt(loaded, seed, "fact-checker", tmp / f"{name}-{seed}", replace=True,
                      agent=checker)
    assert res.summary["verdict"]["status"] == "accepted", res.summary["verdict"]["failed"]
    assert [t["status"] for t in res.summary["turns"]] == ["completed"] * len(
        res.summary["turns"])
    assert not checker.wrong, "\n".join(checker.wrong)
    return checker


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", LIBRARY)
def test_every_stated_fact_is_true(name: str, seed: int, tmp_path: Path) -> None:
    checker = _run(name, seed, tmp_path)
    assert checker.checked


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 20))
@pytest.mark.parametrize("name", LIBRARY)
def test_every_stated_fact_is_true_on_20_seeds(name: str, seed: int, tmp_path: Path) -> None:
    checker = _run(name, seed, tmp_path)
    assert checker.checked
