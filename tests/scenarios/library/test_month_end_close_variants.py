"""month-end-close, audited for false rejects: correct work done another way than the
reference's must be accepted.

The month-end files were refused when their amounts were written as people and
spreadsheets write them: an aging with its empty buckets blank, amounts with a dollar sign,
a reconciliation with an accountant's negatives in parentheses (``(3,127.37)``): each was an
unreadable amount. ``written_cents`` reads them now, and the prompt says how an item is
signed (and that no subtotal row comes between the items and the book balance, which the
check reads as an item). The same files with a figure wrong are still refused. Bills paid
one payment per bill, and paid also at the last business day's turn (the prompt asks for
the payments on the weekly turns before it, and forbids none after), are the work the
prompt asks for.
"""

from __future__ import annotations

import csv
import io
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from erp import commands as c
from erp import queries as q
from erp.errors import CommandRejected
from erp.ledger import StoredEvent
from erp.money import parse_cents
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, failed_checks, routed

NAME = "month-end-close"
mec = load_solver(library_dir() / NAME / "solver.py")
MONTH_END = date(2026, 5, 29)
SEED = 0


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def _write(path: Path, rows: list[list[str]], *, crlf: bool = False) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n" if crlf else "\n", quoting=csv.QUOTE_ALL).writerows(rows)
    path.write_bytes(b"\xef\xbb\xbf" + buf.getvalue().encode())


def _dollars(cents: int) -> str:
    return f"{'-' if cents < 0 else ''}${abs(cents) / 100:,.2f}"


class _Rewriter:
    """The reference, its month-end files rewritten on the last business day by ``rewrite``."""

    def __init__(self, name: str, rewrite: Any) -> None:
        self.name = name
        self.rewrite = rewrite

    def run_turn(self, desk: TurnContext) -> None:
        mec.reference(desk)
        if desk.day == MONTH_END:
            self.rewrite(desk.output_dir)


def _attempt(agent: Any, tmp_path: Path) -> set[str]:
    loaded = load_scenario(find_scenario(NAME))
    result = run_attempt(loaded, SEED, agent.name, tmp_path / "a", agent=agent)
    return failed_checks(result.out)


def test_month_end_files_written_another_way_are_accepted(tmp_path: Path) -> None:
    """Aging: blank empty buckets, dollar amounts, rows reversed, CRLF, BOM, every cell
    quoted. Reconciliation: negatives in parentheses, the rest with a dollar sign."""
    seen: dict[str, int] = {"blank": 0, "parens": 0}

    def rewrite(out: Path) -> None:
        aging = _rows(out / "ar_aging.csv")
        body = []
        for r in aging[1:]:
            cells = [parse_cents(x) for x in r[1:]]
            seen["blank"] += sum(1 for x in cells[:-1] if x == 0)
            body.append([r[0], *("" if x == 0 else _dollars(x) for x in cells[:-1]),
                         _dollars(cells[-1])])
        _write(out / "ar_aging.csv", [aging[0], *reversed(body)], crlf=True)
        rec = _rows(out / "bank_reconciliation.csv")
        written = []
        for item, ref, amount in rec[1:]:
            cents = parse_cents(amount)
            seen["parens"] += cents < 0
            written.append([item, ref, f"({abs(cents) / 100:,.2f})" if cents < 0
                            else _dollars(cents)])
        _write(out / "bank_reconciliation.csv", [rec[0], *written])

    assert _attempt(_Rewriter("written-another-way", rewrite), tmp_path) == set()
    assert seen["blank"] and seen["parens"], seen  # the files held both forms


def test_a_wrong_figure_written_another_way_is_still_refused(tmp_path: Path) -> None:
    """A reconciling item's negative written without its parentheses, and an aging bucket
    left blank where the books hold an amount: each check refuses its file."""
    def rewrite(out: Path) -> None:
        rec = _rows(out / "bank_reconciliation.csv")
        flipped = next(i for i, r in enumerate(rec) if i and parse_cents(r[2]) < 0)
        rec[flipped][2] = f"{-parse_cents(rec[flipped][2]) / 100:,.2f}"
        _write(out / "bank_reconciliation.csv", rec)
        aging = _rows(out / "ar_aging.csv")
        row = next(r for r in aging[1:] if parse_cents(r[1]) != 0)
        row[1] = ""
        _write(out / "ar_aging.csv", aging)

    assert _attempt(_Rewriter("wrong-figures", rewrite), tmp_path) == {
        "bank-reconciliation-ties", "ar-aging-matches-books"}


def test_the_prompt_says_no_subtotal_row(tmp_path: Path) -> None:
    """reconciliation_ties reads every row between the statement balance and the book
    balance as an item: an "adjusted bank balance" subtotal row before the book balance is
    refused by that check alone, so the prompt says the order and no subtotal row."""
    prompt = (library_dir() / NAME / "prompts" / "turn.md").read_text(encoding="utf-8")
    assert "no subtotal row" in " ".join(prompt.split())

    def rewrite(out: Path) -> None:
        rec = _rows(out / "bank_reconciliation.csv")
        _write(out / "bank_reconciliation.csv",
               [*rec[:-1], ["adjusted bank balance", "", rec[-1][2]], rec[-1]])

    assert _attempt(_Rewriter("subtotal", rewrite), tmp_path) == {"bank-reconciliation-ties"}


class _PaysEachBillAlsoAtMonthEnd:
    """The reference, each payment run split into one payment per bill, and at the last
    business day's turn also paying the approved bills due within the next 7 days."""

    name = "pays-each-bill"

    def __init__(self) -> None:
        self.paid_at_month_end = 0

    def run_turn(self, desk: TurnContext) -> None:
        def one_by_one(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
            if not (isinstance(cmd, c.RunPayments) and cmd.bill_ids and len(cmd.bill_ids) > 1):
                return real(cmd)
            done: list[StoredEvent] = []
            for bill in cmd.bill_ids:
                one = real(cmd.model_copy(update={"bill_ids": (bill,)}))
                if isinstance(one, CommandRejected):
                    return one
                done += one
            return done

        with routed(desk, one_by_one):
            mec.reference(desk)
        if desk.day != MONTH_END:
            return
        due = sorted(d["doc_id"] for d in q.documents(desk.store, kind="bill")
                     if d["status"] in ("approved", "partially_paid")
                     and int(d["open_amount"]) > 0 and d["due_on"]
                     and date.fromisoformat(d["due_on"]) <= desk.day + timedelta(days=7))
        for bill in due:
            done = desk.execute(c.RunPayments(bank_account_id="B-OPER", bill_ids=(bill,)))
            assert isinstance(done, list), done
            self.paid_at_month_end += 1
        mec.reference(desk)  # the month-end files again, with the payments outstanding


def test_bills_paid_one_by_one_and_at_month_end_are_accepted(tmp_path: Path) -> None:
    agent = _PaysEachBillAlsoAtMonthEnd()
    assert _attempt(agent, tmp_path) == set()
    assert agent.paid_at_month_end, "no bill was due within the week at month end"
