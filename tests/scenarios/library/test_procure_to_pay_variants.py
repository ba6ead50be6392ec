"""procure-to-pay, audited for false rejects (correct work done another way than the
reference does it) and one false accept closed:

- a bill entered due 30 days later than its invoice says (out of the month-end run) was
  accepted; entries-dated-in-their-period's ``bills_due_as_invoiced`` refuses it;
- ``out/exceptions.csv`` naming its documents by their path in the inbox
  (``inbox/NAME``, ``inbox/archive/NAME``: "by its file name in ``inbox/``" read as a path)
  was refused; it is accepted, and a document the books acted on is still refused under
  its path;
- bills approved at the next turn rather than the one that entered them (the prompt says
  approve, not when; the last day's before the run) are accepted.

Variants tried and rightly accepted, not pinned here (see the commit): one line per bill
for its total, lines without the "(qty x price)" suffix, credit notes dated the day they
arrived, the bank charges recorded before the run, the run due by Friday 05-08 rather
than Sunday, vendor names for ids, CRLF/BOM/all-quoted, rows reversed without a final
newline, columns reordered with an extra column, header cells padded, quotes listed too,
bank-change requests under other ids and reasons."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks, routed

NAME = "procure-to-pay"
SEED = 1
solver = load_solver(library_dir() / NAME / "solver.py")


class _Clerk:
    """The reference, with one thing done another way (``name``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pending: list[str] = []
        self.deferred = 0
        self.late: str | None = None
        self.day = None

    def _route(self, real: Any, cmd: c.Command) -> Any:
        if (self.name == "due-later" and self.late is None and isinstance(cmd, c.EnterBill)):
            cmd = cmd.model_copy(update={"due_on": cmd.due_on + timedelta(days=30)})
            done = real(cmd)
            self.late = done[0].data["bill_id"]
            return done
        if (self.name == "approve-next-turn" and isinstance(cmd, c.ApproveBill)
                and self.day is not None and not solver.is_last_business_day(self.day)):
            self.pending.append(cmd.bill_id)
            self.deferred += 1
            return []
        return real(cmd)

    def run_turn(self, desk: TurnContext) -> None:
        self.day = desk.day
        for bill_id in self.pending:
            assert isinstance(desk.execute(c.ApproveBill(bill_id=bill_id)), list)
        self.pending = []
        with routed(desk, self._route):
            solver.reference(desk)
        if self.name.startswith("inbox-paths"):
            self._paths(desk)

    def _paths(self, desk: TurnContext) -> None:
        """Name each listed document by its path in the inbox; ``inbox-paths-acted`` also
        lists, by its path, the first bill the books have entered."""
        path = desk.output_dir / solver.EXCEPTIONS_FILE
        header, *rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
        archived = {p.name for p in desk.archive()}
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(header)
        w.writerows([("inbox/archive/" if doc in archived else "inbox/") + doc, vendor, why]
                    for doc, vendor, why in rows)
        if self.name == "inbox-paths-acted":
            first = sorted([*desk.archive(), *desk.inbox()], key=solver.arrival_order)[0]
            w.writerow((f"inbox/archive/{first.name}" if first.name in archived
                        else f"inbox/{first.name}", "V008", "checked"))
        path.write_text(out.getvalue(), encoding="utf-8")


def _attempt(name: str, tmp_path: Path) -> tuple[_Clerk, AttemptResult]:
    clerk = _Clerk(name)
    res = run_attempt(load_scenario(find_scenario(NAME)), SEED, name, tmp_path / "a",
                      agent=clerk)
    return clerk, res


def test_a_bill_due_later_than_invoiced_is_refused(tmp_path: Path) -> None:
    clerk, res = _attempt("due-later", tmp_path)
    assert clerk.late is not None
    assert failed_checks(res.out) == {"entries-dated-in-their-period"}
    detail = check_results(res.out)["entries-dated-in-their-period"]["detail"]
    assert f"bill {clerk.late} due 2026-05-31, the invoice says 2026-05-01" in detail


def test_exceptions_named_by_their_inbox_paths_are_accepted(tmp_path: Path) -> None:
    _, res = _attempt("inbox-paths", tmp_path)
    assert failed_checks(res.out) == set(), check_results(res.out)
    rows = (res.out / "outputs" / "exceptions.csv").read_text(encoding="utf-8")
    assert "\ninbox/archive/DOC-" in rows  # the file the check read is the altered one


def test_a_bill_entered_and_listed_by_its_path_is_still_refused(tmp_path: Path) -> None:
    _, res = _attempt("inbox-paths-acted", tmp_path)
    assert failed_checks(res.out) == {"exceptions-list-rows"}
    detail = check_results(res.out)["exceptions-list-rows"]["detail"]
    assert "listed though the books acted on it: DOC-000001-" in detail


def test_bills_approved_at_the_next_turn_are_accepted(tmp_path: Path) -> None:
    clerk, res = _attempt("approve-next-turn", tmp_path)
    assert clerk.deferred > 20
    assert failed_checks(res.out) == set(), check_results(res.out)
