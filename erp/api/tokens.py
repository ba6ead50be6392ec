"""Bearer tokens of the running turns, and the middleware that checks them.

A token binds the actor, the role, the business date (and sim time) every request
of a turn runs with. Every ``/v1/`` request needs a live one: a missing, wrong or
revoked token gets 401 before the body is read.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPBearer

from erp.api.wire import error_json
from erp.errors import ApiError
from erp.events import Role
from erp.ledger import ROLES, is_role


@dataclass(frozen=True, slots=True)
class Grant:
    """What a token stands for: who acts, in which role, on which business date."""

    token: str
    actor: str
    role: Role
    business_date: date
    sim_time: float | None = None
    correlation_id: str | None = None


class TokenRegistry:
    """Bearer tokens of the running turns (thread-safe)."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}
        self._lock = threading.Lock()

    def issue(self, actor: str, role: str, business_date: date, sim_time: float | None = None,
              *, correlation_id: str | None = None) -> str:
        """A new token bound to the actor, role and business date of a turn."""
        if not is_role(role):
            raise ValueError(f"role {role!r}: expected one of {', '.join(ROLES)}")
        if not actor:
            raise ValueError("a token needs an actor")
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._grants[token] = Grant(token, actor, role, business_date, sim_time,
                                        correlation_id)
        return token

    def lookup(self, token: str | None) -> Grant | None:
        """The grant of a live token, or None."""
        if not token:
            return None
        with self._lock:
            return self._grants.get(token)

    def revoke(self, token: str) -> bool:
        """End a token; whether it was live."""
        with self._lock:
            return self._grants.pop(token, None) is not None

    def revoke_all(self) -> int:
        """End every token; how many were live."""
        with self._lock:
            n = len(self._grants)
            self._grants.clear()
            return n

    def __len__(self) -> int:
        with self._lock:
            return len(self._grants)


class BearerAuth:
    """ASGI middleware: every ``/v1/`` request needs a live bearer token."""

    def __init__(self, app: Any, tokens: TokenRegistry) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Pass the request on; a ``/v1/`` request without a live bearer token gets a 401."""
        if scope["type"] == "http" and scope["path"].startswith("/v1/"):
            token = None
            for key, value in scope.get("headers", ()):
                if key == b"authorization":
                    scheme, _, rest = value.decode("latin-1").partition(" ")
                    if scheme.lower() == "bearer":
                        token = rest.strip()
                    break
            grant = self.tokens.lookup(token)
            if grant is None:
                why = ("no bearer token (send 'Authorization: Bearer $ERPSIM_TOKEN')"
                       if token is None else "the token is wrong, expired or revoked")
                response = error_json(401, "unauthorized", why, None,
                                      {"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
            scope["erpsim.grant"] = grant
        await self.app(scope, receive, send)


bearer_scheme = HTTPBearer(auto_error=False, description="the turn's token (ERPSIM_TOKEN)")


def current_grant(request: Request,
                  _credentials: Annotated[Any, Depends(bearer_scheme)]) -> Grant:
    """The grant of the request's token (a FastAPI dependency; the middleware set it)."""
    grant: Grant | None = request.scope.get("erpsim.grant")
    if grant is None:  # the middleware answers first; this is a second line
        raise ApiError(401, "unauthorized", "no valid bearer token")
    return grant
