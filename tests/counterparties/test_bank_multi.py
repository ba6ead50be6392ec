"""counterparties.bank_multi: each account's bank keeps its own lines and statement; the
month's transfers, deposits, card charges and the bank's errors as the truth records them;
the same seed gives the same log; parameters out of range are refused naming the field.

On a real attempt (the null agent, every tier): savings and the card are opened in the
books by the scenario, the customers' cheques recorded as receipts the day they are
deposited and credited a business day later (those of the statement day after it), a
returned cheque comes back two business days after it was credited, a transfer leaves one
account on the day it was made and reaches the other one or two business days later, the
operating service charge is posted twice (the copy naming the line it repeats), another
client's deposit lands on savings (medium, hard), and each account's statement is its own
lines only.
"""

from __future__ import annotations

import csv
import io
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from counterparties.bank_multi import ACCOUNTS, MERCHANTS, MultiBankParams
from erp import queries as q
from erp.ledger import Ledger
from erp.money import parse_cents
from runs.attempt import run_attempt
from scenarios.loader import find_scenario, load_scenario
from sim.calendar import BusinessCalendar
from sim.world_events import (
    BankLinePosted,
    DocumentDelivered,
    InjectionPlanted,
    decode_world_event,
)

NAME = "bank-reconciliation-multi"
SEED = 5


def _attempt(tier: str, out: Path, seed: int = SEED) -> tuple[str, list[Any], Ledger]:
    loaded = load_scenario(find_scenario(NAME), tier=tier)
    res = run_attempt(loaded, seed, "null", out)
    ledger = Ledger.open(out / "books.db")
    world = [decode_world_event(e.type, e.payload) for e in ledger.store.read(realm="world")]
    return res.final_hash, world, ledger


@pytest.fixture(scope="module", params=["easy", "medium", "hard"])
def month(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A null attempt at each tier: its hash, world events, books and truth."""
    tier = request.param
    final, world, ledger = _attempt(tier, tmp_path_factory.mktemp(tier) / "a")
    (planted,) = [w for w in world if isinstance(w, InjectionPlanted)
                  and w.kind == "multi_bank_month"]
    yield tier, final, world, ledger, dict(planted.detail)
    ledger.close()


def _calendar() -> BusinessCalendar:
    """The scenario's calendar (scenario.yaml: May 2026, Memorial Day off)."""
    return BusinessCalendar(date(2026, 5, 1), date(2026, 6, 2), frozenset({date(2026, 5, 25)}))


def test_the_accounts_are_opened_by_the_scenario(month: Any) -> None:
    _, _, _, ledger, _ = month
    books = ledger.books
    assert {b: (x.gl_account, x.number) for b, x in books.bank_accounts.items()} == {
        b: (gl, num) for b, (_, num, gl) in ACCOUNTS.items()}
    assert books.accounts["2060"].account_type == "liability"
    opened = list(ledger.store.read(types=["bank_account_opened"]))
    assert all(e.actor in ("system:setup", "scenario:injection") for e in opened)


def test_deposits_transfers_and_returns_happen_as_recorded(month: Any) -> None:
    tier, _, world, ledger, truth = month
    cal = _calendar()
    lines = [w for w in world if isinstance(w, BankLinePosted)]
    day = truth["statement_day"]
    for d in truth["deposits"]:
        (credit,) = [x for x in lines if x.source == d["receipt_id"] and x.kind == "deposit"]
        assert credit.bank_account_id == "B-OPER" and credit.amount == d["amount"]
        assert credit.posted_on == cal.add_business_days(date.fromisoformat(d["recorded_on"]), 1)
        r = ledger.books.receipts[d["receipt_id"]]
        assert r.entry_date.isoformat() == d["recorded_on"] and r.amount == d["amount"]
        returned = [x for x in lines if x.source == d["receipt_id"] and x.kind == "returned"]
        if d["returned_on"]:
            (back,) = returned
            assert back.amount == -d["amount"]
            assert back.posted_on == cal.add_business_days(credit.posted_on, 2)
        else:
            assert not returned
    assert sum(1 for d in truth["deposits"] if d["posted_on"] > day) >= 1
    for t in truth["transfers"]:
        legs = [x for x in lines if x.source == f"transfer:{t['confirmation']}"]
        out = [x for x in legs if x.amount < 0]
        assert [(x.bank_account_id, x.posted_on.isoformat()) for x in out] == [
            (t["from_account"], t["sent_on"])]
        into = [x for x in legs if x.amount > 0]
        assert [(x.bank_account_id, x.posted_on.isoformat()) for x in into] == [
            (t["to_account"], t["arrives_on"])]
        sent = date.fromisoformat(t["sent_on"])
        assert date.fromisoformat(t["arrives_on"]) in (cal.add_business_days(sent, 1),
                                                        cal.add_business_days(sent, 2))
    in_transit = [t for t in truth["transfers"] if t["arrives_on"] > day]
    assert len(in_transit) == {"easy": 1, "medium": 1, "hard": 2}[tier]


def test_the_banks_errors_and_the_card(month: Any) -> None:
    tier, _, world, _, truth = month
    lines = [w for w in world if isinstance(w, BankLinePosted)]
    (dup,) = [x for x in lines if x.source == "error:duplicate_fee"]
    (fee,) = [x for x in lines if x.line_id == dup.duplicate_of]
    assert (dup.bank_account_id, dup.amount, dup.posted_on, dup.reference) == (
        fee.bank_account_id, fee.amount, fee.posted_on, fee.reference) and fee.kind == "fee"
    misposted = [x for x in lines if x.source == "error:misposted_deposit"]
    assert len(misposted) == (0 if tier == "easy" else 1)
    for x in misposted:
        assert x.bank_account_id == "B-SAVE" and x.amount > 0
        assert x.reference[-4:] not in {num[-4:] for _, num, _ in ACCOUNTS.values()}
    card = [x for x in lines if x.bank_account_id == "B-CARD"]
    assert len(card) == len(truth["card_charges"]) and all(x.amount < 0 for x in card)
    policy = {m: (p, a) for m, p, a, _ in MERCHANTS}
    for x in truth["card_charges"]:
        prefix, account = policy[x["merchant"]]
        assert x["account"] == account
        assert _squash(x["statement_name"]).startswith(_squash(prefix))
    messy = sum(x["statement_name"].split(" ")[0] not in {p.split(" ")[0] for p, _ in
                                                          policy.values()}
                for x in truth["card_charges"])
    if tier == "easy":
        assert messy == 0
    if tier == "hard":
        assert messy > 0


def _squash(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum() or ch == "*")


def test_each_account_has_its_own_statement(month: Any) -> None:
    _, _, world, ledger, truth = month
    docs = {w.filename.split("-", 2)[2]: w for w in world if isinstance(w, DocumentDelivered)}
    lines = [w for w in world if isinstance(w, BankLinePosted)]
    for name, account in (("bank-statement-2026-05.csv", "B-OPER"),
                          ("savings-statement-2026-05.csv", "B-SAVE"),
                          ("card-statement-2026-05.csv", "B-CARD")):
        rows = list(csv.DictReader(io.StringIO(docs[name].content)))
        ids = [r["line_id"] for r in rows if r["line_id"]]
        assert ids == sorted((x.line_id for x in lines if x.bank_account_id == account
                              and x.posted_on.isoformat() <= truth["statement_day"]),
                             key=lambda i: next(x.posted_on for x in lines
                                                if x.line_id == i).isoformat() + i)
        opening = next((e.event.opening_balance for e in ledger.store.read(
            types=["bank_account_opened"]) if e.event.bank_account_id == account), 0)
        closing = parse_cents(rows[-1]["balance"])
        assert closing == opening + sum(parse_cents(r["amount"]) for r in rows if r["line_id"])
    assert "treasury-transfers-2026-05.csv" in docs and "card-expense-policy.csv" in docs


def test_the_null_agent_leaves_the_books_untouched(month: Any) -> None:
    _, _, _, ledger, _ = month
    assert not q.statement_lines(ledger.store)
    assert not ledger.books.transfers and not ledger.books.bank_errors


def test_the_same_seed_gives_the_same_log(month: Any, tmp_path: Path) -> None:
    tier, final, _, _, _ = month
    again, _, ledger = _attempt(tier, tmp_path / "again")
    ledger.close()
    assert again == final


@pytest.mark.parametrize(("field", "value"), [("deposits", 0), ("transfers", 0),
                                              ("card_charges", 61),
                                              ("messy_merchants", 1.5), ("returned", -1)])
def test_parameters_out_of_range_are_refused(field: str, value: Any) -> None:
    with pytest.raises(ValidationError) as info:
        MultiBankParams(**{field: value})
    assert field in str(info.value)


def test_an_unknown_parameter_is_refused() -> None:
    with pytest.raises(ValidationError, match="extra"):
        MultiBankParams(accounts=4)  # type: ignore[call-arg]
