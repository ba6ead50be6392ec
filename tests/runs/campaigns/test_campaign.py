"""erpsim sweep: the campaign folder, its rows, refusals, errors that stay counted, resume."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from runs.campaigns.jobs import run_job
from runs.campaigns.ledger import ResultsLedger
from runs.campaigns.plan import AttemptJob, plan_campaign
from runs.campaigns.run import CampaignLock, comparable, read_campaign, run_campaign, tally
from runs.campaigns.systems import builtin_system, resolve_systems
from runs.cli import main
from runs.errors import LabelExists
from scenarios.loader import find_scenario, load_scenario

LIB = find_scenario("cash-application").parent
FILE_CHECK = {"type": "csv_columns", "path": "out/unapplied.csv",
              "columns": ["line_id", "reason"]}


def small_scenario(tmp_path: Path, *, days: int = 3, name: str = "sc",
                   **extra: object) -> Path:
    """cash-application on a few business days and 25 customers; the reference passes,
    null fails (its one required check wants out/unapplied.csv)."""
    folder = tmp_path / name
    shutil.copytree(LIB, folder)
    data = yaml.safe_load((folder / "scenario.yaml").read_text())
    data["calendar"] = {"start": "2026-03-02", "business_days": days, "holidays": []}
    data["company"]["opening"]["ar_open_invoices"] = 40
    data["population"]["customers"]["count"] = 25
    data["injections"] = []
    data["checks"] = [FILE_CHECK]
    data.update(extra)
    (folder / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder / "scenario.yaml"


def sweep(*args: str) -> object:
    """Invoke ``erpsim sweep`` in this process."""
    return CliRunner().invoke(main, ["sweep", *args], catch_exceptions=False)


def ledger_rows(folder: Path) -> list:
    with ResultsLedger.open(folder / "results.db") as ledger:
        return ledger.rows()


def test_sweep_writes_the_campaign_folder_and_one_row_per_attempt(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path)
    res = sweep(str(sc), "--seeds", "0-1", "--systems", "reference,null", "--runs", "2",
                "--label", "demo", "--results-dir", str(tmp_path / "results"))
    assert res.exit_code == 0, res.output
    folder = tmp_path / "results" / "demo"
    assert sorted(p.name for p in folder.iterdir()) == [".sweep.lock", "attempts",
                                                        "campaign.json", "results.db"]
    out = " ".join(res.output.split())
    assert "reference │ 4 │ 4 │ 100.0%" in out and "null │ 4 │ 0 │ 0.0%" in out

    rows = ledger_rows(folder)
    assert [r.key for r in rows] == [("cash-application", s, sy, r) for s in (0, 1)
                                     for sy in ("null", "reference") for r in (1, 2)]
    for r in rows:
        assert r.label == "demo" and r.kind == "scenario" and r.status == "completed"
        assert r.exit_codes == (None, None, None)  # built-in agents run in-process
        assert len(r.turn_durations) == 3 and r.duration_s > 0
        assert (r.input_tokens, r.output_tokens, r.cost_usd) == (None, None, None)
        assert r.error is None and r.grader_error is None
        assert r.scorer is not None and r.scorer["name"] == "erpsim-checks"
        assert r.attempt_dir == (f"attempts/cash-application/{r.system}/seed-{r.seed}/"
                                 f"rep-{r.repetition}")
        attempt = folder / r.attempt_dir
        summary = json.loads((attempt / "summary.json").read_text())
        verdict = json.loads((attempt / "verdict.json").read_text())
        assert r.final_hash == summary["final_hash"] == verdict["final_log_hash"]
        assert r.outputs == verdict["outputs"]
        assert [c["name"] for c in r.checks] == ["csv_columns#1"]
        assert r.started_at <= r.finished_at
        if r.system == "reference":
            assert r.accepted and r.verdict_status == "accepted"
            assert (r.required_passed, r.required_total, r.check_fraction) == (1, 1, 1.0)
            assert set(r.outputs) == {"unapplied.csv"}
        else:
            assert not r.accepted and r.verdict_status == "rejected"
            assert (r.required_passed, r.required_total, r.check_fraction) == (0, 1, 0.0)
    # the same seed and agent give the same books, whichever repetition
    by = {r.key: r for r in rows}
    assert by["cash-application", 1, "reference", 1].final_hash == \
        by["cash-application", 1, "reference", 2].final_hash
    assert not list(folder.rglob(".*partial*"))


def test_campaign_json_records_the_matrix_and_the_environment(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2)
    res = sweep(str(sc), "--seeds", "3,5", "--systems", "null", "--label", "env",
                "--results-dir", str(tmp_path / "r"), "--quiet")
    assert res.exit_code == 0, res.output
    data = read_campaign(tmp_path / "r" / "env")
    assert data["format"] == "erpsim-campaign/1" and data["label"] == "env"
    m = data["matrix"]
    assert m["scenarios"] == [{"name": "cash-application", "kind": "scenario",
                               "source": str(sc.absolute()),
                               "sha256": load_scenario(sc).sha256, "seeds": [3, 5],
                               "category": "cash application"}]
    assert m["seeds"] == [3, 5] and m["repetitions"] == 1 and m["attempts"] == 2
    assert m["systems"] == [{"name": "null", "builtin": True,
                             "declaration": {"builtin": "null"},
                             "sha256": builtin_system("null").sha256}]
    env = data["environment"]
    from importlib.metadata import version

    assert env["erpsim_version"] == version("erpsim")
    assert env["python"].count(".") == 2
    for pkg in ("sqlalchemy", "pydantic", "simpy", "dask", "distributed"):
        assert env["packages"][pkg] == version(pkg)
    assert env["docker_images"] == {}
    assert isinstance(data["command"], list)
    assert data["runs"][0]["parallel"] == 1 and data["runs"][0]["dask"] is None


def test_an_existing_label_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2)
    args = [str(sc), "--seeds", "0", "--systems", "null", "--label", "once",
            "--results-dir", str(tmp_path / "r"), "--quiet"]
    assert sweep(*args).exit_code == 0
    folder = tmp_path / "r" / "once"
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()
              and not p.name.endswith(("-wal", "-shm"))}
    rows = ledger_rows(folder)
    res = sweep(*args)
    assert res.exit_code == 2
    assert (f"error: label 'once' exists already ({folder}); a label is never overwritten: "
            "choose another --label, or --resume to complete it") in " ".join(
                res.output.split())
    after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()
             and not p.name.endswith(("-wal", "-shm"))}
    assert after == before and ledger_rows(folder) == rows

    plan = plan_campaign("once", scenarios=[str(sc)], seeds=[0],
                         systems=resolve_systems(["null"]))
    with pytest.raises(LabelExists):
        run_campaign(plan, folder)


def test_resume_refuses_another_matrix_and_runs_nothing_when_complete(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2)
    base = [str(sc), "--systems", "null", "--label", "m", "--results-dir",
            str(tmp_path / "r"), "--quiet"]
    assert sweep(*base, "--seeds", "0-1").exit_code == 0
    rows = ledger_rows(tmp_path / "r" / "m")

    res = sweep(*base, "--seeds", "0-2", "--resume")
    assert res.exit_code == 2
    out = " ".join(res.output.split())
    assert "--resume: the matrix differs from" in out
    assert "seeds: recorded 0-1, now 0-2" in out

    res = sweep(*base, "--seeds", "0-1", "--runs", "2", "--resume")
    assert res.exit_code == 2 and "repetitions: recorded 1, now 2" in " ".join(
        res.output.split())

    res = sweep(*base, "--seeds", "0-1", "--resume")
    assert res.exit_code == 0, res.output
    assert "0 attempts to run of 2 (resuming)" in " ".join(res.output.split())
    assert ledger_rows(tmp_path / "r" / "m") == rows  # same rows, same timestamps
    data = read_campaign(tmp_path / "r" / "m")
    assert [r.get("resume", False) for r in data["runs"]] == [False, True]

    res = sweep(*base, "--seeds", "0-1", "--label", "nope", "--resume")
    assert res.exit_code == 2 and "--resume: no campaign 'nope'" in res.output

    with CampaignLock(tmp_path / "r" / "m"):  # another sweep is running the label
        res = sweep(*base, "--seeds", "0-1", "--resume")
    assert res.exit_code == 2
    assert (f"error: {tmp_path / 'r' / 'm'} is being run by another sweep (pid "
            f"{os.getpid()}); wait for it to end or stop it, then --resume") in " ".join(
                res.output.split())


def test_a_harness_exception_is_recorded_counted_and_rerun_by_resume(tmp_path: Path) -> None:
    # no solver.py in the folder and reference_agent names no scenario that has one:
    # run_attempt raises in the worker (a harness fault, not the agent's)
    sc = small_scenario(tmp_path, days=2, reference_agent="solver-not-here")
    (sc.parent / "solver.py").unlink()
    base = [str(sc), "--seeds", "0-1", "--systems", "reference,null", "--label", "err",
            "--results-dir", str(tmp_path / "r"), "--quiet"]
    res = sweep(*base)
    assert res.exit_code == 1, res.output
    out = " ".join(res.output.split())
    assert "2 attempt(s) ended in an infrastructure error; rerun them with:" in out
    folder = tmp_path / "r" / "err"
    rows = ledger_rows(folder)
    assert len(rows) == 4
    errors = [r for r in rows if r.system == "reference"]
    for r in errors:
        assert r.status == "infrastructure_error" and not r.accepted
        assert r.verdict_status is None and r.checks == () and r.final_hash is None
        assert r.error is not None and r.error.startswith("AttemptError: scenario "
                                                          "cash-application has no reference "
                                                          "solver 'solver-not-here'")
        assert "Traceback" in (folder / r.attempt_dir / "error.txt").read_text()
    # errors stay in the denominator
    [ref, null] = tally(rows, ["reference", "null"])
    assert (ref.attempts, ref.accepted, ref.infrastructure_errors, ref.pass_at_1) == (2, 0, 2, 0)
    assert (null.attempts, null.accepted) == (2, 0)
    nulls = [r for r in rows if r.system == "null"]

    # the fault goes away; --resume reruns the two errors and nothing else
    shutil.copy(LIB / "solver.py", sc.parent / "solver.py")
    res = sweep(*base, "--resume")
    assert res.exit_code == 0, res.output
    assert "2 attempts to run of 4 (resuming)" in " ".join(res.output.split())
    again = ledger_rows(folder)
    assert [r for r in again if r.system == "null"] == nulls
    fixed = [r for r in again if r.system == "reference"]
    assert all(r.status == "completed" and r.accepted for r in fixed)
    assert not any((folder / r.attempt_dir / "error.txt").exists() for r in fixed)
    with ResultsLedger.open(folder / "results.db") as ledger:
        assert ledger.replaced() == errors  # the replaced error rows are kept apart


def test_run_job_turns_any_exception_into_an_error_row(tmp_path: Path) -> None:
    campaign = tmp_path / "c"
    job = AttemptJob(label="x", scenario="gone", kind="scenario",
                     source=str(tmp_path / "missing.yaml"), sha256="0" * 64, seed=4,
                     system=builtin_system("null"), repetition=1,
                     attempt_dir=str(campaign / "attempts/gone/null/seed-4/rep-1"),
                     campaign_dir=str(campaign))
    row = run_job(job)
    assert row.status == "infrastructure_error" and row.accepted is False
    assert row.error is not None and row.error.startswith("ScenarioError: scenario ")
    assert "does not exist" in row.error
    assert row.attempt_dir == "attempts/gone/null/seed-4/rep-1"
    assert (campaign / row.attempt_dir / "error.txt").is_file()


def test_a_changed_scenario_is_an_error_not_another_experiment(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2)
    plan = plan_campaign("chg", scenarios=[str(sc)], seeds=[0],
                         systems=resolve_systems(["null"]))
    sc.write_text(sc.read_text().replace("business_days: 2", "business_days: 3"))
    run = run_campaign(plan, tmp_path / "chg")
    [row] = run.recorded
    assert row.status == "infrastructure_error"
    assert "changed since the campaign was planned" in (row.error or "")


def test_parallel_pool_gives_the_rows_of_a_serial_run(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, days=2)
    systems = resolve_systems(["reference", "null"])
    serial = run_campaign(plan_campaign("s", scenarios=[str(sc)], seeds=[0, 1],
                                        systems=systems), tmp_path / "s")
    pooled = run_campaign(plan_campaign("s", scenarios=[str(sc)], seeds=[0, 1],
                                        systems=systems), tmp_path / "p", parallel=2)
    assert [comparable(r) for r in serial.rows()] == [comparable(r) for r in pooled.rows()]


def test_desk_needs_the_desk_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "desk.tasks", None)  # import fails
    res = sweep("--desk", "all", "--systems", "null", "--label", "d", "--results-dir",
                str(tmp_path))
    assert res.exit_code == 2
    assert res.output.startswith("error: --desk: desk tasks are not available in this "
                                 "installation (desk.tasks cannot be imported:")
    assert not (tmp_path / "d").exists()


def test_desk_tasks_run_with_their_own_seed(tmp_path: Path) -> None:
    tasks = pytest.importorskip("desk.tasks")
    names = tasks.list_tasks()
    if not names:
        pytest.skip("no desk task yet")
    task = tasks.load_task(names[0])
    res = sweep("--desk", names[0], "--systems", "reference,null", "--label", "d",
                "--results-dir", str(tmp_path), "--quiet")
    assert res.exit_code == 0, res.output
    rows = ledger_rows(tmp_path / "d")
    assert [(r.scenario, r.kind, r.seed, r.system) for r in rows] == [
        (task.loaded.scenario.id, "desk", task.seed, s) for s in ("null", "reference")]
    ref = rows[1]
    assert ref.accepted and ref.exit_codes == (0,)  # its solution ran as an adapter
    res = sweep("--desk", names[0], "--systems", "oracle", "--label", "o",
                "--results-dir", str(tmp_path))
    assert res.exit_code == 2 and "desk tasks have no oracle" in res.output


@pytest.mark.postgres
def test_store_url_keeps_each_attempts_books_in_a_schema_of_its_own(tmp_path: Path) -> None:
    from erp.store import EventStore
    from runs.campaigns.plan import attempt_schema
    from runs.campaigns.run import redact_url
    from tests.conftest import PG_URL, drop_pg_schema, require_postgres

    require_postgres()
    sc = small_scenario(tmp_path, days=2)
    label = f"pg-{os.getpid()}"
    systems = resolve_systems(["reference"])
    plan = plan_campaign(label, scenarios=[str(sc)], seeds=[0, 1], systems=systems)
    keys = plan.attempt_keys()
    try:
        pg = run_campaign(plan, tmp_path / "pg", store_url=PG_URL, parallel=2)
        lite = run_campaign(plan, tmp_path / "lite")
        assert [comparable(r) for r in pg.rows()] == [comparable(r) for r in lite.rows()]
        for r in pg.rows():
            summary = json.loads((tmp_path / "pg" / r.attempt_dir / "summary.json").read_text())
            assert summary["store"]["schema"] == attempt_schema(tmp_path / "pg", label, r.key)
            assert not (tmp_path / "pg" / r.attempt_dir / "books.db").exists()
            store = EventStore.open(PG_URL, schema=summary["store"]["schema"])
            try:
                assert store.verify().head_hash == r.final_hash
            finally:
                store.close()
        assert read_campaign(tmp_path / "pg")["runs"][0]["store_url"] == redact_url(PG_URL)
    finally:
        for key in keys:
            drop_pg_schema(attempt_schema(tmp_path / "pg", label, key))


def test_store_urls_are_recorded_without_their_password() -> None:
    from runs.campaigns.run import redact_url

    assert redact_url("postgresql://u:secret@db.example:5432/x") == \
        "postgresql://u:***@db.example:5432/x"
    assert redact_url(None) is None


def test_all_plans_every_library_scenario_and_goes_alone() -> None:
    from runs.errors import CampaignError
    from scenarios.loader import list_library

    plan = plan_campaign("lib", scenarios=["all"], seeds=[0, 1],
                         systems=[builtin_system("null")], tier="easy")
    assert [t.name for t in plan.targets] == list_library()
    assert len(plan.targets) >= 6 and {t.tier for t in plan.targets} == {"easy"}
    with pytest.raises(CampaignError, match="'all' \\(every library scenario\\) goes alone"):
        plan_campaign("lib", scenarios=["all", "cash-application"], seeds=[0],
                      systems=[builtin_system("null")])


def test_attempt_schemas_belong_to_their_campaign_folder(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Two campaigns of one label in two folders on one ``--store-url`` never share (and so
    never clear) each other's schemas; the same folder, however written, finds its own."""
    from runs.campaigns.plan import attempt_schema

    key = ("month-end-close", 0, "reference", 0)
    a, b = tmp_path / "a", tmp_path / "b"
    assert attempt_schema(a, "pg", key) != attempt_schema(b, "pg", key)
    monkeypatch.chdir(tmp_path)
    assert attempt_schema("a", "pg", key) == attempt_schema(a, "pg", key)
    assert attempt_schema(tmp_path / "x" / ".." / "a", "pg", key) == attempt_schema(a, "pg", key)
    assert attempt_schema(a, "pg", key) != attempt_schema(a, "pg", (*key[:3], 1))
    assert len(attempt_schema(a, "pg", key)) < 63
