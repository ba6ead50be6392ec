"""``erpsim export``: an attempt's or a store's books in other tools' formats."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from erp.beancount import export_beancount
from erp.store import EventStore
from runs.cli.common import OUT_DIR, OUT_FILE, cannot_write, errors, fail, open_verified
from runs.files import write_text_atomic


def open_books(target: str, schema: str | None) -> EventStore:
    """A verified store: an attempt folder's books, or a store file or URL
    (:func:`runs.cli.common.open_verified`). ``--schema`` names a schema of a PostgreSQL
    URL only: given with an SQLite file it is refused, not ignored."""
    return open_verified(target, schema)


@click.group("export")
def export_group() -> None:
    """The books of an attempt or a store in other tools' formats (beancount, Parquet)."""


_schema_opt = click.option("--schema", default=None,
                           help="PostgreSQL schema of the store (PostgreSQL URLs only).")


@export_group.command("beancount")
@click.argument("target", metavar="ATTEMPT|STORE")
@click.option("--out", "out", type=OUT_FILE, default=None,
              help="Write the ledger here (default: print it, in UTF-8).")
@_schema_opt
def beancount_command(target: str, out: Path | None, schema: str | None) -> None:
    """The books as a beancount ledger, folded from the verified event log.

    Accounts are opened from the chart under Assets, Liabilities, Equity, Income and
    Expenses, each with its erpsim code and title as metadata (a code that is no beancount
    name, such as 1000.10, is written X--1000-D10; an account posted to that the chart
    never opened is opened too); each posting event is one transaction dated by its
    accounting date, with the party and document of every posting as metadata; the trial
    balance closes the file as zero-tolerance balance assertions. `bean-check FILE` checks
    it; `fava FILE` browses it.
    """
    with errors():
        store = open_books(target, schema)
        try:
            exported = export_beancount(store)
        finally:
            store.close()
    if out is None:  # UTF-8, as beancount reads it, whatever the terminal's encoding
        try:
            sys.stdout.flush()
            sys.stdout.buffer.write(exported.text.encode("utf-8"))
            sys.stdout.buffer.flush()
        except OSError as e:
            if e.errno == errno.EPIPE:  # a reader that stopped early: click ends quietly
                raise
            fail(f"the ledger cannot be written to standard output: {e.strerror or e}")
        return
    try:
        write_text_atomic(out, exported.text)
    except OSError as e:
        cannot_write("--out", out, e)
    asserted = (f"balances asserted {exported.asserted}" if exported.asserted
                else "no postings, no balances asserted")
    click.echo(f"beancount: {out} ({exported.transactions} transactions, "
               f"{len(exported.accounts)} accounts, {asserted})")


PARQUET_TABLES = ("events", "gl_lines", "subledger", "documents", "doc_history",
                  "statement_lines")
"""What ``export parquet`` writes, one file each."""


def arrow_schema(table: Any) -> Any:
    """The Parquet schema of one of the store's tables, from its declaration in
    ``erp.schema`` (never from its rows: an empty table or a column that holds only NULLs
    keeps its type): integers as int64, floats as float64, text as UTF-8 strings, each
    nullable as the column is."""
    import pyarrow as pa
    import sqlalchemy as sa

    def arrow_type(column: sa.Column[Any]) -> Any:
        if isinstance(column.type, sa.Integer):
            return pa.int64()
        if isinstance(column.type, sa.Float):
            return pa.float64()
        if isinstance(column.type, sa.Text):
            return pa.string()
        raise TypeError(f"{table.name}.{column.name}: no Parquet type for {column.type!r}")

    return pa.schema([pa.field(c.name, arrow_type(c), nullable=bool(c.nullable))
                      for c in table.columns])


def read_arrow(conn: Any, table: Any) -> Any:
    """Every row of ``table``, ordered by its primary key, as a pyarrow table."""
    import pyarrow as pa
    import sqlalchemy as sa

    schema = arrow_schema(table)
    rows = conn.execute(sa.select(*table.columns).order_by(*table.primary_key.columns)).all()
    return pa.table({name: [row[i] for row in rows] for i, name in enumerate(schema.names)},
                    schema=schema)


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and those of its parents that do not exist yet, deepest first."""
    missing = []
    at = Path(os.path.abspath(folder))
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    return missing


@export_group.command("parquet")
@click.argument("target", metavar="ATTEMPT|STORE")
@click.option("--out", "out", type=OUT_DIR, required=True,
              help="A folder for the Parquet files (created; existing files of the same "
                   "names are replaced, all six or none).")
@_schema_opt
def parquet_command(target: str, out: Path, schema: str | None) -> None:
    """The event log and the read tables as Parquet files, one per table.

    `events.parquet` holds every event of both realms with its envelope (payload as JSON
    text); the others are the books' read tables (gl_lines, subledger, documents,
    doc_history, statement_lines), amounts in integer cents. Each file's columns have
    their store column's type (int64, float64 or string, NULL where the store allows it)
    even when the table is empty, and its rows are in primary-key order. The read tables
    are verified against the log first (as by `erpsim ledger verify`). The files are
    written beside their places and renamed in only when all six are written: a failure
    leaves the folder as it was.
    """
    import pyarrow.parquet as pq

    from erp.schema import metadata
    from erp.verification import require_verified_books

    targets = {t: out / f"{t}.parquet" for t in PARQUET_TABLES}
    for path in targets.values():
        if path.exists() and not path.is_file():
            what = "a folder" if path.is_dir() else "not a regular file"
            fail(f"--out {out}: {path} is {what}, not a file it could replace; nothing "
                 "was written")
    with errors():
        store = open_books(target, schema)
        try:
            require_verified_books(store)
            with store.engine.connect() as conn:
                tables = {t: read_arrow(conn, metadata.tables[t]) for t in PARQUET_TABLES}
        finally:
            store.close()
    created = _missing_folders(out)
    staged: dict[str, Path] = {}
    try:
        out.mkdir(parents=True, exist_ok=True)
        for table, data in tables.items():
            fd, name = tempfile.mkstemp(prefix=f".{table}.parquet.", suffix=".tmp", dir=out)
            os.close(fd)
            staged[table] = Path(name)
            pq.write_table(data, name)
            with open(name, "rb") as f:
                os.fsync(f.fileno())
            os.chmod(name, 0o644)  # mkstemp makes it private; these files are for every reader
        for table, tmp in staged.items():
            tmp.replace(targets[table])
    except BaseException as e:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
        for folder in created:  # deepest first; only the folders this export made
            try:
                folder.rmdir()
            except OSError:
                break
        if isinstance(e, OSError):
            cannot_write("--out", out, e)
        raise
    click.echo("parquet: " + ", ".join(f"{t} {d.num_rows:,}" for t, d in tables.items())
               + f" in {out}")
