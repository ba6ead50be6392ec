"""fixed-assets, audited a third time for false accepts (real attempts of a sloppy clerk):
none found. Pinned here, each refused by the check named:

- an item capitalized at its own line's amount, its delivery and installation left expensed
  (``assets-capitalized``, medium seed 0);
- depreciation started the month after the asset was placed in service, the in-service date
  moved to the next month's first day (``assets-capitalized``, ``depreciation-run``);
- the sale taken off the register after the month's depreciation instead of before
  (``sale-disposed``: its accumulated depreciation and gain; ``depreciation-run``);
- a May bill's asset placed in service in June left to the July close and capitalized then,
  dated back to its May invoice date (``entries-dated-in-their-period``, hard seed 4).

Also refused, not pinned (medium seed 0): an upgrade given another class's life and an
asset under the threshold capitalized (``assets-capitalized``, ``depreciation-run``,
``class-accounts-tie``), the disposal dated the month's end (``sale-disposed``), the June
close left to the July one (``bills-entered`` and four more), an asset capitalized a close
late with May's depreciation run for it then (``entries-dated-in-their-period``); a month's
depreciation run twice is refused by the books.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks

NAME = "fixed-assets"
solver = load_solver(library_dir() / NAME / "solver.py")

Real = Callable[[c.Command], Any]


class _Clerk:
    """The reference with each command through ``route(clerk, desk, real, command)``."""

    def __init__(self, name: str,
                 route: Callable[[_Clerk, TurnContext, Real, c.Command], Any]) -> None:
        self.name, self.route = name, route
        self.lines: dict[str, tuple[c.BillLineIn, ...]] = {}
        self.changed: list[str] = []
        self.held: c.DisposeAsset | None = None

    def run_turn(self, desk: TurnContext) -> None:
        real, route = desk.execute, self.route
        vars(desk)["execute"] = lambda cmd: route(self, desk, real, cmd)
        try:
            solver.reference(desk)
        finally:
            vars(desk).pop("execute", None)


def _run(tmp: Path, clerk: _Clerk, seed: int = 0,
         tier: str = "medium") -> tuple[set[str], dict[str, Any]]:
    res = run_attempt(load_scenario(find_scenario(NAME), tier=tier), seed, clerk.name,
                      tmp / "a", agent=clerk)
    return failed_checks(res.out), check_results(res.out)


def _installation_left(clerk: _Clerk, desk: TurnContext, real: Real, cmd: c.Command) -> Any:
    if not isinstance(cmd, c.CapitalizeAsset):
        done = real(cmd)
        if isinstance(cmd, c.EnterBill) and isinstance(done, list):
            bill = next(e.event.bill_id for e in done if hasattr(e.event, "bill_id"))
            clerk.lines[bill] = cmd.lines
        return done
    lines = clerk.lines.get(cmd.bill_id, ())
    for x in lines:
        m = re.match(r"delivery and installation, item (\d+)", x.description, re.I)
        item = lines[int(m.group(1)) - 1] if m else None
        if item is not None and not clerk.changed and cmd.amount == item.amount + x.amount:
            clerk.changed.append(cmd.bill_id)
            return real(cmd.model_copy(update={"amount": item.amount}))
    return real(cmd)


def test_an_asset_without_its_installation_is_refused(tmp_path: Path) -> None:
    clerk = _Clerk("installation-left", _installation_left)
    failed, results = _run(tmp_path, clerk)
    assert clerk.changed == ["BILL-000001"], clerk.changed  # V002-0536, entered first
    assert "assets-capitalized" in failed, failed
    detail = results["assets-capitalized"]["detail"]
    assert "(SW 8,821.77 in service 2026-05-11, 60 months, from 6060 on 2026-05-11) is not " \
           "what the policy capitalizes (due: SW 9,552.77" in detail, detail


def _next_month(clerk: _Clerk, desk: TurnContext, real: Real, cmd: c.Command) -> Any:
    if isinstance(cmd, c.CapitalizeAsset) and cmd.in_service_date.day != 1:
        first = (cmd.in_service_date.replace(day=28) + timedelta(days=4)).replace(day=1)
        clerk.changed.append(cmd.bill_id)
        return real(cmd.model_copy(update={"in_service_date": first}))
    return real(cmd)


def test_depreciation_started_the_month_after_is_refused(tmp_path: Path) -> None:
    clerk = _Clerk("next-month", _next_month)
    failed, _ = _run(tmp_path, clerk)
    assert clerk.changed
    assert {"assets-capitalized", "depreciation-run"} <= failed, failed


def _disposed_after(clerk: _Clerk, desk: TurnContext, real: Real, cmd: c.Command) -> Any:
    if isinstance(cmd, c.DisposeAsset):
        clerk.held = cmd
        return []
    if isinstance(cmd, c.RunDepreciation) and clerk.held is not None:
        done = real(cmd)
        assert isinstance(real(clerk.held), list)
        clerk.held = None
        clerk.changed.append(cmd.period)
        return done
    return real(cmd)


def test_a_sale_taken_off_after_the_months_depreciation_is_refused(tmp_path: Path) -> None:
    clerk = _Clerk("disposed-after", _disposed_after)
    failed, results = _run(tmp_path, clerk)
    assert clerk.changed == ["2026-06"], clerk.changed
    assert {"sale-disposed", "depreciation-run"} <= failed, failed
    assert "FA-000002 disposal: accumulated depreciation 8,541.94, expected 8,333.60" in \
        results["sale-disposed"]["detail"]


def _in_service_later_held(clerk: _Clerk, desk: TurnContext, real: Real,
                           cmd: c.Command) -> Any:
    if (desk.day == date(2026, 6, 1) and isinstance(cmd, c.CapitalizeAsset)
            and cmd.in_service_date > date(2026, 5, 31)):
        clerk.changed.append(cmd.bill_id)
        return []  # the reference capitalizes it at the next close, dated its invoice date
    return real(cmd)


def test_an_asset_in_service_later_capitalized_a_close_late_is_refused(tmp_path: Path) -> None:
    clerk = _Clerk("in-service-later-held", _in_service_later_held)
    failed, results = _run(tmp_path, clerk, seed=4, tier="hard")
    assert len(clerk.changed) == 1, clerk.changed
    assert failed == {"entries-dated-in-their-period"}, failed
    assert "asset_capitalized at position" in results["entries-dated-in-their-period"]["detail"]
