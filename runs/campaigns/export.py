"""Exporting a campaign: the per-attempt rows and the per-system summary as csv, json or
parquet, written atomically; an incomplete matrix is refused
(:class:`~runs.errors.IncompleteMatrix`)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from runs.campaigns.metrics import (
    Summary,
    by_system,
)
from runs.campaigns.reading import Campaign
from runs.errors import BadInput
from runs.files import atomic_path

EXPORT_FORMATS = ("csv", "json", "parquet")

ATTEMPT_FIELDS = ("label", "scenario", "kind", "seed", "system", "repetition", "status",
                  "exit_codes", "grader_error", "verdict_status", "accepted", "checks",
                  "required_passed", "required_total", "check_fraction", "turn_durations",
                  "duration_s", "input_tokens", "output_tokens", "cost_usd", "outputs",
                  "final_hash", "scorer", "attempt_dir", "started_at", "finished_at", "error")
"""The columns of an attempts export, in order (the ledger row's fields)."""




def ordered(names: Sequence[str], preferred: Sequence[str]) -> list[str]:
    """``names`` in the order of ``preferred`` (the matrix's), then the others sorted."""
    first = [n for n in preferred if n in names]
    return first + sorted(n for n in names if n not in first)


# --- export -------------------------------------------------------------------------------------

def attempt_record(row: Any) -> dict[str, Any]:
    """A row as a dict of :data:`ATTEMPT_FIELDS` (nested values as they are)."""
    out: dict[str, Any] = {}
    for name in ATTEMPT_FIELDS:
        value = getattr(row, name, None)
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _flat(value: Any) -> Any:
    """A value for a flat table: nested values as canonical JSON text."""
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def summary_records(summaries: dict[str, Summary]) -> list[dict[str, Any]]:
    """One dict per system: its name and every figure."""
    return [{"system": name, **s.to_json()} for name, s in summaries.items()]


def _atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Write ``path`` through ``write`` on a temporary file renamed into place."""
    with atomic_path(path) as tmp:
        write(tmp)


def _write_csv(path: Path, records: list[dict[str, Any]], columns: Sequence[str]) -> None:
    def cell(v: Any) -> Any:
        v = _flat(v)
        return "" if v is None else ("true" if v is True else "false" if v is False else v)

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(columns)
            for r in records:
                w.writerow([cell(r.get(c)) for c in columns])

    _atomic(path, write)


def _write_parquet(path: Path, records: list[dict[str, Any]], columns: Sequence[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([{c: _flat(r.get(c)) for c in columns} for r in records])
    if not records:
        table = pa.table({c: pa.array([], pa.null()) for c in columns})
    _atomic(path, lambda tmp: pq.write_table(table, tmp))


def summary_path(out: Path) -> Path:
    """Where a CSV or Parquet export puts the per-system summary: ``NAME.systems.EXT``."""
    return out.with_name(f"{out.stem}.systems{out.suffix}")


def export(campaign: Campaign, fmt: str, out: Path) -> list[Path]:
    """Write the per-attempt rows and the per-system summary; refuse an incomplete matrix.

    ``json``: one file ``{label, matrix, k, systems: [...], attempts: [...]}``.
    ``csv``/``parquet``: the attempts at ``out`` (nested fields as JSON text) and the
    per-system summary at :func:`summary_path`. Raises :class:`IncompleteMatrix`.
    """
    campaign.completeness.require()
    if fmt not in EXPORT_FORMATS:
        raise BadInput(f"--export {fmt!r}: unknown format (expected one of: "
                       f"{', '.join(EXPORT_FORMATS)})")
    k = campaign.matrix.k
    per_system = by_system(campaign.rows, k=k)
    systems = summary_records({n: per_system[n]
                               for n in ordered(list(per_system), campaign.matrix.systems)})
    attempts = [attempt_record(r) for r in campaign.rows]
    if fmt == "json":
        m = campaign.matrix
        doc = {"label": campaign.label, "k": k,
               "matrix": {"scenarios": list(m.scenarios), "seeds": list(m.seeds),
                          "systems": list(m.systems), "repetitions": list(m.repetitions)},
               "systems": systems, "attempts": attempts}
        text = json.dumps(doc, indent=2, sort_keys=False) + "\n"
        _atomic(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return [out]
    columns = ["system", *Summary.__dataclass_fields__]
    writer = _write_csv if fmt == "csv" else _write_parquet
    writer(out, attempts, ATTEMPT_FIELDS)
    writer(summary_path(out), systems, columns)
    return [out, summary_path(out)]
