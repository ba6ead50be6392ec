"""An attempt leaves nothing of itself alive in the process that ran it.

``erpsim validate --mutants`` runs hundreds of attempts in one process, and a campaign
worker many. Per-object state kept in a module-level table weakly keyed by a world or a
store (the customers' invoice routes, the month-end clerk's kept tables) kept the key
alive for good when its value referred back to it; and what an attempt leaves in reference
cycles (its world, engine, books and store refer to one another) waited for a full
collection that the engine's freezing of the heap at every turn kept from ever coming.
Every attempt's world, engine, books and store (with its database connections) stayed
in memory: about 70 MB a fiscal-year attempt, some 20 GB over the hard tier's mutants of
three seeds. The payloads the attempt decoded (``erp.store.decoded``) are let go too: the
next attempt's log is another. Each check runs in a fresh interpreter, so that nothing
another test holds is counted, and counts the objects still tracked, freed or not, when
``run_attempt`` has returned (no collection of its own).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("World", "Engine", "Ledger", "EventStore", "Books", "Projections",
         "decoded payloads")

PROBE = textwrap.dedent("""
    import gc, json, sys
    from pathlib import Path
    from desk.tasks import load_task
    from erp.books import Books
    from erp.ledger import Ledger
    from erp.projections import Projections
    from erp.store import EventStore
    from runs.attempt import run_attempt
    from runs.execution.external import ExternalAgent
    from scenarios.loader import find_scenario, load_scenario
    from sim.engine import Engine
    from sim.world import World

    out = Path(sys.argv[1])
    for n, item in enumerate(json.loads(sys.argv[2])):
        name, agent = item
        if agent == "solution":
            task = load_task(name)
            run_attempt(task.loaded, task.seed, agent, out / str(n), agent=ExternalAgent(
                task.solution, mode="local", timeout_s=task.timeout_s, name="solution"))
        else:
            run_attempt(load_scenario(find_scenario(name)), 0, agent, out / str(n))
    # no gc.collect() here: what the attempt left for the collector's own schedule counts
    kinds = (World, Engine, Ledger, EventStore, Books, Projections)
    import erp.store
    print(json.dumps({**{k.__name__: sum(isinstance(o, k) for o in gc.get_objects())
                         for k in kinds}, "decoded payloads": len(erp.store._DECODED)}))
""")


def alive_after(runs: list[tuple[str, str]], tmp_path: Path) -> dict[str, int]:
    """Run attempts in a fresh interpreter; the objects of each kind still alive after."""
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), json.dumps(runs)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    counts: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return counts


@pytest.mark.parametrize("runs", [
    # the customers' routes (every scenario's world); the month-end clerk's kept tables
    [("cash-application", "reference"), ("cash-application", "oracle")],
    [("month-end-close", "reference"), ("month-end-close", "oracle"),
     ("month-end-close", "null")],
], ids=["cash-application", "month-end-close"])
def test_nothing_of_an_attempt_stays_alive(runs: list[tuple[str, str]],
                                           tmp_path: Path) -> None:
    assert alive_after(runs, tmp_path) == dict.fromkeys(KINDS, 0)


def test_nothing_of_an_external_agents_attempt_stays_alive(tmp_path: Path) -> None:
    # a desk task whose solution posts to the books over the ERP API (a served store)
    assert alive_after([("contractor-accrual", "solution")], tmp_path) == dict.fromkeys(KINDS, 0)


def test_generating_desk_tasks_one_after_another_keeps_one_simulation_at_most(
        tmp_path: Path) -> None:
    # each generation runs the company on an engine that freezes the heap at every turn;
    # a frozen heap is never collected, so each generation's world stayed for good.
    # "frozen" against "after_unfreeze": what the generations left in the permanent
    # generation, against what is there once everything is handed back and collected
    # (none on Python 3.11; on 3.12 a collection itself puts the immortal objects it meets
    # there, a few hundred)
    probe = textwrap.dedent("""
        import json
        import gc
        from desk.tasks import generate_task, load_task
        from sim.world import World
        for name in ("ar-aging-workbook", "cash-forecast-13-week", "ar-aging-workbook"):
            generate_task(load_task(name))
        frozen = gc.get_freeze_count()
        worlds = sum(isinstance(o, World) for o in gc.get_objects())
        gc.unfreeze()
        gc.collect()
        print(json.dumps({"World": worlds, "frozen": frozen,
                          "after_unfreeze": gc.get_freeze_count()}))
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["frozen"] == counts["after_unfreeze"] < 1000
    assert counts["World"] <= 1  # the last one's, freed with its caller's last reference
