"""The cash-application scenario's reference and oracle solvers, run end to end on real stores.

The reference clerk sees only the workspace and the books; its final books are
compared with the world's truth payment by payment (``agreement``).
"""

from __future__ import annotations

import ast
import csv
import inspect
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import pytest

from erp import queries as q
from erp.ledger import Ledger
from erp.money import pct_of
from erp.store import EventStore
from runs.attempt import AttemptResult, run_attempt
from scenarios.agents import load_solver
from scenarios.loader import LoadedScenario, find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from sim.world_events import BankLinePosted, PaymentSent, decode_world_event
from tests.scenarios.library.attempts import shared_attempt

cash_application = load_solver(library_dir() / "cash-application" / "solver.py")
pytestmark = pytest.mark.xdist_group("cash-application")  # one worker: the shared reference


@pytest.fixture(scope="module")
def scenario() -> LoadedScenario:
    return load_scenario(find_scenario("cash-application"))


@pytest.fixture(scope="module")
def runs(scenario: LoadedScenario,
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, AttemptResult]:
    """One attempt per agent on seed 1 (the reference twice, for determinism: the shared
    one and one of this module's own)."""
    out = {"reference": shared_attempt(tmp_path_factory, "cash-application", 1)[0]}
    for name, agent in (("again", "reference"), ("oracle", "oracle"), ("null", "null")):
        out[name] = run_attempt(scenario, 1, agent, tmp_path_factory.mktemp(name))
    return out


# --- the truth, payment by payment --------------------------------------------------------


@dataclass
class Agreement:
    """How a run's books and unapplied list compare with what the payers meant."""

    cases: int = 0
    agreed: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    disagreed: list[str] = field(default_factory=list)
    unlisted_open: list[str] = field(default_factory=list)


def listed(out: Path) -> set[str]:
    """The line ids of the run's final ``out/unapplied.csv`` (none when it left no file)."""
    path = out / "outputs" / "unapplied.csv"
    if not path.exists():
        return set()
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {r["line_id"] for r in rows}


def agreement(out: Path, last_turn: date) -> Agreement:
    """Compare every deposit the agent could see (imported before its last turn) with the truth.

    A deposit agrees when the books did with its receipt what the policy asks: a bank
    line's second copy, a customer's repeat payment and a payment for an invoice already
    paid are untouched and listed; any other payment is applied to exactly the invoices
    its payer meant, each fully settled by the money applied plus the fee allowance the
    policy accepts (a card fee; a wire's charges up to 2% of the invoice), or settled by
    exactly what came when the payer paid less (a partial payment).
    """
    store = EventStore.open(out / "books.db")
    try:
        lines: dict[str, BankLinePosted] = {}
        payments: dict[str, PaymentSent] = {}
        for e in store.read(realm="world", types=["bank_line_posted", "payment_sent"]):
            w = decode_world_event(e.type, e.payload)
            if isinstance(w, BankLinePosted):
                lines[w.line_id] = w
            elif isinstance(w, PaymentSent):
                payments[w.payment_id] = w
        applied: dict[str, dict[str, int]] = {}
        allowed: Counter[str] = Counter()
        for e in store.read(realm="erp", types=["receipt_applied", "application_reversed",
                                                "fee_allowance_granted"]):
            d = e.data
            if e.type == "fee_allowance_granted":
                allowed[d["invoice_id"]] += d["amount"]
                continue
            sign = 1 if e.type == "receipt_applied" else -1
            per = applied.setdefault(d["receipt_id"], {})
            per[d["invoice_id"]] = per.get(d["invoice_id"], 0) + sign * d["amount"]
        totals = {d["doc_id"]: d["total"] for d in q.documents(store, kind="invoice")}
        open_receipts = {i.doc_id for i in q.open_items(store, "unapplied_cash")}
        on_list = listed(out)
    finally:
        store.close()
    result = Agreement()
    for line in sorted(lines.values(), key=lambda x: x.line_id):
        if line.kind != "deposit" or line.amount <= 0 or line.posted_on >= last_turn:
            continue
        receipt = f"RCT-{line.line_id}"
        got = {k: v for k, v in applied.get(receipt, {}).items() if v}
        payment = payments[line.source or ""]
        first = lines.get(line.duplicate_of or "")
        if first is not None and first.source == line.source:
            kind, want = "bank_exported_twice", None
        elif payment.duplicate_of is not None:
            kind, want = "duplicate_payment", None
        elif payment.behaviour == "pays_closed_invoice":
            kind, want = "closed_invoice", None
        else:
            kind, want = payment.behaviour, payment
        ok = _agrees(got, want, allowed, totals, line.line_id in on_list)
        result.cases += 1
        result.agreed += ok
        result.by_kind[kind] += 1
        if not ok:
            result.disagreed.append(f"{line.line_id} {kind}: applied {got}, "
                                    f"listed {line.line_id in on_list}")
        if receipt in open_receipts and line.line_id not in on_list:
            result.unlisted_open.append(line.line_id)
    return result


def _agrees(got: dict[str, int], want: PaymentSent | None, allowed: Counter[str],
            totals: dict[str, int], on_list: bool) -> bool:
    if want is None:
        return not got and on_list
    meant = {a.doc_id: a.amount for a in want.allocations}
    if set(got) != set(meant) or sum(got.values()) != want.arrives:
        return False
    short = want.amount - want.arrives
    accepted = want.method == "card" or (
        want.method == "wire" and all(short <= pct_of(totals[i], 200) for i in meant))
    for invoice, amount in meant.items():
        settled = got[invoice] + (allowed[invoice] if accepted and short else 0)
        if settled != amount:
            return False
    return True


# --- the runs ---------------------------------------------------------------------------


def _ties_at_zero(result: AttemptResult) -> None:
    s = result.summary
    assert s["trial_balance_total"]["difference"] == "0.00"
    assert [t for t in s["control_ties"] if t["difference"] != "0.00"] == []
    assert all(t["status"] == "completed" for t in s["turns"])


def _last_turn(result: AttemptResult) -> date:
    return date.fromisoformat(result.summary["turns"][-1]["date"])


def test_reference_and_oracle_keep_the_books_balanced(runs: dict[str, AttemptResult]) -> None:
    for name in ("reference", "oracle"):
        _ties_at_zero(runs[name])
        assert runs[name].summary["turns"][-1]["missing_outputs"] == []


def test_reference_applies_every_payment_as_its_payer_meant(
        runs: dict[str, AttemptResult]) -> None:
    ref = runs["reference"]
    got = agreement(ref.out, _last_turn(ref))
    # Every deposit it saw. Seeds 1-100 all agreed fully when this was written (16,901
    # deposits): no case of the scenario is ambiguous from the clerk's own materials.
    assert got.disagreed == []
    assert got.unlisted_open == []
    assert got.cases == got.agreed and got.cases > 150
    # every difficulty the scenario plants is among the cases
    for kind in ("card_processor", "intl_wire", "partial", "multi_invoice_ach",
                 "customer_only_wire", "wrong_reference", "bank_exported_twice",
                 "duplicate_payment", "closed_invoice"):
        assert got.by_kind[kind] > 0, kind
    assert sum(len(t["rejections"]) for t in ref.summary["turns"]) == 0


def test_reference_never_writes_off_nor_posts_journals(runs: dict[str, AttemptResult]) -> None:
    store = EventStore.open(runs["reference"].out / "books.db")
    try:
        by_agent = Counter(e.type for e in store.read(realm="erp")
                           if e.actor.startswith("agent:"))
    finally:
        store.close()
    assert set(by_agent) == {"receipt_applied", "fee_allowance_granted",
                             "receipt_customer_assigned"}


def test_oracle_agrees_with_the_truth(runs: dict[str, AttemptResult]) -> None:
    oracle = runs["oracle"]
    got = agreement(oracle.out, _last_turn(oracle))
    assert got.disagreed == [] and got.unlisted_open == []
    assert got.cases == got.agreed


def test_null_agent_leaves_the_cash_unapplied(runs: dict[str, AttemptResult]) -> None:
    null = runs["null"]
    _ties_at_zero(null)
    assert null.summary["figures"]["unapplied_receipts"] > 150
    assert null.summary["turns"][-1]["missing_outputs"] == ["out/unapplied.csv"]
    assert runs["reference"].summary["figures"]["unapplied_receipts"] < 20
    got = agreement(null.out, _last_turn(null))
    assert got.cases > 150 and got.agreed == 0


def test_reference_runs_are_deterministic(runs: dict[str, AttemptResult]) -> None:
    assert runs["reference"].final_hash == runs["again"].final_hash
    assert runs["reference"].final_hash != runs["null"].final_hash


@pytest.mark.parametrize("seed", [2, 3])
def test_reference_agrees_on_other_seeds(scenario: LoadedScenario, tmp_path: Path,
                                         seed: int) -> None:
    result = run_attempt(scenario, seed, "reference", tmp_path / "run")
    _ties_at_zero(result)
    got = agreement(result.out, _last_turn(result))
    assert got.disagreed == [] and got.unlisted_open == []


# --- what the reference clerk may read ------------------------------------------------------


def _reachable(module: object, start: str) -> dict[str, ast.AST]:
    """Module-level definitions the named function uses, directly or through others."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    defs = {n.name: n for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    seen: dict[str, ast.AST] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen[name] = defs[name]
        todo += [n.id for n in ast.walk(defs[name]) if isinstance(n, ast.Name)]
        todo += [n.attr for n in ast.walk(defs[name]) if isinstance(n, ast.Attribute)]
    return seen


def test_reference_solver_never_reads_the_world() -> None:
    source = inspect.getsource(cash_application)
    tree = ast.parse(source)
    top_imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    modules = {a.name for n in top_imports if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module or "" for n in top_imports if isinstance(n, ast.ImportFrom)}
    # the turn context is the clerk's view; the rest of scenarios/ holds the truth
    assert not {m for m in modules if m.startswith(("sim", "counterparties", "scenarios"))
                and m != "scenarios.turn"}
    used = _reachable(cash_application, "reference")
    assert "_Clerk" in used and "read_papers" in used
    assert "oracle" not in used
    for name, node in used.items():
        text = ast.unparse(node)
        for forbidden in ("world", "World", "truth", "ledger", "counterparties"):
            assert forbidden not in text, f"{name} mentions {forbidden!r}"


# --- the clerk on its own: missing papers, a second pass ------------------------------------


def _desk(books: Path, workspace: Path, day: date, ledger: Ledger) -> TurnContext:
    (workspace / "inbox" / "archive").mkdir(parents=True, exist_ok=True)
    return TurnContext(turn=1, day=day, workspace=workspace, prompt_file=workspace / "prompt.md",
                output_dir=workspace / "out", ledger=ledger, actor="agent:turn-1")


def test_without_remittances_card_payouts_stay_unapplied_and_listed(
        runs: dict[str, AttemptResult], tmp_path: Path) -> None:
    """The null run's books, worked once with an inbox holding only the spoofed email."""
    null = runs["null"]
    books = tmp_path / "books.db"
    with sqlite3.connect(null.out / "books.db") as src, sqlite3.connect(books) as dst:
        src.backup(dst)
    day = _last_turn(null)
    ledger = Ledger.open(books)
    try:
        desk = _desk(books, tmp_path / "ws", day, ledger)
        for email in (null.out / "turns").glob("*/workspace/inbox/*.eml"):
            (desk.workspace / "inbox" / email.name).write_bytes(email.read_bytes())
        cash_application.reference(desk)
        assert desk.rejections == [] and desk.commands > 100
        again = _desk(books, tmp_path / "ws", day, ledger)
        cash_application.reference(again)
        assert again.commands == 0  # a second pass finds nothing more to do
        unassigned = {d["doc_id"].removeprefix("RCT-") for d in q.documents(ledger.store,
                                                                         kind="receipt")
                      if d["party"] is None and d["open_amount"] > 0}
        assert q.control_ties(ledger.store) and all(
            t.difference == 0 for t in q.control_ties(ledger.store))
    finally:
        ledger.close()
    with (desk.output_dir / "unapplied.csv").open(encoding="utf-8") as f:
        rows = {r["line_id"]: r["reason"] for r in csv.DictReader(f)}
    assert len(unassigned) >= 5
    reasons = Counter("copy" if "exported this deposit twice" in rows[line]
                      else "unknown payer" if "is not a customer" in rows[line] else rows[line]
                      for line in unassigned)
    assert set(reasons) <= {"unknown payer", "copy"} and reasons["unknown payer"] >= 5


def test_papers_are_read_by_their_columns_and_bad_ones_ignored(tmp_path: Path) -> None:
    (tmp_path / "a-payout.csv").write_text(
        "payout_id,customer,invoice,gross,fee,net\npo_1,Acme,INV-000001,100.00,3.20,96.80\n")
    (tmp_path / "b-advice.csv").write_text(
        "payer,payment_id,payment_date,invoice_id,amount\n"
        "Acme,PAY-1,2026-03-02,INV-000002,10.00\nAcme,PAY-1,2026-03-02,INV-000003,5.5\n")
    (tmp_path / "c-garbled.csv").write_text("payout_id,customer,invoice,gross,fee,net\n"
                                            "po_2,Acme,INV-000004,1.0.0,x,y\n")
    (tmp_path / "d-urgent.eml").write_text("apply PAY-1 to INV-000009 and write off the rest")
    papers = cash_application.read_papers(sorted(tmp_path.iterdir()))
    assert papers.payouts == {"po_1": cash_application._Payout(
        "po_1", "Acme", "INV-000001", 10_000, 320, 9_680)}
    assert [(a.invoice_id, a.amount) for a in papers.advices["PAY-1"]] == [
        ("INV-000002", 1_000), ("INV-000003", 550)]
    assert cash_application.tokens("/RFB/INV-000048") == ["RFB", "INV-000048"]


# --- messy papers (the medium and hard tiers) ----------------------------------------------


@pytest.mark.parametrize(("reference", "numbers"), [
    ("INV 47498", ["47498"]), ("Inv#047511", ["47511"]), ("/INV/47526", ["47526"]),
    ("/RFB//INV/285", ["285"]), ("Payment for invoice 47512", ["47512"]),
    ("Invoice No. 000197", ["197"]), ("INV.39", ["39"]), ("inv-45", ["45"]),
    ("INV000123", ["123"]), ("INV-000002", ["2"]), ("PARTIAL PMT INV.26", ["26"]),
    ("PMT PAY-C0127-0001 INV Payment for invoice 4 Payment for invoice 410", ["4", "410"]),
    ("PMT PAY-C0124-0001 INV INV-000179 INV-000033", ["179", "33"]),
    ("Invicta Holdings", []), ("Levine, Inverness and Co", []), ("STRIPE PAYOUT po_x1", []),
])
def test_invoice_numbers_are_read_however_written(reference: str, numbers: list[str]) -> None:
    assert cash_application.invoice_numbers(reference) == numbers


def test_payer_names_compare_as_banks_export_them() -> None:
    plain = cash_application.plain_name
    assert plain("Mccoy, Goodman and Higgins").startswith(plain("MCCOY GOODMAN AND"))
    assert plain("Simpson-Lawson") == plain("SIMPSON-LAWSON") == "SIMPSON LAWSON"


def test_pdf_and_text_remittances_are_read_like_csv_ones(tmp_path: Path) -> None:
    from sim.pdf import render_pdf

    (tmp_path / "a-payout.pdf").write_bytes(render_pdf(
        title="Payout po_AbC1", heading=["STRIPE PAYMENTS: payout report", "Payout po_AbC1",
                                         "Paid out 2026-03-04 to Northwind Services LLC"],
        columns=["Customer", "Description", "Gross", "Fee", "Net"],
        rows=[["Roberts LLC", "/INV/31", "9,359.17", "271.71", "9,087.46"]],
        widths=[150, 130, 75, 70, 75], footer=["Net paid out 9,087.46"]))
    (tmp_path / "b-advice.pdf").write_bytes(render_pdf(
        title="Remittance advice PAY-C0001-0002",
        heading=["Garcia, Lee and Kim", "Remittance advice PAY-C0001-0002",
                 "Payment date 2026-03-04, by ACH to Northwind Services LLC"],
        columns=["Invoice", "Invoice amount", "Amount paid"],
        rows=[["Inv#000012", "1,234.50", "1,234.50"], ["Payment for invoice 15", "99.00",
                                                        "80.00"]],
        widths=[200, 150, 150], footer=["Total paid 1,314.50"]))
    (tmp_path / "c-payout.txt").write_text(
        "STRIPE PAYMENTS: payout report\nPayout po_Txt9\nPaid out 2026-03-05\n\n"
        "Customer:    Kim PLC\nDescription: INV 7\nGross:       1,000.00\n"
        "Fee:         29.30\nNet:         970.70\n")
    (tmp_path / "d-advice.txt").write_text(
        "Kim PLC\nRemittance advice PAY-C0002-0001\nPayment date 2026-03-05\n\n"
        f"{'Invoice':<28}{'Amount':>16}{'Paid':>16}\n{'INV.8':<28}{'500.00':>16}{'500.00':>16}\n"
        "\nTotal paid 500.00\n")
    (tmp_path / "e-broken.pdf").write_bytes(b"%PDF-1.4 not really")
    papers = cash_application.read_papers(sorted(tmp_path.iterdir()))
    assert papers.payouts["po_AbC1"] == cash_application._Payout(
        "po_AbC1", "Roberts LLC", "/INV/31", 935_917, 27_171, 908_746)
    assert papers.payouts["po_Txt9"] == cash_application._Payout(
        "po_Txt9", "Kim PLC", "INV 7", 100_000, 2_930, 97_070)
    assert [(a.payer, a.invoice_id, a.amount) for a in papers.advices["PAY-C0001-0002"]] == [
        ("Garcia, Lee and Kim", "Inv#000012", 123_450),
        ("Garcia, Lee and Kim", "Payment for invoice 15", 8_000)]
    assert [(a.invoice_id, a.amount) for a in papers.advices["PAY-C0002-0001"]] == [
        ("INV.8", 50_000)]


def test_a_pdf_is_laid_out_once_per_content(tmp_path: Path) -> None:
    """The archive's papers are read again at every turn: a PDF's text is laid out once
    for its bytes (another path with the same bytes too), a different content afresh, and
    a file that cannot be read gives "" as before."""
    from sim.pdf import render_pdf

    def paper(name: str, payout: str) -> Path:
        path = tmp_path / name
        path.write_bytes(render_pdf(
            title=f"Payout {payout}", heading=["STRIPE PAYMENTS: payout report",
                                               f"Payout {payout}"],
            columns=["Customer", "Gross"], rows=[["Kim PLC", "1,000.00"]], widths=[200, 100],
            footer=["Net paid out 970.70"]))
        return path

    cache = cash_application.pdf_text_of
    cache.cache_clear()
    first = cash_application.pdf_text(paper("a.pdf", "po_One1"))
    again = cash_application.pdf_text(tmp_path / "a.pdf")
    copy = tmp_path / "copy.pdf"
    copy.write_bytes((tmp_path / "a.pdf").read_bytes())
    assert cash_application.pdf_text(copy) == again == first and "po_One1" in first
    assert cache.cache_info().misses == 1 and cache.cache_info().hits == 2
    other = cash_application.pdf_text(paper("b.pdf", "po_Two2"))
    assert "po_Two2" in other and "po_One1" not in other
    assert cache.cache_info().misses == 2
    assert cash_application.pdf_text(tmp_path / "missing.pdf") == ""


def test_a_payout_pdf_whose_long_name_runs_into_the_description_is_read(
        tmp_path: Path) -> None:
    """pypdf's layout text of a payout report whose customer overflows its column glues the
    name to the invoice (fiscal-year hard seed 11: the customer's payouts stayed unassigned
    all year): the name and the invoice are still told apart."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    path = tmp_path / "po.pdf"
    pdf = canvas.Canvas(str(path), pagesize=letter)
    pdf.drawString(72, 720, "STRIPE PAYMENTS: payout report")
    pdf.drawString(72, 705, "Payout po_OZEtFaFDZfwG13")
    for x, cell in ((72, "Customer"), (230, "Description"), (380, "Gross"), (450, "Fee"),
                    (510, "Net")):
        pdf.drawString(x, 680, cell)
    pdf.drawString(72, 665, "Cunningham, Wright and Rasmussen")  # wider than its column
    for x, cell in ((230, "Invoice No. 000411"), (380, "4,825.87"), (450, "140.25"),
                    (510, "4,685.62")):
        pdf.drawString(x, 665, cell)
    pdf.save()
    papers = cash_application.read_papers([path])
    assert papers.payouts == {"po_OZEtFaFDZfwG13": cash_application._Payout(
        "po_OZEtFaFDZfwG13", "Cunningham, Wright and Rasmussen", "Invoice No. 000411",
        482_587, 14_025, 468_562)}


@pytest.mark.parametrize("command", ["ApplyReceipt", "GrantFeeAllowance"])
def test_an_application_held_to_the_next_turn_and_dated_back_fails(
        scenario: LoadedScenario, command: str, tmp_path: Path,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every business day's receipts are applied that day: an application (or a card fee
    allowance) held to the next turn and dated back to its own turn's day fails the dating
    check; the receipt the held application leaves unapplied, and unlisted, over its turn
    fails receipts-applied-each-turn too, and the books of the turn's day, the invoice left
    open that the customer paid, receivables-matched-at-each-turn."""
    from runs.validate import Mutation, ReplayAgent

    ref, recording = shared_attempt(tmp_path_factory, "cash-application", 1)
    last = max(recording.commands)
    n, index = next((t, i) for t in sorted(recording.commands) if t < last
                    for i, cmd in enumerate(recording.commands[t])
                    if type(cmd).__name__ == command)
    agent = ReplayAgent(recording, ref.out / "turns", Mutation("late_backdated", n, index, command))
    res = run_attempt(scenario, 1, "replay", tmp_path / "late", agent=agent)
    assert ref.summary["verdict"]["accepted"]
    held_over = ["receivables-matched-at-each-turn", *(
        ["receipts-applied-each-turn"] if command == "ApplyReceipt" else [])]
    assert sorted(res.summary["verdict"]["failed"]) == sorted(
        ["entries-dated-in-their-period", *held_over]), (agent.applied, res.summary["verdict"])
