"""Docker mode: one adapter invocation in a container that sees only what the turn allows.

The container (docker SDK, engine at ``DockerOptions.base_url`` or ``DOCKER_HOST``)
mounts exactly:

=============================  ==============================  =====
host                           container                       mode
=============================  ==============================  =====
the workspace                  ``/workspace``                  rw
the benchmark-owned home       ``/home/agent`` (``HOME``)      rw
the adapter's folder           ``/adapter``                    ro
the ERP API socket file        ``/run/erpsim/api.sock``        ro
the ``erp`` client file        ``/usr/local/bin/erp``          ro
=============================  ==============================  =====

(the last two only when given), and, for a model endpoint named in the turn's
environment when the container has no network, that endpoint's relay socket
(:mod:`runs.execution.model_relay`). It runs as the runner's uid:gid, so what the agent
writes is owned by the runner; with ``tini`` as PID 1; with CPU, memory and process
limits; with no network but ``lo`` unless the options turn it on. It carries the label
``erpsim=1`` and is removed afterwards, also on timeout and on error.

On the engine ``.ci/docker-up`` starts (dockerd 20.10 over a unix socket),
``container.wait(timeout=...)`` raises requests' ``ConnectionError`` at its timeout,
not ``ReadTimeout``: both count as the timeout when it is due.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import Mount

from runs.errors import InfrastructureError
from runs.execution.contract import (
    CONTAINER_FILE,
    LABEL,
    STAGED_TRANSCRIPT,
    TurnOutcome,
    TurnProcess,
    agent_env,
)
from runs.execution.model_relay import RelayPlan, plan_relays

WORKSPACE = "/workspace"
HOME = "/home/agent"
ADAPTER_DIR = "/adapter"
API_SOCKET = "/run/erpsim/api.sock"
ERP_CLIENT = "/usr/local/bin/erp"
PATH = "/usr/local/bin:/usr/bin:/bin"
DEFAULT_ENGINE = "unix:///var/run/docker.sock"
STOP_WAIT_S = 30.0


def engine_url(proc: TurnProcess) -> str:
    """The docker engine a turn uses: the options' ``base_url``, else ``DOCKER_HOST``."""
    return proc.docker.base_url or os.environ.get("DOCKER_HOST") or DEFAULT_ENGINE


def connect(url: str) -> docker.DockerClient:
    """A client of the engine at ``url``, or :class:`InfrastructureError` if it is silent."""
    try:
        client = docker.DockerClient(base_url=url)
        client.ping()
    except (DockerException, requests.exceptions.RequestException) as e:
        raise InfrastructureError(
            f"docker engine unreachable at {url}: {e} "
            "(start one and set DOCKER_HOST, e.g. eval \"$(.ci/docker-up)\")") from e
    return client


def container_path(host: Path, workspace: Path) -> str:
    """Where a host path inside the workspace is seen in the container."""
    rel = host.resolve().relative_to(workspace.resolve())
    return WORKSPACE if rel == Path() else f"{WORKSPACE}/{rel.as_posix()}"


def mounts_for(proc: TurnProcess) -> list[Mount]:
    """The container's mounts: the workspace, the home, the adapter, the socket, ``erp``."""
    adapter_dir = proc.adapter.resolve().parent
    for name, inner in (("workspace", proc.workspace), ("home", proc.home),
                        ("log_dir", proc.log_dir)):
        inner = inner.resolve()
        if inner == adapter_dir or adapter_dir in inner.parents or adapter_dir == Path("/"):
            raise InfrastructureError(
                f"adapter folder {adapter_dir} holds the {name} {inner}; the whole folder "
                "is mounted in the container, so put the adapter in a folder of its own")
    mounts = [
        Mount(WORKSPACE, str(proc.workspace.resolve()), type="bind"),
        Mount(HOME, str(proc.home.resolve()), type="bind"),
        Mount(ADAPTER_DIR, str(adapter_dir), type="bind", read_only=True),
    ]
    sock = proc.docker.api_socket
    if sock is not None:
        try:
            is_socket = stat.S_ISSOCK(sock.stat().st_mode)
        except OSError:
            is_socket = False
        if not is_socket:
            raise InfrastructureError(f"API socket {sock} does not exist or is not a socket")
        mounts.append(Mount(API_SOCKET, str(sock.resolve()), type="bind", read_only=True))
    if proc.erp_client is not None:
        mounts.append(Mount(ERP_CLIENT, str(proc.erp_client.resolve()), type="bind",
                            read_only=True))
    return mounts


def container_env(proc: TurnProcess) -> dict[str, str]:
    """The adapter's environment inside the container (container paths throughout)."""
    env = agent_env(proc, home=HOME, output_dir=container_path(proc.output_dir, proc.workspace),
                    transcript_file=f"{HOME}/{STAGED_TRANSCRIPT}",
                    base={"PATH": PATH, "LANG": "C.UTF-8"})
    if proc.docker.api_socket is not None:
        env["ERPSIM_API"] = f"unix://{API_SOCKET}"
    return env


def run_in_container(proc: TurnProcess) -> TurnOutcome:
    """Run the adapter in a fresh container, wait for it or its timeout, remove it."""
    url = engine_url(proc)
    mounts = mounts_for(proc)
    client = connect(url)
    relays: RelayPlan | None = None
    try:
        if not proc.docker.network and proc.docker.model_relay:
            relays = plan_relays(dict(proc.env))
        container = _create(proc, client, url, mounts, relays)
        marker = proc.log_dir / CONTAINER_FILE
        marker.write_text(f"{url}\n{container.id}\n", encoding="utf-8")
        try:
            outcome = _run(proc, container)
        except (DockerException, requests.exceptions.RequestException) as e:
            raise InfrastructureError(f"docker engine at {url} failed during the turn: "
                                      f"{e}") from e
        finally:
            removal_error = _remove(container)
            if removal_error is None:
                marker.unlink(missing_ok=True)
        if removal_error is not None:
            outcome = replace(outcome, notes=(*outcome.notes, removal_error))
        return outcome
    finally:
        if relays is not None:
            relays.close()
        client.close()


def _create(proc: TurnProcess, client: docker.DockerClient, url: str,
            mounts: list[Mount], relays: RelayPlan | None) -> Container:
    opts = proc.docker
    try:
        client.images.get(opts.image)
    except ImageNotFound as e:
        raise InfrastructureError(
            f"image {opts.image} is not on the docker engine at {url} "
            "(.ci/docker-up builds erpsim-agent:bookworm)") from e
    except (DockerException, requests.exceptions.RequestException) as e:
        raise InfrastructureError(f"docker engine at {url} failed: {e}") from e
    argv = [f"{ADAPTER_DIR}/{proc.adapter.name}", "--workspace", WORKSPACE,
            "--prompt-file", container_path(proc.prompt_file, proc.workspace),
            "--output-dir", container_path(proc.output_dir, proc.workspace)]
    env = container_env(proc)
    extra: dict[str, Any] = {}
    if relays is not None and relays.relays:
        argv = relays.command(argv)
        env.update(relays.env)
        mounts = [*mounts, *(Mount(inner, host, type="bind", read_only=True)
                             for host, inner in relays.mounts())]
        if relays.extra_hosts:
            extra["extra_hosts"] = relays.extra_hosts
        if relays.sysctls:
            extra["sysctls"] = relays.sysctls
    try:
        return client.containers.create(
            opts.image, command=argv, working_dir=WORKSPACE,
            user=f"{os.getuid()}:{os.getgid()}", environment=env,
            mounts=mounts, network_mode=opts.network_mode if opts.network else "none",
            nano_cpus=round(opts.cpus * 1e9), mem_limit=opts.memory,
            memswap_limit=opts.memory, pids_limit=opts.pids_limit, init=True,
            labels={LABEL: "1", **opts.labels}, detach=True, **extra)
    except (DockerException, requests.exceptions.RequestException) as e:
        raise InfrastructureError(f"could not create the container on {url}: {e}") from e


def _run(proc: TurnProcess, container: Container) -> TurnOutcome:
    notes: list[str] = []
    started = time.monotonic()
    try:
        container.start()
    except (APIError, requests.exceptions.RequestException) as e:
        raise InfrastructureError(f"container for {proc.adapter} did not start: {e}") from e
    timed_out = False
    code: int | None
    try:
        result: dict[str, Any] = container.wait(timeout=proc.timeout_s)
        code = int(result["StatusCode"])
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as e:
        # This engine reports a wait timeout as ConnectionError: tell it from a lost engine.
        if time.monotonic() - started < proc.timeout_s * 0.98:
            raise InfrastructureError(f"lost the docker engine while the turn ran: {e}") from e
        timed_out, code = True, None
        _kill(container)
    wall = time.monotonic() - started
    try:
        container.reload()
        oom = bool(container.attrs["State"].get("OOMKilled"))
    except (APIError, requests.exceptions.RequestException):
        oom = False
    if oom:
        notes.append(f"killed by the memory limit ({proc.docker.memory})")
    _save_logs(container, proc.stdout_log, proc.stderr_log)
    return TurnOutcome(mode="docker", exit_code=code, timed_out=timed_out, wall_s=wall,
                       stdout_log=proc.stdout_log, stderr_log=proc.stderr_log,
                       oom_killed=oom, notes=tuple(notes))


def _kill(container: Container) -> None:
    with contextlib.suppress(APIError):  # it ended between the timeout and the kill
        container.kill()
    container.wait(timeout=STOP_WAIT_S)


def _save_logs(container: Container, stdout_log: Path, stderr_log: Path) -> None:
    for path, which in ((stdout_log, {"stdout": True, "stderr": False}),
                        (stderr_log, {"stdout": False, "stderr": True})):
        with path.open("wb") as f:
            for chunk in container.logs(stream=True, follow=False, **which):
                f.write(chunk)


def remove_left_containers(folder: Path) -> list[str]:
    """Remove the containers that turns under ``folder`` left behind (their runner was
    killed before removing them); the ids removed. An engine that does not answer, or a
    container already gone, is passed over."""
    removed: list[str] = []
    for marker in folder.rglob(CONTAINER_FILE):
        try:
            url, container_id = marker.read_text(encoding="utf-8").split()[:2]
        except (OSError, ValueError):
            continue
        try:
            client = docker.DockerClient(base_url=url, timeout=STOP_WAIT_S)
        except (DockerException, requests.exceptions.RequestException):
            continue
        try:
            client.containers.get(container_id).remove(force=True)
            removed.append(container_id)
        except (DockerException, requests.exceptions.RequestException):
            pass  # gone already (NotFound), or the engine is away: nothing to stop here
        finally:
            client.close()
    return removed


def _remove(container: Container) -> str | None:
    """Remove the container (a few tries); a note when it would not go."""
    error: Exception | None = None
    for attempt in range(3):
        try:
            container.remove(force=True)
            return None
        except NotFound:
            return None
        except (DockerException, requests.exceptions.RequestException) as e:
            error = e
            time.sleep(0.5 * (attempt + 1))
    return f"container {container.short_id} could not be removed: {error}"
