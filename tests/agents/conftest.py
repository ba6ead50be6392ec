"""Fixtures for the real-CLI tests: the installed CLIs, the scripted model server, and
running a whole erpsim attempt with an adapter.

The CLIs come from ``.ci/agent-clis`` (``.agents/node_modules/.bin``, or the folder in
``ERPSIM_AGENT_CLIS``) at the versions pinned in ``runs/adapters/clis/``. Without them
the tests skip, saying to run the installer; under ``CI=true`` they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.agents.model_server import ModelServer, Script

REPO = Path(__file__).resolve().parents[2]
ADAPTERS = REPO / "runs" / "adapters"
CLIS = Path(os.environ.get("ERPSIM_AGENT_CLIS") or REPO / ".agents")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
PINS = json.loads((ADAPTERS / "clis" / "package.json").read_text())["dependencies"]
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex"}
MAIN_MODEL = "erpsim-test-model"


def cli_bin(name: str) -> Path:
    """The installed CLI ``name`` at its pinned version (skip or, in CI, fail)."""
    exe = CLIS / "node_modules" / ".bin" / name
    problem = None
    if not os.access(exe, os.X_OK):
        problem = f"{name} is not installed at {exe}"
    else:
        done = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                              timeout=30)
        want = PINS[PACKAGES[name]]
        if want not in done.stdout:
            problem = f"{exe} --version says {done.stdout.strip()!r}, pinned {want}"
    if problem is not None:
        msg = f"{problem}: run .ci/agent-clis to install the pinned agent CLIs"
        if IN_CI:
            pytest.fail(msg + " (CI=true: the real-CLI tests must run)", pytrace=False)
        pytest.skip(msg)
    return exe


@pytest.fixture
def claude_bin() -> Path:
    """The pinned ``claude``."""
    return cli_bin("claude")


@pytest.fixture
def codex_bin() -> Path:
    """The pinned ``codex``."""
    return cli_bin("codex")


def inline(script: str) -> str:
    """The shell command that runs ``tests/agents/SCRIPT`` inline, via a heredoc."""
    source = (Path(__file__).with_name(script)).read_text()
    return f"python3 - <<'PY'\n{source}PY"


def apply_command() -> str:
    """The shell command that applies one receipt (apply_one.py)."""
    return inline("apply_one.py")


def cash_script(*extra: Any) -> Script:
    """Each turn: list unapplied receipts, apply one, write out/unapplied.csv (with the
    scenario's line_id and reason columns)."""
    return Script(model=MAIN_MODEL, commands=(
        "erp receipts list --unapplied",
        apply_command(),
        *extra,
        inline("list_unapplied.py"),
    ), final="Applied what I could; out/unapplied.csv lists the rest.")


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A scripted server (the cash script), started and stopped around the test."""
    server = ModelServer(cash_script()).start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Attempt:
    """A finished ``erpsim run``: its folder, exit code, output and summary."""

    folder: Path
    code: int
    output: str
    wall_s: float

    @property
    def summary(self) -> dict[str, Any]:
        """summary.json."""
        return json.loads((self.folder / "summary.json").read_text())

    def turn_dirs(self) -> list[Path]:
        """turns/NN, in order."""
        return sorted(p for p in (self.folder / "turns").iterdir() if p.is_dir())


def run_attempt(scenario: str, adapter: Path, out: Path, env: dict[str, str], *,
                turn_timeout: float = 120, user: str | None = None,
                timeout: float = 900, docker: str | None = None) -> Attempt:
    """``erpsim run SCENARIO --agent-cmd ADAPTER`` with ``env`` passed to each turn
    (in a container of image ``docker`` when given)."""
    import time

    cmd = [sys.executable, "-m", "runs.cli", "run", scenario, "--out", str(out),
           "--agent-cmd", str(adapter), "--turn-timeout", str(turn_timeout), "--quiet"]
    if docker is not None:
        cmd += ["--docker", docker]
    for k, v in env.items():
        cmd += ["--agent-env", f"{k}={v}"]
    if user is not None:
        cmd = ["runuser", "-u", user, "--", *cmd]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return Attempt(out, done.returncode, done.stdout + done.stderr, time.monotonic() - t0)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file's objects."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def transcript_of(turn: Path) -> list[dict[str, Any]]:
    """A turn's normalized transcript, kept by the runner in ``turns/NN/agent/`` (never
    among the agent's outputs)."""
    assert not list(turn.rglob("outputs/transcript.jsonl")), f"a transcript in {turn}/outputs"
    path = turn / "agent" / "transcript.jsonl"
    assert path.is_file(), f"no transcript at {path}"
    return read_jsonl(path)


@pytest.fixture
def agent_image() -> str:
    """The agent image with the pinned CLIs on the engine at DOCKER_HOST (skip; CI: fail)."""
    import docker as docker_sdk

    from runs.execution.contract import DEFAULT_IMAGE

    image = os.environ.get("ERPSIM_AGENT_IMAGE", DEFAULT_IMAGE)
    host = os.environ.get("DOCKER_HOST")
    problem = None if host else "DOCKER_HOST is not set"
    if host:
        try:
            client = docker_sdk.DockerClient(base_url=host)
            labels = client.images.get(image).labels or {}
            client.close()
            if "erpsim.recipe" not in labels:
                problem = f"image {image} has no agent CLIs (built by an older .ci/docker-up)"
        except docker_sdk.errors.DockerException as e:
            problem = f"image {image} on {host}: {e}"
    if problem is not None:
        msg = f'{problem}: eval "$(.ci/docker-up)" builds the agent image with the CLIs'
        if IN_CI:
            pytest.fail(msg + " (CI=true: the docker-mode CLI tests must run)", pytrace=False)
        pytest.skip(msg)
    return image
