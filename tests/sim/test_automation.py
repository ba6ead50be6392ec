"""The company's automation: shipping, invoicing, dispatch, the bank feed, statements."""

from __future__ import annotations

import csv
import io
from collections.abc import Generator
from datetime import date
from pathlib import Path
from typing import Any

from erp import queries as q
from erp.events import Policies
from erp.ledger import Ledger
from sim.automation import (
    Automation,
    CompanySetup,
    CustomerMaster,
    OpeningInvoice,
    Options,
    set_up_books,
)
from sim.calendar import BusinessCalendar
from sim.engine import Engine, Phase
from sim.rng import Streams
from sim.world_events import BankLinePosted, OrderLine, OrderPlaced, decode_world_event

START = date(2026, 4, 27)  # the month ends on the fourth business day


def company(tmp_path: Path, options: Options, *, unsent: set[str] | None = None) -> Engine:
    ledger = Ledger.open(tmp_path / "b.db", create=True)
    eng = Engine(BusinessCalendar.from_business_days(START, 6), ledger, Streams(1))
    set_up_books(eng, CompanySetup(
        "Co", "standard-services", Policies(), 1_000_000,
        [CustomerMaster("C1", "Acme Corp"), CustomerMaster("C2", "Globex")], [],
        [OpeningInvoice("INV-000001", "C1", date(2026, 4, 1), 50_000),
         OpeningInvoice("INV-000002", "C2", date(2026, 4, 2), 20_000)]))
    eng.world.reserve("INV", 2)
    Automation(eng, options, unsent_invoices=unsent)
    return eng


def world(eng: Engine, type_: str) -> list[Any]:
    return [(e.actor, decode_world_event(e.type, e.payload))
            for e in eng.ledger.store.read(realm="world", types=[type_])]


def order(eng: Engine, on: date) -> Generator[Any, Any, None]:
    yield eng.until(on, Phase.COUNTERPARTIES)
    eng.world.emit(OrderPlaced(customer_id="C2", order_id="SO-1", lines=(
        OrderLine(description="Audit", quantity=3, unit_price=12_500),)), "counterparty:C2")


def test_orders_are_shipped_then_invoiced_and_sent(tmp_path: Path) -> None:
    eng = company(tmp_path, Options())
    eng.process(order(eng, START))
    eng.finish()
    assert [(a, e.order_id) for a, e in world(eng, "order_shipped")] == [
        ("system:shipping", "SO-1")]
    inv = eng.ledger.books.invoices["INV-000003"]
    assert (inv.customer_id, inv.total) == ("C2", 37_500)
    sent = {e.invoice_id for _, e in world(eng, "invoice_received")}
    assert sent == {"INV-000001", "INV-000002", "INV-000003"}


def test_without_auto_invoicing_the_clerk_gets_the_shipped_orders(tmp_path: Path) -> None:
    eng = company(tmp_path, Options(auto_invoicing=False))
    eng.process(order(eng, START))
    eng.finish()
    assert "INV-000003" not in eng.ledger.books.invoices
    [(_, doc)] = world(eng, "document_delivered")
    assert doc.filename.endswith("shipped-orders-2026-04-27.csv")
    rows = list(csv.DictReader(io.StringIO(doc.content)))
    assert rows == [{"order_id": "SO-1", "customer_id": "C2", "description": "Audit",
                     "quantity": "3", "unit_price": "125.00"}]


def test_an_unsent_invoice_is_not_dispatched(tmp_path: Path) -> None:
    eng = company(tmp_path, Options(), unsent={"INV-000002"})
    eng.finish()
    assert {e.invoice_id for _, e in world(eng, "invoice_received")} == {"INV-000001"}


def test_month_end_statements_list_open_invoices(tmp_path: Path) -> None:
    eng = company(tmp_path, Options())
    eng.finish()
    statements = world(eng, "statement_sent")
    assert [(e.customer_id, e.as_of, e.balance) for _, e in statements] == [
        ("C1", date(2026, 4, 30), 50_000), ("C2", date(2026, 4, 30), 20_000)]
    assert {a for a, _ in statements} == {"system:statements"}
    (tmp_path / "off").mkdir()
    quiet = company(tmp_path / "off", Options(month_end_statements=False))
    quiet.finish()
    assert world(quiet, "statement_sent") == []


def test_the_bank_feed_records_and_matches_deposits(tmp_path: Path) -> None:
    eng = company(tmp_path, Options())

    def bank() -> Generator[Any, Any, None]:
        yield eng.until(START, Phase.COUNTERPARTIES)
        for n, (payer, amount) in enumerate((("Acme Corp", 50_000), ("ACME CORP", 100),
                                             ("Unknown Ltd", 700)), 1):
            eng.world.emit(BankLinePosted(bank_account_id="B-OPER", line_id=f"BL-{n}",
                                          posted_on=START, amount=amount, description="ACH",
                                          reference="x", counterparty=payer, kind="deposit"),
                           "counterparty:bank")
        eng.world.emit(BankLinePosted(bank_account_id="B-OPER", line_id="BL-4",
                                      posted_on=START, amount=-1_500, description="FEE",
                                      reference="", counterparty="", kind="fee"),
                       "counterparty:bank")

    eng.process(bank())
    eng.finish()
    receipts = {i.doc_id: i.party for i in q.open_items(eng.ledger.store, "unapplied_cash")}
    assert receipts == {"RCT-BL-1": "C1", "RCT-BL-2": "C1", "RCT-BL-3": None}
    lines = {x["line_id"]: x["status"] for x in q.statement_lines(eng.ledger.store)}
    assert lines == {"BL-1": "matched", "BL-2": "matched", "BL-3": "matched",
                     "BL-4": "unmatched"}
    assert all(t.difference == 0 for t in q.control_ties(eng.ledger.store))
