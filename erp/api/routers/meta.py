"""Who am I: the actor, role and business date of the caller's token."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from erp.api.params import (
    ERRORS,
    Auth,
    Fmt,
)
from erp.api.wire import (
    single_response,
)

router = APIRouter(tags=["meta"], responses=ERRORS)


@router.get("/v1/whoami", name="whoami")
def _whoami(grant: Auth, format: Fmt = "json") -> Response:
    """The actor, role and business date this token acts with."""
    return single_response({"actor": grant.actor, "role": grant.role,
                            "business_date": grant.business_date.isoformat()}, format)
