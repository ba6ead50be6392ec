"""Library scenarios run as real attempts for their tests: the finished attempt (summary,
books, the world's truth) and the module fixtures that run one per agent.

A test module keeps its own ``Attempt`` subclass for what it reads of its outputs and
takes its fixtures with ``scenario, reference, oracle = attempt_fixtures(NAME, SEED,
Attempt)``; ``run_library_attempt`` runs one more (the null agent, another seed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from erp import queries as q
from erp.ledger import Ledger
from runs.attempt import AttemptResult, run_attempt
from scenarios.loader import LoadedScenario, find_scenario, load_scenario
from sim.world_events import WorldEvent, decode_world_event


@dataclass
class LibraryAttempt:
    """A finished attempt: its summary, the books and the world's truth."""

    result: AttemptResult
    ledger: Ledger
    world: list[tuple[Any, WorldEvent]]

    @property
    def summary(self) -> dict[str, Any]:
        """The attempt's summary.json."""
        return self.result.summary

    def truth(self, kind: type[WorldEvent]) -> list[Any]:
        """The world's events of one type, in log order."""
        return [w for _, w in self.world if isinstance(w, kind)]

    def docs(self, kind: str) -> list[dict[str, Any]]:
        """The books' documents of one kind."""
        return q.documents(self.ledger.store, kind=kind)


A = TypeVar("A", bound=LibraryAttempt)


def run_library_attempt(loaded: LoadedScenario, agent: str, out: Path, seed: int,
                        cls: type[A]) -> A:
    """Run one attempt into ``out`` and open its books (close ``.ledger`` when done)."""
    result = run_attempt(loaded, seed, agent, out)
    ledger = Ledger.open(out / "books.db")
    world = [(e, decode_world_event(e.type, e.payload))
             for e in ledger.store.read(realm="world")]
    return cls(result, ledger, world)


def attempt_fixtures(name: str, seed: int, cls: type[A]) -> tuple[
        Callable[[], LoadedScenario], Callable[..., Iterator[A]], Callable[..., Iterator[A]]]:
    """Module-scoped fixtures ``scenario`` (the library scenario ``name`` loaded) and
    ``reference`` and ``oracle`` (each agent's attempt at ``seed``, its books closed at the
    module's end)."""

    @pytest.fixture(scope="module")
    def scenario() -> LoadedScenario:
        return load_scenario(find_scenario(name))

    def _agent(agent: str) -> Callable[..., Iterator[A]]:
        def run(scenario: LoadedScenario,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[A]:
            attempt = run_library_attempt(scenario, agent, tmp_path_factory.mktemp(agent) / "a",
                                          seed, cls)
            yield attempt
            attempt.ledger.close()
        run.__name__ = agent
        return pytest.fixture(scope="module", name=agent)(run)

    return scenario, _agent("reference"), _agent("oracle")
