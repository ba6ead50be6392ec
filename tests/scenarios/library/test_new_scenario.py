"""Adding a scenario touches only its folder: a copy under a new id, in a library of its own,
runs with the solver.py it carries."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scenarios.agents import ReferenceAgent, built_in_agent, load_solver, solver_file
from scenarios.errors import SolverError
from scenarios.loader import find_scenario, library_dir, list_library, load_scenario

NEW_ID = "cash-application-copy"
NO_WORLD: Any = object()  # the agents only hold it


def _copy(library: Path, *, drop_reference_agent: bool = True) -> Path:
    """The cash-application folder under a new id in ``library``: only its own files edited."""
    folder = library / NEW_ID
    shutil.copytree(library_dir() / "cash-application", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    yaml_file = folder / "scenario.yaml"
    text = yaml_file.read_text(encoding="utf-8").replace("id: cash-application\n",
                                                         f"id: {NEW_ID}\n", 1)
    if drop_reference_agent:  # nothing in the folder names another scenario
        text = text.replace("reference_agent: cash-application\n", "")
    yaml_file.write_text(text, encoding="utf-8")
    return folder


def test_a_copied_folder_is_a_scenario_with_its_own_solver(tmp_path: Path) -> None:
    library = tmp_path / "library"
    folder = _copy(library)
    assert list_library(library) == [NEW_ID]
    loaded = load_scenario(find_scenario(NEW_ID, library=library))
    assert loaded.scenario.id == NEW_ID and loaded.scenario.reference_agent is None
    assert solver_file(loaded) == folder / "solver.py"
    agent = built_in_agent("reference", loaded, world=NO_WORLD)
    assert isinstance(agent, ReferenceAgent)
    module = load_solver(folder / "solver.py")
    assert agent.solver is module.reference
    assert Path(module.__file__ or "").resolve() == (folder / "solver.py").resolve()
    assert module is not load_solver(library_dir() / "cash-application" / "solver.py")


def test_erpsim_runs_the_copy_from_its_yaml_with_its_reference_solver(tmp_path: Path) -> None:
    folder = _copy(tmp_path / "library")
    out = tmp_path / "attempt"
    res = subprocess.run([sys.executable, "-m", "runs.cli", "run", str(folder / "scenario.yaml"),
                          "--agent", "reference", "--seed", "1", "--out", str(out), "--quiet"],
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"]["status"] == "accepted", summary["verdict"]


def test_a_folder_without_a_solver_says_what_it_expected(tmp_path: Path) -> None:
    folder = _copy(tmp_path / "library")
    (folder / "solver.py").unlink()
    loaded = load_scenario(folder / "scenario.yaml")
    with pytest.raises(SolverError) as e:
        built_in_agent("reference", loaded, world=NO_WORLD)
    assert str(e.value) == (
        f"scenario {NEW_ID} has no reference solver {NEW_ID!r} (expected "
        f"{folder / 'solver.py'} defining reference(turn), or reference_agent naming a "
        "library scenario that has one)")
    with pytest.raises(SolverError, match=r"unknown agent 'smart' \(expected one of: null, "
                                          r"reference, oracle\)"):
        built_in_agent("smart", loaded, world=NO_WORLD)


def test_a_folder_without_a_solver_may_borrow_a_library_scenarios(tmp_path: Path) -> None:
    folder = _copy(tmp_path / "library", drop_reference_agent=False)
    (folder / "solver.py").unlink()
    loaded = load_scenario(folder / "scenario.yaml")
    assert solver_file(loaded) == library_dir() / "cash-application" / "solver.py"


def test_a_solver_without_an_oracle_says_so(tmp_path: Path) -> None:
    folder = _copy(tmp_path / "library")
    (folder / "solver.py").write_text("def reference(turn):\n    pass\n", encoding="utf-8")
    loaded = load_scenario(folder / "scenario.yaml")
    with pytest.raises(SolverError) as e:
        built_in_agent("oracle", loaded, world=NO_WORLD)
    assert str(e.value) == (f"scenario {NEW_ID} has no oracle solver {NEW_ID!r} "
                            f"({(folder / 'solver.py').resolve()} defines no "
                            "oracle(turn, world))")
