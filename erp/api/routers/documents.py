"""Documents of any kind, and one document with its creating event and history."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from erp import queries
from erp.api.params import (
    ERRORS,
    Auth,
    Ctx,
    Fmt,
    Id,
    Party,
    Status,
)
from erp.api.wire import (
    DocKind,
    doc_columns,
    doc_row,
    listing_response,
    match_targets,
    money_text,
    render_payload,
    single_response,
)
from erp.errors import ApiError

router = APIRouter(tags=["documents"], responses=ERRORS)


@router.get("/v1/documents", name="documents")
def _documents(ctx: Ctx, grant: Auth, kind: DocKind | None = None, status: Status = None,
               party: Party = None, format: Fmt = "json") -> Response:
    """Documents of any kind, filtered by kind, status and party."""
    with ctx.books(grant):
        items = [doc_row(d, generic=True)
                 for d in queries.documents(ctx.store, kind, status, party)]
    return listing_response(items, format, doc_columns(None))


@router.get("/v1/documents/{kind}/{doc_id:path}", name="document")
def _document(ctx: Ctx, grant: Auth, kind: DocKind, doc_id: Id, format: Fmt = "json") -> Response:
    """One document: its state, what it was created with, and the history of its
    states (each with the event that changed it)."""
    with ctx.books(grant):
        d = queries.document(ctx.store, kind, doc_id)
        if d is None:
            raise ApiError(404, f"unknown_{kind}", f"no {kind.replace('_', ' ')} "
                           f"{doc_id!r} in the books", "doc_id")
        row = doc_row(d)
        history = [
            {"position": p, "date": day, "event": t, "status": s,
             "open_amount": money_text(o), "party": party}
            for p, day, t, s, o, party in ctx.rows(
                "SELECT h.position, h.entry_date, e.type, h.status, h.open_amount, h.party "
                "FROM doc_history h JOIN events e ON e.position = h.position "
                "AND e.realm = 'erp' WHERE h.kind = ? AND h.doc_id = ? ORDER BY h.position",
                [kind, doc_id])]
        details: dict[str, Any] = {}
        tables: dict[str, list[Any]] = {}
        if history:
            first = ctx.rows("SELECT type, payload FROM events WHERE realm = 'erp' AND "
                             "position = ?", [history[0]["position"]])
            if first:
                payload = render_payload(json.loads(first[0][1]))
                payload.pop("type", None)
                details = {"event": first[0][0]}
                for key, value in payload.items():
                    if isinstance(value, list) and value and isinstance(value[0], dict):
                        tables[key] = value  # lines, applications, targets: shown apart
                    else:
                        details[key] = value
        if kind == "statement_line":
            line = ctx.rows("SELECT matched_to FROM statement_lines WHERE line_id = ?",
                            [doc_id])
            row["matched_to"] = match_targets(line[0][0]) if line else []
    row["details"] = details
    row.update(tables)
    row["history"] = history
    return single_response(row, format, doc_row(d))
