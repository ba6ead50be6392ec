"""``erpsim export`` under adversarial books and bad input: Parquet files that hold every row
of the store exactly, with the store's column types even when a table is empty or a column
all NULL, in primary-key order on either backend; read tables that do not match the log
refused; a failed export that leaves the folder as it was; bad stores and options refused in
one line naming the value (exit 2, never a traceback); the beancount ledger on standard output
in UTF-8 whatever the terminal's encoding."""

from __future__ import annotations

import errno
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from erp import commands as c
from erp.beancount import export_beancount
from erp.ledger import Ledger
from erp.schema import metadata
from erp.store import EventStore
from runs.cli import main
from runs.cli.export import PARQUET_TABLES, arrow_schema
from tests.erp.test_beancount_audit import CONTROLLER, DAY, build_adversarial_books

PARQUET_FILES = sorted(f"{t}.parquet" for t in PARQUET_TABLES)


def _target_args(store_target: tuple[str, str | None]) -> list[str]:
    target, schema = store_target
    return [target, *(["--schema", schema] if schema else [])]


def _store_rows(store: EventStore, table: str) -> list[tuple[Any, ...]]:
    t = metadata.tables[table]
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(
            sa.select(*t.columns).order_by(*t.primary_key.columns)).all()]


def _adversarial(ledger: Ledger) -> None:
    """The adversarial books, world events (a float time, unicode, NULL causation) and
    statement lines of quotes, newlines and unicode."""
    build_adversarial_books(ledger)
    ledger.record("world", [("world:customer:C:1/a.b", "payment_sent",
                             '{"amount": 1, "note": "Ü \\"q\\"\\n"}')],
                  actor="counterparty:Ü", business_date=DAY, sim_time=0.1 + 0.2)
    ledger.execute(c.ImportStatementLines(bank_account_id="B-1", lines=(
        c.StatementLineIn(line_id="L/1", entry_date=DAY, amount=1, description='d "q"\n\\ é',
                          counterparty="Ü;:\t"),
        c.StatementLineIn(line_id="L/0", entry_date=DAY, amount=-1),
    )), **CONTROLLER)


def test_parquet_holds_every_row_exactly_with_the_store_s_column_types(
        ledger: Ledger, store_target: tuple[str, str | None], tmp_path: Path) -> None:
    _adversarial(ledger)
    out = tmp_path / "pq"
    res = CliRunner().invoke(main, ["export", "parquet", *_target_args(store_target),
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == PARQUET_FILES
    written = {t: pq.read_table(out / f"{t}.parquet") for t in PARQUET_TABLES}
    for table, data in written.items():
        rows = [tuple(r.values()) for r in data.to_pylist()]
        assert rows == _store_rows(ledger.store, table), table  # in primary-key order
        assert rows, f"{table}: the books should fill every table"
    for table, data in written.items():
        assert data.schema.equals(arrow_schema(metadata.tables[table])), table
    events = pd.read_parquet(out / "events.parquet")
    assert events["sim_time"].dropna().tolist() == [0.1 + 0.2]
    assert events["causation_id"].isna().sum() == 1
    gl = pd.read_parquet(out / "gl_lines.parquet")
    assert gl["amount"].dtype == "int64" and int(gl["amount"].sum()) == 0


def test_parquet_of_an_empty_store_keeps_every_column_s_type(
        store: EventStore, store_target: tuple[str, str | None], tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["export", "parquet", *_target_args(store_target),
                                    "--out", str(tmp_path / "pq")])
    assert res.exit_code == 0, res.output
    for table in PARQUET_TABLES:
        schema = pq.read_schema(tmp_path / "pq" / f"{table}.parquet")
        assert schema.equals(arrow_schema(metadata.tables[table])), table
        assert pa.null() not in schema.types
    events = pq.read_schema(tmp_path / "pq" / "events.parquet")
    assert (events.field("position").type, events.field("sim_time").type,
            events.field("payload").type) == (pa.int64(), pa.float64(), pa.string())
    assert not events.field("position").nullable and events.field("sim_time").nullable


@pytest.fixture
def books(tmp_path: Path) -> Iterator[Path]:
    """An SQLite store of the adversarial books."""
    db = tmp_path / "books.db"
    led = Ledger.open(db, create=True)
    try:
        _adversarial(led)
    finally:
        led.close()
    yield db


def test_read_tables_that_do_not_match_the_log_are_refused(books: Path, tmp_path: Path) -> None:
    with sqlite3.connect(books) as con:
        con.execute("UPDATE gl_lines SET amount = amount + 1 WHERE position = "
                    "(SELECT MIN(position) FROM gl_lines)")
    out = tmp_path / "new" / "pq"
    res = CliRunner().invoke(main, ["export", "parquet", str(books), "--out", str(out)])
    assert res.exit_code == 1, res.output
    assert "gl_lines" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "new").exists()


def test_a_file_in_the_way_leaves_the_folder_as_it_was(books: Path, tmp_path: Path) -> None:
    out = tmp_path / "pq"
    (out / "documents.parquet").mkdir(parents=True)
    (out / "events.parquet").write_bytes(b"an earlier export")
    res = CliRunner().invoke(main, ["export", "parquet", str(books), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert (f"error: --out {out}: {out / 'documents.parquet'} is a folder, not a file it "
            "could replace; nothing was written") in " ".join(res.output.split())
    assert sorted(p.name for p in out.iterdir()) == ["documents.parquet", "events.parquet"]
    assert (out / "events.parquet").read_bytes() == b"an earlier export"


def test_a_write_that_fails_midway_leaves_nothing_behind(books: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    written = []
    real = pq.write_table

    def fill_the_disk(table: Any, where: Any, *args: Any, **kwargs: Any) -> None:
        if len(written) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(where)
        real(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", fill_the_disk)
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "gl_lines.parquet").write_bytes(b"an earlier export")
    for out in (tmp_path / "new" / "deeper" / "pq", kept):
        written.clear()
        res = CliRunner().invoke(main, ["export", "parquet", str(books), "--out", str(out)])
        assert res.exit_code == 2, res.output
        assert (f"error: --out {out}: cannot be written: No space left on device"
                in " ".join(res.output.split()))
        assert len(written) == 3 and "Traceback" not in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["books.db", "kept"]
    assert [p.name for p in kept.iterdir()] == ["gl_lines.parquet"]
    assert (kept / "gl_lines.parquet").read_bytes() == b"an earlier export"


@pytest.mark.parametrize("command", [["beancount"], ["parquet", "--out", "{tmp}/pq"]])
def test_schema_is_refused_for_an_sqlite_store(books: Path, tmp_path: Path,
                                               command: list[str]) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    res = CliRunner().invoke(main, ["export", args[0], str(books), "--schema", "s", *args[1:]])
    assert res.exit_code == 2, res.output
    assert (f"error: --schema s: {books} is an SQLite store, which has no schemas (--schema "
            "is for a PostgreSQL URL)") in " ".join(res.output.split())
    assert not (tmp_path / "pq").exists()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BAD_STORES = {
    "text": ("{tmp}/notes.txt", "is not an erpsim store"),
    "zero-bytes": ("{tmp}/zero.db", "is not an erpsim store"),
    "missing": ("{tmp}/missing.db", "no store at"),
    "folder": ("{tmp}/folder", "is a folder, not a store"),
    "closed-port": ("postgresql://postgres@127.0.0.1:{port}/test", "cannot connect to PostgreSQL"),
    "unknown-url": ("mysql://h/db", "unsupported store URL"),
}


@pytest.mark.parametrize("kind", list(BAD_STORES))
@pytest.mark.parametrize("command", ["beancount", "parquet"])
def test_a_bad_store_is_one_line_naming_it(tmp_path: Path, kind: str, command: str) -> None:
    (tmp_path / "notes.txt").write_text("not a store\n")
    (tmp_path / "zero.db").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    template, why = BAD_STORES[kind]
    target = template.replace("{tmp}", str(tmp_path)).replace("{port}", str(_closed_port()))
    out = tmp_path / "out" / ("pq" if command == "parquet" else "books.beancount")
    res = CliRunner().invoke(main, ["export", command, target, "--out", str(out)])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    shown = target.split("://")[-1].split("/")[-1] if "://" in target else target
    assert shown in lines[0] and why in lines[0]
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "zero.db").read_bytes() == b""


def test_the_summary_line_says_when_the_balances_are_asserted(
        store: EventStore, store_target: tuple[str, str | None], tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["export", "beancount", *_target_args(store_target),
                                    "--out", str(tmp_path / "e.beancount")])
    assert res.exit_code == 0, res.output
    assert "(0 transactions, 0 accounts, no postings, no balances asserted)" in res.output


def test_the_ledger_on_standard_output_is_utf8_whatever_the_terminal(books: Path) -> None:
    env = {**os.environ, "PYTHONIOENCODING": "latin-1", "PYTHONUTF8": "0"}
    done = subprocess.run([sys.executable, "-m", "runs.cli", "export", "beancount", str(books)],
                          capture_output=True, env=env, check=False, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    store = EventStore.open(books)
    try:
        assert done.stdout == export_beancount(store).text.encode("utf-8")
    finally:
        store.close()
    assert "€".encode() in done.stdout


def test_a_full_standard_output_is_one_line(books: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "runs.cli", "export", "beancount",
                               str(books)], stdout=full, stderr=subprocess.PIPE, check=False,
                              timeout=120)
    assert done.returncode == 2
    assert done.stderr.decode() == ("error: the ledger cannot be written to standard output: "
                                    "No space left on device\n")


def test_the_dates_of_the_books_may_reach_the_last_day(books: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["export", "beancount", str(books), "--out",
                                    str(tmp_path / "b.beancount")])
    assert res.exit_code == 0, res.output
    assert "balances asserted before 9999-12-31 (no day follows it)" in res.output
    assert date.max.isoformat() in (tmp_path / "b.beancount").read_text(encoding="utf-8")
