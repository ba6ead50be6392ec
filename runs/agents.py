"""Built-in agents: in-process, acting on the books through commands as ``agent:turn-N``.

- ``null`` does nothing (the negative control).
- ``reference`` runs the scenario's scripted solver, which uses only what an
  external agent can see: the prompt, the inbox files and the books (queries and
  commands as a clerk). Evidence that a scenario is solvable from its materials.
- ``oracle`` may also read the world's truth. Evidence that the checks can be met.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Protocol

from erp.commands import Command
from erp.errors import CommandRejected
from erp.ledger import Ledger
from erp.store import StoredEvent
from sim.world import World


@dataclass
class Desk:
    """What an in-process agent gets for one turn: its files and the books as a clerk."""

    turn: int
    day: date
    workspace: Path
    prompt_file: Path
    output_dir: Path
    ledger: Ledger
    actor: str
    role: str = "clerk"
    sim_time: float | None = None
    rejections: list[tuple[str, CommandRejected]] = field(default_factory=list)
    commands: int = 0
    record: list[Command] | None = None
    """When a list, every command the agent submits is appended to it (for replays)."""
    declined: list[tuple[Command, str]] = field(default_factory=list)
    """Commands the agent considered and deliberately did not submit, with the reason
    (a duplicate bill, an unverified bank-detail change): the mutation tests submit them."""

    @property
    def store(self) -> Any:
        """The store, for ``erp.queries``."""
        return self.ledger.store

    def execute(self, command: Command) -> list[StoredEvent] | CommandRejected:
        """Run a command as this turn's actor; a rejection comes back as a value."""
        self.commands += 1
        if self.record is not None:
            self.record.append(command)
        try:
            return self.ledger.execute(command, actor=self.actor, role=self.role,  # type: ignore[arg-type]
                                       business_date=self.day, sim_time=self.sim_time)
        except CommandRejected as e:
            self.rejections.append((type(command).__name__, e))
            return e

    def decline(self, command: Command, reason: str) -> None:
        """Note a command the agent chose not to submit, and why (nothing is written)."""
        self.declined.append((command, reason))

    def inbox(self) -> list[Path]:
        """The files that arrived since the last turn."""
        box = self.workspace / "inbox"
        return sorted(p for p in box.iterdir() if p.is_file()) if box.exists() else []

    def archive(self) -> list[Path]:
        """Files that arrived before the last turn."""
        box = self.workspace / "inbox" / "archive"
        return sorted(p for p in box.iterdir() if p.is_file()) if box.exists() else []


class Agent(Protocol):
    """An in-process agent."""

    name: str

    def run_turn(self, desk: Desk) -> None:
        """Act for one turn."""


class NullAgent:
    """Does nothing: the negative control."""

    name = "null"

    def run_turn(self, desk: Desk) -> None:
        """Nothing."""


Solver = Callable[[Desk], None]
REFERENCE_SOLVERS: dict[str, Solver] = {}
ORACLE_SOLVERS: dict[str, Callable[[Desk, World], None]] = {}


def reference_solver(name: str) -> Callable[[Solver], Solver]:
    """Register a scenario's reference solver under a name (refusing duplicates)."""

    def deco(fn: Solver) -> Solver:
        if name in REFERENCE_SOLVERS:
            raise ValueError(f"reference solver {name!r} is already registered")
        REFERENCE_SOLVERS[name] = fn
        return fn

    return deco


def oracle_solver(name: str) -> Callable[[Callable[[Desk, World], None]],
                                          Callable[[Desk, World], None]]:
    """Register a scenario's oracle solver under a name (refusing duplicates)."""

    def deco(fn: Callable[[Desk, World], None]) -> Callable[[Desk, World], None]:
        if name in ORACLE_SOLVERS:
            raise ValueError(f"oracle solver {name!r} is already registered")
        ORACLE_SOLVERS[name] = fn
        return fn

    return deco


class ReferenceAgent:
    """The scenario's scripted solver, from what an external agent can see."""

    name = "reference"

    def __init__(self, solver: Solver) -> None:
        self.solver = solver

    def run_turn(self, desk: Desk) -> None:
        """Run the solver."""
        self.solver(desk)


class OracleAgent:
    """A solver that may read the world's truth."""

    name = "oracle"

    def __init__(self, solver: Callable[[Desk, World], None], world: World) -> None:
        self.solver = solver
        self.world = world

    def run_turn(self, desk: Desk) -> None:
        """Run the solver with the world."""
        self.solver(desk, self.world)


BUILT_IN = ("null", "reference", "oracle")


def load_solvers() -> None:
    """Import the modules that register the library's solvers."""
    import runs.solvers  # noqa: F401
