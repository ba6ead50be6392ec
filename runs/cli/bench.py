"""``erpsim bench``: benchmarks that print ``name: value`` figures (see :mod:`runs.bench`)."""

from __future__ import annotations

import click

from runs.cli.campaign import command_line, plan_from_options
from runs.cli.common import CHECKS_PROCESS, SEED, checks_process_option, errors

REPEAT = click.option(
    "--repeat", type=click.IntRange(1, 99), default=1, show_default=True,
    help="Run the bench this many times and print each figure's median over the runs "
         "(every run's figures go to stderr, after them).")


def _echo_figures(runs: list[list[str]]) -> None:
    """One run's figures; or, of several, the medians, then each figure's runs (stderr)."""
    from runs.bench.benchmarks import median_figures

    if len(runs) == 1:
        for line in runs[0]:
            click.echo(line)
        return
    medians, each = median_figures(runs)
    for line in medians:
        click.echo(line)
    click.echo(f"# each figure above is the median of {len(runs)} runs; the runs, in order:",
               err=True)
    for line in each:
        click.echo(f"# {line}", err=True)


@click.group()
def bench() -> None:
    """Benchmarks that print figures (name: value, one per line)."""


@bench.command("ledger")
@click.option("--events", type=click.IntRange(1000, 10_000_000), default=200_000, show_default=True,
              help="Events pushed through the command path.")
@click.option("--single", type=click.IntRange(100, 1_000_000), default=20_000, show_default=True,
              help="Commands run each in its own transaction.")
@click.option("--seed", type=SEED, default=1, show_default=True)
@REPEAT
def bench_ledger(events: int, single: int, seed: int, repeat: int) -> None:
    """The books' command path, rebuild and single-command transactions against raw sqlite3.

    Prints command_path_events_per_s, rebuild_events_per_s (the rebuild as the books
    choose it: in two processes on an SQLite log of 20,000 events or more when two CPUs
    are free to use), rebuild_processes, rebuild_one_process_events_per_s,
    raw_insert_events_per_s, command_path_vs_raw, rebuild_vs_raw and
    single_command_txn_per_s. With --repeat N, each figure is the median of N runs (each
    run's go to stderr)."""
    from runs.bench.benchmarks import run_ledger_bench

    runs = []
    for n in range(repeat):
        if repeat > 1:
            click.echo(f"# run {n + 1} of {repeat}", err=True)
        result = run_ledger_bench(events=events, single=single, seed=seed,
                                  progress=lambda m: click.echo(f"# {m}", err=True))
        click.echo(f"# {result.events:,} events", err=True)
        runs.append(result.lines())
    _echo_figures(runs)


@bench.command("engine")
@click.option("--scenario", default="month-end-close", show_default=True,
              help="Library scenario to run.")
@click.option("--customers", type=click.IntRange(1, 100_000), default=None,
              help="Customers (default: 2,000 for a run of one month; over --months above "
                   "1 or a scenario whose calendar is longer, such as fiscal-year, the "
                   "scenario's own population).")
@click.option("--vendors", type=click.IntRange(0, 100_000), default=None,
              help="Vendors (default: 200 for a run of one month; over more months, the "
                   "scenario's own).")
@click.option("--agent", "agent_name", type=click.Choice(["oracle", "reference", "null"]),
              default="oracle", show_default=True)
@click.option("--seed", type=SEED, default=1, show_default=True)
@click.option("--months", type=click.IntRange(1, 24), default=1, show_default=True,
              help="Run the scenario over this many monthly closes (same turns every month, "
                   "the controller's closing turn on the next month's first business day); "
                   "the checks that name the month's end (statement date, last day, period) "
                   "judge the last month's, and every month's period is to be closed.")
@checks_process_option
@REPEAT
def bench_engine(scenario: str, customers: int | None, vendors: int | None, agent_name: str,
                 seed: int, months: int, checks_process: str, repeat: int) -> None:
    """Events of both realms per second: engine, counterparties, books and checks together.

    Prints engine_events_per_s, engine_wall_s and, with per-date checks, the mean time
    of a date's checks in the first and the last calendar month worked through
    (per_date_check_ms_first_month, per_date_check_ms_last_month) and their ratio, in wall
    time and as the checking thread's CPU time (per_date_check_cpu_ms_*), and that CPU
    time per log event the month's dates took in (per_date_check_cpu_us_per_event_*: flat
    when a date costs what the log gained, whatever the month's business); then the
    seconds of each phase of the attempt: phase_set_up_s, phase_simulation_s,
    phase_agent_s, phase_turn_harness_s, phase_per_date_checks_s, phase_verification_s,
    phase_final_checks_s (with the checks beside the attempt, the second process's seconds
    for those two, spent while the attempt ran), phase_heap_release_s (collecting the run
    once it is over; beside, partly while it would have waited) and, beside,
    phase_waited_for_checks_s, the seconds the attempt waited for the checks. With
    --repeat N, each figure is the median of N runs (each run's go to stderr).
    """
    from runs.bench.benchmarks import run_engine_bench

    runs = []
    for n in range(repeat):
        with errors():
            result = run_engine_bench(scenario=scenario, customers=customers, vendors=vendors,
                                      agent=agent_name, seed=seed, months=months,
                                      checks_beside=CHECKS_PROCESS[checks_process])
        run = f" (run {n + 1} of {repeat})" if repeat > 1 else ""
        click.echo(result.heading(scenario, agent_name) + run, err=True)
        runs.append(result.lines())
    _echo_figures(runs)


@bench.command("turn")
@click.option("--turns", type=click.IntRange(2, 200), default=20, show_default=True)
@click.option("--seed", type=SEED, default=1, show_default=True)
def bench_turn(turns: int, seed: int) -> None:
    """What the runner adds to an external agent's turn, with an agent that exits at once.

    Prints turn_overhead_s: the median wall time of a turn beyond the agent process's
    own (workspace, token, process start, logs, outputs, revocation); target <= 0.5.
    """
    from runs.bench.benchmarks import run_turn_bench

    click.echo(f"# {turns} turns of month-end-close (every business day), local mode, an "
               "adapter that exits at once", err=True)
    with errors():
        result = run_turn_bench(turns=turns, seed=seed)
    for line in result.lines():
        click.echo(line)




@bench.command("sweep")
@click.option("--attempts", type=click.IntRange(2, 100_000), default=100, show_default=True,
              help="Attempts per run (distinct seeds 0..N-1).")
@click.option("--scenario", default="cash-application", show_default=True,
              help="Library scenario (or YAML) to sweep.")
@click.option("--agent", "agent_name", type=click.Choice(["reference", "oracle", "null"]),
              default="reference", show_default=True)
def bench_sweep(attempts: int, scenario: str, agent_name: str) -> None:
    """Attempts per minute of a sweep with --parallel 1 and with --parallel 2.

    Prints sweep_attempts_per_min_p1, sweep_attempts_per_min_p2 and
    sweep_parallel_speedup (target >= 1.7 on 2 cores). Each run goes to its own
    temporary results folder, removed afterwards.
    """
    from runs.bench.sweep import run_sweep_bench

    plan = plan_from_options("bench-sweep", (scenario,), None, f"0-{attempts - 1}",
                             agent_name, None, 1)
    result = run_sweep_bench(plan, command=command_line(),
                             progress=lambda m: click.echo(f"# {m}", err=True))
    for line in result.lines():
        click.echo(line)
