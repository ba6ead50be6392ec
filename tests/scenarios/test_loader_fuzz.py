"""Fuzzing the scenario loader with mutated library YAMLs (hypothesis).

Every outcome must be a valid scenario or one clean ``ScenarioError`` with a message
naming the file; never another exception, never a hang (each load's CPU time on its
own thread is bounded) and never a memory blow-up (the process's address space is capped
for the test at what it already holds plus ``MEMORY_HEADROOM``). Bounded: a fixed
number of examples, derandomized under CI.

The bounds are relative to the process, not absolute: in the suite this test shares an
xdist worker with hundreds of others, whose threads' malloc arenas and caches already hold
gigabytes of address space, and with another worker for the two cores. Under an absolute
4 GiB cap a load failed there inside the YAML composer and its replay did not (an
allocation refused under the cap is the likely cause), and a wall-clock bound measures
the machine's load.
"""

from __future__ import annotations

import os
import re
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenarios.errors import ScenarioError
from scenarios.loader import library_dir, list_library, load_scenario

LIBRARY = {name: (library_dir() / name / "scenario.yaml").read_text()
           for name in list_library()}
EXAMPLES = int(os.environ.get("ERPSIM_FUZZ_EXAMPLES", "300"))
SLOWEST_LOAD_CPU_S = 5.0
MEMORY_HEADROOM = 2 << 30  # bytes of address space a load may add while fuzzing

TOKENS = ["on", "off", "no", "yes", "y", "~", "null", "true", "1", "-1", "0x1F", "1e309",
          ".nan", "-.inf", "9999-12-31", "0001-01-01", "2026-02-30", "2026-03-02T10:00:00",
          "1700000000", '"-5.00"', '"1e3"', "[]", "{}", "[[[[[[]]]]]]", "&a x", "*a",
          "<<: *a", "!!binary aGk=", "!!set {a}", "!!python/object:os.system", "'", '"',
          "\t", ": ", "- ", "#", "%YAML 1.1", "---", "...", "\u00e9", "\x00", "\ufeff",
          "1200", '"7777"', "-999999999999999999999", "  ", "\n"]


def _edit(text: str, where: int, width: int, token: str) -> str:
    where %= max(len(text), 1)
    return text[:where] + token + text[where + width:]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    """A library scenario with a few edits: tokens put in, spans cut, lines duplicated."""
    name = draw(st.sampled_from(sorted(LIBRARY)))
    text = LIBRARY[name]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["token", "cut", "dup", "value"]))
        where = draw(st.integers(0, len(text)))
        if kind == "token":
            text = _edit(text, where, draw(st.integers(0, 6)), draw(st.sampled_from(TOKENS)))
        elif kind == "cut":
            text = _edit(text, where, draw(st.integers(1, 200)), "")
        elif kind == "dup":
            lines = text.splitlines(keepends=True)
            n = where % max(len(lines), 1)
            text = "".join(lines[:n + 1] + lines[n:])
        else:  # replace the value after a colon with a token or random text
            colon = text.find(": ", where)
            if colon >= 0:
                end = text.find("\n", colon)
                end = len(text) if end < 0 else end
                value = draw(st.sampled_from(TOKENS) | st.text(max_size=12))
                text = text[:colon + 2] + value + text[end:]
    return name, text


def address_space_bytes() -> int:
    """The process's current virtual address space (VmSize of /proc/self/status)."""
    status = Path("/proc/self/status").read_text()
    match = re.search(r"^VmSize:\s+(\d+) kB$", status, re.M)
    assert match, "no VmSize in /proc/self/status"
    return int(match.group(1)) * 1024


@pytest.fixture(scope="module")
def capped_memory() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = address_space_bytes() + MEMORY_HEADROOM
    cap = cap if hard == resource.RLIM_INFINITY else min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _folder(tmp: Path, name: str) -> Path:
    """A copy of the library scenario's folder (prompts, policy files) to load from."""
    target = tmp / name
    if not target.exists():
        source = library_dir() / name
        for path in source.rglob("*"):
            if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts:
                dest = target / path.relative_to(source)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(path.read_bytes())
    return target


def test_every_mutation_loads_or_is_refused_cleanly(tmp_path: Path, capped_memory: None,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = {"valid": 0, "refused": 0}
    slowest = 0.0

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              derandomize=os.environ.get("CI") == "true",
              suppress_health_check=[HealthCheck.too_slow])
    @given(case=mutated())
    def load_one(case: tuple[str, str]) -> None:
        nonlocal slowest
        name, text = case
        path = _folder(tmp_path, name) / "scenario.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        started = time.thread_time()
        try:
            loaded = load_scenario(path)
        except ScenarioError as e:
            outcomes["refused"] += 1
            assert e.message.startswith(f"scenario {name}/scenario.yaml"), e.message
            assert len(e.message) < 5_000
        else:
            outcomes["valid"] += 1
            assert loaded.scenario.id
        took = time.thread_time() - started
        slowest = max(slowest, took)
        assert took < SLOWEST_LOAD_CPU_S

    load_one()
    total = outcomes["valid"] + outcomes["refused"]
    with capsys.disabled():
        print(f"\nloader_fuzz_cases: {total}  valid: {outcomes['valid']}  refused_cleanly: "
              f"{outcomes['refused']}  other_outcomes: 0  slowest_load_cpu_s: {slowest:.3f}")
    assert total >= EXAMPLES // 2  # hypothesis ran the cases (not a vacuous pass)
    assert outcomes["valid"] and outcomes["refused"]
