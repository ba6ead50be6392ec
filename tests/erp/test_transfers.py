"""Several bank accounts: transfers in transit, a company card, bank errors reported.

Invariants: ``TransferFunds`` moves an amount out of one of the company's bank accounts
into the in-transit clearing account (1090) on the day it leaves, ``ReceiveTransfer`` into
the receiving account on the day it arrives (once, never before it left); a transfer into
the same account, in a closed period, below the cash policy's minimum, on a control or
non-asset transit account is refused. ``RecordCardCharge`` debits an expense account and
credits the card's liability account (only a liability bank account is a card). A
statement line reported as the bank's error (``ReportBankError``) posts nothing and can no
longer be matched. Every refusal writes nothing. The exact postings of the new rules are
merged into ``test_postings.py``'s completeness tests. A property: transfers sent and
received in any order keep the trial balance at zero, 1090 equal to what is in transit,
each account's book balance equal to its opening plus its legs, rebuild = live, a fresh
fold the same books, verification ok.
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
from erp.events import Policies
from erp.ledger import Ledger, Submission
from erp.postings import POSTING_TYPES, Posting, post
from tests.erp.helpers import CLERK, CONTROLLER, SYS, assert_rejected

DAY = date(2026, 3, 16)
OPER, SAVE, CARD = "B-OPER", "B-SAVE", "B-CARD"

# --- exact postings and strategies (merged into test_postings.py) --------------------

_ids = st.from_regex(r"[A-Z]{1,4}-[0-9]{1,6}", fullmatch=True)
_codes = st.sampled_from(["1000", "1010", "1090", "2060", "6400"])
_cents = st.integers(min_value=1, max_value=10**9)
_days = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))

STRATEGIES: dict[type[ev.Event], st.SearchStrategy[ev.Event]] = {
    ev.FundsTransferSent: st.builds(
        ev.FundsTransferSent, transfer_id=_ids, from_bank_account_id=_ids,
        to_bank_account_id=_ids, entry_date=_days, amount=_cents, from_gl_account=_codes,
        transit_account=_codes, memo=st.text(max_size=10)),
    ev.FundsTransferReceived: st.builds(
        ev.FundsTransferReceived, transfer_id=_ids, from_bank_account_id=_ids,
        to_bank_account_id=_ids, entry_date=_days, amount=_cents, to_gl_account=_codes,
        transit_account=_codes),
    ev.CardChargeRecorded: st.builds(
        ev.CardChargeRecorded, charge_id=_ids, bank_account_id=_ids, entry_date=_days,
        amount=_cents, account=_codes, bank_gl_account=_codes, merchant=st.text(max_size=10)),
    ev.BankErrorReported: st.builds(
        ev.BankErrorReported, error_id=_ids, line_id=_ids, bank_account_id=_ids,
        entry_date=_days, amount=st.integers(-10**9, 10**9), description=st.text(max_size=10)),
}
"""A strategy per event class of several bank accounts."""

MOVES_MONEY: frozenset[type[ev.Event]] = frozenset({
    ev.FundsTransferSent, ev.FundsTransferReceived, ev.CardChargeRecorded})
POSTS_NOTHING: frozenset[type[ev.Event]] = frozenset({
    ev.BankErrorReported,  # the bank's mistake: a reconciling item, not the company's entry
})

EXACT: dict[type[ev.Event], list[tuple[str, ev.Event, tuple[Posting, ...]]]] = {
    ev.FundsTransferSent: [
        ("in-transit debited, the sending account's GL credited, on the transfer",
         ev.FundsTransferSent(transfer_id="TRF-000001", from_bank_account_id=SAVE,
                              to_bank_account_id=OPER, entry_date=DAY, amount=2_500_000,
                              from_gl_account="1010", transit_account="1090"), (
             Posting("1090", 2_500_000, None, "TRF-000001"),
             Posting("1010", -2_500_000, None, "TRF-000001")))],
    ev.FundsTransferReceived: [
        ("the receiving account's GL debited, in-transit credited",
         ev.FundsTransferReceived(transfer_id="TRF-000001", from_bank_account_id=SAVE,
                                  to_bank_account_id=OPER, entry_date=date(2026, 3, 18),
                                  amount=2_500_000, to_gl_account="1000",
                                  transit_account="1090"), (
             Posting("1000", 2_500_000, None, "TRF-000001"),
             Posting("1090", -2_500_000, None, "TRF-000001")))],
    ev.CardChargeRecorded: [
        ("the expense debited, the card's liability account credited",
         ev.CardChargeRecorded(charge_id="CC-000002", bank_account_id=CARD, entry_date=DAY,
                               amount=8_420, account="6450", bank_gl_account="2060",
                               merchant="Staples"), (
             Posting("6450", 8_420, None, "CC-000002"),
             Posting("2060", -8_420, None, "CC-000002")))],
}
"""Exact postings per rule of several bank accounts."""


@pytest.mark.parametrize(("event", "lines"), [
    pytest.param(e, lines, id=f"{cls.__name__}: {what}")
    for cls, cases in EXACT.items() for what, e, lines in cases])
def test_exact_postings(event: ev.Event, lines: tuple[Posting, ...]) -> None:
    posted = post(event)
    assert posted == lines
    assert sum(p.amount for p in posted) == 0


def test_every_rule_has_a_case_and_a_bank_error_posts_nothing() -> None:
    assert set(EXACT) == MOVES_MONEY and MOVES_MONEY <= POSTING_TYPES
    assert not POSTS_NOTHING & POSTING_TYPES
    assert set(STRATEGIES) == MOVES_MONEY | POSTS_NOTHING
    assert post(ev.BankErrorReported(error_id="BERR-1", line_id="SL-1", bank_account_id=OPER,
                                     entry_date=DAY, amount=-1_500,
                                     description="fee posted twice")) == ()


# --- the books -------------------------------------------------------------------------


def set_up(ledger: Ledger, policies: Policies | None = None) -> None:
    """A company on the services-with-card chart: operating, savings and a card account."""
    cmds: list[c.Command] = [c.SetUpCompany(name="Test Co", policies=policies or Policies())]
    cmds += chart_commands("services-with-card")
    cmds += [c.OpenPeriod(period=p) for p in ("2026-02", "2026-03", "2026-04")]
    cmds += [c.OpenBankAccount(bank_account_id=OPER, name="Operating", number="0001",
                               gl_account="1000", entry_date=DAY, opening_balance="10000.00"),
             c.OpenBankAccount(bank_account_id=SAVE, name="Savings", number="0002",
                               gl_account="1010", entry_date=DAY, opening_balance="50000.00"),
             c.OpenBankAccount(bank_account_id=CARD, name="Company card", number="0003",
                               gl_account="2060", entry_date=DAY)]
    ledger.execute_batch([Submission(cmd, **SYS) for cmd in cmds])


def run(ledger: Ledger, *cmds: c.Command, base: dict[str, Any] = CLERK) -> list[ev.Event]:
    """Execute commands in one batch; the events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **base) for x in cmds])]


def lines(ledger: Ledger, account_id: str, *rows: tuple[str, date, str]) -> None:
    """Import statement lines ``(line_id, date, signed amount)`` on an account."""
    run(ledger, c.ImportStatementLines(bank_account_id=account_id, lines=tuple(
        c.StatementLineIn(line_id=lid, entry_date=d, amount=a) for lid, d, a in rows)))


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The three-account company (Feb-Apr 2026 open)."""
    set_up(ledger)
    return ledger


def test_a_transfer_leaves_into_transit_and_arrives_later(company: Ledger) -> None:
    lines(company, SAVE, ("S1", DAY, "-2500.00"))
    lines(company, OPER, ("O1", date(2026, 3, 18), "2500.00"))
    sent = run(company, c.TransferFunds(from_bank_account_id=SAVE, to_bank_account_id=OPER,
                                        entry_date=DAY, amount="2500.00", line_id="S1"))
    assert [type(e) for e in sent] == [ev.FundsTransferSent, ev.StatementLineMatched]
    assert sent[0].transfer_id == "TRF-000001" and sent[0].transit_account == "1090"
    assert q.account_balance(company.store, "1090") == 250_000
    assert q.account_balance(company.store, "1010") == 4_750_000
    (doc,) = q.documents(company.store, kind="transfer_out")
    assert doc["open_amount"] == 250_000 and doc["status"] == "cleared"
    got = run(company, c.ReceiveTransfer(transfer_id="TRF-000001", entry_date=date(2026, 3, 18),
                                         line_id="O1"))
    assert [type(e) for e in got] == [ev.FundsTransferReceived, ev.StatementLineMatched]
    assert q.account_balance(company.store, "1090") == 0
    assert q.account_balance(company.store, "1000") == 1_250_000
    assert q.document(company.store, "transfer_out", "TRF-000001")["open_amount"] == 0
    assert company.books.bank_accounts[OPER].balance == 1_250_000
    live = q.table_snapshot(company.store)
    company.rebuild()
    assert q.table_snapshot(company.store) == live


def test_transfer_refusals(company: Ledger) -> None:
    send = c.TransferFunds(from_bank_account_id=SAVE, to_bank_account_id=OPER, entry_date=DAY,
                           amount="100.00")
    assert_rejected(company, send.model_copy(update={"to_bank_account_id": SAVE}),
                    "same_account", field="to_bank_account_id")
    assert_rejected(company, send.model_copy(update={"to_bank_account_id": "B-NONE"}),
                    "unknown_bank_account")
    assert_rejected(company, send.model_copy(update={"amount": 0}), "non_positive_amount")
    assert_rejected(company, send.model_copy(update={"entry_date": date(2026, 7, 1)}),
                    "no_open_period")
    assert_rejected(company, send.model_copy(update={"transit_account": "1200"}),
                    "invalid_transit_account")
    assert_rejected(company, send.model_copy(update={"transit_account": "6400"}),
                    "invalid_transit_account")
    assert_rejected(company, send.model_copy(update={"line_id": "NOPE"}),
                    "unknown_statement_line")
    lines(company, SAVE, ("S9", DAY, "-99.00"))
    assert_rejected(company, send.model_copy(update={"line_id": "S9"}), "match_amount_mismatch")
    run(company, c.ClosePeriod(period="2026-02"), base=CONTROLLER)
    assert_rejected(company, send.model_copy(update={"entry_date": date(2026, 2, 27)}),
                    "period_closed")
    run(company, send.model_copy(update={"transfer_id": "T1"}))
    assert_rejected(company, send.model_copy(update={"transfer_id": "T1"}), "duplicate_id")
    receive = c.ReceiveTransfer(transfer_id="T1", entry_date=date(2026, 3, 17))
    assert_rejected(company, receive.model_copy(update={"transfer_id": "T2"}),
                    "unknown_transfer")
    assert_rejected(company, receive.model_copy(update={"entry_date": date(2026, 3, 13)}),
                    "dated_before_document")
    lines(company, SAVE, ("S10", DAY, "100.00"))
    assert_rejected(company, receive.model_copy(update={"line_id": "S10"}),
                    "bank_account_mismatch")
    run(company, receive)
    assert_rejected(company, receive, "already_received")


def test_a_transfer_below_the_cash_policy_is_refused(ledger: Ledger) -> None:
    set_up(ledger, Policies(minimum_bank_balance=100_000))
    too_much = c.TransferFunds(from_bank_account_id=OPER, to_bank_account_id=SAVE,
                               entry_date=DAY, amount="9000.01")
    err = assert_rejected(ledger, too_much, "cash_policy", field="bank_account_id")
    assert "below the cash policy's minimum balance of 1,000.00" in err.message
    run(ledger, too_much.model_copy(update={"amount": 900_000}))
    assert ledger.books.bank_accounts[OPER].balance == 100_000


def test_a_card_charge_and_its_payment(company: Ledger) -> None:
    lines(company, CARD, ("K1", DAY, "-84.20"), ("K2", date(2026, 3, 20), "84.20"))
    lines(company, OPER, ("O1", date(2026, 3, 19), "-84.20"))
    run(company, c.RecordCardCharge(bank_account_id=CARD, entry_date=DAY, amount="84.20",
                                    account="6450", merchant="STAPLES 0042", line_id="K1"))
    assert q.account_balance(company.store, "2060") == -8_420
    assert q.account_balance(company.store, "6450") == 8_420
    run(company, c.TransferFunds(from_bank_account_id=OPER, to_bank_account_id=CARD,
                                 entry_date=date(2026, 3, 19), amount="84.20", line_id="O1"),
        c.ReceiveTransfer(transfer_id="TRF-000001", entry_date=date(2026, 3, 20),
                          line_id="K2"))
    assert q.account_balance(company.store, "2060") == 0
    assert q.account_balance(company.store, "1000") == 1_000_000 - 8_420
    (charge,) = q.documents(company.store, kind="card_charge")
    assert charge["account"] == "6450" and charge["reference"] == "STAPLES 0042"


def test_card_charge_refusals(company: Ledger) -> None:
    charge = c.RecordCardCharge(bank_account_id=CARD, entry_date=DAY, amount="10.00",
                                account="6400")
    assert_rejected(company, charge.model_copy(update={"bank_account_id": OPER}),
                    "not_a_card_account")
    assert_rejected(company, charge.model_copy(update={"account": "2000"}),
                    "control_account_restricted")
    assert_rejected(company, charge.model_copy(update={"account": "9999"}), "unknown_account")
    assert_rejected(company, charge.model_copy(update={"amount": -5}), "non_positive_amount")
    lines(company, CARD, ("K1", DAY, "-11.00"))
    assert_rejected(company, charge.model_copy(update={"line_id": "K1"}),
                    "match_amount_mismatch")


def test_a_bank_error_is_reported_not_booked(company: Ledger) -> None:
    lines(company, OPER, ("O1", DAY, "-15.00"), ("O2", DAY, "-15.00"))
    run(company, c.RecordBankFee(bank_account_id=OPER, entry_date=DAY, amount="15.00",
                                 line_id="O1"))
    before = q.account_balance(company.store, "1000")
    (reported,) = run(company, c.ReportBankError(line_id="O2",
                                                 description="service charge posted twice"))
    assert reported == ev.BankErrorReported(
        error_id="BERR-000001", line_id="O2", bank_account_id=OPER,
        entry_date=CLERK["business_date"],
        amount=-1_500, description="service charge posted twice")
    assert q.account_balance(company.store, "1000") == before
    (row,) = [r for r in q.documents(company.store, kind="statement_line")
              if r["doc_id"] == "O2"]
    assert row["status"] == "bank_error"
    assert q.document(company.store, "bank_error", "BERR-000001")["status"] == "reported"
    fee = c.RecordBankFee(bank_account_id=OPER, entry_date=DAY, amount="15.00", line_id="O2")
    assert_rejected(company, fee, "reported_bank_error", field="line_id")
    run(company, c.RecordBankFee(fee_id="FEE-X", bank_account_id=OPER, entry_date=DAY,
                                 amount="15.00"))
    assert_rejected(company, c.MatchStatementLine(line_id="O2", targets=(
        c.MatchRef(kind="fee", doc_id="FEE-X"),)), "reported_bank_error")
    assert_rejected(company, c.ReportBankError(line_id="O2", description="again"),
                    "already_reported")
    assert_rejected(company, c.ReportBankError(line_id="O1", description="matched"),
                    "already_matched")
    assert_rejected(company, c.ReportBankError(line_id="NOPE", description="x"),
                    "unknown_statement_line")
    live = q.table_snapshot(company.store)
    company.rebuild()
    assert q.table_snapshot(company.store) == live


# --- a property ------------------------------------------------------------------------

_ACCOUNTS = (OPER, SAVE, CARD)
transfers_st = st.lists(st.tuples(st.sampled_from(_ACCOUNTS), st.sampled_from(_ACCOUNTS),
                                  st.integers(1, 200_000), st.integers(0, 10),
                                  st.one_of(st.none(), st.integers(0, 5))),
                        min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transfers_st)
def test_transfers_keep_the_books_consistent(
        plan: list[tuple[str, str, int, int, int | None]]) -> None:
    """Transfers sent between any two accounts, some arriving days later, some not yet."""
    with tempfile.TemporaryDirectory() as tmp:
        target = f"sqlite:///{Path(tmp) / 'books.db'}"
        with Ledger.open(target, create=True) as ledger:
            set_up(ledger)
            opening = {OPER: 1_000_000, SAVE: 5_000_000, CARD: 0}
            expected, in_transit = dict(opening), 0
            for n, (src, dst, amount, day, arrive) in enumerate(plan):
                sent_on = date(2026, 3, 1 + day)
                cmd = c.TransferFunds(transfer_id=f"T{n}", from_bank_account_id=src,
                                      to_bank_account_id=dst, entry_date=sent_on,
                                      amount=amount)
                if src == dst:
                    assert_rejected(ledger, cmd, "same_account")
                    continue
                run(ledger, cmd)
                expected[src] -= amount
                if arrive is None:
                    in_transit += amount
                    continue
                run(ledger, c.ReceiveTransfer(transfer_id=f"T{n}",
                                              entry_date=date(2026, 3, 1 + day + arrive)))
                expected[dst] += amount
            store = ledger.store
            rows = q.trial_balance(store)
            assert sum(r.debit for r in rows) == sum(r.credit for r in rows)
            assert not [t for t in q.control_ties(store) if t.difference]
            assert q.account_balance(store, "1090") == in_transit
            assert sum(d["open_amount"] for d in q.documents(store, kind="transfer_out")) \
                == in_transit
            gl = {OPER: "1000", SAVE: "1010", CARD: "2060"}
            for acct, want in expected.items():
                assert ledger.books.bank_accounts[acct].balance == want
                assert q.account_balance(store, gl[acct]) == want
            live = q.table_snapshot(store)
            with Ledger.open(target) as fresh:
                assert fresh.books.transfers == ledger.books.transfers
                assert fresh.head_hash == ledger.head_hash
            ledger.rebuild()
            assert q.table_snapshot(store) == live
            assert ledger.verify().ok
