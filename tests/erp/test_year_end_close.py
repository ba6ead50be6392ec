"""The year-end close: ``CloseFiscalYear`` closes a year's revenue and expense accounts into
retained earnings.

Invariants: once every period of the year is closed, one closing entry dated the year's last
day brings each revenue and expense account's balance of the year to zero and puts the net
income (revenue less expenses) on the chart's retained-earnings account; the next year's
lines are left alone; the year closes once and its periods stay closed. Refused (writing
nothing): a clerk, a period of the year still open, an earlier year still open, a year closed
already, a year without periods or without income, a retained-earnings account that is not
equity (or a control account, or unknown). A property over generated years: the trial
balance sums to zero, every revenue and expense account is zero at the year's end, retained
earnings holds the net income, ``rebuild()`` reproduces the live tables and books folded
afresh hold the same state.
"""

from __future__ import annotations

import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from erp import commands as c
from erp import events as ev
from erp import queries as q
from erp.api.client import build_parser
from erp.api.routers.commands import COMMAND_PATHS
from erp.charts import chart_commands
from erp.events import BankDetails
from erp.ledger import Ledger, Submission
from tests.erp.helpers import CLERK, CONTROLLER, SYS, assert_rejected

JAN2 = date(2027, 1, 2)
DEC31 = date(2026, 12, 31)
MONTHS_2026 = tuple(f"2026-{m:02d}" for m in range(1, 13))


def run(ledger: Ledger, *cmds: c.Command, day: date = JAN2,
        base: dict[str, Any] = CONTROLLER) -> list[ev.Event]:
    """Execute commands in one batch as ``base`` on ``day``; the events they wrote."""
    return [s.event for s in ledger.execute_batch(
        [Submission(x, **{**base, "business_date": day}) for x in cmds])]


def set_up_year(ledger: Ledger, periods: tuple[str, ...] = (*MONTHS_2026, "2027-01")) -> None:
    """A company on the fiscal-year chart (3100 Retained earnings), these periods open, a
    bank, a customer and a vendor."""
    cmds: list[c.Command] = [c.SetUpCompany(name="Year Co")]
    cmds += chart_commands("services-fiscal-year")
    cmds += [c.OpenPeriod(period=p) for p in periods]
    first = date(int(periods[0][:4]), int(periods[0][5:]), 1)
    cmds += [
        c.OpenBankAccount(bank_account_id="B-OPER", name="Operating", number="0001",
                          gl_account="1000", entry_date=first, opening_balance="10000.00"),
        c.RegisterCustomer(customer_id="C1", name="Acme", terms_days=30),
        c.RegisterVendor(vendor_id="V1", name="Initech", terms_days=30,
                         bank=BankDetails(account_name="Initech", routing="111000025",
                                          account_number="123456789")),
    ]
    ledger.execute_batch([Submission(x, **{**SYS, "business_date": first}) for x in cmds])


def invoice(iid: str, amount: str, day: date) -> c.IssueInvoice:
    """An invoice to C1 of one line on 4000."""
    return c.IssueInvoice(invoice_id=iid, customer_id="C1", entry_date=day,
                          lines=[c.InvoiceLineIn(description="Service", unit_price=amount)])


def bill(bid: str, amount: str, day: date, account: str = "6100") -> c.EnterBill:
    """A bill of V1 of one line."""
    return c.EnterBill(bill_id=bid, vendor_id="V1", vendor_invoice_number=bid, entry_date=day,
                       lines=(c.BillLineIn(description="rent", amount=amount, account=account),))


def close_months(ledger: Ledger, periods: tuple[str, ...] = MONTHS_2026) -> None:
    """Close these periods (as the controller)."""
    run(ledger, *(c.ClosePeriod(period=p) for p in periods))


def close_year(year: str = "2026", account: str = "3100") -> c.CloseFiscalYear:
    """The year-end close into ``account``."""
    return c.CloseFiscalYear(fiscal_year=year, retained_earnings=account)


@pytest.fixture
def year(ledger: Ledger) -> Ledger:
    """A year of activity: revenue in March and November, rent in June, a bank fee and
    interest in December, and a January 2027 invoice of the next year."""
    set_up_year(ledger)
    run(ledger, invoice("INV-1", "5000.00", date(2026, 3, 10)),
        invoice("INV-2", "1500.00", date(2026, 11, 3)),
        bill("B1", "2000.00", date(2026, 6, 1)),
        c.RecordBankFee(bank_account_id="B-OPER", entry_date=date(2026, 12, 30),
                        amount="12.50"),
        c.RecordInterest(bank_account_id="B-OPER", entry_date=date(2026, 12, 31),
                         amount="3.25"),
        invoice("INV-3", "700.00", date(2027, 1, 2)), base=SYS)
    return ledger


# --- the closing entry ----------------------------------------------------------------


def test_the_close_brings_income_accounts_to_zero_into_retained_earnings(year: Ledger) -> None:
    close_months(year)
    (e,) = run(year, close_year())
    assert isinstance(e, ev.FiscalYearClosed)
    assert (e.entry_id, e.entry_date, e.periods, e.retained_earnings) == (
        "YE-2026", DEC31, MONTHS_2026, "3100")
    assert [(x.account, x.amount) for x in e.lines] == [
        ("4000", 650_000), ("4900", 325), ("6100", -200_000), ("6800", -1_250),
        ("3100", -449_075)]
    assert e.net_income == 449_075
    store = year.store
    for code in ("4000", "4900", "6100", "6800"):
        assert q.account_balance(store, code, as_of=DEC31) == 0, code
    assert q.account_balance(store, "3100") == -449_075
    assert q.account_balance(store, "4000") == -70_000  # January 2027 stays open
    rows = q.trial_balance(store)
    assert sum(r.debit for r in rows) == sum(r.credit for r in rows)
    doc = next(d for d in q.documents(store, "journal") if d["doc_id"] == "YE-2026")
    assert (doc["status"], doc["total"], str(doc["doc_date"]), doc["reference"]) == (
        "posted", 650_325, "2026-12-31", "year_end_close")


def test_a_loss_debits_retained_earnings(ledger: Ledger) -> None:
    set_up_year(ledger)
    run(ledger, invoice("INV-1", "100.00", date(2026, 2, 2)),
        bill("B1", "250.00", date(2026, 2, 2)), base=SYS)
    close_months(ledger)
    (e,) = run(ledger, close_year())
    assert isinstance(e, ev.FiscalYearClosed)
    assert e.net_income == -15_000
    assert q.account_balance(ledger.store, "3100") == 15_000


def test_the_next_year_closes_only_its_own_lines(year: Ledger) -> None:
    close_months(year)
    run(year, close_year())
    run(year, invoice("INV-4", "50.00", date(2027, 1, 20)), base=SYS)
    close_months(year, ("2027-01",))
    (e,) = run(year, close_year("2027"), day=date(2027, 2, 1))
    assert isinstance(e, ev.FiscalYearClosed)
    assert [(x.account, x.amount) for x in e.lines] == [("4000", 75_000), ("3100", -75_000)]
    assert e.entry_date == date(2027, 1, 31)
    assert q.account_balance(year.store, "3100") == -524_075


# --- refusals -------------------------------------------------------------------------


def test_a_clerk_may_not_close_the_year(year: Ledger) -> None:
    close_months(year)
    assert_rejected(year, close_year(), "forbidden_for_role", match="close a fiscal year",
                    **{**CLERK, "business_date": JAN2})


def test_a_month_still_open_is_refused(year: Ledger) -> None:
    close_months(year, MONTHS_2026[:-1])
    assert_rejected(year, close_year(), "period_open", field="fiscal_year",
                    match="period 2026-12 is open; close it first",
                    **{**CONTROLLER, "business_date": JAN2})


def test_a_year_closed_already_is_refused(year: Ledger) -> None:
    close_months(year)
    run(year, close_year())
    assert_rejected(year, close_year(), "year_closed", field="fiscal_year",
                    match="already closed (closing entry YE-2026)",
                    **{**CONTROLLER, "business_date": JAN2})


def test_a_closed_years_period_cannot_be_reopened(year: Ledger) -> None:
    close_months(year)
    run(year, close_year())
    assert_rejected(year, c.ReopenPeriod(period="2026-12", reason="late bill"), "year_closed",
                    field="period", match="fiscal year 2026, closed by YE-2026",
                    **{**CONTROLLER, "business_date": JAN2})


@pytest.mark.parametrize(("account", "code", "match"), [
    ("4000", "wrong_account_type", "4000 (Service revenue) is a revenue account"),
    ("2100", "wrong_account_type", "is a liability account; expected the chart's"),
    ("1200", "control_account_restricted", "the ar control account"),
    ("9999", "unknown_account", ""),
])
def test_a_retained_earnings_account_of_the_wrong_type_is_refused(
        year: Ledger, account: str, code: str, match: str) -> None:
    close_months(year)
    assert_rejected(year, close_year(account=account), code, match=match,
                    field="retained_earnings", **{**CONTROLLER, "business_date": JAN2})


def test_a_year_without_periods_is_refused(year: Ledger) -> None:
    assert_rejected(year, close_year("2031"), "unknown_period", field="fiscal_year",
                    match="fiscal year 2031 has no accounting period",
                    **{**CONTROLLER, "business_date": JAN2})


def test_an_earlier_year_still_open_is_refused(ledger: Ledger) -> None:
    set_up_year(ledger, ("2025-12", *MONTHS_2026))
    run(ledger, invoice("INV-1", "10.00", date(2026, 5, 5)), base=SYS)
    close_months(ledger, ("2025-12", *MONTHS_2026))
    assert_rejected(ledger, close_year(), "earlier_year_open", field="fiscal_year",
                    match="fiscal year 2025 is not closed yet; close it before 2026",
                    **{**CONTROLLER, "business_date": JAN2})


def test_a_year_without_income_is_refused(ledger: Ledger) -> None:
    set_up_year(ledger, MONTHS_2026)
    close_months(ledger)
    assert_rejected(ledger, close_year(), "nothing_to_close", field="fiscal_year",
                    match="no revenue or expense balance",
                    **{**CONTROLLER, "business_date": JAN2})


@pytest.mark.parametrize("bad", ["26", "2026-12", "FY26"])
def test_a_malformed_fiscal_year_is_refused_by_the_command(bad: str) -> None:
    with pytest.raises(ValidationError, match="fiscal_year"):
        c.CloseFiscalYear(fiscal_year=bad, retained_earnings="3100")


# --- the client and the API route ------------------------------------------------------


def test_the_client_verb_builds_the_command() -> None:
    ns = build_parser().parse_args(["periods", "close-year", "2026", "--retained-earnings",
                                    "3100", "--memo", "FY2026"])
    method, path, _params, body, *_ = ns.handler(ns)
    assert (method, path) == ("POST", "/v1/commands/close-fiscal-year")
    assert body == {"fiscal_year": "2026", "retained_earnings": "3100", "memo": "FY2026"}
    c.CloseFiscalYear.model_validate(body)
    assert COMMAND_PATHS["/v1/commands/close-fiscal-year"] == "CloseFiscalYear"


# --- the property ----------------------------------------------------------------------

entries_st = st.lists(st.tuples(st.sampled_from(["inv", "bill6000", "bill6100", "fee", "int"]),
                                st.integers(1, 10**7), st.integers(1, 12)),
                      min_size=1, max_size=12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries_st)
def test_the_year_end_close_keeps_the_books_consistent(
        entries: list[tuple[str, int, int]]) -> None:
    """Generated revenue and expenses over a year, the months closed, the year closed."""
    with tempfile.TemporaryDirectory() as tmp:
        target = f"sqlite:///{Path(tmp) / 'books.db'}"
        with Ledger.open(target, create=True) as ledger:
            set_up_year(ledger)
            net = 0
            for n, (kind, cents, month) in enumerate(entries):
                day = date(2026, month, 15)
                amount = f"{cents // 100}.{cents % 100:02d}"
                cmd: c.Command
                if kind == "inv":
                    cmd, net = invoice(f"I{n}", amount, day), net + cents
                elif kind.startswith("bill"):
                    cmd, net = bill(f"B{n}", amount, day, kind[4:]), net - cents
                elif kind == "fee":
                    cmd = c.RecordBankFee(bank_account_id="B-OPER", entry_date=day,
                                          amount=amount)
                    net -= cents
                else:
                    cmd = c.RecordInterest(bank_account_id="B-OPER", entry_date=day,
                                           amount=amount)
                    net += cents
                run(ledger, cmd, base=SYS, day=day)
            close_months(ledger)
            (e,) = run(ledger, close_year())
            assert isinstance(e, ev.FiscalYearClosed) and e.net_income == net
            store = ledger.store
            rows = q.trial_balance(store)
            assert sum(r.debit for r in rows) == sum(r.credit for r in rows)
            assert not [t for t in q.control_ties(store) if t.difference]
            assert not [r for r in q.trial_balance(store, as_of=DEC31)
                        if r.account_type in ("revenue", "expense")]
            assert q.account_balance(store, "3100") == -net
            live = q.table_snapshot(store)
            with Ledger.open(target) as fresh:
                assert fresh.books.year_end == ledger.books.year_end
                assert fresh.head_hash == ledger.head_hash
            ledger.rebuild()
            assert q.table_snapshot(store) == live
            assert ledger.verify().ok
