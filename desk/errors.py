"""Errors of the desk package.

The tree::

    ValueError
    └── DeskTaskError          a task folder cannot be used: task.yaml is missing, not YAML
                               or invalid (an unknown field, a missing one, a bad value, a
                               check the registry refuses, a path that leaves the folder); a
                               supplied file is a link or has an unsafe name; the solution is
                               missing or not executable; the generator cannot be imported or
                               returns something else than files. One message names the
                               file, the field path, the bad value and what was expected;
                               ``problems`` holds one line per fault.
    RuntimeError
    └── GeneratorFailed        a task's generator raised (a harness fault, never an agent's).

Only the CLI turns these into exit codes.
"""

from __future__ import annotations

from collections.abc import Sequence


class DeskTaskError(ValueError):
    """A desk task that cannot be loaded, with every reason.

    Args:
        message: the whole message, starting with ``task ID/task.yaml:``.
        file: the file as named in the message.
        problems: one ``path: what is wrong`` line per fault (the message shows at most ten).
    """

    def __init__(self, message: str, *, file: str | None = None,
                 problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.problems = tuple(problems)


class GeneratorFailed(RuntimeError):
    """A task's generator raised; the message names the task, the module and the seed."""
