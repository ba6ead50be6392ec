"""``erpsim demo``: build a small company's books from a generated command stream."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date
from pathlib import Path

from erp.errors import StoreError
from erp.ledger import Ledger
from runs.bench.workload import business_days, generate_workload

DEMO_START = date(2026, 1, 5)
"""The demo business's first day."""


def demo_months(days: int) -> int:
    """How many accounting periods ``days`` business days from the start reach into (each
    opened when the books are set up)."""
    last = DEMO_START
    for n, day in enumerate(business_days(DEMO_START)):
        last = day
        if n + 1 >= days:
            break
    return (last.year - DEMO_START.year) * 12 + last.month - DEMO_START.month + 1


def build_demo(out: Path, *, seed: int, days: int,
               between: Callable[[], None] | None = None) -> tuple[Ledger, date]:
    """Write the demo books to ``out`` (replacing an earlier demo store there).

    The store is built beside ``out`` and renamed into place only when complete,
    so an interrupted run never leaves a half-written store at ``out``. ``between`` is
    called after each day's batch (the CLI's check for an interruption: what it raises
    stops the build, which then leaves nothing behind).
    """
    if out.exists():
        try:
            Ledger.open(out).close()
        except StoreError as e:
            raise StoreError(f"{out} exists and is not an erpsim store; refusing to replace it "
                             "(choose another --out)") from e
    tmp = out.with_name(out.name + ".building")
    partial = (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"))
    for p in partial:
        p.unlink(missing_ok=True)
    last = date.min
    try:
        ledger = Ledger.open(tmp, create=True)
        try:
            for batch in generate_workload(seed, start=DEMO_START, days=days, customers=25,
                                           vendors=10, invoices_per_day=6,
                                           months=demo_months(days)):
                ledger.execute_batch(batch.submissions)
                last = batch.day
                if between is not None:
                    between()
        finally:
            ledger.close()
    except BaseException:  # nothing half-written stays behind
        for p in partial:
            p.unlink(missing_ok=True)
        raise
    for suffix in ("-wal", "-shm"):
        Path(f"{out}{suffix}").unlink(missing_ok=True)
    os.replace(tmp, out)
    return Ledger.open(out), last
