"""The parameters routes declare: ids, filters, formats, the caller's grant, error answers.

Each is an ``Annotated`` type FastAPI reads, so that a pattern or a bound is written
once and every route that takes the parameter checks it the same way (an id that
does not match ``ID_PATTERN`` is a 422 naming the parameter; a date is ``YYYY-MM-DD`` text
only, never an epoch number or a date-time).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from fastapi import Depends, Query
from fastapi import Path as PathParam
from pydantic import BeforeValidator

from erp.api.context import ApiContext, api_context
from erp.api.tokens import Grant, current_grant
from erp.api.wire import ID_PATTERN, STATUS_PATTERN, Format, iso_date_text
from erp.store import MAX_POSITION

Id = Annotated[str, PathParam(pattern=ID_PATTERN, description="an id such as INV-0000001")]
Status = Annotated[str | None, Query(pattern=STATUS_PATTERN,
                                     description="a status such as open, paid, unapplied")]
AsOf = Annotated[date | None, BeforeValidator(iso_date_text),
                 Query(description="YYYY-MM-DD; default: the token's business date")]
Auth = Annotated[Grant, Depends(current_grant)]
Fmt = Annotated[Format, Query(description="json (the default) or csv")]
Unapplied = Annotated[bool, Query(description="only receipts with cash left to apply")]
Unmatched = Annotated[bool, Query(description="only statement lines not yet matched")]
Since = Annotated[date | None, BeforeValidator(iso_date_text),
                  Query(description="first date to list (earlier lines form the opening "
                                    "balance)")]
After = Annotated[int, Query(ge=0, le=MAX_POSITION,
                             description="only events after this log position")]
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

Ctx = Annotated[ApiContext, Depends(api_context)]
"""The books the app serves (see ``erp/api/context.py``)."""
