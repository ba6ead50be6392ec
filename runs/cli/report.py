"""``erpsim report``, ``erpsim compare`` and ``erpsim rescore``: reading a campaign's results.

A campaign lives in ``RESULTS_DIR/LABEL/``: ``campaign.json`` (its matrix) and
``results.db`` (the results ledger, :mod:`runs.campaigns.ledger`). The figures come from
:mod:`runs.campaigns.metrics`; reading the folder, exporting and rescoring are
:mod:`runs.campaigns.reading`, :mod:`~runs.campaigns.export` and
:mod:`~runs.campaigns.rescoring`. This module parses the options and prints the tables.

Exit codes: 0 success; 1 an incomplete matrix (the report still prints, saying so) or
a refusal (an export of an incomplete matrix, a comparison of systems whose matrices
differ); 2 bad input (an unknown label, system or scorer, a bad option).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from runs.campaigns.export import EXPORT_FORMATS, export, ordered
from runs.campaigns.metrics import (
    DEFAULT_BOOTSTRAP_SEED,
    DEFAULT_RESAMPLES,
    AttemptLike,
    Comparison,
    Completeness,
    IncompleteMatrix,
    Summary,
    UnpairedSystems,
    by_scenario,
    by_seed,
    by_system,
    group_by,
    is_accepted,
    paired_bootstrap,
    repeatability,
    seed_variation,
    transitions,
    verdict_label,
)
from runs.campaigns.reading import DEFAULT_RESULTS_DIR, Campaign, open_campaign
from runs.campaigns.rescoring import (
    Rescored,
    changed_scenarios,
    load_scenarios,
    rescore_campaign,
    resolve_scorer,
)
from runs.cli.common import EXIT_FAILED, fail
from runs.errors import BadInput

LABELS = ("accepted", "rejected", "ungraded", "no verdict")
"""A rescored attempt's verdict, before and after, in the transition table's order."""


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
    from runs.cli.display import console

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


# --- the commands ---------------------------------------------------------------------------

_RESULTS_DIR = click.option(
    "--results-dir", type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_RESULTS_DIR, show_default=True,
    help="Folder holding one folder per campaign label.")


def _campaign(results_dir: Path, label: str) -> Campaign:
    try:
        return open_campaign(results_dir, label)
    except BadInput as e:
        fail(e)


@click.command()
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
        fail("--export and --out go together (expected --export csv|json|parquet "
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
            fail(e, prefix="export refused: ")
        for p in paths:
            con.print(f"exported: {p}", highlight=False)
    if not c.completeness.complete:
        con.print(f"[bold red]INCOMPLETE[/]: {len(c.completeness.missing)} of "
                  f"{c.completeness.expected} attempts missing", highlight=False)
        sys.exit(EXIT_FAILED)


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


@click.command()
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
            fail(f"{opt}: unknown system {name!r} in campaign {label} (expected one of: "
                     f"{', '.join(known)})")
    if sys_a == sys_b:
        fail(f"--a and --b both name {sys_a!r} (expected two different systems)")
    con = _console()
    if not c.completeness.complete:
        _incomplete_banner(con, c.completeness)
    try:
        cmp = paired_bootstrap(c.rows, sys_a, sys_b, resamples=resamples, seed=seed)
    except UnpairedSystems as e:
        fail(e)
    except ValueError as e:
        fail(e, code=EXIT_FAILED, prefix="cannot compare: ")
    print_comparison(con, cmp)
    if not c.completeness.complete:
        sys.exit(EXIT_FAILED)


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


@click.command()
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
        fail(e)
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
        sys.exit(EXIT_FAILED)
