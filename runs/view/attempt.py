"""What an attempt's page shows, read from its folder; every missing or corrupt file is a
:class:`Gap`, marked in the page where its section would be, never an exception.

:func:`read_attempt_view` gathers the summary, the verdict, the per-date control status, the
turns (prompt, new inbox files, the transcript and ``api.jsonl`` where they exist, the
events the turn's actor wrote, the outputs left), the reconciliation, the event log
(:mod:`runs.view.eventlog`) and the diff against the reference (:mod:`runs.view.diff`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from erp.money import format_cents
from erp.store import EventStore
from runs.view.eventlog import EventLog, build_event_log

PREVIEW_BYTES = 6_000
"""How much of a text file (prompt, inbox document, output) the page shows."""

MAX_TRANSCRIPT_LINES = 2_000
"""Transcript or api.jsonl lines shown per turn (the rest counted)."""


@dataclass(frozen=True)
class Gap:
    """Something the page cannot show: which file, and what is wrong with it."""

    what: str
    path: str
    problem: str

    def to_json(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"what": self.what, "path": self.path, "problem": self.problem}


@dataclass
class AttemptData:
    """Everything an attempt's page shows (``None`` or empty where a gap stands)."""

    folder: Path
    name: str
    gaps: list[Gap] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    verdict: dict[str, Any] | None = None
    error_text: str | None = None
    log_verified: bool | None = None
    log_problem: str = ""
    turns: list[dict[str, Any]] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    world_by_date: list[dict[str, Any]] = field(default_factory=list)
    erp_by_date: list[dict[str, Any]] = field(default_factory=list)
    control_by_date: list[dict[str, Any]] = field(default_factory=list)
    daily_checks: list[dict[str, Any]] = field(default_factory=list)
    reconciliation: list[dict[str, Any]] | None = None
    reconciliation_ties: bool | None = None
    events: EventLog | None = None
    diff: dict[str, Any] | None = None

    def gap(self, what: str, path: Path | str, problem: str) -> None:
        """Record a gap (``path`` relative to the attempt folder where it is inside)."""
        p = Path(path)
        try:
            shown = str(p.relative_to(self.folder))
        except ValueError:
            shown = str(p)
        self.gaps.append(Gap(what, shown, problem))

    def gaps_of(self, what: str) -> list[Gap]:
        """The gaps of one section."""
        return [g for g in self.gaps if g.what == what]


def _read_json(data: AttemptData, what: str, path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data.gap(what, path, "missing")
        return None
    except (OSError, UnicodeDecodeError) as e:
        data.gap(what, path, f"unreadable ({e})")
        return None
    except ValueError as e:
        data.gap(what, path, f"not JSON ({e})")
        return None
    if not isinstance(value, dict):
        data.gap(what, path, f"a JSON {type(value).__name__}, expected an object")
        return None
    return value


def read_text_preview(path: Path, limit: int = PREVIEW_BYTES) -> dict[str, Any]:
    """A file's name, size and the start of its text (``binary`` when it is not text)."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        return {"name": path.name, "size": None, "text": None, "problem": str(e)}
    head = raw[:limit]
    try:
        text: str | None = head.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {"name": path.name, "size": len(raw), "text": text,
            "truncated": len(raw) > limit, "binary": text is None}


def jsonl_objects(data: AttemptData, what: str, path: Path) -> list[dict[str, Any]] | None:
    """A JSON-lines file's objects; a bad line is a gap (the other lines are kept)."""
    if not path.is_file():
        return None
    out: list[dict[str, Any]] = []
    bad = 0
    first_bad = ""
    try:
        # JSON Lines end at "\n" only: splitlines() would also cut at a U+2028, U+2029,
        # U+0085 or form feed inside a string, which JSON may hold raw (a CRLF's "\r" is
        # JSON whitespace).
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError as e:
        data.gap(what, path, f"unreadable ({e})")
        return None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            bad += 1
            first_bad = first_bad or f"line {n}: {e}"
            continue
        if isinstance(obj, dict):
            if len(out) < MAX_TRANSCRIPT_LINES:
                out.append(obj)
        else:
            bad += 1
            first_bad = first_bad or f"line {n}: a JSON {type(obj).__name__}, expected an object"
    if bad:
        data.gap(what, path, f"{bad} line(s) unreadable, first {first_bad}")
    shown = sum(1 for line in lines if line.strip())
    if shown > MAX_TRANSCRIPT_LINES:
        out.append({"kind": "more", "text": f"{shown - MAX_TRANSCRIPT_LINES} more lines "
                                            "not shown"})
    return out


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def _turn(data: AttemptData, record: dict[str, Any] | None, n: int,
          actor_counts: dict[str, dict[str, int]]) -> dict[str, Any]:
    folder = data.folder / "turns" / f"{n:02d}"
    ws = folder / "workspace"
    turn: dict[str, Any] = {"turn": n, "record": record or {},
                            "date": (record or {}).get("date"),
                            "actor": f"agent:turn-{n}"}
    prompt = ws / "prompt.md"
    if prompt.is_file():
        turn["prompt"] = read_text_preview(prompt, 20_000)
    else:
        data.gap(f"turn {n}", prompt, "missing")
    inbox = ws / "inbox"
    turn["inbox_new"] = [read_text_preview(p) for p in _files(inbox)]
    out_dir = folder / "outputs" if (folder / "outputs").is_dir() else ws / "out"
    turn["outputs"] = [read_text_preview(p) for p in _files(out_dir)]
    hashes = (record or {}).get("outputs") or {}
    for o in turn["outputs"]:
        o["sha256"] = hashes.get(o["name"])
    turn["missing_outputs"] = (record or {}).get("missing_outputs") or []
    for name in ("transcript", "api"):
        found = None
        for p in (folder / "agent" / f"{name}.jsonl", folder / "outputs" / f"{name}.jsonl"):
            if p.is_file():
                found = jsonl_objects(data, f"turn {n}", p)
                turn[f"{name}_path"] = str(p.relative_to(data.folder))
                break
        turn[name] = found
    if turn["api"]:
        turn["refusals"] = [c for c in turn["api"] if _is_refusal(c)]
    else:
        turn["refusals"] = []
    for log_name in ("agent.log",):
        if (folder / log_name).is_file():
            turn["agent_log"] = read_text_preview(folder / log_name, 20_000)
    process = (record or {}).get("process") or {}
    for key in ("stdout", "stderr"):
        rel = process.get(f"{key}_log") or process.get(key)
        if isinstance(rel, str):
            p = data.folder / rel
            if p.is_file():
                turn[key] = read_text_preview(p, 20_000)
    turn["events_by_type"] = sorted(actor_counts.get(turn["actor"], {}).items(),
                                    key=lambda kv: (-kv[1], kv[0]))
    turn["events_total"] = sum(actor_counts.get(turn["actor"], {}).values())
    return turn


def _is_refusal(call: dict[str, Any]) -> bool:
    status = call.get("status")
    if isinstance(status, int) and status >= 400:
        return True
    return any(call.get(k) for k in ("error", "refusal", "refusal_code"))


def _store_data(data: AttemptData, store: EventStore, declared: dict[str, str] | None,
                with_log: bool, turn_dates: tuple[date, ...] = ()) -> dict[str, dict[str, int]]:
    """The parts read from the books; returns event counts per actor and type."""
    from erp import queries as q

    try:
        report = store.verify()
        data.log_verified = bool(report.ok)
        if not report.ok:
            data.log_problem = str(getattr(report, "message", "") or report)
    except Exception as e:  # a store too broken to verify: say so, show what can be read
        data.log_verified = False
        data.log_problem = f"{type(e).__name__}: {e}"
    counts: dict[str, dict[str, int]] = {}
    world: dict[str, dict[str, int]] = {}
    erp: dict[str, dict[str, int]] = {}
    with store.engine.connect() as conn:
        for realm, day, actor, type_, n in conn.exec_driver_sql(
                "SELECT realm, business_date, actor, type, COUNT(*) FROM events "
                "GROUP BY realm, business_date, actor, type"):
            counts.setdefault(actor, {})
            counts[actor][type_] = counts[actor].get(type_, 0) + int(n)
            if realm == "world":
                world.setdefault(str(day), {})
                world[str(day)][type_] = world[str(day)].get(type_, 0) + int(n)
            else:
                who = ("agent" if actor.startswith("agent:") else
                       actor.split(":")[0] if ":" in actor else actor)
                erp.setdefault(str(day), {})
                erp[str(day)][who] = erp[str(day)].get(who, 0) + int(n)
    data.dates = sorted(set(world) | set(erp))
    data.world_by_date = [{"date": d, "type": t, "count": c}
                          for d in sorted(world) for t, c in sorted(world[d].items())]
    data.erp_by_date = [{"date": d, "actor": a, "count": c}
                        for d in sorted(erp) for a, c in sorted(erp[d].items())]
    for d in data.dates:
        try:
            ties = q.control_ties(store, as_of=date.fromisoformat(d))
        except Exception as e:
            data.gap("control status", "books.db", f"as of {d}: {type(e).__name__}: {e}")
            break
        for t in ties:
            data.control_by_date.append({"date": d, "account": f"{t.account} {t.control}",
                                         "gl": format_cents(t.gl_balance),
                                         "subledger": format_cents(t.subledger_total),
                                         "difference_cents": int(t.difference)})
    try:
        from checks.reconcile import reconcile

        rec = reconcile(store, control_accounts=declared or None, turn_dates=turn_dates)
        data.reconciliation_ties = rec.ties
        data.reconciliation = [
            {"account": a.account, "name": a.name, "control": a.control,
             "gl": format_cents(a.gl), "subledger": format_cents(a.subledger),
             "external": None if a.external is None else format_cents(a.external),
             "external_source": a.external_source,
             "gl_difference": format_cents(a.gl_difference),
             "external_difference": (None if a.external_difference is None
                                     else format_cents(a.external_difference)),
             "ties": a.ties,
             "items": [{"kind": i.kind, "party": i.party, "document": i.document,
                        "books": None if i.books is None else format_cents(i.books),
                        "external": None if i.external is None else format_cents(i.external),
                        "difference": format_cents(i.difference), "explained": i.explained,
                        "note": i.note} for i in a.items]}
            for a in rec.accounts]
    except Exception as e:
        data.gap("reconciliation", "books.db", f"could not reconcile: {type(e).__name__}: {e}")
    if with_log:
        try:
            data.events = build_event_log(store)
        except Exception as e:
            data.gap("event log", "books.db", f"unreadable: {type(e).__name__}: {e}")
    return counts


def _declared_accounts(summary: dict[str, Any] | None) -> dict[str, str] | None:
    if not summary or not isinstance(summary.get("scenario"), str):
        return None
    try:
        from scenarios.loader import find_scenario, load_scenario

        return dict(load_scenario(find_scenario(summary["scenario"]))
                    .scenario.company.control_accounts)
    except Exception:  # a scenario no longer at hand: the chart's control accounts only
        return None


def read_attempt_view(folder: Path, *, with_log: bool = True, store_url: str | None = None
                 ) -> AttemptData:
    """Read an attempt folder for its page; problems become :class:`Gap` entries."""
    data = AttemptData(folder=folder, name=folder.name)
    if (folder / "error.txt").is_file():
        data.error_text = read_text_preview(folder / "error.txt", 20_000).get("text")
    data.summary = _read_json(data, "summary", folder / "summary.json")
    data.verdict = _read_json(data, "verdict", folder / "verdict.json")
    if data.verdict is not None and not isinstance(data.verdict.get("results"), list):
        data.gap("verdict", folder / "verdict.json", "no results list (expected every "
                                                     "check's result under 'results')")
        data.verdict = None
    summary = data.summary or {}
    if data.summary is not None:
        dc = summary.get("daily_checks")
        if isinstance(dc, dict):
            for name, v in dc.items():
                if isinstance(v, dict):
                    data.daily_checks.append({"check": name, **v})
        elif dc is not None:
            data.gap("control status", folder / "summary.json",
                     f"daily_checks is {type(dc).__name__}, expected an object")
    counts: dict[str, dict[str, int]] = {}
    store: EventStore | None = None
    try:
        from runs.grading import open_attempt_store

        store = open_attempt_store(folder, summary, store_url=store_url)
    except Exception as e:
        data.gap("books", folder / "books.db", str(e))
    if store is not None:
        try:
            from runs.grading import attempt_turn_dates

            counts = _store_data(data, store, _declared_accounts(data.summary), with_log,
                                 attempt_turn_dates(summary))
        except Exception as e:
            data.gap("books", folder / "books.db", f"unreadable: {type(e).__name__}: {e}")
        finally:
            store.close()
    raw_turns = summary.get("turns")
    records: list[Any] = raw_turns if isinstance(raw_turns, list) else []
    by_number = {int(t["turn"]): t for t in records
                 if isinstance(t, dict) and isinstance(t.get("turn"), int)}
    on_disk: set[int] = set()
    if (folder / "turns").is_dir():
        on_disk = {int(p.name) for p in (folder / "turns").iterdir()
                   if p.is_dir() and p.name.isdigit()}
    for n in sorted(set(by_number) | on_disk):
        if n not in on_disk:
            data.gap(f"turn {n}", folder / "turns" / f"{n:02d}", "missing (summary.json "
                                                                 "records this turn)")
        data.turns.append(_turn(data, by_number.get(n), n, counts))
    return data
