"""The engine: phases in order, turns as boundaries, the world in the log in order."""

from __future__ import annotations

from collections.abc import Generator
from datetime import date
from pathlib import Path
from typing import Any

from erp import commands as c
from erp.errors import CommandRejected
from erp.events import Policies
from erp.ledger import Ledger
from sim.automation import CompanySetup, CustomerMaster, set_up_books
from sim.calendar import BusinessCalendar
from sim.engine import Engine, Phase
from sim.rng import Streams
from sim.world import LogCursor
from sim.world_events import InjectionPlanted

START = date(2026, 3, 2)


def engine_on(tmp_path: Path, days: int = 3) -> Engine:
    ledger = Ledger.open(tmp_path / "b.db", create=True)
    cal = BusinessCalendar.from_business_days(START, days)
    eng = Engine(cal, ledger, Streams(1))
    set_up_books(eng, CompanySetup("Co", "standard-services", Policies(), 0,
                                   [CustomerMaster("C1", "Acme")], []))
    return eng


def test_daily_hooks_run_in_phase_order_on_business_days(tmp_path: Path) -> None:
    eng = engine_on(tmp_path, days=3)
    seen: list[tuple[str, str]] = []
    eng.daily(Phase.DAY_END, lambda d: seen.append((d.isoformat(), "end")))
    eng.daily(Phase.MAIL, lambda d: seen.append((d.isoformat(), "mail")))
    eng.daily(Phase.MAIL, lambda d: seen.append((d.isoformat(), "mail-2")))
    eng.finish()
    assert seen == [(d, what) for d in ("2026-03-02", "2026-03-03", "2026-03-04")
                    for what in ("mail", "mail-2", "end")]


def test_a_turn_is_a_boundary(tmp_path: Path) -> None:
    eng = engine_on(tmp_path)
    seen: list[str] = []
    eng.daily(Phase.COUNTERPARTIES, lambda d: seen.append(f"{d} before"))
    eng.daily(Phase.COMPANY, lambda d: seen.append(f"{d} after"))
    eng.run_to_turn(date(2026, 3, 3))
    assert seen == ["2026-03-02 before", "2026-03-02 after", "2026-03-03 before"]
    eng.run_to_turn(date(2026, 3, 3))  # idempotent
    assert len(seen) == 3


def test_world_events_and_company_commands_keep_their_order(tmp_path: Path) -> None:
    eng = engine_on(tmp_path)
    w = eng.world

    def planter() -> Generator[Any, Any, None]:
        yield eng.until(START, Phase.COUNTERPARTIES)
        w.emit(InjectionPlanted(injection_id="I-1", kind="x"), "scenario:injection")
        w.execute(c.RegisterCustomer(customer_id="C2", name="Globex"), actor="system:crm")
        w.emit(InjectionPlanted(injection_id="I-2", kind="y"), "scenario:injection")

    eng.process(planter())
    eng.finish()
    tail = [(e.realm, e.type, e.actor, e.sim_time)
            for e in eng.ledger.store.read(after=eng.ledger.position - 3)]
    assert tail == [("world", "injection_planted", "scenario:injection", 0.3),
                    ("erp", "customer_registered", "system:crm", 0.3),
                    ("world", "injection_planted", "scenario:injection", 0.3)]
    assert eng.ledger.verify().ok


def test_a_refused_company_command_is_kept_not_raised(tmp_path: Path) -> None:
    eng = engine_on(tmp_path)
    result = eng.world.execute(c.RegisterCustomer(customer_id="C1", name="Again"),
                               actor="system:crm")
    assert isinstance(result, CommandRejected) and result.code == "duplicate_id"
    assert [(a, name, e.code) for a, name, e in eng.world.rejections] == [
        ("system:crm", "RegisterCustomer", "duplicate_id")]


def test_same_processes_same_hash(tmp_path: Path) -> None:
    def run(sub: str) -> str:
        (tmp_path / sub).mkdir()
        eng = engine_on(tmp_path / sub)
        rng = eng.streams.generator("x")

        def emitter() -> Generator[Any, Any, None]:
            for day in eng.calendar.business_days():
                yield eng.until(day, Phase.COUNTERPARTIES)
                eng.world.emit(InjectionPlanted(injection_id=eng.world.next_id("I"), kind="k",
                                                detail={"n": int(rng.integers(0, 100))}), "t")

        eng.process(emitter())
        eng.finish()
        return eng.ledger.head_hash

    assert run("a") == run("b")


def test_a_log_cursor_reads_each_new_event_once_and_goes_on_from_the_head(
        tmp_path: Path) -> None:
    """A read that finds nothing still moves the cursor to the head: the next read starts
    there, not again from the last event of its types (which re-read the log daily)."""
    eng = engine_on(tmp_path)
    w = eng.world
    cursor = LogCursor(["customer_registered"])
    first = w.read_new(cursor)
    assert [e.event.customer_id for e in first] == ["C1"]
    w.emit(InjectionPlanted(injection_id="I-1", kind="x"), "scenario:injection")
    assert w.read_new(cursor) == []  # the pending world event was flushed, then read past
    assert cursor.position == eng.ledger.position == eng.ledger.store.head()[0]
    w.execute(c.RegisterCustomer(customer_id="C2", name="Globex"), actor="system:crm")
    w.emit(InjectionPlanted(injection_id="I-2", kind="y"), "scenario:injection")
    assert [e.event.customer_id for e in w.read_new(cursor)] == ["C2"]
    assert w.read_new(cursor) == [] and cursor.position == eng.ledger.position
