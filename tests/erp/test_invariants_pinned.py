"""The shared invariant helpers of ``erp/handlers.py``, pinned exactly.

``handle``, ``require_role``, ``require_positive``, ``require_open_period``, ``new_id``,
``require_account``, ``require_non_control_account``, ``_due``, ``_reduce_open_invoice``
and ``require_cash_policy`` are what every handler relies on; the mutation gate
(tests/mutation/gate.py) mutates them and runs this file. Each test states the whole
outcome: the code, the full message, the field, and both sides of every boundary.

The helpers are called on the real books of a real (SQLite) ledger set up with
``set_up_company``; a few go through ``Ledger.execute`` to show the helper is what the
command meets.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from erp import commands as c
from erp import handlers as h
from erp.books import Books
from erp.errors import CommandRejected, UnknownEntity
from erp.events import CustomerRegistered, Policies
from erp.ledger import Ledger
from tests.erp.helpers import BANK, set_up_company

MAR = date(2026, 3, 5)
CLERK_CTX = h.Context(actor="agent:turn-1", role="clerk", business_date=MAR)
CONTROLLER_CTX = h.Context(actor="human:controller", role="controller", business_date=MAR)


def _open(tmp_path: Path, policies: Policies | None = None) -> Ledger:
    led = Ledger.open(str(tmp_path / "books.db"), create=True)
    set_up_company(led, policies)
    return led


@pytest.fixture
def company(tmp_path: Path) -> Iterator[Ledger]:
    """The standard test company on SQLite (no cash policy)."""
    led = _open(tmp_path)
    yield led
    led.close()


def as_clerk(led: Ledger, cmd: c.Command) -> None:
    led.execute(cmd, actor="agent:turn-1", role="clerk", business_date=MAR)


def as_controller(led: Ledger, cmd: c.Command) -> None:
    led.execute(cmd, actor="human:controller", role="controller", business_date=MAR)


def rejected(fn: object, *args: object) -> CommandRejected:
    """The ``CommandRejected`` that ``fn(*args)`` raises."""
    assert callable(fn)
    with pytest.raises(CommandRejected) as info:
        fn(*args)
    return info.value


def outcome(err: CommandRejected) -> tuple[str, str, str | None]:
    return err.code, err.message, err.field


# --- handle --------------------------------------------------------------------------


class NotACommand(c.Command):
    """A command type no handler is registered for."""


def test_handle_dispatches_to_the_command_s_handler(company: Ledger) -> None:
    events = h.handle(c.RegisterCustomer(customer_id="C9", name="Hooli", terms_days=10),
                      company.books, CONTROLLER_CTX)
    assert [type(e) for e in events] == [CustomerRegistered]
    got = events[0]
    assert isinstance(got, CustomerRegistered)
    assert (got.customer_id, got.name, got.terms_days) == ("C9", "Hooli", 10)


def test_handle_refuses_a_command_type_without_a_handler(company: Ledger) -> None:
    with pytest.raises(TypeError) as info:
        h.handle(NotACommand(), company.books, CONTROLLER_CTX)
    assert str(info.value) == "no handler for command NotACommand"


# --- require_role --------------------------------------------------------------------


def test_require_role_names_the_actor_the_action_and_the_roles() -> None:
    err = rejected(h.require_role, CLERK_CTX, ("controller", "system"), "open a bank account")
    assert outcome(err) == (
        "forbidden_for_role",
        "agent:turn-1 (role clerk) may not open a bank account; needs role controller or "
        "system", None)


def test_require_role_takes_any_iterable_and_lets_an_allowed_role_through() -> None:
    h.require_role(CONTROLLER_CTX, iter(("controller", "system")), "x")
    h.require_role(CLERK_CTX, ["clerk"], "x")
    err = rejected(h.require_role, CLERK_CTX, iter(["controller"]), "close a period")
    assert err.message == ("agent:turn-1 (role clerk) may not close a period; needs role "
                           "controller")


def test_a_clerk_meets_require_role_through_the_ledger(company: Ledger) -> None:
    with pytest.raises(CommandRejected) as info:
        as_clerk(company, c.OpenPeriod(period="2026-05"))
    assert outcome(info.value) == (
        "forbidden_for_role",
        "agent:turn-1 (role clerk) may not open an accounting period; needs role controller "
        "or system", None)


# --- require_positive ----------------------------------------------------------------


@pytest.mark.parametrize("amount, shown", [(0, "0.00"), (-1, "-0.01"), (-123456, "-1,234.56")])
def test_require_positive_refuses_zero_and_below(amount: int, shown: str) -> None:
    err = rejected(h.require_positive, amount)
    assert outcome(err) == ("non_positive_amount",
                            f"amount must be greater than zero (got {shown})", "amount")


def test_require_positive_names_the_field_it_is_given() -> None:
    err = rejected(h.require_positive, 0, "lines[2].unit_price")
    assert outcome(err) == ("non_positive_amount",
                            "lines[2].unit_price must be greater than zero (got 0.00)",
                            "lines[2].unit_price")


def test_require_positive_accepts_one_cent() -> None:
    h.require_positive(1)
    h.require_positive(1, "x")


# --- require_open_period -------------------------------------------------------------


def test_require_open_period_accepts_both_ends_of_an_open_period(company: Ledger) -> None:
    for day in (date(2026, 2, 1), date(2026, 4, 30)):
        h.require_open_period(company.books, day)


def test_require_open_period_outside_every_period(company: Ledger) -> None:
    err = rejected(h.require_open_period, company.books, date(2026, 5, 1))
    assert outcome(err) == (
        "no_open_period",
        "entry_date 2026-05-01 falls in no accounting period (a controller must open one "
        "first)", "entry_date")
    err = rejected(h.require_open_period, company.books, date(2026, 1, 31), "payment_date")
    assert outcome(err) == (
        "no_open_period",
        "payment_date 2026-01-31 falls in no accounting period (a controller must open one "
        "first)", "payment_date")


def test_require_open_period_in_a_closed_period(company: Ledger) -> None:
    as_controller(company, c.ClosePeriod(period="2026-02"))
    err = rejected(h.require_open_period, company.books, date(2026, 2, 20))
    assert outcome(err) == (
        "period_closed",
        "entry_date 2026-02-20 falls in period 2026-02, which is closed; post in an open "
        "period or ask a controller to reopen it", "entry_date")
    err = rejected(h.require_open_period, company.books, date(2026, 2, 20), "refund_date")
    assert err.field == "refund_date"
    assert err.message.startswith("refund_date 2026-02-20 falls in period 2026-02")
    h.require_open_period(company.books, date(2026, 3, 1))


# --- new_id --------------------------------------------------------------------------


def test_new_id_keeps_a_new_given_id(company: Ledger) -> None:
    books = company.books
    assert h.new_id("C9", books.customers, "C", "customer", books, "customer_id") == "C9"


def test_new_id_assigns_the_next_free_id(company: Ledger) -> None:
    books = company.books
    assert len(books.customers) == 2
    assert h.new_id(None, books.customers, "C", "customer", books, "customer_id") == "C-000003"
    assert h.new_id(None, books.invoices, "INV", "invoice", books, "invoice_id") == "INV-000001"


def test_new_id_refuses_a_taken_id(company: Ledger) -> None:
    books = company.books
    err = rejected(h.new_id, "C1", books.customers, "C", "customer", books, "customer_id")
    assert outcome(err) == ("duplicate_id", "customer 'C1' already exists", "customer_id")


# --- require_account and require_non_control_account ---------------------------------


def test_require_account_returns_the_account(company: Ledger) -> None:
    acct = h.require_account(company.books, "6000", "lines[0].account")
    assert (acct.code, acct.name, acct.control) == ("6000", "General expenses", None)


def test_require_account_names_the_field_of_an_unknown_code(company: Ledger) -> None:
    err = rejected(h.require_account, company.books, "6999", "lines[1].account")
    assert isinstance(err, UnknownEntity)
    assert outcome(err) == ("unknown_account", "no account '6999' in the books",
                            "lines[1].account")


def test_require_non_control_account_returns_an_ordinary_account(company: Ledger) -> None:
    acct = h.require_non_control_account(company.books, "4050", "account")
    assert (acct.code, acct.control) == ("4050", None)


@pytest.mark.parametrize("code, kind", [("1200", "ar"), ("2000", "ap"), ("1000", "bank"),
                                        ("2150", "unapplied_cash")])
def test_require_non_control_account_refuses_a_control_account(company: Ledger, code: str,
                                                                kind: str) -> None:
    err = rejected(h.require_non_control_account, company.books, code, "account")
    assert outcome(err) == (
        "control_account_restricted",
        f"account {code} is the {kind} control account; a document's counter-account "
        "cannot be a control account", "account")


def test_require_non_control_account_names_the_field_of_an_unknown_code(
        company: Ledger) -> None:
    err = rejected(h.require_non_control_account, company.books, "7777", "writeoff_account")
    assert outcome(err) == ("unknown_account", "no account '7777' in the books",
                            "writeoff_account")


# --- _due ----------------------------------------------------------------------------


def test_due_defaults_to_the_terms() -> None:
    assert h._due(MAR, 30, None) == date(2026, 4, 4)
    assert h._due(MAR, 0, None) == MAR


def test_due_takes_a_given_date_on_or_after_the_document_date() -> None:
    assert h._due(MAR, 30, MAR) == MAR
    assert h._due(MAR, 30, date(2026, 3, 6)) == date(2026, 3, 6)


def test_due_refuses_a_date_before_the_document() -> None:
    err = rejected(h._due, MAR, 30, date(2026, 3, 4))
    assert outcome(err) == ("invalid_due_date",
                            "due_on 2026-03-04 is before the document date 2026-03-05",
                            "due_on")


# --- _reduce_open_invoice ------------------------------------------------------------


def _invoice(led: Ledger, price: str = "100.00") -> str:
    line = c.InvoiceLineIn.model_validate({"description": "consulting", "unit_price": price})
    as_clerk(led, c.IssueInvoice(customer_id="C1", entry_date=MAR, lines=(line,)))
    (iid,) = led.books.invoices
    return iid


def test_reduce_open_invoice_up_to_its_open_balance(company: Ledger) -> None:
    iid = _invoice(company)
    books: Books = company.books
    inv = books.invoices[iid]
    assert inv.open == 10_000
    assert h._reduce_open_invoice(books, iid, 10_000) is inv
    assert h._reduce_open_invoice(books, iid, 1) is inv


def test_reduce_open_invoice_refuses_more_than_is_open(company: Ledger) -> None:
    iid = _invoice(company)
    err = rejected(h._reduce_open_invoice, company.books, iid, 10_001)
    assert outcome(err) == ("exceeds_open_balance",
                            f"invoice {iid} has 100.00 open, cannot reduce it by 100.01",
                            "amount")


def test_reduce_open_invoice_refuses_a_non_positive_amount(company: Ledger) -> None:
    iid = _invoice(company)
    err = rejected(h._reduce_open_invoice, company.books, iid, 0)
    assert outcome(err) == ("non_positive_amount", "amount must be greater than zero (got 0.00)",
                            "amount")


def test_reduce_open_invoice_of_an_unknown_invoice(company: Ledger) -> None:
    err = rejected(h._reduce_open_invoice, company.books, "INV-404", 1)
    assert outcome(err) == ("unknown_invoice", "no invoice 'INV-404' in the books",
                            "invoice_id")


# --- require_cash_policy -------------------------------------------------------------


def test_no_cash_policy_allows_an_overdraft_and_reads_no_bank(company: Ledger) -> None:
    assert company.books.policies.minimum_bank_balance is None
    h.require_cash_policy(company.books, BANK, 10**12, "a payment run")
    # not even the bank account is looked up when there is no policy
    h.require_cash_policy(company.books, "B-NONE", 1, "a payment run")


@pytest.fixture
def floor_of_500(tmp_path: Path) -> Iterator[Ledger]:
    """The standard company (bank balance 10,000.00) with a minimum balance of 500.00."""
    led = _open(tmp_path, Policies(minimum_bank_balance=50_000))
    yield led
    led.close()


def test_cash_policy_allows_a_payment_down_to_the_minimum(floor_of_500: Ledger) -> None:
    books = floor_of_500.books
    assert books.policies.minimum_bank_balance == 50_000
    assert books.bank_account(BANK).balance == 1_000_000
    h.require_cash_policy(books, BANK, 950_000, "a payment run")
    h.require_cash_policy(books, BANK, 0, "a payment run")


def test_cash_policy_refuses_a_payment_below_the_minimum(floor_of_500: Ledger) -> None:
    err = rejected(h.require_cash_policy, floor_of_500.books, BANK, 950_001, "a payment run")
    assert outcome(err) == (
        "cash_policy",
        f"a payment run of 9,500.01 would take bank account {BANK} from 10,000.00 to 499.99, "
        "below the cash policy's minimum balance of 500.00; pay fewer bills (those due first) "
        "or fund the account first", "bank_account_id")


def test_cash_policy_of_an_unknown_bank_account(floor_of_500: Ledger) -> None:
    err = rejected(h.require_cash_policy, floor_of_500.books, "B-NONE", 1, "a payment")
    assert outcome(err) == ("unknown_bank_account", "no bank account 'B-NONE' in the books",
                            "bank_account_id")


def test_zero_minimum_means_no_overdraft(tmp_path: Path) -> None:
    led = _open(tmp_path, Policies(minimum_bank_balance=0))
    try:
        books = led.books
        h.require_cash_policy(books, BANK, 1_000_000, "a refund")
        err = rejected(h.require_cash_policy, books, BANK, 1_000_001, "a refund")
        assert err.message.startswith(f"a refund of 10,000.01 would take bank account {BANK} "
                                      "from 10,000.00 to -0.01, below")
    finally:
        led.close()

