"""The caller's own audit trail (never anyone else's events, never the world realm)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from erp import queries
from erp.api.params import (
    ERRORS,
    After,
    Auth,
    Ctx,
    Fmt,
    Limit,
)
from erp.api.wire import (
    listing_response,
)

router = APIRouter(tags=["audit"], responses=ERRORS)


@router.get("/v1/audit", name="audit")
def _audit(ctx: Ctx, grant: Auth, after: After = 0, limit: Limit = 1000,
           format: Fmt = "json") -> Response:
    """Your own audit trail: the events your commands wrote (never anyone else's)."""
    with ctx.books(grant):
        found = queries.audit_trail(ctx.store, actor=grant.actor, after=after, limit=limit)
    items = [r for r in found if r["actor"] == grant.actor
             and not str(r["stream"]).startswith("world:")]
    return listing_response(items, format, ["position", "business_date", "actor", "role", "command",
                                            "causation_id", "correlation_id", "type", "stream"],
                            actor=grant.actor)
