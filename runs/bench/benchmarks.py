"""Benchmarks: the books' speed against raw sqlite3 (``bench ledger``), the engine
(``bench engine``) and what the runner adds to an external agent's turn (``bench turn``).

Figures (one per line, ``name: value``):

- ``command_path_events_per_s``: a generated business (invoices, receipts,
  applications, bills, approvals, payments, statement lines and matches, journal
  entries and reversals) pushed through the full command path on SQLite, one
  transaction per business day;
- ``rebuild_events_per_s``: every read table rebuilt from that log, as ``Ledger.rebuild``
  chooses to (``rebuild_processes``: two on a machine with two CPUs to use, see
  ``erp.rebuild``), and ``rebuild_one_process_events_per_s``: the same in one process;
- ``raw_insert_events_per_s``: the same event rows inserted with plain ``sqlite3``
  ``executemany`` into a table with the same unique ``(stream, version)`` index,
  one transaction per day, same pragmas;
- ``command_path_vs_raw`` and ``rebuild_vs_raw``: ratios within this run;
- ``single_command_txn_per_s``: commands each in its own transaction, as an
  agent's requests arrive.

A bench run several times (``--repeat``) prints each figure's median over the runs
(:func:`median_figures`), and every run's figures beside it.
"""

from __future__ import annotations

import gc
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateTable

from erp.ledger import Ledger
from erp.schema import events as events_table
from erp.store import EVENT_COLUMNS
from runs.bench.workload import generate_workload
from sim.calendar import BusinessCalendar

if TYPE_CHECKING:
    from checks.registry import CheckSpec
    from scenarios.loader import LoadedScenario


@dataclass(frozen=True)
class LedgerBench:
    """The figures of one ``bench ledger`` run."""

    events: int
    command_path_events_per_s: float
    rebuild_events_per_s: float
    raw_insert_events_per_s: float
    single_command_txn_per_s: float
    rebuild_processes: int = 1
    rebuild_one_process_events_per_s: float = 0.0

    def lines(self) -> list[str]:
        """The eight figures as ``name: value`` lines."""
        raw = self.raw_insert_events_per_s
        return [
            f"command_path_events_per_s: {self.command_path_events_per_s:.0f}",
            f"rebuild_events_per_s: {self.rebuild_events_per_s:.0f}",
            f"rebuild_processes: {self.rebuild_processes}",
            f"rebuild_one_process_events_per_s: {self.rebuild_one_process_events_per_s:.0f}",
            f"raw_insert_events_per_s: {self.raw_insert_events_per_s:.0f}",
            f"command_path_vs_raw: {self.command_path_events_per_s / raw:.3f}",
            f"rebuild_vs_raw: {self.rebuild_events_per_s / raw:.3f}",
            f"single_command_txn_per_s: {self.single_command_txn_per_s:.0f}",
        ]


def median_figures(runs: Sequence[Sequence[str]]) -> tuple[list[str], list[str]]:
    """Each figure's median over ``runs`` (each a run's ``name: value`` lines, as a
    bench's ``lines()`` gives them) and each figure's value in every run.

    Returns the median lines, in the first run's order and its figures' decimals (an
    odd number of runs gives the middle run's value as it printed it), and one
    ``name: v1, v2, ...`` line per figure with the runs' values in run order. A figure
    that some run did not print is the median of the runs that did.
    """
    values: dict[str, list[str]] = {}
    for lines in runs:
        for line in lines:
            name, sep, value = line.partition(": ")
            if not sep:
                raise ValueError(f"a bench figure line is 'name: value', not {line!r}")
            values.setdefault(name, []).append(value)
    medians: list[str] = []
    each: list[str] = []
    for name, texts in values.items():
        decimals = len(texts[0].partition(".")[2])
        middle = statistics.median(float(t) for t in texts)
        exact = [t for t in texts if float(t) == middle]
        medians.append(f"{name}: {exact[0] if exact else f'{middle:.{decimals}f}'}")
        each.append(f"{name}: {', '.join(texts)}")
    return medians, each


def _raw_insert(rows: list[tuple[object, ...]], day_sizes: list[int], path: Path) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "wal_autocheckpoint=10000"):
        conn.execute(f"PRAGMA {pragma}")
    # Exactly our events table (same columns, primary key and unique (stream, version)).
    conn.execute(str(CreateTable(events_table).compile(dialect=sqlite_dialect.dialect())))
    marks = ", ".join("?" * len(EVENT_COLUMNS))
    sql = f"INSERT INTO events ({', '.join(EVENT_COLUMNS)}) VALUES ({marks})"
    started = time.perf_counter()
    i = 0
    for size in day_sizes:
        conn.execute("BEGIN")
        conn.executemany(sql, rows[i:i + size])
        conn.execute("COMMIT")
        i += size
    elapsed = time.perf_counter() - started
    conn.close()
    return len(rows) / elapsed


def run_ledger_bench(*, events: int = 200_000, single: int = 20_000, seed: int = 1,
                     workdir: Path | None = None,
                     progress: Callable[[str], None] = lambda _: None) -> LedgerBench:
    """Run the ledger benchmark in a temporary directory and return its figures."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        root = Path(tmp)
        progress(f"generating {events:,} events of business")
        batches = list(generate_workload(seed, target_events=events, invoices_per_day=100,
                                         customers=300, vendors=60, months=60))
        gc.collect()

        progress("command path")
        ledger = Ledger.open(root / "books.db", create=True)
        started = time.perf_counter()
        for b in batches:
            ledger.execute_batch(b.submissions)
        command_rate = ledger.position / (time.perf_counter() - started)
        n_events = ledger.position

        progress("rebuild")
        stats = ledger.rebuild()
        rebuild_rate = stats.events / stats.seconds
        progress("rebuild in one process")
        one = ledger.rebuild(workers=1)
        with ledger.store.engine.connect() as conn:
            rows = [tuple(r) for r in conn.exec_driver_sql(
                f"SELECT {', '.join(EVENT_COLUMNS)} FROM events ORDER BY position")]
        ledger.close()

        progress("raw sqlite3 insert")
        day_sizes = []
        for b in batches:
            day_sizes.append(b.events)
        raw_rate = _raw_insert(rows, day_sizes, root / "raw.db")
        del rows
        gc.collect()

        progress(f"{single:,} single-command transactions")
        ledger = Ledger.open(root / "single.db", create=True)
        subs = [s for b in generate_workload(seed + 1, target_events=single + 1000,
                                             invoices_per_day=100, customers=300, vendors=60,
                                             months=60)
                for s in b.submissions]
        setup_n = next(i for i, s in enumerate(subs) if s.actor != "system:setup")
        ledger.execute_batch(subs[:setup_n])
        timed = subs[setup_n:setup_n + single]
        started = time.perf_counter()
        for s in timed:
            ledger.execute(s.command, actor=s.actor, role=s.role, business_date=s.business_date)
        single_rate = len(timed) / (time.perf_counter() - started)
        ledger.close()
    return LedgerBench(n_events, command_rate, rebuild_rate, raw_rate, single_rate,
                       stats.workers, one.events / one.seconds)


def scale_population(loaded: LoadedScenario, customers: int, vendors: int) -> LoadedScenario:
    """The scenario with ``customers`` customers and ``vendors`` vendors (same profiles)."""
    sc = loaded.scenario
    pop = sc.population.model_copy(update={
        "customers": sc.population.customers.model_copy(update={"count": customers}),
        "vendors": sc.population.vendors.model_copy(update={"count": vendors})})
    return replace(loaded, scenario=sc.model_copy(update={"population": pop}))


def monthly_closes(loaded: LoadedScenario, months: int) -> LoadedScenario:
    """The scenario run over ``months`` months from its start, each closed like its first:
    the same turns (weekly, the month's last business day), and on the first business day
    of every following month the controller's closing turn. The calendar ends on the
    closing turn of the last month; the scenario's checks are unchanged."""
    sc = loaded.scenario
    cal = sc.calendar.build()
    first = cal.start.replace(day=1)
    starts = []
    for k in range(1, months + 1):
        y, m = divmod(first.month - 1 + k, 12)
        starts.append(date(first.year + y, m + 1, 1))
    probe = BusinessCalendar(cal.start, starts[-1] + timedelta(days=14),
                             frozenset(sc.calendar.holidays))
    closings = [probe.next_business_day(d) for d in starts]
    calendar = sc.calendar.model_copy(update={"end": closings[-1], "business_days": None})
    turns = sc.turns.model_copy(update={
        "dates": tuple(sorted(set(sc.turns.dates) | set(closings))),
        "roles": {**dict(sc.turns.roles), **{d: "controller" for d in closings}}})
    checks = _checks_of_last_month(loaded, probe, first, starts)
    return replace(loaded, checks=checks,
                   scenario=sc.model_copy(update={"calendar": calendar, "turns": turns}))


def _month_end(first_of_next: date, cal: BusinessCalendar) -> tuple[date, date]:
    """The last day and the last business day of the month before ``first_of_next``."""
    last = first_of_next - timedelta(days=1)
    business = last
    while not cal.is_business_day(business):
        business -= timedelta(days=1)
    return last, business


def _checks_of_last_month(loaded: LoadedScenario, cal: BusinessCalendar, first: date,
                          starts: list[date]) -> tuple[CheckSpec, ...]:
    """The scenario's checks, those that name its month's end (a statement date, a month's
    last day, its period) moved to the last month's: the final checks judge the files and
    books of the last close. A period check is asked of every month closed, and so is a
    check of the weekly turns before the month's end (``due_bills_paid_at_turns``): moved
    to the last month's end it would judge the earlier months' month-end and controller
    turns as weekly ones, so each month gets its own, after the last month's closing turn."""
    (last0, business0), (last1, business1) = (_month_end(starts[0], cal),
                                              _month_end(starts[-1], cal))
    closings = [cal.next_business_day(d) for d in starts]
    dates = {last0: last1, business0: business1}
    texts = {d.isoformat(): n.isoformat() for d, n in dates.items()}
    worked = [f"{m:%Y-%m}" for m in [first, *starts[:-1]]]
    period0, period1 = worked[0], worked[-1]

    def moved(value: object) -> object:
        if isinstance(value, date):
            return dates.get(value, value)
        if isinstance(value, str):
            if value == period0:
                return period1
            for old, new in texts.items():
                value = value.replace(old, new)
        return value

    out: list[CheckSpec] = []
    for spec in loaded.checks:
        if spec.type == "period_closed" and getattr(spec, "period", None) == period0:
            label = spec.name or "period-closed"
            out += [spec.model_copy(update={"period": p, "name": f"{label}-{p}"})
                    for p in worked[:-1]]
        if (spec.type == "due_bills_paid_at_turns" and len(starts) > 1
                and getattr(spec, "before", None) == business0):
            label = spec.name or "due-bills-paid-at-turns"
            out += [spec.model_copy(update={
                "before": _month_end(start, cal)[1], "after": closings[i - 1] if i else None,
                "name": f"{label}-{p}"})
                for i, (start, p) in enumerate(zip(starts, worked, strict=True))]
            continue
        out.append(spec.model_copy(update={k: moved(v) for k, v in spec
                                           if k not in ("type", "name")}))
    return tuple(out)


@dataclass(frozen=True)
class EngineBench:
    """The figures of one ``bench engine`` run."""

    events: int
    wall_s: float
    customers: int
    vendors: int
    months: int
    per_date_ms: dict[str, float]
    """Mean per-date check time by month (``YYYY-MM``)."""
    accepted: bool
    per_date_dates: dict[str, int] = field(default_factory=dict)
    """Dates the per-date checks ran on, by month (``YYYY-MM``)."""
    per_date_cpu_ms: dict[str, float] = field(default_factory=dict)
    """Mean per-date check CPU time (the evaluating thread's) by month (``YYYY-MM``)."""
    phases: dict[str, float] = field(default_factory=dict)
    """Where the attempt's time went, seconds by phase (``summary.json`` ``phases_s``)."""
    per_date_cpu_us_per_event: dict[str, float] = field(default_factory=dict)
    """Per-date check CPU µs per log event its dates took in, by month (``YYYY-MM``)."""

    def worked_months(self) -> list[str]:
        """The calendar months the scenario works through, in order: every month of
        ``per_date_ms`` but one that holds a single date (a closing turn's month after the
        last one worked, such as month-end-close's June 1 or fiscal-year's January 4 of
        the next year). Without date counts, all months."""
        months = sorted(self.per_date_ms)
        worked = [m for m in months if self.per_date_dates.get(m, 2) > 1]
        return worked or months

    def heading(self, scenario: str, agent: str) -> str:
        """The run in one line: the population, the agent, the calendar months worked
        through (fiscal-year's twelve in its own calendar, not the bench's ``--months``
        1), the events and the verdict."""
        worked = len(self.worked_months()) or self.months
        return (f"# {scenario}: {self.customers:,} customers, {self.vendors:,} vendors, agent "
                f"{agent}, {worked} month(s) worked through, {self.events:,} events, "
                f"{'accepted' if self.accepted else 'rejected'}")

    def lines(self) -> list[str]:
        """The figures as ``name: value`` lines. The per-date figures are the first and the
        last calendar month the scenario works through (:meth:`worked_months`), whether
        its months are the bench's ``--months`` closes or the scenario's own calendar."""
        out = [f"engine_events_per_s: {self.events / self.wall_s:.0f}",
               f"engine_wall_s: {self.wall_s:.2f}"]
        worked = [self.per_date_ms[m] for m in self.worked_months()]
        if worked:
            out += [f"per_date_check_ms_first_month: {worked[0]:.1f}",
                    f"per_date_check_ms_last_month: {worked[-1]:.1f}",
                    f"per_date_check_last_vs_first: {worked[-1] / worked[0]:.2f}"]
        cpu = [self.per_date_cpu_ms[m] for m in self.worked_months()
               if m in self.per_date_cpu_ms]
        if cpu and cpu[0] > 0:
            out += [f"per_date_check_cpu_ms_first_month: {cpu[0]:.1f}",
                    f"per_date_check_cpu_ms_last_month: {cpu[-1]:.1f}",
                    f"per_date_check_cpu_last_vs_first: {cpu[-1] / cpu[0]:.2f}"]
        per_event = [self.per_date_cpu_us_per_event[m] for m in self.worked_months()
                     if m in self.per_date_cpu_us_per_event]
        if per_event and per_event[0] > 0:
            out += [f"per_date_check_cpu_us_per_event_first_month: {per_event[0]:.1f}",
                    f"per_date_check_cpu_us_per_event_last_month: {per_event[-1]:.1f}",
                    "per_date_check_cpu_us_per_event_last_vs_first: "
                    f"{per_event[-1] / per_event[0]:.2f}"]
        out += [f"phase_{name}_s: {seconds:.2f}" for name, seconds in self.phases.items()]
        return out


ENGINE_BENCH_POPULATION = (2000, 200)
"""Customers and vendors of a one-month ``bench engine`` (a large company's month)."""

ONE_MONTH_DAYS = 45
"""The longest calendar (days from start to end) a bench counts as one month's run:
month-end-close's May 1 to June 1 closing turn is one; fiscal-year's year is not."""


def spans_one_month(loaded: LoadedScenario, months: int) -> bool:
    """Whether a bench of ``loaded`` over ``months`` closes covers about one month of
    business (``months`` 1 and the scenario's calendar at most :data:`ONE_MONTH_DAYS`)."""
    cal = loaded.scenario.calendar.build()
    return months == 1 and (cal.end - cal.start).days <= ONE_MONTH_DAYS


def run_engine_bench(*, scenario: str = "month-end-close", customers: int | None = None,
                     vendors: int | None = None, agent: str = "oracle", seed: int = 1,
                     months: int = 1, workdir: Path | None = None,
                     checks_beside: bool | None = None) -> EngineBench:
    """Run a library scenario at a large population (over ``months`` monthly closes, see
    :func:`monthly_closes`); time engine, counterparties, books and checks together.

    Without ``customers`` / ``vendors``: :data:`ENGINE_BENCH_POPULATION` for a run of one
    month (:func:`spans_one_month`); over more months, the bench's or the scenario's own
    (fiscal-year's year), the scenario's own population (the library's default company):
    the oracle re-reads its growing statement lines and documents every turn, so a year
    at 2,000 customers (600,000 events) runs for several minutes. ``checks_beside``: as
    :func:`runs.attempt.run_attempt`'s."""
    from runs.attempt import run_attempt
    from scenarios.loader import find_scenario, load_scenario

    loaded = load_scenario(find_scenario(scenario))
    own = loaded.scenario.population
    default = ENGINE_BENCH_POPULATION if spans_one_month(loaded, months) else (
        own.customers.count, own.vendors.count)
    customers = default[0] if customers is None else customers
    vendors = default[1] if vendors is None else vendors
    big = scale_population(loaded, customers, vendors)
    if months > 1:
        big = monthly_closes(big, months)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        started = time.perf_counter()
        result = run_attempt(big, seed, agent, Path(tmp) / "attempt",
                             checks_beside=checks_beside)
        wall = time.perf_counter() - started
    timing = result.summary.get("daily_timing", {})
    return EngineBench(int(result.summary["events"]["total"]), wall, customers, vendors,
                       months, dict(timing.get("ms_per_date_by_month", {})),
                       bool(result.summary["verdict"]["accepted"]),
                       dict(timing.get("dates_by_month", {})),
                       dict(timing.get("cpu_ms_per_date_by_month", {})),
                       _with_release(dict(result.summary.get("phases_s", {})),
                                     result.released_s),
                       dict(timing.get("cpu_us_per_event_by_month", {})))


def _with_release(phases: dict[str, float], at_end: float) -> dict[str, float]:
    """An attempt's phases with its heap releases as one (``heap_release``: while it
    waited for the checks beside, and at its end)."""
    phases["heap_release"] = round(phases.get("heap_release", 0.0) + at_end, 4)
    return phases


@dataclass(frozen=True)
class TurnBench:
    """The figures of one ``bench turn`` run (seconds)."""

    turns: int
    overheads: list[float]
    agent_walls: list[float]
    api_start_s: float
    api_stop_s: float

    def lines(self) -> list[str]:
        """``name: value`` lines; ``turn_overhead_s`` is the median (target <= 0.5)."""
        import statistics

        ordered = sorted(self.overheads)
        p90 = ordered[max(0, -(-len(ordered) * 9 // 10) - 1)]  # nearest rank
        return [f"turns: {self.turns}",
                f"turn_overhead_s: {statistics.median(self.overheads):.4f}",
                f"turn_overhead_p90_s: {p90:.4f}",
                f"turn_overhead_max_s: {max(self.overheads):.4f}",
                f"agent_process_median_s: {statistics.median(self.agent_walls):.4f}",
                f"api_start_s: {self.api_start_s:.4f}",
                f"api_stop_s: {self.api_stop_s:.4f}"]


def run_turn_bench(*, turns: int = 20, seed: int = 1) -> TurnBench:
    """Run ``turns`` turns of an adapter that exits at once, in local mode.

    Per turn, the overhead is the turn's whole wall time in the runner (workspace and
    prompt, inbox, token, connection file, process start and reaping, logs, outputs
    snapshot and hashes, token revocation) minus the adapter process's own wall time.
    The API is started once per attempt: its start and stop are reported apart.
    """
    from dataclasses import replace

    from runs.attempt import run_attempt
    from runs.execution.external import ExternalAgent
    from scenarios.loader import find_scenario, load_scenario

    loaded = load_scenario(find_scenario("month-end-close"))
    sc = loaded.scenario
    cal = sc.calendar.model_copy(update={"end": None, "business_days": turns})
    # one turn on each of the first ``turns`` business days and no other: the scenario's
    # own fixed turn dates (its closing turn on June 1, as the controller) lie outside a
    # calendar cut to ``turns`` days, and would make the count differ from ``turns``
    loaded = replace(loaded, scenario=sc.model_copy(update={
        "calendar": cal, "turns": sc.turns.model_copy(update={
            "every": "business_day", "dates": [], "roles": {}, "month_end": False})}))
    with tempfile.TemporaryDirectory(prefix="erpsim-bench-turn-") as tmp:
        adapter = Path(tmp) / "adapter"
        adapter.write_text("#!/bin/sh\nexit 0\n")
        adapter.chmod(0o755)

        class Timed(ExternalAgent):
            start_s = stop_s = 0.0

            def start(self, ledger: Ledger) -> None:
                t = time.perf_counter()
                super().start(ledger)
                Timed.start_s = time.perf_counter() - t

            def stop(self) -> None:
                t = time.perf_counter()
                super().stop()
                Timed.stop_s = time.perf_counter() - t

        res = run_attempt(loaded, seed, "bench", Path(tmp) / "attempt",
                          agent=Timed(adapter, timeout_s=60))
    done = [t for t in res.summary["turns"] if t.get("process")]
    if len(done) != turns or any(t["status"] != "completed" for t in done):
        raise RuntimeError(f"bench turn: expected {turns} completed turns, got "
                           f"{[t['status'] for t in done]}")
    return TurnBench(turns, [t["turn_wall_s"] - t["process"]["wall_s"] for t in done],
                     [t["process"]["wall_s"] for t in done], Timed.start_s, Timed.stop_s)
