"""The erpsim command line, run through click's CliRunner on real stores."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from runs.cli import main


def _copy(src: Path, dst: Path) -> Path:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    return dst


def _tamper(store: Path, position: int) -> None:
    """Change one byte of one payload, as a careless or malicious edit would."""
    with sqlite3.connect(store) as conn:
        (payload,) = conn.execute("SELECT payload FROM events WHERE position = ?",
                                  (position,)).fetchone()
        changed = (payload.replace('"', "'", 1) if "9" not in payload
                   else payload.replace("9", "8", 1))
        assert len(changed) == len(payload) and changed != payload
        conn.execute("UPDATE events SET payload = ? WHERE position = ?", (changed, position))


def test_demo_prints_the_books(tmp_path: Path) -> None:
    out = tmp_path / "d.db"
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "--days", "5", "--seed", "3"])
    assert result.exit_code == 0, result.output
    for heading in ("Trial balance", "Receivables aging", "Payables aging", "Control accounts",
                    "head hash:"):
        assert heading in result.output
    assert out.exists() and not Path(f"{out}.building").exists()


def test_demo_is_deterministic_and_replaces_an_earlier_demo(tmp_path: Path) -> None:
    out = tmp_path / "d.db"
    runner = CliRunner()
    first = runner.invoke(main, ["demo", "--out", str(out), "--days", "3"])
    second = runner.invoke(main, ["demo", "--out", str(out), "--days", "3"])
    assert first.exit_code == second.exit_code == 0
    head = [line for line in first.output.splitlines() if line.startswith("head hash:")]
    assert head and head == [line for line in second.output.splitlines()
                             if line.startswith("head hash:")]


def test_demo_refuses_to_replace_a_file_that_is_not_a_store(tmp_path: Path) -> None:
    out = tmp_path / "notes.db"
    out.write_text("my notes\n")
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "--days", "2"])
    assert result.exit_code == 2
    assert "is not an erpsim store; refusing to replace it" in result.output
    assert out.read_text() == "my notes\n"


def test_verify_ok(demo_store: Path) -> None:
    result = CliRunner().invoke(main, ["ledger", "verify", str(demo_store)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok: ")
    assert " events, 5 read tables and the audit trail match the log, head " in result.output


def test_trial_balance_balances_and_as_of_filters(demo_store: Path) -> None:
    runner = CliRunner()
    full = runner.invoke(main, ["ledger", "trial-balance", str(demo_store)])
    early = runner.invoke(main, ["ledger", "trial-balance", str(demo_store),
                                 "--as-of", "2026-01-05"])
    assert full.exit_code == early.exit_code == 0
    assert "Trial balance as of 2026-01-05" in early.output
    total = next(line for line in full.output.splitlines() if "Total" in line)
    debit, credit = [p.strip() for p in total.split("│") if p.strip()][1:3]
    assert debit == credit
    assert full.output != early.output


def test_trial_balance_rejects_a_bad_date(demo_store: Path) -> None:
    result = CliRunner().invoke(main, ["ledger", "trial-balance", str(demo_store),
                                       "--as-of", "2026-02-30"])
    assert result.exit_code == 2
    assert "'2026-02-30' is not a date (expected YYYY-MM-DD)" in result.output


def test_events_filters_by_type_and_actor(demo_store: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["ledger", "events", str(demo_store), "--type",
                                  "invoice_issued", "--format", "jsonl", "--limit", "3"])
    assert result.exit_code == 0, result.output
    rows = [orjson.loads(line) for line in result.output.splitlines()]
    assert len(rows) == 3 and {r["type"] for r in rows} == {"invoice_issued"}
    actor = runner.invoke(main, ["ledger", "events", str(demo_store), "--actor",
                                 "system:bank-feed", "--format", "jsonl"])
    rows = [orjson.loads(line) for line in actor.output.splitlines()]
    assert rows and {r["actor"] for r in rows} == {"system:bank-feed"}
    table = runner.invoke(main, ["ledger", "events", str(demo_store), "--limit", "2"])
    assert "company_set_up" in table.output


@pytest.mark.parametrize("args", [["ledger", "verify"], ["ledger", "trial-balance"],
                                  ["ledger", "events"]])
def test_a_changed_payload_byte_fails_every_command(args: list[str], demo_store: Path,
                                                    tmp_path: Path) -> None:
    store = _copy(demo_store, tmp_path / "tampered.db")
    _tamper(store, 57)
    result = CliRunner().invoke(main, [*args, str(store)])
    assert result.exit_code == 1, result.output
    assert "position 57" in result.output
    assert "does not match its content" in result.output


@pytest.mark.parametrize("args", [["ledger", "verify"], ["ledger", "trial-balance"],
                                  ["ledger", "events"]])
def test_a_missing_store_is_a_clear_error(args: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    result = CliRunner().invoke(main, [*args, str(missing)])
    assert result.exit_code == 2
    assert f"no store at {missing}: the file does not exist" in result.output
    assert not missing.exists()


def test_a_file_that_is_not_a_store_is_a_clear_error(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    result = CliRunner().invoke(main, ["ledger", "verify", str(other)])
    assert result.exit_code == 2
    assert "is not an erpsim store" in result.output


def test_bench_ledger_prints_the_eight_figures() -> None:
    result = CliRunner().invoke(main, ["bench", "ledger", "--events", "3000", "--single", "200"])
    assert result.exit_code == 0, result.output
    names = [line.split(":")[0] for line in result.stdout.splitlines()
             if not line.startswith("#")]
    assert names == ["command_path_events_per_s", "rebuild_events_per_s", "rebuild_processes",
                     "rebuild_one_process_events_per_s", "raw_insert_events_per_s",
                     "command_path_vs_raw", "rebuild_vs_raw", "single_command_txn_per_s"]
    for line in result.stdout.splitlines():
        if not line.startswith("#"):
            assert float(line.split(": ")[1]) > 0


def test_verify_against_a_recorded_head_catches_a_cut_log(demo_store: Path,
                                                         tmp_path: Path) -> None:
    store = _copy(demo_store, tmp_path / "cut.db")
    head = CliRunner().invoke(main, ["ledger", "verify", str(store)]).output.split()[-1]
    with sqlite3.connect(store) as conn:
        (last,) = conn.execute("SELECT MAX(position) FROM events").fetchone()
        conn.execute("DELETE FROM events WHERE position = ?", (last,))
    plain = CliRunner().invoke(main, ["ledger", "verify", str(store), "--chain-only"])
    assert plain.exit_code == 0  # the chain alone cannot see a cut tail
    cut = CliRunner().invoke(main, ["ledger", "verify", str(store), "--chain-only",
                                    "--expect-head", head])
    assert cut.exit_code == 1
    assert f"expected {head} (events were removed or replaced at the end" in cut.output
