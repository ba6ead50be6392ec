"""What crosses the wire: error bodies, money in request bodies, rows as JSON or CSV.

Shared by the app (``erp/api/server.py``) and its routers. Money leaves as decimal
strings (``"1240.50"``) and must arrive as decimal strings: a JSON number in a money
field is refused (it could mean units or cents).
"""

from __future__ import annotations

import csv
import io
import json
import re
import types
import typing
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Annotated, Any, Literal

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.routing import Match

from erp import queries
from erp.api.naming import (
    MONEY_KEYS,
    PARTY_NAME,
    REFERENCE_NAME,
    is_money_annotation,
    nested_model,
)
from erp.errors import ApiError
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
             "period", "return", "accrual", "accrual_run", "prepaid", "fixed_asset",
             "purchase_order", "goods_receipt", "bill_hold",
             "payroll", "tax_return", "tax_payment",
             "transfer_out", "transfer_in", "card_charge", "bank_error",
             "dunning_letter", "dispute", "promise", "credit_hold")
DocKind = Literal["invoice", "receipt", "credit_memo", "refund", "bill", "vendor_credit",
                  "payment", "payment_run", "statement_line", "fee", "interest", "journal",
                  "bank_change", "period", "return", "accrual", "accrual_run", "prepaid",
                  "fixed_asset", "purchase_order", "goods_receipt", "bill_hold",
                  "payroll", "tax_return", "tax_payment",
                  "transfer_out", "transfer_in", "card_charge", "bank_error",
                  "dunning_letter", "dispute", "promise", "credit_hold"]
Format = Literal["json", "csv"]
Subledger = Literal["ar", "ap", "unapplied_cash"]

CONFLICT_CODES = frozenset({"duplicate_id", "duplicate_vendor_invoice", "not_pending",
                            "target_already_matched", "customer_already_assigned"})


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


def error_json(status: int, code: str, message: str, field: str | None = None,
               headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A JSON error answer: ``{"error", "message", "field"}`` with ``status``."""
    return JSONResponse({"error": code, "message": message, "field": field}, status_code=status,
                        headers=dict(headers or {}))


def status_for(code: str) -> int:
    """The HTTP status of a rejected command's code."""
    if code == "forbidden_for_role":
        return 403
    if code.startswith("unknown_"):
        return 404
    if code in CONFLICT_CODES or code.startswith("already_"):
        return 409
    return 422


def field_path(loc: Iterable[Any]) -> str | None:
    """A validation error's location as a field path (``lines[1].credit``), or None."""
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


def validation_error(exc: RequestValidationError) -> JSONResponse:
    """The 422 answer to an invalid body or parameter, naming the first fields at fault."""
    errors = list(exc.errors())
    if not errors:
        return error_json(422, "invalid_request", "the request is not valid")
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    where = loc[0] if loc else "body"
    if first.get("type") == "json_invalid":
        return error_json(422, "invalid_json",
                          f"the body is not valid JSON ({first.get('ctx', {}).get('error', '')}"
                          ")".replace(" ()", ""), None)
    problems = []
    for e in errors[:4]:
        f = field_path(e.get("loc", ()))
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        if e.get("type") == "missing" and f is None:
            msg = "a JSON body is required"
        elif e.get("type") == "extra_forbidden":
            msg = "unknown field (not part of this command; see /openapi.json)"
        problems.append(f"{f}: {msg}" if f else msg)
    more = f" (and {len(errors) - 4} more)" if len(errors) > 4 else ""
    code = "invalid_body" if where == "body" else "invalid_parameter"
    return error_json(422, code, "; ".join(problems) + more, field_path(loc))


# --- money in request bodies ----------------------------------------------------------


def refuse_money_numbers(body: Any, spec: Mapping[str, Any], path: str = "") -> None:
    """Raise ``ApiError`` 422 ``money_not_a_string`` for a JSON number in a money field."""
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
                refuse_money_numbers(item, sub[0], f"{where}[{i}]")
        else:
            refuse_money_numbers(value, sub[0], where)


# --- rows -----------------------------------------------------------------------------


def money_text(value: Any) -> Any:
    """Cents as a decimal string (``"1240.50"``); None stays None."""
    return format_cents(int(value)) if value is not None else None


def render_payload(value: Any, key: str = "") -> Any:
    """A payload with cent integers under money keys rendered as decimal strings."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("bank", "new_bank") and isinstance(v, dict):
                out[k] = mask_bank(v)
            else:
                out[k] = render_payload(v, k)
        return out
    if isinstance(value, list):
        return [render_payload(v, key) for v in value]
    if key in MONEY_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return format_cents(value)
    return value


def mask_bank(bank: Mapping[str, Any] | None) -> str | None:
    """Bank details with the account number masked to its last four digits."""
    if not bank:
        return None
    number = str(bank.get("account_number", ""))
    return f"{bank.get('account_name', '')} {bank.get('routing', '')}/****{number[-4:]}"


def doc_row(d: Mapping[str, Any], generic: bool = False) -> dict[str, Any]:
    """A document row as the API shows it (party and reference named by kind)."""
    kind = d["kind"]
    party = "party" if generic else PARTY_NAME.get(kind, "party")
    reference = "reference" if generic else REFERENCE_NAME.get(kind, "reference")
    row: dict[str, Any] = {"kind": kind, "id": d["doc_id"], party: d["party"],
                           "date": d["doc_date"], "due_on": d["due_on"],
                           "total": money_text(d["total"]),
                           "open_amount": money_text(d["open_amount"]),
                           "status": d["status"], reference: d["reference"],
                           "account": d["account"]}
    if kind == "period" and not generic:
        row = {"kind": kind, "id": d["doc_id"], "start": d["doc_date"], "end": d["due_on"],
               "status": d["status"]}
    return row


def doc_columns(kind: str | None) -> list[str]:
    """The CSV columns of a document listing of ``kind`` (all kinds: None)."""
    blank = {"kind": kind or "", "doc_id": None, "party": None, "doc_date": None, "due_on": None,
             "total": None, "open_amount": None, "status": None, "reference": None,
             "account": None}
    return list(doc_row(blank, generic=kind is None))


ITEM_COLUMNS = ["kind", "id", "party", "account", "date", "due_on", "open_amount"]


def csv_text(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """Rows as CSV: ``columns`` first, then any other keys in the order met."""
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


def listing_response(rows: list[dict[str, Any]], fmt: str, columns: list[str] | None = None,
                     **meta: Any) -> Response:
    """A list of rows: ``{..meta, count, items}`` as JSON, or CSV."""
    if fmt == "csv":
        return Response(csv_text(rows, columns), media_type="text/csv")
    return JSONResponse(jsonable({**meta, "count": len(rows), "items": rows}))


def single_response(row: dict[str, Any], fmt: str,
                    csv_row: dict[str, Any] | None = None) -> Response:
    """One row as JSON, or as a one-row CSV (``csv_row``, else its scalar fields)."""
    if fmt == "csv":
        flat = csv_row if csv_row is not None else {
            k: v for k, v in row.items() if not isinstance(v, list)}
        return Response(csv_text([flat]), media_type="text/csv")
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


def open_item_rows(found: Iterable[queries.OpenItem]) -> list[dict[str, Any]]:
    """Open items as API rows."""
    return [{"kind": i.doc_kind, "id": i.doc_id, "party": i.party, "account": i.account,
             "date": i.doc_date, "due_on": i.due_on, "open_amount": money_text(i.open_amount)}
            for i in found]


def match_targets(matched_to: str | None) -> list[dict[str, Any]]:
    """A statement line's stored matches as ``[{kind, doc_id, amount}]``."""
    return [{"kind": k, "doc_id": d, "amount": money_text(a)}
            for k, d, a in json.loads(matched_to or "[]")]


# --- dates and ids on the wire ----------------------------------------------------------

DATE_TEXT = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_ID = re.compile(ID_PATTERN)
ID_EXPECTED = ("expected a letter or digit, then letters, digits and . _ : - (no '/'), at "
               "most 81 characters, like INV-0000001: an id must be readable at its URL")


def _is_date(annotation: Any) -> bool:
    if annotation is date:
        return True
    if typing.get_origin(annotation) is Annotated:
        return _is_date(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_date(a) for a in typing.get_args(annotation))
    return False


def iso_date_text(value: Any) -> Any:
    """A date as the API takes it: ``YYYY-MM-DD`` text only (no epoch number, no time)."""
    if value is None or (isinstance(value, date) and type(value) is date):
        return value
    if isinstance(value, str) and DATE_TEXT.match(value):
        return value
    raise ValueError(f"{value!r} is not a date (expected YYYY-MM-DD)")


def body_rules(model: type[BaseModel]) -> dict[str, Any]:
    """What a command body's fields must look like on the wire: ``{name: rule}``.

    A rule is ``"money"`` (a decimal string), ``"date"`` (``YYYY-MM-DD`` text), ``"id"``
    (an id field, ``*_id``: it must match ``ID_PATTERN``, or it could never be read back at
    its URL), ``"ids"`` (a list of them) or ``(nested rules, is_sequence)``.
    """
    rules: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        if is_money_annotation(f.annotation, f.metadata):
            rules[name] = "money"
        elif _is_date(f.annotation):
            rules[name] = "date"
        elif name == "id" or name.endswith("_id"):
            rules[name] = "id"
        elif name.endswith("_ids"):
            rules[name] = "ids"
        else:
            nested = nested_model(f.annotation)
            if nested is not None:
                inner = body_rules(nested[0])
                if inner:
                    rules[name] = (inner, nested[1])
    return rules


def check_body(body: Any, rules: Mapping[str, Any], path: str = "") -> None:
    """Raise ``ApiError`` 422 for a money number, a date not ``YYYY-MM-DD`` or an id that
    could not be read back (``money_not_a_string``, else ``invalid_body``)."""
    if not isinstance(body, dict):
        return
    for name, rule in rules.items():
        if name not in body or body[name] is None:
            continue
        value, where = body[name], f"{path}.{name}" if path else name
        if rule == "money":
            refuse_money_numbers({name: value}, {name: True}, path)
        elif rule == "date":
            if not (isinstance(value, str) and DATE_TEXT.match(value)):
                raise ApiError(422, "invalid_body", f"{where}: {value!r} is not a date "
                               "(expected a YYYY-MM-DD string)", where)
        elif rule in ("id", "ids"):
            for n, item in enumerate(value if rule == "ids" and isinstance(value, list)
                                     else [value]):
                if isinstance(item, str) and not _ID.match(item):
                    at = f"{where}[{n}]" if rule == "ids" else where
                    raise ApiError(422, "invalid_body", f"{at}: {item!r} cannot be an id "
                                   f"({ID_EXPECTED})", at)
        elif rule[1] and isinstance(value, list):
            for i, item in enumerate(value):
                check_body(item, rule[0], f"{where}[{i}]")
        else:
            check_body(value, rule[0], where)


def allow_header(routes: Iterable[Any], path: str) -> str:
    """The ``Allow`` header of a 405: every method some route fully matches at ``path``."""
    routes = list(routes)
    allowed = []
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        scope: dict[str, Any] = {"type": "http", "path": path, "method": method,
                                 "root_path": "", "headers": [], "query_string": b""}
        if any(route.matches(scope)[0] is Match.FULL for route in routes):
            allowed.append(method)
    return ", ".join(allowed)


ANSWER_TYPES = {
    "application/json": {"schema": {"type": "object", "description":
                                    "a JSON object: one row, or {count, items, ...} for a "
                                    "listing"}},
    "text/csv": {"schema": {"type": "string", "description":
                            "CSV with a header row (with ?format=csv)"}},
}


def document_answers(schema: dict[str, Any]) -> None:
    """Say in the OpenAPI document what the GET routes answer: a JSON object, and CSV where
    the route takes ``format``; and that a body that cannot be read is a 422."""
    for operations in schema.get("paths", {}).values():
        for method, op in operations.items():
            if method != "get":
                continue
            takes_format = any(p.get("name") == "format" for p in op.get("parameters", []))
            ok = op.setdefault("responses", {}).setdefault("200", {"description": "the answer"})
            ok["content"] = {k: v for k, v in ANSWER_TYPES.items()
                             if takes_format or k == "application/json"}
