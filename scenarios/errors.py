"""Errors of the scenarios package.

The tree::

    ValueError
    └── ScenarioError             a scenario cannot be used: its file is missing, unreadable,
                                  not YAML or not a mapping; its spec is invalid (an unknown
                                  field, a missing one, a bad value); its prompt template is
                                  missing or outside its folder; or a library name is unknown.
                                  One message names the file, the field path, the bad value
                                  and what was expected; ``problems`` holds one line per fault.
        ├── SolverError           a built-in agent cannot be made for a scenario: it has no
        │                         solver.py (nor borrows one with reference_agent), the module
        │                         defines no reference(turn) / oracle(turn, world) or fails to
        │                         import, or the agent's name is not null/reference/oracle.
        └── DeskTaskError         (desk.errors) a desk task folder cannot be used.

pydantic's ``ValidationError`` and PyYAML's ``YAMLError`` never leave the package:
the loader translates them into a ``ScenarioError`` at the boundary. A scenario
error is a harness fault (the run cannot start), never an agent's mistake. Only the
CLI turns it into an exit code.
"""

from __future__ import annotations

from collections.abc import Sequence


class ScenarioError(ValueError):
    """A scenario file (or library name) that cannot be loaded, with the reason.

    Args:
        message: the whole message, starting with ``scenario FILE:``.
        file: the file as named in the message (``month-end-close.yaml``), when there is one.
        problems: one ``path: what is wrong`` line per fault, all of them (the message
            shows at most ten).
    """

    def __init__(self, message: str, *, file: str | None = None,
                 problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.problems = tuple(problems)


class SolverError(ScenarioError):
    """A built-in agent that cannot be made for a scenario, with the reason.

    The scenario has no ``solver.py`` (nor borrows one), the module lacks the agent's
    function (``reference(turn)``, ``oracle(turn, world)``) or fails to import, or the
    agent's name is not a built-in one.
    """
