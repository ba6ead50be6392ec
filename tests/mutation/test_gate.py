"""The mutation gate's own bookkeeping (no mutmut run): which functions a diff touched,
how a module's mutants are counted, which listed equivalents are reported as stale, and
the refusal of an equivalent without a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mutation import gate

SOURCE = '''\
import functools


def plain(x):
    return x + 1


@functools.cache
def cached(x):
    return x * 2


class Box:
    def get(self):
        return 1

    def put(self, v):
        self.v = v
'''

KEY_A = ("m.py", "f", "a = 1", "a = 2")
KEY_B = ("m.py", "g", "b = 1", "b = 2")
LISTED = {KEY_A: "same", KEY_B: "same"}


def test_functions_touched_finds_functions_methods_and_decorator_lines() -> None:
    assert gate.functions_touched(SOURCE, {5}) == {"plain"}
    assert gate.functions_touched(SOURCE, {8}) == {"cached"}  # the decorator's line
    assert gate.functions_touched(SOURCE, {18}) == {"Box.put"}
    assert gate.functions_touched(SOURCE, {1, 2, 3}) == set()


def test_judge_counts_killed_listed_and_surviving_mutants() -> None:
    m = gate.Module("m.py", ("t.py",))
    mutants = [gate.Mutant("m.x_f__mutmut_1", "killed", "f", "", ""),
               gate.Mutant("m.x_f__mutmut_2", "timeout", "f", "", ""),
               gate.Mutant("m.x_f__mutmut_3", "survived", "f", "a = 1", "a = 2"),
               gate.Mutant("m.x_g__mutmut_1", "survived", "g", "b = 1", "b = 3")]
    figures, used = gate.judge(m, mutants, LISTED)
    assert (figures.mutants, figures.killed, figures.equivalent) == (4, 2, 1)
    assert [x.name for x in figures.survivors] == ["m.x_g__mutmut_1"]
    assert used == {KEY_A}


def test_stale_equivalents_only_among_the_functions_that_ran() -> None:
    # a run narrowed to f (--changed) says nothing of g's entry
    assert gate.stale_listed(LISTED, set(), {"m.py": ("f",)}) == [KEY_A]
    assert gate.stale_listed(LISTED, {KEY_A}, {"m.py": ("f",)}) == []
    # a full run of the module reports every unused entry; another module's say nothing
    assert gate.stale_listed(LISTED, {KEY_A}, {"m.py": None}) == [KEY_B]
    assert gate.stale_listed(LISTED, set(), {"other.py": None}) == []


def test_an_equivalent_without_a_reason_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "equivalent.toml"
    path.write_text('[[equivalent]]\nmodule = "m.py"\nfunction = "f"\noriginal = "a"\n'
                    'mutant = "b"\nreason = "  "\n', encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        gate.load_equivalent(path)
    assert str(info.value) == "equivalent.toml: equivalent[0]: an equivalent mutant needs a reason"


def test_the_project_s_lists_load() -> None:
    modules = {m.path: m for m in gate.load_modules()}
    assert {"erp/handlers.py", "runs/campaigns/metrics.py"} <= set(modules)
    assert modules["erp/handlers.py"].pytest_args == ("-m", "not postgres")
    assert "tests/erp/test_invariants_pinned.py" in modules["erp/handlers.py"].tests
    assert all(reason.strip() for reason in gate.load_equivalent().values())


def test_an_unknown_module_key_is_named(tmp_path: Path) -> None:
    path = tmp_path / "modules.toml"
    path.write_text('[[module]]\npath = "erp/money.py"\ntests = []\nslow = true\n',
                    encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        gate.load_modules(path)
    assert str(info.value) == ("modules.toml: module[0]: unknown keys ['slow'] (expected path, "
                               "tests, functions, import_time, undecorate, pytest_args)")
