"""Invariants of the general ledger: entries balance, lines are positive, control accounts
take manual entries only where the policy allows, opening balances never go into a
control account, and an entry is reversed at most once (never a reversal itself).
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from erp import commands as c
from erp.events import Policies
from erp.ledger import Ledger, Submission
from tests.erp.helpers import CLERK, CONTROLLER, SYS, assert_rejected, set_up_company

MAR = date(2026, 3, 5)


def run(ledger: Ledger, *cmds: c.Command, who: dict[str, Any] = CONTROLLER) -> list[Any]:
    """Execute commands in one batch; the decoded events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who) for x in cmds])]


def dr(account: str, amount: str) -> c.JournalLineIn:
    return c.JournalLineIn(account=account, debit=amount)


def cr(account: str, amount: str) -> c.JournalLineIn:
    return c.JournalLineIn(account=account, credit=amount)


def je(*lines: c.JournalLineIn, entry_id: str | None = None) -> c.PostJournalEntry:
    return c.PostJournalEntry(entry_id=entry_id, entry_date=MAR, memo="adjustment", lines=lines)


def opening(*lines: c.JournalLineIn) -> c.PostOpeningBalances:
    return c.PostOpeningBalances(entry_date=MAR, lines=lines)


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The standard test company (see ``set_up_company``)."""
    set_up_company(ledger)
    return ledger


# --- balance and amounts ---------------------------------------------------------


def test_unbalanced_entry_names_both_sides(company: Ledger) -> None:
    cmd = je(dr("6100", "1200.00"), dr("6200", "34.50"), cr("2100", "1000.00"),
             cr("3000", "200.00"))
    assert_rejected(company, cmd, "unbalanced_entry",
                    match="debits 1,234.50 != credits 1,200.00 (difference 34.50)",
                    field="lines")
    assert_rejected(company, je(dr("6100", "10.00"), cr("2100", "10.01")), "unbalanced_entry",
                    match="debits 10.00 != credits 10.01 (difference -0.01)")


def test_unbalanced_opening_balances(company: Ledger) -> None:
    assert_rejected(company, opening(dr("1500", "5000.00"), cr("3900", "4999.99")),
                    "unbalanced_entry", match="debits 5,000.00 != credits 4,999.99",
                    **CONTROLLER)


@pytest.mark.parametrize(("line", "message"), [
    (dr("6100", "0"), "lines[1] has a zero amount"),
    (cr("6100", "0.00"), "lines[1] has a zero amount"),
    (dr("6100", "-5.00"), "lines[1]: debit and credit must be positive (got -5.00)"),
    (cr("6100", "-5.00"), "lines[1]: debit and credit must be positive (got -5.00)"),
], ids=["zero-debit", "zero-credit", "negative-debit", "negative-credit"])
def test_journal_line_amounts_must_be_positive(company: Ledger, line: c.JournalLineIn,
                                               message: str) -> None:
    assert_rejected(company, je(dr("6000", "5.00"), line, cr("3000", "5.00")),
                    "non_positive_amount", match=message)


def test_journal_line_into_an_unknown_account(company: Ledger) -> None:
    assert_rejected(company, je(dr("6000", "5.00"), cr("3999", "5.00")), "unknown_account",
                    match="no account '3999' in the books", field="lines[1].account")


def test_journal_entry_id_is_unique(company: Ledger) -> None:
    run(company, je(dr("6000", "5.00"), cr("3000", "5.00"), entry_id="JE1"))
    assert_rejected(company, je(dr("6000", "5.00"), cr("3000", "5.00"), entry_id="JE1"),
                    "duplicate_id", match="journal entry 'JE1' already exists", field="entry_id")


def test_balanced_entry_is_posted_as_given(company: Ledger) -> None:
    [e] = run(company, je(dr("6100", "1200.00"), cr("2100", "1200.00")), who=CLERK)
    assert (e.type, e.kind) == ("journal_entry_posted", "manual")
    assert [(x.account, x.amount) for x in e.lines] == [("6100", 120_000), ("2100", -120_000)]


# --- control accounts ------------------------------------------------------------


@pytest.mark.parametrize(("account", "kind"), [
    ("1200", "ar"), ("2000", "ap"), ("2150", "unapplied_cash"), ("1000", "bank")])
def test_clerk_journal_entry_into_a_control_account(company: Ledger, account: str,
                                                    kind: str) -> None:
    assert_rejected(company, je(dr("6000", "5.00"), cr(account, "5.00")),
                    "control_account_restricted",
                    match=f"lines[1].account {account} is the {kind} control account; the "
                          "company's policy does not let a clerk post journal entries to it",
                    field="lines[1].account")
    # A controller may.
    assert run(company, je(dr("6000", "5.00"), cr(account, "5.00")), who=CONTROLLER)


def test_clerk_may_post_into_a_control_account_where_the_policy_allows(ledger: Ledger) -> None:
    set_up_company(ledger, Policies(clerk_may_post_to_control_accounts=True))
    [e] = run(ledger, je(dr("1200", "5.00"), cr("4000", "5.00")), who=CLERK)
    assert e.lines[0].account == "1200"


def test_policy_change_takes_effect_for_the_next_command(company: Ledger) -> None:
    cmd = je(dr("1200", "5.00"), cr("4000", "5.00"))
    assert_rejected(company, cmd, "control_account_restricted")
    run(company, c.ChangePolicies(policies=Policies(clerk_may_post_to_control_accounts=True)))
    assert run(company, cmd, who=CLERK)
    run(company, c.ChangePolicies(policies=Policies()))
    assert_rejected(company, cmd, "control_account_restricted")


@pytest.mark.parametrize("who", [CONTROLLER, SYS], ids=["controller", "system"])
def test_opening_balances_never_go_into_a_control_account(ledger: Ledger,
                                                          who: dict[str, Any]) -> None:
    set_up_company(ledger, Policies(clerk_may_post_to_control_accounts=True))
    assert_rejected(ledger, opening(dr("1500", "100.00"), dr("1200", "50.00"),
                                    cr("3900", "150.00")),
                    "control_account_restricted",
                    match="lines[1].account 1200 is the ar control account; its opening balance "
                          "comes from its documents", field="lines[1].account", **who)
    [e] = run(ledger, opening(dr("1500", "100.00"), cr("3900", "100.00")), who=who)
    assert (e.type, e.kind) == ("journal_entry_posted", "opening")


# --- reversals -------------------------------------------------------------------


@pytest.fixture
def posted(company: Ledger) -> Ledger:
    """JE1 (6100/2100, 1,200.00) by a clerk; JE2 (6000/1200, 5.00) by a controller."""
    run(company, je(dr("6100", "1200.00"), cr("2100", "1200.00"), entry_id="JE1"), who=CLERK)
    run(company, je(dr("6000", "5.00"), cr("1200", "5.00"), entry_id="JE2"))
    return company


def test_reversal_negates_every_line(posted: Ledger) -> None:
    [e] = run(posted, c.ReverseJournalEntry(entry_id="JE1", reversal_id="JE1-R",
                                            entry_date=MAR), who=CLERK)
    assert (e.type, e.entry_id, e.reversal_id, e.memo) == (
        "journal_entry_reversed", "JE1", "JE1-R", "reversal of JE1")
    assert [(x.account, x.amount) for x in e.lines] == [("6100", -120_000), ("2100", 120_000)]


def test_entry_is_reversed_once(posted: Ledger) -> None:
    run(posted, c.ReverseJournalEntry(entry_id="JE1", reversal_id="JE1-R", entry_date=MAR))
    assert_rejected(posted, c.ReverseJournalEntry(entry_id="JE1", entry_date=MAR),
                    "already_reversed", match="journal entry JE1 was already reversed by JE1-R",
                    field="entry_id")


def test_reversal_cannot_be_reversed(posted: Ledger) -> None:
    run(posted, c.ReverseJournalEntry(entry_id="JE1", reversal_id="JE1-R", entry_date=MAR))
    assert_rejected(posted, c.ReverseJournalEntry(entry_id="JE1-R", entry_date=MAR),
                    "cannot_reverse_reversal",
                    match="journal entry JE1-R is itself a reversal; post a new entry instead",
                    field="entry_id")


def test_reverse_an_unknown_entry(posted: Ledger) -> None:
    assert_rejected(posted, c.ReverseJournalEntry(entry_id="JE9", entry_date=MAR),
                    "unknown_journal_entry", match="no journal entry 'JE9'", field="entry_id")


def test_reversal_id_is_unique(posted: Ledger) -> None:
    assert_rejected(posted, c.ReverseJournalEntry(entry_id="JE1", reversal_id="JE2",
                                                  entry_date=MAR),
                    "duplicate_id", match="journal entry 'JE2' already exists",
                    field="reversal_id")


def test_clerk_cannot_reverse_an_entry_touching_a_control_account(posted: Ledger) -> None:
    assert_rejected(posted, c.ReverseJournalEntry(entry_id="JE2", entry_date=MAR),
                    "control_account_restricted",
                    match="journal entry JE2 touches control account 1200; a clerk may not "
                          "reverse it", field="entry_id")
    assert run(posted, c.ReverseJournalEntry(entry_id="JE2", entry_date=MAR), who=CONTROLLER)


def test_a_clerk_cannot_reverse_opening_balances(company: Ledger) -> None:
    [e] = run(company, opening(dr("1500", "900.00"), cr("3900", "900.00")), who=SYS)
    assert_rejected(company, c.ReverseJournalEntry(entry_id=e.entry_id, entry_date=MAR),
                    "forbidden_for_role",
                    match=f"journal entry {e.entry_id} holds opening balances; only a "
                          "controller may reverse it", field="entry_id")
    assert run(company, c.ReverseJournalEntry(entry_id=e.entry_id, entry_date=MAR))


def test_an_unknown_role_is_a_harness_fault_not_a_rejection(company: Ledger) -> None:
    n = company.store.count()
    with pytest.raises(ValueError, match="role 'auditor' of x: expected one of clerk, "
                                         "controller, system"):
        company.execute(je(dr("6100", "1.00"), cr("2100", "1.00")), actor="x",
                        role="auditor", business_date=MAR)  # type: ignore[arg-type]
    assert company.store.count() == n
