"""three-way-match: the reference and oracle solvers, run as attempts, against the world's truth;
the purchasing world's behaviours; the purchasing checks, passing and failing."""

from __future__ import annotations

import csv
import inspect
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from checks.context import CheckContext
from checks.registry import CheckResult, parse_checks
from checks.verdict import run_check
from erp import commands as c
from erp import queries as q
from erp.ledger import Ledger
from scenarios.agents import load_solver
from scenarios.loader import LoadedScenario, library_dir
from sim.pdf import render_text_pdf
from sim.world_events import (
    BillIssued,
    GoodsShipped,
    InjectionPlanted,
    PurchaseOrderReceived,
)
from tests.scenarios.library.attempts import (
    Execute,
    LibraryAttempt,
    attempt_fixtures,
    routed,
    run_library_attempt,
)

solver = load_solver(library_dir() / "three-way-match" / "solver.py")

SEED = 1
PAYMENT_DAY = date(2026, 7, 22)


class Attempt(LibraryAttempt):
    """A finished three-way-match attempt, with its holds file and the checks' view."""

    def holds_file(self) -> list[dict[str, str]]:
        with (self.result.out / "outputs" / "holds.csv").open(encoding="utf-8",
                                                              newline="") as f:
            return list(csv.DictReader(f))

    def context(self) -> CheckContext:
        """The checks' view: the books and the last turn's workspace (its ``out/``)."""
        return CheckContext(store=self.ledger.store,
                            workspace=self.result.out / "turns" / "04" / "workspace",
                            end=PAYMENT_DAY)


scenario, reference, oracle = attempt_fixtures("three-way-match", SEED, Attempt)


def attempt(loaded: LoadedScenario, agent: str, out: Path, seed: int = SEED) -> Attempt:
    return run_library_attempt(loaded, agent, out, seed, Attempt)


def _check(attempt: Attempt, spec: dict[str, Any]) -> CheckResult:
    [parsed] = parse_checks([spec])
    [result] = run_check(parsed, 0, attempt.context())
    return result


# --- the attempts ---


@pytest.mark.parametrize("name", ["reference", "oracle"])
def test_the_attempt_is_accepted_and_the_books_are_whole(
        name: str, request: pytest.FixtureRequest) -> None:
    run: Attempt = request.getfixturevalue(name)
    assert run.result.summary["verdict"]["accepted"], run.result.summary["verdict"]
    store = run.ledger.store
    assert sum(r.debit - r.credit for r in q.trial_balance(store)) == 0
    assert not [t for t in q.control_ties(store) if t.difference]
    assert -q.account_balance(store, "2050") == q.grni_open(store)


def test_every_requisition_is_one_po_the_vendor_received(reference: Attempt) -> None:
    [planted] = [w for w in reference.truth(InjectionPlanted)
                 if w.kind == "purchase_requisitions"]
    supplies = planted.detail["supplies"]
    orders = reference.docs("purchase_order")
    assert len(orders) == len(supplies) > 0
    received = reference.truth(PurchaseOrderReceived)
    assert sorted(r.po_id for r in received) == sorted(d["doc_id"] for d in orders)
    assert {r.received_on for r in received} == {date(2026, 7, 2)}


def test_goods_received_are_what_the_vendors_shipped(reference: Attempt) -> None:
    shipped: dict[tuple[str, int], int] = {}
    for s in reference.truth(GoodsShipped):
        for x in s.lines:
            shipped[(s.po_id, x.line)] = shipped.get((s.po_id, x.line), 0) + x.quantity
    lines = q.purchase_order_lines(reference.ledger.store)
    assert {(r.po_id, r.line): r.received for r in lines if r.received} == shipped


def test_behaviours_give_their_holds_and_the_releases(reference: Attempt) -> None:
    [planted] = [w for w in reference.truth(InjectionPlanted)
                 if w.kind == "purchase_requisitions"]
    behaviour = {s["vendor_id"]: s["behaviour"] for s in planted.detail["supplies"]}
    holds = {d["party"]: d["status"] for d in reference.docs("bill_hold")}
    for vendor, kind in behaviour.items():
        want = {"po_clean": None, "po_price_within": None, "po_price_over": "held",
                "po_short_ships": "released"}[kind]
        assert holds.get(vendor) == want, (vendor, kind, holds.get(vendor))
    assert {r["vendor"] for r in reference.holds_file()} == {
        v for v, k in behaviour.items() if k == "po_price_over"}
    # a price within tolerance posts its variance to 5900
    if "po_price_within" in behaviour.values():
        assert q.account_balance(reference.ledger.store, "5900") > 0


def test_every_bill_not_on_hold_is_paid_in_one_run(reference: Attempt) -> None:
    held = {d["doc_id"] for d in reference.docs("bill_hold") if d["status"] == "held"}
    for b in reference.docs("bill"):
        assert (b["status"] == "paid") == (b["doc_id"] not in held), b
    assert len(reference.docs("payment_run")) == 1
    assert len(reference.truth(BillIssued)) == len(reference.docs("bill"))


def test_the_reference_leaves_the_same_books_as_the_oracle(reference: Attempt,
                                                          oracle: Attempt) -> None:
    assert reference.result.summary["final_hash"] == oracle.result.summary["final_hash"]


def test_the_null_agent_issues_nothing_and_is_rejected(scenario: LoadedScenario,
                                                       tmp_path: Path) -> None:
    run = attempt(scenario, "null", tmp_path / "a")
    try:
        assert not run.result.summary["verdict"]["accepted"]
        assert run.docs("purchase_order") == []
        assert run.truth(BillIssued) == []  # no PO: the vendors ship and bill nothing
    finally:
        run.ledger.close()


def test_the_reference_never_reads_the_world() -> None:
    oracle_only = {"oracle"}
    members = [obj for name, obj in vars(solver).items()
               if (inspect.isfunction(obj) or inspect.isclass(obj))
               and obj.__module__ == solver.__name__ and name not in oracle_only]
    assert solver.reference in members
    for obj in members:
        source = inspect.getsource(obj)
        for word in ("world", "truth", "store.read", "counterparties", "engine"):
            assert word not in source.lower(), f"{obj.__name__} mentions {word!r}"


# --- reading invoices ---

INVOICE = """Acme Supply LLC
12 Main St
Springfield, IL 62701
Phone +1 (217) 555-0134 | billing@acme-supply.example

INVOICE
Invoice number: INV-2026-0042
Invoice date: 2026-07-09
Due date: 2026-08-08
Your PO: PO-000003

PO line  Item       Description                    Qty       Unit      Amount
1        COPY-12    Copy paper (cases)              12      41.99      503.88
2        TONER-40   Printer toner                    3   1,020.00    3,060.00

Total USD 3,563.88
"""


def test_an_invoice_reads_the_same_as_text_pdf_or_email(tmp_path: Path) -> None:
    want = solver.read_po_invoice(INVOICE)
    assert want is not None
    assert (want.vendor, want.number, want.po_id, want.issued_on, want.due_on) == (
        "Acme Supply LLC", "INV-2026-0042", "PO-000003", date(2026, 7, 9), date(2026, 8, 8))
    assert want.lines == ((1, 12, 4_199), (2, 3, 102_000))
    pdf = tmp_path / "DOC-000001-invoice.pdf"
    pdf.write_bytes(render_text_pdf(title="Invoice", text=INVOICE))
    assert solver.read_po_invoice(solver._pdf_text(pdf) or "") == want
    assert solver.read_po_invoice("Invoice number: 1\nno table here") is None


# --- the purchasing checks, failing -------------------------------------------------------------


def _copy_books(run: Attempt, tmp_path: Path) -> Ledger:
    shutil.copy(run.result.out / "books.db", tmp_path / "books.db")
    return Ledger.open(tmp_path / "books.db")


def _with(run: Attempt, ledger: Ledger) -> Attempt:
    return Attempt(run.result, ledger, run.world)


def test_a_po_off_its_requisition_fails(reference: Attempt, tmp_path: Path) -> None:
    ok = _check(reference, {"type": "purchase_orders_as_requisitioned", "name": "p"})
    assert ok.passed, ok.detail
    ledger = _copy_books(reference, tmp_path)
    try:
        vendor = reference.docs("purchase_order")[0]["party"]
        ledger.execute(c.IssuePurchaseOrder(vendor_id=vendor, order_date=PAYMENT_DAY, lines=(
            c.PurchaseOrderLineIn(item="EXTRA-1", quantity=1, unit_price="9.99"),)),
            actor="agent:turn-4", role="controller", business_date=PAYMENT_DAY)
        bad = _check(_with(reference, ledger), {"type": "purchase_orders_as_requisitioned",
                                                "name": "p"})
        assert not bad.passed and "matches no requisition (lines EXTRA-1 1 x 9.99)" in bad.detail
    finally:
        ledger.close()


def test_a_receipt_off_the_shipment_or_a_wrong_hold_fails(reference: Attempt,
                                                         tmp_path: Path) -> None:
    spec = {"type": "holds_as_matched", "price_tolerance_bp": 200, "quantity_tolerance_bp": 0,
            "name": "h"}
    assert _check(reference, spec).passed
    assert _check(reference, {"type": "receipts_as_shipped", "name": "r"}).passed
    ledger = _copy_books(reference, tmp_path)
    try:
        held = [d["doc_id"] for d in q.documents(ledger.store, kind="bill_hold", status="held")]
        if not held:
            pytest.skip("this seed has no standing hold")
        ledger.execute(c.ReleaseBillHold(bill_id=held[0], reason="waved through"),
                       actor="agent:turn-4", role="controller", business_date=PAYMENT_DAY)
        bad = _check(_with(reference, ledger), spec)
        assert not bad.passed and f"{held[0]} (" in bad.detail and "is not on hold but should" \
            in bad.detail
        listed = _check(_with(reference, ledger), {"type": "holds_listed",
                                                   "path": "out/holds.csv", "name": "l"})
        assert not listed.passed and "is not a bill on hold" in listed.detail
    finally:
        ledger.close()


# --- one-mistake clerks: the reference with one rule of the prompt broken ---


class _Twist:
    """The reference with one mistake the prompt's rules forbid."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.first_receipt: dict[str, date] = {}
        self.held: list[c.Command] = []

    def run_turn(self, desk: Any) -> None:
        while self.held:  # caught up at the next turn, dated as its report
            desk.execute(self.held.pop())

        def twisted(real: Execute, cmd: c.Command) -> Any:
            if isinstance(cmd, c.IssuePurchaseOrder) and self.name == "po-a-day-early":
                cmd = cmd.model_copy(update={"order_date": date.fromordinal(
                    cmd.order_date.toordinal() - 1)})
            if isinstance(cmd, c.IssuePurchaseOrder) and self.name == "po-on-6100":
                cmd = cmd.model_copy(update={"lines": tuple(
                    x.model_copy(update={"account": "6100"}) for x in cmd.lines)})
            if isinstance(cmd, c.RecordGoodsReceipt) and self.name == "rest-dated-as-first":
                if cmd.po_id in self.first_receipt:
                    cmd = cmd.model_copy(update={"entry_date": self.first_receipt[cmd.po_id]})
                self.first_receipt.setdefault(cmd.po_id, cmd.entry_date)
            if isinstance(cmd, c.RecordGoodsReceipt) and self.name == "receipt-a-turn-late" \
                    and desk.turn == 2 and not self.first_receipt:
                self.first_receipt[cmd.po_id] = cmd.entry_date
                self.held.append(cmd)
                return None
            return real(cmd)
        with routed(desk, twisted):
            solver.reference(desk)


@pytest.fixture(scope="module")
def twisted(scenario: LoadedScenario, tmp_path_factory: pytest.TempPathFactory) -> dict[
        str, set[str]]:
    from runs.attempt import run_attempt

    out = {}
    for name in ("po-a-day-early", "po-on-6100", "rest-dated-as-first", "receipt-a-turn-late"):
        res = run_attempt(scenario, SEED, name, tmp_path_factory.mktemp(name) / "a",
                          agent=_Twist(name))
        out[name] = set(res.summary["verdict"]["failed"])
    return out


def test_a_po_not_dated_the_day_its_requisition_arrived_is_refused(
        twisted: dict[str, set[str]]) -> None:
    assert twisted["po-a-day-early"] == {"pos-as-requisitioned"}


def test_a_po_line_off_the_books_default_account_is_refused(
        twisted: dict[str, set[str]]) -> None:
    assert twisted["po-on-6100"] == {"po-lines-on-default-account"}


def test_the_rest_of_a_short_shipment_received_on_the_first_ones_day_is_refused(
        twisted: dict[str, set[str]]) -> None:
    assert twisted["rest-dated-as-first"] == {"receipts-as-shipped"}


def test_a_receipt_recorded_a_turn_late_and_dated_back_is_refused(
        twisted: dict[str, set[str]]) -> None:
    assert twisted["receipt-a-turn-late"] == {"receipts-as-shipped"}
