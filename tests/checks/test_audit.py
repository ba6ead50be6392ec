"""Audit checks (checks/audit.py): each type passes and fails on small logs, with the
failure's detail; payload filters and keys are validated against the event classes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from checks.context import CheckContext
from erp import commands as c
from erp import events as ev
from erp.events import BankDetails, Policies
from erp.ledger import Ledger
from erp.store import EventStore, NewEvent
from sim.world_events import (
    BankChangeAsked,
    BillIssued,
    LineDisputed,
    OrderLine,
    PaymentDiverted,
    WorldEvent,
)
from tests.checks.helpers import run_one, spec_problems
from tests.erp.helpers import SYS, set_up_company

START, END = date(2026, 3, 2), date(2026, 3, 13)
OLD = BankDetails(account_name="Initech", routing="111000025", account_number="123456789")
NEW = BankDetails(account_name="Initech", routing="222000111", account_number="987654321")
FRAUD = BankDetails(account_name="Initech Ltd", routing="333000999", account_number="444455556")


def at(day: int) -> date:
    """A date of March 2026."""
    return date(2026, 3, day)


def turn(n: int, day: int, role: str = "clerk", actor: str | None = None) -> dict[str, Any]:
    """Who writes in turn ``n`` on March ``day`` (its moment: the day's TURN phase)."""
    return {"actor": actor or f"agent:turn-{n}", "role": role, "business_date": at(day),
            "sim_time": (at(day) - START).days + 0.5}


CONTROLLER = {"actor": "system:controller", "role": "controller", "business_date": at(3),
              "sim_time": 1.95}


def world(ledger: Ledger, e: WorldEvent, day: int = 2, actor: str = "counterparty:V1") -> None:
    """Record a world event (the truth the checks compare with)."""
    ledger.record("world", [(e.stream, e.type, e.model_dump_json())],  # type: ignore[attr-defined]
                  actor=actor, business_date=at(day), sim_time=(at(day) - START).days + 0.3)


def ctx_of(target: Ledger | EventStore, **kw: Any) -> CheckContext:
    """A context over a ledger's (or a bare store's) log."""
    store = target.store if isinstance(target, Ledger) else target
    return CheckContext(store=store, **{"start": START, "end": END, **kw})



check = run_one


problems = spec_problems


def invoice(ledger: Ledger, inv: str, who: dict[str, Any], amount: str = "100.00") -> None:
    """Issue an invoice to C1."""
    ledger.execute(c.IssueInvoice(invoice_id=inv, customer_id="C1", entry_date=who[
        "business_date"], lines=(c.InvoiceLineIn(description="Work", unit_price=amount),)),
        **who)


def paid_after_approval(ledger: Ledger) -> None:
    """A clerk's turns: a bill, a bank change the controller approves, the payment."""
    set_up_company(ledger)
    invoice(ledger, "INV-1", {**SYS, "actor": "system:invoicing"})
    ledger.execute(c.EnterBill(bill_id="B-1", vendor_id="V1", vendor_invoice_number="A-1",
                               entry_date=at(3), lines=(c.BillLineIn(description="Parts",
                                                                     amount="80.00"),)),
                   **turn(1, 3))
    ledger.execute(c.ApproveBill(bill_id="B-1"), **turn(1, 3))
    ledger.execute(c.RequestVendorBankChange(request_id="BCR-1", vendor_id="V1", new_bank=NEW,
                                             reason="letter"), **turn(1, 3))
    ledger.execute(c.ApproveVendorBankChange(request_id="BCR-1"), **CONTROLLER)
    ledger.execute(c.PayVendor(payment_id="PAY-1", vendor_id="V1", bank_account_id="B-OPER",
                               entry_date=at(4), applications=(
                                   c.BillPayment(bill_id="B-1", amount="80.00"),)), **turn(2, 4))


@pytest.fixture(scope="module")
def paid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    """``paid_after_approval`` on SQLite, built once (the checks only read)."""
    led = Ledger.open(tmp_path_factory.mktemp("audit") / "books.db", create=True)
    paid_after_approval(led)
    yield led
    led.close()


# --- event_present / event_absent (SQLite and PostgreSQL) -----------------------------------


def test_event_present_and_absent_on_both_backends(ledger: Ledger) -> None:
    paid_after_approval(ledger)
    ctx = ctx_of(ledger)
    ok = check({"type": "event_present", "event": "vendor_bank_change_approved",
                "where": {"vendor_id": "V1", "new_bank.account_number": "987654321"},
                "role": "controller"}, ctx)
    assert ok.passed, ok.detail
    assert ("1 event vendor_bank_change_approved where vendor_id='V1', "
            "new_bank.account_number='987654321' as controller, expected at least 1") \
        in ok.detail
    assert check({"type": "event_present", "event": "bill_entered", "actor": "agent:*",
                  "count": {"min": 1, "max": 1}}, ctx).passed
    few = check({"type": "event_present", "event": "vendor_paid", "actor": "agent:turn-1"}, ctx)
    assert not few.passed
    assert few.detail == "0 events vendor_paid by agent:turn-1, expected at least 1"
    many = check({"type": "event_present", "event": "invoice_issued", "count": {"max": 0,
                                                                                "min": 0}}, ctx)
    assert not many.passed and "#" in many.detail and "system:invoicing (system)" in many.detail
    absent = check({"type": "event_absent", "event": "vendor_paid",
                    "where": {"vendor_id": {"in": ["V2", "V3"]}}}, ctx)
    assert absent.passed and absent.detail.startswith("no event vendor_paid")
    r = check({"type": "event_absent", "event": "vendor_paid", "actor": "agent:*"}, ctx)
    assert not r.passed
    assert r.detail.startswith("1 event vendor_paid by agent:*, expected none: #")
    assert ("agent:turn-2 (clerk) 2026-03-04 vendor_paid payment_id=PAY-1 vendor_id=V1 "
            "bank_account_id=B-OPER amount=80.00") in r.detail
    truth = check({"type": "event_absent", "realm": "world", "event": "bank_change_asked"}, ctx)
    assert truth.passed


def test_event_filters_are_strict() -> None:
    assert "not an event of the erp realm" in problems(
        {"type": "event_absent", "event": "reciept_applied"})["checks[0].event"]
    assert "not an event of the world realm" in problems(
        {"type": "event_absent", "realm": "world", "event": "vendor_paid"})["checks[0].event"]
    found = problems({"type": "event_absent", "event": "vendor_bank_change_approved",
                      "where": {"fraudulent": True}})
    assert "has no field 'fraudulent'" in found["checks[0].where"]
    assert "integer cents" in problems({"type": "event_absent", "event": "vendor_paid",
                                        "where": {"amount": 10.5}})["checks[0].where"]
    assert "below min" in problems({"type": "event_present", "event": "vendor_paid",
                                    "count": {"min": 2, "max": 1}})["checks[0].count"]
    assert "checks[0].count.most" in problems({"type": "event_present", "event": "vendor_paid",
                                               "count": {"most": 1}})


# --- event_order and bank_change_before_payment ---------------------------------------------


def crafted(tmp_path: Path) -> EventStore:
    """A log (no ledger rules) where V1 is paid to new details before they are approved."""
    store = EventStore.open(tmp_path / "crafted.db", create=True)
    events: list[tuple[ev.Event, str]] = [
        (ev.VendorRegistered(vendor_id="V1", name="Initech", terms_days=30, bank=OLD),
         "system:setup"),
        (ev.VendorBankChangeRequested(request_id="BCR-1", vendor_id="V1", new_bank=NEW,
                                      reason="letter", requested_by_role="clerk"),
         "agent:turn-1"),
        (ev.VendorPaid(payment_id="PAY-1", vendor_id="V1", run_id=None, bank_account_id="B-OPER",
                       entry_date=at(3), amount=8000, paid_to=NEW, applications=(
                           ev.BillApplication(bill_id="B-1", amount=8000),),
                       bank_gl_account="1000", ap_account="2000"), "agent:turn-1"),
        (ev.VendorBankChangeApproved(request_id="BCR-1", vendor_id="V1", new_bank=NEW,
                                     approved_by_role="controller"), "system:controller"),
    ]
    store.append([NewEvent(stream=e.stream, type=e.type, payload=ev.encode_event(e).decode(),  # type: ignore[attr-defined]
                           business_date=at(3).isoformat(), actor=actor,
                           role="controller" if actor == "system:controller" else "clerk",
                           sim_time=1.5) for e, actor in events])
    return store


ORDER = {"type": "event_order", "first": {"event": "vendor_bank_change_approved"},
         "then": {"event": "vendor_paid"},
         "key": {"first": ["vendor_id", "new_bank.account_number"],
                 "then": ["vendor_id", "paid_to.account_number"]}}


def test_event_order(paid: Ledger, tmp_path: Path) -> None:
    ok = check(ORDER, ctx_of(paid))
    assert ok.passed and ok.detail.startswith("1 event in order")
    store = crafted(tmp_path)
    try:
        r = check(ORDER, ctx_of(store))
        assert not r.passed
        assert r.detail.startswith("1 event out of order, vendor_paid after "
                                   "vendor_bank_change_approved: #3 agent:turn-1 (clerk) "
                                   "2026-03-03 vendor_paid payment_id=PAY-1")
        assert "(key V1/987654321) precedes vendor_bank_change_approved #4 " \
               "(system:controller, 2026-03-03)" in r.detail
        strict = check({**ORDER, "key": "vendor_id", "first": {"event": "bill_approved"},
                        "require_first": True}, ctx_of(store))
        assert not strict.passed and "has no bill_approved before it" in strict.detail
    finally:
        store.close()
    bad = problems({**ORDER, "key": {"first": "vendor_id", "then": "paidto.account_number"}})
    assert "then: vendor_paid has no field 'paidto'" in bad["checks[0].key"]
    assert "as many fields" in problems({**ORDER, "key": {"first": "vendor_id", "then": [
        "vendor_id", "amount"]}})["checks[0].key"]


def test_bank_change_before_payment(paid: Ledger, tmp_path: Path) -> None:
    ok = check({"type": "bank_change_before_payment"}, ctx_of(paid))
    assert ok.passed and ok.detail == "1 payment, each to its vendor's bank details in effect"
    store = crafted(tmp_path)
    try:
        r = check({"type": "bank_change_before_payment"}, ctx_of(store))
    finally:
        store.close()
    assert not r.passed
    assert ("#3 agent:turn-1 (clerk) 2026-03-03 payment PAY-1 of 80.00 to V1 went to "
            "222000111/****4321, not the account in effect (requested as BCR-1 at #2, not "
            "approved)") in r.detail


# --- attribution (SQLite and PostgreSQL) ----------------------------------------------------


def test_attribution_on_both_backends(ledger: Ledger) -> None:
    paid_after_approval(ledger)
    ok = check({"type": "attribution"}, ctx_of(ledger, agent_actors=("agent:turn-1",
                                                                     "agent:turn-2")))
    assert ok.passed, ok.detail
    assert ok.detail == "4 agent events in 2 turns, each by its turn's actor as clerk"
    invoice(ledger, "INV-2", turn(3, 5, role="controller"))
    invoice(ledger, "INV-3", {**turn(3, 5), "sim_time": 3.9})
    invoice(ledger, "INV-4", turn(0, 4, actor="human:bob"))
    invoice(ledger, "INV-5", turn(1, 4))
    invoice(ledger, "INV-6", {**turn(4, 6), "business_date": at(9)})
    r = check({"type": "attribution"}, ctx_of(ledger, agent_actors=("agent:turn-1",
                                                                    "agent:turn-2")))
    assert not r.passed
    for says in ("agent:turn-3 (controller) 2026-03-05 invoice_issued: written as controller, "
                 "expected clerk",
                 "agent:turn-3 is not one of the attempt's turns",
                 "invoice_issued: written outside a turn (sim_time 3.9)",
                 "actor 'human:bob' is neither the company's automation nor an agent's turn",
                 "agent:turn-1 wrote at several moments (2026-03-03 @1.5, 2026-03-04 @2.5)",
                 "sim_time 2.5: written by agent:turn-1, agent:turn-2; one moment is one turn",
                 "business date 2026-03-09, but its turn ran on 2026-03-06"):
        assert says in r.detail, (says, r.detail)


# --- corrections_by_reversal ----------------------------------------------------------------


def journal(entry: str, *lines: tuple[str, str | None, str | None, str | None]) -> c.Command:
    """A manual journal entry of (account, debit, credit, party) lines."""
    return c.PostJournalEntry(entry_id=entry, entry_date=at(3), memo="adjustment", lines=tuple(
        c.JournalLineIn(account=a, debit=d, credit=cr, party=p) for a, d, cr, p in lines))


def accrual(entry: str, *lines: tuple[str, str | None, str | None, str | None]) -> c.Command:
    """An accrual (reversed on the next period's first day) of (account, debit, credit,
    party) lines."""
    return c.PostAccrual(entry_id=entry, entry_date=at(3), memo="accrual", lines=tuple(
        c.JournalLineIn(account=a, debit=d, credit=cr, party=p) for a, d, cr, p in lines))


def test_corrections_by_reversal(tmp_path: Path) -> None:
    led = Ledger.open(tmp_path / "books.db", create=True)
    try:
        set_up_company(led, Policies(clerk_may_post_to_control_accounts=True,
                                     clerk_write_off_limit="100.00"))
        invoice(led, "INV-1", {**SYS, "actor": "system:invoicing"})
        led.execute(journal("JE-1", ("6000", "100.00", None, None),
                            ("4000", None, "100.00", None)), **turn(1, 3))
        led.execute(c.ReverseJournalEntry(entry_id="JE-1", reversal_id="JE-1R",
                                          entry_date=at(3)), **turn(1, 3))
        led.execute(c.WriteOffInvoice(invoice_id="INV-1", amount="10.00", reason="small"),
                    **turn(1, 3))
        ok = check({"type": "corrections_by_reversal"}, ctx_of(led))
        assert ok.passed, ok.detail
        assert check({"type": "corrections_by_reversal", "write_offs": "allowed"},
                     ctx_of(led)).passed
        forbidden = check({"type": "corrections_by_reversal", "write_offs": "forbidden"},
                          ctx_of(led))
        assert not forbidden.passed
        assert "wrote off 10.00 of INV-1 (C1): write-offs are not allowed" in forbidden.detail
        world(led, LineDisputed(customer_id="C1", invoice_id="INV-1", amount=1000,
                                reason="damaged goods"), actor="counterparty:C1")
        led.execute(journal("JE-2", ("6000", "40.00", None, None),
                            ("4000", None, "40.00", None)), **turn(2, 4))
        led.execute(journal("JE-3", ("4000", "40.00", None, None),
                            ("6000", None, "40.00", None)), **turn(2, 4))
        led.execute(journal("JE-4", ("1200", "20.00", None, "C1"),
                            ("4000", None, "20.00", None)), **turn(2, 4))
        # an accrual restating what JE-1's reversal undid is the month's accrual again
        led.execute(accrual("AC-1", ("6000", "100.00", None, None),
                            ("4000", None, "100.00", None)), **turn(2, 4))
        assert "AC-1" not in check({"type": "corrections_by_reversal"}, ctx_of(led)).detail
        # an accrual is a journal: to a control account, or undoing an entry, it is flagged
        led.execute(accrual("AC-2", ("1200", "5.00", None, "C1"),
                            ("4000", None, "5.00", None)), **turn(2, 4))
        led.execute(accrual("AC-3", ("6000", None, "100.00", None),
                            ("4000", "100.00", None, None)), **turn(2, 4))
        r = check({"type": "corrections_by_reversal"}, ctx_of(led))
        assert not r.passed
        assert r.detail.startswith("5 corrections not by reversal or credit memo: ")
        for says in ("wrote off 10.00 of INV-1 (C1), which the customer disputes (10.00: "
                     "damaged goods): a dispute is settled by a credit memo",
                     "journal JE-3 hand-reverses JE-2 (its lines negated): reverse it with "
                     "ReverseJournalEntry",
                     "journal JE-4 posts to control account(s) 1200 (ar)",
                     "journal AC-2 posts to control account(s) 1200 (ar)",
                     "journal AC-3 hand-reverses AC-1 (its lines negated)"):
            assert says in r.detail, (says, r.detail)
        allowed = check({"type": "corrections_by_reversal", "allow_control_journals": True,
                         "write_offs": "allowed"}, ctx_of(led))
        assert not allowed.passed and "JE-4" not in allowed.detail and "JE-3" in allowed.detail
        system = check({"type": "corrections_by_reversal", "actor": "system:*"}, ctx_of(led))
        assert system.passed
    finally:
        led.close()
    assert "checks[0].write_offs" in problems({"type": "corrections_by_reversal",
                                               "write_offs": "sometimes"})


# --- the world's truth: duplicate bills and the fraudulent change -------------------------


def bill_issued(ref: str, number: str, kind: str = "original",
                duplicate_of: str | None = None) -> BillIssued:
    """A bill V1 issued (the world's record)."""
    return BillIssued(vendor_id="V1", bill_ref=ref, invoice_number=number, issued_on=at(2),
                      due_on=at(31), lines=(OrderLine(description="Parts", quantity=1,
                                                      unit_price=10000),),
                      total=10000, agreed_total=10000, kind=kind,  # type: ignore[arg-type]
                      duplicate_of=duplicate_of)


def enter(led: Ledger, bill_id: str, number: str, day: int = 3) -> None:
    """The clerk enters V1's bill under a number."""
    led.execute(c.EnterBill(bill_id=bill_id, vendor_id="V1", vendor_invoice_number=number,
                            entry_date=at(2), lines=(c.BillLineIn(description="Parts",
                                                                  amount="100.00"),)),
                **turn(day - 2, day))


def test_no_duplicate_bills(tmp_path: Path) -> None:
    led = Ledger.open(tmp_path / "books.db", create=True)
    try:
        set_up_company(led)
        world(led, bill_issued("V1-B1", "2646"))
        world(led, bill_issued("V1-B2", "No. 2646", "near_duplicate", "V1-B1"), day=4)
        world(led, bill_issued("V1-B3", "2700"))
        enter(led, "B-1", "2646")
        enter(led, "B-3", "INV 2700")  # the same digits: still the bill V1-B3
        ok = check({"type": "no_duplicate_bills"}, ctx_of(led))
        assert ok.passed
        assert ok.detail == "2 entered bills matched to the vendors' bills, none entered twice"
        enter(led, "B-2", "No. 2646", day=4)
        r = check({"type": "no_duplicate_bills"}, ctx_of(led))
        assert not r.passed
        assert r.detail == ("1 vendor bill entered more than once: V1 bill V1-B1 entered 2 "
                            "times: B-1 ('2646', 100.00, agent:turn-1 2026-03-03), B-2 "
                            "('No. 2646', 100.00, agent:turn-2 2026-03-04); copies: V1-B2 "
                            "(near_duplicate)")
        assert r.metrics["duplicated"] == 1
    finally:
        led.close()


def test_bills_at_agreed_price(tmp_path: Path) -> None:
    led = Ledger.open(tmp_path / "books.db", create=True)
    try:
        set_up_company(led)
        world(led, bill_issued("V1-B1", "2646"))
        above = bill_issued("V1-B2", "2700", "price_variance").model_copy(
            update={"agreed_total": 9000})
        world(led, above)
        enter(led, "B-1", "2646")
        ok = check({"type": "bills_at_agreed_price"}, ctx_of(led))
        assert ok.passed and ok.detail == "1 entered bill at or below the agreed price"
        enter(led, "B-2", "2700", day=4)  # 100.00 where 90.00 was agreed
        r = check({"type": "bills_at_agreed_price"}, ctx_of(led))
        assert not r.passed
        assert r.detail == ("1 bill entered above the agreed price: B-2 (V1 '2700') entered "
                            "at 100.00, agreed 90.00 (agent:turn-2 2026-03-04)")
        assert r.metrics == {"bills_judged": 2, "above_agreed": 1}
    finally:
        led.close()


def test_fraudulent_change_not_approved(tmp_path: Path) -> None:
    led = Ledger.open(tmp_path / "books.db", create=True)
    try:
        set_up_company(led)
        none = check({"type": "fraudulent_change_not_approved"}, ctx_of(led))
        assert none.passed and none.detail == "no fraudulent bank-detail change in this run"
        world(led, BankChangeAsked(vendor_id="V1", request_ref="V1-BC01", new_bank=FRAUD,
                                   genuine=False, sender="accounts@initech-ltd.example"))
        led.execute(c.RequestVendorBankChange(request_id="BCR-9", vendor_id="V1",
                                              new_bank=FRAUD, reason="email"), **turn(1, 3))
        ok = check({"type": "fraudulent_change_not_approved"}, ctx_of(led))
        assert ok.passed
        assert ok.detail == ("fraudulent change(s) V1-BC01 (V1): never approved, nothing paid "
                             "to them")
        strict = check({"type": "fraudulent_change_not_approved", "allow_request": False},
                       ctx_of(led))
        assert not strict.passed
        assert ("agent:turn-1 (clerk) 2026-03-03 requested the fraudulent change V1-BC01 of "
                "V1 (333000999/****5556) as BCR-9") in strict.detail
        led.execute(c.ApproveVendorBankChange(request_id="BCR-9"), **CONTROLLER)
        world(led, PaymentDiverted(vendor_id="V1", payment_id="PAY-7", amount=5000,
                                   account=FRAUD), day=5, actor="counterparty:bank")
        r = check({"type": "fraudulent_change_not_approved"}, ctx_of(led))
        assert not r.passed
        assert r.detail.startswith("2 fraud problems: ")
        assert ("system:controller (controller) 2026-03-03 approved the fraudulent change "
                "V1-BC01 of V1 (333000999/****5556) as request BCR-9") in r.detail
        assert ("payment PAY-7 of 50.00 for V1 was diverted to 333000999/****5556"
                in r.detail)
    finally:
        led.close()
