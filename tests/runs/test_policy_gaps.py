"""The gaps of issue 14, each shown closed on a real attempt: an agent that does the work
right but makes one plausible mistake is rejected by the check that names the rule.

Output mistakes are made in the reference's final files and the attempt graded again
(``grade_folder``); book mistakes are one mutant of the reference's commands
(``runs.validate``), and an equivalent mutant is shown to leave the log and the outputs
exactly as the reference left them.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from erp import queries as q
from erp.store import EventStore
from runs.attempt import AttemptResult, Recording, run_attempt
from runs.grading import final_workspace, grade_folder
from runs.policy import check_policy, load_policy, policy_table, readme_table
from runs.validate import Mutation, ReplayAgent, _candidates, _run_mutant
from scenarios.loader import LoadedScenario, find_scenario, load_scenario


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def _write(path: Path, rows: list[list[str]]) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def _failed(out: Path, loaded: LoadedScenario) -> set[str]:
    v = grade_folder(out, loaded)
    return {r.name for r in v.results if r.required and not r.passed}


@pytest.fixture(scope="module")
def p2p(tmp_path_factory: pytest.TempPathFactory) -> tuple[LoadedScenario, AttemptResult,
                                                           Recording]:
    loaded = load_scenario(find_scenario("procure-to-pay"))
    rec = Recording()
    res = run_attempt(loaded, 1, "reference", tmp_path_factory.mktemp("p2p") / "a",
                      record=rec)
    assert res.summary["verdict"]["status"] == "accepted"
    return loaded, res, rec


@pytest.fixture(scope="module")
def cash(tmp_path_factory: pytest.TempPathFactory) -> tuple[LoadedScenario, AttemptResult]:
    loaded = load_scenario(find_scenario("cash-application"))
    res = run_attempt(loaded, 1, "reference", tmp_path_factory.mktemp("ca") / "a")
    assert res.summary["verdict"]["status"] == "accepted"
    return loaded, res


def test_an_exception_left_out_of_the_file_fails(p2p: tuple[LoadedScenario, AttemptResult,
                                                            Recording]) -> None:
    loaded, res, _ = p2p
    path = final_workspace(res.out) / "out" / "exceptions.csv"  # type: ignore[operator]
    original = path.read_text(encoding="utf-8")
    rows = _rows(path)
    try:
        _write(path, [rows[0], *rows[2:]])  # the columns stay; one exception is gone
        assert "exceptions-list-rows" in _failed(res.out, loaded)
        assert "exceptions-list-columns" not in _failed(res.out, loaded)
    finally:
        path.write_text(original, encoding="utf-8")
    assert not _failed(res.out, loaded)


def test_an_exception_under_another_vendor_fails(p2p: tuple[LoadedScenario, AttemptResult,
                                                           Recording]) -> None:
    loaded, res, _ = p2p
    path = final_workspace(res.out) / "out" / "exceptions.csv"  # type: ignore[operator]
    original = path.read_text(encoding="utf-8")
    rows = _rows(path)
    vendors = sorted({r[1] for r in rows[1:] if r[1]})
    assert len(vendors) > 1, rows
    first = next(i for i, r in enumerate(rows) if i and r[1])
    other = next(v for v in vendors if v != rows[first][1])
    try:
        # the document stays listed, under another vendor of the file
        _write(path, [*rows[:first], [rows[first][0], other, rows[first][2]],
                      *rows[first + 1:]])
        assert "exceptions-list-rows" in _failed(res.out, loaded)
        # the vendor's name as the books (or the document) write it, in other case: accepted
        shouted = [r if i != first else [r[0], r[1].upper() if not r[1].startswith("V")
                                         else r[1].lower(), r[2]]
                   for i, r in enumerate(rows)]
        _write(path, shouted)
        assert "exceptions-list-rows" not in _failed(res.out, loaded)
    finally:
        path.write_text(original, encoding="utf-8")
    assert not _failed(res.out, loaded)


def test_a_receipt_of_the_last_two_days_left_out_of_unapplied_fails(
        cash: tuple[LoadedScenario, AttemptResult]) -> None:
    loaded, res = cash
    ws = final_workspace(res.out)
    assert ws is not None
    path = ws / "out" / "unapplied.csv"
    original = path.read_text(encoding="utf-8")
    store = EventStore.open(res.out / "books.db")
    try:
        end = loaded.scenario.calendar.build().end
        recent = {r["line_id"] for r in q.statement_lines(store)
                  if r["entry_date"] >= str(end.toordinal() - 2)}
        lines = {i.doc_id: i.doc_date for i in q.open_items(store, "unapplied_cash")}
    finally:
        store.close()
    rows = _rows(path)
    # the youngest listed line that the clerk saw (two days old at most: the old check
    # exempts it by age)
    young = sorted((r for r in rows[1:] if lines.get(f"RCT-{r[0]}", "") >= "2026-03-11"),
                   key=lambda r: r[0])
    assert young, (rows, lines, recent)
    try:
        _write(path, [r for r in rows if r is not young[-1] and r != young[-1]])
        failed = _failed(res.out, loaded)
        assert "unapplied-list-rows" in failed
        assert "receipts-applied-within-two-days" not in failed  # the old check misses it
    finally:
        path.write_text(original, encoding="utf-8")


def test_a_line_the_feed_recorded_after_the_last_turn_listed_fails(
        cash: tuple[LoadedScenario, AttemptResult]) -> None:
    loaded, res = cash
    ws = final_workspace(res.out)
    assert ws is not None
    path = ws / "out" / "unapplied.csv"
    original = path.read_text(encoding="utf-8")
    store = EventStore.open(res.out / "books.db")
    try:
        end = loaded.scenario.calendar.build().end.isoformat()
        receipts = {d["doc_id"] for d in q.documents(store, "receipt")
                    if d["open_amount"] and d["doc_date"] >= end}
        later = sorted(r["line_id"] for r in q.statement_lines(store)
                       if any(k == "receipt" and doc in receipts
                              for k, doc, *_ in json.loads(r["matched_to"] or "[]")))
    finally:
        store.close()
    # the feed records the last day's deposits after the clerk's turn: they are not listed
    assert later, receipts
    rows = _rows(path)
    assert not {r[0] for r in rows[1:]} & set(later)
    try:
        # a row naming one (a line id the clerk could not have had) is refused
        _write(path, [*rows, [later[0], *rows[1][1:]]])
        assert "unapplied-list-rows" in _failed(res.out, loaded)
    finally:
        path.write_text(original, encoding="utf-8")
    assert not _failed(res.out, loaded)


def _mutant(p2p: tuple[LoadedScenario, AttemptResult, Recording], op: str, command: str,
            tmp: Path) -> tuple[Mutation, object]:
    loaded, res, rec = p2p
    [m, *_] = [x for x in _candidates(rec)[op] if x.command == command]
    return m, _run_mutant(loaded, 1, rec, res, m, tmp)


def test_a_payment_run_paying_bills_not_due_yet_is_refused_by_the_cash_policy(
        p2p: tuple[LoadedScenario, AttemptResult, Recording], tmp_path: Path) -> None:
    """Three weeks more of bills would overdraw the account: the books refuse the run, so
    the month ends with no run (payments_due_by itself: tests/checks/test_policy_checks.py)."""
    _, outcome = _mutant(p2p, "due_by_later", "RunPayments", tmp_path)
    assert not outcome.equivalent and "one-payment-run" in outcome.failed  # type: ignore[attr-defined]


def test_a_bill_coded_to_another_expense_account_fails(
        p2p: tuple[LoadedScenario, AttemptResult, Recording], tmp_path: Path) -> None:
    _, outcome = _mutant(p2p, "other_account", "EnterBill", tmp_path)
    assert "6000 -> 6100" in outcome.change  # type: ignore[attr-defined]
    assert "bills-coded-to-default-account" in outcome.failed  # type: ignore[attr-defined]


def test_a_run_past_the_cash_policy_is_refused_and_a_refused_repeat_is_equivalent(
        p2p: tuple[LoadedScenario, AttemptResult, Recording], tmp_path: Path) -> None:
    """A run of every approved bill would overdraw the account: the books refuse it with
    the cash policy's message (so the month has no run). A second identical run the same
    day pays nothing and is refused: that mutant leaves the log and the outputs exactly as
    the reference left them (equivalent, not counted)."""
    loaded, ref, rec = p2p
    [m] = [x for x in _candidates(rec)["exceed_limit"] if x.command == "RunPayments"]
    agent = ReplayAgent(rec, ref.out / "turns", m)
    res = run_attempt(loaded, 1, "replay", tmp_path / "mutant", agent=agent)
    refusals = [r for t in res.summary["turns"] for r in t["rejections"]]
    assert any("cash policy" in str(r) for r in refusals), refusals
    # no run: the due bills stay open, which the due-bills check refuses too
    assert sorted(res.summary["verdict"]["failed"]) == ["one-payment-run",
                                                        "paid-only-what-is-due"]
    [tw] = [x for x in _candidates(rec)["twice"] if x.command == "RunPayments"]
    outcome = _run_mutant(loaded, 1, rec, ref, tw, tmp_path / "m2")
    assert outcome.equivalent and outcome.status == "accepted"


def test_the_policy_tables_are_generated_and_name_real_checks() -> None:
    for name in ("cash-application", "procure-to-pay", "month-end-close"):
        loaded = load_scenario(find_scenario(name))
        table = load_policy(loaded.base_dir)
        assert readme_table(loaded.base_dir) == policy_table(table)
        findings = check_policy(loaded, [])
        # without mutation runs each rule lacks its caught mutant, and only that
        for f in findings:
            assert [p for p in f.problems if not p.startswith("no mutant of")] == [], (
                name, f.rule.id, f.problems)
