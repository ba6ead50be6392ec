"""Schemathesis against the served OpenAPI document, over a real TCP socket.

Every operation of ``/openapi.json`` gets generated requests, valid and invalid by its
schema (bounded: ``ERPSIM_ST_EXAMPLES`` each mode and operation, a few hundred in all;
derandomized under CI). Required: no 5xx; every answer's status, content type and
headers as the document says; a rejected request (4xx) changes nothing: the log's event
count and head hash are the same before and after it. The figures are printed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from erp.api.server import ApiServer, TokenRegistry, create_app
from erp.ledger import Ledger
from tests.erp.api.test_api import CLERK_ACTOR, build_books, short_dir
from tests.erp.helpers import DAY

EXAMPLES = int(os.environ.get("ERPSIM_ST_EXAMPLES", "3"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance]
UNLISTED = ("PUT", "PATCH", "DELETE")


@dataclass
class Served:
    """A served ledger, its clerk's token and a session."""

    ledger: Ledger
    url: str
    token: str
    session: requests.Session = field(default_factory=requests.Session)

    def state(self) -> tuple[int, tuple[int, str]]:
        """The log's event count and head (position, hash)."""
        return self.ledger.store.count(), self.ledger.store.head()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    work = short_dir()
    ledger = Ledger.open(os.path.join(work, "books.db"), create=True)
    build_books(ledger)
    tokens = TokenRegistry()
    server = ApiServer(create_app(ledger, tokens), host="127.0.0.1").start()
    token = tokens.issue(CLERK_ACTOR, "clerk", DAY, 3600.0, correlation_id="turn-1")
    try:
        yield Served(ledger, server.url, token)
    finally:
        server.stop()
        ledger.close()
        shutil.rmtree(work, ignore_errors=True)


@dataclass
class Figures:
    """What the run saw."""

    operations: int = 0
    cases: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    server_errors: int = 0
    nonconforming: list[str] = field(default_factory=list)
    state_changes: list[str] = field(default_factory=list)


def test_generated_requests_against_the_served_openapi(served: Served,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    schema = schemathesis.openapi.from_url(f"{served.url}/openapi.json")
    headers = {"Authorization": f"Bearer {served.token}"}
    figures = Figures()

    def one(case: Any) -> None:
        before = served.state()
        response = case.call(base_url=served.url, headers=headers, session=served.session)
        after = served.state()
        status = response.status_code
        figures.cases += 1
        figures.by_status[status] = figures.by_status.get(status, 0) + 1
        label = f"{case.method} {case.formatted_path} -> {status}"
        if status >= 500:
            figures.server_errors += 1
        if status >= 400 and before != after:
            figures.state_changes.append(f"{label}: {before} -> {after}")
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except Exception as e:  # schemathesis's failure group names every check that failed
            figures.nonconforming.append(f"{label}: {str(e).splitlines()[0][:300]}")

    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]
        figures.operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)

            @settings(max_examples=EXAMPLES, deadline=None, database=None,
                      derandomize=os.environ.get("CI") == "true",
                      suppress_health_check=list(HealthCheck))
            @given(case=strategy)
            def run(case: Any) -> None:
                one(case)

            run()

    with capsys.disabled():
        print(f"\nschemathesis: operations {figures.operations}, cases {figures.cases}, "
              f"5xx {figures.server_errors}, nonconforming {len(figures.nonconforming)}, "
              f"state changes on a rejected request {len(figures.state_changes)}, "
              f"by status {dict(sorted(figures.by_status.items()))}")
    assert figures.cases >= figures.operations * EXAMPLES  # the cases ran
    assert figures.server_errors == 0
    assert figures.nonconforming == []
    assert figures.state_changes == []


def test_unlisted_methods_get_405_with_allow(served: Served) -> None:
    schema = requests.get(f"{served.url}/openapi.json", timeout=30).json()
    headers = {"Authorization": f"Bearer {served.token}"}
    for path, operations in schema["paths"].items():
        if "{" in path:
            continue
        documented = {m.upper() for m in operations}
        for method in UNLISTED:
            if method in documented:
                continue
            before = served.state()
            r = requests.request(method, served.url + path, headers=headers, timeout=30)
            assert r.status_code == 405, (method, path, r.status_code)
            assert set(r.headers["Allow"].split(", ")) == documented, (path, r.headers)
            assert r.json()["error"] == "method_not_allowed"
            assert served.state() == before


def test_every_get_documents_json_and_csv_where_it_takes_format(served: Served) -> None:
    schema = requests.get(f"{served.url}/openapi.json", timeout=30).json()
    for path, operations in schema["paths"].items():
        get = operations.get("get")
        if get is None or not path.startswith("/v1/"):
            continue
        content = get["responses"]["200"]["content"]
        assert content["application/json"]["schema"]["type"] == "object", path
        if any(p["name"] == "format" for p in get.get("parameters", [])):
            assert content["text/csv"]["schema"]["type"] == "string", path


def _post(served: Served, path: str, data: bytes) -> requests.Response:
    return requests.post(served.url + path, data=data, timeout=30, headers={
        "Authorization": f"Bearer {served.token}", "Content-Type": "application/json"})


RECEIPT = ('{"receipt_id": "%s", "bank_account_id": "B-OPER", "entry_date": %s, '
           '"amount": "5.00", "payer": "X"}')


@pytest.mark.parametrize(("body", "status", "code", "message"), [
    (b'{"receipt_id": "\xff"}', 422, "invalid_json",
     "the body is not JSON text in UTF-8 (There was an error parsing the body)"),
    ((RECEIPT % ("R-9", "1772409600")).encode(), 422, "invalid_body",
     "entry_date: 1772409600 is not a date (expected a YYYY-MM-DD string)"),
    ((RECEIPT % ("R-9", '"2026-03-02T00:00:00"')).encode(), 422, "invalid_body",
     "entry_date: '2026-03-02T00:00:00' is not a date (expected a YYYY-MM-DD string)"),
    ((RECEIPT % ("R/9", '"2026-03-02"')).encode(), 422, "invalid_body",
     "receipt_id: 'R/9' cannot be an id (expected a letter or digit, then letters, digits "
     "and . _ : - (no '/'), at most 81 characters, like INV-0000001: an id must be readable "
     "at its URL)"),
])
def test_bad_bodies_are_refused_with_their_reason(served: Served, body: bytes, status: int,
                                                  code: str, message: str) -> None:
    before = served.state()
    r = _post(served, "/v1/commands/record-receipt", body)
    assert (r.status_code, r.json()["error"], r.json()["message"]) == (status, code, message)
    assert served.state() == before


@pytest.mark.parametrize("as_of", ["1700000000", "2026-03-02T00:00:00", "2026-3-2", "20260302"])
def test_query_dates_are_yyyy_mm_dd_only(served: Served, as_of: str) -> None:
    r = requests.get(f"{served.url}/v1/reports/trial-balance", params={"as_of": as_of},
                     headers={"Authorization": f"Bearer {served.token}"}, timeout=30)
    assert r.status_code == 422
    assert r.json()["message"] == f"as_of: {as_of!r} is not a date (expected YYYY-MM-DD)"
    ok = requests.get(f"{served.url}/v1/reports/trial-balance", params={"as_of": "2026-03-02"},
                      headers={"Authorization": f"Bearer {served.token}"}, timeout=30)
    assert ok.status_code == 200
