"""payroll-and-sales-tax, audited for false rejects: correct work done another way than the
reference's (real attempts, hard tier, seed 0: both registers revised, a stray entry on 2200
on 2026-05-14).

Accepted: a clerk who posts each register's first version, then reverses it dated its pay
date (``erp payroll reverse``) and posts the revised one; a clerk who reverses the stray
entry dated its own day (not the month's last) and pays the tax due in two payments.

Found on the way (a false accept): the first version reversed on the day of the turn,
2026-06-01, for a register paid 2026-05-29, left May's books holding both versions (its
wages twice) and was accepted. ``payroll_posted`` now wants a posting reversed in its pay
date's month, and the prompt says so.
"""

from __future__ import annotations

from datetime import date
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

NAME = "payroll-and-sales-tax"
SEED = 0
solver = load_solver(library_dir() / NAME / "solver.py")


def _attempt(tmp: Path, agent: Any) -> Path:
    return run_attempt(load_scenario(find_scenario(NAME), tier="hard"), SEED, agent.name,
                       tmp / "a", agent=agent).out


class _FirstVersionsFirst:
    """Posts the first version of every register the provider revised, reverses it (dated
    its pay date, or the turn's day), then does the reference's work."""

    def __init__(self, name: str, on_pay_date: bool) -> None:
        self.name = name
        self.on_pay_date = on_pay_date
        self.reversed: list[tuple[str, date]] = []

    def run_turn(self, desk: TurnContext) -> None:
        paths = sorted([*desk.archive(), *desk.inbox()], key=lambda p: p.name)
        regs = [r for r in (solver._read_register(p) for p in paths) if r is not None]
        posted = set(desk.ledger.books.payroll_tax.registers)
        firsts = [r for r in regs if r.version == 1 and r.register_id not in posted
                  and any(x.register_id == r.register_id and x.version > 1 for x in regs)]
        solver._post(desk, firsts)
        for r in firsts:
            day = r.pay_date if self.on_pay_date else desk.day
            done = desk.execute(c.ReversePayroll(register_id=r.register_id, entry_date=day,
                                                 memo="the provider sent a revised register"))
            assert isinstance(done, list), done
            self.reversed.append((r.register_id, day))
        solver.reference(desk)


def test_a_first_version_reversed_on_its_pay_date_then_the_revised_posted_is_accepted(
        tmp_path: Path) -> None:
    agent = _FirstVersionsFirst("first-versions-first", on_pay_date=True)
    out = _attempt(tmp_path, agent)
    assert len(agent.reversed) == 2, agent.reversed
    assert read_verdict(out)["accepted"], failed_checks(out)


def test_a_first_version_reversed_in_the_next_month_is_refused(tmp_path: Path) -> None:
    """PR-20260529 (paid 2026-05-29) reversed on 2026-06-01: May holds both versions."""
    agent = _FirstVersionsFirst("reversed-in-june", on_pay_date=False)
    out = _attempt(tmp_path, agent)
    assert ("PR-20260529", date(2026, 6, 1)) in agent.reversed, agent.reversed
    assert failed_checks(out) == {"payroll-posted"}
    detail = check_results(out)["payroll-posted"]["detail"]
    assert "PR-20260529: its posting of 2026-05-29 reversed on 2026-06-01" in detail, detail
    text = " ".join((out / "turns" / "02" / "workspace" / "prompt.md")
                    .read_text(encoding="utf-8").split())
    assert "reversed first, `erp payroll reverse`, dated in its pay date's month" in text


class _StrayOnItsDayTaxInTwo:
    """The reference, the stray entry reversed dated its own day, the tax paid in two."""

    name = "stray-on-its-day"

    def __init__(self) -> None:
        self.reversed_on: list[date] = []
        self.payments = 0

    def run_turn(self, desk: TurnContext) -> None:
        def route(real: Execute, cmd: c.Command) -> Any:
            if isinstance(cmd, c.ReverseJournalEntry):
                day = dict(solver._stray_entries(desk, "2026-05"))[cmd.entry_id]
                cmd = cmd.model_copy(update={"entry_date": day, "memo": "misposted to 2200"})
                self.reversed_on.append(day)
            if isinstance(cmd, c.RemitSalesTax):
                half = cmd.amount // 2
                done = real(cmd.model_copy(update={"amount": half}))
                assert isinstance(done, list), done
                self.payments += 1
                cmd = cmd.model_copy(update={"amount": cmd.amount - half})
                self.payments += 1
            return real(cmd)

        with routed(desk, route):
            solver.reference(desk)


def test_the_stray_reversed_on_its_day_and_the_tax_paid_in_two_is_accepted(
        tmp_path: Path) -> None:
    agent = _StrayOnItsDayTaxInTwo()
    out = _attempt(tmp_path, agent)
    assert agent.reversed_on == [date(2026, 5, 14)] and agent.payments == 2
    assert read_verdict(out)["accepted"], failed_checks(out)
