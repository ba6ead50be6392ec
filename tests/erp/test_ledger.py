"""The ledger as the single writer: world-realm events, catch-up, upcasting, batches."""

from __future__ import annotations

from datetime import date

import orjson
import pytest

from erp import commands as c
from erp import events as ev
from erp import queries as q
from erp.errors import StoreError
from erp.ledger import Ledger, Submission
from erp.store import EventStore
from tests.erp.helpers import BANK, CLERK, DAY, set_up_company


def test_world_events_share_the_chain_but_post_nothing(ledger: Ledger) -> None:
    set_up_company(ledger)
    before = q.table_snapshot(ledger.store)
    stored = ledger.record("world", [
        ("world:customer:C1", "payment_sent", orjson.dumps({"amount": 1250, "meant_for": "INV-1"})
         .decode()),
        ("world:customer:C1", "payment_sent", '{"amount": 99}'),
    ], actor="counterparty:C1", business_date=DAY, sim_time=3.5)
    assert [e.version for e in stored] == [1, 2]
    assert {e.realm for e in stored} == {"world"}
    assert q.table_snapshot(ledger.store) == before
    assert ledger.verify().ok
    world = list(ledger.store.read(realm="world"))
    assert [e.data["amount"] for e in world] == [1250, 99]
    assert world[0].sim_time == 3.5
    with pytest.raises(TypeError, match="realm 'world'"):
        _ = world[0].event
    # The books still work after, and the chain links across realms.
    ledger.execute(c.RecordReceipt(customer_id="C1", bank_account_id=BANK, entry_date=DAY,
                                   amount="12.50"), **CLERK)
    assert ledger.verify().ok


def test_erp_events_are_written_only_by_commands(ledger: Ledger) -> None:
    with pytest.raises(ValueError, match="only by commands"):
        ledger.record("erp", [("x:1", "t", "{}")], actor="x", business_date=DAY)
    with pytest.raises(ValueError, match="a world-realm stream must start with 'world:'"):
        ledger.record("world", [("customer:C1", "t", "{}")], actor="x", business_date=DAY)
    assert ledger.store.count() == 0


def test_a_second_writer_catches_up_before_deciding(store_target: tuple[str, str | None]
                                                    ) -> None:
    target, schema = store_target
    a = Ledger.open(target, schema=schema, create=True)
    b = Ledger.open(target, schema=schema)
    try:
        set_up_company(a)
        a.record("world", [("world:bank:B", "line_posted", "{}")], actor="counterparty:bank",
                 business_date=DAY)
        # b has not seen the customer yet; it catches up inside its write transaction.
        b.execute(c.IssueInvoice(invoice_id="INV-1", customer_id="C1", entry_date=DAY,
                                 lines=(c.InvoiceLineIn(description="x", unit_price="100.00"),)),
                  **CLERK)
        a.execute(c.RecordReceipt(receipt_id="R-1", customer_id="C1", bank_account_id=BANK,
                                  entry_date=DAY, amount="100.00"), **CLERK)
        a.execute(c.ApplyReceipt(receipt_id="R-1", invoice_id="INV-1", amount="100.00"),
                  **CLERK)
        assert a.head_hash == a.store.head()[1]
        b.execute(c.RegisterCustomer(customer_id="C9", name="Late"), **CLERK)
        assert b.books.invoices["INV-1"].open == 0
        assert b.books.versions["world:bank:B"] == 1
        assert a.verify().ok
        assert q.document(a.store, "invoice", "INV-1")["status"] == "paid"
    finally:
        a.close()
        b.close()


def test_reopening_restores_the_books(store_target: tuple[str, str | None]) -> None:
    target, schema = store_target
    with Ledger.open(target, schema=schema, create=True) as first:
        set_up_company(first)
        first.execute(c.IssueInvoice(invoice_id="INV-1", customer_id="C1", entry_date=DAY,
                                     lines=(c.InvoiceLineIn(description="x",
                                                            unit_price="40.00"),)), **CLERK)
        head = first.head_hash
    with Ledger.open(target, schema=schema) as again:
        assert again.head_hash == head
        assert again.books.invoices["INV-1"].open == 4000
        assert again.books.customers["C1"].open_ar == 4000


def test_upcaster_turns_an_old_payload_into_the_current_shape(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    old = '{"type": "bill_approved", "bill": "BILL-1", "vendor_id": "V1"}'

    def rename_bill(data: dict) -> dict:  # version 0 called the field "bill"
        data = dict(data)
        data["bill_id"] = data.pop("bill")
        return data

    monkeypatch.setitem(ev.UPCASTERS, ("bill_approved", 0), rename_bill)
    e = ev.decode_event("bill_approved", 0, old)
    assert e == ev.BillApproved(bill_id="BILL-1", vendor_id="V1")
    with pytest.raises(KeyError, match="no upcaster for 'invoice_issued' from schema_version 0"):
        ev.decode_event("invoice_issued", 0, "{}")
    with pytest.raises(KeyError, match="unknown event type 'no_such_event'"):
        ev.decode_event("no_such_event", 1, "{}")


def test_every_event_class_is_in_the_decoding_union() -> None:
    assert len(ev.EVENT_CLASSES) == len(ev.Event.__subclasses__())
    for type_, cls in ev.EVENT_CLASSES.items():
        assert cls.model_fields["type"].default == type_


def test_a_batch_is_one_transaction(ledger: Ledger) -> None:
    set_up_company(ledger)
    n = ledger.store.count()
    stored = ledger.execute_batch([
        Submission(c.RegisterCustomer(customer_id="C7", name="Seven"), "agent:t", "clerk", DAY),
        Submission(c.IssueInvoice(invoice_id="INV-7", customer_id="C7", entry_date=DAY,
                                  lines=(c.InvoiceLineIn(description="x", unit_price="1.00"),)),
                   "agent:t", "clerk", DAY),
    ])
    assert [e.position for e in stored] == [n + 1, n + 2]
    assert stored[0].causation_id == f"cmd-{n + 1}" and stored[1].causation_id == f"cmd-{n + 2}"
    assert {e.command for e in stored} == {"RegisterCustomer", "IssueInvoice"}
    trail = q.audit_trail(ledger.store, actor="agent:t")
    assert [(r["command"], r["role"]) for r in trail] == [("RegisterCustomer", "clerk"),
                                                          ("IssueInvoice", "clerk")]
    assert q.audit_trail(ledger.store, as_of=date(2026, 3, 1), actor="agent:t") == []


def test_an_unsupported_url_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StoreError, match="mysql://x/y: unsupported store URL"):
        EventStore.open("mysql://x/y")
    s = EventStore.open(f"sqlite:///{tmp_path}/u.db", create=True)
    assert s.count() == 0


def test_an_integer_sim_time_verifies(ledger: Ledger) -> None:
    # SimPy's clock starts at the int 0; the store keeps 0.0. The hash must agree.
    ledger.execute(c.SetUpCompany(name="Co"), actor="system:setup", role="system",
                   business_date=DAY, sim_time=0)
    ledger.record("world", [("world:x:1", "t", "{}")], actor="x", business_date=DAY,
                  sim_time=2)
    assert ledger.verify().ok


def test_a_ledger_that_forgot_its_books_writes_nothing_more(ledger: Ledger) -> None:
    """``forget_state`` lets the books' working state go (an attempt's end): the store
    still reads and verifies, and a command is refused, nothing written."""
    set_up_company(ledger)
    head = ledger.store.head()
    ledger.forget_state()
    assert not ledger.books.customers and not ledger.books.versions
    assert ledger.store.verify().ok and ledger.store.head() == head
    with pytest.raises(RuntimeError, match="let go of its books"):
        ledger.execute(c.RegisterCustomer(customer_id="C-LATE", name="Late Ltd"),
                       actor=CLERK, role="clerk", business_date=DAY)
    with pytest.raises(RuntimeError, match="let go of its books"):
        ledger.record("world", [("world:x", "t", "{}")], actor="x", business_date=DAY)
    assert ledger.store.head() == head
