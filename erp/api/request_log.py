"""The request log of a turn: one JSON line per request the API answered.

The runner owns where it goes: it gives the app a :class:`RequestLog` (``create_app(...,
request_log=log)``) and, for each turn, ``log.begin(path)`` before the agent starts and
``log.end()`` after it stopped. Every request answered in between gets one line::

    {"time": "2026-03-02T10:00:01.234Z", "duration_ms": 3.1, "method": "POST",
     "path": "/v1/commands/apply-receipt", "route": "/v1/commands/apply-receipt",
     "command": "ApplyReceipt", "status": 200, "error": null, "message": null,
     "field": null, "events": [812, 813], "position": 813}

``route`` is the route's template (``/v1/invoices/{invoice_id}``; ``null`` when no route
matched), ``command`` the command's name for a command route, ``error``/``message``/
``field`` the refusal of an error answer (any status >= 400, a 401 included), ``events``
the positions of the events a command wrote (``[]`` for every other request) and
``position`` the log's head after it. The wall-clock ``time`` is only in this file: it
never enters the event log or its hash.

The log also keeps the entries of the current turn in memory (``entries()``), so the
runner can count commands and refusals without reading the file back. Writing is
line-buffered and flushed per request: a turn killed mid-request loses at most that line.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from pathlib import Path
from typing import IO, Any

from erp.api.routers.commands import COMMAND_PATHS

__all__ = ["RequestLog", "RequestLogMiddleware"]

ERROR_BODY_MAX = 16_384
"""Bytes of an error answer's body read for its code and message (errors are small)."""


class RequestLog:
    """Where a turn's API requests are recorded (thread-safe; one turn at a time)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._in_flight = 0
        self._file: IO[str] | None = None
        self._path: Path | None = None
        self._entries: list[dict[str, Any]] = []

    @property
    def path(self) -> Path | None:
        """The current turn's file, or None between turns."""
        return self._path

    def begin(self, path: Path) -> None:
        """Start recording into ``path`` (created or truncated; its folder is made)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            if self._file is not None:
                self._file.close()
            self._file = path.open("w", encoding="utf-8", buffering=1)
            self._path = path
            self._entries = []

    def end(self, wait_s: float = 2.0) -> list[dict[str, Any]]:
        """Stop recording and return the turn's entries.

        Requests still being answered get up to ``wait_s`` seconds to be recorded (a
        command that wrote events is never left out because its answer was slow to go);
        requests after that are not recorded.
        """
        with self._lock:
            self._lock.wait_for(lambda: self._in_flight == 0, timeout=wait_s)
            if self._file is not None:
                self._file.close()
            self._file, self._path = None, None
            entries, self._entries = self._entries, []
            return entries

    def entries(self) -> list[dict[str, Any]]:
        """The entries recorded so far in the current turn."""
        with self._lock:
            return list(self._entries)

    def started(self) -> None:
        """A request is being answered (``end`` waits for it to be written)."""
        with self._lock:
            self._in_flight += 1

    def write(self, entry: dict[str, Any]) -> None:
        """Record one answered request (dropped when no turn is being recorded)."""
        with self._lock:
            if self._file is not None:
                self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")
                self._entries.append(entry)

    def finished(self) -> None:
        """The request that ``started`` is recorded (or dropped)."""
        with self._lock:
            self._in_flight -= 1
            self._lock.notify_all()


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RequestLogMiddleware:
    """ASGI middleware: one :class:`RequestLog` entry per HTTP request answered.

    It sits outside the bearer-token check, so a refused token is recorded too. The
    command route fills in ``command``, ``events`` and ``position`` through the dict it
    finds in ``scope["erpsim.request"]``.
    """

    def __init__(self, app: Any, log: RequestLog) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Pass the request on, logging it when it is HTTP and a log file is set."""
        if scope["type"] != "http" or self.log.path is None:
            await self.app(scope, receive, send)
            return
        entry: dict[str, Any] = {"time": _now(), "duration_ms": None,
                                 "method": scope.get("method"), "path": scope.get("path"),
                                 "route": None, "command": None, "status": None,
                                 "error": None, "message": None, "field": None,
                                 "events": [], "position": None}
        scope["erpsim.request"] = entry
        self.log.started()
        started = time.perf_counter()
        body: list[bytes] = []
        size = [0]

        async def recording_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
            elif message["type"] == "http.response.body" and (entry["status"] or 0) >= 400:
                chunk = message.get("body", b"")
                if size[0] < ERROR_BODY_MAX:
                    body.append(chunk[:ERROR_BODY_MAX - size[0]])
                    size[0] += len(chunk)
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            route = scope.get("route")
            entry["route"] = getattr(route, "path", None)
            if entry["method"] == "POST":
                entry["command"] = COMMAND_PATHS.get(entry["route"] or "")
            entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
            if body:
                _refusal(entry, b"".join(body))
            if entry["status"] is None:
                entry["status"] = 500  # the app failed before it answered
            try:
                self.log.write(entry)
            finally:
                self.log.finished()


def _refusal(entry: dict[str, Any], raw: bytes) -> None:
    """The API's error body (``{"error", "message", "field"}``) into the entry."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        entry["message"] = raw.decode("utf-8", "replace")[:500]
        return
    if isinstance(data, dict):
        for key in ("error", "message", "field"):
            value = data.get(key)
            entry[key] = value if value is None or isinstance(value, str) else str(value)
