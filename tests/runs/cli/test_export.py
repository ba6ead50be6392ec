"""``erpsim export``: the books as beancount (checked by the real bean-check, balances agreeing
to the cent with erpsim's, per account and per party) and as Parquet."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from beancount import loader
from click.testing import CliRunner

from erp import queries as q
from erp.store import EventStore
from runs.cli import main

BEAN_CHECK = Path(sys.executable).with_name("bean-check")


def _attempt(tmp: Path, scenario: str, seed: int = 1) -> Path:
    out = tmp / f"{scenario}-{seed}"
    res = CliRunner().invoke(main, ["run", scenario, "--seed", str(seed), "--agent", "reference",
                                    "--out", str(out), "--quiet"])
    assert (out / "summary.json").is_file(), res.output
    return out


def _export(target: Path, out: Path) -> Path:
    res = CliRunner().invoke(main, ["export", "beancount", str(target), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _bean_check(path: Path) -> subprocess.CompletedProcess[str]:
    assert BEAN_CHECK.is_file(), f"bean-check missing beside {sys.executable} (make test)"
    return subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True,
                          check=False)


def _beancount_balances(path: Path) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Per account code and per (account code, party): the sum of the postings, in cents."""
    entries, errors, _ = loader.load_file(str(path))
    assert errors == []
    by_account: dict[str, int] = defaultdict(int)
    by_party: dict[tuple[str, str], int] = defaultdict(int)
    for entry in entries:
        for posting in getattr(entry, "postings", None) or ():
            code = posting.account.split(":")[1].split("-")[0]
            cents = int(posting.units.number * 100)
            assert Decimal(cents) == posting.units.number * 100
            by_account[code] += cents
            party = (posting.meta or {}).get("party")
            if party:
                by_party[code, party] += cents
    return dict(by_account), dict(by_party)


def _erpsim_balances(db: Path) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    store = EventStore.open(db)
    try:
        accounts = {r.account: r.debit - r.credit for r in q.trial_balance(store)}
        with store.engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT account, party, SUM(amount) FROM gl_lines "
                                        "WHERE party IS NOT NULL GROUP BY account, party").all()
    finally:
        store.close()
    return accounts, {(a, p): int(n) for a, p, n in rows if int(n) != 0}


@pytest.mark.parametrize("scenario", ["cash-application", "procure-to-pay", "month-end-close"])
def test_reference_attempt_exports_to_a_ledger_bean_check_accepts(scenario: str,
                                                                  tmp_path: Path) -> None:
    attempt = _attempt(tmp_path, scenario)
    ledger = _export(attempt, tmp_path / "books.beancount")
    checked = _bean_check(ledger)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ours_accounts, ours_parties = _erpsim_balances(attempt / "books.db")
    theirs_accounts, theirs_parties = _beancount_balances(ledger)
    assert {a: n for a, n in theirs_accounts.items() if n} == ours_accounts
    assert {k: n for k, n in theirs_parties.items() if n} == ours_parties


def test_a_large_demo_store_exports_and_checks(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    res = CliRunner().invoke(main, ["demo", "--out", str(db), "--days", "120"])
    assert res.exit_code == 0, res.output
    ledger = _export(db, tmp_path / "demo.beancount")
    checked = _bean_check(ledger)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ours, _ = _erpsim_balances(db)
    theirs, _ = _beancount_balances(ledger)
    assert {a: n for a, n in theirs.items() if n} == ours
    assert len(ours) > 5


def test_a_changed_balance_fails_bean_check_naming_the_account(tmp_path: Path) -> None:
    attempt = _attempt(tmp_path, "cash-application")
    ledger = _export(attempt, tmp_path / "books.beancount")
    text = ledger.read_text()
    line = next(x for x in text.splitlines() if " balance Assets:1200-" in x)
    amount = line.split()[3]
    wrong = f"{Decimal(amount) + Decimal('0.01'):.2f}"
    ledger.write_text(text.replace(line, line.replace(f" {amount} ", f" {wrong} ")))
    checked = _bean_check(ledger)
    assert checked.returncode == 1
    assert "Balance failed for 'Assets:1200-Accounts-receivable'" in checked.stdout + checked.stderr


def test_export_refuses_a_tampered_log(tmp_path: Path) -> None:
    attempt = _attempt(tmp_path, "cash-application")
    db = attempt / "books.db"
    import sqlite3

    with sqlite3.connect(db) as con:
        con.execute("UPDATE events SET payload = replace(payload, '\"total\":', '\"total\": ') "
                    "WHERE position = (SELECT MIN(position) FROM events WHERE type = "
                    "'invoice_issued')")
    res = CliRunner().invoke(main, ["export", "beancount", str(attempt)])
    assert res.exit_code == 1
    assert "does not match its content" in res.output


def test_export_names_a_missing_target(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["export", "beancount", str(tmp_path / "nope.db")])
    assert res.exit_code == 2
    assert "nope.db" in res.output


def test_parquet_holds_the_log_and_the_read_tables(tmp_path: Path) -> None:
    attempt = _attempt(tmp_path, "procure-to-pay")
    out = tmp_path / "pq"
    res = CliRunner().invoke(main, ["export", "parquet", str(attempt), "--out", str(out)])
    assert res.exit_code == 0, res.output
    events = pd.read_parquet(out / "events.parquet")
    store = EventStore.open(attempt / "books.db")
    try:
        assert len(events) == store.count()
        assert events["hash"].iloc[-1] == store.verify().head_hash
    finally:
        store.close()
    gl = pd.read_parquet(out / "gl_lines.parquet")
    assert gl["amount"].dtype == "int64" and gl["amount"].sum() == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{t}.parquet" for t in ("events", "gl_lines", "subledger", "documents", "doc_history",
                                 "statement_lines"))


def test_bean_check_is_installed_with_the_test_dependencies() -> None:
    assert shutil.which("bean-check") or BEAN_CHECK.is_file()
