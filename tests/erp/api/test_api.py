"""The ERP API over a real socket: auth, commands, queries, errors, isolation, the server."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from erp import commands as c
from erp import queries as q
from erp.api.naming import kebab, money_fields
from erp.api.server import ApiServer, TokenRegistry, create_app
from erp.api.wire import status_for
from erp.commands import COMMANDS
from erp.ledger import Ledger, Recorded
from tests.erp.helpers import BANK, DAY, SYS, fingerprint, set_up_company

CLERK_ACTOR = "agent:turn-1"
WORLD_MARKER = "WORLD-SECRET-7f3a"


def build_books(ledger: Ledger) -> None:
    """A company with invoices, receipts (one without customer), statement lines, a bill,
    and a world-realm event recorded under the clerk's own actor name."""
    set_up_company(ledger)
    for cmd in (
        c.IssueInvoice(invoice_id="INV-1", customer_id="C1", entry_date=DAY,
                       lines=[c.InvoiceLineIn(description="Widgets", quantity=2,
                                              unit_price="500.00")], reference="PO-1"),
        c.IssueInvoice(invoice_id="INV-2", customer_id="C2", entry_date=date(2026, 2, 1),
                       lines=[c.InvoiceLineIn(description="Gadgets", unit_price="250.00")]),
        c.IssueInvoice(invoice_id="INV-3", customer_id="C1", entry_date=DAY,
                       lines=[c.InvoiceLineIn(description="Service", unit_price="300.00")]),
        c.RecordReceipt(receipt_id="RCT-1", customer_id="C1", bank_account_id=BANK,
                        entry_date=DAY, amount="1000.00", payer="ACME CORP", method="ach"),
        c.RecordReceipt(receipt_id="RCT-2", bank_account_id=BANK, entry_date=DAY,
                        amount="250.00", payer="GLOBEX INC"),
        c.RecordReceipt(receipt_id="RCT-3", customer_id="C1", bank_account_id=BANK,
                        entry_date=DAY, amount="300.00", payer="ACME CORP"),
        c.ImportStatementLines(bank_account_id=BANK, lines=[
            c.StatementLineIn(line_id="SL-1", entry_date=DAY, amount="1000.00",
                              description="ACH ACME CORP"),
            c.StatementLineIn(line_id="SL-2", entry_date=DAY, amount="-15.00",
                              description="MONTHLY FEE")]),
        c.EnterBill(bill_id="BILL-1", vendor_id="V1", vendor_invoice_number="VI-1",
                    entry_date=DAY, lines=[c.BillLineIn(description="Paper", amount="80.00")]),
        c.RequestVendorBankChange(request_id="BCR-1", vendor_id="V1",
                                  new_bank={"account_name": "Initech", "routing": "111000025",
                                            "account_number": "555566667777"}),
    ):
        ledger.execute(cmd, **SYS)
    ledger.record_many("world", [Recorded(
        "world:customer:C1", "payment_sent", json.dumps({"marker": WORLD_MARKER}),
        CLERK_ACTOR, DAY, role="clerk", command="SendPayment")])


def short_dir() -> str:
    """A directory whose paths fit a unix socket's 107 bytes."""
    return tempfile.mkdtemp(prefix="erp", dir="/tmp")


@dataclass
class Running:
    """A served ledger with a clerk's and a controller's token."""

    ledger: Ledger
    tokens: TokenRegistry
    server: ApiServer
    clerk: str
    controller: str
    workdir: str

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="module")
def api() -> Iterator[Running]:
    work = short_dir()
    ledger = Ledger.open(os.path.join(work, "books.db"), create=True)
    build_books(ledger)
    tokens = TokenRegistry()
    server = ApiServer(create_app(ledger, tokens), uds=Path(work) / "api.sock").start()
    clerk = tokens.issue(CLERK_ACTOR, "clerk", DAY, 3600.0, correlation_id="turn-1")
    controller = tokens.issue("human:controller", "controller", DAY)
    try:
        yield Running(ledger, tokens, server, clerk, controller, work)
    finally:
        server.stop()
        ledger.close()
        shutil.rmtree(work, ignore_errors=True)


class _Unix(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=30)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def request(url: str, method: str, path: str, *, token: str | None = None, body: Any = None,
            raw: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
    """``(status, content type, body)`` of one request over a real socket."""
    if url.startswith("unix://"):
        conn: http.client.HTTPConnection = _Unix(url[len("unix://"):])
    else:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
    hdrs = dict(headers or {})
    if token is not None:
        hdrs["Authorization"] = f"Bearer {token}"
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
    if data is not None:
        hdrs.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type", ""), r.read()
    finally:
        conn.close()


def get_json(api: Running, path: str, token: str | None = None) -> Any:
    status, ctype, body = request(api.url, "GET", path, token=token or api.clerk)
    assert status == 200, (path, status, body)
    assert ctype.startswith("application/json"), ctype
    return json.loads(body)


def post(api: Running, command: str, body: Any, token: str | None = None) -> tuple[int, Any]:
    status, _, data = request(api.url, "POST", f"/v1/commands/{command}",
                              token=token or api.clerk, body=body)
    return status, json.loads(data)


def assert_error(status: int, data: Any, expected_status: int, code: str,
                 field: str | None = None) -> None:
    assert status == expected_status, (status, data)
    assert set(data) == {"error", "message", "field"}, data
    assert data["error"] == code, data
    assert data["message"]
    if field is not None:
        assert data["field"] == field, data


# --- queries ----------------------------------------------------------------------

QUERIES = [
    "/v1/whoami", "/v1/company", "/v1/customers", "/v1/customers/C1", "/v1/vendors",
    "/v1/vendors/V1", "/v1/accounts", "/v1/periods", "/v1/invoices",
    "/v1/invoices?status=open&customer=C1", "/v1/receipts", "/v1/receipts?unapplied=true",
    "/v1/credit-memos", "/v1/bills", "/v1/bills?status=entered&vendor=V1",
    "/v1/vendor-credits", "/v1/payments", "/v1/journal-entries", "/v1/documents",
    "/v1/documents?kind=receipt", "/v1/documents/invoice/INV-1",
    "/v1/documents/statement_line/SL-1", "/v1/open-items/ar", "/v1/open-items/ap",
    "/v1/open-items/unapplied_cash?party=C1", "/v1/reports/aging",
    "/v1/reports/aging?ledger=ap&as_of=2026-04-30", "/v1/reports/trial-balance",
    "/v1/reports/control-ties", "/v1/gl/1000", "/v1/gl/1200?since=2026-03-01",
    "/v1/bank/accounts", "/v1/bank/lines", "/v1/bank/lines?unmatched=true", "/v1/audit",
    "/v1/commands",
]


@pytest.mark.parametrize("path", QUERIES)
def test_every_query_answers_json_and_csv(api: Running, path: str) -> None:
    data = get_json(api, path)
    assert isinstance(data, dict) and data
    sep = "&" if "?" in path else "?"
    status, ctype, body = request(api.url, "GET", f"{path}{sep}format=csv", token=api.clerk)
    assert status == 200, body
    assert ctype.startswith("text/csv"), ctype
    header = body.decode().splitlines()[0]
    assert "," in header or header.isidentifier(), header


def test_queries_show_the_books_in_decimal_strings(api: Running) -> None:
    invoices = get_json(api, "/v1/invoices?customer=C1")["items"]
    assert {i["id"] for i in invoices} >= {"INV-1", "INV-3"}
    assert all(i["customer"] == "C1" for i in invoices)
    inv1 = next(i for i in invoices if i["id"] == "INV-1")
    assert inv1["total"] == "1000.00" and inv1["reference"] == "PO-1"
    receipts = get_json(api, "/v1/receipts?unapplied=true")["items"]
    rct2 = next(r for r in receipts if r["id"] == "RCT-2")
    assert rct2["customer"] is None and rct2["payer"] == "GLOBEX INC"
    doc = get_json(api, "/v1/documents/invoice/INV-1")
    assert doc["lines"][0]["unit_price"] == "500.00"
    assert doc["history"][0]["event"] == "invoice_issued"
    aging = get_json(api, "/v1/reports/aging")
    assert aging["as_of"] == DAY.isoformat()  # the token's business date by default
    c2 = next(r for r in aging["items"] if r["party"] == "C2")
    assert c2["1-30"] == "250.00"
    tb = get_json(api, "/v1/reports/trial-balance")
    assert tb["totals"]["debit"] == tb["totals"]["credit"]
    vendor = get_json(api, "/v1/vendors/V1")
    assert "555566667777" not in json.dumps(vendor)  # bank numbers are masked
    assert vendor["bank_changes"][0]["new_bank"].endswith("****7777")
    lines = get_json(api, "/v1/bank/lines?unmatched=true")["items"]
    assert {x["line_id"] for x in lines} <= {"SL-1", "SL-2"}
    assert get_json(api, "/v1/whoami") == {"actor": CLERK_ACTOR, "role": "clerk",
                                          "business_date": DAY.isoformat()}


def test_unknown_document_is_404(api: Running) -> None:
    status, _, body = request(api.url, "GET", "/v1/documents/invoice/NOPE", token=api.clerk)
    assert_error(status, json.loads(body), 404, "unknown_invoice", "doc_id")
    status, _, body = request(api.url, "GET", "/v1/nowhere", token=api.clerk)
    assert_error(status, json.loads(body), 404, "not_found")


# --- commands ---------------------------------------------------------------------


def test_a_command_runs_as_the_tokens_actor_role_and_date(api: Running) -> None:
    status, data = post(api, "apply-receipt", {"receipt_id": "RCT-3", "invoice_id": "INV-3",
                                               "amount": "100.00"})
    assert status == 200, data
    assert data["command"] == "ApplyReceipt" and data["actor"] == CLERK_ACTOR
    (event,) = data["events"]
    assert event["type"] == "receipt_applied" and event["id"] == "RCT-3"
    stored = next(e for e in api.ledger.store.read(after=event["position"] - 1))
    assert (stored.actor, stored.role, stored.business_date, stored.sim_time,
            stored.correlation_id) == (CLERK_ACTOR, "clerk", DAY.isoformat(), 3600.0, "turn-1")
    trail = get_json(api, "/v1/audit")["items"]
    assert any(r["position"] == event["position"] and r["command"] == "ApplyReceipt"
               for r in trail)


def test_rejected_commands_write_nothing(api: Running) -> None:
    before = fingerprint(api.ledger)
    status, data = post(api, "apply-receipt", {"receipt_id": "RCT-1", "invoice_id": "INV-1",
                                               "amount": "5000.00"})
    assert_error(status, data, 422, "over_application", "amount")
    status, data = post(api, "apply-receipt", {"receipt_id": "RCT-1", "invoice_id": "INV-404",
                                               "amount": "1.00"})
    assert_error(status, data, 404, "unknown_invoice", "invoice_id")
    status, data = post(api, "register-customer", {"customer_id": "C1", "name": "Again"})
    assert_error(status, data, 409, "duplicate_id", "customer_id")
    assert fingerprint(api.ledger) == before


def test_a_command_kept_waiting_by_another_writer_gets_503_and_retries_later() -> None:
    """Another writer holds the store's write lock past the books' ``lock_wait_s``: the
    command gets ``503 store_busy`` with ``Retry-After`` (over the real socket), nothing
    is written, and the same request succeeds once the lock is free."""
    work = short_dir()
    ledger = Ledger.open(os.path.join(work, "books.db"), create=True, lock_wait_s=0.3)
    server = None
    try:
        set_up_company(ledger)
        tokens = TokenRegistry()
        server = ApiServer(create_app(ledger, tokens), uds=Path(work) / "api.sock").start()
        clerk = tokens.issue(CLERK_ACTOR, "clerk", DAY, 3600.0)
        body = {"customer_id": "C-BUSY", "name": "Busy Ltd"}
        before = fingerprint(ledger)
        other = ledger.store.engine.connect()
        try:
            with ledger.store.write_transaction(other):
                conn = _Unix(server.url[len("unix://"):])
                try:
                    conn.request("POST", "/v1/commands/register-customer",
                                 body=json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {clerk}",
                                          "Content-Type": "application/json"})
                    r = conn.getresponse()
                    status, retry, data = r.status, r.getheader("Retry-After"), json.loads(
                        r.read())
                finally:
                    conn.close()
        finally:
            other.close()
        assert_error(status, data, 503, "store_busy")
        assert retry == "1"
        assert "another writer held the store's write lock for 0.3 s" in data["message"]
        assert fingerprint(ledger) == before
        status, _, _ = request(server.url, "POST", "/v1/commands/register-customer",
                               token=clerk, body=body)
        assert status == 200
        assert "C-BUSY" in ledger.books.customers
    finally:
        if server is not None:
            server.stop()
        ledger.close()
        shutil.rmtree(work, ignore_errors=True)


def test_a_clerk_on_a_controller_action_gets_403(api: Running) -> None:
    before = fingerprint(api.ledger)
    status, data = post(api, "close-period", {"period": "2026-02"})
    assert_error(status, data, 403, "forbidden_for_role")
    status, data = post(api, "approve-vendor-bank-change", {"request_id": "BCR-1"})
    assert_error(status, data, 403, "forbidden_for_role")
    assert fingerprint(api.ledger) == before


@pytest.mark.parametrize(("body", "code", "field"), [
    ({"invoice_id": "INV-1", "amount": "1.00"}, "invalid_body", "receipt_id"),
    ({"receipt_id": "RCT-1", "invoice_id": "INV-1", "amount": "1.00", "extra": 1},
     "invalid_body", "extra"),
    ({"receipt_id": "RCT-1", "invoice_id": "INV-1", "amount": "1.234"}, "invalid_body",
     "amount"),
    ({"receipt_id": "RCT-1", "invoice_id": "INV-1", "amount": 100}, "money_not_a_string",
     "amount"),
    ({"receipt_id": "RCT-1", "invoice_id": "INV-1", "amount": 1.5}, "money_not_a_string",
     "amount"),
    ({"receipt_id": "RCT-1", "invoice_id": "INV-1", "amount": "1.00", "entry_date": "March"},
     "invalid_body", "entry_date"),
    (None, "invalid_body", None),
    # the money limits at the wire: 15 whole digits at most, either sign
    ({"receipt_id": "RCT-1", "invoice_id": "INV-1", "amount": "1000000000000000.00"},
     "invalid_body", "amount"),
    ({"receipt_id": "RCT-1", "invoice_id": "INV-1", "amount": "-1" + "0" * 30},
     "invalid_body", "amount"),
    ({"receipt_id": "RCT-1", "invoice_id": "INV-1", "amount": 99999999999999999},
     "money_not_a_string", "amount"),
])
def test_a_bad_body_is_422_naming_the_field(api: Running, body: Any, code: str,
                                            field: str | None) -> None:
    before = api.ledger.store.head()
    status, _, data = request(api.url, "POST", "/v1/commands/apply-receipt", token=api.clerk,
                              body=body)
    assert_error(status, json.loads(data), 422, code, field)
    assert api.ledger.store.head() == before


def test_money_beyond_the_limit_is_refused_at_the_wire_naming_value_and_range(
        api: Running) -> None:
    before = api.ledger.store.head()
    status, data = post(api, "apply-receipt", {"receipt_id": "RCT-1", "invoice_id": "INV-1",
                                               "amount": "1000000000000000.00"})
    assert_error(status, data, 422, "invalid_body", "amount")
    assert "'1000000000000000.00' is out of range (expected from -99999999999999999 to " \
        "99999999999999999 cents, i.e. at most 15 whole digits)" in data["message"], data
    # the largest amount parses (and the books then refuse it as more than the receipt)
    status, data = post(api, "apply-receipt", {"receipt_id": "RCT-1", "invoice_id": "INV-1",
                                               "amount": "999999999999999.99"})
    assert status == 422 and data["error"] != "invalid_body", data
    assert api.ledger.store.head() == before


def test_nested_fields_and_invalid_json_are_named(api: Running) -> None:
    status, data = post(api, "post-journal-entry", {
        "entry_date": "2026-03-02", "memo": "m",
        "lines": [{"account": "6100", "debit": "1.00"}, {"account": "6000", "credit": 2}]})
    assert_error(status, data, 422, "money_not_a_string", "lines[1].credit")
    status, data = post(api, "post-journal-entry", {
        "entry_date": "2026-03-02", "memo": "m",
        "lines": [{"account": "6100", "debit": "1.00", "credit": "1.00"},
                  {"account": "6000", "credit": "1.00"}]})
    assert_error(status, data, 422, "invalid_body", "lines[0]")
    status, _, raw = request(api.url, "POST", "/v1/commands/apply-receipt", token=api.clerk,
                             raw=b'{"receipt_id": ')
    assert_error(status, json.loads(raw), 422, "invalid_json")


@pytest.mark.parametrize(("path", "field"), [
    ("/v1/documents/invoice/../../etc/passwd", "doc_id"),
    ("/v1/documents/invoice/..%2F..%2Fetc%2Fpasswd", "doc_id"),
    ("/v1/documents/invoice/%2e%2e", "doc_id"),
    ("/v1/documents/invoice/INV-1%00", "doc_id"),
    ("/v1/documents/invoice//etc/passwd", "doc_id"),
    ("/v1/documents/..%2F/INV-1", "kind"),
    ("/v1/customers/..", "customer_id"),
    ("/v1/customers/%2Fetc%2Fpasswd", "customer_id"),
    ("/v1/vendors/V1%2F..%2F..", "vendor_id"),
    ("/v1/gl/..%2F..%2Fbooks.db", "account"),
    ("/v1/invoices?customer=../../x", "customer"),
    ("/v1/bank/lines?bank_account=%2Fetc", "bank_account"),
    ("/v1/open-items/..%2Far", "subledger"),
])
def test_path_traversal_is_422_naming_the_parameter(api: Running, path: str,
                                                    field: str) -> None:
    status, ctype, body = request(api.url, "GET", path, token=api.clerk)
    assert ctype.startswith("application/json")
    assert_error(status, json.loads(body), 422, "invalid_parameter", field)


@pytest.mark.parametrize("path", ["/v1/audit?after=9223372036854775808",
                                  "/v1/audit?after=100000000000000000000000"])
def test_a_position_beyond_what_a_store_holds_is_422_naming_it(api: Running, path: str) -> None:
    """A log position is a 64-bit integer in both stores: a larger one is refused at the
    edge (SQLite would raise on it, a 500)."""
    status, _, body = request(api.url, "GET", path, token=api.clerk)
    assert_error(status, json.loads(body), 422, "invalid_parameter", "after")


def test_the_largest_position_is_a_read_after_everything(api: Running) -> None:
    assert get_json(api, "/v1/audit?after=9223372036854775807")["items"] == []


# --- auth -------------------------------------------------------------------------


def test_missing_wrong_and_revoked_tokens_get_401(api: Running) -> None:
    for token in (None, "wrong", ""):
        status, _, body = request(api.url, "GET", "/v1/invoices", token=token)
        assert_error(status, json.loads(body), 401, "unauthorized")
    status, _, body = request(api.url, "GET", "/v1/invoices",
                              headers={"Authorization": f"Basic {api.clerk}"})
    assert_error(status, json.loads(body), 401, "unauthorized")
    token = api.tokens.issue("agent:turn-9", "clerk", DAY)
    assert get_json(api, "/v1/whoami", token)["actor"] == "agent:turn-9"
    assert api.tokens.revoke(token)
    before = fingerprint(api.ledger)
    status, _, body = request(api.url, "GET", "/v1/whoami", token=token)
    assert_error(status, json.loads(body), 401, "unauthorized")
    status, data = post(api, "register-customer", {"name": "Sneaky"}, token=token)
    assert_error(status, data, 401, "unauthorized")
    # auth comes before the body is even read
    status, _, body = request(api.url, "POST", "/v1/commands/apply-receipt", token=token,
                              raw=b"{not json")
    assert_error(status, json.loads(body), 401, "unauthorized")
    assert fingerprint(api.ledger) == before


class WatchedLock:
    """A real ``threading.Lock`` that counts the threads waiting to take it.

    The app takes it as its ledger lock (``create_app(lock=...)``), so a test can wait
    until requests are parked inside the server instead of sleeping and hoping.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen = threading.Condition()
        self.waiting = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock, counted as a waiter while blocked."""
        with self._seen:
            self.waiting += 1
            self._seen.notify_all()
        try:
            return self._lock.acquire(blocking, timeout)
        finally:
            with self._seen:
                self.waiting -= 1

    def release(self) -> None:
        """Release the lock."""
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def wait_for_waiters(self, n: int, timeout: float = 30.0) -> None:
        """Block until ``n`` threads wait for the lock (fail after ``timeout`` seconds)."""
        with self._seen:
            assert self._seen.wait_for(lambda: self.waiting >= n, timeout), (
                f"{self.waiting} of {n} requests reached the ledger lock within {timeout} s")


@pytest.fixture
def watched(api: Running) -> Iterator[tuple[Running, WatchedLock]]:
    """A second server over the fixture's books whose ledger lock the test can watch."""
    lock = WatchedLock()
    app = create_app(api.ledger, api.tokens, lock=lock)  # type: ignore[arg-type]
    server = ApiServer(app, uds=Path(api.workdir) / "watched.sock").start()
    try:
        yield Running(api.ledger, api.tokens, server, api.clerk, api.controller,
                      api.workdir), lock
    finally:
        server.stop()


def test_a_token_revoked_while_its_request_waits_gets_401(
        watched: tuple[Running, WatchedLock]) -> None:
    api, lock = watched
    token = api.tokens.issue("agent:turn-8", "clerk", DAY)
    before = fingerprint(api.ledger)
    answers: list[tuple[int, str, bytes]] = []

    def call(method: str, path: str, body: Any = None) -> None:
        answers.append(request(api.url, method, path, token=token, body=body))

    with lock:  # the ledger is busy: both requests pass the token check, then wait for it
        threads = [threading.Thread(target=call, args=("GET", "/v1/invoices")),
                   threading.Thread(target=call, args=("POST", "/v1/commands/register-customer",
                                                       {"name": "Late"}))]
        for t in threads:
            t.start()
        lock.wait_for_waiters(2)  # both are inside the server, past the middleware
        api.tokens.revoke(token)  # the turn ends
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert sorted(a[0] for a in answers) == [401, 401]
    # the second check (after the lock) answered, not the middleware's first one
    assert all(json.loads(a[2])["message"] == "the token was revoked"
               for a in answers), answers
    assert fingerprint(api.ledger) == before


def test_the_token_registry() -> None:
    reg = TokenRegistry()
    a = reg.issue("agent:a", "clerk", DAY)
    b = reg.issue("agent:b", "controller", DAY, 1.5)
    assert a != b and len(a) >= 40 and len(reg) == 2
    grant = reg.lookup(b)
    assert grant is not None and (grant.actor, grant.role, grant.sim_time) == (
        "agent:b", "controller", 1.5)
    assert reg.lookup("nope") is None and reg.lookup(None) is None
    assert reg.revoke(a) and not reg.revoke(a)
    assert reg.revoke_all() == 1 and reg.lookup(b) is None
    with pytest.raises(ValueError, match="role"):
        reg.issue("agent:a", "admin", DAY)


# --- the world stays out ----------------------------------------------------------


def test_no_endpoint_returns_the_world_realm(api: Running) -> None:
    world = [e for e in api.ledger.store.read() if e.realm == "world"]
    assert world and world[0].actor == CLERK_ACTOR  # the same actor as the clerk's token
    for path in QUERIES:
        for fmt in ("json", "csv"):
            sep = "&" if "?" in path else "?"
            status, _, body = request(api.url, "GET", f"{path}{sep}format={fmt}",
                                      token=api.clerk)
            text = body.decode()
            assert status == 200
            assert WORLD_MARKER not in text and "world:" not in text, path
            assert "payment_sent" not in text, path
    trail = get_json(api, "/v1/audit")["items"]
    assert all(r["actor"] == CLERK_ACTOR for r in trail)
    assert world[0].position not in {r["position"] for r in trail}
    assert all(not r["stream"].startswith("world:") for r in trail)


def test_the_audit_trail_is_only_the_callers_own(api: Running) -> None:
    theirs = get_json(api, "/v1/audit", api.controller)["items"]
    ours = get_json(api, "/v1/audit")["items"]
    assert {r["actor"] for r in theirs} <= {"human:controller"}
    assert {r["actor"] for r in ours} <= {CLERK_ACTOR}
    all_erp = q.audit_trail(api.ledger.store)
    assert any(r["actor"] == "system:setup" for r in all_erp)  # exists, but is not shown


# --- the OpenAPI document -----------------------------------------------------------


def test_openapi_describes_every_command(api: Running) -> None:
    status, _, body = request(api.url, "GET", "/openapi.json")
    assert status == 200
    doc = json.loads(body)
    for name, cls in COMMANDS.items():
        op = doc["paths"][f"/v1/commands/{kebab(name)}"]["post"]
        ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith(f"/{name}")
        assert {"401", "403", "422"} <= set(op["responses"])
        schema = doc["components"]["schemas"][name]
        for field, spec in money_fields(cls).items():
            if spec is True:
                prop = json.dumps(schema["properties"][field])
                assert '"type": "string"' in prop and "decimal" in prop, (name, field)
    assert {"/v1/invoices", "/v1/bank/lines", "/v1/reports/aging", "/v1/audit"} <= set(
        doc["paths"])
    status, ctype, _ = request(api.url, "GET", "/docs")
    assert status == 200 and ctype.startswith("text/html")


def test_status_codes_of_rejections() -> None:
    assert status_for("forbidden_for_role") == 403
    assert status_for("unknown_receipt") == 404
    assert status_for("duplicate_id") == 409
    assert status_for("already_matched") == 409
    assert status_for("over_application") == 422


# --- concurrency and the server ------------------------------------------------------


def test_concurrent_requests_are_serialized(api: Running) -> None:
    errors: list[Any] = []

    def worker(n: int) -> None:
        try:
            for _ in range(3):
                get_json(api, "/v1/invoices")
            status, data = post(api, "register-customer", {"customer_id": f"CC{n}",
                                                           "name": f"Concurrent {n}"})
            if status != 200:
                errors.append(data)
        except Exception as e:  # collected for the assertion below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert {f"CC{n}" for n in range(6)} <= set(api.ledger.books.customers)
    assert api.ledger.verify().ok


def test_tcp_mode_and_fast_start_stop(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path / "books.db", create=True)
    set_up_company(ledger)
    tokens = TokenRegistry()
    app = create_app(ledger, tokens)
    token = tokens.issue(CLERK_ACTOR, "clerk", DAY)
    try:
        started = time.monotonic()
        # a long grace: a stop that sat out the graceful-shutdown window would show
        server = ApiServer(app, host="127.0.0.1", port=0, grace=30.0).start()
        try:
            assert server.url.startswith("http://127.0.0.1:") and server.port > 0
            status, _, body = request(server.url, "GET", "/v1/whoami", token=token)
            assert status == 200 and json.loads(body)["actor"] == CLERK_ACTOR
        finally:
            server.stop()
        assert time.monotonic() - started < 15, "stop() waited for the grace period"
        with pytest.raises(OSError):
            request(server.url, "GET", "/v1/whoami", token=token)
        with pytest.raises(ValueError, match="loopback"):
            ApiServer(app, host="0.0.0.0")
    finally:
        ledger.close()


def test_unix_socket_is_private_and_removed_at_stop(api: Running) -> None:
    sock = Path(api.workdir) / "api.sock"
    mode = sock.stat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    other = Path(api.workdir) / "again.sock"
    times = []
    for _ in range(3):
        started = time.monotonic()
        server = ApiServer(api.server.app, uds=other, grace=30.0).start()
        status, _, _ = request(server.url, "GET", "/v1/whoami", token=api.clerk)
        server.stop()
        times.append(time.monotonic() - started)
        assert status == 200 and not other.exists()
    assert max(times) < 15, f"stop() waited for the grace period: {times}"
    with pytest.raises(ValueError, match="longer than"):
        ApiServer(api.server.app, uds="/tmp/" + "x" * 120 + ".sock")


def _refuses_connections(url: str) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(url.removeprefix("unix://"))
    except (ConnectionRefusedError, FileNotFoundError):
        return True
    finally:
        sock.close()
    return False


def test_stop_waits_for_a_request_in_flight(watched: tuple[Running, WatchedLock]) -> None:
    api, lock = watched
    server = api.server
    url = server.url
    result: dict[str, Any] = {}

    def call() -> None:
        result["answer"] = request(url, "GET", "/v1/customers", token=api.clerk)

    with lock:  # hold the ledger so the request waits inside the server
        t = threading.Thread(target=call)
        t.start()
        lock.wait_for_waiters(1)
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        deadline = time.monotonic() + 30
        while not _refuses_connections(url):  # stop has begun: the listener is closed
            assert time.monotonic() < deadline, "stop() did not close the listener"
            stopper.join(0.01)
        assert stopper.is_alive(), "stop() returned with a request in flight"
    t.join(30)
    stopper.join(30)
    assert not t.is_alive() and not stopper.is_alive()
    assert result["answer"][0] == 200
    assert not Path(url.removeprefix("unix://")).exists()


# --- both backends --------------------------------------------------------------------


def test_the_api_on_each_backend(ledger: Ledger) -> None:
    build_books(ledger)
    tokens = TokenRegistry()
    work = short_dir()
    server = ApiServer(create_app(ledger, tokens), uds=Path(work) / "api.sock").start()
    clerk = tokens.issue(CLERK_ACTOR, "clerk", DAY)
    try:
        run = Running(ledger, tokens, server, clerk, "", work)
        assert {i["id"] for i in get_json(run, "/v1/invoices")["items"]} == {
            "INV-1", "INV-2", "INV-3"}
        before = fingerprint(ledger)
        status, data = post(run, "apply-receipt", {"receipt_id": "RCT-1",
                                                   "invoice_id": "INV-2", "amount": "1.00"})
        assert_error(status, data, 422, "customer_mismatch")
        assert fingerprint(ledger) == before
        status, data = post(run, "apply-receipt", {"receipt_id": "RCT-1",
                                                   "invoice_id": "INV-1",
                                                   "amount": "1000.00"})
        assert status == 200, data
        doc = get_json(run, "/v1/documents/invoice/INV-1")
        assert doc["status"] == "paid" and doc["open_amount"] == "0.00"
        trail = get_json(run, "/v1/audit")["items"]
        assert [r["command"] for r in trail] == ["ApplyReceipt"]
        text = request(run.url, "GET", "/v1/audit?format=csv", token=clerk)[2].decode()
        assert WORLD_MARKER not in text and "ApplyReceipt" in text
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def test_quoted_ids_reach_the_books(api: Running) -> None:
    # an id with the allowed punctuation survives quoting
    status, _, body = request(api.url, "GET", f"/v1/documents/invoice/{quote('INV-1')}",
                              token=api.clerk)
    assert status == 200 and json.loads(body)["id"] == "INV-1"
