"""Accruals and prepaids: accruals flagged to reverse, reversal runs, prepaid schedules.

Invariants: ``PostAccrual`` posts a balanced entry of an open period flagged to reverse on
the first day of the next period; ``ReverseAccruals`` reverses every due accrual of a
period there (or the ones it names), once: a second run, an unflagged entry, an accrual of
another period, a run before the reversal day or into a closed period are refused.
``RecordPrepaid`` schedules a bill's line on a prepaid account (never more than the line),
over a number of months or to an end month; ``RunAmortization`` posts each schedule's month
once, in order, the last month taking the rounding remainder; amortizing a closed period,
twice, before a schedule's start or beyond its end is refused. Every refusal writes
nothing. A property over generated schedules and accruals: the trial balance sums to zero,
each prepaid account's balance equals its schedules' remainder, the control accounts tie,
``rebuild()`` reproduces the live read tables and books folded afresh hold the same state.
"""

from __future__ import annotations

import tempfile
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from erp import commands as c
from erp import events as ev
from erp import queries as q
from erp.handlers import amortization_amount
from erp.ledger import Ledger, Submission
from tests.erp.helpers import CLERK, CONTROLLER, SYS, assert_rejected, set_up_company

MAR31 = date(2026, 3, 31)
APR1 = date(2026, 4, 1)


def who(day: date, base: dict[str, Any] = CLERK) -> dict[str, Any]:
    """The caller ``base`` on business date ``day``."""
    return {**base, "business_date": day}


def run(ledger: Ledger, *cmds: c.Command, day: date = MAR31,
        base: dict[str, Any] = CLERK) -> list[ev.Event]:
    """Execute commands in one batch as ``base`` on ``day``; the events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who(day, base))
                                                   for x in cmds])]


def accrual(amount: str, *, day: date = MAR31, entry_id: str | None = None,
            expense: str = "6300", party: str | None = "V1") -> c.PostAccrual:
    """An accrual: Dr the expense, Cr accrued liabilities (2100)."""
    return c.PostAccrual(entry_id=entry_id, entry_date=day, memo="accrue contractor hours",
                         lines=(c.JournalLineIn(account=expense, debit=amount, party=party),
                                c.JournalLineIn(account="2100", credit=amount, party=party)))


def prepaid_bill(bid: str, amount: str, *, day: date = date(2026, 3, 2),
                 account: str = "1300") -> c.EnterBill:
    """A vendor bill with one line on the prepaid account."""
    return c.EnterBill(bill_id=bid, vendor_id="V1", vendor_invoice_number=bid, entry_date=day,
                       lines=(c.BillLineIn(description="annual insurance", amount=amount,
                                           account=account),))


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The helpers' company (Feb-Apr 2026 open)."""
    set_up_company(ledger)
    return ledger


# --- accruals ----------------------------------------------------------------------


def test_an_accrual_is_a_journal_entry_flagged_to_reverse_next_period(company: Ledger) -> None:
    events = run(company, accrual("1234.56", entry_id="JE-ACC"))
    assert [type(e) for e in events] == [ev.JournalEntryPosted, ev.AccrualFlagged]
    flag = events[1]
    assert flag == ev.AccrualFlagged(entry_id="JE-ACC", entry_date=MAR31, period="2026-03",
                                     reverse_on=APR1, amount=123_456)
    assert q.account_balance(company.store, "2100") == -123_456
    doc = q.document(company.store, "accrual", "JE-ACC")
    assert doc is not None
    assert (doc["status"], doc["due_on"], doc["reference"], doc["open_amount"]) == (
        "due", "2026-04-01", "2026-03", 123_456)


def test_the_reversal_run_reverses_every_due_accrual_on_the_first_of_next_month(
        company: Ledger) -> None:
    run(company, accrual("100.00", entry_id="A1"), accrual("250.00", entry_id="A2"),
        c.PostJournalEntry(entry_id="M1", entry_date=MAR31, memo="not an accrual",
                           lines=(c.JournalLineIn(account="6000", debit="5.00"),
                                  c.JournalLineIn(account="2100", credit="5.00"))))
    events = run(company, c.ReverseAccruals(period="2026-03"), day=APR1)
    reversals = [e for e in events if isinstance(e, ev.JournalEntryReversed)]
    assert [(e.entry_id, e.entry_date) for e in reversals] == [("A1", APR1), ("A2", APR1)]
    assert reversals[0].lines == tuple(
        ev.JournalLine(account=x.account, amount=-x.amount, party=x.party, memo=x.memo)
        for x in company.books.journal["A1"].lines)
    run_ev = events[-1]
    assert isinstance(run_ev, ev.AccrualsReversed)
    assert (run_ev.run_id, run_ev.period, run_ev.entry_date, run_ev.entry_ids,
            run_ev.reversal_ids) == ("ACR-000001", "2026-03", APR1, ("A1", "A2"),
                                     tuple(e.reversal_id for e in reversals))
    store = company.store
    assert q.account_balance(store, "2100", as_of=MAR31) == -35_500
    assert q.account_balance(store, "2100", as_of=APR1) == -500  # the manual entry stays
    assert company.books.journal["M1"].reversed_by is None
    for entry in ("A1", "A2"):
        doc = q.document(store, "accrual", entry)
        assert doc is not None and (doc["status"], doc["open_amount"]) == ("reversed", 0)


def test_a_second_reversal_run_is_refused(company: Ledger) -> None:
    run(company, accrual("100.00", entry_id="A1"))
    run(company, c.ReverseAccruals(period="2026-03"), day=APR1)
    assert_rejected(company, c.ReverseAccruals(period="2026-03"), "already_reversed",
                    match="every accrual of period 2026-03 was already reversed (run "
                          "ACR-000001 on 2026-04-01)", field="period", **who(APR1))


def test_naming_an_unflagged_entry_is_refused(company: Ledger) -> None:
    run(company, accrual("100.00", entry_id="A1"),
        c.PostJournalEntry(entry_id="M1", entry_date=MAR31, memo="reclass",
                           lines=(c.JournalLineIn(account="6000", debit="5.00"),
                                  c.JournalLineIn(account="6100", credit="5.00"))))
    assert_rejected(company, c.ReverseAccruals(period="2026-03", entry_ids=("A1", "M1")),
                    "not_an_accrual", match="journal entry M1 is not flagged to reverse",
                    field="entry_ids[1]", **who(APR1))
    assert_rejected(company, c.ReverseAccruals(period="2026-03", entry_ids=("NOPE",)),
                    "unknown_journal_entry", field="entry_ids[0]", **who(APR1))


def test_a_named_accrual_is_reversed_once_and_of_its_own_period(company: Ledger) -> None:
    run(company, accrual("100.00", entry_id="A1"), accrual("40.00", entry_id="A2"))
    run(company, accrual("7.00", entry_id="F1", day=date(2026, 2, 27)), day=date(2026, 2, 27))
    assert_rejected(company, c.ReverseAccruals(period="2026-03", entry_ids=("F1",)),
                    "accrual_of_other_period", match="F1 accrues period 2026-02, not 2026-03",
                    **who(APR1))
    assert_rejected(company, c.ReverseAccruals(period="2026-03", entry_ids=("A1", "A1")),
                    "already_reversed", match="reversed by this run", field="entry_ids[1]",
                    **who(APR1))
    events = run(company, c.ReverseAccruals(period="2026-03", entry_ids=("A1",)), day=APR1)
    assert [e.entry_id for e in events if isinstance(e, ev.JournalEntryReversed)] == ["A1"]
    assert_rejected(company, c.ReverseAccruals(period="2026-03", entry_ids=("A1",)),
                    "already_reversed", match="accrual A1 was already reversed by JE-",
                    **who(APR1))
    rest = run(company, c.ReverseAccruals(period="2026-03"), day=APR1)
    assert [e.entry_id for e in rest if isinstance(e, ev.JournalEntryReversed)] == ["A2"]


def test_an_accrual_reversed_by_hand_is_left_out_of_the_run(company: Ledger) -> None:
    run(company, accrual("100.00", entry_id="A1"), accrual("40.00", entry_id="A2"))
    run(company, c.ReverseJournalEntry(entry_id="A1", entry_date=MAR31, memo="wrong"))
    doc = q.document(company.store, "accrual", "A1")
    assert doc is not None and doc["status"] == "reversed"
    events = run(company, c.ReverseAccruals(period="2026-03"), day=APR1)
    assert events[-1].entry_ids == ("A2",)  # type: ignore[attr-defined]


def test_a_run_with_nothing_to_reverse_is_refused(company: Ledger) -> None:
    assert_rejected(company, c.ReverseAccruals(period="2026-03"), "nothing_to_reverse",
                    match="no accruals were posted in period 2026-03", **who(APR1))
    assert_rejected(company, c.ReverseAccruals(period="2026-09"), "unknown_period",
                    **who(APR1))


def test_a_reversal_before_its_day_or_into_a_closed_period_is_refused(company: Ledger) -> None:
    run(company, accrual("100.00", entry_id="A1"))
    assert_rejected(company, c.ReverseAccruals(period="2026-03"), "reversal_not_due",
                    match="the accruals of 2026-03 reverse on 2026-04-01; today is 2026-03-31",
                    **who(MAR31))
    run(company, c.ClosePeriod(period="2026-04"), day=APR1, base=CONTROLLER)
    assert_rejected(company, c.ReverseAccruals(period="2026-03"), "period_closed",
                    match="reverse_on 2026-04-01 falls in period 2026-04, which is closed",
                    field="reverse_on", **who(APR1))
    # an accrual of the last open period reverses into a period not opened yet
    run(company, c.ReopenPeriod(period="2026-04", reason="late entries"), day=APR1,
        base=CONTROLLER)
    run(company, accrual("1.00", entry_id="A4", day=date(2026, 4, 30)), day=date(2026, 4, 30))
    assert_rejected(company, c.ReverseAccruals(period="2026-04"), "no_open_period",
                    field="reverse_on", **who(date(2026, 5, 1)))


def test_an_accrual_outside_an_open_period_or_unbalanced_is_refused(company: Ledger) -> None:
    assert_rejected(company, accrual("10.00", day=date(2026, 7, 31)), "no_open_period",
                    field="entry_date")
    bad = c.PostAccrual(entry_date=MAR31, memo="x",
                        lines=(c.JournalLineIn(account="6300", debit="10.00"),
                               c.JournalLineIn(account="2100", credit="9.00")))
    assert_rejected(company, bad, "unbalanced_entry")
    to_ap = c.PostAccrual(entry_date=MAR31, memo="x",
                          lines=(c.JournalLineIn(account="6300", debit="10.00"),
                                 c.JournalLineIn(account="2000", credit="10.00")))
    assert_rejected(company, to_ap, "control_account_restricted", field="lines[1].account")


# --- prepaids ----------------------------------------------------------------------


def test_a_prepaid_schedule_draws_on_the_bills_prepaid_line(company: Ledger) -> None:
    run(company, prepaid_bill("INS-1", "1200.00"))
    events = run(company, c.RecordPrepaid(bill_id="INS-1", account="1300", expense_account="6000",
                                          amount="1200.00", start_period="2026-03", months=12,
                                          description="annual insurance"))
    assert events == [ev.PrepaidScheduleRecorded(
        schedule_id="PPD-000001", bill_id="INS-1", vendor_id="V1", entry_date=date(2026, 3, 2),
        account="1300", expense_account="6000", amount=120_000, start_period="2026-03",
        months=12, description="annual insurance")]
    assert q.prepaid_ties(company.store) == [
        q.ControlTie("1300", "Prepaid expenses", "prepaid", 120_000, 120_000)]
    doc = q.document(company.store, "prepaid", "PPD-000001")
    assert doc is not None and (doc["status"], doc["open_amount"], doc["reference"]) == (
        "active", 120_000, "INS-1")


def test_an_end_period_gives_the_number_of_months(company: Ledger) -> None:
    run(company, prepaid_bill("SW-1", "999.99"))
    events = run(company, c.RecordPrepaid(bill_id="SW-1", account="1300", expense_account="6200",
                                          amount="999.99", start_period="2026-03",
                                          end_period="2027-02"))
    assert events[0].months == 12  # type: ignore[attr-defined]


@pytest.mark.parametrize(("kw", "code", "field", "match"), [
    ({"months": 3, "end_period": "2026-05"}, "invalid_schedule", "months", "got both"),
    ({}, "invalid_schedule", "months", "got neither"),
    ({"end_period": "2026-02"}, "invalid_schedule", "end_period",
     "end_period 2026-02 is before start_period 2026-03"),
    ({"months": 3, "start_period": "2026-13"}, "invalid_period", "period", "has no month 13"),
    ({"months": 3, "amount": "1200.01"}, "over_scheduled", "amount",
     "bill INS-1 has 1,200.00 on account 1300 not yet scheduled (of 1,200.00), cannot "
     "schedule 1,200.01"),
    ({"months": 3, "account": "1500"}, "not_on_prepaid_account", "bill_id",
     "bill INS-1 has no line on account 1500"),
    ({"months": 3, "account": "6000"}, "invalid_account", "account", "is not a prepaid account"),
    ({"months": 3, "account": "1200"}, "invalid_account", "account", "is not a prepaid account"),
    ({"months": 3, "expense_account": "2100"}, "invalid_account", "expense_account",
     "(expected an expense account)"),
    ({"months": 3, "expense_account": "9999"}, "unknown_account", "expense_account", ""),
    ({"months": 3, "bill_id": "NOPE"}, "unknown_bill", "bill_id", ""),
    ({"months": 3, "amount": 0}, "non_positive_amount", "amount", ""),
])
def test_a_bad_schedule_is_refused(company: Ledger, kw: dict[str, Any], code: str, field: str,
                                   match: str) -> None:
    run(company, prepaid_bill("INS-1", "1200.00"))
    args: dict[str, Any] = {"bill_id": "INS-1", "account": "1300", "expense_account": "6000",
                            "amount": "1200.00", "start_period": "2026-03", **kw}
    assert_rejected(company, c.RecordPrepaid(**args), code, match=match, field=field)


def test_a_bill_line_is_never_scheduled_twice_over(company: Ledger) -> None:
    run(company, prepaid_bill("INS-1", "1200.00"),
        c.RecordPrepaid(bill_id="INS-1", account="1300", expense_account="6000", amount="800.00",
                        start_period="2026-03", months=2))
    assert_rejected(company, c.RecordPrepaid(bill_id="INS-1", account="1300",
                                             expense_account="6000", amount="400.01",
                                             start_period="2026-03", months=2),
                    "over_scheduled", match="has 400.00 on account 1300 not yet scheduled")


def test_amortization_posts_each_month_once_and_the_last_takes_the_remainder(
        company: Ledger) -> None:
    run(company, prepaid_bill("SW-1", "100.00"),
        c.RecordPrepaid(schedule_id="S1", bill_id="SW-1", account="1300",
                        expense_account="6200", amount="100.00", start_period="2026-02",
                        months=3))
    feb = run(company, c.RunAmortization(period="2026-02"), day=date(2026, 2, 28))
    assert feb == [ev.PrepaidAmortized(
        schedule_id="S1", run_id="AMR-000001", vendor_id="V1", period="2026-02", month=1,
        months=3, entry_date=date(2026, 2, 28), amount=3_333, account="1300",
        expense_account="6200")]
    mar = run(company, c.RunAmortization(period="2026-03"))
    apr = run(company, c.RunAmortization(period="2026-04"), day=date(2026, 4, 30))
    assert [e.amount for e in (*feb, *mar, *apr)] == [3_333, 3_333, 3_334]  # type: ignore
    store = company.store
    assert q.account_balance(store, "1300") == 0
    assert q.account_balance(store, "6200") == 10_000
    assert q.prepaid_ties(store) == [q.ControlTie("1300", "Prepaid expenses", "prepaid", 0, 0)]
    doc = q.document(store, "prepaid", "S1")
    assert doc is not None and (doc["status"], doc["open_amount"]) == ("amortized", 0)
    assert_rejected(company, c.RunAmortization(period="2026-03"), "already_amortized",
                    match="every prepaid schedule running in 2026-03 was already amortized")


def test_amortizing_beyond_the_end_or_before_the_start_is_refused(company: Ledger) -> None:
    run(company, prepaid_bill("SW-1", "100.00"),
        c.RecordPrepaid(schedule_id="S1", bill_id="SW-1", account="1300",
                        expense_account="6200", amount="100.00", start_period="2026-03",
                        months=1))
    run(company, c.RunAmortization(period="2026-03"))
    assert_rejected(company, c.RunAmortization(period="2026-04", schedule_ids=("S1",)),
                    "beyond_schedule_end", match="prepaid schedule S1 ended in 2026-03; it has "
                    "no month in 2026-04", field="schedule_ids[0]")
    assert_rejected(company, c.RunAmortization(period="2026-02", schedule_ids=("S1",)),
                    "before_schedule_start", match="starts in 2026-03", field="schedule_ids[0]")
    assert_rejected(company, c.RunAmortization(period="2026-04"), "nothing_to_amortize",
                    match="no prepaid schedule runs in period 2026-04")
    assert_rejected(company, c.RunAmortization(period="2026-03", schedule_ids=("S1",)),
                    "already_amortized", match="S1 was already amortized for 2026-03")
    assert_rejected(company, c.RunAmortization(period="2026-03", schedule_ids=("S9",)),
                    "unknown_prepaid_schedule", field="schedule_ids[0]")


def test_amortizing_a_closed_period_or_out_of_order_is_refused(company: Ledger) -> None:
    run(company, prepaid_bill("SW-1", "90.00", day=date(2026, 2, 2)),
        c.RecordPrepaid(schedule_id="S1", bill_id="SW-1", account="1300",
                        expense_account="6200", amount="90.00", start_period="2026-02",
                        months=3), day=date(2026, 2, 2))
    assert_rejected(company, c.RunAmortization(period="2026-03"), "earlier_month_unamortized",
                    match="prepaid schedule S1 has 2026-02 not amortized yet", field="period")
    run(company, c.ClosePeriod(period="2026-02"), base=CONTROLLER)
    assert_rejected(company, c.RunAmortization(period="2026-02"), "period_closed",
                    match="2026-02-28 falls in period 2026-02, which is closed", field="period")
    assert_rejected(company, c.RunAmortization(period="2026-08"), "unknown_period")


def test_an_unscheduled_prepaid_line_shows_in_the_tie(company: Ledger) -> None:
    run(company, prepaid_bill("SW-1", "300.00"), prepaid_bill("SW-2", "50.00"),
        c.RecordPrepaid(bill_id="SW-1", account="1300", expense_account="6200",
                        amount="300.00", start_period="2026-03", months=3))
    (tie,) = q.prepaid_ties(company.store)
    assert (tie.gl_balance, tie.subledger_total, tie.difference) == (35_000, 30_000, 5_000)


@pytest.mark.parametrize(("amount", "months"), [(100, 3), (1, 12), (120_000, 12), (99_999, 7),
                                                (5, 5), (7, 1)])
def test_the_months_add_up_to_the_amount(amount: int, months: int) -> None:
    parts = [amortization_amount(amount, months, m) for m in range(1, months + 1)]
    assert sum(parts) == amount
    assert len(set(parts[:-1])) <= 1 and parts[-1] >= parts[0]


# --- the property ------------------------------------------------------------------

schedules_st = st.lists(st.tuples(st.integers(1, 10**7), st.integers(1, 14),
                                  st.sampled_from(["2026-02", "2026-03", "2026-04"])),
                        min_size=1, max_size=5)
accruals_st = st.lists(st.tuples(st.integers(1, 10**6), st.sampled_from([0, 1])), max_size=4)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules_st, accruals_st)
def test_accruals_and_prepaids_keep_the_books_consistent(
        plan: list[tuple[int, int, str]], accruals: list[tuple[int, int]]) -> None:
    """Prepaid bills scheduled and amortized month by month; accruals posted and reversed."""
    with tempfile.TemporaryDirectory() as tmp:
        target = f"sqlite:///{Path(tmp) / 'books.db'}"
        with Ledger.open(target, create=True) as ledger:
            set_up_company(ledger)
            for n, (amount, months, start) in enumerate(plan):
                run(ledger, prepaid_bill(f"P{n}", amount, day=date(2026, 2, 3)),
                    c.RecordPrepaid(bill_id=f"P{n}", account="1300", expense_account="6000",
                                    amount=amount, start_period=start, months=months),
                    day=date(2026, 2, 3))
            for n, (amount, manual) in enumerate(accruals):
                run(ledger, accrual(str(amount), entry_id=f"A{n}", day=date(2026, 2, 28)),
                    day=date(2026, 2, 28))
                if manual:
                    run(ledger, c.ReverseJournalEntry(entry_id=f"A{n}",
                                                      entry_date=date(2026, 2, 28)),
                        day=date(2026, 2, 28))
            for period, end in (("2026-02", date(2026, 2, 28)), ("2026-03", MAR31),
                                ("2026-04", date(2026, 4, 30))):
                if any(1 <= (int(period[5:]) - int(s[5:]) + 1) <= m for _, m, s in plan):
                    run(ledger, c.RunAmortization(period=period), day=end)
                if period == "2026-03" and any(not m for _, m in accruals):
                    run(ledger, c.ReverseAccruals(period="2026-02"), day=end)
            store = ledger.store
            rows = q.trial_balance(store)
            assert sum(r.debit for r in rows) == sum(r.credit for r in rows)
            assert not [t for t in q.control_ties(store) if t.difference]
            (tie,) = q.prepaid_ties(store)
            remaining = sum(s.remaining for s in ledger.books.accrual_books.schedules.values())
            assert tie.gl_balance == tie.subledger_total == remaining
            expected = sum(amount - sum(amortization_amount(amount, months, k)
                                        for k in range(1, min(months, 5 - int(start[5:])) + 1))
                           for amount, months, start in plan)
            assert remaining == expected
            assert q.account_balance(store, "2100") == 0
            live = q.table_snapshot(store)
            with Ledger.open(target) as fresh:
                assert {k: (s.remaining, dict(s.posted)) for k, s in
                        fresh.books.accrual_books.schedules.items()} == {
                    k: (s.remaining, dict(s.posted))
                    for k, s in ledger.books.accrual_books.schedules.items()}
                assert fresh.head_hash == ledger.head_hash
            ledger.rebuild()
            assert q.table_snapshot(store) == live
            assert ledger.verify().ok


def test_accrual_events_reach_their_projections_on_rebuild(company: Ledger) -> None:
    run(company, accrual("10.00", entry_id="A1"), prepaid_bill("P1", "30.00"),
        c.RecordPrepaid(bill_id="P1", account="1300", expense_account="6000", amount="30.00",
                        start_period="2026-03", months=2))
    run(company, c.RunAmortization(period="2026-03"))
    run(company, c.ReverseAccruals(period="2026-03"), day=APR1)
    live = q.table_snapshot(company.store)
    company.rebuild()
    assert q.table_snapshot(company.store) == live
    kinds = {d["kind"] for d in q.documents(company.store)}
    assert {"accrual", "accrual_run", "prepaid"} <= kinds
    assert SYS["role"] == "system"
    assert timedelta(days=1) + MAR31 == APR1
