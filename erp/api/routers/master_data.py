"""Master data: the company and its policies, customers, vendors, the chart, periods."""

from __future__ import annotations

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
)
from erp.api.wire import (
    listing_response,
    mask_bank,
    money_text,
    open_item_rows,
    render_payload,
    single_response,
)
from erp.errors import ApiError
from erp.ledger import Ledger

router = APIRouter(tags=["master data"], responses=ERRORS)


@router.get("/v1/company", name="company")
def _company(ctx: Ctx, grant: Auth, format: Fmt = "json") -> Response:
    """The company: name, currency, posting accounts and the policies the books enforce."""
    with ctx.books(grant) as led:
        c = led.books.company
        if c is None:
            raise ApiError(404, "company_not_set_up", "the company is not set up")
        out = {"name": c.name, "currency": c.currency,
               "accounts": c.accounts.model_dump(),
               "policies": render_payload(led.books.policies.model_dump())}
    flat = {"name": out["name"], "currency": out["currency"],
            **{f"policy.{k}": v for k, v in out["policies"].items()}}
    return single_response(out, format, flat)


@router.get("/v1/customers", name="customers")
def _customers(ctx: Ctx, grant: Auth, format: Fmt = "json") -> Response:
    """Customers with their terms, credit limit and open receivables."""
    with ctx.books(grant) as led:
        items = [{"id": c.customer_id, "name": c.name, "terms_days": c.terms_days,
                  "credit_limit": money_text(c.credit_limit), "open_ar": money_text(c.open_ar)}
                 for c in sorted(led.books.customers.values(), key=lambda c: c.customer_id)]
    return listing_response(items, format, ["id", "name", "terms_days", "credit_limit", "open_ar"])


@router.get("/v1/customers/{customer_id:path}", name="customer")
def _customer(ctx: Ctx, grant: Auth, customer_id: Id, format: Fmt = "json") -> Response:
    """A customer with its open invoices and its unapplied receipts."""
    with ctx.books(grant) as led:
        c = led.books.customers.get(customer_id)
        if c is None:
            raise ApiError(404, "unknown_customer", f"no customer {customer_id!r}",
                           "customer_id")
        row: dict[str, Any] = {
            "id": c.customer_id, "name": c.name, "terms_days": c.terms_days,
            "credit_limit": money_text(c.credit_limit), "open_ar": money_text(c.open_ar)}
        row["open_invoices"] = open_item_rows(queries.open_items(
            ctx.store, "ar", party=customer_id, as_of=grant.business_date))
        row["unapplied_receipts"] = open_item_rows(queries.open_items(
            ctx.store, "unapplied_cash", party=customer_id, as_of=grant.business_date))
    return single_response(row, format)


def _vendor_row(v: Any, led: Ledger) -> dict[str, Any]:
    pending = sorted(r.request_id for r in led.books.bank_changes.values()
                     if r.vendor_id == v.vendor_id and r.status == "pending")
    return {"id": v.vendor_id, "name": v.name, "terms_days": v.terms_days,
            "bank": mask_bank(v.bank.model_dump() if v.bank else None),
            "pending_bank_changes": " ".join(pending)}


@router.get("/v1/vendors", name="vendors")
def _vendors(ctx: Ctx, grant: Auth, format: Fmt = "json") -> Response:
    """Vendors with their terms and approved bank details (account number masked)."""
    with ctx.books(grant) as led:
        items = [_vendor_row(v, led)
                 for v in sorted(led.books.vendors.values(), key=lambda v: v.vendor_id)]
    return listing_response(items, format, ["id", "name", "terms_days", "bank",
                                            "pending_bank_changes"])


@router.get("/v1/vendors/{vendor_id:path}", name="vendor")
def _vendor(ctx: Ctx, grant: Auth, vendor_id: Id, format: Fmt = "json") -> Response:
    """A vendor with its bank-detail change requests and its open bills."""
    with ctx.books(grant) as led:
        v = led.books.vendors.get(vendor_id)
        if v is None:
            raise ApiError(404, "unknown_vendor", f"no vendor {vendor_id!r}", "vendor_id")
        row = _vendor_row(v, led)
        row["bank_changes"] = [
            {"request_id": r.request_id, "status": r.status,
             "new_bank": mask_bank(r.new_bank.model_dump()),
             "requested_by_role": r.requested_by_role}
            for r in sorted(led.books.bank_changes.values(), key=lambda r: r.request_id)
            if r.vendor_id == vendor_id]
        row["open_bills"] = open_item_rows(queries.open_items(ctx.store, "ap", party=vendor_id,
                                                              as_of=grant.business_date))
    return single_response(row, format)


@router.get("/v1/accounts", name="accounts")
def _accounts(ctx: Ctx, grant: Auth, format: Fmt = "json") -> Response:
    """The chart of accounts."""
    with ctx.books(grant):
        items = [{"code": a.code, "name": a.name, "type": a.account_type,
                  "normal_side": a.normal_side, "control": a.control}
                 for a in sorted(queries.chart(ctx.store).values(), key=lambda a: a.code)]
    return listing_response(items, format, ["code", "name", "type", "normal_side", "control"])


@router.get("/v1/periods", name="periods")
def _periods(ctx: Ctx, grant: Auth, format: Fmt = "json") -> Response:
    """Accounting periods and whether each is open or closed."""
    with ctx.books(grant) as led:
        items = [{"period": p.period, "start": p.start.isoformat(), "end": p.end.isoformat(),
                  "status": "closed" if p.closed else "open"}
                 for p in sorted(led.books.periods.values(), key=lambda p: p.start)]
    return listing_response(items, format, ["period", "start", "end", "status"])
