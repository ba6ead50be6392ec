"""``erpsim report``, ``erpsim compare`` and ``erpsim rescore``: reading a campaign's results.

A campaign lives in ``RESULTS_DIR/LABEL/``: ``campaign.json`` (its matrix) and
``results.db`` (the results ledger, :mod:`runs.results`). The figures come from
:mod:`runs.metrics`; this module reads the folder, prints rich tables, exports and
rescores.

Exit codes: 0 success; 1 an incomplete matrix (the report still prints, saying so) or
a refusal (an export of an incomplete matrix, a comparison of systems whose matrices
differ); 2 bad input (an unknown label, system or scorer, a bad option).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

import click

from runs.cli import main
from runs.metrics import (
    DEFAULT_BOOTSTRAP_SEED,
    DEFAULT_RESAMPLES,
    AttemptLike,
    Comparison,
    Completeness,
    IncompleteMatrix,
    Matrix,
    MatrixMismatch,
    Summary,
    by_scenario,
    by_seed,
    by_system,
    completeness,
    group_by,
    is_accepted,
    paired_bootstrap,
    repeatability,
    seed_variation,
    transitions,
    verdict_label,
)

DEFAULT_RESULTS_DIR = Path("results")
CAMPAIGN_FILE = "campaign.json"
LEDGER_FILE = "results.db"
EXPORT_FORMATS = ("csv", "json", "parquet")

ATTEMPT_FIELDS = ("label", "scenario", "kind", "seed", "system", "repetition", "status",
                  "exit_codes", "grader_error", "verdict_status", "accepted", "checks",
                  "required_passed", "required_total", "check_fraction", "turn_durations",
                  "duration_s", "input_tokens", "output_tokens", "cost_usd", "outputs",
                  "final_hash", "scorer", "attempt_dir", "started_at", "finished_at", "error")
"""The columns of an attempts export, in order (the ledger row's fields)."""


class BadInput(Exception):
    """Bad input: an unknown label, system or scorer (exit 2)."""


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
        return self.folder / LEDGER_FILE

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
    from runs.results import ResultsError, ResultsLedger

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
    if not (folder / LEDGER_FILE).is_file():
        raise BadInput(f"label {label!r}: no results ledger at {folder / LEDGER_FILE}")
    rows = read_rows(folder / LEDGER_FILE)
    return Campaign(label=label, folder=folder, data=data, matrix=matrix, rows=rows,
                    completeness=completeness(rows, matrix))


# --- formatting -------------------------------------------------------------------------------

def pct(x: float | None, digits: int = 1) -> str:
    """A rate as a percentage, ``-`` when undefined."""
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def money(x: float | None) -> str:
    """A cost in dollars, ``unknown`` when unknown (never 0 for unknown)."""
    return "unknown" if x is None else f"${x:.4f}"


def seconds(x: float | None) -> str:
    """A duration, ``-`` when none is known."""
    return "-" if x is None else f"{x:.2f}"


def _console() -> Any:
    from runs.display import console

    return console(170)


def _table(title: str, columns: Sequence[str], *, left: int = 1) -> Any:
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if i < left else "right")
    return t


def system_tables(summaries: dict[str, Summary], k: int) -> list[Any]:
    """Per system: acceptance and check completion; then execution and resources."""
    acc = _table("Per system: acceptance", [
        "System", "Attempts", "Accepted", "pass@1", f"pass^{k} (units)",
        "At least once (units)", "Mean check fraction", "Pooled check rate (checks)"])
    res = _table("Per system: execution and resources", [
        "System", "Completed", "Timeouts", "Crashed", "Infra errors", "Grader errors",
        "Total cost", "Cost / accepted", "Median s", "p90 s"])
    for name, s in summaries.items():
        acc.add_row(name, str(s.attempts), str(s.accepted), pct(s.pass_at_1),
                    f"{pct(s.pass_hat_k)} ({s.all_k_units}/{s.units})",
                    f"{pct(s.at_least_once)} ({s.at_least_once_units}/{s.units})",
                    pct(s.mean_check_fraction),
                    f"{pct(s.pooled_check_rate)} ({s.pooled_passed}/{s.pooled_total})")
        res.add_row(name, str(s.completed), str(s.timeouts), str(s.crashed),
                    str(s.infrastructure_errors), str(s.grader_errors),
                    money(s.total_cost_usd) + ("" if s.total_cost_usd is not None else
                                               f" ({s.cost_known}/{s.attempts} known)"),
                    money(s.cost_per_accepted), seconds(s.median_duration_s),
                    seconds(s.p90_duration_s))
    return [acc, res]


def ordered(names: Sequence[str], preferred: Sequence[str]) -> list[str]:
    """``names`` in the order of ``preferred`` (the matrix's), then the others sorted."""
    first = [n for n in preferred if n in names]
    return first + sorted(n for n in names if n not in first)


def scenario_table(rows: Sequence[AttemptLike], k: int) -> Any:
    """Per scenario and system: acceptance, repeated acceptance and check completion."""
    t = _table("Per scenario", ["Scenario", "System", "Attempts", "Accepted", "pass@1",
                                f"pass^{k}", "At least once", "Mean check fraction",
                                "Pooled check rate"], left=2)
    for (scenario, system), s in by_scenario(rows, k=k).items():
        t.add_row(scenario, system, str(s.attempts), str(s.accepted), pct(s.pass_at_1),
                  f"{pct(s.pass_hat_k)} ({s.all_k_units}/{s.units})",
                  f"{pct(s.at_least_once)} ({s.at_least_once_units}/{s.units})",
                  pct(s.mean_check_fraction), pct(s.pooled_check_rate))
    return t


def seed_table(rows: Sequence[AttemptLike], k: int, systems: Sequence[str]) -> Any:
    """Per seed (over every scenario): accepted / attempts of each system."""
    t = _table("Per seed (all scenarios)", ["Seed", *systems])
    per = by_seed(rows, k=k)
    for seed in sorted({key[0] for key in per}):
        cells = []
        for system in systems:
            s = per.get((seed, system))
            cells.append("-" if s is None else
                         f"{s.accepted}/{s.attempts} {pct(s.pass_at_1, 0)}")
        t.add_row(str(seed), *cells)
    return t


def repeatability_table(rows: Sequence[AttemptLike], k: int) -> Any:
    """Per scenario and system: units by number of accepted repetitions (same seed)."""
    t = _table(f"Repeatability on one seed (units by accepted repetitions of {k})",
               ["Scenario", "System", "Units", *(f"{n}/{k}" for n in range(k + 1)),
                "All agree"], left=2)
    for (scenario, system), rs in group_by(rows, lambda r: (r.scenario, r.system)).items():
        rep = repeatability(rs, k=k)
        t.add_row(scenario, system, str(rep.units),
                  *(str(rep.distribution.get(n, 0)) for n in range(k + 1)),
                  f"{pct(rep.share)} ({rep.agreeing}/{rep.units})")
    return t


def variation_table(rows: Sequence[AttemptLike]) -> Any:
    """Per scenario and system: the acceptance rate per seed, its range and spread."""
    t = _table("Variation across seeds (acceptance rate of each seed's repetitions)",
               ["Scenario", "System", "Seeds", "Mean", "Lowest", "Highest", "SD"], left=2)
    for (scenario, system), rs in group_by(rows, lambda r: (r.scenario, r.system)).items():
        v = seed_variation(rs)
        t.add_row(scenario, system, str(len(v.rates)), pct(v.mean), pct(v.low),
                  pct(v.high), "-" if v.sd is None else f"{100 * v.sd:.1f} pts")
    return t


def _incomplete_banner(con: Any, c: Completeness) -> None:
    from rich.markup import escape

    con.print(f"[bold red]INCOMPLETE[/] {escape(c.message())}", highlight=False)
    con.print(f"[bold red]INCOMPLETE: {len(c.missing)} missing, {len(c.duplicates)} "
              f"duplicated, {len(c.unexpected)} outside the matrix; the figures below "
              "cover only the recorded attempts.[/]", highlight=False)


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


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Write ``path`` through a temporary file in its folder renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


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


# --- the commands ---------------------------------------------------------------------------

_RESULTS_DIR = click.option(
    "--results-dir", type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_RESULTS_DIR, show_default=True,
    help="Folder holding one folder per campaign label.")


def _fail(code: int, message: str) -> NoReturn:
    """Print ``error: MESSAGE`` on stderr and exit with ``code``."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _campaign(results_dir: Path, label: str) -> Campaign:
    try:
        return open_campaign(results_dir, label)
    except BadInput as e:
        _fail(2, str(e))


@main.command()
@click.argument("label")
@_RESULTS_DIR
@click.option("--export", "fmt", type=click.Choice(EXPORT_FORMATS), default=None,
              help="Also export the per-attempt rows and the per-system summary "
                   "(refused for an incomplete matrix).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Export file (csv/parquet: the summary goes beside it, NAME.systems.EXT).")
def report(label: str, results_dir: Path, fmt: str | None, out: Path | None) -> None:
    """Figures of a campaign: per system, per scenario, per seed; repeatability apart.

    Per system: attempts, accepted, pass@1 (accepted / all attempts, errors included),
    pass^k (units whose k repetitions were all accepted), at least once, mean
    within-attempt check fraction, pooled check rate, timeouts, crashes, grader and
    infrastructure errors, cost per accepted attempt, median and p90 duration (nearest
    rank). A unit is a (scenario, seed) pair. Exit 1 when the matrix is incomplete (the
    report still prints) or an export is refused, 2 on bad input.
    """
    if (fmt is None) != (out is None):
        _fail(2, "--export and --out go together (expected --export csv|json|parquet "
                 "--out PATH)")
    c = _campaign(results_dir, label)
    con = _console()
    m, k = c.matrix, c.matrix.k
    units = (f"{len(m.scenarios)} scenario(s) x {len(m.seeds)} seed(s)" if not m.scenario_seeds
             else f"{sum(len(m.seeds_of(x)) for x in m.scenarios)} (scenario, seed) unit(s)")
    con.print(f"[bold]campaign {label}[/]: {units} x {len(m.systems)} system(s) x {k} "
              f"repetition(s) = {m.size} attempts; {len(c.rows)} recorded", highlight=False)
    if not c.completeness.complete:
        _incomplete_banner(con, c.completeness)
    per_system = by_system(c.rows, k=k)
    systems = {n: per_system[n] for n in ordered(list(per_system), m.systems)}
    for table in system_tables(systems, k):
        con.print(table)
    con.print("pass@1 counts every attempt (timeouts, crashes, grader and infrastructure "
              f"errors are not accepted); pass^{k} counts a (scenario, seed) unit only when "
              f"all {k} repetitions were accepted; cost is unknown when any attempt's usage "
              "is.", highlight=False, style="dim")
    con.print(scenario_table(c.rows, k))
    con.print(repeatability_table(c.rows, k))
    con.print(variation_table(c.rows))
    con.print(seed_table(c.rows, k, list(systems)))
    if fmt is not None and out is not None:
        try:
            paths = export(c, fmt, out)
        except IncompleteMatrix as e:
            _fail(1, f"export refused: {e}")
        for p in paths:
            con.print(f"exported: {p}", highlight=False)
    if not c.completeness.complete:
        con.print(f"[bold red]INCOMPLETE[/]: {len(c.completeness.missing)} of "
                  f"{c.completeness.expected} attempts missing", highlight=False)
        sys.exit(1)


def print_comparison(con: Any, cmp: Comparison) -> None:
    """The comparison's figures and its two paired tables."""
    con.print(f"pass@1 {cmp.a}: {pct(cmp.pass_a, 2)} ({cmp.accepted_a}/{cmp.attempts})",
              highlight=False)
    con.print(f"pass@1 {cmp.b}: {pct(cmp.pass_b, 2)} ({cmp.accepted_b}/{cmp.attempts})",
              highlight=False)
    con.print(f"difference ({cmp.a} - {cmp.b}): {100 * cmp.difference:+.2f} points; "
              f"{100 * cmp.level:.0f}% interval {100 * cmp.low:+.2f} to {100 * cmp.high:+.2f}"
              f" points", highlight=False)
    con.print(f"paired bootstrap over {cmp.units} (scenario, seed) units with all their "
              f"repetitions: {cmp.resamples:,} resamples, seed {cmp.seed}", highlight=False)
    for title, t in ((f"Attempts paired by (scenario, seed, repetition): {cmp.attempts}",
                      cmp.attempts_table),
                     (f"Units, accepted in all repetitions: {cmp.units}", cmp.units_table)):
        tab = _table(title, ["", f"{cmp.b} accepted", f"{cmp.b} not accepted"])
        tab.add_row(f"{cmp.a} accepted", f"both: {t.both}", f"only {cmp.a}: {t.only_a}")
        tab.add_row(f"{cmp.a} not accepted", f"only {cmp.b}: {t.only_b}",
                    f"neither: {t.neither}")
        con.print(tab)


@main.command()
@click.argument("label")
@click.option("--a", "sys_a", required=True, help="System A (the difference is A - B).")
@click.option("--b", "sys_b", required=True, help="System B.")
@click.option("--resamples", type=click.IntRange(min=1), default=DEFAULT_RESAMPLES,
              show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=click.IntRange(min=0), default=DEFAULT_BOOTSTRAP_SEED,
              show_default=True, help="Seed of the bootstrap's random draws (printed).")
@_RESULTS_DIR
def compare(label: str, sys_a: str, sys_b: str, resamples: int, seed: int,
            results_dir: Path) -> None:
    """Difference in pass@1 of two systems, with a paired bootstrap interval.

    Resamples (scenario, seed) units with replacement, keeping every repetition of both
    systems for each drawn unit; prints the 95% percentile interval, the seed, and the
    both / only A / only B / neither tables over attempts and over units. Refused (exit
    1) when the two systems were not run on the same units and repetitions.
    """
    c = _campaign(results_dir, label)
    known = sorted({r.system for r in c.rows} | set(c.matrix.systems))
    for opt, name in (("--a", sys_a), ("--b", sys_b)):
        if name not in known:
            _fail(2, f"{opt}: unknown system {name!r} in campaign {label} (expected one of: "
                     f"{', '.join(known)})")
    if sys_a == sys_b:
        _fail(2, f"--a and --b both name {sys_a!r} (expected two different systems)")
    con = _console()
    if not c.completeness.complete:
        _incomplete_banner(con, c.completeness)
    try:
        cmp = paired_bootstrap(c.rows, sys_a, sys_b, resamples=resamples, seed=seed)
    except MatrixMismatch as e:
        _fail(1, str(e))
    except ValueError as e:
        _fail(1, f"cannot compare: {e}")
    print_comparison(con, cmp)
    if not c.completeness.complete:
        sys.exit(1)


# --- rescoring ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scorer:
    """A named version of the check definitions, for every scenario of a campaign.

    ``manifest_sha256`` is the sha256 of the canonical JSON of ``{scenario id: [check
    definitions]}`` over every scenario: the scorer's fingerprint in each receipt.
    """

    name: str
    source: str
    checks: dict[str, tuple[Any, ...]]
    manifest_sha256: str


def scorer_manifest(checks: dict[str, Sequence[Any]]) -> str:
    """sha256 of the canonical definitions of every scenario's checks (sorted by id)."""
    import orjson

    data = {sid: [spec.model_dump(mode="json") for spec in specs]
            for sid, specs in sorted(checks.items())}
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _targets(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """campaign.json's scenario entries by name (``{name, kind, source, sha256}``)."""
    m = data.get("matrix")
    items = m.get("scenarios", []) if isinstance(m, dict) else []
    return {str(t["name"]): t for t in items
            if isinstance(t, dict) and isinstance(t.get("name"), str)}


def _load_one(sid: str, target: dict[str, Any], scenario_dir: Path | None) -> Any:
    """The loaded scenario (or desk task) ``sid``, or ``None`` when found nowhere."""
    from scenarios.errors import ScenarioError
    from scenarios.loader import find_scenario, load_scenario

    kind = target.get("kind", "scenario")
    candidates: list[tuple[str, str | Path]] = []
    if scenario_dir is not None:
        candidates += [("scenario", scenario_dir / sid / "scenario.yaml"),
                       ("scenario", scenario_dir / f"{sid}.yaml"), ("desk", scenario_dir / sid)]
    if isinstance(target.get("source"), str):
        candidates.append((kind, target["source"]))
    candidates.append((kind, sid))
    for how, cand in candidates:
        if isinstance(cand, Path) and not cand.exists():
            continue
        try:
            if how == "desk":
                import desk.tasks

                loaded = desk.tasks.load_task(cand).loaded
            else:
                loaded = load_scenario(find_scenario(cand))
        except (ScenarioError, ImportError, ValueError, OSError):
            continue
        if loaded.scenario.id == sid:
            return loaded
    return None


def load_scenarios(ids: Sequence[str], *, campaign_data: dict[str, Any],
                   scenario_dir: Path | None) -> dict[str, Any]:
    """The loaded scenario (or desk task) of each id, looked up in order: ``scenario_dir``
    (``DIR/<id>/scenario.yaml``, ``DIR/<id>.yaml`` or a desk task folder ``DIR/<id>``),
    the source campaign.json records, the built-in library (or desk tasks) by name.
    :class:`BadInput` when one is found nowhere."""
    if scenario_dir is not None and not scenario_dir.is_dir():
        raise BadInput(f"--scenario-dir {scenario_dir}: not a folder (expected a folder "
                       "holding <scenario-id>/scenario.yaml or <scenario-id>.yaml)")
    targets = _targets(campaign_data)
    out = {sid: _load_one(sid, targets.get(sid, {}), scenario_dir) for sid in ids}
    missing = [sid for sid, loaded in out.items() if loaded is None]
    if missing:
        raise BadInput(f"scenario(s) {', '.join(missing)}: not found (looked in "
                       f"{'--scenario-dir, ' if scenario_dir else ''}the source campaign.json "
                       "records and the built-in library; expected --scenario-dir DIR "
                       "holding <scenario-id>/scenario.yaml)")
    return out


def changed_scenarios(loaded: dict[str, Any], campaign_data: dict[str, Any]) -> list[str]:
    """Scenarios whose files differ from those the campaign ran (recorded sha256)."""
    targets = _targets(campaign_data)
    return sorted(sid for sid, ls in loaded.items()
                  if targets.get(sid, {}).get("sha256") not in (None, ls.sha256))


def resolve_scorer(name: str, loaded: dict[str, Any]) -> Scorer:
    """The scorer ``name``: ``current`` (each scenario's checks as loaded now) or a folder
    holding ``<scenario-id>.yaml`` files, each with a ``checks:`` list."""
    from checks.registry import CheckSpecError, parse_checks
    from scenarios.loader import parse_yaml

    if name == "current":
        checks = {sid: tuple(ls.checks) for sid, ls in loaded.items()}
        return Scorer("current", "current scenario definitions", checks,
                      scorer_manifest(checks))
    folder = Path(name)
    if not folder.is_dir():
        raise BadInput(f"--scorer {name!r}: unknown scorer (expected 'current' or a folder "
                       "holding <scenario-id>.yaml files with a checks: list)")
    checks = {}
    for sid in loaded:
        path = folder / f"{sid}.yaml"
        if not path.is_file():
            raise BadInput(f"--scorer {name}: no {path} (expected one <scenario-id>.yaml "
                           f"with a checks: list for each scenario of the campaign: "
                           f"{', '.join(sorted(loaded))})")
        try:
            data = parse_yaml(path.read_text(encoding="utf-8"))
        except Exception as e:  # yaml errors, unreadable files
            raise BadInput(f"--scorer {name}: {path}: unreadable ({e})") from None
        if not isinstance(data, dict) or "checks" not in data:
            raise BadInput(f"--scorer {name}: {path}: expected a mapping with a checks: list")
        try:
            checks[sid] = tuple(parse_checks(data["checks"], where=f"{path.name}: checks"))
        except CheckSpecError as e:
            raise BadInput(f"--scorer {name}: {e}") from None
    return Scorer(folder.resolve().name, str(folder.resolve()), checks,
                  scorer_manifest(checks))


@dataclass(frozen=True)
class Rescored:
    """One attempt rescored: its receipt, whether it was new, and what no longer matches."""

    row: Any
    receipt: Any
    written: bool
    outputs_differ: bool
    """The evaluated outputs or final log hash differ from what the ledger recorded."""

    @property
    def new_status(self) -> str | None:
        """The new verdict's status (``None``: the attempt could not be graded)."""
        status = self.receipt.verdict.get("status")
        return None if status is None else str(status)


def rescore_attempt(campaign: Campaign, row: Any, loaded: Any, scorer: Scorer) -> Any:
    """A receipt for ``row`` graded again with ``scorer`` (runs nothing, writes nothing).

    Grades the attempt folder's verified ``books.db`` and final workspace with the
    scorer's checks for its scenario. A folder that cannot be graded (no summary or
    store, a log that does not verify) gets a receipt whose verdict has status ``None``
    and the reason under ``error``. The original ``verdict.json`` is only hashed.
    """
    from erp.errors import ErpError, StoreError
    from runs.grading import VERDICT_FILE, GradingError, grade_folder
    from runs.results import Receipt

    folder = campaign.attempt_dir(row)
    original = folder / VERDICT_FILE
    original_sha = (hashlib.sha256(original.read_bytes()).hexdigest()
                    if original.is_file() else None)
    specs = scorer.checks[row.scenario]
    try:
        verdict = grade_folder(folder, replace(loaded, checks=tuple(specs)), write=False)
        body = verdict.to_json()
        outputs = dict(verdict.outputs)
    except (GradingError, StoreError, ErpError, OSError) as e:  # IntegrityError is an ErpError
        body = {"status": None, "accepted": False,
                "error": f"not gradable: {type(e).__name__}: {e}"}
        outputs = {}
    return Receipt.create(tuple(row.key), scorer_name=scorer.name,
                          scorer_definitions_sha256=scorer.manifest_sha256, verdict=body,
                          original_verdict_status=row.verdict_status,
                          original_verdict_sha256=original_sha, outputs=outputs)


def rescore_campaign(campaign: Campaign, scorer: Scorer, loaded: dict[str, Any], *,
                     progress: Callable[[int], None] | None = None) -> list[Rescored]:
    """Rescore every attempt of the campaign and store one receipt each (idempotent)."""
    from runs.results import ResultsLedger

    out: list[Rescored] = []
    with ResultsLedger.open(campaign.ledger_path) as ledger:
        for n, row in enumerate(campaign.rows, 1):
            receipt = rescore_attempt(campaign, row, loaded[row.scenario], scorer)
            written = ledger.write_receipt(receipt)
            differ = receipt.verdict.get("status") is not None and (
                dict(receipt.outputs) != dict(row.outputs or {})
                or receipt.verdict.get("final_log_hash") != row.final_hash)
            out.append(Rescored(row, receipt, written, differ))
            if progress is not None:
                progress(n)
    return out


LABELS = ("accepted", "rejected", "ungraded", "no verdict")


def transition_table(results: Sequence[Rescored], systems: Sequence[str] = ()) -> Any:
    """Per system (in ``systems`` order first), original verdict (rows) against new
    verdict (columns)."""
    t = _table("Transitions (original -> new verdict)",
               ["System", "Original", *(f"-> {x}" for x in LABELS)], left=2)
    table = transitions((r.row.system, r.row.verdict_status, r.new_status) for r in results)
    for system in ordered(list(table), systems):
        counts = table[system]
        for old in LABELS:
            if any(counts[old, new] for new in LABELS):
                t.add_row(system, old, *(str(counts[old, new]) for new in LABELS))
    return t


def new_pass_table(results: Sequence[Rescored], systems: Sequence[str] = ()) -> Any:
    """Per system: pass@1 under the original verdicts and under the new scorer."""
    t = _table("pass@1, original and rescored (all attempts in the denominator)",
               ["System", "Attempts", "Original accepted", "Original pass@1",
                "New accepted", "New pass@1", "Change"])
    groups = group_by(results, lambda r: r.row.system)
    for system in ordered(list(groups), systems):
        rs = groups[system]
        n = len(rs)
        old = sum(is_accepted(r.row) for r in rs)
        new = sum(r.new_status == "accepted" for r in rs)
        t.add_row(system, str(n), str(old), pct(old / n, 2), str(new), pct(new / n, 2),
                  f"{100 * (new - old) / n:+.2f} pts")
    return t


@main.command()
@click.argument("label")
@click.option("--scorer", "scorer_name", required=True,
              help="The check definitions to apply: 'current' (each scenario's checks as "
                   "they are now) or a folder of <scenario-id>.yaml files with a checks: "
                   "list.")
@click.option("--scenario-dir", type=click.Path(file_okay=False, path_type=Path),
              default=None,
              help="Where to find the campaign's scenarios (<id>/scenario.yaml or <id>.yaml)"
                   " when they are not where campaign.json says, nor in the library.")
@_RESULTS_DIR
def rescore(label: str, scorer_name: str, scenario_dir: Path | None,
            results_dir: Path) -> None:
    """Grade every retained attempt again with a named version of the check definitions.

    Runs no agent and changes no attempt: each attempt folder's verified books.db and
    final workspace are evaluated again, and one receipt per attempt binds the new
    verdict to the output hashes, the scorer's manifest hash and the original verdict
    (stored in the ledger's receipts; the original rows and verdict.json files stay as
    they are). Running it again with the same scorer adds nothing. Prints the
    transitions (accepted -> rejected, ungraded -> accepted, ...) and the new pass@1.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    c = _campaign(results_dir, label)
    con = _console()
    ids = sorted({r.scenario for r in c.rows})
    try:
        loaded = load_scenarios(ids, campaign_data=c.data, scenario_dir=scenario_dir)
        scorer = resolve_scorer(scorer_name, loaded)
    except BadInput as e:
        _fail(2, str(e))
    if not c.completeness.complete:
        _incomplete_banner(con, c.completeness)
    con.print(f"scorer {scorer.name} ({scorer.source}): manifest sha256 "
              f"{scorer.manifest_sha256}", highlight=False)
    changed = changed_scenarios(loaded, c.data)
    if changed:
        con.print(f"note: {', '.join(changed)} changed since the campaign ran (sha256 "
                  "differs); the attempts are graded in the context of the files as they "
                  "are now", highlight=False)
    with Progress(TextColumn("rescoring"), BarColumn(), MofNCompleteColumn(), console=con,
                  transient=True) as bar:
        task = bar.add_task("rescore", total=len(c.rows))
        results = rescore_campaign(c, scorer, loaded,
                                   progress=lambda n: bar.update(task, completed=n))
    written = sum(r.written for r in results)
    con.print(f"receipts: {written} written, {len(results) - written} already stored "
              "(same scorer, same outputs)", highlight=False)
    con.print(transition_table(results, c.matrix.systems))
    changes = transitions((r.row.system, r.row.verdict_status, r.new_status)
                          for r in results)
    for system in ordered(list(changes), c.matrix.systems):
        counts = changes[system]
        moved = [f"{old} -> {new}: {n}" for (old, new), n in sorted(counts.items())
                 if old != new and n]
        con.print(f"{system}: " + ("; ".join(moved) if moved else "no verdict changed"),
                  highlight=False)
    con.print(new_pass_table(results, c.matrix.systems))
    ungradable = [r for r in results if r.new_status is None]
    if ungradable:
        first = ungradable[0]
        con.print(f"{len(ungradable)} attempt(s) could not be graded ({verdict_label(None)}),"
                  f" e.g. {' '.join(map(str, first.row.key))}: "
                  f"{first.receipt.verdict.get('error')}", highlight=False)
    differ = sum(r.outputs_differ for r in results)
    if differ:
        con.print(f"[bold yellow]warning[/]: {differ} attempt(s)' retained outputs or log "
                  "differ from what the ledger recorded when they ran", highlight=False)
    if not c.completeness.complete:
        sys.exit(1)
