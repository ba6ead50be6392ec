"""The sample adapters in runs/adapters/, run against fake CLIs (tests/runs/fakes/).

No model is reachable here: a fake ``codex`` or ``claude`` on PATH records how it was
called and prints output shaped like the real one's.
"""

from __future__ import annotations

import json
import os
import shutil
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


def test_codex_runs_exec_on_the_prompt_with_a_benchmark_owned_codex_home(tmp_path: Path) -> None:
    proc = turn(tmp_path, "codex")
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    call = record(proc, "codex")
    ws = str(proc.workspace.resolve())
    assert call["argv"] == ["exec", "--json", "--skip-git-repo-check", "--cd", ws,
                            "--sandbox", "workspace-write", "-"]
    assert call["stdin"] == PROMPT
    assert call["cwd"] == ws
    home = proc.home.resolve()
    assert call["env"]["HOME"] == str(home)
    assert call["env"]["CODEX_HOME"] == str(home / ".codex")
    assert (home / ".codex").is_dir()
    assert call["env"]["ERPSIM_TOKEN"] == "tok-1"
    assert (proc.output_dir / "answer.md").read_text() == "done by the fake codex\n"
    assert outcome.usage == {"source": "codex exec --json", "input_tokens": 1200,
                             "cached_input_tokens": 1000, "output_tokens": 34}
    assert outcome.usage_error is None
    assert '"type": "turn.completed"' in outcome.stdout_log.read_text()
    assert f"CODEX_HOME={home / '.codex'}" in outcome.stderr_log.read_text()


def test_codex_settings_reach_the_command_line(tmp_path: Path) -> None:
    proc = turn(tmp_path, "codex", {"ERPSIM_CODEX_MODEL": "gpt-fake",
                                    "ERPSIM_CODEX_SANDBOX": "danger-full-access",
                                    "ERPSIM_CODEX_ARGS": "-c 'model_reasoning_effort=\"high\"'",
                                    "FAKE_EXIT": "1"})
    outcome = run_turn(proc)
    assert (outcome.status, outcome.exit_code) == ("crashed", 1)
    assert record(proc, "codex")["argv"] == [
        "exec", "--json", "--skip-git-repo-check", "--cd", str(proc.workspace.resolve()),
        "--sandbox", "danger-full-access", "--model", "gpt-fake",
        "-c", 'model_reasoning_effort="high"', "-"]
    assert outcome.usage is not None and outcome.usage["model"] == "gpt-fake"


def test_codex_without_usage_events_writes_no_usage(tmp_path: Path) -> None:
    outcome = run_turn(turn(tmp_path, "codex", {"FAKE_NO_USAGE": "1"}))
    assert outcome.status == "completed"
    assert (outcome.usage, outcome.usage_error) == (None, None)


def test_codex_missing_from_path_is_said_in_the_log(tmp_path: Path) -> None:
    outcome = run_turn(turn(tmp_path, "codex", {"PATH": "/usr/bin:/bin"}))
    assert outcome.exit_code == 127
    assert "codex adapter: no `codex` on PATH (set ERPSIM_CODEX_BIN)" in (
        outcome.stderr_log.read_text())


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


def test_claude_code_runs_print_mode_and_reports_tokens_and_cost(tmp_path: Path) -> None:
    proc = turn(tmp_path, "claude-code")
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    call = record(proc, "claude")
    assert call["argv"] == ["-p", "--output-format", "json", "--permission-mode",
                            "bypassPermissions", PROMPT]
    assert call["cwd"] == str(proc.workspace.resolve())
    assert call["env"]["CLAUDE_CONFIG_DIR"] == str(proc.home.resolve() / ".claude")
    assert call["env"]["HOME"] == str(proc.home.resolve())
    assert outcome.usage == {
        "source": "claude -p --output-format json", "input_tokens": 900, "output_tokens": 77,
        "cache_creation_input_tokens": 200, "cache_read_input_tokens": 5000,
        "cost_usd": 0.0421, "num_turns": 3, "duration_ms": 1234, "is_error": False,
        "session_id": "fake-session", "models": ["claude-fake-1"]}
    assert (proc.output_dir / "answer.md").read_text() == "done by the fake claude\n"
    assert '"total_cost_usd": 0.0421' in outcome.stdout_log.read_text()


def test_claude_code_settings_reach_the_command_line(tmp_path: Path) -> None:
    proc = turn(tmp_path, "claude-code", {"ERPSIM_CLAUDE_MODEL": "sonnet",
                                          "ERPSIM_CLAUDE_PERMISSION_MODE": "acceptEdits",
                                          "ERPSIM_CLAUDE_ARGS": "--max-turns 20"})
    run_turn(proc)
    assert record(proc, "claude")["argv"] == [
        "-p", "--output-format", "json", "--permission-mode", "acceptEdits",
        "--model", "sonnet", "--max-turns", "20", PROMPT]


def test_claude_code_without_a_result_object_writes_no_usage(tmp_path: Path) -> None:
    outcome = run_turn(turn(tmp_path, "claude-code", {"FAKE_NO_USAGE": "1"}))
    assert outcome.status == "completed"
    assert (outcome.usage, outcome.usage_error) == (None, None)


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


def test_script_without_a_command_says_how_to_give_one(tmp_path: Path) -> None:
    outcome = run_turn(turn(tmp_path, "script"))
    assert outcome.exit_code == 2
    assert "script adapter: no command to run: set ERPSIM_SCRIPT" in (
        outcome.stderr_log.read_text())


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
        "adapter exited 75 (model endpoint failed) but wrote no 'infrastructure error: "
        f"CAUSE' line to {proc.stderr_log}")


@pytest.mark.parametrize("code", [1, 74, 76])
def test_other_nonzero_exits_stay_crashes(tmp_path: Path, code: int) -> None:
    from tests.runs.execution.test_turn import turn_layout

    proc = turn_layout(tmp_path, INFRA.format(
        line="echo 'x adapter: infrastructure error: not this time' >&2").replace(
        "exit 75", f"exit {code}"))
    outcome = run_turn(proc)
    assert (outcome.status, outcome.infrastructure_error) == ("crashed", None)
