"""What a check sees: the final books and log, the scenario's facts, the files.

Everything comes from stored material (the attempt's store and folders), so a verdict
can be computed again later without running anything (``erpsim check``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from erp.store import EventStore

T = TypeVar("T")


@dataclass
class CheckContext:
    """The inputs of every check.

    - ``store``: the attempt's event store (both realms) and its read tables.
    - ``workspace``: the folder the ``path`` of file checks is relative to (for a
      process scenario, the last turn's workspace, whose ``out/`` holds the outputs).
    - ``reference``: reference files the checks compare with (never shown to the agent).
    - ``start`` / ``end``: the scenario's first and last business dates.
    - ``as_of`` / ``position``: when set, books checks answer as of that date and log
      position (per-date control at a business date's end).
    - ``agent_actors``: the actors of the agent's turns (``agent:turn-N``), in order;
      ``turn_roles`` the role of those the scenario runs as another role than clerk.
    - ``control_accounts``: extra control accounts the scenario declares, with the
      subledger each ties to.
    - ``cache``: shared by the checks of one evaluation (derived views of the log).
    - ``inputs``: workspace-relative paths of the files supplied to the agent (desk
      tasks); ``xlsx_value_present`` refuses a pin that pasting one of them satisfies.
    """

    store: EventStore
    workspace: Path | None = None
    reference: Path | None = None
    start: date | None = None
    end: date | None = None
    as_of: date | None = None
    position: int | None = None
    agent_actors: tuple[str, ...] = ()
    turn_roles: dict[str, str] = field(default_factory=dict)
    """The role of each turn's actor when the scenario gives it one other than ``clerk``."""
    control_accounts: dict[str, str] = field(default_factory=dict)
    cache: dict[Hashable, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()

    def file(self, rel: str) -> Path:
        """The absolute path of a workspace-relative file (the caller checks existence)."""
        if self.workspace is None:
            raise FileNotFoundError(f"{rel}: this evaluation has no workspace")
        return self.workspace / rel

    def ref(self, rel: str) -> Path:
        """The absolute path of a reference file."""
        if self.reference is None:
            raise FileNotFoundError(f"{rel}: this evaluation has no reference folder")
        return self.reference / rel

    def cached(self, key: Hashable, make: Callable[[], T]) -> T:
        """``cache[key]``, computed once with ``make()`` (a key names what ``make`` builds,
        so the value is the type it returns)."""
        if key not in self.cache:
            self.cache[key] = make()
        value: T = self.cache[key]
        return value
