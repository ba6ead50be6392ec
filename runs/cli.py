"""The ``erpsim`` command line.

Exit codes: 0 success; 1 the books do not verify (a tampered or broken log);
2 bad input (a missing or unreadable store, a bad option value).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import click

from erp.errors import ErpError, IntegrityError, StoreError
from erp.store import EventStore


class _Date(click.ParamType):
    name = "DATE"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> date:
        if isinstance(value, date):
            return value
        try:
            return date.fromisoformat(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a date (expected YYYY-MM-DD)", param, ctx)


DATE = _Date()


@contextmanager
def _errors() -> Iterator[None]:
    """Turn the books' exceptions into one clear line and an exit code."""
    try:
        yield
    except IntegrityError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    except (StoreError, ErpError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)


def _open_verified(target: str, schema: str | None) -> EventStore:
    store = EventStore.open(target, schema=schema)
    store.require_valid()
    return store


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="erpsim")
def main() -> None:
    """erpsim: ERP process simulation with event-sourced books, for evaluating agents.

    A store is an SQLite file path or a PostgreSQL URL
    (postgresql://user@host:port/db, with --schema naming the store's schema).
    """
    tune_gc()


def tune_gc() -> None:
    """Collect garbage less often: erpsim's heaps are large and long-lived.

    The books' working state and the projections' caches are millions of objects
    that live for the whole process; with CPython's default thresholds the collector
    keeps traversing them (about 12% of the command path's time, measured). Cycles
    are rare in erpsim's data, so collecting the young generation every 100,000
    allocations instead of 700 costs little memory.
    """
    import gc

    gc.set_threshold(100_000, 50, 100)


@main.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("demo-books.db"), show_default=True,
              help="SQLite file to write the books to (an earlier demo store there is replaced).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the generated business.")
@click.option("--days", type=click.IntRange(1, 2000), default=40, show_default=True,
              help="Business days of activity to generate.")
def demo(out: Path, seed: int, days: int) -> None:
    """Build a small company's books from a generated command stream and show them.

    Prints the trial balance, the receivables and payables aging, the control
    accounts against their subledgers, and the log's head hash.
    """
    from runs.demo import build_demo
    from runs.display import aging_table, console, control_table, trial_balance_table

    with _errors():
        ledger, last_day = build_demo(out, seed=seed, days=days)
        try:
            con = console()
            con.print(f"[bold]erpsim demo[/bold]: {ledger.position:,} events written to {out} "
                      f"(seed {seed}, {days} business days, last day {last_day.isoformat()})")
            con.print(trial_balance_table(ledger.store))
            con.print(aging_table(ledger.store, "ar", as_of=last_day))
            con.print(aging_table(ledger.store, "ap", as_of=last_day))
            con.print(control_table(ledger.store))
            con.print(f"head hash: {ledger.head_hash}")
        finally:
            ledger.close()


@main.command()
@click.argument("scenario")
@click.option("--seed", type=int, default=1, show_default=True, help="Scenario seed.")
@click.option("--agent", "agent_name", type=click.Choice(["reference", "oracle", "null"]),
              default="reference", show_default=True, help="Built-in agent to run.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Attempt folder to create (must not exist or be empty).")
@click.option("--replace", is_flag=True,
              help="Replace OUT if it holds a finished attempt (never any other folder).")
@click.option("--quiet", is_flag=True, help="No progress bar; only the final figures.")
def run(scenario: str, seed: int, agent_name: str, out: Path, replace: bool,
        quiet: bool) -> None:
    """Run a scenario (a library name or a YAML path) with a built-in agent.

    Writes the attempt folder: the store (books.db), each turn's workspace and
    outputs, and summary.json with event counts, the final trial balance and
    final_hash. Prints where things stand at the end.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from runs.attempt import AttemptError, run_attempt
    from runs.display import console, summary_table
    from scenarios.errors import ScenarioError
    from scenarios.loader import find_scenario, load_scenario

    con = console()
    try:
        loaded = load_scenario(find_scenario(scenario))
    except ScenarioError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    days = len(loaded.scenario.calendar.build().business_days())
    with _errors():
        try:
            if quiet:
                result = run_attempt(loaded, seed, agent_name, out, replace=replace)
            else:
                with Progress(TextColumn("{task.description}"), BarColumn(),
                              MofNCompleteColumn(), console=con, transient=True) as bar:
                    task = bar.add_task(f"{loaded.scenario.id} seed {seed}", total=days)

                    def tick(day: date, n: int) -> None:
                        bar.update(task, completed=n,
                                   description=f"{loaded.scenario.id} {day.isoformat()}")

                    result = run_attempt(loaded, seed, agent_name, out, on_day=tick,
                                         replace=replace)
        except AttemptError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)
    con.print(summary_table(result.summary))
    con.print(f"final_hash: {result.final_hash}")
    con.print(f"attempt folder: {out}")


@main.group()
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
    with _errors():
        s = EventStore.open(store, schema=schema)
        report = s.verify()
        if not report.ok:
            click.echo(f"error: {store}: {report.message}", err=True)
            sys.exit(1)
        if expect_head is not None and report.head_hash != expect_head:
            click.echo(f"error: {store}: the head after {report.events} events is "
                       f"{report.head_hash}, expected {expect_head} (events were removed or "
                       "replaced at the end of the log)", err=True)
            sys.exit(1)
        click.echo(f"ok: {report.events} events, head {report.head_hash}")


@ledger.command("trial-balance")
@click.argument("store")
@click.option("--as-of", type=DATE, default=None, help="Only entries dated on or before DATE.")
@_schema_opt
def trial_balance(store: str, as_of: date | None, schema: str | None) -> None:
    """Print the trial balance (after verifying the log)."""
    from runs.display import console, trial_balance_table

    with _errors():
        s = _open_verified(store, schema)
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

    from runs.display import console

    with _errors():
        s = _open_verified(store, schema)
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


@main.group()
def bench() -> None:
    """Benchmarks that print figures (name: value, one per line)."""


@bench.command("ledger")
@click.option("--events", type=click.IntRange(min=1000), default=200_000, show_default=True,
              help="Events pushed through the command path.")
@click.option("--single", type=click.IntRange(min=100), default=20_000, show_default=True,
              help="Commands run each in its own transaction.")
@click.option("--seed", type=int, default=1, show_default=True)
def bench_ledger(events: int, single: int, seed: int) -> None:
    """The books' command path, rebuild and single-command transactions against raw sqlite3."""
    from runs.bench import run_ledger_bench

    result = run_ledger_bench(events=events, single=single, seed=seed,
                              progress=lambda m: click.echo(f"# {m}", err=True))
    click.echo(f"# {result.events:,} events", err=True)
    for line in result.lines():
        click.echo(line)


@bench.command("engine")
@click.option("--scenario", default="month-end-close", show_default=True,
              help="Library scenario to run.")
@click.option("--customers", type=click.IntRange(min=1), default=2000, show_default=True)
@click.option("--vendors", type=click.IntRange(min=0), default=200, show_default=True)
@click.option("--agent", "agent_name", type=click.Choice(["oracle", "reference", "null"]),
              default="oracle", show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
def bench_engine(scenario: str, customers: int, vendors: int, agent_name: str,
                 seed: int) -> None:
    """Events of both realms per second: engine, counterparties and books together."""
    from runs.bench import run_engine_bench

    with _errors():
        result = run_engine_bench(scenario=scenario, customers=customers, vendors=vendors,
                                  agent=agent_name, seed=seed)
    click.echo(f"# {scenario}: {customers:,} customers, {vendors:,} vendors, agent "
               f"{agent_name}, {result.events:,} events", err=True)
    for line in result.lines():
        click.echo(line)


if __name__ == "__main__":
    main()
