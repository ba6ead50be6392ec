"""Payroll and sales tax: registers posted as journals, returns filed, tax remitted.

Invariants: ``PostPayroll`` posts a register as one balanced journal (Dr wages, Dr employer
taxes, Cr withholdings payable, Cr employer taxes payable, Cr the bank for net pay) that
ties to the register: every row's net is its gross less what was withheld, the totals row
(when given) is the rows' sum, a register is posted once. ``FileSalesTaxReturn`` files a
month's return only with the books' figures (the month's invoices: gross sales, taxable
sales, tax) and only when the jurisdiction's tax account moved in the month by exactly that
tax; ``RemitSalesTax`` pays a filed return from the bank, never more than it leaves unpaid,
never before it was filed. Every refusal writes nothing. A property over generated
registers and invoices: the trial balance sums to zero, the control accounts tie, 2200
holds the tax of the months not remitted, the withholding accounts what the registers
withheld, ``rebuild()`` reproduces the live read tables and books folded afresh hold the
same state.

Also the exact postings and event strategies of these rules (merged into
``tests/erp/test_postings.py``'s completeness tests).
"""

from __future__ import annotations

import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from erp import commands as c
from erp import events as ev
from erp import queries as q
from erp.charts import chart_commands
from erp.ledger import Ledger, Submission
from erp.postings import POSTING_TYPES, Posting, post
from tests.erp.helpers import BANK, CLERK, CONTROLLER, SYS, assert_rejected, set_up_company

MAR15 = date(2026, 3, 15)
APR10 = date(2026, 4, 10)


def run(ledger: Ledger, *cmds: c.Command, day: date = APR10,
        base: dict[str, Any] = CLERK) -> list[ev.Event]:
    """Execute commands in one batch as ``base`` on ``day``; the events they wrote."""
    return [s.event for s in ledger.execute_batch(
        [Submission(x, **{**base, "business_date": day}) for x in cmds])]


def row(emp: str, gross: str, withheld: str, employer: str, net: str) -> c.PayrollLineIn:
    """A register row."""
    return c.PayrollLineIn(employee_id=emp, name=f"Employee {emp}", gross=gross,
                           withheld=withheld, employer_taxes=employer, net=net)


def register(rid: str = "PR-0315", *lines: c.PayrollLineIn, day: date = MAR15,
             **kw: Any) -> c.PostPayroll:
    """A semi-monthly register paid on ``day``."""
    return c.PostPayroll(register_id=rid, entry_date=day, period_start=date(2026, 3, 1),
                         period_end=date(2026, 3, 15), bank_account_id=BANK,
                         lines=lines or (row("E1", "3000.00", "612.50", "229.50", "2387.50"),
                                         row("E2", "2500.00", "480.25", "191.25", "2019.75")),
                         **kw)


def changed(cmd: c.Command, updates: dict[str, Any]) -> Any:
    """The command with some fields changed (validated, as the API would take them)."""
    return type(cmd).model_validate({**cmd.model_dump(), **updates})


def invoice(customer: str, amount: str, rate_bp: int, day: date) -> c.IssueInvoice:
    """A one-line invoice with tax at ``rate_bp``."""
    return c.IssueInvoice(customer_id=customer, entry_date=day, tax_rate_bp=rate_bp,
                          lines=(c.InvoiceLineIn(description="goods", unit_price=amount),))


def the_return(period: str = "2026-03", gross: str = "1500.00", taxable: str = "1000.00",
               tax: str = "72.50", day: date = APR10) -> c.FileSalesTaxReturn:
    """March's return as the fixture's invoices make it."""
    return c.FileSalesTaxReturn(jurisdiction_id="ST", period=period, entry_date=day,
                                gross_sales=gross, taxable_sales=taxable, tax_due=tax)


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The helpers' company with the payroll accounts and a 7.25% jurisdiction on 2200."""
    set_up_company(ledger)
    extra = [x for x in chart_commands("services-with-payroll")
             if x.code in ("2300", "2310", "6400", "6410")]
    ledger.execute_batch([Submission(x, **SYS) for x in (
        *extra, c.RegisterTaxJurisdiction(jurisdiction_id="ST", name="State of Example",
                                          rate_bp=725))])
    return ledger


@pytest.fixture
def sales(company: Ledger) -> Ledger:
    """March: a taxed invoice of 1,000.00 (72.50 tax) and an exempt one of 500.00."""
    run(company, invoice("C1", "1000.00", 725, date(2026, 3, 10)),
        invoice("C2", "500.00", 0, date(2026, 3, 20)), day=date(2026, 3, 20))
    return company


# --- payroll -----------------------------------------------------------------------


def test_a_register_posts_one_journal_that_ties_to_it(company: Ledger) -> None:
    (e,) = run(company, register(gross_total="5500.00", net_total="4407.25"), day=MAR15)
    assert isinstance(e, ev.PayrollPosted)
    assert (e.gross, e.withheld, e.employer_taxes, e.net) == (550000, 109275, 42075, 440725)
    assert post(e) == (Posting("6400", 550000, None, "PR-0315"),
                       Posting("6410", 42075, None, "PR-0315"),
                       Posting("2300", -109275, None, "PR-0315"),
                       Posting("2310", -42075, None, "PR-0315"),
                       Posting("1000", -440725, None, "PR-0315"))
    store = company.store
    assert q.account_balance(store, "2300") == -109275
    assert company.books.bank_accounts[BANK].balance == 1_000_000 - 440725
    assert not [t for t in q.control_ties(store) if t.difference]
    (doc,) = q.documents(store, kind="payroll")
    assert (doc["doc_id"], doc["total"], doc["status"]) == ("PR-0315", 550000, "posted")


def test_a_row_that_does_not_tie_is_refused(company: Ledger) -> None:
    bad = register("PR-1", row("E1", "3000.00", "612.50", "229.50", "2388.50"))
    assert_rejected(company, bad, "register_does_not_tie", field="lines[0].net",
                    match="2,387.50", business_date=MAR15, actor="a", role="clerk")


@pytest.mark.parametrize(("kw", "code", "field"), [
    ({"gross_total": "5500.01"}, "register_does_not_tie", "gross_total"),
    ({"net_total": "4407.24"}, "register_does_not_tie", "net_total"),
    ({"wage_account": "2300"}, "invalid_account", "wage_account"),
    ({"withholding_account": "6400"}, "invalid_account", "withholding_account"),
    ({"employer_tax_payable_account": "1000"}, "invalid_account",
     "employer_tax_payable_account"),
    ({"bank_account_id": "B-NONE"}, "unknown_bank_account", "bank_account_id"),
    ({"period_start": date(2026, 3, 16)}, "invalid_pay_period", "period_end"),
    ({"entry_date": date(2026, 5, 15)}, "no_open_period", "entry_date"),
])
def test_a_bad_register_is_refused(company: Ledger, kw: dict[str, Any], code: str,
                                   field: str) -> None:
    assert_rejected(company, changed(register(), kw), code, field=field)


def test_a_register_is_posted_once_and_an_employee_once(company: Ledger) -> None:
    run(company, register(), day=MAR15)
    assert_rejected(company, register(), "already_posted", field="register_id")
    twice = register("PR-2", row("E1", "10.00", "1.00", "0", "9.00"),
                     row("E1", "10.00", "1.00", "0", "9.00"))
    assert_rejected(company, twice, "duplicate_employee", field="lines[1].employee_id")
    neg = register("PR-3", row("E1", "10.00", "-1.00", "0", "11.00"))
    assert_rejected(company, neg, "negative_amount", field="lines[0].withheld")
    zero = register("PR-4", row("E1", "0", "0", "0", "0"))
    assert_rejected(company, zero, "non_positive_amount", field="lines[0].gross")


def test_net_pay_respects_the_cash_policy(ledger: Ledger) -> None:
    set_up_company(ledger, ev.Policies(minimum_bank_balance=0))
    ledger.execute_batch([Submission(x, **SYS) for x in chart_commands("services-with-payroll")
                          if x.code in ("2300", "2310", "6400", "6410")])
    big = register("PR-BIG", row("E1", "20000.00", "1000.00", "0", "19000.00"))
    assert_rejected(ledger, big, "cash_policy", field="bank_account_id")


def test_a_register_reversed_may_be_posted_again_as_corrected(company: Ledger) -> None:
    run(company, register(), day=MAR15)
    (e,) = run(company, c.ReversePayroll(register_id="PR-0315", entry_date=date(2026, 3, 16)),
               day=date(2026, 3, 16))
    assert isinstance(e, ev.PayrollReversed) and e.net == 440725
    store = company.store
    for account in ("2300", "2310", "6400", "6410"):
        assert q.account_balance(store, account) == 0
    assert company.books.bank_accounts[BANK].balance == 1_000_000
    assert not [t for t in q.control_ties(store) if t.difference]
    (doc,) = q.documents(store, kind="payroll")
    assert (doc["status"], doc["open_amount"]) == ("reversed", 0)
    run(company, register("PR-0315", row("E1", "3100.00", "612.50", "229.50", "2487.50"),
                          day=date(2026, 3, 16)), day=date(2026, 3, 16))
    assert q.account_balance(store, "6400") == 310000
    (doc,) = q.documents(store, kind="payroll")
    assert (doc["status"], doc["open_amount"]) == ("posted", 310000)  # the gross standing
    live = q.table_snapshot(store)
    company.rebuild()
    assert q.table_snapshot(store) == live


def test_a_bad_payroll_reversal_is_refused(company: Ledger) -> None:
    rev = c.ReversePayroll(register_id="PR-0315", entry_date=date(2026, 3, 16))
    assert_rejected(company, rev, "unknown_payroll_register", field="register_id")
    run(company, register(), day=MAR15)
    assert_rejected(company, changed(rev, {"entry_date": date(2026, 3, 14)}), "before_posting",
                    field="entry_date")
    assert_rejected(company, changed(rev, {"entry_date": date(2026, 5, 4)}), "no_open_period")
    run(company, rev, day=date(2026, 3, 16))
    assert_rejected(company, rev, "unknown_payroll_register")


# --- sales tax: the return -----------------------------------------------------------


def test_the_return_is_filed_with_the_books_figures(sales: Ledger) -> None:
    (e,) = run(sales, the_return())
    assert isinstance(e, ev.SalesTaxReturnFiled)
    assert (e.gross_sales, e.taxable_sales, e.exempt_sales, e.tax_due) == (
        150000, 100000, 50000, 7250)
    assert e.due_on == date(2026, 4, 20) and e.rate_bp == 725 and e.account == "2200"
    assert post(e) == ()
    (doc,) = q.documents(sales.store, kind="tax_return")
    assert (doc["open_amount"], doc["status"], doc["reference"]) == (7250, "filed", "2026-03")


@pytest.mark.parametrize(("kw", "field", "says"), [
    ({"tax": "72.49"}, "tax_due", "tax_due 72.49 (the books: 72.50)"),
    ({"taxable": "1500.00"}, "tax_due", "taxable_sales 1,500.00 (the books: 1,000.00)"),
    ({"gross": "1000.00"}, "tax_due", "gross_sales 1,000.00 (the books: 1,500.00)"),
])
def test_a_return_that_does_not_tie_to_the_books_is_refused(
        sales: Ledger, kw: dict[str, Any], field: str, says: str) -> None:
    assert_rejected(sales, the_return(**kw), "return_does_not_tie", field=field, match=says)


def test_a_return_is_filed_after_its_month_once_for_a_known_jurisdiction(
        sales: Ledger) -> None:
    assert_rejected(sales, the_return(day=date(2026, 3, 31)), "period_not_ended",
                    field="entry_date")
    assert_rejected(sales, changed(the_return(), {"jurisdiction_id": "XX"}),
                    "unknown_jurisdiction", field="jurisdiction_id")
    assert_rejected(sales, the_return(day=date(2026, 5, 2)), "no_open_period")
    run(sales, the_return())
    assert_rejected(sales, the_return(), "already_filed", field="period")


def test_a_return_is_refused_when_the_tax_account_moved_otherwise(sales: Ledger) -> None:
    run(sales, c.PostJournalEntry(entry_date=date(2026, 3, 25), memo="tax by hand", lines=(
        c.JournalLineIn(account="2200", debit="5.00"),
        c.JournalLineIn(account="6000", credit="5.00"))), day=date(2026, 3, 25))
    assert_rejected(sales, the_return(), "tax_account_does_not_tie", field="period",
                    match="credited 67.50")


def test_registering_a_jurisdiction_is_a_managers_and_its_account_is_its_own(
        company: Ledger) -> None:
    j = c.RegisterTaxJurisdiction(jurisdiction_id="CO", name="County", rate_bp=100)
    assert_rejected(company, j, "forbidden_for_role")
    assert_rejected(company, j, "account_in_use", field="account", **CONTROLLER)
    assert_rejected(company, changed(j, {"account": "6000"}), "invalid_account",
                    field="account", **CONTROLLER)
    assert_rejected(company, changed(j, {"jurisdiction_id": "ST", "account": "2100"}),
                    "duplicate_id", field="jurisdiction_id", **CONTROLLER)


# --- sales tax: the remittance ---------------------------------------------------------


def test_remitting_clears_the_tax_account_from_the_bank(sales: Ledger) -> None:
    (filed,) = run(sales, the_return())
    assert isinstance(filed, ev.SalesTaxReturnFiled)
    rid = filed.return_id
    pay = c.RemitSalesTax(return_id=rid, bank_account_id=BANK, entry_date=APR10,
                          amount="70.00")
    (e,) = run(sales, pay)
    assert post(e) == (Posting("2200", 7000, None, e.payment_id),  # type: ignore[attr-defined]
                       Posting("1000", -7000, None, e.payment_id))  # type: ignore[attr-defined]
    assert_rejected(sales, pay, "over_remitted", field="amount", match="2.50 unpaid")
    run(sales, changed(pay, {"amount": "2.50"}))
    store = sales.store
    assert q.account_balance(store, "2200") == 0
    (doc,) = q.documents(store, kind="tax_return")
    assert (doc["open_amount"], doc["status"]) == (0, "paid")
    assert len(q.documents(store, kind="tax_payment")) == 2
    assert not [t for t in q.control_ties(store) if t.difference]


def test_a_bad_remittance_is_refused(sales: Ledger) -> None:
    (filed,) = run(sales, the_return())
    rid = filed.return_id  # type: ignore[attr-defined]
    pay = c.RemitSalesTax(return_id=rid, bank_account_id=BANK, entry_date=APR10,
                          amount="72.50")
    assert_rejected(sales, changed(pay, {"return_id": "STR-9"}), "unknown_tax_return",
                    field="return_id")
    assert_rejected(sales, changed(pay, {"entry_date": date(2026, 4, 9)}),
                    "before_filing", field="entry_date")
    assert_rejected(sales, changed(pay, {"amount": 0}), "non_positive_amount")
    assert_rejected(sales, changed(pay, {"bank_account_id": "B-X"}),
                    "unknown_bank_account")


def test_payroll_and_tax_events_reach_their_projections_on_rebuild(sales: Ledger) -> None:
    run(sales, register(), day=MAR15)
    (filed,) = run(sales, the_return())
    run(sales, c.RemitSalesTax(return_id=filed.return_id,  # type: ignore[attr-defined]
                               bank_account_id=BANK, entry_date=APR10, amount="72.50"))
    live = q.table_snapshot(sales.store)
    sales.rebuild()
    assert q.table_snapshot(sales.store) == live
    kinds = {d["kind"] for d in q.documents(sales.store)}
    assert {"payroll", "tax_return", "tax_payment"} <= kinds
    assert sales.verify().ok


# --- the property ------------------------------------------------------------------

rows_st = st.lists(st.tuples(st.integers(1, 10**6), st.integers(0, 100),
                             st.integers(0, 10**5)), min_size=1, max_size=4)
registers_st = st.lists(rows_st, min_size=1, max_size=3)
invoices_st = st.lists(st.tuples(st.integers(1, 10**6), st.sampled_from([0, 725, 900]),
                                 st.sampled_from(["2026-02", "2026-03"])), max_size=6)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(registers_st, invoices_st, st.booleans())
def test_payroll_and_sales_tax_keep_the_books_consistent(
        registers: list[list[tuple[int, int, int]]], invoices: list[tuple[int, int, str]],
        pay_in_full: bool) -> None:
    """Registers (withheld as a percentage of gross) posted; February's and March's
    invoices taxed or not; each month's return filed with the books' figures and paid in
    full or all but a cent."""
    with tempfile.TemporaryDirectory() as tmp:
        target = f"sqlite:///{Path(tmp) / 'books.db'}"
        with Ledger.open(target, create=True) as ledger:
            set_up_company(ledger)
            ledger.execute_batch([Submission(x, **SYS) for x in (
                *[x for x in chart_commands("services-with-payroll")
                  if x.code in ("2300", "2310", "6400", "6410")],
                c.RegisterTaxJurisdiction(jurisdiction_id="ST", name="S", rate_bp=725),
                c.RecordInterest(bank_account_id=BANK, entry_date=date(2026, 2, 2),
                                 amount=10**9))])
            withheld_total = 0
            for n, rows in enumerate(registers):
                lines = []
                for k, (gross, pct, employer) in enumerate(rows):
                    withheld = gross * pct // 100
                    withheld_total += withheld
                    lines.append(c.PayrollLineIn(employee_id=f"E{k}", gross=gross,
                                                 withheld=withheld, employer_taxes=employer,
                                                 net=gross - withheld))
                run(ledger, register(f"PR-{n}", *lines), day=MAR15)
            for amount, rate, period in invoices:
                day = date(2026, int(period[5:]), 10)
                run(ledger, c.IssueInvoice(customer_id="C2", entry_date=day, tax_rate_bp=rate,
                                           lines=(c.InvoiceLineIn(description="x",
                                                                  unit_price=amount),)),
                    day=day)
            unpaid = 0
            for period in ("2026-02", "2026-03"):
                gross, taxable, tax, _ = _figures(invoices, period)
                (filed,) = run(ledger, c.FileSalesTaxReturn(
                    jurisdiction_id="ST", period=period, entry_date=APR10, gross_sales=gross,
                    taxable_sales=taxable, tax_due=tax))
                paying = tax if pay_in_full else tax - 1
                if paying > 0:
                    run(ledger, c.RemitSalesTax(return_id=filed.return_id,  # type: ignore[attr-defined]
                                                bank_account_id=BANK, entry_date=APR10,
                                                amount=paying))
                unpaid += tax - max(paying, 0)
            store = ledger.store
            rows_ = q.trial_balance(store)
            assert sum(r.debit for r in rows_) == sum(r.credit for r in rows_)
            assert not [t for t in q.control_ties(store) if t.difference]
            assert q.account_balance(store, "2200") == -unpaid
            assert q.account_balance(store, "2300") == -withheld_total
            assert q.account_balance(store, "6400") == sum(g for r in registers for g, _, _ in r)
            live = q.table_snapshot(store)
            with Ledger.open(target) as fresh:
                assert fresh.books.payroll_tax == ledger.books.payroll_tax
                assert fresh.head_hash == ledger.head_hash
            ledger.rebuild()
            assert q.table_snapshot(store) == live
            assert ledger.verify().ok


def _figures(invoices: list[tuple[int, int, str]], period: str) -> tuple[int, int, int, None]:
    """A month's gross sales, taxable sales and tax, as the invoices were drawn."""
    from erp.money import pct_of

    mine = [(a, r) for a, r, p in invoices if p == period]
    return (sum(a for a, _ in mine), sum(a for a, r in mine if r and pct_of(a, r)),
            sum(pct_of(a, r) for a, r in mine), None)


# --- exact postings and strategies (merged into test_postings.py) ----------------------

DAY = date(2026, 3, 15)
_ids = st.from_regex(r"[A-Z]{1,4}-[0-9]{1,6}", fullmatch=True)
_codes = st.sampled_from(["1000", "2200", "2300", "2310", "6400", "6410"])
_cents = st.integers(min_value=0, max_value=10**9)
_days = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))
_periods = st.builds(lambda y, m: f"{y:04d}-{m:02d}", st.integers(2000, 2099),
                     st.integers(1, 12))


def _payroll(lines: list[tuple[int, int, int]], **kw: Any) -> ev.PayrollPosted:
    rows = tuple(ev.PayrollLine(employee_id=f"E{n}", name="", gross=g + w, withheld=w,
                                employer_taxes=t, net=g) for n, (g, w, t) in enumerate(lines))
    return ev.PayrollPosted(
        lines=rows, gross=sum(x.gross for x in rows), withheld=sum(x.withheld for x in rows),
        employer_taxes=sum(x.employer_taxes for x in rows), net=sum(x.net for x in rows),
        **kw)


STRATEGIES: dict[type[ev.Event], st.SearchStrategy[ev.Event]] = {
    ev.PayrollPosted: st.builds(
        _payroll, st.lists(st.tuples(_cents.map(lambda x: x + 1), _cents, _cents), min_size=1,
                           max_size=3),
        register_id=_ids, entry_date=_days, period_start=_days, period_end=_days,
        bank_account_id=_ids, wage_account=_codes, employer_tax_account=_codes,
        withholding_account=_codes, employer_tax_payable_account=_codes,
        bank_gl_account=_codes, memo=st.text(max_size=10)),
    ev.PayrollReversed: st.builds(
        lambda p: ev.PayrollReversed(**{k: getattr(p, k) for k in ev.PayrollReversed.model_fields
                                       if k not in ("type",)}),
        st.builds(_payroll, st.lists(st.tuples(_cents.map(lambda x: x + 1), _cents, _cents),
                                     min_size=1, max_size=3),
                  register_id=_ids, entry_date=_days, period_start=_days, period_end=_days,
                  bank_account_id=_ids, wage_account=_codes, employer_tax_account=_codes,
                  withholding_account=_codes, employer_tax_payable_account=_codes,
                  bank_gl_account=_codes, memo=st.text(max_size=10))),
    ev.TaxJurisdictionRegistered: st.builds(
        ev.TaxJurisdictionRegistered, jurisdiction_id=_ids, name=st.text(max_size=10),
        rate_bp=st.integers(1, 5000), account=_codes, due_day=st.integers(1, 28)),
    ev.SalesTaxReturnFiled: st.builds(
        ev.SalesTaxReturnFiled, return_id=_ids, jurisdiction_id=_ids, period=_periods,
        entry_date=_days, due_on=_days, gross_sales=_cents, taxable_sales=_cents,
        exempt_sales=_cents, tax_due=_cents, rate_bp=st.integers(1, 5000), account=_codes,
        invoice_ids=st.lists(_ids, max_size=3).map(tuple)),
    ev.SalesTaxRemitted: st.builds(
        ev.SalesTaxRemitted, payment_id=_ids, return_id=_ids, jurisdiction_id=_ids,
        period=_periods, bank_account_id=_ids, entry_date=_days, amount=_cents.map(lambda x: x + 1),
        account=_codes, bank_gl_account=_codes),
}
"""A strategy per payroll and sales-tax event class."""

MOVES_MONEY: frozenset[type[ev.Event]] = frozenset({ev.PayrollPosted, ev.PayrollReversed,
                                                    ev.SalesTaxRemitted})
POSTS_NOTHING: frozenset[type[ev.Event]] = frozenset({
    ev.TaxJurisdictionRegistered,  # a rate and an account
    ev.SalesTaxReturnFiled,  # the invoices put the tax on the account
})

_KW = {"register_id": "PR-0531", "entry_date": DAY, "period_start": date(2026, 3, 1),
       "period_end": DAY, "bank_account_id": BANK, "wage_account": "6400",
       "employer_tax_account": "6410", "withholding_account": "2300",
       "employer_tax_payable_account": "2310", "bank_gl_account": "1000", "memo": ""}

EXACT: dict[type[ev.Event], list[tuple[str, ev.Event, tuple[Posting, ...]]]] = {
    ev.PayrollPosted: [
        ("gross wages and employer taxes debited, withholdings and employer taxes payable "
         "credited, net pay out of the bank",
         _payroll([(200000, 45000, 18000), (150000, 30000, 13500)], **_KW),
         (Posting("6400", 425000, None, "PR-0531"), Posting("6410", 31500, None, "PR-0531"),
          Posting("2300", -75000, None, "PR-0531"), Posting("2310", -31500, None, "PR-0531"),
          Posting("1000", -350000, None, "PR-0531"))),
        ("a register without employer taxes or withholdings leaves their lines out",
         _payroll([(100000, 0, 0)], **_KW),
         (Posting("6400", 100000, None, "PR-0531"), Posting("1000", -100000, None, "PR-0531"))),
    ],
    ev.PayrollReversed: [
        ("every line of the register's journal negated: net pay back in the bank",
         ev.PayrollReversed(**{k: v for k, v in _payroll([(200000, 45000, 18000)], **_KW)
                               .model_dump().items() if k in ev.PayrollReversed.model_fields
                               and k != "type"}),
         (Posting("6400", -245000, None, "PR-0531"), Posting("6410", -18000, None, "PR-0531"),
          Posting("2300", 45000, None, "PR-0531"), Posting("2310", 18000, None, "PR-0531"),
          Posting("1000", 200000, None, "PR-0531"))),
    ],
    ev.SalesTaxRemitted: [
        ("the tax account debited, the bank credited",
         ev.SalesTaxRemitted(payment_id="STP-000001", return_id="STR-000001",
                             jurisdiction_id="ST", period="2026-02", bank_account_id=BANK,
                             entry_date=DAY, amount=7250, account="2200",
                             bank_gl_account="1000"),
         (Posting("2200", 7250, None, "STP-000001"), Posting("1000", -7250, None, "STP-000001"))),
    ],
}


def test_the_exact_cases_are_of_posting_rules() -> None:
    assert set(EXACT) <= POSTING_TYPES and set(EXACT) == MOVES_MONEY


# --- the erp client's verbs ------------------------------------------------------------


@pytest.mark.parametrize(("args", "route", "model", "expected"), [
    (["payroll", "post", "PR-1", "--date", "2026-03-15", "--from", "2026-03-01", "--to",
      "2026-03-15", "--bank", BANK, "--row", "E1:3000.00:612.50:229.50:2387.50:Dana Lee",
      "--row", "E2:10.00:0:0:10.00", "--gross-total", "3010.00"], "post-payroll",
     c.PostPayroll,
     {"register_id": "PR-1", "entry_date": "2026-03-15", "period_start": "2026-03-01",
      "bank_account_id": BANK, "gross_total": "3010.00",
      "lines": [{"employee_id": "E1", "gross": "3000.00", "withheld": "612.50",
                 "employer_taxes": "229.50", "net": "2387.50", "name": "Dana Lee"},
                {"employee_id": "E2", "gross": "10.00", "withheld": "0",
                 "employer_taxes": "0", "net": "10.00"}]}),
    (["payroll", "reverse", "PR-1", "--date", "2026-03-16"], "reverse-payroll",
     c.ReversePayroll, {"register_id": "PR-1", "entry_date": "2026-03-16"}),
    (["sales-tax", "file", "ST", "2026-03", "--date", "2026-04-10", "--gross-sales", "1500.00",
      "--taxable-sales", "1000.00", "--tax-due", "72.50"], "file-sales-tax-return",
     c.FileSalesTaxReturn, {"jurisdiction_id": "ST", "period": "2026-03", "tax_due": "72.50"}),
    (["sales-tax", "remit", "STR-000001", "--bank", BANK, "--date", "2026-04-10", "--amount",
      "72.50"], "remit-sales-tax", c.RemitSalesTax,
     {"return_id": "STR-000001", "bank_account_id": BANK, "amount": "72.50"}),
])
def test_each_client_verb_builds_its_command(args: list[str], route: str,
                                             model: type[c.Command],
                                             expected: dict[str, object]) -> None:
    from erp.api.client import build_parser

    ns = build_parser().parse_args(args)
    method, path, _params, body, *_ = ns.handler(ns)
    assert (method, path) == ("POST", f"/v1/commands/{route}")
    assert body is not None and {k: body[k] for k in expected} == expected
    model.model_validate(body)


@pytest.mark.parametrize(("args", "path"), [(["payroll", "list"], "/v1/payroll-registers"),
                                            (["sales-tax", "returns"], "/v1/tax-returns"),
                                            (["sales-tax", "payments"], "/v1/tax-payments")])
def test_the_lists_read_their_routes(args: list[str], path: str) -> None:
    from erp.api.client import build_parser

    ns = build_parser().parse_args(args)
    assert ns.handler(ns)[:2] == ("GET", path)


def test_a_bad_register_row_is_refused_by_the_client() -> None:
    from erp.api.client import payroll_row

    with pytest.raises(Exception, match="EMPLOYEE:GROSS:WITHHELD"):
        payroll_row("E1:3000.00")


# --- over the API's real socket --------------------------------------------------------


def test_the_commands_and_listings_over_the_api(tmp_path: Path) -> None:
    import json
    import os
    import shutil

    from erp.api.server import ApiServer, TokenRegistry, create_app
    from tests.erp.api.test_api import request, short_dir

    work = short_dir()
    ledger = Ledger.open(os.path.join(work, "books.db"), create=True)
    try:
        set_up_company(ledger)
        ledger.execute_batch([Submission(x, **SYS) for x in (
            *[x for x in chart_commands("services-with-payroll")
              if x.code in ("2300", "2310", "6400", "6410")],
            c.RegisterTaxJurisdiction(jurisdiction_id="ST", name="S", rate_bp=725))])
        run(ledger, invoice("C1", "1000.00", 725, date(2026, 3, 10)), day=date(2026, 3, 10))
        tokens = TokenRegistry()
        server = ApiServer(create_app(ledger, tokens), uds=Path(work) / "api.sock").start()
        try:
            clerk = tokens.issue("agent:turn-1", "clerk", APR10, 3600.0)

            def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
                status, _, data = request(server.url, method, path, token=clerk, body=body)
                return status, json.loads(data)

            status, _ = call("POST", "/v1/commands/post-payroll", {
                "register_id": "PR-1", "entry_date": "2026-03-15", "period_start": "2026-03-01",
                "period_end": "2026-03-15", "bank_account_id": BANK,
                "lines": [{"employee_id": "E1", "gross": "3000.00", "withheld": "612.50",
                           "employer_taxes": "229.50", "net": "2387.50"}]})
            assert status == 200
            status, err = call("POST", "/v1/commands/file-sales-tax-return", {
                "jurisdiction_id": "ST", "period": "2026-03", "entry_date": "2026-04-10",
                "gross_sales": "1000.00", "taxable_sales": "1000.00", "tax_due": "72.00"})
            assert status == 422 and err["error"] == "return_does_not_tie", err
            assert "tax_due 72.00 (the books: 72.50)" in err["message"]
            status, _ = call("POST", "/v1/commands/file-sales-tax-return", {
                "jurisdiction_id": "ST", "period": "2026-03", "entry_date": "2026-04-10",
                "gross_sales": "1000.00", "taxable_sales": "1000.00", "tax_due": "72.50"})
            assert status == 200
            status, _ = call("POST", "/v1/commands/remit-sales-tax", {
                "return_id": "STR-000001", "bank_account_id": BANK, "entry_date": "2026-04-10",
                "amount": "72.50"})
            assert status == 200
            _, regs = call("GET", "/v1/payroll-registers")
            _, rets = call("GET", "/v1/tax-returns")
            _, pays = call("GET", "/v1/tax-payments")
            assert [(x["id"], x["total"], x["reference"]) for x in regs["items"]] == [
                ("PR-1", "3000.00", "2026-03-01..2026-03-15")]
            assert [(x["id"], x["open_amount"], x["status"]) for x in rets["items"]] == [
                ("STR-000001", "0.00", "paid")]
            assert [(x["total"], x["reference"]) for x in pays["items"]] == [
                ("72.50", "STR-000001")]
        finally:
            server.stop()
    finally:
        ledger.close()
        shutil.rmtree(work, ignore_errors=True)
