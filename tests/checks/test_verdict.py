"""Verdicts: acceptance, grader errors, hashes, the JSON form and its atomic write."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from checks.context import CheckContext
from checks.registry import (
    REGISTRY,
    CheckResult,
    CheckSpec,
    check_type,
    definitions_hash,
    load_builtin,
    parse_checks,
)
from checks.verdict import (
    METRICS_DEPTH,
    SCORER_NAME,
    Verdict,
    evaluate,
    json_metrics,
    output_hashes,
    write_verdict,
)
from erp.store import GENESIS, EventStore, NewEvent


class ZtOutcome(CheckSpec):
    """A throwaway check whose outcome is its spec: pass, fail, raise or several results."""

    type: Literal["zt_verdict_outcome"]
    outcome: Literal["pass", "fail", "boom", "several", "decimal", "none", "junk"]


def _outcome(spec: ZtOutcome, ctx: CheckContext) -> CheckResult | list[CheckResult]:
    from decimal import Decimal

    match spec.outcome:
        case "pass":
            return CheckResult("", True, "fine", {"n": 1})
        case "fail":
            return CheckResult("", False, "balance 1200 is 10.00, expected 0.00")
        case "boom":
            raise ZeroDivisionError("the grader divided by zero")
        case "several":
            return [CheckResult("a", True), CheckResult("b", False, "b is off")]
        case "decimal":
            return CheckResult("", True, "", {"x": Decimal("1.5")})
        case "none":
            return []
        case _:
            return ["not a result"]  # type: ignore[list-item]


@pytest.fixture
def outcome_type() -> Iterator[None]:
    """Register ``zt_verdict_outcome`` for one test, then remove it."""
    load_builtin()
    check_type(ZtOutcome)(_outcome)
    yield
    del REGISTRY["zt_verdict_outcome"]


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[EventStore]:
    """A SQLite store with two events (so the head is not the genesis hash)."""
    s = EventStore.open(tmp_path / "b.db", create=True)
    s.append([NewEvent(stream=f"thing:{i}", type="thing_happened", payload=f'{{"n": {i}}}',
                       business_date="2026-03-02") for i in (1, 2)])
    yield s
    s.close()


@pytest.fixture
def ctx(tmp_path: Path, sqlite_store: EventStore) -> CheckContext:
    """A context whose workspace holds two output files."""
    ws = tmp_path / "ws"
    (ws / "out").mkdir(parents=True)
    (ws / "out" / "a.csv").write_text("id\n1\n", encoding="utf-8")
    (ws / "notes.md").write_bytes(b"\xef\xbb\xbfhello\n")
    return CheckContext(sqlite_store, workspace=ws, reference=tmp_path / "ref")


def run(ctx: CheckContext, *outcomes: str | tuple[str, bool]) -> Verdict:
    """Evaluate one outcome check per argument (``(outcome, required)`` for optional)."""
    raw = []
    for o in outcomes:
        name, required = (o, True) if isinstance(o, str) else o
        raw.append({"type": "zt_verdict_outcome", "outcome": name, "required": required})
    return evaluate(parse_checks(raw), ctx, version="9.9")


def test_accepted_iff_every_required_check_passes(outcome_type: None, ctx: CheckContext) -> None:
    v = run(ctx, "pass", "pass")
    assert (v.accepted, v.status, v.failed, v.check_fraction) == (True, "accepted", [], 1.0)
    v = run(ctx, "pass", "fail")
    assert (v.accepted, v.status) == (False, "rejected")
    assert [(r.name, r.detail) for r in v.failed] == [
        ("zt_verdict_outcome#2", "balance 1200 is 10.00, expected 0.00")]
    assert v.check_fraction == 0.5


def test_optional_failures_do_not_reject(outcome_type: None, ctx: CheckContext) -> None:
    v = run(ctx, "pass", ("fail", False), ("several", False))
    assert v.accepted and v.status == "accepted"
    assert [(r.name, r.passed, r.required) for r in v.results] == [
        ("zt_verdict_outcome#1", True, True),
        ("zt_verdict_outcome#2", False, False),
        ("zt_verdict_outcome#3/a", True, False),
        ("zt_verdict_outcome#3/b", False, False)]
    assert v.to_json()["required_total"] == 1


def test_a_raising_check_is_a_grader_error(outcome_type: None, ctx: CheckContext) -> None:
    v = run(ctx, "pass", "boom", "fail", ("boom", False))
    assert v.status == "grader_error"
    assert not v.accepted
    assert [g.check for g in v.grader_errors] == ["zt_verdict_outcome#2", "zt_verdict_outcome#4"]
    err = v.grader_errors[0]
    assert err.error == "ZeroDivisionError: the grader divided by zero"
    assert "Traceback (most recent call last)" in err.traceback
    assert "in _outcome" in err.traceback and "ZeroDivisionError" in err.traceback
    # Never a plain failure; the other checks still ran.
    assert [r.name for r in v.results] == ["zt_verdict_outcome#1", "zt_verdict_outcome#3"]
    assert v.to_json()["status"] == "grader_error"


def test_an_optional_check_that_raises_still_blocks_acceptance(outcome_type: None,
                                                                ctx: CheckContext) -> None:
    v = run(ctx, "pass", ("boom", False))
    assert v.status == "grader_error" and not v.accepted


@pytest.mark.parametrize(("outcome", "message"), [
    ("none", "returned no result"),
    ("junk", "returned str, not CheckResult"),
])
def test_a_malformed_result_is_a_grader_error(outcome_type: None, ctx: CheckContext,
                                              outcome: str, message: str) -> None:
    v = run(ctx, outcome)
    assert v.status == "grader_error"
    assert message in v.grader_errors[0].error


def test_metrics_json_cannot_hold_are_converted_and_never_change_the_result(
        outcome_type: None, ctx: CheckContext) -> None:
    # metrics are diagnostic: a Decimal in them is kept as its text, the check still passes
    v = run(ctx, "decimal")
    assert v.status == "accepted" and not v.grader_errors
    assert v.results[0].metrics == {"x": "1.5"}
    json.dumps(v.to_json(), allow_nan=False)  # strict JSON


def test_json_metrics_converts_what_json_cannot_hold() -> None:
    import datetime as dt
    from decimal import Decimal
    from fractions import Fraction

    import numpy as np

    cyclic: list[Any] = []
    cyclic.append(cyclic)
    out = json_metrics({"nan": float("nan"), "inf": [float("-inf"), 1.5], "d": Decimal("2.50"),
                        "when": dt.date(2026, 3, 2), "set": {3, 1, 2}, 7: "int key",
                        ("a", 1): "tuple key", "np": [np.int64(4), np.float32(0.5),
                                                      np.bool_(True), np.float64("nan")],
                        "frac": Fraction(1, 3), "cycle": cyclic, "ok": {"n": [1, "x", None]}})
    assert out == {"nan": None, "inf": [None, 1.5], "d": "2.50", "when": "2026-03-02",
                   "set": [1, 2, 3], "7": "int key", "('a', 1)": "tuple key",
                   "np": [4, 0.5, True, None], "frac": "1/3",
                   "cycle": out["cycle"], "ok": {"n": [1, "x", None]}}
    json.dumps(out, allow_nan=False)
    depth, inner = 0, out["cycle"]
    while isinstance(inner, list):
        depth, inner = depth + 1, inner[0]
    assert isinstance(inner, str) and depth == METRICS_DEPTH - 1  # a cycle is cut to text


def test_output_hashes_are_sha256_of_the_files(outcome_type: None, ctx: CheckContext) -> None:
    assert ctx.workspace is not None
    v = run(ctx, "pass")
    assert v.outputs == {
        "notes.md": hashlib.sha256(b"\xef\xbb\xbfhello\n").hexdigest(),
        "out/a.csv": hashlib.sha256(b"id\n1\n").hexdigest(),
    }
    assert list(v.outputs) == sorted(v.outputs)
    assert output_hashes(ctx.workspace / "out") == {"a.csv": v.outputs["out/a.csv"]}
    assert output_hashes(None) == {} and output_hashes(ctx.workspace / "absent") == {}
    other = evaluate(parse_checks([{"type": "zt_verdict_outcome", "outcome": "pass"}]), ctx,
                     outputs_root=ctx.workspace / "out", version="9.9")
    assert list(other.outputs) == ["a.csv"]


def test_final_log_hash_is_the_store_head(outcome_type: None, ctx: CheckContext,
                                          sqlite_store: EventStore) -> None:
    position, head = sqlite_store.head()
    assert position == 2 and head != GENESIS
    v = run(ctx, "pass")
    assert (v.final_position, v.final_log_hash) == (position, head)


def test_scorer_identity(outcome_type: None, ctx: CheckContext) -> None:
    specs = parse_checks([{"type": "zt_verdict_outcome", "outcome": "pass"}])
    v = evaluate(specs, ctx, version="9.9")
    assert v.scorer == {"name": SCORER_NAME, "version": "9.9",
                        "definitions_sha256": definitions_hash(specs)}
    assert evaluate(specs, ctx).scorer["version"]  # the installed version by default


def test_json_round_trip(outcome_type: None, ctx: CheckContext, tmp_path: Path) -> None:
    v = run(ctx, "pass", ("several", False), "fail", "boom")
    data = json.loads(json.dumps(v.to_json()))
    back = Verdict.from_json(data)
    assert back == v
    assert back.to_json() == v.to_json()
    assert data["failed"] == ["zt_verdict_outcome#3"]
    assert (data["required_passed"], data["required_total"]) == (1, 2)


def test_write_verdict_is_atomic(outcome_type: None, ctx: CheckContext, tmp_path: Path) -> None:
    attempt = tmp_path / "attempt"
    attempt.mkdir()
    path = attempt / "verdict.json"
    path.write_text("old", encoding="utf-8")
    v = run(ctx, "pass", "fail")
    write_verdict(v, path)
    assert sorted(p.name for p in attempt.iterdir()) == ["verdict.json"]  # no .tmp left
    assert path.stat().st_mode & 0o777 == 0o644
    assert Verdict.from_json(json.loads(path.read_text(encoding="utf-8"))) == v


def test_write_verdict_failure_leaves_the_old_file(outcome_type: None, ctx: CheckContext,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    attempt = tmp_path / "attempt"
    attempt.mkdir()
    path = attempt / "verdict.json"
    path.write_text("old", encoding="utf-8")

    def broken_replace(self: Path, target: Path) -> Path:
        raise OSError("disk gone")

    monkeypatch.setattr(Path, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        write_verdict(run(ctx, "pass"), path)
    assert sorted(p.name for p in attempt.iterdir()) == ["verdict.json"]
    assert path.read_text(encoding="utf-8") == "old"


def test_a_real_file_check_in_a_verdict(ctx: CheckContext) -> None:
    specs = parse_checks([{"type": "csv_row_count", "path": "out/a.csv", "equals": 1},
                          {"type": "file_exists", "path": "out/missing.pdf", "required": False}])
    v = evaluate(specs, ctx, version="9.9")
    assert v.accepted
    assert [(r.name, r.passed) for r in v.results] == [("csv_row_count#1", True),
                                                       ("file_exists#2", False)]
