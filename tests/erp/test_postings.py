"""Posting rules: every event of every type posts balanced lines; a few exact postings.

The property runs over a hypothesis strategy per event class. A test enumerates
``EVENT_CLASSES`` and fails when a class has no strategy or is not classified as
moving money or not, so a new event type cannot skip the property.
"""

from __future__ import annotations

import itertools
import typing
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from erp import events as ev
from erp.postings import NO_LINES, POSTING_TYPES, Posting, post
from tests.erp import test_payroll_tax as payroll_tax
from tests.erp import test_postings_accruals as accruals
from tests.erp import test_postings_collections as collections
from tests.erp import test_postings_fixed_assets as fixed_assets
from tests.erp import test_postings_purchasing as purchasing
from tests.erp import test_postings_year_end as year_end
from tests.erp import test_transfers as transfers
from tests.erp.test_postings_discounts import EXACT as DISCOUNT_EXACT

# --- field strategies ------------------------------------------------------------

ids = st.from_regex(r"[A-Z]{1,4}-[0-9]{1,6}", fullmatch=True)
codes = st.sampled_from(["1000", "1010", "1200", "1300", "2000", "2150", "2200", "3900",
                         "4000", "4050", "4900", "6000", "6800", "6810", "6900"])
cents = st.integers(min_value=1, max_value=10**12)
days = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))
text = st.text(max_size=20)
roles = st.sampled_from(["clerk", "controller", "system"])
bank_details = st.builds(ev.BankDetails, account_name=text,
                         routing=st.from_regex(r"[0-9]{9}", fullmatch=True),
                         account_number=st.from_regex(r"[0-9]{4,17}", fullmatch=True))
policies = st.builds(ev.Policies, clerk_may_post_to_control_accounts=st.booleans(),
                     clerk_may_approve_bills=st.booleans(),
                     clerk_write_off_limit=st.integers(0, 10**6),
                     clerk_fee_allowance_bp=st.integers(0, 10_000),
                     clerk_fee_allowance_fixed=st.integers(0, 10**4),
                     enforce_credit_limits=st.booleans(),
                     minimum_bank_balance=st.none() | st.integers(-10**6, 10**6))
match_targets = st.builds(ev.MatchTarget, kind=st.sampled_from(typing.get_args(ev.MatchKind)),
                          doc_id=ids, amount=st.integers(-10**9, 10**9).filter(bool))


def _split(total: int, cuts: set[int]) -> list[int]:
    """``total`` cut at ``cuts`` into positive amounts."""
    return [b - a for a, b in itertools.pairwise([0, *sorted(cuts), total])]


@st.composite
def balanced_lines(draw: st.DrawFn) -> tuple[ev.JournalLine, ...]:
    """Journal lines that balance by construction: debits, and their sum split into credits."""
    debits = draw(st.lists(cents, min_size=1, max_size=4))
    total = sum(debits)
    n = min(draw(st.integers(1, 4)), total)
    cuts = draw(st.sets(st.integers(1, total - 1), min_size=n - 1, max_size=n - 1)) if n > 1 \
        else set()
    credits = _split(total, cuts)
    amounts = draw(st.permutations([*debits, *(-x for x in credits)]))
    return tuple(draw(st.builds(ev.JournalLine, account=codes, amount=st.just(a),
                                party=st.none() | ids, memo=text)) for a in amounts)


@st.composite
def invoices(draw: st.DrawFn) -> ev.InvoiceIssued:
    """An invoice whose total is its lines plus tax."""
    lines = draw(st.lists(st.builds(
        lambda d, q, p, a: ev.InvoiceLine(description=d, quantity=q, unit_price=p,
                                          amount=q * p, account=a),
        text, st.integers(1, 1000), st.integers(1, 10**8), codes), min_size=1, max_size=5))
    subtotal = sum(x.amount for x in lines)
    tax = draw(st.integers(0, 10**9))
    return ev.InvoiceIssued(invoice_id=draw(ids), customer_id=draw(ids), entry_date=draw(days),
                            due_on=draw(days), lines=tuple(lines), subtotal=subtotal, tax=tax,
                            total=subtotal + tax, ar_account=draw(codes),
                            tax_account=draw(codes), reference=draw(text))


@st.composite
def bills(draw: st.DrawFn) -> ev.BillEntered:
    """A bill whose total is its lines plus tax."""
    lines = draw(st.lists(st.builds(ev.BillLine, description=text, amount=cents, account=codes),
                          min_size=1, max_size=5))
    tax = draw(st.integers(0, 10**9))
    return ev.BillEntered(bill_id=draw(ids), vendor_id=draw(ids),
                          vendor_invoice_number=draw(ids), entry_date=draw(days),
                          due_on=draw(days), lines=tuple(lines), tax=tax,
                          total=sum(x.amount for x in lines) + tax, ap_account=draw(codes),
                          tax_account=draw(codes))


@st.composite
def vendor_payments(draw: st.DrawFn) -> ev.VendorPaid:
    """A payment whose amount is the sum of its bill applications."""
    apps = draw(st.lists(st.builds(ev.BillApplication, bill_id=ids, amount=cents),
                         min_size=1, max_size=5))
    return ev.VendorPaid(payment_id=draw(ids), vendor_id=draw(ids), run_id=draw(st.none() | ids),
                         bank_account_id=draw(ids), entry_date=draw(days),
                         amount=sum(a.amount for a in apps), paid_to=draw(bank_details),
                         applications=tuple(apps), bank_gl_account=draw(codes),
                         ap_account=draw(codes))


@st.composite
def payment_runs(draw: st.DrawFn) -> ev.PaymentRunCreated:
    """A payment run whose total is the sum of its payments."""
    refs = draw(st.lists(st.builds(ev.PaymentRef, payment_id=ids, vendor_id=ids, amount=cents),
                         min_size=1, max_size=5))
    return ev.PaymentRunCreated(run_id=draw(ids), bank_account_id=draw(ids),
                                entry_date=draw(days), payments=tuple(refs),
                                total=sum(r.amount for r in refs))


@st.composite
def journal_reversals(draw: st.DrawFn) -> ev.JournalEntryReversed:
    """A reversal: a balanced entry with every line negated."""
    lines = tuple(x.model_copy(update={"amount": -x.amount}) for x in draw(balanced_lines()))
    return ev.JournalEntryReversed(entry_id=draw(ids), reversal_id=draw(ids),
                                   entry_date=draw(days), memo=draw(text), lines=lines)


def _ar_reduction(cls: type[ev.Event]) -> st.SearchStrategy[ev.Event]:
    return st.builds(cls, invoice_id=ids, customer_id=ids, entry_date=days, amount=cents,
                     account=codes, ar_account=codes, reason=text)


def _application(cls: type[ev.Event]) -> st.SearchStrategy[ev.Event]:
    return st.builds(cls, receipt_id=ids, invoice_id=ids, customer_id=ids, entry_date=days,
                     amount=cents, unapplied_account=codes, ar_account=codes)


STRATEGIES: dict[type[ev.Event], st.SearchStrategy[ev.Event]] = {
    ev.CompanySetUp: st.builds(ev.CompanySetUp, name=text, accounts=st.builds(ev.CompanyAccounts),
                               policies=policies),
    ev.PoliciesChanged: st.builds(ev.PoliciesChanged, policies=policies),
    ev.AccountOpened: st.builds(ev.AccountOpened, code=codes, name=text,
                                account_type=st.sampled_from(typing.get_args(ev.AccountType)),
                                normal_side=st.sampled_from(typing.get_args(ev.Side)),
                                control=st.none() | st.sampled_from(
                                    typing.get_args(ev.ControlKind))),
    ev.PeriodOpened: st.builds(ev.PeriodOpened, period=ids, start=days, end=days),
    ev.PeriodClosed: st.builds(ev.PeriodClosed, period=ids),
    ev.PeriodReopened: st.builds(ev.PeriodReopened, period=ids, reason=text),
    ev.CustomerRegistered: st.builds(ev.CustomerRegistered, customer_id=ids, name=text,
                                     terms_days=st.integers(0, 365),
                                     credit_limit=st.none() | cents),
    ev.VendorRegistered: st.builds(ev.VendorRegistered, vendor_id=ids, name=text,
                                   terms_days=st.integers(0, 365),
                                   bank=st.none() | bank_details),
    ev.VendorBankChangeRequested: st.builds(ev.VendorBankChangeRequested, request_id=ids,
                                            vendor_id=ids, new_bank=bank_details, reason=text,
                                            requested_by_role=roles),
    ev.VendorBankChangeApproved: st.builds(ev.VendorBankChangeApproved, request_id=ids,
                                           vendor_id=ids, new_bank=bank_details,
                                           approved_by_role=roles),
    ev.VendorBankChangeRejected: st.builds(ev.VendorBankChangeRejected, request_id=ids,
                                           vendor_id=ids, reason=text),
    ev.BankAccountOpened: st.builds(ev.BankAccountOpened, bank_account_id=ids, name=text,
                                    number=ids, gl_account=codes, entry_date=days,
                                    opening_balance=st.just(0) | st.integers(-10**9, 10**9),
                                    equity_account=codes),
    ev.InvoiceIssued: invoices(),
    ev.CreditMemoIssued: st.builds(ev.CreditMemoIssued, credit_memo_id=ids, invoice_id=ids,
                                   customer_id=ids, entry_date=days, amount=cents,
                                   account=codes, ar_account=codes, reason=text),
    ev.ReceiptRecorded: st.builds(ev.ReceiptRecorded, receipt_id=ids,
                                  customer_id=st.none() | ids, bank_account_id=ids,
                                  entry_date=days, amount=cents, bank_gl_account=codes,
                                  unapplied_account=codes, method=text, reference=text,
                                  payer=text),
    ev.ReceiptCustomerAssigned: st.builds(ev.ReceiptCustomerAssigned, receipt_id=ids,
                                          customer_id=ids),
    ev.ReceiptApplied: _application(ev.ReceiptApplied),
    ev.ApplicationReversed: _application(ev.ApplicationReversed),
    ev.InvoiceWrittenOff: _ar_reduction(ev.InvoiceWrittenOff),
    ev.FeeAllowanceGranted: _ar_reduction(ev.FeeAllowanceGranted),
    ev.CustomerRefunded: st.builds(ev.CustomerRefunded, refund_id=ids, receipt_id=ids,
                                   customer_id=ids, bank_account_id=ids, entry_date=days,
                                   amount=cents, bank_gl_account=codes, unapplied_account=codes),
    ev.DepositReturned: st.builds(ev.DepositReturned, return_id=ids, receipt_id=ids,
                                  customer_id=st.none() | ids, bank_account_id=ids,
                                  entry_date=days, amount=cents, bank_gl_account=codes,
                                  unapplied_account=codes, reason=text),
    ev.BillEntered: bills(),
    ev.BillApproved: st.builds(ev.BillApproved, bill_id=ids, vendor_id=ids),
    ev.VendorCreditRecorded: st.builds(ev.VendorCreditRecorded, credit_id=ids, vendor_id=ids,
                                       vendor_credit_number=ids, entry_date=days, amount=cents,
                                       account=codes, ap_account=codes),
    ev.VendorCreditApplied: st.builds(ev.VendorCreditApplied, credit_id=ids, bill_id=ids,
                                      vendor_id=ids, entry_date=days, amount=cents,
                                      ap_account=codes),
    ev.PaymentRunCreated: payment_runs(),
    ev.VendorPaid: vendor_payments(),
    ev.StatementLineImported: st.builds(ev.StatementLineImported, line_id=ids,
                                        bank_account_id=ids, entry_date=days,
                                        amount=st.integers(-10**9, 10**9).filter(bool),
                                        description=text, reference=text, counterparty=text,
                                        bank_ref=text),
    ev.StatementLineMatched: st.builds(ev.StatementLineMatched, line_id=ids, bank_account_id=ids,
                                       targets=st.lists(match_targets, min_size=1, max_size=3)
                                       .map(tuple)),
    ev.StatementLineUnmatched: st.builds(ev.StatementLineUnmatched, line_id=ids,
                                         bank_account_id=ids,
                                         targets=st.lists(match_targets, min_size=1, max_size=3)
                                         .map(tuple)),
    ev.BankFeeRecorded: st.builds(ev.BankFeeRecorded, fee_id=ids, bank_account_id=ids,
                                  entry_date=days, amount=cents, account=codes,
                                  bank_gl_account=codes, memo=text),
    ev.InterestRecorded: st.builds(ev.InterestRecorded, interest_id=ids, bank_account_id=ids,
                                   entry_date=days, amount=cents, account=codes,
                                   bank_gl_account=codes, memo=text),
    ev.JournalEntryPosted: st.builds(ev.JournalEntryPosted, entry_id=ids, entry_date=days,
                                     kind=st.sampled_from(["manual", "opening"]), memo=text,
                                     lines=balanced_lines()),
    ev.JournalEntryReversed: journal_reversals(),
    ev.BillTermsSet: st.builds(ev.BillTermsSet, bill_id=ids, vendor_id=ids, discount=cents,
                               discount_until=days),
    ev.PurchaseDiscountTaken: st.builds(ev.PurchaseDiscountTaken, bill_id=ids, vendor_id=ids,
                                        payment_id=ids, entry_date=days, amount=cents,
                                        ap_account=codes, discount_account=codes),
}
"""A strategy for every event class (enforced by ``test_every_event_class_has_a_strategy``)."""

MOVES_MONEY: frozenset[type[ev.Event]] = frozenset({
    ev.InvoiceIssued, ev.CreditMemoIssued, ev.ReceiptRecorded, ev.ReceiptApplied,
    ev.ApplicationReversed, ev.InvoiceWrittenOff, ev.FeeAllowanceGranted, ev.CustomerRefunded,
    ev.DepositReturned, ev.BillEntered, ev.VendorCreditRecorded, ev.VendorPaid, ev.BankFeeRecorded,
    ev.InterestRecorded, ev.JournalEntryPosted, ev.JournalEntryReversed, ev.BankAccountOpened,
    ev.PurchaseDiscountTaken,
})
"""Events that post GL lines (``BankAccountOpened`` only with an opening balance)."""

POSTS_NOTHING: frozenset[type[ev.Event]] = frozenset({
    ev.CompanySetUp, ev.PoliciesChanged, ev.AccountOpened, ev.PeriodOpened, ev.PeriodClosed,
    ev.PeriodReopened, ev.CustomerRegistered, ev.VendorRegistered, ev.VendorBankChangeRequested,
    ev.VendorBankChangeApproved, ev.VendorBankChangeRejected, ev.ReceiptCustomerAssigned,
    ev.BillApproved, ev.PaymentRunCreated, ev.StatementLineImported, ev.StatementLineMatched,
    ev.StatementLineUnmatched,
    # moves an amount between two AP documents of one vendor on the same account: no GL line
    ev.VendorCreditApplied,
    ev.BillTermsSet,  # the terms; the discount posts when taken (PurchaseDiscountTaken)
})
"""Events that post no GL lines: master data, workflow, bank matching."""

# the purchasing events (three-way match) keep their strategies and cases in their own file
STRATEGIES.update(purchasing.STRATEGIES)
MOVES_MONEY = MOVES_MONEY | purchasing.MOVES_MONEY
POSTS_NOTHING = POSTS_NOTHING | purchasing.POSTS_NOTHING
# the accruals-and-prepaids events keep theirs in their own file
STRATEGIES.update(accruals.STRATEGIES)
MOVES_MONEY = MOVES_MONEY | accruals.MOVES_MONEY
POSTS_NOTHING = POSTS_NOTHING | accruals.POSTS_NOTHING
# the collections events keep theirs in their own file
STRATEGIES.update(collections.STRATEGIES)
MOVES_MONEY = MOVES_MONEY | collections.MOVES_MONEY
POSTS_NOTHING = POSTS_NOTHING | collections.POSTS_NOTHING
# the fixed-asset events keep theirs in their own file
STRATEGIES.update(fixed_assets.STRATEGIES)
MOVES_MONEY = MOVES_MONEY | fixed_assets.MOVES_MONEY
POSTS_NOTHING = POSTS_NOTHING | fixed_assets.POSTS_NOTHING
# the year-end close keeps its own file
STRATEGIES.update(year_end.STRATEGIES)
MOVES_MONEY = MOVES_MONEY | year_end.MOVES_MONEY
POSTS_NOTHING = POSTS_NOTHING | year_end.POSTS_NOTHING
# the payroll and sales-tax events keep theirs in tests/erp/test_payroll_tax.py
STRATEGIES.update(payroll_tax.STRATEGIES)
MOVES_MONEY = MOVES_MONEY | payroll_tax.MOVES_MONEY
POSTS_NOTHING = POSTS_NOTHING | payroll_tax.POSTS_NOTHING
# several bank accounts (transfers, the company card, bank errors) keep their own file
STRATEGIES.update(transfers.STRATEGIES)
MOVES_MONEY = MOVES_MONEY | transfers.MOVES_MONEY
POSTS_NOTHING = POSTS_NOTHING | transfers.POSTS_NOTHING

EVENT_CLASSES: tuple[type[ev.Event], ...] = tuple(ev.EVENT_CLASSES.values())
ALL_CLASSES = sorted(EVENT_CLASSES, key=lambda c: c.__name__)


def _moves_money(e: ev.Event) -> bool:
    if isinstance(e, ev.BankAccountOpened):
        return e.opening_balance != 0
    return type(e) in MOVES_MONEY


# --- completeness ----------------------------------------------------------------


def test_every_event_class_has_a_strategy() -> None:
    missing = sorted(c.__name__ for c in EVENT_CLASSES if c not in STRATEGIES)
    assert not missing, (f"event classes without a hypothesis strategy in {__name__}.STRATEGIES "
                         f"(add one so the posting property covers them): {missing}")
    stale = sorted(c.__name__ for c in STRATEGIES if c not in set(EVENT_CLASSES))
    assert not stale, f"strategies for classes missing from EVENT_CLASSES: {stale}"


def test_every_event_class_is_classified() -> None:
    assert not MOVES_MONEY & POSTS_NOTHING
    unclassified = sorted(c.__name__ for c in EVENT_CLASSES
                          if c not in MOVES_MONEY | POSTS_NOTHING)
    assert not unclassified, ("event classes neither in MOVES_MONEY nor in POSTS_NOTHING "
                              f"(decide whether they post GL lines): {unclassified}")


def test_every_event_class_is_in_the_discriminated_union() -> None:
    members = set(typing.get_args(typing.get_args(ev.ErpEvent)[0]))
    assert members == set(EVENT_CLASSES), (
        f"missing from ErpEvent: {sorted(c.__name__ for c in set(EVENT_CLASSES) - members)}; "
        f"not in EVENT_CLASSES: {sorted(c.__name__ for c in members - set(EVENT_CLASSES))}")


# --- properties ------------------------------------------------------------------


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_posting_balances(cls: type[ev.Event], data: st.DataObject) -> None:
    e = data.draw(STRATEGIES[cls], label=cls.__name__)
    lines = post(e)
    assert sum(p.amount for p in lines) == 0, f"{cls.__name__} posts unbalanced lines {lines}"
    # a copy, not ``e`` again: ``post`` remembers the last event's lines by identity
    assert post(e.model_copy()) == lines, "posting is not a pure function of the event"
    if _moves_money(e):
        assert len(lines) >= 2, f"{cls.__name__} moves money but posts {lines}"
        assert all(p.amount != 0 for p in lines), f"zero-amount GL line in {lines}"
        assert all(p.account and p.doc_id for p in lines), lines
    else:
        assert lines == (), f"{cls.__name__} should post nothing, posts {lines}"


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_every_event_survives_the_store_encoding(cls: type[ev.Event],
                                                 data: st.DataObject) -> None:
    e = data.draw(STRATEGIES[cls], label=cls.__name__)
    back = ev.decode_event(e.type, e.schema_version, ev.encode_event(e))  # type: ignore[attr-defined]
    assert back == e
    assert post(back) == post(e)


@settings(max_examples=50, deadline=None)
@given(lines=balanced_lines(), entry_id=ids, reversal_id=ids, day=days)
def test_a_reversal_posts_the_exact_negation(lines: tuple[ev.JournalLine, ...], entry_id: str,
                                             reversal_id: str, day: date) -> None:
    posted = ev.JournalEntryPosted(entry_id=entry_id, entry_date=day, kind="manual", memo="m",
                                   lines=lines)
    reversed_ = ev.JournalEntryReversed(
        entry_id=entry_id, reversal_id=reversal_id, entry_date=day, memo="r",
        lines=tuple(x.model_copy(update={"amount": -x.amount}) for x in lines))
    net: dict[str, int] = {}
    for p in (*post(posted), *post(reversed_)):
        net[p.account] = net.get(p.account, 0) + p.amount
    assert set(net.values()) == {0}
    assert all(p.doc_id == reversal_id for p in post(reversed_))


# --- exact postings --------------------------------------------------------------
# One case (or more) per posting rule: the exact lines, accounts, cents, parties and
# documents. Every field that reaches a line has its own value (accounts, ids), so a rule
# that swaps debit and credit, two accounts or two documents fails here, in milliseconds.

DAY = date(2026, 3, 2)
PAID_TO = ev.BankDetails(account_name="V", routing="1", account_number="2")


def _journal_lines() -> tuple[ev.JournalLine, ...]:
    return (ev.JournalLine(account="6000", amount=12_000, party=None, memo="rent"),
            ev.JournalLine(account="1300", amount=3_000, party="C9", memo="prepaid"),
            ev.JournalLine(account="2000", amount=-15_000, party="V4", memo="owed"))


EXACT: dict[type[ev.Event], list[tuple[str, ev.Event, tuple[Posting, ...]]]] = {
    ev.InvoiceIssued: [
        ("with tax: AR debited with the total, revenue and tax credited", ev.InvoiceIssued(
            invoice_id="INV-000001", customer_id="C1", entry_date=DAY, due_on=date(2026, 4, 1),
            lines=(ev.InvoiceLine(description="consulting", quantity=3, unit_price=12_500,
                                  amount=37_500, account="4000"),
                   ev.InvoiceLine(description="travel", quantity=1, unit_price=4_020,
                                  amount=4_020, account="4050")),
            subtotal=41_520, tax=3_633, total=45_153, ar_account="1200", tax_account="2200"), (
            Posting("1200", 45_153, "C1", "INV-000001"),
            Posting("4000", -37_500, "C1", "INV-000001"),
            Posting("4050", -4_020, "C1", "INV-000001"),
            Posting("2200", -3_633, "C1", "INV-000001"))),
        ("without tax: no tax line", ev.InvoiceIssued(
            invoice_id="INV-000002", customer_id="C2", entry_date=DAY, due_on=DAY,
            lines=(ev.InvoiceLine(description="x", quantity=2, unit_price=500, amount=1_000,
                                  account="4000"),),
            subtotal=1_000, tax=0, total=1_000, ar_account="1200", tax_account="2200"), (
            Posting("1200", 1_000, "C2", "INV-000002"),
            Posting("4000", -1_000, "C2", "INV-000002"))),
    ],
    ev.BillEntered: [
        ("with tax: expense and tax debited, AP credited with the total", ev.BillEntered(
            bill_id="BILL-000001", vendor_id="V1", vendor_invoice_number="A-17", entry_date=DAY,
            due_on=DAY, lines=(ev.BillLine(description="rent", amount=200_000, account="6100"),
                               ev.BillLine(description="power", amount=7_000,
                                           account="6200")),
            tax=16_000, total=223_000, ap_account="2000", tax_account="2210"), (
            Posting("6100", 200_000, "V1", "BILL-000001"),
            Posting("6200", 7_000, "V1", "BILL-000001"),
            Posting("2210", 16_000, "V1", "BILL-000001"),
            Posting("2000", -223_000, "V1", "BILL-000001"))),
        ("without tax: no tax line", ev.BillEntered(
            bill_id="BILL-000002", vendor_id="V2", vendor_invoice_number="A-18", entry_date=DAY,
            due_on=DAY, lines=(ev.BillLine(description="rent", amount=5_000, account="6100"),),
            tax=0, total=5_000, ap_account="2000", tax_account="2210"), (
            Posting("6100", 5_000, "V2", "BILL-000002"),
            Posting("2000", -5_000, "V2", "BILL-000002"))),
    ],
    ev.ReceiptRecorded: [
        ("the bank debited, unapplied cash credited", ev.ReceiptRecorded(
            receipt_id="RCT-1", customer_id="C1", bank_account_id="B", entry_date=DAY,
            amount=5_000, bank_gl_account="1000", unapplied_account="2150"), (
            Posting("1000", 5_000, "C1", "RCT-1"),
            Posting("2150", -5_000, "C1", "RCT-1"))),
        ("an unidentified payer posts without a party", ev.ReceiptRecorded(
            receipt_id="RCT-2", customer_id=None, bank_account_id="B", entry_date=DAY,
            amount=70, bank_gl_account="1010", unapplied_account="2150"), (
            Posting("1010", 70, None, "RCT-2"),
            Posting("2150", -70, None, "RCT-2"))),
    ],
    ev.ReceiptApplied: [
        ("unapplied cash debited on the receipt, AR credited on the invoice", ev.ReceiptApplied(
            receipt_id="RCT-1", invoice_id="INV-1", customer_id="C1", entry_date=DAY,
            amount=3_000, unapplied_account="2150", ar_account="1200"), (
            Posting("2150", 3_000, "C1", "RCT-1"),
            Posting("1200", -3_000, "C1", "INV-1"))),
    ],
    ev.ApplicationReversed: [
        ("AR debited on the invoice again, unapplied cash credited on the receipt",
         ev.ApplicationReversed(
             receipt_id="RCT-3", invoice_id="INV-3", customer_id="C3", entry_date=DAY,
             amount=2_750, unapplied_account="2150", ar_account="1200"), (
             Posting("1200", 2_750, "C3", "INV-3"),
             Posting("2150", -2_750, "C3", "RCT-3"))),
    ],
    ev.CustomerRefunded: [
        ("unapplied cash debited on the receipt, the bank credited on the refund",
         ev.CustomerRefunded(
             refund_id="RF-1", receipt_id="RCT-1", customer_id="C1", bank_account_id="B",
             entry_date=DAY, amount=2_000, bank_gl_account="1000", unapplied_account="2150"), (
             Posting("2150", 2_000, "C1", "RCT-1"),
             Posting("1000", -2_000, "C1", "RF-1"))),
    ],
    ev.DepositReturned: [
        ("unapplied cash debited on the receipt, the bank credited on the return",
         ev.DepositReturned(
             return_id="RET-1", receipt_id="RCT-1", customer_id="C1", bank_account_id="B",
             entry_date=DAY, amount=5_000, bank_gl_account="1000", unapplied_account="2150"), (
             Posting("2150", 5_000, "C1", "RCT-1"),
             Posting("1000", -5_000, "C1", "RET-1"))),
        ("an unidentified payer's deposit returns without a party", ev.DepositReturned(
            return_id="RET-2", receipt_id="RCT-2", customer_id=None, bank_account_id="B",
            entry_date=DAY, amount=70, bank_gl_account="1010", unapplied_account="2150"), (
            Posting("2150", 70, None, "RCT-2"),
            Posting("1010", -70, None, "RET-2"))),
    ],
    ev.CreditMemoIssued: [
        ("the returns account debited on the memo, AR credited on the invoice",
         ev.CreditMemoIssued(
             credit_memo_id="CM-1", invoice_id="INV-4", customer_id="C4", entry_date=DAY,
             amount=1_999, account="4010", ar_account="1200", reason="damaged"), (
             Posting("4010", 1_999, "C4", "CM-1"),
             Posting("1200", -1_999, "C4", "INV-4"))),
    ],
    ev.InvoiceWrittenOff: [
        ("bad-debt expense debited, AR credited, both on the invoice", ev.InvoiceWrittenOff(
            invoice_id="INV-5", customer_id="C5", entry_date=DAY, amount=4_321,
            account="6900", ar_account="1200", reason="uncollectable"), (
            Posting("6900", 4_321, "C5", "INV-5"),
            Posting("1200", -4_321, "C5", "INV-5"))),
    ],
    ev.FeeAllowanceGranted: [
        ("the fee expense debited, AR credited, both on the invoice", ev.FeeAllowanceGranted(
            invoice_id="INV-6", customer_id="C6", entry_date=DAY, amount=35, account="6810",
            ar_account="1210", reason="bank fee"), (
            Posting("6810", 35, "C6", "INV-6"),
            Posting("1210", -35, "C6", "INV-6"))),
    ],
    ev.VendorCreditRecorded: [
        ("AP debited, the expense credited, on the credit", ev.VendorCreditRecorded(
            credit_id="VC-1", vendor_id="V7", vendor_credit_number="CN-9", entry_date=DAY,
            amount=8_800, account="6100", ap_account="2000"), (
            Posting("2000", 8_800, "V7", "VC-1"),
            Posting("6100", -8_800, "V7", "VC-1"))),
    ],
    ev.VendorPaid: [
        ("AP debited, the bank credited, once for all the bills", ev.VendorPaid(
            payment_id="PAY-1", vendor_id="V1", run_id=None, bank_account_id="B",
            entry_date=DAY, amount=7_500, paid_to=PAID_TO,
            applications=(ev.BillApplication(bill_id="BILL-1", amount=5_000),
                          ev.BillApplication(bill_id="BILL-2", amount=2_500)),
            bank_gl_account="1000", ap_account="2000"), (
            Posting("2000", 7_500, "V1", "PAY-1"),
            Posting("1000", -7_500, "V1", "PAY-1"))),
    ],
    ev.BankFeeRecorded: [
        ("the fee expense debited, the bank credited, no party", ev.BankFeeRecorded(
            fee_id="FEE-1", bank_account_id="B", entry_date=DAY, amount=1_250,
            account="6800", bank_gl_account="1000"), (
            Posting("6800", 1_250, None, "FEE-1"),
            Posting("1000", -1_250, None, "FEE-1"))),
    ],
    ev.InterestRecorded: [
        ("the bank debited, interest income credited, no party", ev.InterestRecorded(
            interest_id="INT-1", bank_account_id="B", entry_date=DAY, amount=310,
            account="4900", bank_gl_account="1000"), (
            Posting("1000", 310, None, "INT-1"),
            Posting("4900", -310, None, "INT-1"))),
    ],
    ev.BankAccountOpened: [
        ("an opening balance: the bank debited, equity credited", ev.BankAccountOpened(
            bank_account_id="B", name="Op", number="1", gl_account="1000", entry_date=DAY,
            opening_balance=1_000_000, equity_account="3900"), (
            Posting("1000", 1_000_000, None, "B"),
            Posting("3900", -1_000_000, None, "B"))),
        ("an overdrawn opening balance: the bank credited, equity debited",
         ev.BankAccountOpened(
             bank_account_id="B2", name="Od", number="2", gl_account="1010", entry_date=DAY,
             opening_balance=-250, equity_account="3900"), (
             Posting("1010", -250, None, "B2"),
             Posting("3900", 250, None, "B2"))),
        ("no opening balance: no lines", ev.BankAccountOpened(
            bank_account_id="B3", name="Zero", number="3", gl_account="1000", entry_date=DAY,
            opening_balance=0, equity_account="3900"), ()),
    ],
    ev.JournalEntryPosted: [
        ("each line as written, on the entry", ev.JournalEntryPosted(
            entry_id="JE-1", entry_date=DAY, kind="manual", memo="m", lines=_journal_lines()), (
            Posting("6000", 12_000, None, "JE-1"),
            Posting("1300", 3_000, "C9", "JE-1"),
            Posting("2000", -15_000, "V4", "JE-1"))),
    ],
    ev.JournalEntryReversed: [
        ("each (already negated) line as written, on the reversal, not the entry",
         ev.JournalEntryReversed(
             entry_id="JE-1", reversal_id="JE-2", entry_date=DAY, memo="r",
             lines=tuple(x.model_copy(update={"amount": -x.amount})
                         for x in _journal_lines())), (
             Posting("6000", -12_000, None, "JE-2"),
             Posting("1300", -3_000, "C9", "JE-2"),
             Posting("2000", 15_000, "V4", "JE-2"))),
    ],
}
"""Exact postings per rule (``test_every_posting_rule_has_an_exact_postings_case``)."""

for _cls, _cases in DISCOUNT_EXACT.items():  # the payment-terms rules keep their own file
    EXACT.setdefault(_cls, []).extend(_cases)
for _cls, _cases in purchasing.EXACT.items():  # and the purchasing rules theirs
    EXACT.setdefault(_cls, []).extend(_cases)
for _cls, _cases in accruals.EXACT.items():  # the accruals rules too
    EXACT.setdefault(_cls, []).extend(_cases)
for _cls, _cases in fixed_assets.EXACT.items():  # and the fixed-asset rules
    EXACT.setdefault(_cls, []).extend(_cases)
for _cls, _cases in year_end.EXACT.items():  # and the year-end close
    EXACT.setdefault(_cls, []).extend(_cases)
for _cls, _cases in payroll_tax.EXACT.items():  # and payroll and sales tax
    EXACT.setdefault(_cls, []).extend(_cases)
for _cls, _cases in transfers.EXACT.items():  # and the transfers, card and bank errors
    EXACT.setdefault(_cls, []).extend(_cases)

EXACT_CASES = [pytest.param(e, lines, id=f"{cls.__name__}: {what}")
               for cls, cases in EXACT.items() for what, e, lines in cases]


def test_every_posting_rule_has_an_exact_postings_case() -> None:
    missing = sorted(c.__name__ for c in POSTING_TYPES if not EXACT.get(c))
    assert not missing, (f"posting rules in erp/postings.py without an exact-postings case in "
                         f"{__name__}.EXACT (add the exact lines they must post): {missing}")
    stale = sorted(c.__name__ for c in EXACT if c not in POSTING_TYPES)
    assert not stale, f"exact-postings cases for types with no posting rule: {stale}"
    assert all(type(e) is cls for cls, cases in EXACT.items() for _, e, _ in cases)


def test_the_posting_rules_are_the_events_that_move_money() -> None:
    assert POSTING_TYPES == MOVES_MONEY, (
        f"rules without MOVES_MONEY: {sorted(c.__name__ for c in POSTING_TYPES - MOVES_MONEY)}; "
        f"MOVES_MONEY without a rule: "
        f"{sorted(c.__name__ for c in MOVES_MONEY - POSTING_TYPES)}")


@pytest.mark.parametrize(("event", "lines"), EXACT_CASES)
def test_exact_postings(event: ev.Event, lines: tuple[Posting, ...]) -> None:
    posted = post(event)
    assert posted == lines
    assert all(type(p) is Posting and type(p.amount) is int for p in posted)
    assert sum(p.amount for p in posted) == 0


def test_the_last_event_posted_is_remembered_by_identity_only() -> None:
    """``post`` gives back the last event's lines when asked for that same object, and
    works out another event's, even an equal one or one asked for in between."""
    (a, a_lines), (b, b_lines) = EXACT_CASES[0].values, EXACT_CASES[1].values
    assert a_lines != b_lines
    first = post(a)
    assert first == a_lines and post(a) is first  # the same object: remembered
    assert post(b) == b_lines
    assert post(a) == a_lines  # asked again after another: worked out again, not b's
    twin = a.model_copy()
    assert twin == a and twin is not a
    assert post(twin) == a_lines and post(twin) is not first  # equal, not the same: anew
    assert post(b) == b_lines and post(a) == a_lines


def test_an_event_type_without_a_rule_posts_nothing() -> None:
    e = ev.PaymentRunCreated(run_id="RUN-1", bank_account_id="B", entry_date=DAY,
                             payments=(ev.PaymentRef(payment_id="PAY-1", vendor_id="V1",
                                                     amount=100),), total=100)
    assert type(e) not in POSTING_TYPES
    assert post(e) == () and post(e) is NO_LINES
