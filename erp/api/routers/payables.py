"""Payables: vendor bills, vendor credits, payments."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from erp import queries
from erp.api.params import (
    ERRORS,
    Auth,
    Ctx,
    Fmt,
    Party,
    Status,
)
from erp.api.wire import listing_response, money_text

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


# --- purchasing: purchase orders, their lines, goods receipts, bill holds ---------------


@router.get("/v1/purchase-orders", name="purchase_orders")
def _purchase_orders(ctx: Ctx, grant: Auth, status: Status = None, vendor: Party = None,
                     format: Fmt = "json") -> Response:
    """Purchase orders (status: open, partially_received, received); open_amount is the
    value still to be received at the PO's prices."""
    return ctx.doc_listing(grant, "purchase_order", status, vendor, format)


PO_LINE_COLUMNS = ["po", "vendor", "line", "item", "description", "ordered", "unit_price",
                   "received", "billed", "to_receive", "not_invoiced", "account"]


@router.get("/v1/purchase-orders/lines", name="purchase_order_lines")
def _purchase_order_lines(ctx: Ctx, grant: Auth, po: Party = None, vendor: Party = None,
                          format: Fmt = "json") -> Response:
    """Every purchase-order line: ordered, received and billed quantities, and the value
    received and not invoiced yet (the goods-received-not-invoiced accrual, 2050)."""
    with ctx.books(grant):
        found = queries.purchase_order_lines(ctx.store, po_id=po, vendor_id=vendor)
    rows = [{"po": r.po_id, "vendor": r.vendor_id, "line": r.line, "item": r.item,
             "description": r.description, "ordered": r.ordered,
             "unit_price": money_text(r.unit_price), "received": r.received,
             "billed": r.billed, "to_receive": r.to_receive,
             "not_invoiced": money_text(r.not_invoiced), "account": r.account}
            for r in found]
    return listing_response(rows, format, PO_LINE_COLUMNS)


@router.get("/v1/goods-receipts", name="goods_receipts")
def _goods_receipts(ctx: Ctx, grant: Auth, vendor: Party = None,
                    format: Fmt = "json") -> Response:
    """Goods receipts recorded against purchase orders (the reference names the PO)."""
    return ctx.doc_listing(grant, "goods_receipt", None, vendor, format)


@router.get("/v1/bill-holds", name="bill_holds")
def _bill_holds(ctx: Ctx, grant: Auth, status: Status = None, vendor: Party = None,
                format: Fmt = "json") -> Response:
    """Bills put on hold by the three-way match (status: held, released), with why."""
    return ctx.doc_listing(grant, "bill_hold", status, vendor, format)


# --- payroll and sales tax: registers, returns, tax payments ----------------------------


@router.get("/v1/payroll-registers", name="payroll_registers")
def _payroll_registers(ctx: Ctx, grant: Auth, format: Fmt = "json") -> Response:
    """Posted payroll registers (total: gross wages; reference: the pay period)."""
    return ctx.doc_listing(grant, "payroll", None, None, format)


@router.get("/v1/tax-returns", name="tax_returns")
def _tax_returns(ctx: Ctx, grant: Auth, status: Status = None,
                 format: Fmt = "json") -> Response:
    """Filed sales-tax returns (status: filed, partially_paid, paid; open_amount: unpaid)."""
    return ctx.doc_listing(grant, "tax_return", status, None, format)


@router.get("/v1/tax-payments", name="tax_payments")
def _tax_payments(ctx: Ctx, grant: Auth, format: Fmt = "json") -> Response:
    """Sales tax paid to the authority (reference: the return paid)."""
    return ctx.doc_listing(grant, "tax_payment", None, None, format)
