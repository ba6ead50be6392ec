"""``erpsim ledger rebuild``: read tables that differ from the log written again from it,
never from a log that does not verify."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main
from tests.runs.cli.test_cli import _copy, _tamper


def _edit_a_gl_line(store: Path) -> int:
    """Add a cent to one GL line, as an edit of the read tables would; its position."""
    with sqlite3.connect(store) as conn:
        (position,) = conn.execute("SELECT MIN(position) FROM gl_lines").fetchone()
        conn.execute("UPDATE gl_lines SET amount = amount + 1 WHERE position = ? AND seq = 0",
                     (position,))
    return int(position)


def _gl_amount(store: Path, position: int) -> int:
    with sqlite3.connect(store) as conn:
        (amount,) = conn.execute("SELECT amount FROM gl_lines WHERE position = ? AND seq = 0",
                                 (position,)).fetchone()
    return int(amount)


@pytest.mark.parametrize(("parallel", "processes"), [("1", "one process"),
                                                     ("2", "2 processes")])
def test_rebuild_repairs_what_verify_finds(demo_store: Path, tmp_path: Path, parallel: str,
                                           processes: str) -> None:
    store = _copy(demo_store, tmp_path / "books.db")
    position = _edit_a_gl_line(store)
    edited = _gl_amount(store, position)
    found = CliRunner().invoke(main, ["ledger", "verify", str(store)])
    assert found.exit_code == 1 and "gl_lines" in found.output
    assert f"(the log verifies: `erpsim ledger rebuild {store}` writes the read tables again " \
           "from it)" in " ".join(found.output.split())
    result = CliRunner().invoke(main, ["ledger", "rebuild", str(store), "--parallel", parallel])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok: 5 read tables rebuilt from ")
    assert f"({processes}); they match the log" in result.output
    assert _gl_amount(store, position) == edited - 1
    assert CliRunner().invoke(main, ["ledger", "verify", str(store)]).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir() if ".rebuild-" in p.name) == []


def test_a_log_that_does_not_verify_is_not_rebuilt_from(demo_store: Path,
                                                        tmp_path: Path) -> None:
    store = _copy(demo_store, tmp_path / "books.db")
    position = _edit_a_gl_line(store)
    edited = _gl_amount(store, position)
    _tamper(store, 5)
    found = CliRunner().invoke(main, ["ledger", "verify", str(store)])
    assert found.exit_code == 1 and "ledger rebuild" not in found.output  # no repair offered
    result = CliRunner().invoke(main, ["ledger", "rebuild", str(store)])
    assert result.exit_code == 1
    assert "the read tables were not rebuilt (a log that does not verify" in result.output
    assert _gl_amount(store, position) == edited  # as they were


def test_a_head_other_than_expected_is_not_rebuilt_from(demo_store: Path,
                                                         tmp_path: Path) -> None:
    store = _copy(demo_store, tmp_path / "books.db")
    result = CliRunner().invoke(main, ["ledger", "rebuild", str(store),
                                       "--expect-head", "0" * 64])
    assert result.exit_code == 1
    assert f"expected {'0' * 64}; the read tables were not rebuilt" in result.output


@pytest.mark.parametrize(("args", "words"), [
    (["--parallel", "3"], "'--parallel': 3 is not in the range 1<=x<=2"),
    (["--parallel", "two"], "'two' is not a valid integer range"),
])
def test_bad_options_are_named(demo_store: Path, args: list[str], words: str) -> None:
    result = CliRunner().invoke(main, ["ledger", "rebuild", str(demo_store), *args])
    assert result.exit_code == 2
    assert words in result.output


def test_not_a_store(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    result = CliRunner().invoke(main, ["ledger", "rebuild", str(other)])
    assert result.exit_code == 2
    assert "is not an erpsim store" in result.output
    missing = CliRunner().invoke(main, ["ledger", "rebuild", str(tmp_path / "none.db")])
    assert missing.exit_code == 2
    assert "the file does not exist" in missing.output


def test_rebuild_on_either_backend(store_target: tuple[str, str | None]) -> None:
    """A store of either backend: an edited GL line is written again (PostgreSQL in one
    process: its rebuild loads with COPY in one session)."""
    from erp.ledger import Ledger
    from runs.bench.workload import generate_workload

    target, schema = store_target
    with Ledger.open(target, schema=schema, create=True) as ledger:
        for b in generate_workload(2, days=6):
            ledger.execute_batch(b.submissions)
        with ledger.store.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE gl_lines SET amount = amount + 1 WHERE position = "
                                 "(SELECT MIN(position) FROM gl_lines) AND seq = 0")
    where = [target] + (["--schema", schema] if schema else [])
    assert CliRunner().invoke(main, ["ledger", "verify", *where]).exit_code == 1
    result = CliRunner().invoke(main, ["ledger", "rebuild", *where, "--parallel", "2"])
    assert result.exit_code == 0, result.output
    processes = "2 processes" if schema is None else "one process"
    assert f"({processes}); they match the log" in result.output
    assert CliRunner().invoke(main, ["ledger", "verify", *where]).exit_code == 0
