"""A campaign's plan: its matrix (targets x seeds x systems x repetitions) and one
:class:`AttemptJob` per attempt, with the attempt's folder and PostgreSQL schema names."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from runs.campaigns.ledger import (
    AttemptKey,
)
from runs.campaigns.systems import System
from runs.errors import CampaignError

CAMPAIGN_FILE = "campaign.json"
RESULTS_FILE = "results.db"
ATTEMPTS_DIR = "attempts"
LOCK_FILE = ".sweep.lock"
CAMPAIGN_FORMAT = "erpsim-campaign/1"
LABEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"





# --- the matrix ------------------------------------------------------------------------



@dataclass(frozen=True)
class Target:
    """A scenario or desk task of the matrix."""

    name: str
    """The scenario id (or the desk task's), used in rows and folder names."""
    kind: str
    """``scenario`` or ``desk``."""
    source: str
    """What loads it: a scenario YAML path (absolute), or a desk task name or path."""
    sha256: str
    """The loaded scenario's sha256 (YAML, prompt, files): what the attempts ran."""
    seeds: tuple[int, ...]
    """The seeds it runs with: the campaign's for a scenario; a desk task's own seed
    (its supplied files were generated with it, and its books are drawn with it)."""
    category: str | None = None
    """The business category the report groups by (``None``: uncategorized)."""
    tier: str | None = None
    """The difficulty tier it runs at (``erpsim sweep --tier``); ``None``: its own default."""


@dataclass(frozen=True)
class Plan:
    """A campaign's matrix."""

    label: str
    targets: tuple[Target, ...]
    seeds: tuple[int, ...]
    """The campaign's seeds (those of its scenarios; see :attr:`Target.seeds`)."""
    systems: tuple[System, ...]
    repetitions: int
    preregistration: dict[str, Any] | None = None
    """The frozen manifest the sweep was held to (``erpsim sweep --frozen``), or None."""
    tier: str | None = None
    """The tier every scenario of the sweep runs at (``--tier``), or None (each its own)."""

    @property
    def size(self) -> int:
        """The number of attempts in the matrix."""
        return sum(len(t.seeds) for t in self.targets) * len(self.systems) * self.repetitions

    def attempt_keys(self) -> list[AttemptKey]:
        """Every attempt's key, in run order (scenario, seed, system, repetition)."""
        return [(t.name, s, sy.name, r) for t in self.targets for s in t.seeds
                for sy in self.systems for r in range(1, self.repetitions + 1)]

    def matrix(self) -> dict[str, Any]:
        """The matrix as campaign.json records it."""
        out: dict[str, Any] = {
            "scenarios": [{"name": t.name, "kind": t.kind, "source": t.source,
                           "sha256": t.sha256, "seeds": list(t.seeds), "category": t.category,
                           **({"tier": t.tier} if t.tier is not None else {})}
                          for t in self.targets],
            "seeds": list(self.seeds),
            "systems": [s.record() for s in self.systems],
            "repetitions": self.repetitions,
            "attempts": self.size}
        if self.tier is not None:  # erpsim sweep --tier (a sweep without one records none)
            out["tier"] = self.tier
        return out


def matrix_identity(matrix: dict[str, Any]) -> dict[str, Any]:
    """What must be equal for two matrices to be the same campaign (not where files were)."""
    return {"scenarios": [{k: t.get(k) for k in ("name", "kind", "sha256", "seeds", "tier")}
                          for t in matrix["scenarios"]],
            "seeds": list(matrix["seeds"]),
            "systems": [{k: s[k] for k in ("name", "sha256")} for s in matrix["systems"]],
            "repetitions": matrix["repetitions"]}


def desk_tasks() -> ModuleType:
    """The :mod:`desk.tasks` module (:class:`CampaignError` when it cannot be imported)."""
    try:
        import desk.tasks as tasks
    except ImportError as e:
        raise CampaignError(f"--desk: desk tasks are not available in this installation "
                            f"(desk.tasks cannot be imported: {e})") from None
    return tasks


def plan_campaign(label: str, *, scenarios: Sequence[str] = (),
                  desk: Sequence[str] | None = None, seeds: Sequence[int],
                  systems: Sequence[System], repetitions: int = 1,
                  tier: str | None = None) -> Plan:
    """Load the scenarios and desk tasks and build the matrix (``CampaignError``).

    ``scenarios`` are library names or paths (``["all"]`` for every scenario of the
    library, ``scenarios.loader.list_library()``); ``desk`` is a list of task names or
    paths (``["all"]`` for every task of ``desk.tasks.list_tasks()``). ``tier``: every
    scenario runs at that difficulty tier (each must declare it; desk tasks have none).
    Scenario errors surface as ``scenarios.errors.ScenarioError``.
    """
    from scenarios.loader import find_scenario, list_library, load_scenario

    if not re.fullmatch(LABEL_PATTERN, label):
        raise CampaignError(f"label {label!r}: expected letters, digits, '.', '_' or '-' "
                            "(it names a folder), starting with a letter or digit")
    if repetitions < 1:
        raise CampaignError(f"--runs must be at least 1 (got {repetitions})")
    scenario_seeds = tuple(sorted(set(seeds)))
    if scenarios and not scenario_seeds:
        raise CampaignError("no seed given")
    if not systems:
        raise CampaignError("no system given")
    if "all" in scenarios:
        if len(scenarios) > 1:
            raise CampaignError(f"scenarios {' '.join(scenarios)}: 'all' (every library "
                                "scenario) goes alone")
        scenarios = list_library()
        if not scenarios:
            raise CampaignError("scenarios all: the scenario library is empty")
    targets: list[Target] = []
    for s in scenarios:
        loaded = load_scenario(find_scenario(s))
        if tier is not None:
            check_tier_declared(loaded.scenario.id, tuple(loaded.scenario.tiers), tier)
            loaded = load_scenario(loaded.path, tier=tier)
        targets.append(Target(loaded.scenario.id, "scenario", str(loaded.path),
                              loaded.sha256, scenario_seeds, loaded.scenario.category, tier))
    if desk and tier is not None:
        raise CampaignError(f"--tier {tier}: desk tasks have no difficulty tiers (run them in "
                            "a sweep of their own, without --tier)")
    if desk:
        tasks = desk_tasks()
        names = list(tasks.list_tasks()) if list(desk) == ["all"] else list(desk)
        if not names:
            raise CampaignError("--desk all: there are no desk tasks")
        for n in names:
            task = tasks.load_task(n)
            source = str(Path(n).absolute()) if ("/" in n or os.sep in n) else n
            targets.append(Target(task.loaded.scenario.id, "desk", source,
                                  task.loaded.sha256, (int(task.seed),), task.category))
        if any(s.name == "oracle" for s in systems):
            raise CampaignError("system oracle: desk tasks have no oracle (their "
                                "reference is the task's solution: use reference)")
    if not targets:
        raise CampaignError("nothing to run: name scenarios, or desk tasks with --desk")
    seen: dict[str, Target] = {}
    for t in targets:
        if t.name in seen:
            raise CampaignError(f"scenario {t.name!r} is in the matrix twice "
                                f"({seen[t.name].source} and {t.source})")
        seen[t.name] = t
    if not scenarios:  # desk tasks only: their own seeds
        scenario_seeds = tuple(sorted({s for t in targets for s in t.seeds}))
    return Plan(label=label, targets=tuple(targets), seeds=scenario_seeds,
                systems=tuple(systems), repetitions=repetitions, tier=tier)


def check_tier_declared(scenario: str, declared: Sequence[str], tier: str) -> None:
    """Refuse a tier the scenario does not declare (``CampaignError`` naming its tiers)."""
    if tier in declared:
        return
    has = (f"its tiers: {', '.join(declared)}" if declared
           else "it declares no tiers (add a tiers: section to its scenario.yaml)")
    raise CampaignError(f"--tier {tier}: scenario {scenario} does not declare tier "
                        f"{tier!r} ({has})")


# --- one attempt as a job --------------------------------------------------------------


@dataclass(frozen=True)
class AttemptJob:
    """Everything a worker needs to run one attempt (picklable; paths absolute)."""

    label: str
    scenario: str
    kind: str
    source: str
    sha256: str
    seed: int
    system: System
    repetition: int
    attempt_dir: str
    """The attempt's final folder (absolute)."""
    campaign_dir: str
    """The campaign folder (absolute): the row records ``attempt_dir`` relative to it."""
    store_url: str | None = None
    """A PostgreSQL URL: the books go to a schema of their own (see :func:`attempt_schema`)."""
    preregistration: dict[str, Any] | None = None
    """The frozen manifest's record, written into the attempt's verdict.json."""
    tier: str | None = None
    """The difficulty tier the scenario runs at (``None``: its own default)."""

    @property
    def key(self) -> AttemptKey:
        """``(scenario, seed, system, repetition)``."""
        return (self.scenario, self.seed, self.system.name, self.repetition)


def attempt_relpath(key: AttemptKey) -> str:
    """``attempts/<scenario>/<system>/seed-<s>/rep-<r>`` (POSIX)."""
    scenario, seed, system, rep = key
    return f"{ATTEMPTS_DIR}/{scenario}/{system}/seed-{seed}/rep-{rep}"


def attempt_schema(campaign_dir: str | Path, label: str, key: AttemptKey) -> str:
    """The PostgreSQL schema of an attempt's books: ``c_`` + 24 hex digits of sha256.

    Derived from the campaign folder (resolved), the label and the key, so that a rerun
    in the same folder finds (and clears) it, and two campaigns of one label in two
    folders sharing one ``--store-url`` never clear each other's books; short enough for
    PostgreSQL's 63-character identifiers.
    """
    scenario, seed, system, rep = key
    folder = str(Path(campaign_dir).resolve())
    text = f"{folder}\x00{label}\x00{scenario}\x00{seed}\x00{system}\x00{rep}"
    return "c_" + hashlib.sha256(text.encode()).hexdigest()[:24]

