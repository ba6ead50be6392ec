"""``erpsim sweep``: a campaign from the command line (the work is :mod:`runs.campaigns`).

Exit codes of ``sweep``: 0 every attempt of the matrix has a row and none is an
infrastructure error; 1 some attempts ended in an infrastructure error (rerun them
with ``--resume``); 2 bad input (an existing label without ``--resume``, a matrix
that differs from the recorded one, an unknown scenario or system, a bad systems
file); 3 the environment failed under the campaign's own files (its disk full or
read-only: the rows written stay whole, ``--resume`` completes it); 130 interrupted (the
rows written so far stay; ``--resume`` completes them).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from runs.campaigns.plan import Plan

from runs.cli.attempts import TIERS
from runs.cli.common import EXIT_FAILED, EXIT_GRADER_ERROR, EXIT_INTERRUPTED, OUT_DIR, fail
from runs.errors import RunsError


def command_line() -> list[str]:
    """The command as typed (program name without its folder)."""
    argv = list(sys.argv)
    if argv:
        argv[0] = Path(argv[0]).name
    return argv


def plan_from_options(label: str, scenarios: tuple[str, ...], desk: str | None,
                      seeds_text: str, systems_text: str, systems_file: Path | None,
                      runs: int, tier: str | None = None) -> Plan:
    """Parse and load everything the matrix names; exit 2 with one line when it cannot."""
    from runs.campaigns.plan import plan_campaign
    from runs.campaigns.run import check_matrix_size
    from runs.campaigns.systems import parse_system_names, resolve_systems
    from runs.errors import CampaignError, SystemsError
    from runs.validate import parse_seeds
    from scenarios.errors import ScenarioError

    try:
        seeds = parse_seeds(seeds_text)
    except ValueError as e:
        raise click.BadParameter(str(e).removeprefix("--seeds: "),
                                 param_hint="--seeds") from None
    try:
        systems = resolve_systems(parse_system_names(systems_text), systems_file)
    except SystemsError as e:
        fail(e)
    desk_names = None
    if desk is not None:
        desk_names = [d.strip() for d in desk.split(",") if d.strip()]
        if not desk_names:
            raise click.BadParameter("no task named (expected NAMES or all)",
                                     param_hint="--desk")
    try:
        plan = plan_campaign(label, scenarios=scenarios, desk=desk_names, seeds=seeds,
                             systems=systems, repetitions=runs, tier=tier)
        check_matrix_size(plan)
        return plan
    except (CampaignError, ScenarioError) as e:
        fail(e)
    except Exception as e:  # a desk task that cannot be loaded, whatever its error type
        fail(f"{type(e).__name__}: {e}")


def tally_table(rows: list[Any], systems: list[str], title: str) -> Any:
    """Per system: attempts, accepted, pass@1, and the attempts that did not complete."""
    from rich.table import Table

    from runs.campaigns.run import tally

    t = Table(title=title, title_justify="left")
    for col, justify in (("System", "left"), ("Attempts", "right"), ("Accepted", "right"),
                         ("pass@1", "right"), ("Timeouts", "right"), ("Crashed", "right"),
                         ("Grader errors", "right"), ("Infra errors", "right")):
        t.add_column(col, justify=justify)  # type: ignore[arg-type]
    for s in tally(rows, systems):
        t.add_row(s.system, str(s.attempts), str(s.accepted), f"{100 * s.pass_at_1:.1f}%",
                  str(s.timeouts), str(s.crashed), str(s.grader_errors),
                  str(s.infrastructure_errors))
    return t


@click.command("sweep")
@click.argument("scenarios", nargs=-1)
@click.option("--desk", default=None, metavar="NAMES|all",
              help="Desk tasks too (comma-separated names or paths, or all).")
@click.option("--seeds", "seeds_text", default="0", show_default=True, metavar="RANGE",
              help="Seeds of the scenarios, e.g. 0-49 or 1,4,7 (a desk task runs with its "
                   "own seed: its files were generated with it).")
@click.option("--systems", "systems_text", required=True, metavar="A,B",
              help="Configured systems: built-in agents (reference, oracle, null) or names "
                   "declared in --systems-file.")
@click.option("--systems-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="YAML declaring external systems (name: {adapter, mode, image, cpus, "
                   "memory, network, timeout_s, env, home, price}).")
@click.option("--runs", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="Repetitions of each (scenario, seed, system).")
@click.option("--tier", type=click.Choice(TIERS), default=None,
              help="Run every scenario of the sweep at this difficulty tier (each must "
                   "declare it; desk tasks have none). Recorded in campaign.json and each "
                   "attempt's summary.json; the report labels the scenarios with it. "
                   "Default: each scenario's own tier:.")
@click.option("--label", required=True, help="The campaign's name (its results folder).")
@click.option("--results-dir", type=OUT_DIR, default=Path("results"), show_default=True,
              help="Where the label's folder goes.")
@click.option("--parallel", type=click.IntRange(1, 256), default=None,
              help="Attempts run at once on a local process pool [default: 1, in this "
                   "process].")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS",
              help="Run the attempts on a Dask distributed scheduler (tcp://host:8786); the "
                   "results folder must be on a filesystem the workers share.")
@click.option("--store-url", default=None, metavar="URL",
              help="Keep each attempt's books in PostgreSQL (postgresql://...), one schema "
                   "per attempt, instead of an SQLite file in its folder.")
@click.option("--resume", is_flag=True,
              help="Complete an existing label: run only the attempts without a row or "
                   "with an infrastructure error (the matrix must be the recorded one).")
@click.option("--frozen", "frozen_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, metavar="MANIFEST",
              help="Hold the sweep to a manifest from `erpsim freeze`: refused when the "
                   "manifest or any file it binds changed, or the scenarios or seeds differ; "
                   "its seeds are the sweep's (sealed seeds need --salt-file); its hash goes "
                   "into campaign.json and every verdict.")
@click.option("--salt-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The salt a --frozen manifest's sealed seeds were derived from.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.pass_context
def sweep(ctx: click.Context, scenarios: tuple[str, ...], desk: str | None, seeds_text: str,
          systems_text: str, systems_file: Path | None, runs: int, label: str,
          results_dir: Path, parallel: int | None, dask_address: str | None,
          store_url: str | None, resume: bool, frozen_path: Path | None,
          salt_file: Path | None, quiet: bool, tier: str | None) -> None:
    """Run a campaign: SCENARIOS (and --desk tasks) x seeds x systems x repetitions.

    SCENARIOS are library names or paths to scenario YAMLs, or all (every scenario of the
    library).

    Writes RESULTS_DIR/LABEL/: campaign.json (the matrix and the environment),
    results.db (one row per attempt) and attempts/<scenario>/<system>/seed-<s>/rep-<r>/.
    A label is never overwritten; --resume runs what is missing and what ended in an
    infrastructure error. The matrix holds at most 100,000 attempts. Before the label is
    created, a preflight checks that the --store-url connects, a Dask scheduler answers at
    --dask, the docker engine and images answer for docker systems, the adapters are
    executable and each system's model endpoint (ERPSIM_MODEL_BASE_URL in its env)
    answers; each problem names the setting (exit 2, nothing written). When the
    campaign's own files cannot be written (its disk full or read-only) it stops naming
    the cause (exit 3); --resume completes it. Prints a table per system at the end, and
    the first infrastructure error with its error file.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from runs.campaigns.run import CampaignStopped, run_campaign
    from runs.cli.display import console
    from runs.errors import CampaignError

    if dask_address is not None and parallel is not None:
        raise click.UsageError("--parallel and --dask are exclusive (the Dask cluster "
                               "decides how many attempts run at once)")
    frozen = None
    if frozen_path is not None:
        frozen, seeds_text = _frozen_seeds(ctx, frozen_path, salt_file, seeds_text)
    elif salt_file is not None:
        raise click.UsageError("--salt-file goes with --frozen (the manifest whose sealed "
                               "seeds it derives)")
    plan = plan_from_options(label, scenarios, desk, seeds_text, systems_text, systems_file, runs,
                             tier)
    if frozen is not None:
        from dataclasses import replace

        from runs.campaigns.freeze import check_plan

        try:
            check_plan(frozen, plan)
        except RunsError as e:
            fail(e)
        plan = replace(plan, preregistration=frozen.record())
    folder = results_dir / label
    con = console()
    state: dict[str, Any] = {"accepted": 0, "errors": 0, "done": 0}
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[tally]}"), TimeElapsedColumn(),
                        TimeRemainingColumn(), console=con, disable=quiet)
    task = progress.add_task(label, total=None, tally="")

    def started(pending: int, total: int) -> None:
        progress.update(task, total=pending)
        what = "to run" if pending == total else f"to run of {total} (resuming)"
        con.print(f"campaign {label}: {pending} attempts {what} -> {folder}",
                  highlight=False)
        progress.start()
        state["started"] = True

    def recorded(row: Any) -> None:
        state["done"] += 1
        state["accepted"] += row.accepted
        state["errors"] += row.status == "infrastructure_error"
        progress.update(task, advance=1,
                        tally=f"accepted {state['accepted']}, infra errors {state['errors']}")

    try:
        try:
            run = run_campaign(plan, folder, parallel=parallel or 1,
                               dask_address=dask_address, store_url=store_url,
                               resume=resume, command=command_line(), on_start=started,
                               on_row=recorded)
        finally:
            if state.get("started"):
                progress.stop()
    except CampaignStopped as e:  # the environment failed under it: an infrastructure fault
        fail(e, code=EXIT_GRADER_ERROR)
    except CampaignError as e:
        fail(e)
    except KeyboardInterrupt:
        click.echo(f"interrupted: {state['done']} attempt(s) recorded in this run; complete "
                   f"the campaign with the same command and --resume", err=True)
        sys.exit(EXIT_INTERRUPTED)
    rows = run.rows()
    at = f", tier {plan.tier}" if plan.tier is not None else ""
    con.print(tally_table(rows, [s.name for s in plan.systems],
                            f"{label}{at}: {len(rows)} of {plan.size} attempts "
                            f"({_units(plan)} x "
                            f"{len(plan.systems)} system(s) x {plan.repetitions} run(s))"))
    errors = [r for r in rows if r.status == "infrastructure_error"]
    for r in errors[:10]:
        con.print(f"infrastructure error: {r.scenario} seed {r.seed} {r.system} rep "
                  f"{r.repetition}: {r.error}", highlight=False, markup=False)
    if errors:
        first = errors[0]
        error_file = folder / first.attempt_dir / "error.txt"
        con.print(f"first infrastructure error: {first.error}"
                  + (f" (error file: {error_file})" if error_file.is_file() else ""),
                  highlight=False, markup=False, style="bold red")
    con.print(f"results: {folder}", highlight=False)
    if errors:
        again = command_line() + ([] if resume else ["--resume"])
        con.print(f"{len(errors)} attempt(s) ended in an infrastructure error; rerun them "
                  f"with: {shlex.join(again)}", highlight=False, markup=False)
        sys.exit(EXIT_FAILED)
    if len(rows) != plan.size:  # pragma: no cover - every job yields a row
        sys.exit(EXIT_FAILED)


def _frozen_seeds(ctx: click.Context, path: Path, salt_file: Path | None,
                  seeds_text: str) -> tuple[Any, str]:
    """The frozen manifest and the seeds it binds, as --seeds text (exit when refused)."""
    from click.core import ParameterSource

    from runs.campaigns.freeze import frozen_seeds, read_manifest
    from runs.validate import parse_seeds

    try:
        frozen = read_manifest(path)
        salt = _read_salt(salt_file)
        seeds = frozen_seeds(frozen, salt)
    except RunsError as e:
        fail(e)
    given = ctx.get_parameter_source("seeds_text") == ParameterSource.COMMANDLINE
    if given and parse_seeds(seeds_text) != sorted(set(seeds)):
        fail(f"--seeds {seeds_text}: the frozen manifest {path} binds other seeds (leave "
                 "--seeds out: a frozen sweep runs the manifest's seeds)")
    return frozen, ",".join(str(s) for s in seeds)


def _read_salt(path: Path | None) -> bytes | None:
    """A salt file's bytes (surrounding whitespace removed); None when not given."""
    if path is None:
        return None
    try:
        return path.read_bytes().strip()
    except OSError as e:
        fail(f"--salt-file {path}: cannot read it ({e.strerror})")


def _units(plan: Any) -> str:
    """``3 scenario(s) x 50 seed(s)``, or the number of (scenario, seed) units when some
    targets (desk tasks) run with seeds of their own."""
    if all(tuple(t.seeds) == tuple(plan.seeds) for t in plan.targets):
        return f"{len(plan.targets)} scenario(s) x {len(plan.seeds)} seed(s)"
    units = sum(len(t.seeds) for t in plan.targets)
    return f"{len(plan.targets)} scenario(s) and task(s), {units} (scenario, seed) unit(s)"
