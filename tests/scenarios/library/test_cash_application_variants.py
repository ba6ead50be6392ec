"""cash-application, audited for false rejects: correct work done another way than the
reference's is accepted (none was refused).

- ``out/unapplied.csv`` written another valid way (a BOM, CRLF, every cell quoted, the
  header with spaces, its columns in another order with an extra one, the rows reversed,
  no newline at the end);
- the receipts applied in other steps: each application in two parts, a card fee's
  allowance granted before the payout's application, and an application made a cent short,
  reversed and made again in the same turn (a correction by reversal).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from erp import commands as c
from erp.errors import CommandRejected
from erp.ledger import StoredEvent
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, failed_checks, routed

NAME = "cash-application"
solver = load_solver(library_dir() / NAME / "solver.py")
SEED = 1


def _attempt(agent: Any, tmp_path: Path, tier: str | None = None) -> set[str]:
    loaded = load_scenario(find_scenario(NAME), tier=tier)
    result = run_attempt(loaded, SEED, agent.name, tmp_path / "a", agent=agent)
    return failed_checks(result.out)


class _ListWrittenAnotherWay:
    name = "list-another-way"
    rows = 0

    def run_turn(self, desk: TurnContext) -> None:
        solver.reference(desk)
        path = desk.output_dir / "unapplied.csv"
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))[1:]
        self.rows += len(rows)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\r\n", quoting=csv.QUOTE_ALL)
        w.writerow([" Reason ".lower(), " line_id ", "note"])
        w.writerows([reason, line, "see the policy"] for line, reason in reversed(rows))
        path.write_bytes(b"\xef\xbb\xbf" + buf.getvalue().rstrip("\r\n").encode())


def test_unapplied_list_written_another_way_is_accepted(tmp_path: Path) -> None:
    agent = _ListWrittenAnotherWay()
    assert _attempt(agent, tmp_path) == set()
    assert agent.rows, "no line was ever left unapplied"


class _OtherSteps:
    """The reference's work in other steps (see the module's docstring)."""

    name = "other-steps"

    def __init__(self) -> None:
        self.seen = {"split": 0, "allowance_first": 0, "reversed": 0}

    def run_turn(self, desk: TurnContext) -> None:
        held: list[c.ApplyReceipt] = []

        def flush(real: Execute) -> None:
            for x in held:
                done = self.apply(real, x)
                assert isinstance(done, list), done
            held.clear()

        def route(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
            if isinstance(cmd, c.ApplyReceipt):
                flush(real)
                held.append(cmd)  # the clerk's local view moves on; the books wait
                return []
            if isinstance(cmd, c.GrantFeeAllowance) and held:
                self.seen["allowance_first"] += 1
                done = real(cmd)
                flush(real)
                return done
            flush(real)
            return real(cmd)

        with routed(desk, route) as real:
            solver.reference(desk)
            flush(real)

    def apply(self, real: Execute, cmd: c.ApplyReceipt) -> list[StoredEvent] | CommandRejected:
        """Every third application a cent short, reversed, redone; the others in two parts."""
        n = sum(self.seen.values())
        if cmd.amount > 200 and n % 3 == 0:
            self.seen["reversed"] += 1
            short = real(cmd.model_copy(update={"amount": cmd.amount - 1}))
            assert isinstance(short, list), short
            back = real(c.ReverseApplication(receipt_id=cmd.receipt_id, invoice_id=cmd.invoice_id,
                                             amount=cmd.amount - 1, entry_date=cmd.entry_date))
            assert isinstance(back, list), back
            return real(cmd)
        if cmd.amount > 200:
            self.seen["split"] += 1
            first = real(cmd.model_copy(update={"amount": cmd.amount // 2}))
            if isinstance(first, CommandRejected):
                return first
            return real(cmd.model_copy(update={"amount": cmd.amount - cmd.amount // 2}))
        return real(cmd)


def test_receipts_applied_in_other_steps_are_accepted(tmp_path: Path) -> None:
    agent = _OtherSteps()
    assert _attempt(agent, tmp_path) == set()
    assert all(agent.seen.values()), agent.seen
