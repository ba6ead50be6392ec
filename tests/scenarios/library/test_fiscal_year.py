"""fiscal-year: a year of closes, the year-end close, the per-month accuracy curve, and a
mistake that carries.

On real attempts of the easy tier (seed 0): the reference is accepted, every month of its
curve counted and both years closed into retained earnings; the null agent is
rejected; a controller who never closes the year fails the checks that own that rule; a
clerk who applies one February receipt to another open invoice of the same payer breaks
``receivables-match-customers`` on every date from March on, still in November (each
later month scores below the reference's; January, before the mistake, is the
reference's); ``erpsim report`` of a
sweep prints the per-month accuracy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from erp import commands as c
from erp import queries as q
from erp.store import EventStore
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import (
    Execute,
    check_results,
    failed_checks,
    routed,
    shared_attempt,
)

NAME = "fiscal-year"
pytestmark = pytest.mark.xdist_group("fiscal-year")  # one worker with test_fiscal_year_gaps:
# the shared reference
MONTHS = [f"2026-{m:02d}" for m in range(1, 13)]


def _solver() -> ModuleType:
    return load_solver(library_dir() / NAME / "solver.py")


class _Twist:
    """The reference with one mistake."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.misapplied: tuple[str, str, str] | None = None
        """(receipt, the invoice it was meant for, the invoice it went to)."""

    def run_turn(self, desk: TurnContext) -> None:
        def twisted(real: Execute, cmd: c.Command) -> Any:
            if self.name == "no-year-close" and isinstance(cmd, c.CloseFiscalYear):
                return None
            if (self.name == "misapplies-in-february" and self.misapplied is None
                    and desk.day.month == 2 and isinstance(cmd, c.ApplyReceipt)):
                other = _other_open_invoice(desk.store, cmd.invoice_id, cmd.amount)
                if other is not None:
                    self.misapplied = (cmd.receipt_id, cmd.invoice_id, other)
                    cmd = cmd.model_copy(update={"invoice_id": other})
            return real(cmd)

        with routed(desk, twisted):
            _solver().reference(desk)


def _other_open_invoice(store: EventStore, invoice_id: str, amount: int) -> str | None:
    """Another open invoice of the same customer that can take ``amount``."""
    invoices = q.documents(store, "invoice")
    party = next((d["party"] for d in invoices if d["doc_id"] == invoice_id), None)
    return next((d["doc_id"] for d in invoices
                 if d["party"] == party and d["doc_id"] != invoice_id
                 and int(d["open_amount"]) >= amount), None)


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME), tier="easy")
    root = tmp_path_factory.mktemp(NAME)
    agents: dict[str, Any] = {"reference": None, "null": None}
    agents.update({n: _Twist(n) for n in ("no-year-close", "misapplies-in-february")})
    out = {name: run_attempt(loaded, 0, name, root / name, agent=agent)
           for name, agent in agents.items()}
    twist = agents["misapplies-in-february"]
    assert twist.misapplied is not None, "no February receipt could be misapplied"
    yield out


def _monthly(res: AttemptResult) -> dict[str, dict[str, Any]]:
    by_month: dict[str, dict[str, Any]] = res.summary["daily_by_month"]
    return by_month


def test_the_reference_closes_every_month_and_both_years(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["reference"]
    assert not failed_checks(res.out)
    store = EventStore.open(str(res.out / "books.db"))
    try:
        periods = {d["doc_id"]: d["status"] for d in q.documents(store, "period")}
        assert all(periods[m] == "closed" for m in MONTHS), periods
        closings = [d for d in q.documents(store, "journal")
                    if d["reference"] == "year_end_close"]
        assert sorted(d["doc_id"] for d in closings) == ["YE-2025", "YE-2026"]
        for code in ("4000", "4900", "6000", "6800", "6810"):
            assert q.account_balance(store, code, as_of=date(2026, 12, 31)) == 0, code
        assert q.account_balance(store, "3100") < 0  # the two years' net income, credited
    finally:
        store.close()
    curve = _monthly(res)
    assert set(MONTHS) <= set(curve)
    assert all(curve[m]["dates"] > 0 and curve[m]["checks"] == 5 * curve[m]["dates"]
               for m in MONTHS), curve


def test_the_null_agent_is_rejected(attempts: dict[str, AttemptResult]) -> None:
    failed = failed_checks(attempts["null"].out)
    assert {"every-month-closed", "years-closed-into-retained-earnings",
            "income-accounts-closed-at-year-end", "payables-match-vendors"} <= failed
    assert all(_monthly(attempts["null"])[m]["accuracy"] < 1.0 for m in MONTHS[1:])


def test_a_year_left_open_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["no-year-close"]
    assert failed_checks(res.out) == {"years-closed-into-retained-earnings",
                                    "income-accounts-closed-at-year-end"}
    assert "4000" in check_results(res.out)["income-accounts-closed-at-year-end"]["detail"]


def test_a_february_mistake_still_breaks_a_control_in_november(
        attempts: dict[str, AttemptResult]) -> None:
    """The same attempt as the reference's up to the February turn: January's curve is the
    reference's; from then on the misapplied receipt fails ``receivables-match-customers``
    on every date (the reference's own failing dates are receipts that wait for the next
    turn), so every later month scores below the reference's, November included."""
    res, ref = attempts["misapplies-in-february"], attempts["reference"]
    curve, ref_curve = _monthly(res), _monthly(ref)
    assert curve["2026-01"] == ref_curve["2026-01"]
    check = "receivables-match-customers"
    for month in MONTHS[2:]:  # March to December: every month still pays for it
        assert curve[month]["failed"].get(check) == curve[month]["dates"], month
        assert curve[month]["failed"].get(check) > ref_curve[month]["failed"].get(check, 0)
        assert curve[month]["accuracy"] < ref_curve[month]["accuracy"], month
    november = curve["2026-11"]
    assert november["failed"][check] == november["dates"] > 0
    assert check in failed_checks(res.out) and check not in failed_checks(ref.out)


def test_the_report_prints_the_per_month_accuracy(tmp_path: Path) -> None:
    from runs.cli import main

    runner = CliRunner()
    swept = runner.invoke(main, ["sweep", NAME, "--seeds", "0", "--systems", "reference,null",
                                 "--runs", "1", "--label", "fy", "--tier", "easy",
                                 "--results-dir", str(tmp_path)], catch_exceptions=False)
    assert (tmp_path / "fy" / "results.db").is_file(), swept.output
    out = runner.invoke(main, ["report", "fy", "--results-dir", str(tmp_path)],
                        catch_exceptions=False, terminal_width=400).output
    assert "Per month: accuracy of the per-date checks" in out
    rows = {line.split("│")[2].strip(): line for line in out.splitlines()
            if line.count("│") > 10 and NAME in line}
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "fy").rglob("summary.json")]
    assert sorted(x["agent"] for x in summaries) == ["null", "reference"]
    for x in summaries:
        cells = [c.strip() for c in rows[x["agent"]].split("│")[3:-1]]
        months = x["daily_by_month"]
        assert cells == [f"{100 * months[m]['passed'] / months[m]['checks']:.0f}%"
                         for m in sorted(months)], x["agent"]


# --- wrong work the checks once accepted (medium tier, seed 0) -------------------------------

_HELD = {"payments-held-to-month-end": c.RunPayments,
         "receipts-held-to-month-end": c.ApplyReceipt,
         "credit-notes-applied-a-turn-late": c.ApplyVendorCredit}


class _Clerk:
    """The reference with one wrong way of doing the year's work.

    ``never-pays``: no bill paid on any mid-month turn; the ``_HELD`` ones: that command
    held from each mid-month turn to the month-end turn and dated back to its own turn's
    day; ``return-dated-the-turn``: a returned (NSF) deposit dated the day of the turn that
    recorded it, not its statement line's; ``credited-bills-never-approved``: the bills in
    ``unapproved`` (those a credit note is applied to) never approved;
    ``months-closed-a-month-late``: each month of 2026 but December closed at the
    controller's turn a month after its own; ``bank-lines-dated-the-next-month``: the
    bank's charge and interest of each month-end statement but December's recorded at the
    controller's turn, dated that day, not their statement lines'; ``bank-lines-left-to-
    the-controller``: the same, dated their statement lines' day."""

    def __init__(self, name: str, unapproved: frozenset[str] = frozenset()) -> None:
        self.name = name
        self.unapproved = unapproved
        self.held: list[tuple[c.Command, date]] = []
        self.hits = 0

    def run_turn(self, desk: TurnContext) -> None:
        if self.name == "bank-lines-dated-the-next-month":
            for cmd, _ in self.held:
                desk.execute(cmd.model_copy(update={"entry_date": desk.day}))
            self.held = []
        elif self.name == "bank-lines-left-to-the-controller":
            for cmd, _ in self.held:
                desk.execute(cmd)
            self.held = []
        elif self.name != "months-closed-a-month-late" or desk.role == "controller":
            for cmd, day in self.held:
                desk.execute(cmd if getattr(cmd, "entry_date", day) is not None
                             else cmd.model_copy(update={"entry_date": day}))
            self.held = []
        mid_month = desk.role == "clerk" and desk.day.day < 25
        month_end = desk.role == "clerk" and desk.day.day >= 25 and desk.day.month < 12

        def twisted(real: Execute, cmd: c.Command) -> Any:
            held = _HELD.get(self.name)
            if ((self.name == "never-pays" and isinstance(cmd, c.RunPayments))
                    or (self.name == "credited-bills-never-approved"
                        and isinstance(cmd, c.ApproveBill) and cmd.bill_id in self.unapproved)):
                self.hits += 1
                return None
            if ((held is not None and mid_month and isinstance(cmd, held))
                    or (self.name == "months-closed-a-month-late"
                        and isinstance(cmd, c.ClosePeriod)
                        and "2026-01" <= cmd.period < "2026-12")
                    or (self.name in ("bank-lines-dated-the-next-month",
                                      "bank-lines-left-to-the-controller") and month_end
                        and isinstance(cmd, c.RecordBankFee | c.RecordInterest))):
                self.hits += 1
                self.held.append((cmd, desk.day))
                return None
            if self.name == "return-dated-the-turn" and isinstance(cmd, c.RecordReturnedDeposit):
                self.hits += 1
                cmd = cmd.model_copy(update={"entry_date": desk.day})
            return real(cmd)

        with routed(desk, twisted):
            _solver().reference(desk)


@pytest.fixture(scope="module")
def medium_reference(tmp_path_factory: pytest.TempPathFactory) -> AttemptResult:
    return shared_attempt(tmp_path_factory, NAME, 0)[0]


@pytest.mark.parametrize(("name", "failed"), [
    ("never-pays", ["due-bills-paid-at-mid-month"]),
    # ... and made on the month-end turn, where the prompt asks for none
    ("payments-held-to-month-end", ["due-bills-paid-at-mid-month",
                                    "payments-only-at-mid-month"]),
    # ... and left unapplied over the mid-month turn's end (1ffc966)
    ("receipts-held-to-month-end", ["receivables-matched-at-each-turn",
                                    "entries-dated-in-their-period"]),
    ("credit-notes-applied-a-turn-late", ["entries-dated-in-their-period"]),
    ("return-dated-the-turn", ["entries-dated-in-their-period"]),
    # a payment run naming an unapproved bill is refused whole: its due bills stay unpaid
    ("credited-bills-never-approved", ["every-bill-approved", "due-bills-paid-at-mid-month"]),
    ("months-closed-a-month-late", ["months-closed-at-their-turn"]),
    # left to the controller's turn as well as dated then
    ("bank-lines-dated-the-next-month", ["charges-and-interest-at-their-turn",
                                         "entries-dated-in-their-period"]),
    ("bank-lines-left-to-the-controller", ["charges-and-interest-at-their-turn"]),
])
def test_wrong_work_of_the_year_is_refused(name: str, failed: list[str],
                                           medium_reference: AttemptResult,
                                           tmp_path: Path) -> None:
    """Each rule the prompt asks at its own turn, once accepted done wrong: bills due
    within the week never paid, or paid a turn late; receipts applied and credit notes
    applied a turn late and dated back; a returned deposit dated the turn that recorded it
    rather than its statement line's day; bills a credit note made partially paid never
    approved; each month closed at the controller's turn a month late; the bank's charges
    and interest dated the next month's first business day. Each is refused by
    the check that owns the rule (and only the checks listed)."""
    ref = medium_reference
    assert ref.summary["verdict"]["accepted"], ref.summary["verdict"]
    store = EventStore.open(str(ref.out / "books.db"))
    try:
        credited = frozenset(str(e.data["bill_id"]) for e in store.read(
            realm="erp", types=["vendor_credit_applied"]))
    finally:
        store.close()
    agent = _Clerk(name, credited)
    res = run_attempt(load_scenario(find_scenario(NAME)), 0, name, tmp_path / "a", agent=agent)
    assert agent.hits > 0, name
    assert res.summary["verdict"]["failed"] == failed, res.summary["verdict"]


MONTH_ENDS = ["2026-01-30", "2026-02-27", "2026-03-31", "2026-04-30", "2026-05-29",
              "2026-06-30", "2026-07-31", "2026-08-31", "2026-09-30", "2026-10-30",
              "2026-11-30"]
"""The month-end turns before December's: each leaves that month's files (at_turn)."""


class _FileClerk:
    """The reference, with the month-end files of the months before December wrong:
    ``december-files-only`` leaves none (removes them after each of those turns; the final
    workspace's December files are right), ``january-aging-a-cent-off`` leaves January's
    aging with one figure a cent off."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.hits = 0

    def run_turn(self, desk: TurnContext) -> None:
        _solver().reference(desk)
        day = desk.day.isoformat()
        if day not in MONTH_ENDS:
            return
        out = desk.workspace / "out"
        if self.name == "december-files-only":
            for f in ("bank_reconciliation.csv", "ar_aging.csv"):
                (out / f).unlink()
            self.hits += 1
        elif day == MONTH_ENDS[0]:
            path = out / "ar_aging.csv"
            head, first, *rest = path.read_text(encoding="utf-8").splitlines()
            cells = first.split(",")
            cells[-1] = f"{float(cells[-1]) + 0.01:.2f}"
            cells[1] = f"{float(cells[1]) + 0.01:.2f}"
            path.write_text("\n".join([head, ",".join(cells), *rest]) + "\n", encoding="utf-8")
            self.hits += 1


@pytest.mark.parametrize(("name", "failed"), [
    ("december-files-only", [f"{kind}-{d[:7]}" for d in MONTH_ENDS
                             for kind in ("bank-reconciliation-ties", "ar-aging-matches-books")]),
    ("january-aging-a-cent-off", ["ar-aging-matches-books-2026-01"]),
])
def test_every_months_files_are_judged_as_its_turn_left_them(name: str, failed: list[str],
                                                             tmp_path: Path) -> None:
    """Each month-end turn replaces last month's bank reconciliation and aging, so the final
    workspace holds December's only: January to November's files were never read, and a
    clerk who left them wrong, or none at all, was accepted. Each month's are judged as
    its turn left them (at_turn), against the books as that turn ended."""
    agent = _FileClerk(name)
    res = run_attempt(load_scenario(find_scenario(NAME)), 0, name, tmp_path / "a", agent=agent)
    assert agent.hits > 0
    assert res.summary["verdict"]["failed"] == failed, res.summary["verdict"]
