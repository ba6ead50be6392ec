"""The API's request log over a real socket: one line per request, with the command, the
status, the refusal and the positions written; nothing outside a recorded turn; the event
log's hash unchanged by recording."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from erp.api.request_log import RequestLog
from erp.api.server import ApiServer, TokenRegistry, create_app
from erp.ledger import Ledger
from tests.erp.api.test_api import CLERK_ACTOR, build_books, request, short_dir
from tests.erp.helpers import DAY


def serve(work: str, log: RequestLog | None) -> tuple[Ledger, TokenRegistry, ApiServer]:
    ledger = Ledger.open(os.path.join(work, "books.db"), create=True)
    build_books(ledger)
    tokens = TokenRegistry()
    server = ApiServer(create_app(ledger, tokens, request_log=log),
                       uds=Path(work) / "api.sock").start()
    return ledger, tokens, server


def agent_requests(url: str, token: str) -> None:
    """A read, an applied receipt, a refused one, an invalid body, a bad token, a 404."""
    assert request(url, "GET", "/v1/invoices?status=open", token=token)[0] == 200
    assert request(url, "POST", "/v1/commands/apply-receipt", token=token,
                   body={"receipt_id": "RCT-1", "invoice_id": "INV-1",
                         "amount": "400.00"})[0] == 200
    assert request(url, "POST", "/v1/commands/apply-receipt", token=token,
                   body={"receipt_id": "RCT-1", "invoice_id": "INV-1",
                         "amount": "9999.00"})[0] == 422
    assert request(url, "POST", "/v1/commands/apply-receipt", token=token,
                   body={"receipt_id": "RCT-1"})[0] == 422
    assert request(url, "GET", "/v1/invoices", token="wrong")[0] == 401
    assert request(url, "GET", "/v1/nowhere", token=token)[0] == 404


def test_every_request_of_a_turn_is_one_line(tmp_path: Path) -> None:
    work = short_dir()
    log = RequestLog()
    ledger, tokens, server = serve(work, log)
    try:
        token = tokens.issue(CLERK_ACTOR, "clerk", DAY)
        before = request(server.url, "GET", "/v1/invoices", token=token)  # not recorded
        assert before[0] == 200
        path = tmp_path / "agent" / "api.jsonl"
        log.begin(path)
        start = ledger.position
        agent_requests(server.url, token)
        entries = log.end()
        assert request(server.url, "GET", "/v1/invoices", token=token)[0] == 200  # after
    finally:
        server.stop()
        ledger.close()
        shutil.rmtree(work, ignore_errors=True)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines == entries and len(lines) == 6
    read, applied, refused, invalid, unauthorized, missing = lines
    assert (read["method"], read["route"], read["status"], read["command"]) == (
        "GET", "/v1/invoices", 200, None)
    assert read["path"] == "/v1/invoices" and read["time"].endswith("Z")
    assert applied["command"] == "ApplyReceipt" and applied["status"] == 200
    assert applied["route"] == "/v1/commands/apply-receipt"
    assert applied["events"] and all(p > start for p in applied["events"])
    assert applied["position"] == max(applied["events"]) and applied["error"] is None
    assert refused["command"] == "ApplyReceipt" and refused["status"] == 422
    assert refused["error"] and refused["message"] and refused["events"] == []
    assert invalid["command"] == "ApplyReceipt" and invalid["status"] == 422
    assert invalid["field"] in ("invoice_id", "amount"), invalid
    assert unauthorized["status"] == 401 and unauthorized["error"] == "unauthorized"
    assert missing["status"] == 404 and missing["route"] is None
    assert missing["error"] == "not_found"


def test_recording_leaves_the_event_log_as_it_would_be(tmp_path: Path) -> None:
    heads = []
    for recorded in (True, False):
        work = short_dir()
        log = RequestLog() if recorded else None
        ledger, tokens, server = serve(work, log)
        try:
            token = tokens.issue(CLERK_ACTOR, "clerk", DAY, 3600.0, correlation_id="turn-1")
            if log is not None:
                log.begin(tmp_path / "api.jsonl")
            agent_requests(server.url, token)
            if log is not None:
                log.end()
            heads.append(ledger.head_hash)
        finally:
            server.stop()
            ledger.close()
            shutil.rmtree(work, ignore_errors=True)
    assert heads[0] == heads[1]
