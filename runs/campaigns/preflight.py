"""A sweep's preflight: what its attempts need answers, before the label is created.

:func:`preflight` checks, for a plan and a store URL:

- the store URL connects (``--store-url``);
- each external system's adapter is an executable file whose ``#!`` interpreter exists
  (``NAME.adapter``), and its home template a folder (``NAME.home``);
- for docker systems, the docker engine answers (``DOCKER_HOST``) and has the image
  (``NAME.image``);
- each system's model endpoint answers HTTP when one is configured
  (``NAME.env.ERPSIM_MODEL_BASE_URL``; any HTTP answer counts, a 404 included: only a
  refused, reset or silent connection is a problem); a docker system without a network
  reaches it through docker mode's model relay.

Every problem is one line naming the setting and the value; all are raised together as
:class:`runs.errors.PreflightFailed`, so one run of the sweep shows every one of them.
Nothing is written.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from runs.campaigns.plan import Plan
from runs.campaigns.systems import System
from runs.errors import PreflightFailed

TIMEOUT_S = 5.0
MODEL_URL_VAR = "ERPSIM_MODEL_BASE_URL"


def preflight(plan: Plan, *, store_url: str | None = None,
              timeout_s: float = TIMEOUT_S) -> None:
    """Raise :class:`PreflightFailed` listing every problem found (nothing otherwise)."""
    problems: list[str] = []
    if store_url is not None:
        problems += _store(store_url, timeout_s)
    external = [s for s in plan.systems if not s.builtin]
    for system in external:
        problems += _adapter(system)
    docker_systems = [s for s in external if s.mode == "docker"]
    if docker_systems:
        problems += _docker(docker_systems, timeout_s)
    for system in external:
        problems += _model_endpoint(system, timeout_s)
    if problems:
        raise PreflightFailed(problems)


def _store(url: str, timeout_s: float) -> list[str]:
    """The store URL connects and answers a query."""
    import sqlalchemy as sa

    try:
        u = sa.engine.make_url(url)
    except Exception as e:
        return [f"--store-url: {url.split('@')[-1]!r} is not a database URL ({e})"]
    shown = u.render_as_string(hide_password=True)
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    try:
        engine = sa.create_engine(u, connect_args={"connect_timeout": max(1, int(timeout_s))})
    except Exception as e:
        return [f"--store-url {shown}: cannot be used ({type(e).__name__}: {e})"]
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except Exception as e:
        cause = " ".join(str(getattr(e, "orig", None) or e).split())
        return [f"--store-url {shown}: does not connect ({cause[:300]})"]
    finally:
        engine.dispose()
    return []


def _interpreter(path: Path) -> str | None:
    """Why the adapter's first line cannot start it, or None (ELF and ``#!`` with an
    existing interpreter are fine)."""
    try:
        with path.open("rb") as f:
            head = f.read(256)
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if head.startswith(b"\x7fELF"):
        return None
    if not head.startswith(b"#!"):
        return "has no '#!' line (a script needs one, e.g. #!/bin/sh)"
    words = head[2:].split(b"\n", 1)[0].split()
    if not words:
        return "has an empty '#!' line"
    interpreter = os.fsdecode(words[0])
    if not os.access(interpreter, os.X_OK):
        return f"names the interpreter {interpreter} in its '#!' line, which does not exist"
    return None


def _adapter(system: System) -> list[str]:
    where = f"system {system.name}"
    adapter = system.adapter
    if adapter is None:
        return [f"{where}: no adapter"]
    if not adapter.is_file():
        return [f"{where}.adapter: {adapter} is not a file (expected an adapter executable)"]
    if not os.access(adapter, os.X_OK):
        return [f"{where}.adapter: {adapter} is not executable (chmod +x {adapter})"]
    problems = []
    if system.mode == "local":  # in a container the interpreter is the image's
        why = _interpreter(adapter)
        if why is not None:
            problems.append(f"{where}.adapter: {adapter} {why}")
    if system.home_template is not None and not system.home_template.is_dir():
        problems.append(f"{where}.home: {system.home_template} is not a directory")
    return problems


def _docker(systems: list[System], timeout_s: float) -> list[str]:
    """The engine answers and has each docker system's image."""
    import docker
    import requests
    from docker.errors import DockerException, ImageNotFound

    from runs.execution.docker_mode import DEFAULT_ENGINE

    url = os.environ.get("DOCKER_HOST") or DEFAULT_ENGINE
    names = ", ".join(s.name for s in systems)
    try:
        client = docker.DockerClient(base_url=url, timeout=max(1, int(timeout_s)))
        client.ping()
    except (DockerException, requests.exceptions.RequestException) as e:
        return [f"system {names} (mode: docker): the docker engine does not answer at "
                f"DOCKER_HOST={url} ({' '.join(str(e).split())[:300]}); start one and set "
                "DOCKER_HOST, e.g. eval \"$(.ci/docker-up)\""]
    problems = []
    try:
        for s in systems:
            try:
                client.images.get(s.image)
            except ImageNotFound:
                problems.append(f"system {s.name}.image: {s.image} is not on the docker engine "
                                f"at DOCKER_HOST={url} (build or pull it; .ci/docker-up "
                                "builds erpsim-agent:bookworm)")
            except (DockerException, requests.exceptions.RequestException) as e:
                problems.append(f"system {s.name}.image: {s.image}: the engine at {url} "
                                f"failed ({e})")
    finally:
        client.close()
    return problems


def _model_endpoint(system: System, timeout_s: float) -> list[str]:
    """The system's model endpoint, when configured, answers HTTP."""
    url = system.env.get(MODEL_URL_VAR)
    if not url:
        return []
    where = f"system {system.name}.env.{MODEL_URL_VAR}"
    # docker without a network reaches it through the model relay (runs/execution/model_relay.py)
    if not url.startswith(("http://", "https://")):
        return [f"{where}: {url!r} is not an http(s) URL"]
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"),
                                    timeout=timeout_s):
            pass
    except urllib.error.HTTPError as e:  # it answered: a 401, 404 or 405 is fine
        e.close()
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        return [f"{where}: {url} does not answer ({reason}); start the model server or fix "
                "the URL"]
    return []
