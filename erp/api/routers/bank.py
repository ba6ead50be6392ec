"""Bank: the company's bank accounts and the imported statement lines."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from erp import queries
from erp.api.params import (
    ERRORS,
    AsOf,
    Auth,
    Ctx,
    Fmt,
    Id,
    Party,
    Unmatched,
)
from erp.api.wire import (
    listing_response,
    match_targets,
    money_text,
    single_response,
)
from erp.errors import ApiError

router = APIRouter(tags=["bank"], responses=ERRORS)


@router.get("/v1/bank/accounts", name="bank_accounts")
def _bank_accounts(ctx: Ctx, grant: Auth, as_of: AsOf = None, format: Fmt = "json") -> Response:
    """The company's bank accounts with their GL balances."""
    day = as_of or grant.business_date
    with ctx.books(grant) as led:
        items = [{"id": b.bank_account_id, "gl_account": b.gl_account, "number": b.number,
                  "gl_balance": money_text(queries.account_balance(ctx.store, b.gl_account,
                                                                   as_of=day))}
                 for b in sorted(led.books.bank_accounts.values(),
                                 key=lambda b: b.bank_account_id)]
    return listing_response(items, format, ["id", "gl_account", "number", "gl_balance"],
                            as_of=day.isoformat())


@router.get("/v1/bank/accounts/{bank_account_id}", name="bank_account")
def _bank_account(ctx: Ctx, grant: Auth, bank_account_id: Id, as_of: AsOf = None,
                  format: Fmt = "json") -> Response:
    """One bank account as it was opened (name, number, GL account, the opening balance
    and the equity account it came from) with its GL balance."""
    day = as_of or grant.business_date
    with ctx.books(grant):
        opened = [e.data for e in ctx.store.read(stream=f"bank-account:{bank_account_id}",
                                                 realm="erp", types=["bank_account_opened"])]
        if not opened:
            raise ApiError(404, "unknown_bank_account",
                           f"no bank account {bank_account_id!r} in the books",
                           "bank_account_id")
        a = opened[0]
        row = {"id": a["bank_account_id"], "name": a["name"], "number": a["number"],
               "gl_account": a["gl_account"], "opened_on": a["entry_date"],
               "opening_balance": money_text(a["opening_balance"]),
               "equity_account": a["equity_account"],
               "gl_balance": money_text(queries.account_balance(ctx.store, a["gl_account"],
                                                                as_of=day)),
               "as_of": day.isoformat()}
    return single_response(row, format)


@router.get("/v1/bank/lines", name="bank_lines")
def _bank_lines(ctx: Ctx, grant: Auth, unmatched: Unmatched = False, bank_account: Party = None,
                as_of: AsOf = None, format: Fmt = "json") -> Response:
    """Imported bank statement lines (amount signed: deposits positive) with the book
    documents each is matched to."""
    day = as_of or grant.business_date
    with ctx.books(grant):
        found = queries.statement_lines(ctx.store, bank_account_id=bank_account,
                                        unmatched=unmatched, as_of=day)
    items = [{"line_id": x["line_id"], "bank_account": x["bank_account_id"],
              "date": x["entry_date"], "amount": money_text(x["amount"]),
              "description": x["description"], "reference": x["reference"],
              "counterparty": x["counterparty"], "bank_ref": x["bank_ref"],
              "status": x["status"], "matched_to": match_targets(x["matched_to"])}
             for x in found]
    if format == "csv":
        for i in items:
            i["matched_to"] = ";".join(f"{t['kind']}:{t['doc_id']}:{t['amount']}"
                                       for t in i["matched_to"])
    return listing_response(items, format, ["line_id", "bank_account", "date", "amount",
                                            "description", "reference", "counterparty", "bank_ref",
                                            "status", "matched_to"], as_of=day.isoformat())
