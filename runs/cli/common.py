"""What every ``erpsim`` command shares: the exit codes, the one mapping from errors to
them, the ``DATE`` option type, and opening a verified store.

Exit codes: 0 success (an accepted attempt, books that tie); 1 the books do not verify
(a tampered or broken log), an attempt not accepted, a reconciliation that does not
tie, a validation that fails, a refusal; 2 bad input (a missing or unreadable store or
attempt folder, a bad option value, an invalid scenario); 3 a grader error (a check
crashed) or an infrastructure fault.
"""

from __future__ import annotations

import math
import os
import re
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, NoReturn

import click

from desk.errors import GeneratorFailed
from erp.errors import ErpError, IntegrityError
from erp.store import POSTGRES_PREFIXES, EventStore
from runs.errors import BadInput, InfrastructureError, Refused, RunsError
from runs.execution.contract import MEMORY_LIMIT, NETWORK_MODE
from scenarios.errors import ScenarioError
from sim.rng import MAX_SEED

EXIT_OK = 0
EXIT_FAILED = 1
"""The log does not verify, an attempt was rejected, books do not tie, a validation
failed, a request was refused."""
EXIT_BAD_INPUT = 2
EXIT_GRADER_ERROR = 3
"""A grader error (a check crashed) or an infrastructure fault."""
EXIT_INTERRUPTED = 130

EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (IntegrityError, EXIT_FAILED),       # a StoreError: before it
    (ErpError, EXIT_BAD_INPUT),
    (ScenarioError, EXIT_BAD_INPUT),     # DeskTaskError is one
    (GeneratorFailed, EXIT_BAD_INPUT),
    (Refused, EXIT_FAILED),
    (BadInput, EXIT_BAD_INPUT),
    (InfrastructureError, EXIT_GRADER_ERROR),
    (RunsError, EXIT_GRADER_ERROR),
)
"""The one mapping from an exception to the exit code: the first class it is an instance
of. Anything else is a bug and leaves a traceback."""

VERDICT_EXIT = {"accepted": EXIT_OK, "rejected": EXIT_FAILED}
"""A verdict's status as an exit code (anything else, a grader error: 3)."""


def exit_code(error: BaseException) -> int:
    """The exit code for ``error`` (:data:`EXIT_CODES`; an unknown one: 3)."""
    for cls, code in EXIT_CODES:
        if isinstance(error, cls):
            return code
    return EXIT_GRADER_ERROR


def fail(problem: BaseException | str, *, code: int | None = None, prefix: str = "") -> NoReturn:
    """Print ``error: PREFIX MESSAGE`` on stderr and exit.

    The code is :func:`exit_code` of an exception; a plain message needs ``code``.
    """
    if isinstance(problem, BaseException):
        status = exit_code(problem) if code is None else code
    else:
        status = EXIT_BAD_INPUT if code is None else code
    click.echo(f"error: {prefix}{problem}", err=True)
    sys.exit(status)


@dataclass
class Interruption:
    """Whether Ctrl-C or SIGTERM has asked the block of :func:`interruptible` to stop."""

    requested: bool = False

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` when an interruption was asked for: a long loop calls
        it between its steps, so that one raised where Python only prints it (in a
        finalizer or a weakref callback, "Exception ignored in ...") is not lost."""
        if self.requested:
            raise KeyboardInterrupt


@contextmanager
def interruptible(then: str, *, at_once: bool = True) -> Iterator[Interruption]:
    """Ctrl-C or SIGTERM while the block runs: print ``interrupted: THEN`` and exit 130.

    Both raise ``KeyboardInterrupt`` in the main thread, so the block's ``finally`` clauses
    run: an agent's process group is killed with its turn, its folder's marker released;
    and both set the :class:`Interruption` the block gets, which its loops check between
    steps. A SIGINT this process inherited as ignored (a background job) stays ignored.
    Outside the main thread, only Ctrl-C is handled, by Python's own handler.

    Without ``at_once`` the signal only sets the request and the block's own
    :meth:`Interruption.check` raises it, between two of its steps: nothing is interrupted
    halfway, not even a lock some library holds while the signal arrives (coverage's
    tracer held one when a ``KeyboardInterrupt`` raised inside it left ``erpsim demo``
    waiting on it for ever). For a block whose steps are short; a block that waits on
    something else (an agent's turn) needs ``at_once``."""
    state = Interruption()

    def on_signal(signum: int, frame: Any) -> None:
        state.requested = True
        if at_once:
            raise KeyboardInterrupt

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN or sig == signal.SIGTERM:
                previous[sig] = signal.signal(sig, on_signal)
    try:
        yield state
    except KeyboardInterrupt:
        click.echo(f"\ninterrupted: {then}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


KNOWN_ERRORS: tuple[type[BaseException], ...] = tuple(cls for cls, _ in EXIT_CODES)
"""Every exception class :data:`EXIT_CODES` maps: the errors a command reports in a line."""


@contextmanager
def errors() -> Iterator[None]:
    """Turn every known exception (:data:`EXIT_CODES`: the books', a scenario's, a desk
    generator's, the runner's) into one clear line and its exit code."""
    try:
        yield
    except KNOWN_ERRORS as e:
        fail(e)


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
"""A ``YYYY-MM-DD`` option value."""

class Matching(click.ParamType):
    """An option value that must match a regular expression as a whole."""

    def __init__(self, name: str, pattern: str, expected: str) -> None:
        self.name = name
        self.pattern = re.compile(pattern)
        self.expected = expected

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        """``value`` when it matches; otherwise a usage error naming it and the form."""
        if isinstance(value, str) and self.pattern.fullmatch(value):
            return value
        self.fail(f"{value!r} is not {self.expected}", param, ctx)


MEMORY = Matching("SIZE", MEMORY_LIMIT, "a memory limit (expected a whole number with an "
                  "optional unit b, k, m or g, such as 6g or 512m)")
"""``--memory``: a docker memory limit, as a systems file's ``memory``."""

NETWORK = Matching("NAME", NETWORK_MODE, "a docker network name (expected letters, digits "
                   "and _ . : -, such as bridge or host)")
"""``--network-mode``: a docker network's name, as a systems file's ``network_mode``."""

SEED = click.IntRange(0, MAX_SEED)
"""A ``--seed`` value: a whole number from 0 to 2**63 - 1 (``MAX_SEED``, as ``--seeds``
ranges are), for every command that takes one."""


class FiniteFloatRange(click.FloatRange):
    """click's ``FloatRange`` that also refuses ``nan`` and ``inf`` (click's own takes them:
    ``nan`` compares false with every bound), so a non-number never reaches a run."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        """The float, or the usage error naming the value."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


SECONDS = FiniteFloatRange(min=0, min_open=True)
"""A duration in seconds: a finite number above 0 (``--turn-timeout``)."""

CPUS = FiniteFloatRange(min=0, min_open=True, max=256)
"""A docker CPU limit: above 0, at most 256 (as a systems file's ``cpus``)."""

CHECKS_PROCESS = {"auto": None, "beside": True, "attempt": False}
"""``--checks-process``: its values and ``run_attempt``'s ``checks_beside`` for each."""

checks_process_option = click.option(
    "--checks-process", type=click.Choice(list(CHECKS_PROCESS)), default="auto",
    show_default=True,
    help="Where the per-date and final checks run: in a second process beside the "
         "attempt's (beside), in the attempt's own (attempt), or chosen (auto: beside when "
         "the process runs alone, may use two CPUs and the scenario has more than one "
         "date). The results are the same; summary.json records which ran.")


PATH_MAX = 4096
"""Linux's longest path, in bytes with its final NUL (``PATH_MAX`` of ``limits.h``)."""


def _too_long(target: Path) -> str | None:
    """Why ``target`` (absolute) is a name the filesystem cannot hold, or None: a part
    longer than its folder's ``NAME_MAX`` (255 bytes on ext4) or the whole longer than
    ``PATH_MAX`` (``os.stat`` would raise ENAMETOOLONG)."""
    size = len(os.fsencode(str(target)))
    if size >= PATH_MAX:
        return f"the path is {size:,} bytes long (expected fewer than {PATH_MAX:,})"
    existing = target
    while existing != existing.parent and not os.path.lexists(existing):
        existing = existing.parent  # lexists is False (never raises) for a name too long
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for part in target.parts[1:]:
        if len(os.fsencode(part)) > name_max:
            shown = part if len(part) <= 40 else part[:37] + "..."
            return (f"the name {shown!r} is {len(os.fsencode(part)):,} bytes long (expected "
                    f"at most {name_max}, this filesystem's longest)")
    return None


def unwritable(path: Path, *, folder: bool) -> str | None:
    """Why ``path`` (a file, or with ``folder`` a folder) cannot be written, or None.

    A name the filesystem cannot hold (:func:`_too_long`) is refused first. Then it walks
    up to the nearest part of the path that exists: that must be a folder (not a
    file), and a file must be creatable in it (tried with a temporary file, removed at
    once: ``/proc``, ``/sys`` or a read-only filesystem refuse it). Nothing is left
    behind; the folders still missing are not created.
    """
    target = Path(os.path.abspath(path))
    too_long = _too_long(target)
    if too_long is not None:
        return too_long
    if target.exists() and not folder and target.is_dir():
        return "is a folder (expected a file)"
    if target.exists() and folder and not target.is_dir():
        return "is a file (expected a folder)"
    nearest = target if folder and target.is_dir() else target.parent
    while not nearest.exists() and nearest != nearest.parent:
        if nearest.is_symlink():
            return f"{nearest} is a broken symbolic link"
        nearest = nearest.parent
    if not nearest.is_dir():
        return f"{nearest} is a file, not a folder"
    try:
        fd, probe = tempfile.mkstemp(prefix=".erpsim-probe-", dir=nearest)
    except OSError as e:
        return f"nothing can be created in {nearest} ({e.strerror or e})"
    os.close(fd)
    os.unlink(probe)
    return None


class _Output(click.Path):
    """A path the command writes: refused at once, naming the option and the path, when
    it cannot be written (:func:`unwritable`)."""

    def __init__(self, *, folder: bool) -> None:
        super().__init__(file_okay=not folder, dir_okay=folder, path_type=Path)
        self.folder = folder

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        path = super().convert(value, param, ctx)
        problem = unwritable(Path(os.fsdecode(path)), folder=self.folder)
        if problem is not None:
            self.fail(f"{value}: {problem}; nothing was written", param, ctx)
        return path


OUT_FILE = _Output(folder=False)
"""An output file option (``--out``, ``--csv``): refused before anything runs when it
cannot be written (under a file, in ``/proc``, on a read-only filesystem)."""
OUT_DIR = _Output(folder=True)
"""An output folder option (``--out``, ``--results-dir``, ``--work``), the same way."""


def cannot_write(option: str, path: Path, error: OSError) -> NoReturn:
    """Fail with exit 2 for an output that could not be written after all (full disk,
    permissions changed meanwhile), naming the option, the path and the cause."""
    cause = error.strerror or str(error)
    where = f" ({error.filename})" if error.filename and str(error.filename) != str(path) else ""
    fail(f"{option} {path}: cannot be written: {cause}{where}", code=EXIT_BAD_INPUT)


ATTEMPT_MARKERS = ("summary.json", "verdict.json", "turns")
"""What marks a folder as an attempt's (``erpsim run`` or a sweep wrote it)."""


def open_store(target: str, schema: str | None, *,
               store_url: str | None = None) -> tuple[EventStore, dict[str, Any] | None]:
    """Open ``target``, a store (an SQLite file or a PostgreSQL URL) or an attempt folder
    (its ``books.db``, or the PostgreSQL schema its summary.json names), unverified.

    Returns the store and the attempt's summary (None for a store). A folder that is not
    an attempt's is bad input naming what an attempt folder holds; so is ``schema`` with
    anything but a PostgreSQL URL (an SQLite store has no schemas; an attempt folder's
    summary names its own).
    """
    from runs.grading import GradingError, open_attempt_store, read_summary

    path = Path(target)
    if not path.is_dir():
        if store_url is not None:
            raise BadInput(f"--store-url is for an attempt folder whose books are in "
                           f"PostgreSQL; {target} is a store (give its URL as STORE)")
        if schema is not None and not target.startswith(POSTGRES_PREFIXES):
            raise BadInput(f"--schema {schema}: {target} is an SQLite store, which has no "
                           "schemas (--schema is for a PostgreSQL URL)")
        return EventStore.open(target, schema=schema), None
    if schema is not None:
        raise BadInput(f"--schema {schema}: {target} is an attempt folder; its summary.json "
                       "names its store (--schema is for a PostgreSQL URL)")
    if not any((path / m).exists() for m in ATTEMPT_MARKERS):
        inside = "books.db" if (path / "books.db").is_file() else None
        hint = (f"; its books are in {path / inside}" if inside
                else "; expected an SQLite file, a PostgreSQL URL or an attempt folder "
                     "(summary.json, books.db)")
        raise BadInput(f"{target} is a folder, not a store{hint}")
    try:
        summary = read_summary(path)
        refuse_unused_store_url(path, store_url)
        return open_attempt_store(path, summary, store_url=store_url), summary
    except GradingError as e:
        raise BadInput(f"{e} (an attempt folder's books are its books.db, or the "
                       "PostgreSQL schema its summary.json names)") from None


def refuse_unused_store_url(attempt: Path, store_url: str | None) -> None:
    """``BadInput`` when ``--store-url`` is given for an attempt whose books are its
    books.db (the URL would be ignored without a word)."""
    if store_url is not None and (attempt / "books.db").is_file():
        raise BadInput(f"--store-url: the books of {attempt} are in its books.db, not in "
                       "PostgreSQL (--store-url is for an attempt whose summary.json names a "
                       "PostgreSQL schema); leave it out")


def open_verified(target: str, schema: str | None) -> EventStore:
    """Open a store or an attempt folder's books (:func:`open_store`) and verify its
    hash chain (``IntegrityError`` when it does not)."""
    store, _ = open_store(target, schema)
    try:
        store.require_valid()
    except BaseException:
        store.close()
        raise
    return store
