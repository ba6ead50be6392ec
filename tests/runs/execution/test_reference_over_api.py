"""The library reference solvers as external agents over the real ERP API.

``runs/adapters/reference-api`` runs a scenario's ``reference(desk)`` in the adapter's
own process with a desk that holds the workspace and an HTTP client of the API only.
Here: the two read endpoints it needs (a receipt's applications, a bank account as
opened) over a real socket; every query the adapter answers from the API agrees with
``erp.queries`` on the same books, and so do the parts of ``books`` it rebuilds (customers,
invoices and receipts in the order created, collections, transfers); a read is kept until
the next command; a solver loaded by the solver (fiscal-year's month-end-close) reads the
API too; a command over the API writes what it writes in process, and a refusal comes
back as the same ``CommandRejected``; and (slow) each library scenario run with the
adapter (a real server, a real subprocess per turn) ends with the in-process reference's
``final_hash`` (the golden one, which ``test_golden_hashes`` checks).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from erp import commands as c
from erp import queries as q
from erp.api.client import Client
from erp.api.server import ApiServer, TokenRegistry, create_app
from erp.errors import CommandRejected
from erp.ledger import Ledger
from tests.erp.helpers import BANK, DAY, SYS, set_up_company
from tests.scenarios.library.test_golden_hashes import GOLDEN

ROOT = Path(__file__).resolve().parents[3]
ADAPTER = ROOT / "runs" / "adapters" / "reference-api" / "reference-api"
ACTOR = "agent:turn-1"


def _adapter_module() -> ModuleType:
    path = ADAPTER.parent / "reference_api.py"
    spec = importlib.util.spec_from_file_location("reference_api_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ra = _adapter_module()


def build_books(ledger: Ledger) -> None:
    """Invoices, receipts applied and reversed, statement lines matched, bills, a credit."""
    set_up_company(ledger)
    for cmd in (
        c.OpenBankAccount(bank_account_id="B-SAVE", name="Savings", number="0002",
                          gl_account="1010", entry_date=DAY, opening_balance="2500.25"),
        c.IssueInvoice(invoice_id="INV-1", customer_id="C1", entry_date=DAY,
                       lines=[c.InvoiceLineIn(description="Widgets", quantity=2,
                                              unit_price="500.00")], reference="PO-1"),
        c.IssueInvoice(invoice_id="INV-2", customer_id="C1", entry_date=date(2026, 2, 1),
                       lines=[c.InvoiceLineIn(description="Gadgets", unit_price="250.00")]),
        c.IssueInvoice(invoice_id="INV-3", customer_id="C2", entry_date=date(2026, 2, 2),
                       lines=[c.InvoiceLineIn(description="Service", unit_price="300.10")]),
        c.RecordReceipt(receipt_id="RCT-1", customer_id="C1", bank_account_id=BANK,
                        entry_date=DAY, amount="1000.00", payer="ACME CORP", method="ach"),
        c.RecordReceipt(receipt_id="RCT-2", bank_account_id=BANK, entry_date=DAY,
                        amount="250.00", payer="GLOBEX INC", reference="REMIT 9"),
        c.ApplyReceipt(receipt_id="RCT-1", invoice_id="INV-1", amount="600.00"),
        c.ApplyReceipt(receipt_id="RCT-1", invoice_id="INV-2", amount="250.00"),
        c.ReverseApplication(receipt_id="RCT-1", invoice_id="INV-1", amount="100.00"),
        c.ImportStatementLines(bank_account_id=BANK, lines=[
            c.StatementLineIn(line_id="SL-1", entry_date=DAY, amount="1000.00",
                              description="ACH ACME CORP", reference="R-1",
                              counterparty="ACME CORP"),
            c.StatementLineIn(line_id="SL-2", entry_date=DAY, amount="-15.00",
                              description="MONTHLY FEE")]),
        c.MatchStatementLine(line_id="SL-1",
                             targets=[c.MatchRef(kind="receipt", doc_id="RCT-1")]),
        c.EnterBill(bill_id="BILL-1", vendor_id="V1", vendor_invoice_number="VI-1",
                    entry_date=DAY, lines=[c.BillLineIn(description="Paper", amount="80.00")]),
        c.EnterBill(bill_id="BILL-2", vendor_id="V1", vendor_invoice_number="VI-2",
                    entry_date=DAY, due_on=date(2026, 3, 20),
                    lines=[c.BillLineIn(description="Ink", amount="45.50")]),
        c.ApproveBill(bill_id="BILL-2"),
        c.RecordVendorCredit(vendor_id="V1", vendor_credit_number="CN-1", entry_date=DAY,
                             amount="20.00"),
    ):
        ledger.execute(cmd, **SYS)


@dataclass
class Served:
    """Books served over a unix socket, with a clerk's token and the adapter's API."""

    ledger: Ledger
    tokens: TokenRegistry
    server: ApiServer
    token: str
    api: Any

    def client(self) -> Client:
        return Client(self.server.url, self.token)


def serve(work: Path) -> tuple[Ledger, TokenRegistry, ApiServer, str]:
    ledger = Ledger.open(str(work / "books.db"), create=True)
    build_books(ledger)
    tokens = TokenRegistry()
    server = ApiServer(create_app(ledger, tokens), uds=work / "api.sock").start()
    token = tokens.issue(ACTOR, "clerk", DAY, 3600.0)
    return ledger, tokens, server, token


@pytest.fixture
def served() -> Iterator[Served]:
    work = Path(tempfile.mkdtemp(prefix="erp", dir="/tmp"))  # a unix socket's short path
    ledger, tokens, server, token = serve(work)
    try:
        yield Served(ledger, tokens, server, token, ra.Api(Client(server.url, token)))
    finally:
        server.stop()
        ledger.close()
        shutil.rmtree(work, ignore_errors=True)


def get(s: Served, path: str, **params: Any) -> tuple[int, Any]:
    status, _, body = s.client().request("GET", path, params or None)
    return status, json.loads(body)


# --- the endpoints -----------------------------------------------------------------------------


def test_receipt_applications_lists_applications_and_reversals_in_order(served: Served) -> None:
    status, found = get(served, "/v1/receipts/RCT-1/applications")
    assert status == 200
    assert [(x["event"], x["invoice_id"], x["amount"], x["date"]) for x in found["items"]] == [
        ("receipt_applied", "INV-1", "600.00", DAY.isoformat()),
        ("receipt_applied", "INV-2", "250.00", DAY.isoformat()),
        ("application_reversed", "INV-1", "100.00", DAY.isoformat())]
    positions = [x["position"] for x in found["items"]]
    assert positions == sorted(positions)
    status, none = get(served, "/v1/receipts/RCT-2/applications")
    assert (status, none["items"]) == (200, [])
    status, _, csv = served.client().request("GET", "/v1/receipts/RCT-1/applications",
                                             {"format": "csv"})
    assert status == 200
    assert csv.decode().splitlines()[0] == "position,date,event,invoice_id,amount"


def test_receipt_applications_refuses_an_unknown_receipt_and_a_bad_id(served: Served) -> None:
    status, err = get(served, "/v1/receipts/RCT-404/applications")
    assert status == 404
    assert err == {"error": "unknown_receipt", "message": "no receipt 'RCT-404' in the books",
                   "field": "receipt_id"}
    status, err = get(served, "/v1/receipts/..%2Fx/applications")
    assert status in (404, 422)
    assert "receipt_id" in json.dumps(err) or status == 404


def test_bank_account_shows_how_it_was_opened(served: Served) -> None:
    status, a = get(served, "/v1/bank/accounts/B-SAVE")
    assert status == 200
    assert a == {"id": "B-SAVE", "name": "Savings", "number": "0002", "gl_account": "1010",
                 "opened_on": DAY.isoformat(), "opening_balance": "2500.25",
                 "equity_account": a["equity_account"], "gl_balance": "2500.25",
                 "as_of": DAY.isoformat()}
    assert a["equity_account"]
    status, early = get(served, "/v1/bank/accounts/B-SAVE", as_of="2026-02-01")
    assert (status, early["gl_balance"], early["opening_balance"]) == (200, "0.00", "2500.25")
    status, _, csv = served.client().request("GET", "/v1/bank/accounts/B-SAVE",
                                             {"format": "csv"})
    assert status == 200
    assert csv.decode().splitlines()[0].startswith("id,name,number,gl_account,opened_on")
    status, err = get(served, "/v1/bank/accounts/B-NONE")
    assert status == 404
    assert err == {"error": "unknown_bank_account",
                   "message": "no bank account 'B-NONE' in the books",
                   "field": "bank_account_id"}


def test_the_new_reads_need_a_live_token(served: Served) -> None:
    served.tokens.revoke(served.token)
    for path in ("/v1/receipts/RCT-1/applications", "/v1/bank/accounts/B-SAVE"):
        status, err = get(served, path)
        assert status == 401, path
        assert err["error"] == "unauthorized"


# --- the adapter's answers agree with the books ----------------------------------------------


def _in_process(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != "last_position"}


def test_every_query_the_adapter_answers_agrees_with_erp_queries(served: Served) -> None:
    store = served.ledger.store
    over = ra.ApiQueries(served.api)
    for kind in (None, "invoice", "receipt", "bill", "vendor_credit", "statement_line"):
        assert [dict(d) for d in over.documents(None, kind)] == [
            _in_process(d) for d in q.documents(store, kind)], kind
    assert [dict(d) for d in over.documents(None, "invoice", "open")] == [
        _in_process(d) for d in q.documents(store, "invoice", "open")]
    credit = q.documents(store, "vendor_credit")[0]["doc_id"]
    for kind, doc_id in (("invoice", "INV-1"), ("receipt", "RCT-2"), ("bill", "BILL-2"),
                         ("vendor_credit", credit), ("statement_line", "SL-1")):
        want = q.document(store, kind, doc_id)
        assert want is not None, (kind, doc_id)
        got = over.document(None, kind, doc_id)
        assert got is not None and dict(got) == _in_process(want), (kind, doc_id)
    assert over.document(None, "invoice", "INV-404") is None
    for account in (None, BANK, "B-SAVE"):
        assert [dict(x) for x in over.statement_lines(None, bank_account_id=account)] == [
            _in_process(x) for x in q.statement_lines(store, bank_account_id=account)]
    for account in ("1000", "1010", "1100", "2000"):
        assert over.account_balance(None, account, as_of=DAY) == q.account_balance(
            store, account, as_of=DAY), account
    for ledger in ("ar", "ap"):
        for day in (DAY, date(2026, 4, 30)):
            assert over.aging(None, ledger, as_of=day) == q.aging(store, ledger, as_of=day)


def test_store_reads_and_books_agree_with_the_log(served: Served) -> None:
    store = served.ledger.store
    over = ra.ApiStore(served.api)
    for t, keys in (("customer_registered", ("customer_id", "name")),
                    ("vendor_registered", ("vendor_id", "name")),
                    ("bank_account_opened", ("bank_account_id", "name", "number",
                                             "gl_account", "opening_balance",
                                             "equity_account"))):
        want = sorted(tuple(e.data[k] for k in keys) for e in store.read(realm="erp",
                                                                          types=[t]))
        got = sorted(tuple(e.data[k] for k in keys) for e in over.read(realm="erp", types=[t]))
        assert got == want, t
    types = ["receipt_applied", "application_reversed"]
    for rid in ("RCT-1", "RCT-2"):
        want_r = [(e.type, e.data["invoice_id"], e.data["amount"])
                  for e in store.read(stream=f"receipt:{rid}", types=types)]
        got_r = [(e.type, e.data["invoice_id"], e.data["amount"])
                 for e in over.read(stream=f"receipt:{rid}", types=types)]
        assert got_r == want_r, rid
    for t in ("invoice_issued", "journal_entry_posted"):
        want_p = [json.loads(e.payload) for e in store.read(realm="erp", types=[t])]
        got_p = [json.loads(e.payload) for e in over.read(realm="erp", types=[t])]
        assert [{k: v for k, v in d.items() if v is not None} for d in got_p] == [
            {k: v for k, v in d.items() if v is not None} for d in want_p], t
    books = ra.ApiBooks(served.api)
    assert books.bills == served.ledger.books.bills
    assert books.policies == served.ledger.books.policies
    assert books.bank_accounts == served.ledger.books.bank_accounts
    assert {v: x.name for v, x in books.vendors.items()} == {
        v: x.name for v, x in served.ledger.books.vendors.items()}


def _at(day: date, role: str = "clerk") -> dict[str, Any]:
    return {"actor": ACTOR, "role": role, "business_date": day}


def collections_and_transfers(ledger: Ledger) -> None:
    """Letters, disputes (one resolved, one open), promises (the later one running), credit
    holds (one released), a refund, a returned deposit, transfers (one in transit), and an
    invoice and a receipt created after others whose ids sort after theirs."""
    apr20, apr27 = date(2026, 4, 20), date(2026, 4, 27)
    for cmd, who in (
        (c.OpenAccount(code="1090", name="Transfers in transit", account_type="asset"), SYS),
        (c.IssueInvoice(invoice_id="INV-0", customer_id="C2", entry_date=date(2026, 3, 3),
                        lines=[c.InvoiceLineIn(description="Late", unit_price="40.00")]),
         SYS),
        (c.RecordReceipt(receipt_id="RCT-0", customer_id="C2", bank_account_id=BANK,
                         entry_date=date(2026, 3, 3), amount="40.00", payer="GLOBEX INC",
                         reference="INV 0"), SYS),
        (c.SendDunningLetter(invoice_id="INV-3", level=1), _at(apr20)),
        (c.SendDunningLetter(invoice_id="INV-3", level=2), _at(apr20)),
        (c.RecordDispute(invoice_id="INV-1", reason="short shipped", amount="100.00"),
         _at(apr20)),
        (c.ResolveDispute(dispute_id="DSP-000001", resolution="rejected", reason="no"),
         _at(apr20, "controller")),
        (c.RecordDispute(invoice_id="INV-1", reason="short shipped again"), _at(apr20)),
        (c.RecordPromiseToPay(invoice_id="INV-3", amount="100.00", pay_by=date(2026, 4, 25)),
         _at(apr20)),
        (c.RecordPromiseToPay(invoice_id="INV-3", amount="50.00", pay_by=date(2026, 4, 29)),
         _at(apr27)),
        (c.PlaceCreditHold(customer_id="C2", reason="INV-3 62 days past due"), _at(apr20)),
        (c.ReleaseCreditHold(customer_id="C2", reason="paid"), _at(apr20, "controller")),
        (c.PlaceCreditHold(customer_id="C2", reason="promise broken"), _at(apr27)),
        (c.RefundCustomer(receipt_id="RCT-1", amount="50.00", entry_date=date(2026, 4, 1)),
         _at(apr20)),
        (c.RecordReturnedDeposit(receipt_id="RCT-2", entry_date=date(2026, 4, 2)), _at(apr20)),
        (c.TransferFunds(from_bank_account_id=BANK, to_bank_account_id="B-SAVE",
                         entry_date=date(2026, 4, 1), amount="300.00"), _at(apr20)),
        (c.TransferFunds(transfer_id="TRX-9", from_bank_account_id="B-SAVE",
                         to_bank_account_id=BANK, entry_date=date(2026, 4, 2),
                         amount="20.00"), _at(apr20)),
        (c.ReceiveTransfer(transfer_id="TRX-9", entry_date=date(2026, 4, 3)), _at(apr20)),
    ):
        ledger.execute(cmd, **who)


def test_receivables_collections_and_transfers_agree_with_the_books(served: Served) -> None:
    collections_and_transfers(served.ledger)
    want, books = served.ledger.books, ra.ApiBooks(served.api)
    assert list(books.customers.items()) == list(want.customers.items())
    assert list(books.invoices.items()) == list(want.invoices.items())  # issued order
    assert list(books.invoices)[-1] == "INV-0"
    got_r = {k: replace(v, applied={}) for k, v in books.receipts.items()}
    assert list(got_r.items()) == [(k, replace(v, applied={}))
                                   for k, v in want.receipts.items()]
    assert (got_r["RCT-1"].matched_line, got_r["RCT-1"].refunded) == ("SL-1", 5000)
    assert got_r["RCT-2"].returned
    assert list(books.transfers.items()) == list(want.transfers.items())
    coll, in_process = books.collections, want.collections
    for part in ("levels", "disputes", "open_disputes", "promises", "last_promise", "holds",
                 "on_hold"):
        assert list(getattr(coll, part).items()) == list(
            getattr(in_process, part).items()), part
    assert (coll.open_disputes, coll.last_promise, coll.on_hold) == (
        {"INV-1": "DSP-000002"}, {"INV-3": "PTP-000002"}, {"C2": "HOLD-000002"})
    for day in (date(2026, 4, 20), date(2026, 4, 29), date(2026, 4, 30)):
        for inv in want.invoices.values():
            assert coll.promise_pending(inv, day) == in_process.promise_pending(inv, day)
    with pytest.raises(ra.NotOverTheApi, match=r"books\.collections\.letters"):
        _ = coll.letters
    store = ra.ApiStore(served.api)
    for rid in want.receipts:
        got = [json.loads(e.payload) for e in store.read(stream=f"receipt:{rid}",
                                                         types=["receipt_recorded"])]
        wanted = [json.loads(e.payload) for e in served.ledger.store.read(
            stream=f"receipt:{rid}", types=["receipt_recorded"])]
        assert [{k: v for k, v in d.items() if v is not None} for d in got] == [
            {k: v for k, v in d.items() if v is not None} for d in wanted], rid


def test_a_read_is_kept_until_the_next_command(served: Served, tmp_path: Path) -> None:
    api = served.api
    books = ra.ApiBooks(api)
    before = api.requests
    assert books.invoices["INV-1"].open == books.invoices["INV-1"].open
    assert api.requests - before == 1 + 3  # the listing, and when each of 3 was issued
    desk = ra.ApiDesk(api, turn=1, day=DAY, workspace=tmp_path,
                      prompt_file=tmp_path / "p.md", output_dir=tmp_path / "out",
                      actor=ACTOR, role="clerk")
    open_before = books.invoices["INV-1"].open
    done = desk.execute(c.ApplyReceipt(receipt_id="RCT-1", invoice_id="INV-1",
                                       amount="100.00"))
    assert isinstance(done, list), done
    assert books.invoices["INV-1"].open == open_before - 10000  # read again after it


def test_a_solver_and_the_solvers_it_loads_read_the_api(served: Served, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    import scenarios.solvers

    monkeypatch.setattr(scenarios.solvers, "load_solver", scenarios.solvers.load_solver)
    (tmp_path / "other.py").write_text("from erp import queries as q\n")
    (tmp_path / "main.py").write_text(
        "from pathlib import Path\n\nfrom erp import queries as q\n\n\n"
        "def other():\n    from scenarios.solvers import load_solver\n\n"
        "    return load_solver(Path(__file__).parent / 'other.py')\n")
    queries = ra.ApiQueries(served.api)
    load = ra.reads_over_api(queries)
    main = load(tmp_path / "main.py")
    assert main.q is queries
    assert main.other().q is queries
    again = ra.ApiQueries(served.api)
    assert ra.reads_over_api(again).load is load.load  # not wrapped twice
    assert scenarios.solvers.load_solver(tmp_path / "main.py").q is again


def test_what_the_adapter_does_not_answer_is_named(served: Served) -> None:
    with pytest.raises(ra.NotOverTheApi, match=r"erp\.queries\.trial_balance"):
        ra.ApiQueries(served.api).trial_balance(None)
    with pytest.raises(ra.NotOverTheApi, match="world"):
        list(ra.ApiStore(served.api).read(realm="world"))
    with pytest.raises(ra.NotOverTheApi, match="receipt_recorded"):
        list(ra.ApiStore(served.api).read(types=["receipt_recorded"]))
    with pytest.raises(ra.NotOverTheApi, match="no ledger"):
        _ = ra.ApiLedger(served.api).store
    with pytest.raises(ImportError, match="may not import sim"):
        ra.ImportGuard().find_spec("sim.world", None)


def test_a_command_over_the_api_is_the_command_in_process(served: Served,
                                                          tmp_path: Path) -> None:
    desk = ra.ApiDesk(served.api, turn=1, day=DAY, workspace=tmp_path,
                      prompt_file=tmp_path / "p.md", output_dir=tmp_path / "out",
                      actor=ACTOR, role="clerk")
    done = desk.execute(c.EnterBill(vendor_id="V1", vendor_invoice_number="VI-9",
                                    entry_date=DAY,
                                    lines=[c.BillLineIn(description="Toner", amount="12.34")]))
    assert isinstance(done, list)
    bill_id = done[0].data["bill_id"]
    assert done[0].event.bill_id == bill_id
    e = next(served.ledger.store.read(stream=f"bill:{bill_id}"))
    assert (e.actor, e.role, e.business_date, e.sim_time) == (ACTOR, "clerk", DAY.isoformat(),
                                                               3600.0)
    assert e.data["lines"][0]["amount"] == 1234
    with pytest.raises(ra.NotOverTheApi, match="vendor_id"):
        _ = done[0].data["vendor_id"]
    refused = desk.execute(c.ApplyReceipt(receipt_id="RCT-1", invoice_id="INV-3",
                                          amount="10.00"))
    assert isinstance(refused, CommandRejected)
    with pytest.raises(CommandRejected) as in_process:
        served.ledger.execute(c.ApplyReceipt(receipt_id="RCT-1", invoice_id="INV-3",
                                             amount="10.00"), actor=ACTOR, role="clerk",
                              business_date=DAY)
    assert (refused.code, refused.message) == (in_process.value.code, in_process.value.message)
    assert desk.rejections == [("ApplyReceipt", refused)]
    assert desk.commands == 2


def test_the_adapter_refuses_to_start_without_a_solver(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("x")
    args = [str(ADAPTER), "--workspace", str(tmp_path), "--prompt-file",
            str(tmp_path / "p.md"), "--output-dir", str(tmp_path / "out")]
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    res = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 2
    assert "ERPSIM_SOLVER is not set" in res.stderr
    res = subprocess.run(args, env={**env, "ERPSIM_SOLVER": "no-such-scenario"},
                         capture_output=True, text=True, check=False)
    assert res.returncode == 2
    assert "no-such-scenario" in res.stderr and "no such file" in res.stderr


# --- the scenarios, end to end ---------------------------------------------------------------


def _final_hash(out: Path, *agent: str, name: str, seed: int) -> str:
    args = [sys.executable, "-m", "runs.cli", "run", name, "--seed", str(seed), "--out",
            str(out), "--quiet", *agent]
    res = subprocess.run(args, capture_output=True, text=True, check=False, cwd=ROOT,
                         timeout=280)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"]["status"] == "accepted", res.stdout + res.stderr
    return str(summary["final_hash"])


@pytest.mark.slow
@pytest.mark.timeout(900)  # a whole attempt, one adapter process per turn (37 in fiscal-year)
@pytest.mark.parametrize("name", ["cash-application", "procure-to-pay", "month-end-close",
                                  "payment-run", "three-way-match", "accruals-and-prepaids",
                                  "fixed-assets", "payroll-and-sales-tax", "collections",
                                  "bank-reconciliation-multi", "fiscal-year"])
def test_the_reference_over_the_api_ends_with_the_in_process_final_hash(
        name: str, tmp_path: Path) -> None:
    """The in-process reference's final hash at seed 1 is the golden one
    (``test_golden_hashes`` runs it, in a process of its own as here)."""
    seed = 1
    over_api = _final_hash(tmp_path / "over-api", "--agent-cmd", str(ADAPTER), "--agent-env",
                           f"ERPSIM_SOLVER={name}", name=name, seed=seed)
    assert over_api == GOLDEN[name, seed], (
        f"{name} seed {seed}: over the API {over_api}, the in-process reference's golden "
        f"hash {GOLDEN[name, seed]}")
    for turn in sorted((tmp_path / "over-api" / "turns").iterdir()):
        log = (turn / "agent" / "stderr.log").read_text()
        assert f"reference-api: turn {int(turn.name)} as agent:turn-{int(turn.name)}" in log
