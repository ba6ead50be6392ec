"""Configured systems: what a campaign compares, each named and declared.

A configured system is everything that varies together when an agent is run: the
agent or adapter, how it is executed (a local process or a container, its image and
limits), its time per turn and the variables it is given. The built-in agents
(``reference``, ``oracle``, ``null``) are systems by name; others are declared in a
small YAML file (``--systems-file``), one entry per name::

    codex-high:
      adapter: adapters/codex          # relative to this file's folder
      mode: docker                     # local (default) or docker
      image: erpsim-agent:bookworm     # docker mode (default: erpsim-agent:bookworm)
      cpus: 2                          # docker mode limits
      memory: 6g
      network: true
      timeout_s: 1200                  # per turn (default: the scenario's)
      home: homes/codex                # copied into each turn's HOME (relative to this
                                       # file): ~/.codex/config.toml and the like
      env:
        ERPSIM_CODEX_MODEL: gpt-5      # a value, passed as given
        OPENAI_API_KEY: null           # null: copied from the sweeping host's environment
      price:                           # dollars per million tokens (for the report's cost)
        input: 1.25                    # uncached input (and cache writes, unless given)
        cached_input: 0.125
        output: 10.0
        cache_write: 1.25              # optional (default: the input price)

The file is validated strictly: an unknown field, a bad value or an adapter that is
not an executable file is a :class:`SystemsError` naming the file, the field path and
what was expected.

A system's identity (:attr:`System.sha256`) is the sha256 of its canonical declaration
(values copied from the host are hashed as ``null``: the declaration, never a secret),
of the adapter's whole folder (every file's path, bytes and executable bit, links as
their targets; ``__pycache__`` and ``.git`` left out: what docker mode mounts and what an
adapter such as ``script`` reads beside itself) and of the home template's folder, if any
(its ``price`` is an accounting assumption, recorded beside the declaration and never
hashed); for a built-in agent, of its name and the bytes of the built-in agents' source
files. The campaign records it, so that two campaigns that
name a system alike but ran different ones can be told apart.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runs.errors import SystemsError
from runs.execution.contract import DEFAULT_IMAGE, MEMORY_LIMIT, NETWORK_MODE

BUILTIN = ("reference", "oracle", "null")
"""The built-in agents, systems by name."""

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
"""A system's name: used as a folder name in the results, so no slash or space."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")



class PriceSpec(BaseModel):
    """A system's token prices, in dollars per million tokens (strict; finite: a YAML
    ``.inf`` or ``.nan`` would make every cost and the report's JSON unreadable)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    input: float = Field(ge=0)
    """Uncached input tokens."""
    cached_input: float = Field(ge=0)
    """Input tokens read from the provider's cache."""
    output: float = Field(ge=0)
    """Output tokens (reasoning included)."""
    cache_write: float | None = Field(default=None, ge=0)
    """Input tokens written to the cache; ``None``: priced as uncached input."""


class SystemSpec(BaseModel):
    """One declared system in a systems file (strict: unknown fields are errors; numbers
    finite)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    adapter: str = Field(min_length=1)
    """The adapter executable, relative to the systems file's folder (or absolute)."""
    mode: Literal["local", "docker"] = "local"
    image: str | None = Field(default=None, min_length=1)
    """Docker mode: the image (default ``erpsim-agent:bookworm``)."""
    cpus: float = Field(default=2.0, gt=0, le=256)
    memory: str = Field(default="6g", pattern=f"^{MEMORY_LIMIT}$")
    network: bool = False
    network_mode: str = Field(default="bridge", pattern=f"^{NETWORK_MODE}$")
    """Docker mode with ``network: true``: the docker network (``bridge``; ``host`` on an
    engine without a bridge, such as the one ``.ci/docker-up`` starts)."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Seconds per turn; ``None``: the scenario's own (``turns.timeout_s``)."""
    env: dict[str, str | None] = Field(default_factory=dict)
    """Variables for the adapter: a value, or ``null`` to copy it from the host."""
    home: str | None = Field(default=None, min_length=1)
    """A folder copied into each turn's fresh HOME (relative to the file, or absolute)."""
    price: PriceSpec | None = None
    """Token prices that turn the recorded usage into cost (``erpsim report``)."""


@dataclass(frozen=True)
class System:
    """A configured system, resolved and ready to run (picklable: it travels to workers).

    For a built-in agent only ``name`` and ``builtin`` matter. For an external one,
    ``adapter`` is an absolute path and ``env`` holds the values to pass (those declared
    ``null`` copied from the host that planned the campaign).
    """

    name: str
    builtin: bool
    sha256: str
    declaration: dict[str, Any]
    """The canonical declaration (what is hashed and recorded in campaign.json)."""
    adapter: Path | None = None
    mode: Literal["local", "docker"] = "local"
    image: str | None = None
    cpus: float = 2.0
    memory: str = "6g"
    network: bool = False
    network_mode: str = "bridge"
    timeout_s: float | None = None
    env: dict[str, str] = field(default_factory=dict, repr=False)
    home_template: Path | None = None
    """The folder copied into each turn's HOME (absolute), or None."""
    price: dict[str, float | None] | None = None
    """Dollars per million tokens (``input``, ``cached_input``, ``output``,
    ``cache_write``), or ``None``: not hashed into the identity."""

    def record(self) -> dict[str, Any]:
        """What campaign.json keeps of the system: name, declaration, identity hash and
        (when declared) its price table."""
        out = {"name": self.name, "builtin": self.builtin, "declaration": self.declaration,
               "sha256": self.sha256}
        if self.price is not None:
            out["price"] = dict(self.price)
        return out


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _builtin_sources() -> list[Path]:
    """The files that define the built-in agents' behaviour (and the library's solvers)."""
    import scenarios.agents
    import scenarios.turn
    from scenarios.loader import library_dir

    return [Path(scenarios.agents.__file__).resolve(), Path(scenarios.turn.__file__).resolve(),
            *sorted(library_dir().glob(f"*/{scenarios.agents.SOLVER_FILE}"))]


_BUILTIN_HASH: dict[str, str] = {}


def builtin_system(name: str) -> System:
    """The built-in agent ``name`` as a system (``SystemsError`` for another name)."""
    if name not in BUILTIN:
        raise SystemsError(f"system {name!r}: not a built-in agent "
                           f"(expected one of: {', '.join(BUILTIN)})")
    if name not in _BUILTIN_HASH:
        h = hashlib.sha256(_canonical({"builtin": name}))
        for path in _builtin_sources():
            data = path.read_bytes()
            h.update(len(data).to_bytes(8, "big"))
            h.update(data)
        _BUILTIN_HASH[name] = h.hexdigest()
    return System(name=name, builtin=True, sha256=_BUILTIN_HASH[name],
                  declaration={"builtin": name})


TREE_MAX_FILES = 5000
TREE_MAX_BYTES = 256 * 1024 * 1024
_TREE_SKIP = frozenset({"__pycache__", ".git"})


def tree_sha256(folder: Path, *, where: str) -> str:
    """The sha256 of a folder's contents: each entry's relative path, kind, executable bit
    and bytes (a link: its target, never followed), in sorted order; ``__pycache__`` and
    ``.git`` are left out. ``where`` names the setting in the :class:`SystemsError` raised
    for a folder too big to be an adapter's or a home template's (or unreadable)."""
    h = hashlib.sha256()
    files = total = 0
    try:
        entries = sorted(p for p in folder.rglob("*")
                         if not _TREE_SKIP.intersection(p.relative_to(folder).parts))
        for path in entries:
            rel = path.relative_to(folder).as_posix().encode()
            if path.is_symlink():
                kind, data = b"l", os.readlink(path).encode()
            elif path.is_dir():
                kind, data = b"d", b""
            elif path.is_file():
                files += 1
                total += path.stat().st_size
                if files > TREE_MAX_FILES or total > TREE_MAX_BYTES:
                    raise SystemsError(
                        f"{where}: {folder} holds more than {TREE_MAX_FILES} files or "
                        f"{TREE_MAX_BYTES // 2**20} MiB; an adapter or home template lives "
                        "in a folder of its own (its whole folder is the system's identity)")
                kind = b"x" if os.access(path, os.X_OK) else b"f"
                data = path.read_bytes()
            else:
                continue  # sockets, fifos: nothing an adapter reads
            for part in (rel, kind, data):
                h.update(len(part).to_bytes(8, "big"))
                h.update(part)
    except OSError as e:
        raise SystemsError(f"{where}: {folder} cannot be read ({e})") from None
    return h.hexdigest()


def _problem(label: str, path: str, what: str) -> SystemsError:
    return SystemsError(f"systems file {label}: {path}: {what}")


def _describe(name: str, err: Any) -> str:
    loc = ".".join(str(p) for p in (name, *err["loc"]))
    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(SystemSpec.model_fields)
        return f"{loc}: unknown field (allowed: {allowed})"
    if kind == "missing":
        return f"{loc}: missing (required)"
    value = err.get("input")
    return f"{loc}: {value!r} is not valid ({err['msg']})"


def load_systems_file(path: Path, *, environ: dict[str, str] | None = None
                      ) -> dict[str, System]:
    """Read and validate a systems file into resolved systems, by name.

    Raises :class:`SystemsError` naming the file and the field for anything wrong: not
    YAML, not a mapping of names to declarations, an unknown field, a bad value, a name
    that is a built-in agent's or not usable as a folder name, an adapter that is not an
    executable file, an ``env`` entry copied from the host that is not set there.
    """
    from scenarios.loader import parse_yaml

    env_source = os.environ if environ is None else environ
    label = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SystemsError(f"systems file {label}: does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SystemsError(f"systems file {label}: unreadable ({e})") from None
    try:
        data = parse_yaml(text)
    except Exception as e:  # yaml.YAMLError and its marked variants
        first = str(e).strip().splitlines()
        raise SystemsError(f"systems file {label}: not valid YAML "
                           f"({' '.join(first[:3])})") from None
    if not isinstance(data, dict) or not data:
        raise SystemsError(f"systems file {label}: expected a mapping of system names to "
                           "declarations (name: {adapter: PATH, mode: local|docker, ...})")
    base = path.absolute().parent
    out: dict[str, System] = {}
    for name, decl in data.items():
        if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
            raise _problem(label, repr(name), "not a usable system name (expected letters, "
                           "digits, '.', '_' or '-', at most 64, starting with a letter or "
                           "digit)")
        if name in BUILTIN:
            raise _problem(label, name, "is a built-in agent's name; choose another name")
        if not isinstance(decl, dict):
            raise _problem(label, name, f"expected a mapping (adapter: PATH, ...), got "
                           f"{type(decl).__name__}")
        try:
            spec = SystemSpec.model_validate(decl)
        except ValidationError as e:
            lines = [_describe(name, err) for err in e.errors()]
            raise SystemsError(f"systems file {label}: " + "; ".join(lines)) from None
        out[name] = _resolve(label, base, name, spec, env_source)
    return out


def _resolve(label: str, base: Path, name: str, spec: SystemSpec,
             environ: Any) -> System:
    adapter = Path(spec.adapter)
    if not adapter.is_absolute():
        adapter = base / adapter
    if not adapter.is_file():
        raise _problem(label, f"{name}.adapter", f"{adapter} is not a file (expected an "
                       "adapter executable)")
    if not os.access(adapter, os.X_OK):
        raise _problem(label, f"{name}.adapter", f"{adapter} is not executable "
                       f"(chmod +x {adapter})")
    if spec.mode == "local" and (spec.image is not None):
        raise _problem(label, f"{name}.image", "only for mode: docker")
    home: Path | None = None
    if spec.home is not None:
        home = Path(spec.home)
        if not home.is_absolute():
            home = base / home
        if not home.is_dir():
            raise _problem(label, f"{name}.home", f"{home} is not a directory (expected a "
                           "folder copied into each turn's HOME)")
    env: dict[str, str] = {}
    for var, value in spec.env.items():
        if not _ENV_NAME.fullmatch(var):
            raise _problem(label, f"{name}.env.{var}", "not a variable name")
        if value is None:
            if var not in environ:
                raise _problem(label, f"{name}.env.{var}", "null copies it from this "
                               "environment, where it is not set")
            env[var] = environ[var]
        else:
            env[var] = value
    image = spec.image or (DEFAULT_IMAGE if spec.mode == "docker" else None)
    declaration: dict[str, Any] = {
        "adapter": adapter.name, "mode": spec.mode, "image": image,
        "cpus": spec.cpus if spec.mode == "docker" else None,
        "memory": spec.memory if spec.mode == "docker" else None,
        "network": spec.network if spec.mode == "docker" else None,
        **({"network_mode": spec.network_mode}
           if spec.mode == "docker" and spec.network else {}),
        "timeout_s": spec.timeout_s,
        # a copied value is declared as null: the hash never depends on a secret
        "env": {k: spec.env[k] for k in sorted(spec.env)},
        "home": home is not None,
    }
    data = adapter.read_bytes()
    folder_hash = tree_sha256(adapter.parent, where=f"systems file {label}: {name}.adapter")
    home_hash = (tree_sha256(home, where=f"systems file {label}: {name}.home")
                 if home is not None else "")
    h = hashlib.sha256(_canonical(declaration))
    for part in (data, folder_hash.encode(), home_hash.encode()):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    declaration["adapter_sha256"] = hashlib.sha256(data).hexdigest()
    declaration["adapter_folder_sha256"] = folder_hash
    declaration["home_sha256"] = home_hash or None
    return System(name=name, builtin=False, sha256=h.hexdigest(), declaration=declaration,
                  adapter=adapter.resolve(), mode=spec.mode, image=image, cpus=spec.cpus,
                  memory=spec.memory, network=spec.network,
                  network_mode=spec.network_mode, timeout_s=spec.timeout_s,
                  env=env, home_template=None if home is None else home.resolve(),
                  price=None if spec.price is None else spec.price.model_dump())


def parse_system_names(text: str) -> list[str]:
    """``reference,null`` into names, in order (``SystemsError`` when empty or repeated)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise SystemsError("--systems: no system named (expected e.g. reference,null)")
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise SystemsError(f"--systems: {n!r} is named twice")
        seen.add(n)
    return names


def resolve_systems(names: list[str], systems_file: Path | None = None) -> list[System]:
    """The named systems: built-in agents, or those declared in ``systems_file``."""
    declared = load_systems_file(systems_file) if systems_file is not None else {}
    out: list[System] = []
    for n in names:
        if n in BUILTIN:
            out.append(builtin_system(n))
        elif n in declared:
            out.append(declared[n])
        else:
            known = [*BUILTIN, *sorted(declared)]
            where = (f"built-in or declared in {systems_file}" if systems_file is not None
                     else "built-in; declare others with --systems-file")
            raise SystemsError(f"system {n!r}: unknown (known, {where}: {', '.join(known)})")
    return out
