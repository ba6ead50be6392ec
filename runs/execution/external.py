"""External agents: an adapter executable per turn, acting on the books through the ERP API.

For an attempt, :class:`ExternalAgent` serves the books over the ERP API (a unix socket
in a private runtime folder outside the attempt folder) and, at each turn:

1. issues a bearer token bound to the turn's actor (``agent:turn-N``), role, business
   date and turn moment, and writes ``.erpsim/connection.json`` into the workspace;
2. runs the adapter (``ADAPTER --workspace W --prompt-file P --output-dir O`` with
   ``ERPSIM_API`` and ``ERPSIM_TOKEN``) locally or in a container, with a fresh
   benchmark-owned HOME, until it exits or its timeout;
3. revokes the token, so that nothing the agent left running can write later.

Every request the API answers during the turn is one line of ``turns/NN/agent/api.jsonl``
(:mod:`erp.api.request_log`); ``last_requests`` holds them for the turn's record. A home
template (``home_template``), when given, is copied into each turn's fresh HOME.

What the agent wrote before a timeout stays in the books, attributed to its turn.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from erp.api.server import ApiServer, RequestLog, TokenRegistry, create_app
from erp.ledger import Ledger
from runs.execution.contract import DEFAULT_TIMEOUT_S, DockerOptions, Mode, TurnOutcome, TurnProcess
from runs.execution.turn import run_turn
from scenarios.turn import TurnContext

CONTAINER_SOCKET = "/run/erpsim/api.sock"
CONNECTION_FILE = ".erpsim/connection.json"
API_LOG = "api.jsonl"
"""The turn's request log, in its log folder (``turns/NN/agent/``)."""


def erp_client_file() -> Path:
    """The stdlib-only ``erp`` client (one file, runnable with any python3)."""
    import erp.api.client

    return Path(erp.api.client.__file__).resolve()


class ExternalAgent:
    """An adapter run as a process (``local``) or in a container (``docker``) each turn."""

    def __init__(self, adapter: Path, *, mode: Mode = "local",
                 timeout_s: float = DEFAULT_TIMEOUT_S,
                 docker: DockerOptions | None = None, name: str | None = None,
                 env: dict[str, str] | None = None,
                 home_template: Path | None = None) -> None:
        self.adapter = adapter.absolute()
        self.mode: Mode = mode
        self.timeout_s = timeout_s
        self.docker = docker or DockerOptions()
        self.name = name or adapter.name
        self.env = dict(env or {})
        """Extra variables for the adapter (credentials, options); ERPSIM_API/TOKEN win."""
        self.home_template = home_template.absolute() if home_template is not None else None
        """A folder copied into each turn's HOME (config files such as ~/.codex/config.toml)."""
        self.tokens = TokenRegistry()
        self.requests = RequestLog()
        self.server: ApiServer | None = None
        self.app: Any = None
        self.runtime: Path | None = None
        self.last_outcome: TurnOutcome | None = None
        self.last_overhead: dict[str, float] = {}
        self.last_requests: list[dict[str, Any]] = []
        """The last turn's API requests (the lines of its api.jsonl)."""

    # --- the attempt's API ---------------------------------------------------------

    def start(self, ledger: Ledger) -> None:
        """Serve the books for this attempt on a private unix socket."""
        self.runtime = Path(tempfile.mkdtemp(prefix="erpsim-"))
        self.app = create_app(ledger, self.tokens, request_log=self.requests)
        self.server = ApiServer(self.app, uds=self.runtime / "api.sock")
        self.server.start()

    def stop(self) -> None:
        """Revoke every token, stop the API, remove the runtime folder, and let go of the
        books (the app holds the attempt's ledger: an agent kept by its caller would keep
        the attempt alive)."""
        self.tokens.revoke_all()
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.app = None
        if self.runtime is not None:
            shutil.rmtree(self.runtime, ignore_errors=True)
            self.runtime = None

    # --- a turn ------------------------------------------------------------------------

    def run_turn(self, desk: TurnContext) -> None:
        """Run the adapter for one turn; the outcome is kept in ``last_outcome``."""
        if self.server is None or self.runtime is None:
            raise RuntimeError("ExternalAgent.start() was not called")
        self.last_outcome = None
        self.last_requests = []
        started = time.perf_counter()
        log_dir = desk.workspace.parent / "agent"
        self.requests.begin(log_dir / API_LOG)
        token = self.tokens.issue(desk.actor, desk.role, desk.day, desk.sim_time)
        try:
            api = f"unix://{CONTAINER_SOCKET}" if self.mode == "docker" else self.server.url
            conn = desk.workspace / CONNECTION_FILE
            conn.parent.mkdir(exist_ok=True)
            conn.write_text(json.dumps({"api": api, "token": token}) + "\n", encoding="utf-8")
            home = self.runtime / f"home-{desk.turn:02d}"
            proc = TurnProcess(
                adapter=self.adapter, workspace=desk.workspace, prompt_file=desk.prompt_file,
                output_dir=desk.output_dir, log_dir=log_dir,
                home=home, env={**self.env, "ERPSIM_API": api, "ERPSIM_TOKEN": token},
                timeout_s=self.timeout_s, mode=self.mode,
                docker=replace(self.docker, api_socket=self.server.uds),
                erp_client=erp_client_file(), home_template=self.home_template)
            outcome = run_turn(proc)
        finally:
            self.tokens.revoke(token)
            # A request that held the books when the turn ended finishes before the
            # engine goes on; later ones re-check the token under the lock and get 401.
            with self.app.state.lock:
                pass
            self.last_requests = self.requests.end()
        (desk.workspace / CONNECTION_FILE).unlink(missing_ok=True)
        shutil.rmtree(self.runtime / f"home-{desk.turn:02d}", ignore_errors=True)
        self.last_outcome = outcome
        total = time.perf_counter() - started
        self.last_overhead = {"runner_s": round(total - outcome.wall_s, 4)}
