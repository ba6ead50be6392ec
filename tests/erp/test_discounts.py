"""Early-payment discounts: terms entered with a bill, taken only as the terms give them.

Invariants: a bill's discount terms are checked when it is entered (both fields, less
than the total, within the bill's dates); ``PayBillWithDiscount`` takes exactly the
terms' discount, on or before the discount date (after it, ``discount_lost``), only on a
bill not yet partly settled, within the cash policy; every refusal writes nothing. A
property over generated bills and payments: the trial balance sums to zero, AP ties to
its subledger, ``rebuild()`` reproduces the live read tables, and books folded afresh
from the log hold the same bills.
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
from erp.charts import chart_commands
from erp.ledger import Ledger, Submission
from tests.erp.helpers import BANK, CLERK, SYS, assert_rejected

MAR = date(2026, 3, 5)
V1_BANK = ev.BankDetails(account_name="Initech", routing="111000025",
                         account_number="123456789")


def set_up(ledger: Ledger, *, floor: int | None = None, opening: str = "10000.00") -> None:
    """A company on the ``services-with-terms`` chart, Feb-Apr 2026 open, a bank, a vendor."""
    cmds: list[c.Command] = [c.SetUpCompany(name="Test Co", policies=ev.Policies(
        minimum_bank_balance=floor))]
    cmds += chart_commands("services-with-terms")
    cmds += [c.OpenPeriod(period=p) for p in ("2026-02", "2026-03", "2026-04")]
    cmds += [c.OpenBankAccount(bank_account_id=BANK, name="Operating", number="0001",
                               gl_account="1000", entry_date=date(2026, 3, 1),
                               opening_balance=opening),
             c.RegisterVendor(vendor_id="V1", name="Initech", terms_days=30, bank=V1_BANK)]
    ledger.execute_batch([Submission(x, **SYS) for x in cmds])


def run(ledger: Ledger, *cmds: c.Command, who: dict[str, Any] = CLERK) -> list[ev.Event]:
    """Execute commands in one batch; the decoded events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who) for x in cmds])]


def bill(bid: str, amount: str, *, discount: str | int = 0, until: date | None = None,
         day: date = MAR) -> c.EnterBill:
    return c.EnterBill(bill_id=bid, vendor_id="V1", vendor_invoice_number=bid, entry_date=day,
                       lines=(c.BillLineIn(description="services", amount=amount),),
                       discount=discount, discount_until=until)


def pay(bid: str, discount: str | int, day: date, **kw: Any) -> c.PayBillWithDiscount:
    return c.PayBillWithDiscount(bill_id=bid, bank_account_id=BANK, entry_date=day,
                                 discount=discount, **kw)


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    set_up(ledger)
    return ledger


@pytest.fixture
def billed(company: Ledger) -> Ledger:
    """B1: 1,000.00, 2/10 net 30 (20.00 off until 15 March), approved; B2: no terms."""
    run(company, bill("B1", "1000.00", discount="20.00", until=date(2026, 3, 15)),
        bill("B2", "500.00"), c.ApproveBill(bill_id="B1"), c.ApproveBill(bill_id="B2"))
    return company


# --- terms on entry ----------------------------------------------------------------


def test_terms_are_an_event_of_the_bill(company: Ledger) -> None:
    events = run(company, bill("B1", "1000.00", discount="20.00", until=date(2026, 3, 15)))
    assert [type(e) for e in events] == [ev.BillEntered, ev.BillTermsSet]
    terms = events[1]
    assert isinstance(terms, ev.BillTermsSet)
    assert (terms.bill_id, terms.discount, terms.discount_until) == ("B1", 2_000,
                                                                     date(2026, 3, 15))
    state = company.books.bills["B1"]
    assert (state.discount, state.discount_until) == (2_000, date(2026, 3, 15))


def test_a_bill_without_terms_writes_no_terms_event(company: Ledger) -> None:
    assert [type(e) for e in run(company, bill("B1", "10.00"))] == [ev.BillEntered]


@pytest.mark.parametrize(("discount", "until", "field", "match"), [
    ("20.00", None, "discount_until", "needs discount_until"),
    ("1000.00", date(2026, 3, 15), "discount", "less than the bill's total 1,000.00"),
    (0, date(2026, 3, 15), "discount", "more than 0.00"),
    ("20.00", date(2026, 3, 4), "discount_until", "must fall from the bill's date 2026-03-05"),
    ("20.00", date(2026, 4, 30), "discount_until", "to its due date 2026-04-04"),
])
def test_bad_terms_are_refused(company: Ledger, discount: str | int, until: date | None,
                               field: str, match: str) -> None:
    assert_rejected(company, bill("B1", "1000.00", discount=discount, until=until),
                    "invalid_terms", field=field, match=match)


# --- taking the discount -------------------------------------------------------------


def test_discount_taken_by_its_date(billed: Ledger) -> None:
    events = run(billed, pay("B1", "20.00", date(2026, 3, 15)))
    assert [type(e) for e in events] == [ev.PurchaseDiscountTaken, ev.VendorPaid]
    taken, paid = events
    assert isinstance(taken, ev.PurchaseDiscountTaken) and isinstance(paid, ev.VendorPaid)
    assert (taken.amount, taken.discount_account, taken.payment_id) == (2_000, "4950",
                                                                         paid.payment_id)
    assert paid.amount == 98_000
    assert paid.applications == (ev.BillApplication(bill_id="B1", amount=98_000),)
    store = billed.store
    assert q.account_balance(store, "4950") == -2_000
    assert q.account_balance(store, "1000") == 1_000_000 - 98_000
    assert q.document(store, "bill", "B1")["status"] == "paid"  # type: ignore[index]
    assert billed.books.bills["B1"].open == 0
    assert not [t for t in q.control_ties(store) if t.difference]


def test_a_discount_after_its_date_is_refused(billed: Ledger) -> None:
    assert_rejected(billed, pay("B1", "20.00", date(2026, 3, 16)), "discount_lost",
                    field="entry_date",
                    match="could be taken until 2026-03-15; a payment dated 2026-03-16 "
                          "cannot claim it (the discount is lost: pay the full 1,000.00)")


def test_a_discount_made_after_its_date_and_dated_back_is_refused(billed: Ledger) -> None:
    # The clerk pays on the 20th and gives the payment the discount's last day: the day the
    # payment is made decides, as a vendor would see it arrive.
    late = {**CLERK, "business_date": date(2026, 3, 20)}
    assert_rejected(billed, pay("B1", "20.00", date(2026, 3, 15)), "discount_lost",
                    field="entry_date",
                    match="could be taken until 2026-03-15; a payment made on 2026-03-20 and "
                          "dated 2026-03-15 cannot claim it", **late)
    # the same payment made by the discount's date is taken, whatever date it is given
    on_time = {**CLERK, "business_date": date(2026, 3, 15)}
    assert [type(e) for e in run(billed, pay("B1", "20.00", MAR), who=on_time)] == [
        ev.PurchaseDiscountTaken, ev.VendorPaid]


def test_the_discount_must_be_the_terms(billed: Ledger) -> None:
    assert_rejected(billed, pay("B1", "20.01", MAR), "discount_mismatch", field="discount",
                    match="terms give a discount of 20.00, not 20.01")
    assert_rejected(billed, pay("B1", "19.99", MAR), "discount_mismatch")


def test_a_bill_without_terms_has_no_discount(billed: Ledger) -> None:
    assert_rejected(billed, pay("B2", "10.00", MAR), "no_discount_terms", field="bill_id")


def test_a_zero_discount_is_refused(billed: Ledger) -> None:
    assert_rejected(billed, pay("B1", 0, MAR), "non_positive_amount", field="discount")


def test_a_partly_paid_bill_takes_no_discount(billed: Ledger) -> None:
    run(billed, c.PayVendor(vendor_id="V1", bank_account_id=BANK, entry_date=MAR,
                            applications=(c.BillPayment(bill_id="B1", amount="100.00"),)))
    assert_rejected(billed, pay("B1", "20.00", MAR), "partly_settled",
                    match="has 900.00 of 1,000.00 open")


def test_a_paid_bill_takes_no_second_discount(billed: Ledger) -> None:
    run(billed, pay("B1", "20.00", MAR))
    assert_rejected(billed, pay("B1", "20.00", MAR), "partly_settled")


def test_an_unapproved_bill_is_not_paid(company: Ledger) -> None:
    run(company, bill("B1", "1000.00", discount="20.00", until=date(2026, 3, 15)))
    assert_rejected(company, pay("B1", "20.00", MAR), "bill_not_approved")


def test_the_discount_account_may_not_be_a_control_account(billed: Ledger) -> None:
    assert_rejected(billed, pay("B1", "20.00", MAR, account="2000"),
                    "control_account_restricted", field="account")


def test_an_unknown_bill_is_refused(billed: Ledger) -> None:
    assert_rejected(billed, pay("NOPE", "20.00", MAR), "unknown_bill")


def test_the_cash_floor_holds(ledger: Ledger) -> None:
    set_up(ledger, floor=950_000)
    run(ledger, bill("B1", "1000.00", discount="20.00", until=date(2026, 3, 15)),
        c.ApproveBill(bill_id="B1"))
    assert_rejected(ledger, pay("B1", "20.00", MAR), "cash_policy",
                    match="below the cash policy's minimum balance of 9,500.00")


# --- property: the books stay consistent -------------------------------------------------

bills_st = st.lists(st.tuples(st.integers(2, 500_000), st.integers(1, 99),
                              st.integers(0, 25), st.booleans(), st.integers(0, 30)),
                    min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bills_st)
def test_discounts_keep_the_books_consistent(plan: list[tuple[int, int, int, bool, int]]
                                             ) -> None:
    """Bills with terms, paid with their discount (some too late, refused) or in full."""
    with tempfile.TemporaryDirectory() as tmp:
        target = f"sqlite:///{Path(tmp) / 'books.db'}"
        with Ledger.open(target, create=True) as ledger:
            set_up(ledger, floor=0, opening="100000000.00")
            expected_discounts = 0
            for n, (amount, pct, window, with_discount, pay_after) in enumerate(plan):
                bid = f"B{n}"
                discount = max(1, amount * pct // 100) if amount * pct // 100 < amount else 1
                until = MAR + timedelta(days=window)
                run(ledger, bill(bid, amount, discount=discount, until=until),
                    c.ApproveBill(bill_id=bid))
                day = MAR + timedelta(days=pay_after)
                if with_discount:
                    ok = day <= until
                    try:
                        run(ledger, pay(bid, discount, day))
                    except Exception as e:
                        assert not ok and getattr(e, "code", "") == "discount_lost", e
                    else:
                        assert ok
                        expected_discounts += discount
                        continue
                run(ledger, c.PayVendor(vendor_id="V1", bank_account_id=BANK, entry_date=day,
                                        applications=(c.BillPayment(bill_id=bid,
                                                                    amount=amount),)))
            store = ledger.store
            rows = q.trial_balance(store)
            assert sum(r.debit for r in rows) == sum(r.credit for r in rows)
            assert q.account_balance(store, "4950") == -expected_discounts
            assert not [t for t in q.control_ties(store) if t.difference]
            assert all(b.open == 0 for b in ledger.books.bills.values())
            live = q.table_snapshot(store)
            with Ledger.open(target) as fresh:
                assert {k: (b.open, b.discount, b.discount_until)
                        for k, b in fresh.books.bills.items()} == {
                    k: (b.open, b.discount, b.discount_until)
                    for k, b in ledger.books.bills.items()}
                assert fresh.head_hash == ledger.head_hash
            ledger.rebuild()
            assert q.table_snapshot(store) == live
            assert ledger.verify().ok
