"""``erpsim ledger``: verify a store of books, print its trial balance, list its events."""

from __future__ import annotations

from datetime import date
from typing import Any

import click

from erp.store import MAX_POSITION
from runs.cli.common import DATE, EXIT_FAILED, errors, fail, open_store, open_verified


@click.group()
def ledger() -> None:
    """Inspect and verify a store of books.

    STORE is an SQLite file, a PostgreSQL URL (with --schema) or an attempt folder (its
    books.db, or the PostgreSQL schema its summary.json names).
    """


_schema_opt = click.option("--schema", default=None,
                           help="PostgreSQL schema of the store (PostgreSQL URLs only).")


def event_types() -> list[str]:
    """Every event type a log holds: the books' (``erp``) and the world's, sorted."""
    from checks.audit import event_classes

    return sorted({*event_classes("erp"), *event_classes("world")})


def _known_types(ctx: click.Context, param: click.Parameter,
                 value: tuple[str, ...]) -> tuple[str, ...]:
    """``--type`` values, each an event type of the books or the world (a misspelt one
    would list nothing, silently)."""
    import difflib

    known = event_types()
    for t in value:
        if t not in known:
            close = difflib.get_close_matches(t, known, n=3)
            hint = (f"did you mean {' or '.join(close)}?" if close
                    else "expected a type of the books or of the world, such as "
                         "invoice_issued or payment_sent")
            raise click.BadParameter(f"{t!r} is not an event type ({hint})", ctx, param)
    return value


def _expected_head(summary: dict[str, Any] | None, given: str | None
                   ) -> tuple[str | None, str]:
    """The head the log must end at (``--expect-head``, else an attempt folder's recorded
    ``final_hash``, else none) and how a mismatch names it."""
    if summary is not None and given is None and summary.get("final_hash"):
        return str(summary["final_hash"]), "but its summary.json records"
    return given, "expected"


@ledger.command()
@click.argument("store")
@click.option("--expect-head", metavar="HASH", default=None,
              help="Also require this head hash (e.g. an attempt's final_hash): a log cut "
                   "short or rewritten from some position on still chains, but not to it.")
@click.option("--chain-only", is_flag=True,
              help="Only recompute the hash chain (skip the file check and the read tables' "
                   "comparison with the log).")
@_schema_opt
def verify(store: str, expect_head: str | None, chain_only: bool, schema: str | None) -> None:
    """Recompute the log's hash chain; name the first position that does not match.

    Then check the file's pages (SQLite) and compare every read table (GL lines,
    subledgers, documents and their history, statement lines, the audit trail) with a
    fold of the verified log, naming the table and the key of the first rows that differ.
    A byte that is not UTF-8 is reported at its position, a damaged file as "the file
    is damaged". An attempt folder's log must also end at the final_hash its summary.json
    records (unless --expect-head names another). Exit 0 when all checks out, 1 when not,
    2 when STORE is not a store.
    """
    from erp.verification import verify_books

    with errors():
        s, summary = open_store(store, schema)
        expect_head, whose = _expected_head(summary, expect_head)
        try:
            if chain_only:
                log = s.verify()
                problem = log.message
                tables = ""
            else:
                books = verify_books(s)
                log, problem = books.log, books.message
                tables = f", {len(books.tables)} read tables and the audit trail match the log"
                if problem and books.difference_count and books.file_problem is None \
                        and log.ok:
                    problem += (f" (the log verifies: `erpsim ledger rebuild {store}` writes "
                                "the read tables again from it)")
        finally:
            s.close()
        if problem:
            fail(f"{store}: {problem}", code=EXIT_FAILED)
        if expect_head is not None and log.head_hash != expect_head:
            fail(f"{store}: the head after {log.events} events is {log.head_hash}, "
                 f"{whose} {expect_head} (events were removed or replaced at the end of "
                 "the log)", code=EXIT_FAILED)
        click.echo(f"ok: {log.events} events{tables}, head {log.head_hash}")


@ledger.command()
@click.argument("store")
@click.option("--parallel", type=click.IntRange(1, 2), default=None,
              help="Processes that fold the log: 1, or 2 (an SQLite file: a forked second "
                   "process folds the GL lines, subledger movements and statement lines "
                   "meanwhile). Default: 2 for a log of 20,000 events or more when two CPUs "
                   "are free, else 1.")
@click.option("--expect-head", metavar="HASH", default=None,
              help="Rebuild only if the log ends at this head hash (an attempt folder: the "
                   "final_hash its summary.json records, unless given).")
@_schema_opt
def rebuild(store: str, parallel: int | None, expect_head: str | None,
            schema: str | None) -> None:
    """Write every read table (GL lines, subledgers, documents and their history,
    statement lines) again from the log, in one transaction; then verify them.

    The repair for read tables that `erpsim ledger verify` finds differing from the log:
    they are folded from the log, so nothing the log holds is lost. The log's hash chain
    is recomputed first, and a log that does not verify (or, with --expect-head or an
    attempt folder's summary.json, does not end at the head given) is not rebuilt from:
    exit 1, the tables as they were. Exit 0 when the rebuilt tables match the log, 2
    when STORE is not a store (or another writer holds it past the lock wait).
    """
    import time

    from erp.rebuild import rebuild_tables
    from erp.verification import verify_books

    with errors():
        s, summary = open_store(store, schema)
        try:
            expect_head, whose = _expected_head(summary, expect_head)
            log = s.verify()
            if log.message:
                fail(f"{store}: {log.message}; the read tables were not rebuilt (a log that "
                     "does not verify is no source to rebuild from)", code=EXIT_FAILED)
            if expect_head is not None and log.head_hash != expect_head:
                fail(f"{store}: the head after {log.events} events is {log.head_hash}, "
                     f"{whose} {expect_head}; the read tables were not rebuilt",
                     code=EXIT_FAILED)
            started = time.perf_counter()
            with s.engine.connect() as conn:
                done = rebuild_tables(s, conn, workers=parallel)
            took = time.perf_counter() - started
            books = verify_books(s, log)
        finally:
            s.close()
        if books.message:
            fail(f"{store}: rebuilt, but {books.message}", code=EXIT_FAILED)
        processes = "one process" if done.workers == 1 else f"{done.workers} processes"
        click.echo(f"ok: {len(books.tables)} read tables rebuilt from {done.events} events of "
                   f"the books in {took:.2f} s ({processes}); they match the log, head "
                   f"{log.head_hash}")


@ledger.command("trial-balance")
@click.argument("store")
@click.option("--as-of", type=DATE, default=None, help="Only entries dated on or before DATE.")
@_schema_opt
def trial_balance_command(store: str, as_of: date | None, schema: str | None) -> None:
    """Print the trial balance (after verifying the log)."""
    from runs.cli.display import console, trial_balance_table

    with errors():
        s = open_verified(store, schema)
        console().print(trial_balance_table(s, as_of=as_of))


@ledger.command()
@click.argument("store")
@click.option("--type", "types", multiple=True, callback=_known_types,
              help="Only events of this type (repeatable): a type of the books "
                   "(invoice_issued, receipt_applied, ...) or of the world (payment_sent, "
                   "bank_line_posted, ...).")
@click.option("--actor", default=None, help="Only events written by this actor.")
@click.option("--stream", default=None, help="Only events of this stream (invoice:INV-000001).")
@click.option("--realm", type=click.Choice(["erp", "world"]), default=None,
              help="Only events of this realm.")
@click.option("--limit", type=click.IntRange(1, MAX_POSITION), default=None,
              help="At most N events.")
@click.option("--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table",
              show_default=True)
@_schema_opt
def events(store: str, types: tuple[str, ...], actor: str | None, stream: str | None,
           realm: str | None, limit: int | None, fmt: str, schema: str | None) -> None:
    """List events of the log (after verifying it), filtered by type, actor, stream, realm."""
    import orjson
    from rich.table import Table

    from runs.cli.display import console

    with errors():
        s = open_verified(store, schema)
        found = s.read(types=list(types) or None, actor=actor, stream=stream, realm=realm)
        if fmt == "jsonl":
            for n, e in enumerate(found):
                if limit is not None and n >= limit:
                    break
                click.echo(orjson.dumps({
                    "position": e.position, "stream": e.stream, "version": e.version,
                    "type": e.type, "realm": e.realm, "business_date": e.business_date,
                    "actor": e.actor, "role": e.role, "command": e.command,
                    "payload": orjson.loads(e.payload), "hash": e.hash}).decode())
            return
        t = Table()
        for col in ("pos", "date", "actor", "role", "command", "type", "stream"):
            t.add_column(col)
        for n, e in enumerate(found):
            if limit is not None and n >= limit:
                break
            t.add_row(str(e.position), e.business_date, e.actor, e.role, e.command, e.type,
                      e.stream)
        console().print(t)


