"""Fixtures for the desk tests: a small task folder written on the fly."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

SOLVE_OK = """#!/usr/bin/env python3
import argparse
from pathlib import Path
ap = argparse.ArgumentParser()
ap.add_argument("--workspace"); ap.add_argument("--prompt-file"); ap.add_argument("--output-dir")
a = ap.parse_args()
text = (Path(a.workspace) / "data.txt").read_text()
(Path(a.output_dir) / "answer.txt").write_text("The total is " + text.strip() + ".\\n")
"""

SOLVE_NOTHING = """#!/usr/bin/env python3
"""


def task_yaml(**changes: Any) -> dict[str, Any]:
    """A valid task.yaml as a dict, with ``changes`` applied (None removes a key)."""
    data: dict[str, Any] = {
        "id": "tiny", "category": "reports", "title": "Say the total",
        "date": "2026-03-04", "prompt": "Read data.txt and write the total to out/answer.txt.",
        "timeout_s": 60, "outputs": ["out/answer.txt"],
        "checks": [{"type": "text_numbers_present", "path": "out/answer.txt",
                    "numbers": [42.5], "name": "total-stated"},
                   {"type": "csv_row_count", "path": "out/none.csv", "equals_ref": "rows.csv",
                    "required": False, "name": "optional-rows"}],
    }
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


@pytest.fixture
def make_task(tmp_path: Path) -> Callable[..., Path]:
    """Write a task folder ``tmp/<id>`` (valid unless told otherwise) and return it."""

    def make(*, solve: str = SOLVE_OK, files: dict[str, str] | None = None,
             reference: dict[str, str] | None = None, raw: str | None = None,
             **changes: Any) -> Path:
        data = task_yaml(**changes)
        folder = tmp_path / str(data.get("id", "tiny"))
        (folder / "workspace").mkdir(parents=True, exist_ok=True)
        (folder / "reference").mkdir(exist_ok=True)
        (folder / "solution").mkdir(exist_ok=True)
        (folder / "task.yaml").write_text(raw if raw is not None
                                          else yaml.safe_dump(data, sort_keys=False))
        for rel, text in (files if files is not None else {"data.txt": "42.50\n"}).items():
            (folder / "workspace" / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / "workspace" / rel).write_text(text)
        for rel, text in (reference if reference is not None
                          else {"rows.csv": "a\n1\n"}).items():
            (folder / "reference" / rel).write_text(text)
        solver = folder / "solution" / "solve"
        solver.write_text(solve)
        os.chmod(solver, 0o755)
        (folder / "README.md").write_text("# tiny\n\nTests the harness.\n")
        return folder

    return make
