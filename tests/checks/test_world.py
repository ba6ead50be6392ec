"""The world's records folded from the log agree with the counterparties' own books.

A short real simulation (customers, vendors and the bank as processes on the engine,
with injections) is run once for the module; the fold of its log must give, to the
cent, what each actor keeps in memory: a customer's invoices and what it paid on each,
a vendor's book and its balance, the bank's lines and balance; and the truth behind
them (a line the bank posted twice, a repeat payment, a resent bill, a fraudulent bank
change).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from checks.context import CheckContext
from checks.world import (
    WorldView,
    bank_balances,
    customer_balances,
    fold_world,
    vendor_balances,
    world_view,
)
from counterparties.bank import Bank
from counterparties.injections import INJECTIONS
from counterparties.population import Population
from counterparties.profiles import CUSTOMER_PROFILES, VENDOR_PROFILES, resolve_profile
from counterparties.specs import CustomerSpec, PlannedInjection, VendorSpec
from erp import commands as c
from erp.events import BankDetails, Policies
from erp.ledger import Ledger
from sim.automation import (
    BANK_ACCOUNT,
    Automation,
    CompanySetup,
    CustomerMaster,
    OpeningBill,
    OpeningInvoice,
    Options,
    VendorMaster,
    set_up_books,
)
from sim.calendar import BusinessCalendar
from sim.engine import Engine, Phase
from sim.rng import Streams

START = date(2026, 3, 2)
DAYS = 15
PAY_DAY = date(2026, 3, 12)


def customer(cid: str, behaviour: str, **overrides: Any) -> CustomerSpec:
    """A customer that orders nothing and pays its opening invoices its own way."""
    profile = resolve_profile(CUSTOMER_PROFILES, behaviour,  # type: ignore[arg-type]
                              {"orders_per_month": 0, **overrides})
    return CustomerSpec(customer_id=cid, name=f"Customer {cid} Inc", behaviour=behaviour,
                        profile=profile, terms_days=15)  # type: ignore[arg-type]


def vendor(vid: str, behaviour: str = "reliable", **overrides: Any) -> VendorSpec:
    """A vendor billing a few times a week."""
    profile = resolve_profile(VENDOR_PROFILES, behaviour, {"bills_per_month": 8, **overrides})
    name = f"Vendor {vid} LLC"
    return VendorSpec(vendor_id=vid, name=name, behaviour=behaviour,
                      profile=profile,  # type: ignore[arg-type]
                      bank=BankDetails(account_name=name, routing="021000021",
                                       account_number=f"44000{vid[1:]}1234"),
                      email=f"billing@vendor{vid.lower()}.example")


@dataclass
class Sim:
    """What the run left: the actors (with their in-memory books) and the store."""

    population: Population
    ledger: Ledger
    calendar: BusinessCalendar

    @property
    def bank(self) -> Bank:
        """The bank actor."""
        assert isinstance(self.population.bank, Bank)
        return self.population.bank


def _clerk(engine: Engine) -> Any:
    """On PAY_DAY, enter every original bill delivered so far and pay them all."""
    def turn(day: date) -> None:
        if day != PAY_DAY:
            return
        world = fold_world(engine.ledger.store)
        ids = []
        for v in world.vendors.values():
            for b in v.bills.values():
                if b.kind != "original" or b.opening or not b.delivered:
                    continue
                bill_id = f"B-{b.bill_ref}"
                engine.ledger.execute(c.EnterBill(
                    bill_id=bill_id, vendor_id=b.vendor_id, vendor_invoice_number=b.invoice_number,
                    entry_date=b.issued_on, lines=(c.BillLineIn(description="Bill",
                                                                amount=b.total),)),
                    actor="agent:turn-1", role="clerk", business_date=day)
                engine.ledger.execute(c.ApproveBill(bill_id=bill_id), actor="agent:turn-1",
                                      role="clerk", business_date=day)
                ids.append(bill_id)
        if ids:
            engine.ledger.execute(c.RunPayments(bank_account_id=BANK_ACCOUNT,
                                                bill_ids=tuple(sorted(ids))),
                                  actor="agent:turn-1", role="clerk", business_date=day)
    return turn


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    path: Path = tmp_path_factory.mktemp("world") / "books.db"
    ledger = Ledger.open(path, create=True)
    cal = BusinessCalendar.from_business_days(START, DAYS)
    engine = Engine(cal, ledger, Streams("checks-world"))
    customers = [customer("C1", "on_time"), customer("C2", "card_processor"),
                 customer("C3", "pays_twice"), customer("C4", "on_time"),
                 customer("C5", "late"), customer("C6", "on_time", pay_days_after_due=4)]
    vendors = [vendor("V1"), vendor("V2", "bills_twice", duplicate_rate=1.0)]
    opening = [OpeningInvoice(f"INV-{n:06d}", cid, START - timedelta(days=d), amount)
               for n, (cid, d, amount) in enumerate(
                   [("C1", 14, 120_000), ("C2", 13, 45_000), ("C3", 12, 80_000),
                    ("C4", 10, 33_333), ("C5", 3, 99_999), ("C1", 2, 10_000),
                    ("C6", 1, 77_777)], start=1)]
    bills = [OpeningBill("BILL-O00001", "V1", "OB-1", START - timedelta(days=5), 50_000)]
    set_up_books(engine, CompanySetup(
        "Northwind Services LLC", "standard-services", Policies(), 250_000_00,
        [CustomerMaster(s.customer_id, s.name, s.terms_days) for s in customers],
        [VendorMaster(v.vendor_id, v.name, v.terms_days, v.bank) for v in vendors],
        opening, bills))
    engine.world.reserve("INV", len(opening))
    population = Population(engine, "Northwind Services LLC", BANK_ACCOUNT)
    Automation(engine, Options(), unsent_invoices=population.unsent_invoices)
    planned = [PlannedInjection(on, kind, INJECTIONS[kind].params.model_validate(params), n)
               for n, (on, kind, params) in enumerate([
                   (date(2026, 3, 4), "duplicate_bank_line", {}),
                   (date(2026, 3, 9), "returned_item", {"customer": "C4"}),
                   (date(2026, 3, 10), "fraudulent_bank_change", {"vendor": "V1"})])]
    population.start(customers, vendors, planned)
    engine.daily(Phase.TURN, _clerk(engine))
    engine.finish()
    yield Sim(population, ledger, cal)
    ledger.close()


@pytest.fixture(scope="module")
def view(sim: Sim) -> WorldView:
    return fold_world(sim.ledger.store)


def test_each_customer_owes_what_its_own_books_say(sim: Sim, view: WorldView) -> None:
    assert set(view.customers) == set(sim.population.customers)
    for cid, actor in sim.population.customers.items():
        mine = view.customers[cid]
        assert set(mine.invoices) == set(actor.invoices)
        for inv_id, inv in actor.invoices.items():
            assert (mine.invoices[inv_id].amount, mine.invoices[inv_id].paid) == (inv.amount,
                                                                                  inv.paid)
            assert mine.invoices[inv_id].owed == inv.amount - inv.paid
        assert set(mine.payments) == set(actor.payments)
    assert customer_balances(view) == {
        cid: sum(i.amount - i.paid for i in a.invoices.values())
        for cid, a in sorted(sim.population.customers.items())}


def test_card_fees_repeats_and_returned_payments(view: WorldView) -> None:
    card = [p for p in view.customers["C2"].payments.values() if p.method == "card"]
    assert card and all(p.fee == p.amount - p.arrives > 0 for p in card)
    assert view.customers["C2"].invoices[card[0].allocations[0][0]].fees == card[0].fee
    repeats = view.duplicate_payments()
    assert [p.customer_id for p in repeats] == ["C3"]
    again = repeats[0]
    # The repeat reached the bank: all of it is money on account (its books do not count it).
    assert not again.in_transit and again.on_account == again.arrives
    assert view.customers["C3"].on_account == again.arrives
    returned = [p for p in view.payments.values() if p.returned]
    assert [p.customer_id for p in returned] == ["C4"]
    assert not returned[0].counted and returned[0].on_account == 0
    inv = view.customers["C4"].invoices[returned[0].allocations[0][0]]
    assert inv.paid == 0 and inv.owed == inv.amount  # owed again, as its own books say


def test_the_bank_statement_and_its_errors(sim: Sim, view: WorldView) -> None:
    assert bank_balances(view) == {BANK_ACCOUNT: sim.bank.balance()}
    assert [x.line_id for x in view.banks[BANK_ACCOUNT].lines] == [x.line_id
                                                                  for x in sim.bank.lines]
    copies = view.bank_copies()
    assert len(copies) == 1 and view.is_bank_copy(copies[0])
    assert view.payment_of_line(copies[0].line_id) is None
    original = view.payment_of_line(copies[0].duplicate_of or "")
    assert original is not None and original.line_id == copies[0].duplicate_of
    posted = {d.payment.payment_id for d in sim.bank.deposits}
    assert {p.payment_id for p in view.payments_in_transit()} == {
        p for p in view.payments if p not in posted}
    assert view.payments_in_transit(), "the run should end with a payment on its way"


def test_each_vendor_balance_is_its_own_book(sim: Sim, view: WorldView) -> None:
    assert vendor_balances(view) == {vid: v.balance
                                     for vid, v in sorted(sim.population.vendors.items())}
    v1 = view.vendors["V1"]
    assert v1.bills["BILL-O00001"].opening and v1.bills["BILL-O00001"].counted
    assert v1.received > 0 and all(p.received for p in v1.payments.values())
    resent = view.resent_bills()
    assert resent and {b.vendor_id for b in resent} == {"V2"}
    assert all(b.duplicate_of in view.vendors["V2"].bills for b in resent)
    assert all(b.delivered for b in resent)
    # A vendor's statement from its records: its book, entry for entry.
    book = sorted((e.on, e.document, e.amount) for e in sim.population.vendors["V2"].book)
    assert sorted((d, doc, a) for d, doc, _, a in view.vendors["V2"].statement()) == book
    fraud = view.fraudulent_bank_changes()
    assert [(f.vendor_id, f.genuine) for f in fraud] == [("V1", False)]


def test_as_of_a_date_and_a_position(sim: Sim, view: WorldView) -> None:
    day = date(2026, 3, 6)
    early = fold_world(sim.ledger.store, as_of=day)
    assert bank_balances(early) == {BANK_ACCOUNT: sim.bank.balance(day)}
    assert all(x.posted_on <= day for x in early.lines.values())
    assert len(early.payments) < len(view.payments)
    # A payment sent by then but posted later is in transit as of then.
    later = {p.payment_id for p in view.payments.values()
             if p.posted_on is not None and p.posted_on > day}
    assert later & {p.payment_id for p in early.payments_in_transit()} == {
        p for p in later if p in early.payments}
    pos = sim.ledger.store.head()[0] // 2
    half = fold_world(sim.ledger.store, position=pos)
    assert len(half.lines) < len(view.lines)
    ctx = CheckContext(store=sim.ledger.store, position=pos)
    assert world_view(ctx, None) is world_view(ctx, None)  # cached once per evaluation
    assert len(world_view(ctx, None).lines) == len(half.lines)


def test_the_reconciliation_of_a_real_run_itemizes_every_cent(sim: Sim) -> None:
    from checks.reconcile import reconcile

    rec = reconcile(sim.ledger.store)
    for a in rec.accounts:
        kinds = {i.kind for i in a.items}
        assert not kinds & {"residual", "gl_residual"}, a.account
        assert a.gl_difference == sum(i.difference for i in a.items if i.kind.startswith("gl_"))
        if a.external is not None:
            assert a.subledger - a.external == sum(i.difference for i in a.items
                                                   if not i.kind.startswith("gl_"))
    # Nobody applied the receipts: the customers who paid show them, unexplained.
    unapplied = {i.party for i in rec.account("2150").unexplained}
    assert unapplied and unapplied <= set(sim.population.customers) | {"(unassigned)"}
    # The clerk paid every bill delivered by PAY_DAY: the later ones are not entered.
    late = [i for i in rec.account("2000").unexplained if i.kind == "bill_not_entered"]
    assert late and all(i.party in ("V1", "V2") for i in late)


def test_a_bank_line_is_unseen_until_a_turn_after_it_was_posted() -> None:
    """The feed imports a line at its date's end, after that date's turn: the line is the
    clerk's from the first turn after its date, or from a turn after a statement listing
    it was delivered."""
    from sim.world_events import BankLinePosted

    monday, tuesday, friday = date(2026, 3, 2), date(2026, 3, 3), date(2026, 3, 6)

    def line(line_id: str, day: date) -> BankLinePosted:
        return BankLinePosted(bank_account_id=BANK_ACCOUNT, line_id=line_id, posted_on=day,
                              amount=100, description="ACH CREDIT", reference="",
                              counterparty="", kind="deposit")

    view = WorldView(as_of=None, position=None,
                     lines={"L1": line("L1", monday), "L2": line("L2", tuesday),
                            "L3": line("L3", tuesday)},
                     stated={"L3": tuesday})
    assert [view.unseen(x, monday) for x in ("L1", "L2", "L3")] == [True, True, True]
    # Tuesday's turn saw Monday's line and the statement of Tuesday morning, not the feed
    # of Tuesday evening
    assert [view.unseen(x, tuesday) for x in ("L1", "L2", "L3")] == [False, True, False]
    assert [view.unseen(x, friday) for x in ("L1", "L2", "L3")] == [False, False, False]
    assert view.unseen("L2", date.min)  # before the first turn
    assert not view.unseen("L2", None) and not view.unseen("NOPE", monday)
