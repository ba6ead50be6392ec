"""The ERP API: the books over HTTP for the agent of one turn.

FastAPI, served by uvicorn in a background thread on a unix socket (or loopback
TCP). Every command of ``erp.commands.COMMANDS`` is a POST route
(``/v1/commands/apply-receipt``) whose body is the command's own model; the
queries an accountant needs are GET resources, JSON by default and CSV with
``?format=csv``. The OpenAPI document is at ``/openapi.json`` (and ``/docs``).
The routes live in ``erp/api/routers/``, one module per resource.

Auth is a bearer token per turn from a ``TokenRegistry`` (``erp/api/tokens.py``): it
binds the actor, the role and the business date every command runs with. A missing,
wrong or revoked token gets 401; a command the role may not do gets 403. Errors are
JSON ``{"error": code, "message": ..., "field": ...}``; a rejected command writes
nothing (the ledger guarantees it).

Nothing here reads the world realm: the read tables and the audit view hold the
erp realm only, and the few statements of the routers that read the log say
``realm = 'erp'``. Ids in paths and filters must match a strict pattern, so a
path-traversal attempt is a 422 naming the parameter.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import secrets
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from erp.api.context import ApiContext
from erp.api.naming import is_money_annotation, nested_model
from erp.api.request_log import RequestLog, RequestLogMiddleware
from erp.api.routers import ROUTERS
from erp.api.tokens import BearerAuth, Grant, TokenRegistry
from erp.api.wire import (
    API_VERSION,
    MONEY_PATTERN,
    UNIX_PATH_MAX,
    CommandResult,
    ErrorBody,
    allow_header,
    document_answers,
    error_json,
    validation_error,
)
from erp.commands import COMMANDS
from erp.errors import ApiError, StoreBusy
from erp.ledger import Ledger
from erp.money import format_cents

__all__ = ["ApiServer", "Grant", "RequestLog", "TokenRegistry", "create_app"]

DESCRIPTION = """\
The company's books for the agent of one turn.

* Auth: `Authorization: Bearer $ERPSIM_TOKEN` on every `/v1/` request. The token
  carries the actor, the role and the business date every command runs with.
* Commands: `POST /v1/commands/<command>` with the command as a JSON body. The
  answer lists the events written. A rejected command writes nothing.
* Queries: `GET` resources, JSON by default, CSV with `?format=csv`. Reports and
  open items are as of the token's business date unless `as_of` says otherwise.
* Money: decimal strings with at most two places (`"1240.50"`), in and out.
* Errors: `{"error": code, "message": text, "field": name}` with 401 (token), 403
  (role), 404 (unknown id), 409 (conflict) or 422 (invalid or rejected).
"""


def create_app(ledger: Ledger, tokens: TokenRegistry, *,
               lock: threading.Lock | None = None,
               request_log: RequestLog | None = None) -> FastAPI:
    """The API over one ledger. All ledger access holds ``lock`` (one is made if not given).

    With ``request_log``, every request answered while the log records a turn gets one
    line in it (``erp/api/request_log.py``), refused tokens included.
    """
    lock = lock or threading.Lock()
    app = FastAPI(title="erpsim ERP API", version=API_VERSION, description=DESCRIPTION,
                  docs_url="/docs", redoc_url=None, openapi_url="/openapi.json")
    app.state.ledger = ledger
    app.state.tokens = tokens
    app.state.lock = lock
    app.state.context = ApiContext(ledger, tokens, lock)
    app.add_middleware(BearerAuth, tokens=tokens)
    if request_log is not None:  # added last: outside the token check, so 401s are recorded
        app.add_middleware(RequestLogMiddleware, log=request_log)

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_json(exc.status, exc.code, exc.message, exc.field)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_error(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return error_json(404, "not_found", f"no endpoint {request.method} "
                              f"{request.url.path}; see /openapi.json")
        if exc.status_code == 405:
            return error_json(405, "method_not_allowed", f"{request.method} is not allowed on "
                              f"{request.url.path}; see /openapi.json",
                              headers={"Allow": allow_header(app.routes, request.url.path)})
        if exc.status_code == 400:  # FastAPI could not read the body (not UTF-8, say)
            return error_json(422, "invalid_json", "the body is not JSON text in UTF-8 "
                              f"({exc.detail})")
        return error_json(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(StoreBusy)
    async def _busy(_request: Request, exc: StoreBusy) -> JSONResponse:
        return error_json(503, "store_busy", f"{exc}; try again", headers={"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def _crash(_request: Request, exc: Exception) -> JSONResponse:
        return error_json(500, "internal_error", f"the server failed: {type(exc).__name__}")

    for router in ROUTERS:
        app.include_router(router)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


MONEY_SCHEMA = {"type": "string", "pattern": MONEY_PATTERN, "examples": ["1240.50"],
                "description": "money: a decimal string with at most two places"}


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, with money fields described as the decimal strings they are."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(title=app.title, version=app.version, description=app.description,
                         routes=app.routes)
    comps = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in (ErrorBody, CommandResult):
        found = model.model_json_schema(ref_template="#/components/schemas/{model}")
        comps.update(found.pop("$defs", {}))
        comps[model.__name__] = found
    seen: set[type[BaseModel]] = set()

    def patch(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        comp = comps.get(model.__name__) or comps.get(f"{model.__name__}-Input")
        for name, f in model.model_fields.items():
            nested = nested_model(f.annotation)
            if nested is not None:
                patch(nested[0])
            if comp is None or not is_money_annotation(f.annotation, f.metadata):
                continue
            prop = comp.get("properties", {}).get(name)
            if prop is None:
                continue
            if "anyOf" in prop:
                prop["anyOf"] = [dict(MONEY_SCHEMA) if a.get("type") == "integer" else a
                                 for a in prop["anyOf"]]
            else:
                prop.pop("type", None)
                prop.update(MONEY_SCHEMA)
            if isinstance(prop.get("default"), int) and not isinstance(prop["default"], bool):
                prop["default"] = format_cents(prop["default"])

    for cls in COMMANDS.values():
        patch(cls)
    document_answers(schema)
    app.openapi_schema = schema
    return schema


# --- the server ----------------------------------------------------------------------


class _Server(uvicorn.Server):
    """uvicorn with a prompt stop: a wake-up event instead of the 0.1 s poll and sleep."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        await super().startup(sockets=sockets)
        self.ready.set()

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)  # type: ignore[union-attr]

    def wake(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(wake.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()  # idle keep-alive connections close now, busy ones after
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.config.timeout_graceful_shutdown or 5)
        while (state.connections or state.tasks) and loop.time() < deadline:
            await asyncio.sleep(0.002)
        for task in list(state.tasks):
            task.cancel()
        for connection in list(state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.abort()
        for server in self.servers:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 1.0)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ApiServer:
    """Serve an app with uvicorn in a background thread, on a unix socket or loopback TCP.

    With ``uds`` the API listens on that unix socket (file mode ``socket_mode``, 0600 by
    default); without it, on ``host:port`` (loopback only; port 0 picks a free one).
    ``start()`` returns once connections are accepted; ``stop()`` waits for requests in
    flight (up to ``grace`` seconds), closes every connection and removes the socket.
    ``url`` is ``unix:///abs/path.sock`` or ``http://127.0.0.1:PORT``.
    """

    def __init__(self, app: Any, *, uds: Path | str | None = None, host: str = "127.0.0.1",
                 port: int = 0, socket_mode: int = 0o600, grace: float = 5.0) -> None:
        self.app = app
        self.uds = Path(uds).absolute() if uds is not None else None
        if self.uds is not None and max(len(os.fsencode(str(self.uds))),
                                        len(os.fsencode(str(self.uds.parent))) + 12
                                        ) > UNIX_PATH_MAX:
            raise ValueError(f"unix socket path {self.uds} is longer than {UNIX_PATH_MAX} bytes; "
                             "use a shorter directory (for example under /tmp)")
        if self.uds is None and not _loopback(host):
            raise ValueError(f"host {host!r}: the API listens on loopback addresses only")
        self.host, self.port = host, port
        self.socket_mode = socket_mode
        self.grace = grace
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """Where the API answers (``unix:///path`` or ``http://host:port``)."""
        if self.uds is not None:
            return f"unix://{self.uds}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    def _bind(self) -> socket.socket:
        if self.uds is not None:
            path = self.uds
            if path.exists() or path.is_symlink():
                if not stat.S_ISSOCK(path.lstat().st_mode):
                    raise FileExistsError(f"{path} exists and is not a socket")
                path.unlink()
            # Bind under a temporary name, set the mode, then move it into place: the socket
            # is never reachable at its path with a wider mode (and no process-wide umask).
            tmp = path.with_name(f".{secrets.token_hex(3)}.tmp")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(str(tmp))
                os.chmod(tmp, self.socket_mode)
                os.replace(tmp, path)
            except BaseException:
                sock.close()
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                raise
            return sock
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        return sock

    def start(self, timeout: float = 10.0) -> ApiServer:
        """Bind, serve in a thread, and return once connections are accepted."""
        if self.running:
            raise RuntimeError("the API server is already running")
        sock = self._bind()
        config = uvicorn.Config(self.app, log_config=None, log_level="warning",
                                access_log=False, lifespan="off", loop="asyncio", http="h11",
                                ws="none", proxy_headers=False, server_header=False,
                                timeout_graceful_shutdown=max(int(self.grace), 1),
                                timeout_keep_alive=5)
        server = _Server(config)
        self._server, self._error = server, None

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as e:  # reported by start() or stop()
                self._error = e
            finally:
                sock.close()

        self._thread = threading.Thread(target=serve, name="erp-api", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.ready.wait(0.002):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                why = repr(self._error) if self._error else f"no answer within {timeout} s"
                raise RuntimeError(f"the ERP API did not start at {self.url}: {why}")
        return self

    def stop(self) -> None:
        """Stop serving, close every connection and remove the socket file."""
        server, thread = self._server, self._thread
        if server is not None:
            server.should_exit = True
            server.wake()
        if thread is not None:
            thread.join(self.grace + 5)
        self._server = self._thread = None
        if self.uds is not None:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(self.uds.lstat().st_mode):
                    self.uds.unlink()

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
