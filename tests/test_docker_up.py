"""``.ci/docker-up`` takes over a state folder left by killed processes, and says why it fails.

A machine whose processes were all killed (a session's end) keeps the engine's state folder,
with ``dockerd.pid`` and containerd's pid file naming processes that are gone, or whose
numbers now belong to other processes. These tests start real engines (``--engine-only``:
no image) in folders of their own under /var/tmp, never the suite's engine. They need root
and Debian's ``dockerd``; with ``CI=true`` (where ``.ci/setup`` installs it) they fail if
either is missing, elsewhere they skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCKER_UP = REPO / ".ci" / "docker-up"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _need_engine_parts() -> None:
    problem = None
    if os.geteuid() != 0:
        problem = "not root (dockerd needs it)"
    elif shutil.which("dockerd") is None:
        problem = "dockerd is not installed"
    if problem is not None:
        if IN_CI:
            pytest.fail(f"{problem} (CI=true: .ci/setup installs docker.io)", pytrace=False)
        pytest.skip(f"{problem}; run .ci/docker-up once as root to enable these tests")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _answers(sock: Path) -> bool:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    try:
        s.connect(str(sock))
        s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
        return b"OK" in s.recv(4096)
    except OSError:
        return False
    finally:
        s.close()


def _gone(pid: int, within: float = 20.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not _cmdline(pid):  # ended (a zombie has no command line)
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def state() -> Iterator[Path]:
    """A state folder of its own (short: unix socket paths under it must stay < 108 bytes)."""
    _need_engine_parts()
    folder = Path(tempfile.mkdtemp(prefix="edk-", dir="/var/tmp"))
    yield folder
    engine = _pid(folder / "dockerd.pid")
    if engine is not None and str(folder) in _cmdline(engine):
        os.kill(engine, signal.SIGCONT)
        os.kill(engine, signal.SIGTERM)  # a graceful stop unmounts its data root
        if not _gone(engine, within=15):
            os.kill(engine, signal.SIGKILL)
            _gone(engine)
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        if str(folder) in _cmdline(pid):  # a containerd the engine left
            os.kill(pid, signal.SIGKILL)
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    for point in sorted((m for m in mounts if m.startswith(f"{folder}/")), reverse=True):
        subprocess.run(["umount", "-l", point], check=False)  # what a killed engine left
    shutil.rmtree(folder, ignore_errors=True)


def docker_up(state: Path, *args: str, wait_s: int = 30,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``.ci/docker-up`` on that state folder."""
    env = {**os.environ, "ERPSIM_DOCKER_STATE": str(state), "ERPSIM_DOCKER_WAIT_S": str(wait_s)}
    return subprocess.run([str(DOCKER_UP), *args], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_pid_files_naming_other_live_processes_are_stale_and_the_engine_starts(
        state: Path) -> None:
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        (state / "exec" / "containerd").mkdir(parents=True)
        (state / "dockerd.pid").write_text(str(bystander.pid))
        (state / "exec" / "containerd" / "containerd.pid").write_text(str(bystander.pid))
        run = docker_up(state, "--engine-only")
        assert run.returncode == 0, run.stderr
        assert run.stdout == f"export DOCKER_HOST=unix://{state}/docker.sock\n"
        assert f"names pid {bystander.pid}, which is not our dockerd (a stale file)" in run.stderr
        assert f"names pid {bystander.pid}, which is not our containerd" in run.stderr
        assert _answers(state / "docker.sock")
        assert bystander.poll() is None  # the other process is left alone
        engine = _pid(state / "dockerd.pid")
        assert engine is not None and engine != bystander.pid
        assert f"unix://{state}/docker.sock" in _cmdline(engine)
    finally:
        bystander.kill()
        bystander.wait()


def test_pid_files_of_processes_that_are_gone_start_a_new_engine(state: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    (state / "dockerd.pid").write_text(str(gone.pid))
    (state / "docker.sock").write_text("")  # a socket file left behind, now a plain file
    run = docker_up(state, "--engine-only")
    assert run.returncode == 0, run.stderr
    assert _answers(state / "docker.sock")


def test_an_engine_that_answers_is_kept(state: Path) -> None:
    first = docker_up(state, "--engine-only")
    assert first.returncode == 0, first.stderr
    engine = _pid(state / "dockerd.pid")
    again = docker_up(state, "--engine-only")
    assert again.returncode == 0, again.stderr
    assert "starting dockerd" not in again.stderr
    assert _pid(state / "dockerd.pid") == engine


def test_an_engine_of_ours_that_does_not_answer_is_stopped_and_another_started(
        state: Path) -> None:
    first = docker_up(state, "--engine-only")
    assert first.returncode == 0, first.stderr
    hung = _pid(state / "dockerd.pid")
    assert hung is not None
    os.kill(hung, signal.SIGSTOP)
    t0 = time.monotonic()
    run = docker_up(state, "--engine-only", wait_s=2)
    took = time.monotonic() - t0
    assert run.returncode == 0, run.stderr
    assert f"dockerd (pid {hung}) is running but not answering yet; waiting up to 2 s" in run.stderr
    assert f"dockerd (pid {hung}) still does not answer; stopping it" in run.stderr
    assert _gone(hung)
    assert _answers(state / "docker.sock")
    assert _pid(state / "dockerd.pid") not in (None, hung)
    # 2 s of waiting (each look may take its 3-s timeout), the stop (TERM then KILL, at most
    # 20 s) and a start: far from the fixed 30 s the old script waited and then gave up.
    assert took < 60, run.stderr


def test_an_engine_that_cannot_start_is_reported_at_once_with_what_it_wrote(
        state: Path) -> None:
    (state / "dockerd.log").write_text("an earlier engine's line\n")
    (state / "data").write_text("")  # the data root is a file: dockerd exits at once
    t0 = time.monotonic()
    run = docker_up(state, "--engine-only", wait_s=60)
    took = time.monotonic() - t0
    assert run.returncode == 1
    assert "dockerd ended before answering" in run.stderr
    assert "Unable to get the full path to root" in run.stderr
    assert "an earlier engine's line" not in run.stderr  # only what this start wrote
    assert took < 30, run.stderr  # not the 60 s it was allowed to wait


@pytest.mark.parametrize(("args", "env", "says"), [
    (["--image-only"], {}, "unknown argument '--image-only' (expected none or --engine-only)"),
    (["--engine-only"], {"ERPSIM_DOCKER_WAIT_S": "soon"},
     "ERPSIM_DOCKER_WAIT_S=soon: expected whole seconds"),
])
def test_bad_arguments_are_refused_before_anything_runs(
        args: list[str], env: dict[str, str], says: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    run = subprocess.run([str(DOCKER_UP), *args], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "ERPSIM_DOCKER_STATE": str(state), **env},
                         check=False)
    assert run.returncode == 2
    assert says in run.stderr
    assert run.stdout == ""
    assert not state.exists()  # nothing made
