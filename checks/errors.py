"""The exceptions of ``checks``, in one tree.

::

    Exception
     +-- CheckError            base of every exception this package defines
          +-- CheckSpecError   (also a ValueError) a scenario's check list is invalid: every
          |                    problem with its path (``checks[2].tolerance``), message and
          |                    value; raised when a scenario loads, before anything runs
          +-- Unusable         the agent's file cannot be used (missing, not UTF-8, garbled
                               CSV, not a workbook); raised by the file readers and caught
                               inside the check, which fails with the message as its detail

An agent's mistake is never an exception that leaves a check: it is a failed
``CheckResult``. Anything else a check raises (a missing or malformed reference file, a
reference module that answers in the wrong shape, a truth file leaked into the
workspace, LibreOffice failing) is a harness fault: ``verdict.evaluate`` records it as a
``GraderError`` with its traceback and the attempt is not accepted, never failed.
"""

from __future__ import annotations

from typing import Any


class CheckError(Exception):
    """Base of the exceptions ``checks`` defines."""


class CheckSpecError(CheckError, ValueError):
    """A scenario's check list is invalid; ``problems`` holds (path, message, value)."""

    def __init__(self, problems: list[tuple[str, str, Any]]) -> None:
        self.problems = problems
        lines = [f"{path}: {message} (got {value!r})" for path, message, value in problems]
        super().__init__("invalid checks:\n  " + "\n  ".join(lines))


class Unusable(CheckError):
    """The agent's file cannot be used; the message is the failure detail."""


__all__ = ["CheckError", "CheckSpecError", "Unusable"]
