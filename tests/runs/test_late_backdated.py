"""The ``late_backdated`` operator (class ``date``): a dated command held back from its turn
to the next and submitted there dated as its own turn's day, the work of a clerk who catches
up later and backdates it; a rule "on the day" (apply a receipt at the first run after the
deposit) has a mistake that breaks it."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from erp import commands as c
from runs.attempt import AttemptResult, Recording, run_attempt
from runs.validate import (
    CLASSES,
    Mutation,
    _candidates,
    _run_mutant,
    opted_in,
    sample_mutations,
)
from scenarios.loader import LoadedScenario, find_scenario, load_scenario


def test_only_a_dated_command_of_a_turn_with_a_next_one_gets_the_mutant(
        tmp_path: Path) -> None:
    for turn in (1, 2):
        (tmp_path / "turns" / f"{turn:02d}").mkdir(parents=True)
    apply = c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount=100)
    rec = Recording(commands={1: [apply, c.ApproveBill(bill_id="B1")], 2: [apply]})
    late = _candidates(rec, tmp_path / "turns")["late_backdated"]
    # the undated approval has no date to move back; the last turn has no next turn
    assert [(m.turn, m.index, m.command) for m in late] == [(1, 0, "ApplyReceipt")]
    assert CLASSES["late_backdated"] == "date"


@pytest.fixture(scope="module")
def collections(tmp_path_factory: pytest.TempPathFactory) -> tuple[
        LoadedScenario, AttemptResult, Recording]:
    loaded = load_scenario(find_scenario("collections"))
    rec = Recording()
    res = run_attempt(loaded, 1, "reference", tmp_path_factory.mktemp("coll") / "a",
                      record=rec)
    assert res.summary["verdict"]["status"] == "accepted"
    return loaded, res, rec


def test_a_receipt_applied_a_run_late_and_dated_back_is_caught(
        collections: tuple[LoadedScenario, AttemptResult, Recording], tmp_path: Path) -> None:
    loaded, res, rec = collections
    # seed 1's second application of the June 8 run: its invoice gets no letter and its
    # customer no hold either way, so only the receipts' own check can tell
    m = Mutation("late_backdated", 2, 1, "ApplyReceipt")
    assert m in _candidates(rec, res.out / "turns")["late_backdated"]
    outcome = _run_mutant(loaded, 1, rec, res, m, tmp_path)
    assert outcome.change == ("held from turn 2 (2026-06-08) to turn 3 (2026-06-15), dated "
                              f"{date(2026, 6, 8)}")
    assert not outcome.equivalent and outcome.caught
    assert outcome.failed == ("receipts-applied-as-paid",)


def test_a_purchase_order_is_dated_by_its_order_date_and_coded_on_its_lines() -> None:
    po = c.IssuePurchaseOrder(vendor_id="V1", order_date=date(2026, 7, 1), lines=(
        c.PurchaseOrderLineIn(item="X-1", quantity=1, unit_price=100),))
    rec = Recording(commands={1: [po], 2: [po]})
    cands = _candidates(rec)
    # its date can move to the previous period or be held to the next turn; its lines'
    # account (the books' default) to another of the same type
    assert [m.turn for m in cands["wrong_period"]] == [1, 2]
    assert [m.turn for m in cands["late_backdated"]] == [1]
    assert [m.turn for m in cands["other_account"]] == [1, 2]


def test_the_operator_is_drawn_only_where_a_rule_of_the_policy_names_it(
        tmp_path: Path) -> None:
    # collections and three-way-match ask for work at its own run or turn (policy.yaml
    # names the operator); a table whose rules do not name it draws none
    assert opted_in(load_scenario(find_scenario("collections"))) == {"late_backdated"}
    assert opted_in(load_scenario(find_scenario("three-way-match"))) == {"late_backdated"}
    loaded = load_scenario(find_scenario("collections"))
    (tmp_path / "policy.yaml").write_text(
        (loaded.base_dir / "policy.yaml").read_text().replace(", late_backdated", ""))
    assert opted_in(replace(loaded, base_dir=tmp_path)) == frozenset()
    for turn in (1, 2):
        (tmp_path / "turns" / f"{turn:02d}").mkdir(parents=True)
    apply = c.ApplyReceipt(receipt_id="R1", invoice_id="I1", amount=100)
    rec = Recording(commands={1: [apply], 2: [apply]})
    assert "late_backdated" not in _candidates(rec, tmp_path / "turns", frozenset())
    drawn = sample_mutations(rec, per_operator=6, seed=1, turns=tmp_path / "turns",
                             opt_in=frozenset())
    assert drawn and "late_backdated" not in {m.op for m in drawn}


@pytest.mark.parametrize("text", ["rules: [", "- 1\n- 2\n", "rules:\n  - mutants: 7\n", ""])
def test_a_policy_table_that_cannot_be_read_opts_in_nothing(tmp_path: Path, text: str) -> None:
    loaded = load_scenario(find_scenario("collections"))
    (tmp_path / "policy.yaml").write_text(text)
    assert opted_in(replace(loaded, base_dir=tmp_path)) == frozenset()
