"""Solver files loaded by their path: ``scenarios/library/<name>/solver.py`` as a module.

Kept apart from :mod:`scenarios.agents` (which brings the scenario loader, and with it the
graders' packages) so that a solver can load another's reading code, and an agent outside
the engine can load a solver, without importing what an external agent may not see.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from scenarios.errors import SolverError


def _module_name(path: Path) -> str:
    """A unique, deterministic ``sys.modules`` name for a solver file (by its real path)."""
    slug = re.sub(r"\W", "_", path.parent.name)
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    return f"erpsim_solver_{slug}_{digest}"


def load_solver(path: Path) -> ModuleType:
    """Import a solver module by its file path (once per path and process).

    Raises ``SolverError`` when the file cannot be imported (a harness fault).
    """
    path = path.resolve()
    name = _module_name(path)
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SolverError(f"solver {path}: not a Python module (expected a .py file)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise SolverError(f"solver {path}: cannot be imported ({type(e).__name__}: {e})") from e
    return module
