"""Grading an attempt: its scenario's checks against its stored books and files.

Everything a verdict needs is in the attempt folder (``books.db``, the last turn's
workspace with ``out/``), so grading again later runs nothing (``erpsim check``).

A verdict comes only from state derived from the verified log. Before any check runs,
:func:`verify_attempt_books` recomputes the log's hash chain, requires its head to be the
``final_hash`` the attempt recorded (``summary.json``, ``verdict.json``, and the results
ledger's row when a campaign rescores), checks the file's pages (SQLite), and compares
every read table the checks read with a fold of the verified log
(:func:`erp.verification.verify_books`). Anything that does not check out raises
``IntegrityError`` naming the position, or the table and row, and nothing is graded. The
verdict records how under ``books`` (``"verified": "rebuilt-and-compared"``, the log head,
each table's row count and digest). An attempt graded by its own run as it ends is
different: only its turns had the books, so books that do not verify are the agent's doing,
and the attempt is rejected (``books-verified`` failed; ``"verified": "refused"``).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import sqlite3
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Protocol

from checks.context import CheckContext, Folds
from checks.registry import CheckResult, CheckSpec, definitions_hash
from checks.verdict import (
    SCORER_NAME,
    GraderError,
    Verdict,
    evaluate,
    output_hashes,
    scorer_version,
    write_verdict,
)
from erp.errors import IntegrityError, StoreError
from erp.store import EventStore
from erp.verification import BooksReport, verify_books
from runs.errors import GradingError
from scenarios.loader import LoadedScenario

VERDICT_FILE = "verdict.json"
RUNNING_FILE = ".attempt.running"
"""The mark of an attempt folder whose run has not ended: written (and held with
``flock``) by :func:`runs.attempt.run_attempt` when it starts, removed when the run writes
``summary.json`` or ``error.txt``. Left behind, it says the run was interrupted or killed
(``erpsim run --replace`` replaces such a folder); held, that the run goes on."""


def running_holder(out: Path) -> str | None:
    """Who runs the attempt in ``out`` now (``"pid N"``), or None when no run holds its
    :data:`RUNNING_FILE` (none there, or its run died: the system released the lock)."""
    try:
        fd = os.open(out / RUNNING_FILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 100, 0).decode(errors="replace").strip() or "another run"
        return None
    finally:
        os.close(fd)  # closing the descriptor releases a lock it took


ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES,
                                errno.EPERM})
"""An ``OSError`` of one of these is the machine's fault: a full disk or quota, a
read-only or failing filesystem, a folder the harness may no longer write (its mode
changed under the run)."""


def environment_fault(error: BaseException | None) -> str | None:
    """What in the environment failed, when ``error`` is (or was raised from, or while
    handling, or copied by SimPy from) a fault of the environment; None otherwise.

    Faults of the environment: the store's database failing or out of reach (a driver's
    ``OperationalError`` or ``InterfaceError``: a lost connection, a terminated backend, a
    full or failing disk; never a lock wait that ran out, which the store answers as
    ``StoreBusy`` to be tried again), a store that cannot be used (``StoreError``, not
    ``IntegrityError``: books that do not verify are data), and a file system that is
    full, read-only or failing (:data:`ENVIRONMENT_ERRNOS`). Anything else (an agent's or
    a check's bug) is not one.
    """
    seen: set[int] = set()
    todo: deque[BaseException] = deque([error] if error is not None else [])
    while todo:
        e = todo.popleft()
        if id(e) in seen:
            continue
        seen.add(id(e))
        cause = _fault_of(e)
        if cause is not None:
            return cause
        todo.extend(x for x in (e.__cause__, e.__context__, simpy_original(e))
                    if x is not None)
    return None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


class EnvironmentFailed(GradingError):
    """The environment failed while an attempt ran or was graded (``cause`` says what:
    :func:`environment_fault`), where the error itself was caught (a check's grader
    error, the ERP API's answer): no verdict can come of it."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


def _fault_names() -> frozenset[str]:
    """The class names of the driver errors that are faults of the environment (as a
    grader error's traceback text names them)."""
    import sqlalchemy as sa

    roots: list[type] = [sa.exc.OperationalError, sa.exc.InterfaceError,
                         sqlite3.OperationalError, sqlite3.InterfaceError, StoreError]
    try:
        import psycopg

        roots += [psycopg.OperationalError, psycopg.InterfaceError]
    except ImportError:  # pragma: no cover - a dependency of erpsim
        pass
    names: set[str] = set()
    todo = list(roots)
    while todo:
        cls = todo.pop()
        if cls.__name__ not in names and not issubclass(cls, IntegrityError):
            names.add(cls.__name__)
            todo.extend(cls.__subclasses__())
    return frozenset(names)


_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*): (.*)$")
_ERRNO = re.compile(r"\[Errno (\d+)\]")


def grader_error_fault(verdict: Verdict | Sequence[GraderError]) -> str | None:
    """The first grader error of ``verdict`` (or of the errors given) that a fault of the
    environment caused (by its traceback's exception lines: a driver's
    ``OperationalError`` or ``InterfaceError`` that is not a lock wait, a ``StoreError``,
    an ``OSError`` of :data:`ENVIRONMENT_ERRNOS`), as ``check: cause``; None when there
    is none. A check that raised because the store failed has not answered: it is no
    grader error."""
    errors = verdict.grader_errors if isinstance(verdict, Verdict) else verdict
    if not errors:
        return None
    names = _fault_names()
    for g in errors:
        for line in [g.error, *g.traceback.splitlines()]:
            m = _EXCEPTION_LINE.match(line.strip())
            if m is None:
                continue
            name, text = m.groups()
            errno_m = _ERRNO.search(text)
            if ((name in names and "locked" not in text and "55P03" not in text)
                    or (errno_m is not None and int(errno_m.group(1)) in ENVIRONMENT_ERRNOS)):
                return f"{g.check}: {name}: {text}"
    return None


def _fault_of(error: BaseException) -> str | None:
    import sqlalchemy as sa

    from erp.errors import StoreBusy

    if isinstance(error, EnvironmentFailed):
        return error.cause
    if isinstance(error, OSError) and error.errno in ENVIRONMENT_ERRNOS:
        return f"{type(error).__name__}: {error}"
    if isinstance(error, StoreBusy):
        return f"StoreBusy: {_first_line(error)}"
    if isinstance(error, StoreError) and not isinstance(error, IntegrityError):
        return f"{type(error).__name__}: {_first_line(error)}"
    orig = error.orig if isinstance(error, sa.exc.DBAPIError) else error
    if _lock_wait(orig):
        return None
    driver = (sa.exc.OperationalError, sa.exc.InterfaceError, sqlite3.OperationalError,
              sqlite3.InterfaceError)
    if isinstance(error, driver) or _psycopg_fault(error) or (
            isinstance(error, sa.exc.DBAPIError) and error.connection_invalidated):
        text = _first_line(orig if orig is not None else error)
        return f"{type(orig if orig is not None else error).__name__}: {text}"
    return None


def _lock_wait(error: BaseException | None) -> bool:
    """A lock wait that ran out (SQLite "database is locked", PostgreSQL 55P03)."""
    if isinstance(error, sqlite3.OperationalError):
        return "locked" in str(error)
    return getattr(error, "sqlstate", None) == "55P03"


def _psycopg_fault(error: BaseException) -> bool:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - a dependency of erpsim
        return False
    return isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError))


def simpy_original(error: BaseException) -> BaseException | None:
    """The exception a SimPy process raised, when ``error`` is SimPy's failed attempt to
    copy it (``type(e)(*e.args)`` raises for an exception whose constructor takes other
    arguments, such as SQLAlchemy's: the cause would be lost); else None."""
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "step" and "simpy" in frame.f_code.co_filename:
            value = getattr(frame.f_locals.get("event"), "_value", None)
            if isinstance(value, BaseException) and value is not error:
                return value
        tb = tb.tb_next
    return None


def describe_failure(error: BaseException) -> str:
    """``Type: message`` of an error, or of the exception SimPy failed to copy
    (:func:`simpy_original`), so that the cause is named, not SimPy's ``TypeError``."""
    original = simpy_original(error)
    shown = original if original is not None else error
    return f"{type(shown).__name__}: {shown}"


class StoreWatch:
    """The faults of the environment a store's database raised while it is watched,
    whoever caught them: a check's (a grader error), the ERP API's (an answer 500), an
    agent's (a crashed turn). SQLAlchemy's ``handle_error`` event sees every driver error
    of the store's engine, in any thread. ``take()`` returns the first one not taken yet."""

    def __init__(self, store: EventStore) -> None:
        import sqlalchemy as sa

        self._engine = store.engine
        self.faults: list[str] = []
        self._taken = 0
        sa.event.listen(self._engine, "handle_error", self._on_error)

    def _on_error(self, context: Any) -> None:
        error = context.sqlalchemy_exception or context.original_exception
        cause = environment_fault(error) if error is not None else None
        if cause is not None:
            self.faults.append(cause)

    def take(self) -> str | None:
        """The first fault since the last ``take()`` (and how many more), or None."""
        new = self.faults[self._taken:]
        self._taken = len(self.faults)
        if not new:
            return None
        return new[0] + (f" (and {len(new) - 1} more store error(s))" if len(new) > 1 else "")

    def close(self) -> None:
        """Stop watching."""
        import sqlalchemy as sa

        if sa.event.contains(self._engine, "handle_error", self._on_error):
            sa.event.remove(self._engine, "handle_error", self._on_error)


@dataclass(frozen=True)
class DailyFailure:
    """A per-date check that failed at a business date's end."""

    check: str
    day: date
    detail: str


def final_workspace(out: Path) -> Path | None:
    """The last turn's workspace (its ``out/`` holds the requested files), if any turn ran."""
    turns = sorted((out / "turns").glob("[0-9][0-9]*")) if (out / "turns").is_dir() else []
    return turns[-1] / "workspace" if turns else None


def read_summary(out: Path) -> dict[str, Any]:
    """The attempt's ``summary.json`` (GradingError when missing or unreadable)."""
    path = out / "summary.json"
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        holder = running_holder(out)
        if holder is not None:
            raise GradingError(f"{out}: the attempt is still running ({holder}); no "
                               "summary.json yet") from None
        if (out / RUNNING_FILE).is_file():
            raise GradingError(f"{out}: the attempt did not finish (its run was interrupted, "
                               "killed or could not write its files: no summary.json); "
                               "nothing was graded: run it again with erpsim run "
                               "--replace") from None
        raise GradingError(f"{out}: no summary.json (not a finished attempt folder)") from None
    except (OSError, ValueError) as e:
        raise GradingError(f"{path}: unreadable ({e})") from e


def context_for(store: EventStore, loaded: LoadedScenario, *,
                workspace: Path | None, agent_actors: tuple[str, ...] = (),
                turn_roles: dict[str, str] | None = None,
                as_of: date | None = None, position: int | None = None,
                folds: Folds | None = None,
                turn_workspaces: dict[date, Path] | None = None,
                turn_ends: Folds | None = None) -> CheckContext:
    """The check context of an attempt of ``loaded`` (``folds``: kept across per-date
    evaluations, see :class:`checks.context.Folds`; ``turn_workspaces``: each turn's
    workspace by its date, see :func:`turn_workspaces`; ``turn_ends``: the folds of look
    backs to turns' ends, prepared beside the run, else new ones)."""
    start, end, turn_dates = calendar_facts(loaded)
    return CheckContext(store=store, workspace=workspace, reference=loaded.reference_dir,
                        inputs=tuple(sorted(loaded.workspace_files)),
                        start=start, end=end,
                        as_of=as_of, position=position, agent_actors=agent_actors,
                        turn_roles=dict(turn_roles or {}),
                        control_accounts=dict(loaded.scenario.company.control_accounts),
                        folds=folds, turn_dates=turn_dates,
                        turn_workspaces=dict(turn_workspaces or {}),
                        turn_ends=turn_ends if turn_ends is not None else Folds(follow=True))


def turn_workspaces(out: Path, summary: dict[str, Any]) -> dict[date, Path]:
    """Each turn's workspace in the attempt folder ``out`` by the turn's date, from the
    summary's turns (``turns/NN/workspace``; a check's ``at_turn`` reads its files)."""
    found: dict[date, Path] = {}
    for t in summary.get("turns", []):
        try:
            day, n = date.fromisoformat(str(t["date"])), int(t["turn"])
        except (KeyError, TypeError, ValueError):
            continue  # not a turn of ours: a check reading it finds no files
        found[day] = out / "turns" / f"{n:02d}" / "workspace"
    return found


_CALENDAR_FACTS: dict[int, tuple[LoadedScenario, tuple[date, date, tuple[date, ...]]]] = {}


def calendar_facts(loaded: LoadedScenario) -> tuple[date, date, tuple[date, ...]]:
    """The scenario's first and last dates and its turn dates, worked out once per loaded
    scenario (it is frozen): per-date control makes a context at every date, and building
    a year's calendar and its turn dates cost a fifth of a date's checks."""
    hit = _CALENDAR_FACTS.get(id(loaded))
    if hit is not None and hit[0] is loaded:
        return hit[1]
    cal = loaded.scenario.calendar.build()
    facts = (cal.start, cal.end, tuple(loaded.scenario.turns.dates_in(cal)))
    if len(_CALENDAR_FACTS) >= 16:
        _CALENDAR_FACTS.clear()
    _CALENDAR_FACTS[id(loaded)] = (loaded, facts)
    return facts


def attempt_turn_dates(summary: dict[str, Any]) -> tuple[date, ...]:
    """The dates of the attempt's turns, as its ``summary.json`` records them (for a
    reconciliation after the run: what reached the company after a turn is a timing item
    until the next one). A turn without a readable date is left out."""
    out: list[date] = []
    for t in summary.get("turns") or ():
        try:
            out.append(date.fromisoformat(str(t["date"])))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(sorted(set(out)))


def final_specs(loaded: LoadedScenario) -> list[CheckSpec]:
    """The scenario's checks, as evaluated when the attempt ends."""
    return list(loaded.checks)


def daily_specs(loaded: LoadedScenario) -> list[tuple[int, CheckSpec]]:
    """The checks asked for at every business date's end, with their index in the list."""
    return [(i, s) for i, s in enumerate(loaded.checks) if s.daily]


def _recorded_heads(out: Path, summary: dict[str, Any],
                    expect_head: str | None) -> list[tuple[str, str, Any]]:
    """The log heads the attempt recorded: ``(where, hash, position)`` each."""
    heads: list[tuple[str, str, Any]] = []
    if summary.get("final_hash"):
        heads.append(("summary.json final_hash", str(summary["final_hash"]),
                      summary.get("final_position")))
    try:
        verdict = json.loads((out / VERDICT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        verdict = None  # none yet (the attempt is being graded) or unreadable: not a record
    if isinstance(verdict, dict) and verdict.get("final_log_hash"):
        heads.append(("verdict.json final_log_hash", str(verdict["final_log_hash"]),
                      verdict.get("final_position")))
    if expect_head is not None:
        heads.append(("the results ledger's final_hash", expect_head, None))
    return heads


def verify_attempt_books(out: Path, store: EventStore, summary: dict[str, Any], *,
                         expect_head: str | None = None) -> BooksReport:
    """Verify an attempt's books before grading: the chain, the file, every read table
    against a fold of the log, and the log's head against every head the attempt
    recorded (``expect_head``: one more, e.g. the results ledger's). ``IntegrityError``
    when any does not check out; ``GradingError`` when the summary records no head."""
    heads = _recorded_heads(out, summary, expect_head)
    if not heads:
        raise GradingError(f"{out}: summary.json records no final_hash (not a finished "
                           "attempt folder); the log's head cannot be checked")
    log = store.verify()
    if not log.ok:
        raise IntegrityError(f"{store.label}: {log.message}; not graded",
                             log.first_bad_position)
    head, position = log.head_hash, log.events
    for where, recorded, at in heads:
        if recorded != head:
            at_text = f" at position {at}" if at is not None else ""
            raise IntegrityError(
                f"{out}: the log's head is {head} at position {position}, but the attempt "
                f"recorded {recorded}{at_text} ({where}): the log was cut short or "
                "rewritten at its end; not graded", position + 1)
    books = verify_books(store, log)
    if not books.ok:
        raise IntegrityError(f"{store.label}: {books.message}; not graded")
    return books


BOOKS_CHECK = "books-verified"
"""The one result of an attempt whose own run left books that do not verify."""


class FinalChecks(Protocol):
    """The final evaluation made elsewhere (another process), begun before the books'
    verification: its verdict, and the seconds it took there."""

    final_seconds: float

    def verdict(self) -> Verdict:
        """The verdict (waits for it)."""
        ...


def grade(out: Path, loaded: LoadedScenario, store: EventStore, *,
          summary: dict[str, Any], expect_head: str | None = None,
          folds: Folds | None = None, during_run: bool = False,
          timing: dict[str, float] | None = None,
          elsewhere: FinalChecks | None = None) -> Verdict:
    """Verify the attempt's books (:func:`verify_attempt_books`), then evaluate the
    scenario's checks on its store and final workspace (``folds``: per-date control's,
    folded on to the log's head rather than afresh; the verdict is the same).

    Books that do not verify raise ``IntegrityError`` (nothing graded), unless
    ``during_run``: the attempt's own run grades it as it ends, so only its turns had the
    books, and the change is the agent's. Then the verdict is rejected by one failed
    result, ``books-verified``, naming what does not check out; no other check reads
    books that cannot be trusted. ``timing``, when given, receives the seconds each part
    took: ``verification`` and ``checks``. A check that raised because the environment
    failed (:func:`grader_error_fault`) raises :class:`EnvironmentFailed`: no verdict.

    ``elsewhere``: the checks were handed to another process before the verification
    began (the attempt's checks beside its run, ``runs.daily``); its verdict is taken
    once the books verified, and dropped when they do not."""
    ws = final_workspace(out)
    started = time.perf_counter()
    try:
        books = verify_attempt_books(out, store, summary, expect_head=expect_head)
    except IntegrityError as e:
        if not during_run:
            raise
        if timing is not None:
            timing.update(verification=time.perf_counter() - started, checks=0.0)
        return _books_refused(loaded, summary, e, ws)
    verified = time.perf_counter()
    if elsewhere is None:
        verdict = evaluate_final(out, loaded, store, summary=summary, folds=folds)
        checks_s = time.perf_counter() - verified
    else:
        verdict = elsewhere.verdict()
        checks_s = elsewhere.final_seconds
    verdict.books = books.to_json()
    if timing is not None:
        timing.update(verification=verified - started, checks=checks_s)
    return verdict


def evaluate_final(out: Path, loaded: LoadedScenario, store: EventStore, *,
                   summary: dict[str, Any], folds: Folds | None = None,
                   turn_ends: Folds | None = None) -> Verdict:
    """The scenario's checks on the attempt's store and final workspace, without verifying
    the books (:func:`grade` does, first): ``folds`` as there, ``turn_ends`` as
    :func:`context_for`'s. ``EnvironmentFailed`` when a check could not read the books."""
    ws = final_workspace(out)
    actors = tuple(f"agent:turn-{t['turn']}" for t in summary.get("turns", []))
    roles = {f"agent:turn-{t['turn']}": t["role"] for t in summary.get("turns", [])
             if t.get("role", "clerk") != "clerk"}
    ctx = context_for(store, loaded, workspace=ws, agent_actors=actors, turn_roles=roles,
                      folds=folds, turn_workspaces=turn_workspaces(out, summary),
                      turn_ends=turn_ends)
    verdict = evaluate(final_specs(loaded), ctx, outputs_root=ws / "out" if ws else None)
    fault = grader_error_fault(verdict)
    if fault is not None:
        raise EnvironmentFailed(f"a check could not read the books: {fault}")
    return verdict


def _books_refused(loaded: LoadedScenario, summary: dict[str, Any], error: IntegrityError,
                   ws: Path | None) -> Verdict:
    """The verdict of an attempt whose run left books that do not verify, bound to the
    log head its run recorded (the store's own may be what does not check out)."""
    reason = str(error).removesuffix("; not graded")
    specs = final_specs(loaded)
    result = CheckResult(BOOKS_CHECK, False, "the books do not verify at the end of the "
                         f"attempt, so no other check was evaluated: {reason}",
                         {"first_bad_position": error.position})
    scorer = {"name": SCORER_NAME, "version": scorer_version(),
              "definitions_sha256": definitions_hash(specs)}
    return Verdict([result], [], scorer,
                   outputs=output_hashes(ws / "out" if ws else None),
                   final_log_hash=summary.get("final_hash"),
                   final_position=summary.get("final_position"),
                   books={"verified": "refused", "reason": reason})


def describe_store(store: EventStore) -> dict[str, Any]:
    """What ``summary.json`` records under ``store`` for books kept outside the attempt
    folder (PostgreSQL): ``url`` (without its password) and ``schema``, which
    :func:`open_attempt_store` opens again, and ``label``, for display only."""
    return {"url": store.url, "schema": store.schema, "label": store.label}


def _recorded_url(where: dict[str, Any]) -> str | None:
    """The URL a summary's ``store`` records; an older summary kept only its label
    (``URL schema NAME``), whose URL part is taken then."""
    url = where.get("url")
    if isinstance(url, str) and url:
        return url
    label = where.get("label")
    if isinstance(label, str) and label.startswith("postgres"):
        return label.rsplit(" schema ", 1)[0]
    return None


def open_attempt_store(out: Path, summary: dict[str, Any], *,
                       store_url: str | None = None) -> EventStore:
    """The attempt's store: ``books.db`` in its folder, or the PostgreSQL schema its
    summary names at the URL it records (``store_url`` replaces that URL, e.g. to give a
    password or another host)."""
    db = out / "books.db"
    if db.is_file():
        return EventStore.open(db)
    where = summary.get("store")
    if isinstance(where, dict) and where.get("schema"):
        url = store_url or _recorded_url(where)
        if url is None or not url.startswith("postgres"):
            raise GradingError(f"{out}: its books are in PostgreSQL schema {where['schema']!r} "
                               "at a URL summary.json does not hold; give --store-url")
        try:
            return EventStore.open(url, schema=str(where["schema"]))
        except IntegrityError:
            raise
        except StoreError as e:
            hint = ("" if store_url else " (summary.json records the URL without its "
                    "password: give --store-url with it, or set PGPASSWORD)")
            raise GradingError(f"{out}: its books cannot be opened: {e}{hint}") from e
    raise GradingError(f"{out}: no books.db (and summary.json names no other store)")


def grade_folder(out: Path, loaded: LoadedScenario, *, write: bool = False,
                 store_url: str | None = None, expect_head: str | None = None) -> Verdict:
    """Open an attempt's store, verify its books, grade it, optionally write verdict.json.

    ``IntegrityError`` (nothing graded, nothing written) when the books do not verify;
    ``GradingError`` when the folder or its store cannot be read.
    """
    summary = read_summary(out)
    store = open_attempt_store(out, summary, store_url=store_url)
    watch = StoreWatch(store)
    try:
        verdict = grade(out, loaded, store, summary=summary, expect_head=expect_head)
        fault = watch.take()
    except IntegrityError:
        raise
    except Exception as e:
        fault = environment_fault(e)
        if fault is None:
            raise
    finally:
        watch.close()
        store.close()
    if fault is not None:  # a grader error of a store that failed is not a verdict
        raise GradingError(f"{out}: its store failed while it was graded: {fault}; "
                           "nothing was graded or written (grade it again)")
    if write:
        write_verdict(verdict, out / VERDICT_FILE)
    return verdict
