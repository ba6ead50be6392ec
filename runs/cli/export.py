"""``erpsim export``: an attempt's or a store's books in other tools' formats."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from erp.beancount import export_beancount
from erp.store import EventStore
from runs.cli.common import OUT_DIR, OUT_FILE, cannot_write, errors, open_verified
from runs.files import atomic_path, write_text_atomic


def open_books(target: str, schema: str | None) -> EventStore:
    """A verified store: an attempt folder's books, or a store file or URL
    (:func:`runs.cli.common.open_verified`)."""
    return open_verified(target, schema)


@click.group("export")
def export_group() -> None:
    """The books of an attempt or a store in other tools' formats (beancount, Parquet)."""


_schema_opt = click.option("--schema", default=None,
                           help="PostgreSQL schema of the store (PostgreSQL URLs only).")


@export_group.command("beancount")
@click.argument("target", metavar="ATTEMPT|STORE")
@click.option("--out", "out", type=OUT_FILE, default=None,
              help="Write the ledger here (default: print it).")
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
    if out is None:
        sys.stdout.write(exported.text)
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


@export_group.command("parquet")
@click.argument("target", metavar="ATTEMPT|STORE")
@click.option("--out", "out", type=OUT_DIR, required=True,
              help="A folder for the Parquet files (created; existing files are replaced).")
@_schema_opt
def parquet_command(target: str, out: Path, schema: str | None) -> None:
    """The event log and the read tables as Parquet files, one per table.

    `events.parquet` holds every event of both realms with its envelope (payload as JSON
    text); the others are the books' read tables (gl_lines, subledger, documents,
    doc_history, statement_lines), amounts in integer cents.
    """
    import pandas as pd
    import sqlalchemy as sa

    with errors():
        store = open_books(target, schema)
        counts = {}
        try:
            out.mkdir(parents=True, exist_ok=True)
            with store.engine.connect() as conn:
                for table in PARQUET_TABLES:
                    frame = pd.read_sql(sa.text(f"SELECT * FROM {table} ORDER BY 1"), conn)
                    with atomic_path(out / f"{table}.parquet") as tmp:
                        frame.to_parquet(tmp, index=False)
                    counts[table] = len(frame)
        except OSError as e:
            cannot_write("--out", out, e)
        finally:
            store.close()
    click.echo("parquet: " + ", ".join(f"{t} {n:,}" for t, n in counts.items()) + f" in {out}")
