"""Shared by the check tests: run one raw check spec, or collect the validator's problems."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checks.context import CheckContext
from checks.errors import CheckSpecError
from checks.registry import CheckResult, parse_checks
from checks.verdict import run_check


def run_one(raw: dict[str, Any], ctx: CheckContext) -> CheckResult:
    """Validate one raw spec strictly and run it; its single result."""
    [spec] = parse_checks([raw])
    [result] = run_check(spec, 0, ctx)
    return result


def spec_problems(*raw: dict[str, Any]) -> dict[str, str]:
    """The validator's problems for raw specs, as ``{path: message}``."""
    with pytest.raises(CheckSpecError) as e:
        parse_checks(list(raw))
    return {path: message for path, message, _ in e.value.problems}


def put(root: Path | None, rel: str, content: str | bytes) -> Path:
    """Write a file under ``root`` (parents created)."""
    assert root is not None
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path
