"""fixed-assets, audited for false rejects: correct work done another way than the
reference's (real attempts, hard tier).

Accepted: the assets capitalized after every bill of the turn, in reverse order, with
descriptions, bill lines (in reverse order, lower case) and the disposal's reference in
the clerk's own words: assets are matched to their bill by what they are, not by order or
text.

Refused, and now said by the prompt: a clerk who waits to capitalize an asset placed in
service after the month (seed 2: an upgrade invoiced 2026-05-25, in service 2026-06-07)
until the close after, dating it the bill's invoice date as the prompt says, writes a May
entry at the July close (entries-dated-in-their-period). The prompt said when to date the
capitalization but not at which close to make it; it now says at the close that enters the
bill, also for an asset placed in service later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import (
    Execute,
    check_results,
    failed_checks,
    read_verdict,
    routed,
)

NAME = "fixed-assets"
solver = load_solver(library_dir() / NAME / "solver.py")


def _attempt(tmp: Path, seed: int, agent: Any) -> Path:
    return run_attempt(load_scenario(find_scenario(NAME), tier="hard"), seed, agent.name,
                       tmp / "a", agent=agent).out


class _OwnOrderAndWords:
    """The reference with its capitalizations held to the end of the turn's bills (before
    the disposal and the depreciation run) and made in reverse order, and its texts in the
    clerk's own words."""

    name = "own-order-and-words"

    def __init__(self) -> None:
        self.capitalized = 0

    def run_turn(self, desk: TurnContext) -> None:
        held: list[c.CapitalizeAsset] = []

        def flush(real: Execute) -> None:
            while held:
                done = real(held.pop())
                assert isinstance(done, list), done
                self.capitalized += 1

        def route(real: Execute, cmd: c.Command) -> Any:
            if isinstance(cmd, c.EnterBill):
                cmd = cmd.model_copy(update={"lines": tuple(
                    x.model_copy(update={"description": x.description.lower() + " (entered)"})
                    for x in reversed(cmd.lines))})
            if isinstance(cmd, c.CapitalizeAsset):
                held.append(cmd.model_copy(update={
                    "description": "CAPEX: " + cmd.description.upper()}))
                return []
            if isinstance(cmd, (c.DisposeAsset, c.RunDepreciation)):
                flush(real)
            if isinstance(cmd, c.DisposeAsset):
                cmd = cmd.model_copy(update={"reference": "sold to the buyer, price due in 30 "
                                                          "days"})
            return real(cmd)

        with routed(desk, route) as real:
            solver.reference(desk)
            flush(real)


def test_assets_capitalized_in_another_order_and_words_are_accepted(tmp_path: Path) -> None:
    agent = _OwnOrderAndWords()
    out = _attempt(tmp_path, 1, agent)
    assert agent.capitalized >= 2
    assert read_verdict(out)["accepted"], failed_checks(out)


class _WaitsForService:
    """The reference, but an asset placed in service after the turn's day is capitalized at
    the next close instead (dated the bill's invoice date, as the prompt says)."""

    name = "waits-for-service"

    def __init__(self) -> None:
        self.later: list[c.CapitalizeAsset] = []
        self.deferred = 0

    def run_turn(self, desk: TurnContext) -> None:
        while self.later:
            done = desk.execute(self.later.pop(0))
            assert isinstance(done, list), done

        def route(real: Execute, cmd: c.Command) -> Any:
            if isinstance(cmd, c.CapitalizeAsset) and cmd.in_service_date > desk.day:
                self.later.append(cmd)
                self.deferred += 1
                return []
            return real(cmd)

        with routed(desk, route):
            solver.reference(desk)


def test_an_asset_capitalized_a_close_late_is_refused_and_the_prompt_says_when(
        tmp_path: Path) -> None:
    agent = _WaitsForService()
    out = _attempt(tmp_path, 2, agent)
    assert agent.deferred == 1 and not agent.later
    assert failed_checks(out) == {"entries-dated-in-their-period"}
    detail = check_results(out)["entries-dated-in-their-period"]["detail"]
    assert "asset_capitalized" in detail and "in a turn of 2026-07-01" in detail, detail
    text = " ".join((out / "turns" / "01" / "workspace" / "prompt.md")
                    .read_text(encoding="utf-8").split())
    assert ("Capitalize at the close that enters the bill, also an asset placed in service "
            "after last month") in text, text
