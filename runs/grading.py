"""Grading an attempt: its scenario's checks against its stored books and files.

Everything a verdict needs is in the attempt folder (``books.db``, the last turn's
workspace with ``out/``), so grading again later runs nothing (``erpsim check``).

A verdict comes only from state derived from the verified log. Before any check runs,
:func:`verify_attempt_books` recomputes the log's hash chain, requires its head to be the
``final_hash`` the attempt recorded (``summary.json``, ``verdict.json``, and the results
ledger's row when a campaign rescores), checks the file's pages (SQLite), and compares
every read table the checks read with a fold of the verified log
(:func:`erp.verification.verify_books`). Anything that does not check out raises
``IntegrityError`` naming the position, or the table and row, and nothing is graded. The
verdict records how under ``books`` (``"verified": "rebuilt-and-compared"``, the log head,
each table's row count and digest). An attempt graded by its own run as it ends is
different: only its turns had the books, so books that do not verify are the agent's doing,
and the attempt is rejected (``books-verified`` failed; ``"verified": "refused"``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from checks.context import CheckContext, Folds
from checks.registry import CheckResult, CheckSpec, definitions_hash
from checks.verdict import (
    SCORER_NAME,
    Verdict,
    evaluate,
    output_hashes,
    scorer_version,
    write_verdict,
)
from erp.errors import IntegrityError, StoreError
from erp.store import EventStore
from erp.verification import BooksReport, verify_books
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
                as_of: date | None = None, position: int | None = None,
                folds: Folds | None = None) -> CheckContext:
    """The check context of an attempt of ``loaded`` (``folds``: kept across per-date
    evaluations, see :class:`checks.context.Folds`)."""
    start, end, turn_dates = calendar_facts(loaded)
    return CheckContext(store=store, workspace=workspace, reference=loaded.reference_dir,
                        inputs=tuple(sorted(loaded.workspace_files)),
                        start=start, end=end,
                        as_of=as_of, position=position, agent_actors=agent_actors,
                        turn_roles=dict(turn_roles or {}),
                        control_accounts=dict(loaded.scenario.company.control_accounts),
                        folds=folds, turn_dates=turn_dates)


_CALENDAR_FACTS: dict[int, tuple[LoadedScenario, tuple[date, date, tuple[date, ...]]]] = {}


def calendar_facts(loaded: LoadedScenario) -> tuple[date, date, tuple[date, ...]]:
    """The scenario's first and last dates and its turn dates, worked out once per loaded
    scenario (it is frozen): per-date control makes a context at every date, and building
    a year's calendar and its turn dates cost a fifth of a date's checks."""
    hit = _CALENDAR_FACTS.get(id(loaded))
    if hit is not None and hit[0] is loaded:
        return hit[1]
    cal = loaded.scenario.calendar.build()
    facts = (cal.start, cal.end, tuple(loaded.scenario.turns.dates_in(cal)))
    if len(_CALENDAR_FACTS) >= 16:
        _CALENDAR_FACTS.clear()
    _CALENDAR_FACTS[id(loaded)] = (loaded, facts)
    return facts


def attempt_turn_dates(summary: dict[str, Any]) -> tuple[date, ...]:
    """The dates of the attempt's turns, as its ``summary.json`` records them (for a
    reconciliation after the run: what reached the company after a turn is a timing item
    until the next one). A turn without a readable date is left out."""
    out: list[date] = []
    for t in summary.get("turns") or ():
        try:
            out.append(date.fromisoformat(str(t["date"])))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(sorted(set(out)))


def final_specs(loaded: LoadedScenario) -> list[CheckSpec]:
    """The scenario's checks, as evaluated when the attempt ends."""
    return list(loaded.checks)


def daily_specs(loaded: LoadedScenario) -> list[tuple[int, CheckSpec]]:
    """The checks asked for at every business date's end, with their index in the list."""
    return [(i, s) for i, s in enumerate(loaded.checks) if s.daily]


def _recorded_heads(out: Path, summary: dict[str, Any],
                    expect_head: str | None) -> list[tuple[str, str, Any]]:
    """The log heads the attempt recorded: ``(where, hash, position)`` each."""
    heads: list[tuple[str, str, Any]] = []
    if summary.get("final_hash"):
        heads.append(("summary.json final_hash", str(summary["final_hash"]),
                      summary.get("final_position")))
    try:
        verdict = json.loads((out / VERDICT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        verdict = None  # none yet (the attempt is being graded) or unreadable: not a record
    if isinstance(verdict, dict) and verdict.get("final_log_hash"):
        heads.append(("verdict.json final_log_hash", str(verdict["final_log_hash"]),
                      verdict.get("final_position")))
    if expect_head is not None:
        heads.append(("the results ledger's final_hash", expect_head, None))
    return heads


def verify_attempt_books(out: Path, store: EventStore, summary: dict[str, Any], *,
                         expect_head: str | None = None) -> BooksReport:
    """Verify an attempt's books before grading: the chain, the file, every read table
    against a fold of the log, and the log's head against every head the attempt
    recorded (``expect_head``: one more, e.g. the results ledger's). ``IntegrityError``
    when any does not check out; ``GradingError`` when the summary records no head."""
    heads = _recorded_heads(out, summary, expect_head)
    if not heads:
        raise GradingError(f"{out}: summary.json records no final_hash (not a finished "
                           "attempt folder); the log's head cannot be checked")
    log = store.verify()
    if not log.ok:
        raise IntegrityError(f"{store.label}: {log.message}; not graded",
                             log.first_bad_position)
    head, position = log.head_hash, log.events
    for where, recorded, at in heads:
        if recorded != head:
            at_text = f" at position {at}" if at is not None else ""
            raise IntegrityError(
                f"{out}: the log's head is {head} at position {position}, but the attempt "
                f"recorded {recorded}{at_text} ({where}): the log was cut short or "
                "rewritten at its end; not graded", position + 1)
    books = verify_books(store, log)
    if not books.ok:
        raise IntegrityError(f"{store.label}: {books.message}; not graded")
    return books


BOOKS_CHECK = "books-verified"
"""The one result of an attempt whose own run left books that do not verify."""


def grade(out: Path, loaded: LoadedScenario, store: EventStore, *,
          summary: dict[str, Any], expect_head: str | None = None,
          folds: Folds | None = None, during_run: bool = False,
          timing: dict[str, float] | None = None) -> Verdict:
    """Verify the attempt's books (:func:`verify_attempt_books`), then evaluate the
    scenario's checks on its store and final workspace (``folds``: per-date control's,
    folded on to the log's head rather than afresh; the verdict is the same).

    Books that do not verify raise ``IntegrityError`` (nothing graded), unless
    ``during_run``: the attempt's own run grades it as it ends, so only its turns had the
    books, and the change is the agent's. Then the verdict is rejected by one failed
    result, ``books-verified``, naming what does not check out; no other check reads
    books that cannot be trusted. ``timing``, when given, receives the seconds each part
    took: ``verification`` and ``checks``."""
    ws = final_workspace(out)
    started = time.perf_counter()
    try:
        books = verify_attempt_books(out, store, summary, expect_head=expect_head)
    except IntegrityError as e:
        if not during_run:
            raise
        if timing is not None:
            timing.update(verification=time.perf_counter() - started, checks=0.0)
        return _books_refused(loaded, summary, e, ws)
    actors = tuple(f"agent:turn-{t['turn']}" for t in summary.get("turns", []))
    roles = {f"agent:turn-{t['turn']}": t["role"] for t in summary.get("turns", [])
             if t.get("role", "clerk") != "clerk"}
    ctx = context_for(store, loaded, workspace=ws, agent_actors=actors, turn_roles=roles,
                      folds=folds)
    verified = time.perf_counter()
    verdict = evaluate(final_specs(loaded), ctx, outputs_root=ws / "out" if ws else None)
    verdict.books = books.to_json()
    if timing is not None:
        timing.update(verification=verified - started, checks=time.perf_counter() - verified)
    return verdict


def _books_refused(loaded: LoadedScenario, summary: dict[str, Any], error: IntegrityError,
                   ws: Path | None) -> Verdict:
    """The verdict of an attempt whose run left books that do not verify, bound to the
    log head its run recorded (the store's own may be what does not check out)."""
    reason = str(error).removesuffix("; not graded")
    specs = final_specs(loaded)
    result = CheckResult(BOOKS_CHECK, False, "the books do not verify at the end of the "
                         f"attempt, so no other check was evaluated: {reason}",
                         {"first_bad_position": error.position})
    scorer = {"name": SCORER_NAME, "version": scorer_version(),
              "definitions_sha256": definitions_hash(specs)}
    return Verdict([result], [], scorer,
                   outputs=output_hashes(ws / "out" if ws else None),
                   final_log_hash=summary.get("final_hash"),
                   final_position=summary.get("final_position"),
                   books={"verified": "refused", "reason": reason})


def describe_store(store: EventStore) -> dict[str, Any]:
    """What ``summary.json`` records under ``store`` for books kept outside the attempt
    folder (PostgreSQL): ``url`` (without its password) and ``schema``, which
    :func:`open_attempt_store` opens again, and ``label``, for display only."""
    return {"url": store.url, "schema": store.schema, "label": store.label}


def _recorded_url(where: dict[str, Any]) -> str | None:
    """The URL a summary's ``store`` records; an older summary kept only its label
    (``URL schema NAME``), whose URL part is taken then."""
    url = where.get("url")
    if isinstance(url, str) and url:
        return url
    label = where.get("label")
    if isinstance(label, str) and label.startswith("postgres"):
        return label.rsplit(" schema ", 1)[0]
    return None


def open_attempt_store(out: Path, summary: dict[str, Any], *,
                       store_url: str | None = None) -> EventStore:
    """The attempt's store: ``books.db`` in its folder, or the PostgreSQL schema its
    summary names at the URL it records (``store_url`` replaces that URL, e.g. to give a
    password or another host)."""
    db = out / "books.db"
    if db.is_file():
        return EventStore.open(db)
    where = summary.get("store")
    if isinstance(where, dict) and where.get("schema"):
        url = store_url or _recorded_url(where)
        if url is None or not url.startswith("postgres"):
            raise GradingError(f"{out}: its books are in PostgreSQL schema {where['schema']!r} "
                               "at a URL summary.json does not hold; give --store-url")
        try:
            return EventStore.open(url, schema=str(where["schema"]))
        except IntegrityError:
            raise
        except StoreError as e:
            hint = ("" if store_url else " (summary.json records the URL without its "
                    "password: give --store-url with it, or set PGPASSWORD)")
            raise GradingError(f"{out}: its books cannot be opened: {e}{hint}") from e
    raise GradingError(f"{out}: no books.db (and summary.json names no other store)")


def grade_folder(out: Path, loaded: LoadedScenario, *, write: bool = False,
                 store_url: str | None = None, expect_head: str | None = None) -> Verdict:
    """Open an attempt's store, verify its books, grade it, optionally write verdict.json.

    ``IntegrityError`` (nothing graded, nothing written) when the books do not verify;
    ``GradingError`` when the folder or its store cannot be read.
    """
    summary = read_summary(out)
    store = open_attempt_store(out, summary, store_url=store_url)
    try:
        verdict = grade(out, loaded, store, summary=summary, expect_head=expect_head)
    finally:
        store.close()
    if write:
        write_verdict(verdict, out / VERDICT_FILE)
    return verdict
