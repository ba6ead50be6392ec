"""A scorer frozen before the runs: a pre-registration manifest, and holding a sweep to it.

``erpsim freeze NAME`` writes a manifest before any attempt runs: every check definition
in full, each scenario's and desk task's files by sha256, the engine version, and the
seed set (listed, or sealed: derived from a salt kept apart, of which the manifest holds
only the sha256), closed by the manifest's own sha256. ``erpsim sweep --frozen MANIFEST``
refuses to run when the manifest does not check out or any bound file differs, and
records the manifest's hash in ``campaign.json`` and every verdict; reports then call
the original verdicts' scorer pre-registered, and a rescoring under other check
definitions retrospective.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from runs.campaigns.plan import Plan
from runs.campaigns.rescoring import scorer_manifest
from runs.errors import BadInput, Refused

MANIFEST_FORMAT = "erpsim-preregistration/1"

SEALED_SEED_RANGE = 2**31
"""Sealed seeds are in ``[0, 2**31)``."""


class FrozenMismatch(Refused):
    """A sweep names files, checks or seeds other than its frozen manifest binds."""


def _canonical(data: Any) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


def _engine_version() -> str:
    try:
        return metadata.version("erpsim")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        return "unknown"


def folder_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (caches left out), by its relative path."""
    out: dict[str, str] = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_file() and "__pycache__" not in p.parts and not rel.endswith(".pyc"):
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def sealed_seeds(salt: bytes, count: int) -> list[int]:
    """The ``count`` seeds a salt stands for: ``sha256(salt:i)`` read as an integer."""
    return [int.from_bytes(hashlib.sha256(salt + f":{i}".encode()).digest()[:8], "big")
            % SEALED_SEED_RANGE for i in range(count)]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def bound_files(loaded: Any, folder: Path, kind: str) -> dict[str, str]:
    """The files a target's verdict depends on, by path, with their sha256: a desk task's
    whole folder (its reference files and custom checks included); a scenario's YAML, its
    prompt template and its ``turns.files``."""
    if kind == "desk":
        return folder_hashes(folder)
    out = {Path(loaded.path).name: _sha(Path(loaded.path).read_bytes()),
           str(loaded.scenario.turns.prompt): _sha(loaded.prompt_template.encode("utf-8"))}
    out.update({rel: _sha(data) for rel, data in loaded.files.items()})
    return out


def _target_entry(target: Any, loaded: Any, folder: Path) -> dict[str, Any]:
    return {"name": target.name, "kind": target.kind, "sha256": target.sha256,
            "folder_files": bound_files(loaded, folder, target.kind),
            "checks": [spec.model_dump(mode="json") for spec in loaded.checks]}


def _loaded_and_folder(target: Any) -> tuple[Any, Path]:
    """The loaded scenario (or desk task) of a plan target and the folder it lives in."""
    if target.kind == "desk":
        from desk.tasks import load_task

        task = load_task(target.source)
        return task.loaded, Path(task.folder)
    from scenarios.loader import load_scenario

    loaded = load_scenario(Path(target.source))
    return loaded, Path(loaded.path).parent


def build_manifest(name: str, plan: Plan, *, seeds: Sequence[int] | None = None,
                   sealed_count: int | None = None, salt: bytes | None = None) -> dict[str, Any]:
    """The manifest of ``plan``'s targets with listed ``seeds`` or ``sealed_count`` seeds
    sealed by ``salt`` (only its sha256 is written)."""
    targets, checks = [], {}
    for t in plan.targets:
        loaded, folder = _loaded_and_folder(t)
        entry = _target_entry(t, loaded, folder)
        targets.append(entry)
        checks[t.name] = list(loaded.checks)
    if sealed_count is not None:
        if salt is None or not salt:
            raise BadInput("--sealed-seeds needs --salt-file naming a non-empty salt")
        seed_rule: dict[str, Any] = {
            "rule": "sealed", "count": sealed_count,
            "salt_sha256": hashlib.sha256(salt).hexdigest(),
            "derivation": "seed_i = int(sha256(salt + ':' + str(i))[:8 bytes], big) mod 2**31"}
    else:
        seed_rule = {"rule": "listed", "seeds": sorted(set(seeds or plan.seeds))}
    body = {"format": MANIFEST_FORMAT, "name": name, "engine_version": _engine_version(),
            "targets": targets, "scorer_sha256": scorer_manifest(checks), "seeds": seed_rule}
    return {**body, "manifest_sha256": hashlib.sha256(_canonical(body)).hexdigest()}


@dataclass(frozen=True)
class Frozen:
    """A manifest read back and checked against its own hash."""

    path: Path
    data: dict[str, Any]

    @property
    def sha256(self) -> str:
        """The manifest's own sha256."""
        return str(self.data["manifest_sha256"])

    @property
    def name(self) -> str:
        """The name it was frozen under."""
        return str(self.data["name"])

    @property
    def target_names(self) -> list[str]:
        """The scenarios and desk tasks it binds, in its order."""
        return [str(t["name"]) for t in self.data["targets"]]

    def record(self) -> dict[str, Any]:
        """What campaign.json and every verdict record of it."""
        return {"name": self.name, "manifest_sha256": self.sha256,
                "scorer_sha256": self.data["scorer_sha256"], "path": str(self.path)}


def read_manifest(path: Path) -> Frozen:
    """Read a manifest (``BadInput`` when unreadable; ``FrozenMismatch`` when its content
    does not give its recorded sha256)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"--frozen {path}: cannot read the manifest ({e})") from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise BadInput(f"--frozen {path}: not an erpsim pre-registration manifest (expected "
                       f"format {MANIFEST_FORMAT!r}, from `erpsim freeze`)")
    body = {k: v for k, v in data.items() if k != "manifest_sha256"}
    actual = hashlib.sha256(_canonical(body)).hexdigest()
    if actual != data.get("manifest_sha256"):
        raise FrozenMismatch(f"--frozen {path}: the manifest was changed after it was frozen "
                             f"(its content hashes to {actual[:16]}..., it records "
                             f"{str(data.get('manifest_sha256'))[:16]}...)")
    return Frozen(path, data)


def frozen_seeds(frozen: Frozen, salt: bytes | None) -> list[int]:
    """The seeds the manifest binds (a sealed rule needs the salt that hashes to it)."""
    rule = frozen.data["seeds"]
    if rule["rule"] == "listed":
        return [int(s) for s in rule["seeds"]]
    if salt is None:
        raise BadInput(f"--frozen {frozen.path}: its seeds are sealed; give --salt-file with "
                       "the salt it was frozen with")
    if hashlib.sha256(salt).hexdigest() != rule["salt_sha256"]:
        raise FrozenMismatch(f"--salt-file: this salt is not the one {frozen.path} was frozen "
                             f"with (its sha256 differs from {rule['salt_sha256'][:16]}...)")
    return sealed_seeds(salt, int(rule["count"]))


def check_plan(frozen: Frozen, plan: Plan) -> None:
    """``FrozenMismatch`` naming the first target, file or check definition of ``plan``
    that differs from what the manifest binds."""
    bound = {str(t["name"]): t for t in frozen.data["targets"]}
    names = [t.name for t in plan.targets]
    if sorted(names) != sorted(bound):
        raise FrozenMismatch(f"--frozen {frozen.path} binds {', '.join(sorted(bound))}; this "
                             f"sweep names {', '.join(sorted(names))}")
    for t in plan.targets:
        entry = bound[t.name]
        loaded, folder = _loaded_and_folder(t)
        now = _target_entry(t, loaded, folder)
        old_files, new_files = entry["folder_files"], now["folder_files"]
        for rel in sorted(set(old_files) | set(new_files)):
            if old_files.get(rel) != new_files.get(rel):
                what = ("is new" if rel not in old_files else "is gone" if rel not in new_files
                        else "differs")
                raise FrozenMismatch(f"--frozen {frozen.path}: {t.name}: {folder / rel} {what} "
                                     "since the scorer was frozen; freeze again (a new "
                                     "manifest) or restore the file")
        if now["checks"] != entry["checks"] or now["sha256"] != entry["sha256"]:
            raise FrozenMismatch(f"--frozen {frozen.path}: {t.name}: its checks differ from "
                                 "the frozen definitions")
