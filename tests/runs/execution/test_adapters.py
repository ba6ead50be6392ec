"""The sample adapters in runs/adapters/, run against fake CLIs (tests/runs/fakes/).

No model is reachable here: a fake ``codex`` or ``claude`` on PATH honours the real
CLI's interface (the prompt on stdin, ``--json`` / ``stream-json`` events, ``--version``),
records how it was called and prints output shaped like the real one's. The real CLIs
against a scripted model server are in tests/agents/.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runs.execution.contract import TurnProcess
from runs.execution.turn import run_turn
from tests.runs.execution.test_turn import ERP_STUB, PROMPT

ADAPTERS = Path(__file__).resolve().parents[3] / "runs" / "adapters"
FAKES = Path(__file__).resolve().parents[1] / "fakes"


def turn(tmp: Path, adapter: str | Path, env: dict[str, str] | None = None,
         **kw: Any) -> TurnProcess:
    """A turn with a sample adapter and the fakes first on PATH."""
    ws = tmp / "attempt" / "turns" / "01" / "workspace"
    (ws / "out").mkdir(parents=True)
    (ws / "prompt.md").write_text(PROMPT)
    path = ADAPTERS / adapter if isinstance(adapter, str) else adapter
    return TurnProcess(
        adapter=path, workspace=ws, prompt_file=ws / "prompt.md", output_dir=ws / "out",
        log_dir=tmp / "attempt" / "turns" / "01" / "logs", home=tmp / "attempt" / "home",
        env={"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", "ERPSIM_TOKEN": "tok-1",
             "ERPSIM_API": "unix:///tmp/erpsim-test-api.sock", **(env or {})},
        timeout_s=30, **kw)


def record(proc: TurnProcess, name: str) -> dict[str, Any]:
    """What the fake CLI recorded about its call."""
    data: dict[str, Any] = json.loads((proc.output_dir / f"fake-{name}.json").read_text())
    return data


@pytest.mark.parametrize("name", ["codex", "claude-code", "script"])
def test_the_sample_adapters_are_executable_scripts(name: str) -> None:
    path = ADAPTERS / name
    assert os.access(path, os.X_OK), f"chmod +x {path}"
    assert path.read_text().split("\n")[0] in ("#!/bin/sh", "#!/usr/bin/env python3")


# --- codex ----------------------------------------------------------------------------

CODEX_FIXED = ["allow_login_shell=false", 'shell_environment_policy.inherit="all"',
               "shell_environment_policy.ignore_default_excludes=true",
               'shell_environment_policy.exclude=["ERPSIM_MODEL_API_KEY", "OPENAI_API_KEY", '
               '"CODEX_API_KEY"]',
               'approval_policy="never"', "check_for_update_on_startup=false",
               "analytics.enabled=false"]


def overrides(argv: list[str]) -> list[str]:
    """The values of the ``-c`` options on a command line."""
    return [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]


@pytest.fixture
def endpoint() -> Iterator[str]:
    """A loopback port that accepts connections (the adapters check one before the turn)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def closed_port() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_codex_runs_exec_on_the_prompt_with_a_benchmark_owned_codex_home(tmp_path: Path) -> None:
    proc = turn(tmp_path, "codex")
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    call = record(proc, "codex")
    ws = str(proc.workspace.resolve())
    argv = call["argv"]
    assert argv[:7] == ["exec", "--json", "--skip-git-repo-check", "--cd", ws,
                        "--sandbox", "danger-full-access"]
    assert overrides(argv) == CODEX_FIXED  # no endpoint given: Codex's own default
    assert argv[-1] == "-" and call["stdin"] == PROMPT  # the prompt on stdin, never argv
    assert call["cwd"] == ws
    home = proc.home.resolve()
    assert call["env"]["HOME"] == str(home)
    assert call["env"]["CODEX_HOME"] == str(home / ".codex")
    assert (home / ".codex").is_dir()
    assert call["env"]["ERPSIM_TOKEN"] == "tok-1"
    assert (proc.output_dir / "answer.md").read_text() == "done by the fake codex\n"
    assert outcome.usage == {"source": "codex exec --json", "input_tokens": 1200,
                             "cached_input_tokens": 1000, "cache_write_input_tokens": 100,
                             "output_tokens": 34, "reasoning_output_tokens": 12,
                             "total_tokens": 1234, "cli_version": "codex-cli 0.0.0-fake",
                             "model_calls": 0}
    assert outcome.usage_error is None
    assert outcome.cli_version == "codex-cli 0.0.0-fake"
    assert '"type": "turn.completed"' in outcome.stdout_log.read_text()
    assert f"CODEX_HOME={home / '.codex'}" in outcome.stderr_log.read_text()


def test_codex_transcript_goes_to_the_log_folder_not_the_outputs(tmp_path: Path) -> None:
    proc = turn(tmp_path, "codex")
    outcome = run_turn(proc)
    assert outcome.transcript == proc.log_dir / "transcript.jsonl"
    assert sorted(p.name for p in proc.output_dir.iterdir()) == ["answer.md",
                                                                 "fake-codex.json"]
    lines = [json.loads(x) for x in outcome.transcript.read_text().splitlines()]
    assert [x["kind"] for x in lines] == ["message", "tool_call", "tool_result", "message",
                                          "usage"]
    assert lines[1]["arguments"] == {"command": "erp receipts list"}
    assert (lines[2]["call_id"], lines[2]["exit_code"]) == (lines[1]["call_id"], 0)
    assert outcome.to_json(relative_to=tmp_path / "attempt")["transcript"] == (
        "turns/01/logs/transcript.jsonl")


def test_codex_settings_reach_the_command_line(tmp_path: Path, endpoint: str) -> None:
    proc = turn(tmp_path, "codex", {"ERPSIM_MODEL_BASE_URL": endpoint + "/",
                                    "ERPSIM_MODEL_API_KEY": "sk-secret-9",
                                    "ERPSIM_MODEL": "gpt-fake",
                                    "ERPSIM_MODEL_MAX_RETRIES": "1",
                                    "ERPSIM_MODEL_TIMEOUT_S": "7.5",
                                    "ERPSIM_CODEX_SANDBOX": "workspace-write",
                                    "ERPSIM_CODEX_ARGS": "-c 'model_reasoning_effort=\"high\"'",
                                    "FAKE_EXIT": "1"})
    outcome = run_turn(proc)
    assert (outcome.status, outcome.exit_code) == ("crashed", 1)
    call = record(proc, "codex")
    argv = call["argv"]
    assert argv[5:9] == ["--sandbox", "workspace-write", "--model", "gpt-fake"]
    assert overrides(argv) == [
        *CODEX_FIXED, 'model_provider="erpsim"',
        'model_providers.erpsim={name="erpsim", base_url="' + endpoint + '", '
        'wire_api="responses", request_max_retries=1, stream_max_retries=1, '
        'stream_idle_timeout_ms=7500, env_key="ERPSIM_MODEL_API_KEY"}',
        'model_reasoning_effort="high"']
    assert argv[-1] == "-"
    assert "sk-secret-9" not in json.dumps(argv)  # the key is named, not passed
    assert call["env"]["ERPSIM_MODEL_API_KEY"] == "sk-secret-9"
    assert "sk-secret-9" not in outcome.stderr_log.read_text()
    assert outcome.usage is not None and outcome.usage["model"] == "gpt-fake"


def test_codex_translates_openai_base_url_which_it_ignores(tmp_path: Path,
                                                           endpoint: str) -> None:
    proc = turn(tmp_path, "codex", {"OPENAI_BASE_URL": endpoint, "OPENAI_API_KEY": "sk-o"})
    assert run_turn(proc).status == "completed"
    provider = overrides(record(proc, "codex")["argv"])[-1]
    assert f'base_url="{endpoint}"' in provider and 'env_key="OPENAI_API_KEY"' in provider


def test_codex_without_usage_events_writes_no_usage(tmp_path: Path) -> None:
    outcome = run_turn(turn(tmp_path, "codex", {"FAKE_NO_USAGE": "1"}))
    assert outcome.status == "completed"
    assert (outcome.usage, outcome.usage_error, outcome.cli_version) == (None, None, None)


def test_codex_turn_failed_by_the_api_is_an_infrastructure_error(tmp_path: Path) -> None:
    proc = turn(tmp_path, "codex", {"FAKE_TURN_FAILED": "unexpected status 503 Service "
                                                        "Unavailable"})
    outcome = run_turn(proc)
    assert (outcome.status, outcome.exit_code) == ("error", 75)
    assert outcome.infrastructure_error == (
        "codex adapter: model API error: unexpected status 503 Service Unavailable "
        f"(exit 75, {proc.stderr_log})")


def test_codex_turn_failed_otherwise_is_a_crash(tmp_path: Path) -> None:
    outcome = run_turn(turn(tmp_path, "codex", {"FAKE_TURN_FAILED": "the agent gave up"}))
    assert (outcome.status, outcome.exit_code) == ("crashed", 1)


@pytest.mark.parametrize("adapter", ["codex", "claude-code"])
def test_a_refusing_endpoint_is_an_infrastructure_error_before_the_cli_runs(
        tmp_path: Path, adapter: str) -> None:
    url = closed_port()
    proc = turn(tmp_path, adapter, {"ERPSIM_MODEL_BASE_URL": url})
    outcome = run_turn(proc)
    assert (outcome.status, outcome.exit_code) == ("error", 75)
    assert outcome.infrastructure_error is not None
    assert outcome.infrastructure_error.startswith(
        f"{adapter} adapter: model endpoint {url} does not accept connections (")
    assert outcome.wall_s < 10
    assert not list(proc.output_dir.glob("fake-*.json"))  # the CLI never ran
    assert outcome.usage is not None and outcome.usage["input_tokens"] == 0
    assert outcome.cli_version is not None and "0.0.0-fake" in outcome.cli_version


def test_the_fake_agent_acts_through_erp(tmp_path: Path) -> None:
    # The shape of the integration test: the fake CLI runs `erp` as an agent would.
    client = tmp_path / "cli.py"
    client.write_text(ERP_STUB)
    client.chmod(0o755)
    proc = turn(tmp_path, "codex", {"FAKE_AGENT_SCRIPT": "erp invoices list --status open"},
                erp_client=client)
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    assert record(proc, "codex")["script"] == {
        "exit": 0, "stdout": "erp stub: invoices list --status open token tok-1\n",
        "stderr": ""}


# --- claude-code ----------------------------------------------------------------------

CLAUDE_ARGV = ["-p", "--input-format", "text", "--output-format", "stream-json", "--verbose",
               "--include-partial-messages", "--permission-mode"]


def test_claude_code_runs_print_mode_and_reports_tokens_and_cost(tmp_path: Path) -> None:
    proc = turn(tmp_path, "claude-code")
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    call = record(proc, "claude")
    assert call["argv"] == [*CLAUDE_ARGV, "bypassPermissions"]
    assert call["stdin"] == PROMPT  # on stdin, never argv
    assert call["cwd"] == str(proc.workspace.resolve())
    env = call["env"]
    assert env["CLAUDE_CONFIG_DIR"] == str(proc.home.resolve() / ".claude")
    assert env["HOME"] == str(proc.home.resolve())
    assert env.get("IS_SANDBOX") == ("1" if os.geteuid() == 0 else None)
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "2"
    for quiet in ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER",
                  "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING"):
        assert env[quiet] == "1"
    # every model of modelUsage counts: the side requests on the small model too
    assert outcome.usage == {
        "source": "claude -p --output-format stream-json", "input_tokens": 1000,
        "cache_read_input_tokens": 5000, "cache_creation_input_tokens": 200,
        "output_tokens": 77, "total_tokens": 6277, "cost_usd": 0.0421, "num_turns": 3,
        "duration_ms": 1234, "is_error": False, "session_id": "fake-session",
        "models": {"claude-fake-1": {"input_tokens": 900, "cache_read_input_tokens": 5000,
                                     "cache_creation_input_tokens": 200,
                                     "output_tokens": 70, "cost_usd": 0.04},
                   "claude-fake-small": {"input_tokens": 100, "output_tokens": 7,
                                         "cost_usd": 0.0021}},
        "cli_version": "0.0.0-fake (Claude Code)"}
    assert outcome.cli_version == "0.0.0-fake (Claude Code)"
    assert (proc.output_dir / "answer.md").read_text() == "done by the fake claude\n"
    assert '"total_cost_usd": 0.0421' in outcome.stdout_log.read_text()


def test_claude_code_transcript_goes_to_the_log_folder(tmp_path: Path) -> None:
    proc = turn(tmp_path, "claude-code")
    outcome = run_turn(proc)
    assert outcome.transcript == proc.log_dir / "transcript.jsonl"
    assert not (proc.output_dir / "transcript.jsonl").exists()
    lines = [json.loads(x) for x in outcome.transcript.read_text().splitlines()]
    assert [x["kind"] for x in lines] == ["message", "usage", "tool_call", "tool_result",
                                          "message", "usage"]
    assert lines[1] == {"ts": lines[1]["ts"], "kind": "usage", "scope": "call",
                        "model": "claude-fake-1", "call": "msg_1",
                        "usage": {"input_tokens": 900, "cache_read_input_tokens": 5000,
                                  "cache_creation_input_tokens": 200, "output_tokens": 70}}
    assert lines[2]["tool"] == "Bash" and lines[2]["arguments"] == {
        "command": "erp receipts list"}
    assert lines[3]["call_id"] == "toolu_1" and lines[3]["output"] == "no receipts"
    assert lines[-1]["scope"] == "turn" and lines[-1]["usage"]["total_tokens"] == 6277


def test_claude_code_settings_reach_the_command_line(tmp_path: Path, endpoint: str) -> None:
    proc = turn(tmp_path, "claude-code", {"ERPSIM_MODEL_BASE_URL": endpoint,
                                          "ERPSIM_MODEL_API_KEY": "sk-ant-secret",
                                          "ERPSIM_MODEL": "sonnet",
                                          "ERPSIM_MODEL_SMALL": "haiku-x",
                                          "ERPSIM_MODEL_MAX_RETRIES": "0",
                                          "ERPSIM_MODEL_TIMEOUT_S": "30",
                                          "ERPSIM_CLAUDE_PERMISSION_MODE": "acceptEdits",
                                          "ERPSIM_CLAUDE_ARGS": "--allowedTools Bash"})
    outcome = run_turn(proc)
    call = record(proc, "claude")
    # a variadic option last on argv cannot swallow the prompt: it is on stdin
    assert call["argv"] == [*CLAUDE_ARGV, "acceptEdits", "--model", "sonnet",
                            "--allowedTools", "Bash"]
    assert call["stdin"] == PROMPT
    env = call["env"]
    assert (env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"]) == (endpoint,
                                                                     "sk-ant-secret")
    assert env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == env["ANTHROPIC_SMALL_FAST_MODEL"] == "haiku-x"
    assert (env["CLAUDE_CODE_MAX_RETRIES"], env["API_TIMEOUT_MS"]) == ("0", "30000")
    assert "IS_SANDBOX" not in env  # only for bypassPermissions as root
    log = outcome.stderr_log.read_text()
    assert "ANTHROPIC_API_KEY=***" in log and "sk-ant-secret" not in log


def test_claude_code_cut_short_keeps_the_calls_seen_as_partial_usage(tmp_path: Path) -> None:
    outcome = run_turn(turn(tmp_path, "claude-code", {"FAKE_NO_USAGE": "1"}))
    assert outcome.status == "completed"
    assert outcome.usage is not None and outcome.usage["partial"] is True
    assert outcome.usage["models"] == {"claude-fake-1": {
        "input_tokens": 900, "cache_read_input_tokens": 5000,
        "cache_creation_input_tokens": 200, "output_tokens": 70}}


def test_claude_code_api_error_result_is_an_infrastructure_error(tmp_path: Path) -> None:
    proc = turn(tmp_path, "claude-code", {"FAKE_API_ERROR": "1"})
    outcome = run_turn(proc)
    assert (outcome.status, outcome.exit_code) == ("error", 75)
    assert outcome.infrastructure_error == (
        "claude-code adapter: model API error (overloaded_error): API Error: 529 "
        f"overloaded (exit 75, {proc.stderr_log})")


# --- a CLI that is not there: an infrastructure error, never the agent's crash ---------

CLIS = [("codex", "codex", "ERPSIM_CODEX_BIN"), ("claude-code", "claude", "ERPSIM_CLAUDE_BIN")]


def _missing(tmp: Path, value: str) -> tuple[str, str]:
    """An ``ERPSIM_*_BIN`` value that names no runnable CLI, and what the cause says."""
    if value == "nothing":
        return str(tmp / "no-such-cli"), "no such file (expected the `{exe}` executable)"
    if value == "directory":
        return str(tmp), "not an executable file (expected the `{exe}` executable)"
    if value == "not-executable":
        plain = tmp / "cli.txt"
        plain.write_text("#!/bin/sh\nexit 0\n")
        return str(plain), "not an executable file (expected the `{exe}` executable)"
    return "no-such-command", "no such file on PATH (/usr/bin:/bin) (expected the `{exe}` " \
        "executable)"


@pytest.mark.parametrize(("adapter", "exe", "var"), CLIS)
@pytest.mark.parametrize("value", ["nothing", "directory", "not-executable", "bare-name"])
def test_a_cli_variable_naming_no_runnable_cli_is_an_infrastructure_error(
        tmp_path: Path, adapter: str, exe: str, var: str, value: str) -> None:
    given, says = _missing(tmp_path, value)
    outcome = run_turn(turn(tmp_path, adapter, {"PATH": "/usr/bin:/bin", var: given}))
    assert (outcome.status, outcome.exit_code) == ("error", 75), outcome.stderr_log.read_text()
    assert outcome.infrastructure_error == (
        f"{adapter} adapter: {var}={given}: {says.format(exe=exe)} "
        f"(exit 75, {outcome.stderr_log})")
    assert "Traceback" not in outcome.stderr_log.read_text()
    assert outcome.usage is not None and outcome.usage["input_tokens"] == 0


@pytest.mark.parametrize(("adapter", "exe", "var"), CLIS)
def test_a_cli_missing_from_path_is_an_infrastructure_error(tmp_path: Path, adapter: str,
                                                            exe: str, var: str) -> None:
    outcome = run_turn(turn(tmp_path, adapter, {"PATH": "/usr/bin:/bin"}))
    assert (outcome.status, outcome.exit_code) == ("error", 75)
    assert outcome.infrastructure_error == (
        f"{adapter} adapter: no `{exe}` on PATH (/usr/bin:/bin); set {var} to its path "
        f"(exit 75, {outcome.stderr_log})")


@pytest.mark.parametrize(("adapter", "exe", "var"), CLIS)
def test_a_cli_whose_process_cannot_start_is_an_infrastructure_error(
        tmp_path: Path, adapter: str, exe: str, var: str) -> None:
    broken = tmp_path / exe
    broken.write_text("#!/nonexistent/interpreter\n")
    broken.chmod(0o755)
    outcome = run_turn(turn(tmp_path, adapter, {"PATH": "/usr/bin:/bin", var: str(broken)}))
    assert (outcome.status, outcome.exit_code) == ("error", 75)
    assert outcome.infrastructure_error == (
        f"{adapter} adapter: could not start {broken}: No such file or directory "
        f"(exit 75, {outcome.stderr_log})")
    assert "Traceback" not in outcome.stderr_log.read_text()


# --- script ---------------------------------------------------------------------------


def test_script_runs_the_command_in_erpsim_script(tmp_path: Path) -> None:
    proc = turn(tmp_path, "script", {"ERPSIM_SCRIPT":
                                     'echo "$1|$2|$3|$(pwd)" > "$3/args.txt"; '
                                     'cp "$ERPSIM_PROMPT_FILE" "$ERPSIM_OUTPUT_DIR/copy.md"; '
                                     "exit 4"})
    outcome = run_turn(proc)
    assert outcome.exit_code == 4
    ws = str(proc.workspace.resolve())
    assert (proc.output_dir / "args.txt").read_text() == (
        f"{ws}|{ws}/prompt.md|{ws}/out|{ws}\n")
    assert (proc.output_dir / "copy.md").read_text() == PROMPT


def test_script_runs_the_script_cmd_next_to_it(tmp_path: Path) -> None:
    folder = tmp_path / "my-agent"
    folder.mkdir()
    shutil.copy2(ADAPTERS / "script", folder / "script")
    (folder / "script.cmd").write_text('echo "from script.cmd" > "$3/note.txt"\n')
    proc = turn(tmp_path, folder / "script")
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    assert (proc.output_dir / "note.txt").read_text() == "from script.cmd\n"


def test_script_without_a_command_is_an_infrastructure_error_saying_how_to_give_one(
        tmp_path: Path) -> None:
    outcome = run_turn(turn(tmp_path, "script"))
    assert (outcome.status, outcome.exit_code) == ("error", 75)
    assert outcome.infrastructure_error is not None
    assert outcome.infrastructure_error.startswith(
        "script adapter: no command to run: set ERPSIM_SCRIPT in the turn's environment, or "
        f"put a script.cmd next to {ADAPTERS / 'script'} (exit 75, ")


# --- exit 75: the model endpoint failed ---------------------------------------------------

INFRA = """#!/bin/sh
echo "some progress" >&2
{line}
echo '{{"input_tokens": 0, "output_tokens": 0}}' > "$ERPSIM_USAGE_FILE"
exit 75
"""


def test_exit_75_is_an_infrastructure_error_with_the_adapters_cause(tmp_path: Path) -> None:
    from tests.runs.execution.test_turn import turn_layout

    proc = turn_layout(tmp_path, INFRA.format(
        line="echo 'my-agent adapter: infrastructure error: model endpoint "
             "http://127.0.0.1:9/v1 does not accept connections (refused)' >&2"))
    outcome = run_turn(proc)
    assert (outcome.status, outcome.exit_code, outcome.timed_out) == ("error", 75, False)
    assert outcome.infrastructure_error == (
        "my-agent adapter: model endpoint http://127.0.0.1:9/v1 does not accept "
        f"connections (refused) (exit 75, {proc.stderr_log})")
    # the usage written before the failure is still kept, outside the outputs
    assert outcome.usage == {"input_tokens": 0, "output_tokens": 0}
    assert not (proc.output_dir / "usage.json").exists()
    assert outcome.to_json()["status"] == "error"


def test_exit_75_without_a_cause_line_says_so_and_names_the_log(tmp_path: Path) -> None:
    from tests.runs.execution.test_turn import turn_layout

    proc = turn_layout(tmp_path, INFRA.format(line="echo 'something else' >&2"))
    outcome = run_turn(proc)
    assert outcome.status == "error"
    assert outcome.infrastructure_error == (
        "adapter exited 75 (an infrastructure error) but wrote no 'infrastructure error: "
        f"CAUSE' line to {proc.stderr_log}")


@pytest.mark.parametrize("code", [1, 74, 76])
def test_other_nonzero_exits_stay_crashes(tmp_path: Path, code: int) -> None:
    from tests.runs.execution.test_turn import turn_layout

    proc = turn_layout(tmp_path, INFRA.format(
        line="echo 'x adapter: infrastructure error: not this time' >&2").replace(
        "exit 75", f"exit {code}"))
    outcome = run_turn(proc)
    assert (outcome.status, outcome.infrastructure_error) == ("crashed", None)
