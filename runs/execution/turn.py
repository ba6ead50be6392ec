"""Run one agent turn as an external process: local mode here, docker mode in
:mod:`runs.execution.docker_mode`; the contract (:class:`TurnProcess`, :class:`TurnOutcome`,
the usage file) is :mod:`runs.execution.contract`.

Errors: :func:`run_turn` raises nothing for a fault of the environment. An adapter
that is missing or not executable, a docker engine that does not answer, a missing
image: each is returned as ``TurnOutcome.infrastructure_error`` (status ``error``), a
harness fault that marks the attempt as errored, never as an agent's failure. So is an
adapter that exits :data:`~runs.execution.contract.INFRA_EXIT` (75: its model endpoint
failed), with the cause from its stderr (:func:`infrastructure_cause`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from runs.errors import InfrastructureError
from runs.execution.contract import (
    CONTAINER_FILE,
    INFRA_EXIT,
    INFRA_MARK,
    STAGED_TRANSCRIPT,
    TRANSCRIPT_FILE,
    USAGE_FILE,
    USAGE_MAX_BYTES,
    TurnOutcome,
    TurnProcess,
    agent_env,
    validate_usage,
)


def run_turn(proc: TurnProcess) -> TurnOutcome:
    """Run one adapter invocation to its end or its timeout and record what happened."""
    try:
        proc.log_dir.mkdir(parents=True, exist_ok=True)
        # The logs exist whatever happens, so a record's paths always point at files.
        proc.stdout_log.write_bytes(b"")
        proc.stderr_log.write_bytes(b"")
        _remove_stale_files(proc)
        check_adapter(proc.adapter)
        _prepare_dirs(proc)
        if proc.mode == "docker":
            from runs.execution.docker_mode import run_in_container

            outcome = run_in_container(proc)
        else:
            outcome = _run_local(proc)
        if outcome.exit_code == INFRA_EXIT and not outcome.timed_out:
            outcome = replace(outcome, infrastructure_error=infrastructure_cause(
                proc.stderr_log))
    except InfrastructureError as e:
        outcome = _not_run(proc, str(e))
    except OSError as e:  # a folder that cannot be made, a full disk...
        outcome = _not_run(proc, f"the turn could not be run: {e}")
    try:
        usage, usage_error = collect_usage(proc.output_dir, proc.log_dir)
    except OSError as e:
        usage, usage_error = None, f"{proc.output_dir / USAGE_FILE}: could not be read ({e})"
    transcript, transcript_note = collect_transcript(proc)
    version = usage.get("cli_version") if usage is not None else None
    notes = outcome.notes if transcript_note is None else (*outcome.notes, transcript_note)
    return replace(outcome, usage=usage, usage_error=usage_error, transcript=transcript,
                   cli_version=version if isinstance(version, str) else None, notes=notes)


def collect_transcript(proc: TurnProcess) -> tuple[Path | None, str | None]:
    """The turn's transcript in ``LOG_DIR`` (moved there from HOME in docker mode).

    Returns ``(path or None, note or None)``: a staged file that is not a regular file
    (a link could point anywhere on the host) is removed, never followed, and noted.
    """
    dest = proc.log_dir / TRANSCRIPT_FILE
    try:
        if proc.mode == "docker":
            src = proc.home / STAGED_TRANSCRIPT
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISREG(src.lstat().st_mode):
                    _remove(src)
                    return None, f"{src}: the transcript is not a regular file (removed)"
                shutil.move(src, dest)
        st = dest.lstat()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"the transcript could not be kept: {e}"
    if not stat.S_ISREG(st.st_mode):
        _remove(dest)
        return None, f"{dest}: the transcript is not a regular file (removed)"
    return dest, None


def _remove(path: Path) -> None:
    """Remove a file, link or folder (a link itself, never what it points at)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink() or path.exists():
        path.unlink()


def _not_run(proc: TurnProcess, error: str) -> TurnOutcome:
    return TurnOutcome(mode=proc.mode, exit_code=None, timed_out=False, wall_s=0.0,
                       stdout_log=proc.stdout_log, stderr_log=proc.stderr_log,
                       infrastructure_error=error)


def infrastructure_cause(stderr_log: Path, max_bytes: int = 65536) -> str:
    """Why an adapter exited 75: its last stderr line ``WHO infrastructure error: CAUSE``.

    Gives ``WHO: CAUSE (exit 75, LOG)``; without such a line (or a readable log) the
    message says so and names the log.
    """
    unreadable = ""
    try:
        with stderr_log.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - max_bytes))
            tail = f.read().decode("utf-8", "replace")
    except OSError as e:
        tail, unreadable = "", f"; {stderr_log} unreadable: {e.strerror or e}"
    for line in reversed(tail.splitlines()):
        if INFRA_MARK in line:
            head, _, cause = line.partition(INFRA_MARK)
            who = head.strip().rstrip(":").strip()
            cause = " ".join(cause.split()) or "no cause given"
            return f"{who + ': ' if who else ''}{cause} (exit {INFRA_EXIT}, {stderr_log})"
    return (f"adapter exited {INFRA_EXIT} (an infrastructure error) but wrote no "
            f"'{INFRA_MARK} CAUSE' line to {stderr_log}{unreadable}")


def check_adapter(adapter: Path) -> None:
    """Raise :class:`InfrastructureError` unless ``adapter`` is an executable file."""
    if not adapter.exists():
        raise InfrastructureError(f"adapter {adapter} does not exist")
    if not adapter.is_file():
        raise InfrastructureError(f"adapter {adapter} is not a file")
    if not os.access(adapter, os.X_OK):
        raise InfrastructureError(f"adapter {adapter} is not executable "
                                  f"(chmod +x {adapter}; it needs a #! line too)")


def _prepare_dirs(proc: TurnProcess) -> None:
    if not proc.workspace.is_dir():
        raise InfrastructureError(f"workspace {proc.workspace} is not a directory")
    if not proc.prompt_file.is_file():
        raise InfrastructureError(f"prompt file {proc.prompt_file} does not exist")
    proc.output_dir.mkdir(parents=True, exist_ok=True)
    if proc.home_template is not None:
        if not proc.home_template.is_dir():
            raise InfrastructureError(f"home template {proc.home_template} is not a directory")
        shutil.copytree(proc.home_template, proc.home, symlinks=True, dirs_exist_ok=True)
    (proc.home / "tmp").mkdir(parents=True, exist_ok=True)
    if proc.erp_client is not None:
        check_erp_client(proc.erp_client)
        if proc.mode == "local":
            link = proc.home / "bin" / "erp"
            link.parent.mkdir(exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(proc.erp_client.resolve())


def check_erp_client(client: Path) -> None:
    """Raise :class:`InfrastructureError` unless the ``erp`` client file can be run."""
    if not client.is_file():
        raise InfrastructureError(f"erp client {client} does not exist")
    if not os.access(client, os.X_OK):
        raise InfrastructureError(f"erp client {client} is not executable (chmod +x {client}; "
                                  "it needs a '#!/usr/bin/env python3' line)")


def _run_local(proc: TurnProcess) -> TurnOutcome:
    base = {"PATH": os.environ.get("PATH", os.defpath),
            "LANG": os.environ.get("LANG", "C.UTF-8")}
    env = agent_env(proc, home=str(proc.home.resolve()),
                    output_dir=str(proc.output_dir.resolve()),
                    transcript_file=str(proc.log_dir.resolve() / TRANSCRIPT_FILE), base=base)
    if proc.erp_client is not None:
        env["PATH"] = f"{proc.home.resolve() / 'bin'}{os.pathsep}{env['PATH']}"
    argv = [str(proc.adapter.resolve()), "--workspace", str(proc.workspace.resolve()),
            "--prompt-file", str(proc.prompt_file.resolve()),
            "--output-dir", str(proc.output_dir.resolve())]
    notes: list[str] = []
    with proc.stdout_log.open("wb") as out, proc.stderr_log.open("wb") as err:
        started = time.monotonic()
        child, session = _start_gated(argv, proc, env, out, err)
        timed_out = False
        try:
            code: int | None = child.wait(timeout=proc.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            code = None
            _kill_group(child, proc.kill_grace_s)
        except BaseException:  # the runner interrupted (Ctrl-C, SIGTERM): the agent with it
            _signal_group(child.pid, signal.SIGKILL)
            with contextlib.suppress(BaseException):
                child.wait(timeout=5)
                if session is not None:
                    _kill_sessions({child.pid: session[1]}, 5)
                    _remove(session[0])
            raise
        wall = time.monotonic() - started
        # What the adapter left running in its group, or elsewhere in its session, does
        # not outlive the turn.
        left = _signal_group(child.pid, signal.SIGKILL)
        if session is not None:
            left = bool(_kill_sessions({child.pid: session[1]})) or left
            _remove(session[0])
        if left and not timed_out:
            notes.append("processes the adapter left running were killed")
    return TurnOutcome(mode="local", exit_code=code, timed_out=timed_out, wall_s=wall,
                       stdout_log=proc.stdout_log, stderr_log=proc.stderr_log,
                       notes=tuple(notes))


_GATE = """import os, sys
if not os.read(0, 1):
    os._exit(0)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
status = int(sys.argv[1])
os.set_inheritable(status, False)
try:
    os.execv(sys.argv[2], sys.argv[2:])
except OSError as e:
    os.write(status, (e.strerror or str(e)).encode())
os._exit(127)
"""
"""The launcher an adapter starts under: it waits for the runner's go (a byte on stdin)
before it becomes the adapter (``exec``), and never starts it on EOF (the runner died
before it recorded the session); an ``exec`` that fails is reported on the status pipe."""


def _start_gated(argv: list[str], proc: TurnProcess, env: dict[str, str], out: Any,
                 err: Any) -> tuple[subprocess.Popen[bytes], tuple[Path, int] | None]:
    """Start the adapter in a new session, recorded in :data:`SESSION_FILE` before it runs.

    A runner killed between starting the adapter and recording its session would leave an
    agent that :func:`stop_left_running` cannot find; so the child holds before ``exec``
    until the session file is written, and exits unstarted if the runner is gone.
    """
    go_r, go_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _GATE, str(status_w), *argv],
            cwd=proc.workspace, env=env, stdin=go_r, stdout=out, stderr=err,
            start_new_session=True, close_fds=True, pass_fds=(status_w,))
    except BaseException:
        for fd in (go_r, go_w, status_r, status_w):
            os.close(fd)
        raise
    os.close(go_r)
    os.close(status_w)
    try:
        session = _mark_session(proc.log_dir, child.pid)
        with contextlib.suppress(BrokenPipeError):  # killed meanwhile: its exit code tells
            os.write(go_w, b"1")
    except BaseException:
        _signal_group(child.pid, signal.SIGKILL)
        child.wait()
        os.close(status_r)
        raise
    finally:
        os.close(go_w)
    with os.fdopen(status_r, "rb") as status:
        failed = status.read().decode("utf-8", "replace")
    if failed:
        child.wait()
        if session is not None:
            _remove(session[0])
        raise InfrastructureError(f"adapter {proc.adapter} could not be started: {failed} "
                                  "(is its #! line right?)")
    return child, session


SESSION_FILE = ".agent.session"
"""In a local turn's log folder while its adapter runs: ``SID START`` (the adapter's session,
which it leads, and the leader's start time in clock ticks since boot, from
``/proc/SID/stat``). A runner killed outright (SIGKILL, a lost machine) cannot take the
agent's session with it; :func:`stop_left_running` finds it from this file."""


def _start_ticks(pid: int) -> tuple[int, int] | None:
    """``(session, start time)`` of a process from ``/proc`` (None: gone or dead, or no
    ``/proc``)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat_line[stat_line.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):  # dead, waiting for its parent to reap it
        return None
    return int(fields[3]), int(fields[19])  # stat fields 6 (session) and 22 (starttime)


def _mark_session(log_dir: Path, pid: int) -> tuple[Path, int] | None:
    """Write :data:`SESSION_FILE` for the adapter just started: the file and the leader's
    start time (None without ``/proc``)."""
    ticks = _start_ticks(pid)
    if ticks is None:
        return None
    path = log_dir / SESSION_FILE
    path.write_text(f"{pid} {ticks[1]}\n", encoding="ascii")
    return path, ticks[1]


def stop_left_running(folder: Path, wait_s: float = 10.0) -> list[int]:
    """Kill what is left of the agents whose turns under ``folder`` never ended (their
    runner was killed) and wait for it: local agents' sessions (the pids killed are
    returned) and docker turns' containers
    (:func:`~runs.execution.docker_mode.remove_left_containers`).

    Before a killed run's folder is replaced, this keeps its agent from writing into the
    new attempt's workspace (the same absolute path) or holding its files.
    """
    if any(folder.rglob(CONTAINER_FILE)):
        from runs.execution.docker_mode import remove_left_containers  # imports docker

        remove_left_containers(folder)
    wanted: dict[int, int] = {}
    for path in folder.rglob(SESSION_FILE):
        with contextlib.suppress(OSError, ValueError):
            sid, start = (int(x) for x in path.read_text(encoding="ascii").split())
            wanted[sid] = start
    return _kill_sessions(wanted, wait_s)


def _kill_sessions(wanted: dict[int, int], wait_s: float = 10.0) -> list[int]:
    """SIGKILL every process of these sessions (session id: its leader's start time) and
    wait up to ``wait_s`` for them to go; the pids killed.

    A process is the session's when its session id is the one named and it started no
    earlier than the leader: while any process of a session lives, its id is given to no
    other process, and the leader itself must have the very start time.
    """
    if not wanted:
        return []
    killed: list[int] = []
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            ticks = _start_ticks(pid)
            if ticks is None or ticks[0] not in wanted:
                continue
            sid, start = ticks
            if (start != wanted[sid]) if pid == sid else (start < wanted[sid]):
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and any(
            (t := _start_ticks(pid)) is not None and t[0] in wanted for pid in killed):
        time.sleep(0.02)
    return killed


def _kill_group(child: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the adapter's process group, wait ``grace_s`` for it, then SIGKILL it."""
    _signal_group(child.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=grace_s)
    _signal_group(child.pid, signal.SIGKILL)
    child.wait()


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Signal a process group; False when it has no process left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a member changed its uid
        return True
    return True


def _remove_stale_files(proc: TurnProcess) -> None:
    """A usage file or transcript left by an earlier turn must not count for this one."""
    for path in (proc.output_dir / USAGE_FILE, proc.log_dir / USAGE_FILE,
                 proc.log_dir / TRANSCRIPT_FILE, proc.home / STAGED_TRANSCRIPT):
        _remove(path)


def collect_usage(output_dir: Path, log_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """Move ``output_dir/usage.json`` to ``log_dir`` and read it: ``(usage, error)``.

    No file gives ``(None, None)``: unknown. A file that is not a JSON object of
    non-negative numbers under :data:`USAGE_KEYS` gives ``(None, message)``.
    """
    src = output_dir / USAGE_FILE
    dest = log_dir / USAGE_FILE
    try:
        st = src.lstat()
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(st.st_mode):
        # A link could point anywhere on the host: never follow it, never keep it.
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(src)
        else:
            src.unlink()
        return None, f"{src}: not a regular file (ignored and removed)"
    shutil.move(src, dest)
    if st.st_size > USAGE_MAX_BYTES:
        return None, f"{dest}: {st.st_size} bytes, more than the {USAGE_MAX_BYTES} allowed"
    try:
        data = json.loads(dest.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        return None, f"{dest}: not JSON ({e})"
    return validate_usage(data, dest)
