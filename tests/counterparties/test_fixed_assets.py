"""counterparties.fixed_assets: the register set up in the books, the truth it records, the
papers it sends, and its refusals.

- Straight-line arithmetic: equal whole cents, the last month the remainder, nothing
  outside the life; what an asset has depreciated before a month.
- Every item the vendors sell names exactly one class's words (the policy's class of it
  is never ambiguous).
- On a real attempt (the null agent, every tier): the classes are defined, the register's
  assets are in the books at their cost with every month before the start depreciated,
  by the scenario, not by an agent; every bill's assets are what the policy makes of its
  lines (per unit with installation against the threshold, repairs never, upgrades in the
  improved asset's class); the sale's gain is the price less the book value; the same
  seed gives the same log.
- Refusals: parameters out of range name the field; a calendar that closes one month and
  a population without vendors are refused naming what is expected.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from counterparties.fixed_assets import (
    CLASSES,
    ITEMS,
    REGISTER_ITEMS,
    REPAIRS,
    UPGRADES,
    accumulated_before,
    depreciation_due,
)
from counterparties.injections import FixedAssetParams
from erp.ledger import Ledger
from runs.attempt import run_attempt
from scenarios.loader import find_scenario, load_scenario
from sim.world_events import InjectionPlanted, decode_world_event

NAME = "fixed-assets"


def test_straight_line_months() -> None:
    assert depreciation_due(100_000, 36, "2026-05", "2026-05") == 2_777
    assert depreciation_due(100_000, 36, "2026-05", "2029-04") == 100_000 - 35 * 2_777
    assert depreciation_due(100_000, 36, "2026-05", "2029-05") == 0
    assert depreciation_due(100_000, 36, "2026-05", "2026-04") == 0
    assert accumulated_before(100_000, 36, "2026-05", "2026-05") == 0
    assert accumulated_before(100_000, 36, "2025-05", "2026-05") == 12 * 2_777
    assert accumulated_before(100_000, 36, "2023-01", "2027-01") == 100_000


@pytest.mark.parametrize("class_id", sorted(ITEMS))
def test_every_item_names_exactly_its_class(class_id: str) -> None:
    for item in ITEMS[class_id]:
        named = {k for k, (_, _, _, _, words) in CLASSES.items()
                 if any(re.search(rf"\b{w}\b", item.casefold()) for w in words)}
        assert named == {class_id}, item


def test_every_line_fits_the_bills_description_column() -> None:
    work = [t.format(what=what.split(",")[0].lower(), aid="FA-000006")
            for t in (*REPAIRS, *UPGRADES) for _, what in REGISTER_ITEMS]
    longest = max([*work, *(x for items in ITEMS.values() for x in items)], key=len)
    assert len(longest) <= 44, longest  # render_bill prints 44 columns of it


def _attempt(tmp: Path, tier: str, seed: int = 4) -> tuple[dict[str, Any], Ledger, str]:
    res = run_attempt(load_scenario(find_scenario(NAME), tier=tier), seed, "null", tmp)
    ledger = Ledger.open(tmp / "books.db")
    truth = next(w.detail for e in ledger.store.read(realm="world", types=["injection_planted"])
                 if isinstance(w := decode_world_event(e.type, e.payload), InjectionPlanted)
                 and w.kind == "fixed_asset_materials")
    return truth, ledger, res.final_hash


@pytest.mark.parametrize("tier", ["easy", "medium", "hard"])
def test_the_register_opens_in_the_books(tier: str, tmp_path: Path) -> None:
    truth, ledger, _ = _attempt(tmp_path / "a", tier)
    try:
        fa = ledger.books.fixed_assets
        assert {k: (v.cost_account, v.accumulated_account, v.expense_account)
                for k, v in fa.classes.items()} == {
            k: (v["cost_account"], v["accumulated_account"], "6500")
            for k, v in truth["policy"]["classes"].items()}
        assert len(truth["register"]) == len(fa.assets) > 0  # the null agent added none
        for a in truth["register"]:
            state = fa.assets[a["asset_id"]]
            assert (state.class_id, state.amount, state.life_months) == (
                a["class_id"], a["cost"], a["life_months"])
            assert state.accumulated == accumulated_before(
                a["cost"], a["life_months"], a["in_service"][:7], "2026-05") > 0
        actors = {e.actor for e in ledger.store.read(
            realm="erp", types=["asset_class_defined", "asset_capitalized",
                                "asset_depreciated"])}
        assert actors == {"scenario:injection"}
    finally:
        ledger.close()


@pytest.mark.parametrize("tier", ["medium", "hard"])
def test_the_truth_is_what_the_policy_makes_of_the_bills(tier: str, tmp_path: Path) -> None:
    truth, ledger, _ = _attempt(tmp_path / "a", tier)
    ledger.close()
    threshold = truth["policy"]["threshold"]
    register = {a["asset_id"]: a for a in truth["register"]}
    kinds: set[str] = set()
    for b in truth["bills"]:
        assert b["total"] == sum(x["amount"] for x in b["lines"])
        lines = b["lines"]
        due = []
        for n, x in enumerate(lines, start=1):
            kinds.add(x["kind"])
            assert x["account"] == ("6050" if x["kind"] in ("repair", "upgrade") else "6060")
            if x["kind"] == "goods":
                cost = x["amount"] + sum(y["amount"] for y in lines if y["of_line"] == n)
                if cost >= threshold * x["quantity"]:
                    due.append(cost)
            elif x["kind"] == "upgrade":
                due.append(x["amount"])
                aid = re.search(r"FA-\d+", x["description"])
                assert aid is not None
                assert any(a["class_id"] == register[aid.group(0)]["class_id"]
                           and a["amount"] == x["amount"] for a in b["assets"])
        assert [a["amount"] for a in b["assets"]] == due
        for a in b["assets"]:
            assert a["life_months"] == truth["policy"]["classes"][a["class_id"]]["life_months"]
            assert a["in_service"] == b["in_service"]
    assert {"goods", "install", "repair"} <= kinds
    sale = truth["disposal"]
    sold = register[sale["asset_id"]]
    assert sale["gain"] == sale["proceeds"] - (sold["cost"] - sale["accumulated"])
    assert sale["period"] == "2026-06" and sale["date"].startswith("2026-06")
    if tier == "hard":
        assert len(truth["quotes"]) == 2
        assert any(b["in_service"][:7] > b["issued_on"][:7] for b in truth["bills"])


def test_the_same_seed_gives_the_same_log(tmp_path: Path) -> None:
    hashes = {_attempt(tmp_path / str(n), "medium", 5)[2] for n in range(2)}
    other = _attempt(tmp_path / "other", "medium", 6)[2]
    assert len(hashes) == 1 and other not in hashes


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("bills_per_month", 0, "greater than or equal to 1"),
    ("register_assets", 7, "less than or equal to 6"),
    ("below_share", 1.5, "less than or equal to 1"),
    ("quotes", -1, "greater than or equal to 0"),
])
def test_parameters_out_of_range_are_refused(field: str, value: Any, expected: str) -> None:
    with pytest.raises(ValidationError) as info:
        FixedAssetParams.model_validate({field: value})
    assert field in str(info.value) and expected in str(info.value)


def _variant(tmp: Path, old: str, new: str) -> Path:
    src = find_scenario(NAME).parent
    dst = tmp / NAME
    shutil.copytree(src, dst)
    spec = dst / "scenario.yaml"
    text = spec.read_text(encoding="utf-8")
    assert old in text
    spec.write_text(text.replace(old, new), encoding="utf-8")
    return spec


def test_a_calendar_that_closes_one_month_is_refused(tmp_path: Path) -> None:
    spec = _variant(tmp_path, "end: 2026-07-01", "end: 2026-06-01")
    spec.write_text(spec.read_text(encoding="utf-8").replace(
        "dates: [2026-06-01, 2026-07-01]", "dates: [2026-06-01]"), encoding="utf-8")
    with pytest.raises(Exception, match=re.escape("closes 1 month(s); expected at least 2")):
        run_attempt(load_scenario(spec, tier="easy"), 1, "null", tmp_path / "a")


def test_a_population_without_vendors_is_refused(tmp_path: Path) -> None:
    spec = _variant(tmp_path, "    vendors: 4\n", "    vendors: 0\n")
    with pytest.raises(Exception, match="the population has no vendors"):
        run_attempt(load_scenario(spec, tier="easy"), 1, "null", tmp_path / "a")
