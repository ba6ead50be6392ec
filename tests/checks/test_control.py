"""Control-account check types: each passes on right books and fails, with its detail, on
books with a planted difference; the strict validator refuses bad specs with their path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import checks.control  # noqa: F401  (registers the control check types)
from checks.context import CheckContext
from checks.errors import CheckSpecError
from checks.registry import REGISTRY, CheckResult, parse_checks
from checks.verdict import evaluate, run_check
from erp import commands as c
from erp.ledger import Ledger
from tests.checks.test_reconcile import D1, D3, LAST, Company, build


@pytest.fixture
def books(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger.open(tmp_path / "books.db", create=True)
    yield led
    led.close()


def check(ledger: Ledger, spec: dict[str, Any], **ctx: Any) -> CheckResult:
    """Validate one spec strictly and run it; its single result."""
    parsed = parse_checks([spec])
    results = run_check(parsed[0], 0, CheckContext(store=ledger.store, end=LAST, **ctx))
    assert len(results) == 1
    return results[0]


def test_the_types_are_registered_in_the_control_family() -> None:
    for name in ("control_ties", "bank_reconciles", "books_match_world", "zero_balance",
                 "trial_balance_zero"):
        assert REGISTRY[name].family == "control"


# --- control_ties -----------------------------------------------------------------------------


def test_control_ties_passes_on_right_books(books: Ledger) -> None:
    build(books)
    r = check(books, {"type": "control_ties", "account": "1200"})
    assert r.passed and "1200 Accounts receivable: GL 1,500.00 = subledger" in r.detail
    r = check(books, {"type": "control_ties"})
    assert r.passed and set(r.metrics["accounts"]) == {"1000", "1010", "1200", "2000", "2150"}


def test_control_ties_fails_on_a_journal_entry_to_receivables(books: Ledger) -> None:
    build(books, "journal_to_ar")
    r = check(books, {"type": "control_ties", "account": "1200", "name": "ar-ties"})
    assert not r.passed and r.name == "ar-ties"
    assert "GL 1,623.45 vs subledger 1,500.00, difference 123.45" in r.detail
    assert "gl_only [C1] JE-1" in r.detail and "journal_entry_posted" in r.detail
    assert r.metrics["accounts"]["1200"]["difference_cents"] == 12_345
    # Every control account at once fails too; the other accounts still tie.
    r = check(books, {"type": "control_ties"})
    assert not r.passed and r.metrics["accounts"]["2000"]["difference_cents"] == 0
    # As of a log position before the entry, it ties (per-date control).
    before = books.store.head()[0] - 1
    assert check(books, {"type": "control_ties", "account": "1200"}, position=before).passed


def test_control_ties_on_a_declared_control_account(books: Ledger) -> None:
    co = build(books)
    co.system(c.OpenAccount(code="1250", name="Receivables clearing", account_type="asset"))
    co.controller(c.PostJournalEntry(entry_id="JE-9", entry_date=D3, memo="park", lines=(
        c.JournalLineIn(account="1250", debit=500), c.JournalLineIn(account="4000", credit=500))),
        D3)
    declared = {"control_accounts": {"1250": "ar"}}
    r = check(books, {"type": "control_ties", "account": "1250"}, **declared)
    assert not r.passed and "GL 5.00 vs subledger 0.00" in r.detail and "JE-9" in r.detail
    # An account that is neither in the chart's controls nor declared is a grader error.
    with pytest.raises(ValueError, match="1250 is not a control account"):
        check(books, {"type": "control_ties", "account": "1250"})


def test_control_ties_within_its_tolerance(books: Ledger) -> None:
    co = build(books)
    co.controller(c.PostJournalEntry(entry_id="JE-2", entry_date=D3, memo="rounding", lines=(
        c.JournalLineIn(account="1200", debit=1, party="C1"),
        c.JournalLineIn(account="4000", credit=1))), D3)
    assert not check(books, {"type": "control_ties", "account": "1200"}).passed
    r = check(books, {"type": "control_ties", "account": "1200", "tolerance": "0.01"})
    assert r.passed and "within the tolerance of 0.01" in r.detail


# --- bank_reconciles --------------------------------------------------------------------------


def test_bank_reconciles_with_its_reconciling_items(books: Ledger) -> None:
    build(books)
    r = check(books, {"type": "bank_reconciles", "account": "1000",
                      "statement_as_of": LAST.isoformat()})
    assert r.passed
    assert "GL 11,672.20, statement 11,772.20, difference -100.00" in r.detail
    assert "outstanding_payment PMT-2" in r.detail
    m = r.metrics["accounts"]["1000"]
    assert (m["explained_cents"], m["unexplained_cents"]) == (-10_000, 0)
    assert [i["kind"] for i in m["items"]] == ["outstanding_payment"]


def test_bank_reconciles_fails_on_a_fee_never_recorded(books: Ledger) -> None:
    build(books, "skip_fee")
    r = check(books, {"type": "bank_reconciles", "account": "1000"})
    assert not r.passed
    assert "unexplained 15.00 (1 items)" in r.detail
    assert "unrecorded_fee BL-F SERVICE CHARGE" in r.detail
    assert "a bank charge the books have not recorded" in r.detail
    assert r.metrics["unexplained_cents"] == 1_500
    # The day before the fee was posted, the account reconciled.
    assert check(books, {"type": "bank_reconciles"}, as_of=D1).passed


# --- books_match_world ------------------------------------------------------------------------


def test_books_match_world_customers_and_vendors_pass(books: Ledger) -> None:
    build(books)
    for parties in ("customers", "vendors"):
        for by in ("balance", "document"):
            r = check(books, {"type": "books_match_world", "parties": parties, "by": by})
            assert r.passed, r.detail
    r = check(books, {"type": "books_match_world", "parties": "customers"})
    assert "0 customer(s) differ" in r.detail and r.metrics["explained_items"] == 1


def test_books_match_world_fails_on_a_receipt_under_the_wrong_customer(books: Ledger) -> None:
    build(books, "wrong_customer")
    r = check(books, {"type": "books_match_world", "parties": "customers"})
    assert not r.passed
    assert "2 customer(s) differ" in r.detail
    assert "C1: unexplained 1,000.00 (misapplied [C1] INV-1" in r.detail
    assert "C2: unexplained -1,000.00 (overapplied [C2] INV-5" in r.detail
    assert r.metrics["differing"]["C1"]["unexplained_cents"] == 100_000
    assert r.metrics["unexplained_cents"] == 200_000


def test_by_document_catches_a_receipt_left_unapplied(books: Ledger) -> None:
    build(books, "leave_unapplied")
    # C1's balance is right (invoice open, its money unapplied under C1)...
    assert check(books, {"type": "books_match_world", "parties": "customers"}).passed
    # ...but its documents are not.
    r = check(books, {"type": "books_match_world", "parties": "customers", "by": "document"})
    assert not r.passed
    assert "receipt_not_applied [C1] INV-1" in r.detail
    assert "receipt_not_applied [C1] RCT-BL-1" in r.detail


def test_books_match_world_fails_on_vendor_differences(books: Ledger) -> None:
    build(books, "drop_bill", "divert")
    r = check(books, {"type": "books_match_world", "parties": "vendors", "max_listed": 1})
    assert not r.passed
    assert "1 vendor(s) differ" in r.detail
    assert "V1: unexplained -950.00" in r.detail
    assert "bill_not_entered [V1] A-103 (V1-B5)" in r.detail
    assert "payment_diverted [V1] PMT-1" in r.detail
    items = r.metrics["differing"]["V1"]["items"]
    assert {i["kind"] for i in items} >= {"bill_not_entered", "payment_diverted"}


# --- zero_balance and trial_balance_zero -----------------------------------------------------


def suspense(co: Company, amount: int = 0) -> None:
    co.system(c.OpenAccount(code="1900", name="Suspense", account_type="asset"))
    if amount:
        co.controller(c.PostJournalEntry(entry_id="JE-S", entry_date=D3, memo="park", lines=(
            c.JournalLineIn(account="1900", debit=amount),
            c.JournalLineIn(account="4000", credit=amount))), D3)


def test_zero_balance_passes_on_an_empty_suspense_account(books: Ledger) -> None:
    suspense(build(books))
    r = check(books, {"type": "zero_balance", "accounts": ["1900"]})
    assert r.passed and "1900 Suspense 0.00" in r.detail


def test_zero_balance_fails_with_what_is_left(books: Ledger) -> None:
    suspense(build(books), 4_200)
    r = check(books, {"type": "zero_balance", "accounts": ["1900", "1010"]})
    assert not r.passed and "1900 Suspense 42.00" in r.detail
    assert "Left in them: 1900: JE-S 42.00" in r.detail
    assert r.metrics["accounts"]["1900"]["balance_cents"] == 4_200
    assert check(books, {"type": "zero_balance", "accounts": ["1900"], "as_of": "2026-03-03"}
                 ).passed


def test_trial_balance_zero(books: Ledger) -> None:
    build(books)
    r = check(books, {"type": "trial_balance_zero"})
    assert r.passed and "difference 0.00" in r.detail
    # The ledger never writes an unbalanced entry: plant one in the read table.
    with books.store.engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO gl_lines (position, seq, entry_date, account, amount, "
                             "party, doc_id) VALUES (3, 99, '2026-03-02', '6000', 777, NULL, 'X')")
    r = check(books, {"type": "trial_balance_zero"})
    assert not r.passed
    assert "difference 7.77" in r.detail and "position 3 off by 7.77" in r.detail


# --- the strict validator and the verdict ----------------------------------------------------


@pytest.mark.parametrize(("spec", "path", "message"), [
    ({"type": "control_ties", "tolerance": "1.01"}, "checks[0].tolerance",
     "tolerance must be between 0.00 and 1.00"),
    ({"type": "bank_reconciles", "tolerance": "-0.01"}, "checks[0].tolerance",
     "tolerance must be between"),
    ({"type": "bank_reconciles", "tolerance": 0.5}, "checks[0].tolerance",
     "expected a decimal string"),
    ({"type": "zero_balance", "accounts": ["1900"], "tolerance": "0.001"},
     "checks[0].tolerance", "more than two decimal places"),
    ({"type": "books_match_world"}, "checks[0].parties", "required field"),
    ({"type": "books_match_world", "parties": "banks"}, "checks[0].parties", "customers"),
    ({"type": "zero_balance", "accounts": []}, "checks[0].accounts", "at least 1"),
    ({"type": "trial_balance_zero", "account": "1000"}, "checks[0].account",
     "unknown field for trial_balance_zero"),
    ({"type": "control_ties", "max_listed": 0}, "checks[0].max_listed", "greater than"),
])
def test_the_validator_refuses_bad_specs_with_their_path(spec: dict[str, Any], path: str,
                                                         message: str) -> None:
    with pytest.raises(CheckSpecError) as info:
        parse_checks([spec])
    problems = {p: m for p, m, _ in info.value.problems}
    assert path in problems, problems
    assert message in problems[path]


def test_a_verdict_over_the_control_checks(books: Ledger) -> None:
    build(books, "skip_fee")
    specs = parse_checks([
        {"type": "trial_balance_zero"},
        {"type": "control_ties", "name": "all-tie"},
        {"type": "bank_reconciles", "account": "1000", "name": "bank"},
        {"type": "books_match_world", "parties": "vendors", "required": False},
    ])
    ctx = CheckContext(store=books.store, end=LAST)
    v = evaluate(specs, ctx)
    assert not v.grader_errors
    assert [r.name for r in v.failed] == ["bank"]
    assert v.status == "rejected"
    # One fold of the books and the world served both reconciling checks.
    assert sum(1 for k in ctx.cache if isinstance(k, tuple) and k[0] == "checks.reconcile") == 1
