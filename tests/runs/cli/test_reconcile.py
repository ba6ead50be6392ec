"""``erpsim reconcile`` on real attempts: a null month-end close does not tie and says why,
item by item; the reference ties; the CSV holds every row exactly."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.attempt import run_attempt
from runs.cli import main
from scenarios.loader import find_scenario, load_scenario


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    loaded = load_scenario(find_scenario("month-end-close"))
    root = tmp_path_factory.mktemp("mec")
    return {agent: run_attempt(loaded, 1, agent, root / agent).out
            for agent in ("null", "reference")}


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_null_close_does_not_tie_and_itemizes_why(attempts: dict[str, Path],
                                                    tmp_path: Path) -> None:
    out = tmp_path / "rec.csv"
    res = CliRunner().invoke(main, ["reconcile", str(attempts["null"]), "--csv", str(out),
                                    "--all-items"])
    assert res.exit_code == 1, res.output
    text = flat(res.output)
    assert "reconciliation: DOES NOT TIE" in text
    assert "receipt_not_applied" in text and "bill_not_entered" in text
    rows = list(csv.DictReader(out.open()))
    kinds = {r["kind"] for r in rows}
    assert {"balance", "subledger", "receipt_not_applied", "bill_not_entered"} <= kinds
    unapplied = [r for r in rows if r["account"] == "2150" and r["explained"] == "no"
                 and r["kind"] != "subledger" and r["kind"] != "balance"]
    assert unapplied and all(r["document"].startswith("RCT-") for r in unapplied)
    bills = [r for r in rows if r["kind"] == "bill_not_entered"]
    assert bills and all(r["party"].startswith("V") and r["books_amount"] == "0.00"
                         for r in bills)
    # every account's items add up exactly to its difference from the outside records
    for account in {r["account"] for r in rows}:
        mine = [r for r in rows if r["account"] == account]
        balance = next(r for r in mine if r["kind"] == "balance")
        if balance["external_amount"] == "":
            continue
        sub = next(r for r in mine if r["kind"] == "subledger")
        items = [r for r in mine if r["kind"] not in ("balance", "subledger")]
        cents = sum(round(float(r["difference"]) * 100) for r in items)
        expected = (round(float(sub["external_amount"]) * 100)
                    - round(float(balance["external_amount"]) * 100))
        assert cents == expected, account


def test_the_reference_close_ties(attempts: dict[str, Path]) -> None:
    res = CliRunner().invoke(main, ["reconcile", str(attempts["reference"])])
    assert res.exit_code == 0, res.output
    assert "reconciliation: ties (0 unexplained item(s))" in flat(res.output)


@pytest.mark.parametrize("day", ["2026-05-06", "2026-05-08", "2026-05-13", "2026-05-20"])
def test_the_reference_ties_between_its_weekly_turns(attempts: dict[str, Path],
                                                     day: str) -> None:
    """What reached the company after the clerk's last turn (a bill, a deposit) is a timing
    item until the next turn, as the per-date controls judge it: the attempt's turn dates
    come from its summary.json."""
    res = CliRunner().invoke(main, ["reconcile", str(attempts["reference"]), "--as-of", day])
    assert res.exit_code == 0, res.output
    text = flat(res.output)
    assert f"as of {day}" in text and "reconciliation: ties (0 unexplained item(s))" in text


def test_reconcile_refuses_what_is_not_an_attempt(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["reconcile", str(tmp_path)])
    assert res.exit_code == 2 and "not a finished attempt folder" in res.output
    res = CliRunner().invoke(main, ["reconcile", str(tmp_path), "--as-of", "2026-13-01"])
    assert res.exit_code == 2 and "is not a date" in res.output
