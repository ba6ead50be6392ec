"""Evaluating a check list into a verdict.

Accepted if and only if every required check passes. A check that raises is a
grader error (kept with its traceback), never a plain failure: the verdict's status
is then ``grader_error`` and it is not accepted. The verdict binds the results to the
scorer's identity (name, version, hash of the definitions), the sha256 of every output
file, the final log head and (``books``) how the books were verified before the checks
read them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checks.context import CheckContext
from checks.registry import REGISTRY, CheckResult, CheckSpec, definitions_hash, load_builtin

SCORER_NAME = "erpsim-checks"


def scorer_version() -> str:
    """The version of the check implementations (the installed erpsim version)."""
    from importlib.metadata import version

    return _version_by(version)


@functools.cache
def _version_by(lookup: Callable[[str], str]) -> str:
    """erpsim's version as ``lookup`` gives it, looked up once a process (per-date control
    evaluates at every date, and the metadata lookup takes milliseconds)."""
    from importlib.metadata import PackageNotFoundError

    try:
        return lookup("erpsim")
    except PackageNotFoundError:  # pragma: no cover - running from a bare tree
        return "0+unknown"


@dataclass
class GraderError:
    """A check that raised instead of answering."""

    check: str
    error: str
    traceback: str

    def to_json(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"check": self.check, "error": self.error, "traceback": self.traceback}


@dataclass
class Verdict:
    """Every check result, the acceptance, and what they were computed from."""

    results: list[CheckResult]
    grader_errors: list[GraderError]
    scorer: dict[str, str]
    outputs: dict[str, str] = field(default_factory=dict)
    final_log_hash: str | None = None
    final_position: int | None = None
    books: dict[str, Any] | None = None
    """How the books the checks read were verified before grading (``runs.grading``):
    ``{"verified": "rebuilt-and-compared", "log_head", "log_position", "tables": {name:
    {"rows", "sha256"}}}``; ``None`` when the caller verified nothing (per-date checks)."""

    @property
    def status(self) -> str:
        """``accepted``, ``rejected`` or ``grader_error`` (ungraded)."""
        if self.grader_errors:
            return "grader_error"
        return "accepted" if self.accepted else "rejected"

    @property
    def accepted(self) -> bool:
        """True iff no required check failed and no check raised."""
        return not self.grader_errors and all(r.passed for r in self.results if r.required)

    @property
    def failed(self) -> list[CheckResult]:
        """Required results that failed."""
        return [r for r in self.results if r.required and not r.passed]

    @property
    def check_fraction(self) -> float:
        """Share of required results that passed (1.0 when there are none)."""
        req = [r for r in self.results if r.required]
        return sum(r.passed for r in req) / len(req) if req else 1.0

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (what ``verdict.json`` holds)."""
        req = [r for r in self.results if r.required]
        return {"status": self.status, "accepted": self.accepted,
                "required_passed": sum(r.passed for r in req), "required_total": len(req),
                "failed": [r.name for r in self.failed],
                "results": [r.to_json() for r in self.results],
                "grader_errors": [g.to_json() for g in self.grader_errors],
                "scorer": self.scorer, "outputs": self.outputs,
                "final_log_hash": self.final_log_hash, "final_position": self.final_position,
                "books": self.books}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        """Read back what :meth:`to_json` wrote."""
        return cls(results=[CheckResult(r["name"], r["passed"], r["detail"], r["metrics"],
                                        r["required"]) for r in data["results"]],
                   grader_errors=[GraderError(**g) for g in data["grader_errors"]],
                   scorer=data["scorer"], outputs=data["outputs"],
                   final_log_hash=data["final_log_hash"],
                   final_position=data["final_position"], books=data.get("books"))


def output_hashes(root: Path | None) -> dict[str, str]:
    """sha256 of every file under ``root``, by POSIX relative path, sorted."""
    if root is None or not root.is_dir():
        return {}
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            with p.open("rb") as f:
                out[p.relative_to(root).as_posix()] = hashlib.file_digest(f, "sha256").hexdigest()
    return out


METRICS_DEPTH = 32
"""How deep a check's metrics may nest before the rest is kept as text."""


def json_metrics(metrics: Mapping[Any, Any]) -> dict[str, Any]:
    """A check's metrics as strict JSON values. Metrics are diagnostic and never change a
    result, so what JSON cannot hold is converted rather than refused: a non-finite float
    is null, a number type of another library (``.item()``) its Python value, a set a
    sorted list, a key that is not a string its text, anything else (a date, a path) its
    ``str``; nesting beyond :data:`METRICS_DEPTH` (or a cycle) is cut to text."""

    def safe(value: Any, depth: int) -> Any:
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if depth >= METRICS_DEPTH:
            return str(value)
        if isinstance(value, Mapping):
            return {k if isinstance(k, str) else str(k): safe(v, depth + 1)
                    for k, v in value.items()}
        if isinstance(value, set | frozenset):
            return [safe(v, depth + 1) for v in sorted(value, key=repr)]
        if isinstance(value, list | tuple):
            return [safe(v, depth + 1) for v in value]
        item = getattr(value, "item", None)
        if callable(item):
            try:
                plain = item()
            except (TypeError, ValueError):
                plain = None
            if plain is not value and isinstance(plain, bool | int | float | str):
                return safe(plain, depth + 1)
        return str(value)

    out: dict[str, Any] = safe(dict(metrics), 0)
    return out


def run_check(spec: CheckSpec, index: int, ctx: CheckContext) -> list[CheckResult]:
    """Run one check; its results are named after the check and carry its ``required``."""
    load_builtin()
    label = spec.label(index)
    if spec.at_turn is not None:
        ctx = ctx.for_turn(spec.at_turn)
    out = REGISTRY[spec.type].fn(spec, ctx)
    results = [out] if isinstance(out, CheckResult) else list(out)
    if not results:
        raise RuntimeError(f"check {label} returned no result")
    named: list[CheckResult] = []
    for r in results:
        if not isinstance(r, CheckResult):
            raise TypeError(f"check {label} returned {type(r).__name__}, not CheckResult")
        if not isinstance(r.detail, str):
            raise TypeError(f"check {label}: detail is a {type(r.detail).__name__}, not str")
        metrics = json_metrics(r.metrics)  # diagnostic: never a grader error of its own
        name = label if r.name in ("", label) else f"{label}/{r.name}"
        named.append(CheckResult(name, bool(r.passed), r.detail, metrics, spec.required))
    return named


def run_checks(specs: Sequence[CheckSpec], ctx: CheckContext
               ) -> tuple[list[CheckResult], list[GraderError]]:
    """Every check's results against ``ctx``, and the grader errors of those that raised:
    what :func:`evaluate` packs into a verdict, without the verdict's log head, output
    hashes and scorer (per-date control, at every business date, keeps only these)."""
    results: list[CheckResult] = []
    errors: list[GraderError] = []
    for i, spec in enumerate(specs):
        try:
            results.extend(run_check(spec, i, ctx))
        except Exception as e:
            errors.append(GraderError(spec.label(i), f"{type(e).__name__}: {e}",
                                      traceback.format_exc()))
    return results, errors


def evaluate(specs: Sequence[CheckSpec], ctx: CheckContext, *,
             outputs_root: Path | None = None, scorer_name: str = SCORER_NAME,
             version: str | None = None) -> Verdict:
    """Run every check against ``ctx`` and return the verdict.

    ``outputs_root`` is the folder whose files are hashed into the verdict (by default
    the context's workspace).
    """
    results, errors = run_checks(specs, ctx)
    position, head = ctx.store.head()
    scorer = {"name": scorer_name, "version": version or scorer_version(),
              "definitions_sha256": definitions_hash(specs)}
    return Verdict(results, errors, scorer,
                   outputs=output_hashes(outputs_root if outputs_root is not None
                                         else ctx.workspace),
                   final_log_hash=head, final_position=position)


def write_verdict(verdict: Verdict, path: Path) -> None:
    """Write ``verdict.json`` atomically (a temporary file renamed into place).

    The temporary file is unique to this call, flushed to disk before the rename and
    removed if anything fails: a reader sees the old file or the new one, never a part.
    """
    text = json.dumps(verdict.to_json(), indent=2) + "\n"
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a verdict is for every reader
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
