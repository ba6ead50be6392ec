"""The registry, pinned where the mutation gate found it loose: each refusal of a workspace
path on its own, the exact problems (path, message, value), the registered type's fields,
the cached union, the canonical hash, and built-in families that are absent."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import pytest

from checks import registry
from checks.context import CheckContext
from checks.errors import CheckSpecError
from checks.registry import (
    REGISTRY,
    CheckResult,
    CheckSpec,
    CheckType,
    FileCheckSpec,
    check_type,
    definitions_hash,
    literal_name,
    load_builtin,
    parse_checks,
    workspace_path,
)

REFUSED = "expected a relative path inside the workspace (no '..', no leading '/')"


@pytest.fixture
def scratch_types() -> Iterator[None]:
    """Types registered inside a test are removed from REGISTRY afterwards."""
    load_builtin()
    before = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(before)
    registry._ADAPTER.clear()


def _ok(spec: Any, ctx: CheckContext) -> CheckResult:
    return CheckResult("", True)


def _problems(raw: Any) -> list[tuple[str, str, Any]]:
    with pytest.raises(CheckSpecError) as e:
        parse_checks(raw)
    return e.value.problems


class PtAccounts(CheckSpec):
    """A scratch state check with a list and a mapping field."""

    type: Literal["zt_pin_accounts"]
    accounts: list[str]
    weights: dict[str, int] = {}


class PtFile(FileCheckSpec):
    """A scratch file check."""

    type: Literal["zt_pin_file"]


class PtLimit(CheckSpec):
    """A scratch check whose field dumps differently as JSON and as Python."""

    type: Literal["zt_pin_limit"]
    limit: Decimal


# --- workspace paths: every condition refuses on its own --------------------------------


@pytest.mark.parametrize("value", ["", "/etc/passwd", "a/../b", "..", "a\\b", "a\x00b"])
def test_each_bad_workspace_path_is_refused_on_its_own(value: str) -> None:
    with pytest.raises(ValueError) as info:
        workspace_path(value)
    assert str(info.value) == REFUSED


@pytest.mark.parametrize("value", ["out/x.csv", "a..b/c..", "out/*.csv", "x", "./out/y.xlsx"])
def test_relative_workspace_paths_are_kept_as_written(value: str) -> None:
    assert workspace_path(value) == value


def test_a_file_check_path_problem_reads_without_pydantics_prefix(scratch_types: None) -> None:
    check_type(PtFile)(_ok)
    assert _problems([{"type": "zt_pin_file", "path": "../x.csv"}]) == [
        ("checks[0].path", REFUSED, "../x.csv")]


# --- results and registration -----------------------------------------------------------


def test_a_result_as_json() -> None:
    from types import MappingProxyType

    r = CheckResult("ar", False, "3 of 4", MappingProxyType({"n": 3}), required=False)
    out = r.to_json()
    assert out == {"name": "ar", "passed": False, "required": False, "detail": "3 of 4",
                   "metrics": {"n": 3}}
    assert type(out["metrics"]) is dict
    assert list(out) == ["name", "passed", "required", "detail", "metrics"]


def test_registering_records_name_model_function_and_family(scratch_types: None) -> None:
    assert check_type(PtAccounts)(_ok) is _ok
    assert REGISTRY["zt_pin_accounts"] == CheckType("zt_pin_accounts", PtAccounts, _ok, "state")
    check_type(PtFile)(_ok)
    assert REGISTRY["zt_pin_file"].family == "files"
    assert literal_name(PtAccounts) == "zt_pin_accounts"
    assert literal_name(PtFile) == "zt_pin_file"


def test_an_absent_builtin_family_is_skipped_but_a_broken_one_raises(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "zt_pin_broken.py").write_text("import zt_pin_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "BUILTIN_MODULES", ("zt_pin_absent_family",))
    load_builtin()  # a family still being written is simply absent
    monkeypatch.setattr(registry, "BUILTIN_MODULES", ("zt_pin_broken",))
    with pytest.raises(ModuleNotFoundError) as info:
        load_builtin()
    assert info.value.name == "zt_pin_no_such_dependency"
    sys.modules.pop("zt_pin_broken", None)


# --- the cached union -------------------------------------------------------------------


def test_the_union_is_cached_while_the_registry_is_unchanged(scratch_types: None) -> None:
    check_type(PtAccounts)(_ok)
    first = registry._adapter()
    assert registry._adapter() is first


def test_the_union_is_rebuilt_when_a_model_is_replaced_under_its_name(
        scratch_types: None) -> None:
    check_type(PtAccounts)(_ok)
    parse_checks([{"type": "zt_pin_accounts", "accounts": ["1200"]}])

    class Replaced(CheckSpec):
        type: Literal["zt_pin_accounts"]
        only: int

    # the same name and count, another model, and no registration to clear the cache
    REGISTRY["zt_pin_accounts"] = CheckType("zt_pin_accounts", Replaced, _ok, "state")
    [spec] = parse_checks([{"type": "zt_pin_accounts", "only": 3}])
    assert isinstance(spec, Replaced) and spec.only == 3


# --- the parser's problems, exactly -----------------------------------------------------


def test_an_unknown_type_lists_the_known_ones(scratch_types: None) -> None:
    check_type(PtAccounts)(_ok)
    known = ", ".join(sorted(REGISTRY))
    assert _problems([{"type": "nope"}, {"name": "x"}]) == [
        ("checks[0].type", f"unknown check type; expected one of: {known}", "nope"),
        ("checks[1].type", f"missing; expected one of: {known}", None)]


def test_a_list_item_problem_has_its_index_and_value(scratch_types: None) -> None:
    check_type(PtAccounts)(_ok)
    assert _problems([{"type": "zt_pin_accounts", "accounts": ["1200", 5]}]) == [
        ("checks[0].accounts[1]", "Input should be a valid string", 5)]


def test_daily_on_a_file_check_is_refused_with_its_value(scratch_types: None) -> None:
    check_type(PtFile)(_ok)
    assert _problems([{"type": "zt_pin_file", "path": "a.csv", "daily": True}]) == [
        ("checks[0].daily", "only books checks (state, control, audit) can run every "
                            "business date", True)]


def test_distinct_names_after_an_unnamed_check_do_not_clash(scratch_types: None) -> None:
    check_type(PtAccounts)(_ok)
    specs = parse_checks([{"type": "zt_pin_accounts", "accounts": []},
                          {"type": "zt_pin_accounts", "accounts": [], "name": "x"},
                          {"type": "zt_pin_accounts", "accounts": [], "name": "y"}])
    assert [s.label(i) for i, s in enumerate(specs)] == ["zt_pin_accounts#1", "x", "y"]
    assert _problems([{"type": "zt_pin_accounts", "accounts": []},
                      {"type": "zt_pin_accounts", "accounts": [], "name": "x"},
                      {"type": "zt_pin_accounts", "accounts": [], "name": "x"}]) == [
        ("checks[2].name", "duplicate check name (also checks[1])", "x")]


# --- the canonical hash -----------------------------------------------------------------


def test_the_hash_sorts_keys_inside_fields(scratch_types: None) -> None:
    check_type(PtAccounts)(_ok)
    a = parse_checks([{"type": "zt_pin_accounts", "accounts": [], "weights": {"b": 1, "a": 2}}])
    b = parse_checks([{"type": "zt_pin_accounts", "accounts": [], "weights": {"a": 2, "b": 1}}])
    assert definitions_hash(a) == definitions_hash(b)


def test_the_hash_reads_the_json_form_of_each_field(scratch_types: None) -> None:
    check_type(PtLimit)(_ok)
    one = definitions_hash(parse_checks([{"type": "zt_pin_limit", "limit": "1.50"}]))
    assert one == definitions_hash(parse_checks([{"type": "zt_pin_limit", "limit": "1.50"}]))
    assert one != definitions_hash(parse_checks([{"type": "zt_pin_limit", "limit": "1.5"}]))
