"""Per-date control's checks: evaluated in the attempt's process, or in a second one beside it.

:class:`DailyChecks` evaluates the checks a scenario asks for at every business date's
end, on the store as of that date and log position, and keeps what they found (the first
failure of each, the dates each failed, the per-month curve, the cost). Its folds of the
log go on from one date to the next, and the final evaluation goes on from them.

:class:`ChecksBeside` runs a :class:`DailyChecks`, and then the final evaluation, in a
forked second process on its own connection to the attempt's store, while the attempt's
process runs the simulation and the agent's turns and, at the end, verifies the books.
Nothing a check reads differs: every fold stops at the position it was given, so a
date's checks are those of the log as the date ended, however far the run has gone on;
and the workspace files a per-date check reads (only those of
:meth:`~checks.registry.CheckSpec.reads_workspace` are handed the workspace) are those of
the turns before the date, because the attempt then waits (:meth:`ChecksBeside.sync`)
for the dates sent so far before a turn changes any folder; the library's per-date
checks read none, and the second process catches up during turns. The results, verdict
included, are those the attempt's own process computes (a test runs every library
scenario both ways). Between dates, in its spare time, the second process folds ahead
the look-backs to earlier dates that the final evaluation will make, and works out
what the final checks ask as of a date once that date is over (:class:`LookbacksAhead`).

Beside is chosen (:func:`choose_beside`) for a scenario of more than one date (a desk
task's one date gains less than the fork costs) when the store is an SQLite file or
PostgreSQL (a second connection sees what the first committed), the process may use two CPUs,
processes can be forked, this process is no pool's worker (which may start none), and it
runs no other thread (a forked child gets only the forking thread; a lock another thread
held would stay locked in it).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any

from checks.context import CheckContext, Folds
from checks.registry import CheckSpec, final_lookbacks
from checks.state import end_of_turn
from checks.verdict import Verdict, run_checks
from erp.rebuild import usable_cpus
from erp.store import EventStore
from runs.grading import (
    RUNNING_FILE,
    EnvironmentFailed,
    StoreWatch,
    calendar_facts,
    context_for,
    daily_specs,
    environment_fault,
    evaluate_final,
    final_specs,
    grader_error_fault,
)
from scenarios.loader import LoadedScenario


class DailyChecks:
    """The checks asked for at every business date's end, and what they found.

    A check that raises is recorded as failing that date, with the error as its detail;
    one that could not read the books because the environment failed raises
    :class:`EnvironmentFailed` (not a date's result)."""

    def __init__(self, loaded: LoadedScenario) -> None:
        self.loaded = loaded
        self.specs = daily_specs(loaded)
        self.first: dict[str, tuple[date, str]] = {}
        self.failed_days: Counter[str] = Counter()
        self.days = 0
        self.folds = Folds()
        """The folds of the log kept from one date to the next (advanced, not refolded)."""
        self.seconds: list[tuple[date, float, float]] = []
        """Each date's evaluation time: wall seconds and the evaluating thread's CPU seconds
        (the cost of the checks alone, whatever else the machine is doing)."""
        self.by_month: dict[str, dict[str, Any]] = {}
        """Per month: the per-date check results counted (``monthly``)."""
        self.gained: dict[str, int] = {}
        """Per month: the log events its dates' checks took in (the business it held)."""
        self._position = 0

    def evaluate(self, store: EventStore, day: date, position: int,
                 workspace: Path | None) -> None:
        """Evaluate the checks as of ``day``'s end at log ``position`` (``workspace``: the
        latest turn's, for checks that read its files)."""
        started, started_cpu = time.perf_counter(), time.thread_time()
        ctx = context_for(store, self.loaded, workspace=workspace, as_of=day,
                          position=position, folds=self.folds)
        self.days += 1
        # a date's results only: no verdict (log head, output hashes, scorer) at each date
        results, errors = run_checks([s for _, s in self.specs], ctx)
        fault = grader_error_fault(errors)
        if fault is not None:  # the environment failed, not the books: not a date's result
            raise EnvironmentFailed(f"a per-date check could not read the books on {day}: "
                                    f"{fault}")
        self.seconds.append((day, time.perf_counter() - started,
                             time.thread_time() - started_cpu))
        month = day.strftime("%Y-%m")
        self.gained[month] = self.gained.get(month, 0) + max(0, position - self._position)
        self._position = max(self._position, position)
        broken = [(r.name, r.detail) for r in results if not r.passed]
        broken += [(g.check, g.error) for g in errors]
        for name, detail in broken:
            self.failed_days[name] += 1
            self.first.setdefault(name, (day, detail))
        self.note_month(day, {name for name, _ in broken})

    def report(self) -> dict[str, Any]:
        """Per check: the first date it failed (or None), how many dates it failed."""
        names = [s.label(i) for i, s in self.specs]
        out: dict[str, Any] = {}
        for name in names:
            hits = [k for k in self.first if k == name or k.startswith(name + "/")]
            first = min((self.first[k] for k in hits), default=None, key=lambda x: x[0])
            out[name] = {"first_failed": first[0].isoformat() if first else None,
                         "detail": first[1] if first else "",
                         "failed_dates": max((self.failed_days[k] for k in hits), default=0),
                         "dates_checked": self.days}
        return out

    # --- the per-month accuracy curve (summary.json daily_by_month) -------------------

    def note_month(self, day: date, broken: set[str]) -> None:
        """Count this date's per-date checks, passed or failed, in its month."""
        month = self.by_month.setdefault(day.strftime("%Y-%m"),
                                         {"dates": 0, "checks": 0, "passed": 0, "failed": {}})
        month["dates"] += 1
        for i, spec in self.specs:
            name = spec.label(i)
            month["checks"] += 1
            if any(b == name or b.startswith(name + "/") for b in broken):
                month["failed"][name] = month["failed"].get(name, 0) + 1
            else:
                month["passed"] += 1

    def monthly(self) -> dict[str, Any]:
        """Per month: its dates, the per-date check results (checks x dates), how many
        passed, their share (``accuracy``) and each failing check's count of dates."""
        return {m: {**v, "accuracy": round(v["passed"] / v["checks"], 4) if v["checks"]
                    else None} for m, v in sorted(self.by_month.items())}

    def timing(self) -> dict[str, Any]:
        """What per-date control cost: dates, folds started afresh, and by month its dates,
        the mean ms per date, wall and CPU (the evaluating thread's), the log events its
        dates took in and the CPU µs per such event (flat when a date costs what the log
        gained, however much business the month held)."""
        months: dict[str, list[tuple[float, float]]] = {}
        for day, wall, cpu in self.seconds:
            months.setdefault(day.strftime("%Y-%m"), []).append((wall, cpu))
        by_month = sorted(months.items())
        return {"dates": len(self.seconds), "fresh_folds": self.folds.fresh,
                "ms_per_date_by_month": {m: round(1000 * sum(w for w, _ in v) / len(v), 3)
                                         for m, v in by_month},
                "cpu_ms_per_date_by_month": {m: round(1000 * sum(c for _, c in v) / len(v), 3)
                                             for m, v in by_month},
                "dates_by_month": {m: len(v) for m, v in by_month},
                "events_by_month": {m: self.gained.get(m, 0) for m, _ in by_month},
                "cpu_us_per_event_by_month": {
                    m: round(1e6 * sum(c for _, c in v) / self.gained[m], 3)
                    for m, v in by_month if self.gained.get(m)}}

    def summary(self) -> DailySummary:
        """What ``summary.json`` records of per-date control."""
        return DailySummary(self.report(), self.timing(), self.monthly(),
                            sum(wall for _, wall, _ in self.seconds))


@dataclass(frozen=True)
class DailySummary:
    """What ``summary.json`` records of per-date control (``daily_checks``,
    ``daily_timing``, ``daily_by_month``), and the seconds its dates took."""

    report: dict[str, Any]
    timing: dict[str, Any]
    monthly: dict[str, Any]
    seconds: float


# --- in a second process ----------------------------------------------------------------


def choose_beside(store: EventStore, loaded: LoadedScenario,
                  requested: bool | None = None) -> bool:
    """Whether an attempt of ``loaded`` on ``store`` evaluates its checks beside its run
    (``requested``: True or False, or None to choose; see the module's docstring). A
    request for beside is refused where it cannot be: an in-memory store, no fork, a
    pool's worker."""
    if requested is False:
        return False
    if store.dialect == "sqlite":
        database = store.engine.url.database
        if not database or database == ":memory:":
            return False
    elif store.dialect != "postgresql":
        return False
    if "fork" not in mp.get_all_start_methods() or mp.current_process().daemon:
        return False
    if requested:
        return True
    start, end, _ = calendar_facts(loaded)
    if start == end:  # a desk task: one date, whose checks cost less than the fork (~12 ms)
        return False
    return threading.active_count() == 1 and usable_cpus() >= 2


class BesideFailed(RuntimeError):
    """The checks' second process failed (a bug of ours, not the environment's)."""


class ChecksBeside:
    """Per-date control and the final evaluation of an attempt in a forked second process.

    :meth:`date` hands it a date to evaluate and returns at once; :meth:`sync` waits
    until every date handed over was evaluated; :meth:`final` hands it the final
    evaluation, whose verdict :meth:`verdict` waits for. A fault of the environment the
    second process met (a check that could not read the books, its store's database
    failing) raises :class:`EnvironmentFailed` here, at the next call; any other failure
    of it (or its end before the verdict) :class:`BesideFailed`, and its being killed
    (a signal: the OOM killer's, say) :class:`EnvironmentFailed`. :meth:`close` ends it,
    whatever happened; it also ends when the attempt's process does.
    """

    def __init__(self, loaded: LoadedScenario, store: EventStore, out: Path) -> None:
        self.loaded = loaded
        ctx = mp.get_context("fork")
        self._conn, child_end = ctx.Pipe(duplex=True)
        self._child = ctx.Process(target=_serve, args=(child_end, self._conn, os.getpid(),
                                                       loaded, _reopen(store), out),
                                  name="erpsim-checks", daemon=True)
        self._child.start()
        child_end.close()
        self._pending = 0
        self._ended = False
        self._summary: DailySummary | None = None
        self._verdict: Verdict | None = None
        self.final_seconds = 0.0
        """The final evaluation's seconds in the second process."""
        self.waited = 0.0
        """Seconds this process waited for the second one (:meth:`sync`, :meth:`verdict`)."""
        self.waited_before_turns = 0.0
        """Of ``waited``, the seconds :meth:`sync` waited."""
        self.meanwhile_seconds = 0.0
        """Seconds :attr:`meanwhile`'s work took (in :meth:`verdict`)."""
        self.meanwhile: Callable[[], None] | None = None
        """Work of this process's own to do, once, in :meth:`verdict` before it waits (while
        the second process finishes; not counted in ``waited``): the same work whatever
        the two processes' timing."""

    def date(self, day: date, position: int, workspace: Path | None) -> None:
        """Evaluate the checks as of ``day``'s end at ``position`` (in the background)."""
        self._send(("date", day, position, workspace))
        self._pending += 1

    def sync(self) -> None:
        """Wait until every date handed over was evaluated (before a turn changes the
        folders a check may read)."""
        started = time.perf_counter()
        while self._pending:
            self._take(block=True)
        waited = time.perf_counter() - started
        self.waited += waited
        self.waited_before_turns += waited

    def final(self, summary: dict[str, Any]) -> None:
        """Evaluate the scenario's checks on the books at the log's head (in the
        background, after the dates handed over), going on from per-date control's folds;
        ``summary``: the attempt's, as far as it is written (its turns)."""
        self._send(("final", summary))

    def verdict(self) -> Verdict:
        """The final evaluation's verdict (waits for it), :attr:`meanwhile` done first."""
        work, self.meanwhile = self.meanwhile, None
        if work is not None:
            began = time.perf_counter()
            work()
            self.meanwhile_seconds += time.perf_counter() - began
        started = time.perf_counter()
        while self._verdict is None:
            self._take(block=True)
        self.waited += time.perf_counter() - started
        return self._verdict

    def summary(self) -> DailySummary:
        """What per-date control found (after :meth:`verdict`, or after :meth:`sync` for
        the dates so far: asked for then)."""
        self._take(block=False)
        if self._summary is None:
            with contextlib.suppress(OSError):  # it ended after its last message: read it
                self._conn.send(("summary",))
            while self._summary is None:
                self._take(block=True)
        return self._summary

    def close(self) -> None:
        """End the second process (at once, whatever it was doing)."""
        self._conn.close()
        if self._child.is_alive():
            self._child.kill()
        self._child.join()

    def _send(self, message: tuple[Any, ...]) -> None:
        """Hand ``message`` over, after acting on what was sent back so far."""
        self._take(block=False)
        try:
            self._conn.send(message)
        except OSError:  # it ended; what it sent before its end says how (it may have
            # sent it after the look above: read on to its end, never just give up)
            while not self._ended:
                self._take(block=True)

    def _take(self, *, block: bool) -> None:
        """Read one message (``block``), or every message already sent, and act on it.
        The second process's end after its verdict is no failure; before it, it is."""
        while not self._ended and (block or self._conn.poll()):
            block = False
            try:
                message = self._conn.recv()
            except (EOFError, OSError):  # ended (a reset: it left what was sent unread)
                self._ended = True
                break
            kind = message[0]
            if kind == "done":
                self._pending -= 1
            elif kind == "summary":
                self._summary = message[1]
            elif kind == "verdict":
                self._verdict, self.final_seconds, self._summary = message[1:]
            elif kind == "fault":
                raise EnvironmentFailed(message[1])
            else:
                raise BesideFailed(f"the attempt's checks process failed: {message[1]}")
        if self._ended and self._verdict is None:
            self._child.join()
            code = self._child.exitcode
            if code is not None and code < 0:  # killed: the OOM killer, an operator
                raise EnvironmentFailed(f"the attempt's checks process was killed (signal "
                                        f"{-code}) before its verdict")
            raise BesideFailed(f"the attempt's checks process ended (exit code {code}) "
                               "before its verdict")


class LookbacksAhead:
    """The final evaluation's work as of earlier dates, done between dates: its look backs
    at the log's head folded ahead in per-date control's own :class:`Folds` (its fold
    kinds' makers), and what a check works out as of a date once that date is over
    (:meth:`CheckSpec.ahead`: a reconciliation file's items at its turn's end, a
    comparison at every turn's date), kept in :attr:`turn_ends` for the final evaluation
    to find. The checks of each date are worked out in date order, each on from the
    folds of the last; the folds of the first look back to a turn's end are folded ahead
    from the first date (held at that turn's end once its date is over), so that none is
    folded from the log's start when its date comes (a year's only file, at its end)."""

    def __init__(self, loaded: LoadedScenario, folds: Folds) -> None:
        self.loaded = loaded
        self.folds = folds
        folds.prepare(final_lookbacks(loaded.checks))
        self.turn_ends = Folds(follow=True)
        """Handed to the final evaluation's context (``CheckContext.turn_ends``)."""
        self._ahead = [s for s in final_specs(loaded) if type(s).ahead is not CheckSpec.ahead]
        self._ctx: CheckContext | None = None
        at_turns = final_lookbacks(loaded.checks, turns=True)
        self._first: date | None = min((d for d, _ in at_turns), default=None)
        """The first look back's date to a turn's end, until its turn's end is set."""
        self._first_folds = {(d, name) for d, name in at_turns if d == self._first}
        self.turn_ends.prepare(self._first_folds)  # as far as the log goes, for now

    def after(self, store: EventStore, day: date, position: int, *,
              stop: Callable[[], bool] | None = None) -> bool:
        """After ``day``'s checks at ``position``: the checks' work as of ``day``, then
        every look back folded on (:meth:`Folds.advance_prepared`, until ``stop()``)."""
        if self._ctx is None:  # the final evaluation's, but for its position and files
            self._ctx = context_for(store, self.loaded, workspace=None,
                                    turn_ends=self.turn_ends)
        if self._first is not None and day >= self._first:  # its turn is over: its end
            end = end_of_turn(self._ctx, self._first)
            if end is not None:
                self.turn_ends.prepare(self._first_folds, position=end)
            self._first = None
        if self._ahead:
            ctx = replace(self._ctx, cache={})
            try:
                for spec in self._ahead:
                    spec.ahead(ctx, day)
            except Exception as e:
                if environment_fault(e) is not None:
                    raise  # the store failed: an infrastructure error, as anywhere
                # A check that raises is the final evaluation's to report (that check's
                # grader error): what was worked out ahead, half done, is let go, and the
                # final evaluation works everything out itself.
                self.turn_ends = Folds(follow=True)
                self._ahead, self._first = [], None
        # a turn's end first: its folding ends, the head's grows with the log
        return (self.turn_ends.advance_prepared(store, position, stop=stop, makers=self.folds)
                and self.folds.advance_prepared(store, position, stop=stop))


def _reopen(store: EventStore) -> tuple[str, str | None]:
    """How the second process opens the store again: its target (with the password a
    PostgreSQL URL had: the child is this process's) and schema."""
    if store.dialect == "sqlite":
        return str(store.engine.url.database), None
    return store.engine.url.render_as_string(hide_password=False), store.schema


def _serve(conn: Pipe, attempts_end: Pipe, attempt: int, loaded: LoadedScenario,
           where: tuple[str, str | None], out: Path) -> None:
    """In the second process: evaluate what the attempt hands over, in order, until the
    final verdict is sent or the attempt closes the pipe (or ends: its end of the pipe,
    inherited, is closed here, so that its death is this one's end of input; and on
    Linux its death kills this one at once)."""
    attempts_end.close()
    # Ctrl-C reaches the whole process group: the attempt decides what an interruption
    # does (and this process ends with it), never this one by failing on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(attempt)
    _let_go_of(out / RUNNING_FILE)
    store: EventStore | None = None
    watch: StoreWatch | None = None
    try:
        store = EventStore.open(where[0], schema=where[1])
        watch = StoreWatch(store)
        checks = DailyChecks(loaded)
        ahead = LookbacksAhead(loaded, checks.folds) if checks.specs else None
        while True:
            try:
                message = conn.recv()
            except EOFError:
                return
            if message[0] == "date":
                _, day, position, workspace = message
                checks.evaluate(store, day, position, workspace)
                gc.freeze()  # what lives on (the folds) is out of the collector's way
                _raise_fault(watch)
                conn.send(("done",))
                if ahead is not None:  # in the time until the next date comes
                    ahead.after(store, day, position, stop=conn.poll)
            elif message[0] == "summary":
                conn.send(("summary", checks.summary()))
            else:
                started = time.perf_counter()
                verdict = evaluate_final(out, loaded, store, summary=message[1],
                                         folds=checks.folds if checks.specs else None,
                                         turn_ends=ahead.turn_ends if ahead else None)
                _raise_fault(watch)
                conn.send(("verdict", verdict, time.perf_counter() - started,
                           checks.summary()))
                return
    except EnvironmentFailed as e:
        conn.send(("fault", str(e)))
    except BaseException as e:  # the attempt reports it; the traceback's end says where
        fault = environment_fault(e)
        if fault is not None:
            conn.send(("fault", f"the attempt's checks process: {fault}"))
        else:
            where_ = traceback.extract_tb(e.__traceback__)[-1]
            conn.send(("error", f"{type(e).__name__}: {e} (at {Path(where_.filename).name}:"
                                f"{where_.lineno})"))
    finally:
        if watch is not None:
            watch.close()
        if store is not None:
            store.close()
        conn.close()


def _let_go_of(lock: Path) -> None:
    """Close this process's copies of the attempt folder's lock (inherited from the
    attempt, which holds it): whether a run holds the folder must depend on the attempt's
    life alone. Linux lists them under ``/proc/self/fd``; elsewhere nothing is closed (this
    process then ends with the attempt's end of the pipe)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return
    target = os.path.realpath(lock)
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            if os.readlink(f"/proc/self/fd/{name}") == target:
                os.close(int(name))


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when ``parent`` (the thread that forked it) ends
    (Linux's ``PR_SET_PDEATHSIG``; elsewhere nothing): a killed attempt must leave nothing
    running that holds its folder's lock. A parent gone before the call: exit now."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent:
        os._exit(1)


PR_SET_PDEATHSIG = 1
"""``prctl``'s option: the signal this process gets when its parent thread ends."""


def _raise_fault(watch: StoreWatch) -> None:
    fault = watch.take()
    if fault is not None:
        raise EnvironmentFailed(fault)
