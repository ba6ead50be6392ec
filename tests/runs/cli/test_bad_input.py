"""Bad command-line input refused with a clear message and nothing written: negative seeds,
huge seed ranges and matrices, output paths that cannot be written (every option that
names one), sweeps that cannot start, dates outside an attempt, folders given as stores,
another scenario's checks."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from runs.cli import main
from runs.cli.common import OUT_FILE, unwritable
from runs.validate import MAX_SEEDS, parse_seeds

SEEDED = [
    ["run", "cash-application", "--out", "{tmp}/a", "--seed", "{seed}"],
    ["validate", "cash-application", "--mutants", "--seed", "{seed}"],
    ["demo", "--out", "{tmp}/d.db", "--seed", "{seed}"],
    ["bench", "turn", "--seed", "{seed}"],
    ["bench", "engine", "--seed", "{seed}"],
    ["bench", "ledger", "--seed", "{seed}"],
    ["compare", "{tmp}/r", "--a", "x", "--b", "y", "--seed", "{seed}"],
]


@pytest.mark.parametrize("seed", ["-1", "9223372036854775808", "100000000000000000000"])
@pytest.mark.parametrize("command", SEEDED)
def test_a_seed_outside_0_to_2_63_is_refused_by_every_command(
        tmp_path: Path, command: list[str], seed: str) -> None:
    """Seeds are 64-bit integers in the summaries and the results ledger: a larger one would
    be taken here and refused by SQLite at the end of an attempt (a traceback)."""
    args = [a.replace("{tmp}", str(tmp_path)).replace("{seed}", seed) for a in command]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert (f"Invalid value for '--seed': {seed} is not in the range "
            "0<=x<=9223372036854775807.") in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--turn-timeout", "nan", "'nan' is not a finite number"),
    ("--turn-timeout", "inf", "'inf' is not a finite number"),
    ("--turn-timeout", "0", "0.0 is not in the range x>0"),
    ("--cpus", "nan", "'nan' is not a finite number"),
    ("--cpus", "inf", "inf is not in the range 0<x<=256"),
    ("--cpus", "300", "300.0 is not in the range 0<x<=256"),
])
def test_a_duration_or_a_cpu_limit_that_is_no_finite_number_is_refused(
        tmp_path: Path, option: str, value: str, says: str) -> None:
    """``--turn-timeout nan`` used to reach every turn, which then counted as the agent's
    crash; now the command is refused before anything runs."""
    result = CliRunner().invoke(main, ["run", "cash-application", "--out",
                                       str(tmp_path / "a"), "--agent-cmd", "/bin/true",
                                       option, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}': {says}" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_seed_beyond_the_largest_is_refused_by_a_sweep_before_its_label(
        tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sweep", "cash-application", "--seeds",
                                       "0,9223372036854775808", "--systems", "null",
                                       "--label", "big", "--results-dir",
                                       str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    assert ("Invalid value for --seeds: '9223372036854775808' goes beyond the largest seed, "
            "9223372036854775807") in flat(result.output)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("command", "option", "value", "bounds"), [
    (["ledger", "events", "{tmp}/books.db"], "--limit", "9223372036854775808",
     "1<=x<=9223372036854775807"),
    (["bench", "ledger"], "--events", "10000001", "1000<=x<=10000000"),
    (["bench", "ledger"], "--single", "1000001", "100<=x<=1000000"),
    (["bench", "engine"], "--customers", "100001", "1<=x<=100000"),
    (["bench", "engine"], "--vendors", "100001", "0<=x<=100000"),
    (["compare", "{tmp}/r", "--a", "x", "--b", "y"], "--resamples", "1000001",
     "1<=x<=1000000"),
])
def test_a_count_beyond_its_bound_is_refused_before_anything_runs(
        tmp_path: Path, command: list[str], option: str, value: str, bounds: str) -> None:
    """Counts that size a run or a read have an upper bound too: beyond it a run would take
    hours or all the memory, or a read would reach SQLite with a number it cannot hold."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in command] + [option, value]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}': {value} is not in the range {bounds}." in (
        result.output)
    assert list(tmp_path.iterdir()) == []


def test_a_huge_seed_range_is_refused_before_it_is_made(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sweep", "cash-application", "--seeds", "0-10000000",
                                       "--systems", "reference", "--label", "big",
                                       "--results-dir", str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    assert ("Invalid value for --seeds: '0-10000000' names more than 10,000 seeds "
            "(0-10000000 alone is 10,000,001; expected at most 10,000: split the campaign "
            "into labels)") in result.output
    assert not (tmp_path / "results").exists()


def test_many_small_ranges_are_bounded_too() -> None:
    text = ",".join(f"{n * 100}-{n * 100 + 99}" for n in range(MAX_SEEDS // 100 + 1))
    with pytest.raises(ValueError, match="names more than 10,000 seeds"):
        parse_seeds(text)
    assert len(parse_seeds(f"0-{MAX_SEEDS - 1}")) == MAX_SEEDS


# --- paths a command writes ---------------------------------------------------------

def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def attempt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished cash-application attempt (reference agent, seed 1)."""
    from runs.attempt import run_attempt
    from scenarios.loader import find_scenario, load_scenario

    root = tmp_path_factory.mktemp("attempt")
    return run_attempt(load_scenario(find_scenario("cash-application")), 1, "reference",
                       root / "a").out


WRITERS: dict[tuple[str, str], list[str]] = {
    ("run", "--out"): ["run", "cash-application", "--quiet", "--out", "{p}"],
    ("validate", "--work"): ["validate", "cash-application", "--seeds", "0", "--work", "{p}"],
    ("reconcile", "--csv"): ["reconcile", "{attempt}", "--csv", "{p}"],
    ("sweep", "--results-dir"): ["sweep", "cash-application", "--systems", "null", "--label",
                                 "l", "--results-dir", "{p}"],
    ("report", "--out"): ["report", "l", "--export", "csv", "--out", "{p}"],
    ("view", "--out"): ["view", "{attempt}", "--out", "{p}"],
    ("desk validate", "--out"): ["desk", "validate", "payments-match", "--out", "{p}"],
    ("demo", "--out"): ["demo", "--days", "2", "--out", "{p}"],
    ("export beancount", "--out"): ["export", "beancount", "{attempt}", "--out", "{p}"],
    ("export parquet", "--out"): ["export", "parquet", "{attempt}", "--out", "{p}"],
    ("freeze", "--out"): ["freeze", "pilot", "cash-application", "--seeds", "0", "--out", "{p}"],
}
"""Every option of the CLI that names a path to write, with a command using it."""

READ_ONLY_PATHS = {
    ("run", "--agent-cmd"), ("run", "--home-template"), ("check", "attempt"),
    ("reconcile", "attempt"), ("sweep", "--systems-file"), ("report", "--results-dir"),
    ("compare", "--results-dir"), ("rescore", "--results-dir"), ("rescore", "--scenario-dir"),
    ("view", "--reference"), ("view", "--results-dir"), ("bench view", "--attempt"),
    ("sweep", "--frozen"), ("sweep", "--salt-file"), ("freeze", "--salt-file"),
}
"""Path parameters that are only read (the folders there are not created)."""


def _path_params() -> dict[tuple[str, str], click.Parameter]:
    found: dict[tuple[str, str], click.Parameter] = {}

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
            return
        for p in cmd.params:
            if isinstance(p.type, click.Path):
                name = p.opts[0] if isinstance(p, click.Option) else str(p.name)
                found[" ".join(path), name] = p
    walk(main, [])
    return found


def test_every_path_option_is_a_checked_output_or_only_read() -> None:
    params = _path_params()
    outputs = {k for k, p in params.items() if isinstance(p.type, type(OUT_FILE))}
    assert outputs == set(WRITERS), "an output option without a bad-path test, or untyped"
    assert set(params) - outputs == READ_ONLY_PATHS, (
        "a path option that is neither OUT_FILE/OUT_DIR nor known to be only read")


@pytest.mark.parametrize("where", ["under-a-file", "in-proc", "name-too-long"])
@pytest.mark.parametrize("key", list(WRITERS), ids=[" ".join(k) for k in WRITERS])
def test_an_output_path_that_cannot_be_written_is_refused_before_anything_runs(
        tmp_path: Path, attempt: Path, key: tuple[str, str], where: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    target = {"under-a-file": blocker / "sub" / "x",
              "in-proc": Path("/proc") / f"erpsim-test-{os.getpid()}" / "x",
              "name-too-long": tmp_path / ("n" * 300) / "x"}[where]
    attempt_files = sorted(p.relative_to(attempt) for p in attempt.rglob("*"))
    args = [a.replace("{p}", str(target)).replace("{attempt}", str(attempt))
            for a in WRITERS[key]]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    text = flat(result.output)
    assert f"Invalid value for '{key[1]}': {target}:" in text
    why = {"under-a-file": f"{blocker} is a file, not a folder",
           "in-proc": "nothing can be created in /proc (No such file or directory)",
           "name-too-long": f"the name '{'n' * 37}...' is 300 bytes long (expected at most "
                            "255, this filesystem's longest)"}[where]
    assert f"{why}; nothing was written" in text
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
    assert blocker.read_text() == "not a folder\n"
    assert not os.path.lexists(target.parent)
    assert sorted(p.relative_to(attempt) for p in attempt.rglob("*")) == attempt_files
    assert not list(Path.cwd().glob(".erpsim-probe-*"))


LONG = "/tmp/" + "d" * 300
"""A path with a part longer than any Linux filesystem's names (255 bytes)."""


@pytest.mark.parametrize("command", [
    ["run", LONG, "--agent", "null", "--out", "{tmp}/a"],
    ["check", LONG],
    ["reconcile", LONG],
    ["ledger", "verify", LONG],
    ["ledger", "trial-balance", LONG],
    ["ledger", "events", LONG],
    ["view", LONG, "--out", "{tmp}/v.html"],
    ["export", "beancount", LONG, "--out", "{tmp}/b.beancount"],
])
def test_an_input_path_too_long_for_the_filesystem_is_refused_in_a_line(
        tmp_path: Path, command: list[str]) -> None:
    """Path.is_file() and friends raise on such a name (ENAMETOOLONG is not "missing"):
    every command refuses it in one line naming it, exit 2, never a traceback."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "/tmp/ddd" in result.output
    assert isinstance(result.exception, SystemExit)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_path_of_the_other_kind_is_refused(tmp_path: Path, attempt: Path) -> None:
    (tmp_path / "f").write_text("")
    res = CliRunner().invoke(main, ["run", "cash-application", "--out", str(tmp_path / "f")])
    assert res.exit_code == 2 and f"Directory '{tmp_path / 'f'}' is a file." in res.output
    res = CliRunner().invoke(main, ["export", "beancount", str(attempt), "--out",
                                    str(tmp_path)])
    assert res.exit_code == 2 and f"File '{tmp_path}' is a directory." in res.output


def test_unwritable_names_the_problem_and_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    assert unwritable(tmp_path / "new" / "deeper" / "x.csv", folder=False) is None
    assert unwritable(tmp_path / "new", folder=True) is None
    assert unwritable(tmp_path, folder=True) is None
    assert unwritable(tmp_path / "f", folder=False) is None  # replaced atomically
    assert unwritable(tmp_path / "f", folder=True) == "is a file (expected a folder)"
    assert unwritable(tmp_path, folder=False) == "is a folder (expected a file)"
    assert unwritable(tmp_path / "f" / "x", folder=False) == (
        f"{tmp_path / 'f'} is a file, not a folder")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert unwritable(tmp_path / "dangling" / "x", folder=False) == (
        f"{tmp_path / 'dangling'} is a broken symbolic link")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "f"]


# --- a sweep that cannot start claims no label ------------------------------------------

def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sweep(tmp_path: Path, *extra: str) -> Any:
    return CliRunner().invoke(main, ["sweep", "cash-application", "--systems", "null",
                                     "--label", "l", "--results-dir",
                                     str(tmp_path / "results"), "--quiet", *extra])


def test_a_sweep_without_a_dask_scheduler_claims_no_label(tmp_path: Path) -> None:
    port = _closed_port()
    started = time.monotonic()
    res = _sweep(tmp_path, "--dask", f"tcp://127.0.0.1:{port}")
    assert res.exit_code == 2, res.output
    assert (f"the sweep cannot start (nothing was created): --dask tcp://127.0.0.1:{port}: "
            f"no scheduler answers at 127.0.0.1:{port} (Connection refused)") in flat(res.output)
    assert time.monotonic() - started < 20
    assert not (tmp_path / "results").exists()


def test_a_sweep_at_a_port_that_is_no_dask_scheduler_claims_no_label(tmp_path: Path) -> None:
    with socket.socket() as server:  # accepts, then hangs up: not the Dask protocol
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def serve() -> None:
            for _ in range(5):
                try:
                    conn, _addr = server.accept()
                except OSError:
                    return
                conn.close()
        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        res = _sweep(tmp_path, "--dask", f"tcp://127.0.0.1:{port}")
    assert res.exit_code == 2, res.output
    assert f"--dask tcp://127.0.0.1:{port}: not a Dask scheduler (" in flat(res.output)
    assert not (tmp_path / "results").exists()


def test_a_bad_dask_address_and_a_bad_store_url_are_listed_together(tmp_path: Path) -> None:
    port = _closed_port()
    res = _sweep(tmp_path, "--dask", "tcp://127.0.0.1:99999", "--store-url",
                 f"postgresql://postgres@127.0.0.1:{port}/test")
    assert res.exit_code == 2, res.output
    text = flat(res.output)
    assert ("--dask tcp://127.0.0.1:99999: not a scheduler address (Port out of range "
            "0-65535; expected tcp://host:port)") in text
    assert f"--store-url postgresql://postgres@127.0.0.1:{port}/test: does not connect" in text
    assert not (tmp_path / "results").exists()


def test_a_store_url_that_is_not_postgresql_claims_no_label(tmp_path: Path) -> None:
    res = _sweep(tmp_path, "--store-url", f"sqlite:///{tmp_path}/x.db")
    assert res.exit_code == 2, res.output
    assert "expected a PostgreSQL URL (postgresql://user@host:port/db)" in flat(res.output)
    assert sorted(tmp_path.iterdir()) == []


# --- the campaign matrix as a whole -------------------------------------------------

def test_a_matrix_of_more_than_max_attempts_is_refused_before_anything(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, [
        "sweep", "cash-application", "procure-to-pay", "--seeds", "0-9999", "--systems",
        "reference,oracle,null", "--runs", "5", "--label", "big", "--results-dir",
        str(tmp_path / "results")])
    assert res.exit_code == 2, res.output
    assert ("the matrix is 2 scenario(s) x 10,000 seed(s) x 3 system(s) x 5 run(s) = "
            "300,000 attempts; expected at most 100,000 in one label: split the campaign "
            "into labels (fewer scenarios, --seeds, --systems or --runs each)"
            ) in flat(res.output)
    assert not (tmp_path / "results").exists()


def test_the_matrix_bound_holds_for_run_campaign_too(tmp_path: Path) -> None:
    from runs.campaigns.plan import plan_campaign
    from runs.campaigns.run import MAX_ATTEMPTS, check_matrix_size, run_campaign
    from runs.campaigns.systems import resolve_systems
    from runs.errors import CampaignError

    systems = resolve_systems(["reference", "null"])
    fits = plan_campaign("fits", scenarios=["cash-application"],
                         seeds=list(range(MAX_ATTEMPTS // 2)), systems=systems,
                         repetitions=1)
    check_matrix_size(fits)  # exactly at the bound: accepted
    over = plan_campaign("over", scenarios=["cash-application"],
                         seeds=list(range(MAX_ATTEMPTS // 2)), systems=systems,
                         repetitions=2)
    with pytest.raises(CampaignError, match=r"= 200,000 attempts; expected at most 100,000"):
        run_campaign(over, tmp_path / "over", check_first=False)
    assert list(tmp_path.iterdir()) == []


# --- reconcile --as-of, --store-url ---------------------------------------------------

@pytest.mark.parametrize("as_of", ["2026-03-01", "2030-01-01"])
def test_reconcile_as_of_outside_the_attempt_is_refused(tmp_path: Path, attempt: Path,
                                                        as_of: str) -> None:
    csv_out = tmp_path / "rec.csv"
    res = CliRunner().invoke(main, ["reconcile", str(attempt), "--as-of", as_of,
                                    "--csv", str(csv_out)])
    assert res.exit_code == 2, res.output
    assert (f"error: --as-of {as_of} is outside {attempt}'s dates (2026-03-02..2026-03-13, "
            "from its summary.json); expected a date in that range") in flat(res.output)
    assert "DOES NOT TIE" not in res.output
    assert not csv_out.exists()


def test_reconcile_as_of_inside_the_attempt_reconciles(attempt: Path) -> None:
    res = CliRunner().invoke(main, ["reconcile", str(attempt), "--as-of", "2026-03-02"])
    assert res.exit_code in (0, 1), res.output
    assert "reconciliation: " in res.output


@pytest.mark.parametrize("command", ["check", "reconcile"])
def test_a_store_url_for_an_attempt_in_its_books_db_is_refused(attempt: Path,
                                                               command: str) -> None:
    res = CliRunner().invoke(main, [command, str(attempt), "--store-url",
                                    "postgresql://postgres@127.0.0.1:5432/test"])
    assert res.exit_code == 2, res.output
    assert (f"error: --store-url: the books of {attempt} are in its books.db, not in "
            "PostgreSQL") in flat(res.output)


# --- ledger commands given a folder ---------------------------------------------------

@pytest.mark.parametrize("command", [["verify"], ["trial-balance"], ["events", "--limit", "2"]])
def test_ledger_commands_accept_an_attempt_folder(attempt: Path, command: list[str]) -> None:
    res = CliRunner().invoke(main, ["ledger", command[0], str(attempt), *command[1:]])
    assert res.exit_code == 0, res.output
    assert "disk I/O error" not in res.output
    summary = json.loads((attempt / "summary.json").read_text())
    if command == ["verify"]:
        assert f"head {summary['final_hash']}" in res.output
    elif command == ["trial-balance"]:
        assert "Total" in res.output
    else:
        assert "company_set_up" in res.output


def test_ledger_verify_of_an_attempt_expects_its_recorded_head(tmp_path: Path,
                                                                attempt: Path) -> None:
    copy = tmp_path / "a"
    shutil.copytree(attempt, copy)
    summary = json.loads((copy / "summary.json").read_text())
    real = summary["final_hash"]
    summary["final_hash"] = "0" * 64
    (copy / "summary.json").write_text(json.dumps(summary))
    res = CliRunner().invoke(main, ["ledger", "verify", str(copy)])
    assert res.exit_code == 1, res.output
    assert (f"the head after {summary['final_position']} events is {real}, but its "
            f"summary.json records {'0' * 64}") in flat(res.output)
    res = CliRunner().invoke(main, ["ledger", "verify", str(copy), "--expect-head", real])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("command", [["ledger", "verify"], ["ledger", "trial-balance"],
                                     ["ledger", "events"], ["export", "beancount"]])
def test_a_folder_that_is_not_an_attempt_is_named_as_such(tmp_path: Path, attempt: Path,
                                                          command: list[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(main, [*command, str(empty)])
    assert res.exit_code == 2, res.output
    assert (f"error: {empty} is a folder, not a store; expected an SQLite file, a "
            "PostgreSQL URL or an attempt folder (summary.json, books.db)") in flat(res.output)
    books = tmp_path / "books"
    books.mkdir()
    shutil.copy(attempt / "books.db", books / "books.db")
    res = CliRunner().invoke(main, [*command, str(books)])
    assert res.exit_code == 2, res.output
    assert (f"error: {books} is a folder, not a store; its books are in "
            f"{books / 'books.db'}") in flat(res.output)
    assert "disk I/O error" not in res.output
    assert sorted(p.name for p in books.iterdir()) == ["books.db"]


def test_schema_for_an_attempt_folder_is_refused(attempt: Path) -> None:
    res = CliRunner().invoke(main, ["ledger", "verify", str(attempt), "--schema", "s"])
    assert res.exit_code == 2, res.output
    assert (f"--schema s: {attempt} is an attempt folder; its summary.json names its "
            "store") in flat(res.output)


@pytest.mark.parametrize("command", [["ledger", "verify"], ["ledger", "trial-balance"],
                                     ["ledger", "events"]])
@pytest.mark.parametrize("form", ["path", "url"])
def test_schema_for_an_sqlite_store_is_refused_not_ignored(attempt: Path, command: list[str],
                                                           form: str) -> None:
    books = attempt / "books.db"
    target = str(books) if form == "path" else f"sqlite:///{books}"
    res = CliRunner().invoke(main, [*command, target, "--schema", "s"])
    assert res.exit_code == 2, res.output
    assert (f"--schema s: {target} is an SQLite store, which has no schemas (--schema is "
            "for a PostgreSQL URL)") in flat(res.output)


# --- check --scenario of another scenario -----------------------------------------------

def test_check_with_another_scenarios_checks_is_refused(attempt: Path) -> None:
    before = (attempt / "verdict.json").read_bytes()
    res = CliRunner().invoke(main, ["check", str(attempt), "--scenario", "procure-to-pay"])
    assert res.exit_code == 2, res.output
    assert ("error: --scenario procure-to-pay: its id is procure-to-pay, but "
            f"{attempt} ran cash-application (summary.json); grading with another "
            "scenario's checks needs --other-scenario") in flat(res.output)
    res = CliRunner().invoke(main, ["check", str(attempt), "--scenario", "procure-to-pay",
                                    "--other-scenario", "--write"])
    assert res.exit_code == 2, res.output
    assert "--write with --other-scenario" in flat(res.output)
    assert (attempt / "verdict.json").read_bytes() == before


def test_check_with_other_scenario_marks_the_verdict(attempt: Path) -> None:
    before = (attempt / "verdict.json").read_bytes()
    res = CliRunner().invoke(main, ["check", str(attempt), "--scenario", "procure-to-pay",
                                    "--other-scenario"])
    assert res.exit_code == 1, res.output  # cash-application's books fail p2p's checks
    text = flat(res.output)
    mark = ("graded with the checks of scenario procure-to-pay, not those of "
            "cash-application that the attempt ran (--other-scenario)")
    assert f"NOTE: {mark}" in text and f"verdict rejected {mark}" in text
    assert (attempt / "verdict.json").read_bytes() == before
    # the attempt's own scenario by name needs no flag, and is not marked
    res = CliRunner().invoke(main, ["check", str(attempt), "--scenario", "cash-application"])
    assert res.exit_code == 0 and "other-scenario" not in res.output
    res = CliRunner().invoke(main, ["check", str(attempt), "--other-scenario"])
    assert res.exit_code == 2 and "--other-scenario needs --scenario" in flat(res.output)


def test_an_injection_the_population_cannot_hold_is_a_clear_error(tmp_path: Path) -> None:
    """An injection that needs more than the scenario gives it (accrual_materials with too
    few vendors) stops the run with one line naming it and what it needs: exit 2, no
    traceback, the folder marked stopped (error.txt) so --replace can reuse it."""
    from scenarios.loader import find_scenario

    folder = tmp_path / "sc"
    shutil.copytree(find_scenario("accruals-and-prepaids").parent, folder)
    spec = folder / "scenario.yaml"
    text = spec.read_text()
    assert "  vendors:\n    count: 9\n" in text
    spec.write_text(text.replace("  vendors:\n    count: 9\n", "  vendors:\n    count: 2\n"))
    out = tmp_path / "a"
    res = CliRunner().invoke(main, ["run", str(folder / "scenario.yaml"), "--out", str(out),
                                    "--quiet"])
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    line = " ".join(res.output.split())
    assert line.startswith("error: accruals-and-prepaids seed 1: the injection "
                           "accrual_materials on 2026-05-01 cannot be planted: "), line
    assert "needs 9 vendors" in line and "the population has 2" in line
    assert "nothing was graded" in line and "Traceback" not in res.output
    assert (out / "error.txt").is_file() and not (out / "summary.json").exists()
    again = CliRunner().invoke(main, ["run", str(folder / "scenario.yaml"), "--out", str(out),
                                      "--quiet", "--replace"])
    assert again.exit_code == 2 and "cannot be planted" in again.output


@pytest.mark.parametrize("command", [
    ["run", "{scenario}", "--out", "{tmp}/a"],
    ["validate", "{scenario}", "--seeds", "0-1"],
    ["validate", "{scenario}", "--mutants"],
    ["sweep", "{scenario}", "--seeds", "0", "--systems", "reference", "--label", "x",
     "--results-dir", "{tmp}/r"],
    ["bench", "engine", "--scenario", "{scenario}"],
    ["bench", "sweep", "--scenario", "{scenario}", "--attempts", "2"],
])
@pytest.mark.parametrize(("scenario", "says"), [
    ("no-such-scenario", "scenario 'no-such-scenario': not in the library (expected one of: "),
    ("{tmp}/broken.yaml", "scenario broken.yaml: line 2, column 1: expected the node content"),
])
def test_every_command_that_takes_a_scenario_refuses_a_bad_one_in_a_line(
        tmp_path: Path, command: list[str], scenario: str, says: str) -> None:
    """An unknown library name or a YAML that does not parse: exit 2 and the scenario's
    error in one line, never a traceback (bench engine raised one), nothing written."""
    (tmp_path / "broken.yaml").write_text("id: [\n")
    args = [a.replace("{scenario}", scenario).replace("{tmp}", str(tmp_path)) for a in command]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"error: {says}" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.yaml"]


def test_bench_view_refuses_a_folder_that_is_not_an_attempt(tmp_path: Path) -> None:
    """``bench view --attempt`` of a folder without summary.json: exit 2 naming it (it
    raised FileNotFoundError), before any browser is looked for."""
    result = CliRunner().invoke(main, ["bench", "view", "--attempt", str(tmp_path),
                                       "--loads", "1"])
    assert result.exit_code == 2, result.output
    assert (f"error: --attempt {tmp_path}: no summary.json (expected a finished attempt "
            "folder") in result.output
    assert list(tmp_path.iterdir()) == []


def test_errors_reports_every_known_error_in_a_line() -> None:
    """``errors()`` maps every class of EXIT_CODES to its exit code with one line; an
    unknown exception still propagates (a bug keeps its traceback)."""
    from runs.cli.common import EXIT_CODES, errors

    for cls, code in EXIT_CODES:
        @click.command()
        def raising(cls: type[BaseException] = cls) -> None:
            with errors():
                raise cls("what went wrong")
        result = CliRunner().invoke(raising, [])
        assert result.exit_code == code, (cls, result.output)
        assert result.output == "error: what went wrong\n", cls

    @click.command()
    def buggy() -> None:
        with errors():
            raise KeyError("a bug")
    result = CliRunner().invoke(buggy, [])
    assert isinstance(result.exception, KeyError)


@pytest.mark.parametrize(("option", "value", "ok"), [
    ("--memory", "6g", True), ("--memory", "512m", True), ("--memory", "1073741824", True),
    ("--memory", "6G", True), ("--memory", "abc", False), ("--memory", "6 g", False),
    ("--memory", "6gb", False), ("--memory", "-1", False), ("--memory", "", False),
    ("--memory", "6g\n", False),
    ("--network-mode", "bridge", True), ("--network-mode", "my_net.1", True),
    ("--network-mode", "bad mode", False), ("--network-mode", "-x", False),
])
def test_docker_limits_are_checked_as_the_systems_file_checks_them(
        tmp_path: Path, option: str, value: str, ok: bool) -> None:
    """``run --memory`` and ``--network-mode`` take what a systems file's ``memory`` and
    ``network_mode`` take (one pattern each): a bad one is refused before the attempt
    folder exists, naming the option, the value and the form (the engine refused ``abc``
    at turn 1, an infrastructure error, exit 3)."""
    from runs.campaigns.systems import load_systems_file
    from runs.errors import SystemsError

    field = option.removeprefix("--").replace("-", "_")
    adapter = tmp_path / "adapter" / "run"
    adapter.parent.mkdir()
    adapter.write_text("#!/bin/sh\nexit 0\n")
    adapter.chmod(0o755)
    systems = tmp_path / "systems.yaml"
    systems.write_text(f"a:\n  adapter: adapter/run\n  mode: docker\n"
                       f"  {field}: {json.dumps(value)}\n")
    if ok:
        load_systems_file(systems)
    else:
        with pytest.raises(SystemsError, match=f"a.{field}"):
            load_systems_file(systems)
    result = CliRunner().invoke(main, [
        "run", "cash-application", "--out", str(tmp_path / "a"), "--agent-cmd", str(adapter),
        "--docker", "no-such-image:x", option, value, "--turn-timeout", "5"])
    if ok:  # accepted: the run goes on to the (missing) image, an infrastructure error
        assert "Invalid value" not in result.output
    else:
        assert result.exit_code == 2, result.output
        assert f"Invalid value for '{option}': {value!r} is not a" in result.output
        assert not (tmp_path / "a").exists()


def test_ledger_events_refuses_a_type_no_event_has(attempt: Path) -> None:
    """A misspelt ``--type`` listed nothing, silently: it is refused, with the types it is
    close to (or the form expected), exit 2."""
    res = CliRunner().invoke(main, ["ledger", "events", str(attempt), "--type",
                                    "invoice_isued"])
    assert res.exit_code == 2, res.output
    assert ("'invoice_isued' is not an event type (did you mean invoice_issued"
            in flat(res.output))
    res = CliRunner().invoke(main, ["ledger", "events", str(attempt), "--type", "zzzz"])
    assert res.exit_code == 2 and "expected a type of the books or of the world" in flat(
        res.output), res.output


def test_ledger_events_knows_every_type_an_attempt_writes(attempt: Path) -> None:
    """Every type in a real attempt's log (both realms) passes ``--type`` and lists its
    events."""
    import sqlite3

    from runs.cli.ledger import event_types

    with sqlite3.connect(attempt / "books.db") as conn:
        written = {t for (t,) in conn.execute("SELECT DISTINCT type FROM events")}
    assert written and written <= set(event_types())
    some = sorted(written)[0]
    res = CliRunner().invoke(main, ["ledger", "events", str(attempt), "--type", some,
                                    "--format", "jsonl", "--limit", "1"])
    assert res.exit_code == 0 and json.loads(res.output)["type"] == some, res.output
