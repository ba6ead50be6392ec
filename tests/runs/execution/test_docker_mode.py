"""Docker mode against a real engine: mounts, ownership, network, limits, timeout, cleanup.

These tests need ``DOCKER_HOST`` answering and the agent image on that engine
(``ERPSIM_AGENT_IMAGE``, default ``erpsim-agent:bookworm``). ``eval "$(.ci/docker-up)"``
provides both. With ``CI=true`` a missing engine or image fails the tests loudly;
elsewhere they are skipped with that advice.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socketserver
import ssl
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
import requests
from docker.errors import DockerException, ImageNotFound

from runs.execution.contract import (
    CONTAINER_FILE,
    DEFAULT_IMAGE,
    DockerOptions,
    TurnOutcome,
    TurnProcess,
)
from runs.execution.turn import run_turn, stop_left_running
from tests.runs.execution.test_turn import ERP_STUB, PROMPT, turn_layout

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
IMAGE = os.environ.get("ERPSIM_AGENT_IMAGE", DEFAULT_IMAGE)
ADAPTERS = Path(__file__).resolve().parents[3] / "runs" / "adapters"
FAKES = Path(__file__).resolve().parents[1] / "fakes"


@pytest.fixture(scope="module")
def engine() -> Iterator[docker.DockerClient]:
    """The docker engine at DOCKER_HOST, with the agent image; else fail (CI) or skip."""
    host = os.environ.get("DOCKER_HOST")
    problem: str | None = None
    client: docker.DockerClient | None = None
    if not host:
        problem = "DOCKER_HOST is not set"
    else:
        try:
            client = docker.DockerClient(base_url=host)
            client.ping()
            client.images.get(IMAGE)
        except ImageNotFound:
            problem = f"image {IMAGE} is not on the docker engine at {host}"
        except DockerException as e:
            problem = f"the docker engine at {host} does not answer: {e}"
    if problem is not None or client is None:
        if IN_CI:
            pytest.fail(f"{problem} (CI=true: the docker tests must run; .ci/run starts the "
                        "engine and builds the image with .ci/docker-up)", pytrace=False)
        pytest.skip(f'{problem}; to enable the docker tests: eval "$(.ci/docker-up)"')
    yield client
    client.close()


def docker_turn(tmp: Path, adapter: str | None, *, label: str,
                options: dict[str, Any] | None = None, **kw: Any) -> TurnProcess:
    """A docker-mode turn labelled ``erpsim.test=<label>`` (to find leftovers)."""
    opts = DockerOptions(**{"image": IMAGE, "labels": {"erpsim.test": label}, **(options or {})})
    return turn_layout(tmp, adapter, mode="docker", docker=opts, **kw)


def leftovers(client: docker.DockerClient, label: str) -> list[Any]:
    """Containers of one test still on the engine."""
    return list(client.containers.list(all=True, filters={"label": f"erpsim.test={label}"}))


def run_checked(proc: TurnProcess) -> TurnOutcome:
    """Run a turn that must complete; show its logs if it does not."""
    outcome = run_turn(proc)
    assert outcome.status == "completed", (
        f"{outcome}\nstdout: {outcome.stdout_log.read_text()}\n"
        f"stderr: {outcome.stderr_log.read_text()}")
    return outcome


# --- the workspace, ownership, logs ---------------------------------------------------


def test_a_turn_writes_into_the_workspace_as_our_uid(engine: docker.DockerClient,
                                                      tmp_path: Path) -> None:
    label = uuid.uuid4().hex
    script = ('echo "uid=$(id -u):$(id -g) home=$HOME pwd=$(pwd)"; echo oops >&2; '
              'printf "%s|%s|%s" "$1" "$2" "$3" > "$3/args.txt"; '
              'echo "{\\"input_tokens\\": 3}" > "$ERPSIM_USAGE_FILE"')
    proc = turn_layout(tmp_path, None, mode="docker", adapter_path=ADAPTERS / "script",
                       env={"ERPSIM_SCRIPT": script},
                       docker=DockerOptions(image=IMAGE, labels={"erpsim.test": label}))
    outcome = run_checked(proc)
    assert outcome.mode == "docker" and outcome.exit_code == 0
    written = proc.output_dir / "args.txt"
    assert written.read_text() == "/workspace|/workspace/prompt.md|/workspace/out"
    st = written.stat()
    assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
    assert outcome.stdout_log.read_text() == (
        f"uid={os.getuid()}:{os.getgid()} home=/home/agent pwd=/workspace\n")
    assert outcome.stderr_log.read_text() == "oops\n"
    assert outcome.usage == {"input_tokens": 3}
    assert leftovers(engine, label) == []
    assert not (proc.log_dir / CONTAINER_FILE).exists()  # removed with its container


def test_a_container_a_killed_runner_left_is_removed_from_its_file(
        engine: docker.DockerClient, tmp_path: Path) -> None:
    label = uuid.uuid4().hex
    left = engine.containers.create(IMAGE, command=["sleep", "300"], init=True,
                                    labels={"erpsim.test": label}, network_mode="none")
    left.start()
    attempt = tmp_path / "attempt"
    try:
        for turn, text in (("01", f"{os.environ['DOCKER_HOST']}\n{left.id}\n"),
                           ("02", f"{os.environ['DOCKER_HOST']}\n{'0' * 64}\n"),  # gone
                           ("03", "unix:///nonexistent/docker.sock\nabc\n"),  # no engine
                           ("04", "garbage")):
            logs = attempt / "turns" / turn / "logs"
            logs.mkdir(parents=True)
            (logs / CONTAINER_FILE).write_text(text)
        assert stop_left_running(attempt) == []  # no local session
        assert leftovers(engine, label) == []
    finally:
        with contextlib.suppress(DockerException):
            left.remove(force=True)


# --- what the container can see -------------------------------------------------------

INSPECT = """#!/usr/bin/env python3
import json, os, socket, subprocess, sys
out = sys.argv[6]
found = []
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    found += [os.path.join(root, n) for n in files + dirs]
s = socket.socket(socket.AF_UNIX)
s.connect("/run/erpsim/api.sock")
s.sendall(b"ping\\n")
reply = s.recv(100).decode()
erp = subprocess.run(["erp", "reports", "aging"], capture_output=True, text=True)
info = {
    "root": sorted(os.listdir("/")),
    "workspace": sorted(os.path.relpath(os.path.join(r, n), "/workspace")
                        for r, ds, fs in os.walk("/workspace") for n in ds + fs),
    "mountinfo": open("/proc/self/mountinfo").read().splitlines(),
    "net": sorted(os.listdir("/sys/class/net")),
    "all": found,
    "api_reply": reply,
    "erp": erp.stdout,
    "env": dict(os.environ),
}
json.dump(info, open(os.path.join(out, "inspect.json"), "w"))
"""

# Mount points every container has, whatever the runner asks for.
ENGINE_MOUNTS = {"/etc/resolv.conf", "/etc/hostname", "/etc/hosts", "/usr/sbin/docker-init"}
VIRTUAL = ("/proc", "/dev", "/sys")


class _Pong(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.wfile.write(b"pong:" + self.rfile.readline().strip())


def test_the_container_sees_only_the_allowed_mounts(engine: docker.DockerClient,
                                                    tmp_path: Path) -> None:
    label = uuid.uuid4().hex
    short = Path(tempfile.mkdtemp(prefix="erpsim-api-", dir="/tmp"))  # sun_path is short
    sock = short / "api.sock"
    server = socketserver.ThreadingUnixStreamServer(str(sock), _Pong)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = tmp_path / "erp-client" / "cli.py"
    client.parent.mkdir()
    client.write_text(ERP_STUB)
    client.chmod(0o755)
    try:
        proc = docker_turn(tmp_path, INSPECT, label=label, options={"api_socket": sock},
                           erp_client=client, env={"ERPSIM_TOKEN": "tok-9",
                                                   "ERPSIM_API": f"unix://{sock}"})
        attempt = tmp_path / "attempt"
        for hidden in ("world/truth.json", "reference/answer.csv", "checks/spec.yaml"):
            (attempt / hidden).parent.mkdir(parents=True, exist_ok=True)
            (attempt / hidden).write_text("hidden from the agent")
        (proc.workspace / "inbox").mkdir()
        (proc.workspace / "inbox" / "remittance.csv").write_text("a,b\n")
        run_checked(proc)
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(short)
    info = json.loads((proc.output_dir / "inspect.json").read_text())

    # Mount points: the five the runner gives, and the engine's own.
    points = {line.split()[4] for line in info["mountinfo"]}
    ours = {p for p in points if p != "/" and not p.startswith(VIRTUAL)} - ENGINE_MOUNTS
    assert ours == {"/workspace", "/home/agent", "/adapter", "/run/erpsim/api.sock",
                    "/usr/local/bin/erp"}
    roots = {line.split()[4]: line.split()[3] for line in info["mountinfo"]}
    assert roots["/workspace"].endswith("/attempt/turns/01/workspace")
    assert roots["/adapter"].endswith("/adapters")
    for line in info["mountinfo"]:  # read-only where it must be
        point, options = line.split()[4], line.split()[5].split(",")
        if point in ("/adapter", "/run/erpsim/api.sock", "/usr/local/bin/erp"):
            assert "ro" in options, line

    # What the workspace holds is what the runner put there, nothing of the attempt's.
    assert info["workspace"] == ["inbox", "inbox/remittance.csv", "out", "prompt.md"]
    names = {os.path.basename(p) for p in info["all"]}
    for hidden in ("books.db", "truth.json", "answer.csv", "spec.yaml", "pyproject.toml",
                   "summary.json"):
        assert hidden not in names, [p for p in info["all"] if p.endswith(hidden)]
    host_paths = (str(tmp_path), str(ADAPTERS.parents[1]), "/var/tmp/erpsim-docker")
    assert not [p for p in info["all"] if p.startswith(host_paths)]
    assert "/adapter/agent" in info["all"]

    # The API over its socket, the erp client, the environment.
    assert info["api_reply"] == "pong:ping"
    assert info["erp"] == "erp stub: reports aging token tok-9\n"
    env = info["env"]
    assert env["ERPSIM_API"] == "unix:///run/erpsim/api.sock"
    assert env["ERPSIM_TOKEN"] == "tok-9"
    assert (env["HOME"], env["TMPDIR"]) == ("/home/agent", "/home/agent/tmp")
    assert env["ERPSIM_USAGE_FILE"] == "/workspace/out/usage.json"
    assert env["ERPSIM_TRANSCRIPT_FILE"] == "/home/agent/.erpsim/transcript.jsonl"
    assert info["net"] == ["lo"]
    assert leftovers(engine, label) == []


NET = '#!/bin/sh\nls /sys/class/net > "$6/net.txt"\n'


def test_network_off_leaves_only_loopback(engine: docker.DockerClient, tmp_path: Path) -> None:
    proc = docker_turn(tmp_path, NET, label=uuid.uuid4().hex)
    run_checked(proc)
    assert (proc.output_dir / "net.txt").read_text().split() == ["lo"]


def test_network_on_uses_the_given_mode(engine: docker.DockerClient, tmp_path: Path) -> None:
    # The engine .ci/docker-up starts has no bridge: "host" is its way to a network.
    proc = docker_turn(tmp_path, NET, label=uuid.uuid4().hex,
                       options={"network": True, "network_mode": "host"})
    run_checked(proc)
    assert sorted((proc.output_dir / "net.txt").read_text().split()) == sorted(
        os.listdir("/sys/class/net"))


# --- limits, timeout, cleanup ---------------------------------------------------------

LIMITS = """#!/bin/sh
for i in $(seq 1 200); do [ -e /workspace/go ] && break; sleep 0.1; done
cat /sys/fs/cgroup/memory/memory.limit_in_bytes > "$6/memory.txt" 2>/dev/null \\
  || cat /sys/fs/cgroup/memory.max > "$6/memory.txt"
"""


def test_cpu_and_memory_limits_are_set_on_the_container(engine: docker.DockerClient,
                                                        tmp_path: Path) -> None:
    label = uuid.uuid4().hex
    proc = docker_turn(tmp_path, LIMITS, label=label,
                       options={"cpus": 1.5, "memory": "300m", "pids_limit": 256})
    done: list[TurnOutcome] = []
    runner = threading.Thread(target=lambda: done.append(run_turn(proc)))
    runner.start()
    try:
        deadline = time.monotonic() + 20
        while not (found := leftovers(engine, label)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert found, "the turn's container never appeared"
        attrs = found[0].attrs
    finally:
        (proc.workspace / "go").touch()
        runner.join(30)
    host = attrs["HostConfig"]
    assert host["NanoCpus"] == 1_500_000_000
    assert host["Memory"] == host["MemorySwap"] == 300 * 1024 * 1024
    assert host["PidsLimit"] == 256
    assert host["NetworkMode"] == "none"
    assert host["Init"] is True
    assert attrs["Config"]["User"] == f"{os.getuid()}:{os.getgid()}"
    assert attrs["Config"]["Labels"]["erpsim"] == "1"
    assert done and done[0].status == "completed"
    assert int((proc.output_dir / "memory.txt").read_text()) == 300 * 1024 * 1024
    assert leftovers(engine, label) == []


def test_a_sleeping_agent_is_killed_at_its_timeout(engine: docker.DockerClient,
                                                   tmp_path: Path) -> None:
    label = uuid.uuid4().hex
    proc = docker_turn(tmp_path, "#!/bin/sh\necho going to sleep\nsleep 300\n", label=label,
                       timeout_s=1.5)
    started = time.monotonic()
    outcome = run_turn(proc)
    assert (outcome.timed_out, outcome.exit_code, outcome.status) == (True, None, "timeout")
    assert 1.5 <= outcome.wall_s < 5 and time.monotonic() - started < 10
    assert outcome.stdout_log.read_text() == "going to sleep\n"
    assert outcome.infrastructure_error is None
    assert leftovers(engine, label) == []


def test_a_missing_image_is_an_infrastructure_error(engine: docker.DockerClient,
                                                    tmp_path: Path) -> None:
    label = uuid.uuid4().hex
    proc = docker_turn(tmp_path, "#!/bin/sh\nexit 0\n", label=label,
                       options={"image": "erpsim-no-such-image:0"})
    outcome = run_turn(proc)
    assert outcome.status == "error"
    assert outcome.infrastructure_error == (
        f"image erpsim-no-such-image:0 is not on the docker engine at "
        f"{os.environ['DOCKER_HOST']} (.ci/docker-up builds erpsim-agent:bookworm)")
    assert leftovers(engine, label) == []


# --- a sample adapter in the bare image -----------------------------------------------


def test_the_codex_adapter_runs_in_the_bare_image(engine: docker.DockerClient,
                                                  tmp_path: Path) -> None:
    proc = turn_layout(tmp_path, None, mode="docker", adapter_path=ADAPTERS / "codex",
                       env={"PATH": "/home/agent/bin:/usr/local/bin:/usr/bin:/bin"},
                       docker=DockerOptions(image=IMAGE,
                                            labels={"erpsim.test": uuid.uuid4().hex}))
    (proc.home / "bin").mkdir(parents=True)
    shutil.copy2(FAKES / "codex", proc.home / "bin" / "codex")
    outcome = run_checked(proc)
    call = json.loads((proc.output_dir / "fake-codex.json").read_text())
    assert call["argv"][:7] == ["exec", "--json", "--skip-git-repo-check", "--cd",
                                "/workspace", "--sandbox", "danger-full-access"]
    assert call["argv"][-1] == "-"
    assert call["stdin"] == PROMPT and call["cwd"] == "/workspace"
    assert call["env"]["CODEX_HOME"] == "/home/agent/.codex"
    assert (proc.home / ".codex").is_dir()
    assert outcome.usage is not None and outcome.usage["input_tokens"] == 1200
    assert outcome.cli_version == "codex-cli 0.0.0-fake"
    assert (proc.log_dir / "usage.json").is_file()
    # the transcript, written in the turn's HOME, is moved to the log folder
    assert outcome.transcript == proc.log_dir / "transcript.jsonl"
    assert '"kind": "tool_call"' in outcome.transcript.read_text()
    assert not (proc.home / ".erpsim" / "transcript.jsonl").exists()
    assert not (proc.output_dir / "transcript.jsonl").exists()


TRANSCRIPT_LINK = ('#!/bin/sh\nmkdir -p "$HOME/.erpsim"\n'
                   'ln -s /etc/passwd "$ERPSIM_TRANSCRIPT_FILE"\n')


def test_a_transcript_link_is_removed_not_followed(engine: docker.DockerClient,
                                                  tmp_path: Path) -> None:
    proc = docker_turn(tmp_path, TRANSCRIPT_LINK, label=uuid.uuid4().hex)
    outcome = run_checked(proc)
    assert outcome.transcript is None
    assert not (proc.log_dir / "transcript.jsonl").exists()
    assert not (proc.home / ".erpsim" / "transcript.jsonl").is_symlink()
    assert any("the transcript is not a regular file (removed)" in n for n in outcome.notes)


def test_a_wait_timeout_raises_what_docker_mode_catches(engine: docker.DockerClient) -> None:
    # On dockerd 20.10 over a unix socket it is requests' ConnectionError, not ReadTimeout.
    container = engine.containers.create(IMAGE, ["sleep", "30"], network_mode="none",
                                         labels={"erpsim": "1", "erpsim.test": "wait"})
    try:
        container.start()
        with pytest.raises((requests.exceptions.ConnectionError,
                            requests.exceptions.ReadTimeout)):
            container.wait(timeout=0.5)
    finally:
        container.remove(force=True)


# --- the model relay: the model endpoint, and nothing else, without a network ----------

PROBE = r'''#!/usr/bin/env python3
import json, os, socket, sys, urllib.parse, urllib.request
out = {}
url = os.environ["ERPSIM_MODEL_BASE_URL"]
out["url"] = url
try:
    out["reply"] = urllib.request.urlopen(url + "/ping", timeout=10).read().decode()
except Exception as e:  # a 502 from the relay, say
    out["reply"] = f"{type(e).__name__}: {getattr(e, 'code', '')} " + (
        e.read().decode() if hasattr(e, "read") else str(e))
other = int(os.environ["OTHER_PORT"])
try:
    socket.create_connection(("127.0.0.1", other), timeout=3).close()
    out["other"] = "reachable"
except OSError as e:
    out["other"] = f"refused: {e.strerror}"
out["hosts"] = open("/etc/hosts").read()
open(os.path.join(sys.argv[6], "probe.json"), "w").write(json.dumps(out))
'''


class _Hello(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline().decode()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        body = f"hello from the host: {line.split()[1]}".encode()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(body)).encode()
                         + b"\r\nConnection: close\r\n\r\n" + body)


@pytest.fixture
def host_server() -> Iterator[int]:
    """An HTTP server on the host's loopback (the model endpoint), by its port."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Hello)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def relay_turn(tmp: Path, url: str, other_port: int, **options: Any) -> TurnProcess:
    return docker_turn(tmp, PROBE, label=uuid.uuid4().hex, options=options,
                       env={"ERPSIM_MODEL_BASE_URL": url, "OTHER_PORT": str(other_port)})


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_model_endpoint_is_reachable_without_a_network(
        engine: docker.DockerClient, tmp_path: Path, host_server: int, host: str) -> None:
    with socketserver.TCPServer(("127.0.0.1", 0), _Hello) as other:  # not the model's
        proc = relay_turn(tmp_path, f"http://{host}:{host_server}/v1",
                          int(other.server_address[1]))
        run_checked(proc)
    probe = json.loads((proc.output_dir / "probe.json").read_text())
    assert probe["reply"] == "hello from the host: /v1/ping"
    assert probe["other"].startswith("refused")  # another host port: not reachable
    assert probe["url"] == f"http://{host}:{host_server}/v1"


class _TlsServer(socketserver.ThreadingTCPServer):
    """``_Hello`` over TLS: each accepted connection is wrapped with ``context``."""

    daemon_threads = True

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context
        super().__init__(("127.0.0.1", 0), _Hello)

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = self.socket.accept()
        return self.context.wrap_socket(sock, server_side=True), addr


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """An HTTPS server on the host's loopback with a certificate of its own for localhost
    and 127.0.0.1 (the model endpoint over TLS): its port and the certificate, which the
    client is to trust."""
    cert, key = tmp_path / "endpoint.pem", tmp_path / "endpoint.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = _TlsServer(context)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1]), cert
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_model_endpoint_over_tls_is_reached_through_the_relay(
        engine: docker.DockerClient, tmp_path: Path, tls_server: tuple[int, Path],
        host: str) -> None:
    """An https endpoint (as the CLIs' own are): the relay copies the TLS bytes as they
    are, so the client in the container, without a network, completes the handshake
    with the endpoint's own certificate for the name in its URL and gets its answer."""
    port, cert = tls_server
    proc = docker_turn(tmp_path / "turn", PROBE, label=uuid.uuid4().hex, env={
        "ERPSIM_MODEL_BASE_URL": f"https://{host}:{port}/v1", "OTHER_PORT": "1",
        "SSL_CERT_FILE": "/workspace/endpoint-ca.pem"})
    shutil.copy(cert, proc.workspace / "endpoint-ca.pem")
    run_checked(proc)
    probe = json.loads((proc.output_dir / "probe.json").read_text())
    assert probe["reply"] == "hello from the host: /v1/ping", probe["reply"]
    assert probe["url"] == f"https://{host}:{port}/v1"


def test_a_model_endpoint_that_refuses_answers_502_at_once(
        engine: docker.DockerClient, tmp_path: Path) -> None:
    with socketserver.TCPServer(("127.0.0.1", 0), _Hello) as gone:
        port = int(gone.server_address[1])
    proc = relay_turn(tmp_path, f"http://127.0.0.1:{port}/v1", port)
    started = time.monotonic()
    run_checked(proc)
    assert time.monotonic() - started < 20
    reply = json.loads((proc.output_dir / "probe.json").read_text())["reply"]
    assert reply.startswith("HTTPError: 502 erpsim model relay: 127.0.0.1:")
    assert "Connection refused" in reply


def test_with_a_network_there_is_no_relay(engine: docker.DockerClient, tmp_path: Path,
                                          host_server: int) -> None:
    proc = relay_turn(tmp_path, f"http://127.0.0.1:{host_server}/v1", host_server,
                      network=True, network_mode="host")
    run_checked(proc)
    probe = json.loads((proc.output_dir / "probe.json").read_text())
    assert probe["reply"] == "hello from the host: /v1/ping"
    assert probe["other"] == "reachable"  # the host's network: everything is


def test_a_bad_model_url_is_an_infrastructure_error_naming_it(
        engine: docker.DockerClient, tmp_path: Path) -> None:
    proc = relay_turn(tmp_path, "ftp://example/v1", 1)
    outcome = run_turn(proc)
    assert outcome.status == "error"
    assert outcome.infrastructure_error == (
        "ERPSIM_MODEL_BASE_URL='ftp://example/v1' is not an http(s) URL with a host "
        "(expected e.g. http://127.0.0.1:8000/v1)")
