"""fiscal-year: three questions about the payment and timing checks, each answered with a
clerk (the reference with one change) on real attempts (medium tier, seed 0).

1. A due bill whose payment would take the bank below the cash policy's floor waits (the
   books refuse the payment: ``cash_policy``). ``due-bills-paid-at-mid-month`` refused the
   clerk who held it; it now excuses a bill larger than what the bank held above the floor
   at the turn's end, and still refuses one the bank could have paid. In the scenario as
   written the floor never binds (the reference's lowest balance after a write of its own,
   seeds 0-19 of every tier, is above 210,000.00: the company collects more than it owes),
   so the case is shown on a copy of the scenario whose floor is raised to 350,000.00.
2. The prompt asks for payments on the mid-month turns only; a clerk who also paid on the
   month-end turns was accepted (``paid-only-what-is-due`` asks only that a bill paid be due
   within the week of its payment). ``payments-only-at-mid-month`` refuses it.
3. The checks that judge a turn's timing by a paper's date (``charges-and-interest-at-
   their-turn``: a statement line's day; ``entries-dated-in-their-period``'s returned
   deposits: their line's day) are right only while every paper reaches the company on its
   own date. In this world it does: a vendor's bill and credit note are delivered the day
   they are issued (a resend of a bill comes later, and is not to be entered), the bank's
   charge and interest post on the month's last business day and its statement comes with
   that morning's mail, a returned item reaches the books on its day through the feed. The
   last test pins that, so that a world that delays a paper fails here first.
"""

from __future__ import annotations

import re
import shutil
from datetime import date, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from erp import commands as c
from erp import queries as q
from erp.store import EventStore
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, read_verdict, routed, shared_attempt

NAME = "fiscal-year"
pytestmark = pytest.mark.xdist_group("fiscal-year")  # one worker with test_fiscal_year:
# the shared reference
RAISED_FLOOR = 35_000_000
"""The cash floor of the copy of the scenario (350,000.00): it binds at January's and
February's mid-month turns of seed 0 (the bank then holds about 279,000.00 and 369,000.00
before paying)."""


def _solver() -> ModuleType:
    return load_solver(library_dir() / NAME / "solver.py")


def _floor_in_yaml(text: str) -> tuple[int, int]:
    """(the company's minimum_bank_balance, the floor of due-bills-paid-at-mid-month), cents."""
    policy = re.search(r'minimum_bank_balance: "(-?\d+)\.(\d\d)"', text)
    sql = re.search(r"cash_floor AS \(SELECT (-?\d+) AS cents\)", text)
    assert policy is not None and sql is not None
    return int(policy.group(1)) * 100 + int(policy.group(2)), int(sql.group(1))


def test_the_checks_floor_is_the_cash_policys() -> None:
    """The floor the payment check excuses a held bill by is the company's own."""
    policy, sql = _floor_in_yaml(find_scenario(NAME).read_text(encoding="utf-8"))
    assert policy == sql == 0


class _Payer:
    """The reference, paying differently.

    ``holds-what-would-overdraw``: at a payment run, pays the due bills, earliest due first,
    that the bank holds above the floor (skipping one that does not fit), and holds the
    rest to the next mid-month turn. ``pays-at-month-end``: also pays, at the start of each
    month-end turn, the approved open bills due within the next 7 days. Any other name:
    the reference as it is."""

    def __init__(self, name: str, floor: int = 0) -> None:
        self.name = name
        self.floor = floor
        self.hits = 0

    def run_turn(self, desk: TurnContext) -> None:
        if (self.name == "pays-at-month-end" and desk.role == "clerk"
                and desk.day.day >= 25):
            horizon = desk.day + timedelta(days=7)
            due = sorted(d["doc_id"] for d in q.documents(desk.store, "bill")
                         if d["status"] in ("approved", "partially_paid")
                         and int(d["open_amount"]) > 0 and d["due_on"]
                         and date.fromisoformat(str(d["due_on"])) <= horizon)
            if due:
                self.hits += 1
                (bank,) = desk.store.read(realm="erp", types=["bank_account_opened"])
                desk.execute(c.RunPayments(bank_account_id=bank.data["bank_account_id"],
                                           bill_ids=tuple(due)))

        def twisted(real: Execute, cmd: c.Command) -> Any:
            if (self.name == "holds-what-would-overdraw" and isinstance(cmd, c.RunPayments)
                    and cmd.bill_ids):
                bills = {d["doc_id"]: d for d in q.documents(desk.store, "bill")}
                spare = q.account_balance(desk.store, "1000") - self.floor
                paid: list[str] = []
                for b in sorted(cmd.bill_ids, key=lambda b: (bills[b]["due_on"], b)):
                    if int(bills[b]["open_amount"]) <= spare:
                        spare -= int(bills[b]["open_amount"])
                        paid.append(b)
                if len(paid) < len(cmd.bill_ids):
                    self.hits += 1
                if not paid:
                    return None
                cmd = cmd.model_copy(update={"bill_ids": tuple(paid)})
            return real(cmd)

        with routed(desk, twisted):
            _solver().reference(desk)


def _raised_floor(tmp: Path) -> Path:
    """A copy of fiscal-year whose cash policy keeps 350,000.00 in the bank (the books
    refuse a payment below it; the check excuses a bill held for it). ``no-overdraft``
    keeps its zero: the bank's charges may take it below the raised floor."""
    folder = tmp / NAME
    shutil.copytree(library_dir() / NAME, folder)
    path = folder / "scenario.yaml"
    text = path.read_text(encoding="utf-8")
    text = text.replace('minimum_bank_balance: "0.00"',
                        f'minimum_bank_balance: "{RAISED_FLOOR // 100}.00"')
    text = text.replace("cash_floor AS (SELECT 0 AS cents)",
                        f"cash_floor AS (SELECT {RAISED_FLOOR} AS cents)")
    path.write_text(text, encoding="utf-8")
    return path


def _failed(res: AttemptResult) -> list[str]:
    failed: list[str] = res.summary["verdict"]["failed"]
    return failed


def test_a_bill_held_rather_than_overdraw_is_accepted(tmp_path: Path) -> None:
    """Under a floor that binds, the clerk who pays what the bank can and holds the rest
    is accepted; the reference, whose whole run the books refuse (so that it pays nothing,
    though it could have paid some), is refused by the payment check alone."""
    loaded = load_scenario(_raised_floor(tmp_path))
    agent = _Payer("holds-what-would-overdraw", RAISED_FLOOR)
    res = run_attempt(loaded, 0, agent.name, tmp_path / "holds", agent=agent)
    assert agent.hits > 0
    assert _failed(res) == [], res.summary["verdict"]
    store = EventStore.open(str(res.out / "books.db"))
    try:
        paid_on = {e.business_date for e in store.read(realm="erp", types=["vendor_paid"])}
    finally:
        store.close()
    assert "2026-01-15" not in paid_on and "2026-02-16" in paid_on  # held, then paid some
    # the library's reference (the copy's solver.py finds no month-end-close beside it)
    ref = run_attempt(loaded, 0, "reference", tmp_path / "ref", agent=_Payer("reference"))
    assert _failed(ref) == ["due-bills-paid-at-mid-month"], ref.summary["verdict"]
    verdict = read_verdict(ref.out)
    (row,) = [r for r in verdict["results"] if r["name"] == "due-bills-paid-at-mid-month"]
    assert "2026-02-16" in row["detail"]


def test_payments_on_month_end_turns_are_refused(tmp_path: Path) -> None:
    """The prompt asks for payments on the mid-month turns only."""
    agent = _Payer("pays-at-month-end")
    res = run_attempt(load_scenario(find_scenario(NAME)), 0, agent.name, tmp_path / "a",
                      agent=agent)
    assert agent.hits > 0
    assert _failed(res) == ["payments-only-at-mid-month"], res.summary["verdict"]


def test_every_paper_reaches_the_company_on_its_own_date(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The premise of the checks that time a turn's work by a paper's date."""
    ref, _ = shared_attempt(tmp_path_factory, NAME, 0)
    assert _failed(ref) == []
    store = EventStore.open(str(ref.out / "books.db"))
    try:
        world = list(store.read(realm="world", types=[
            "bill_issued", "credit_note_issued", "document_delivered", "bank_line_posted"]))
        imported = {e.data["line_id"]: e.business_date for e in store.read(
            realm="erp", types=["statement_line_imported"])}
    finally:
        store.close()
    issued = {e.data["bill_ref"]: e.data["issued_on"] for e in world
              if e.type == "bill_issued"}
    credits = {e.data["number"]: e.business_date for e in world
               if e.type == "credit_note_issued"}
    bills = notes = lines = 0
    for e in world:
        d = e.data
        if e.type == "document_delivered" and d["kind"] == "bill":
            truth = d["truth"]
            if truth["kind"] == "original":
                bills += 1
                assert e.business_date == issued[truth["bill_ref"]], d["filename"]
        elif e.type == "document_delivered" and d["kind"] == "credit_note":
            notes += 1
            assert e.business_date == credits[d["truth"]["credit_number"]], d["filename"]
        elif e.type == "document_delivered" and "bank-statement" in d["filename"]:
            # delivered the day of its period's last lines (the month's last business day)
            last = max(x.data["posted_on"] for x in world if x.type == "bank_line_posted"
                       and x.data["line_id"] in d["truth"]["line_ids"])
            assert e.business_date == last, d["filename"]
        elif e.type == "bank_line_posted" and d["kind"] in ("fee", "interest", "returned"):
            lines += 1
            assert imported[d["line_id"]] == d["posted_on"], d
    assert bills > 100 and notes > 0 and lines == 26
