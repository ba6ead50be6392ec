"""``erpsim demo``: a small company's books from the generated workload, shown."""

from __future__ import annotations

from pathlib import Path

import click

from runs.cli.common import OUT_FILE, SEED, errors, interruptible


@click.command()
@click.option("--out", type=OUT_FILE, default=Path("demo-books.db"), show_default=True,
              help="SQLite file to write the books to (an earlier demo store there is replaced).")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of the generated business.")
@click.option("--days", type=click.IntRange(1, 2000), default=40, show_default=True,
              help="Business days of activity to generate.")
def demo(out: Path, seed: int, days: int) -> None:
    """Build a small company's books from a generated command stream and show them.

    Prints the trial balance, the receivables and payables aging, the control
    accounts against their subledgers, and the log's head hash. A failed or
    interrupted build leaves nothing at --out; Ctrl-C or SIGTERM stops it between
    two days' batches and exits 130.
    """
    from runs.bench.demo import build_demo
    from runs.cli.display import aging_table, console, control_table, trial_balance_table

    with errors(), interruptible(f"no demo store was written to {out}",
                                 at_once=False) as interruption:
        ledger, last_day = build_demo(out, seed=seed, days=days, between=interruption.check)
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


