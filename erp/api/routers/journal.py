"""Journal entries: manual entries, opening balances and reversals."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from erp.api.params import (
    ERRORS,
    Auth,
    Ctx,
    Fmt,
)

router = APIRouter(tags=["general ledger"], responses=ERRORS)


@router.get("/v1/journal-entries", name="journal_entries")
def _journal_entries(ctx: Ctx, grant: Auth, format: Fmt = "json") -> Response:
    """Journal entries (manual, opening balances and reversals)."""
    return ctx.doc_listing(grant, "journal", None, None, format)
