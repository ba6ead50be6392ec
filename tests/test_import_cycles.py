"""No import cycles between modules of ours, even inside a package.

Every import counts, module level or deferred inside a function, except those under
``if TYPE_CHECKING:`` (they never run). A cycle is a strongly connected set of modules
in the import graph.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("erp", "sim", "counterparties", "scenarios", "checks", "desk", "runs")


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[str]:
    """Every module name an import statement outside ``if TYPE_CHECKING:`` names."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.append(prefix)
            found.extend(f"{prefix}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path) -> nx.DiGraph:
    """Modules of ours as nodes, an edge from each module to every module it imports."""
    files = {_module_name(root, p): p for pkg in PACKAGES if (root / pkg).is_dir()
             for p in sorted((root / pkg).rglob("*.py"))}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name in _imports(tree, module, path.name == "__init__.py"):
            if name in files and name != module:
                graph.add_edge(module, name)
    return graph


def import_cycles(root: Path) -> list[list[str]]:
    """The sets of modules that import one another, each sorted, largest first."""
    comps = [sorted(c) for c in nx.strongly_connected_components(import_graph(root))
             if len(c) > 1]
    return sorted(comps, key=lambda c: (-len(c), c))


def test_no_import_cycle() -> None:
    assert import_cycles(ROOT) == []


def test_checker_finds_a_deferred_cycle_and_ignores_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "runs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from runs.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from runs.d import x\n")
    (pkg / "d.py").write_text("from runs import c\n")
    assert import_cycles(tmp_path) == [["runs.a", "runs.b"]]
