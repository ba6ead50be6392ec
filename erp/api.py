"""The ERP API: the books over HTTP for the agent of one turn.

FastAPI, served by uvicorn in a background thread on a unix socket (or loopback
TCP). Every command of ``erp.commands.COMMANDS`` is a POST route
(``/v1/commands/apply-receipt``) whose body is the command's own model; the
queries an accountant needs are GET resources, JSON by default and CSV with
``?format=csv``. The OpenAPI document is at ``/openapi.json`` (and ``/docs``).

Auth is a bearer token per turn from a ``TokenRegistry``: it binds the actor, the
role and the business date every command runs with. A missing, wrong or revoked
token gets 401; a command the role may not do gets 403. Errors are JSON
``{"error": code, "message": ..., "field": ...}``; a rejected command writes
nothing (the ledger guarantees it).

Nothing here reads the world realm: the read tables and the audit view hold the
erp realm only, and the few statements of this module that read the log say
``realm = 'erp'``. Ids in paths and filters must match a strict pattern, so a
path-traversal attempt is a 422 naming the parameter.

Money leaves as decimal strings (``"1240.50"``) and must arrive as decimal
strings: a JSON number in a money field is refused (it could mean units or cents).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import inspect
import io
import ipaddress
import json
import os
import re
import secrets
import socket
import stat
import threading
import time
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

import uvicorn
from fastapi import Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPBearer
from pydantic import BaseModel, BeforeValidator
from starlette.exceptions import HTTPException as StarletteHTTPException

from erp import money, queries
from erp.commands import COMMANDS, Command
from erp.errors import CommandRejected, ConcurrencyConflict
from erp.ledger import ROLES, Ledger
from erp.money import format_cents

API_VERSION = "1"
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,80}$"
"""What an id in a path or a filter may look like (no '/', no '..', no NUL)."""
STATUS_PATTERN = r"^[a-z][a-z_]{0,31}$"
MONEY_PATTERN = r"^[+-]?[0-9]{1,15}(\.[0-9]{1,2})?$"
UNIX_PATH_MAX = 107
"""Longest path of a unix socket (sun_path is 108 bytes with the NUL)."""

DOC_KINDS = ("invoice", "receipt", "credit_memo", "refund", "bill", "vendor_credit", "payment",
             "payment_run", "statement_line", "fee", "interest", "journal", "bank_change",
             "period")
DocKind = Literal["invoice", "receipt", "credit_memo", "refund", "bill", "vendor_credit",
                  "payment", "payment_run", "statement_line", "fee", "interest", "journal",
                  "bank_change", "period"]
Format = Literal["json", "csv"]
Subledger = Literal["ar", "ap", "unapplied_cash"]

_MONEY_KEYS = frozenset({"amount", "total", "subtotal", "tax", "unit_price", "opening_balance",
                         "credit_limit", "clerk_write_off_limit", "clerk_fee_allowance_fixed",
                         "open_amount", "debit", "credit", "balance"})
"""Integer-cent keys of event payloads and rows, rendered as decimal strings."""

_CONFLICT_CODES = frozenset({"duplicate_id", "duplicate_vendor_invoice", "not_pending",
                             "target_already_matched", "customer_already_assigned"})


# --- tokens -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Grant:
    """What a token stands for: who acts, in which role, on which business date."""

    token: str
    actor: str
    role: str
    business_date: date
    sim_time: float | None = None
    correlation_id: str | None = None


class TokenRegistry:
    """Bearer tokens of the running turns (thread-safe)."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}
        self._lock = threading.Lock()

    def issue(self, actor: str, role: str, business_date: date, sim_time: float | None = None,
              *, correlation_id: str | None = None) -> str:
        """A new token bound to the actor, role and business date of a turn."""
        if role not in ROLES:
            raise ValueError(f"role {role!r}: expected one of {', '.join(ROLES)}")
        if not actor:
            raise ValueError("a token needs an actor")
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._grants[token] = Grant(token, actor, role, business_date, sim_time,
                                        correlation_id)
        return token

    def lookup(self, token: str | None) -> Grant | None:
        """The grant of a live token, or None."""
        if not token:
            return None
        with self._lock:
            return self._grants.get(token)

    def revoke(self, token: str) -> bool:
        """End a token; whether it was live."""
        with self._lock:
            return self._grants.pop(token, None) is not None

    def revoke_all(self) -> int:
        """End every token; how many were live."""
        with self._lock:
            n = len(self._grants)
            self._grants.clear()
            return n

    def __len__(self) -> int:
        with self._lock:
            return len(self._grants)


# --- errors -------------------------------------------------------------------------


class ApiError(Exception):
    """An error answered as ``{"error", "message", "field"}`` with a 4xx status."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field


class ErrorBody(BaseModel):
    """Every error the API answers."""

    error: str
    message: str
    field: str | None = None


class EventWritten(BaseModel):
    """One event a command wrote."""

    position: int
    type: str
    stream: str
    version: int
    id: str


class CommandResult(BaseModel):
    """What a command wrote."""

    command: str
    actor: str
    role: str
    business_date: date
    events: list[EventWritten]
    position: int


def _error_json(status: int, code: str, message: str, field: str | None = None,
                headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, "field": field}, status_code=status,
                        headers=dict(headers or {}))


def status_for(code: str) -> int:
    """The HTTP status of a rejected command's code."""
    if code == "forbidden_for_role":
        return 403
    if code.startswith("unknown_"):
        return 404
    if code in _CONFLICT_CODES or code.startswith("already_"):
        return 409
    return 422


def _field_path(loc: Iterable[Any]) -> str | None:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or None


def _validation_error(exc: RequestValidationError) -> JSONResponse:
    errors = list(exc.errors())
    if not errors:
        return _error_json(422, "invalid_request", "the request is not valid")
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    where = loc[0] if loc else "body"
    if first.get("type") == "json_invalid":
        return _error_json(422, "invalid_json",
                           f"the body is not valid JSON ({first.get('ctx', {}).get('error', '')}"
                           ")".replace(" ()", ""), None)
    problems = []
    for e in errors[:4]:
        f = _field_path(e.get("loc", ()))
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        if e.get("type") == "missing" and f is None:
            msg = "a JSON body is required"
        elif e.get("type") == "extra_forbidden":
            msg = "unknown field (not part of this command; see /openapi.json)"
        problems.append(f"{f}: {msg}" if f else msg)
    more = f" (and {len(errors) - 4} more)" if len(errors) > 4 else ""
    code = "invalid_body" if where == "body" else "invalid_parameter"
    return _error_json(422, code, "; ".join(problems) + more, _field_path(loc))


# --- money in request bodies ----------------------------------------------------------


def _is_money(annotation: Any, metadata: Iterable[Any] = ()) -> bool:
    for m in metadata:
        if isinstance(m, BeforeValidator) and m.func in (money._to_cents,
                                                         money._decimal_text_to_cents):
            return True
    if typing.get_origin(annotation) is Annotated:
        base, *meta = typing.get_args(annotation)
        return _is_money(base, meta)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_money(a) for a in typing.get_args(annotation))
    return False


def _nested_model(annotation: Any) -> tuple[type[BaseModel], bool] | None:
    """A model inside an annotation: ``(model, is_sequence)``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _nested_model(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(annotation):
            found = _nested_model(a)
            if found is not None:
                return found
        return None
    if origin in (tuple, list):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        if args:
            found = _nested_model(args[0])
            if found is not None:
                return found[0], True
    return None


def money_fields(model: type[BaseModel]) -> dict[str, Any]:
    """The money fields of a model: ``{name: True | (nested spec, is_sequence)}``."""
    spec: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        if _is_money(f.annotation, f.metadata):
            spec[name] = True
            continue
        nested = _nested_model(f.annotation)
        if nested is not None:
            inner = money_fields(nested[0])
            if inner:
                spec[name] = (inner, nested[1])
    return spec


def _check_money(body: Any, spec: Mapping[str, Any], path: str = "") -> None:
    if not isinstance(body, dict):
        return
    for name, sub in spec.items():
        if name not in body:
            continue
        value, where = body[name], f"{path}.{name}" if path else name
        if sub is True:
            if isinstance(value, int | float) and not isinstance(value, bool):
                raise ApiError(422, "money_not_a_string",
                               f"{where}: write money as a decimal string like \"1240.50\", not "
                               f"the number {value!r} (a bare number could mean units or cents)",
                               where)
        elif sub[1] and isinstance(value, list):
            for i, item in enumerate(value):
                _check_money(item, sub[0], f"{where}[{i}]")
        else:
            _check_money(value, sub[0], where)


# --- rows -----------------------------------------------------------------------------


def _money(value: Any) -> Any:
    return format_cents(int(value)) if value is not None else None


def _convert(value: Any, key: str = "") -> Any:
    """A payload with cent integers under money keys rendered as decimal strings."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("bank", "new_bank") and isinstance(v, dict):
                out[k] = _mask_bank(v)
            else:
                out[k] = _convert(v, k)
        return out
    if isinstance(value, list):
        return [_convert(v, key) for v in value]
    if key in _MONEY_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return format_cents(value)
    return value


def _mask_bank(bank: Mapping[str, Any] | None) -> str | None:
    if not bank:
        return None
    number = str(bank.get("account_number", ""))
    return f"{bank.get('account_name', '')} {bank.get('routing', '')}/****{number[-4:]}"


_PARTY_NAME = {"invoice": "customer", "receipt": "customer", "credit_memo": "customer",
               "refund": "customer", "bill": "vendor", "vendor_credit": "vendor",
               "payment": "vendor", "bank_change": "vendor", "statement_line": "counterparty"}
_REFERENCE_NAME = {"bill": "vendor_invoice_number", "vendor_credit": "vendor_credit_number",
                   "credit_memo": "invoice", "refund": "receipt", "payment": "run",
                   "bank_change": "new_bank", "journal": "source", "fee": "memo",
                   "interest": "memo"}


def _doc_row(d: Mapping[str, Any], generic: bool = False) -> dict[str, Any]:
    kind = d["kind"]
    party = "party" if generic else _PARTY_NAME.get(kind, "party")
    reference = "reference" if generic else _REFERENCE_NAME.get(kind, "reference")
    row: dict[str, Any] = {"kind": kind, "id": d["doc_id"], party: d["party"],
                           "date": d["doc_date"], "due_on": d["due_on"],
                           "total": _money(d["total"]), "open_amount": _money(d["open_amount"]),
                           "status": d["status"], reference: d["reference"],
                           "account": d["account"]}
    if kind == "period" and not generic:
        row = {"kind": kind, "id": d["doc_id"], "start": d["doc_date"], "end": d["due_on"],
               "status": d["status"]}
    return row


def _doc_columns(kind: str | None) -> list[str]:
    blank = {"kind": kind or "", "doc_id": None, "party": None, "doc_date": None, "due_on": None,
             "total": None, "open_amount": None, "status": None, "reference": None,
             "account": None}
    return list(_doc_row(blank, generic=kind is None))


ITEM_COLUMNS = ["kind", "id", "party", "account", "date", "due_on", "open_amount"]


def _csv(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    cols = list(columns or [])
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in cols])
    return buf.getvalue()


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict | list):
        return json.dumps(v, separators=(",", ":"), default=str)
    return str(v)


def _listing(rows: list[dict[str, Any]], fmt: str, columns: list[str] | None = None,
             **meta: Any) -> Response:
    if fmt == "csv":
        return Response(_csv(rows, columns), media_type="text/csv")
    return JSONResponse(jsonable({**meta, "count": len(rows), "items": rows}))


def _single(row: dict[str, Any], fmt: str, csv_row: dict[str, Any] | None = None) -> Response:
    if fmt == "csv":
        flat = csv_row if csv_row is not None else {
            k: v for k, v in row.items() if not isinstance(v, list)}
        return Response(_csv([flat]), media_type="text/csv")
    return JSONResponse(jsonable(row))


def jsonable(value: Any) -> Any:
    """Dates as ISO strings, tuples as lists (for JSONResponse)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, date):
        return value.isoformat()
    return value


# --- the app ----------------------------------------------------------------------------


def kebab(name: str) -> str:
    """``ApplyReceipt`` -> ``apply-receipt``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


Id = Annotated[str, PathParam(pattern=ID_PATTERN, description="an id such as INV-0000001")]
Status = Annotated[str | None, Query(pattern=STATUS_PATTERN,
                                     description="a status such as open, paid, unapplied")]
AsOf = Annotated[date | None, Query(description="YYYY-MM-DD; default: the token's business "
                                                "date")]


class _Auth:
    """ASGI middleware: every ``/v1/`` request needs a live bearer token."""

    def __init__(self, app: Any, tokens: TokenRegistry) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1/"):
            token = None
            for key, value in scope.get("headers", ()):
                if key == b"authorization":
                    scheme, _, rest = value.decode("latin-1").partition(" ")
                    if scheme.lower() == "bearer":
                        token = rest.strip()
                    break
            grant = self.tokens.lookup(token)
            if grant is None:
                why = ("no bearer token (send 'Authorization: Bearer $ERPSIM_TOKEN')"
                       if token is None else "the token is wrong, expired or revoked")
                response = _error_json(401, "unauthorized", why, None,
                                       {"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
            scope["erpsim.grant"] = grant
        await self.app(scope, receive, send)


_bearer = HTTPBearer(auto_error=False, description="the turn's token (ERPSIM_TOKEN)")


def _grant(request: Request, _credentials: Annotated[Any, Depends(_bearer)]) -> Grant:
    grant = request.scope.get("erpsim.grant")
    if grant is None:  # the middleware answers first; this is a second line
        raise ApiError(401, "unauthorized", "no valid bearer token")
    return grant


Auth = Annotated[Grant, Depends(_grant)]
Fmt = Annotated[Format, Query(description="json (the default) or csv")]
Unapplied = Annotated[bool, Query(description="only receipts with cash left to apply")]
Unmatched = Annotated[bool, Query(description="only statement lines not yet matched")]
Since = Annotated[date | None, Query(description="first date to list (earlier lines form the "
                                                 "opening balance)")]
After = Annotated[int, Query(ge=0, description="only events after this log position")]
Limit = Annotated[int, Query(ge=1, le=100_000, description="at most this many rows")]
AccountCode = Annotated[str, PathParam(pattern=r"^[A-Za-z0-9.-]{1,16}$",
                                       description="an account code such as 1200")]
AgingLedger = Annotated[Literal["ar", "ap"], Query(alias="ledger",
                                                  description="ar (customers) or ap (vendors)")]
Party = Annotated[str | None, Query(pattern=ID_PATTERN,
                                    description="only this customer's or vendor's")]


ERRORS: dict[int | str, dict[str, Any]] = {  # by reference: a model per route costs ~1 ms each
    s: {"description": d, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/ErrorBody"}}}} for s, d in (
        (401, "missing, wrong or revoked token"),
        (403, "the token's role may not do this"),
        (404, "no such document, party or endpoint"),
        (409, "conflicts with the books (a duplicate id, already done)"),
        (422, "invalid body or parameter, or the books rejected the command"),
    )}

COMMAND_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "the events the command wrote", "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/CommandResult"}}}},
    **ERRORS}

DESCRIPTION = """\
The company's books for the agent of one turn.

* Auth: `Authorization: Bearer $ERPSIM_TOKEN` on every `/v1/` request. The token
  carries the actor, the role and the business date every command runs with.
* Commands: `POST /v1/commands/<command>` with the command as a JSON body. The
  answer lists the events written. A rejected command writes nothing.
* Queries: `GET` resources, JSON by default, CSV with `?format=csv`. Reports and
  open items are as of the token's business date unless `as_of` says otherwise.
* Money: decimal strings with at most two places (`"1240.50"`), in and out.
* Errors: `{"error": code, "message": text, "field": name}` with 401 (token), 403
  (role), 404 (unknown id), 409 (conflict) or 422 (invalid or rejected).
"""


def create_app(ledger: Ledger, tokens: TokenRegistry, *,
               lock: threading.Lock | None = None) -> FastAPI:
    """The API over one ledger. All ledger access holds ``lock`` (one is made if not given)."""
    lock = lock or threading.Lock()
    store = ledger.store
    app = FastAPI(title="erpsim ERP API", version=API_VERSION, description=DESCRIPTION,
                  docs_url="/docs", redoc_url=None, openapi_url="/openapi.json")
    app.state.ledger = ledger
    app.state.tokens = tokens
    app.state.lock = lock
    app.add_middleware(_Auth, tokens=tokens)

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return _error_json(exc.status, exc.code, exc.message, exc.field)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_error(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return _error_json(404, "not_found", f"no endpoint {request.method} "
                               f"{request.url.path}; see /openapi.json")
        if exc.status_code == 405:
            return _error_json(405, "method_not_allowed", f"{request.method} is not allowed on "
                               f"{request.url.path}; see /openapi.json")
        return _error_json(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(Exception)
    async def _crash(_request: Request, exc: Exception) -> JSONResponse:
        return _error_json(500, "internal_error", f"the server failed: {type(exc).__name__}")

    def rows(sql: str, params: Iterable[Any] = ()) -> list[Any]:
        with store.engine.connect() as conn:
            return conn.exec_driver_sql(store.sql(sql), tuple(params)).all()

    @contextlib.contextmanager
    def books(grant: Grant) -> Iterator[Ledger]:
        with lock:
            if tokens.lookup(grant.token) is None:  # revoked while the request waited
                raise ApiError(401, "unauthorized", "the token was revoked")
            ledger.refresh()  # another writer (the engine) may have appended: cheap when not
            yield ledger

    # --- commands --------------------------------------------------------------

    def command_endpoint(name: str, cls: type[Command]) -> Callable[..., Any]:
        spec = money_fields(cls)

        async def money_guard(request: Request) -> None:
            if spec:
                try:
                    body = await request.json()
                except ValueError:
                    return  # FastAPI reports the invalid JSON
                _check_money(body, spec)

        def run(body: Any, grant: Grant, _money_ok: None) -> JSONResponse:
            with lock:
                if tokens.lookup(grant.token) is None:
                    raise ApiError(401, "unauthorized", "the token was revoked")
                try:
                    written = ledger.execute(body, actor=grant.actor, role=grant.role,  # type: ignore[arg-type]
                                             business_date=grant.business_date,
                                             correlation_id=grant.correlation_id,
                                             sim_time=grant.sim_time)
                except CommandRejected as e:
                    raise ApiError(status_for(e.code), e.code, e.message, e.field) from None
                except ConcurrencyConflict as e:
                    raise ApiError(409, "concurrency_conflict", str(e)) from None
                position = ledger.position
            return JSONResponse({
                "command": name, "actor": grant.actor, "role": grant.role,
                "business_date": grant.business_date.isoformat(),
                "events": [{"position": e.position, "type": e.type, "stream": e.stream,
                            "version": e.version, "id": e.stream.partition(":")[2]}
                           for e in written],
                "position": position})

        run.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
            inspect.Parameter("body", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=cls),
            inspect.Parameter("grant", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              annotation=Grant, default=Depends(_grant)),
            inspect.Parameter("_money_ok", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              annotation=None, default=Depends(money_guard)),
        ])
        run.__name__ = f"command_{kebab(name).replace('-', '_')}"
        return run

    for name, cls in COMMANDS.items():
        doc = inspect.getdoc(cls) or name
        app.add_api_route(f"/v1/commands/{kebab(name)}", command_endpoint(name, cls),
                          methods=["POST"], summary=doc.splitlines()[0],
                          description=f"`{name}`: {doc}\n\nRuns with the token's actor, role "
                                      "and business date. Money fields are decimal strings.",
                          tags=["commands"], response_model=None, responses=COMMAND_RESPONSES,
                          operation_id=f"command_{kebab(name).replace('-', '_')}")

    @app.get("/v1/commands", tags=["meta"], responses=ERRORS)
    def list_commands(grant: Auth, format: Fmt = "json") -> Response:
        """Every command with its route and what it does."""
        items = [{"name": n, "path": f"/v1/commands/{kebab(n)}",
                  "summary": (inspect.getdoc(c) or n).splitlines()[0]}
                 for n, c in COMMANDS.items()]
        return _listing(items, format, ["name", "path", "summary"])

    # --- who and what ------------------------------------------------------------

    @app.get("/v1/whoami", tags=["meta"], responses=ERRORS)
    def whoami(grant: Auth, format: Fmt = "json") -> Response:
        """The actor, role and business date this token acts with."""
        return _single({"actor": grant.actor, "role": grant.role,
                        "business_date": grant.business_date.isoformat()}, format)

    @app.get("/v1/company", tags=["master data"], responses=ERRORS)
    def company(grant: Auth, format: Fmt = "json") -> Response:
        """The company: name, currency, posting accounts and the policies the books enforce."""
        with books(grant) as led:
            c = led.books.company
            if c is None:
                raise ApiError(404, "company_not_set_up", "the company is not set up")
            out = {"name": c.name, "currency": c.currency,
                   "accounts": c.accounts.model_dump(),
                   "policies": _convert(led.books.policies.model_dump())}
        flat = {"name": out["name"], "currency": out["currency"],
                **{f"policy.{k}": v for k, v in out["policies"].items()}}
        return _single(out, format, flat)

    @app.get("/v1/customers", tags=["master data"], responses=ERRORS)
    def customers(grant: Auth, format: Fmt = "json") -> Response:
        """Customers with their terms, credit limit and open receivables."""
        with books(grant) as led:
            items = [{"id": c.customer_id, "name": c.name, "terms_days": c.terms_days,
                      "credit_limit": _money(c.credit_limit), "open_ar": _money(c.open_ar)}
                     for c in sorted(led.books.customers.values(), key=lambda c: c.customer_id)]
        return _listing(items, format, ["id", "name", "terms_days", "credit_limit", "open_ar"])

    @app.get("/v1/customers/{customer_id:path}", tags=["master data"], responses=ERRORS)
    def customer(grant: Auth, customer_id: Id, format: Fmt = "json") -> Response:
        """A customer with its open invoices and its unapplied receipts."""
        with books(grant) as led:
            c = led.books.customers.get(customer_id)
            if c is None:
                raise ApiError(404, "unknown_customer", f"no customer {customer_id!r}",
                               "customer_id")
            row: dict[str, Any] = {
                "id": c.customer_id, "name": c.name, "terms_days": c.terms_days,
                "credit_limit": _money(c.credit_limit), "open_ar": _money(c.open_ar)}
            row["open_invoices"] = _items(queries.open_items(
                store, "ar", party=customer_id, as_of=grant.business_date))
            row["unapplied_receipts"] = _items(queries.open_items(
                store, "unapplied_cash", party=customer_id, as_of=grant.business_date))
        return _single(row, format)

    def vendor_row(v: Any, led: Ledger) -> dict[str, Any]:
        pending = sorted(r.request_id for r in led.books.bank_changes.values()
                         if r.vendor_id == v.vendor_id and r.status == "pending")
        return {"id": v.vendor_id, "name": v.name, "terms_days": v.terms_days,
                "bank": _mask_bank(v.bank.model_dump() if v.bank else None),
                "pending_bank_changes": " ".join(pending)}

    @app.get("/v1/vendors", tags=["master data"], responses=ERRORS)
    def vendors(grant: Auth, format: Fmt = "json") -> Response:
        """Vendors with their terms and approved bank details (account number masked)."""
        with books(grant) as led:
            items = [vendor_row(v, led)
                     for v in sorted(led.books.vendors.values(), key=lambda v: v.vendor_id)]
        return _listing(items, format, ["id", "name", "terms_days", "bank",
                                        "pending_bank_changes"])

    @app.get("/v1/vendors/{vendor_id:path}", tags=["master data"], responses=ERRORS)
    def vendor(grant: Auth, vendor_id: Id, format: Fmt = "json") -> Response:
        """A vendor with its bank-detail change requests and its open bills."""
        with books(grant) as led:
            v = led.books.vendors.get(vendor_id)
            if v is None:
                raise ApiError(404, "unknown_vendor", f"no vendor {vendor_id!r}", "vendor_id")
            row = vendor_row(v, led)
            row["bank_changes"] = [
                {"request_id": r.request_id, "status": r.status,
                 "new_bank": _mask_bank(r.new_bank.model_dump()),
                 "requested_by_role": r.requested_by_role}
                for r in sorted(led.books.bank_changes.values(), key=lambda r: r.request_id)
                if r.vendor_id == vendor_id]
            row["open_bills"] = _items(queries.open_items(store, "ap", party=vendor_id,
                                                          as_of=grant.business_date))
        return _single(row, format)

    @app.get("/v1/accounts", tags=["master data"], responses=ERRORS)
    def accounts(grant: Auth, format: Fmt = "json") -> Response:
        """The chart of accounts."""
        with books(grant):
            items = [{"code": a.code, "name": a.name, "type": a.account_type,
                      "normal_side": a.normal_side, "control": a.control}
                     for a in sorted(queries.chart(store).values(), key=lambda a: a.code)]
        return _listing(items, format, ["code", "name", "type", "normal_side", "control"])

    @app.get("/v1/periods", tags=["master data"], responses=ERRORS)
    def periods(grant: Auth, format: Fmt = "json") -> Response:
        """Accounting periods and whether each is open or closed."""
        with books(grant) as led:
            items = [{"period": p.period, "start": p.start.isoformat(), "end": p.end.isoformat(),
                      "status": "closed" if p.closed else "open"}
                     for p in sorted(led.books.periods.values(), key=lambda p: p.start)]
        return _listing(items, format, ["period", "start", "end", "status"])

    # --- documents ---------------------------------------------------------------

    def doc_listing(grant: Grant, kind: str, status: str | None, party: str | None, fmt: str,
                    extra: Callable[[list[dict[str, Any]]], None] | None = None) -> Response:
        with books(grant):
            items = [_doc_row(d) for d in queries.documents(store, kind, status, party)]
            if extra is not None:
                extra(items)
        columns = _doc_columns(kind) + (["payer", "method", "bank_account"]
                                        if kind == "receipt" else [])
        return _listing(items, fmt, columns)

    @app.get("/v1/invoices", tags=["receivables"], responses=ERRORS)
    def invoices(grant: Auth, status: Status = None, customer: Party = None,
                 format: Fmt = "json") -> Response:
        """Customer invoices (status: open, partially_paid, paid)."""
        return doc_listing(grant, "invoice", status, customer, format)

    def receipt_details(items: list[dict[str, Any]]) -> None:
        found = {}
        for (payload,) in rows("SELECT payload FROM events WHERE realm = 'erp' AND "
                               "type = 'receipt_recorded'"):
            p = json.loads(payload)
            found[p["receipt_id"]] = p
        for item in items:
            p = found.get(item["id"], {})
            item.update(payer=p.get("payer", ""), method=p.get("method", ""),
                        bank_account=p.get("bank_account_id"))

    @app.get("/v1/receipts", tags=["receivables"], responses=ERRORS)
    def receipts(grant: Auth, unapplied: Unapplied = False, customer: Party = None,
                 status: Status = None, format: Fmt = "json") -> Response:
        """Cash receipts with payer and what is left unapplied (status: unapplied,
        partially_applied, applied)."""
        def extra(items: list[dict[str, Any]]) -> None:
            if unapplied:
                items[:] = [i for i in items if i["open_amount"] not in ("0.00", None)]
            receipt_details(items)
        return doc_listing(grant, "receipt", status, customer, format, extra)

    @app.get("/v1/credit-memos", tags=["receivables"], responses=ERRORS)
    def credit_memos(grant: Auth, customer: Party = None, format: Fmt = "json") -> Response:
        """Credit memos issued against invoices."""
        return doc_listing(grant, "credit_memo", None, customer, format)

    @app.get("/v1/bills", tags=["payables"], responses=ERRORS)
    def bills(grant: Auth, status: Status = None, vendor: Party = None,
              format: Fmt = "json") -> Response:
        """Vendor bills (status: entered, approved, partially_paid, paid)."""
        return doc_listing(grant, "bill", status, vendor, format)

    @app.get("/v1/vendor-credits", tags=["payables"], responses=ERRORS)
    def vendor_credits(grant: Auth, vendor: Party = None, status: Status = None,
                       format: Fmt = "json") -> Response:
        """Vendor credit notes and what is left of each."""
        return doc_listing(grant, "vendor_credit", status, vendor, format)

    @app.get("/v1/payments", tags=["payables"], responses=ERRORS)
    def payments(grant: Auth, vendor: Party = None, format: Fmt = "json") -> Response:
        """Payments made to vendors (status paid, or cleared once matched to the bank)."""
        return doc_listing(grant, "payment", None, vendor, format)

    @app.get("/v1/journal-entries", tags=["general ledger"], responses=ERRORS)
    def journal_entries(grant: Auth, format: Fmt = "json") -> Response:
        """Journal entries (manual, opening balances and reversals)."""
        return doc_listing(grant, "journal", None, None, format)

    @app.get("/v1/documents", tags=["documents"], responses=ERRORS)
    def documents(grant: Auth, kind: DocKind | None = None, status: Status = None,
                  party: Party = None, format: Fmt = "json") -> Response:
        """Documents of any kind, filtered by kind, status and party."""
        with books(grant):
            items = [_doc_row(d, generic=True)
                     for d in queries.documents(store, kind, status, party)]
        return _listing(items, format, _doc_columns(None))

    @app.get("/v1/documents/{kind}/{doc_id:path}", tags=["documents"], responses=ERRORS)
    def document(grant: Auth, kind: DocKind, doc_id: Id, format: Fmt = "json") -> Response:
        """One document: its state, what it was created with, and the history of its
        states (each with the event that changed it)."""
        with books(grant):
            d = queries.document(store, kind, doc_id)
            if d is None:
                raise ApiError(404, f"unknown_{kind}", f"no {kind.replace('_', ' ')} "
                               f"{doc_id!r} in the books", "doc_id")
            row = _doc_row(d)
            history = [
                {"position": p, "date": day, "event": t, "status": s,
                 "open_amount": _money(o), "party": party}
                for p, day, t, s, o, party in rows(
                    "SELECT h.position, h.entry_date, e.type, h.status, h.open_amount, h.party "
                    "FROM doc_history h JOIN events e ON e.position = h.position "
                    "AND e.realm = 'erp' WHERE h.kind = ? AND h.doc_id = ? ORDER BY h.position",
                    [kind, doc_id])]
            details: dict[str, Any] = {}
            tables: dict[str, list[Any]] = {}
            if history:
                first = rows("SELECT type, payload FROM events WHERE realm = 'erp' AND "
                             "position = ?", [history[0]["position"]])
                if first:
                    payload = _convert(json.loads(first[0][1]))
                    payload.pop("type", None)
                    details = {"event": first[0][0]}
                    for key, value in payload.items():
                        if isinstance(value, list) and value and isinstance(value[0], dict):
                            tables[key] = value  # lines, applications, targets: shown apart
                        else:
                            details[key] = value
            if kind == "statement_line":
                line = rows("SELECT matched_to FROM statement_lines WHERE line_id = ?",
                            [doc_id])
                row["matched_to"] = _targets(line[0][0]) if line else []
        row["details"] = details
        row.update(tables)
        row["history"] = history
        return _single(row, format, _doc_row(d))

    # --- subledgers and reports -----------------------------------------------------

    @app.get("/v1/open-items/{subledger:path}", tags=["reports"], responses=ERRORS)
    def open_items(grant: Auth, subledger: Subledger, as_of: AsOf = None,
                   party: Party = None, format: Fmt = "json") -> Response:
        """Documents with an open balance in a subledger: ``ar`` (invoices), ``ap`` (bills
        and vendor credits) or ``unapplied_cash`` (receipts not fully applied)."""
        day = as_of or grant.business_date
        with books(grant):
            items = _items(queries.open_items(store, subledger, as_of=day, party=party))
        return _listing(items, format, ITEM_COLUMNS, ledger=subledger, as_of=day.isoformat())

    @app.get("/v1/reports/aging", tags=["reports"], responses=ERRORS)
    def aging(grant: Auth, ledger_name: AgingLedger = "ar", as_of: AsOf = None,
              format: Fmt = "json") -> Response:
        """Open balances per party in buckets of days past due."""
        day = as_of or grant.business_date
        with books(grant):
            found = queries.aging(store, ledger_name, as_of=day)
        items = [{"party": r.party, **{b: _money(v) for b, v in zip(queries.AGING_BUCKETS,
                                                                    r.buckets, strict=True)},
                  "total": _money(r.total)} for r in found]
        totals = [sum(r.buckets[i] for r in found) for i in range(len(queries.AGING_BUCKETS))]
        return _listing(items, format, ["party", *queries.AGING_BUCKETS, "total"],
                        ledger=ledger_name, as_of=day.isoformat(),
                        totals={**{b: _money(v) for b, v in zip(queries.AGING_BUCKETS, totals,
                                                                strict=True)},
                                "total": _money(sum(totals))})

    @app.get("/v1/reports/trial-balance", tags=["reports"], responses=ERRORS)
    def trial_balance(grant: Auth, as_of: AsOf = None, format: Fmt = "json") -> Response:
        """Every account's debit or credit balance."""
        day = as_of or grant.business_date
        with books(grant):
            found = queries.trial_balance(store, as_of=day)
        items = [{"account": r.account, "name": r.name, "type": r.account_type,
                  "debit": _money(r.debit), "credit": _money(r.credit)} for r in found]
        return _listing(items, format, ["account", "name", "type", "debit", "credit"],
                        as_of=day.isoformat(), totals={"debit": _money(sum(r.debit for r in found)),
                                "credit": _money(sum(r.credit for r in found))})

    @app.get("/v1/reports/control-ties", tags=["reports"], responses=ERRORS)
    def control_ties(grant: Auth, as_of: AsOf = None, format: Fmt = "json") -> Response:
        """Each control account's GL balance against its subledger total."""
        day = as_of or grant.business_date
        with books(grant):
            found = queries.control_ties(store, as_of=day)
        items = [{"account": t.account, "name": t.name, "control": t.control,
                  "gl_balance": _money(t.gl_balance), "subledger": _money(t.subledger_total),
                  "difference": _money(t.difference)} for t in found]
        return _listing(items, format, ["account", "name", "control", "gl_balance",
                                        "subledger", "difference"], as_of=day.isoformat())

    @app.get("/v1/gl/{account:path}", tags=["general ledger"], responses=ERRORS)
    def gl_detail(grant: Auth, account: AccountCode, as_of: AsOf = None, since: Since = None,
                  format: Fmt = "json") -> Response:
        """The GL lines of one account with a running balance (debit positive)."""
        day = as_of or grant.business_date
        with books(grant):
            chart = queries.chart(store)
            if account not in chart:
                raise ApiError(404, "unknown_account", f"no account {account!r}", "account")
            found = rows(
                "SELECT g.position, g.entry_date, g.doc_id, g.party, g.amount, e.type "
                "FROM gl_lines g JOIN events e ON e.position = g.position AND e.realm = 'erp' "
                "WHERE g.account = ? AND g.entry_date <= ? ORDER BY g.entry_date, g.position, "
                "g.seq", [account, day.isoformat()])
        balance, items, opening = 0, [], 0
        for position, entry_date, doc_id, party, amount, type_ in found:
            balance += int(amount)
            if since is not None and entry_date < since.isoformat():
                opening = balance
                continue
            items.append({"position": position, "date": entry_date, "doc_id": doc_id,
                          "party": party, "event": type_,
                          "debit": _money(amount) if amount > 0 else None,
                          "credit": _money(-amount) if amount < 0 else None,
                          "balance": _money(balance)})
        a = chart[account]
        return _listing(items, format, ["position", "date", "doc_id", "party", "event", "debit",
                                        "credit", "balance"],
                        account=account, name=a.name, as_of=day.isoformat(),
                        opening_balance=_money(opening), closing_balance=_money(balance))

    # --- bank --------------------------------------------------------------------

    @app.get("/v1/bank/accounts", tags=["bank"], responses=ERRORS)
    def bank_accounts(grant: Auth, as_of: AsOf = None, format: Fmt = "json") -> Response:
        """The company's bank accounts with their GL balances."""
        day = as_of or grant.business_date
        with books(grant) as led:
            items = [{"id": b.bank_account_id, "gl_account": b.gl_account, "number": b.number,
                      "gl_balance": _money(queries.account_balance(store, b.gl_account,
                                                                   as_of=day))}
                     for b in sorted(led.books.bank_accounts.values(),
                                     key=lambda b: b.bank_account_id)]
        return _listing(items, format, ["id", "gl_account", "number", "gl_balance"],
                        as_of=day.isoformat())

    @app.get("/v1/bank/lines", tags=["bank"], responses=ERRORS)
    def bank_lines(grant: Auth, unmatched: Unmatched = False, bank_account: Party = None,
                   as_of: AsOf = None, format: Fmt = "json") -> Response:
        """Imported bank statement lines (amount signed: deposits positive) with the book
        documents each is matched to."""
        day = as_of or grant.business_date
        with books(grant):
            found = queries.statement_lines(store, bank_account_id=bank_account,
                                            unmatched=unmatched, as_of=day)
        items = [{"line_id": x["line_id"], "bank_account": x["bank_account_id"],
                  "date": x["entry_date"], "amount": _money(x["amount"]),
                  "description": x["description"], "reference": x["reference"],
                  "counterparty": x["counterparty"], "bank_ref": x["bank_ref"],
                  "status": x["status"], "matched_to": _targets(x["matched_to"])}
                 for x in found]
        if format == "csv":
            for i in items:
                i["matched_to"] = ";".join(f"{t['kind']}:{t['doc_id']}:{t['amount']}"
                                           for t in i["matched_to"])
        return _listing(items, format, ["line_id", "bank_account", "date", "amount",
                                        "description", "reference", "counterparty", "bank_ref",
                                        "status", "matched_to"], as_of=day.isoformat())

    # --- audit -------------------------------------------------------------------

    @app.get("/v1/audit", tags=["audit"], responses=ERRORS)
    def audit(grant: Auth, after: After = 0, limit: Limit = 1000,
              format: Fmt = "json") -> Response:
        """Your own audit trail: the events your commands wrote (never anyone else's)."""
        with books(grant):
            found = queries.audit_trail(store, actor=grant.actor, after=after, limit=limit)
        items = [r for r in found if r["actor"] == grant.actor
                 and not str(r["stream"]).startswith("world:")]
        return _listing(items, format, ["position", "business_date", "actor", "role", "command",
                                        "causation_id", "correlation_id", "type", "stream"],
                        actor=grant.actor)

    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _items(found: Iterable[queries.OpenItem]) -> list[dict[str, Any]]:
    return [{"kind": i.doc_kind, "id": i.doc_id, "party": i.party, "account": i.account,
             "date": i.doc_date, "due_on": i.due_on, "open_amount": _money(i.open_amount)}
            for i in found]


def _targets(matched_to: str | None) -> list[dict[str, Any]]:
    return [{"kind": k, "doc_id": d, "amount": _money(a)}
            for k, d, a in json.loads(matched_to or "[]")]


MONEY_SCHEMA = {"type": "string", "pattern": MONEY_PATTERN, "examples": ["1240.50"],
                "description": "money: a decimal string with at most two places"}


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, with money fields described as the decimal strings they are."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(title=app.title, version=app.version, description=app.description,
                         routes=app.routes)
    comps = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in (ErrorBody, CommandResult):
        found = model.model_json_schema(ref_template="#/components/schemas/{model}")
        comps.update(found.pop("$defs", {}))
        comps[model.__name__] = found
    seen: set[type[BaseModel]] = set()

    def patch(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        comp = comps.get(model.__name__) or comps.get(f"{model.__name__}-Input")
        for name, f in model.model_fields.items():
            nested = _nested_model(f.annotation)
            if nested is not None:
                patch(nested[0])
            if comp is None or not _is_money(f.annotation, f.metadata):
                continue
            prop = comp.get("properties", {}).get(name)
            if prop is None:
                continue
            if "anyOf" in prop:
                prop["anyOf"] = [dict(MONEY_SCHEMA) if a.get("type") == "integer" else a
                                 for a in prop["anyOf"]]
            else:
                prop.pop("type", None)
                prop.update(MONEY_SCHEMA)
            if isinstance(prop.get("default"), int) and not isinstance(prop["default"], bool):
                prop["default"] = format_cents(prop["default"])

    for cls in COMMANDS.values():
        patch(cls)
    app.openapi_schema = schema
    return schema


# --- the server ----------------------------------------------------------------------


class _Server(uvicorn.Server):
    """uvicorn with a prompt stop: a wake-up event instead of the 0.1 s poll and sleep."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        await super().startup(sockets=sockets)
        self.ready.set()

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)  # type: ignore[union-attr]

    def wake(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(wake.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()  # idle keep-alive connections close now, busy ones after
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.config.timeout_graceful_shutdown or 5)
        while (state.connections or state.tasks) and loop.time() < deadline:
            await asyncio.sleep(0.002)
        for task in list(state.tasks):
            task.cancel()
        for connection in list(state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.abort()
        for server in self.servers:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 1.0)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ApiServer:
    """Serve an app with uvicorn in a background thread, on a unix socket or loopback TCP.

    With ``uds`` the API listens on that unix socket (file mode ``socket_mode``, 0600 by
    default); without it, on ``host:port`` (loopback only; port 0 picks a free one).
    ``start()`` returns once connections are accepted; ``stop()`` waits for requests in
    flight (up to ``grace`` seconds), closes every connection and removes the socket.
    ``url`` is ``unix:///abs/path.sock`` or ``http://127.0.0.1:PORT``.
    """

    def __init__(self, app: Any, *, uds: Path | str | None = None, host: str = "127.0.0.1",
                 port: int = 0, socket_mode: int = 0o600, grace: float = 5.0) -> None:
        self.app = app
        self.uds = Path(uds).absolute() if uds is not None else None
        if self.uds is not None and max(len(os.fsencode(str(self.uds))),
                                        len(os.fsencode(str(self.uds.parent))) + 12
                                        ) > UNIX_PATH_MAX:
            raise ValueError(f"unix socket path {self.uds} is longer than {UNIX_PATH_MAX} bytes; "
                             "use a shorter directory (for example under /tmp)")
        if self.uds is None and not _loopback(host):
            raise ValueError(f"host {host!r}: the API listens on loopback addresses only")
        self.host, self.port = host, port
        self.socket_mode = socket_mode
        self.grace = grace
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """Where the API answers (``unix:///path`` or ``http://host:port``)."""
        if self.uds is not None:
            return f"unix://{self.uds}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    def _bind(self) -> socket.socket:
        if self.uds is not None:
            path = self.uds
            if path.exists() or path.is_symlink():
                if not stat.S_ISSOCK(path.lstat().st_mode):
                    raise FileExistsError(f"{path} exists and is not a socket")
                path.unlink()
            # Bind under a temporary name, set the mode, then move it into place: the socket
            # is never reachable at its path with a wider mode (and no process-wide umask).
            tmp = path.with_name(f".{secrets.token_hex(3)}.tmp")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(str(tmp))
                os.chmod(tmp, self.socket_mode)
                os.replace(tmp, path)
            except BaseException:
                sock.close()
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                raise
            return sock
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        return sock

    def start(self, timeout: float = 10.0) -> ApiServer:
        """Bind, serve in a thread, and return once connections are accepted."""
        if self.running:
            raise RuntimeError("the API server is already running")
        sock = self._bind()
        config = uvicorn.Config(self.app, log_config=None, log_level="warning",
                                access_log=False, lifespan="off", loop="asyncio", http="h11",
                                ws="none", proxy_headers=False, server_header=False,
                                timeout_graceful_shutdown=max(int(self.grace), 1),
                                timeout_keep_alive=5)
        server = _Server(config)
        self._server, self._error = server, None

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as e:  # reported by start() or stop()
                self._error = e
            finally:
                sock.close()

        self._thread = threading.Thread(target=serve, name="erp-api", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.ready.wait(0.002):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                why = repr(self._error) if self._error else f"no answer within {timeout} s"
                raise RuntimeError(f"the ERP API did not start at {self.url}: {why}")
        return self

    def stop(self) -> None:
        """Stop serving, close every connection and remove the socket file."""
        server, thread = self._server, self._thread
        if server is not None:
            server.should_exit = True
            server.wake()
        if thread is not None:
            thread.join(self.grace + 5)
        self._server = self._thread = None
        if self.uds is not None:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(self.uds.lstat().st_mode):
                    self.uds.unlink()

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
