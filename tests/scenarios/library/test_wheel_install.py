"""The library travels in the wheel: built, installed into a fresh venv, one scenario run from it.

The wheel is built from a copy of the tree (the checkout gets no ``build/``); the fresh venv
(no system site-packages) reuses this venv's installed dependencies through a ``.pth`` line,
to keep the test fast, and everything runs from a temporary folder so that the installed
erpsim, not this checkout, is what gets imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from desk.tasks import list_tasks
from scenarios.loader import list_library
from tests.scenarios.library.test_golden_hashes import GOLDEN

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("erp", "sim", "counterparties", "scenarios", "checks", "desk", "runs")

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    res = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, f"{' '.join(args)}\n{res.stdout}\n{res.stderr}"
    return res


def test_a_wheel_install_runs_a_library_scenario(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
         tmp_path)
    [wheel] = dist.glob("erpsim-*.whl")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
          str(wheel)], tmp_path)
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                      "['purelib'])"], tmp_path).stdout.strip())
    (site / "zz_erpsim_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    where = json.loads(_run([str(python), "-c", (
        "import json, os, runs, scenarios, desk.tasks as t, scenarios.loader as s; "
        "print(json.dumps([runs.__file__, scenarios.__file__, str(s.library_dir()), "
        "str(t.tasks_dir()), s.list_library(), t.list_tasks(), "
        "all(os.access(t.load_task(n).solution, os.X_OK) for n in t.list_tasks())]))")],
        tmp_path).stdout)
    *paths, library, tasks, solutions_executable = where
    for path in paths:
        assert Path(path).is_relative_to(venv), path
    assert library == list_library() and tasks == list_tasks()
    assert solutions_executable

    out = tmp_path / "attempt"
    _run([str(venv / "bin" / "erpsim"), "run", "cash-application", "--agent", "reference",
          "--seed", "1", "--out", str(out), "--quiet"], tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"]["status"] == "accepted", summary["verdict"]
    assert summary["final_hash"] == GOLDEN["cash-application", 1]
