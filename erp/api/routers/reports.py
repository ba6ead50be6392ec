"""Reports: open items of a subledger, aging, trial balance, control ties."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from erp import queries
from erp.api.params import (
    ERRORS,
    AgingLedger,
    AsOf,
    Auth,
    Ctx,
    Fmt,
    Party,
)
from erp.api.wire import (
    ITEM_COLUMNS,
    Subledger,
    listing_response,
    money_text,
    open_item_rows,
)

router = APIRouter(tags=["reports"], responses=ERRORS)


@router.get("/v1/open-items/{subledger:path}", name="open_items")
def _open_items(ctx: Ctx, grant: Auth, subledger: Subledger, as_of: AsOf = None,
                party: Party = None, format: Fmt = "json") -> Response:
    """Documents with an open balance in a subledger: ``ar`` (invoices), ``ap`` (bills
    and vendor credits) or ``unapplied_cash`` (receipts not fully applied)."""
    day = as_of or grant.business_date
    with ctx.books(grant):
        items = open_item_rows(queries.open_items(ctx.store, subledger, as_of=day, party=party))
    return listing_response(items, format, ITEM_COLUMNS, ledger=subledger, as_of=day.isoformat())


@router.get("/v1/reports/aging", name="aging")
def _aging(ctx: Ctx, grant: Auth, ledger_name: AgingLedger = "ar", as_of: AsOf = None,
           format: Fmt = "json") -> Response:
    """Open balances per party in buckets of days past due."""
    day = as_of or grant.business_date
    with ctx.books(grant):
        found = queries.aging(ctx.store, ledger_name, as_of=day)
    buckets = queries.AGING_BUCKETS
    items = [{"party": r.party,
              **{b: money_text(v) for b, v in zip(buckets, r.buckets, strict=True)},
              "total": money_text(r.total)} for r in found]
    totals = [sum(r.buckets[i] for r in found) for i in range(len(buckets))]
    return listing_response(items, format, ["party", *buckets, "total"],
                            ledger=ledger_name, as_of=day.isoformat(),
                            totals={**{b: money_text(v)
                                       for b, v in zip(buckets, totals, strict=True)},
                                    "total": money_text(sum(totals))})


@router.get("/v1/reports/trial-balance", name="trial_balance")
def _trial_balance(ctx: Ctx, grant: Auth, as_of: AsOf = None, format: Fmt = "json") -> Response:
    """Every account's debit or credit balance."""
    day = as_of or grant.business_date
    with ctx.books(grant):
        found = queries.trial_balance(ctx.store, as_of=day)
    items = [{"account": r.account, "name": r.name, "type": r.account_type,
              "debit": money_text(r.debit), "credit": money_text(r.credit)} for r in found]
    return listing_response(items, format, ["account", "name", "type", "debit", "credit"],
                            as_of=day.isoformat(),
                            totals={"debit": money_text(sum(r.debit for r in found)),
                                    "credit": money_text(sum(r.credit for r in found))})


@router.get("/v1/reports/control-ties", name="control_ties")
def _control_ties(ctx: Ctx, grant: Auth, as_of: AsOf = None, format: Fmt = "json") -> Response:
    """Each control account's GL balance against its subledger total."""
    day = as_of or grant.business_date
    with ctx.books(grant):
        found = queries.control_ties(ctx.store, as_of=day)
    items = [{"account": t.account, "name": t.name, "control": t.control,
              "gl_balance": money_text(t.gl_balance), "subledger": money_text(t.subledger_total),
              "difference": money_text(t.difference)} for t in found]
    return listing_response(items, format, ["account", "name", "control", "gl_balance",
                                            "subledger", "difference"], as_of=day.isoformat())
