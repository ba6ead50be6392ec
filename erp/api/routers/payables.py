"""Payables: vendor bills, vendor credits, payments."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from erp.api.params import (
    ERRORS,
    Auth,
    Ctx,
    Fmt,
    Party,
    Status,
)

router = APIRouter(tags=["payables"], responses=ERRORS)


@router.get("/v1/bills", name="bills")
def _bills(ctx: Ctx, grant: Auth, status: Status = None, vendor: Party = None,
           format: Fmt = "json") -> Response:
    """Vendor bills (status: entered, approved, partially_paid, paid)."""
    return ctx.doc_listing(grant, "bill", status, vendor, format)


@router.get("/v1/vendor-credits", name="vendor_credits")
def _vendor_credits(ctx: Ctx, grant: Auth, vendor: Party = None, status: Status = None,
                    format: Fmt = "json") -> Response:
    """Vendor credit notes and what is left of each."""
    return ctx.doc_listing(grant, "vendor_credit", status, vendor, format)


@router.get("/v1/payments", name="payments")
def _payments(ctx: Ctx, grant: Auth, vendor: Party = None, format: Fmt = "json") -> Response:
    """Payments made to vendors (status paid, or cleared once matched to the bank)."""
    return ctx.doc_listing(grant, "payment", None, vendor, format)
