"""A scripted model server for the real agent CLIs (tests only; loopback; stdlib).

It speaks two wire protocols on one port:

- the Anthropic Messages API (``POST /v1/messages``, SSE when ``stream`` is true, plus
  ``POST /v1/messages/count_tokens``), which Claude Code uses;
- the OpenAI Responses API (``POST /v1/responses``, SSE), which Codex uses.

The model follows a :class:`Script`: each *main* request (one that offers a shell tool)
is answered with the next step, found from the conversation itself (the number of tool
calls already in the request), so a retried request gets the same answer: step ``k`` is
a call of the shell tool with ``script.commands[k]``, and once they are used up, the
final answer ``script.final``. Any other request (Claude's title, topic or quota side
requests with a small model) is a *side* request and gets a short deterministic text.

Every response carries deterministic token counts (:func:`main_tokens`,
:func:`side_tokens`: a function of the request's kind and step only) and is recorded in
:attr:`ModelServer.served` with the usage object exactly as it was sent, so a test can
compare the adapter's ``usage.json`` token for token. Requests to unknown routes are
recorded in :attr:`ModelServer.unknown` and get a 404.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Delegate:
    """A step that hands a task to a sub-agent on another model (Claude's Agent tool)."""

    prompt: str
    model: str = "haiku"


@dataclass(frozen=True)
class Script:
    """What the model does: one step per response (a shell command, or a
    :class:`Delegate`), then a final answer. ``model`` names the main model: requests
    for any other model are side requests (answered with a short text)."""

    model: str
    commands: tuple[str | Delegate, ...]
    final: str = "Done."


@dataclass(frozen=True)
class Tokens:
    """One response's token counts by class (each protocol sends the ones it has)."""

    input: int  # uncached input
    cache_read: int
    cache_write: int
    output: int  # visible output, reasoning excluded
    reasoning: int


def main_tokens(step: int) -> Tokens:
    """The token counts of the main agent's response at ``step`` (0-based)."""
    return Tokens(input=1000 + 101 * step, cache_read=4000 + 211 * step,
                  cache_write=300 + 7 * step, output=40 + 13 * step, reasoning=17 + 5 * step)


def side_tokens(step: int) -> Tokens:
    """The token counts of a side request (title, topic, quota) made at ``step``."""
    return Tokens(input=90 + step, cache_read=0, cache_write=0, output=9, reasoning=0)


@dataclass
class Served:
    """One response the server sent."""

    api: str  # "anthropic" or "openai"
    kind: str  # "main" or "side"
    model: str
    session: str  # the CLI's session (Claude) or thread (Codex) id
    step: int
    usage: dict[str, Any]  # exactly as sent on the wire
    tokens: Tokens
    reply: dict[str, Any]  # {"command": ...} or {"text": ...}


@dataclass
class _State:
    served: list[Served] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    tool_outputs: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _sse(events: list[dict[str, Any]]) -> bytes:
    """Server-sent events, each ``event: TYPE`` then its JSON data."""
    out = []
    for event in events:
        out.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
    return "".join(out).encode()


# --- Anthropic Messages API ------------------------------------------------------------

def _anthropic_usage(t: Tokens) -> dict[str, Any]:
    return {"input_tokens": t.input, "cache_creation_input_tokens": t.cache_write,
            "cache_read_input_tokens": t.cache_read, "output_tokens": t.output}


def _anthropic_tool_outputs(body: dict[str, Any]) -> list[str]:
    """The text of every tool_result block in the request's messages."""
    found = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "".join(b.get("text", "") for b in inner if isinstance(b, dict))
                found.append(str(inner))
    return found


def _anthropic_session(body: dict[str, Any]) -> str:
    try:
        return str(json.loads((body.get("metadata") or {}).get("user_id", ""))["session_id"])
    except (ValueError, KeyError, TypeError):
        return ""


def _anthropic_reply(state: _State, script: Script, body: dict[str, Any]) -> Served:
    messages = body.get("messages") or []
    step = sum(1 for m in messages if m.get("role") == "assistant")
    model = str(body.get("model", ""))
    session = _anthropic_session(body)
    if model == script.model:
        tokens = main_tokens(step)
        if step < len(script.commands):
            cmd = script.commands[step]
            reply: dict[str, Any] = {"delegate": cmd} if isinstance(cmd, Delegate) \
                else {"command": cmd}
        else:
            reply = {"text": script.final}
        outputs = _anthropic_tool_outputs(body)
        with state.lock:
            if len(outputs) > len(state.tool_outputs):
                state.tool_outputs[:] = outputs
        kind = "main"
    else:
        tokens, reply, kind = side_tokens(step), {"text": "Cash application"}, "side"
    return Served("anthropic", kind, model, session, step, _anthropic_usage(tokens), tokens,
                  reply)


def _anthropic_content(served: Served) -> list[dict[str, Any]]:
    if "delegate" in served.reply:
        task: Delegate = served.reply["delegate"]
        return [{"type": "tool_use", "id": f"toolu_{served.step:04d}", "name": "Agent",
                 "input": {"description": "a side task", "prompt": task.prompt,
                           "subagent_type": "general-purpose", "model": task.model,
                           "run_in_background": False}}]
    if "command" in served.reply:
        return [{"type": "tool_use", "id": f"toolu_{served.step:04d}", "name": "Bash",
                 "input": {"command": served.reply["command"],
                           "description": "run an erp command"}}]
    return [{"type": "text", "text": served.reply["text"]}]


def _anthropic_message(served: Served) -> dict[str, Any]:
    stop = "end_turn" if "text" in served.reply else "tool_use"
    return {"id": f"msg_{served.kind}_{served.step:04d}", "type": "message",
            "role": "assistant", "model": served.model, "content": _anthropic_content(served),
            "stop_reason": stop, "stop_sequence": None, "usage": served.usage}


def _anthropic_events(served: Served) -> list[dict[str, Any]]:
    message = _anthropic_message(served)
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**served.usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            events += [
                {"type": "content_block_start", "index": i,
                 "content_block": {**block, "input": {}}},
                {"type": "content_block_delta", "index": i,
                 "delta": {"type": "input_json_delta",
                           "partial_json": json.dumps(block["input"])}},
            ]
        else:
            events += [
                {"type": "content_block_start", "index": i,
                 "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": i,
                 "delta": {"type": "text_delta", "text": block["text"]}},
            ]
        events.append({"type": "content_block_stop", "index": i})
    events += [
        {"type": "message_delta",
         "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
         "usage": served.usage},
        {"type": "message_stop"},
    ]
    return events


# --- OpenAI Responses API --------------------------------------------------------------

_CALL_TYPES = {"function_call", "local_shell_call", "custom_tool_call"}


def _openai_usage(t: Tokens) -> dict[str, Any]:
    total_in = t.input + t.cache_read + t.cache_write
    return {"input_tokens": total_in,
            "input_tokens_details": {"cached_tokens": t.cache_read,
                                     "cache_write_tokens": t.cache_write},
            "output_tokens": t.output + t.reasoning,
            "output_tokens_details": {"reasoning_tokens": t.reasoning},
            "total_tokens": total_in + t.output + t.reasoning}


def _openai_shell_call(tools: dict[str, dict[str, Any]], command: str,
                       step: int) -> dict[str, Any]:
    """A call of whichever shell tool the CLI offers, running ``command``."""
    call_id = f"call_{step:04d}"
    if "exec_command" in tools:
        name, args = "exec_command", {"cmd": command}
    elif "shell_command" in tools:
        name, args = "shell_command", {"command": command}
    elif "shell" in tools:
        name, args = "shell", {"command": ["bash", "-c", command]}
    else:
        raise ValueError(f"no shell tool among {sorted(tools)}")
    return {"type": "function_call", "id": f"fc_{step:04d}", "call_id": call_id,
            "name": name, "arguments": json.dumps(args), "status": "completed"}


def _openai_reply(state: _State, script: Script, body: dict[str, Any]) -> Served:
    tools = {str(t.get("name") or t.get("type")): t for t in body.get("tools") or []
             if isinstance(t, dict)}
    items = body.get("input") if isinstance(body.get("input"), list) else []
    step = sum(1 for it in items if isinstance(it, dict) and it.get("type") in _CALL_TYPES)
    outputs = [str(it.get("output")) for it in items
               if isinstance(it, dict) and str(it.get("type", "")).endswith("_output")]
    model = str(body.get("model", ""))
    session = str(body.get("prompt_cache_key") or "")
    if model == script.model:
        tokens = main_tokens(step)
        if step < len(script.commands):
            cmd = script.commands[step]
            if isinstance(cmd, Delegate):
                raise ValueError("the Responses API script has no sub-agents")
            reply: dict[str, Any] = {"command": cmd, "tools": tools}
        else:
            reply = {"text": script.final}
        with state.lock:
            if len(outputs) > len(state.tool_outputs):
                state.tool_outputs[:] = outputs
        kind = "main"
    else:
        tokens, reply, kind = side_tokens(step), {"text": "Cash application"}, "side"
    return Served("openai", kind, model, session, step, _openai_usage(tokens), tokens, reply)


def _openai_events(served: Served) -> list[dict[str, Any]]:
    rid = f"resp_{served.kind}_{served.step:04d}"
    if "command" in served.reply:
        tools = served.reply.pop("tools")
        item = _openai_shell_call(tools, served.reply["command"], served.step)
    else:
        item = {"type": "message", "id": f"msg_{served.step:04d}", "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": served.reply["text"],
                             "annotations": []}]}
    base = {"id": rid, "object": "response", "model": served.model}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**base, "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {**item, "status": "in_progress"}},
    ]
    if item["type"] == "message":
        events.append({"type": "response.output_text.delta", "item_id": item["id"],
                       "output_index": 0, "content_index": 0,
                       "delta": served.reply["text"]})
    events += [
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed",
         "response": {**base, "status": "completed", "output": [item],
                      "usage": served.usage}},
    ]
    return events


# --- the HTTP server -------------------------------------------------------------------

class ModelServer:
    """The scripted model on ``127.0.0.1`` (a free port), started and stopped by the test.

    ``base_url`` is the server's root (``http://127.0.0.1:PORT``); ``anthropic_base_url``
    and ``openai_base_url`` are what each CLI is pointed at.
    """

    def __init__(self, script: Script, *, fail_status: int | None = None) -> None:
        """A server following ``script``; call :meth:`start` (or use ``with``).

        With ``fail_status`` (say 503) every model request gets that status and an
        error body instead: an endpoint that is up but failing.
        """
        self.script = script
        self.fail_status = fail_status
        self._state = _State()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # records ---------------------------------------------------------------------------
    @property
    def served(self) -> list[Served]:
        """Every response sent, in order."""
        with self._state.lock:
            return list(self._state.served)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request received: method, path and the decoded JSON body."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def unknown(self) -> list[str]:
        """``METHOD PATH`` of each request to a route the server does not know."""
        with self._state.lock:
            return list(self._state.unknown)

    @property
    def tool_outputs(self) -> list[str]:
        """The tool results of the longest main conversation seen (the CLI's outputs)."""
        with self._state.lock:
            return list(self._state.tool_outputs)

    # life ------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port it listens on."""
        assert self._httpd is not None, "not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        """The base URL for Claude Code (it appends ``/v1/messages``)."""
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        """The base URL for an OpenAI client (it appends ``/responses``)."""
        return self.base_url + "/v1"

    def start(self) -> ModelServer:
        """Listen and serve in a daemon thread."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        name="model-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (the port then refuses connections)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> ModelServer:
        """Start the server."""
        return self.start()

    def __exit__(self, *exc: object) -> None:
        """Stop the server."""
        self.stop()

    # answers ---------------------------------------------------------------------------
    def answer(self, method: str, path: str, body: Any) -> tuple[int, str, bytes]:
        """The status, content type and body for one request (and its record)."""
        route = path.split("?", 1)[0].rstrip("/")
        state = self._state
        with state.lock:
            state.requests.append({"method": method, "path": path, "body": body})
        model_route = route.endswith(("/messages", "/responses", "/count_tokens"))
        if method == "POST" and model_route and self.fail_status is not None:
            error = {"type": "error", "error": {"type": "overloaded_error",
                                                "message": "scripted failure"}}
            return self.fail_status, "application/json", json.dumps(error).encode()
        if method == "POST" and route.endswith("/messages/count_tokens"):
            return 200, "application/json", json.dumps({"input_tokens": 1000}).encode()
        if method == "POST" and route.endswith("/messages") and isinstance(body, dict):
            served = _anthropic_reply(state, self.script, body)
            self._record(served)
            if body.get("stream"):
                return 200, "text/event-stream", _sse(_anthropic_events(served))
            return 200, "application/json", json.dumps(_anthropic_message(served)).encode()
        if method == "POST" and route.endswith("/responses") and isinstance(body, dict):
            served = _openai_reply(state, self.script, body)
            self._record(served)
            return 200, "text/event-stream", _sse(_openai_events(served))
        if method == "GET" and route.endswith("/models"):
            return 200, "application/json", json.dumps({"object": "list", "data": [],
                                                        "models": []}).encode()
        with state.lock:
            state.unknown.append(f"{method} {path}")
        error = {"type": "error", "error": {"type": "not_found_error", "message": path}}
        return 404, "application/json", json.dumps(error).encode()

    def _record(self, served: Served) -> None:
        with self._state.lock:
            self._state.served.append(served)

    def iter_main(self) -> Iterator[Served]:
        """The main agent's responses, in order."""
        return (s for s in self.served if s.kind == "main")


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the records are the log."""

        def _reply(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            status, ctype, payload = server.answer(method, self.path, body)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            if ctype == "text/event-stream":
                self.send_header("Cache-Control", "no-cache")
            # one request per connection: a stopped server answers nothing more
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            """Answer a POST."""
            self._reply("POST")

        def do_GET(self) -> None:
            """Answer a GET."""
            self._reply("GET")

        def do_HEAD(self) -> None:
            """Answer a HEAD with an empty 200 (a reachability probe)."""
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler
