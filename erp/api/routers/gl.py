"""The general ledger: one account's lines with a running balance."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from erp import queries
from erp.api.params import (
    ERRORS,
    AccountCode,
    AsOf,
    Auth,
    Ctx,
    Fmt,
    Since,
)
from erp.api.wire import (
    listing_response,
    money_text,
)
from erp.errors import ApiError

router = APIRouter(tags=["general ledger"], responses=ERRORS)


@router.get("/v1/gl/{account:path}", name="gl_detail")
def _gl_detail(ctx: Ctx, grant: Auth, account: AccountCode, as_of: AsOf = None, since: Since = None,
               format: Fmt = "json") -> Response:
    """The GL lines of one account with a running balance (debit positive)."""
    day = as_of or grant.business_date
    with ctx.books(grant):
        chart = queries.chart(ctx.store)
        if account not in chart:
            raise ApiError(404, "unknown_account", f"no account {account!r}", "account")
        found = ctx.rows(
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
                      "debit": money_text(amount) if amount > 0 else None,
                      "credit": money_text(-amount) if amount < 0 else None,
                      "balance": money_text(balance)})
    a = chart[account]
    columns = ["position", "date", "doc_id", "party", "event", "debit", "credit", "balance"]
    return listing_response(items, format, columns, account=account, name=a.name,
                            as_of=day.isoformat(), opening_balance=money_text(opening),
                            closing_balance=money_text(balance))
