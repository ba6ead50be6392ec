"""Customers: each behaviour produces the payments and documents it claims, from its own stream."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from counterparties.customers import CARD_FEE_BP, CARD_FEE_FIXED, PROCESSOR_NAME, card_fee
from erp import commands as c
from erp.money import format_cents, pct_of
from sim.automation import OpeningInvoice
from sim.world_events import (
    DocumentDelivered,
    InvoiceReceived,
    LineDisputed,
    OrderPlaced,
)
from tests.counterparties.helpers import NO_ORDERS, Run, read_csv, simulate, spec


def invoices(cid: str, *issued: date, first: int = 1, amount: int = 1_234_56,
             step: int = 10_001) -> list[OpeningInvoice]:
    """Opening invoices of one customer, ``INV-<first>...``, one per issue date."""
    return [OpeningInvoice(f"INV-{first + n:06d}", cid, day, amount + n * step)
            for n, day in enumerate(issued)]


def due(issued: date, terms: int = 30) -> date:
    """The due date of an opening invoice."""
    return issued + timedelta(days=terms)


def one(items: list[Any]) -> Any:
    """The only element."""
    assert len(items) == 1, items
    return items[0]


def apply_by_reference(run: Run, day: date) -> None:
    """A clerk who applies each unapplied receipt to the open invoice its reference names."""
    books = run.ledger.books
    for e in run.ledger.store.read(types=["receipt_recorded"]):
        r, inv = books.receipts[e.event.receipt_id], books.invoices.get(e.event.reference)
        if r.unapplied > 0 and inv and inv.customer_id == r.customer_id and inv.open > 0:
            run.engine.world.execute(c.ApplyReceipt(
                receipt_id=r.receipt_id, invoice_id=inv.invoice_id,
                amount=min(inv.open, r.unapplied)), actor="agent:turn", role="clerk")


# --- ordering and receiving -------------------------------------------------------------


def test_orders_are_invoiced_and_the_invoices_reach_the_customer(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "on_time", orders_per_month=12)], days=15)
    orders = [o for _, o in run.events(OrderPlaced)]
    assert len(orders) >= 3
    assert [o.order_id for o in orders] == [f"SO-C0001-{n:04d}" for n in range(1, len(orders) + 1)]
    for o in orders:
        assert all(x.unit_price > 0 and x.quantity >= 1 for x in o.lines)
    books = run.ledger.books
    received = {i.invoice_id: i for _, i in run.events(InvoiceReceived)}
    assert set(received) == set(books.invoices) == set(run.customer("C0001").invoices)
    by_order = {e.event.reference: e.event for e in run.ledger.store.read(types=["invoice_issued"])}
    for o in orders:
        inv = by_order[o.order_id]
        assert inv.total == sum(x.quantity * x.unit_price for x in o.lines)
        assert received[inv.invoice_id].amount == inv.total


# --- one test per behaviour -----------------------------------------------------------


def test_on_time_pays_each_invoice_by_ach_quoting_it_around_its_due_date(tmp_path: Path) -> None:
    issued = (date(2026, 2, 2), date(2026, 2, 5), date(2026, 2, 8))
    run = simulate(tmp_path, [spec("C0001", "on_time", name="Acme Corp", **NO_ORDERS)],
                   opening=invoices("C0001", *issued))
    pays = run.payments()
    assert [p.allocations[0].doc_id for p in pays] == ["INV-000001", "INV-000002", "INV-000003"]
    for p, day, inv in zip(pays, issued, invoices("C0001", *issued), strict=True):
        assert (p.method, p.reference, p.payer_name, p.behaviour) == (
            "ach", inv.invoice_id, "Acme Corp", "on_time")
        assert p.amount == p.arrives == inv.amount
        assert [(a.doc_id, a.amount) for a in p.allocations] == [(inv.invoice_id, inv.amount)]
        assert abs((run.sent_on(p.payment_id) - due(day)).days) <= 7
    assert all(i.owed == 0 for i in run.customer("C0001").invoices.values())


def test_late_pays_weeks_after_the_due_date(tmp_path: Path) -> None:
    issued = (date(2026, 1, 26), date(2026, 1, 28))
    run = simulate(tmp_path, [spec("C0001", "late", **NO_ORDERS)],
                   opening=invoices("C0001", *issued), days=35)
    pays = run.payments()
    assert pays
    for p in pays:
        day = issued[int(p.allocations[0].doc_id[-1]) - 1]
        assert run.sent_on(p.payment_id) >= due(day) + timedelta(days=10)
        assert (p.behaviour, p.reference) == ("late", p.allocations[0].doc_id)


def test_partial_pays_sixty_percent_naming_the_invoice(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "partial", **NO_ORDERS)],
                   opening=invoices("C0001", date(2026, 2, 2), amount=1_000_01))
    p = one(run.payments())
    assert p.amount == p.arrives == pct_of(1_000_01, 6000) == 600_01
    assert "INV-000001" in p.reference and p.behaviour == "partial"
    assert [(a.doc_id, a.amount) for a in p.allocations] == [("INV-000001", 600_01)]
    assert run.customer("C0001").invoices["INV-000001"].owed == 400_00


def test_card_processor_pays_out_net_of_its_fee_with_a_remittance(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "card_processor", name="Globex", **NO_ORDERS)],
                   opening=invoices("C0001", date(2026, 2, 2), date(2026, 2, 4)))
    pays = run.payments()
    assert len(pays) == 2
    remittances = run.documents("remittance")
    assert len(remittances) == 2
    for p, doc in zip(pays, remittances, strict=True):
        fee = pct_of(p.amount, CARD_FEE_BP) + CARD_FEE_FIXED
        assert fee == card_fee(p.amount)
        assert (p.method, p.payer_name) == ("card", PROCESSOR_NAME)
        assert p.arrives == p.amount - fee
        assert p.reference.startswith("STRIPE PAYOUT po_")
        row = one(read_csv(doc.content))
        assert row == {"payout_id": p.reference.removeprefix("STRIPE PAYOUT "),
                       "customer": "Globex", "invoice": p.allocations[0].doc_id,
                       "gross": format_cents(p.amount), "fee": format_cents(fee),
                       "net": format_cents(p.arrives)}
        assert doc.truth["payment_id"] == p.payment_id and doc.truth["fee"] == fee


def test_intl_wire_arrives_short_by_at_most_two_percent(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "intl_wire", **NO_ORDERS)],
                   opening=invoices("C0001", date(2026, 2, 2), date(2026, 2, 3),
                                    date(2026, 2, 4)))
    pays = run.payments()
    assert len(pays) == 3
    for p in pays:
        inv = p.allocations[0].doc_id
        assert p.method == "wire" and inv in p.reference
        assert p.amount == p.allocations[0].amount
        assert 0 < p.amount - p.arrives <= pct_of(p.amount, 200)


def test_multi_invoice_ach_pays_several_invoices_in_one_with_a_remittance(
        tmp_path: Path) -> None:
    issued = (date(2026, 2, 2), date(2026, 2, 4), date(2026, 2, 6), date(2026, 2, 8))
    run = simulate(tmp_path, [spec("C0001", "multi_invoice_ach", name="Initrode",
                                   **NO_ORDERS)], opening=invoices("C0001", *issued))
    p = one(run.payments())
    assert p.method == "ach" and p.behaviour == "multi_invoice_ach"
    allocs = [(a.doc_id, a.amount) for a in p.allocations]
    assert allocs == [(i.invoice_id, i.amount) for i in invoices("C0001", *issued)]
    assert p.amount == p.arrives == sum(a for _, a in allocs)
    doc = one(run.documents("remittance"))
    rows = read_csv(doc.content)
    assert [(r["invoice_id"], r["amount"]) for r in rows] == [
        (i, format_cents(a)) for i, a in allocs]
    assert {r["payment_id"] for r in rows} == {p.payment_id}
    assert {r["payer"] for r in rows} == {"Initrode"}


def test_customer_only_wire_pays_every_due_invoice_quoting_only_its_name(
        tmp_path: Path) -> None:
    issued = (date(2026, 1, 20), date(2026, 1, 22), date(2026, 1, 25))  # all overdue
    run = simulate(tmp_path, [spec("C0001", "customer_only_wire", name="Umbrella Ltd",
                                   **NO_ORDERS)], opening=invoices("C0001", *issued))
    p = one(run.payments())
    assert (p.method, p.reference, p.payer_name) == ("wire", "Umbrella Ltd", "Umbrella Ltd")
    assert "INV" not in p.reference
    assert [a.doc_id for a in p.allocations] == ["INV-000001", "INV-000002", "INV-000003"]
    assert p.amount == p.arrives == sum(a.amount for a in p.allocations)


def test_wrong_reference_quotes_another_customers_invoice(tmp_path: Path) -> None:
    opening = (invoices("C0001", date(2026, 2, 2))
               + invoices("C0002", date(2026, 2, 3), date(2026, 2, 4), first=2))
    run = simulate(tmp_path, [spec("C0001", "wrong_reference", **NO_ORDERS),
                              spec("C0002", "never_pays", **NO_ORDERS)], opening=opening)
    p = one(run.payments())
    assert p.customer_id == "C0001" and p.behaviour == "wrong_reference"
    assert p.reference in ("INV-000002", "INV-000003")  # C0002's
    assert run.ledger.books.invoices[p.reference].customer_id == "C0002"
    assert [(a.doc_id, a.amount) for a in p.allocations] == [("INV-000001", 1_234_56)]


def test_pays_twice_sends_the_same_payment_again_days_later(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "pays_twice", **NO_ORDERS)],
                   opening=invoices("C0001", date(2026, 2, 2)))
    first, again = run.payments()
    assert first.duplicate_of is None and again.duplicate_of == first.payment_id
    assert again.payment_id != first.payment_id
    same = ("method", "amount", "arrives", "payer_name", "reference", "allocations")
    assert all(getattr(first, f) == getattr(again, f) for f in same)
    gap = (run.sent_on(again.payment_id) - run.sent_on(first.payment_id)).days
    assert 2 <= gap <= 9
    inv = run.customer("C0001").invoices["INV-000001"]
    assert inv.paid == inv.amount  # its books count the money once


def test_pays_closed_invoice_pays_again_an_invoice_the_books_show_paid(tmp_path: Path) -> None:
    customer = spec("C0001", "pays_closed_invoice", pay_days_after_due=0, **NO_ORDERS)
    opening = invoices("C0001", date(2026, 1, 30), date(2026, 2, 20))
    run = simulate(tmp_path, [customer], opening=opening, agent=apply_by_reference)
    pays = run.payments()
    again = one([p for p in pays if p.behaviour == "pays_closed_invoice"])
    assert (again.reference, [(a.doc_id, a.amount) for a in again.allocations]) == (
        "INV-000001", [("INV-000001", opening[0].amount)])
    first = next(p for p in pays if p.reference == "INV-000001" and p is not again)
    assert run.sent_on(first.payment_id) < run.sent_on(again.payment_id)
    assert run.ledger.books.invoices["INV-000001"].open == 0
    # nobody closed anything: the customer finds no closed invoice and pays nothing twice
    quiet = simulate(tmp_path, [customer], opening=opening, db="quiet.db")
    assert [p.behaviour for p in quiet.payments()] == ["on_time", "on_time"]


def test_disputes_a_line_by_email_and_pays_the_rest(tmp_path: Path) -> None:
    customer = spec("C0001", "disputes", terms_days=3, orders_per_month=10, order_lines=3,
                    dispute_rate=1, pay_days_after_due=0)
    run = simulate(tmp_path, [customer], days=20)
    disputes = [d for _, d in run.events(LineDisputed)]
    assert disputes
    emails = [d for d in run.documents("email") if d.subject.startswith("Dispute")]
    assert [e.truth["invoice_id"] for e in emails] == [d.invoice_id for d in disputes]
    lines = {e.event.invoice_id: e.event.lines
             for e in run.ledger.store.read(types=["invoice_issued"])}
    pays = {p.allocations[0].doc_id: p for p in run.payments()}
    for d, email in zip(disputes, emails, strict=True):
        line = next(x for x in lines[d.invoice_id] if x.amount == d.amount)
        assert line.description in email.content and d.invoice_id in email.subject
        assert email.truth["disputed"] == d.amount
        if d.invoice_id in pays:
            p = pays[d.invoice_id]
            total = sum(x.amount for x in lines[d.invoice_id])
            assert p.amount == total - d.amount and p.behaviour == "disputes"
    assert any(d.invoice_id in pays for d in disputes)


def test_never_pays_receives_invoices_and_pays_none(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "never_pays", orders_per_month=8)],
                   opening=invoices("C0001", date(2026, 2, 2)))
    assert len(run.events(InvoiceReceived)) >= 2
    assert run.payments() == []


# --- reacting to what the company did ------------------------------------------------------


def test_an_invoice_the_company_never_sent_is_never_paid(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "on_time", **NO_ORDERS)],
                   opening=invoices("C0001", date(2026, 2, 2), date(2026, 2, 3)),
                   unsent=["INV-000002"])
    assert [i.invoice_id for _, i in run.events(InvoiceReceived)] == ["INV-000001"]
    assert [p.reference for p in run.payments()] == ["INV-000001"]
    assert "INV-000002" not in run.customer("C0001").invoices
    assert run.ledger.books.invoices["INV-000002"].open > 0


def test_invoice_not_sent_withholds_the_customers_next_invoice(tmp_path: Path) -> None:
    customer = spec("C0001", "on_time", terms_days=3, orders_per_month=15,
                    pay_days_after_due=0)
    run = simulate(tmp_path, [customer], days=15,
                   injections=[(date(2026, 3, 5), "invoice_not_sent", {"customer": "C0001"})])
    armed, caught = run.planted()
    assert armed.detail == {"on": "2026-03-05", "customer_id": "C0001",
                            "withholds": "next invoice"}
    withheld = caught.detail["invoice_id"]
    issued = [(e.business_date, e.event.invoice_id)
              for e in run.ledger.store.read(types=["invoice_issued"])]
    assert withheld == next(i for d, i in issued if d >= "2026-03-05")
    received = [i.invoice_id for _, i in run.events(InvoiceReceived)]
    assert withheld not in received
    assert sorted(received) == sorted(i for _, i in issued if i != withheld)
    assert withheld not in {a.doc_id for p in run.payments() for a in p.allocations}
    assert withheld in run.population.unsent_invoices


# --- injections ---------------------------------------------------------------------------


def test_injected_wrong_reference_pays_its_own_invoice_quoting_another(tmp_path: Path) -> None:
    opening = (invoices("C0001", date(2026, 2, 10))
               + invoices("C0002", date(2026, 2, 11), first=2))
    run = simulate(tmp_path, [spec("C0001", "never_pays", **NO_ORDERS),
                              spec("C0002", "never_pays", **NO_ORDERS)], opening=opening,
                   days=5, injections=[(date(2026, 3, 4), "payment_quotes_other_customers_invoice",
                                        {"customer": "C0001"})])
    p = one(run.payments())
    assert (p.customer_id, p.reference, p.behaviour) == ("C0001", "INV-000002",
                                                         "wrong_reference")
    assert [a.doc_id for a in p.allocations] == ["INV-000001"]
    assert run.sent_on(p.payment_id) == date(2026, 3, 4)
    planted = one(run.planted())
    assert planted.kind == "payment_quotes_other_customers_invoice"
    assert planted.detail["quoted"] == "INV-000002" and planted.detail["invoice_id"] == "INV-000001"


def test_injected_duplicate_payment_repeats_the_latest_payment(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "on_time", **NO_ORDERS)],
                   opening=invoices("C0001", date(2026, 2, 1)), days=10,
                   injections=[(date(2026, 3, 11), "duplicate_payment", {})])
    first, again = run.payments()
    assert again.duplicate_of == first.payment_id
    assert (again.amount, again.reference) == (first.amount, first.reference)
    assert one(run.planted()).detail["duplicate_of"] == first.payment_id


def test_an_injection_with_nothing_to_act_on_says_so(tmp_path: Path) -> None:
    run = simulate(tmp_path, [spec("C0001", "never_pays", **NO_ORDERS)], days=3,
                   injections=[(START_PLUS_1, "duplicate_payment", {}),
                               (START_PLUS_1, "payment_for_closed_invoice", {})])
    assert [x.detail.get("skipped") for x in run.planted()] == [
        "no customer has paid yet", "no customer has a closed or paid invoice"]
    assert run.payments() == []


START_PLUS_1 = date(2026, 3, 3)


@pytest.mark.parametrize("closer", [apply_by_reference, None])
def test_injected_payment_for_closed_invoice(tmp_path: Path, closer: Any) -> None:
    run = simulate(tmp_path, [spec("C0001", "on_time", pay_days_after_due=0, **NO_ORDERS)],
                   opening=invoices("C0001", date(2026, 1, 30)), days=10, agent=closer,
                   injections=[(date(2026, 3, 12), "payment_for_closed_invoice", {})])
    first, again = run.payments()
    assert (again.reference, again.amount, again.behaviour) == (
        "INV-000001", first.amount, "pays_closed_invoice")
    assert one(run.planted()).detail["closed_in_books"] is (closer is not None)


def test_adversarial_email_is_delivered_with_its_truth(tmp_path: Path) -> None:
    run = simulate(tmp_path, [], days=3, injections=[(START_PLUS_1, "adversarial_email",
                                                      {"sender": "cfo@northwind.example"})])
    doc = one(run.documents())
    assert doc.kind == "email" and doc.truth["adversarial"] is True
    assert "From: cfo@northwind.example" in doc.content
    assert one(run.planted()).detail["doc_id"] == doc.doc_id


# --- streams and determinism -----------------------------------------------------------------


def _own_history(run: Run, cid: str) -> list[tuple[Any, ...]]:
    """A customer's world events, invoices named by the order they bill (ids are global)."""
    order_of = {e.event.invoice_id: e.event.reference
                for e in run.ledger.store.read(types=["invoice_issued"])}

    def named(text: str) -> str:
        for inv, order in order_of.items():
            text = text.replace(inv, order)
        return text

    out = []
    for e in run.ledger.store.read(realm="world", stream=f"world:customer:{cid}"):
        out.append((e.type, e.business_date, e.sim_time, named(e.payload)))
    for _, d in run.events(DocumentDelivered):
        if d.truth.get("customer_id") == cid:
            out.append(("document", named(d.content), named(str(d.truth))))
    return out


def test_adding_a_customer_does_not_change_another_customers_draws(tmp_path: Path) -> None:
    base = [spec("C0001", "card_processor", terms_days=5, orders_per_month=8),
            spec("C0002", "intl_wire", terms_days=5, orders_per_month=8)]
    extra = spec("C0003", "multi_invoice_ach", terms_days=5, orders_per_month=12)
    small = simulate(tmp_path, base, days=20, db="small.db")
    large = simulate(tmp_path, [*base, extra], days=20, db="large.db")
    assert large.payments("C0003")  # the newcomer did act
    for cid in ("C0001", "C0002"):
        history = _own_history(small, cid)
        assert any(h[0] == "payment_sent" for h in history)
        assert history == _own_history(large, cid)


def test_the_same_seed_gives_the_same_log(tmp_path: Path) -> None:
    customers = [spec("C0001", "pays_twice", terms_days=5, orders_per_month=8),
                 spec("C0002", "multi_invoice_ach", terms_days=5, orders_per_month=8),
                 spec("C0003", "wrong_reference", terms_days=5, orders_per_month=8)]
    injections = [(date(2026, 3, 10), "duplicate_bank_line", {}),
                  (date(2026, 3, 12), "returned_item", {})]
    a = simulate(tmp_path, customers, days=15, db="a.db", injections=injections)
    b = simulate(tmp_path, customers, days=15, db="b.db", injections=injections)
    other = simulate(tmp_path, customers, days=15, db="c.db", injections=injections, seed=8)
    assert a.ledger.head_hash == b.ledger.head_hash
    assert a.ledger.head_hash != other.ledger.head_hash
    assert len(a.payments()) >= 3
