"""Commands: ``POST /v1/commands/<kebab-name>`` for every command, and their list.

The body of each route is the command's own model; the command runs with the
token's actor, role and business date, and the answer lists the events written.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from erp.api.context import ApiContext, api_context
from erp.api.naming import kebab
from erp.api.params import COMMAND_RESPONSES, ERRORS, Auth, Fmt
from erp.api.tokens import Grant, current_grant
from erp.api.wire import body_rules, check_body, listing_response, status_for
from erp.commands import COMMANDS, Command
from erp.errors import ApiError, CommandRejected, ConcurrencyConflict

router = APIRouter()

COMMAND_PATHS: dict[str, str] = {}
"""Each command route's path (``/v1/commands/apply-receipt``) -> the command's name."""


def _command_endpoint(name: str, cls: type[Command]) -> Callable[..., Any]:
    rules = body_rules(cls)

    async def money_guard(request: Request) -> None:
        """Money as decimal strings, dates as YYYY-MM-DD, ids readable at their URL."""
        if rules:
            try:
                body = await request.json()
            except ValueError:
                return  # FastAPI reports the invalid JSON
            check_body(body, rules)

    def run(body: Command, request: Request, grant: Grant, _money_ok: None,
            ctx: ApiContext) -> JSONResponse:
        ledger = ctx.ledger
        with ctx.lock:
            if ctx.tokens.lookup(grant.token) is None:
                raise ApiError(401, "unauthorized", "the token was revoked")
            try:
                written = ledger.execute(body, actor=grant.actor, role=grant.role,
                                         business_date=grant.business_date,
                                         correlation_id=grant.correlation_id,
                                         sim_time=grant.sim_time)
            except CommandRejected as e:
                raise ApiError(status_for(e.code), e.code, e.message, e.field) from None
            except ConcurrencyConflict as e:
                raise ApiError(409, "concurrency_conflict", str(e)) from None
            position = ledger.position
        recorded = request.scope.get("erpsim.request")  # the request log's entry, if any
        if recorded is not None:
            recorded["events"] = [e.position for e in written]
            recorded["position"] = position
        return JSONResponse({
            "command": name, "actor": grant.actor, "role": grant.role,
            "business_date": grant.business_date.isoformat(),
            "events": [{"position": e.position, "type": e.type, "stream": e.stream,
                        "version": e.version, "id": e.stream.partition(":")[2]}
                       for e in written],
            "position": position})

    # FastAPI reads the body's model from the signature: give each route its command's.
    run.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter("body", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=cls),
        inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=Request),
        inspect.Parameter("grant", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=Grant, default=Depends(current_grant)),
        inspect.Parameter("_money_ok", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=None, default=Depends(money_guard)),
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=ApiContext, default=Depends(api_context)),
    ])
    run.__name__ = f"command_{kebab(name).replace('-', '_')}"
    return run


for _name, _cls in COMMANDS.items():
    _doc = inspect.getdoc(_cls) or _name
    COMMAND_PATHS[f"/v1/commands/{kebab(_name)}"] = _name
    router.add_api_route(f"/v1/commands/{kebab(_name)}", _command_endpoint(_name, _cls),
                         methods=["POST"], summary=_doc.splitlines()[0],
                         description=f"`{_name}`: {_doc}\n\nRuns with the token's actor, role "
                                     "and business date. Money fields are decimal strings.",
                         tags=["commands"], response_model=None, responses=COMMAND_RESPONSES,
                         operation_id=f"command_{kebab(_name).replace('-', '_')}")


@router.get("/v1/commands", tags=["meta"], responses=ERRORS, name="list_commands")
def _list_commands(grant: Auth, format: Fmt = "json") -> Response:
    """Every command with its route and what it does."""
    items = [{"name": n, "path": f"/v1/commands/{kebab(n)}",
              "summary": (inspect.getdoc(c) or n).splitlines()[0]}
             for n, c in COMMANDS.items()]
    return listing_response(items, format, ["name", "path", "summary"])
