"""The shipped adapters with the real Claude Code and Codex CLIs against a model endpoint
that fails the way a real one does (tests/agents/fault_server.py): each failure of the
model side is one infrastructure error (exit 75, one cause line naming the status and
what the server or the CLI said) within bounded time; what the agent's own conversation
caused (a request too large for the model) and the CLI's own failures stay the agent's
outcome; a fault the CLI retries past leaves a completed turn. In every case usage.json
and transcript.jsonl stay readable: JSON, ``cli_version``, ``partial`` when cut short,
one object per line for any line splitter.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import ADAPTERS, MAIN_MODEL, PINS
from tests.agents.fault_server import FAULTS, Fault, FaultServer
from tests.agents.model_server import Script, Served

INFRA_EXIT = 75
#: no single turn here may take longer (the CLIs give up in seconds; a hang shows as -1)
TURN_LIMIT_S = 30.0
VERSIONS = {"claude": PINS["@anthropic-ai/claude-code"], "codex": PINS["@openai/codex"]}


@pytest.fixture(params=["claude", "codex"])
def cli(request: pytest.FixtureRequest) -> tuple[str, Path]:
    """Each CLI (the pinned binary) by name."""
    name = request.param
    return name, request.getfixturevalue(f"{name}_bin")


@dataclass
class Turn:
    """One adapter run by the contract."""

    code: int  # -1: still running after TURN_LIMIT_S (killed)
    wall_s: float
    stderr: str
    out: Path

    @property
    def causes(self) -> list[str]:
        """The stderr lines that give an infrastructure error's cause."""
        return [x for x in self.stderr.splitlines() if "infrastructure error:" in x]

    @property
    def usage(self) -> dict[str, Any]:
        """usage.json (it must be a JSON object)."""
        data = json.loads((self.out / "usage.json").read_text(encoding="utf-8"))
        assert isinstance(data, dict)
        return data

    def transcript(self) -> list[dict[str, Any]]:
        """transcript.jsonl, split as ``str.splitlines`` splits (runs/view does): every
        line one JSON object with ``ts`` and ``kind``."""
        text = (self.out / "transcript.jsonl").read_text(encoding="utf-8")
        lines = [json.loads(x) for x in text.splitlines() if x.strip()]
        assert len(lines) == text.count("\n")
        assert all(isinstance(x, dict) and {"ts", "kind"} <= set(x) for x in lines)
        return lines


def run_turn(name: str, binary: Path, server: FaultServer, folder: Path, *,
             prompt: str = "Apply today's receipts.", **env: str) -> Turn:
    """One turn of ``name``'s adapter against ``server``, killed after TURN_LIMIT_S."""
    ws, home, out = folder / "workspace", folder / "home", folder / "workspace" / "out"
    for d in (ws, home, out):
        d.mkdir(parents=True, exist_ok=True)
    (folder / "prompt.md").write_text(prompt, encoding="utf-8")
    if name == "claude":
        adapter = ADAPTERS / "claude-code"
        settings = {"ERPSIM_MODEL_BASE_URL": server.anthropic_base_url,
                    "ERPSIM_MODEL_SMALL": "erpsim-test-small",
                    "ERPSIM_CLAUDE_BIN": str(binary)}
    else:
        adapter = ADAPTERS / "codex"
        settings = {"ERPSIM_MODEL_BASE_URL": server.openai_base_url,
                    "ERPSIM_CODEX_BIN": str(binary)}
    full = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(home),
            "ERPSIM_MODEL_API_KEY": "sk-erpsim-test", "ERPSIM_MODEL": MAIN_MODEL,
            **settings, **env}
    t0 = time.monotonic()
    child = subprocess.Popen(
        [str(adapter), "--workspace", str(ws), "--prompt-file", str(folder / "prompt.md"),
         "--output-dir", str(out)], env=full, cwd=ws, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = child.communicate(timeout=TURN_LIMIT_S)
        code = child.returncode
    except subprocess.TimeoutExpired:
        child.terminate()  # the adapter passes it on to the CLI and writes what it has
        try:
            _, err = child.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            _, err = child.communicate()
        code = -1
    return Turn(code, time.monotonic() - t0, err.decode("utf-8", "replace"), out)


def one_step() -> Script:
    """One shell command, then a final answer."""
    return Script(model=MAIN_MODEL, commands=("echo hi",), final="Bye.")


def faulted(fault: str, *, count: int | None = None) -> FaultServer:
    """A started fault server with the one-step script."""
    chosen: Fault = FAULTS[fault]
    return FaultServer(one_step(), chosen if count is None else replace(chosen, count=count)
                       ).start()


def check_usage(name: str, turn: Turn, *, partial: bool | None = None) -> dict[str, Any]:
    """usage.json: token counts, the CLI's version, ``partial`` as expected."""
    usage = turn.usage
    assert isinstance(usage["input_tokens"], int) and isinstance(usage["output_tokens"], int)
    assert VERSIONS[name] in str(usage["cli_version"])
    if partial is not None:
        assert bool(usage.get("partial")) == partial, usage
    return usage


def served_total(served: list[Served], name: str) -> tuple[int, int]:
    """(input, output) tokens served, as each CLI's usage.json counts them."""
    if name == "claude":
        return (sum(s.tokens.input for s in served), sum(s.tokens.output for s in served))
    return (sum(s.tokens.input + s.tokens.cache_read + s.tokens.cache_write for s in served),
            sum(s.tokens.output + s.tokens.reasoning for s in served))


# --- the model side fails: one infrastructure error, in seconds -------------------------

#: What the cause line must say, per fault and CLI: the status and the server's words (or
#: the CLI's, where it keeps only its own: Claude's for 401 and 404, Codex's for 429).
SAYS = {
    ("claude", "429"): ("HTTP 429", "rate_limit_error", "per-minute rate limit"),
    ("codex", "429"): ("429 Too Many Requests",),
    ("claude", "429-retry-after"): ("HTTP 429", "per-minute rate limit"),
    ("codex", "429-retry-after"): ("429 Too Many Requests",),
    ("claude", "401"): ("HTTP 401", "authentication_error"),
    ("codex", "401"): ("HTTP 401", "Incorrect API key provided"),
    ("claude", "403"): ("HTTP 403", "permission_error", "does not have permission"),
    ("codex", "403"): ("HTTP 403", "Forbidden for this key"),
    ("claude", "404-model"): ("HTTP 404", "not_found_error", "erpsim-test-model"),
    ("codex", "404-model"): ("model_not_found", "does not exist"),
    ("claude", "malformed"): ("HTTP 200", "malformed"),
    ("codex", "malformed"): ("stream disconnected",),
    ("claude", "html-200"): ("HTTP 200", "HTML"),
    ("codex", "html-200"): ("stream disconnected",),
    ("claude", "truncated"): ("HTTP 200", "truncated"),
    ("codex", "truncated"): ("stream disconnected",),
    ("claude", "cut"): ("connection_failed", "ECONNRESET"),
    ("codex", "cut"): ("stream disconnected", "error decoding response body"),
}


@pytest.mark.parametrize("fault", ["429", "429-retry-after", "401", "403", "404-model",
                                   "malformed", "html-200", "truncated", "cut"])
def test_a_failing_model_side_is_one_infrastructure_error_naming_the_cause(
        cli: tuple[str, Path], fault: str, tmp_path: Path) -> None:
    """Every model request fails the same way: exit 75 in seconds, one cause line with
    the status and what was said; usage.json with the version; the transcript readable."""
    name, binary = cli
    server = faulted(fault)
    try:
        turn = run_turn(name, binary, server, tmp_path)
    finally:
        server.stop()
    assert turn.code == INFRA_EXIT, turn.stderr[-3000:]
    assert turn.wall_s < 20
    assert len(turn.causes) == 1, turn.stderr[-3000:]
    for words in SAYS[(name, fault)]:
        assert words in turn.causes[0], turn.causes[0]
    assert server.faulted and not any(s.kind == "main" and s.step > 0 for s in server.served)
    check_usage(name, turn)
    assert any(x["kind"] == "error" for x in turn.transcript())


def test_a_retry_after_beyond_the_model_timeout_is_an_infrastructure_error_at_once(
        cli: tuple[str, Path], tmp_path: Path) -> None:
    """A 429 saying "retry after 3600 s": the turn ends now (Codex would sleep an hour,
    into the turn's timeout), naming the status."""
    name, binary = cli
    server = faulted("429-retry-after-long")
    try:
        turn = run_turn(name, binary, server, tmp_path, ERPSIM_MODEL_TIMEOUT_S="20")
    finally:
        server.stop()
    assert turn.code == INFRA_EXIT, turn.stderr[-3000:]
    assert turn.wall_s < 15
    assert len(turn.causes) == 1 and "429" in turn.causes[0], turn.stderr[-3000:]
    check_usage(name, turn, partial=name == "codex")  # Claude's own result: not partial
    turn.transcript()


def test_a_model_that_never_answers_is_an_infrastructure_error_after_the_model_timeout(
        cli: tuple[str, Path], tmp_path: Path) -> None:
    """No response begins (the first byte never comes): with ERPSIM_MODEL_TIMEOUT_S=3 the
    turn is an infrastructure error in seconds, not at the turn's timeout (Codex has no
    limit of its own on waiting for a response to begin)."""
    name, binary = cli
    server = faulted("slow")
    try:
        turn = run_turn(name, binary, server, tmp_path, ERPSIM_MODEL_TIMEOUT_S="3")
    finally:
        server.stop()
    assert turn.code == INFRA_EXIT, turn.stderr[-3000:]
    assert turn.wall_s < 25
    assert len(turn.causes) == 1, turn.stderr[-3000:]
    assert any(w in turn.causes[0] for w in ("timed out", "no answer")), turn.causes[0]
    check_usage(name, turn, partial=name == "codex")
    turn.transcript()


# --- a fault the CLI retries past: the turn completes, every token counted ----------------

@pytest.mark.parametrize("fault", ["429-retry-after", "cut", "malformed"])
def test_a_fault_on_the_first_request_only_is_retried_and_the_turn_completes(
        cli: tuple[str, Path], fault: str, tmp_path: Path) -> None:
    name, binary = cli
    server = faulted(fault, count=1)
    try:
        turn = run_turn(name, binary, server, tmp_path)
        served = [s for s in server.served if s.model == MAIN_MODEL]
    finally:
        server.stop()
    assert turn.code == 0, turn.stderr[-3000:]
    assert not turn.causes
    usage = check_usage(name, turn, partial=False)
    lines = turn.transcript()
    assert any(x["kind"] == "tool_result" and "hi" in str(x.get("output")) for x in lines)
    if fault == "429-retry-after":  # nothing was served for the failed request
        main = usage["models"][MAIN_MODEL] if name == "claude" else usage
        assert (main["input_tokens"], main["output_tokens"]) == served_total(served, name)


# --- what the agent's conversation or its CLI did: the agent's own outcome ----------------

@pytest.mark.parametrize("fault", ["400-context", "413"])
def test_a_request_too_large_for_the_model_is_the_agents_own_outcome(
        cli: tuple[str, Path], fault: str, tmp_path: Path) -> None:
    """The context window exceeded (400) or the request too large (413): what the
    agent's conversation grew to, so a crash, not an infrastructure error (for either
    CLI alike)."""
    name, binary = cli
    server = faulted(fault)
    try:
        turn = run_turn(name, binary, server, tmp_path)
    finally:
        server.stop()
    assert turn.code not in (0, INFRA_EXIT, -1), turn.stderr[-3000:]
    assert not turn.causes, turn.causes
    check_usage(name, turn)
    assert any(x["kind"] == "error" for x in turn.transcript())


def test_the_clis_own_nonzero_exit_stays_a_crash(cli: tuple[str, Path],
                                                 tmp_path: Path) -> None:
    """An option the CLI refuses: it exits non-zero before asking the model; with a
    healthy endpoint that is the agent's crash, not an infrastructure error."""
    name, binary = cli
    server = FaultServer(one_step()).start()
    var = "ERPSIM_CLAUDE_ARGS" if name == "claude" else "ERPSIM_CODEX_ARGS"
    try:
        turn = run_turn(name, binary, server, tmp_path, **{var: "--no-such-option"})
    finally:
        server.stop()
    assert turn.code not in (0, INFRA_EXIT, -1), turn.stderr[-3000:]
    assert not turn.causes and "no-such-option" in turn.stderr
    assert not server.served


def test_claude_stopped_by_max_turns_is_a_crash_with_its_usage(claude_bin: Path,
                                                              tmp_path: Path) -> None:
    """Claude ends the turn itself (--max-turns 1 before its second step): not the
    endpoint's failure; usage.json counts what was served."""
    server = FaultServer(Script(model=MAIN_MODEL, commands=("echo one", "echo two"))).start()
    try:
        turn = run_turn("claude", claude_bin, server, tmp_path,
                        ERPSIM_CLAUDE_ARGS="--max-turns 1")
        served = [s for s in server.served if s.model == MAIN_MODEL]
    finally:
        server.stop()
    assert turn.code not in (0, INFRA_EXIT, -1), turn.stderr[-3000:]
    assert not turn.causes
    usage = check_usage("claude", turn, partial=False)
    assert usage["models"][MAIN_MODEL]["output_tokens"] == served_total(served, "claude")[1]


# --- what the agent reads and writes: any text, any size ---------------------------------

#: text that a line splitter may take apart (U+2028, U+2029, NEL), bytes that are not
#: UTF-8, and far more output than any tool result keeps
ODD_OUTPUT = ("printf 'donn\\303\\251es \\342\\202\\254 \\346\\235\\261 \\360\\237\\247\\276 "
              "a\\342\\200\\250b\\342\\200\\251c\\302\\205d \\377\\376 end\\n'; cat *.txt",
              "head -c 20000000 /dev/zero | tr '\\0' a; echo; seq 1 200000")


def test_unicode_a_long_prompt_and_a_huge_tool_output_keep_the_files_readable(
        cli: tuple[str, Path], tmp_path: Path) -> None:
    """A 250 kB prompt in several scripts, a workspace file and a tool output with line
    separators and bytes that are not UTF-8, a 20 MB output: the turn completes; every
    transcript line is one JSON object for any line splitter; the text comes through."""
    name, binary = cli
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "reçus-東京.txt").write_text("Ωmega\u2028line — ✅\n", encoding="utf-8")
    prompt = "Réconciliez les reçus — 東京 🧾 \u2028\n" + "Lorem ipsum — é ✅ " * 14000
    server = FaultServer(Script(model=MAIN_MODEL, commands=ODD_OUTPUT,
                                final="Fini — 完了 ✅ \u2029")).start()
    try:
        turn = run_turn(name, binary, server, tmp_path, prompt=prompt)
        served = [s for s in server.served if s.model == MAIN_MODEL]
        requests = server.requests
    finally:
        server.stop()
    assert turn.code == 0, turn.stderr[-3000:]
    assert "Lorem ipsum — é ✅" in json.dumps(requests[-1]["body"], ensure_ascii=False)
    lines = turn.transcript()
    outputs = [str(x.get("output")) for x in lines if x["kind"] == "tool_result"]
    assert len(outputs) == 2
    assert "données € 東 🧾 a\u2028b\u2029c\x85d" in outputs[0] and "Ωmega\u2028line" in \
        outputs[0]
    assert len(outputs[1]) < 2_000_000  # kept bounded by the CLI
    assert any(x.get("text") == "Fini — 完了 ✅ \u2029" for x in lines)
    usage = check_usage(name, turn, partial=False)
    main = usage["models"][MAIN_MODEL] if name == "claude" else usage
    assert (main["input_tokens"], main["output_tokens"]) == served_total(served, name)
