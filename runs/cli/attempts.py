"""``erpsim run``, ``check``, ``reconcile`` and ``validate``: one attempt, from the command line.

Exit codes (:mod:`runs.cli.common`): ``run`` 0 accepted, 1 rejected (or no turn of an
external agent completed), 2 bad input, 3 a grader error or a turn the harness could not
run (printed as it happens; the attempt stops there); ``check`` 0 accepted, 1 rejected
(or the log does not verify), 2 bad input, 3 grader error; ``reconcile`` 0 when
everything ties, 1 when not, 2 bad input; ``validate`` 0 when the controls all behave
(``--seeds``) or the run completed (``--mutants``), 1 otherwise.
"""

from __future__ import annotations

import sys
from collections import Counter
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from scenarios.loader import LoadedScenario

from runs.cli.common import (
    CHECKS_PROCESS,
    CPUS,
    DATE,
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_GRADER_ERROR,
    EXIT_OK,
    MEMORY,
    NETWORK,
    OUT_DIR,
    OUT_FILE,
    SECONDS,
    SEED,
    VERDICT_EXIT,
    cannot_write,
    checks_process_option,
    errors,
    fail,
    interruptible,
    refuse_unused_store_url,
)
from runs.errors import AttemptAborted, RunsError
from runs.files import atomic_path

TIERS = ("easy", "medium", "hard")
"""The difficulty tiers ``--tier`` accepts (``scenarios.spec.TIER_NAMES``)."""


@click.command()
@click.argument("scenario")
@click.option("--seed", type=SEED, default=1, show_default=True, help="Scenario seed.")
@click.option("--agent", "agent_name", type=click.Choice(["reference", "oracle", "null"]),
              default="reference", show_default=True, help="Built-in agent to run.")
@click.option("--agent-cmd", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="An external agent: an adapter executable run each turn as ADAPTER "
                   "--workspace W --prompt-file P --output-dir O (see runs/adapters/). "
                   "Replaces --agent.")
@click.option("--docker", "docker_image", metavar="IMAGE", default=None,
              help="Run --agent-cmd in a container of IMAGE (docker mode; DOCKER_HOST names "
                   "the engine). Default: a local process.")
@click.option("--agent-env", "agent_env", multiple=True, metavar="NAME[=VALUE]",
              help="Pass a variable to --agent-cmd (repeatable): NAME copies it from this "
                   "environment, NAME=VALUE sets it. Nothing else passes but PATH and LANG.")
@click.option("--turn-timeout", type=SECONDS, default=None,
              help="Seconds per turn for --agent-cmd (default: the scenario's, 1200).")
@click.option("--home-template", type=click.Path(file_okay=False, path_type=Path),
              default=None, metavar="DIR",
              help="Copy DIR into each turn's fresh HOME for --agent-cmd (CLI config such "
                   "as .codex/config.toml or .claude/settings.json).")
@click.option("--cpus", type=CPUS, default=2.0,
              show_default=True, help="Docker mode: CPU limit.")
@click.option("--memory", type=MEMORY, default="6g", show_default=True,
              help="Docker mode: memory limit (a whole number with an optional unit b, k, m "
                   "or g).")
@click.option("--network/--no-network", default=False, show_default=True,
              help="Docker mode: give the container a network.")
@click.option("--network-mode", type=NETWORK, default="bridge", show_default=True,
              help="Docker mode with --network: the docker network (host on an engine "
                   "without a bridge, such as the one .ci/docker-up starts).")
@click.option("--out", type=OUT_DIR, required=True,
              help="Attempt folder to create (must not exist or be empty).")
@click.option("--replace", is_flag=True,
              help="Replace OUT if it holds a finished, stopped or interrupted attempt (never "
                   "any other folder, nor one whose run is still going).")
@click.option("--quiet", is_flag=True, help="No progress bar; only the final figures.")
@click.option("--tier", type=click.Choice(TIERS), default=None,
              help="Difficulty tier: one the scenario declares under tiers: (size, share of "
                   "hard behaviours, document noise). Default: the scenario's own tier:.")
@checks_process_option
def run(scenario: str, seed: int, agent_name: str, agent_cmd: Path | None,
        docker_image: str | None, agent_env: tuple[str, ...], turn_timeout: float | None,
        home_template: Path | None, cpus: float, memory: str,
        network: bool, network_mode: str, out: Path, replace: bool, quiet: bool,
        tier: str | None, checks_process: str) -> None:
    """Run a scenario (a library name or a YAML path) with an agent; grade it.

    Writes the attempt folder: the store (books.db), each turn's workspace, outputs,
    api.jsonl (every request or command of the turn) and (external agents) process
    logs, summary.json with event counts, the final trial balance and final_hash, and
    verdict.json with every check result. Prints each turn that did not complete as it
    happens, where things stand and the verdict at the end.

    Exit 0 accepted, 1 rejected (or no turn of an external agent completed), 2 bad
    input, 3 a grader error, or a turn the harness could not run (the adapter could
    not start, the docker engine or the model endpoint failed) or a fault of the
    environment (the store's database lost, a full or read-only disk): its cause is
    printed and the attempt stops there, without a verdict. 130 interrupted (Ctrl-C or
    SIGTERM): the agent's processes stop with it; --replace runs it again.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from runs.attempt import AttemptError, run_attempt
    from runs.cli.display import console, summary_table

    con = console()
    loaded = _load(scenario, tier)
    agent = None
    solution = False
    if loaded.kind == "desk":  # a desk task: its own seed; its solution is the reference
        from click import get_current_context
        from click.core import ParameterSource

        from desk.tasks import load_task

        task = load_task(scenario)
        if get_current_context().get_parameter_source("seed") == ParameterSource.DEFAULT:
            seed = task.seed
        if agent_cmd is None and agent_name == "reference":
            agent_cmd, solution = task.solution, True
        elif agent_cmd is None and agent_name == "oracle":
            raise click.UsageError("desk tasks have no oracle (their reference solution is "
                                   "--agent reference)")
    if docker_image is not None and agent_cmd is None:
        raise click.UsageError("--docker needs --agent-cmd (the adapter to run in it)")
    if home_template is not None and agent_cmd is None:
        raise click.UsageError("--home-template needs --agent-cmd (built-in agents have no "
                               "HOME)")
    if home_template is not None and not home_template.is_dir():
        raise click.BadParameter(f"{home_template} is not a directory (expected a folder "
                                 "copied into each turn's HOME)", param_hint="--home-template")
    if agent_cmd is not None:
        from runs.execution.contract import DockerOptions
        from runs.execution.external import ExternalAgent

        if not agent_cmd.is_file():
            raise click.BadParameter(f"{agent_cmd} is not a file (expected an adapter "
                                     "executable)", param_hint="--agent-cmd")
        try:
            docker = DockerOptions(image=docker_image or DockerOptions().image, cpus=cpus,
                                   memory=memory, network=network,
                                   network_mode=network_mode)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
        agent = ExternalAgent(agent_cmd, mode="docker" if docker_image else "local",
                              timeout_s=turn_timeout or loaded.scenario.turns.timeout_s,
                              docker=docker, env=_agent_env(agent_env),
                              home_template=home_template)
        agent_name = agent_name if solution else f"cmd:{agent_cmd.name}"
    days = len(loaded.scenario.calendar.build().business_days())
    external = agent is not None

    def turn_done(turn: dict[str, Any]) -> None:
        line = turn_line(turn, out)
        if line is not None:
            con.print(line, highlight=False, markup=False)

    with errors(), interruptible(f"the attempt in {out} did not finish; run the same "
                                 "command with --replace to run it again") as interruption:
        try:
            if quiet:
                result = run_attempt(loaded, seed, agent_name, out, replace=replace,
                                     agent=agent, on_turn=turn_done,
                                     on_day=lambda _day, _n: interruption.check(),
                                     checks_beside=CHECKS_PROCESS[checks_process])
            else:
                # Redrawn at each date, not by a thread of its own: an attempt run alone
                # checks beside itself in a forked process (runs.daily), never with a thread.
                with Progress(TextColumn("{task.description}"), BarColumn(),
                              MofNCompleteColumn(), console=con, transient=True,
                              auto_refresh=False) as bar:
                    bar_task = bar.add_task(f"{loaded.scenario.id} seed {seed}", total=days)

                    def tick(day: date, n: int) -> None:
                        interruption.check()
                        bar.update(bar_task, completed=n,
                                   description=f"{loaded.scenario.id} {day.isoformat()}",
                                   refresh=True)

                    result = run_attempt(loaded, seed, agent_name, out, on_day=tick,
                                         replace=replace, agent=agent, on_turn=turn_done,
                                         checks_beside=CHECKS_PROCESS[checks_process])
        except AttemptAborted as e:
            fail(f"{e}\nthe attempt stopped at turn {e.turn}; nothing was graded "
                 f"(see {e.error_file})", code=EXIT_GRADER_ERROR)
        except AttemptError as e:
            fail(e)
    con.print(summary_table(result.summary))
    con.print(f"final_hash: {result.final_hash}")
    con.print(f"attempt folder: {out}")
    status = _print_verdict(con, out)
    turns = result.summary["turns"]
    undone = [t for t in turns if t["status"] != "completed"]
    if undone:
        kinds = Counter(t["status"] for t in undone)
        con.print(f"turns not completed: {len(undone)} of {len(turns)} ("
                  + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) + ")",
                  highlight=False, style="bold red")
    code = VERDICT_EXIT.get(status, EXIT_GRADER_ERROR)
    if external and turns and len(undone) == len(turns) and code == EXIT_OK:
        con.print("no turn completed: exit 1 whatever the verdict", highlight=False)
        code = EXIT_FAILED
    sys.exit(code)


def turn_line(turn: dict[str, Any], out: Path) -> str | None:
    """One line for a turn that did not complete (None for a completed one): its status,
    exit code, the last line the adapter wrote on stderr and where its logs are."""
    status = turn["status"]
    if status == "completed":
        return None
    process = turn.get("process") or {}
    head = f"turn {turn['turn']} ({turn['date']}): {status}"
    if status == "error":
        return f"{head}: {process.get('infrastructure_error')}"
    if status == "crashed" and process:
        head += f" (exit {process.get('exit_code')})"
    elif status == "crashed":
        folder = out / "turns" / f"{int(turn['turn']):02d}"
        head += f" (the agent raised; see {folder / 'agent.log'})"
    elif status == "timeout":
        head += f" after {process.get('wall_s')} s"
    log = process.get("stderr_log")
    if log:
        last = _last_line(out / log)
        head += (f": {last}" if last else "") + f" (stderr: {out / log})"
    return head


def _last_line(path: Path, limit: int = 300) -> str:
    """The last non-empty line of a log (at most ``limit`` characters)."""
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 8192))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [x.strip() for x in tail.splitlines() if x.strip()]
    last = lines[-1] if lines else ""
    return last if len(last) <= limit else last[:limit - 3] + "..."


def _print_verdict(con: Any, out: Path) -> str:
    """Print the verdict's outcome, its failed checks and grader errors, from
    verdict.json; return its status."""
    import json

    from runs.cli.display import verdict_lines

    data = json.loads((out / "verdict.json").read_text(encoding="utf-8"))
    for line in verdict_lines(data):
        con.print(line, highlight=False)
    return str(data["status"])


def _agent_env(items: tuple[str, ...]) -> dict[str, str]:
    """``--agent-env`` values: NAME (copied from here) or NAME=VALUE."""
    import os
    import re

    env: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise click.BadParameter(f"{item!r}: expected NAME or NAME=VALUE",
                                     param_hint="--agent-env")
        if not sep:
            if name not in os.environ:
                raise click.BadParameter(f"{name} is not set in this environment",
                                         param_hint="--agent-env")
            value = os.environ[name]
        env[name] = value
    return env


def _load(scenario: str, tier: str | None = None) -> LoadedScenario:
    """A library scenario or scenario YAML (at ``tier``); failing that, a desk task of that
    name or path (desk tasks take no ``--tier``)."""
    from scenarios.errors import ScenarioError
    from scenarios.loader import find_scenario, load_scenario

    try:
        return load_scenario(find_scenario(scenario), tier=tier)
    except ScenarioError as e:
        problem = e
    if tier is not None and "tier" in str(problem):
        fail(problem)
    try:
        from desk.tasks import list_tasks, load_task

        if scenario in list_tasks() or Path(scenario, "task.yaml").is_file() or (
                scenario.endswith("task.yaml")):
            return load_task(scenario).loaded
    except Exception as e:  # a desk task that cannot load: say so
        fail(str(e), code=EXIT_BAD_INPUT)
    fail(problem)


@click.command("check")
@click.argument("attempt", type=click.Path(file_okay=False, path_type=Path))
@click.option("--scenario", "scenario", default=None,
              help="Scenario (library name or YAML) whose checks to evaluate; default: the "
                   "one the attempt ran (from its summary.json).")
@click.option("--other-scenario", is_flag=True,
              help="Grade with --scenario's checks although it is not the scenario the "
                   "attempt ran (another id); the verdict printed says so, and --write is "
                   "refused.")
@click.option("--write", is_flag=True,
              help="Also rewrite the attempt's verdict.json (default: only print).")
@click.option("--store-url", default=None,
              help="The PostgreSQL URL of an attempt whose books are not in its folder "
                   "(default: the URL its summary.json records, without a password).")
def check_command(attempt: Path, scenario: str | None, other_scenario: bool, write: bool,
                  store_url: str | None) -> None:
    """Evaluate an attempt's checks again from its stored log and files; run nothing.

    --scenario names the scenario whose checks to evaluate; one whose id is not the
    attempt's is refused unless --other-scenario (then the verdict is marked as graded
    with another scenario's checks and never written).

    The books are verified first: the log's hash chain, its head against the final_hash
    the attempt recorded (a log cut at its end is refused, naming both hashes), the
    file's pages, and every read table the checks read against a fold of the log (an
    edited or deleted row is refused, naming its table and key). Nothing is graded then.

    Exit 0 accepted, 1 rejected (or the books do not verify), 2 bad input, 3 grader error.
    """
    from runs.cli.display import console
    from runs.grading import GradingError, grade_folder, read_summary

    con = console()
    try:
        summary = read_summary(attempt)
        refuse_unused_store_url(attempt, store_url)
    except GradingError as e:
        fail(e)
    except RunsError as e:
        fail(e)
    if other_scenario and scenario is None:
        raise click.UsageError("--other-scenario needs --scenario (the scenario whose "
                               "checks to evaluate)")
    loaded = _load(scenario or summary["scenario"])
    ran = str(summary.get("scenario"))
    foreign = loaded.scenario.id != ran
    if foreign and not other_scenario:
        fail(f"--scenario {scenario}: its id is {loaded.scenario.id}, but {attempt} ran "
             f"{ran} (summary.json); grading with another scenario's checks needs "
             "--other-scenario", code=EXIT_BAD_INPUT)
    if foreign and write:
        fail(f"--write with --other-scenario: {attempt}'s verdict.json is the verdict of "
             f"{ran}; a verdict under {loaded.scenario.id}'s checks is only printed",
             code=EXIT_BAD_INPUT)
    mark = (f"graded with the checks of scenario {loaded.scenario.id}, not those of "
            f"{ran} that the attempt ran (--other-scenario)") if foreign else None
    if mark:
        con.print(f"NOTE: {mark}", highlight=False, markup=False, style="bold yellow")
    if scenario is None and loaded.sha256 != summary.get("scenario_sha256"):
        con.print(f"note: scenario {loaded.scenario.id} changed since the attempt ran "
                  "(its sha256 differs); evaluating the current checks", highlight=False)
    with errors():
        try:
            verdict = grade_folder(attempt, loaded, write=write, store_url=store_url)
        except GradingError as e:
            fail(e)
    from runs.cli.display import verdict_lines

    for line in verdict_lines(verdict.to_json(), all_results=True):
        con.print(line, highlight=False)
    if mark:
        con.print(f"verdict {verdict.status} {mark}", highlight=False, markup=False,
                  style="bold yellow")
    if verdict.books is not None:
        con.print(f"books: {verdict.books['verified']} (log head {verdict.books['log_head']} "
                  f"at position {verdict.books['log_position']}; "
                  f"{len(verdict.books['tables'])} read tables match the log)", highlight=False)
    sys.exit(VERDICT_EXIT.get(verdict.status, EXIT_GRADER_ERROR))


@click.command("reconcile")
@click.argument("attempt", type=click.Path(file_okay=False, path_type=Path))
@click.option("--as-of", type=DATE, default=None,
              help="Reconcile as of this business date (default: the attempt's last date).")
@click.option("--csv", "csv_out", type=OUT_FILE, default=None,
              help="Also write every row (balances and items, exact decimal strings) to a CSV.")
@click.option("--all-items", is_flag=True, help="List every item, not the 25 largest per table.")
@click.option("--store-url", default=None,
              help="The PostgreSQL URL of an attempt whose books are not in its folder "
                   "(default: the URL its summary.json records, without a password).")
def reconcile_command(attempt: Path, as_of: date | None, csv_out: Path | None, all_items: bool,
              store_url: str | None) -> None:
    """Reconcile an attempt's control accounts with their subledgers and the outside world.

    For every control account: the GL balance, the subledger total, the external balance
    (customers' and vendors' own records, the bank's statement) and the differences,
    itemized down to documents and statement lines, with the party each belongs to.
    Timing items (payments in transit, bills not yet delivered, ...) are listed apart
    as explained. The books are verified first, as by ``erpsim check``. Exit 0 when
    everything ties, 1 when not (or the books do not verify), 2 on bad input.
    """
    import csv as csv_mod

    from checks.reconcile import CSV_COLUMNS
    from checks.reconcile import reconcile as do_reconcile
    from runs.cli.display import console, reconciliation_tables
    from runs.grading import (
        GradingError,
        attempt_turn_dates,
        open_attempt_store,
        read_summary,
        verify_attempt_books,
    )

    con = console(170)
    try:
        summary = read_summary(attempt)
        refuse_unused_store_url(attempt, store_url)
    except GradingError as e:
        fail(e)
    except RunsError as e:
        fail(e)
    if as_of is not None:
        _require_attempt_date(attempt, summary, as_of)
    declared: dict[str, str] = {}
    try:
        from scenarios.errors import ScenarioError
        from scenarios.loader import find_scenario, load_scenario

        declared = dict(load_scenario(find_scenario(summary["scenario"]))
                        .scenario.company.control_accounts)
    except (ScenarioError, KeyError):
        pass  # a scenario no longer at hand: the chart's control accounts only
    with errors():
        try:
            store = open_attempt_store(attempt, summary, store_url=store_url)
        except GradingError as e:
            fail(e)
        try:
            verify_attempt_books(attempt, store, summary)
            rec = do_reconcile(store, as_of=as_of, control_accounts=declared or None,
                               turn_dates=attempt_turn_dates(summary))
        finally:
            store.close()
    for table in reconciliation_tables(rec, max_items=10**9 if all_items else 25):
        con.print(table)
    if csv_out is not None:
        try:
            with atomic_path(csv_out) as tmp, tmp.open("w", encoding="utf-8",
                                                       newline="") as f:
                w = csv_mod.DictWriter(f, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
                w.writeheader()
                w.writerows(rec.rows())
        except OSError as e:
            cannot_write("--csv", csv_out, e)
        con.print(f"csv: {csv_out} ({len(rec.rows())} rows)", highlight=False)
    unexplained = len(rec.items(unexplained_only=True))
    con.print(f"reconciliation: {'ties' if rec.ties else 'DOES NOT TIE'} "
              f"({unexplained} unexplained item(s))", highlight=False)
    sys.exit(EXIT_OK if rec.ties else EXIT_FAILED)


def _require_attempt_date(attempt: Path, summary: dict[str, Any], as_of: date) -> None:
    """Exit 2 when ``as_of`` is outside the attempt's calendar (its summary.json's
    ``calendar``): the books, the world and the bank have nothing to say there, and a
    reconciliation would report differences that are not."""
    cal = summary.get("calendar") or {}
    try:
        start, end = date.fromisoformat(cal["start"]), date.fromisoformat(cal["end"])
    except (KeyError, TypeError, ValueError):
        return  # an attempt that records no calendar: nothing to check against
    if not start <= as_of <= end:
        fail(f"--as-of {as_of.isoformat()} is outside {attempt}'s dates "
             f"({start.isoformat()}..{end.isoformat()}, from its summary.json); expected a "
             "date in that range", code=EXIT_BAD_INPUT)


@click.command()
@click.argument("scenario")
@click.option("--seeds", "seeds_text", default=None, metavar="RANGE",
              help="Run reference, oracle and null on each seed (e.g. 0-19); with --mutants "
                   "or --policy, the seeds of the mutation runs instead.")
@click.option("--mutants", is_flag=True,
              help="Replay the reference agent with one mutation at a time; list the mutants "
                   "the checks still accept, per operator and per class of mistake.")
@click.option("--policy", "policy", is_flag=True,
              help="Check the scenario's policy table (policy.yaml): every rule names checks "
                   "the scenario has and mutant operators, its README table is generated "
                   "from it, and on the mutation runs a mutant of each rule is caught by one "
                   "of its checks (a rule none of whose drawn mutants its checks caught gets "
                   "up to --per-operator more of its operators' mutants).")
@click.option("--seed", type=SEED, default=1, show_default=True,
              help="The seed of the mutation run (without --seeds).")
@click.option("--per-operator", type=click.IntRange(1, 1000), default=6, show_default=True,
              help="Mutants drawn per mutation operator.")
@click.option("--parallel", type=click.IntRange(1, 64), default=2, show_default=True,
              help="Attempts run at once (--seeds; with --mutants or --policy, the drawn "
                   "mutants of each seed, reported in the drawn order).")
@click.option("--work", type=OUT_DIR, default=None,
              help="Keep the attempts in this folder (default: a temporary one, removed).")
@click.option("--tier", type=click.Choice(TIERS), default=None,
              help="Validate at this difficulty tier (one the scenario declares). Default: "
                   "the scenario's own tier:.")
def validate(scenario: str, seeds_text: str | None, mutants: bool, policy: bool, seed: int,
             per_operator: int, parallel: int, work: Path | None, tier: str | None) -> None:
    """Validate a scenario's checks: controls over seeds, mutants of the reference, or
    its policy table.

    --seeds passes only if reference and oracle (a desk task: its solution) are accepted
    and null rejected on every seed. --mutants (over --seeds, or --seed) prints each
    mutant, a table per class of mistake and mutants_total, mutants_caught and
    mutants_caught_share, and for an output operator with no candidate why ("not
    drawn: OP: 0 candidates (FILE: reason)"). --policy fails when a rule of policy.yaml
    has no check, names a check or operator that does not exist, its README table is not
    the generated one, or no mutant of its operators was caught by one of its checks (a
    rule with none caught gets up to --per-operator more). Exit 0 when the controls
    all behave (--seeds), every counted mutant was caught (--mutants: one that SURVIVED
    exits 1), the policy holds (--policy).
    """
    import shutil
    import tempfile

    from runs.cli.display import console
    from runs.validate import parse_seeds

    if not seeds_text and not mutants and not policy:
        raise click.UsageError("give --seeds RANGE, --mutants or --policy")
    con = console()
    loaded = _load(scenario, tier)
    seeds = []
    if seeds_text:
        try:
            seeds = parse_seeds(seeds_text)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--seeds") from None
    root = work or Path(tempfile.mkdtemp(prefix="erpsim-validate-"))
    ok = True
    try:
        if seeds and not (mutants or policy):
            ok = _validate_seeds(con, loaded, seeds, root / "seeds", parallel)
        outcomes: list[Any] = []
        reasons: dict[str, str] = {}
        if mutants or policy:
            outcomes, reasons = _validate_mutants(con, loaded, seeds or [seed],
                                                  root / "mutants", per_operator, show=mutants,
                                                  policy=policy, parallel=parallel)
        if mutants:  # a counted mutant that no check caught fails the validation
            ok = not any(not o.equivalent and not o.caught for o in outcomes)
        if policy:
            ok = _validate_policy(con, loaded, outcomes, reasons) and ok
    finally:
        if work is None:
            shutil.rmtree(root, ignore_errors=True)
    sys.exit(EXIT_OK if ok else EXIT_FAILED)


def _validate_seeds(con: Any, loaded: Any, seeds: list[int], work: Path,
                    parallel: int) -> bool:
    from rich.table import Table

    from runs.validate import control_seed, controls_for, validate_seeds

    done = [0]
    controls = controls_for(loaded)

    def tick(o: Any) -> None:
        done[0] += 1
        mark = "ok" if o.as_expected else "UNEXPECTED"
        click.echo(f"# [{done[0]}/{len(seeds) * len(controls)}] seed {o.seed} {o.agent}: "
                   f"{o.status} {mark}", err=True)

    outcomes = validate_seeds(loaded, seeds, work, parallel=parallel, on_done=tick,
                              tier=loaded.scenario.tier)
    title = f"{loaded.scenario.id}: controls over {len(seeds)} seeds"
    if loaded.scenario.tier is not None:
        title += f", tier {loaded.scenario.tier}"
    if "oracle" not in controls:
        title += " (a desk task: its solution is the reference; no oracle)"
    fixed = {control_seed(loaded, s) for s in seeds}
    if fixed != set(seeds):
        title += f" (a desk task with books: every seed runs at the task's seed {min(fixed)})"
    t = Table(title=title, title_justify="left")
    t.add_column("Seed", justify="right")
    for agent in controls:
        t.add_column(f"{agent} (expect {'accepted' if agent != 'null' else 'rejected'})")
    by = {(o.seed, o.agent): o for o in outcomes}
    for s in seeds:
        cells = []
        for agent in controls:
            o = by[s, agent]
            text = o.status + ("" if o.as_expected else " !")
            if not o.as_expected and o.failed:
                text += " (" + ", ".join(o.failed[:3]) + ")"
            cells.append(f"[{'green' if o.as_expected else 'bold red'}]{text}[/]")
        t.add_row(str(s), *cells)
    con.print(t)
    bad = [o for o in outcomes if not o.as_expected]
    for agent in controls:
        n = sum(1 for o in outcomes if o.agent == agent and o.as_expected)
        con.print(f"{agent}_as_expected: {n}/{len(seeds)}", highlight=False)
    con.print(f"validation: {'passed' if not bad else 'FAILED'}", highlight=False)
    return not bad


def _validate_mutants(con: Any, loaded: Any, seeds: list[int], work: Path, per_operator: int,
                      *, show: bool = True, policy: bool = False, parallel: int = 1
                      ) -> tuple[list[Any], dict[str, str]]:
    from rich.table import Table

    from runs.validate import CLASSES, control_seed, per_class, validate_mutants

    seeds = sorted({control_seed(loaded, s) for s in seeds})  # a books desk task: its seed

    def tick(o: Any) -> None:
        state = "equivalent" if o.equivalent else ("caught" if o.caught else "SURVIVED")
        click.echo(f"# seed {o.seed} {o.mutation.describe()}: {state}", err=True)

    outcomes: list[Any] = []
    reasons: dict[str, str] = {}
    candidates = 0
    rules = None
    if policy:
        from runs.policy import load_policy

        try:
            rules = [(r.mutants, r.checks) for r in load_policy(loaded.base_dir).rules
                     if r.mutants and r.checks]
        except RunsError:
            rules = None  # --policy reports the table's problem
    for s in seeds:
        try:
            report = validate_mutants(loaded, s, work / f"seed-{s}", per_operator=per_operator,
                                      on_done=tick, rules=rules, parallel=parallel)
        except RunsError as e:  # ValidationAborted: the reference measures nothing
            fail(e)
        outcomes += report.outcomes
        candidates += report.candidates
        reasons.update(report.reasons)
    if not show:
        return outcomes, reasons
    at = f", tier {loaded.scenario.tier}" if loaded.scenario.tier is not None else ""
    t = Table(title=f"{loaded.scenario.id} seeds {', '.join(map(str, seeds))}{at}: mutants "
                    "of the reference", title_justify="left")
    for col in ("Seed", "Mutant", "Class", "Change", "Outcome", "Failed checks"):
        t.add_column(col)
    for o in outcomes:
        state = ("equivalent (log and outputs unchanged)" if o.equivalent
                 else "caught" if o.caught else "[bold red]SURVIVED[/]")
        t.add_row(str(o.seed), o.mutation.describe(), o.mutation.klass, o.change, state,
                  ", ".join(o.failed[:4]))
    con.print(t)
    k = Table(title=f"{loaded.scenario.id}: per class of mistake", title_justify="left")
    for col in ("Class", "Operators", "Drawn", "Equivalent", "Counted", "Caught", "Share"):
        k.add_column(col, justify="left" if col in ("Class", "Operators") else "right")
    for klass, row in per_class(outcomes).items():
        ops = ", ".join(op for op, c in CLASSES.items() if c == klass)
        pct = f"{row['caught'] / row['counted']:.0%}" if row["counted"] else "n/a"
        shown = pct if pct in ("100%", "n/a") else f"[bold red]{pct}[/]"
        k.add_row(klass, ops, str(row["drawn"]), str(row["equivalent"]), str(row["counted"]),
                  str(row["caught"]), shown)
    con.print(k)
    counted = [o for o in outcomes if not o.equivalent]
    caught = sum(1 for o in counted if o.caught)
    con.print(f"mutants_equivalent: {len(outcomes) - len(counted)} (log and outputs as the "
              "reference left them: the books refused the change, or it changed nothing; not "
              "counted)", highlight=False)
    con.print(f"mutants_candidates: {candidates} (drawn: {len(outcomes)})", highlight=False)
    con.print(f"mutants_total: {len(counted)}", highlight=False)
    con.print(f"mutants_caught: {caught}", highlight=False)
    share = caught / len(counted) if counted else 1.0
    con.print(f"mutants_caught_share: {share:.3f}", highlight=False)
    for op, why in sorted(reasons.items()):
        con.print(f"not drawn: {op}: 0 candidates ({why})", highlight=False)
    return outcomes, reasons


def _validate_policy(con: Any, loaded: Any, outcomes: list[Any],
                     reasons: dict[str, str] | None = None) -> bool:
    from rich.table import Table

    from runs.policy import check_policy

    try:
        findings = check_policy(loaded, outcomes, reasons)
    except RunsError as e:
        fail(e)
    t = Table(title=f"{loaded.scenario.id}: policy rules", title_justify="left")
    for col in ("Rule", "Checks", "Operators", "Caught by its checks", "Problems"):
        t.add_column(col)
    for f in findings:
        problems = "; ".join(f.problems)
        t.add_row(str(f.rule.id), ", ".join(f.rule.checks), ", ".join(f.rule.mutants),
                  str(f.caught), f"[bold red]{problems}[/]" if problems else "")
    con.print(t)
    bad = [f for f in findings if f.problems]
    con.print(f"policy_rules: {len(findings)}", highlight=False)
    con.print(f"policy: {'passed' if not bad else 'FAILED'}", highlight=False)
    return not bad
