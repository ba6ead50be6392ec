"""The model relay: a docker-mode turn without a network reaches its model endpoint, and
nothing else, through a unix socket.

A container started with ``network_mode="none"`` has only ``lo``. When the turn's
environment names a model endpoint (:data:`ENDPOINT_VARS`: ``ERPSIM_MODEL_BASE_URL``
and the CLIs' own ``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``), docker mode:

1. starts a :class:`HostRelay` per endpoint (host, port): a unix socket in a private
   folder; each connection to it is a TCP connection to that endpoint, bytes copied both
   ways (TLS passes through untouched). An endpoint that refuses gets an HTTP ``502``
   naming the cause, so the CLI fails fast and the adapter reports an infrastructure
   error (exit 75) instead of waiting for its timeout;
2. mounts each socket at ``/run/erpsim/model-N.sock`` and runs the container's command
   through ``relay_entry.py`` (mounted at ``/run/erpsim/relay.py``), which listens on
   ``127.0.0.N+1:PORT`` in the container (its own loopback address per endpoint),
   forwards to the socket, and execs the adapter;
3. makes the URL resolve there: a host name is mapped to that address (``extra_hosts``),
   an IP address is rewritten to it in the variable; a port below 1024 is
   allowed to the unprivileged user (``net.ipv4.ip_unprivileged_port_start=0``, a
   sysctl of the container's own network namespace).

The image needs ``python3`` for this (as for the sample adapters).
"""

from __future__ import annotations

import contextlib
import ipaddress
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from runs.errors import InfrastructureError

ENDPOINT_VARS = ("ERPSIM_MODEL_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")
"""The variables of a turn's environment that name a model endpoint."""
RELAY_SCRIPT = Path(__file__).with_name("relay_entry.py")
CONTAINER_SCRIPT = "/run/erpsim/relay.py"
CONNECT_TIMEOUT_S = 10.0
CHUNK = 65536


@dataclass(frozen=True)
class Endpoint:
    """One model endpoint: where it is on the host, and how the container names it."""

    host: str
    port: int

    @property
    def is_ip(self) -> bool:
        """The URL names an IP address, not a host name."""
        try:
            ipaddress.ip_address(self.host)
        except ValueError:
            return False
        return True


def parse_endpoint(name: str, url: str) -> Endpoint:
    """The host and port of a model URL, or :class:`InfrastructureError` naming ``name``."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as e:
        raise InfrastructureError(f"{name}={url!r}: bad port ({e})") from e
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InfrastructureError(f"{name}={url!r} is not an http(s) URL with a host "
                                  "(expected e.g. http://127.0.0.1:8000/v1)")
    return Endpoint(parts.hostname, port or (443 if parts.scheme == "https" else 80))


def container_url(url: str, endpoint: Endpoint, address: str) -> str:
    """The URL as the container uses it: an IP address becomes ``address``."""
    if not endpoint.is_ip:
        return url
    parts = urlsplit(url)
    netloc = f"{address}:{endpoint.port}"
    if parts.username or parts.password:
        netloc = f"{parts.netloc.rpartition('@')[0]}@{netloc}"
    return urlunsplit(parts._replace(netloc=netloc))


def endpoints_in(env: dict[str, str]) -> dict[str, Endpoint]:
    """The model endpoint of each set variable of :data:`ENDPOINT_VARS`."""
    return {name: parse_endpoint(name, env[name]) for name in ENDPOINT_VARS if env.get(name)}


class HostRelay:
    """A unix socket whose every connection is forwarded to ``endpoint`` over TCP."""

    def __init__(self, endpoint: Endpoint, path: Path) -> None:
        """Listen on ``path`` (created; its folder must exist)."""
        self.endpoint = endpoint
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(64)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True,
                                        name=f"model-relay-{endpoint.host}:{endpoint.port}")
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(client,), daemon=True).start()

    def _connection(self, client: socket.socket) -> None:
        where = f"{self.endpoint.host}:{self.endpoint.port}"
        try:
            upstream = socket.create_connection((self.endpoint.host, self.endpoint.port),
                                                timeout=CONNECT_TIMEOUT_S)
        except OSError as e:
            body = f"erpsim model relay: {where}: {e.strerror or e}\n".encode()
            head = (f"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
            with contextlib.suppress(OSError):
                client.sendall(head + body)
            client.close()
            return
        upstream.settimeout(None)
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        client.close()
        upstream.close()

    def close(self) -> None:
        """Stop accepting (connections under way end with the container)."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(timeout=2)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


@dataclass
class RelayPlan:
    """What docker mode adds to a container for its model endpoints."""

    relays: list[HostRelay]
    folder: Path
    env: dict[str, str]
    """Variables rewritten for the container (IP hosts made ``127.0.0.1``)."""
    listen: list[str]
    """``127.0.0.N:PORT=/run/erpsim/model-M.sock`` for relay_entry.py."""
    extra_hosts: dict[str, str]
    sysctls: dict[str, str]

    def command(self, argv: list[str]) -> list[str]:
        """The container's command: the relay entry, then the adapter."""
        if not self.relays:
            return argv
        specs = [x for spec in self.listen for x in ("--listen", spec)]
        return ["python3", CONTAINER_SCRIPT, *specs, "--", *argv]

    def mounts(self) -> list[tuple[str, str]]:
        """(host path, container path) to bind read-only: the sockets and the script."""
        if not self.relays:
            return []
        return [(str(RELAY_SCRIPT), CONTAINER_SCRIPT),
                *((str(r.path), f"/run/erpsim/model-{i}.sock")
                  for i, r in enumerate(self.relays))]

    def close(self) -> None:
        """Stop the relays and remove their folder."""
        for relay in self.relays:
            relay.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _address(i: int) -> str:
    """The loopback address of relay ``i`` in the container (lo answers all 127/8)."""
    return f"127.0.0.{i + 1}"


def plan_relays(env: dict[str, str]) -> RelayPlan:
    """Start a host relay for each distinct model endpoint named in ``env``."""
    found = endpoints_in(env)
    folder = Path(tempfile.mkdtemp(prefix="erpsim-model-"))
    plan = RelayPlan(relays=[], folder=folder, env={}, listen=[], extra_hosts={},
                     sysctls={})
    by_endpoint: dict[Endpoint, int] = {}
    try:
        for name, endpoint in found.items():
            if endpoint not in by_endpoint:
                i = len(plan.relays)
                plan.relays.append(HostRelay(endpoint, folder / f"model-{i}.sock"))
                by_endpoint[endpoint] = i
                plan.listen.append(f"{_address(i)}:{endpoint.port}=/run/erpsim/model-{i}.sock")
                if not endpoint.is_ip:
                    plan.extra_hosts[endpoint.host] = _address(i)
                if endpoint.port < 1024:
                    plan.sysctls["net.ipv4.ip_unprivileged_port_start"] = "0"
            plan.env[name] = container_url(env[name], endpoint, _address(by_endpoint[endpoint]))
    except OSError as e:
        plan.close()
        raise InfrastructureError(f"could not start the model relay in {folder}: {e}") from e
    return plan
