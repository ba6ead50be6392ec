"""The month-end-close solvers: books that close, files that reconcile, the reference blind."""

from __future__ import annotations

import ast
import csv
import dataclasses
import inspect
import io
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from checks.policy import item_sign
from erp import commands as c
from erp import queries as q
from erp.money import parse_cents
from erp.store import EventStore
from runs.attempt import AttemptResult, Recording, run_attempt
from runs.validate import Mutation, ReplayAgent
from scenarios.agents import NullAgent, OracleAgent, ReferenceAgent, built_in_agent, load_solver
from scenarios.loader import LoadedScenario, find_scenario, library_dir, load_scenario
from sim.world_events import decode_world_event
from tests.scenarios.library.attempts import Execute, routed, shared_attempt

mec = load_solver(library_dir() / "month-end-close" / "solver.py")
pytestmark = pytest.mark.xdist_group("month-end-close")  # one worker: the shared reference

MONTH_END = date(2026, 5, 29)
SEED = 1
VENDORS_SEED = 2
"""A seed at which the misbehaving vendors resend bills, reformat numbers and credit."""


def _vendors_misbehave(loaded: LoadedScenario) -> LoadedScenario:
    """The scenario with vendors that resend bills, reformat numbers and send credit notes."""
    sc = loaded.scenario
    vendors = sc.population.vendors.model_copy(update={
        "profiles": {"reliable": 0.1, "bills_twice": 0.3, "near_duplicates": 0.3,
                     "credit_notes": 0.3},
        "params": {"bills_twice": {"duplicate_rate": 0.6},
                   "near_duplicates": {"near_duplicate_rate": 0.6},
                   "credit_notes": {"credit_note_rate": 0.6}}})
    pop = sc.population.model_copy(update={"vendors": vendors})
    return dataclasses.replace(loaded, scenario=sc.model_copy(update={"population": pop}))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, AttemptResult]:
    """Attempts: null, reference (twice: the shared one and one of this module's own) and
    oracle; both again with misbehaving vendors."""
    loaded = load_scenario(find_scenario("month-end-close"))
    vendors = _vendors_misbehave(loaded)
    root = tmp_path_factory.mktemp("month-end-close")
    plan = {"null": (loaded, SEED, "null"),
            "reference-again": (loaded, SEED, "reference"), "oracle": (loaded, SEED, "oracle"),
            "vendors-reference": (vendors, VENDORS_SEED, "reference"),
            "vendors-oracle": (vendors, VENDORS_SEED, "oracle")}
    runs = {name: run_attempt(sc, seed, agent, root / name)
            for name, (sc, seed, agent) in plan.items()}
    runs["reference"] = shared_attempt(tmp_path_factory, "month-end-close", SEED)[0]
    return runs


def _store(result: AttemptResult) -> EventStore:
    return EventStore.open(str(result.out / "books.db"))


def _rows(result: AttemptResult, name: str, turn: int | None = None) -> list[dict[str, str]]:
    folder = (result.out / "outputs" if turn is None
              else result.out / "turns" / f"{turn:02d}" / "outputs")
    return list(csv.DictReader(io.StringIO((folder / name).read_text(encoding="utf-8"))))


def _world(store: EventStore, *types: str) -> list[Any]:
    return [decode_world_event(e.type, e.payload) for e in store.read(realm="world",
                                                                     types=list(types))]


def _planted(store: EventStore, kind: str) -> dict[str, Any]:
    [detail] = [x.detail for x in _world(store, "injection_planted") if x.kind == kind]
    return detail


def _end_of_turn(store: EventStore, turn: int) -> int:
    """The log position when the agent's turn ended (later that day the company acts)."""
    return max(e.position for e in store.read(realm="erp", actor=f"agent:turn-{turn}"))


@pytest.mark.parametrize("agent", ["reference", "oracle"])
def test_the_books_close_balanced_and_tied(runs: dict[str, AttemptResult], agent: str) -> None:
    s = runs[agent].summary
    assert s["trial_balance_total"]["difference"] == "0.00"
    assert [t["difference"] for t in s["control_ties"]] == ["0.00"] * len(s["control_ties"])
    assert [(t["status"], t["rejections"]) for t in s["turns"]] == [("completed", [])] * 6
    assert [t["role"] for t in s["turns"]] == ["clerk"] * 5 + ["controller"]  # June 1 closes
    assert not s["turns"][-1]["missing_outputs"]
    closed = [e for e in _store(runs[agent]).read(types=["period_closed"])]
    assert [(e.actor, e.role, e.data["period"]) for e in closed] == [
        ("agent:turn-6", "controller", "2026-05")]
    assert s["figures"]["bills_entered"] > 0 and s["figures"]["unmatched_statement_lines"] == 0


def test_the_bank_statement_reaches_the_month_end_turn(runs: dict[str, AttemptResult]) -> None:
    inbox = runs["reference"].out / "turns" / "05" / "workspace" / "inbox"
    assert [p.name for p in inbox.glob("*bank-statement-2026-05.csv")]
    earlier = runs["reference"].out / "turns" / "04" / "workspace" / "inbox"
    assert not list(earlier.rglob("*bank-statement*"))


@pytest.mark.parametrize("agent", ["reference", "oracle"])
def test_the_bank_reconciliation_reconciles_statement_to_books(
        runs: dict[str, AttemptResult], agent: str) -> None:
    result = runs[agent]
    store = _store(result)
    rows = _rows(result, mec.RECONCILIATION)
    assert list(rows[0]) == ["item", "reference", "amount"]
    amounts = [parse_cents(r["amount"]) for r in rows]
    first, last, items = rows[0], rows[-1], rows[1:-1]
    # the statement balance is the bank's own balance of the account at the month end
    lines = _world(store, "bank_line_posted")
    opening = next(e.data["opening_balance"] for e in store.read(types=["bank_account_opened"]))
    assert first["item"] == "statement balance"
    assert amounts[0] == opening + sum(x.amount for x in lines if x.posted_on <= MONTH_END)
    assert last["item"] == "book balance"
    assert amounts[-1] == q.account_balance(store, "1000", as_of=MONTH_END)
    assert sum(amounts[:-1]) == amounts[-1]
    assert "unexplained difference" not in {r["item"] for r in items}
    duplicate = _planted(store, "duplicate_bank_line")
    # the returned (NSF) deposit is recorded in the books against its line: no item
    assert not [r for r in items if r["item"].startswith("returned item")]
    dup = [(r["item"].split(" ")[0], parse_cents(r["amount"])) for r in items
           if "duplicate bank line" in r["item"]]
    assert dup == [("duplicate", -duplicate["amount"]), ("receipt", duplicate["amount"])]
    assert len(items) == 2  # fees, interest, payments, deposits, returns are in the books


def test_before_the_statement_the_reconciliation_is_to_the_imported_lines(
        runs: dict[str, AttemptResult]) -> None:
    rows = _rows(runs["reference"], mec.RECONCILIATION, turn=3)
    assert rows[0]["item"] == ("statement balance per the bank lines imported in the books "
                               "(no bank statement for 2026-05 received)")
    amounts = [parse_cents(r["amount"]) for r in rows]
    assert sum(amounts[:-1]) == amounts[-1]
    store = _store(runs["reference"])
    assert amounts[-1] == q.account_balance(store, "1000", position=_end_of_turn(store, 3))
    # that day's payments leave after the turn: outstanding until the bank posts them
    assert {r["item"] for r in rows[1:-1]} >= {"outstanding payment"}


@pytest.mark.parametrize("agent", ["reference", "oracle"])
def test_the_aging_is_the_books_receivables_at_the_end_of_the_turn(
        runs: dict[str, AttemptResult], agent: str) -> None:
    store = _store(runs[agent])
    rows = _rows(runs[agent], mec.AGING)
    assert list(rows[0]) == list(mec.AGING_COLUMNS)
    position = _end_of_turn(store, 5)
    total = sum(parse_cents(r["total"]) for r in rows)
    assert total == q.account_balance(store, "1200", position=position) > 0
    expected = {a.party: a for a in q.aging(store, "ar", as_of=MONTH_END, position=position)}
    assert {r["customer"] for r in rows} == set(expected)
    for r in rows:
        buckets = tuple(parse_cents(r[k]) for k in mec.AGING_COLUMNS[1:-1])
        assert buckets == expected[r["customer"]].buckets
        assert sum(buckets) == parse_cents(r["total"])


@pytest.mark.parametrize("agent", ["reference", "oracle"])
def test_only_cash_that_cannot_be_placed_stays_unapplied(
        runs: dict[str, AttemptResult], agent: str) -> None:
    store = _store(runs[agent])
    duplicate, returned = _planted(store, "duplicate_bank_line"), _planted(store, "returned_item")
    # when the closing turn ended (deposits the bank posts that evening come after it)
    unapplied = {i.doc_id: i.open_amount for i in q.open_items(
        store, "unapplied_cash", position=_end_of_turn(store, 6))}
    # the receipt of the line the bank posted twice; the deposit that bounced is returned
    assert unapplied == {f"RCT-{duplicate['line_id']}": duplicate["amount"]}
    bounced = q.document(store, "receipt", f"RCT-{returned['returns']}")
    assert bounced is not None and bounced["status"] == "returned"
    [back] = [d for d in q.documents(store, "return") if d["reference"] == bounced["doc_id"]]
    assert (back["total"], back["status"]) == (returned["amount"], "cleared")
    # the bounced deposit's invoices are owed again
    [paid] = [p for p in _world(store, "payment_sent") if p.payment_id == returned["payment_id"]]
    for a in paid.allocations:
        doc = q.document(store, "invoice", a.doc_id)
        assert doc is not None and doc["open_amount"] >= a.amount


def test_the_null_agent_leaves_the_work_undone(runs: dict[str, AttemptResult]) -> None:
    null, ref = runs["null"].summary["figures"], runs["reference"].summary["figures"]
    assert null["unapplied_receipts"] > 10 * ref["unapplied_receipts"]
    assert parse_cents(null["unapplied_cash"]) > parse_cents(ref["unapplied_cash"])
    assert null["bills_entered"] == 0 < null["bills_received"]
    assert null["unmatched_statement_lines"] > ref["unmatched_statement_lines"]
    assert not (runs["null"].out / "outputs" / mec.RECONCILIATION).exists()


def test_the_reference_is_deterministic_and_does_the_oracles_work(
        runs: dict[str, AttemptResult]) -> None:
    assert runs["reference"].final_hash == runs["reference-again"].final_hash
    assert runs["reference"].final_hash == runs["oracle"].final_hash
    assert runs["vendors-reference"].final_hash == runs["vendors-oracle"].final_hash


def test_bills_are_entered_once_and_credit_notes_applied(runs: dict[str, AttemptResult]) -> None:
    result = runs["vendors-reference"]
    store = _store(result)
    issued = _world(store, "bill_issued")
    kinds = Counter(b.kind for b in issued)
    assert kinds["duplicate"] and kinds["near_duplicate"] and kinds["original"]
    entered = {(d["party"], d["reference"]) for d in q.documents(store, "bill")
               if not d["reference"].startswith("OB-")}
    assert entered == {(b.vendor_id, b.invoice_number) for b in issued if b.kind == "original"}
    notes = _world(store, "credit_note_issued")
    credits = {(d["party"], d["reference"]): d for d in q.documents(store, "vendor_credit")}
    assert notes and set(credits) == {(n.vendor_id, n.number) for n in notes}
    assert all(d["open_amount"] == 0 for d in credits.values())  # applied to their bills
    s = result.summary
    assert s["trial_balance_total"]["difference"] == "0.00"
    assert all(t["difference"] == "0.00" for t in s["control_ties"])
    assert not any(t["rejections"] for t in s["turns"])


def test_the_reference_never_reads_the_world() -> None:
    tree = ast.parse(inspect.getsource(mec))
    top_imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    modules = [a.name for n in top_imports if isinstance(n, ast.Import) for a in n.names]
    modules += [n.module or "" for n in top_imports if isinstance(n, ast.ImportFrom)]
    assert not [m for m in modules if m.split(".")[0] in ("sim", "counterparties", "checks")]
    blind = [mec._Clerk, mec.Reference, mec.reference, mec.close_turn, mec.plan_applications,
             mec._email_text, mec._bank_statement, mec._last_turn]
    for obj in blind:
        source = inspect.getsource(obj)
        for word in ("world", "truth", "sim.", "counterparties", "World"):
            assert word not in source, f"{obj.__name__} mentions {word!r}"
    assert "world" in inspect.getsource(mec.Oracle)  # the check can see a mention


def test_the_built_in_agents_run_the_folders_solver() -> None:
    scenario = load_scenario(find_scenario("month-end-close"))
    world: Any = object()  # the agents only hold it
    reference = built_in_agent("reference", scenario, world)
    oracle = built_in_agent("oracle", scenario, world)
    assert isinstance(reference, ReferenceAgent) and reference.solver is mec.reference
    assert isinstance(oracle, OracleAgent) and oracle.solver is mec.oracle
    assert oracle.world is world
    assert isinstance(built_in_agent("null", scenario, world), NullAgent)


def test_a_statement_csv_reads_as_the_bank_wrote_it(tmp_path: Path) -> None:
    text = ("date,line_id,description,reference,counterparty,amount,balance\n"
            "2026-05-01,,OPENING BALANCE,,,,100.00\n"
            "2026-05-04,BL-1,ACH CREDIT,INV-000001,\"Kim, Lee and Co\",25.50,125.50\n"
            "2026-05-29,BL-2,SERVICE CHARGE,FEE 2026-05,First Harbor Bank,-15.25,110.25\n"
            "2026-05-31,,CLOSING BALANCE,,,,110.25\n")
    statement = mec._bank_statement("s.csv", list(csv.DictReader(io.StringIO(text))))
    assert statement is not None
    assert (statement.period, statement.start, statement.closing) == (
        "2026-05", date(2026, 5, 1), 11025)
    assert [(x.line_id, x.amount, x.counterparty) for x in statement.lines] == [
        ("BL-1", 2550, "Kim, Lee and Co"), ("BL-2", -1525, "First Harbor Bank")]


# --- difficulty tiers ---------------------------------------------------------------------


def test_medium_is_the_default_tier_and_the_scenario_as_written() -> None:
    path = find_scenario("month-end-close")
    plain = load_scenario(path).scenario
    assert plain.tier == "medium" and plain.tiers["medium"].changes() == {}
    medium = load_scenario(path, tier="medium").scenario
    assert medium.population == plain.population and medium.injections == plain.injections
    assert not medium.documents.active  # golden hashes of the untiered runs hold
    easy, hard = (load_scenario(path, tier=t).scenario for t in ("easy", "hard"))
    assert (easy.population.customers.count < plain.population.customers.count
            < hard.population.customers.count)
    assert (easy.company.opening.ar_open_invoices < plain.company.opening.ar_open_invoices
            < hard.company.opening.ar_open_invoices)
    assert not easy.documents.active and hard.documents.active
    returned = [sum(i.kind == "returned_item" for i in s.injections) for s in (easy, hard)]
    assert returned == [1, 3]
    assert hard.tiers["hard"].changes()["injections"][0]["kind"] == "returned_item"


@pytest.mark.timeout(900)  # one whole hard-tier attempt: more than the suite's 300 s loaded
def test_the_reference_reads_the_hard_tiers_messy_papers(tmp_path: Path) -> None:
    loaded = load_scenario(find_scenario("month-end-close"), tier="hard")
    result = run_attempt(loaded, 3, "reference", tmp_path / "hard")
    assert result.summary["tier"]["name"] == "hard"
    assert result.summary["verdict"]["accepted"], result.summary["verdict"]
    inbox = [p.name for p in (tmp_path / "hard").glob("turns/06/workspace/inbox/**/*")]
    kinds = Counter(Path(n).suffix for n in inbox)
    assert kinds[".pdf"] and kinds[".txt"] and kinds[".eml"], kinds
    store = _store(result)
    from counterparties.customers import PROCESSOR_NAME

    payers = {x["counterparty"] for x in q.statement_lines(store)}
    assert [p for p in payers if p.isupper() and p != PROCESSOR_NAME.upper()]  # cut names
    # unnamed and unapplied by the month end: at most the receipt of the bank's duplicate line
    assert len([d for d in q.documents(store, "receipt") if d["party"] is None
                and int(d["open_amount"]) > 0 and d["status"] != "returned"
                and d["doc_date"] <= MONTH_END.isoformat()]) <= 1
    # wires the bank posted on the month's last day after it sent the statement are on no
    # statement: the reconciliation ties to the statement as sent (bank-reconciliation-ties)
    statement = next((tmp_path / "hard").glob("turns/05/workspace/inbox/*bank-statement-*"))
    stated = {r["line_id"] for r in csv.DictReader(io.StringIO(statement.read_text()))}
    late = [x for x in q.statement_lines(store) if x["entry_date"] == MONTH_END.isoformat()
            and x["line_id"] not in stated]
    assert late and "WIRE" in " ".join(x["description"] for x in late).upper()


# --- per-date control between the weekly turns -------------------------------------------------

DAILY = ("receivables-match-customers", "payables-match-vendors", "ar-ties-to-subledger",
         "ap-ties-to-subledger", "unapplied-ties-to-subledger")


@pytest.mark.parametrize("name", ["reference", "vendors-reference"])
def test_the_reference_passes_every_per_date_control_on_every_date(
        runs: dict[str, AttemptResult], name: str) -> None:
    """Between the weekly turns the books lag the world by what arrived since the last turn
    (bills, deposits, a returned deposit): grading knows the turn dates, so a perfect clerk
    passes every per-date control on every business date."""
    daily = runs[name].summary["daily_checks"]
    assert set(daily) == set(DAILY)
    days = len(load_scenario(find_scenario("month-end-close")).scenario.calendar.build()
               .business_days())
    assert {k: (v["first_failed"], v["dates_checked"]) for k, v in daily.items()} == {
        k: (None, days) for k in DAILY}, daily


def _arrived_between_turns(recording: Recording, store: EventStore, turns: list[date],
                           kind: str) -> tuple[int, int, date]:
    """The first ``EnterBill`` (``kind`` bill) or ``ApplyReceipt`` (receipt) of a turn after
    the first whose document arrived after the turn before it (a bill issued, a deposit the
    bank posted on or after that turn's date): ``(turn, index, the turn's date)``."""
    for n, day in enumerate(turns[1:], start=2):
        for i, cmd in enumerate(recording.commands.get(n, [])):
            arrived: date | None
            if kind == "bill" and isinstance(cmd, c.EnterBill):
                arrived = cmd.entry_date
            elif kind == "receipt" and isinstance(cmd, c.ApplyReceipt):
                doc = q.document(store, "receipt", cmd.receipt_id)
                arrived = date.fromisoformat(doc["doc_date"]) if doc else None
            else:
                continue
            if arrived is not None and turns[n - 2] <= arrived < day:
                return n, i, day
    raise AssertionError(f"no {kind} arrived between two turns")


@pytest.mark.parametrize(("kind", "check"), [("bill", "payables-match-vendors"),
                                             ("receipt", "receivables-match-customers")])
def test_a_document_not_worked_at_the_next_turn_fails_from_that_date_on(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, kind: str,
        check: str) -> None:
    """The reference with one bill (or one receipt's application) of a document that arrived
    between turns left undone: the per-date control passes until the turn that should have
    worked it and fails on every date from that turn on."""
    loaded = load_scenario(find_scenario("month-end-close"))
    ref, recording = shared_attempt(tmp_path_factory, "month-end-close", SEED)
    turns = [date.fromisoformat(t["date"]) for t in ref.summary["turns"]]
    n, index, day = _arrived_between_turns(recording, _store(ref), turns, kind)
    command = type(recording.commands[n][index]).__name__
    agent = ReplayAgent(recording, ref.out / "turns", Mutation("drop", n, index, command))
    res = run_attempt(loaded, SEED, "replay", tmp_path / "dropped", agent=agent)
    got = res.summary["daily_checks"][check]
    days = loaded.scenario.calendar.build().business_days()
    assert (got["first_failed"], got["failed_dates"]) == (
        day.isoformat(), len([d for d in days if d >= day])), got
    assert not res.summary["verdict"]["accepted"]


def _later_undone(recording: Recording, kind: str) -> tuple[int, int]:
    """``(turn, index)`` of the reference's command whose omission a later turn's work
    covers up by the month's end: the ``ApproveBill`` of a bill a vendor credit is applied
    to (``approval``: a credited bill is partially paid, approved or not), or the
    ``ApplyReceipt`` of a receipt whose deposit is later returned (``receipt``: the
    return's reversal leaves the invoice open either way)."""
    later: set[str] = set()
    for cmds in recording.commands.values():
        for cmd in cmds:
            if kind == "approval" and isinstance(cmd, c.ApplyVendorCredit):
                later.add(cmd.bill_id)
            if kind == "receipt" and isinstance(cmd, c.RecordReturnedDeposit):
                later.add(cmd.receipt_id)
    for n, cmds in sorted(recording.commands.items()):
        for i, cmd in enumerate(cmds):
            if (kind == "approval" and isinstance(cmd, c.ApproveBill)
                    and cmd.bill_id in later) or (
                    kind == "receipt" and isinstance(cmd, c.ApplyReceipt)
                    and cmd.receipt_id in later):
                return n, i
    raise AssertionError(f"the reference gives no {kind} a later turn covers up")


@pytest.mark.parametrize(("kind", "seed", "failing"), [
    ("approval", VENDORS_SEED, "every-bill-approved"),
    ("receipt", SEED, "receivables-matched-at-the-may-")])
def test_work_left_undone_that_the_month_end_covers_up_is_caught(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, kind: str, seed: int,
        failing: str) -> None:
    """A bill never approved but credited (partially paid, so bills-approved passes), and a
    receipt not applied at its turn whose deposit bounced later (the month's end is as the
    reference leaves it): each fails a check of its own."""
    loaded = load_scenario(find_scenario("month-end-close"))
    if kind == "approval":  # the misbehaving vendors: a run of its own
        loaded = _vendors_misbehave(loaded)
        recording = Recording()
        ref = run_attempt(loaded, seed, "reference", tmp_path / "ref", record=recording)
    else:
        ref, recording = shared_attempt(tmp_path_factory, "month-end-close", seed)
    n, index = _later_undone(recording, kind)
    command = type(recording.commands[n][index]).__name__
    op = "skip_approval" if kind == "approval" else "drop"
    agent = ReplayAgent(recording, ref.out / "turns", Mutation(op, n, index, command))
    res = run_attempt(loaded, seed, "replay", tmp_path / "mutant", agent=agent)
    assert ref.summary["verdict"]["accepted"]
    failed = res.summary["verdict"]["failed"]
    assert [f for f in failed if f.startswith(failing)], res.summary["verdict"]
    # ... which the checks of the month's end alone let through
    assert not {"bills-approved", "receivables-match-customers", "receipts-applied"} & set(
        failed), failed


# --- the reconciliation's rows: one statement balance, items, one book balance -------------


def _regraded_reconciliation(result: AttemptResult, tmp: Path,
                             relabel: dict[int, str]) -> tuple[bool, str]:
    """Copy the attempt, rename the items of the given rows (1 = the first data row) of the
    last turn's reconciliation, grade the copy; bank-reconciliation-ties' outcome."""
    import shutil

    from runs.grading import final_workspace, grade_folder

    copy = tmp / "copy"
    shutil.copytree(result.out, copy)
    workspace = final_workspace(copy)
    assert workspace is not None
    path = workspace / "out" / mec.RECONCILIATION
    path.chmod(0o644)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    for n, item in relabel.items():
        rows[n - 1]["item"] = item
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    verdict = grade_folder(copy, load_scenario(find_scenario("month-end-close")))
    [ties] = [r for r in verdict.results if r.name == "bank-reconciliation-ties"]
    return ties.passed, ties.detail


@pytest.mark.parametrize("label", ["statement balance", "Book balance", "Balance per bank"])
def test_a_reconciling_item_named_as_a_balance_fails_though_the_figures_tie(
        runs: dict[str, AttemptResult], tmp_path: Path, label: str) -> None:
    """validate --mutants on fiscal-year: an item relabelled 'statement balance' or 'book
    balance' (output_change_cell) tied and passed; a reconciliation holds one of each."""
    passed, detail = _regraded_reconciliation(runs["reference"], tmp_path, {2: label})
    assert not passed
    assert f"row 3 {label!r}" in detail and "named as a balance" in detail


@pytest.mark.parametrize(("relabel", "says"), [
    ({4: "statement balance"}, "the last row is named as the statement balance"),
    ({1: "book balance"}, "the first row is named as the book balance"),
    ({1: "Balance per books", 4: "Balance per bank"}, "the first row is named as the book"),
    # the duplicate line's item under the label of the receipt recorded from it (and back)
    ({2: "receipt the books recorded from the duplicate bank line"},
     "row 3 'receipt the books recorded from the duplicate bank line' (-"),
    ({3: "duplicate deposit on the statement, not in the books"}, "row 4 'duplicate deposit"),
])
def test_balances_and_items_under_each_others_labels_fail_though_the_figures_tie(
        runs: dict[str, AttemptResult], tmp_path: Path, relabel: dict[int, str],
        says: str) -> None:
    """validate --mutants on fiscal-year (output_change_cell, another value of the item
    column): the book balance renamed 'statement balance', and the duplicate bank line's
    item renamed as the receipt the books recorded from it, tied and passed."""
    passed, detail = _regraded_reconciliation(runs["reference"], tmp_path, relabel)
    assert not passed
    assert says in detail, detail


def test_item_signs_follow_what_the_label_says() -> None:
    sign = item_sign
    assert [sign(x) for x in (
        "deposit in transit", "Outstanding check #1042", "bank charge recorded, not on the "
        "statement", "interest recorded, not on the statement",
        "receipt the books recorded from the duplicate bank line")] == [1, -1, -1, 1, 1]
    assert [sign(x) for x in (
        "returned item (NSF), not in the books", "bank charge, not in the books",
        "deposit on the statement, not in the books", "interest credited, not in the books",
        "payment debited by the bank, not in the books")] == [1, 1, -1, -1, 1]
    # saying neither side, or both directions, says nothing
    assert [sign(x) for x in ("duplicate bank line (bank error; the bank is to reverse it)",
                              "returned deposit (NSF)", "unexplained difference",
                              "bank line, not in the books", "Misc")] == [None] * 5


def test_items_may_be_worded_the_agents_own_way(runs: dict[str, AttemptResult],
                                                tmp_path: Path) -> None:
    passed, detail = _regraded_reconciliation(
        runs["reference"], tmp_path, {1: "Balance per bank statement, May 29",
                                      2: "Bank's duplicate of line BL-1 (to be reversed)",
                                      4: "Balance per books (GL 1000)"})
    assert passed, detail


def _clerk_on_reference_books(runs: dict[str, AttemptResult],
                              tmp_path: Path) -> tuple[Any, Any]:
    """A ledger on a copy of the reference attempt's books and a clerk at a desk on it
    (June 1, turn 9)."""
    import shutil

    from erp.ledger import Ledger
    from scenarios.turn import TurnContext

    shutil.copy(runs["reference"].out / "books.db", tmp_path / "books.db")
    ledger = Ledger.open(tmp_path / "books.db")
    desk = TurnContext(turn=9, day=date(2026, 6, 1), workspace=tmp_path,
                       prompt_file=tmp_path / "prompt.md", output_dir=tmp_path / "out",
                       ledger=ledger, actor="agent:turn-9")
    return ledger, mec._Clerk(desk)


def test_the_clerk_reads_the_books_once_between_two_commands(
        runs: dict[str, AttemptResult], tmp_path: Path) -> None:
    """The clerk's reads of documents and statement lines are kept until its desk runs the
    next command (only a command changes the books in a turn), read-only (a caller cannot
    change what the next one reads); a command, accepted or refused, makes the next read
    fresh."""
    ledger, clerk = _clerk_on_reference_books(runs, tmp_path)
    calls: Counter[str] = Counter()
    real_documents, real_lines = q.documents, q.statement_lines
    mec._TABLES.pop(ledger.store, None)

    def documents(store: EventStore, kind: str | None = None,
                  **kw: Any) -> list[dict[str, Any]]:
        calls["documents"] += 1
        return real_documents(store, kind, **kw)

    def statement_lines(store: EventStore, **kw: Any) -> list[dict[str, Any]]:
        calls["lines"] += 1
        return real_lines(store, **kw)

    mec.q = type("Q", (), {"documents": staticmethod(documents),
                           "statement_lines": staticmethod(statement_lines)})
    try:
        bills = clerk.document_rows("bill")
        assert bills and clerk.document_rows("bill") == bills
        with pytest.raises(TypeError):
            bills[0]["open_amount"] = -1  # type: ignore[index]
        assert clerk.document_rows("bill")[0]["open_amount"] != -1
        assert clerk.lines() == clerk.lines()
        assert calls == Counter(documents=1, lines=1)
        clerk.run(c.ApproveBill(bill_id="B-NONE"))  # refused: still a command
        clerk.document_rows("bill")
        clerk.lines()
        assert calls == Counter(documents=2, lines=2)
    finally:
        mec.q = q


def test_the_clerks_kept_tables_read_what_changed_and_equal_the_whole_tables(
        runs: dict[str, AttemptResult], tmp_path: Path) -> None:
    """The documents and statement lines the clerk keeps for a store are, after every
    command, what reading the whole tables gives (same rows, same order), and a read after
    a command fetches only the rows it changed."""
    ledger, clerk = _clerk_on_reference_books(runs, tmp_path)
    kept = mec._Tables()
    kinds = ("bill", "receipt", "payment", "vendor_credit", "invoice")

    def same() -> None:
        for kind in kinds:
            assert kept.documents(ledger.store, kind) == q.documents(ledger.store, kind), kind
        assert kept.lines(ledger.store, clerk.bank_account_id) == q.statement_lines(
            ledger.store, bank_account_id=clerk.bank_account_id)

    same()
    fetched: list[int] = []
    real = q.documents

    def counting(store: EventStore, kind: str | None = None,
                 **kw: Any) -> list[dict[str, Any]]:
        rows = real(store, kind, **kw)
        fetched.append(len(rows))
        return rows

    bills = [b for b in q.documents(ledger.store, "bill") if b["status"] == "entered"]
    new_line = c.StatementLineIn(line_id="L-KEPT-1", entry_date=date(2026, 5, 29), amount=-100,
                                 description="FEE", reference="", counterparty="",
                                 bank_ref="L-KEPT-1")
    for command in ([c.ApproveBill(bill_id=b["doc_id"]) for b in bills[:2]]
                    + [c.ImportStatementLines(bank_account_id=clerk.bank_account_id,
                                              lines=(new_line,)),
                       c.EnterBill(vendor_id=bills[0]["party"] if bills else "V-NONE",
                                   vendor_invoice_number="KEPT-1", entry_date=date(2026, 5, 30),
                                   due_on=date(2026, 6, 29),
                                   lines=(c.BillLineIn(description="x", amount=1234),))]):
        clerk.run(command)
        mec.q = type("Q", (), {"documents": staticmethod(counting),
                               "statement_lines": staticmethod(q.statement_lines)})
        try:
            kept.documents(ledger.store, "bill")
        finally:
            mec.q = q
        assert fetched[-1] <= 1  # the one bill the command changed, or none
        same()


def test_kept_rows_without_positions_are_read_whole_every_time() -> None:
    """Books served over the API carry no log position: the clerk's kept table asks for
    every row each time (never ``changed_after``) and gives what the source says now."""
    asked: list[int | None] = []
    table: list[dict[str, Any]] = [{"doc_id": "B-2", "open_amount": 5},
                                   {"doc_id": "B-1", "open_amount": 7}]

    def read(after: int | None) -> list[dict[str, Any]]:
        asked.append(after)
        return [dict(r) for r in table]

    kept = mec._Kept("doc_id", lambda r: r["doc_id"])
    assert [r["doc_id"] for r in kept.current(read)] == ["B-1", "B-2"]
    table[0]["open_amount"] = 0
    table.append({"doc_id": "B-0", "open_amount": 1})
    assert kept.current(read) == sorted(table, key=lambda r: r["doc_id"])
    assert asked == [None, None]


def test_the_registers_read_on_from_the_head_not_from_the_last_registration(
        runs: dict[str, AttemptResult], tmp_path: Path) -> None:
    """The clerk's registers (bank accounts, customers, vendors) start their next reading
    at the head they read to, not at the last registration: registrations come first in
    the log, and reading on from the last of them would scan the rest at every turn. What
    they hold is what a reading from the start gives."""
    ledger, clerk = _clerk_on_reference_books(runs, tmp_path)
    registers = mec._Registers()
    registers.advance(ledger.store)
    head = ledger.store.head()[0]
    last_registration = max(e.position for e in ledger.store.read(
        realm="erp", types=["bank_account_opened", "customer_registered", "vendor_registered"]))
    assert last_registration < head  # the books went on after the registrations
    assert registers.position == head
    assert clerk.run(c.RegisterCustomer(customer_id="C-LATE", name="Late Comer Ltd"))
    registers.advance(ledger.store)
    fresh = mec._Registers()
    fresh.advance(ledger.store)
    assert registers.position == fresh.position == ledger.store.head()[0]
    assert registers.customer_plain == fresh.customer_plain
    assert registers.names("customer_registered") == fresh.names("customer_registered")
    assert registers.names("customer_registered")["late comer ltd"] == "C-LATE"


def test_an_email_is_parsed_once_per_content() -> None:
    """The archive's emails are read again at every turn: each content is parsed once (the
    same text read again from another file is the same string's content)."""
    raw = ("From: Dana Ruiz <dana@vendor.example>\nTo: ap@company.example\n"
           "Subject: bill\nContent-Type: text/plain; charset=utf-8\n\nPlease pay INV 7.\n")
    mec._email_text.cache_clear()
    first = mec._email_text(raw)
    assert mec._email_text("".join([raw])) == first == ("Dana Ruiz", "Please pay INV 7.\n")
    assert mec._email_text.cache_info().misses == 1 and mec._email_text.cache_info().hits == 1


# --- each turn's work at that turn: not held a turn and dated back ---------------------------


@pytest.mark.parametrize("command", ["ApplyReceipt", "GrantFeeAllowance",
                                     "RecordReturnedDeposit"])
def test_work_held_to_the_next_turn_and_dated_back_fails(
        command: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The prompt asks for each turn's receipts applied (card fees accepted) and a returned
    deposit recorded at that turn: one held to the next turn and dated back to its own
    turn's day (a returned deposit: its statement line's) fails the dating check alone."""
    loaded = load_scenario(find_scenario("month-end-close"))
    ref, recording = shared_attempt(tmp_path_factory, "month-end-close", SEED)
    last = max(recording.commands)
    n, index = next((t, i) for t in sorted(recording.commands) if t < last
                    for i, cmd in enumerate(recording.commands[t])
                    if type(cmd).__name__ == command)
    agent = ReplayAgent(recording, ref.out / "turns", Mutation("late_backdated", n, index, command))
    res = run_attempt(loaded, SEED, "replay", tmp_path / "late", agent=agent)
    assert ref.summary["verdict"]["accepted"]
    assert res.summary["verdict"]["failed"] == ["entries-dated-in-their-period"], (
        agent.applied, res.summary["verdict"])


def test_a_returned_deposit_dated_the_turn_not_the_banks_day_fails(tmp_path: Path) -> None:
    """A returned (NSF) deposit is dated as it happened, on its statement line's day: the
    return recorded at its turn but dated that turn's day fails the dating check alone."""
    loaded = load_scenario(find_scenario("month-end-close"))

    class Agent:
        name = "turn-dated"

        def run_turn(self, desk: Any) -> None:
            def turn_dated(real: Execute, cmd: c.Command) -> Any:
                if isinstance(cmd, c.RecordReturnedDeposit):
                    cmd = cmd.model_copy(update={"entry_date": desk.day})
                return real(cmd)
            with routed(desk, turn_dated):
                mec.reference(desk)  # type: ignore[attr-defined]

    res = run_attempt(loaded, SEED, "turn-dated", tmp_path / "a", agent=Agent())
    assert res.summary["verdict"]["failed"] == ["entries-dated-in-their-period"], (
        res.summary["verdict"])


@pytest.mark.parametrize("twist", ["names", "total-row"])
def test_an_aging_by_customer_name_or_with_a_total_row_is_accepted(twist: str,
                                                                   tmp_path: Path) -> None:
    """aging_matches_books reads a row's customer by its id or its registered name and
    takes one total row that holds the books' totals: an aging naming customers by name, or
    ending with a total row, is accepted. (It refused both when the prompt was made to ask
    for ids and no total row, which it still does: the prompt asks more than the check.)"""
    loaded = load_scenario(find_scenario("month-end-close"))

    class Agent:
        name = twist

        def run_turn(self, desk: Any) -> None:
            mec.reference(desk)
            path = desk.output_dir / "ar_aging.csv"
            if desk.day != MONTH_END or not path.exists():
                return
            with path.open(encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f))
            if twist == "names":
                names = {e.data["customer_id"]: e.data["name"] for e in
                         desk.store.read(realm="erp", types=["customer_registered"])}
                for r in rows:
                    r["customer"] = names[r["customer"]]
            else:
                rows.append({"customer": "Total", **{
                    k: str(sum(parse_cents(r[k]) for r in rows) / 100)
                    for k in rows[0] if k != "customer"}})
            with path.open("w", encoding="utf-8", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)

    res = run_attempt(loaded, SEED, twist, tmp_path / "a", agent=Agent())
    assert res.summary["verdict"]["failed"] == [], res.summary["verdict"]
    written = [f.read_text(encoding="utf-8") for f in
               (tmp_path / "a" / "turns").glob("*/workspace/out/ar_aging.csv")]
    assert any(("\nTotal," in w) if twist == "total-row" else ("C0" not in w and "\n" in w)
               for w in written), written
    for p in sorted((tmp_path / "a" / "turns").glob("*/workspace/prompt.md")):
        text = " ".join(p.read_text(encoding="utf-8").split())
        assert "named by its id in the books (`C0002`), and no total row" in text, p
