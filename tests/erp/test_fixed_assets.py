"""Fixed assets: classes, capitalization from a bill's line or a journal, depreciation
runs and disposals.

Invariants: ``CapitalizeAsset`` moves no more than a bill's line (or a journal entry's
debit) put on its account to the class's cost account; ``RunDepreciation`` posts each
asset's straight-line month once, in order, the last month taking the rounding remainder
(salvage left on the books); a closed period, a month twice, a fully depreciated, disposed
or not yet in-service asset are refused; ``DisposeAsset`` removes the cost and the
accumulated depreciation and books the gain or loss. Every refusal writes nothing. A
property over generated assets: the trial balance sums to zero, each class's cost and
accumulated-depreciation accounts equal the subledger, the control accounts tie,
``rebuild()`` reproduces the live read tables and books folded afresh hold the same state.
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
from erp.charts import CHARTS
from erp.handlers import amortization_amount
from erp.ledger import Ledger, Submission
from tests.erp.helpers import CLERK, CONTROLLER, SYS, assert_rejected, set_up_company

FEB28 = date(2026, 2, 28)
MAR31 = date(2026, 3, 31)
APR30 = date(2026, 4, 30)


def run(ledger: Ledger, *cmds: c.Command, day: date = MAR31,
        base: dict[str, Any] = CLERK) -> list[ev.Event]:
    """Execute commands in one batch as ``base`` on ``day``; the events they wrote."""
    return [s.event for s in ledger.execute_batch(
        [Submission(x, **{**base, "business_date": day}) for x in cmds])]


def set_up_fixed_assets(ledger: Ledger) -> None:
    """The helpers' company, the fixed-asset chart's extra accounts and two classes."""
    set_up_company(ledger)
    have = {code for code, *_ in CHARTS["standard-services"]}
    cmds: list[c.Command] = [c.OpenAccount(code=code, name=name, account_type=kind,
                                           control=control)
                             for code, name, kind, control in CHARTS["services-with-fixed-assets"]
                             if code not in have]
    cmds += [c.DefineAssetClass(class_id="equipment", name="Equipment", cost_account="1500",
                                accumulated_account="1590", expense_account="6500"),
             c.DefineAssetClass(class_id="software", name="Software", cost_account="1520",
                                accumulated_account="1592", expense_account="6500")]
    ledger.execute_batch([Submission(x, **SYS) for x in cmds])


def bill(bid: str, *lines: tuple[str, str], day: date = date(2026, 2, 2)) -> c.EnterBill:
    """A bill of V1 with lines ``(amount, account)``."""
    return c.EnterBill(bill_id=bid, vendor_id="V1", vendor_invoice_number=bid, entry_date=day,
                       lines=tuple(c.BillLineIn(description=f"line {n}", amount=amount,
                                                account=account)
                                   for n, (amount, account) in enumerate(lines)))


def capitalize(amount: str, *, bid: str | None = "B1", entry_id: str | None = None,
               asset_id: str | None = "FA1", cls: str = "equipment", account: str = "6000",
               life: int = 3, salvage: str = "0", in_service: date = date(2026, 2, 10),
               day: date = date(2026, 2, 10)) -> c.CapitalizeAsset:
    """Capitalize ``amount`` of a bill's (or journal's) line on ``account``."""
    return c.CapitalizeAsset(asset_id=asset_id, class_id=cls, bill_id=bid, entry_id=entry_id,
                             source_account=account, amount=amount, entry_date=day,
                             in_service_date=in_service, life_months=life, salvage=salvage,
                             description="asset")


@pytest.fixture
def company(ledger: Ledger) -> Ledger:
    """The fixed-asset company (Feb-Apr 2026 open)."""
    set_up_fixed_assets(ledger)
    return ledger


def ties(ledger: Ledger) -> list[tuple[str, int, int]]:
    """Each class account's (code, GL, subledger)."""
    return [(t.account, t.gl_balance, t.subledger_total) for t in q.fixed_asset_ties(ledger.store)]


# --- classes -------------------------------------------------------------------------


@pytest.mark.parametrize(("kw", "code", "field", "match"), [
    ({"class_id": "equipment"}, "duplicate_id", "class_id", "asset class 'equipment' already"),
    ({"cost_account": "6000"}, "invalid_account", "cost_account", "is a expense account"),
    ({"cost_account": "1200"}, "invalid_account", "cost_account", "control account"),
    ({"accumulated_account": "1510"}, "invalid_account", "accumulated_account",
     "is the class's cost account"),
    ({"accumulated_account": "2100"}, "invalid_account", "accumulated_account",
     "expected a contra-asset account"),
    ({"expense_account": "4000"}, "invalid_account", "expense_account",
     "(expected an expense account)"),
    ({"expense_account": "9999"}, "unknown_account", "expense_account", ""),
])
def test_a_bad_class_is_refused(company: Ledger, kw: dict[str, Any], code: str, field: str,
                                match: str) -> None:
    args: dict[str, Any] = {"class_id": "computers", "name": "Computers",
                            "cost_account": "1510", "accumulated_account": "1591",
                            "expense_account": "6500", **kw}
    assert_rejected(company, c.DefineAssetClass(**args), code, match=match, field=field)


# --- capitalization ----------------------------------------------------------------


def test_capitalizing_a_bill_line_moves_it_to_the_class_cost_account(company: Ledger) -> None:
    run(company, bill("B1", ("1200.00", "6000"), ("80.00", "6060")), day=date(2026, 2, 2))
    events = run(company, capitalize("1200.00", salvage="200.00", life=12), day=date(2026, 2, 10))
    assert events == [ev.AssetCapitalized(
        asset_id="FA1", class_id="equipment", source_kind="bill", source_id="B1",
        vendor_id="V1", entry_date=date(2026, 2, 10), in_service_date=date(2026, 2, 10),
        amount=120_000, salvage=20_000, life_months=12, cost_account="1500",
        accumulated_account="1590", expense_account="6500", source_account="6000",
        description="asset")]
    store = company.store
    assert (q.account_balance(store, "1500"), q.account_balance(store, "6000"),
            q.account_balance(store, "6060")) == (120_000, 0, 8_000)
    assert ties(company) == [("1500", 120_000, 120_000), ("1520", 0, 0), ("1590", 0, 0),
                             ("1592", 0, 0)]
    doc = q.document(store, "fixed_asset", "FA1")
    assert doc is not None and (doc["status"], doc["open_amount"], doc["reference"]) == (
        "in_service", 120_000, "equipment")


def test_capitalizing_from_a_journal_entry(company: Ledger) -> None:
    run(company, c.PostJournalEntry(entry_id="JE-SW", entry_date=date(2026, 2, 5), memo="licence",
                                    lines=(c.JournalLineIn(account="6200", debit="3600.00"),
                                           c.JournalLineIn(account="2100", credit="3600.00"))),
        day=date(2026, 2, 5))
    (e,) = run(company, capitalize("3600.00", bid=None, entry_id="JE-SW", cls="software",
                                   account="6200", life=36), day=date(2026, 2, 10))
    assert isinstance(e, ev.AssetCapitalized)
    assert (e.source_kind, e.source_id, e.vendor_id, e.cost_account) == (
        "journal", "JE-SW", None, "1520")
    assert_rejected(company, capitalize("0.01", bid=None, entry_id="JE-SW", asset_id="FA2",
                                        cls="software", account="6200"),
                    "over_capitalized", match="journal JE-SW has 0.00 on account 6200 not yet "
                    "capitalized (of 3,600.00)", field="amount")
    assert_rejected(company, capitalize("1.00", bid=None, entry_id="JE-SW", asset_id="FA2",
                                        account="2100"),
                    "not_on_source_account", match="journal JE-SW has no debit on account 2100",
                    field="entry_id")


def test_a_reversed_journal_is_no_source(company: Ledger) -> None:
    run(company, c.PostJournalEntry(entry_id="JE-1", entry_date=date(2026, 2, 5), memo="x",
                                    lines=(c.JournalLineIn(account="6000", debit="500.00"),
                                           c.JournalLineIn(account="2100", credit="500.00"))),
        c.ReverseJournalEntry(entry_id="JE-1", reversal_id="JE-2", entry_date=date(2026, 2, 6)),
        day=date(2026, 2, 6))
    assert_rejected(company, capitalize("500.00", bid=None, entry_id="JE-1"),
                    "journal_entry_reversed", match="reversed by JE-2", field="entry_id")
    assert_rejected(company, capitalize("500.00", bid=None, entry_id="JE-2"),
                    "journal_entry_reversed", match="is a reversal", field="entry_id")
    assert_rejected(company, capitalize("500.00", bid=None, entry_id="JE-9"),
                    "unknown_journal_entry", field="entry_id")


@pytest.mark.parametrize(("kw", "code", "field", "match"), [
    ({"cls": "vehicles"}, "unknown_asset_class", "class_id",
     "no asset class 'vehicles' (known: equipment, software)"),
    ({"bid": None}, "invalid_source", "bill_id", "got neither"),
    ({"entry_id": "JE-1"}, "invalid_source", "bill_id", "got both"),
    ({"bid": "NOPE"}, "unknown_bill", "bill_id", ""),
    ({"amount": "0"}, "non_positive_amount", "amount", ""),
    ({"amount": "1000.01"}, "over_capitalized", "amount",
     "bill B1 has 1,000.00 on account 6000 not yet capitalized (of 1,000.00), cannot "
     "capitalize 1,000.01"),
    ({"account": "6100"}, "not_on_source_account", "bill_id",
     "bill B1 has no debit on account 6100"),
    ({"account": "2000"}, "invalid_account", "source_account", "control account"),
    ({"account": "4000"}, "invalid_account", "source_account", "is a revenue account"),
    ({"salvage": "1000.00"}, "invalid_salvage", "salvage",
     "salvage 1,000.00 must be at least 0.00 and less than the cost 1,000.00"),
    ({"salvage": "-1.00"}, "invalid_salvage", "salvage", ""),
    ({"amount": "0.05", "life": 6}, "depreciable_too_small", "life_months",
     "0.05 to depreciate over 6 months is less than a cent a month"),
    ({"day": date(2026, 5, 1)}, "no_open_period", "entry_date", ""),
    ({"asset_id": "FA0"}, "duplicate_id", "asset_id", "fixed asset 'FA0' already exists"),
])
def test_a_bad_capitalization_is_refused(company: Ledger, kw: dict[str, Any], code: str,
                                         field: str, match: str) -> None:
    run(company, bill("B1", ("1000.00", "6000")), bill("B0", ("50.00", "6000")),
        day=date(2026, 2, 2))
    run(company, capitalize("50.00", bid="B0", asset_id="FA0"), day=date(2026, 2, 10))
    rest = {k: v for k, v in kw.items() if k != "amount"}
    assert_rejected(company, capitalize(kw.get("amount", "1000.00"), **rest), code,
                    match=match, field=field)


def test_a_bill_line_is_never_capitalized_twice_over(company: Ledger) -> None:
    run(company, bill("B1", ("700.00", "6000"), ("300.00", "6000")), day=date(2026, 2, 2))
    run(company, capitalize("600.00"), day=date(2026, 2, 10))
    assert_rejected(company, capitalize("400.01", asset_id="FA2"), "over_capitalized",
                    match="has 400.00 on account 6000 not yet capitalized (of 1,000.00)")
    run(company, capitalize("400.00", asset_id="FA2"), day=date(2026, 2, 10))
    assert q.account_balance(company.store, "6000") == 0


# --- depreciation ------------------------------------------------------------------


def test_depreciation_posts_each_month_once_and_the_last_takes_the_remainder(
        company: Ledger) -> None:
    run(company, bill("B1", ("110.00", "6000")), capitalize("110.00", salvage="10.00"),
        day=date(2026, 2, 10))
    feb = run(company, c.RunDepreciation(period="2026-02"), day=FEB28)
    assert feb == [ev.AssetDepreciated(
        asset_id="FA1", run_id="DEP-000001", class_id="equipment", period="2026-02", month=1,
        life_months=3, entry_date=FEB28, amount=3_333, expense_account="6500",
        accumulated_account="1590")]
    mar = run(company, c.RunDepreciation(period="2026-03"))
    apr = run(company, c.RunDepreciation(period="2026-04"), day=APR30)
    assert [e.amount for e in (*feb, *mar, *apr)] == [3_333, 3_333, 3_334]  # type: ignore
    store = company.store
    assert (q.account_balance(store, "1500"), q.account_balance(store, "1590"),
            q.account_balance(store, "6500")) == (11_000, -10_000, 10_000)
    assert ties(company)[:3] == [("1500", 11_000, 11_000), ("1520", 0, 0),
                                 ("1590", -10_000, -10_000)]
    doc = q.document(store, "fixed_asset", "FA1")
    assert doc is not None and (doc["status"], doc["open_amount"]) == ("fully_depreciated",
                                                                       1_000)
    assert_rejected(company, c.RunDepreciation(period="2026-03"), "already_depreciated",
                    match="every asset depreciating in 2026-03 was already depreciated for it",
                    field="period")
    assert_rejected(company, c.RunDepreciation(period="2026-03", asset_ids=("FA1",)),
                    "already_depreciated", match="FA1 was already depreciated for 2026-03",
                    field="asset_ids[0]")


def test_depreciating_a_fully_depreciated_or_not_yet_in_service_asset_is_refused(
        company: Ledger) -> None:
    run(company, bill("B1", ("100.00", "6000"), ("90.00", "6050")),
        capitalize("100.00", life=1),
        capitalize("90.00", asset_id="FA2", account="6050", in_service=date(2026, 4, 2)),
        day=date(2026, 2, 10))
    run(company, c.RunDepreciation(period="2026-02"), day=FEB28)
    assert_rejected(company, c.RunDepreciation(period="2026-03", asset_ids=("FA1",)),
                    "fully_depreciated", match="asset FA1 is fully depreciated (1 months from "
                    "2026-02)", field="asset_ids[0]")
    assert_rejected(company, c.RunDepreciation(period="2026-03", asset_ids=("FA2",)),
                    "not_in_service", match="asset FA2 is in service from 2026-04",
                    field="asset_ids[0]")
    assert_rejected(company, c.RunDepreciation(period="2026-03"), "nothing_to_depreciate",
                    match="no asset is in service and depreciating in period 2026-03")
    assert_rejected(company, c.RunDepreciation(period="2026-03", asset_ids=("FA9",)),
                    "unknown_asset", field="asset_ids[0]")
    assert_rejected(company, c.RunDepreciation(period="2026-04", asset_ids=("FA2", "FA2")),
                    "already_depreciated", match="named twice", field="asset_ids[1]")


def test_depreciating_a_closed_period_or_out_of_order_is_refused(company: Ledger) -> None:
    run(company, bill("B1", ("90.00", "6000")), capitalize("90.00"), day=date(2026, 2, 10))
    assert_rejected(company, c.RunDepreciation(period="2026-03"), "earlier_month_undepreciated",
                    match="asset FA1 has 2026-02 not depreciated yet", field="period")
    run(company, c.ClosePeriod(period="2026-02"), base=CONTROLLER)
    assert_rejected(company, c.RunDepreciation(period="2026-02"), "period_closed",
                    match="2026-02-28 falls in period 2026-02, which is closed", field="period")
    assert_rejected(company, c.RunDepreciation(period="2026-08"), "unknown_period")


# --- disposal ------------------------------------------------------------------------


def _sell(proceeds: str, *, day: date = date(2026, 4, 15), account: str = "1250",
          gain_loss: str = "4800", asset_id: str = "FA1") -> c.DisposeAsset:
    return c.DisposeAsset(asset_id=asset_id, entry_date=day, proceeds=proceeds,
                          proceeds_account=account, gain_loss_account=gain_loss,
                          reference="bill of sale")


@pytest.mark.parametrize(("proceeds", "gain"), [("950.00", 5_000), ("100.00", -80_000),
                                                 ("0", -90_000), ("900.00", 0)])
def test_a_disposal_removes_cost_and_depreciation_and_books_the_difference(
        company: Ledger, proceeds: str, gain: int) -> None:
    run(company, bill("B1", ("1200.00", "6000")), capitalize("1200.00", life=8),
        day=date(2026, 2, 10))
    run(company, c.RunDepreciation(period="2026-02"), day=FEB28)
    run(company, c.RunDepreciation(period="2026-03"))
    (e,) = run(company, _sell(proceeds), day=date(2026, 4, 15))
    assert isinstance(e, ev.AssetDisposed)
    assert (e.cost, e.accumulated, e.gain) == (120_000, 30_000, gain)
    store = company.store
    assert (q.account_balance(store, "1500"), q.account_balance(store, "1590"),
            q.account_balance(store, "4800")) == (0, 0, -gain)
    assert ties(company)[:3] == [("1500", 0, 0), ("1520", 0, 0), ("1590", 0, 0)]
    doc = q.document(store, "fixed_asset", "FA1")
    assert doc is not None and (doc["status"], doc["open_amount"]) == ("disposed", 0)
    assert_rejected(company, _sell(proceeds), "already_disposed", field="asset_id")
    assert_rejected(company, c.RunDepreciation(period="2026-04", asset_ids=("FA1",)),
                    "asset_disposed", field="asset_ids[0]")
    assert_rejected(company, c.RunDepreciation(period="2026-04"), "nothing_to_depreciate")


@pytest.mark.parametrize(("kw", "code", "field", "match"), [
    ({"asset_id": "FA9"}, "unknown_asset", "asset_id", ""),
    ({"day": date(2026, 4, 1)}, "earlier_month_undepreciated", "entry_date",
     "asset FA1 has 2026-03 not depreciated yet"),
    ({"day": date(2026, 5, 2)}, "no_open_period", "entry_date", ""),
    ({"proceeds": "-1.00"}, "invalid_amount", "proceeds", "proceeds must be 0.00 or more"),
    ({"account": "1000"}, "invalid_account", "proceeds_account", "control account"),
    ({"account": "6000"}, "invalid_account", "proceeds_account", "is a expense account"),
    ({"gain_loss": "1250"}, "invalid_account", "gain_loss_account",
     "(expected a revenue or expense account)"),
])
def test_a_bad_disposal_is_refused(company: Ledger, kw: dict[str, Any], code: str, field: str,
                                   match: str) -> None:
    run(company, bill("B1", ("1200.00", "6000")), capitalize("1200.00", life=8),
        day=date(2026, 2, 10))
    run(company, c.RunDepreciation(period="2026-02"), day=FEB28)
    rest = {"day": date(2026, 3, 20), **{k: v for k, v in kw.items() if k != "proceeds"}}
    assert_rejected(company, _sell(kw.get("proceeds", "500.00"), **rest), code, match=match,
                    field=field)


def test_an_asset_cannot_be_disposed_of_before_it_is_in_service(company: Ledger) -> None:
    run(company, bill("B1", ("90.00", "6000")),
        capitalize("90.00", in_service=date(2026, 4, 2)), day=date(2026, 2, 10))
    assert_rejected(company, _sell("10.00", day=date(2026, 3, 3)), "not_in_service",
                    match="asset FA1 is in service from 2026-04", field="entry_date")


def test_a_journal_straight_to_a_cost_account_shows_in_the_tie(company: Ledger) -> None:
    run(company, c.PostJournalEntry(entry_date=date(2026, 2, 5), memo="desk",
                                    lines=(c.JournalLineIn(account="1500", debit="75.00"),
                                           c.JournalLineIn(account="2100", credit="75.00"))),
        day=date(2026, 2, 5))
    (tie,) = [t for t in q.fixed_asset_ties(company.store) if t.account == "1500"]
    assert (tie.gl_balance, tie.subledger_total, tie.difference) == (7_500, 0, 7_500)


# --- the property ------------------------------------------------------------------

assets_st = st.lists(st.tuples(st.integers(1_000, 10**8), st.integers(1, 14),
                               st.integers(0, 900), st.sampled_from([2, 3, 4]),
                               st.sampled_from(["equipment", "software"]),
                               st.none() | st.integers(0, 10**8)),
                     min_size=1, max_size=5)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(assets_st)
def test_fixed_assets_keep_the_books_consistent(
        plan: list[tuple[int, int, int, int, str, int | None]]) -> None:
    """Assets capitalized from bills, depreciated month by month, some sold in April."""
    with tempfile.TemporaryDirectory() as tmp:
        target = f"sqlite:///{Path(tmp) / 'books.db'}"
        with Ledger.open(target, create=True) as ledger:
            set_up_fixed_assets(ledger)
            for n, (amount, life, salvage_pm, month, cls, _) in enumerate(plan):
                salvage = min(amount * salvage_pm // 1000, amount - life)
                run(ledger, bill(f"B{n}", (str(amount / 100), "6000")),
                    capitalize(str(amount / 100), bid=f"B{n}", asset_id=f"FA{n}", cls=cls,
                               life=life, salvage=f"{salvage / 100:.2f}",
                               in_service=date(2026, month, 1)), day=date(2026, 2, 3))
            for n, period, end in ((2, "2026-02", FEB28), (3, "2026-03", MAR31),
                                   (4, "2026-04", APR30)):
                if n == 4:
                    for k, (*_, sale) in enumerate(plan):
                        if sale is not None:
                            run(ledger, _sell(f"{sale / 100:.2f}", asset_id=f"FA{k}",
                                              day=date(2026, 4, 1)), day=date(2026, 4, 1))
                if ledger.books.fixed_assets.assets and any(
                        not a.disposed and 0 <= n - int(a.start_period[5:]) < a.life_months
                        for a in ledger.books.fixed_assets.assets.values()):
                    run(ledger, c.RunDepreciation(period=period), day=end)
            store = ledger.store
            rows = q.trial_balance(store)
            assert sum(r.debit for r in rows) == sum(r.credit for r in rows)
            assert not [t for t in q.control_ties(store) if t.difference]
            assert not [t for t in q.fixed_asset_ties(store) if t.difference]
            books = ledger.books.fixed_assets
            kept = [a for a in books.assets.values() if not a.disposed]
            cost = sum(t.gl_balance for t in q.fixed_asset_ties(store)
                       if t.control == "fixed_asset")
            assert cost == sum(a.amount for a in kept)
            for a in books.assets.values():
                assert a.accumulated == sum(amortization_amount(
                    a.amount - a.salvage, a.life_months, k) for k in range(1, len(a.posted) + 1))
                assert a.accumulated <= a.amount - a.salvage
            live = q.table_snapshot(store)
            with Ledger.open(target) as fresh:
                assert {k: (dict(a.posted), a.disposed) for k, a in
                        fresh.books.fixed_assets.assets.items()} == {
                    k: (dict(a.posted), a.disposed) for k, a in books.assets.items()}
                assert fresh.head_hash == ledger.head_hash
            ledger.rebuild()
            assert q.table_snapshot(store) == live
            assert ledger.verify().ok
