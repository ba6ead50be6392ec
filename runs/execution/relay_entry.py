#!/usr/bin/env python3
"""The container side of the model relay: loopback TCP listeners, each forwarded to a
unix socket the runner mounts; then the adapter.

Run by docker mode as the container's command (under ``tini``), python3 standard library
only, never imported by erpsim itself::

    python3 /run/erpsim/relay.py --listen 127.0.0.1:PORT=/run/erpsim/model-0.sock ... \
        -- ADAPTER --workspace W --prompt-file P --output-dir O

Binds every listener first (a port that cannot be bound is an infrastructure error:
exit 75 with one ``erpsim model relay: infrastructure error: CAUSE`` line), then forks:
the child serves the listeners until the container ends; the parent becomes the adapter
(``exec``), so the adapter's exit status is the container's.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

INFRA_EXIT = 75
CHUNK = 65536


def _fail(cause: str) -> int:
    print(f"erpsim model relay: infrastructure error: {cause}", file=sys.stderr, flush=True)
    return INFRA_EXIT


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy bytes from ``src`` to ``dst`` until EOF, then half-close ``dst``."""
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _connection(client: socket.socket, target: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(target)
    except OSError as e:
        body = f"erpsim model relay: {target}: {e.strerror or e}\n".encode()
        head = (f"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        with contextlib.suppress(OSError):
            client.sendall(head + body)
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, target: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_connection, args=(client, target), daemon=True).start()


def relay_main(argv: list[str]) -> int:
    """Bind the listeners, fork a server for them, exec the adapter."""
    if "--" not in argv:
        return _fail("usage: relay.py --listen HOST:PORT=SOCKET ... -- ADAPTER ARGS...")
    cut = argv.index("--")
    specs, command = argv[:cut], argv[cut + 1:]
    if not command or len(specs) % 2 or any(a != "--listen" for a in specs[::2]):
        return _fail(f"bad arguments: {argv!r}")
    listeners: list[tuple[socket.socket, str]] = []
    for spec in specs[1::2]:
        address, _, target = spec.partition("=")
        host, _, port = address.rpartition(":")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, int(port)))
            sock.listen(64)
        except (OSError, ValueError) as e:
            return _fail(f"cannot listen on {address} for the model endpoint: {e}")
        listeners.append((sock, target))
    if os.fork() == 0:  # the relay: serves until the container ends
        try:
            os.close(0)
            threads = [threading.Thread(target=_serve, args=pair, daemon=True)
                       for pair in listeners]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            os._exit(0)
    for sock, _ in listeners:
        sock.close()
    try:
        os.execvp(command[0], command)
    except OSError as e:
        print(f"erpsim model relay: cannot run {command[0]}: {e.strerror or e}",
              file=sys.stderr, flush=True)
        return 126
    return 0  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(relay_main(sys.argv[1:]))
