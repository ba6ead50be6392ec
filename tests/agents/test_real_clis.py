"""The shipped adapters with the real Claude Code and Codex CLIs, driven by the scripted
model server: whole cash-application attempts (writes in the books attributed to each
turn, usage.json equal to what the server served, token for token), a dead or failing
endpoint (an infrastructure exit within 60 s), and Claude as root and as a plain user.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import (
    ADAPTERS,
    MAIN_MODEL,
    PINS,
    REPO,
    Attempt,
    cash_script,
    read_jsonl,
    run_attempt,
    transcript_of,
)
from tests.agents.model_server import Delegate, ModelServer, Script, Served

SMALL_MODEL = "erpsim-test-small"
INFRA_EXIT = 75
APPLIED = re.compile(r"APPLIED (\S+) (\S+) (\S+)")


def claude_env(server: ModelServer, claude: Path) -> dict[str, str]:
    """Only the documented endpoint settings (and where the binary is)."""
    return {"ERPSIM_MODEL_BASE_URL": server.anthropic_base_url,
            "ERPSIM_MODEL_API_KEY": "sk-erpsim-test", "ERPSIM_MODEL": MAIN_MODEL,
            "ERPSIM_MODEL_SMALL": SMALL_MODEL, "ERPSIM_CLAUDE_BIN": str(claude)}


def codex_env(server: ModelServer, codex: Path) -> dict[str, str]:
    """Only the documented endpoint settings (and where the binary is)."""
    return {"ERPSIM_MODEL_BASE_URL": server.openai_base_url,
            "ERPSIM_MODEL_API_KEY": "sk-erpsim-test", "ERPSIM_MODEL": MAIN_MODEL,
            "ERPSIM_CODEX_BIN": str(codex)}


def applied_in_books(attempt: Attempt) -> dict[str, list[tuple[str, str]]]:
    """receipt_applied events by actor: [(receipt, invoice)]."""
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "erpsim"), "ledger", "events",
         str(attempt.folder / "books.db"), "--type", "receipt_applied", "--format", "jsonl"],
        capture_output=True, text=True, check=True)
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for event in map(json.loads, done.stdout.splitlines()):
        found[event["actor"]].append((event["payload"]["receipt_id"],
                                      event["payload"]["invoice_id"]))
    return found


def applied_in_transcripts(attempt: Attempt) -> dict[str, list[tuple[str, str]]]:
    """What each turn's transcript says the agent applied, by the turn's actor."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for turn in attempt.turn_dirs():
        for line in transcript_of(turn):
            if line["kind"] == "tool_result":
                for m in APPLIED.finditer(str(line.get("output", ""))):
                    found[f"agent:turn-{int(turn.name)}"].append((m[1], m[2]))
    return found


def turn_usage(turn: Path) -> dict[str, Any]:
    """The turn's usage.json as the runner kept it."""
    return json.loads((turn / "agent" / "usage.json").read_text())


def summed(served: list[Served]) -> dict[str, int]:
    """The served token counts by class."""
    out = {"input": 0, "cache_read": 0, "cache_write": 0, "output": 0, "reasoning": 0}
    for s in served:
        for k in out:
            out[k] += getattr(s.tokens, k)
    return out


def check_attempt(attempt: Attempt) -> None:
    """Every turn ran and completed; the books hold what the transcripts say, by turn."""
    assert attempt.code in (0, 1), attempt.output[-3000:]  # 1: the verdict rejects
    turns = attempt.summary["turns"]
    assert len(turns) == 10
    for turn in turns:
        assert turn["process"]["status"] == "completed", turn
        assert turn["process"]["exit_code"] == 0, turn
    books, said = applied_in_books(attempt), applied_in_transcripts(attempt)
    assert said, "the scripted agent applied nothing"
    assert dict(books) == dict(said)


@pytest.mark.slow
def test_claude_code_attempt_writes_books_and_counts_every_token(
        claude_bin: Path, tmp_path: Path) -> None:
    """A cash-application attempt with the real claude: writes by turn, exact usage
    (the sub-agent's requests on the small model included), transcript, version."""
    script = cash_script(Delegate("Say which customers paid today.", model="haiku"))
    with ModelServer(script) as server:
        attempt = run_attempt("cash-application", ADAPTERS / "claude-code",
                              tmp_path / "attempt", claude_env(server, claude_bin))
        served = server.served
    check_attempt(attempt)
    by_session: dict[str, list[Served]] = defaultdict(list)
    for s in served:
        by_session[s.session].append(s)
    assert {s.model for s in served} == {MAIN_MODEL, SMALL_MODEL}
    for turn in attempt.turn_dirs():
        usage = turn_usage(turn)
        mine = by_session[usage["session_id"]]
        total = summed(mine)
        assert usage["input_tokens"] == total["input"]
        assert usage["cache_read_input_tokens"] == total["cache_read"]
        assert usage["cache_creation_input_tokens"] == total["cache_write"]
        assert usage["output_tokens"] == total["output"]
        assert usage["cli_version"].startswith(PINS["@anthropic-ai/claude-code"])
        assert isinstance(usage["cost_usd"], float)
        for model in (MAIN_MODEL, SMALL_MODEL):
            part = summed([s for s in mine if s.model == model])
            assert usage["models"][model]["input_tokens"] == part["input"]
            assert usage["models"][model]["output_tokens"] == part["output"]
        lines = transcript_of(turn)
        calls = [x for x in lines if x["kind"] == "usage" and x.get("scope") == "call"
                 and x.get("model") == MAIN_MODEL]  # a sub-agent's calls: in the total
        assert [c["usage"]["output_tokens"] for c in calls] == \
            [s.tokens.output for s in mine if s.model == MAIN_MODEL]
        tools = [x["tool"] for x in lines if x["kind"] == "tool_call"]
        assert tools.count("Bash") >= 3 and "Agent" in tools
        assert all(set(x) >= {"ts", "kind"} for x in lines)


@pytest.mark.slow
def test_codex_attempt_writes_books_and_counts_every_token(
        codex_bin: Path, tmp_path: Path) -> None:
    """A cash-application attempt with the real codex: erp reachable from its shell,
    the API socket allowed, writes by turn, exact usage per class, transcript."""
    with ModelServer(cash_script()) as server:
        attempt = run_attempt("cash-application", ADAPTERS / "codex", tmp_path / "attempt",
                              codex_env(server, codex_bin))
        served = server.served
    check_attempt(attempt)
    by_session: dict[str, list[Served]] = defaultdict(list)
    for s in served:
        by_session[s.session].append(s)
    assert len(by_session) == 10
    sessions = iter(by_session.values())  # turns ran one after another, in order
    for turn in attempt.turn_dirs():
        usage, mine = turn_usage(turn), next(sessions)
        total = summed(mine)
        assert usage["input_tokens"] == total["input"] + total["cache_read"] + \
            total["cache_write"]
        assert usage["cached_input_tokens"] == total["cache_read"]
        assert usage["cache_write_input_tokens"] == total["cache_write"]
        assert usage["output_tokens"] == total["output"] + total["reasoning"]
        assert usage["reasoning_output_tokens"] == total["reasoning"]
        assert usage["model_calls"] == len(mine)
        assert usage["cli_version"].endswith(PINS["@openai/codex"])
        lines = transcript_of(turn)
        assert [x["tool"] for x in lines if x["kind"] == "tool_call"] == ["shell"] * 3
        results = [x for x in lines if x["kind"] == "tool_result"]
        assert [r["exit_code"] for r in results] == [0, 0, 0]


# --- docker mode: the CLIs in the agent image, the endpoint through the model relay -------

def check_usage_served(name: str, attempt: Attempt, served: list[Served]) -> None:
    """Each turn's usage.json equals what the server served that turn, class by class."""
    by_session: dict[str, list[Served]] = defaultdict(list)
    for s in served:
        by_session[s.session].append(s)
    sessions = iter(by_session.values())
    for turn in attempt.turn_dirs():
        usage = turn_usage(turn)
        if name == "claude":
            total = summed(by_session[usage["session_id"]])
            assert (usage["input_tokens"], usage["cache_read_input_tokens"],
                    usage["cache_creation_input_tokens"], usage["output_tokens"]) == (
                total["input"], total["cache_read"], total["cache_write"], total["output"])
            assert usage["cli_version"].startswith(PINS["@anthropic-ai/claude-code"])
        else:
            mine = next(sessions)
            total = summed(mine)
            assert usage["input_tokens"] == total["input"] + total["cache_read"] + \
                total["cache_write"]
            assert (usage["cached_input_tokens"], usage["cache_write_input_tokens"],
                    usage["output_tokens"], usage["reasoning_output_tokens"]) == (
                total["cache_read"], total["cache_write"],
                total["output"] + total["reasoning"], total["reasoning"])
            assert usage["model_calls"] == len(mine)
            assert usage["cli_version"].endswith(PINS["@openai/codex"])


@pytest.mark.slow
def test_a_whole_attempt_in_docker_mode(cli: tuple[str, Path], agent_image: str,
                                        tmp_path: Path) -> None:
    """A cash-application attempt with the real CLI inside the agent image, no network:
    the model endpoint on the host's loopback reached through the relay; writes by turn,
    transcripts kept in turns/NN/agent/, usage equal to what the server served."""
    name, binary = cli
    with ModelServer(cash_script()) as server:
        env = env_for(name, server, binary)
        del env["ERPSIM_CLAUDE_BIN" if name == "claude" else "ERPSIM_CODEX_BIN"]  # image's
        attempt = run_attempt("cash-application", adapter_for(name), tmp_path / "attempt",
                              env, docker=agent_image)
        served = server.served
    check_attempt(attempt)
    for turn in attempt.summary["turns"]:
        assert turn["process"]["mode"] == "docker"
        assert turn["process"]["transcript"] == f"turns/{turn['turn']:02d}/agent/transcript.jsonl"
    check_usage_served(name, attempt, served)


def test_docker_mode_with_the_endpoint_down_stops_with_an_infrastructure_error(
        cli: tuple[str, Path], agent_image: str, tmp_path: Path) -> None:
    """The server is gone: the first turn is an infrastructure error within 60 s, the
    relay's 502 caught before the CLI runs; erpsim run exits 3 and prints the cause."""
    name, binary = cli
    server = ModelServer(cash_script()).start()
    env = env_for(name, server, binary)
    del env["ERPSIM_CLAUDE_BIN" if name == "claude" else "ERPSIM_CODEX_BIN"]
    server.stop()
    attempt = run_attempt("cash-application", adapter_for(name), tmp_path / "attempt", env,
                          docker=agent_image)
    assert attempt.code == 3, attempt.output[-3000:]
    assert attempt.wall_s < 60 + 30  # the turn, and the attempt's set-up
    said = " ".join(attempt.output.split())
    adapter = "claude-code" if name == "claude" else "codex"
    assert f"turn 1 (2026-03-02): error: {adapter} adapter: model endpoint" in said, said
    assert "answered before any request: HTTP/1.1 502 Bad Gateway / erpsim model relay" \
        in said and "(exit 75," in said
    error = (attempt.folder / "error.txt").read_text()
    assert "infrastructure error" in error and "502 Bad Gateway" in error
    stderr = (attempt.folder / "turns" / "01" / "agent" / "stderr.log").read_text()
    assert f"{adapter} adapter: infrastructure error: model endpoint" in stderr
    assert not (attempt.folder / "turns" / "02").exists()  # the attempt stopped there


# --- a dead or failing endpoint ----------------------------------------------------------

def run_adapter(adapter: Path, env: dict[str, str], folder: Path,
                prompt: str = "Apply today's receipts.") -> tuple[int, float, str, Path]:
    """One turn by the adapter contract: (exit code, seconds, stderr, output dir)."""
    ws, home, out = folder / "workspace", folder / "home", folder / "workspace" / "out"
    for d in (ws, home, out):
        d.mkdir(parents=True, exist_ok=True)
    (folder / "prompt.md").write_text(prompt)
    t0 = time.monotonic()
    done = subprocess.run(
        [str(adapter), "--workspace", str(ws), "--prompt-file", str(folder / "prompt.md"),
         "--output-dir", str(out)],
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(home), **env},
        capture_output=True, text=True, timeout=120, cwd=ws)
    return done.returncode, time.monotonic() - t0, done.stderr, out


@pytest.fixture(params=["claude", "codex"])
def cli(request: pytest.FixtureRequest) -> tuple[str, Path]:
    """Each CLI with its adapter."""
    name = request.param
    binary = request.getfixturevalue(f"{name}_bin")
    return name, binary


def env_for(name: str, server: ModelServer, binary: Path) -> dict[str, str]:
    """The endpoint settings for ``name``'s adapter."""
    return claude_env(server, binary) if name == "claude" else codex_env(server, binary)


def adapter_for(name: str) -> Path:
    """The adapter of CLI ``name``."""
    return ADAPTERS / ("claude-code" if name == "claude" else "codex")


@pytest.mark.parametrize("failure", ["refused", "503", "dies-mid-turn"])
def test_failing_endpoint_is_an_infrastructure_exit_within_60_s(
        cli: tuple[str, Path], failure: str, tmp_path: Path) -> None:
    """Refused before the turn, failing with 503, or gone after the first response:
    exit 75 with a one-line cause on stderr, well before a turn timeout."""
    name, binary = cli
    script = Script(model=MAIN_MODEL, commands=("sleep 1", "echo never"))
    server = ModelServer(script, fail_status=503 if failure == "503" else None).start()
    if failure == "refused":
        server.stop()
    elif failure == "dies-mid-turn":
        def stop_after_first() -> None:
            while not server.served:
                time.sleep(0.02)
            server.stop()
        threading.Thread(target=stop_after_first, daemon=True).start()
    try:
        code, wall, stderr, _ = run_adapter(adapter_for(name), env_for(name, server, binary),
                                            tmp_path)
    finally:
        server.stop()
    assert code == INFRA_EXIT, stderr[-2000:]
    assert wall < 60
    cause = [x for x in stderr.splitlines() if "infrastructure error" in x]
    assert len(cause) == 1 and "model" in cause[0], stderr[-2000:]


# --- root and an ordinary user ------------------------------------------------------------

@pytest.fixture
def plain_user() -> Iterator[str]:
    """A throwaway user without privileges (removed afterwards)."""
    if os.geteuid() != 0:
        pytest.skip("creating a throwaway user needs root")
    name = f"erpsim{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False)


def test_claude_code_as_root_and_as_a_plain_user(claude_bin: Path, plain_user: str) -> None:
    """One turn by the contract as root (IS_SANDBOX set for bypassPermissions) and as a
    plain user (run with runuser; the runner's own Python lives in root's home here)."""
    user = pwd.getpwnam(plain_user)
    folder = Path(tempfile.mkdtemp(prefix="erpsim-agent-user-"))
    folder.chmod(0o755)  # the plain user must reach its own folder inside
    # The checkout may lie in a folder only root can enter (a clone in a mktemp folder):
    # the plain user runs a copy of the adapters and a link to the pinned binary.
    tools = folder / "tools"
    adapters = Path(shutil.copytree(ADAPTERS, tools / "adapters",
                                    ignore=shutil.ignore_patterns("__pycache__", "clis")))
    claude = tools / "claude"
    try:
        os.link(claude_bin.resolve(), claude)
    except OSError:
        shutil.copy2(claude_bin.resolve(), claude)
    try:
        for who in ("root", plain_user):
            base = folder / who
            for d in (base / "workspace" / "out", base / "home"):
                d.mkdir(parents=True)
            (base / "prompt.md").write_text("Who am I?")
            if who != "root":
                for d in (base, *base.rglob("*")):
                    os.chown(d, user.pw_uid, user.pw_gid)
            script = Script(model=MAIN_MODEL, commands=("id -u",), final="Known.")
            with ModelServer(script) as server:
                env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
                       "HOME": str(base / "home"), **claude_env(server, claude)}
                cmd = [str(adapters / "claude-code"), "--workspace", str(base / "workspace"),
                       "--prompt-file", str(base / "prompt.md"),
                       "--output-dir", str(base / "workspace" / "out")]
                if who != "root":
                    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
                    cmd = [runuser, "-u", plain_user, "--", "/usr/bin/env", "-i",
                           *[f"{k}={v}" for k, v in env.items()], *cmd]
                done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                      timeout=120, cwd=base / "workspace")
            assert done.returncode == 0, done.stderr[-2000:]
            assert ("IS_SANDBOX=1" in done.stderr) == (who == "root")
            lines = read_jsonl(base / "workspace" / "out" / "transcript.jsonl")
            result = next(x for x in lines if x["kind"] == "tool_result")
            assert result["output"].strip() == str(0 if who == "root" else user.pw_uid)
            usage = json.loads((base / "workspace" / "out" / "usage.json").read_text())
            assert usage["output_tokens"] == sum(s.tokens.output for s in server.served)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_transcript_lines_have_the_documented_shape(claude_bin: Path, tmp_path: Path) -> None:
    """One turn by the contract: the transcript's kinds and fields as the README says."""
    script = Script(model=MAIN_MODEL, commands=("echo hello",), final="Bye.")
    with ModelServer(script) as server:
        code, _, stderr, out = run_adapter(ADAPTERS / "claude-code",
                                           claude_env(server, claude_bin), tmp_path)
    assert code == 0, stderr
    lines = read_jsonl(out / "transcript.jsonl")
    kinds = [x["kind"] for x in lines]
    assert kinds[0] == "message" and kinds[-1] == "usage"
    call = next(x for x in lines if x["kind"] == "tool_call")
    assert call["tool"] == "Bash" and call["arguments"]["command"] == "echo hello"
    result = next(x for x in lines if x["kind"] == "tool_result")
    assert result["call_id"] == call["call_id"] and result["output"] == "hello"
    assert any(x["kind"] == "message" and x.get("text") == "Bye." for x in lines)
    assert lines[-1]["scope"] == "turn" and lines[-1]["usage"]["output_tokens"] > 0
