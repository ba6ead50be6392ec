"""One agent turn as a local process: the adapter contract, logs, env, timeout, usage.

The agents here are small scripts honouring the adapter contract, written per test.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from runs.execution.contract import DockerOptions, TurnProcess
from runs.execution.turn import SESSION_FILE, run_turn, stop_left_running

PROMPT = "# Apply the receipts\n\nToday is 2026-05-04.\n"
NO_ENGINE = "unix:///nonexistent/docker.sock"  # checks that come before the engine is asked


def turn_layout(tmp: Path, adapter: str | None, *, name: str = "agent", perm: int = 0o755,
                adapter_path: Path | None = None, **kw: object) -> TurnProcess:
    """A turn as an attempt lays it out, with the adapter ``adapter_path`` or the script
    ``adapter`` written into a folder of its own."""
    attempt = tmp / "attempt"
    ws = attempt / "turns" / "01" / "workspace"
    (ws / "out").mkdir(parents=True)
    (ws / "prompt.md").write_text(PROMPT)
    (attempt / "books.db").write_text("the store: not for the agent")
    path = adapter_path or tmp / "adapters" / name
    if adapter is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(adapter)
        path.chmod(perm)
    args: dict[str, object] = {"timeout_s": 20.0, **kw}
    return TurnProcess(adapter=path, workspace=ws, prompt_file=ws / "prompt.md",
                       output_dir=ws / "out", log_dir=attempt / "turns" / "01" / "logs",
                       home=attempt / "home", **args)  # type: ignore[arg-type]


def gone(pid: int, within_s: float = 3.0) -> bool:
    """The process has ended (a zombie waiting for its reaper counts as ended)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


# --- the contract, exit codes and logs -------------------------------------------------

CONTRACT = """#!/bin/sh
printf '%s\\n' "$@" > "$6/args.txt"
pwd > "$6/cwd.txt"
echo "to stdout"
echo "to stderr" >&2
exit {code}
"""


@pytest.mark.parametrize(("code", "status"), [(0, "completed"), (3, "crashed")])
def test_the_adapter_gets_the_contract_and_its_exit_code_is_recorded(
        tmp_path: Path, code: int, status: str) -> None:
    proc = turn_layout(tmp_path, CONTRACT.format(code=code))
    outcome = run_turn(proc)
    assert (outcome.exit_code, outcome.status, outcome.timed_out) == (code, status, False)
    assert outcome.infrastructure_error is None and outcome.usage is None
    out = proc.output_dir
    ws = str(proc.workspace.resolve())
    assert (out / "args.txt").read_text().split("\n")[:-1] == [
        "--workspace", ws, "--prompt-file", f"{ws}/prompt.md", "--output-dir", f"{ws}/out"]
    assert (out / "cwd.txt").read_text().strip() == ws
    assert outcome.stdout_log == proc.log_dir / "stdout.log"
    assert outcome.stdout_log.read_text() == "to stdout\n"
    assert outcome.stderr_log.read_text() == "to stderr\n"
    assert not list(proc.workspace.rglob("*.log"))
    assert 0 < outcome.wall_s < 5


def test_a_turn_record_is_json_with_paths_relative_to_the_attempt(tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, CONTRACT.format(code=0))
    record = run_turn(proc).to_json(relative_to=tmp_path / "attempt")
    assert json.loads(json.dumps(record)) == record
    assert record["stdout_log"] == "turns/01/logs/stdout.log"
    assert record["stderr_log"] == "turns/01/logs/stderr.log"
    assert {k: record[k] for k in ("status", "mode", "exit_code", "timed_out", "usage",
                                   "usage_error", "infrastructure_error")} == {
        "status": "completed", "mode": "local", "exit_code": 0, "timed_out": False,
        "usage": None, "usage_error": None, "infrastructure_error": None}


# --- environment and home -------------------------------------------------------------

# The interpreter by its path: a `python3` shim on PATH (pyenv) would add its own variables.
ENV_DUMP = f"""#!{sys.executable}
import json, os, sys
out = sys.argv[6]
json.dump(dict(os.environ), open(os.path.join(out, "env.json"), "w"))
"""


def test_the_environment_is_clean_and_home_is_the_benchmarks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-secret-1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-2")
    monkeypatch.setenv("ERPSIM_TEST_PG_URL", "postgresql://secret-3@db/test")
    monkeypatch.setenv("ERPSIM_TOKEN", "the-runners-own-token")
    proc = turn_layout(tmp_path, ENV_DUMP,
                       env={"ERPSIM_API": "unix:///tmp/api.sock", "ERPSIM_TOKEN": "tok-turn-1"})
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    text = (proc.output_dir / "env.json").read_text()
    env = json.loads(text)
    home = str(proc.home.resolve())
    assert env["HOME"] == home != os.environ.get("HOME")
    assert env["TMPDIR"] == f"{home}/tmp" and (proc.home / "tmp").is_dir()
    assert env["ERPSIM_TOKEN"] == "tok-turn-1"
    assert env["ERPSIM_API"] == "unix:///tmp/api.sock"
    assert env["ERPSIM_USAGE_FILE"] == f"{proc.output_dir.resolve()}/usage.json"
    assert env["ERPSIM_TRANSCRIPT_FILE"] == f"{proc.log_dir.resolve()}/transcript.jsonl"
    assert {k for k in env if k.startswith("ERPSIM_")} == {
        "ERPSIM_API", "ERPSIM_TOKEN", "ERPSIM_USAGE_FILE", "ERPSIM_TRANSCRIPT_FILE"}
    # Python adds LC_CTYPE itself under a C locale (PEP 538).
    assert set(env) <= {"PATH", "LANG", "HOME", "TMPDIR", "LC_CTYPE", "ERPSIM_API",
                        "ERPSIM_TOKEN", "ERPSIM_USAGE_FILE", "ERPSIM_TRANSCRIPT_FILE"}
    for secret in ("sk-live-secret-1", "aws-secret-2", "secret-3", "the-runners-own-token"):
        assert secret not in text


def test_the_extras_cannot_move_home(tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, ENV_DUMP, env={"HOME": "/root", "TMPDIR": "/tmp"})
    run_turn(proc)
    env = json.loads((proc.output_dir / "env.json").read_text())
    assert env["HOME"] == str(proc.home.resolve())
    assert env["TMPDIR"] == f"{proc.home.resolve()}/tmp"


def test_a_home_template_is_copied_into_the_home(tmp_path: Path) -> None:
    template = tmp_path / "proto-home"
    (template / ".codex").mkdir(parents=True)
    (template / ".codex" / "config.toml").write_text("model = 'x'\n")
    proc = turn_layout(tmp_path, "#!/bin/sh\ncat \"$HOME/.codex/config.toml\"\n",
                       home_template=template)
    outcome = run_turn(proc)
    assert outcome.stdout_log.read_text() == "model = 'x'\n"


ERP_STUB = """#!/usr/bin/env python3
import os, sys
print("erp stub:", " ".join(sys.argv[1:]), "token", os.environ.get("ERPSIM_TOKEN"))
"""


def test_the_erp_client_is_on_path(tmp_path: Path) -> None:
    client = tmp_path / "client" / "cli.py"
    client.parent.mkdir()
    client.write_text(ERP_STUB)
    client.chmod(0o755)
    proc = turn_layout(tmp_path, "#!/bin/sh\nerp reports aging > \"$6/aging.txt\"\n",
                       erp_client=client, env={"ERPSIM_TOKEN": "tok-7"})
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    assert (proc.output_dir / "aging.txt").read_text() == "erp stub: reports aging token tok-7\n"


# --- timeout and process groups -------------------------------------------------------

STUBBORN = """#!/bin/sh
trap '' TERM
sleep 300 &
echo $! > "$6/grandchild.pid"
echo started
wait
"""


def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    # The adapter and its grandchild ignore SIGTERM: only SIGKILL, after the grace, ends them.
    proc = turn_layout(tmp_path, STUBBORN, timeout_s=1.0, kill_grace_s=0.3)
    started = time.monotonic()
    outcome = run_turn(proc)
    assert time.monotonic() - started < 4
    assert (outcome.timed_out, outcome.exit_code, outcome.status) == (True, None, "timeout")
    assert 1.0 <= outcome.wall_s < 3
    assert outcome.stdout_log.read_text() == "started\n"
    pid = int((proc.output_dir / "grandchild.pid").read_text())
    assert gone(pid), f"grandchild {pid} outlived the turn"


def test_processes_left_running_are_killed_when_the_adapter_exits(tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, '#!/bin/sh\nsleep 300 &\necho $! > "$6/bg.pid"\nexit 0\n')
    outcome = run_turn(proc)
    assert outcome.status == "completed"
    assert outcome.notes == ("processes the adapter left running were killed",)
    assert gone(int((proc.output_dir / "bg.pid").read_text()))


def test_a_process_moved_to_another_group_of_the_session_is_killed_too(
        tmp_path: Path) -> None:
    # A job-control shell puts its background job in a process group of its own: the
    # adapter's group kill misses it, its session does not.
    proc = turn_layout(tmp_path, f"""#!{sys.executable}
import os, subprocess, sys
child = subprocess.Popen(["sleep", "300"], process_group=0)
open(os.path.join(sys.argv[6], "bg.pid"), "w").write(str(child.pid))
""")
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    pid = int((proc.output_dir / "bg.pid").read_text())
    assert gone(pid), f"{pid}, in another process group of the agent's session, outlived it"
    assert outcome.notes == ("processes the adapter left running were killed",)
    assert not (proc.log_dir / SESSION_FILE).exists()


def test_an_agent_whose_runner_died_is_stopped_from_its_session_file(tmp_path: Path) -> None:
    import subprocess

    proc = turn_layout(tmp_path, "#!/bin/sh\nexit 0\n")
    agent = subprocess.Popen(["sleep", "300"], start_new_session=True)
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)  # not the agent's
    try:
        stat = Path(f"/proc/{agent.pid}/stat").read_text().rsplit(")", 1)[1].split()
        proc.log_dir.mkdir(parents=True)
        (proc.log_dir / SESSION_FILE).write_text(f"{agent.pid} {stat[19]}\n")
        # a file naming a session whose leader started at another time: a reused pid
        stale = tmp_path / "attempt" / "turns" / "02" / "logs"
        stale.mkdir(parents=True)
        (stale / SESSION_FILE).write_text(f"{other.pid} {int(stat[19]) - 1}\n")
        assert stop_left_running(tmp_path / "attempt") == [agent.pid]
        assert agent.wait(timeout=5) == -9
        assert other.poll() is None
    finally:
        for p in (agent, other):
            p.kill()
            p.wait()



@pytest.mark.parametrize("killed_in", ["_mark_session", "write"])
def test_a_runner_killed_before_it_records_the_session_never_starts_the_agent(
        tmp_path: Path, killed_in: str) -> None:
    # The gap the session file cannot cover: the adapter started, the runner killed before
    # it wrote down the adapter's session (or before its go). The adapter must never run,
    # so nothing is left that stop_left_running could not find.
    import subprocess

    proc = turn_layout(tmp_path, f"""#!/bin/sh
touch "{tmp_path}/ran"
exec sleep 300
""")
    runner = f"""
import os, signal
from pathlib import Path
import runs.execution.turn as turn
from tests.runs.execution.test_turn import turn_layout
proc = turn_layout(Path({str(tmp_path)!r}), None, adapter_path=Path({str(proc.adapter)!r}))
die = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
if {killed_in!r} == "write":
    real = os.write
    turn.os.write = lambda fd, data: die() if data == b"1" else real(fd, data)
else:
    turn._mark_session = die
turn.run_turn(proc)
"""
    (tmp_path / "attempt").rename(tmp_path / "unused")
    done = subprocess.run([sys.executable, "-c", runner], cwd=Path(__file__).parents[3],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -9, done.stderr
    time.sleep(0.5)
    assert not (tmp_path / "ran").exists(), "the adapter ran after its runner was killed"
    assert stop_left_running(tmp_path / "attempt") == []


def test_the_adapter_reads_no_stdin_and_runs_in_its_own_session(tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, """#!/bin/sh
cat > "$3/stdin.txt"
ps -o sid= -p $$ > "$3/sid"
echo $$ > "$3/pid"
""".replace("$3", "$6"))
    outcome = run_turn(proc)
    assert outcome.status == "completed", outcome.stderr_log.read_text()
    assert (proc.output_dir / "stdin.txt").read_text() == ""
    assert (proc.output_dir / "sid").read_text().strip() == (
        proc.output_dir / "pid").read_text().strip()

# --- usage.json -----------------------------------------------------------------------


def test_usage_is_read_from_the_output_dir_and_kept_in_the_logs(tmp_path: Path) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 20, "cost_usd": 0.012, "model": "m-1"}
    proc = turn_layout(tmp_path, "#!/bin/sh\ncat > \"$ERPSIM_USAGE_FILE\" <<'J'\n"
                       f"{json.dumps(usage)}\nJ\n")
    outcome = run_turn(proc)
    assert outcome.usage == usage and outcome.usage_error is None
    assert not (proc.output_dir / "usage.json").exists()  # not one of the agent's outputs
    assert json.loads((proc.log_dir / "usage.json").read_text()) == usage


def test_no_usage_file_means_unknown_not_zero(tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, "#!/bin/sh\nexit 0\n")
    outcome = run_turn(proc)
    assert (outcome.usage, outcome.usage_error) == (None, None)
    assert outcome.to_json()["usage"] is None


def test_a_usage_file_from_an_earlier_turn_is_not_counted(tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, "#!/bin/sh\nexit 0\n")
    (proc.output_dir / "usage.json").write_text('{"input_tokens": 5}')
    proc.log_dir.mkdir(parents=True)
    (proc.log_dir / "usage.json").write_text('{"input_tokens": 5}')
    outcome = run_turn(proc)
    assert (outcome.usage, outcome.usage_error) == (None, None)
    assert not (proc.log_dir / "usage.json").exists()


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not JSON (Expecting property name enclosed in double quotes"),
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"output_tokens": -5}', "output_tokens must be a number >= 0 or null (got -5)"),
    ('{"cost_usd": "0.10"}', "cost_usd must be a number >= 0 or null (got '0.10')"),
    ('{"input_tokens": true}', "input_tokens must be a number >= 0 or null (got True)"),
])
def test_a_malformed_usage_file_is_recorded_not_raised(tmp_path: Path, content: str,
                                                       message: str) -> None:
    proc = turn_layout(tmp_path, f"#!/bin/sh\nprintf '%s' '{content}' > \"$6/usage.json\"\n")
    outcome = run_turn(proc)
    assert outcome.status == "completed" and outcome.usage is None
    assert outcome.usage_error is not None
    assert outcome.usage_error.startswith(f"{proc.log_dir / 'usage.json'}: {message}")


def test_a_usage_link_is_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"input_tokens": 1}')
    proc = turn_layout(tmp_path, f"#!/bin/sh\nln -s {secret} \"$6/usage.json\"\n")
    outcome = run_turn(proc)
    assert outcome.usage is None
    assert outcome.usage_error == (f"{proc.output_dir / 'usage.json'}: not a regular file "
                                   "(ignored and removed)")
    assert secret.read_text() == '{"input_tokens": 1}'
    assert not (proc.output_dir / "usage.json").is_symlink()


# --- infrastructure errors ------------------------------------------------------------


def test_a_non_executable_adapter_is_an_infrastructure_error(tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, "#!/bin/sh\nexit 0\n", perm=0o644)
    outcome = run_turn(proc)
    assert outcome.infrastructure_error == (
        f"adapter {proc.adapter} is not executable (chmod +x {proc.adapter}; "
        "it needs a #! line too)")
    assert (outcome.status, outcome.exit_code, outcome.timed_out) == ("error", None, False)
    assert outcome.stdout_log.read_text() == outcome.stderr_log.read_text() == ""


def test_a_missing_adapter_is_an_infrastructure_error(tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, None)
    outcome = run_turn(proc)
    assert outcome.infrastructure_error == f"adapter {proc.adapter} does not exist"
    assert outcome.status == "error"


def test_an_adapter_that_cannot_start_is_an_infrastructure_error(tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, "#!/no/such/interpreter\n")
    outcome = run_turn(proc)
    assert outcome.infrastructure_error == (
        f"adapter {proc.adapter} could not be started: No such file or directory "
        "(is its #! line right?)")


def test_a_non_executable_erp_client_is_an_infrastructure_error(tmp_path: Path) -> None:
    client = tmp_path / "cli.py"
    client.write_text(ERP_STUB)
    proc = turn_layout(tmp_path, "#!/bin/sh\nexit 0\n", erp_client=client)
    outcome = run_turn(proc)
    assert outcome.infrastructure_error == (
        f"erp client {client} is not executable (chmod +x {client}; it needs a "
        "'#!/usr/bin/env python3' line)")


def test_an_unreachable_docker_engine_is_an_infrastructure_error(tmp_path: Path) -> None:
    url = f"unix://{tmp_path}/no-engine.sock"
    proc = turn_layout(tmp_path, "#!/bin/sh\nexit 0\n", mode="docker",
                       docker=DockerOptions(base_url=url))
    outcome = run_turn(proc)
    assert outcome.status == "error"
    assert outcome.infrastructure_error is not None
    assert outcome.infrastructure_error.startswith(f"docker engine unreachable at {url}: ")
    assert outcome.infrastructure_error.endswith(
        '(start one and set DOCKER_HOST, e.g. eval "$(.ci/docker-up)")')


def test_a_missing_api_socket_is_an_infrastructure_error(tmp_path: Path) -> None:
    sock = tmp_path / "gone.sock"
    proc = turn_layout(tmp_path, "#!/bin/sh\nexit 0\n", mode="docker",
                       docker=DockerOptions(api_socket=sock, base_url=NO_ENGINE))
    assert run_turn(proc).infrastructure_error == (
        f"API socket {sock} does not exist or is not a socket")


def test_an_adapter_folder_holding_the_workspace_is_refused_in_docker_mode(
        tmp_path: Path) -> None:
    # The whole folder is mounted: here it would hold the attempt, books.db included.
    proc = turn_layout(tmp_path, None, adapter_path=tmp_path / "agent", mode="docker",
                       docker=DockerOptions(base_url=NO_ENGINE))
    proc.adapter.write_text("#!/bin/sh\nexit 0\n")
    proc.adapter.chmod(0o755)
    error = run_turn(proc).infrastructure_error
    assert error == (f"adapter folder {tmp_path.resolve()} holds the workspace "
                     f"{proc.workspace.resolve()}; the whole folder is mounted in the "
                     "container, so put the adapter in a folder of its own")


def test_logs_inside_the_workspace_are_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with pytest.raises(ValueError, match=r"log_dir .*/ws/logs is inside the workspace"):
        TurnProcess(adapter=tmp_path / "a", workspace=ws, prompt_file=ws / "prompt.md",
                    output_dir=ws / "out", log_dir=ws / "logs", home=tmp_path / "home")


def test_docker_mode_needs_the_prompt_in_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with pytest.raises(ValueError, match=r"prompt_file .*/elsewhere.md is outside the workspace"):
        TurnProcess(adapter=tmp_path / "a", workspace=ws, prompt_file=tmp_path / "elsewhere.md",
                    output_dir=ws / "out", log_dir=tmp_path / "logs", home=tmp_path / "home",
                    mode="docker")


def test_a_timeout_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"timeout_s must be > 0 \(got 0\)"):
        turn_layout(tmp_path, None, timeout_s=0)
