"""Library scenarios run as real attempts for their tests: the finished attempt (summary,
books, the world's truth) and the module fixtures that run one per agent.

A test module keeps its own ``Attempt`` subclass for what it reads of its outputs and
takes its fixtures with ``scenario, reference, oracle = attempt_fixtures(NAME, SEED,
Attempt)``; ``run_library_attempt`` runs one more (the null agent, another seed).
``read_verdict``, ``check_results`` and ``failed_checks`` read an attempt folder's
``verdict.json``. ``routed`` makes a one-mistake clerk of a solver: its commands changed
or dropped on their way to the books. ``shared_attempt`` runs a built-in agent's attempt
once per test process for every module that only reads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from erp import queries as q
from erp.commands import Command
from erp.errors import CommandRejected
from erp.ledger import Ledger, StoredEvent
from runs.attempt import AttemptResult, Recording, run_attempt
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


_SHARED: dict[tuple[str, int, str | None, str], tuple[AttemptResult, Recording]] = {}


def shared_attempt(tmp_path_factory: pytest.TempPathFactory, name: str, seed: int,
                   agent: str = "reference", tier: str | None = None
                   ) -> tuple[AttemptResult, Recording]:
    """The built-in ``agent``'s attempt at the library scenario ``name`` (its tier ``tier``,
    the scenario's own when None) at ``seed``, and what it submitted and declined by turn:
    run once per test process (each pytest worker) and given to every test that asks again.

    Its folder and recording are read-only for the tests that share them: a test that writes
    into an attempt folder, opens its books to change them, or needs a run of its own (two
    runs compared for determinism) runs its own with ``run_attempt``. Modules that share an
    attempt share an ``xdist_group`` so that ``--dist loadgroup`` puts them on one worker.
    """
    loaded = load_scenario(find_scenario(name), tier=tier)
    key = (name, seed, loaded.scenario.tier, agent)
    if key not in _SHARED:
        out = (tmp_path_factory.mktemp("shared-attempt")
               / f"{name}-{seed}-{loaded.scenario.tier}-{agent}")
        recording = Recording()
        _SHARED[key] = (run_attempt(loaded, seed, agent, out, record=recording), recording)
    return _SHARED[key]


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


def read_verdict(out: Path) -> dict[str, Any]:
    """The ``verdict.json`` of the attempt folder ``out`` (an ``AttemptResult.out``)."""
    verdict: dict[str, Any] = json.loads((out / "verdict.json").read_text(encoding="utf-8"))
    return verdict


def check_results(out: Path) -> dict[str, dict[str, Any]]:
    """Each check's result in the attempt folder's ``verdict.json`` (``name``, ``passed``,
    ``detail``, ``metrics``, ``required``), by check name."""
    return {r["name"]: r for r in read_verdict(out)["results"]}


def failed_checks(out: Path) -> set[str]:
    """The names of the checks that did not pass in the attempt folder's ``verdict.json``,
    required or not (the summary's ``verdict.failed`` lists the required ones only)."""
    return {name for name, r in check_results(out).items() if not r["passed"]}


Execute = Callable[[Command], list[StoredEvent] | CommandRejected]
"""A turn's ``execute``: a command run as the turn's actor, a rejection returned as a value."""

C = TypeVar("C")
R = TypeVar("R")
C_contra = TypeVar("C_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)


class Desk(Protocol[C_contra, R_co]):
    """What ``routed`` needs of a desk (a ``TurnContext``): an ``execute`` method."""

    def execute(self, command: C_contra, /) -> R_co: ...


@contextmanager
def routed(desk: Desk[C, R], route: Callable[[Callable[[C], R], C], R]
           ) -> Iterator[Callable[[C], R]]:
    """Within the block every command the desk executes goes through ``route(real,
    command)`` instead, ``real`` being the desk's own ``execute`` (which the block also
    gets): the route may change the command, run others, or drop it by not calling
    ``real``. The desk's own ``execute`` is back on exit, also when the block raises.

    ``desk`` needs an instance ``__dict__`` (a dataclass such as ``TurnContext`` has one):
    the route shadows the method there and is removed from there on exit.
    """
    real = desk.execute
    own = vars(desk)
    shadowed = own.get("execute")  # an enclosing route's, when routes nest
    own["execute"] = partial(route, real)
    try:
        yield real
    finally:
        if shadowed is None:
            own.pop("execute", None)
        else:
            own["execute"] = shadowed
