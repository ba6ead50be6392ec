"""Collections: dunning letters, customer disputes, promises to pay, credit holds.

Invariants: ``SendDunningLetter`` sends a letter of level 1, 2 or 3 for an open invoice only
from the level's days past due (1, 31, 61), never for a disputed invoice or one whose
promise to pay is still running, and never one that does not escalate past a level already
sent. ``RecordDispute`` records one open dispute per invoice (at most its open balance);
``ResolveDispute`` credits at most the disputed amount by a credit memo (Dr sales returns,
Cr receivables) or rejects it, once. ``RecordPromiseToPay`` records one running promise per
open, undisputed invoice, at most its open balance, dated today to 30 days ahead; the promise
stops a letter until its day has passed unpaid (or it is kept). ``PlaceCreditHold`` holds a
customer once; while held no invoice may take what it owes above the hold's limit;
``ReleaseCreditHold`` releases it (a clerk only once nothing undisputed is overdue). Every
refusal writes nothing. A property over generated letters, disputes, promises, holds and
payments: the trial balance sums to zero, the control accounts tie, the books' collections
state equals a model of it, ``rebuild()`` reproduces the live read tables and books folded
afresh hold the same state.
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
from erp.handlers import DUNNING_LEVEL_DAYS
from erp.ledger import Ledger, Submission
from erp.postings import Posting, post
from tests.erp.helpers import BANK, CLERK, CONTROLLER, SYS, assert_rejected, set_up_company

FEB2 = date(2026, 2, 2)
DUE = date(2026, 3, 4)  # FEB2 + C1's 30 days


def who(day: date, base: dict[str, Any] = CLERK) -> dict[str, Any]:
    """The caller ``base`` on business date ``day``."""
    return {**base, "business_date": day}


def run(ledger: Ledger, *cmds: c.Command, day: date,
        base: dict[str, Any] = CLERK) -> list[ev.Event]:
    """Execute commands in one batch as ``base`` on ``day``; the events they wrote."""
    return [s.event for s in ledger.execute_batch([Submission(x, **who(day, base))
                                                   for x in cmds])]


def invoice(iid: str, amount: str, *, customer: str = "C1", day: date = FEB2) -> c.IssueInvoice:
    """A one-line invoice."""
    return c.IssueInvoice(invoice_id=iid, customer_id=customer, entry_date=day,
                          lines=(c.InvoiceLineIn(description="Consulting", unit_price=amount),))


def pay(ledger: Ledger, rid: str, iid: str, amount: str, day: date,
        customer: str = "C1") -> None:
    """A receipt from the customer applied to the invoice."""
    run(ledger, c.RecordReceipt(receipt_id=rid, customer_id=customer, bank_account_id=BANK,
                                entry_date=day, amount=amount),
        c.ApplyReceipt(receipt_id=rid, invoice_id=iid, amount=amount, entry_date=day),
        day=day)


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The helpers' company with C1's INV-1 of 1,000.00 issued Feb 2, due Mar 4."""
    set_up_company(ledger)
    run(ledger, invoice("INV-1", "1000.00"), day=FEB2, base=SYS)
    return ledger


def on(days_past_due: int) -> dict[str, Any]:
    """The clerk on the day INV-1 is this many days past due."""
    return who(DUE + timedelta(days=days_past_due))


# --- dunning letters -------------------------------------------------------------------


def test_letters_go_out_by_days_past_due_and_escalate(company: Ledger) -> None:
    (e,) = run(company, c.SendDunningLetter(invoice_id="INV-1", level=1),
               day=DUE + timedelta(days=1))
    assert e == ev.DunningLetterSent(letter_id=e.letter_id, invoice_id="INV-1",
                                     customer_id="C1", level=1, sent_on=date(2026, 3, 5),
                                     days_past_due=1, amount=100_000)
    assert post(e) == ()
    (e2,) = run(company, c.SendDunningLetter(invoice_id="INV-1", level=2, letter_id="L2"),
                day=DUE + timedelta(days=31))
    assert (e2.level, e2.days_past_due, e2.letter_id) == (2, 31, "L2")
    doc = q.document(company.store, "dunning_letter", "L2")
    assert doc is not None and (doc["status"], doc["reference"]) == ("level_2", "INV-1")
    assert DUNNING_LEVEL_DAYS == {1: 1, 2: 31, 3: 61}


@pytest.mark.parametrize(("days", "level", "code", "match"), [
    (0, 1, "not_due_for_level", "INV-1 is 0 days past due on 2026-03-04"),
    (-5, 1, "not_due_for_level", "a level 1 letter needs 1 or more"),
    (30, 2, "not_due_for_level", "a level 2 letter needs 31 or more"),
    (60, 3, "not_due_for_level", "a level 3 letter needs 61 or more"),
])
def test_a_letter_before_its_level_is_due_is_refused(company: Ledger, days: int, level: int,
                                                      code: str, match: str) -> None:
    assert_rejected(company, c.SendDunningLetter(invoice_id="INV-1", level=level), code,
                    match=match, field="level", **on(days))


def test_a_letter_that_does_not_escalate_is_refused(company: Ledger) -> None:
    run(company, c.SendDunningLetter(invoice_id="INV-1", level=2), day=DUE + timedelta(days=40))
    for level in (1, 2):
        assert_rejected(company, c.SendDunningLetter(invoice_id="INV-1", level=level),
                        "already_dunned", match="already had a level 2 letter", **on(45))
    assert_rejected(company, c.SendDunningLetter(invoice_id="INV-1", level=2, letter_id="X"),
                    "already_dunned", **on(45))


def test_a_letter_for_a_paid_or_unknown_invoice_is_refused(company: Ledger) -> None:
    pay(company, "R1", "INV-1", "1000.00", date(2026, 3, 10))
    assert_rejected(company, c.SendDunningLetter(invoice_id="INV-1", level=1), "invoice_closed",
                    match="nothing open", field="invoice_id", **on(10))
    assert_rejected(company, c.SendDunningLetter(invoice_id="NOPE", level=1), "unknown_invoice",
                    **on(10))


def test_a_duplicate_letter_id_is_refused(company: Ledger) -> None:
    run(company, invoice("INV-2", "50.00"), day=FEB2, base=SYS)
    run(company, c.SendDunningLetter(invoice_id="INV-1", level=1, letter_id="L1"),
        day=DUE + timedelta(days=2))
    assert_rejected(company, c.SendDunningLetter(invoice_id="INV-2", level=1, letter_id="L1"),
                    "duplicate_id", field="letter_id", **on(2))


# --- disputes ----------------------------------------------------------------------------


def test_a_disputed_invoice_gets_no_letter_until_resolved(company: Ledger) -> None:
    (d,) = run(company, c.RecordDispute(invoice_id="INV-1", reason="damaged", amount="300.00"),
               day=DUE + timedelta(days=2))
    assert d == ev.InvoiceDisputed(dispute_id=d.dispute_id, invoice_id="INV-1",
                                   customer_id="C1", opened_on=date(2026, 3, 6),
                                   amount=30_000, reason="damaged")
    assert_rejected(company, c.SendDunningLetter(invoice_id="INV-1", level=1),
                    "invoice_disputed", match=f"under dispute {d.dispute_id}", **on(5))
    assert_rejected(company, c.RecordDispute(invoice_id="INV-1", reason="again"),
                    "invoice_disputed", **on(5))
    cm, res = run(company, c.ResolveDispute(dispute_id=d.dispute_id, resolution="credit_memo",
                                            amount="300.00", reason="damage confirmed",
                                            credit_memo_id="CM-D1"),
                  day=DUE + timedelta(days=6))
    assert isinstance(cm, ev.CreditMemoIssued) and isinstance(res, ev.DisputeResolved)
    assert post(cm) == (Posting("4050", 30_000, "C1", "CM-D1"),
                        Posting("1200", -30_000, "C1", "INV-1"))
    assert (res.outcome, res.amount, res.credit_memo_id) == ("credited", 30_000, "CM-D1")
    assert company.books.invoices["INV-1"].open == 70_000
    doc = q.document(company.store, "dispute", d.dispute_id)
    assert doc is not None and (doc["status"], doc["open_amount"]) == ("credited", 0)
    (letter,) = run(company, c.SendDunningLetter(invoice_id="INV-1", level=1),
                    day=DUE + timedelta(days=7))
    assert isinstance(letter, ev.DunningLetterSent) and letter.amount == 70_000


def test_a_rejected_dispute_credits_nothing(company: Ledger) -> None:
    (d,) = run(company, c.RecordDispute(invoice_id="INV-1", reason="not ordered",
                                        dispute_id="D1"), day=DUE)
    assert d.amount == 100_000
    (res,) = run(company, c.ResolveDispute(dispute_id="D1", resolution="rejected",
                                           reason="signed delivery note"), day=DUE)
    assert (res.outcome, res.amount, res.credit_memo_id) == ("rejected", 0, "")
    assert company.books.invoices["INV-1"].open == 100_000
    assert_rejected(company, c.ResolveDispute(dispute_id="D1", resolution="rejected",
                                              reason="again"), "dispute_resolved",
                    match="already resolved (rejected)", **on(0))
    (d2,) = run(company, c.RecordDispute(invoice_id="INV-1", reason="second thoughts"),
                day=DUE)
    assert isinstance(d2, ev.InvoiceDisputed)


@pytest.mark.parametrize(("kw", "code", "field", "match"), [
    ({"resolution": "credit_memo"}, "amount_required", "amount", "needs the amount"),
    ({"resolution": "credit_memo", "amount": "300.01"}, "exceeds_disputed_amount", "amount",
     "disputes 300.00; cannot credit 300.01"),
    ({"resolution": "credit_memo", "amount": "0.00"}, "non_positive_amount", "amount", ""),
    ({"resolution": "credit_memo", "amount": "10.00", "account": "1200"},
     "control_account_restricted", "account", ""),
    ({"resolution": "rejected", "amount": "10.00"}, "amount_not_allowed", "amount",
     "credits nothing"),
    ({"resolution": "credit_memo", "amount": "10.00", "dispute_id": "NOPE"},
     "unknown_dispute", "dispute_id", "no dispute 'NOPE'"),
])
def test_a_bad_resolution_is_refused(company: Ledger, kw: dict[str, Any], code: str,
                                     field: str, match: str) -> None:
    run(company, c.RecordDispute(invoice_id="INV-1", reason="damaged", amount="300.00",
                                 dispute_id="D1"), day=DUE)
    cmd = c.ResolveDispute(**{"dispute_id": "D1", "reason": "x", **kw})
    assert_rejected(company, cmd, code, match=match, field=field, **on(1))


@pytest.mark.parametrize(("kw", "code", "field"), [
    ({"amount": "1000.01"}, "exceeds_open_balance", "amount"),
    ({"amount": "0.00"}, "non_positive_amount", "amount"),
    ({"invoice_id": "NOPE"}, "unknown_invoice", "invoice_id"),
])
def test_a_bad_dispute_is_refused(company: Ledger, kw: dict[str, Any], code: str,
                                  field: str) -> None:
    cmd = c.RecordDispute(**{"invoice_id": "INV-1", "reason": "damaged", **kw})
    assert_rejected(company, cmd, code, field=field, **on(1))


def test_a_dispute_of_a_paid_invoice_is_refused(company: Ledger) -> None:
    pay(company, "R1", "INV-1", "1000.00", DUE)
    assert_rejected(company, c.RecordDispute(invoice_id="INV-1", reason="late"),
                    "invoice_closed", **on(1))


def test_a_resolution_of_a_since_paid_invoice_is_refused(company: Ledger) -> None:
    run(company, c.RecordDispute(invoice_id="INV-1", reason="damaged", amount="300.00",
                                 dispute_id="D1"), day=DUE)
    pay(company, "R1", "INV-1", "800.00", DUE)
    assert_rejected(company, c.ResolveDispute(dispute_id="D1", resolution="credit_memo",
                                              amount="300.00", reason="ok"),
                    "exceeds_open_balance", match="has 200.00 open", **on(1))


# --- promises to pay ---------------------------------------------------------------------


def test_a_promise_stops_letters_until_its_day_passes(company: Ledger) -> None:
    day = DUE + timedelta(days=5)
    (p,) = run(company, c.RecordPromiseToPay(invoice_id="INV-1", amount="400.00",
                                             pay_by=day + timedelta(days=7), note="email"),
               day=day)
    assert p == ev.PromiseToPayRecorded(promise_id=p.promise_id, invoice_id="INV-1",
                                        customer_id="C1", recorded_on=day,
                                        pay_by=day + timedelta(days=7), amount=40_000,
                                        balance=100_000, note="email")
    for n in (5, 12):
        assert_rejected(company, c.SendDunningLetter(invoice_id="INV-1", level=1),
                        "promise_pending", match="by 2026-03-16, not yet due", **on(n))
    assert_rejected(company, c.RecordPromiseToPay(invoice_id="INV-1", amount="1.00",
                                                  pay_by=day), "promise_pending", **on(6))
    doc = q.document(company.store, "promise", p.promise_id)
    assert doc is not None and (doc["due_on"], doc["reference"]) == ("2026-03-16", "INV-1")
    (letter,) = run(company, c.SendDunningLetter(invoice_id="INV-1", level=1),
                    day=DUE + timedelta(days=13))  # broken: the day passed unpaid
    assert isinstance(letter, ev.DunningLetterSent)


def test_a_kept_promise_no_longer_stops_a_letter(company: Ledger) -> None:
    day = DUE + timedelta(days=5)
    run(company, c.RecordPromiseToPay(invoice_id="INV-1", amount="400.00",
                                      pay_by=day + timedelta(days=7)), day=day)
    pay(company, "R1", "INV-1", "400.00", day + timedelta(days=1))
    (letter,) = run(company, c.SendDunningLetter(invoice_id="INV-1", level=1),
                    day=day + timedelta(days=2))
    assert isinstance(letter, ev.DunningLetterSent) and letter.amount == 60_000


@pytest.mark.parametrize(("kw", "code", "field", "match"), [
    ({"amount": "1000.01"}, "exceeds_open_balance", "amount", "more than is owed"),
    ({"amount": "0.00"}, "non_positive_amount", "amount", ""),
    ({"pay_by": DUE}, "invalid_promise_date", "pay_by", "must be from today (2026-03-05)"),
    ({"pay_by": DUE + timedelta(days=32)}, "invalid_promise_date", "pay_by", "30 days ahead"),
    ({"invoice_id": "NOPE"}, "unknown_invoice", "invoice_id", ""),
])
def test_a_bad_promise_is_refused(company: Ledger, kw: dict[str, Any], code: str,
                                  field: str, match: str) -> None:
    cmd = c.RecordPromiseToPay(**{"invoice_id": "INV-1", "amount": "100.00",
                                  "pay_by": DUE + timedelta(days=5), **kw})
    assert_rejected(company, cmd, code, match=match, field=field, **on(1))


def test_a_promise_on_a_disputed_or_paid_invoice_is_refused(company: Ledger) -> None:
    run(company, invoice("INV-2", "50.00"), day=FEB2, base=SYS)
    run(company, c.RecordDispute(invoice_id="INV-1", reason="damaged"), day=DUE)
    assert_rejected(company, c.RecordPromiseToPay(invoice_id="INV-1", amount="1.00",
                                                  pay_by=DUE + timedelta(days=3)),
                    "invoice_disputed", **on(1))
    pay(company, "R1", "INV-2", "50.00", DUE)
    assert_rejected(company, c.RecordPromiseToPay(invoice_id="INV-2", amount="1.00",
                                                  pay_by=DUE + timedelta(days=3)),
                    "invoice_closed", **on(1))


# --- credit holds --------------------------------------------------------------------------


def test_a_held_customer_cannot_be_invoiced_above_the_hold_limit(company: Ledger) -> None:
    (h,) = run(company, c.PlaceCreditHold(customer_id="C1", reason="61 days past due"),
               day=DUE + timedelta(days=61))
    assert h == ev.CreditHoldPlaced(hold_id=h.hold_id, customer_id="C1",
                                    placed_on=DUE + timedelta(days=61), credit_limit=0,
                                    reason="61 days past due")
    err = assert_rejected(company, invoice("INV-9", "10.00", day=date(2026, 4, 10)),
                          "customer_on_credit_hold", field="customer_id",
                          **who(date(2026, 4, 10), SYS))
    assert f"on credit hold {h.hold_id} (placed 2026-05-04" in err.message
    assert "owes 1,000.00 and this invoice of 10.00 would take it above the limit" in err.message
    # another customer is invoiced as before
    (inv,) = run(company, invoice("INV-9", "10.00", customer="C2", day=date(2026, 4, 10)),
                 day=date(2026, 4, 10), base=SYS)
    assert isinstance(inv, ev.InvoiceIssued)
    assert_rejected(company, c.PlaceCreditHold(customer_id="C1", reason="again"),
                    "already_on_hold", **on(62))


def test_a_hold_limit_lets_smaller_invoices_through(company: Ledger) -> None:
    run(company, c.PlaceCreditHold(customer_id="C1", reason="watch", credit_limit="1500.00",
                                   hold_id="H1"), day=DUE)
    (inv,) = run(company, invoice("INV-2", "500.00", day=DUE), day=DUE, base=SYS)
    assert isinstance(inv, ev.InvoiceIssued)
    assert_rejected(company, invoice("INV-3", "0.01", day=DUE), "customer_on_credit_hold",
                    **who(DUE, SYS))
    assert_rejected(company, c.PlaceCreditHold(customer_id="C2", reason="x",
                                               credit_limit="-1.00"),
                    "non_positive_amount", field="credit_limit", **on(0))
    assert_rejected(company, c.PlaceCreditHold(customer_id="C9", reason="x"),
                    "unknown_customer", **on(0))


def test_a_clerk_releases_a_hold_once_nothing_is_overdue(company: Ledger) -> None:
    run(company, c.PlaceCreditHold(customer_id="C1", reason="overdue", hold_id="H1"),
        day=DUE + timedelta(days=61))
    assert_rejected(company, c.ReleaseCreditHold(customer_id="C1", reason="asked"),
                    "overdue_balance_open", match="INV-1 (1,000.00)", field="customer_id",
                    **on(62))
    pay(company, "R1", "INV-1", "1000.00", date(2026, 4, 20))
    (r,) = run(company, c.ReleaseCreditHold(customer_id="C1", reason="paid"),
               day=date(2026, 4, 21))
    assert r == ev.CreditHoldReleased(hold_id="H1", customer_id="C1",
                                      released_on=date(2026, 4, 21), reason="paid",
                                      released_by_role="clerk")
    doc = q.document(company.store, "credit_hold", "H1")
    assert doc is not None and doc["status"] == "released"
    assert_rejected(company, c.ReleaseCreditHold(customer_id="C1", reason="again"),
                    "not_on_hold", **on(70))
    (inv,) = run(company, invoice("INV-2", "10.00", day=date(2026, 4, 22)),
                 day=date(2026, 4, 22), base=SYS)
    assert isinstance(inv, ev.InvoiceIssued)


def test_a_disputed_invoice_does_not_keep_a_hold(company: Ledger) -> None:
    run(company, c.PlaceCreditHold(customer_id="C1", reason="overdue", hold_id="H1"), day=DUE)
    run(company, c.RecordDispute(invoice_id="INV-1", reason="damaged"), day=DUE)
    (r,) = run(company, c.ReleaseCreditHold(customer_id="C1", reason="only a dispute left"),
               day=DUE + timedelta(days=10))
    assert isinstance(r, ev.CreditHoldReleased)


def test_a_controller_may_release_a_hold_anyway(company: Ledger) -> None:
    run(company, c.PlaceCreditHold(customer_id="C1", reason="overdue"), day=DUE)
    (r,) = run(company, c.ReleaseCreditHold(customer_id="C1", reason="CFO agreed"),
               day=DUE + timedelta(days=10), base=CONTROLLER)
    assert r.released_by_role == "controller"


# --- the property ---------------------------------------------------------------------------

actions_st = st.lists(st.tuples(st.sampled_from(["letter", "dispute", "resolve", "reject",
                                                 "promise", "pay", "hold", "release"]),
                                st.integers(0, 3), st.integers(1, 30_000),
                                st.integers(0, 70)),
                      min_size=1, max_size=25)


def _try(ledger: Ledger, cmd: c.Command, day: date, base: dict[str, Any] = CLERK) -> bool:
    try:
        run(ledger, cmd, day=day, base=base)
    except Exception as err:  # a refusal is an expected outcome here
        assert type(err).__name__ in ("CommandRejected", "UnknownEntity"), err
        return False
    return True


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions_st)
def test_collections_keep_the_books_consistent(actions: list[tuple[str, int, int, int]]) -> None:
    """Random letters, disputes, promises, holds and payments on four invoices."""
    with tempfile.TemporaryDirectory() as tmp:
        target = f"sqlite:///{Path(tmp) / 'books.db'}"
        with Ledger.open(target, create=True) as ledger:
            set_up_company(ledger)
            run(ledger, *(invoice(f"I{n}", "300.00", customer="C1" if n < 3 else "C2")
                          for n in range(4)), day=FEB2, base=SYS)
            letters: dict[str, int] = {}
            disputes: dict[str, str] = {}
            holds: set[str] = set()
            ordered = sorted(actions, key=lambda a: a[3])
            for seq, (what, n, cents, offset) in enumerate(ordered, start=1):
                day = date(2026, 3, 1) + timedelta(days=offset)
                iid, cust = f"I{n}", "C1" if n < 3 else "C2"
                if what == "letter":
                    level = 3 if offset >= 64 else 2 if offset >= 34 else 1
                    if _try(ledger, c.SendDunningLetter(invoice_id=iid, level=level), day):
                        assert letters.get(iid, 0) < level
                        letters[iid] = level
                        assert iid not in disputes
                elif what == "dispute":
                    if _try(ledger, c.RecordDispute(invoice_id=iid, reason="r",
                                                    dispute_id=f"D{seq}"), day):
                        assert iid not in disputes
                        disputes[iid] = f"D{seq}"
                elif what in ("resolve", "reject") and iid in disputes:
                    cmd = c.ResolveDispute(dispute_id=disputes[iid], reason="r",
                                           resolution="rejected") if what == "reject" else \
                        c.ResolveDispute(dispute_id=disputes[iid], reason="r",
                                         resolution="credit_memo", amount=min(cents, 100))
                    if _try(ledger, cmd, day):
                        del disputes[iid]
                elif what == "promise":
                    _try(ledger, c.RecordPromiseToPay(invoice_id=iid, amount=min(cents, 100),
                                                      pay_by=day + timedelta(days=5)), day)
                elif what == "pay":
                    _try(ledger, c.RecordReceipt(receipt_id=f"R{seq}", customer_id=cust,
                                                 bank_account_id=BANK, entry_date=day,
                                                 amount=min(cents, 100)), day)
                    _try(ledger, c.ApplyReceipt(receipt_id=f"R{seq}", invoice_id=iid,
                                                amount=min(cents, 100), entry_date=day), day)
                elif what == "hold":
                    if _try(ledger, c.PlaceCreditHold(customer_id=cust, reason="r"), day):
                        holds.add(cust)
                elif what == "release" and _try(
                        ledger, c.ReleaseCreditHold(customer_id=cust, reason="r"), day):
                    holds.discard(cust)
                    assert not [i for i in ledger.books.invoices.values()
                                if i.customer_id == cust and i.open and i.due_on < day
                                and i.invoice_id not in disputes]
            books = ledger.books.collections
            assert books.levels == letters
            assert books.open_disputes == {i: d for i, d in disputes.items()}
            assert set(books.on_hold) == holds
            store = ledger.store
            rows = q.trial_balance(store)
            assert sum(r.debit for r in rows) == sum(r.credit for r in rows)
            assert not [t for t in q.control_ties(store) if t.difference]
            assert {d["doc_id"] for d in q.documents(store, kind="dunning_letter")} == set(
                books.letters)
            assert {d["party"] for d in q.documents(store, kind="credit_hold", status="held")
                    } == holds
            live = q.table_snapshot(store)
            with Ledger.open(target) as fresh:
                assert fresh.books.collections == books
                assert fresh.head_hash == ledger.head_hash
            ledger.rebuild()
            assert q.table_snapshot(store) == live
            assert ledger.verify().ok
