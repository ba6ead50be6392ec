"""runs.files: the atomic writer leaves the old file or the new one, never a part."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.files import atomic_path, write_text_atomic


def test_write_replaces_the_whole_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "summary.json"
    write_text_atomic(target, "old\n")
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["summary.json"]
    assert target.stat().st_mode & 0o777 == 0o644


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError, match="disk full"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]
