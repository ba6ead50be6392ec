"""Receivables: customer invoices, cash receipts, credit memos."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from erp import queries
from erp.api.context import ApiContext
from erp.api.params import (
    ERRORS,
    Auth,
    Ctx,
    Fmt,
    Id,
    Party,
    Status,
    Unapplied,
)
from erp.api.wire import listing_response, money_text
from erp.errors import ApiError

router = APIRouter(tags=["receivables"], responses=ERRORS)


@router.get("/v1/invoices", name="invoices")
def _invoices(ctx: Ctx, grant: Auth, status: Status = None, customer: Party = None,
              format: Fmt = "json") -> Response:
    """Customer invoices (status: open, partially_paid, paid)."""
    return ctx.doc_listing(grant, "invoice", status, customer, format)


def _receipt_details(ctx: ApiContext, items: list[dict[str, Any]]) -> None:
    found = {}
    for (payload,) in ctx.rows("SELECT payload FROM events WHERE realm = 'erp' AND "
                               "type = 'receipt_recorded'"):
        p = json.loads(payload)
        found[p["receipt_id"]] = p
    for item in items:
        p = found.get(item["id"], {})
        item.update(payer=p.get("payer", ""), method=p.get("method", ""),
                    bank_account=p.get("bank_account_id"))


@router.get("/v1/receipts", name="receipts")
def _receipts(ctx: Ctx, grant: Auth, unapplied: Unapplied = False, customer: Party = None,
              status: Status = None, format: Fmt = "json") -> Response:
    """Cash receipts with payer and what is left unapplied (status: unapplied,
    partially_applied, applied)."""
    def extra(items: list[dict[str, Any]]) -> None:
        if unapplied:
            items[:] = [i for i in items if i["open_amount"] not in ("0.00", None)]
        _receipt_details(ctx, items)
    return ctx.doc_listing(grant, "receipt", status, customer, format, extra)


@router.get("/v1/credit-memos", name="credit_memos")
def _credit_memos(ctx: Ctx, grant: Auth, customer: Party = None, format: Fmt = "json") -> Response:
    """Credit memos issued against invoices."""
    return ctx.doc_listing(grant, "credit_memo", None, customer, format)


@router.get("/v1/receipts/{receipt_id}/applications", name="receipt_applications")
def _receipt_applications(ctx: Ctx, grant: Auth, receipt_id: Id,
                          format: Fmt = "json") -> Response:
    """What a receipt was applied to: each application and each reversal of one, in the
    order the books recorded them (amount: what it moved; a reversal gives it back)."""
    with ctx.books(grant):
        if queries.document(ctx.store, "receipt", receipt_id) is None:
            raise ApiError(404, "unknown_receipt", f"no receipt {receipt_id!r} in the books",
                           "receipt_id")
        items = [{"position": e.position, "date": e.data["entry_date"], "event": e.type,
                  "invoice_id": e.data["invoice_id"], "amount": money_text(e.data["amount"])}
                 for e in ctx.store.read(stream=f"receipt:{receipt_id}", realm="erp",
                                         types=["receipt_applied", "application_reversed"])]
    return listing_response(items, format, ["position", "date", "event", "invoice_id",
                                            "amount"], receipt=receipt_id)


# --- collections: dunning letters, disputes, promises to pay, credit holds ---------


@router.get("/v1/dunning-letters", name="dunning_letters")
def _dunning_letters(ctx: Ctx, grant: Auth, status: Status = None, customer: Party = None,
                     format: Fmt = "json") -> Response:
    """Dunning letters sent (status level_1, level_2, level_3; reference: the invoice)."""
    return ctx.doc_listing(grant, "dunning_letter", status, customer, format)


@router.get("/v1/disputes", name="disputes")
def _disputes(ctx: Ctx, grant: Auth, status: Status = None, customer: Party = None,
              format: Fmt = "json") -> Response:
    """Customers' disputes of invoices (status open, credited, rejected)."""
    return ctx.doc_listing(grant, "dispute", status, customer, format)


@router.get("/v1/promises", name="promises")
def _promises(ctx: Ctx, grant: Auth, customer: Party = None, format: Fmt = "json") -> Response:
    """Promises to pay (due_on: the date promised; reference: the invoice)."""
    return ctx.doc_listing(grant, "promise", None, customer, format)


@router.get("/v1/credit-holds", name="credit_holds")
def _credit_holds(ctx: Ctx, grant: Auth, status: Status = None, customer: Party = None,
                  format: Fmt = "json") -> Response:
    """Customers' credit holds (status held, released; total: the limit while held)."""
    return ctx.doc_listing(grant, "credit_hold", status, customer, format)
