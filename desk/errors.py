"""Errors of the desk package.

The tree::

    ValueError
    └── ScenarioError (scenarios.errors)
        └── DeskTaskError      a task folder cannot be used: task.yaml is missing, not YAML
                               or invalid (an unknown field, a missing one, a bad value, a
                               check the registry refuses, a path that leaves the folder); a
                               supplied file is a link or has an unsafe name; the solution is
                               missing or not executable; the generator cannot be imported or
                               returns something else than files. One message names the
                               file, the field path, the bad value and what was expected;
                               ``problems`` holds one line per fault.
    RuntimeError
    ├── GeneratorFailed        a task's generator raised (a harness fault, never an agent's).
    └── GenerationError        a generator refuses its seed: the draw leaves a case unplanted
                               or ambiguous (choose another seed); raised inside a generator,
                               it reaches the caller as a GeneratorFailed.

Only the CLI turns these into exit codes.
"""

from __future__ import annotations

from scenarios.errors import ScenarioError


class DeskTaskError(ScenarioError):
    """A desk task that cannot be loaded, with every reason.

    Args:
        message: the whole message, starting with ``task ID/task.yaml:``.
        file: the file as named in the message.
        problems: one ``path: what is wrong`` line per fault (the message shows at most ten).
    """


class GeneratorFailed(RuntimeError):
    """A task's generator raised; the message names the task, the module and the seed."""


class GenerationError(RuntimeError):
    """A generator refuses its seed: a case unplanted or ambiguous (choose another seed)."""
