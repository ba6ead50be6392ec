"""Built-in agents: in-process, acting on the books through commands as ``agent:turn-N``.

- ``null`` does nothing (the negative control).
- ``reference`` runs the scenario's scripted solver, which uses only what an
  external agent can see: the prompt, the inbox files and the books (queries and
  commands as a clerk). Evidence that a scenario is solvable from its materials.
- ``oracle`` may also read the world's truth. Evidence that the checks can be met.

A scenario's solvers live in its own folder, ``scenarios/library/<name>/solver.py``,
beside its YAML and prompts. The module defines ``reference(turn)`` and, optionally,
``oracle(turn, world)``, both taking a :class:`~scenarios.turn.TurnContext`. It is
loaded by its file path (folder names have hyphens), so adding a scenario touches only
its folder. A scenario without a ``solver.py`` may borrow another library scenario's
with ``reference_agent: NAME`` (looked up beside it, then in the built-in library).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from scenarios.errors import SolverError
from scenarios.loader import LoadedScenario, library_dir
from scenarios.solvers import load_solver
from scenarios.turn import TurnContext

if TYPE_CHECKING:
    from sim.world import World

SOLVER_FILE = "solver.py"
"""The name of a scenario's solver module inside its folder."""

BUILT_IN = ("null", "reference", "oracle")
"""The built-in agents' names."""

Solver = Callable[[TurnContext], None]
"""A reference solver: acts for one turn from what the turn's actor can see."""

OracleSolver = Callable[[TurnContext, "World"], None]
"""An oracle solver: acts for one turn, also reading the world's truth."""


class Agent(Protocol):
    """An in-process agent."""

    name: str

    def run_turn(self, turn: TurnContext) -> None:
        """Act for one turn."""


class NullAgent:
    """Does nothing: the negative control."""

    name = "null"

    def run_turn(self, turn: TurnContext) -> None:
        """Nothing."""


class ReferenceAgent:
    """The scenario's scripted solver, from what an external agent can see."""

    name = "reference"

    def __init__(self, solver: Solver) -> None:
        self.solver = solver

    def run_turn(self, turn: TurnContext) -> None:
        """Run the solver."""
        self.solver(turn)


class OracleAgent:
    """A solver that may read the world's truth."""

    name = "oracle"

    def __init__(self, solver: OracleSolver, world: World) -> None:
        self.solver = solver
        self.world = world

    def run_turn(self, turn: TurnContext) -> None:
        """Run the solver with the world."""
        self.solver(turn, self.world)


# --- finding and loading a scenario's solver module ---------------------------------------

def solver_file(loaded: LoadedScenario) -> Path | None:
    """The solver module of a scenario: its folder's ``solver.py``, or a borrowed one.

    A scenario without its own ``solver.py`` uses the one of the library scenario named
    by ``reference_agent``: beside it (in the same library folder), else in the built-in
    library. None when there is neither.
    """
    own = loaded.base_dir / SOLVER_FILE
    if own.is_file():
        return own
    name = loaded.scenario.reference_agent
    if name is None:
        return None
    for library in (loaded.base_dir.parent, library_dir()):
        borrowed = library / name / SOLVER_FILE
        if borrowed.is_file():
            return borrowed
    return None


def load_library_solvers(library: Path | None = None) -> list[ModuleType]:
    """Import every library scenario's solver module (a worker does it once, up front)."""
    root = library_dir() if library is None else library
    return [load_solver(p) for p in sorted(root.glob(f"*/{SOLVER_FILE}"))]


def _entry(loaded: LoadedScenario, attr: str, what: str,
           signature: str) -> Callable[..., None]:
    """The scenario's ``reference``/``oracle`` function (``SolverError`` when missing)."""
    sc = loaded.scenario
    name = sc.reference_agent or sc.id
    path = solver_file(loaded)
    if path is None:
        raise SolverError(f"scenario {sc.id} has no {what} solver {name!r} (expected "
                          f"{loaded.base_dir / SOLVER_FILE} defining {signature}, or "
                          "reference_agent naming a library scenario that has one)")
    fn = getattr(load_solver(path), attr, None)
    if not callable(fn):
        raise SolverError(f"scenario {sc.id} has no {what} solver {name!r} ({path} defines "
                          f"no {signature})")
    return fn


def built_in_agent(name: str, loaded: LoadedScenario, world: World) -> Agent:
    """A built-in agent for a scenario: ``null``, ``reference`` or ``oracle``.

    Raises ``SolverError`` for another name or a scenario without that solver.
    """
    if name == "null":
        return NullAgent()
    if name == "reference":
        return ReferenceAgent(_entry(loaded, "reference", "reference", "reference(turn)"))
    if name == "oracle":
        return OracleAgent(_entry(loaded, "oracle", "oracle", "oracle(turn, world)"), world)
    raise SolverError(f"unknown agent {name!r} (expected one of: {', '.join(BUILT_IN)})")
