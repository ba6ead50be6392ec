"""``erpsim report``, ``compare`` and ``rescore`` on campaign folders.

Report and compare run on ledgers written with the real ``ResultsLedger`` from
hand-made rows; rescore on real attempt folders (``run_attempt`` on a shrunken
cash-application) and once end to end after a real ``erpsim sweep``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from runs.attempt import run_attempt
from runs.campaigns.export import ATTEMPT_FIELDS
from runs.campaigns.ledger import AttemptRow, ResultsLedger
from runs.campaigns.reading import matrix_from_campaign
from runs.cli import main
from scenarios.loader import load_scenario
from tests.runs.campaigns.test_metrics import fixture_a, row
from tests.runs.test_grading import FILE_CHECK, small_scenario


def flat(text: str) -> str:
    """Output with table rules dropped and runs of whitespace (padding, wrapping) collapsed."""
    return " ".join(text.translate({ord(c): " " for c in "│┃"}).split())


def invoke(*args: str | Path) -> Any:
    """Run the erpsim command line; stdout and stderr together in ``output``."""
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def make_campaign(results: Path, label: str, rows: list[AttemptRow], *,
                  scenarios: list[dict[str, Any]] | list[str], seeds: list[int],
                  systems: list[str], runs: int) -> Path:
    """A campaign folder as the sweep writes it: campaign.json and results.db."""
    folder = results / label
    folder.mkdir(parents=True, exist_ok=True)
    entries = [s if isinstance(s, dict) else {"name": s, "kind": "scenario",
                                               "source": s, "sha256": "0" * 64}
               for s in scenarios]
    matrix = {"scenarios": entries, "seeds": seeds,
              "systems": [{"name": s, "builtin": True, "declaration": {"builtin": s},
                           "sha256": "0" * 64} for s in systems],
              "runs": runs, "attempts": len(entries) * len(seeds) * len(systems) * runs}
    (folder / "campaign.json").write_text(json.dumps({"label": label, "matrix": matrix,
                                                      "runs": [{"command": []}]}))
    with ResultsLedger.create(folder / "results.db", label=label) as ledger:
        for r in rows:
            ledger.write(r)
    return folder


def two_systems() -> list[AttemptRow]:
    """fixture_a's system A, and B accepting every attempt but those of unit (s2, 1)."""
    a = fixture_a()
    b = [row(r.scenario, r.seed, "B", r.repetition, cost=0.25,
             passed=0 if (r.scenario, r.seed) == ("s2", 1) else 4) for r in a]
    return a + b


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results folder holding campaign ``c`` (complete) and ``part`` (one row missing)."""
    out = tmp_path / "results"
    rows = two_systems()
    kw: dict[str, Any] = {"scenarios": ["s1", "s2"], "seeds": [0, 1], "systems": ["A", "B"],
                          "runs": 3}
    make_campaign(out, "c", rows, **kw)
    make_campaign(out, "part", rows[1:], **kw)
    return out


# --- report ---------------------------------------------------------------------------------

def test_report_prints_every_figure(results: Path) -> None:
    res = invoke("report", "c", "--results-dir", results)
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "2 scenario(s) x 2 seed(s) x 2 system(s) x 3 repetition(s) = 24 attempts" in out
    # A: 6/12 accepted, pass^3 1/4, at least once 3/4, mean fraction 8.25/12, pooled 33/44
    assert "A 12 6 50.0% 25.0% (1/4) 75.0% (3/4) 68.8% 75.0% (33/44)" in out
    # B: 9/12, pass^3 3/4 (unit (s2,1) fails), pooled 36/48
    assert "B 12 9 75.0% 75.0% (3/4) 75.0% (3/4) 75.0% 75.0% (36/48)" in out
    # execution and resources: A has one timeout, one infrastructure error, unknown cost
    assert "A 10 1 0 1 0 unknown (0/12 known) unknown 1.00 1.00" in out
    assert "B 12 0 0 0 0 $3.0000 $0.3333" in out
    for title in ("Per scenario", "Repeatability on one seed", "Variation across seeds",
                  "Per seed"):
        assert title in out
    assert "INCOMPLETE" not in out


def test_report_of_an_incomplete_matrix_says_so_and_exits_1(results: Path) -> None:
    res = invoke("report", "part", "--results-dir", results)
    assert res.exit_code == 1
    out = flat(res.output)
    assert "INCOMPLETE matrix: 23 of 24 attempts recorded" in out
    assert "1 missing: s1 seed 0 A rep 1" in out
    assert "Per system: acceptance" in out  # the figures still print


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_refuses_an_incomplete_matrix(results: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"x.{fmt}"
    res = invoke("report", "part", "--results-dir", results, "--export", fmt, "--out", out)
    assert res.exit_code == 1
    assert "export refused: INCOMPLETE matrix: 23 of 24" in flat(res.output)
    assert "s1 seed 0 A rep 1" in flat(res.output)
    assert not out.exists() and not list(tmp_path.glob("x*"))


def test_export_csv(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.csv"
    res = invoke("report", "c", "--results-dir", results, "--export", "csv", "--out", out)
    assert res.exit_code == 0, res.output
    with out.open() as f:
        attempts = list(csv.DictReader(f))
    assert len(attempts) == 24 and list(attempts[0]) == list(ATTEMPT_FIELDS)
    assert sum(a["accepted"] == "true" for a in attempts) == 15
    infra = [a for a in attempts if a["status"] == "infrastructure_error"]
    assert len(infra) == 1 and infra[0]["verdict_status"] == "" and infra[0]["cost_usd"] == ""
    with (tmp_path / "c.systems.csv").open() as f:
        systems = {r["system"]: r for r in csv.DictReader(f)}
    assert float(systems["A"]["pass_at_1"]) == 0.5
    assert float(systems["A"]["pass_hat_k"]) == 0.25
    assert systems["A"]["cost_per_accepted"] == ""  # unknown, not 0
    assert float(systems["B"]["cost_per_accepted"]) == pytest.approx(3 / 9)


def test_export_json(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    res = invoke("report", "c", "--results-dir", results, "--export", "json", "--out", out)
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["label"] == "c" and doc["k"] == 3
    assert doc["matrix"]["repetitions"] == [1, 2, 3]
    assert [s["system"] for s in doc["systems"]] == ["A", "B"]
    a = doc["systems"][0]
    assert (a["attempts"], a["accepted"], a["all_k_units"], a["at_least_once_units"]) == (
        12, 6, 1, 3)
    assert a["mean_check_fraction"] == pytest.approx(8.25 / 12)
    assert a["cost_per_accepted"] is None
    assert len(doc["attempts"]) == 24 and doc["attempts"][0]["checks"] == []


def test_export_parquet(results: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "c.parquet"
    res = invoke("report", "c", "--results-dir", results, "--export", "parquet", "--out", out)
    assert res.exit_code == 0, res.output
    attempts = pq.read_table(out)
    assert attempts.num_rows == 24 and attempts.column_names == list(ATTEMPT_FIELDS)
    assert sum(attempts.column("accepted").to_pylist()) == 15
    systems = pq.read_table(tmp_path / "c.systems.parquet").to_pylist()
    assert [(s["system"], s["accepted"], s["pass_at_1"]) for s in systems] == [
        ("A", 6, 0.5), ("B", 9, 0.75)]


def test_report_bad_input_exits_2(results: Path, tmp_path: Path) -> None:
    res = invoke("report", "nope", "--results-dir", results)
    assert res.exit_code == 2
    assert "unknown label 'nope'" in flat(res.output)
    assert "expected one of: c, part" in flat(res.output)
    res = invoke("report", "c", "--results-dir", results, "--export", "csv")
    assert res.exit_code == 2 and "--export and --out go together" in flat(res.output)
    res = invoke("report", "c", "--results-dir", results, "--export", "xml", "--out",
                 tmp_path / "x")
    assert res.exit_code == 2 and "'xml' is not one of" in flat(res.output)


# --- compare ---------------------------------------------------------------------------------

def test_compare_prints_the_difference_interval_seed_and_tables(results: Path) -> None:
    res = invoke("compare", "c", "--a", "B", "--b", "A", "--resamples", "2000",
                 "--seed", "7", "--results-dir", results)
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "pass@1 B: 75.00% (9/12)" in out and "pass@1 A: 50.00% (6/12)" in out
    assert "difference (B - A): +25.00 points; 95% interval" in out
    assert "2,000 resamples, seed 7" in out
    # paired by (scenario, seed, repetition), B first: (s1,0) both x3; (s1,1) both x2,
    # only B x1; (s2,0) only B x3; (s2,1) only A x1 (rep 1), neither x2
    assert "both: 5" in out and "only B: 4" in out and "only A: 1" in out
    assert "neither: 2" in out
    again = invoke("compare", "c", "--a", "B", "--b", "A", "--resamples", "2000",
                   "--seed", "7", "--results-dir", results)
    assert again.output == res.output  # reproducible from its seed


def test_compare_uses_and_prints_a_fixed_default_seed(results: Path) -> None:
    from runs.campaigns.metrics import DEFAULT_BOOTSTRAP_SEED, DEFAULT_RESAMPLES

    res = invoke("compare", "c", "--a", "A", "--b", "B", "--results-dir", results)
    assert res.exit_code == 0, res.output
    assert (f"{DEFAULT_RESAMPLES:,} resamples, seed {DEFAULT_BOOTSTRAP_SEED}"
            in flat(res.output))


def test_compare_refuses_mismatched_matrices(results: Path) -> None:
    res = invoke("compare", "part", "--a", "A", "--b", "B", "--results-dir", results)
    assert res.exit_code == 1
    out = flat(res.output)
    assert "cannot compare A with B: their matrices differ" in out
    assert "s1 seed 0: A has repetitions [2, 3], B has [1, 2, 3]" in out


def test_compare_bad_input_exits_2(results: Path) -> None:
    res = invoke("compare", "c", "--a", "A", "--b", "Z", "--results-dir", results)
    assert res.exit_code == 2
    assert "--b: unknown system 'Z' in campaign c (expected one of: A, B)" in flat(res.output)
    res = invoke("compare", "c", "--a", "A", "--b", "A", "--results-dir", results)
    assert res.exit_code == 2 and "expected two different systems" in res.output
    res = invoke("compare", "c", "--a", "A", "--b", "B", "--resamples", "0",
                 "--results-dir", results)
    assert res.exit_code == 2
    res = invoke("compare", "zz", "--a", "A", "--b", "B", "--results-dir", results)
    assert res.exit_code == 2 and "unknown label 'zz'" in res.output


def test_matrix_from_campaign_reads_the_sweep_record() -> None:
    m = matrix_from_campaign({"matrix": {"scenarios": [{"name": "x", "kind": "scenario"}],
                                         "seeds": [3, 1], "systems": [{"name": "null"}],
                                         "runs": 2}})
    assert (m.scenarios, m.seeds, m.systems, m.repetitions) == (("x",), (3, 1), ("null",),
                                                                (1, 2))
    assert matrix_from_campaign({"matrix": {"scenarios": ["x"], "seeds": "0-2",
                                            "systems": ["a"], "repetitions": 1}}).seeds == (
        0, 1, 2)


# --- rescore -----------------------------------------------------------------------------------

CRASHING = {"type": "custom", "module": "check.py"}  # no reference folder: raises


def _row(folder: Path, campaign: Path, system: str, seed: int, rep: int) -> AttemptRow:
    """The ledger row of a finished attempt folder (as the campaign runner records it)."""
    summary = json.loads((folder / "summary.json").read_text())
    verdict = json.loads((folder / "verdict.json").read_text())
    return AttemptRow(
        label=campaign.name, scenario=summary["scenario"], kind="scenario", seed=seed,
        system=system, repetition=rep, status="completed", exit_codes=(None,),
        grader_error="; ".join(f"{g['check']}: {g['error']}"
                               for g in verdict["grader_errors"]) or None,
        verdict_status=verdict["status"], accepted=verdict["accepted"],
        checks=tuple({k: r[k] for k in ("name", "passed", "required", "detail", "metrics")}
                     for r in verdict["results"]),
        required_passed=verdict["required_passed"], required_total=verdict["required_total"],
        check_fraction=1.0, turn_durations=(0.1,), duration_s=0.5, input_tokens=None,
        output_tokens=None, cost_usd=None, outputs=verdict["outputs"],
        final_hash=summary["final_hash"], scorer=verdict["scorer"],
        attempt_dir=folder.relative_to(campaign).as_posix(), started_at="", finished_at="",
        error=None)


@pytest.fixture(scope="module")
def graded_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Campaign ``r``: cash-application (3 days) seed 1, reference and null, 2 runs.

    reference rep 1 accepted; reference rep 2 ran with a crashing extra check (grader
    error); null rep 1 rejected; null rep 2 an infrastructure error with no folder.
    """
    tmp = tmp_path_factory.mktemp("rescore")
    sc = small_scenario(tmp, [FILE_CHECK])
    crash = small_scenario(tmp / "crash", [FILE_CHECK, CRASHING])
    loaded = load_scenario(sc)
    campaign = tmp / "results" / "r"
    rows = []
    for system, rep, scenario in (("reference", 1, sc), ("reference", 2, crash),
                                  ("null", 1, sc)):
        folder = campaign / "attempts" / "cash-application" / system / "seed-1" / f"rep-{rep}"
        run_attempt(load_scenario(scenario), 1, system, folder)
        rows.append(_row(folder, campaign, system, 1, rep))
    infra = row("cash-application", 1, "null", 2, status="infrastructure_error")
    rows.append(AttemptRow(**{**infra.to_json(), "label": "r", "error": "adapter missing",
                              "attempt_dir": "attempts/cash-application/null/seed-1/rep-2"}))
    make_campaign(tmp / "results", "r", rows, seeds=[1], systems=["reference", "null"], runs=2,
                  scenarios=[{"name": "cash-application", "kind": "scenario",
                              "source": str(sc), "sha256": loaded.sha256}])
    for name, checks in (("loose", [FILE_CHECK]),
                         ("strict", [{**FILE_CHECK, "columns": ["line_id", "absent"]}])):
        (tmp / name).mkdir()
        (tmp / name / "cash-application.yaml").write_text(yaml.safe_dump({"checks": checks}))
    return tmp


@pytest.fixture
def rescore_dir(graded_campaign: Path, tmp_path: Path) -> Path:
    """A private copy of the graded campaign (rescoring adds receipts to its ledger)."""
    dest = tmp_path / "g"
    shutil.copytree(graded_campaign, dest, symlinks=True)
    return dest


def _fingerprint(campaign: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The ledger rows and the sha256 of every verdict.json: what rescoring must not touch."""
    with ResultsLedger.open(campaign / "results.db") as ledger:
        rows = [r.to_json() for r in ledger.rows()]
    return rows, {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
                  for p in sorted(campaign.rglob("verdict.json"))}


def test_rescore_prints_transitions_and_new_pass_rates(rescore_dir: Path) -> None:
    results = rescore_dir / "results"
    before = _fingerprint(results / "r")
    res = invoke("rescore", "r", "--scorer", rescore_dir / "loose", "--results-dir", results)
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "receipts: 3 written, 0 already stored" in out
    # the crashed check is gone from the loose scorer: the ungraded attempt is accepted
    assert "reference: ungraded -> accepted: 1" in out
    assert "null: no verdict changed" in out
    assert "reference 2 1 50.00% 2 100.00% +50.00 pts" in out
    assert "null 2 0 0.00% 0 0.00% +0.00 pts" in out
    assert ("1 attempt(s) skipped, no finished attempt to grade (no receipt; no verdict above),"
            " e.g. cash-application 1 null 2: no finished attempt (infrastructure_error: "
            "adapter missing)") in out
    assert _fingerprint(results / "r") == before  # rows and verdict.json untouched

    res = invoke("rescore", "r", "--scorer", rescore_dir / "strict", "--results-dir", results)
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "reference: accepted -> rejected: 1; ungraded -> rejected: 1" in out
    assert "reference 2 1 50.00% 0 0.00% -50.00 pts" in out
    with ResultsLedger.open(results / "r" / "results.db") as ledger:
        assert len(ledger.receipts("loose")) == 3 and len(ledger.receipts("strict")) == 3


def test_rescore_receipts_bind_verdict_outputs_scorer_and_original(rescore_dir: Path) -> None:
    results = rescore_dir / "results"
    res = invoke("rescore", "r", "--scorer", rescore_dir / "loose", "--results-dir", results)
    assert res.exit_code == 0, res.output
    with ResultsLedger.open(results / "r" / "results.db") as ledger:
        rows = {r.key: r for r in ledger.rows()}
        receipts = {rc.key: rc for rc in ledger.receipts("loose")}
    # an attempt that never finished is not graded: no receipt (a receipt is a verdict)
    assert set(receipts) == {k for k, r in rows.items() if r.status != "infrastructure_error"}
    manifests = {rc.scorer_definitions_sha256 for rc in receipts.values()}
    assert len(manifests) == 1 and f"manifest sha256 {manifests.pop()}" in flat(res.output)
    for key, rc in receipts.items():
        assert rc.verify()
        assert rc.original_verdict_status == rows[key].verdict_status
        folder = results / "r" / rows[key].attempt_dir
        assert rc.outputs == rows[key].outputs
        assert ("unapplied.csv" in rc.outputs) == (key[2] == "reference")
        assert rc.verdict["final_log_hash"] == rows[key].final_hash
        assert rc.original_verdict_sha256 == hashlib.sha256(
            (folder / "verdict.json").read_bytes()).hexdigest()
    ref2 = receipts["cash-application", 1, "reference", 2]
    assert (ref2.original_verdict_status, ref2.verdict["status"]) == ("grader_error",
                                                                      "accepted")


def test_rescore_again_with_the_same_scorer_adds_nothing(rescore_dir: Path) -> None:
    results = rescore_dir / "results"
    first = invoke("rescore", "r", "--scorer", "current", "--results-dir", results)
    assert first.exit_code == 0, first.output
    assert "receipts: 3 written" in flat(first.output)
    # the same scorer again, its scenario found another way: same receipts, none added
    lib = rescore_dir / "lib"
    shutil.copytree(rescore_dir / "sc", lib / "cash-application")
    second = invoke("rescore", "r", "--scorer", "current", "--scenario-dir", lib,
                    "--results-dir", results)
    assert second.exit_code == 0, second.output
    assert "receipts: 0 written, 3 already stored" in flat(second.output)
    with ResultsLedger.open(results / "r" / "results.db") as ledger:
        receipts = ledger.receipts("current")
    assert len(receipts) == 3 and len({r.receipt_sha256 for r in receipts}) == 3


def test_rescore_bad_input_exits_2(rescore_dir: Path) -> None:
    results = rescore_dir / "results"
    res = invoke("rescore", "r", "--scorer", "v9-nowhere", "--results-dir", results)
    assert res.exit_code == 2
    assert "--scorer 'v9-nowhere': unknown scorer (expected 'current' or a folder" in flat(
        res.output)
    empty = rescore_dir / "empty"
    empty.mkdir()
    res = invoke("rescore", "r", "--scorer", empty, "--results-dir", results)
    assert res.exit_code == 2 and "cash-application.yaml" in res.output
    bad = rescore_dir / "bad"
    bad.mkdir()
    (bad / "cash-application.yaml").write_text("checks:\n  - {type: no_such_check}\n")
    res = invoke("rescore", "r", "--scorer", bad, "--results-dir", results)
    assert res.exit_code == 2 and "unknown check type" in res.output
    res = invoke("rescore", "nope", "--scorer", "current", "--results-dir", results)
    assert res.exit_code == 2 and "unknown label 'nope'" in res.output


# --- end to end -------------------------------------------------------------------------------

def test_sweep_then_report_compare_export_and_rescore(tmp_path: Path) -> None:
    sc = small_scenario(tmp_path, [FILE_CHECK])
    results = tmp_path / "results"
    res = invoke("sweep", sc, "--seeds", "1-2", "--systems", "reference,null", "--runs", "2",
                 "--label", "e2e", "--results-dir", results, "--quiet")
    assert res.exit_code == 0, res.output
    res = invoke("report", "e2e", "--results-dir", results, "--export", "json", "--out",
                 tmp_path / "e2e.json")
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "reference 4 4 100.0% 100.0% (2/2) 100.0% (2/2)" in out
    assert "null 4 0 0.0% 0.0% (0/2) 0.0% (0/2)" in out
    doc = json.loads((tmp_path / "e2e.json").read_text())
    assert [s["pass_at_1"] for s in doc["systems"]] == [1.0, 0.0]
    res = invoke("compare", "e2e", "--a", "reference", "--b", "null", "--resamples", "500",
                 "--results-dir", results)
    assert res.exit_code == 0, res.output
    assert "difference (reference - null): +100.00 points; 95% interval +100.00 to +100.00" \
        in flat(res.output)
    res = invoke("rescore", "e2e", "--scorer", "current", "--results-dir", results)
    assert res.exit_code == 0, res.output
    assert "receipts: 8 written" in flat(res.output)
    assert "reference: no verdict changed" in flat(res.output)
