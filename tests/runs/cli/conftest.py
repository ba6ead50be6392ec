"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small demo company's books (eight days), made once per test module."""
    out = tmp_path_factory.mktemp("demo") / "books.db"
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "--days", "8"])
    assert result.exit_code == 0, result.output
    return out
