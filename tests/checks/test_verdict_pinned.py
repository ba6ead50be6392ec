"""The verdict, pinned where the mutation gate found it loose: the scorer's version, the
exact JSON form, the books block read back, and how verdict.json is written (indented,
through a private temporary file beside it, removed when the write fails)."""

from __future__ import annotations

import importlib.metadata
import json
import os
from pathlib import Path
from typing import Any, Literal

import pytest

from checks.context import CheckContext
from checks.registry import REGISTRY, CheckResult, CheckSpec, check_type, load_builtin, parse_checks
from checks.verdict import GraderError, Verdict, run_check, scorer_version, write_verdict


def _verdict(books: dict[str, Any] | None = None, detail: str = "off by 10.00") -> Verdict:
    return Verdict(results=[CheckResult("ar", True, "", {"n": 1}),
                            CheckResult("ap", False, detail, {}, required=True),
                            CheckResult("memo", False, "", {}, required=False)],
                   grader_errors=[], scorer={"name": "s", "version": "1",
                                             "definitions_sha256": "ab"},
                   outputs={"out/a.csv": "cd"}, final_log_hash="ef", final_position=7,
                   books=books)


def test_the_scorer_version_is_the_installed_erpsim() -> None:
    assert scorer_version() == importlib.metadata.version("erpsim") != "0+unknown"


def test_the_scorer_version_from_a_bare_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", absent)
    assert scorer_version() == "0+unknown"


def test_the_json_form_exactly() -> None:
    books = {"verified": "rebuilt-and-compared", "log_head": "ef", "log_position": 7,
             "tables": {}}
    assert _verdict(books).to_json() == {
        "status": "rejected", "accepted": False, "required_passed": 1, "required_total": 2,
        "failed": ["ap"],
        "results": [{"name": "ar", "passed": True, "required": True, "detail": "",
                     "metrics": {"n": 1}},
                    {"name": "ap", "passed": False, "required": True,
                     "detail": "off by 10.00", "metrics": {}},
                    {"name": "memo", "passed": False, "required": False, "detail": "",
                     "metrics": {}}],
        "grader_errors": [], "scorer": {"name": "s", "version": "1",
                                        "definitions_sha256": "ab"},
        "outputs": {"out/a.csv": "cd"}, "final_log_hash": "ef", "final_position": 7,
        "books": books}


def test_the_books_block_reads_back() -> None:
    books = {"verified": "rebuilt-and-compared", "log_head": "ef", "log_position": 7,
             "tables": {"gl": {"rows": 3, "sha256": "00"}}}
    v = _verdict(books)
    assert Verdict.from_json(v.to_json()) == v
    assert Verdict.from_json(v.to_json()).books == books
    older = {k: x for k, x in _verdict().to_json().items() if k != "books"}
    assert Verdict.from_json(older).books is None  # verdicts written before the block


def test_verdict_json_is_indented_by_two(tmp_path: Path) -> None:
    path = tmp_path / "verdict.json"
    write_verdict(_verdict(), path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n  "status": "rejected",\n  "accepted": false,\n')
    assert text.endswith("\n}\n")
    assert json.loads(text) == _verdict().to_json()
    assert os.stat(path).st_mode & 0o777 == 0o644


def test_the_temporary_file_is_private_beside_the_target(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "verdict.json"
    seen: list[tuple[str, int]] = []
    real_fsync = os.fsync

    def watching(fd: int) -> None:
        real_fsync(fd)
        for p in tmp_path.iterdir():
            seen.append((p.name, p.stat().st_mode & 0o777))

    monkeypatch.setattr(os, "fsync", watching)
    write_verdict(_verdict(), path)
    [(name, mode)] = seen
    assert name.startswith(".verdict.json.") and name.endswith(".tmp"), name
    assert mode == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["verdict.json"]


def test_a_failed_write_raises_its_own_error_even_if_the_temporary_file_went(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "verdict.json"

    def vanishing(fd: int) -> None:
        for p in tmp_path.iterdir():
            p.unlink()  # something else removed it
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", vanishing)
    with pytest.raises(OSError, match="No space left"):
        write_verdict(_verdict(), path)
    assert list(tmp_path.iterdir()) == []


def test_a_grader_error_as_json() -> None:
    g = GraderError("ar", "TypeError: x", "Traceback ...")
    assert g.to_json() == {"check": "ar", "error": "TypeError: x", "traceback": "Traceback ..."}


class PtDetail(CheckSpec):
    """A scratch check whose result's detail is not text."""

    type: Literal["zt_pin_detail"]


def _number_detail(spec: PtDetail, ctx: CheckContext) -> CheckResult:
    return CheckResult("", False, 12)  # type: ignore[arg-type]


def test_a_detail_that_is_not_text_is_named_with_its_type() -> None:
    load_builtin()
    check_type(PtDetail)(_number_detail)
    try:
        [spec] = parse_checks([{"type": "zt_pin_detail", "name": "ar"}])
        with pytest.raises(TypeError) as info:
            run_check(spec, 0, None)  # type: ignore[arg-type]
        assert str(info.value) == "check ar: detail is a int, not str"
    finally:
        del REGISTRY["zt_pin_detail"]
