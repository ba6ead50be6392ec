"""Every library scenario's solver.py passes the type checker, each in a run of its own.

The solvers are all named ``solver.py`` in folders with hyphens, so one mypy run over the
packages cannot hold them (one module name, many files): the project's configuration
excludes them there, and this test checks each with the same configuration. Errors in
the modules a solver imports belong to the packages' run (``--follow-imports=silent``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.agents import SOLVER_FILE
from scenarios.loader import library_dir

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("path", sorted(library_dir().glob(f"*/{SOLVER_FILE}")),
                         ids=lambda p: p.parent.name)
def test_the_solver_type_checks(path: Path) -> None:
    out, err, status = mypy_api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                     "--follow-imports=silent", str(path.relative_to(ROOT))])
    assert status == 0, out + err
