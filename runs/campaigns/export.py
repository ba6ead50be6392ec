"""Exporting a campaign: the per-attempt rows, the per-check results and the per-system
summary as csv, json or parquet, written atomically, under the original verdicts or a
stored rescoring; an incomplete matrix is refused (:class:`~runs.errors.IncompleteMatrix`).

:func:`campaign_frame` gives the same records as a pandas DataFrame (one row per
attempt, or one per check result).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runs.campaigns.metrics import (
    Summary,
    by_system,
    category_of,
    check_fraction,
)
from runs.campaigns.reading import (
    DEFAULT_RESULTS_DIR,
    ORIGINAL,
    Campaign,
    attempt_usage,
    categories,
    open_campaign,
    prices,
    with_scorer,
)
from runs.errors import BadInput
from runs.files import atomic_path

if TYPE_CHECKING:
    import pandas as pd

EXPORT_FORMATS = ("csv", "json", "parquet")

ROW_FIELDS = ("label", "scenario", "kind", "seed", "system", "repetition", "status",
              "exit_codes", "grader_error", "verdict_status", "accepted", "checks",
              "required_passed", "required_total", "check_fraction", "turn_durations",
              "duration_s", "input_tokens", "output_tokens", "cost_usd", "outputs",
              "final_hash", "scorer", "attempt_dir", "started_at", "finished_at", "error")
"""The ledger row's fields, in order."""

ATTEMPT_FIELDS = (*ROW_FIELDS, "category", "verdict_source", "tokens_input",
                  "tokens_uncached_input", "tokens_cached_input", "tokens_cache_write",
                  "tokens_output", "tokens_reasoning", "estimated_cost_usd")
"""The columns of an attempts export, in order: the ledger row's fields, then the
scenario's category, which verdicts the row carries (``original`` or a rescoring's
scorer name), the tokens by class (normalized across adapters' conventions; empty when
unknown) and the cost at the system's price table (else the adapter's, else unknown)."""

CHECK_FIELDS = ("label", "scenario", "category", "seed", "system", "repetition",
                "verdict_source", "check", "passed", "required", "detail", "metrics")
"""The columns of a checks export: one row per check result of every attempt."""

_TIMES = ("started_at", "finished_at")


def ordered(names: Sequence[str], preferred: Sequence[str]) -> list[str]:
    """``names`` in the order of ``preferred`` (the matrix's), then the others sorted."""
    first = [n for n in preferred if n in names]
    return first + sorted(n for n in names if n not in first)


# --- records -------------------------------------------------------------------------------------

def attempt_record(row: Any) -> dict[str, Any]:
    """A row as a dict of :data:`ROW_FIELDS` (nested values as they are)."""
    out: dict[str, Any] = {}
    for name in ROW_FIELDS:
        value = getattr(row, name, None)
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def attempt_records(campaign: Campaign, scorer: str = ORIGINAL) -> list[dict[str, Any]]:
    """Every attempt as a dict of :data:`ATTEMPT_FIELDS`, verdicts under ``scorer``."""
    c = with_scorer(campaign, scorer)
    cats = categories(c)
    usage = attempt_usage(c)
    price = prices(c)
    out = []
    for row in c.rows:
        rec = attempt_record(row)
        u = usage.get(tuple(row.key))
        p = price.get(row.system)
        cost = (p.cost(u) if p is not None and u is not None else None if p is not None
                else u.cost_usd if u is not None and u.cost_usd is not None else row.cost_usd)
        rec.update(category=category_of(cats, row.scenario), verdict_source=scorer,
                   tokens_input=None if u is None else u.input,
                   tokens_uncached_input=None if u is None else u.uncached,
                   tokens_cached_input=None if u is None else u.cached,
                   tokens_cache_write=None if u is None else u.cache_write,
                   tokens_output=None if u is None else u.output,
                   tokens_reasoning=None if u is None else u.reasoning,
                   estimated_cost_usd=cost)
        if rec["check_fraction"] is None and rec["verdict_status"] is not None:
            rec["check_fraction"] = check_fraction(row)
        out.append(rec)
    return out


def check_records(attempts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict of :data:`CHECK_FIELDS` per check result of the attempt records."""
    return [{"label": a["label"], "scenario": a["scenario"], "category": a["category"],
             "seed": a["seed"], "system": a["system"], "repetition": a["repetition"],
             "verdict_source": a["verdict_source"], "check": r.get("name"),
             "passed": r.get("passed"), "required": r.get("required"),
             "detail": r.get("detail"), "metrics": r.get("metrics") or {}}
            for a in attempts for r in a["checks"] or []]


def summary_records(summaries: dict[str, Summary]) -> list[dict[str, Any]]:
    """One dict per system: its name and every figure."""
    return [{"system": name, **s.to_json()} for name, s in summaries.items()]


# --- writers ------------------------------------------------------------------------------------

def _flat(value: Any) -> Any:
    """A value for a flat table: nested values as canonical JSON text."""
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


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


def _timestamp(text: Any) -> datetime | None:
    """An ISO 8601 time as an aware datetime (``None`` for none or an empty text)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _arrow_schema(kind: str) -> Any:
    """The Parquet schema of an export table: lists, structs, maps and timestamps native."""
    import pyarrow as pa

    if kind == "checks":
        return pa.schema([("label", pa.string()), ("scenario", pa.string()),
                          ("category", pa.string()), ("seed", pa.int64()),
                          ("system", pa.string()), ("repetition", pa.int64()),
                          ("verdict_source", pa.string()), ("check", pa.string()),
                          ("passed", pa.bool_()), ("required", pa.bool_()),
                          ("detail", pa.string()), ("metrics", pa.string())])
    check = pa.struct([("name", pa.string()), ("passed", pa.bool_()),
                       ("required", pa.bool_()), ("detail", pa.string()),
                       ("metrics", pa.string())])
    ints = ("seed", "repetition", "required_passed", "required_total", "input_tokens",
            "output_tokens", "tokens_input", "tokens_uncached_input", "tokens_cached_input",
            "tokens_cache_write", "tokens_output", "tokens_reasoning")
    floats = ("check_fraction", "duration_s", "cost_usd", "estimated_cost_usd")
    special = {"exit_codes": pa.list_(pa.int64()), "checks": pa.list_(check),
               "turn_durations": pa.list_(pa.float64()), "accepted": pa.bool_(),
               "outputs": pa.map_(pa.string(), pa.string()),
               "scorer": pa.map_(pa.string(), pa.string()),
               "started_at": pa.timestamp("us", tz="UTC"),
               "finished_at": pa.timestamp("us", tz="UTC")}
    return pa.schema([(name, special.get(name) or (pa.int64() if name in ints else
                                                    pa.float64() if name in floats else
                                                    pa.string()))
                      for name in ATTEMPT_FIELDS])


def _arrow_value(name: str, value: Any) -> Any:
    if name in _TIMES:
        return _timestamp(value)
    if name == "checks":
        return [{**r, "metrics": json.dumps(r.get("metrics") or {}, sort_keys=True)}
                for r in value or []]
    if name == "metrics":
        return json.dumps(value or {}, sort_keys=True)
    if name in ("outputs", "scorer"):
        return None if value is None else sorted((str(k), str(v)) for k, v in value.items())
    return value


def _write_parquet(path: Path, records: list[dict[str, Any]], kind: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _arrow_schema(kind)
    columns = {name: pa.array([_arrow_value(name, r.get(name)) for r in records],
                              type=schema.field(name).type) for name in schema.names}
    table = pa.table(columns, schema=schema)
    _atomic(path, lambda tmp: pq.write_table(table, tmp))


def _write_parquet_flat(path: Path, records: list[dict[str, Any]],
                        columns: Sequence[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([{c: _flat(r.get(c)) for c in columns} for r in records])
    if not records:
        table = pa.table({c: pa.array([], pa.null()) for c in columns})
    _atomic(path, lambda tmp: pq.write_table(table, tmp))


def summary_path(out: Path) -> Path:
    """Where a CSV or Parquet export puts the per-system summary: ``NAME.systems.EXT``."""
    return out.with_name(f"{out.stem}.systems{out.suffix}")


def checks_path(out: Path) -> Path:
    """Where a CSV or Parquet export puts the per-check results: ``NAME.checks.EXT``."""
    return out.with_name(f"{out.stem}.checks{out.suffix}")


def export(campaign: Campaign, fmt: str, out: Path, *, scorer: str = ORIGINAL) -> list[Path]:
    """Write the per-attempt rows, the check results and the per-system summary under
    ``scorer``'s verdicts; refuse an incomplete matrix.

    ``json``: one file ``{label, scorer, matrix, k, systems: [...], attempts: [...]}``.
    ``csv``: the attempts at ``out`` (nested fields as JSON text), the per-system summary
    at :func:`summary_path` and the check results at :func:`checks_path`. ``parquet``: the
    same three files with native list, map, struct and timestamp columns. Raises
    :class:`IncompleteMatrix`, :class:`BadInput` (a format or scorer unknown) and
    ``Refused`` (a scorer without a receipt for every attempt).
    """
    campaign.completeness.require()
    if fmt not in EXPORT_FORMATS:
        raise BadInput(f"--export {fmt!r}: unknown format (expected one of: "
                       f"{', '.join(EXPORT_FORMATS)})")
    attempts = attempt_records(campaign, scorer)
    k = campaign.matrix.k
    per_system = by_system(with_scorer(campaign, scorer).rows, k=k)
    systems = summary_records({n: per_system[n]
                               for n in ordered(list(per_system), campaign.matrix.systems)})
    if fmt == "json":
        m = campaign.matrix
        doc = {"label": campaign.label, "scorer": scorer, "k": k,
               "matrix": {"scenarios": list(m.scenarios), "seeds": list(m.seeds),
                          "systems": list(m.systems), "repetitions": list(m.repetitions)},
               "systems": systems, "attempts": attempts}
        text = json.dumps(doc, indent=2, sort_keys=False) + "\n"
        _atomic(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return [out]
    columns = ["system", *Summary.__dataclass_fields__]
    checks = check_records(attempts)
    if fmt == "csv":
        _write_csv(out, attempts, ATTEMPT_FIELDS)
        _write_csv(summary_path(out), systems, columns)
        _write_csv(checks_path(out), checks, CHECK_FIELDS)
    else:
        _write_parquet(out, attempts, "attempts")
        _write_parquet_flat(summary_path(out), systems, columns)
        _write_parquet(checks_path(out), checks, "checks")
    return [out, summary_path(out), checks_path(out)]


# --- pandas ---------------------------------------------------------------------------------------

FRAME_KINDS = ("attempts", "checks")


def campaign_frame(label: str | Path, *, results_dir: str | Path = DEFAULT_RESULTS_DIR,
                   scorer: str = ORIGINAL, per: str = "attempts") -> pd.DataFrame:
    """A campaign as a pandas DataFrame: one row per attempt (columns
    :data:`ATTEMPT_FIELDS`), or with ``per="checks"`` one per check result
    (:data:`CHECK_FIELDS`), under the original verdicts or a stored rescoring.

    ``label`` is a label under ``results_dir`` or a campaign folder's path. Lists stay
    Python lists, ``started_at``/``finished_at`` are UTC timestamps, unknown numbers are
    missing (``NA``, never 0). Works on incomplete matrices too (the rows recorded).
    Raises :class:`BadInput` for an unknown label, scorer or ``per``.
    """
    import pandas as pd

    if per not in FRAME_KINDS:
        raise BadInput(f"per={per!r}: expected one of: {', '.join(FRAME_KINDS)}")
    path = Path(label)
    if (path / "campaign.json").is_file():
        campaign = open_campaign(path.parent, path.name)
    else:
        campaign = open_campaign(Path(results_dir), str(label))
    attempts = attempt_records(campaign, scorer)
    if per == "checks":
        return pd.DataFrame.from_records(check_records(attempts), columns=list(CHECK_FIELDS))
    frame = pd.DataFrame.from_records(attempts, columns=list(ATTEMPT_FIELDS))
    for name in _TIMES:
        frame[name] = pd.to_datetime(frame[name].where(frame[name] != ""), utc=True,
                                     format="ISO8601")
    for name in ("input_tokens", "output_tokens", "required_passed", "required_total",
                 "tokens_input", "tokens_uncached_input", "tokens_cached_input",
                 "tokens_cache_write", "tokens_output", "tokens_reasoning"):
        frame[name] = frame[name].astype("Int64")
    for name in ("cost_usd", "estimated_cost_usd", "check_fraction"):
        frame[name] = frame[name].astype("Float64")
    return frame
