"""Reading a campaign's folder: ``campaign.json``'s matrix and the results ledger's rows
(:class:`Campaign`, :func:`open_campaign`); an unknown label or a bad folder is
:class:`~runs.errors.BadInput`."""

from __future__ import annotations

import json
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


def _names(items: Any, keys: Sequence[str], what: str) -> tuple[str, ...]:
    """Names from a list of strings or of mappings naming themselves under ``keys``."""
    if isinstance(items, dict):
        items = list(items)
    if not isinstance(items, list):
        raise BadInput(f"campaign.json: {what} is {type(items).__name__} (expected a list)")
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and any(isinstance(item.get(k), str) for k in keys):
            out.append(next(str(item[k]) for k in keys if isinstance(item.get(k), str)))
        else:
            raise BadInput(f"campaign.json: {what}: {item!r} names nothing (expected a name "
                           f"or a mapping with one of: {', '.join(keys)})")
    return tuple(out)


def matrix_from_campaign(data: dict[str, Any]) -> Matrix:
    """The matrix campaign.json records (``runs.campaign.Plan.matrix``).

    ``matrix``: ``scenarios`` (mappings with a ``name``, or names), ``seeds`` (a list,
    or a range text like ``0-49``), ``systems`` (mappings with a ``name``, or names) and
    ``runs`` (K, also read as ``repetitions``; repetitions are numbered 1..K).
    """
    from runs.validate import parse_seeds

    m = data.get("matrix")
    if not isinstance(m, dict):
        raise BadInput("campaign.json: no matrix (expected a mapping with scenarios, seeds, "
                       "systems and runs)")
    missing = [k for k in ("scenarios", "seeds", "systems") if k not in m]
    if not any(k in m for k in ("runs", "repetitions")):
        missing.append("runs")
    if missing:
        raise BadInput(f"campaign.json: the matrix lacks {', '.join(missing)} (expected "
                       "scenarios, seeds, systems and runs)")
    seeds_raw = m["seeds"]
    try:
        seeds = (tuple(parse_seeds(seeds_raw)) if isinstance(seeds_raw, str)
                 else tuple(int(s) for s in seeds_raw))
    except (TypeError, ValueError) as e:
        raise BadInput(f"campaign.json: seeds {seeds_raw!r} unreadable ({e})") from None
    reps = m["runs"] if "runs" in m else m["repetitions"]
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise BadInput(f"campaign.json: runs {reps!r} is not a positive whole number "
                       "(expected the repetitions per scenario, seed and system)")
    own: list[tuple[str, tuple[int, ...]]] = []
    for item in m["scenarios"] if isinstance(m["scenarios"], list) else []:
        if isinstance(item, dict) and isinstance(item.get("seeds"), list):
            name = next((str(item[k]) for k in ("name", "id") if isinstance(item.get(k), str)),
                        None)
            if name is not None and [int(x) for x in item["seeds"]] != list(seeds):
                own.append((name, tuple(int(x) for x in item["seeds"])))
    return Matrix(scenarios=_names(m["scenarios"], ("name", "id"), "scenarios"),
                  seeds=seeds, systems=_names(m["systems"], ("name",), "systems"),
                  repetitions=tuple(range(1, reps + 1)), scenario_seeds=tuple(own))


def read_rows(ledger_path: Path) -> list[Any]:
    """Every attempt row of a results ledger."""
    from runs.campaigns.ledger import ResultsError, ResultsLedger

    try:
        with ResultsLedger.open(ledger_path) as ledger:
            return list(ledger.rows())
    except ResultsError as e:
        raise BadInput(str(e)) from None


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
    matrix = matrix_from_campaign(data)
    if not (folder / RESULTS_FILE).is_file():
        raise BadInput(f"label {label!r}: no results ledger at {folder / RESULTS_FILE}")
    rows = read_rows(folder / RESULTS_FILE)
    return Campaign(label=label, folder=folder, data=data, matrix=matrix, rows=rows,
                    completeness=completeness(rows, matrix))
