"""The registry: registration rules, the strict parser's problems with paths, and the
hash of the check definitions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Literal

import pytest

from checks.context import CheckContext
from checks.errors import CheckSpecError
from checks.registry import (
    REGISTRY,
    CheckResult,
    CheckSpec,
    check_type,
    definitions_hash,
    load_builtin,
    parse_checks,
)


@pytest.fixture
def scratch_types() -> Iterator[None]:
    """Types registered inside a test are removed from REGISTRY afterwards."""
    load_builtin()
    before = set(REGISTRY)
    yield
    for name in set(REGISTRY) - before:
        del REGISTRY[name]


def _ok(spec: Any, ctx: CheckContext) -> CheckResult:
    return CheckResult("", True)


def register(model: type[CheckSpec]) -> None:
    """Register ``model`` with a trivially passing function."""
    check_type(model)(_ok)


def problems(raw: Any) -> list[tuple[str, str]]:
    """The parser's problems as ``(path, message)``."""
    with pytest.raises(CheckSpecError) as e:
        parse_checks(raw)
    return [(path, message) for path, message, _ in e.value.problems]


class ZtBalance(CheckSpec):
    """A throwaway state check."""

    type: Literal["zt_reg_balance"]
    account: str
    tolerance: float = 0.0


def test_registering_a_type_twice_fails(scratch_types: None) -> None:
    register(ZtBalance)
    assert REGISTRY["zt_reg_balance"].family == "state"

    class Again(CheckSpec):
        type: Literal["zt_reg_balance"]

    with pytest.raises(ValueError, match="check type 'zt_reg_balance' is already registered"):
        register(Again)
    assert REGISTRY["zt_reg_balance"].model is ZtBalance


def test_a_builtin_name_cannot_be_taken_again(scratch_types: None) -> None:
    class Impostor(CheckSpec):
        type: Literal["csv_columns"]

    with pytest.raises(ValueError, match="already registered"):
        register(Impostor)


def test_type_must_be_a_literal_of_one_name(scratch_types: None) -> None:
    class Plain(CheckSpec):
        pass

    class Two(CheckSpec):
        type: Literal["zt_a", "zt_b"]

    class NotText(CheckSpec):
        type: Literal[3]  # type: ignore[assignment]

    for model in (Plain, Two, NotText):
        with pytest.raises(TypeError, match="must be a Literal of one name"):
            register(model)
    assert not {"zt_a", "zt_b"} & set(REGISTRY)


def test_family_must_be_known(scratch_types: None) -> None:
    class Odd(CheckSpec):
        family: ClassVar[str] = "vibes"
        type: Literal["zt_reg_odd"]

    with pytest.raises(TypeError, match="family 'vibes'"):
        register(Odd)


def test_parse_reports_several_problems_at_once_with_paths(scratch_types: None) -> None:
    register(ZtBalance)
    got = problems([
        {"type": "zt_reg_balance", "account": "1200"},                    # fine
        {"type": "zt_reg_balance"},                                       # missing field
        {"type": "zt_reg_balance", "account": "1", "tolerence": 1},       # unknown field
        {"type": "nope"},                                                 # unknown type
        {"account": "1"},                                                 # no type
        ["not", "a", "mapping"],
        {"type": ["unhashable"]},
        {"type": "zt_reg_balance", "account": "1", "tolerance": "much"},  # wrong type
    ])
    paths = [p for p, _ in got]
    assert paths == ["checks[1].account", "checks[2].tolerence", "checks[3].type",
                     "checks[4].type", "checks[5]", "checks[6].type", "checks[7].tolerance"]
    messages = dict(got)
    assert messages["checks[1].account"] == "required field of zt_reg_balance is missing"
    assert messages["checks[2].tolerence"].startswith("unknown field for zt_reg_balance; "
                                                      "expected one of: account, at_turn, daily")
    assert messages["checks[3].type"].startswith("unknown check type; expected one of: ")
    assert "zt_reg_balance" in messages["checks[3].type"]
    assert messages["checks[4].type"].startswith("missing; expected one of:")
    assert messages["checks[5]"] == "expected a mapping with a 'type'"


def test_the_message_carries_every_problem() -> None:
    with pytest.raises(CheckSpecError) as e:
        parse_checks([{"type": "csv_columns"}, {"type": "nope"}], where="scenario.checks")
    text = str(e.value)
    assert "scenario.checks[0].path: required field of csv_columns is missing" in text
    assert "scenario.checks[0].columns: required field of csv_columns is missing" in text
    assert "scenario.checks[1].type: unknown check type" in text


def test_a_field_named_like_the_type_keeps_its_path(scratch_types: None) -> None:
    class Echo(CheckSpec):
        type: Literal["zt_reg_echo"]
        zt_reg_echo: int

    register(Echo)
    assert problems([{"type": "zt_reg_echo", "zt_reg_echo": "x"}]) == [
        ("checks[0].zt_reg_echo", "Input should be a valid integer, unable to parse string as "
                                  "an integer")]


def test_the_check_list_itself_must_be_a_list() -> None:
    assert problems({"type": "csv_columns"}) == [("checks", "expected a list of checks")]
    assert problems("csv_columns") == [("checks", "expected a list of checks")]


def test_duplicate_names_are_rejected(scratch_types: None) -> None:
    register(ZtBalance)
    got = problems([{"type": "zt_reg_balance", "account": "1", "name": "ar"},
                    {"type": "zt_reg_balance", "account": "2"},
                    {"type": "zt_reg_balance", "account": "3", "name": "ar"}])
    assert got == [("checks[2].name", "duplicate check name (also checks[0])")]
    # Unnamed checks of one type get distinct labels: no clash.
    specs = parse_checks([{"type": "zt_reg_balance", "account": "1"},
                          {"type": "zt_reg_balance", "account": "2"}])
    assert [s.label(i) for i, s in enumerate(specs)] == ["zt_reg_balance#1", "zt_reg_balance#2"]


def test_daily_only_on_books_checks(scratch_types: None) -> None:
    register(ZtBalance)
    got = problems([{"type": "csv_row_count", "path": "a.csv", "equals": 1, "daily": True}])
    assert got == [("checks[0].daily", "only books checks (state, control, audit) can run every "
                                       "business date")]
    [spec] = parse_checks([{"type": "zt_reg_balance", "account": "1", "daily": True}])
    assert spec.daily


def test_the_union_is_rebuilt_when_a_type_is_swapped(scratch_types: None) -> None:
    register(ZtBalance)
    parse_checks([{"type": "zt_reg_balance", "account": "1"}])
    del REGISTRY["zt_reg_balance"]

    class Other(CheckSpec):
        type: Literal["zt_reg_other"]

    register(Other)  # same number of types as before: the cached union must not be reused
    [spec] = parse_checks([{"type": "zt_reg_other"}])
    assert isinstance(spec, Other)


SPECS: list[dict[str, Any]] = [
    {"type": "csv_columns", "path": "out/a.csv", "columns": ["a", "b"]},
    {"type": "csv_values_match", "path": "out/a.csv", "ref": "r.csv", "key": "k",
     "columns": ["v"], "min_accuracy": 0.9},
]


def test_definitions_hash_is_stable() -> None:
    h = definitions_hash(parse_checks(SPECS))
    assert h == definitions_hash(parse_checks([dict(reversed(list(s.items()))) for s in SPECS]))
    assert len(h) == 64 and int(h, 16) >= 0
    # Spelling a default out is the same definition.
    spelled = [{**SPECS[0], "exact": False, "required": True}, SPECS[1]]
    assert definitions_hash(parse_checks(spelled)) == h


@pytest.mark.parametrize(("index", "change"), [
    (0, {"path": "out/b.csv"}),
    (0, {"columns": ["b", "a"]}),
    (0, {"exact": True}),
    (0, {"required": False}),
    (0, {"name": "cols"}),
    (1, {"min_accuracy": 0.91}),
    (1, {"key": ["k"]}),
    (1, {"tolerance": 0.001}),
    (1, {"numeric": ["v"]}),
    (1, {"must_match_keys": ["x"]}),
])
def test_definitions_hash_changes_with_any_field(index: int, change: dict[str, Any]) -> None:
    base = definitions_hash(parse_checks(SPECS))
    changed = [dict(s) for s in SPECS]
    changed[index].update(change)
    assert definitions_hash(parse_checks(changed)) != base


def test_definitions_hash_depends_on_order() -> None:
    assert (definitions_hash(parse_checks(SPECS))
            != definitions_hash(parse_checks(list(reversed(SPECS)))))


def test_the_final_look_backs_are_the_specs_own() -> None:
    """A reconciliation's date reads all three folds; a reconciliation file's only the
    world's records; a comparison at every turn, a check without a date and one with no
    look back add none."""
    from datetime import date

    from checks.registry import FOLDS, final_lookbacks, reconciled_on

    may8, may29 = date(2026, 5, 8), date(2026, 5, 29)
    assert reconciled_on(may8) == {(may8, "checks.books"), (may8, "checks.postings"),
                                   (may8, "checks.world")}
    assert reconciled_on(None) == frozenset()
    assert set(FOLDS) == {"checks.books", "checks.postings", "checks.world"}
    specs = parse_checks([
        {"type": "bank_reconciles", "statement_as_of": "2026-05-29"},
        {"type": "bank_reconciles"},
        {"type": "books_match_world", "parties": "customers", "as_of": "2026-05-08"},
        {"type": "books_match_world", "parties": "vendors", "at_turns": True},
        {"type": "reconciliation_ties", "path": "out/r.csv", "as_of": "2026-05-29"},
        {"type": "trial_balance_zero"}])
    assert final_lookbacks(specs) == reconciled_on(may29) | reconciled_on(may8)
    assert final_lookbacks(specs[4:]) == {(may29, "checks.world")}
    assert final_lookbacks([]) == frozenset()
    # at the end of a turn: only a reconciliation file whose items are the books'
    assert final_lookbacks(specs, turns=True) == frozenset()
    [items] = parse_checks([{"type": "reconciliation_ties", "path": "out/r.csv",
                             "as_of": "2026-05-29", "items_as_books": True}])
    assert final_lookbacks([*specs, items], turns=True) == reconciled_on(may29)
    assert final_lookbacks([items]) == {(may29, "checks.world")}


def test_which_checks_read_the_turns_files() -> None:
    """``reads_workspace``: every file check and every check of the ``files`` family (a
    module's, a holds list's); of the others, those that read the agent's inbox or a list
    it wrote; none of the library's per-date checks (so a turn need not wait for them)."""
    from checks.registry import FileCheckSpec
    from scenarios.loader import find_scenario, load_scenario

    load_builtin()
    for kind in REGISTRY.values():
        if issubclass(kind.model, FileCheckSpec) or kind.family == "files":
            assert kind.model.reads_workspace(  # a method of the class: no instance needed
                kind.model.model_construct(path="out/x.csv")), kind.model
    made = parse_checks([
        {"type": "genuine_bank_changes_requested"},
        {"type": "no_unapplied_receipts", "older_than_days": 3},
        {"type": "no_unapplied_receipts", "older_than_days": 3, "name": "listed",
         "except_listed_in": "out/unapplied.csv"},
        {"type": "control_ties", "account": "1200", "daily": True},
        {"type": "csv_columns", "path": "out/a.csv", "columns": ["a"]}])
    assert [spec.reads_workspace() for spec in made] == [True, False, True, False, True]
    for name in ("month-end-close", "fiscal-year", "cash-application"):
        daily = [s for s in load_scenario(find_scenario(name)).checks if s.daily]
        assert daily and not any(s.reads_workspace() for s in daily), name


def test_load_builtin_imports_every_family_after_one_was_imported(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_builtin`` passes over the families imported already and still imports the
    ones after them (a family module standing in, on the path for this test)."""
    import importlib
    import sys

    import checks.registry as registry

    (tmp_path / "zt_family_probe.py").write_text("LOADED = True\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "BUILTIN_MODULES", ("checks.files", "zt_family_probe"))
    monkeypatch.delitem(sys.modules, "zt_family_probe", raising=False)
    importlib.import_module("checks.files")
    registry.load_builtin()
    assert sys.modules["zt_family_probe"].LOADED
    monkeypatch.delitem(sys.modules, "zt_family_probe")
