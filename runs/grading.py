"""Grading an attempt: its scenario's checks against its stored books and files.

Everything a verdict needs is in the attempt folder (``books.db``, the last turn's
workspace with ``out/``), so grading again later runs nothing (``erpsim check``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from checks.context import CheckContext
from checks.registry import CheckSpec
from checks.verdict import Verdict, evaluate, write_verdict
from erp.store import EventStore
from runs.errors import GradingError
from scenarios.loader import LoadedScenario

VERDICT_FILE = "verdict.json"



@dataclass(frozen=True)
class DailyFailure:
    """A per-date check that failed at a business date's end."""

    check: str
    day: date
    detail: str


def final_workspace(out: Path) -> Path | None:
    """The last turn's workspace (its ``out/`` holds the requested files), if any turn ran."""
    turns = sorted((out / "turns").glob("[0-9][0-9]*")) if (out / "turns").is_dir() else []
    return turns[-1] / "workspace" if turns else None


def read_summary(out: Path) -> dict[str, Any]:
    """The attempt's ``summary.json`` (GradingError when missing or unreadable)."""
    path = out / "summary.json"
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise GradingError(f"{out}: no summary.json (not a finished attempt folder)") from None
    except (OSError, ValueError) as e:
        raise GradingError(f"{path}: unreadable ({e})") from e


def context_for(store: EventStore, loaded: LoadedScenario, *,
                workspace: Path | None, agent_actors: tuple[str, ...] = (),
                turn_roles: dict[str, str] | None = None,
                as_of: date | None = None, position: int | None = None) -> CheckContext:
    """The check context of an attempt of ``loaded``."""
    cal = loaded.scenario.calendar.build()
    return CheckContext(store=store, workspace=workspace, reference=loaded.reference_dir,
                        inputs=tuple(sorted(loaded.workspace_files)),
                        start=cal.start, end=cal.end,
                        as_of=as_of, position=position, agent_actors=agent_actors,
                        turn_roles=dict(turn_roles or {}),
                        control_accounts=dict(loaded.scenario.company.control_accounts))


def final_specs(loaded: LoadedScenario) -> list[CheckSpec]:
    """The scenario's checks, as evaluated when the attempt ends."""
    return list(loaded.checks)


def daily_specs(loaded: LoadedScenario) -> list[tuple[int, CheckSpec]]:
    """The checks asked for at every business date's end, with their index in the list."""
    return [(i, s) for i, s in enumerate(loaded.checks) if s.daily]


def grade(out: Path, loaded: LoadedScenario, store: EventStore, *,
          summary: dict[str, Any]) -> Verdict:
    """Evaluate the scenario's checks on an attempt's store and final workspace."""
    actors = tuple(f"agent:turn-{t['turn']}" for t in summary.get("turns", []))
    roles = {f"agent:turn-{t['turn']}": t["role"] for t in summary.get("turns", [])
             if t.get("role", "clerk") != "clerk"}
    ctx = context_for(store, loaded, workspace=final_workspace(out), agent_actors=actors,
                      turn_roles=roles)
    ws = final_workspace(out)
    return evaluate(final_specs(loaded), ctx, outputs_root=ws / "out" if ws else None)


def open_attempt_store(out: Path, summary: dict[str, Any], *,
                       store_url: str | None = None) -> EventStore:
    """The attempt's store: ``books.db`` in its folder, or the PostgreSQL schema its
    summary names (``store_url`` overrides the URL, e.g. to add a password)."""
    db = out / "books.db"
    if db.is_file():
        return EventStore.open(db)
    where = summary.get("store")
    if isinstance(where, dict) and where.get("schema"):
        url = store_url or str(where.get("label", ""))
        if not url.startswith("postgresql"):
            raise GradingError(f"{out}: its books are in PostgreSQL schema {where['schema']!r} "
                               "at a URL summary.json does not hold; give --store-url")
        return EventStore.open(url, schema=str(where["schema"]))
    raise GradingError(f"{out}: no books.db (and summary.json names no other store)")


def grade_folder(out: Path, loaded: LoadedScenario, *, write: bool = False,
                 store_url: str | None = None) -> Verdict:
    """Open an attempt's store (verified), grade it, optionally write verdict.json."""
    summary = read_summary(out)
    store = open_attempt_store(out, summary, store_url=store_url)
    try:
        store.require_valid()
        verdict = grade(out, loaded, store, summary=summary)
    finally:
        store.close()
    if write:
        write_verdict(verdict, out / VERDICT_FILE)
    return verdict
