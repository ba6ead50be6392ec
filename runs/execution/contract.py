"""The adapter contract: what one agent turn is given, and what is recorded of it.

An adapter is an executable run as::

    ADAPTER --workspace W --prompt-file P --output-dir O

with the working directory at ``W``, a clean environment (``PATH``, ``LANG``, the
extras the runner gives, such as ``ERPSIM_API`` and ``ERPSIM_TOKEN``) and ``HOME`` set to
a benchmark-owned folder (``TMPDIR`` inside it). Its stdout and stderr go to
``stdout.log`` and ``stderr.log`` in the turn's log folder, which is outside the
workspace. At its timeout the adapter is killed with everything it started (its
process group in local mode, its container in docker mode).

Exit status: ``0`` completed, :data:`INFRA_EXIT` (75) the model endpoint failed or the
agent's CLI is missing or cannot start (an infrastructure error whose cause is the
adapter's last stderr line holding ``infrastructure error: CAUSE``), anything else
crashed.

Usage: an adapter that knows what the turn cost writes a JSON object to
``O/usage.json`` (the path is also in ``ERPSIM_USAGE_FILE``); see :data:`USAGE_KEYS`.
After the turn the runner moves the file to ``LOG_DIR/usage.json``, so it is never
one of the agent's outputs nor carried to a later turn, and a stale one is removed
before the turn starts. No file means unknown (``usage`` is ``None``, never zeros); a
malformed file is recorded in ``usage_error``. Its ``cli_version`` (a string), when
there, is the turn record's ``cli_version``.

Transcript: ``ERPSIM_TRANSCRIPT_FILE`` says where an adapter writes the turn's
normalized transcript (one JSON object per line): ``LOG_DIR/transcript.jsonl`` itself in
local mode; in docker mode, where the log folder is not mounted, a file in the turn's
HOME that the runner moves to ``LOG_DIR/transcript.jsonl`` after the turn. Either way
it is never one of the agent's outputs, and a stale one is removed before the turn.

:class:`TurnProcess` is the request, :class:`TurnOutcome` the record; both modes
(:mod:`runs.execution.turn` local, :mod:`runs.execution.docker_mode`) import them from
here. :class:`ValueError` is raised only by a :class:`TurnProcess` that contradicts itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Mode = Literal["local", "docker"]

DEFAULT_TIMEOUT_S = 1200.0
DEFAULT_IMAGE = "erpsim-agent:bookworm"
USAGE_FILE = "usage.json"
TRANSCRIPT_FILE = "transcript.jsonl"
STAGED_TRANSCRIPT = ".erpsim/transcript.jsonl"
"""Docker mode: where in the turn's HOME the adapter writes the transcript (the log
folder is not mounted); the runner moves it to ``LOG_DIR/transcript.jsonl``."""
USAGE_MAX_BYTES = 1_000_000
LABEL = "erpsim"
CONTAINER_FILE = ".agent.container"
"""In a docker turn's log folder while its container exists: the engine's URL and the
container's id, one a line. A runner killed outright (SIGKILL) cannot remove its
container; ``run --replace`` does, from this file
(:func:`runs.execution.docker_mode.remove_left_containers`)."""
"""Every container the runner starts carries the label ``erpsim=1``."""
INFRA_EXIT = 75
"""An adapter's exit status for "the model endpoint failed" or "the CLI is missing or
cannot start" (BSD's ``EX_TEMPFAIL``): the
turn is an infrastructure error (status ``error``), never the agent's doing. The cause
is the adapter's stderr line ``... infrastructure error: CAUSE`` (the last one)."""
INFRA_MARK = "infrastructure error:"

USAGE_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
    "cost_usd",
)
"""Numeric keys of ``usage.json`` the runner knows: each, when present, a number >= 0
(``null`` for unknown). Other keys (``model``, ``source``, ``num_turns``...) are kept as
they are. A key left out is unknown, not zero."""


MEMORY_LIMIT = r"[0-9]+[bkmgBKMG]?"
"""A docker memory limit as the engine takes it: a whole number of bytes, or of a unit
``b``, ``k``, ``m`` or ``g`` (``6g``); the whole value matches (``--memory``, a systems
file's ``memory``)."""

NETWORK_MODE = r"[A-Za-z0-9][A-Za-z0-9_.:-]*"
"""A docker network's name (``bridge``, ``host``, a user network); the whole value
matches (``--network-mode``, a systems file's ``network_mode``)."""

@dataclass(frozen=True)
class DockerOptions:
    """How a turn runs in docker mode.

    ``api_socket`` is the host path of the ERP API's unix socket; the socket file alone
    is bind-mounted at ``/run/erpsim/api.sock`` and ``ERPSIM_API`` points there.
    ``network_mode`` is used only when ``network`` is on (``host`` on an engine started
    with ``--bridge=none``, such as the one ``.ci/docker-up`` starts). Without a network,
    ``model_relay`` (on by default) makes the model endpoint named in the turn's
    environment, and nothing else, reachable (:mod:`runs.execution.model_relay`).
    """

    image: str = DEFAULT_IMAGE
    cpus: float = 2.0
    memory: str = "6g"
    network: bool = False
    network_mode: str = "bridge"
    model_relay: bool = True
    api_socket: Path | None = None
    base_url: str | None = None
    pids_limit: int | None = 4096
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.cpus <= 0:
            raise ValueError(f"docker cpus must be > 0 (got {self.cpus!r})")


@dataclass(frozen=True)
class TurnProcess:
    """One invocation of an adapter for one turn.

    ``prompt_file`` and ``output_dir`` are host paths; in docker mode they must lie in
    the workspace (the adapter sees them under ``/workspace``). ``log_dir`` receives
    ``stdout.log``, ``stderr.log``, ``usage.json`` and ``transcript.jsonl`` and must not
    lie in the workspace.
    ``home`` is the benchmark-owned HOME (created if missing; ``home_template``, when
    given, is copied into it first). ``erp_client`` is the stdlib-only ``erp`` client
    file: on PATH as ``erp`` (local: a link in ``HOME/bin``; docker:
    ``/usr/local/bin/erp``). ``env`` holds the extras (``ERPSIM_API``,
    ``ERPSIM_TOKEN``, any credential an adapter needs: nothing passes from the
    runner's own environment but ``PATH`` and ``LANG``).
    """

    adapter: Path
    workspace: Path
    prompt_file: Path
    output_dir: Path
    log_dir: Path
    home: Path
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    mode: Mode = "local"
    docker: DockerOptions = field(default_factory=DockerOptions)
    erp_client: Path | None = None
    home_template: Path | None = None
    kill_grace_s: float = 3.0

    def __post_init__(self) -> None:
        if self.mode not in ("local", "docker"):
            raise ValueError(f"mode must be 'local' or 'docker' (got {self.mode!r})")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0 (got {self.timeout_s!r})")
        bad = {k: v for k, v in self.env.items()
               if not (isinstance(k, str) and isinstance(v, str))}
        if bad:
            raise ValueError(f"env names and values must be strings (got {bad!r})")
        ws = self.workspace.resolve()
        if _within(self.log_dir.resolve(), ws):
            raise ValueError(f"log_dir {self.log_dir} is inside the workspace {self.workspace}"
                             " (the agent would see and could alter its own logs)")
        if self.mode == "docker":
            for name in ("prompt_file", "output_dir"):
                path: Path = getattr(self, name)
                if not _within(path.resolve(), ws):
                    raise ValueError(f"{name} {path} is outside the workspace {self.workspace}"
                                     " (docker mode mounts only the workspace)")

    @property
    def stdout_log(self) -> Path:
        """Where the adapter's stdout goes."""
        return self.log_dir / "stdout.log"

    @property
    def stderr_log(self) -> Path:
        """Where the adapter's stderr goes."""
        return self.log_dir / "stderr.log"


Status = Literal["completed", "crashed", "timeout", "error"]


@dataclass(frozen=True)
class TurnOutcome:
    """What one adapter invocation did.

    ``exit_code`` is ``None`` when the runner killed the adapter (timeout) or never
    started it (infrastructure error); in local mode an adapter that died of a signal
    on its own has the negative signal number, in docker mode 128 + the number.
    ``wall_s`` is the time from the start of the process (or container) to its end.
    ``notes`` are harness observations that do not change the status (leftover
    processes killed, the memory limit hit, a container that would not go away).
    ``transcript`` is ``LOG_DIR/transcript.jsonl`` when the adapter wrote one;
    ``cli_version`` the agent CLI's ``--version`` as the adapter put it in usage.json.
    """

    mode: Mode
    exit_code: int | None
    timed_out: bool
    wall_s: float
    stdout_log: Path
    stderr_log: Path
    usage: dict[str, Any] | None = None
    usage_error: str | None = None
    infrastructure_error: str | None = None
    oom_killed: bool = False
    notes: tuple[str, ...] = ()
    transcript: Path | None = None
    cli_version: str | None = None

    @property
    def status(self) -> Status:
        """``error`` (harness fault, exit 75 included), ``timeout``, ``completed`` (exit 0)
        or ``crashed``."""
        if self.infrastructure_error is not None:
            return "error"
        if self.timed_out:
            return "timeout"
        return "completed" if self.exit_code == 0 else "crashed"

    def to_json(self, relative_to: Path | None = None) -> dict[str, Any]:
        """A JSON-ready record (log paths relative to ``relative_to`` when given)."""

        def rel(p: Path) -> str:
            if relative_to is not None:
                try:
                    return str(p.relative_to(relative_to))
                except ValueError:
                    pass
            return str(p)

        return {
            "status": self.status,
            "mode": self.mode,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "wall_s": round(self.wall_s, 3),
            "stdout_log": rel(self.stdout_log),
            "stderr_log": rel(self.stderr_log),
            "usage": self.usage,
            "usage_error": self.usage_error,
            "infrastructure_error": self.infrastructure_error,
            "oom_killed": self.oom_killed,
            "notes": list(self.notes),
            "transcript": None if self.transcript is None else rel(self.transcript),
            "cli_version": self.cli_version,
        }



def env_from_host(*names: str) -> dict[str, str]:
    """The named variables of the runner's own environment that are set (for ``env``).

    Nothing passes to an adapter implicitly; use this for the credentials an adapter
    needs, e.g. ``env_from_host("OPENAI_API_KEY")``.
    """
    return {n: os.environ[n] for n in names if n in os.environ}


def agent_env(proc: TurnProcess, *, home: str, output_dir: str, transcript_file: str,
              base: Mapping[str, str]) -> dict[str, str]:
    """The adapter's whole environment: ``base``, then the extras, then the fixed ones.

    ``HOME``, ``TMPDIR``, ``ERPSIM_USAGE_FILE`` and ``ERPSIM_TRANSCRIPT_FILE`` are the
    runner's and cannot be overridden by the extras.
    """
    env = dict(base)
    env.update(proc.env)
    env["HOME"] = home
    env["TMPDIR"] = f"{home}/tmp"
    env["ERPSIM_USAGE_FILE"] = f"{output_dir}/{USAGE_FILE}"
    env["ERPSIM_TRANSCRIPT_FILE"] = transcript_file
    return env


def validate_usage(data: Any, where: Path | str = USAGE_FILE,
                   ) -> tuple[dict[str, Any] | None, str | None]:
    """Check a parsed ``usage.json``: ``(usage, None)`` or ``(None, message)``."""
    if not isinstance(data, dict):
        return None, f"{where}: expected a JSON object, got {type(data).__name__}"
    for key in USAGE_KEYS:
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            return None, f"{where}: {key} must be a number >= 0 or null (got {value!r})"
    return data, None


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
