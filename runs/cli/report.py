"""``erpsim report``, ``erpsim compare`` and ``erpsim rescore``: reading a campaign's results.

A campaign lives in ``RESULTS_DIR/LABEL/``: ``campaign.json`` (its matrix) and
``results.db`` (the results ledger, :mod:`runs.campaigns.ledger`). The figures come from
:mod:`runs.campaigns.metrics`; reading the folder, exporting and rescoring are
:mod:`runs.campaigns.reading`, :mod:`~runs.campaigns.export` and
:mod:`~runs.campaigns.rescoring`. This module parses the options and prints the tables.

``--scorer NAME`` reads the figures under a stored rescoring (the newest receipt of that
scorer for each attempt) instead of the original verdicts; ``--weights`` sets how the
categories weigh in the aggregate (``task-share``, ``equal`` or a YAML file).

Exit codes: 0 success; 1 an incomplete matrix (the report still prints, saying so) or
a refusal (an export of an incomplete matrix, a comparison of systems whose matrices
differ, a scorer without a receipt for every attempt; ``rescore``: an attempt whose books
do not verify); 2 bad input (an unknown label, system, scorer or weights file, a bad
option); 3 (``rescore``) a finished attempt that could not be graded.
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
    MEASURES,
    AttemptLike,
    Comparison,
    Completeness,
    IncompleteMatrix,
    Resources,
    Summary,
    UnpairedSystems,
    WeightedGap,
    by_category,
    by_scenario,
    by_seed,
    by_system,
    category_gap,
    category_weights,
    group_by,
    paired_bootstrap,
    repeatability,
    repetition_structure,
    resources,
    scorer_gaps,
    seed_variation,
    transitions,
    verdict_label,
    weighted_pass,
)
from runs.campaigns.reading import (
    DEFAULT_RESULTS_DIR,
    ORIGINAL,
    Campaign,
    attempt_usage,
    categories,
    latest_receipts,
    monthly_accuracy,
    needs_receipt,
    open_campaign,
    prices,
    read_weights,
    scorer_manifests,
    scorer_name,
    stored_scorers,
    tiers,
    with_scorer,
)
from runs.campaigns.rescoring import (
    Rescored,
    changed_scenarios,
    load_scenarios,
    rescore_campaign,
    resolve_scorer,
)
from runs.cli.common import EXIT_FAILED, EXIT_GRADER_ERROR, OUT_FILE, SEED, cannot_write, fail
from runs.errors import BadInput, Refused

LABELS = ("accepted", "rejected", "ungraded", "no verdict")
"""A rescored attempt's verdict, before and after, in the transition table's order."""


# --- formatting -------------------------------------------------------------------------------

def pct(x: float | None, digits: int = 1) -> str:
    """A rate as a percentage, ``-`` when undefined."""
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def money(x: float | None) -> str:
    """A cost in dollars, ``unknown`` when unknown (never 0 for unknown)."""
    return "unknown" if x is None else f"${x:.4f}"


def per_accepted(x: float | None, accepted: int) -> str:
    """A cost per accepted attempt: ``n/a (0 accepted)`` when nothing was accepted."""
    return "n/a (0 accepted)" if accepted == 0 else money(x)


def points(x: float | None) -> str:
    """A difference of two rates in percentage points, signed; ``-`` when undefined."""
    return "-" if x is None else f"{100 * x:+.2f} pts"


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
                    per_accepted(s.cost_per_accepted, s.accepted),
                    seconds(s.median_duration_s),
                    seconds(s.p90_duration_s))
    return [acc, res]


def scenario_table(rows: Sequence[AttemptLike], k: int,
                   tier_of: dict[str, str] | None = None) -> Any:
    """Per scenario and system: acceptance, repeated acceptance and check completion
    (a scenario swept at a tier is labelled with it: ``month-end-close (tier hard)``)."""
    t = _table("Per scenario", ["Scenario", "System", "Attempts", "Accepted", "pass@1",
                                f"pass^{k}", "At least once", "Mean check fraction",
                                "Pooled check rate"], left=2)
    tier_of = tier_of or {}
    for (scenario, system), s in by_scenario(rows, k=k).items():
        name = f"{scenario} (tier {tier_of[scenario]})" if scenario in tier_of else scenario
        t.add_row(name, system, str(s.attempts), str(s.accepted), pct(s.pass_at_1),
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


def category_table(rows: Sequence[AttemptLike], cats: dict[str, str | None], k: int,
                   systems: Sequence[str], weights: dict[str, float], weighting: str) -> Any:
    """Per category and system: acceptance; then each system's category-weighted pass@1."""
    t = _table(f"Per category (aggregate weights: {weighting})",
               ["Category", "System", "Weight", "Units", "Attempts", "Accepted", "pass@1",
                f"pass^{k}", "Mean check fraction"], left=2)
    per = by_category(rows, cats, k=k)
    rank = {name: n for n, name in enumerate(systems)}
    for (category, system), s in sorted(per.items(), key=lambda kv: (
            kv[0][0], rank.get(kv[0][1], len(rank)), kv[0][1])):
        t.add_row(category, system, f"{weights.get(category, 0):.3f}", str(s.units),
                  str(s.attempts), str(s.accepted), pct(s.pass_at_1, 2),
                  f"{pct(s.pass_hat_k)} ({s.all_k_units}/{s.units})",
                  pct(s.mean_check_fraction, 2))
    groups = group_by(rows, lambda r: r.system)
    for system in ordered(list(groups), systems):
        t.add_row("(weighted)", system, "1.000", "", "", "",
                  pct(weighted_pass(groups[system], cats, weights), 2), "", "")
    return t


def repetition_table(rows: Sequence[AttemptLike], k: int, systems: Sequence[str]) -> Any:
    """Per system: units by accepted repetitions over all units, acceptance per
    repetition, one-check failures and check completion minus acceptance."""
    t = _table(f"Repetition structure (units by accepted repetitions of {k})",
               ["System", *(f"{n}/{k}" for n in range(k + 1)),
                *(f"rep {n}" for n in range(1, k + 1)), "Failures",
                "One failed check", "Completion - acceptance"])
    groups = group_by(rows, lambda r: r.system)
    for system in ordered(list(groups), systems):
        rs = repetition_structure(groups[system], k=k)
        reps = []
        for n in range(1, k + 1):
            acc, att = rs.per_repetition.get(n, (0, 0))
            reps.append(f"{acc}/{att} {pct(acc / att if att else None)}")
        t.add_row(system, *(str(rs.distribution.get(n, 0)) for n in range(k + 1)), *reps,
                  str(rs.failures), f"{rs.one_check_failures}/{rs.failures}",
                  points(rs.completion_minus_acceptance))
    return t


def monthly_table(series: dict[tuple[str, str], dict[str, tuple[int, int]]]) -> Any:
    """Per scenario and system whose attempts span two months or more: each month's share
    of the per-date checks' results that passed (the accuracy curve of a year of closes);
    ``None`` when no scenario spans two months."""
    long = {k: v for k, v in series.items() if len(v) >= 2}
    if not long:
        return None
    months = sorted({m for v in long.values() for m in v})
    t = _table("Per month: accuracy of the per-date checks (passed / results, pooled over "
               "attempts)", ["Scenario", "System", *months], left=2)
    for (scenario, system), v in sorted(long.items()):
        t.add_row(scenario, system, *(pct(v[m][0] / v[m][1], 0) if m in v else "-"
                                      for m in months))
    return t


def _tokens(n: int | None) -> str:
    """A token count with thousands separators (``-`` when unknown)."""
    return "-" if n is None else f"{n:,}"


def resources_table(per_system: dict[str, Resources]) -> Any:
    """Per system: tokens by class, the token-weighted cache fraction and the cost."""
    t = _table("Per system: tokens and cost (tokens of the attempts whose usage is known)",
               ["System", "Usage known", "Input", "Uncached", "Cached", "Cache writes",
                "Output", "Reasoning", "Cache fraction", "Cost (known)", "Cost source",
                "Cost / accepted", "Strict cost / accepted"])
    for name, r in per_system.items():
        cpa = per_accepted(r.cost_per_accepted, r.accepted)
        if r.accepted and r.unknown_usage:
            cpa += f" ({r.unknown_usage}/{r.attempts} unknown)"
        t.add_row(name, f"{r.usage_known}/{r.attempts}", _tokens(r.input),
                  _tokens(r.uncached), _tokens(r.cached), _tokens(r.cache_write), _tokens(r.output),
                  _tokens(r.reasoning), pct(r.cache_fraction), money(r.known_cost_usd),
                  r.cost_source, cpa, per_accepted(r.strict_cost_per_accepted, r.accepted))
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


_SCORER = click.option(
    "--scorer", "scorer", default=ORIGINAL, show_default=True,
    help="Whose verdicts: 'original' (those recorded when the attempts ran) or a "
         "scorer stored by `erpsim rescore` (its name, or the folder given to it).")

_WEIGHTS = click.option(
    "--weights", "weights_text", default="task-share", show_default=True,
    help="How categories weigh in the aggregate: task-share (each category's share of "
         "the units: the plain pass@1), equal (each category alike), or a YAML file of "
         "'category: weight' (normalized to sum to one).")


def _scored(c: Campaign, scorer: str) -> tuple[Campaign, str]:
    """The campaign under ``scorer`` and a line saying whose verdicts these are."""
    try:
        name = scorer_name(c, scorer)
        scored = with_scorer(c, name)
    except (BadInput, Refused) as e:
        fail(e)
    frozen = c.data.get("preregistration")
    if name == ORIGINAL:
        if isinstance(frozen, dict):
            return scored, ("verdicts: original (as recorded when the attempts ran); "
                            f"pre-registered scorer {frozen.get('manifest_sha256')} "
                            f"(frozen as {frozen.get('name')!r})")
        return scored, ("verdicts: original (as recorded when the attempts ran); retrospective "
                        "scorer (no frozen manifest: `erpsim freeze` before `sweep --frozen`)")
    manifests = scorer_manifests(c, name)
    note = (f"manifest sha256 {manifests[0]}" if len(manifests) == 1 else
            f"{len(manifests)} manifests (the scorer changed between rescorings; the newest "
            "receipt of each attempt counts)")
    if isinstance(frozen, dict) and manifests == [frozen.get("scorer_sha256")]:
        kind = f"pre-registered scorer {frozen.get('manifest_sha256')}"
    else:
        kind = "retrospective scorer"
    return scored, f"verdicts: scorer {name} (stored receipts; {note}); {kind}"


def _weights(text: str) -> str | dict[str, float]:
    try:
        return read_weights(text)
    except BadInput as e:
        fail(e)


def _weights_for(rows: Sequence[AttemptLike], cats: dict[str, str | None],
                 weighting: str | dict[str, float], text: str) -> dict[str, float]:
    try:
        return category_weights(rows, cats, weighting)
    except ValueError as e:
        fail(f"--weights {text}: {e}")


@click.command()
@click.argument("label")
@_RESULTS_DIR
@click.option("--export", "fmt", type=click.Choice(EXPORT_FORMATS), default=None,
              help="Also export the per-attempt rows and the per-system summary "
                   "(refused for an incomplete matrix).")
@click.option("--out", type=OUT_FILE, default=None,
              help="Export file (csv/parquet: the summary goes beside it, NAME.systems.EXT, "
                   "and the check results, NAME.checks.EXT).")
@_SCORER
@_WEIGHTS
def report(label: str, results_dir: Path, fmt: str | None, out: Path | None, scorer: str,
           weights_text: str) -> None:
    """Figures of a campaign: per system, category, scenario and seed; repetitions apart.

    Per system: attempts, accepted, pass@1 (accepted / all attempts, errors included),
    pass^k (units whose k repetitions were all accepted), at least once, mean
    within-attempt check fraction, pooled check rate, timeouts, crashes, grader and
    infrastructure errors, cost per accepted attempt, median and p90 duration (nearest
    rank); tokens by class, the token-weighted cache fraction and the cost at the
    system's price table (price: in the systems file). Per category, with the weighted
    aggregate (--weights). The repetition structure: units with 0..k accepted, acceptance
    per repetition, failures with exactly one failed required check, check completion
    minus acceptance. A unit is a (scenario, seed) pair. --scorer NAME gives every figure
    under a stored rescoring. Exit 1 when the matrix is incomplete (the report still
    prints), an export is refused or the scorer lacks receipts, 2 on bad input.
    """
    if (fmt is None) != (out is None):
        fail("--export and --out go together (expected --export csv|json|parquet "
                 "--out PATH)")
    original = _campaign(results_dir, label)
    weighting = _weights(weights_text)
    c, whose = _scored(original, scorer)
    con = _console()
    m, k = c.matrix, c.matrix.k
    units = (f"{len(m.scenarios)} scenario(s) x {len(m.seeds)} seed(s)" if not m.scenario_seeds
             else f"{sum(len(m.seeds_of(x)) for x in m.scenarios)} (scenario, seed) unit(s)")
    con.print(f"[bold]campaign {label}[/]: {units} x {len(m.systems)} system(s) x {k} "
              f"repetition(s) = {m.size} attempts; {len(c.rows)} recorded", highlight=False)
    con.print(whose, highlight=False)
    tier_of = tiers(c)
    if tier_of:
        at = sorted(set(tier_of.values()))
        con.print(f"difficulty tier: {', '.join(at)} (erpsim sweep --tier; the scenario rows "
                  "say each one's)", highlight=False)
    others = [n for n in stored_scorers(original) if n != scorer_name(original, scorer)]
    if others:
        con.print(f"stored rescorings: {', '.join(others)} (--scorer NAME reads them)",
                  highlight=False, style="dim")
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
    usage = attempt_usage(c)
    try:
        price = prices(c)
    except BadInput as e:
        fail(e)
    groups = group_by(c.rows, lambda r: r.system)
    con.print(resources_table({n: resources(groups[n], usage, price.get(n))
                               for n in systems if n in groups}))
    cats = categories(c)
    weights = _weights_for(c.rows, cats, weighting, weights_text)
    con.print(category_table(c.rows, cats, k, list(systems), weights,
                             weights_text if isinstance(weighting, str) else
                             f"file {weights_text}"))
    con.print(repetition_table(c.rows, k, list(systems)))
    con.print(scenario_table(c.rows, k, tier_of))
    con.print(repeatability_table(c.rows, k))
    con.print(variation_table(c.rows))
    con.print(seed_table(c.rows, k, list(systems)))
    monthly = monthly_table(monthly_accuracy(c))
    if monthly is not None:
        con.print(monthly)
    if fmt is not None and out is not None:
        try:
            paths = export(original, fmt, out, scorer=scorer_name(original, scorer))
        except IncompleteMatrix as e:
            fail(e, prefix="export refused: ")
        except OSError as e:
            cannot_write("--out", out, e)
        for p in paths:
            con.print(f"exported: {p}", highlight=False)
    if not c.completeness.complete:
        con.print(f"[bold red]INCOMPLETE[/]: {len(c.completeness.missing)} of "
                  f"{c.completeness.expected} attempts missing", highlight=False)
        sys.exit(EXIT_FAILED)


MIN_UNITS = 20
"""Fewer (scenario, seed) units than this and ``compare`` warns that the interval is
unreliable."""


def print_comparison(con: Any, cmp: Comparison) -> None:
    """The comparison's figures and its two paired tables."""
    if cmp.measure == "acceptance":
        con.print(f"pass@1 {cmp.a}: {pct(cmp.pass_a, 2)} ({cmp.accepted_a}/{cmp.attempts})",
                  highlight=False)
        con.print(f"pass@1 {cmp.b}: {pct(cmp.pass_b, 2)} ({cmp.accepted_b}/{cmp.attempts})",
                  highlight=False)
    else:
        for name, value in ((cmp.a, cmp.pass_a), (cmp.b, cmp.pass_b)):
            con.print(f"mean check fraction {name}: {pct(value, 2)} (over {cmp.attempts} "
                      "attempts, each weighing the same)", highlight=False)
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
@click.option("--resamples", type=click.IntRange(1, 1_000_000), default=DEFAULT_RESAMPLES,
              show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=SEED, default=DEFAULT_BOOTSTRAP_SEED,
              show_default=True, help="Seed of the bootstrap's random draws (printed).")
@_RESULTS_DIR
@_SCORER
@click.option("--measure", type=click.Choice(MEASURES), default="acceptance",
              show_default=True,
              help="What to compare: acceptance (pass@1) or check-fraction (the mean "
                   "within-attempt fraction of required checks passed).")
@_WEIGHTS
def compare(label: str, sys_a: str, sys_b: str, resamples: int, seed: int,
            results_dir: Path, scorer: str, measure: str, weights_text: str) -> None:
    """Difference in pass@1 (or mean check fraction) of two systems, with a paired
    bootstrap interval, per category and under each stored scorer.

    Resamples (scenario, seed) units with replacement, keeping every repetition of both
    systems for each drawn unit; prints the 95% percentile interval, the seed, and the
    both / only A / only B / neither tables over attempts and over units; warns with
    fewer than 20 units. Then the gap per category (each category's contribution
    w_c (P_A - P_B) and its share of the weighted gap, under --weights; the gap under
    task-share and equal weights), and the gap under the original verdicts and every
    stored rescoring with its change in points. Refused (exit 1) when the two systems
    were not run on the same units and repetitions.
    """
    original = _campaign(results_dir, label)
    weighting = _weights(weights_text)
    c, whose = _scored(original, scorer)
    known = sorted({r.system for r in c.rows} | set(c.matrix.systems))
    for opt, name in (("--a", sys_a), ("--b", sys_b)):
        if name not in known:
            fail(f"{opt}: unknown system {name!r} in campaign {label} (expected one of: "
                     f"{', '.join(known)})")
    if sys_a == sys_b:
        fail(f"--a and --b both name {sys_a!r} (expected two different systems)")
    con = _console()
    con.print(whose, highlight=False)
    if not c.completeness.complete:
        _incomplete_banner(con, c.completeness)
    try:
        cmp = paired_bootstrap(c.rows, sys_a, sys_b, resamples=resamples, seed=seed,
                               measure=measure)
    except UnpairedSystems as e:
        fail(e)
    except ValueError as e:
        fail(e, code=EXIT_FAILED, prefix="cannot compare: ")
    if cmp.units < MIN_UNITS:
        con.print(f"[bold yellow]warning[/]: only {cmp.units} (scenario, seed) unit(s) "
                  f"(fewer than {MIN_UNITS}): the bootstrap interval says little; run more "
                  "seeds or scenarios", highlight=False)
    print_comparison(con, cmp)
    cats = categories(c)
    pair = [r for r in c.rows if r.system in (sys_a, sys_b)]
    _weights_for(pair, cats, weighting, weights_text)
    try:
        gaps = {name: category_gap(pair, cats, sys_a, sys_b, w)
                for name, w in (("task-share", "task-share"), ("equal", "equal"))}
        chosen = (gaps[weights_text] if isinstance(weighting, str) else
                  category_gap(pair, cats, sys_a, sys_b, weighting,
                               name=f"file {weights_text}"))
    except ValueError as e:
        fail(e, code=EXIT_FAILED, prefix="cannot compare per category: ")
    con.print(category_gap_table(chosen))
    con.print("gap over categories: " + "; ".join(
        f"{g.weighting} weights {points(g.gap)}" for g in
        [*gaps.values(), *([chosen] if not isinstance(weighting, str) else [])]),
        highlight=False)
    con.print(scorer_gap_table(original, sys_a, sys_b))
    if not c.completeness.complete:
        sys.exit(EXIT_FAILED)


def category_gap_table(gap: WeightedGap) -> Any:
    """Per category: both systems' acceptance, the difference, the weight, the
    contribution to the weighted gap and its share."""
    t = _table(f"Gap per category ({gap.a} - {gap.b}, weights: {gap.weighting})",
               ["Category", "Units", gap.a, gap.b, "Difference", "Extra accepted",
                "Weight", "Contribution", "Share of gap"])
    for g in gap.categories:
        t.add_row(g.category, str(g.units),
                  f"{g.accepted_a}/{g.attempts_a} {pct(g.pass_a, 2)}",
                  f"{g.accepted_b}/{g.attempts_b} {pct(g.pass_b, 2)}", points(g.difference),
                  f"{g.extra_accepted:+d}", f"{g.weight:.3f}", points(g.contribution),
                  pct(g.share))
    t.add_row("(weighted gap)", "", "", "", "", "", "1.000", points(gap.gap),
              "100.0%" if abs(gap.gap) > 1e-12 else "-")
    return t


def scorer_gap_table(c: Campaign, a: str, b: str) -> Any:
    """The pass@1 gap A - B under the original verdicts and each stored rescoring with a
    receipt for every attempt, and its change from the original gap in points."""
    rows_by_scorer: dict[str, Sequence[AttemptLike]] = {ORIGINAL: c.rows}
    skipped: list[str] = []
    for name in stored_scorers(c):
        try:
            rows_by_scorer[name] = with_scorer(c, name).rows
        except Refused:
            skipped.append(name)
    t = _table(f"Gap under each scorer ({a} - {b}, pass@1)",
               ["Scorer", f"{a} accepted", f"{b} accepted", "Gap", "Change from original"])
    for g in scorer_gaps(rows_by_scorer, a, b):
        t.add_row(g.scorer, f"{g.accepted_a}/{g.attempts_a}", f"{g.accepted_b}/{g.attempts_b}",
                  points(g.gap), "-" if g.change is None else points(g.change))
    for name in skipped:
        t.add_row(name, "", "", "(receipts missing for some attempts)", "")
    return t


Change = tuple[str, str | None, str | None]
"""``(system, original verdict status, new verdict status)`` of one rescored attempt."""


def changes_of(results: Sequence[Rescored]) -> list[Change]:
    """The verdict change of each attempt just rescored."""
    return [(r.row.system, r.row.verdict_status, r.new_status) for r in results]


def transition_table(changes: Sequence[Change], systems: Sequence[str] = (), *,
                     title: str = "Transitions (original -> new verdict)") -> Any:
    """Per system (in ``systems`` order first), original verdict (rows) against new
    verdict (columns)."""
    t = _table(title, ["System", "Original", *(f"-> {x}" for x in LABELS)], left=2)
    table = transitions(changes)
    for system in ordered(list(table), systems):
        counts = table[system]
        for old in LABELS:
            if any(counts[old, new] for new in LABELS):
                t.add_row(system, old, *(str(counts[old, new]) for new in LABELS))
    return t


def new_pass_table(changes: Sequence[Change], systems: Sequence[str] = ()) -> Any:
    """Per system: pass@1 under the original verdicts and under the new scorer."""
    t = _table("pass@1, original and rescored (all attempts in the denominator)",
               ["System", "Attempts", "Original accepted", "Original pass@1",
                "New accepted", "New pass@1", "Change"])
    groups = group_by(changes, lambda ch: ch[0])
    for system in ordered(list(groups), systems):
        rs = groups[system]
        n = len(rs)
        old = sum(ch[1] == "accepted" for ch in rs)
        new = sum(ch[2] == "accepted" for ch in rs)
        t.add_row(system, str(n), str(old), pct(old / n, 2), str(new), pct(new / n, 2),
                  f"{100 * (new - old) / n:+.2f} pts")
    return t


def print_changes(con: Any, changes: Sequence[Change], systems: Sequence[str]) -> None:
    """The transition table, one line per system naming what moved, and pass@1 before
    and after."""
    con.print(transition_table(changes, systems))
    table = transitions(changes)
    for system in ordered(list(table), systems):
        counts = table[system]
        moved = [f"{old} -> {new}: {n}" for (old, new), n in sorted(counts.items())
                 if old != new and n]
        con.print(f"{system}: " + ("; ".join(moved) if moved else "no verdict changed"),
                  highlight=False)
    con.print(new_pass_table(changes, systems))


def show_receipts(c: Campaign, scorer: str | None) -> None:
    """``rescore --show``: the transitions of one stored scorer (or of each) from the
    receipts alone; nothing is graded, no attempt folder is read."""
    con = _console()
    known = stored_scorers(c)
    if scorer is None:
        names = list(known)
        if not names:
            con.print(f"campaign {c.label}: no stored rescoring (run `erpsim rescore "
                      f"{c.label} --scorer current|DIR` first)", highlight=False)
            return
    else:
        try:
            name = scorer_name(c, scorer)
        except BadInput as e:
            fail(e)
        if name == ORIGINAL:
            fail(f"--scorer {ORIGINAL}: the original verdicts have no transitions (expected "
                 f"a stored scorer: {', '.join(known) or 'none stored yet'})")
        names = [name]
    rows = {tuple(r.key): r for r in c.rows}
    due = sum(needs_receipt(r) for r in c.rows)
    for name in names:
        receipts = latest_receipts(c, name)
        manifests = scorer_manifests(c, name)
        con.print(f"[bold]scorer {name}[/]: receipts for {len(receipts)} of {len(rows)} "
                  f"attempts; manifest sha256 {', '.join(manifests)}", highlight=False)
        changes = [(key[2], rc.original_verdict_status,
                    None if rc.verdict.get("status") is None else str(rc.verdict["status"]))
                   for key, rc in sorted(receipts.items())]
        print_changes(con, changes, c.matrix.systems)
        unverified = [k for k, rc in receipts.items() if not rc.verify()]
        if unverified:
            con.print(f"[bold red]warning[/]: {len(unverified)} receipt(s) do not match "
                      f"their hash, e.g. {' '.join(map(str, unverified[0]))}", highlight=False)
        if len(rows) > due:
            con.print(f"{len(rows) - due} attempt(s) never finished (no verdict under any "
                      "scorer, no receipt)", highlight=False)
        if len(receipts) < due:
            con.print(f"[bold yellow]note[/]: {due - len(receipts)} finished attempt(s) have "
                      f"no receipt of {name}; report --scorer {name} refuses until they do",
                      highlight=False)


@click.command()
@click.argument("label")
@click.option("--scorer", "scorer_name_", default=None,
              help="The check definitions to apply: 'current' (each scenario's checks as "
                   "they are now) or a folder of <scenario-id>.yaml files with a checks: "
                   "list. With --show: the stored scorer to show (default: every one).")
@click.option("--show", is_flag=True, default=False,
              help="Print the transitions from the stored receipts only: grade nothing, "
                   "need no retained attempt folder.")
@click.option("--scenario-dir", type=click.Path(file_okay=False, path_type=Path),
              default=None,
              help="Where to find the campaign's scenarios (<id>/scenario.yaml or <id>.yaml)"
                   " when they are not where campaign.json says, nor in the library.")
@click.option("--store-url", default=None, metavar="URL",
              help="A campaign swept with --store-url: the PostgreSQL URL of its books "
                   "(default: the one each attempt's summary.json records, which has no "
                   "password; give it here, or set PGPASSWORD, when the server wants one).")
@_RESULTS_DIR
def rescore(label: str, scorer_name_: str | None, show: bool, scenario_dir: Path | None,
            store_url: str | None, results_dir: Path) -> None:
    """Grade every retained attempt again with a named version of the check definitions.

    Runs no agent and changes no attempt: each attempt folder's verified books.db and
    final workspace are evaluated again, and one receipt per attempt binds the new
    verdict to the output hashes, the scorer's manifest hash and the original verdict
    (stored in the ledger's receipts; the original rows and verdict.json files stay as
    they are). Running it again with the same scorer adds nothing. Prints the
    transitions (accepted -> rejected, ungraded -> accepted, ...) and the new pass@1.
    With --show, prints those from the stored receipts without grading anything.

    Each attempt's books are verified before its checks run (the log's chain, its head
    against the recorded final hash, the read tables against the log); an attempt whose
    books do not verify is refused, one that cannot be read is a grader error, and
    neither gets a receipt; attempts that never finished (infrastructure errors) are
    skipped. Exit 0 when every finished attempt was graded and the matrix is complete;
    1 when an attempt was refused or the matrix is incomplete; 3 when an attempt could
    not be graded.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    c = _campaign(results_dir, label)
    if show:
        show_receipts(c, scorer_name_)
        return
    if scorer_name_ is None:
        fail("--scorer is required to rescore (expected --scorer current|DIR, or --show to "
             "print stored receipts)")
    con = _console()
    ids = sorted({r.scenario for r in c.rows})
    try:
        loaded = load_scenarios(ids, campaign_data=c.data, scenario_dir=scenario_dir)
        scorer = resolve_scorer(scorer_name_, loaded)
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
        results = rescore_campaign(c, scorer, loaded, store_url=store_url,
                                   progress=lambda n: bar.update(task, completed=n))
    written = sum(r.written for r in results)
    graded = sum(r.receipt is not None for r in results)
    con.print(f"receipts: {written} written, {graded - written} already stored "
              "(same scorer, same outputs)", highlight=False)
    print_changes(con, changes_of(results), c.matrix.systems)
    for outcome, what in (("skipped", "skipped, no finished attempt to grade"),
                          ("refused", "refused, their books do not verify"),
                          ("error", "not graded, a grader error")):
        hit = [r for r in results if r.outcome == outcome]
        if hit:
            con.print(f"{len(hit)} attempt(s) {what} (no receipt; {verdict_label(None)} "
                      f"above), e.g. {' '.join(map(str, hit[0].row.key))}: {hit[0].problem}",
                      highlight=False)
    differ = sum(r.outputs_differ for r in results)
    if differ:
        con.print(f"[bold yellow]warning[/]: {differ} attempt(s)' retained outputs "
                  "differ from what the ledger recorded when they ran", highlight=False)
    if any(r.outcome == "error" for r in results):
        sys.exit(EXIT_GRADER_ERROR)
    if not c.completeness.complete or any(r.outcome == "refused" for r in results):
        sys.exit(EXIT_FAILED)
