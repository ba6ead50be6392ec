"""three-way-match, audited for false rejects (correct work done another way than the
reference does it), medium tier, seed 1:

- goods receipts recorded under the books' own ids without the report's number as
  reference, and a hold released on the payment day naming the receiving reports that
  cleared it ("RR-000002, RR-000011": what the books call the goods receipt, ``erp
  purchase-orders receive``: "Record a goods receipt (a receiving report)"), was refused by
  holds-as-matched ("names no goods receipt"); it is accepted, and a release naming the
  receiving report of another PO is still refused.

Variants tried and rightly accepted, not pinned here: bills entered without a due date
(the vendor's terms give the invoice's), a bill's lines entered in reverse order or with
descriptions of the clerk's own, a receiving report recorded as one goods receipt per
line, POs issued in reverse requisition order or under ids of the clerk's own, the holds
file naming bills by their invoice numbers and vendors by name, reasons in capitals,
CRLF line ends."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks, routed

NAME = "three-way-match"
SEED = 1
solver = load_solver(library_dir() / NAME / "solver.py")


class _ReportsNotReferences:
    """The reference, but each receiving report recorded as a goods receipt under the
    books' next id with no reference, and each release naming the receiving reports of
    the bill's PO by their numbers (``other_po``: of another PO instead)."""

    def __init__(self, other_po: bool) -> None:
        self.name = "release-names-another-po" if other_po else "release-names-reports"
        self.other_po = other_po
        self.reports: dict[str, list[str]] = defaultdict(list)
        self.released: list[str] = []

    def run_turn(self, desk: TurnContext) -> None:
        def route(real: Any, cmd: c.Command) -> Any:
            if isinstance(cmd, c.RecordGoodsReceipt):
                report = str(cmd.receipt_id)
                if report in self.reports[cmd.po_id]:
                    return []  # recorded at an earlier turn (the reference looks for its id)
                self.reports[cmd.po_id].append(report)
                cmd = cmd.model_copy(update={"receipt_id": None, "reference": ""})
            if isinstance(cmd, c.ReleaseBillHold):
                po = desk.ledger.books.purchasing.bill_orders[cmd.bill_id]
                if self.other_po:
                    po = next(p for p in sorted(self.reports) if p != po)
                cmd = cmd.model_copy(update={"reason": "Rest of the shipment received "
                                             f"(receiving reports {', '.join(self.reports[po])})"})
                self.released.append(cmd.reason)
            return real(cmd)

        with routed(desk, route):
            solver.reference(desk)


def _attempt(clerk: Any, tmp_path: Path) -> AttemptResult:
    loaded = load_scenario(find_scenario(NAME), tier="medium")
    return run_attempt(loaded, SEED, clerk.name, tmp_path / "a", agent=clerk)


def test_a_release_naming_its_receiving_reports_is_accepted(tmp_path: Path) -> None:
    clerk = _ReportsNotReferences(other_po=False)
    res = _attempt(clerk, tmp_path)
    assert clerk.released and all("RR-" in r for r in clerk.released)
    assert failed_checks(res.out) == set(), check_results(res.out)


def test_a_release_naming_another_pos_receiving_report_is_refused(tmp_path: Path) -> None:
    clerk = _ReportsNotReferences(other_po=True)
    res = _attempt(clerk, tmp_path)
    assert clerk.released
    assert failed_checks(res.out) == {"holds-as-matched"}
    assert "names no goods receipt of PO-" in check_results(res.out)["holds-as-matched"]["detail"]
