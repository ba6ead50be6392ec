"""Invariants of the bank: statement lines are imported once, a line matches documents of
its own bank account whose amounts add up to it, and a document explains one line only.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from erp import commands as c
from erp.ledger import Ledger, Submission
from tests.erp.helpers import BANK, CLERK, CONTROLLER, SYS, assert_rejected, set_up_company

MAR = date(2026, 3, 5)
SAVINGS = "B-SAV"


def run(ledger: Ledger, *cmds: c.Command, who: dict[str, Any] = CLERK) -> list[Any]:
    """Execute commands in one batch; the decoded events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who) for x in cmds])]


def sl(line_id: str, amount: str) -> c.StatementLineIn:
    return c.StatementLineIn(line_id=line_id, entry_date=MAR, amount=amount)


def ref(kind: str, doc_id: str) -> c.MatchRef:
    return c.MatchRef(kind=kind, doc_id=doc_id)  # type: ignore[arg-type]


def match(line_id: str, *targets: c.MatchRef) -> c.MatchStatementLine:
    return c.MatchStatementLine(line_id=line_id, targets=targets)


@pytest.fixture
def bank(ledger: Ledger) -> Ledger:
    """Receipts R1 (500.00) and R2 (250.00) into the operating account, R3 (75.00) into
    savings; a payment P1 of 300.00; statement lines L1 +500.00, L2 +750.00, L3 -300.00,
    L4 -25.00 on the operating account and S1 +75.00 on savings."""
    set_up_company(ledger)
    run(ledger, c.OpenBankAccount(bank_account_id=SAVINGS, name="Savings", number="0002",
                                  gl_account="1010", entry_date=MAR), who=SYS)
    run(ledger,
        c.RecordReceipt(receipt_id="R1", customer_id="C1", bank_account_id=BANK, entry_date=MAR,
                        amount="500.00"),
        c.RecordReceipt(receipt_id="R2", customer_id="C2", bank_account_id=BANK, entry_date=MAR,
                        amount="250.00"),
        c.RecordReceipt(receipt_id="R3", customer_id="C2", bank_account_id=SAVINGS,
                        entry_date=MAR, amount="75.00"),
        c.EnterBill(bill_id="B1", vendor_id="V1", vendor_invoice_number="V-1", entry_date=MAR,
                    lines=(c.BillLineIn(description="rent", amount="300.00"),)),
        c.ApproveBill(bill_id="B1"),
        c.PayVendor(payment_id="P1", vendor_id="V1", bank_account_id=BANK,
                    applications=(c.BillPayment(bill_id="B1", amount="300.00"),)),
        c.ImportStatementLines(bank_account_id=BANK, lines=(
            sl("L1", "500.00"), sl("L2", "750.00"), sl("L3", "-300.00"), sl("L4", "-25.00"))),
        c.ImportStatementLines(bank_account_id=SAVINGS, lines=(sl("S1", "75.00"),)))
    return ledger


# --- importing statement lines ---------------------------------------------------


def test_import_into_an_unknown_bank_account(bank: Ledger) -> None:
    assert_rejected(bank, c.ImportStatementLines(bank_account_id="B-X", lines=(sl("X1", "1"),)),
                    "unknown_bank_account", match="no bank account 'B-X' in the books",
                    field="bank_account_id")


def test_import_a_zero_line(bank: Ledger) -> None:
    cmd = c.ImportStatementLines(bank_account_id=BANK, lines=(sl("X1", "1.00"), sl("X2", "0")))
    assert_rejected(bank, cmd, "non_positive_amount", match="lines[1].amount is zero",
                    field="lines[1].amount")


def test_statement_line_id_is_unique(bank: Ledger) -> None:
    assert_rejected(bank, c.ImportStatementLines(bank_account_id=BANK, lines=(sl("L1", "1"),)),
                    "duplicate_id", match="statement line 'L1' already exists",
                    field="lines[0].line_id")
    assert_rejected(bank, c.ImportStatementLines(bank_account_id=BANK,
                                                 lines=(sl("X1", "1"), sl("X1", "2"))),
                    "duplicate_id", match="statement line 'X1' already exists",
                    field="lines[1].line_id")


# --- matching --------------------------------------------------------------------


def test_match_amounts_must_agree(bank: Ledger) -> None:
    assert_rejected(bank, match("L2", ref("receipt", "R1")), "match_amount_mismatch",
                    match="statement line L2 is 750.00, the documents total 500.00",
                    field="targets")
    # One deposit that is two receipts (a multi-invoice ACH) matches both.
    [e] = run(bank, match("L2", ref("receipt", "R1"), ref("receipt", "R2")))
    assert [(t.kind, t.doc_id, t.amount) for t in e.targets] == [
        ("receipt", "R1", 50_000), ("receipt", "R2", 25_000)]


def test_payment_matches_a_withdrawal_not_a_deposit(bank: Ledger) -> None:
    assert_rejected(bank, match("L1", ref("payment", "P1")), "match_amount_mismatch",
                    match="statement line L1 is 500.00, the documents total -300.00")
    [e] = run(bank, match("L3", ref("payment", "P1")))
    assert e.targets[0].amount == -30_000


def test_match_an_unknown_line(bank: Ledger) -> None:
    assert_rejected(bank, match("L9", ref("receipt", "R1")), "unknown_statement_line",
                    match="no statement line 'L9'", field="line_id")


@pytest.mark.parametrize("kind", ["payment", "refund", "fee", "interest"])
def test_match_an_unknown_bank_document(bank: Ledger, kind: str) -> None:
    assert_rejected(bank, match("L1", ref(kind, "X9")), f"unknown_{kind}",
                    match=f"no {kind} 'X9'", field="targets[0]")


def test_match_an_unknown_receipt(bank: Ledger) -> None:
    assert_rejected(bank, match("L1", ref("receipt", "R1"), ref("receipt", "R9")),
                    "unknown_receipt", match="no receipt 'R9' in the books", field="targets[1]")


def test_match_a_document_of_another_bank_account(bank: Ledger) -> None:
    assert_rejected(bank, match("S1", ref("receipt", "R1")), "bank_account_mismatch",
                    match=f"receipt R1 moved bank account {BANK}, the line is on {SAVINGS}",
                    field="targets[0]")
    assert run(bank, match("S1", ref("receipt", "R3")))


def test_match_a_document_twice_in_one_line(bank: Ledger) -> None:
    assert_rejected(bank, match("L1", ref("receipt", "R1"), ref("receipt", "R1")),
                    "duplicate_id", match="targets lists receipt R1 twice", field="targets")


def test_line_is_matched_once(bank: Ledger) -> None:
    run(bank, match("L1", ref("receipt", "R1")))
    assert_rejected(bank, match("L1", ref("receipt", "R1")), "already_matched",
                    match="statement line L1 is already matched to R1", field="line_id")


def test_document_explains_one_line_only(bank: Ledger) -> None:
    run(bank, c.ImportStatementLines(bank_account_id=BANK, lines=(sl("L5", "500.00"),)))
    run(bank, match("L1", ref("receipt", "R1")))
    assert_rejected(bank, match("L5", ref("receipt", "R1")), "target_already_matched",
                    match="receipt R1 is already matched to statement line L1",
                    field="targets[0]")
    run(bank, match("L3", ref("payment", "P1")))
    assert_rejected(bank, match("L5", ref("payment", "P1")), "target_already_matched",
                    match="payment P1 is already matched to statement line L3")


def test_unmatch(bank: Ledger) -> None:
    assert_rejected(bank, c.UnmatchStatementLine(line_id="L9"), "unknown_statement_line",
                    match="no statement line 'L9'", field="line_id")
    assert_rejected(bank, c.UnmatchStatementLine(line_id="L1"), "not_matched",
                    match="statement line L1 is not matched", field="line_id")
    run(bank, match("L1", ref("receipt", "R1")))
    [e] = run(bank, c.UnmatchStatementLine(line_id="L1"))
    assert (e.type, [t.doc_id for t in e.targets]) == ("statement_line_unmatched", ["R1"])
    # Both sides are free again: the receipt can explain another line.
    run(bank, c.ImportStatementLines(bank_account_id=BANK, lines=(sl("L5", "500.00"),)))
    assert run(bank, match("L5", ref("receipt", "R1")))


# --- bank fees and interest ------------------------------------------------------


def fee(amount: str, line_id: str | None = None, **kw: Any) -> c.RecordBankFee:
    return c.RecordBankFee(bank_account_id=kw.pop("bank", BANK), entry_date=MAR, amount=amount,
                           line_id=line_id, **kw)


def interest(amount: str, line_id: str | None = None, **kw: Any) -> c.RecordInterest:
    return c.RecordInterest(bank_account_id=kw.pop("bank", BANK), entry_date=MAR,
                            amount=amount, line_id=line_id, **kw)


def test_fee_matches_its_statement_line(bank: Ledger) -> None:
    assert_rejected(bank, fee("20.00", "L4"), "match_amount_mismatch",
                    match="statement line L4 is -25.00, the fee is -20.00", field="amount")
    fee_event, matched = run(bank, fee("25.00", "L4", fee_id="F1"))
    assert (fee_event.type, fee_event.amount, fee_event.account) == (
        "bank_fee_recorded", 2500, "6800")
    assert (matched.line_id, matched.targets[0].doc_id) == ("L4", "F1")
    assert_rejected(bank, fee("25.00", "L4"), "already_matched",
                    match="statement line L4 is already matched", field="line_id")
    assert_rejected(bank, fee("25.00", fee_id="F1"), "duplicate_id",
                    match="fee 'F1' already exists", field="fee_id")


def test_interest_matches_its_statement_line(bank: Ledger) -> None:
    run(bank, c.ImportStatementLines(bank_account_id=BANK, lines=(sl("L6", "4.10"),)))
    assert_rejected(bank, interest("4.01", "L6"), "match_amount_mismatch",
                    match="statement line L6 is 4.10, the interest is 4.01")
    _, matched = run(bank, interest("4.10", "L6", interest_id="INT1"))
    assert matched.targets[0].amount == 410
    assert_rejected(bank, interest("1.00", interest_id="INT1"), "duplicate_id",
                    match="interest 'INT1' already exists", field="interest_id")


def test_fee_matched_to_a_line_of_another_bank_account(bank: Ledger) -> None:
    assert_rejected(bank, fee("75.00", "S1"), "bank_account_mismatch",
                    match=f"statement line S1 is on bank account {SAVINGS}", field="line_id")


@pytest.mark.parametrize("make", [fee, interest], ids=["fee", "interest"])
def test_fee_or_interest_rules(bank: Ledger, make: Any) -> None:
    assert_rejected(bank, make("1.00", "L9"), "unknown_statement_line",
                    match="no statement line 'L9'", field="line_id")
    assert_rejected(bank, make("1.00", bank="B-X"), "unknown_bank_account",
                    match="no bank account 'B-X' in the books")
    assert_rejected(bank, make("0"), "non_positive_amount",
                    match="amount must be greater than zero (got 0.00)", field="amount")
    assert_rejected(bank, make("1.00", account="6999"), "unknown_account",
                    match="no account '6999' in the books", field="account")
    for control in ("1000", "1200", "2000", "2150"):
        assert_rejected(bank, make("1.00", account=control), "control_account_restricted",
                        match=f"account {control} is a control account", field="account",
                        **CONTROLLER)
