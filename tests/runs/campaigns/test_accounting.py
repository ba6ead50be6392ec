"""The paper's accounting: figures under a rescoring, categories and their weights, the
repetition structure, tokens and cost, compare on check fractions, exports.

Metrics against hand-computed values on ``AttemptRow`` fixtures; the command line on
ledgers written with the real ``ResultsLedger`` and on a real sweep of built-in systems
rescored with a second scorer.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from runs.campaigns.ledger import AttemptRow
from runs.campaigns.metrics import (
    Price,
    add_usage,
    category_gap,
    category_weights,
    paired_bootstrap,
    repetition_structure,
    rescored_row,
    resources,
    scorer_gaps,
    usage_from,
    weighted_pass,
)
from runs.campaigns.systems import load_systems_file
from runs.errors import SystemsError
from tests.runs.campaigns.test_metrics import fixture_a, row
from tests.runs.campaigns.test_report import flat, invoke, make_campaign
from tests.runs.test_grading import FILE_CHECK, small_scenario

# --- categories ------------------------------------------------------------------------------

CATS = {"r1": "reports", "r2": "reports", "r3": "reports", "o1": "other"}


def two_categories() -> list[AttemptRow]:
    """A and B, 2 repetitions of 4 units: reports (3 units) and other (1 unit).

    A: reports 6/6, other 0/2 -> 6/8.  B: reports 3/6 (one repetition of each), other 2/2
    -> 5/8. Gap 1/8 = +12.5 points.
    """
    rows = []
    for sc in ("r1", "r2", "r3", "o1"):
        for rep in (1, 2):
            a_ok = sc != "o1"
            b_ok = sc == "o1" or rep == 1
            rows.append(row(sc, 0, "A", rep, passed=4 if a_ok else 3))
            rows.append(row(sc, 0, "B", rep, passed=4 if b_ok else 3))
    return rows


def test_task_share_weights_give_the_plain_pass_at_1_gap() -> None:
    rows = two_categories()
    w = category_weights(rows, CATS, "task-share")
    assert w == {"other": 0.25, "reports": 0.75}
    gap = category_gap(rows, CATS, "A", "B", "task-share")
    assert gap.gap == pytest.approx(6 / 8 - 5 / 8)  # the aggregate gap, 12.5 points
    parts = {g.category: g for g in gap.categories}
    # reports: 0.75 * (1 - 0.5) = +37.5 points; other: 0.25 * (0 - 1) = -25 points
    assert parts["reports"].contribution == pytest.approx(0.375)
    assert parts["other"].contribution == pytest.approx(-0.25)
    assert parts["reports"].share == pytest.approx(3.0)  # 37.5 / 12.5
    assert parts["other"].share == pytest.approx(-2.0)
    assert (parts["reports"].extra_accepted, parts["other"].extra_accepted) == (3, -2)
    assert parts["reports"].units == 3


def test_equal_weights_and_a_weights_mapping() -> None:
    rows = two_categories()
    # equal: 0.5 * 0.5 + 0.5 * (-1) = -0.25: the ranking flips with the mixture
    assert category_gap(rows, CATS, "A", "B", "equal").gap == pytest.approx(-0.25)
    # weights normalized: reports 3, other 1 is task-share again
    custom = category_gap(rows, CATS, "A", "B", {"reports": 3, "other": 1})
    assert custom.gap == pytest.approx(0.125) and custom.weighting == "custom"
    assert weighted_pass([r for r in rows if r.system == "B"], CATS,
                         {"reports": 0.5, "other": 0.5}) == pytest.approx(0.75)


@pytest.mark.parametrize(("weights", "message"), [
    ({"reports": 1}, "no weight for category 'other'"),
    ({"reports": 1, "other": 1, "travel": 1}, "weight for category 'travel', which no"),
    ({"reports": -1, "other": 1}, "weight of 'reports' is -1 (expected a number >= 0)"),
    ({"reports": 0, "other": 0}, "the weights sum to 0"),
])
def test_bad_weights_name_the_category(weights: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(
            ")", r"\)")):
        category_weights(two_categories(), CATS, weights)


# --- the repetition structure ----------------------------------------------------------------

def test_repetition_structure_of_fixture_a() -> None:
    rs = repetition_structure(fixture_a(), k=3)
    # units with 3, 2, 0 and 1 accepted repetitions
    assert rs.distribution == {0: 1, 1: 1, 2: 1, 3: 1}
    assert sum(n * c for n, c in rs.distribution.items()) == 6  # the accepted attempts
    # rep 1: (s1,0) (s1,1) (s2,1) accepted; rep 2: (s1,0) (s1,1); rep 3: (s1,0)
    assert rs.per_repetition == {1: (3, 4), 2: (2, 4), 3: (1, 4)}
    # failures: 6; one failed check: (s1,1) rep 3 at 3/4 and (s2,1) rep 2 at 3/4 (timeout)
    assert (rs.failures, rs.one_check_failures) == (6, 2)
    assert rs.completion_minus_acceptance == pytest.approx(8.25 / 12 - 6 / 12)


# --- figures under a rescoring -----------------------------------------------------------------

def test_a_receipt_replaces_the_verdict_and_keeps_the_execution() -> None:
    r = row("s1", 0, "A", 1, cost=0.5, duration=7.0)
    verdict = {"status": "rejected", "accepted": False, "required_passed": 2,
               "required_total": 3, "results": [{"name": "c#1", "passed": False,
                                                 "required": True, "detail": "x",
                                                 "metrics": {}}],
               "grader_errors": [], "scorer": {"name": "v2"}}
    new = rescored_row(r, verdict)
    assert (new.verdict_status, new.accepted, new.required_passed, new.required_total) == (
        "rejected", False, 2, 3)
    assert new.check_fraction == pytest.approx(2 / 3) and new.checks[0]["name"] == "c#1"
    assert (new.cost_usd, new.duration_s, new.status) == (0.5, 7.0, "completed")
    gone = rescored_row(r, {"status": None, "accepted": False})
    assert gone.verdict_status is None and not gone.accepted and gone.required_total is None


def test_scorer_gaps_and_their_change_in_points() -> None:
    a = [row("s1", s, "A", 1) for s in range(4)]
    b = [row("s1", s, "B", 1, passed=4 if s < 2 else 0) for s in range(4)]
    # under v2, one of A's passes becomes a failure: A 3/4, B 2/4
    v2 = [rescored_row(r, {"status": "rejected", "accepted": False, "required_passed": 3,
                           "required_total": 4}) if r.seed == 3 else r for r in a] + b
    gaps = scorer_gaps({"v2": v2, "original": a + b}, "A", "B")
    assert [g.scorer for g in gaps] == ["original", "v2"]
    assert gaps[0].gap == pytest.approx(0.5) and gaps[0].change is None
    assert gaps[1].gap == pytest.approx(0.25) and gaps[1].change == pytest.approx(-0.25)


# --- tokens and cost ---------------------------------------------------------------------------

def test_usage_normalizes_both_conventions() -> None:
    claude = usage_from({"input_tokens": 100, "cache_read_input_tokens": 800,
                         "cache_creation_input_tokens": 100, "output_tokens": 50,
                         "reasoning_output_tokens": 10, "cost_usd": 0.02})
    assert claude is not None
    assert (claude.input, claude.cached, claude.cache_write, claude.uncached) == (
        1000, 800, 100, 100)
    codex = usage_from({"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 40})
    assert codex is not None and (codex.input, codex.cached, codex.uncached) == (1000, 600, 400)
    assert codex.cost_usd is None and codex.reasoning is None
    assert usage_from({"output_tokens": 3}) is None  # input unknown: usage unknown
    both = add_usage([claude, codex])
    assert both is not None and (both.input, both.cached, both.output) == (2000, 1400, 90)
    assert add_usage([claude, None]) is None and add_usage([]) is None


def test_price_turns_tokens_into_cost() -> None:
    u = usage_from({"input_tokens": 1_000_000, "cached_input_tokens": 400_000,
                    "output_tokens": 100_000})
    assert u is not None
    # 600k uncached x $2 + 400k cached x $0.5 + 100k output x $8 = 1.2 + 0.2 + 0.8
    assert Price(2.0, 0.5, 8.0).cost(u) == pytest.approx(2.2)
    w = usage_from({"input_tokens": 0, "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 1_000_000, "output_tokens": 0})
    assert w is not None
    assert Price(2.0, 0.5, 8.0).cost(w) == pytest.approx(2.0)  # writes at the input price
    assert Price(2.0, 0.5, 8.0, cache_write=2.5).cost(w) == pytest.approx(2.5)


def test_resources_known_and_strict_cost_per_accepted() -> None:
    rows = [row("s1", 0, "A", 1), row("s1", 1, "A", 1), row("s1", 2, "A", 1, passed=0)]
    usage = {rows[0].key: usage_from({"input_tokens": 1000, "cached_input_tokens": 250,
                                      "output_tokens": 100}),
             rows[1].key: usage_from({"input_tokens": 3000, "cached_input_tokens": 750,
                                      "output_tokens": 100}),
             rows[2].key: None}
    price = Price(1.0, 0.1, 10.0)
    r = resources(rows, usage, price)
    assert (r.usage_known, r.unknown_usage, r.accepted) == (2, 1, 2)
    assert (r.input, r.cached, r.uncached, r.output) == (4000, 1000, 3000, 200)
    assert r.cache_fraction == pytest.approx(0.25)  # token-weighted: 1000 / 4000
    # (3000 x 1 + 1000 x 0.1 + 200 x 10) / 1e6 = 0.0051, over 2 accepted
    assert r.known_cost_usd == pytest.approx(0.0051)
    assert r.cost_per_accepted == pytest.approx(0.00255)
    assert r.strict_cost_per_accepted is None  # one attempt's usage is unknown
    nothing = resources([rows[2]], usage, price)
    assert nothing.cost_per_accepted is None and nothing.input is None
    # without a price table: the adapters' cost, else the row's
    rows2 = [row("s1", 0, "A", 1, cost=0.3), row("s1", 1, "A", 1, cost=0.1)]
    r2 = resources(rows2, {}, None)
    assert r2.cost_source == "adapter" and r2.strict_cost_per_accepted == pytest.approx(0.2)


def test_compare_mean_check_fraction() -> None:
    a = [row("s1", s, "A", 1, passed=3) for s in range(4)]   # 0.75 each
    b = [row("s1", s, "B", 1, passed=2) for s in range(4)]   # 0.5 each
    cmp = paired_bootstrap(a + b, "A", "B", resamples=200, seed=1, measure="check-fraction")
    assert cmp.measure == "check-fraction"
    assert (cmp.pass_a, cmp.pass_b) == (0.75, 0.5)
    assert cmp.difference == pytest.approx(0.25) and cmp.low == pytest.approx(0.25)
    assert cmp.accepted_a == 0  # the paired tables stay on acceptance
    with pytest.raises(ValueError, match="unknown measure 'x'"):
        paired_bootstrap(a + b, "A", "B", measure="x")


# --- systems: price ------------------------------------------------------------------------------

def _adapter(tmp_path: Path) -> None:
    (tmp_path / "adapters").mkdir(exist_ok=True)
    agent = tmp_path / "adapters" / "agent"
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)


def test_a_systems_file_price_is_recorded_not_hashed(tmp_path: Path) -> None:
    _adapter(tmp_path)
    f = tmp_path / "systems.yaml"
    f.write_text("ext:\n  adapter: adapters/agent\n")
    plain = load_systems_file(f)["ext"]
    f.write_text("ext:\n  adapter: adapters/agent\n  price: {input: 1.25, cached_input: "
                 "0.125, output: 10}\n")
    priced = load_systems_file(f)["ext"]
    assert priced.sha256 == plain.sha256  # an accounting assumption, not the system
    assert priced.record()["price"] == {"input": 1.25, "cached_input": 0.125, "output": 10.0,
                                        "cache_write": None}
    assert "price" not in plain.record()


@pytest.mark.parametrize(("price", "message"), [
    ("{input: 1, output: 2}", "ext.price.cached_input: missing (required)"),
    ("{input: -1, cached_input: 0, output: 2}", "ext.price.input: -1 is not valid"),
    ("{input: 1, cached_input: 0, output: 2, extra: 1}", "ext.price.extra: unknown field"),
])
def test_a_bad_price_names_the_field(tmp_path: Path, price: str, message: str) -> None:
    _adapter(tmp_path)
    f = tmp_path / "systems.yaml"
    f.write_text(f"ext:\n  adapter: adapters/agent\n  price: {price}\n")
    with pytest.raises(SystemsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_systems_file(f)


# --- the command line on a hand-made ledger: categories and weights ---------------------

@pytest.fixture
def categorized(tmp_path: Path) -> Path:
    out = tmp_path / "results"
    make_campaign(out, "cat", two_categories(), seeds=[0], systems=["A", "B"], runs=2,
                  scenarios=[{"name": sc, "kind": "scenario", "source": sc,
                              "sha256": "0" * 64, "category": cat}
                             for sc, cat in CATS.items()])
    return out


def test_report_per_category_repetitions_and_weights(categorized: Path, tmp_path: Path) -> None:
    res = invoke("report", "cat", "--results-dir", categorized)
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "Per category (aggregate weights: task-share)" in out
    assert "reports A 0.750 3 6 6 100.00%" in out and "other B 0.250 1 2 2 100.00%" in out
    assert "(weighted) A 1.000 75.00%" in out and "(weighted) B 1.000 62.50%" in out
    # repetition structure: A has 3 units 2/2 and 1 unit 0/2; every failure is one check
    assert "A 1 0 3 3/4 75.0% 3/4 75.0% 2 2/2" in out
    res = invoke("report", "cat", "--results-dir", categorized, "--weights", "equal")
    assert "(weighted) A 1.000 50.00%" in flat(res.output)
    w = tmp_path / "w.yaml"
    w.write_text("reports: 1\nother: 3\n")
    res = invoke("report", "cat", "--results-dir", categorized, "--weights", w)
    assert res.exit_code == 0, res.output
    assert f"aggregate weights: file {w}" in flat(res.output)
    assert "(weighted) B 1.000 87.50%" in flat(res.output)  # .25 x .5 + .75 x 1


def test_compare_per_category_and_its_warning(categorized: Path) -> None:
    res = invoke("compare", "cat", "--a", "A", "--b", "B", "--resamples", "500",
                 "--results-dir", categorized)
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "warning: only 4 (scenario, seed) unit(s) (fewer than 20)" in out
    assert "reports 3 6/6 100.00% 3/6 50.00% +50.00 pts +3 0.750 +37.50 pts 300.0%" in out
    assert "other 1 0/2 0.00% 2/2 100.00% -100.00 pts -2 0.250 -25.00 pts -200.0%" in out
    assert "task-share weights +12.50 pts; equal weights -25.00 pts" in out
    assert "original 6/8 5/8 +12.50 pts -" in out
    res = invoke("compare", "cat", "--a", "A", "--b", "B", "--resamples", "500",
                 "--measure", "check-fraction", "--results-dir", categorized)
    assert res.exit_code == 0, res.output
    # A: 6 x 1 + 2 x .75 = 7.5 / 8; B: 5 x 1 + 3 x .75 = 7.25 / 8
    assert "mean check fraction A: 93.75%" in flat(res.output)
    assert "difference (A - B): +3.12 points" in flat(res.output)


@pytest.mark.parametrize(("content", "message"), [
    (None, "--weights 'nowhere.yaml': neither a weighting (task-share, equal) nor a file"),
    ("[1, 2]\n", "expected a mapping of category: weight"),
    ("reports: lots\nother: 1\n", "reports: 'lots' is not a weight (expected a number >= 0)"),
    ("reports: 1\n", "no weight for category 'other'"),
    ("reports: 1\nother: 1\ntravel: 1\n", "weight for category 'travel'"),
    ("reports: [\n", "unreadable"),
])
def test_bad_weights_are_a_clear_error(categorized: Path, tmp_path: Path,
                                       content: str | None, message: str) -> None:
    w = Path("nowhere.yaml") if content is None else tmp_path / "w.yaml"
    if content is not None:
        w.write_text(content)
    for cmd in (["report", "cat"], ["compare", "cat", "--a", "A", "--b", "B"]):
        res = invoke(*cmd, "--results-dir", categorized, "--weights", w)
        assert res.exit_code == 2, res.output
        assert message in flat(res.output) and "Traceback" not in res.output


# --- a real sweep rescored with a second scorer ------------------------------------------

@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Campaign ``t``: shrunk cash-application, seeds 1-2, reference/oracle/null, 2 runs,
    rescored with ``strict`` (the file check wants a column nobody writes)."""
    tmp = tmp_path_factory.mktemp("acct")
    sc = small_scenario(tmp, [FILE_CHECK, {"type": "trial_balance_zero"}])
    res = invoke("sweep", sc, "--seeds", "1-2", "--systems", "reference,oracle,null",
                 "--runs", "2", "--label", "t", "--results-dir", tmp / "results", "--quiet")
    assert res.exit_code == 0, res.output
    (tmp / "strict").mkdir()
    (tmp / "strict" / "cash-application.yaml").write_text(yaml.safe_dump({"checks": [
        {**FILE_CHECK, "columns": ["line_id", "absent"]}, {"type": "trial_balance_zero"}]}))
    res = invoke("rescore", "t", "--scorer", tmp / "strict", "--results-dir", tmp / "results")
    assert res.exit_code == 0, res.output
    return tmp


def test_report_and_compare_under_the_second_scorer(swept: Path) -> None:
    results = swept / "results"
    res = invoke("report", "t", "--results-dir", results)
    assert res.exit_code == 0, res.output
    assert "reference 4 4 100.0%" in flat(res.output)
    assert "stored rescorings: strict" in flat(res.output)
    res = invoke("report", "t", "--results-dir", results, "--scorer", "strict")
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "verdicts: scorer strict (stored receipts; manifest sha256" in out
    # every reference and oracle attempt now fails exactly one check (the file check)
    assert "reference 4 0 0.0% 0.0% (0/2) 0.0% (0/2) 50.0%" in out
    assert "reference 2 0 0 0/2 0.0% 0/2 0.0% 4 4/4 +50.00 pts" in out
    assert "n/a (0 accepted)" in out
    # the same by the folder given to rescore
    again = invoke("report", "t", "--results-dir", results, "--scorer", swept / "strict")
    assert again.exit_code == 0 and flat(again.output) == out
    res = invoke("compare", "t", "--a", "reference", "--b", "null", "--scorer", "strict",
                 "--resamples", "200", "--results-dir", results)
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "difference (reference - null): +0.00 points" in out
    assert "original 4/4 0/4 +100.00 pts -" in out
    assert "strict 0/4 0/4 +0.00 pts -100.00 pts" in out


def test_rescore_show_reads_the_receipts_alone(swept: Path, tmp_path: Path) -> None:
    import shutil

    results = tmp_path / "results"
    shutil.copytree(swept / "results", results)
    shutil.rmtree(results / "t" / "attempts")  # no retained outputs needed
    res = invoke("rescore", "t", "--show", "--results-dir", results)
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert "scorer strict: receipts for 12 of 12 attempts" in out
    assert "reference accepted 0 4 0 0" in out and "oracle accepted 0 4 0 0" in out
    assert "reference: accepted -> rejected: 4" in out and "null: no verdict changed" in out
    assert "reference 4 4 100.00% 0 0.00% -100.00 pts" in out
    res = invoke("rescore", "t", "--show", "--scorer", "strict", "--results-dir", results)
    assert res.exit_code == 0 and "scorer strict: receipts for 12" in flat(res.output)
    res = invoke("rescore", "t", "--show", "--scorer", "v9", "--results-dir", results)
    assert res.exit_code == 2 and "--scorer 'v9': unknown scorer for campaign t" in flat(
        res.output)


def test_unknown_scorer_and_missing_receipts(swept: Path, tmp_path: Path) -> None:
    import shutil

    results = tmp_path / "results"
    shutil.copytree(swept / "results", results)
    for cmd in (["report", "t"], ["compare", "t", "--a", "reference", "--b", "null"]):
        res = invoke(*cmd, "--scorer", "v9", "--results-dir", results)
        assert res.exit_code == 2, res.output
        assert ("--scorer 'v9': unknown scorer for campaign t (expected one of: original, "
                "strict" in flat(res.output))
    res = invoke("report", "t", "--scorer", "v9", "--results-dir", results, "--export",
                 "csv", "--out", tmp_path / "x.csv")
    assert res.exit_code == 2 and not (tmp_path / "x.csv").exists()
    with sqlite3.connect(results / "t" / "results.db") as conn:
        conn.execute("DELETE FROM receipts WHERE system = 'null' AND repetition = 2")
    res = invoke("report", "t", "--scorer", "strict", "--results-dir", results)
    assert res.exit_code == 1, res.output
    assert "--scorer strict: receipts for 10 of 12 finished attempts (none for 2" in flat(
        res.output)


def test_exports_under_a_scorer_parquet_native_and_the_frame(swept: Path,
                                                              tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from runs import campaign_frame

    results = swept / "results"
    out = tmp_path / "t.parquet"
    res = invoke("report", "t", "--results-dir", results, "--scorer", "strict", "--export",
                 "parquet", "--out", out)
    assert res.exit_code == 0, res.output
    table = pq.read_table(out)
    schema = table.schema
    assert schema.field("exit_codes").type == pa.list_(pa.int64())
    assert pa.types.is_list(schema.field("checks").type)
    assert pa.types.is_timestamp(schema.field("started_at").type)
    assert pa.types.is_map(schema.field("outputs").type)
    rows = table.to_pylist()
    assert len(rows) == 12 and {r["verdict_source"] for r in rows} == {"strict"}
    assert sum(r["accepted"] for r in rows) == 0
    assert {r["category"] for r in rows} == {"cash application"}
    assert rows[0]["started_at"].tzinfo is not None
    checks = pq.read_table(tmp_path / "t.checks.parquet").to_pylist()
    assert len(checks) == 24 and {c["check"] for c in checks} == {"csv_columns#1",
                                                                  "trial_balance_zero#2"}
    systems = pq.read_table(tmp_path / "t.systems.parquet").to_pylist()
    assert [(s["system"], s["accepted"]) for s in systems] == [
        ("reference", 0), ("oracle", 0), ("null", 0)]
    doc_path = tmp_path / "t.json"
    res = invoke("report", "t", "--results-dir", results, "--export", "json", "--out",
                 doc_path)
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(doc_path.read_text())
    assert doc["scorer"] == "original" and sum(a["accepted"] for a in doc["attempts"]) == 8

    frame = campaign_frame("t", results_dir=results)
    assert len(frame) == 12 and int(frame["accepted"].sum()) == 8
    assert str(frame["started_at"].dtype).startswith("datetime64")
    assert isinstance(frame["checks"].iloc[0], list)
    assert frame["tokens_input"].isna().all()  # built-in agents: usage unknown, not 0
    strict = campaign_frame(results / "t", scorer="strict", per="checks")
    assert len(strict) == 24 and not strict[strict["check"] == "csv_columns#1"]["passed"].any()
    from runs.errors import BadInput

    with pytest.raises(BadInput, match="unknown scorer"):
        campaign_frame("t", results_dir=results, scorer="v9")
    with pytest.raises(BadInput, match="per='x'"):
        campaign_frame("t", results_dir=results, per="x")
