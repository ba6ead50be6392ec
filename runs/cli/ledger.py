"""``erpsim ledger``: verify a store of books, print its trial balance, list its events."""

from __future__ import annotations

from datetime import date

import click

from erp.store import EventStore
from runs.cli.common import DATE, EXIT_FAILED, errors, fail, open_verified


@click.group()
def ledger() -> None:
    """Inspect and verify a store of books."""


_schema_opt = click.option("--schema", default=None,
                           help="PostgreSQL schema of the store (PostgreSQL URLs only).")


@ledger.command()
@click.argument("store")
@click.option("--expect-head", metavar="HASH", default=None,
              help="Also require this head hash (e.g. an attempt's final_hash): a log cut "
                   "short or rewritten from some position on still chains, but not to it.")
@_schema_opt
def verify(store: str, expect_head: str | None, schema: str | None) -> None:
    """Recompute the log's hash chain; name the first position that does not match."""
    with errors():
        s = EventStore.open(store, schema=schema)
        report = s.verify()
        if not report.ok:
            fail(f"{store}: {report.message}", code=EXIT_FAILED)
        if expect_head is not None and report.head_hash != expect_head:
            fail(f"{store}: the head after {report.events} events is {report.head_hash}, "
                 f"expected {expect_head} (events were removed or replaced at the end of "
                 "the log)", code=EXIT_FAILED)
        click.echo(f"ok: {report.events} events, head {report.head_hash}")


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
@click.option("--type", "types", multiple=True, help="Only events of this type (repeatable).")
@click.option("--actor", default=None, help="Only events written by this actor.")
@click.option("--stream", default=None, help="Only events of this stream (invoice:INV-000001).")
@click.option("--realm", type=click.Choice(["erp", "world"]), default=None,
              help="Only events of this realm.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N events.")
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


