"""What every ``erpsim`` command shares: the exit codes, the one mapping from errors to
them, the ``DATE`` option type, and opening a verified store.

Exit codes: 0 success (an accepted attempt, books that tie); 1 the books do not verify
(a tampered or broken log), an attempt not accepted, a reconciliation that does not
tie, a validation that fails, a refusal; 2 bad input (a missing or unreadable store or
attempt folder, a bad option value, an invalid scenario); 3 a grader error (a check
crashed) or an infrastructure fault.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from typing import NoReturn

import click

from desk.errors import GeneratorFailed
from erp.errors import ErpError, IntegrityError
from erp.store import EventStore
from runs.errors import BadInput, InfrastructureError, Refused, RunsError
from scenarios.errors import ScenarioError

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


@contextmanager
def errors() -> Iterator[None]:
    """Turn the books' exceptions into one clear line and their exit code."""
    try:
        yield
    except ErpError as e:  # IntegrityError and StoreError are ErpErrors
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

SEED = click.IntRange(min=0)
"""A ``--seed`` value: a whole number, 0 or more (as ``--seeds`` ranges are), for every
command that takes one."""


def open_verified(target: str, schema: str | None) -> EventStore:
    """Open a store and verify its hash chain (``IntegrityError`` when it does not)."""
    store = EventStore.open(target, schema=schema)
    store.require_valid()
    return store
