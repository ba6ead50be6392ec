"""Reading a campaign's folder: ``campaign.json``'s matrix and the results ledger's rows
(:class:`Campaign`, :func:`open_campaign`); an unknown label or a bad folder is
:class:`~runs.errors.BadInput`."""

from __future__ import annotations

import json
import math
import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runs.campaigns.metrics import (
    AttemptLike,
    Completeness,
    Matrix,
    completeness,
)
from runs.campaigns.plan import CAMPAIGN_FILE, RESULTS_FILE
from runs.errors import BadInput

DEFAULT_RESULTS_DIR = Path("results")
"""Where ``erpsim report``, ``compare`` and ``rescore`` look for labels by default."""




# --- the campaign folder ---------------------------------------------------------------------

@dataclass(frozen=True)
class Campaign:
    """A campaign's folder, its matrix, its ledger rows and their completeness."""

    label: str
    folder: Path
    data: dict[str, Any]
    matrix: Matrix
    rows: list[Any]
    completeness: Completeness

    @property
    def ledger_path(self) -> Path:
        """The results ledger file."""
        return self.folder / RESULTS_FILE

    def attempt_dir(self, row: AttemptLike) -> Path:
        """An attempt's folder (the ledger keeps it relative to the campaign folder)."""
        p = Path(str(getattr(row, "attempt_dir", "") or ""))
        return p if p.is_absolute() else self.folder / p


def _names(items: Any, keys: Sequence[str], what: str,
           source: str = CAMPAIGN_FILE) -> tuple[str, ...]:
    """Names from a list of strings or of mappings naming themselves under ``keys``;
    :class:`BadInput` naming ``source``, the field and the value for anything else, and
    for a name given twice (the matrix would count its cells twice)."""
    if isinstance(items, dict):
        items = list(items)
    if not isinstance(items, list):
        raise BadInput(f"{source}: matrix.{what} is {type(items).__name__} (expected a list)")
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and any(isinstance(item.get(k), str) for k in keys):
            out.append(next(str(item[k]) for k in keys if isinstance(item.get(k), str)))
        else:
            raise BadInput(f"{source}: matrix.{what}: {item!r} names nothing (expected a "
                           f"name or a mapping with one of: {', '.join(keys)})")
    twice = sorted(n for n, c in Counter(out).items() if c > 1)
    if twice:
        raise BadInput(f"{source}: matrix.{what} names {twice[0]!r} more than once "
                       f"(expected each name once)")
    return tuple(out)


def _seed_list(value: Any, where: str, source: str) -> tuple[int, ...]:
    """Seeds recorded as a list of whole numbers (0 or more), or a range text like
    ``0-49``; :class:`BadInput` naming ``source``, the field and the value otherwise (a
    fraction, a boolean or a seed given twice is not silently read as another seed)."""
    from runs.validate import parse_seeds

    if isinstance(value, str):
        try:
            return tuple(parse_seeds(value))
        except ValueError as e:
            raise BadInput(f"{source}: {where} {value!r} unreadable ({e})") from None
    if not isinstance(value, list):
        raise BadInput(f"{source}: {where} is {type(value).__name__} {value!r} (expected a "
                       "list of seeds, whole numbers 0 or more, or a range like 0-49)")
    bad = [x for x in value if not isinstance(x, int) or isinstance(x, bool) or x < 0]
    if bad:
        raise BadInput(f"{source}: {where}: {bad[0]!r} is not a seed (expected whole "
                       "numbers 0 or more)")
    twice = sorted(x for x, c in Counter(value).items() if c > 1)
    if twice:
        raise BadInput(f"{source}: {where} lists seed {twice[0]} more than once (expected "
                       "each seed once)")
    return tuple(value)


def matrix_from_campaign(data: dict[str, Any], source: str = CAMPAIGN_FILE) -> Matrix:
    """The matrix campaign.json records (``runs.campaign.Plan.matrix``).

    ``matrix``: ``scenarios`` (mappings with a ``name``, or names; a mapping's own
    ``seeds`` when it has them), ``seeds`` (a list, or a range text like ``0-49``),
    ``systems`` (mappings with a ``name``, or names) and ``runs`` (K, also read as
    ``repetitions``; repetitions are numbered 1..K). Anything else is
    :class:`BadInput` naming ``source`` (the file), the field, its value and what was
    expected.
    """
    m = data.get("matrix")
    if not isinstance(m, dict):
        raise BadInput(f"{source}: no matrix (expected a mapping with scenarios, seeds, "
                       "systems and runs)")
    missing = [k for k in ("scenarios", "seeds", "systems") if k not in m]
    if not any(k in m for k in ("runs", "repetitions")):
        missing.append("runs")
    if missing:
        raise BadInput(f"{source}: the matrix lacks {', '.join(missing)} (expected "
                       "scenarios, seeds, systems and runs)")
    seeds = _seed_list(m["seeds"], "matrix.seeds", source)
    reps = m["runs"] if "runs" in m else m["repetitions"]
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise BadInput(f"{source}: matrix.runs {reps!r} is not a positive whole number "
                       "(expected the repetitions per scenario, seed and system)")
    scenarios = _names(m["scenarios"], ("name", "id"), "scenarios", source)
    systems = _names(m["systems"], ("name",), "systems", source)
    own: list[tuple[str, tuple[int, ...]]] = []
    for item in m["scenarios"] if isinstance(m["scenarios"], list) else []:
        if isinstance(item, dict) and item.get("seeds") is not None:
            name = next(str(item[k]) for k in ("name", "id") if isinstance(item.get(k), str))
            mine = _seed_list(item["seeds"], f"scenario {name}: seeds", source)
            if list(mine) != list(seeds):
                own.append((name, mine))
    return Matrix(scenarios=scenarios, seeds=seeds, systems=systems,
                  repetitions=tuple(range(1, reps + 1)), scenario_seeds=tuple(own))


def check_campaign_fields(data: dict[str, Any], source: str = CAMPAIGN_FILE) -> None:
    """The fields the report reads beside the matrix, checked once when the campaign is
    opened: a scenario's ``category`` and ``tier`` (text, or absent / null) and a
    system's ``price`` (a mapping of input, cached_input and output, and optionally
    cache_write, each a number >= 0 in dollars per million tokens). :class:`BadInput`
    naming ``source``, the entry, the field and the value otherwise; a malformed value is
    never silently read as "uncategorized" or "no price"."""
    m = data.get("matrix")
    if not isinstance(m, dict):
        return
    for e in m.get("scenarios", []) if isinstance(m.get("scenarios"), list) else []:
        if not isinstance(e, dict):
            continue
        name = e.get("name") or e.get("id")
        for fld in ("category", "tier"):
            v = e.get(fld)
            if v is not None and not isinstance(v, str):
                raise BadInput(f"{source}: scenario {name}: {fld} {v!r} is "
                               f"{type(v).__name__} (expected text, or null for none)")
    for s in m.get("systems", []) if isinstance(m.get("systems"), list) else []:
        if not isinstance(s, dict) or s.get("price") is None:
            continue
        price = s["price"]
        expect = ("expected a mapping of input, cached_input and output (cache_write "
                  "optional), each a number >= 0 in dollars per million tokens")
        if not isinstance(price, dict):
            raise BadInput(f"{source}: system {s.get('name')}: price {price!r} is "
                           f"{type(price).__name__} ({expect})")
        for key in ("input", "cached_input", "output", "cache_write"):
            v = price.get(key)
            if key == "cache_write" and v is None:
                continue
            if (not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v)
                    or v < 0):
                what = "missing" if key not in price else repr(v)
                raise BadInput(f"{source}: system {s.get('name')}: price.{key} {what} "
                               f"is not a price ({expect})")


_UNREADABLE_LEDGER = (sqlite3.Error, ValueError, TypeError, KeyError)
"""What reading a damaged ledger's rows raises: SQLite's errors (a missing column or
table, a malformed file), a JSON column that does not parse, a field of the wrong type."""


def _ledger_fault(path: Path, e: BaseException) -> BadInput:
    return BadInput(f"{path}: unreadable results ledger ({type(e).__name__}: {e}; expected "
                    "an erpsim results ledger as `erpsim sweep` writes it)")


def read_rows(ledger_path: Path) -> list[Any]:
    """Every attempt row of a results ledger (:class:`BadInput` naming the file when it
    cannot be opened or a row cannot be read back)."""
    from runs.campaigns.ledger import ResultsError, ResultsLedger

    try:
        with ResultsLedger.open(ledger_path) as ledger:
            return list(ledger.rows())
    except ResultsError as e:
        raise BadInput(str(e)) from None
    except _UNREADABLE_LEDGER as e:
        raise _ledger_fault(ledger_path, e) from None


def known_labels(results_dir: Path) -> list[str]:
    """Labels under ``results_dir`` (folders holding a campaign.json), sorted."""
    if not results_dir.is_dir():
        return []
    return sorted(p.name for p in results_dir.iterdir() if (p / CAMPAIGN_FILE).is_file())


def open_campaign(results_dir: Path, label: str) -> Campaign:
    """Read a campaign's folder (:class:`BadInput` for an unknown label or a bad folder)."""
    folder = results_dir / label
    if not (folder / CAMPAIGN_FILE).is_file():
        labels = known_labels(results_dir)
        expected = (f"one of: {', '.join(labels)}" if labels else
                    f"a label with a {CAMPAIGN_FILE}; {results_dir} has none")
        raise BadInput(f"unknown label {label!r}: no {folder / CAMPAIGN_FILE} "
                       f"(expected {expected}; --results-dir changes where to look)")
    try:
        data = json.loads((folder / CAMPAIGN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BadInput(f"{folder / CAMPAIGN_FILE}: unreadable ({e})") from None
    if not isinstance(data, dict):
        raise BadInput(f"{folder / CAMPAIGN_FILE}: not a JSON object")
    matrix = matrix_from_campaign(data, str(folder / CAMPAIGN_FILE))
    check_campaign_fields(data, str(folder / CAMPAIGN_FILE))
    if not (folder / RESULTS_FILE).is_file():
        raise BadInput(f"label {label!r}: no results ledger at {folder / RESULTS_FILE}")
    rows = read_rows(folder / RESULTS_FILE)
    return Campaign(label=label, folder=folder, data=data, matrix=matrix, rows=rows,
                    completeness=completeness(rows, matrix))


# --- categories, scorers, usage and prices of a campaign ---------------------------------------

ORIGINAL = "original"
"""The scorer name of the verdicts recorded when the attempts ran."""


def _category_from_source(entry: dict[str, Any]) -> str | None:
    """A scenario's category loaded from where campaign.json says it came from."""
    from scenarios.errors import ScenarioError

    source = entry.get("source")
    if not isinstance(source, str):
        return None
    try:
        if entry.get("kind") == "desk":
            import desk.tasks

            return str(desk.tasks.load_task(source).category)
        from scenarios.loader import find_scenario, load_scenario

        return load_scenario(find_scenario(source)).scenario.category
    except (ScenarioError, ImportError, ValueError, OSError):
        return None


def categories(campaign: Campaign) -> dict[str, str | None]:
    """Each scenario's category: as campaign.json records it, else as its source declares
    it now (campaigns swept before categories were recorded), else ``None``."""
    m = campaign.data.get("matrix")
    entries = [e for e in (m.get("scenarios", []) if isinstance(m, dict) else [])
               if isinstance(e, dict)]
    out: dict[str, str | None] = {}
    for e in entries:
        name = e.get("name") or e.get("id")
        if isinstance(name, str):
            cat = e.get("category") if "category" in e else _category_from_source(e)
            out[name] = cat if isinstance(cat, str) and cat else None
    return out


def tiers(campaign: Campaign) -> dict[str, str]:
    """The difficulty tier each scenario was swept at (``erpsim sweep --tier``), by
    scenario; a scenario swept at its own default tier (or before tiers) is left out."""
    m = campaign.data.get("matrix")
    out: dict[str, str] = {}
    for e in m.get("scenarios", []) if isinstance(m, dict) else []:
        if isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(
                e.get("tier"), str):
            out[e["name"]] = e["tier"]
    return out


def receipts_of(campaign: Campaign, scorer: str | None = None) -> list[Any]:
    """The rescoring receipts stored in the campaign's ledger (of one scorer), oldest
    first."""
    from runs.campaigns.ledger import ResultsError, ResultsLedger

    try:
        with ResultsLedger.open(campaign.ledger_path) as ledger:
            return ledger.receipts(scorer)
    except ResultsError as e:
        raise BadInput(str(e)) from None
    except _UNREADABLE_LEDGER as e:
        raise _ledger_fault(campaign.ledger_path, e) from None


def stored_scorers(campaign: Campaign) -> dict[str, int]:
    """Scorer names with stored receipts -> attempts they cover, by name."""
    keys: dict[str, set[Any]] = {}
    for rc in receipts_of(campaign):
        keys.setdefault(rc.scorer_name, set()).add(rc.key)
    return {name: len(keys[name]) for name in sorted(keys)}


def scorer_name(campaign: Campaign, name: str) -> str:
    """``name`` as the campaign knows it: ``original``, a stored scorer's name, or the
    folder given to ``rescore --scorer`` (its name); :class:`BadInput` otherwise."""
    known = stored_scorers(campaign)
    if name == ORIGINAL or name in known:
        return name
    as_folder = Path(name).expanduser()
    if as_folder.is_dir() and as_folder.resolve().name in known:
        return as_folder.resolve().name
    names = ", ".join([ORIGINAL, *known])
    raise BadInput(f"--scorer {name!r}: unknown scorer for campaign {campaign.label} "
                   f"(expected one of: {names}; `erpsim rescore {campaign.label} --scorer "
                   f"{name}` stores its verdicts first)")


def latest_receipts(campaign: Campaign, name: str) -> dict[Any, Any]:
    """The newest receipt of scorer ``name`` for each attempt key."""
    return {rc.key: rc for rc in receipts_of(campaign, name)}


def needs_receipt(row: AttemptLike) -> bool:
    """Whether a rescoring must hold a receipt for ``row``: every attempt but one that
    never finished (an infrastructure error with no verdict, which no scorer can grade)."""
    return not (row.verdict_status is None and row.status == "infrastructure_error")


def with_scorer(campaign: Campaign, name: str) -> Campaign:
    """The campaign with every row's verdict under scorer ``name`` (the newest receipt of
    that scorer for each attempt); ``original`` gives it as recorded. An attempt that
    never finished keeps its row (no verdict under any scorer).

    :class:`BadInput` for an unknown scorer; :class:`~runs.errors.Refused` when the scorer
    has no receipt for some finished attempt (a subset of rescored verdicts is never mixed
    into an aggregate of original ones).
    """
    from runs.campaigns.metrics import rescored_row
    from runs.errors import Refused

    name = scorer_name(campaign, name)
    if name == ORIGINAL:
        return campaign
    receipts = latest_receipts(campaign, name)
    due = [r for r in campaign.rows if needs_receipt(r)]
    missing = [r.key for r in due if tuple(r.key) not in receipts]
    if missing:
        first = " ".join(map(str, missing[0]))
        raise Refused(f"--scorer {name}: receipts for {len(due) - len(missing)} of "
                      f"{len(due)} finished attempts (none for {len(missing)}, e.g. {first}; "
                      f"expected one per finished attempt: `erpsim rescore {campaign.label} "
                      "--scorer ...` grades them, or says why it cannot)")
    rows = [rescored_row(r, receipts[tuple(r.key)].verdict) if tuple(r.key) in receipts
            else r for r in campaign.rows]
    return Campaign(label=campaign.label, folder=campaign.folder, data=campaign.data,
                    matrix=campaign.matrix, rows=rows,
                    completeness=completeness(rows, campaign.matrix))


def scorer_manifests(campaign: Campaign, name: str) -> list[str]:
    """The manifest sha256 values of the newest receipts of ``name`` (one when the
    scorer's definitions did not change between rescorings)."""
    return sorted({rc.scorer_definitions_sha256
                   for rc in latest_receipts(campaign, name).values()})


def attempt_usage(campaign: Campaign) -> dict[Any, Any]:
    """Each attempt's :class:`~runs.campaigns.metrics.Usage` (summed over its turns)
    from its folder's ``summary.json``; ``None`` when unknown (a built-in agent, an
    adapter that wrote no usage, a missing or unreadable summary)."""
    from runs.campaigns.metrics import add_usage, usage_from

    out: dict[Any, Any] = {}
    for row in campaign.rows:
        path = campaign.attempt_dir(row) / "summary.json"
        try:
            turns = json.loads(path.read_text(encoding="utf-8")).get("turns", [])
        except (OSError, ValueError, AttributeError):
            out[tuple(row.key)] = None
            continue
        if not isinstance(turns, list):
            out[tuple(row.key)] = None  # a summary of another shape: unknown, not zero
            continue
        parts = []
        for t in turns:
            process = t.get("process") if isinstance(t, dict) else None
            usage = process.get("usage") if isinstance(process, dict) else None
            parts.append(usage_from(usage) if isinstance(usage, dict) else None)
        out[tuple(row.key)] = add_usage(parts)
    return out


def prices(campaign: Campaign) -> dict[str, Any]:
    """Each system's :class:`~runs.campaigns.metrics.Price`, from the ``price:`` its
    systems file declared (recorded in campaign.json); systems without one are left out."""
    from runs.campaigns.metrics import Price

    m = campaign.data.get("matrix")
    out: dict[str, Any] = {}
    for s in m.get("systems", []) if isinstance(m, dict) else []:
        if isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(
                s.get("price"), dict):
            try:
                out[s["name"]] = Price.from_json(s["price"])
            except (KeyError, TypeError, ValueError) as e:
                raise BadInput(f"campaign.json: system {s['name']}: price {s['price']!r} "
                               f"unreadable ({e}; expected input, cached_input and output "
                               "in dollars per million tokens)") from None
    return out


def read_weights(text: str) -> str | dict[str, float]:
    """``task-share``, ``equal``, or the ``category: weight`` mapping of the YAML or JSON
    file ``text`` names (:class:`BadInput` naming the file for anything else)."""
    from runs.campaigns.metrics import WEIGHTINGS

    if text in WEIGHTINGS:
        return text
    path = Path(text)
    if not path.is_file():
        raise BadInput(f"--weights {text!r}: neither a weighting ({', '.join(WEIGHTINGS)}) "
                       "nor a file (expected a YAML file of category: weight)")
    from scenarios.loader import parse_yaml

    try:
        data = parse_yaml(path.read_text(encoding="utf-8"))
    except Exception as e:  # yaml errors, unreadable bytes
        raise BadInput(f"--weights {path}: unreadable ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict) or not data:
        raise BadInput(f"--weights {path}: expected a mapping of category: weight (e.g. "
                       "'cash application: 0.5')")
    for key, value in data.items():
        if (not isinstance(value, int | float) or isinstance(value, bool)
                or not value >= 0):
            raise BadInput(f"--weights {path}: {key}: {value!r} is not a weight (expected a "
                           "number >= 0)")
    return {str(k): float(v) for k, v in data.items()}


# --- the per-month accuracy curve ------------------------------------------------------


def monthly_accuracy(campaign: Campaign) -> dict[tuple[str, str], dict[str, tuple[int, int]]]:
    """Per (scenario, system): per month, the per-date checks' results passed and in all,
    pooled over its attempts (each attempt's ``summary.json`` ``daily_by_month``; an
    attempt without one, or without a readable summary, adds nothing)."""
    out: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    for row in campaign.rows:
        path = campaign.attempt_dir(row) / "summary.json"
        try:
            months = json.loads(path.read_text(encoding="utf-8")).get("daily_by_month")
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(months, dict):
            continue
        series = out.setdefault((row.scenario, row.system), {})
        for month, v in months.items():
            if not isinstance(v, dict):
                continue
            checks, ok = v.get("checks"), v.get("passed", 0)
            if (isinstance(checks, int) and not isinstance(checks, bool) and checks > 0
                    and isinstance(ok, int) and not isinstance(ok, bool)
                    and 0 <= ok <= checks):
                passed, total = series.get(month, (0, 0))
                series[month] = (passed + ok, total + checks)
    return {k: v for k, v in out.items() if v}
