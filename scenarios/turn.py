"""What an in-process agent gets for one turn: its files and the books, as the turn's actor.

A :class:`TurnContext` is built by the attempt runner for every turn and handed to the
agent's ``run_turn``. A scenario's solvers (``scenarios/library/<name>/solver.py``) see
only this: the prompt, the inbox files, the ``out/`` folder and the books through
queries and commands submitted as ``agent:turn-N`` in the turn's role.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from erp.commands import Command
from erp.errors import CommandRejected
from erp.events import Role
from erp.ledger import Ledger
from erp.store import EventStore, StoredEvent


class WorkspaceTurn:
    """What every turn's context does with the agent's files, in or out of the engine: the
    inbox, its archive, and the commands the agent deliberately did not submit."""

    workspace: Path
    declined: list[tuple[Command, str]]

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


@dataclass
class TurnContext(WorkspaceTurn):
    """One turn of an in-process agent: its files and the books as the turn's actor."""

    turn: int
    day: date
    workspace: Path
    prompt_file: Path
    output_dir: Path
    ledger: Ledger
    actor: str
    role: Role = "clerk"
    sim_time: float | None = None
    rejections: list[tuple[str, CommandRejected]] = field(default_factory=list)
    commands: int = 0
    record: list[Command] | None = None
    """When a list, every command the agent submits is appended to it (for replays)."""
    declined: list[tuple[Command, str]] = field(default_factory=list)
    """Commands the agent considered and deliberately did not submit, with the reason
    (a duplicate bill, an unverified bank-detail change): the mutation tests submit them."""

    @property
    def store(self) -> EventStore:
        """The store, for ``erp.queries``."""
        return self.ledger.store

    def execute(self, command: Command) -> list[StoredEvent] | CommandRejected:
        """Run a command as this turn's actor; a rejection comes back as a value."""
        self.commands += 1
        if self.record is not None:
            self.record.append(command)
        try:
            return self.ledger.execute(command, actor=self.actor, role=self.role,
                                       business_date=self.day, sim_time=self.sim_time)
        except CommandRejected as e:
            self.rejections.append((type(command).__name__, e))
            return e
