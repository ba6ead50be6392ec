"""The packages import one another only in the directions docs/architecture.md draws."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

ALLOWED = {
    "erp": set(),
    "sim": {"erp"},
    "counterparties": {"sim", "erp"},
    "checks": {"erp", "sim"},
    "scenarios": {"erp", "sim", "counterparties", "checks"},
    "desk": {"erp", "sim", "counterparties", "checks", "scenarios"},
    "runs": {"erp", "sim", "counterparties", "checks", "scenarios", "desk"},
}


def wrong_way_imports(root: Path) -> list[str]:
    """Every import of one of our packages that the layering does not allow."""
    out = []
    for package, allowed in ALLOWED.items():
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name.split(".")[0] for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module.split(".")[0]]
                for name in names:
                    if name in ALLOWED and name != package and name not in allowed:
                        out.append(f"{path.relative_to(root)}:{node.lineno}: {package} imports "
                                   f"{name}")
    return out


def test_no_import_points_the_wrong_way() -> None:
    assert wrong_way_imports(ROOT) == []


def test_checker_catches_a_wrong_way_import(tmp_path: Path) -> None:
    for package in ALLOWED:
        (tmp_path / package).mkdir()
    (tmp_path / "erp" / "bad.py").write_text("from runs import cli\n")
    assert wrong_way_imports(tmp_path) == ["erp/bad.py:1: erp imports runs"]


def test_shared_layer_tool_agrees() -> None:
    tool = ROOT.parent / "shared" / "tools" / "check_layers.py"
    if not tool.exists():  # the shared tool is optional; our own check above is the gate
        pytest.skip(f"the shared layering tool is absent ({tool}); the check above still runs")
    result = subprocess.run([sys.executable, str(tool), str(ROOT)], capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
