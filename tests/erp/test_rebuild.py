"""The rebuild in two processes (``erp.rebuild``): the same tables as in one, books that go
on working, and failures that leave the tables as they were."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from erp import commands as c
from erp import queries as q
from erp.errors import StoreError
from erp.ledger import Ledger
from erp.projections import Projections
from erp.rebuild import PARALLEL_MIN_EVENTS, choose_workers
from erp.verification import verify_books
from runs.bench.workload import generate_workload
from tests.erp.helpers import BANK, CLERK, CONTROLLER, DAY, set_up_company
from tests.erp.test_queries import SYSTEM_FEED, apply, invoice, receive

SEED = 5


def _books(path: Path, days: int = 40) -> tuple[Ledger, list]:  # type: ignore[type-arg]
    """Books with ``days`` of the generated business, and the batches of the days after."""
    ledger = Ledger.open(path, create=True)
    batches = list(generate_workload(SEED, days=days + 20))
    for b in batches[:days]:
        ledger.execute_batch(b.submissions)
    return ledger, batches[days:]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".rebuild-" in p.name)


def test_two_processes_write_what_one_does(tmp_path: Path) -> None:
    ledger, later = _books(tmp_path / "books.db")
    live = q.table_snapshot(ledger.store)
    stats = ledger.rebuild(workers=2)
    assert stats.workers == 2
    assert stats.events == len(list(ledger.store.read(realm="erp")))
    assert q.table_snapshot(ledger.store) == live
    assert verify_books(ledger.store).ok
    assert _leftovers(tmp_path) == []
    # The books go on from the state the rebuild left: documents settled later (receipts
    # applied to earlier invoices, statement lines matched) come out as a fresh fold has them.
    for b in later:
        ledger.execute_batch(b.submissions)
    grown = q.table_snapshot(ledger.store)
    assert len(grown["doc_history"]) > len(live["doc_history"])
    assert ledger.rebuild(workers=1).workers == 1
    assert q.table_snapshot(ledger.store) == grown
    ledger.close()


def test_documents_and_statement_lines_go_on_from_a_two_process_rebuild(
        tmp_path: Path) -> None:
    """What the books keep of documents and statement lines after the rebuild (the
    statement lines read back from their rows, a bill's approval) is what later commands
    change: a line matched, unmatched and matched again, an approved bill paid, a receipt
    applied, all to documents from before the rebuild."""
    ledger = Ledger.open(tmp_path / "books.db", create=True)
    set_up_company(ledger)
    invoice(ledger, "INV-1", "500.00")
    receive(ledger, "R-1", "500.00")
    ledger.execute(c.EnterBill(bill_id="BILL-1", vendor_id="V1", vendor_invoice_number="A-1",
                               entry_date=DAY, lines=(c.BillLineIn(description="Rent",
                                                                   amount="900.00"),)), **CLERK)
    ledger.execute(c.ApproveBill(bill_id="BILL-1"), **CONTROLLER)
    ledger.execute(c.ImportStatementLines(bank_account_id=BANK, lines=(
        c.StatementLineIn(line_id="SL-1", entry_date=DAY, amount="500.00", reference="INV-1"),
        c.StatementLineIn(line_id="SL-2", entry_date=DAY, amount="-900.00",
                          description="RENT"),
    )), **SYSTEM_FEED)
    assert ledger.rebuild(workers=2).workers == 2
    apply(ledger, "R-1", "INV-1", "500.00")
    ledger.execute(c.MatchStatementLine(line_id="SL-1", targets=(
        c.MatchRef(kind="receipt", doc_id="R-1"),)), **CLERK)
    ledger.execute(c.UnmatchStatementLine(line_id="SL-1"), **CLERK)
    ledger.execute(c.MatchStatementLine(line_id="SL-1", targets=(
        c.MatchRef(kind="receipt", doc_id="R-1"),)), **CLERK)
    ledger.execute(c.PayVendor(payment_id="PAY-1", vendor_id="V1", bank_account_id=BANK,
                               entry_date=DAY, applications=(c.BillPayment(
                                   bill_id="BILL-1", amount="400.00"),)), **CLERK)
    live = q.table_snapshot(ledger.store)
    assert [(x["line_id"], x["status"]) for x in q.statement_lines(ledger.store)] == [
        ("SL-1", "matched"), ("SL-2", "unmatched")]
    assert q.document(ledger.store, "bill", "BILL-1")["status"] == "partially_paid"  # type: ignore[index]
    ledger.rebuild(workers=1)
    assert q.table_snapshot(ledger.store) == live
    assert verify_books(ledger.store).ok
    ledger.close()


def _fails_and_leaves_the_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, days: int,
                                 fold_into: Callable[[str, str, int], int],
                                 match: str) -> tuple[Ledger, list]:  # type: ignore[type-arg]
    """Books of ``days`` days whose two-process rebuild, its child folding with
    ``fold_into``, raises ``StoreError`` matching ``match``: the tables as they were, no
    side file left. The books and the batches of the days after."""
    ledger, later = _books(tmp_path / "books.db", days=days)
    live = q.table_snapshot(ledger.store)
    monkeypatch.setattr("erp.rebuild._fold_into", fold_into)
    with pytest.raises(StoreError, match=match):
        ledger.rebuild(workers=2)
    assert q.table_snapshot(ledger.store) == live
    assert _leftovers(tmp_path) == []
    return ledger, later


def test_a_failed_second_process_leaves_the_tables_as_they_were(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(path: str, side: str, head: int) -> int:
        raise RuntimeError("disk full (simulated)")

    ledger, later = _fails_and_leaves_the_tables(
        tmp_path, monkeypatch, 15, broken,
        r"second process failed: RuntimeError: disk full \(simulated\).*nothing was rebuilt")
    # Still the books: they write, and a rebuild in one process agrees with them.
    ledger.execute_batch(later[0].submissions)
    grown = q.table_snapshot(ledger.store)
    ledger.rebuild(workers=1)
    assert q.table_snapshot(ledger.store) == grown
    ledger.close()


def test_a_second_process_that_dies_is_named_by_its_exit_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def dies(path: str, side: str, head: int) -> int:
        os._exit(3)

    ledger, _ = _fails_and_leaves_the_tables(tmp_path, monkeypatch, 10, dies,
                                             r"second process ended \(exit code 3\)")
    ledger.close()


def test_processes_that_read_different_logs_rebuild_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import erp.rebuild

    real = erp.rebuild._fold_into
    ledger, _ = _fails_and_leaves_the_tables(
        tmp_path, monkeypatch, 10, lambda path, side, head: real(path, side, head - 1),
        r"second process read \d+ events of the log and this one \d+; nothing was rebuilt")
    ledger.close()


def test_how_many_processes(ledger: Ledger) -> None:
    sqlite = ledger.store.dialect == "sqlite"
    assert choose_workers(ledger.store, 2, 0) == (2 if sqlite else 1)
    assert choose_workers(ledger.store, 1, 10**6) == 1
    assert choose_workers(ledger.store, None, PARALLEL_MIN_EVENTS - 1) == 1
    for bad in (0, 3):
        with pytest.raises(ValueError, match=f"workers {bad}: expected 1, 2 or None"):
            choose_workers(ledger.store, bad, 10**6)
    # Another thread running: a forked child would get none of its locks' owners.
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert choose_workers(ledger.store, None, 10**6) == 1
    finally:
        release.set()
        other.join()


def test_projectors_are_chosen_by_name() -> None:
    with pytest.raises(ValueError, match=r"projectors \['ledger'\]: expected some of"):
        Projections(only=("gl", "ledger"))


def test_events_no_chosen_projector_reads_are_not_decoded() -> None:
    """A statement line's events only: the GL and subledgers read none of them, so even a
    payload that would not decode costs nothing (and a projector that reads them fails)."""
    row = (1, "statement_line_imported", 1, "2026-01-05", "{not json")
    Projections(only=("gl", "subledgers")).fold([row])
    with pytest.raises(ValueError):
        Projections(only=("statement",)).fold([row])


def test_one_cpu_or_no_fork_is_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    import erp.rebuild

    ledger = Ledger.open(tmp_path / "books.db", create=True)
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # xdist's worker runs threads
    assert choose_workers(ledger.store, None, 10**6) == (2 if erp.rebuild.usable_cpus() >= 2
                                                          else 1)
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # not every system has it
    assert erp.rebuild.usable_cpus() == (os.cpu_count() or 1)
    monkeypatch.setattr(erp.rebuild, "usable_cpus", lambda: 1)
    assert choose_workers(ledger.store, None, 10**6) == 1
    monkeypatch.setattr(erp.rebuild.mp, "get_all_start_methods", lambda: ["spawn"])
    assert choose_workers(ledger.store, 2, 10**6) == 1
    ledger.close()


def _rebuild_in(path: str) -> tuple[int, bool]:
    """In a pool's worker: rebuild asking for two processes; how many it used and whether
    the tables verify."""
    with Ledger.open(path) as ledger:
        stats = ledger.rebuild(workers=2)
        return stats.workers, verify_books(ledger.store).ok


def test_a_pool_worker_rebuilds_in_its_own_process(tmp_path: Path) -> None:
    """A multiprocessing pool's worker is a daemon, which may start no process: asked for
    two, it rebuilds in one (and does not fail)."""
    import multiprocessing

    ledger, _ = _books(tmp_path / "books.db", days=5)
    ledger.close()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_rebuild_in, (str(tmp_path / "books.db"),)) == (1, True)
