"""fiscal-year, audited for false rejects: correct work done another way than the
reference's must be accepted (real attempts, medium tier, seed 0; the reference with one
change each).

1. The receivables aging was refused when its customers were named by their names in the
   books (``Holmes, Robinson and Kim``) or by both name and id, when it closed with a
   ``TOTAL`` row, and when it listed every customer (those with nothing open on a row of
   zeros): the prompt asks for "open receivables by customer". ``aging_matches_books``
   reads a customer by its id or registered name, takes a row of zeros for a customer with
   nothing open and one total row that holds the books' totals; a total off by a cent is
   still refused.
2. A controller who did what its paragraph of the prompt says (finish the month before: its
   last statement lines, receipts and bills) and left the new month's bills in its inbox to
   the mid-month clerk was refused by ``entries-dated-in-their-period`` (``bills_at_arrival``:
   every bill at the first turn that had it). The prompt now tells the controller to enter
   them; the check is kept (a bill held two weeks leaves the books short of the vendor's).
3. A reconciliation with its items written as positive amounts under ``Less:`` labels does
   not tie (statement + items = book): refused, and the prompt now says the items are
   signed so that they sum to the book balance, the book balance the last row.
4. Accepted as they were (pinned here because the rules are subtle): a reconciliation whose
   balance rows are named another usual way (``Balance per bank statement``, ``Adjusted
   book balance (GL 1000)``), with thousands separators, CRLF, a BOM and an extra column;
   and, under a cash floor that binds, a due bill paid in part with what the bank holds
   above the floor (the rest at the next mid-month turn).

Tried and accepted without a test: every bill paid by a payment of its own (``PayVendor``)
instead of a run; the aging with quoted amounts, thousands separators, ``0`` for empty
buckets, rows in reverse order, CRLF, a BOM and no final newline; the reconciliation's items
reworded (``Outstanding checks / payments issued``); the reconciliation's amounts in an
accountant's parentheses. Refused and left so: a header in other case (``CUSTOMER``; the
prompt gives the columns, and column names are case-sensitive everywhere).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from erp import commands as c
from erp import queries as q
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import Execute, check_results, failed_checks, routed
from tests.scenarios.library.test_fiscal_year_gaps import RAISED_FLOOR, _raised_floor

NAME = "fiscal-year"
SEED = 0
AGING = "ar_aging.csv"
RECONCILIATION = "bank_reconciliation.csv"
AGING_CHECKS = {"ar-aging-matches-books", *(f"ar-aging-matches-books-2026-{m:02d}"
                                             for m in range(1, 12))}
RECONCILIATION_CHECKS = {"bank-reconciliation-ties", *(f"bank-reconciliation-ties-2026-{m:02d}"
                                                       for m in range(1, 12))}


def _solver() -> Any:
    return load_solver(library_dir() / NAME / "solver.py")


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def _write(path: Path, rows: list[list[str]], *, crlf: bool = False, bom: bool = False) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n" if crlf else "\n").writerows(rows)
    path.write_text(("\ufeff" if bom else "") + buf.getvalue(), encoding="utf-8")


def _cents(cell: str) -> int:
    whole, _, frac = cell.replace(",", "").lstrip("-").partition(".")
    return (-1 if cell.startswith("-") else 1) * (int(whole) * 100 + int((frac + "00")[:2]))


def _money(cents: int) -> str:
    return f"{'-' if cents < 0 else ''}{abs(cents) // 100:,}.{abs(cents) % 100:02d}"


Rewrite = Callable[[TurnContext], None]


class _Clerk:
    """The reference; after each month-end clerk's turn ``rewrite`` rewrites its files; and
    ``route`` (when given) changes its commands on their way to the books."""

    def __init__(self, name: str, rewrite: Rewrite | None = None,
                 route: Callable[[TurnContext, Execute, c.Command], Any] | None = None) -> None:
        self.name = name
        self.rewrite = rewrite
        self.route = route
        self.hits = 0

    def run_turn(self, desk: TurnContext) -> None:
        route = self.route
        if route is None:
            _solver().reference(desk)
        else:
            with routed(desk, lambda real, cmd: route(desk, real, cmd)):
                _solver().reference(desk)
        if self.rewrite is not None and desk.role == "clerk" and desk.day.day >= 25:
            self.rewrite(desk)
            self.hits += 1


def _attempt(tmp_path: Path, agent: _Clerk, scenario: Path | None = None) -> AttemptResult:
    loaded = load_scenario(scenario or find_scenario(NAME))
    return run_attempt(loaded, SEED, agent.name, tmp_path / "a", agent=agent)


def _customer_names(desk: TurnContext) -> dict[str, str]:
    return {e.data["customer_id"]: e.data["name"]
            for e in desk.store.read(realm="erp", types=["customer_registered"])}


def _aging_as_people_write_it(total_off_in_december: int = 0) -> Rewrite:
    """The aging with every customer by name (every other one as ``name (id)``), those with
    nothing open on a row of zeros, and a ``TOTAL`` row (off by ``total_off_in_december``
    cents in December's file)."""

    def rewrite(desk: TurnContext) -> None:
        path = desk.output_dir / AGING
        header, *body = _rows(path)
        names = _customer_names(desk)
        listed = {r[0] for r in body}
        body += [[cid, *["0.00"] * 6] for cid in names if cid not in listed]
        body.sort()
        totals = [sum(_cents(r[i]) for r in body) for i in range(1, 7)]
        if desk.day.month == 12:
            totals[-1] += total_off_in_december
        rows = [[names[r[0]] if n % 2 else f"{names[r[0]]} ({r[0]})", *r[1:]]
                for n, r in enumerate(body)]
        _write(path, [header, *rows, ["TOTAL", *(_money(t) for t in totals)]])

    return rewrite


def test_an_aging_by_name_of_every_customer_with_a_total_row_is_accepted(
        tmp_path: Path) -> None:
    agent = _Clerk("aging-by-name", _aging_as_people_write_it())
    res = _attempt(tmp_path, agent)
    assert agent.hits == 12
    assert failed_checks(res.out) == set(), res.summary["verdict"]
    rows = _rows(res.out / "turns" / "36" / "workspace" / "out" / AGING)
    assert rows[-1][0] == "TOTAL" and any("(C0" in r[0] for r in rows)
    assert any(r[1:] == ["0.00"] * 6 for r in rows)


def test_an_aging_whose_total_row_is_off_by_a_cent_is_refused(tmp_path: Path) -> None:
    agent = _Clerk("aging-total-off", _aging_as_people_write_it(total_off_in_december=1))
    res = _attempt(tmp_path, agent)
    assert failed_checks(res.out) == {"ar-aging-matches-books"}, res.summary["verdict"]
    detail = check_results(res.out)["ar-aging-matches-books"]["detail"]
    assert "a total row that is not the sum" in detail and "'TOTAL'" in detail, detail


def _controller_leaves_new_months_bills(desk: TurnContext, real: Execute,
                                        cmd: c.Command) -> Any:
    if (desk.role == "controller" and isinstance(cmd, c.EnterBill)
            and cmd.entry_date >= desk.day.replace(day=1)):
        return None  # left to the mid-month clerk (who enters it from inbox/archive)
    return real(cmd)


def test_a_controller_leaving_the_new_months_bills_is_refused_and_told(
        tmp_path: Path) -> None:
    """Refused by the arrival rule alone; the prompt the controller reads now asks for it."""
    agent = _Clerk("controller-leaves-bills", route=_controller_leaves_new_months_bills)
    res = _attempt(tmp_path, agent)
    assert failed_checks(res.out) == {"entries-dated-in-their-period"}, res.summary["verdict"]
    detail = check_results(res.out)["entries-dated-in-their-period"]["detail"]
    assert "arrived 2026-02-02 and was entered in the turn of 2026-02-16" in detail, detail
    prompt = (res.out / "turns" / "04" / "workspace" / "prompt.md").read_text(encoding="utf-8")
    assert "You are the controller" in prompt
    assert " ".join(prompt.split()).count(
        "Enter and approve also the bills in your `inbox/` dated in the new month") == 1


def _unsigned_items(desk: TurnContext) -> None:
    """Every reconciling item a positive amount, its label saying ``Add:`` or ``Less:``."""
    path = desk.output_dir / RECONCILIATION
    header, first, *items, last = _rows(path)
    out = [[("Less: " if _cents(a) < 0 else "Add: ") + i, r, _money(abs(_cents(a)))]
           for i, r, a in items]
    _write(path, [header, first, *out, last])


def test_a_reconciliation_with_unsigned_items_is_refused_and_told(tmp_path: Path) -> None:
    agent = _Clerk("unsigned-items", _unsigned_items)
    res = _attempt(tmp_path, agent)
    failed = failed_checks(res.out)
    assert failed and failed <= RECONCILIATION_CHECKS, res.summary["verdict"]
    detail = check_results(res.out)["bank-reconciliation-ties"]["detail"]
    assert "the statement balance plus the items is" in detail, detail
    prompt = " ".join((res.out / "turns" / "36" / "workspace" / "prompt.md")
                      .read_text(encoding="utf-8").split())
    assert ("each item signed so that the statement balance plus the items is the book "
            "balance") in prompt and "the book balance the last" in prompt


def _reconciliation_another_way(desk: TurnContext) -> None:
    path = desk.output_dir / RECONCILIATION
    header, first, *items, last = _rows(path)
    rows = [["Balance per bank statement", first[1], first[2]], *items,
            ["Adjusted book balance (GL 1000)", last[1], last[2]]]
    _write(path, [[*header, "note"],
                  *([i, r, _money(_cents(a)), "per " + desk.day.isoformat()] for i, r, a in rows)],
           crlf=True, bom=True)


def test_a_reconciliation_written_another_usual_way_is_accepted(tmp_path: Path) -> None:
    agent = _Clerk("reconciliation-another-way", _reconciliation_another_way)
    res = _attempt(tmp_path, agent)
    assert agent.hits == 12
    assert failed_checks(res.out) == set(), res.summary["verdict"]
    text = (res.out / "turns" / "36" / "workspace" / "out" / RECONCILIATION).read_text(
        encoding="utf-8")
    assert text.startswith("\ufeff") and "Adjusted book balance" in text and "," in text


class _PaysInPart:
    """Under the raised floor: at a payment run pays the due bills the bank holds above the
    floor, earliest due first, and the first that does not fit in part, with the rest."""

    name = "pays-in-part"

    def __init__(self) -> None:
        self.partial = 0

    def run_turn(self, desk: TurnContext) -> None:
        def route(real: Execute, cmd: c.Command) -> Any:
            if not isinstance(cmd, c.RunPayments) or not cmd.bill_ids:
                return real(cmd)
            bills = {d["doc_id"]: d for d in q.documents(desk.store, "bill")}
            spare = q.account_balance(desk.store, "1000") - RAISED_FLOOR
            done = None
            for b in sorted(cmd.bill_ids, key=lambda b: (bills[b]["due_on"], b)):
                amount = int(bills[b]["open_amount"])
                if amount > spare:
                    if spare <= 0:
                        break
                    amount = spare
                    self.partial += 1
                spare -= amount
                done = real(c.PayVendor(
                    vendor_id=bills[b]["party"], bank_account_id=cmd.bank_account_id,
                    applications=(c.BillPayment(bill_id=b, amount=amount),)))
            return done

        with routed(desk, route):
            _solver().reference(desk)


def test_a_due_bill_paid_in_part_when_cash_is_short_is_accepted(tmp_path: Path) -> None:
    """The part left open is more than the bank holds above the floor: it waits."""
    agent = _PaysInPart()
    res = run_attempt(load_scenario(_raised_floor(tmp_path)), SEED, agent.name,
                      tmp_path / "a", agent=agent)
    assert agent.partial > 0
    assert failed_checks(res.out) == set(), res.summary["verdict"]
