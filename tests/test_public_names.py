"""No two public functions or classes of ours share a name.

A plugin's contract is the exception: every scenario's ``solver.py`` defines
``reference`` and ``oracle``, every desk generator ``generate``, every desk task's custom
check module (in its ``reference/``) ``check`` and its plan module ``evaluate``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("erp", "sim", "counterparties", "scenarios", "checks", "desk", "runs")


def _contract(path: Path, name: str) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    if rel.startswith("scenarios/library/") and path.name == "solver.py":
        return name in ("reference", "oracle")
    if rel.startswith("desk/generators/") and path.name != "__init__.py":
        return name == "generate"
    if rel.startswith("desk/tasks/") and "/reference/" in rel:
        return name in ("check", "evaluate")
    return False


def public_names(root: Path) -> dict[str, list[str]]:
    """Each public top-level function or class name and the files that define it."""
    found: dict[str, list[str]] = defaultdict(list)
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                        and not node.name.startswith("_")
                        and not (root == ROOT and _contract(path, node.name))):
                    found[node.name].append(path.relative_to(root).as_posix())
    return found


def test_no_public_name_twice() -> None:
    twice = {name: files for name, files in public_names(ROOT).items() if len(files) > 1}
    assert twice == {}


def test_checker_finds_a_name_defined_in_two_packages(tmp_path: Path) -> None:
    for pkg, text in (("erp", "class Receipt: ...\n"), ("runs", "def Receipt(): ...\n")):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "m.py").write_text(text)
    assert public_names(tmp_path)["Receipt"] == ["erp/m.py", "runs/m.py"]
