"""Any sequence of purchasing commands keeps the books consistent (hypothesis state machine).

Purchase orders, goods receipts (some beyond what was ordered: refused), matched bills at
prices around the PO's and quantities around what was received (some held), approvals,
payments (a held bill's refused), releases by the controller (a clerk's refused). The
machine keeps its own model of every PO line (received, billed), of GRNI and of the holds,
independent of ``Books`` and of the projections. After every step: the trial balance sums
to zero, every control account ties, GL 2050 equals the model's and the query's accrual,
the holds are the model's. At the end: ``rebuild()`` reproduces the live tables and
``verify_books`` finds nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from erp import commands as c
from erp import queries as q
from erp.errors import CommandRejected
from erp.ledger import Ledger
from erp.verification import verify_books
from tests.erp.helpers import BANK, CLERK, CONTROLLER, DAY
from tests.erp.test_purchasing import TOLERANCES, set_up

PRICE_BP = TOLERANCES.match_price_tolerance_bp or 0
QTY_BP = TOLERANCES.match_quantity_tolerance_bp or 0


@dataclass
class _Line:
    ordered: int
    price: int
    received: int = 0
    billed: int = 0


@dataclass
class _Model:
    orders: dict[str, tuple[str, list[_Line]]] = field(default_factory=dict)
    bills: dict[str, tuple[str, int]] = field(default_factory=dict)
    """bill -> (vendor, open amount)"""
    held: set[str] = field(default_factory=set)
    approved: set[str] = field(default_factory=set)

    @property
    def grni(self) -> int:
        return sum((x.received - x.billed) * x.price for _, lines in self.orders.values()
                   for x in lines)


class PurchasingMachine(RuleBasedStateMachine):
    """Drives a real ledger on an SQLite file through purchasing commands."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="erp-purchasing-"))
        self.ledger = Ledger.open(str(self.dir / "books.db"), create=True)
        self.model = _Model()
        self.bills_entered = 0

    @initialize()
    def company(self) -> None:
        set_up(self.ledger)

    @rule(vendor=st.sampled_from(["V1", "V2"]),
          lines=st.lists(st.tuples(st.integers(1, 20), st.integers(100, 50_000)), min_size=1,
                         max_size=3))
    def issue_po(self, vendor: str, lines: list[tuple[int, int]]) -> None:
        done = self.ledger.execute(c.IssuePurchaseOrder(
            vendor_id=vendor, order_date=DAY, lines=tuple(
                c.PurchaseOrderLineIn(item=f"I{n}", quantity=k, unit_price=p)
                for n, (k, p) in enumerate(lines))), **CLERK)
        po = done[0].stream.removeprefix("purchase-order:")
        self.model.orders[po] = (vendor, [_Line(k, p) for k, p in lines])

    @precondition(lambda self: self.model.orders)
    @rule(data=st.data())
    def receive(self, data: st.DataObject) -> None:
        po = data.draw(st.sampled_from(sorted(self.model.orders)))
        lines = self.model.orders[po][1]
        n = data.draw(st.integers(1, len(lines)))
        line = lines[n - 1]
        qty = data.draw(st.integers(1, line.ordered + 2))
        cmd = c.RecordGoodsReceipt(po_id=po, entry_date=DAY,
                                   lines=(c.GoodsReceiptLineIn(line=n, quantity=qty),))
        if qty > line.ordered - line.received:
            try:
                self.ledger.execute(cmd, **CLERK)
            except CommandRejected as e:
                assert e.code == "over_receipt", e.message
                return
            raise AssertionError("an over-receipt was accepted")
        self.ledger.execute(cmd, **CLERK)
        line.received += qty

    @precondition(lambda self: self.model.orders)
    @rule(data=st.data())
    def enter_bill(self, data: st.DataObject) -> None:
        po = data.draw(st.sampled_from(sorted(self.model.orders)))
        vendor, lines = self.model.orders[po]
        n = data.draw(st.integers(1, len(lines)))
        line = lines[n - 1]
        qty = data.draw(st.integers(1, max(1, line.received - line.billed + 2)))
        price = line.price + data.draw(st.sampled_from([0, 0, -1, 1, line.price // 50,
                                                        line.price // 50 + 1, line.price // 10]))
        self.bills_entered += 1
        done = self.ledger.execute(c.EnterMatchedBill(
            po_id=po, vendor_invoice_number=f"N-{self.bills_entered}", entry_date=DAY,
            lines=(c.MatchedBillLineIn(line=n, quantity=qty, unit_price=price),)), **CLERK)
        bid = done[0].stream.removeprefix("bill:")
        held = (price * 10_000 > line.price * (10_000 + PRICE_BP)
                or (line.billed + qty) * 10_000 > line.received * (10_000 + QTY_BP))
        assert (done[-1].type == "bill_held") == held, (price, line, qty)
        line.billed += qty
        self.model.bills[bid] = (vendor, qty * price)
        if held:
            self.model.held.add(bid)

    @precondition(lambda self: set(self.model.bills) - self.model.approved)
    @rule(data=st.data())
    def approve(self, data: st.DataObject) -> None:
        bid = data.draw(st.sampled_from(sorted(set(self.model.bills) - self.model.approved)))
        self.ledger.execute(c.ApproveBill(bill_id=bid), **CLERK)
        self.model.approved.add(bid)

    @precondition(lambda self: any(self.model.bills[b][1] > 0 for b in self.model.approved))
    @rule(data=st.data())
    def pay(self, data: st.DataObject) -> None:
        bid = data.draw(st.sampled_from(sorted(b for b in self.model.approved
                                               if self.model.bills[b][1] > 0)))
        vendor, open_ = self.model.bills[bid]
        cmd = c.PayVendor(vendor_id=vendor, bank_account_id=BANK,
                          applications=(c.BillPayment(bill_id=bid, amount=open_),))
        if bid in self.model.held:
            try:
                self.ledger.execute(cmd, **CLERK)
            except CommandRejected as e:
                assert e.code == "bill_on_hold", e.message
                return
            raise AssertionError("a held bill was paid")
        self.ledger.execute(cmd, **CLERK)
        self.model.bills[bid] = (vendor, 0)

    @precondition(lambda self: self.model.held)
    @rule(data=st.data(), as_controller=st.booleans())
    def release(self, data: st.DataObject, as_controller: bool) -> None:
        bid = data.draw(st.sampled_from(sorted(self.model.held)))
        cmd = c.ReleaseBillHold(bill_id=bid, reason="agreed with purchasing")
        if not as_controller:
            try:
                self.ledger.execute(cmd, **CLERK)
            except CommandRejected as e:
                assert e.code == "forbidden_for_role", e.message
                return
            raise AssertionError("a clerk released a hold")
        self.ledger.execute(cmd, **CONTROLLER)
        self.model.held.discard(bid)

    @invariant()
    def books_are_consistent(self) -> None:
        if not hasattr(self, "model"):
            return
        store = self.ledger.store
        assert sum(r.debit - r.credit for r in q.trial_balance(store)) == 0
        assert not [t for t in q.control_ties(store) if t.difference]
        assert -q.account_balance(store, "2050") == q.grni_open(store) == self.model.grni
        held = {d["doc_id"] for d in q.documents(store, kind="bill_hold", status="held")}
        assert held == self.model.held
        assert {b for b in self.ledger.books.purchasing.holds
                if self.ledger.books.purchasing.on_hold(b)} == self.model.held

    def teardown(self) -> None:
        try:
            live = q.table_snapshot(self.ledger.store)
            self.ledger.rebuild()
            assert q.table_snapshot(self.ledger.store) == live, "rebuild() changed a table"
            report = verify_books(self.ledger.store)
            assert report.ok, report.message()
        finally:
            self.ledger.close()
            shutil.rmtree(self.dir, ignore_errors=True)


def test_any_purchasing_sequence_keeps_the_books_consistent() -> None:
    run_state_machine_as_test(PurchasingMachine, settings=settings(
        max_examples=25, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow]))
