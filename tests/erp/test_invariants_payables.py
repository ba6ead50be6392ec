"""Invariants of payables: a vendor's invoice number is entered once, only approved bills
of the paid vendor are paid and never beyond what is open, and vendor credits apply only
to the same vendor's bills.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from erp import commands as c
from erp.events import BankDetails, Policies
from erp.ledger import Ledger, Submission
from tests.erp.helpers import BANK, CLERK, CONTROLLER, DAY, assert_rejected, set_up_company

MAR = date(2026, 3, 5)
V1_BANK = BankDetails(account_name="Initech", routing="111000025", account_number="123456789")
V2_BANK = BankDetails(account_name="Initrode", routing="222000025", account_number="55555")


def run(ledger: Ledger, *cmds: c.Command, who: dict[str, Any] = CONTROLLER) -> list[Any]:
    """Execute commands in one batch; the decoded events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who) for x in cmds])]


def bill(bid: str | None, amount: str, vendor: str = "V1", number: str | None = None,
         **kw: Any) -> c.EnterBill:
    return c.EnterBill(bill_id=bid, vendor_id=vendor, vendor_invoice_number=number or str(bid),
                       entry_date=MAR, lines=(c.BillLineIn(description="services",
                                                           amount=amount),), **kw)


def pay(vendor: str, *apps: tuple[str, str], **kw: Any) -> c.PayVendor:
    return c.PayVendor(vendor_id=vendor, bank_account_id=kw.pop("bank", BANK),
                       applications=tuple(c.BillPayment(bill_id=b, amount=a) for b, a in apps),
                       **kw)


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The standard test company plus a second vendor V2 with bank details."""
    set_up_company(ledger)
    run(ledger, c.RegisterVendor(vendor_id="V2", name="Initrode", terms_days=10, bank=V2_BANK))
    return ledger


@pytest.fixture
def billed(company: Ledger) -> Ledger:
    """B1 (V1, 300.00) and B2 (V2, 80.00), both approved; B3 (V1, 50.00) not approved."""
    run(company, bill("B1", "300.00"), bill("B2", "80.00", vendor="V2"), bill("B3", "50.00"),
        c.ApproveBill(bill_id="B1"), c.ApproveBill(bill_id="B2"))
    return company


# --- entering bills --------------------------------------------------------------


def test_bill_from_an_unknown_vendor(company: Ledger) -> None:
    assert_rejected(company, bill("B1", "1.00", vendor="V9"), "unknown_vendor",
                    match="no vendor 'V9' in the books", field="vendor_id")


def test_vendor_invoice_number_is_entered_once_per_vendor(company: Ledger) -> None:
    run(company, bill("B1", "100.00", number="INV-7"))
    for number in ("INV-7", " INV-7 ", "inv-7"):
        assert_rejected(company, bill(None, "100.00", number=number),
                        "duplicate_vendor_invoice",
                        match=f"vendor V1 invoice {number.strip()!r} is already entered",
                        field="vendor_invoice_number")
    # Another vendor may use the same number.
    [e] = run(company, bill("B2", "100.00", vendor="V2", number="INV-7"))
    assert (e.vendor_id, e.vendor_invoice_number) == ("V2", "INV-7")


def test_bill_id_is_unique(billed: Ledger) -> None:
    assert_rejected(billed, bill("B1", "1.00", number="NEW-1"), "duplicate_id",
                    match="bill 'B1' already exists", field="bill_id")


def test_bill_line_into_an_unknown_account(company: Ledger) -> None:
    cmd = c.EnterBill(vendor_id="V1", vendor_invoice_number="X", entry_date=MAR,
                      lines=(c.BillLineIn(description="x", amount="1.00", account="6999"),))
    assert_rejected(company, cmd, "unknown_account", match="no account '6999' in the books",
                    field="lines[0].account")


@pytest.mark.parametrize("account", ["2000", "1200", "1000"])
def test_bill_line_into_a_control_account(company: Ledger, account: str) -> None:
    cmd = c.EnterBill(vendor_id="V1", vendor_invoice_number="X", entry_date=MAR,
                      lines=(c.BillLineIn(description="x", amount="1.00", account=account),))
    assert_rejected(company, cmd, "control_account_restricted",
                    match=f"lines[0].account {account} is a control account",
                    field="lines[0].account", **CONTROLLER)


def test_bill_amounts_must_be_positive(company: Ledger) -> None:
    assert_rejected(company, bill("B1", "0"), "non_positive_amount",
                    match="lines[0].amount must be greater than zero (got 0.00)",
                    field="lines[0].amount")
    assert_rejected(company, bill("B1", "10.00", tax="-1.00"), "non_positive_amount",
                    match="tax cannot be negative (got -1.00)", field="tax")


def test_bill_due_before_it_is_entered(company: Ledger) -> None:
    assert_rejected(company, bill("B1", "10.00", due_on=date(2026, 3, 1)), "invalid_due_date",
                    match="due_on 2026-03-01 is before the document date 2026-03-05",
                    field="due_on")


# --- approving bills -------------------------------------------------------------


def test_clerk_approval_follows_the_policy(ledger: Ledger) -> None:
    set_up_company(ledger, Policies(clerk_may_approve_bills=False))
    run(ledger, bill("B1", "10.00"))
    assert_rejected(ledger, c.ApproveBill(bill_id="B1"), "forbidden_for_role",
                    match="agent:turn-1 (role clerk) may not approve bills under the company's "
                          "policy; needs role controller")
    [e] = run(ledger, c.ApproveBill(bill_id="B1"), who=CONTROLLER)
    assert (e.type, e.vendor_id) == ("bill_approved", "V1")


def test_approve_unknown_or_approved_bill(billed: Ledger) -> None:
    assert_rejected(billed, c.ApproveBill(bill_id="B9"), "unknown_bill",
                    match="no bill 'B9' in the books", field="bill_id")
    assert_rejected(billed, c.ApproveBill(bill_id="B1"), "already_approved",
                    match="bill B1 is already approved", field="bill_id")


# --- paying a vendor -------------------------------------------------------------


def test_pay_an_unapproved_bill(billed: Ledger) -> None:
    assert_rejected(billed, pay("V1", ("B1", "10.00"), ("B3", "50.00")), "bill_not_approved",
                    match="bill B3 is not approved; approve it before paying",
                    field="applications[1].bill_id")
    run(billed, c.ApproveBill(bill_id="B3"))
    [paid] = run(billed, pay("V1", ("B1", "10.00"), ("B3", "50.00")))
    assert (paid.amount, paid.paid_to) == (6000, V1_BANK)
    assert [(a.bill_id, a.amount) for a in paid.applications] == [("B1", 1000), ("B3", 5000)]


def test_pay_another_vendors_bill(billed: Ledger) -> None:
    assert_rejected(billed, pay("V1", ("B2", "80.00")), "vendor_mismatch",
                    match="bill B2 belongs to vendor V2, not V1",
                    field="applications[0].bill_id")


def test_pay_more_than_the_bill_has_open(billed: Ledger) -> None:
    assert_rejected(billed, pay("V1", ("B1", "300.01")), "exceeds_open_balance",
                    match="bill B1 has 300.00 open, cannot pay 300.01",
                    field="applications[0].amount")
    # The same bill twice in one payment counts once in total.
    assert_rejected(billed, pay("V1", ("B1", "200.00"), ("B1", "100.01")),
                    "exceeds_open_balance", match="bill B1 has 300.00 open, cannot pay 300.01",
                    field="applications[1].amount")
    run(billed, pay("V1", ("B1", "200.00")))
    assert_rejected(billed, pay("V1", ("B1", "100.01")), "exceeds_open_balance",
                    match="bill B1 has 100.00 open, cannot pay 100.01")


def test_pay_lists_a_bill_once(billed: Ledger) -> None:
    assert_rejected(billed, pay("V1", ("B1", "100.00"), ("B1", "50.00")), "duplicate_id",
                    match="applications list bill B1 twice; pay 150.00 in one application",
                    field="applications[1].bill_id")
    [paid] = run(billed, pay("V1", ("B1", "150.00")))
    assert [(a.bill_id, a.amount) for a in paid.applications] == [("B1", 15_000)]


def test_pay_unknown_vendor_bank_account_or_bill(billed: Ledger) -> None:
    assert_rejected(billed, pay("V9", ("B1", "1.00")), "unknown_vendor",
                    match="no vendor 'V9' in the books", field="vendor_id")
    assert_rejected(billed, pay("V1", ("B1", "1.00"), bank="B-X"), "unknown_bank_account",
                    match="no bank account 'B-X' in the books", field="bank_account_id")
    assert_rejected(billed, pay("V1", ("B9", "1.00")), "unknown_bill",
                    match="no bill 'B9' in the books", field="applications[0].bill_id")


def test_pay_a_non_positive_amount(billed: Ledger) -> None:
    assert_rejected(billed, pay("V1", ("B1", "0")), "non_positive_amount",
                    match="applications[0].amount must be greater than zero (got 0.00)",
                    field="applications[0].amount")


def test_payment_id_is_unique(billed: Ledger) -> None:
    run(billed, pay("V1", ("B1", "1.00"), payment_id="P1"))
    assert_rejected(billed, pay("V1", ("B1", "1.00"), payment_id="P1"), "duplicate_id",
                    match="payment 'P1' already exists", field="payment_id")


# --- payment runs ----------------------------------------------------------------


def test_payment_run_pays_each_vendor_once(billed: Ledger) -> None:
    run(billed, bill("B4", "20.00", vendor="V2"), c.ApproveBill(bill_id="B4"))
    run_, *payments = run(billed, c.RunPayments(run_id="RUN1", bank_account_id=BANK,
                                                due_by=date(2026, 4, 30)))
    assert (run_.type, run_.total) == ("payment_run_created", 40_000)
    assert [(p.vendor_id, p.amount, p.paid_to, p.run_id) for p in payments] == [
        ("V1", 30_000, V1_BANK, "RUN1"), ("V2", 10_000, V2_BANK, "RUN1")]
    assert "B3" not in {a.bill_id for p in payments for a in p.applications}  # not approved


def test_payment_run_with_nothing_due(billed: Ledger) -> None:
    # B2 (V2, 10 days' terms) is due 2026-03-15, B1 on 2026-04-04: nothing by the business date.
    assert_rejected(billed, c.RunPayments(bank_account_id=BANK), "nothing_to_pay",
                    match="no approved open bill is due by 2026-03-02", field="bill_ids")
    assert_rejected(billed, c.RunPayments(bank_account_id=BANK, bill_ids=()), "nothing_to_pay",
                    match="no approved open bill is listed in bill_ids")
    _, paid = run(billed, c.RunPayments(bank_account_id=BANK, due_by=date(2026, 3, 15)))
    assert paid.vendor_id == "V2"


def test_payment_run_listing_a_bill_twice_unknown_or_unapproved(billed: Ledger) -> None:
    assert_rejected(billed, c.RunPayments(bank_account_id=BANK, bill_ids=("B1", "B2", "B1")),
                    "duplicate_id", match="bill_ids lists B1 twice", field="bill_ids")
    assert_rejected(billed, c.RunPayments(bank_account_id=BANK, bill_ids=("B1", "B9")),
                    "unknown_bill", match="no bill 'B9' in the books", field="bill_ids")
    assert_rejected(billed, c.RunPayments(bank_account_id=BANK, bill_ids=("B3",)),
                    "bill_not_approved", match="bill B3 is not approved")
    assert_rejected(billed, c.RunPayments(bank_account_id="B-X", bill_ids=("B1",)),
                    "unknown_bank_account", match="no bank account 'B-X'")


def test_payment_run_listing_a_paid_bill(billed: Ledger) -> None:
    run(billed, c.RunPayments(run_id="RUN1", bank_account_id=BANK, bill_ids=("B1",)))
    assert_rejected(billed, c.RunPayments(bank_account_id=BANK, bill_ids=("B2", "B1")),
                    "exceeds_open_balance", match="bill B1 is already paid", field="bill_ids")
    assert_rejected(billed, c.RunPayments(run_id="RUN1", bank_account_id=BANK,
                                          bill_ids=("B2",)),
                    "duplicate_id", match="payment run 'RUN1' already exists", field="run_id")


# --- vendor credits --------------------------------------------------------------


def credit(cid: str | None, amount: str, vendor: str = "V1", number: str = "CN-1",
           **kw: Any) -> c.RecordVendorCredit:
    return c.RecordVendorCredit(credit_id=cid, vendor_id=vendor, vendor_credit_number=number,
                                entry_date=MAR, amount=amount, **kw)


def test_vendor_credit_number_is_recorded_once_per_vendor(company: Ledger) -> None:
    run(company, credit("VC1", "10.00"))
    assert_rejected(company, credit(None, "10.00"), "duplicate_vendor_invoice",
                    match="vendor V1 credit note 'CN-1' is already recorded",
                    field="vendor_credit_number")
    assert run(company, credit(None, "10.00", vendor="V2"))
    assert_rejected(company, credit("VC1", "10.00", number="CN-2"), "duplicate_id",
                    match="vendor credit 'VC1' already exists", field="credit_id")


def test_vendor_credit_unknown_vendor_amount_or_account(company: Ledger) -> None:
    assert_rejected(company, credit(None, "1.00", vendor="V9"), "unknown_vendor",
                    match="no vendor 'V9' in the books")
    assert_rejected(company, credit(None, "0"), "non_positive_amount",
                    match="amount must be greater than zero (got 0.00)")
    assert_rejected(company, credit(None, "1.00", account="6999"), "unknown_account",
                    match="no account '6999' in the books", field="account")
    assert_rejected(company, credit(None, "1.00", account="2000"), "control_account_restricted",
                    match="account 2000 is a control account", field="account", **CONTROLLER)


@pytest.fixture
def credited(billed: Ledger) -> Ledger:
    """V1 has credit VC1 of 50.00 and a small bill B5 of 30.00 (credits need no approval)."""
    run(billed, credit("VC1", "50.00"), bill("B5", "30.00"))
    return billed


def test_apply_vendor_credit_to_another_vendors_bill(credited: Ledger) -> None:
    assert_rejected(credited, c.ApplyVendorCredit(credit_id="VC1", bill_id="B2", amount="1.00"),
                    "vendor_mismatch", match="credit VC1 is from vendor V1, bill B2 from V2",
                    field="bill_id")


def test_apply_more_credit_than_is_left(credited: Ledger) -> None:
    assert_rejected(credited, c.ApplyVendorCredit(credit_id="VC1", bill_id="B1",
                                                  amount="50.01"),
                    "over_application", match="credit VC1 has 50.00 left, cannot apply 50.01",
                    field="amount")


def test_apply_more_credit_than_the_bill_has_open(credited: Ledger) -> None:
    assert_rejected(credited, c.ApplyVendorCredit(credit_id="VC1", bill_id="B5",
                                                  amount="30.01"),
                    "exceeds_open_balance", match="bill B5 has 30.00 open, cannot apply 30.01",
                    field="amount")
    [e] = run(credited, c.ApplyVendorCredit(credit_id="VC1", bill_id="B5", amount="30.00"))
    assert (e.type, e.vendor_id, e.amount) == ("vendor_credit_applied", "V1", 3000)
    assert_rejected(credited, c.ApplyVendorCredit(credit_id="VC1", bill_id="B1",
                                                  amount="20.01"),
                    "over_application", match="credit VC1 has 20.00 left")


def test_apply_unknown_credit_or_bill_or_non_positive(credited: Ledger) -> None:
    assert_rejected(credited, c.ApplyVendorCredit(credit_id="VC9", bill_id="B1", amount="1.00"),
                    "unknown_vendor_credit", match="no vendor credit 'VC9'", field="credit_id")
    assert_rejected(credited, c.ApplyVendorCredit(credit_id="VC1", bill_id="B9", amount="1.00"),
                    "unknown_bill", match="no bill 'B9' in the books")
    assert_rejected(credited, c.ApplyVendorCredit(credit_id="VC1", bill_id="B1", amount="0"),
                    "non_positive_amount", match="(got 0.00)")


def test_credit_applied_bill_is_paid_only_for_the_rest(credited: Ledger) -> None:
    run(credited, c.ApplyVendorCredit(credit_id="VC1", bill_id="B1", amount="50.00"))
    assert_rejected(credited, pay("V1", ("B1", "300.00")), "exceeds_open_balance",
                    match="bill B1 has 250.00 open, cannot pay 300.00", **CLERK)
    [paid] = run(credited, pay("V1", ("B1", "250.00")), who=CLERK)
    assert paid.entry_date == DAY
