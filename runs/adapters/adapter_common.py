"""What the sample adapters share (Python 3 standard library only; imported by each
adapter from its own folder, which docker mode mounts whole at ``/adapter``).

- the adapter contract's arguments (:func:`parse_args`);
- the uniform model settings ``ERPSIM_MODEL_BASE_URL``, ``ERPSIM_MODEL_API_KEY``,
  ``ERPSIM_MODEL`` (:class:`ModelSettings`), which each adapter maps onto its CLI;
- the normalized transcript (:class:`Transcript`, one JSON object per line; the shape
  is documented in ``README.md`` beside this file);
- ``usage.json`` written atomically (:func:`write_usage`);
- the infrastructure exit (:data:`INFRA_EXIT`, :func:`infra_failure`): the model
  endpoint refused, failed or never answered, or the CLI is not there or cannot start
  (:func:`locate_cli`, :class:`CliNotStarted`), so the turn says nothing about the agent;
- running the CLI with its stdout read line by line, copied to the adapter's stdout, a
  watchdog tick when it is silent, and SIGTERM passed on (:func:`run_cli`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

#: The adapter's exit status when the model endpoint failed or the CLI is missing or
#: cannot start (BSD's EX_TEMPFAIL): an infrastructure error, never the agent's doing.
#: The cause is one stderr line.
INFRA_EXIT = 75

#: Names of variables that hold a model credential: never shown in logs.
SECRET_HINTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def parse_args(prog: str, argv: list[str]) -> argparse.Namespace:
    """The adapter contract's three arguments."""
    p = argparse.ArgumentParser(prog=prog)
    p.add_argument("--workspace", required=True, type=Path)
    p.add_argument("--prompt-file", required=True, type=Path)
    p.add_argument("--output-dir", required=True, type=Path)
    return p.parse_args(argv)


def now() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class ModelSettings:
    """The uniform endpoint settings, each falling back to the CLI's own variables.

    ``base_url``: ``ERPSIM_MODEL_BASE_URL``, else the first of ``own_url`` that is set;
    ``key_var``: the name of the variable holding the key (``ERPSIM_MODEL_API_KEY``,
    else the first of ``own_keys`` that is set), never the key itself; ``model``:
    ``ERPSIM_MODEL``, else the first of ``own_model``.
    """

    base_url: str | None
    key_var: str | None
    model: str | None

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, own_url: tuple[str, ...] = (),
                 own_keys: tuple[str, ...] = (),
                 own_model: tuple[str, ...] = ()) -> ModelSettings:
        """Read the settings from the turn's environment."""
        def first(names: tuple[str, ...]) -> str | None:
            return next((n for n in names if env.get(n)), None)

        url_var = first(("ERPSIM_MODEL_BASE_URL", *own_url))
        model_var = first(("ERPSIM_MODEL", *own_model))
        return cls(base_url=env[url_var].rstrip("/") if url_var else None,
                   key_var=first(("ERPSIM_MODEL_API_KEY", *own_keys)),
                   model=env[model_var] if model_var else None)


def endpoint_problem(base_url: str, timeout: float = 5.0, listen_s: float = 0.3) -> str | None:
    """Why the endpoint's host and port do not take a request, or None if they do.

    A TCP connection must open and then stay silent for ``listen_s`` (a server waits
    for the request). One that closes at once, or answers unasked (docker mode's model
    relay answers ``502`` when the endpoint behind it refuses), is a problem too.
    """
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"not an http(s) URL: {base_url!r}"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as e:
        return f"bad port in {base_url!r}: {e}"
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout) as conn:
            conn.settimeout(listen_s)
            try:
                unasked = conn.recv(4096)
            except TimeoutError:
                return None
            if not unasked:
                return f"{parts.hostname}:{port}: the connection was closed at once"
            lines = unasked.decode("utf-8", "replace").splitlines()
            said = " / ".join(x for x in (lines[0], lines[-1]) if x) if lines else ""
            return f"{parts.hostname}:{port}: answered before any request: {said}"
    except OSError as e:
        return f"{parts.hostname}:{port}: {e.strerror or e}"


def infra_failure(name: str, cause: str) -> int:
    """Print the one-line cause of an infrastructure failure; return :data:`INFRA_EXIT`."""
    line = " ".join(cause.split())
    print(f"{name} adapter: infrastructure error: {line}", file=sys.stderr, flush=True)
    return INFRA_EXIT


def shown_env(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    """``NAME=value`` for the set ones of ``names``, secrets masked, for the log."""
    shown = []
    for n in names:
        if n in env:
            secret = any(h in n for h in SECRET_HINTS)
            shown.append(f"{n}={'***' if secret else env[n]}")
    return " ".join(shown)


def locate_cli(name: str, var: str, env: Mapping[str, str]) -> tuple[str | None, str]:
    """The CLI to run: ``$VAR`` when set (a path, or a command name looked up on the
    environment's ``PATH``), else ``name`` on that ``PATH``. Returns ``(path, "")``, or
    ``(None, why)`` naming the variable, its value and what was expected: a turn without
    its CLI is an infrastructure error, not the agent's."""
    path = env.get("PATH", "")
    given = env.get(var, "")
    if given:
        found = given if os.sep in given else shutil.which(given, path=path)
        if found is None or not os.path.lexists(found):
            where = "" if os.sep in given else f" on PATH ({path})"
            return None, f"{var}={given}: no such file{where} (expected the `{name}` executable)"
        if os.path.isdir(found) or not os.access(found, os.X_OK):
            return None, (f"{var}={given}: not an executable file (expected the `{name}` "
                          "executable)")
        return found, ""
    found = shutil.which(name, path=path)
    if found is None:
        return None, f"no `{name}` on PATH ({path}); set {var} to its path"
    return found, ""


class CliNotStarted(Exception):
    """The CLI's process could not be started (:func:`run_cli`): the cause, in a line."""


def cli_version(exe: str, env: Mapping[str, str]) -> str | None:
    """The first line of ``EXE --version``, or None when it does not answer in 20 s."""
    try:
        done = subprocess.run([exe, "--version"], env=dict(env), capture_output=True,
                              text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


def usage_path(env: Mapping[str, str], out: Path) -> Path:
    """Where usage.json goes: ``$ERPSIM_USAGE_FILE``, else ``O/usage.json``."""
    return Path(env.get("ERPSIM_USAGE_FILE") or out / "usage.json")


def write_usage(path: Path, usage: dict[str, Any]) -> None:
    """Write usage.json atomically (the runner must never read half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(usage, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def is_count(value: object) -> bool:
    """A token count: an int, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


#: Characters a JSON string may hold raw that a reader splitting lines the way Python's
#: ``str.splitlines`` does takes for line ends (``json.dumps`` escapes the others, all
#: below U+0020): NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_line(record: Any) -> str:
    """``record`` as one JSON line, UTF-8 text kept, that no line splitter breaks: a tool's
    output or the model's text holding U+2028, U+2029 or U+0085 stays on its line
    (escaped; the JSON decodes to the same string)."""
    return json.dumps(record, ensure_ascii=False).translate(_LINE_BREAKS)


class Transcript:
    """The turn's normalized transcript: one JSON object per line, flushed as it comes.

    Written to ``$ERPSIM_TRANSCRIPT_FILE`` if set, else ``O/transcript.jsonl``. Every
    line has ``ts`` (when the adapter saw it) and ``kind`` (``message``, ``tool_call``,
    ``tool_result``, ``usage``, ``error``); the other fields depend on the kind.
    """

    def __init__(self, env: Mapping[str, str], out: Path) -> None:
        """Open (truncate) the transcript file."""
        self.path = Path(env.get("ERPSIM_TRANSCRIPT_FILE") or out / "transcript.jsonl")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = self.path.open("w", encoding="utf-8")

    def add(self, kind: str, **fields: Any) -> None:
        """Append one line (fields that are None are left out)."""
        record = {"ts": now(), "kind": kind,
                  **{k: v for k, v in fields.items() if v is not None}}
        self._fh.write(json_line(record) + "\n")
        self._fh.flush()

    def close(self) -> None:
        """Close the file."""
        self._fh.close()


@dataclass
class RunResult:
    """What :func:`run_cli` saw: the exit status and whether the watchdog stopped it."""

    code: int
    stopped: str | None  # the watchdog's reason, when it ended the CLI


def run_cli(cmd: list[str], *, cwd: Path, env: Mapping[str, str], stdin: IO[bytes] | int,
            on_line: Callable[[str], None],
            watchdog: Callable[[], str | None] | None = None,
            tick_s: float = 1.0,
            on_err_line: Callable[[str], bool] | None = None) -> RunResult:
    """Run the CLI; each stdout line is copied to our stdout and given to ``on_line``.

    With ``on_err_line``, each line of the CLI's stderr is given to it too (in the same
    thread as ``on_line`` and ``watchdog``, in the order the lines came) and copied to
    our stderr when it returns True; without, the CLI's stderr is ours.
    ``watchdog`` is called at least every ``tick_s`` seconds; when it returns a reason,
    the CLI is terminated (SIGTERM, then SIGKILL after 5 s) and the reason returned.
    A SIGTERM to the adapter (the runner's timeout) is passed on to the CLI, so the
    adapter can still write what it has. :class:`CliNotStarted` when the process cannot
    be started (its file gone or not executable, the system out of processes).
    """
    try:
        child = subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdin=stdin,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE if on_err_line else None)
    except OSError as e:
        raise CliNotStarted(f"could not start {cmd[0]}: {e.strerror or e}") from e
    assert child.stdout is not None
    lines: queue.Queue[tuple[bool, bytes | None]] = queue.Queue()  # (from stderr, line)

    def pump(stream: IO[bytes], err: bool) -> None:
        for raw in stream:
            lines.put((err, raw))
        lines.put((err, None))

    streams = [(child.stdout, False)]
    if child.stderr is not None:
        streams.append((child.stderr, True))
    for stream, err in streams:
        threading.Thread(target=pump, args=(stream, err), daemon=True).start()

    def stop(reason: str | None = None) -> None:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()

    previous = signal.signal(signal.SIGTERM, lambda *_: stop())
    stopped: str | None = None
    open_streams = len(streams)
    try:
        while open_streams:
            try:
                err, raw = lines.get(timeout=tick_s)
            except queue.Empty:
                err, raw = False, b""
            if raw is None:
                open_streams -= 1
            elif raw and err:
                assert on_err_line is not None
                if on_err_line(raw.decode("utf-8", "replace")):
                    sys.stderr.buffer.write(raw)
                    sys.stderr.buffer.flush()
            elif raw:
                sys.stdout.buffer.write(raw)
                sys.stdout.buffer.flush()
                on_line(raw.decode("utf-8", "replace"))
            if watchdog is not None and stopped is None:
                stopped = watchdog()
                if stopped is not None:
                    stop()
        code = child.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
    return RunResult(code=code, stopped=stopped)


def elapsed_since(t0: float) -> float:
    """Seconds since ``t0`` (a ``time.monotonic()`` value)."""
    return time.monotonic() - t0

