"""The collections book's customers react to the company's books, each its own way.

On real attempts of the medium tier: without any collections work (the null agent) only
the ``on_time`` customers pay and the ``disputes`` customers email their disputes, the
sales manager's rulings follow; with the reference's work, ``letter_1`` and ``letter_2``
customers pay after their letters, ``hold`` customers only once held, ``promises``
customers answer a letter with a promise, and ``silent`` ones never pay. The same seed
gives the same log. Bad parameters are refused with a message naming them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from counterparties.collections import CollectionsParams, _weights
from erp.store import EventStore
from runs.attempt import AttemptResult, run_attempt
from scenarios.loader import find_scenario, load_scenario


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AttemptResult]]:
    loaded = load_scenario(find_scenario("collections"), tier="medium")
    root = tmp_path_factory.mktemp("collections-world")
    yield {name: run_attempt(loaded, 3, name, root / name) for name in ("null", "reference")}


def _world(res: AttemptResult) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    store = EventStore.open(res.out / "books.db")
    try:
        for e in store.read(realm="world"):
            out[e.type].append(orjson.loads(e.payload))
    finally:
        store.close()
    return out


def _behaviours(world: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    (book,) = [x for x in world["injection_planted"] if x["kind"] == "collections_book"]
    return {d["customer_id"]: d["behaviour"] for d in book["detail"]["debtors"]}


def _paid_by(world: dict[str, list[dict[str, Any]]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for p in world["payment_sent"]:
        out[p["customer_id"]].add(p["behaviour"])
    return out


def test_without_collections_work_only_on_time_customers_pay(
        attempts: dict[str, AttemptResult]) -> None:
    world = _world(attempts["null"])
    kinds = _behaviours(world)
    paid = _paid_by(world)
    assert paid and {kinds[c] for c in paid} == {"on_time"}
    assert {b for bs in paid.values() for b in bs} == {"collections:on_time"}
    emails = [d["truth"] for d in world["document_delivered"] if d["truth"].get("collections")]
    disputes = {t["customer_id"] for t in emails if t["collections"] == "dispute"}
    assert disputes == {c for c, k in kinds.items() if k == "disputes"}
    rulings = {t["invoice_id"] for t in emails if t["collections"] == "resolution"}
    assert rulings == {t["invoice_id"] for t in emails if t["collections"] == "dispute"}
    assert not [t for t in emails if t["collections"] == "promise"]


def test_customers_react_to_letters_and_holds_their_own_way(
        attempts: dict[str, AttemptResult]) -> None:
    world = _world(attempts["reference"])
    kinds = _behaviours(world)
    paid = _paid_by(world)
    for cust, kind in kinds.items():
        ways = paid.get(cust, set())
        if kind == "silent":
            assert not ways, cust
        elif kind == "hold":
            assert ways <= {"collections:hold"}, (cust, ways)
        elif kind == "letter_2":
            assert not ways & {"collections:letter_1"}, (cust, ways)
        elif kind == "on_time":
            assert ways <= {"collections:on_time"}, (cust, ways)
    assert any(kinds[c] == "letter_1" and "collections:letter_1" in w for c, w in paid.items())
    promised = {d["truth"]["customer_id"] for d in world["document_delivered"]
                if d["truth"].get("collections") == "promise"}
    assert promised and {kinds[c] for c in promised} == {"promises"}


def test_the_same_seed_gives_the_same_log(attempts: dict[str, AttemptResult],
                                          tmp_path: Path) -> None:
    loaded = load_scenario(find_scenario("collections"), tier="medium")
    again = run_attempt(loaded, 3, "reference", tmp_path / "again")
    assert again.final_hash == attempts["reference"].final_hash


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown behaviours \['nope'\] \(expected: letter_1"):
        _weights(CollectionsParams(behaviours={"nope": 1.0}))
    with pytest.raises(ValueError, match="give no customer a behaviour"):
        _weights(CollectionsParams(behaviours={"silent": 0.0}))
    with pytest.raises(ValidationError, match="keep_share"):
        CollectionsParams(keep_share=1.5)
