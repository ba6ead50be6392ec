"""The scripted model server with faults a real campaign meets (tests only; loopback).

:class:`FaultServer` is a :class:`~tests.agents.model_server.ModelServer` whose model
requests (``POST .../messages`` for Claude, ``POST .../responses`` for Codex) can be
answered with a :class:`Fault` instead of the script: an HTTP error status with the
provider's own error body and headers (a 429 with or without ``retry-after``, 401, 403,
400, 404), a ``200`` whose body is malformed or ends early, a stream whose connection is
dropped after a few events, or a first byte that comes late. ``count`` limits a fault to
the first N model requests (a transient fault the CLI may retry past); the others follow
the script. Every model request is recorded in :attr:`FaultServer.faulted` or served as
usual, so a test can tell how many attempts a CLI made.

    .venv/bin/python -m tests.agents.fault_server --port 8765 --fault 429

runs one by hand (the names are :data:`FAULTS`'s), for probing a CLI outside the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.agents.model_server import ModelServer, Script, _handler
from tests.agents.serve import serve_until_stopped


@dataclass(frozen=True)
class Fault:
    """How to answer a model request instead of (or on top of) the script.

    ``status``/``body``/``headers``: send these (``body`` is per API: ``anthropic`` and
    ``openai``); ``truncate_events``: send the scripted SSE answer's first N events as a
    complete ``200`` body (the stream ends early, cleanly; a JSON answer is cut in
    half); ``cut_events``: send them as
    chunks of a chunked body, then drop the connection (no last chunk); ``delay_s``: wait
    this long before the first byte; ``count``: only the first N model requests.
    """

    status: int = 200
    body: dict[str, bytes] | None = None
    ctype: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    truncate_events: int | None = None
    cut_events: int | None = None
    delay_s: float = 0.0
    count: int | None = None


def anthropic_error(kind: str, message: str) -> bytes:
    """The Messages API's error body."""
    return json.dumps({"type": "error", "error": {"type": kind, "message": message},
                       "request_id": "req_erpsim_fault"}).encode()


def openai_error(kind: str, code: str | None, message: str) -> bytes:
    """The Responses API's error body."""
    return json.dumps({"error": {"message": message, "type": kind, "param": None,
                                 "code": code}}).encode()


def error_fault(status: int, anthropic: tuple[str, str], openai: tuple[str, str | None, str],
                **kw: Any) -> Fault:
    """An HTTP error with each provider's own body."""
    return Fault(status=status, body={"anthropic": anthropic_error(*anthropic),
                                      "openai": openai_error(*openai)}, **kw)


RATE_LIMIT = ("rate_limit_error", "Number of request tokens has exceeded your per-minute "
              "rate limit (erpsim scripted 429)")
OPENAI_RATE_LIMIT = ("requests", "rate_limit_exceeded",
                     "Rate limit reached for requests (erpsim scripted 429)")

#: The faults by name (also for ``--fault`` when run by hand).
FAULTS: dict[str, Fault] = {
    "429": error_fault(429, RATE_LIMIT, OPENAI_RATE_LIMIT),
    "429-retry-after": error_fault(429, RATE_LIMIT, OPENAI_RATE_LIMIT,
                                   headers=(("retry-after", "1"),)),
    "429-retry-after-long": error_fault(429, RATE_LIMIT, OPENAI_RATE_LIMIT,
                                        headers=(("retry-after", "3600"),)),
    "401": error_fault(401, ("authentication_error", "invalid x-api-key (erpsim scripted)"),
                       ("invalid_request_error", "invalid_api_key",
                        "Incorrect API key provided: sk-erpsi***test (erpsim scripted)")),
    "403": error_fault(403, ("permission_error", "Your API key does not have permission to "
                             "use the specified resource (erpsim scripted)"),
                       ("invalid_request_error", "unsupported_country_region_territory",
                        "Forbidden for this key (erpsim scripted)")),
    "400-context": error_fault(400, ("invalid_request_error", "prompt is too long: 250123 "
                                     "tokens > 200000 maximum (erpsim scripted)"),
                               ("invalid_request_error", "context_length_exceeded",
                                "Your input exceeds the context window of this model "
                                "(erpsim scripted)")),
    "413": Fault(status=413, body={
        "anthropic": anthropic_error("request_too_large",
                                     "Request exceeds the maximum allowed number of bytes "
                                     "(erpsim scripted)"),
        "openai": openai_error("invalid_request_error", "request_too_large",
                               "Request too large (erpsim scripted)")}),
    "404-model": error_fault(404, ("not_found_error", "model: erpsim-test-model (erpsim "
                                   "scripted)"),
                             ("invalid_request_error", "model_not_found",
                              "The model `erpsim-test-model` does not exist or you do not "
                              "have access to it (erpsim scripted)")),
    "malformed": Fault(status=200, ctype="text/event-stream", body={
        "anthropic": b"event: message_start\ndata: {this is not json\n\n",
        "openai": b"event: response.created\ndata: {this is not json\n\n"}),
    "html-200": Fault(status=200, ctype="text/html", body={
        "anthropic": b"<html><body>502 Bad Gateway (erpsim scripted)</body></html>\n",
        "openai": b"<html><body>502 Bad Gateway (erpsim scripted)</body></html>\n"}),
    "truncated": Fault(truncate_events=2),
    "cut": Fault(cut_events=2),
    "slow": Fault(delay_s=600),
}


@dataclass
class Faulted:
    """One model request answered with a fault."""

    api: str
    path: str
    fault: Fault
    at: float  # time.monotonic()


class FaultServer(ModelServer):
    """A :class:`ModelServer` whose model requests get ``fault`` (see :class:`Fault`)."""

    def __init__(self, script: Script, fault: Fault | None = None, *,
                 port: int = 0) -> None:
        """Follow ``script``, answering model requests with ``fault`` (None: none)."""
        super().__init__(script)
        self.fault = fault
        self.wanted_port = port
        self.faulted: list[Faulted] = []
        self._model_requests = 0
        self._fault_lock = threading.Lock()
        self._stopping = threading.Event()

    def take_fault(self, api: str, path: str) -> Fault | None:
        """The fault for this model request, if any (and its record)."""
        with self._fault_lock:
            self._model_requests += 1
            fault = self.fault
            if fault is None or (fault.count is not None
                                 and self._model_requests > fault.count):
                return None
            if fault.body is None and fault.truncate_events is None and \
                    fault.cut_events is None and fault.delay_s == 0:
                return None
            self.faulted.append(Faulted(api, path, fault, time.monotonic()))
            return fault

    def start(self) -> FaultServer:
        """Listen and serve in a daemon thread."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.wanted_port),
                                          _fault_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        name="fault-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; a request waiting out a delay is answered at once (dropped)."""
        self._stopping.set()
        super().stop()

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` or until stopped; True when stopped."""
        return self._stopping.wait(seconds)


def _split_events(payload: bytes) -> list[bytes]:
    """An SSE body's events, each with its blank line."""
    return [e + b"\n\n" for e in payload.split(b"\n\n") if e.strip()]


def _fault_handler(server: FaultServer) -> type[BaseHTTPRequestHandler]:
    base = _handler(server)

    class FaultHandler(base):  # type: ignore[valid-type,misc]
        def _reply(self, method: str) -> None:
            route = self.path.split("?", 1)[0].rstrip("/")
            api = "anthropic" if route.endswith("/messages") else \
                "openai" if route.endswith("/responses") else None
            if method != "POST" or api is None:
                super()._reply(method)
                return
            fault = server.take_fault(api, self.path)
            if fault is None:
                super()._reply(method)
                return
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if fault.delay_s and server.wait(fault.delay_s):
                self.close_connection = True
                return  # stopped while waiting: drop the connection
            if fault.body is not None:
                self._send(fault.status, fault.ctype, fault.body[api], fault.headers)
                return
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            status, ctype, payload = server.answer(method, self.path, body)
            if fault.truncate_events is not None:
                if ctype == "text/event-stream":
                    payload = b"".join(_split_events(payload)[:fault.truncate_events])
                else:  # a whole JSON message (a non-streaming retry): its first half
                    payload = payload[:len(payload) // 2]
                self._send(status, ctype, payload, fault.headers)
            elif fault.cut_events is not None:
                self._cut(status, ctype, _split_events(payload)[:fault.cut_events])
            else:  # only late
                self._send(status, ctype, payload, fault.headers)

        def _send(self, status: int, ctype: str, payload: bytes,
                  headers: tuple[tuple[str, str], ...]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            self.wfile.write(payload)

        def _cut(self, status: int, ctype: str, events: list[bytes]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for event in events:
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                self.wfile.flush()
                time.sleep(0.05)
            self.close_connection = True  # no last chunk: the stream is cut
            with contextlib.suppress(OSError):
                self.connection.shutdown(2)

    return FaultHandler


def main(argv: list[str]) -> int:
    """Serve one fault by hand until interrupted."""
    from tests.agents.conftest import cash_script

    p = argparse.ArgumentParser(prog="python -m tests.agents.fault_server")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--fault", choices=sorted(FAULTS), default=None)
    p.add_argument("--count", type=int, default=None,
                   help="fault only the first N model requests")
    args = p.parse_args(argv)
    fault = FAULTS[args.fault] if args.fault else None
    if fault is not None and args.count is not None:
        from dataclasses import replace
        fault = replace(fault, count=args.count)
    server = FaultServer(cash_script(), fault, port=args.port).start()
    print(f"fault server ({args.fault or 'no fault'}): claude-code "
          f"ERPSIM_MODEL_BASE_URL={server.base_url}, codex "
          f"ERPSIM_MODEL_BASE_URL={server.openai_base_url}", flush=True)
    return serve_until_stopped(server)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
