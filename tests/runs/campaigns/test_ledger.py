"""The results ledger: typed rows that read back equal, one row per attempt, error rows
replaced only by a rerun, rescoring receipts bound to their contents."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from runs.campaigns.ledger import (
    AttemptRow,
    DuplicateAttempt,
    Receipt,
    ResultsError,
    ResultsLedger,
    read_receipts,
    write_receipt,
)


def row(**changes: object) -> AttemptRow:
    base = AttemptRow(
        label="L", scenario="cash-application", kind="scenario", seed=3, system="reference",
        repetition=1, status="completed", exit_codes=(0, None, 2), grader_error=None,
        verdict_status="accepted", accepted=True,
        checks=({"name": "c#1", "passed": True, "required": True, "detail": "ok",
                 "metrics": {"rows": 2}},),
        required_passed=1, required_total=1, check_fraction=1.0,
        turn_durations=(0.5, 1.25, 0.0), duration_s=2.5, input_tokens=1200,
        output_tokens=80, cost_usd=0.0125, outputs={"unapplied.csv": "ab" * 32},
        final_hash="cd" * 32, scorer={"name": "erpsim-checks", "version": "0.1.0",
                                      "definitions_sha256": "ef" * 32},
        attempt_dir="attempts/cash-application/reference/seed-3/rep-1",
        started_at="2026-01-01T00:00:00.000000+00:00",
        finished_at="2026-01-01T00:00:02.500000+00:00", error=None)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_rows_read_back_equal_and_ordered(tmp_path: Path) -> None:
    with ResultsLedger.create(tmp_path / "results.db", label="L") as ledger:
        unknown = row(seed=1, system="null", input_tokens=None, output_tokens=None,
                      cost_usd=None, exit_codes=(None,), verdict_status="rejected",
                      accepted=False, check_fraction=0.0, required_passed=0)
        errored = row(seed=2, status="infrastructure_error", exit_codes=(), checks=(),
                      verdict_status=None, accepted=False, required_passed=None,
                      required_total=None, check_fraction=None, turn_durations=(),
                      outputs={}, final_hash=None, scorer=None, error="OSError: disk full")
        for r in (row(), unknown, errored):
            ledger.write(r)
        assert ledger.label == "L"
    with ResultsLedger.open(tmp_path / "results.db") as ledger:
        assert ledger.rows() == [unknown, errored, row()]
        assert ledger.keys() == {r.key for r in (row(), unknown, errored)}
        assert ledger.statuses()[errored.key] == "infrastructure_error"
    assert AttemptRow.from_json(row().to_json()) == row()


def test_an_attempt_is_recorded_once(tmp_path: Path) -> None:
    with ResultsLedger.create(tmp_path / "results.db") as ledger:
        ledger.write(row())
        with pytest.raises(DuplicateAttempt, match=r"attempt cash-application seed 3 "
                                                   r"reference rep 1 has a row already "
                                                   r"\(status completed\)"):
            ledger.write(row(accepted=False))
        assert ledger.rows() == [row()]


def test_only_an_infrastructure_error_is_replaced_and_it_is_kept_apart(tmp_path: Path) -> None:
    err = row(status="infrastructure_error", error="boom", verdict_status=None,
              accepted=False)
    with ResultsLedger.create(tmp_path / "results.db") as ledger:
        ledger.write(err)
        with pytest.raises(DuplicateAttempt):
            ledger.write(row(), replace_error=False)
        ledger.write(row())
        assert ledger.rows() == [row()]
        assert ledger.replaced() == [err]
        with pytest.raises(ResultsError, match="status 'done' is not one of"):
            ledger.write(row(seed=9, status="done"))


def test_the_database_refuses_a_second_row_for_a_key(tmp_path: Path) -> None:
    with ResultsLedger.create(tmp_path / "results.db") as ledger:
        ledger.write(row())
    conn = sqlite3.connect(tmp_path / "results.db")
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        conn.execute("INSERT INTO attempts SELECT * FROM attempts")
    conn.close()


def test_create_never_overwrites_and_open_refuses_foreign_files(tmp_path: Path) -> None:
    ResultsLedger.create(tmp_path / "results.db").close()
    with pytest.raises(ResultsError, match="exists already"):
        ResultsLedger.create(tmp_path / "results.db")
    with pytest.raises(ResultsError, match="no results ledger at"):
        ResultsLedger.open(tmp_path / "nope.db")
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(ResultsError, match="is not an erpsim results ledger"):
        ResultsLedger.open(tmp_path / "junk.db")


def test_a_ledger_without_its_attempts_table_is_refused_and_left_as_it_was(
        tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with ResultsLedger.create(path) as ledger:
        ledger.write(row())
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE attempts")
    before = path.read_bytes()
    with pytest.raises(ResultsError, match=r"no attempts table .*nothing was changed"):
        ResultsLedger.open(path)
    assert path.read_bytes() == before
    with sqlite3.connect(path) as conn:
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
    assert "attempts" not in tables


def test_an_older_ledger_gets_the_tables_added_since(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with ResultsLedger.create(path) as ledger:
        ledger.write(row())
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE receipts")
    with ResultsLedger.open(path) as ledger:
        assert len(list(ledger.rows())) == 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM receipts").fetchone() == (0,)


def test_receipts_bind_a_new_verdict_to_outputs_scorer_and_original(tmp_path: Path) -> None:
    verdict = {"status": "rejected", "accepted": False, "results": []}
    receipt = Receipt.create(row().key, scorer_name="strict-v2",
                             scorer_definitions_sha256="12" * 32, verdict=verdict,
                             original_verdict_status="accepted",
                             original_verdict_sha256="34" * 32,
                             outputs={"unapplied.csv": "ab" * 32})
    assert receipt.verify()
    again = Receipt.create(row().key, scorer_name="strict-v2",
                           scorer_definitions_sha256="12" * 32, verdict=verdict,
                           original_verdict_status="accepted",
                           original_verdict_sha256="34" * 32,
                           outputs={"unapplied.csv": "ab" * 32}, created_at="later")
    assert again.receipt_sha256 == receipt.receipt_sha256  # the time is not bound
    with ResultsLedger.create(tmp_path / "results.db") as ledger:
        with pytest.raises(ResultsError, match="no such attempt"):
            write_receipt(ledger, receipt)
        ledger.write(row())
        assert write_receipt(ledger, receipt) is True
        assert write_receipt(ledger, again) is False  # the same receipt is stored once
        other = Receipt.create(row().key, scorer_name="other", scorer_definitions_sha256="56" * 32,
                               verdict=verdict, original_verdict_status="accepted",
                               original_verdict_sha256=None, outputs={})
        assert ledger.write_receipt(other)
        assert read_receipts(ledger) == [receipt, other]
        assert ledger.receipts("strict-v2") == [receipt]
        tampered = dataclasses.replace(receipt, verdict={"status": "accepted"})
        assert not tampered.verify()
        with pytest.raises(ResultsError, match="receipt_sha256 does not match"):
            ledger.write_receipt(tampered)
        assert ledger.rows() == [row()]  # the original verdict stays as it was
