"""fixed-assets: the reference's reading of the papers, and the checks on real attempts.

- The reading: every bill the injection sent (text, PDF, email) reads back as the truth
  records it, lines and accounts, and the assets the reference makes of it are the ones
  the truth says are due; a quotation reads as no bill; the sale's email names its asset
  by id or, on the hard tier, by serial number only.
- The checks (:mod:`checks.fixed_assets`) on real attempts of the medium tier: the
  reference is accepted; the null agent fails every rule of the register; a clerk who
  expenses an item the policy capitalizes, one who capitalizes a repair, one who gives an
  asset another class's life, one who runs June's depreciation before the sale, and one
  who posts a journal straight to a class account are each refused by the checks that own
  the rule, with the message naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from checks.fixed_assets import expected_balances
from erp import commands as c
from erp import queries as q
from erp.errors import CommandRejected
from erp.ledger import Ledger
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from sim.world_events import DocumentDelivered, InjectionPlanted, decode_world_event
from tests.conftest import PG_URL, drop_pg_schema, pg_schema, require_postgres
from tests.scenarios.library.attempts import check_results, failed_checks, routed

NAME = "fixed-assets"
SEED = 3


def _solver() -> ModuleType:
    return load_solver(library_dir() / NAME / "solver.py")


class _Twist:
    """The reference, with one mistake in what it submits (or after it)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.done = False
        self.dropped: str | None = None
        self.held: c.EnterBill | None = None

    def _submit(self, desk: TurnContext, real: Callable[[c.Command], Any],
                cmd: c.Command) -> Any:
        n = self.name
        if isinstance(cmd, c.CapitalizeAsset) and n == "expensed" \
                and self.dropped in (None, cmd.bill_id):
            self.dropped = cmd.bill_id  # that bill's assets, at every turn
            return None
        if isinstance(cmd, c.CapitalizeAsset) and not self.done and n == "other-life":
            self.done = True
            cmd = cmd.model_copy(update={"life_months": cmd.life_months + 12})
        if n == "late-bill" and desk.turn == 1 and isinstance(cmd, c.EnterBill) \
                and self.held is None:
            self.held = cmd  # May's first bill held to June's close, dated as invoiced
            return CommandRejected("held", "held to the next close")
        if n == "depreciate-first" and isinstance(cmd, c.DisposeAsset):
            real(c.RunDepreciation(period="2026-06"))
        return real(cmd)

    def run_turn(self, desk: TurnContext) -> None:
        with routed(desk, lambda real, cmd: self._submit(desk, real, cmd)):
            _solver().reference(desk)
        books = desk.ledger.books
        if self.name == "late-bill" and desk.turn == 2 and self.held is not None:
            have = {(b.vendor_id, b.vendor_invoice_number) for b in books.bills.values()}
            if (self.held.vendor_id, self.held.vendor_invoice_number) not in have:
                desk.execute(self.held)
        if self.name == "capitalized-repair" and not self.done:
            bill = next((b for b in sorted(books.bills.values(), key=lambda b: b.bill_id)
                         if "6050" in books.fixed_assets.bill_lines.get(b.bill_id, {})
                         and not any(k[1] == b.bill_id
                                     for k in books.fixed_assets.capitalized)), None)
            if bill is not None:
                amount = books.fixed_assets.bill_lines[bill.bill_id]["6050"]
                doc = q.document(desk.store, "bill", bill.bill_id)
                assert doc is not None
                day = date.fromisoformat(doc["doc_date"])
                self.done = isinstance(desk.execute(c.CapitalizeAsset(
                    class_id="EQ", bill_id=bill.bill_id, source_account="6050", amount=amount,
                    entry_date=day, in_service_date=day,
                    life_months=60)), list)
        if self.name == "journal-to-class" and desk.turn == 2:
            desk.execute(c.PostJournalEntry(
                entry_date=date(2026, 6, 30), memo="straight to the class account",
                lines=(c.JournalLineIn(account="1510", debit=50_000),
                       c.JournalLineIn(account="6060", credit=50_000))))


TWISTS = ("expensed", "other-life", "depreciate-first", "capitalized-repair",
          "journal-to-class", "late-bill")


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario(NAME))
    root = tmp_path_factory.mktemp(NAME)
    agents: dict[str, Any] = {"reference": None, "null": None}
    agents.update({n: _Twist(n) for n in TWISTS})
    yield {name: run_attempt(loaded, SEED, name, root / name, agent=agent)
           for name, agent in agents.items()}


def _world(res: AttemptResult) -> tuple[dict[str, Any], list[DocumentDelivered]]:
    ledger = Ledger.open(res.out / "books.db")
    try:
        world = [decode_world_event(e.type, e.payload) for e in ledger.store.read(realm="world")]
    finally:
        ledger.close()
    truth = next(w.detail for w in world if isinstance(w, InjectionPlanted)
                 and w.kind == "fixed_asset_materials")
    return truth, [w for w in world if isinstance(w, DocumentDelivered)]


# --- the reading -------------------------------------------------------------------------


@pytest.mark.parametrize("tier", ["medium", "hard"])
def test_the_reference_reads_every_paper_as_the_truth_records_it(tier: str,
                                                                 tmp_path: Path) -> None:
    res = run_attempt(load_scenario(find_scenario(NAME), tier=tier), SEED, "null",
                      tmp_path / "a")
    truth, docs = _world(res)
    s = _solver()
    inbox = res.out / "turns" / "02" / "workspace" / "inbox"
    paths = {p.name: p for p in [*inbox.iterdir(), *(inbox / "archive").iterdir()]
             if p.is_file()}
    ledger = Ledger.open(res.out / "books.db")
    try:
        vendors = {v.name.casefold(): v.vendor_id for v in ledger.books.vendors.values()}
        class_of = {a.asset_id: a.class_id for a in ledger.books.fixed_assets.assets.values()}
    finally:
        ledger.close()
    texts = {name: s._accruals()._text_of(path) for name, path in paths.items()}
    policy = next(p for t in texts.values() if t and (p := s.read_policy(t)) is not None)
    assert policy.threshold == truth["policy"]["threshold"]
    assert {k: v.life_months for k, v in policy.classes.items()} == {
        k: v["life_months"] for k, v in truth["policy"]["classes"].items()}
    read = {}
    for name, text in texts.items():
        bill = s.read_bill(text or "", vendors)
        if bill is not None:
            read[(bill.vendor_id, bill.number)] = (name, bill)
    assert len(read) == len(truth["bills"])
    kinds = {d.filename.rsplit(".", 1)[-1] for d in docs if "invoice" in d.filename}
    assert kinds == ({"txt", "pdf", "eml"} if tier == "hard" else kinds) and "txt" in kinds
    for x in truth["bills"]:
        _, bill = read[(x["vendor_id"], x["number"])]
        assert [(y.description, y.quantity, y.unit, y.amount, y.account) for y in bill.lines] \
            == [(y["description"][:44], y["quantity"], y["unit"], y["amount"], y["account"])
                for y in x["lines"]]
        assets = s.assets_of(bill, policy, class_of)
        assert [(a.class_id, a.amount, a.in_service.isoformat(), a.life_months,
                 a.source_account) for a in assets] == [
            (a["class_id"], a["amount"], a["in_service"], a["life_months"],
             a["source_account"]) for a in x["assets"]]
    quotes = [t for n, t in texts.items() if "quotation" in n]
    assert len(quotes) == len(truth["quotes"]) and all(
        s.read_bill(t or "", vendors) is None for t in quotes)
    sale_text = next(t for n, t in texts.items() if "asset-sale" in n)
    assert (truth["disposal"]["asset_id"] in (sale_text or "")) == (tier != "hard")


def test_a_sale_named_by_serial_is_read_as_its_asset() -> None:
    text = ("Hi,\n\nWe sold our old Copier, Ricoh MP 4055 (SN AB12345) to Reuse Depot LLC "
            "on\n2026-06-12.\nThe agreed price is USD 1,200.00; they will pay it.\n")
    sale = _solver().read_sale(text, {"SN AB12345": "FA-000002"})
    assert sale is not None
    assert (sale.asset_id, sale.day, sale.proceeds) == ("FA-000002", date(2026, 6, 12), 120_000)
    assert _solver().read_sale(text, {}) is None


# --- the checks on real attempts -----------------------------------------------------------


def test_the_reference_is_accepted(attempts: dict[str, AttemptResult]) -> None:
    r = check_results(attempts["reference"].out)
    assert all(x["passed"] for x in r.values()), [x for x in r.values() if not x["passed"]]
    assert r["assets-capitalized"]["metrics"]["due"] > 0
    assert r["depreciation-run"]["metrics"]["expected_cents"] > 0


def test_the_null_agent_fails_every_rule_of_the_register(
        attempts: dict[str, AttemptResult]) -> None:
    failed = failed_checks(attempts["null"].out)
    assert {"bills-entered", "assets-capitalized", "depreciation-run", "sale-disposed",
            "class-accounts-tie"} <= failed
    assert "not disposed of" in check_results(attempts["null"].out)["sale-disposed"]["detail"]


def test_an_item_left_expensed_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["expensed"]
    assert {"assets-capitalized", "depreciation-run", "class-accounts-tie"} <= failed_checks(
        res.out)
    assert "not capitalized" in check_results(res.out)["assets-capitalized"]["detail"]


def test_an_asset_with_another_life_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["other-life"]
    assert "assets-capitalized" in failed_checks(res.out)
    assert "is not what the policy capitalizes (due:" in \
        check_results(res.out)["assets-capitalized"]["detail"]


def test_a_bill_held_to_the_next_close_and_dated_back_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["late-bill"]
    assert "bills-entered" in failed_checks(res.out), failed_checks(res.out)
    detail = check_results(res.out)["bills-entered"]["detail"]
    assert "was entered in the turn of 2026-07-01, not the turn of 2026-06-01" in detail
    assert "not entered" not in detail


def test_depreciating_the_sold_asset_in_its_month_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["depreciate-first"]
    assert {"sale-disposed", "depreciation-run"} <= failed_checks(res.out)
    assert "accumulated depreciation" in check_results(res.out)["sale-disposed"]["detail"]


def test_a_repair_capitalized_is_refused(attempts: dict[str, AttemptResult]) -> None:
    res = attempts["capitalized-repair"]
    assert "assets-capitalized" in failed_checks(res.out), "no repair bill to capitalize from"
    detail = check_results(res.out)["assets-capitalized"]["detail"]
    assert "nothing more is due from it" in detail or "is not what the policy capitalizes" in detail


def test_a_journal_straight_to_a_class_account_is_refused(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["journal-to-class"]
    assert failed_checks(res.out) == {"class-accounts-tie", "no-manual-journal-entries"}
    detail = check_results(res.out)["class-accounts-tie"]["detail"]
    assert "1510 Computer equipment: GL" in detail and "the register leaves" in detail


def test_the_register_balances_are_what_the_reference_leaves(
        attempts: dict[str, AttemptResult]) -> None:
    res = attempts["reference"]
    truth, _ = _world(res)
    ledger = Ledger.open(res.out / "books.db")
    try:
        want = expected_balances(truth, "2026-06")
        assert want == {a: q.account_balance(ledger.store, a) for a in want}
        assert any(v < 0 for v in want.values()) and any(v > 0 for v in want.values())
    finally:
        ledger.close()


def test_the_scenario_declares_its_tiers() -> None:
    base = load_scenario(find_scenario(NAME))
    assert base.scenario.tier == "medium" and set(base.scenario.tiers) == {"easy", "medium",
                                                                          "hard"}
    sizes = []
    for tier in ("easy", "medium", "hard"):
        s = load_scenario(find_scenario(NAME), tier=tier).scenario
        (inj,) = s.injections
        sizes.append((s.population.vendors.count, inj.params["bills_per_month"],
                      inj.params["below_share"], s.documents.pdf_bills))
    assert sizes == sorted(sizes) and len(set(sizes)) == 3


@pytest.mark.postgres
def test_on_postgresql_the_checks_grade_as_on_sqlite(
        attempts: dict[str, AttemptResult], tmp_path: Path) -> None:
    """The checks read the books through SQL (the class accounts, the subledger): the
    reference and a one-mistake clerk get the same verdicts and log on PostgreSQL."""
    require_postgres()
    loaded = load_scenario(find_scenario(NAME))
    for name, agent in (("reference", None), ("journal-to-class", _Twist("journal-to-class"))):
        schema = pg_schema(f"fixed-assets/{name}")
        drop_pg_schema(schema)
        try:
            res = run_attempt(loaded, SEED, name, tmp_path / name, agent=agent,
                              store_url=PG_URL, schema=schema)
            assert res.final_hash == attempts[name].final_hash
            assert {n: r["passed"] for n, r in check_results(res.out).items()} == {
                n: r["passed"] for n, r in check_results(attempts[name].out).items()}
        finally:
            drop_pg_schema(schema)
