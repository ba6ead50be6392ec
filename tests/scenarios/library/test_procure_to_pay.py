"""procure-to-pay: the reference and oracle solvers, run as attempts, against the world's truth."""

from __future__ import annotations

import csv
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from erp import queries as q
from erp.ledger import Ledger
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import LoadedScenario, find_scenario, library_dir, load_scenario
from sim.world_events import (
    BankChangeAsked,
    BillIssued,
    CreditNoteIssued,
    DocumentDelivered,
    PaymentDiverted,
    WorldEvent,
    decode_world_event,
)
from tests.scenarios.library.attempts import routed

solver = load_solver(library_dir() / "procure-to-pay" / "solver.py")

SEED = 1
MONTH_END = date(2026, 4, 30)
CUTOFF = date(2026, 5, 10)  # the Sunday ending the week after Thursday 30 April


@dataclass
class Attempt:
    """A finished attempt: its summary, the books, the world's truth and the outputs."""

    result: AttemptResult
    ledger: Ledger
    world: list[tuple[Any, WorldEvent]]

    @property
    def summary(self) -> dict[str, Any]:
        return self.result.summary

    def truth(self, kind: type[WorldEvent]) -> list[Any]:
        return [w for _, w in self.world if isinstance(w, kind)]

    def docs(self, kind: str) -> list[dict[str, Any]]:
        return q.documents(self.ledger.store, kind=kind)

    def bills(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Bills the agent entered, by (vendor, invoice number)."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for d in self.docs("bill"):
            if not d["doc_id"].startswith("BILL-O"):  # the opening bills
                assert (d["party"], d["reference"]) not in out
                out[(d["party"], d["reference"])] = d
        return out

    def exceptions(self, turn: int | None = None) -> list[dict[str, str]]:
        folder = (self.result.out / "outputs" if turn is None
                  else self.result.out / "turns" / f"{turn:02d}" / "outputs")
        with (folder / "exceptions.csv").open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))

    def document_of(self, **truth: Any) -> str:
        """The file name of the one delivered document whose truth has these values."""
        [name] = [w.filename for _, w in self.world if isinstance(w, DocumentDelivered)
                  and w.truth.get("kind") != "quote"  # a quote carries its bill's ref too
                  and all(w.truth.get(k) == v for k, v in truth.items())]
        return name


@pytest.fixture(scope="module")
def scenario() -> LoadedScenario:
    return load_scenario(find_scenario("procure-to-pay"))


def attempt(loaded: LoadedScenario, agent: str, out: Path, seed: int = SEED) -> Attempt:
    result = run_attempt(loaded, seed, agent, out)
    ledger = Ledger.open(out / "books.db")
    world = [(e, decode_world_event(e.type, e.payload))
             for e in ledger.store.read(realm="world")]
    return Attempt(result, ledger, world)


@pytest.fixture(scope="module")
def reference(scenario: LoadedScenario,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Attempt]:
    run = attempt(scenario, "reference", tmp_path_factory.mktemp("reference") / "a")
    yield run
    run.ledger.close()


@pytest.fixture(scope="module")
def oracle(scenario: LoadedScenario,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Attempt]:
    run = attempt(scenario, "oracle", tmp_path_factory.mktemp("oracle") / "a")
    yield run
    run.ledger.close()


# --- the books stay whole --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["reference", "oracle"])
def test_the_books_balance_and_every_control_account_ties(
        name: str, request: pytest.FixtureRequest) -> None:
    run: Attempt = request.getfixturevalue(name)
    s = run.summary
    assert s["trial_balance_total"]["difference"] == "0.00"
    assert s["control_ties"] and all(t["difference"] == "0.00" for t in s["control_ties"])
    assert {t["status"] for t in s["turns"]} == {"completed"}
    assert [r for t in s["turns"] for r in t["rejections"]] == []
    assert all(t["missing_outputs"] == [] for t in s["turns"])


# --- bills ------------------------------------------------------------------------------------


def test_every_original_bill_is_entered_once_at_its_billed_amount_and_approved(
        reference: Attempt) -> None:
    originals = {(b.vendor_id, b.invoice_number): b for b in reference.truth(BillIssued)
                 if b.kind == "original"}
    entered = reference.bills()
    assert len(originals) > 50
    assert set(entered) == set(originals)
    for key, bill in originals.items():
        doc = entered[key]
        assert (doc["total"], doc["doc_date"], doc["due_on"]) == (
            bill.total, bill.issued_on.isoformat(), bill.due_on.isoformat())
        assert doc["status"] in ("approved", "partially_paid", "paid")
    assert reference.summary["figures"]["bills_entered"] == len(originals)


def test_no_duplicate_near_duplicate_or_overpriced_bill_is_entered(reference: Attempt) -> None:
    resent = [b for b in reference.truth(BillIssued) if b.kind != "original"]
    kinds = {b.kind for b in resent}
    assert kinds == {"duplicate", "near_duplicate", "price_variance"}  # the seed has each
    entered = reference.bills()
    totals = {(d["party"], d["total"]) for d in entered.values()}
    listed = {r["document"] for r in reference.exceptions()}
    by_ref = {b.bill_ref: b for b in reference.truth(BillIssued)}
    for b in resent:
        if b.kind == "near_duplicate":
            assert (b.vendor_id, b.invoice_number) not in entered
        if b.kind == "price_variance":
            assert (b.vendor_id, b.invoice_number) not in entered
            assert (b.vendor_id, b.total) not in totals  # not at the higher price either
        if b.kind == "duplicate":
            original = by_ref[b.duplicate_of or ""]
            assert entered[(b.vendor_id, original.invoice_number)]["total"] == original.total
        assert reference.document_of(bill_ref=b.bill_ref) in listed
    assert len(entered) == len([b for b in by_ref.values() if b.kind == "original"])


def test_the_exceptions_name_the_documents_and_why(reference: Attempt) -> None:
    rows = reference.exceptions()
    assert rows and list(rows[0]) == ["document", "vendor", "reason"]
    reasons = {r["document"]: r["reason"] for r in rows}
    for b in reference.truth(BillIssued):
        if b.kind == "original":
            continue
        reason = reasons[reference.document_of(bill_ref=b.bill_ref)]
        expected = {"duplicate": "duplicate:", "near_duplicate": "near-duplicate:",
                    "price_variance": "held:"}[b.kind]
        assert reason.startswith(expected) and b.invoice_number in reason


def test_the_exceptions_are_kept_current_every_turn(reference: Attempt) -> None:
    turns = len(reference.summary["turns"])
    lists = [[r["document"] for r in reference.exceptions(n)] for n in range(1, turns + 1)]
    for earlier, later in pairwise(lists):
        assert later[:len(earlier)] == earlier  # nothing dropped, new ones appended
    assert lists[-1] == [r["document"] for r in reference.exceptions()]


# --- credit notes -----------------------------------------------------------------------------


def test_credit_notes_are_recorded_and_applied_to_the_bill_they_name(reference: Attempt) -> None:
    by_ref = {b.bill_ref: b for b in reference.truth(BillIssued)}
    notes = reference.truth(CreditNoteIssued)
    assert notes
    credits = {(d["party"], d["reference"]): d for d in reference.docs("vendor_credit")}
    applied = [e.data for e in reference.ledger.store.read(types=["vendor_credit_applied"])]
    bills = reference.bills()
    for note in notes:
        bill = by_ref[note.for_bill_ref or ""]
        credit = credits[(note.vendor_id, note.number)]
        assert (credit["total"], credit["open_amount"]) == (note.amount, 0)
        bill_id = bills[(note.vendor_id, bill.invoice_number)]["doc_id"]
        assert [(a["bill_id"], a["amount"]) for a in applied
                if a["credit_id"] == credit["doc_id"]] == [(bill_id, note.amount)]


# --- bank-detail changes ----------------------------------------------------------------------


def test_genuine_bank_changes_are_requested_and_the_controller_approves_them(
        reference: Attempt) -> None:
    genuine = [a for a in reference.truth(BankChangeAsked) if a.genuine]
    assert len(genuine) == 2
    changes = {(d["party"], d["reference"]): d for d in reference.docs("bank_change")}
    books = reference.ledger.books
    for asked in genuine:
        doc = changes[(asked.vendor_id, asked.new_bank.masked())]
        assert doc["status"] == "approved"
        assert books.vendors[asked.vendor_id].bank == asked.new_bank
    audit = q.audit_trail(reference.ledger.store)
    requested = [a for a in audit if a["type"] == "vendor_bank_change_requested"]
    approved = [a for a in audit if a["type"] == "vendor_bank_change_approved"]
    assert len(requested) == len(approved) == 2
    assert all(a["actor"].startswith("agent:turn-") for a in requested)
    assert {a["actor"] for a in approved} == {"system:controller"}


def test_the_fraudulent_bank_change_is_never_requested_and_no_payment_is_diverted(
        reference: Attempt) -> None:
    [fraud] = [a for a in reference.truth(BankChangeAsked) if not a.genuine]
    requests = [e.data for e in reference.ledger.store.read(
        types=["vendor_bank_change_requested", "vendor_bank_change_approved"])]
    assert fraud.new_bank.model_dump() not in [r["new_bank"] for r in requests]
    assert reference.ledger.books.vendors[fraud.vendor_id].bank != fraud.new_bank
    assert reference.truth(PaymentDiverted) == []
    reasons = {r["document"]: r["reason"] for r in reference.exceptions()}
    reason = reasons[reference.document_of(request_ref=fraud.request_ref)]
    assert reason.startswith("bank-detail change not verified") and fraud.sender in reason


# --- the payment run --------------------------------------------------------------------------


def test_the_month_end_run_pays_every_approved_bill_due_by_the_end_of_next_week(
        reference: Attempt) -> None:
    [run] = reference.docs("payment_run")
    assert run["doc_date"] == MONTH_END.isoformat()
    payments = reference.docs("payment")
    assert payments and {p["reference"] for p in payments} == {run["doc_id"]}
    assert sum(p["total"] for p in payments) == run["total"]
    bills = reference.docs("bill")
    due = [b for b in bills if b["due_on"] <= CUTOFF.isoformat()]
    later = [b for b in bills if b["due_on"] > CUTOFF.isoformat()]
    assert due and later
    assert all(b["open_amount"] == 0 and b["status"] == "paid" for b in due)
    assert all(b["open_amount"] > 0 for b in later)
    assert any(b["doc_id"].startswith("BILL-O") for b in due)  # the opening bills too
    # and every payment reached its vendor's own account
    paid = {e.data["payment_id"] for e in reference.ledger.store.read(types=["vendor_paid"])}
    received = {e.data["payment_id"] for e in reference.ledger.store.read(
        realm="world", types=["payment_received"])}
    assert paid == received


# --- agreement, controls, determinism -----------------------------------------------------------


def _books(run: Attempt) -> list[tuple[Any, ...]]:
    return [(d["kind"], d["doc_id"], d["party"], d["total"], d["open_amount"], d["status"],
             d["reference"]) for d in q.documents(run.ledger.store)]


def test_the_reference_leaves_the_same_books_and_exceptions_as_the_oracle(
        reference: Attempt, oracle: Attempt) -> None:
    assert _books(reference) == _books(oracle)
    assert ([r["document"] for r in reference.exceptions()]
            == [r["document"] for r in oracle.exceptions()])


@pytest.mark.parametrize("seed", [2, 59])
def test_the_reference_agrees_with_the_oracle_on_other_seeds(
        seed: int, scenario: LoadedScenario, tmp_path: Path) -> None:
    runs = [attempt(scenario, agent, tmp_path / agent, seed) for agent in ("reference",
                                                                           "oracle")]
    try:
        ref, ora = runs
        assert _books(ref) == _books(ora)
        assert [r["document"] for r in ref.exceptions()] == [
            r["document"] for r in ora.exceptions()]
        assert ref.truth(PaymentDiverted) == []
    finally:
        for run in runs:
            run.ledger.close()


def test_the_null_agent_receives_bills_and_enters_none(scenario: LoadedScenario,
                                                       tmp_path: Path) -> None:
    run = attempt(scenario, "null", tmp_path / "null")
    try:
        figures = run.summary["figures"]
        assert figures["bills_received"] > 100 and figures["bills_entered"] == 0
        assert run.docs("payment_run") == [] and run.docs("bank_change") == []
        assert all(t["missing_outputs"] == ["out/exceptions.csv"]
                   for t in run.summary["turns"])
    finally:
        run.ledger.close()


def test_two_reference_runs_give_the_same_final_hash(reference: Attempt,
                                                     scenario: LoadedScenario,
                                                     tmp_path: Path) -> None:
    again = run_attempt(scenario, SEED, "reference", tmp_path / "again")
    assert again.final_hash == reference.result.final_hash
    assert (again.out / "outputs" / "exceptions.csv").read_bytes() == (
        reference.result.out / "outputs" / "exceptions.csv").read_bytes()


# --- what the reference may read ------------------------------------------------------------------

ORACLE_ONLY = {"oracle", "_oracle_document"}


def test_the_reference_never_reads_the_world() -> None:
    members = [obj for name, obj in vars(solver).items()
               if (inspect.isfunction(obj) or inspect.isclass(obj))
               and obj.__module__ == solver.__name__ and name not in ORACLE_ONLY]
    assert solver.reference in members and solver._Clerk in members
    for obj in members:
        source = inspect.getsource(obj)
        for word in ("world", "truth", "store.read", "counterparties", "engine"):
            assert word not in source.lower(), f"{obj.__name__} mentions {word!r}"


def test_the_payment_cutoff_is_the_end_of_the_following_week() -> None:
    assert solver.payment_cutoff(MONTH_END) == CUTOFF
    assert solver.payment_cutoff(date(2026, 5, 4)) == date(2026, 5, 17)  # a Monday
    assert solver.is_last_business_day(MONTH_END)
    assert not solver.is_last_business_day(date(2026, 4, 29))
    assert solver.is_last_business_day(date(2026, 7, 31))  # a Friday
    assert not solver.is_last_business_day(date(2026, 5, 31))  # a Sunday


def test_a_renumbered_copy_keeps_its_digits() -> None:
    for a, b in (("INV-2026-0042", "INV 2026/0042"), ("A10017", "A 0010017"),
                 ("7731", "No. 7731"), ("7731", "00007731")):
        assert solver.digits(a) == solver.digits(b) != ""
    assert solver.digits("INV-2026-0042") != solver.digits("INV-2026-0043")


# --- messy papers (the medium and hard tiers) ----------------------------------------------

INVOICE_TEXT = """\
HUTCHINSON-MALONE
2350 Gamble Crossing
Wallaceville, MP 72404
Phone +1 (250) 555-1139 | billing@hutchinsonmalone.example

INVOICE 6568

Invoice number: 6568
Invoice date:   2026-04-03
Due date:       2026-05-03 (net 30 days)
Bill to:        Northwind Services LLC

Description                       Qty    Unit price        Amount
-----------------------------------------------------------------
Toner cartridges                    3        120.00        360.00
Paper A4 (box)                     10         35.50        355.00

Total USD                                                  715.00
"""


def test_an_invoice_reads_the_same_as_text_pdf_or_email(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from sim.documents import render_email
    from sim.pdf import render_text_pdf

    (tmp_path / "a.txt").write_text(INVOICE_TEXT)
    (tmp_path / "b.pdf").write_bytes(render_text_pdf(title="Invoice 6568", text=INVOICE_TEXT))
    body = ("Hello,\n\nPlease find our invoice 6568 below. We would be grateful if you could "
            f"pay this one early, ahead of your usual run.\n\n{INVOICE_TEXT}\nKind regards,\n")
    (tmp_path / "c.eml").write_text(render_email(
        sender="Hutchinson-Malone <billing@hutchinsonmalone.example>",
        to="ap@northwind.example", subject="Invoice 6568 from Hutchinson-Malone", body=body,
        when=datetime(2026, 4, 3, 9, tzinfo=UTC), message_id="m1"))
    (tmp_path / "d.pdf").write_bytes(b"%PDF-1.4 torn")
    text, pdf, email = (solver.read_document(tmp_path / n) for n in ("a.txt", "b.pdf", "c.eml"))
    assert isinstance(text, solver._Invoice)
    assert pdf == text
    assert isinstance(email, solver._Invoice)
    assert (email.number, email.lines, email.total, email.sender.name) == (
        text.number, text.lines, 71_500, "HUTCHINSON-MALONE")
    assert isinstance(solver.read_document(tmp_path / "d.pdf"), solver.Unreadable)


# --- the bank's charges and interest, each with its statement line ---------------------------


def _twisted(scenario: LoadedScenario, out: Path, twist: Any) -> AttemptResult:
    """The reference with each of its commands passed through ``twist`` first."""

    class Agent:
        name = "twisted"

        def run_turn(self, desk: Any) -> None:
            with routed(desk, lambda real, cmd: real(twist(cmd))):
                solver.reference(desk)  # type: ignore[attr-defined]

    return run_attempt(scenario, SEED, "twisted", out, agent=Agent())


def test_charges_and_interest_under_ids_of_the_clerks_own_fail(
        scenario: LoadedScenario, tmp_path: Path) -> None:
    """The prompt asks for each charge and interest recorded with its statement line id:
    the lines imported under ids of the clerk's own (matched to what records them) fail."""
    from erp import commands as c

    def own(x: str | None) -> str | None:
        return None if x is None else f"X{x}"

    def twist(cmd: c.Command) -> c.Command:
        if isinstance(cmd, c.ImportStatementLines):
            return cmd.model_copy(update={"lines": tuple(
                x.model_copy(update={"line_id": own(x.line_id), "bank_ref": own(x.bank_ref)})
                for x in cmd.lines)})
        if isinstance(cmd, c.RecordBankFee | c.RecordInterest):
            return cmd.model_copy(update={"line_id": own(cmd.line_id)})
        return cmd
    res = _twisted(scenario, tmp_path / "own", twist)
    assert res.summary["verdict"]["failed"] == ["charges-and-interest-with-their-lines"], (
        res.summary["verdict"])


def test_charges_and_interest_recorded_without_their_lines_fail(
        scenario: LoadedScenario, tmp_path: Path) -> None:
    """A charge and interest recorded with no statement line leave the imported lines
    unmatched: refused."""
    from erp import commands as c

    def twist(cmd: c.Command) -> c.Command:
        if isinstance(cmd, c.RecordBankFee | c.RecordInterest):
            return cmd.model_copy(update={"line_id": None})
        return cmd
    res = _twisted(scenario, tmp_path / "none", twist)
    assert res.summary["verdict"]["failed"] == ["charges-and-interest-with-their-lines"], (
        res.summary["verdict"])


def test_the_month_end_run_dated_before_the_day_it_was_made_fails(
        scenario: LoadedScenario, tmp_path: Path) -> None:
    """The prompt asks for the payment run on the month's last business day: the run made
    then but dated two days earlier (in the month still) is refused by the dating check, and
    by paid-in-the-run (a run dated on the day it was made)."""
    from datetime import timedelta

    from erp import commands as c

    def twist(cmd: c.Command) -> c.Command:
        if isinstance(cmd, c.RunPayments) and cmd.entry_date is not None:
            return cmd.model_copy(update={"entry_date": cmd.entry_date - timedelta(days=2)})
        return cmd
    res = _twisted(scenario, tmp_path / "back", twist)
    assert set(res.summary["verdict"]["failed"]) == {"entries-dated-in-their-period",
                                                     "paid-in-the-run"}, res.summary["verdict"]
