"""``erpsim demo``: build a small company's books from a generated command stream."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

from erp.errors import StoreError
from erp.ledger import Ledger
from runs.bench.workload import generate_workload


def build_demo(out: Path, *, seed: int, days: int) -> tuple[Ledger, date]:
    """Write the demo books to ``out`` (replacing an earlier demo store there).

    The store is built beside ``out`` and renamed into place only when complete,
    so an interrupted run never leaves a half-written store at ``out``.
    """
    if out.exists():
        try:
            Ledger.open(out).close()
        except StoreError as e:
            raise StoreError(f"{out} exists and is not an erpsim store; refusing to replace it "
                             "(choose another --out)") from e
    tmp = out.with_name(out.name + ".building")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    ledger = Ledger.open(tmp, create=True)
    last = date.min
    try:
        for batch in generate_workload(seed, days=days, customers=25, vendors=10,
                                       invoices_per_day=6):
            ledger.execute_batch(batch.submissions)
            last = batch.day
    finally:
        ledger.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{out}{suffix}").unlink(missing_ok=True)
    os.replace(tmp, out)
    return Ledger.open(out), last
