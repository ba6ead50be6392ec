"""A campaign whose books are in PostgreSQL, graded again: ``sweep --store-url``, then
``rescore`` (no transition), ``check`` and ``reconcile`` of one attempt; a wrong URL is a
grader error (exit 3) and a tampered attempt is refused (exit 1), neither with a receipt."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from erp.store import EventStore
from runs.campaigns.ledger import ResultsLedger
from runs.cli import main
from tests.conftest import PG_URL, drop_pg_schema, require_postgres
from tests.runs.test_grading import FILE_CHECK, flat, small_scenario

pytestmark = pytest.mark.postgres

CHECKS = [{"type": "trial_balance_zero", "name": "tb"},
          {"type": "control_ties", "account": "1200", "name": "ar-ties"}, FILE_CHECK]


def invoke(*args: object) -> Result:
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, Path]]:
    """``(results dir, label, scenario)`` of a swept campaign with books in PostgreSQL."""
    require_postgres()
    tmp = tmp_path_factory.mktemp("pgc")
    sc = small_scenario(tmp, CHECKS)
    label = f"pg-{os.getpid()}"
    results = tmp / "results"
    res = invoke("sweep", sc, "--seeds", "1", "--systems", "reference,null", "--label", label,
                 "--results-dir", results, "--store-url", PG_URL, "--quiet")
    assert res.exit_code == 0, res.output
    yield results, label, sc
    for summary in (results / label).rglob("summary.json"):
        drop_pg_schema(json.loads(summary.read_text())["store"]["schema"])


def _attempt(results: Path, label: str, system: str) -> Path:
    return results / label / "attempts" / "cash-application" / system / "seed-1" / "rep-1"


def _receipts(results: Path, label: str, scorer: str) -> list[Any]:
    with ResultsLedger.open(results / label / "results.db") as ledger:
        return list(ledger.receipts(scorer))


def test_summary_records_a_url_without_password_and_the_schema(
        campaign: tuple[Path, str, Path]) -> None:
    results, label, _ = campaign
    store = json.loads((_attempt(results, label, "reference") / "summary.json").read_text())[
        "store"]
    assert store["url"] == PG_URL.replace("postgresql://", "postgresql+psycopg://")
    assert store["schema"].startswith("c_") and " schema " not in store["url"]
    assert not (_attempt(results, label, "reference") / "books.db").exists()
    EventStore.open(store["url"], schema=store["schema"]).close()  # a URL that opens


def test_rescore_current_shows_no_transition_and_check_grades_one(
        campaign: tuple[Path, str, Path]) -> None:
    results, label, sc = campaign
    res = invoke("rescore", label, "--scorer", "current", "--scenario-dir", sc.parent.parent,
                 "--results-dir", results)
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "receipts: 2 written" in out or "receipts: 0 written, 2 already stored" in out
    assert "reference: no verdict changed" in out and "null: no verdict changed" in out
    assert "no verdict" not in out.replace("no verdict changed", "").replace(
        "-> no verdict", "")
    for rc in _receipts(results, label, "current"):
        assert rc.verdict["status"] in ("accepted", "rejected")
        assert rc.verdict["books"]["verified"] == "rebuilt-and-compared"
    ref = invoke("check", _attempt(results, label, "reference"), "--scenario", sc)
    assert ref.exit_code == 0, ref.output
    null = invoke("check", _attempt(results, label, "null"), "--scenario", sc)
    assert null.exit_code == 1, null.output
    rec = invoke("reconcile", _attempt(results, label, "reference"))
    assert rec.exit_code in (0, 1) and "reconciliation: " in rec.output


def test_rescore_at_a_wrong_url_is_a_grader_error_without_receipts(
        campaign: tuple[Path, str, Path], tmp_path: Path) -> None:
    results, label, sc = campaign
    scorer = tmp_path / "nowhere-scorer"
    scorer.mkdir()
    (scorer / "cash-application.yaml").write_text(yaml.safe_dump({"checks": CHECKS}))
    res = invoke("rescore", label, "--scorer", scorer, "--scenario-dir", sc.parent.parent,
                 "--results-dir", results,
                 "--store-url", "postgresql://postgres@127.0.0.1:5432/no_such_db")
    assert res.exit_code == 3, res.output
    out = flat(res.output)
    assert "2 attempt(s) not graded, a grader error (no receipt; no verdict above)" in out
    assert "no_such_db" in out and "receipts: 0 written" in out
    assert _receipts(results, label, "nowhere-scorer") == []


def test_rescore_refuses_an_attempt_whose_tables_were_edited(
        campaign: tuple[Path, str, Path], tmp_path: Path) -> None:
    results, label, sc = campaign
    store_rec = json.loads((_attempt(results, label, "null") / "summary.json").read_text())[
        "store"]
    scorer = tmp_path / "tamper-scorer"
    scorer.mkdir()
    (scorer / "cash-application.yaml").write_text(yaml.safe_dump({"checks": CHECKS}))
    store = EventStore.open(store_rec["url"], schema=store_rec["schema"])
    try:
        with store.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE gl_lines SET amount = amount + 1 WHERE position = "
                                 "(SELECT MAX(position) FROM gl_lines) AND seq = 0")
        res = invoke("rescore", label, "--scorer", scorer, "--scenario-dir", sc.parent.parent,
                     "--results-dir", results)
        assert res.exit_code == 1, res.output
        out = flat(res.output)
        assert "1 attempt(s) refused, their books do not verify" in out
        assert "cash-application 1 null 1" in out and "gl_lines" in out
        receipts = _receipts(results, label, "tamper-scorer")
        assert [rc.system for rc in receipts] == ["reference"]
    finally:
        with store.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE gl_lines SET amount = amount - 1 WHERE position = "
                                 "(SELECT MAX(position) FROM gl_lines) AND seq = 0")
        store.close()
