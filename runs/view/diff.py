"""An attempt's books against the reference agent's on the same scenario and seed: the
first business date and document where they diverged.

The books are the ``erp`` realm of the log. Per business date, each side's events are
compared in log order by ``(stream, type, payload)`` (positions, times and hashes differ
as soon as one event does, so they are left out). The first date whose sequences differ
is where the books diverged; its earliest event the other side lacks names the document
(the stream, ``receipt:RCT-BL-000004``), on either side.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from erp.store import EventStore

Key = tuple[str, str, str]
"""An event of the books as compared: ``(stream, type, payload)``."""


def books_by_date(store: EventStore) -> dict[str, list[tuple[int, Key]]]:
    """Per business date, the ``erp`` realm's events in log order (position, key)."""
    out: dict[str, list[tuple[int, Key]]] = {}
    with store.engine.connect() as conn:
        for pos, day, stream, type_, payload in conn.exec_driver_sql(
                "SELECT position, business_date, stream, type, payload FROM events "
                "WHERE realm = 'erp' ORDER BY position"):
            out.setdefault(str(day), []).append((int(pos), (stream, type_, payload)))
    return out


def _short(payload: str, limit: int = 400) -> str:
    try:
        text = json.dumps(json.loads(payload), sort_keys=True, separators=(", ", ": "))
    except ValueError:
        text = payload
    return text if len(text) <= limit else text[:limit] + " ..."


def _first_unmatched(mine: list[Key], theirs: list[Key]) -> int | None:
    """The index of the first of ``mine`` the other side has no (further) copy of."""
    left = Counter(theirs)
    for n, k in enumerate(mine):
        if left[k] > 0:
            left[k] -= 1
        else:
            return n
    return None


def _fields_differ(a: str, b: str) -> list[str]:
    """The payload fields (dotted paths, two levels) whose values differ."""
    try:
        x, y = json.loads(a), json.loads(b)
    except ValueError:
        return []
    if not isinstance(x, dict) or not isinstance(y, dict):
        return []
    out: list[str] = []
    for k in sorted(set(x) | set(y)):
        u, v = x.get(k), y.get(k)
        if u == v:
            continue
        if isinstance(u, dict) and isinstance(v, dict):
            out += [f"{k}.{j}" for j in sorted(set(u) | set(v)) if u.get(j) != v.get(j)]
        else:
            out.append(k)
    return out


def _event(side: list[tuple[int, Key]], i: int) -> dict[str, Any] | None:
    if i >= len(side):
        return None
    pos, (stream, type_, payload) = side[i]
    return {"position": pos, "stream": stream, "type": type_, "payload": _short(payload)}


def diff_books(attempt: EventStore, reference: EventStore, *, limit: int = 40
               ) -> dict[str, Any]:
    """Where ``attempt``'s books first differ from ``reference``'s.

    Returns ``diverged`` (bool), ``first_date``, ``document`` (the stream of the first
    differing event, this side's or else the reference's), ``this_event`` and
    ``reference_event`` (that event on each side, ``None`` where that side has none),
    ``only_this`` and ``only_reference`` (that date's events missing on the other side,
    up to ``limit``), and ``per_date`` (each date's counts of events only on one side).
    """
    a, b = books_by_date(attempt), books_by_date(reference)
    per_date: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    for day in sorted(set(a) | set(b)):
        ea, eb = a.get(day, []), b.get(day, [])
        ka, kb = [k for _, k in ea], [k for _, k in eb]
        if ka == kb:
            per_date.append({"date": day, "only_this": 0, "only_reference": 0,
                             "same": len(ka)})
            continue
        ca, cb = Counter(ka), Counter(kb)
        only_a, only_b = ca - cb, cb - ca
        per_date.append({"date": day, "only_this": sum(only_a.values()),
                         "only_reference": sum(only_b.values()),
                         "same": sum((ca & cb).values())})
        if first is None:
            ia, ib = _first_unmatched(ka, kb), _first_unmatched(kb, ka)
            this = _event(ea, ia) if ia is not None else None
            ref = _event(eb, ib) if ib is not None else None
            if this is not None and (ref is None or (ib is not None and ia is not None
                                                     and ia <= ib)):
                document = this["stream"]
            else:
                document = (ref or {}).get("stream")
            fields: list[str] = []
            if this and ref and (this["stream"], this["type"]) == (ref["stream"], ref["type"]):
                assert ia is not None and ib is not None
                fields = _fields_differ(ea[ia][1][2], eb[ib][1][2])
            first = {"first_date": day, "document": document, "this_event": this,
                     "reference_event": ref, "fields_differ": fields,
                     "only_this": [_event(ea, j) for j, (_, k) in enumerate(ea)
                                   if k in only_a][:limit],
                     "only_reference": [_event(eb, j) for j, (_, k) in enumerate(eb)
                                        if k in only_b][:limit]}
    out: dict[str, Any] = {"diverged": first is not None, "per_date": per_date,
                           "events_this": sum(len(v) for v in a.values()),
                           "events_reference": sum(len(v) for v in b.values())}
    if first is not None:
        out.update(first)
    return out


def reference_run(scenario: str, seed: int, work: Path) -> Path:
    """Run the built-in reference agent on ``scenario`` and ``seed`` into ``work``.

    Raises what loading or running raises (the caller marks the diff as a gap).
    """
    from runs.attempt import run_attempt
    from scenarios.loader import find_scenario, load_scenario

    loaded = load_scenario(find_scenario(scenario))
    out = work / f"reference-{scenario}-seed-{seed}"
    if (out / "summary.json").is_file():
        return out
    run_attempt(loaded, seed, "reference", out, replace=True)
    return out


class ReferenceRuns:
    """The reference attempts run for diffs, one per (scenario, seed), in a temporary
    folder kept for this object's life."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="erpsim-view-reference-")
        self.folder = Path(self._tmp.name)

    def get(self, scenario: str, seed: int) -> Path:
        """The reference attempt for ``scenario`` and ``seed`` (run once)."""
        return reference_run(scenario, seed, self.folder)

    def close(self) -> None:
        """Remove the temporary folder."""
        self._tmp.cleanup()


def diff_against(folder: Path, summary: dict[str, Any] | None, reference: Path | None,
                 runs: ReferenceRuns | None) -> dict[str, Any]:
    """The page's diff section for the attempt in ``folder``.

    ``reference`` is a reference attempt folder (given, or the campaign's); without one,
    ``runs`` runs the reference for the attempt's scenario and seed. Every problem comes
    back as ``{"gap": text}``.
    """
    from runs.grading import open_attempt_store

    if not summary:
        return {"gap": "no summary.json: the scenario and seed are unknown"}
    scenario, seed = summary.get("scenario"), summary.get("seed")
    if not isinstance(scenario, str) or not isinstance(seed, int):
        return {"gap": "summary.json names no scenario and seed"}
    if summary.get("agent") == "reference" and reference is None:
        return {"self": True, "scenario": scenario, "seed": seed}
    source = "given"
    if reference is None:
        if runs is None:
            return {"gap": "no reference attempt given (--reference ATTEMPT)"}
        try:
            reference = runs.get(scenario, seed)
            source = "run for this page"
        except Exception as e:
            return {"gap": f"the reference agent could not be run on {scenario} seed {seed}: "
                           f"{type(e).__name__}: {e} (give --reference ATTEMPT)"}
    try:
        ref_summary = json.loads((reference / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return {"gap": f"{reference / 'summary.json'}: unreadable ({e})"}
    if (ref_summary.get("scenario"), ref_summary.get("seed")) != (scenario, seed):
        return {"gap": f"the reference {reference} is {ref_summary.get('scenario')} seed "
                       f"{ref_summary.get('seed')}, this attempt {scenario} seed {seed}"}
    try:
        a = open_attempt_store(folder, summary)
    except Exception as e:
        return {"gap": f"this attempt's books: {e}"}
    try:
        b = open_attempt_store(reference, ref_summary)
    except Exception as e:
        a.close()
        return {"gap": f"the reference's books: {e}"}
    try:
        out = diff_books(a, b)
    except Exception as e:
        return {"gap": f"could not compare the books: {type(e).__name__}: {e}"}
    finally:
        a.close()
        b.close()
    out.update({"reference_folder": str(reference),
                "source": source, "scenario": scenario, "seed": seed,
                "final_hash_this": summary.get("final_hash"),
                "final_hash_reference": ref_summary.get("final_hash"),
                "same_scenario_sha": summary.get("scenario_sha256")
                == ref_summary.get("scenario_sha256")})
    return out
