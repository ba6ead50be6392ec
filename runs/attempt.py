"""One attempt: a scenario, a seed and an agent, run over every date and turn.

The attempt folder::

    DIR/books.db                 the store (event log and read tables)
    DIR/turns/NN/workspace/      what the agent saw and left (prompt.md, ERP_GUIDE.md,
                                 inbox/ with the documents new to the turn, out/; the
                                 earlier documents' inbox/archive/ is moved on to the
                                 next turn, whole only in the last turn's)
    DIR/turns/NN/outputs/        a snapshot of the turn's out/ folder
    DIR/turns/NN/agent.log       what went wrong, if the agent crashed
    DIR/turns/NN/agent/          an external agent's logs (stdout.log, stderr.log,
                                 usage.json, transcript.jsonl) and, for every agent,
                                 api.jsonl: one line per request or command of the turn
    DIR/error.txt                why the attempt stopped, when a turn could not be run or
                                 the environment failed (the store, a full disk)
    DIR/.attempt.running         while the run goes on (held with flock); left behind by a
                                 run that was interrupted or killed
    DIR/summary.json             counts, the final trial balance, control ties, final_hash,
                                 the verdict's outcome and the per-date checks' first failures
    DIR/verdict.json             every check result, the scorer, output and log hashes
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import gc
import hashlib
import json
import os
import shutil
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from checks.context import Folds
from checks.verdict import write_verdict
from counterparties.specs import InjectionFailed
from erp import queries as q
from erp.api.wire import status_for
from erp.commands import Command
from erp.errors import CommandRejected
from erp.ledger import Ledger
from erp.money import format_cents
from erp.store import StoredEvent
from runs.daily import ChecksBeside, DailyChecks, DailySummary, choose_beside
from runs.errors import AttemptAborted, AttemptError, InfrastructureError
from runs.execution.turn import stop_left_running
from runs.files import write_text_atomic
from runs.grading import (
    RUNNING_FILE,
    VERDICT_FILE,
    EnvironmentFailed,
    StoreWatch,
    describe_store,
    environment_fault,
    grade,
    running_holder,
)
from scenarios.agents import Agent, built_in_agent
from scenarios.errors import SolverError
from scenarios.facts import prompt_facts
from scenarios.instance import Instance, build_instance
from scenarios.loader import LoadedScenario
from scenarios.turn import TurnContext
from sim.engine import Engine, Phase, release_heap
from sim.world_events import DocumentDelivered

GUIDE = """\
# The ERP, for this turn

You are the {title} (role `{role}`) in the books of {company}. Today is {date}.

- Documents that arrived since your last turn are in `inbox/`; earlier ones in
  `inbox/archive/`. Emails are `.eml`, remittance advices and statements `.csv`,
  bills `.txt`.
- Leave the files you are asked for in `out/` (it keeps what you left last turn).
- Every change you make to the books is recorded with your turn as its author.
  Posted documents are never edited: corrections are reversals or credit memos.
- Control accounts (receivables, payables, unapplied cash, bank) take no manual
  journal entries from a clerk; work through their documents instead.
- Date every entry as it happened, in its own period: a bill on the vendor's invoice
  date, a bank line's entry on the statement's date.

## The `erp` command

Work in the books with the `erp` command (it finds the books through `ERPSIM_API` and
`ERPSIM_TOKEN`, or `.erpsim/connection.json` here). Start with `erp --help`; every
subcommand has its own `--help` with examples. A few:

    erp invoices list --status open --format csv
    erp receipts list --unapplied
    erp receipts apply RECEIPT INVOICE AMOUNT      (amounts like 1234.56)
    erp bills enter ...        erp bank lines --unmatched        erp reports aging

A refused command prints one line saying why and changes nothing.
"""


@dataclass
class Recording:
    """What an agent submitted and declined, by turn number (for replays and mutants)."""

    commands: dict[int, list[Command]] = field(default_factory=dict)
    declined: dict[int, list[tuple[Command, str]]] = field(default_factory=dict)



API_LOG = "api.jsonl"
"""Every turn's request log, in ``turns/NN/agent/``: the ERP API's lines for an external
agent (:mod:`erp.api.request_log`), the same shape for a built-in one."""
ERROR_FILE = "error.txt"


@dataclass
class _RecordedTurn(TurnContext):
    """A built-in agent's turn whose every command is also one api.jsonl-shaped entry
    (``method`` and ``route`` null: the agent runs in-process, not over HTTP)."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def execute(self, command: Command) -> list[StoredEvent] | CommandRejected:
        """Run the command as the turn's actor and record it."""
        time_ = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        started = time.perf_counter()
        result = super().execute(command)
        entry: dict[str, Any] = {
            "time": time_.replace("+00:00", "Z"),
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "method": None, "path": None, "route": None, "command": type(command).__name__,
            "status": 200, "error": None, "message": None, "field": None, "events": [],
            "position": self.ledger.position}
        if isinstance(result, CommandRejected):
            entry.update(status=status_for(result.code), error=result.code,
                         message=result.message, field=result.field)
        else:
            entry["events"] = [e.position for e in result]
        self.entries.append(entry)
        return result


def _write_jsonl(path: Path, entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries),
                    encoding="utf-8")


def command_counts(entries: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """``(commands, rejections)`` of a turn's request log: every command request, and
    those refused (any error status), each as ``{"command", "code", "message"}``."""
    commands = [e for e in entries if e.get("command")]
    refused = [{"command": e["command"], "code": e.get("error") or f"http_{e.get('status')}",
                "message": e.get("message") or ""}
               for e in commands if (e.get("status") or 0) >= 400]
    return len(commands), refused


@dataclass(frozen=True)
class AttemptResult:
    """Where an attempt's results are and its final hash."""

    out: Path
    summary: dict[str, Any]
    released_s: float = 0.0
    """Seconds the heap release at the attempt's end took (:func:`collector_for_attempt`;
    after ``summary.json`` was written, so not in its ``phases_s``)."""

    @property
    def final_hash(self) -> str:
        """The head hash of the attempt's event log."""
        return str(self.summary["final_hash"])


GAP_METRICS = ("optimum_value", "achieved_value", "nothing_value", "gap_cents", "gap_share",
               "max_gap_share")
"""The metrics of a check graded against a certified optimum (``checks/optimality.py``)
that an attempt's summary repeats under ``optimality_gap``, by check name."""


class _Vars(dict[str, str]):
    def __missing__(self, key: str) -> str:
        raise AttemptError(f"prompt template uses {{{key}}}, which is not one of: "
                           f"{', '.join(sorted(self))}")


def render_prompt(template: str, values: dict[str, str]) -> str:
    """Fill ``{name}`` placeholders of a prompt template (``{{`` for a literal brace)."""
    return template.format_map(_Vars(values))


def make_agent(name: str, loaded: LoadedScenario, engine: Engine) -> Agent:
    """A built-in agent for a scenario: ``null``, ``reference`` or ``oracle`` (its solver.py)."""
    try:
        return built_in_agent(name, loaded, engine.world)
    except SolverError as e:
        raise AttemptError(str(e)) from e


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_inbox(workspace: Path, new: list[DocumentDelivered],
                 old: list[DocumentDelivered], previous: Path | None,
                 papers: frozenset[str] = frozenset()) -> None:
    """New documents in ``inbox/``, earlier ones in ``inbox/archive/``.

    The previous turn's archive is moved on into this workspace (one rename, whatever
    its size: linking each earlier document into every turn's archive made a year of
    turns cost turns x documents links), then what the previous turn found new is
    hard-linked into it from that turn's inbox. A turn's folder thus keeps the
    documents new to it in ``inbox/``; its archive is the union of the earlier turns'
    inboxes, and only the last turn's workspace holds it whole. What an agent added to
    or removed from the archive it was given is undone: the archive holds exactly the
    earlier documents (and ``papers``, the scenario's own, which the caller writes).
    Each document's file is written once, read-only (creating a file costs this
    filesystem about a millisecond, a link twenty microseconds). The documents
    themselves are in the log (``DocumentDelivered``); these folders are the agent's
    copies.
    """
    box = workspace / "inbox"
    box.mkdir(parents=True, exist_ok=True)
    archive = os.path.join(box, "archive")
    carried = os.path.join(previous, "inbox", "archive") if previous else None
    wanted = {doc.filename for doc in old}
    present: set[str] = set()
    sources: list[str] = [os.path.join(previous, "inbox")] if previous else []
    if carried is not None and os.path.isdir(carried) and not os.path.islink(carried):
        os.rename(carried, archive)
        try:
            present = _clean_archive(archive, wanted, papers)
        except OSError:  # something of the agent's it cannot remove: give the archive
            os.rename(archive, carried)  # back; this one is made afresh
            present = set()
    if not os.path.isdir(archive):
        os.mkdir(archive)
    for doc in old:
        if doc.filename in present:
            continue
        dest = os.path.join(archive, doc.filename)
        for folder in sources:
            try:
                os.link(os.path.join(folder, doc.filename), dest)
                break
            except OSError:
                continue
        else:  # in no earlier folder (removed by its agent, or no earlier turn)
            _write_read_only(Path(dest), doc.data())
    for doc in new:
        _write_read_only(box / doc.filename, doc.data())


def _clean_archive(archive: str, wanted: set[str], papers: frozenset[str]) -> set[str]:
    """Remove from a carried archive what is not one of the ``wanted`` documents as a
    plain file (nor one of ``papers``): what its agent planted, or a document it replaced
    with a folder or a link. The documents found, by name."""
    present: set[str] = set()
    with os.scandir(archive) as entries:
        for entry in entries:
            if entry.name in wanted and entry.is_file(follow_symlinks=False):
                present.add(entry.name)
            elif entry.name not in papers:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
    return present


def _write_read_only(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o444)


ATTEMPT_GC_THRESHOLD = (50_000, 20, 20)
"""The cyclic garbage collector's thresholds while an attempt runs (CPython's default is
``(700, 10, 10)``). An attempt keeps a large heap that lives to its end (the books'
working state, the checks' forward folds, decoded events) and allocates many small
objects that do not: with the default, the young generation is collected every 700
allocations and the whole heap walked every few hundred thousand, ~0.5-0.8 s of the
default ``bench engine``'s ~5 s (four full collections). The attempt's objects hold few
reference cycles, so collecting less often keeps memory alike."""


@dataclass
class Released:
    """How long :func:`collector_for_attempt`'s heap release took (set as it ends)."""

    seconds: float = 0.0


@contextlib.contextmanager
def collector_for_attempt() -> Iterator[Released]:
    """Run the body with :data:`ATTEMPT_GC_THRESHOLD`, the thresholds it found restored
    after (also when it raises), then the attempt released (:func:`sim.engine.release_heap`,
    also after an attempt that raised before its engine's end): without it a process running
    attempt after attempt (``validate --mutants``, a campaign's worker) kept every one of
    them, about 70 MB a fiscal-year attempt, some 20 GB over a tier's mutants. The release
    walks the whole process's heap: ~0.1 s in an ``erpsim`` process, a second and more in
    one that holds much else (a long test session's)."""
    before = gc.get_threshold()
    gc.set_threshold(*ATTEMPT_GC_THRESHOLD)
    released = Released()
    try:
        yield released
    finally:
        gc.set_threshold(*before)
        started = time.perf_counter()
        release_heap()
        released.seconds = time.perf_counter() - started


def run_attempt(loaded: LoadedScenario, seed: int, agent_name: str, out: Path, *,
                on_day: Callable[[date, int], None] | None = None,
                replace: bool = False, agent: Agent | None = None,
                record: Recording | None = None, store_url: str | None = None,
                schema: str | None = None,
                on_turn: Callable[[dict[str, Any]], None] | None = None,
                stop_on_error: bool = True,
                checks_beside: bool | None = None) -> AttemptResult:
    """Run a scenario with a seed and an agent; write the attempt folder and its verdict.

    ``agent_name`` names a built-in agent, unless ``agent`` is given (then the name only
    labels the attempt). ``record``, when given, receives every command the agent
    submitted and every command it declined, by turn (the mutation tests replay them).

    The books go to ``out/books.db``, unless ``store_url`` names a PostgreSQL database:
    then they go to its schema ``schema`` (created if missing; one that already holds
    events is refused), and ``summary.json`` names the store under ``store``.

    ``on_turn(record)`` is called after each turn with its record (as summary.json keeps
    it). A turn the harness could not run (status ``error``: the adapter could not start,
    the docker engine or the model endpoint failed) ends the attempt when
    ``stop_on_error``: ``error.txt`` says why, and :class:`AttemptAborted` is raised (no
    summary or verdict: the attempt measured nothing).

    A fault of the environment (the store's database lost or failing, a full or read-only
    disk: :func:`runs.grading.environment_fault`), wherever it shows (raised, answered by
    the ERP API as a 500, a built-in agent's turn, a check's grader error), ends the
    attempt as an infrastructure error: ``error.txt`` names the cause, no verdict or
    summary is left, and :class:`~runs.errors.InfrastructureError` (:class:`AttemptAborted`
    when a turn showed it) is raised; never a crashed turn or a verdict.

    An existing, non-empty folder is refused, unless ``replace`` and it holds a
    finished attempt (its ``summary.json``), one that stopped (its ``error.txt``) or one
    whose run was interrupted or killed (its ``.attempt.running``, no longer held), which
    is then deleted first, after the processes its agent left running are killed
    (:func:`~runs.execution.turn.stop_left_running`); an attempt still running there is
    never replaced.

    ``checks_beside``: evaluate the per-date and final checks in a second process beside
    the run (True), in this one (False), or choose (None: beside when this process runs
    alone and may use two CPUs, see :func:`runs.daily.choose_beside`). The verdict and
    every result are the same either way; ``summary.json`` records which under
    ``checks_process``.
    """
    if out.exists() and any(out.iterdir()):
        holder = running_holder(out)
        if holder is not None:
            raise AttemptError(f"{out} is an attempt still running ({holder}); wait for it "
                               "to end or stop it, or choose another --out")
        if not (replace and ((out / "summary.json").is_file()
                             or (out / ERROR_FILE).is_file()
                             or (out / RUNNING_FILE).is_file())):
            raise AttemptError(f"{out} exists and is not empty; choose another --out"
                               + ("" if not replace else " (--replace only replaces an "
                                  "attempt folder, one with a summary.json or error.txt, or "
                                  "one whose run was interrupted)"))
        stop_left_running(out)  # a killed run's agent must not write into the new attempt
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    running = _Running(out)
    try:
        with collector_for_attempt() as released:
            result = _run_attempt(loaded, seed, agent_name, out, on_day=on_day, agent=agent,
                                  record=record, store_url=store_url, schema=schema,
                                  on_turn=on_turn, stop_on_error=stop_on_error,
                                  checks_beside=checks_beside)
        return AttemptResult(result.out, result.summary, released.seconds)
    finally:
        running.release()


class _Running:
    """The attempt folder's :data:`~runs.grading.RUNNING_FILE`, held (``flock``) while the
    run goes on; removed when the run leaves ``summary.json`` or ``error.txt``, kept as
    the mark of an interrupted run otherwise (the system releases the lock of a killed
    process)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = out / RUNNING_FILE
        self.fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            self.fd = None
            raise AttemptError(f"{out} is an attempt another run has just started") from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"pid {os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        """Let go of the folder; the mark stays when the run left neither file."""
        if self.fd is None:
            return
        ended = (self.out / "summary.json").is_file() or (self.out / ERROR_FILE).is_file()
        if ended:
            with contextlib.suppress(OSError):
                self.path.unlink()
        os.close(self.fd)
        self.fd = None


def _run_attempt(loaded: LoadedScenario, seed: int, agent_name: str, out: Path, *,
                 on_day: Callable[[date, int], None] | None, agent: Agent | None,
                 record: Recording | None, store_url: str | None, schema: str | None,
                 on_turn: Callable[[dict[str, Any]], None] | None,
                 stop_on_error: bool, checks_beside: bool | None) -> AttemptResult:
    try:
        return _run_in(loaded, seed, agent_name, out, on_day=on_day, agent=agent,
                       record=record, store_url=store_url, schema=schema, on_turn=on_turn,
                       stop_on_error=stop_on_error, checks_beside=checks_beside)
    except (AttemptAborted, AttemptError):
        raise
    except Exception as e:
        cause = environment_fault(e)
        if cause is None:
            raise
        message = (f"{loaded.scenario.id} seed {seed}: infrastructure error: the environment "
                   f"failed: {cause}; the attempt stopped, nothing was graded")
        _stopped(out, message + "\n\n" + traceback.format_exc())
        raise InfrastructureError(message) from e


def _stopped(out: Path, text: str) -> None:
    """Leave ``error.txt`` saying why the attempt stopped, and no verdict or summary this
    run may have written (as far as the file system lets it: a full or read-only disk
    may keep all three as they are, and the folder's ``.attempt.running`` then says the
    run did not end)."""
    for name in (VERDICT_FILE, "summary.json"):
        with contextlib.suppress(OSError):
            (out / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        write_text_atomic(out / ERROR_FILE, text)


def _run_in(loaded: LoadedScenario, seed: int, agent_name: str, out: Path, *,
            on_day: Callable[[date, int], None] | None, agent: Agent | None,
            record: Recording | None, store_url: str | None, schema: str | None,
            on_turn: Callable[[dict[str, Any]], None] | None,
            stop_on_error: bool, checks_beside: bool | None) -> AttemptResult:
    started = time.perf_counter()
    instance: Instance = build_instance(loaded.scenario, seed)
    if store_url is None:
        ledger = Ledger.open(out / "books.db", create=True)
    else:
        ledger = Ledger.open(store_url, schema=schema, create=True)
        if ledger.position:
            ledger.close()
            raise AttemptError(f"the store {ledger.store.label} already holds "
                               f"{ledger.position} events; an attempt starts on empty books")
    watch = StoreWatch(ledger.store)
    daily: _DailyControl | None = None
    try:
        engine = Engine(instance.calendar, ledger, instance.streams)
        instance.start(engine)
        daily = _DailyControl(loaded, engine, out, checks_beside)  # forks before any thread
        if agent is None:
            agent = make_agent(agent_name, loaded, engine)
        start = getattr(agent, "start", None)
        if start is not None:
            start(ledger)
        set_up = time.perf_counter()
        try:
            turns = _run_days(loaded, instance, engine, agent, out, on_day, record, daily,
                              on_turn, stop_on_error, watch)
        except AttemptAborted as e:
            e.error_file = str(out / ERROR_FILE)
            logs = sorted(str(p.relative_to(out)) for p in
                          (out / "turns" / f"{e.turn:02d}" / "agent").glob("*.log"))
            _stopped(out, f"{e}\n" + "".join(
                f"log: {rel} (in the attempt folder)\n" for rel in logs))
            raise
        except InjectionFailed as e:  # the scenario's settings, not the agent: bad input
            message = (f"{loaded.scenario.id} seed {seed}: {e} (change the scenario's "
                       "injection or what it needs); the attempt stopped, nothing was graded")
            write_text_atomic(out / ERROR_FILE, message + "\n")
            raise AttemptError(message) from e
        finally:
            stop = getattr(agent, "stop", None)
            if stop is not None:
                stop()
        engine.finish()
        ran = time.perf_counter()
        summary = _summary(loaded, instance, engine, ledger, agent_name, turns,
                           ran - started)
        graded: dict[str, float] = {}
        if daily.beside is not None:  # its checks begin while the books are verified here
            daily.beside.final(summary)
            # Verifying the books and waiting for the verdict need the store alone: the
            # run's world, engine and books are let go, and collected (the attempt's heap
            # release, ~0.25 s at 2,000 customers) while the second process works on.
            ledger.forget_state()
            daily.engine = None
            del engine, instance
            agent = None
            daily.beside.meanwhile = release_heap
        verdict = grade(out, loaded, ledger.store, summary=summary,
                        folds=daily.folds if daily.specs else None, during_run=True,
                        timing=graded, elsewhere=daily.beside)
        per_date = daily.summary()
        phases = _phases(set_up - started, ran - set_up, turns, per_date, daily.beside,
                         graded)
        fault = watch.take()  # a per-date or final check's grader error, say
        if fault is not None:
            raise EnvironmentFailed(fault)
    finally:
        if daily is not None:
            daily.close()
        watch.close()
        ledger.close()
    write_verdict(verdict, out / VERDICT_FILE)
    summary["verdict"] = {"status": verdict.status, "accepted": verdict.accepted,
                          "failed": [r.name for r in verdict.failed],
                          "grader_errors": [g.check for g in verdict.grader_errors],
                          "check_fraction": round(verdict.check_fraction, 6)}
    gaps = {r.name: {k: r.metrics[k] for k in GAP_METRICS if k in r.metrics}
            for r in verdict.results if "gap_share" in r.metrics}
    if gaps:  # a check graded the run against a certified optimum (payment-run)
        summary["optimality_gap"] = gaps
    summary["daily_checks"] = per_date.report
    summary["daily_timing"] = per_date.timing
    summary["daily_by_month"] = per_date.monthly
    summary["phases_s"] = phases
    summary["checks_process"] = "beside" if daily.beside is not None else "attempt"
    if daily.beside is not None:  # whether each turn waited for the dates handed over
        summary["turns_wait_for_checks"] = daily.reads_workspace
    if store_url is not None:
        summary["store"] = describe_store(ledger.store)
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    return AttemptResult(out, summary)


def _phases(set_up: float, days: float, turns: list[dict[str, Any]], per_date: DailySummary,
            beside: ChecksBeside | None, graded: dict[str, float]) -> dict[str, float]:
    """Where an attempt's wall time went, in seconds (``summary.json`` ``phases_s``): the
    set-up (the instance drawn, the books opened, the counterparties and the agent
    started), the simulation between the agent's turns (the world and the company's
    automation, without the per-date checks), the turns in two parts: the agent's own
    time (``agent``: its process, or a built-in agent's work) and the harness's around
    it (``turn_harness``: workspace, inbox, prompt, outputs snapshot and hashes), the
    per-date checks, and the grading's two parts: the books' verification and the final
    checks (none when the books did not verify).

    With the checks beside the run (``summary.json`` ``checks_process``: ``beside``),
    ``per_date_checks`` and ``final_checks`` are the second process's seconds, spent
    while this one simulated, ran turns and verified the books, and ``waited_for_checks``
    the seconds this one waited for it: before a turn, and for the final verdict, and
    ``heap_release`` the seconds this one spent, while it would have waited for the
    verdict, collecting its run (its engine, world and books, let go by then; the release
    at the attempt's end, after ``summary.json``, is :attr:`AttemptResult.released_s`)."""
    turns_s = sum(float(t.get("turn_wall_s", 0.0)) for t in turns)
    agent_s = sum(float(t.get("duration_s", 0.0)) for t in turns)
    in_run = per_date.seconds if beside is None else 0.0
    phases = {
        "set_up": set_up, "simulation": days - turns_s - in_run, "agent": agent_s,
        "turn_harness": turns_s - agent_s, "per_date_checks": per_date.seconds,
        "verification": graded.get("verification", 0.0),
        "final_checks": graded.get("checks", 0.0)}
    if beside is not None:
        phases["simulation"] -= beside.waited_before_turns
        phases["heap_release"] = beside.meanwhile_seconds
        phases["waited_for_checks"] = beside.waited
    return {k: round(v, 4) for k, v in phases.items()}


class _DailyControl:
    """The checks a scenario asks for at every business date's end (``runs.daily``): in
    this process, or beside it in a second one (:func:`runs.daily.choose_beside`).

    A check that raises is recorded as failing that date, with the error as its detail.
    """

    def __init__(self, loaded: LoadedScenario, engine: Engine, out: Path,
                 beside: bool | None = None) -> None:
        self.loaded = loaded
        self.engine: Engine | None = engine
        """The run's engine (None once the run is over and let go)."""
        self.checks = DailyChecks(loaded)
        self.specs = self.checks.specs
        self.workspace: Path | None = None
        """The latest turn's workspace (its files, for checks that read them)."""
        self.reads_workspace = any(spec.reads_workspace() for _, spec in self.specs)
        """Whether a per-date check reads a turn's files (``CheckSpec.reads_workspace``):
        only then are the checks handed the latest workspace, and only then does a turn
        wait for the dates handed to the checks beside the run (the next turn moves the
        last one's inbox archive). The library's per-date checks read the books and the
        world's records alone, so the second process catches up during turns."""
        self.beside: ChecksBeside | None = None
        """The second process evaluating the checks, when they run beside the attempt."""
        store = engine.ledger.store
        if choose_beside(store, loaded, beside):
            self.beside = ChecksBeside(loaded, store, out)
        if self.specs:
            engine.daily(Phase.DAY_END, self.at_day_end)

    @property
    def folds(self) -> Folds:
        """The folds per-date control kept (in this process)."""
        return self.checks.folds

    def at_day_end(self, day: date) -> None:
        """Evaluate the per-date checks as of this date's end."""
        assert self.engine is not None  # dates end while the run goes on
        self.engine.world.flush()
        ledger = self.engine.ledger
        workspace = self.workspace if self.reads_workspace else None
        if self.beside is not None:
            self.beside.date(day, ledger.position, workspace)
        else:
            self.checks.evaluate(ledger.store, day, ledger.position, workspace)

    def before_turn(self) -> None:
        """Wait for the dates handed to the second process before a turn changes the
        folders their checks read (only when one reads a turn's files)."""
        if self.beside is not None and self.reads_workspace:
            self.beside.sync()

    def summary(self) -> DailySummary:
        """What per-date control found."""
        return self.beside.summary() if self.beside is not None else self.checks.summary()

    def close(self) -> None:
        """End the second process, if any."""
        if self.beside is not None:
            self.beside.close()


def _run_days(loaded: LoadedScenario, instance: Instance, engine: Engine, agent: Agent,
              out: Path, on_day: Callable[[date, int], None] | None,
              record: Recording | None = None,
              daily: _DailyControl | None = None,
              on_turn: Callable[[dict[str, Any]], None] | None = None,
              stop_on_error: bool = True,
              watch: StoreWatch | None = None) -> list[dict[str, Any]]:
    sc = loaded.scenario
    turn_dates = set(instance.turn_dates)
    days = instance.calendar.business_days()
    turns: list[dict[str, Any]] = []
    delivered_to = 0.0
    shown: list[DocumentDelivered] = []
    previous_out: Path | None = None
    ended = False
    for i, day in enumerate(days):
        engine.run_to_turn(day)
        if day in turn_dates and not ended:
            n = len(turns) + 1
            if daily is not None:
                daily.before_turn()
            now = engine.time_of(day, Phase.TURN)
            new = engine.world.documents_between(delivered_to, now)
            delivered_to = now
            turns.append(_run_turn(loaded, instance, engine, agent, out, n, day, new, shown,
                                   previous_out, record, watch))
            if on_turn is not None:
                on_turn(turns[-1])
            if turns[-1]["status"] == "error" and stop_on_error:
                raise _aborted(turns[-1])
            shown = shown + new
            previous_out = out / "turns" / f"{n:02d}" / "workspace" / "out"
            if daily is not None:
                daily.workspace = previous_out.parent
            if turns[-1]["status"] == "timeout" and sc.turns.on_timeout == "end":
                ended = True  # the scenario ends the agent's work; the world goes on
        if on_day is not None:
            on_day(day, i + 1)
        fault = watch.take() if watch is not None else None
        if fault is not None:  # the world's or a per-date check's, caught where it arose
            raise EnvironmentFailed(fault)
    if sc.turns.outputs and previous_out is not None:
        shutil.copytree(previous_out, out / "outputs", dirs_exist_ok=True)
    return turns


def _api_failed(requests: list[dict[str, Any]] | None) -> str | None:
    """How the turn's ERP API failed, when it answered a request with a 5xx (the server
    itself failed: its store, or a bug of ours; never an agent's mistake), else None. A
    503 ``store_busy`` is not one: it asks the agent to try again."""
    failed = [e for e in requests or () if (e.get("status") or 0) >= 500
              and e.get("error") != "store_busy"]
    if not failed:
        return None
    first = failed[0]
    return (f"the ERP API failed answering {len(failed)} request(s), the first "
            f"{first.get('method')} {first.get('path')}: {first.get('status')} "
            f"{first.get('error') or ''} {first.get('message') or ''}".rstrip())


def _aborted(turn: dict[str, Any]) -> AttemptAborted:
    """The error that ends an attempt at a turn the harness could not run."""
    process = turn.get("process") or {}
    cause = process.get("infrastructure_error") or "the turn could not be run"
    return AttemptAborted(f"turn {turn['turn']} ({turn['date']}): infrastructure error: {cause}",
                          turn=int(turn["turn"]), cause=str(cause))


def _run_turn(loaded: LoadedScenario, instance: Instance, engine: Engine, agent: Agent,
              out: Path, n: int, day: date, new: list[DocumentDelivered],
              old: list[DocumentDelivered], previous_out: Path | None,
              record: Recording | None = None,
              watch: StoreWatch | None = None) -> dict[str, Any]:
    sc = loaded.scenario
    turn_started = time.perf_counter()
    turn_dir = out / "turns" / f"{n:02d}"
    ws = turn_dir / "workspace"
    (ws / "out").mkdir(parents=True)
    if sc.turns.carry_files and previous_out is not None and previous_out.exists():
        shutil.copytree(previous_out, ws / "out", dirs_exist_ok=True)
    _write_inbox(ws, new, old, previous_out.parent if previous_out is not None else None,
                 frozenset(Path(rel).name for rel in loaded.files))
    if n == 1:  # a desk task's supplied files, where its prompt says they are
        for rel, data in loaded.workspace_files.items():
            dest = ws / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
    for rel, data in loaded.files.items():  # the scenario's own papers: new at turn 1
        dest = ws / "inbox" / (Path(rel).name if n == 1 else f"archive/{Path(rel).name}")
        dest.write_bytes(data)
    outputs = "\n".join(f"- `{p}`" for p in sc.turns.outputs) or "- (no files this turn)"
    role = sc.turns.roles.get(day, "clerk")
    values = {"company": instance.setup.name, "date": day.isoformat(), "turn": str(n),
              "turns": str(len(instance.turn_dates)), "outputs": outputs,
              "inbox_count": str(len(new) + (len(loaded.files) if n == 1 else 0)),
              "title": sc.title,
              "weekday": day.strftime("%A"),
              **prompt_facts(engine.ledger.store, day, role)}  # what the books hold now
    prompt = ws / "prompt.md"
    prompt.write_text(render_prompt(loaded.prompt_template, values), encoding="utf-8")
    (ws / "ERP_GUIDE.md").write_text(GUIDE.format(
        company=instance.setup.name, date=day.isoformat(), role=role,
        title={"clerk": "clerk", "controller": "controller"}[role]), encoding="utf-8")
    desk = _RecordedTurn(turn=n, day=day, workspace=ws, prompt_file=prompt, output_dir=ws / "out",
                ledger=engine.ledger, actor=f"agent:turn-{n}", role=role,
                sim_time=engine.time_of(day, Phase.TURN),
                record=record.commands.setdefault(n, []) if record is not None else None)
    engine.world.flush()
    started = time.perf_counter()
    status = "completed"
    process: dict[str, Any] | None = None
    fault: str | None = None
    if watch is not None:
        watch.take()  # what failed before the turn was raised then, or is seen after it
    try:
        agent.run_turn(desk)
    except Exception as e:  # an agent's crash is recorded; the attempt goes on
        status = "crashed"
        (turn_dir / "agent.log").write_text(traceback.format_exc(), encoding="utf-8")
        fault = environment_fault(e)
    outcome = getattr(agent, "last_outcome", None)
    if outcome is not None and status == "completed":  # an external agent's process
        status = outcome.status
        process = outcome.to_json(relative_to=out)
        process["runner_overhead_s"] = agent.last_overhead.get("runner_s")  # type: ignore[attr-defined]
    duration = time.perf_counter() - started
    requests: list[dict[str, Any]] | None = getattr(agent, "last_requests", None)
    fault = fault or (watch.take() if watch is not None else None) or _api_failed(requests)
    if fault is not None and status != "error":  # the harness failed, not the agent
        status = "error"
        process = {**(process or {"exit_code": None}),
                   "infrastructure_error": f"the environment failed during the turn: {fault}"}
    api_log = turn_dir / "agent" / API_LOG
    if requests is None:  # a built-in agent: its in-process commands
        requests = desk.entries
        _write_jsonl(api_log, requests)
    commands, rejections = command_counts(requests)
    usage = (process or {}).get("usage") or {}
    cli_version = (process or {}).get("cli_version") or usage.get("cli_version")
    if record is not None:
        record.declined[n] = list(desk.declined)
    shutil.copytree(ws / "out", turn_dir / "outputs")
    produced = {str(p.relative_to(ws / "out")): _sha256(p)
                for p in sorted((ws / "out").rglob("*")) if p.is_file()}
    return {"turn": n, "date": day.isoformat(), "role": role, "status": status,
            "duration_s": round(duration, 4),
            "turn_wall_s": round(time.perf_counter() - turn_started, 4),
            "commands": commands, "rejections": rejections, "requests": len(requests),
            "api_log": str(api_log.relative_to(out)) if api_log.is_file() else None,
            "cli_version": cli_version if isinstance(cli_version, str) else None,
            "inbox_new": len(new), "outputs": produced, "process": process,
            "declined": [{"command": type(cmd).__name__, "reason": why}
                         for cmd, why in desk.declined],
            "missing_outputs": [p for p in sc.turns.outputs if not (ws / p).is_file()]}


def _summary(loaded: LoadedScenario, instance: Instance, engine: Engine, ledger: Ledger,
             agent_name: str, turns: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    from importlib.metadata import version

    store = ledger.store
    by_realm: Counter[str] = Counter()
    by_actor: Counter[str] = Counter()
    bills_received = 0
    with store.engine.connect() as conn:
        for realm, actor, type_, n in conn.exec_driver_sql(
                "SELECT realm, actor, type, COUNT(*) FROM events GROUP BY realm, actor, type"):
            by_realm[realm] += n
            by_actor[actor] += n
            if realm == "world" and type_ == "bill_issued":
                bills_received += n
    tb = q.trial_balance(store)
    debit, credit = sum(r.debit for r in tb), sum(r.credit for r in tb)
    unapplied = q.open_items(store, "unapplied_cash")
    sc = loaded.scenario
    return {
        "scenario": sc.id, "title": sc.title, "seed": instance.seed, "agent": agent_name,
        "scenario_sha256": loaded.sha256, "erpsim_version": version("erpsim"),
        "calendar": {"start": instance.calendar.start.isoformat(),
                     "end": instance.calendar.end.isoformat(),
                     "business_days": len(instance.calendar.business_days())},
        "population": {"customers": len(instance.customers), "vendors": len(instance.vendors)},
        "tier": None if sc.tier is None else {"name": sc.tier,
                                              "description": sc.tiers[sc.tier].description,
                                              "params": sc.tiers[sc.tier].changes(),
                                              "documents": sc.documents.model_dump()},
        "turns": turns,
        "events": {"total": sum(by_realm.values()), "by_realm": dict(sorted(by_realm.items())),
                   "by_actor": dict(sorted(by_actor.items()))},
        "trial_balance": [{"account": r.account, "name": r.name, "debit": format_cents(r.debit),
                           "credit": format_cents(r.credit)} for r in tb],
        "trial_balance_total": {"debit": format_cents(debit), "credit": format_cents(credit),
                                "difference": format_cents(debit - credit)},
        "control_ties": [{"account": t.account, "control": t.control,
                          "gl": format_cents(t.gl_balance),
                          "subledger": format_cents(t.subledger_total),
                          "difference": format_cents(t.difference)}
                         for t in q.control_ties(store)],
        "figures": {
            "unapplied_receipts": len(unapplied),
            "unapplied_cash": format_cents(sum(i.open_amount for i in unapplied)),
            "open_ar": format_cents(sum(i.open_amount for i in q.open_items(store, "ar"))),
            "open_ap": format_cents(sum(i.open_amount for i in q.open_items(store, "ap"))),
            "bills_received": bills_received,
            "bills_entered": len(ledger.books.bills) - len(instance.setup.opening_bills),
            "unmatched_statement_lines": len(q.statement_lines(store, unmatched=True)),
            "documents_delivered": len(engine.world.inbox),
            "company_commands_refused": len(engine.world.rejections),
        },
        "final_hash": ledger.head_hash,
        "final_position": ledger.position,
        "wall_s": round(wall_s, 3),
    }
