"""The strict scenario loader: YAML in, a validated ``Scenario`` (or one clear error) out.

The YAML is read with a safe loader that keeps YAML 1.1's surprises out: only
``true``/``false`` are booleans (``on:``, ``no``, ``y`` stay strings; ``on`` is an
injection's field), dates stay strings for pydantic to parse and report with their
path, ``0123`` and ``1:30`` stay strings instead of octal and base-60 numbers, and a
key given twice in one mapping is an error instead of the last one silently winning.
Every fault becomes a ``ScenarioError`` naming the file, the field path, the bad value
and what was expected::

    scenario month-end-close.yaml: turns.dates[2]: '2026-02-30' is not a valid date
    (expected YYYY-MM-DD)
"""

from __future__ import annotations

import hashlib
import os
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from yaml.constructor import SafeConstructor

from checks.registry import CheckSpec, CheckSpecError, parse_checks
from counterparties.injections import INJECTIONS
from counterparties.profiles import CustomerProfile, VendorProfile
from scenarios.errors import ScenarioError
from scenarios.spec import CustomerPopulation, InjectionSpec, Scenario, VendorPopulation

SCENARIO_FILE = "scenario.yaml"
"""The name of a library scenario's YAML inside its folder."""

MAX_SHOWN = 10
"""How many problems one message lists; ``ScenarioError.problems`` keeps them all."""

_LIBRARY = Path(__file__).resolve().parent / "library"


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario with where it came from, its prompt template and its hash."""

    scenario: Scenario
    path: Path
    """The YAML file (absolute)."""
    base_dir: Path
    """The folder holding the YAML; ``turns.prompt`` is relative to it."""
    prompt_template: str
    """The prompt template's text, read at load time."""
    sha256: str
    """Hex sha256 over the YAML bytes, the prompt template bytes and the bytes of each of
    ``turns.files``, each preceded by its length as 8 big-endian bytes (so that no byte
    can move from one to the other)."""
    files: dict[str, bytes] = field(default_factory=dict)
    """``turns.files`` by their path in the scenario, read at load time."""
    checks: tuple[CheckSpec, ...] = ()
    """The scenario's checks, validated against the check registry."""
    workspace_files: dict[str, bytes] = field(default_factory=dict)
    """Files placed in the first turn's workspace, by relative path (a desk task's
    supplied files); the library's process scenarios have none."""
    reference_dir: Path | None = None
    """Reference files the checks compare with (never shown to the agent)."""
    kind: str = "scenario"
    """``scenario`` or ``desk`` (a desk task run as a one-date scenario)."""


# --- YAML ---------------------------------------------------------------------------

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_VALUE = "tag:yaml.org,2002:value"
_MERGE = "tag:yaml.org,2002:merge"


class _DuplicateKey(yaml.MarkedYAMLError):
    """A mapping names the same key twice."""


class ScenarioYamlLoader(yaml.SafeLoader):
    """A safe loader with YAML 1.2-style scalars and no duplicate keys (see the module)."""

    def construct_mapping(self, node: yaml.MappingNode,  # type: ignore[override]
                          deep: bool = False) -> dict[Any, Any]:
        """A mapping, refusing a key that appears twice (PyYAML would keep the last)."""
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, str] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                if first is not None:
                    raise _DuplicateKey("while constructing a mapping", node.start_mark,
                                        f"duplicate key {key!r} (first at {first})",
                                        key_node.start_mark)
                mark = key_node.start_mark
                seen[key] = f"line {mark.line + 1}, column {mark.column + 1}"
        return super().construct_mapping(node, deep=deep)


# A copy of SafeLoader's table without YAML 1.1's booleans (yes/no/on/off/y/n), dates,
# octal/base-60 numbers and '='; the global SafeLoader is left alone.
ScenarioYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in (_BOOL, _INT, _FLOAT, _TIMESTAMP, _VALUE)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
ScenarioYamlLoader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
ScenarioYamlLoader.add_implicit_resolver(
    _INT, re.compile(r"^[-+]?(?:0|[1-9][0-9_]*)$"), list("-+0123456789"))
ScenarioYamlLoader.add_implicit_resolver(
    _FLOAT, re.compile(r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                           |[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                           |[-+]?\.(?:inf|Inf|INF)
                           |\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."))
# An explicit ``!!timestamp`` stays a string too, for pydantic to judge.
ScenarioYamlLoader.add_constructor(_TIMESTAMP, SafeConstructor.construct_yaml_str)


def parse_yaml(text: str) -> Any:
    """Parse YAML text with ``ScenarioYamlLoader`` (raises ``yaml.YAMLError``)."""
    loader = ScenarioYamlLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _yaml_problem(e: yaml.YAMLError, text: str) -> str:
    if isinstance(e, yaml.MarkedYAMLError) and e.problem_mark is not None:
        mark = e.problem_mark
        out = f"line {mark.line + 1}, column {mark.column + 1}: {e.problem}"
        if e.context and not isinstance(e, _DuplicateKey):
            where = e.context_mark
            out += (f" ({e.context} at line {where.line + 1})"
                    if where is not None and where.line != mark.line else f" ({e.context})")
        return out
    if isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, e.position) + 1
        column = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
        return (f"line {line}, column {column}: unacceptable character #x{e.character:04x} "
                f"({e.reason})")
    return str(e).splitlines()[0]


# --- validation errors -----------------------------------------------------------------

Loc = tuple[str | int, ...]

# Fields typed as open dicts in the spec whose values are validated by a model chosen at
# validation time; knowing the model lets an unknown-field message list the allowed ones.
_OPEN_FIELDS: dict[tuple[type[BaseModel], str], Callable[[dict[Any, Any]], Any]] = {
    (CustomerPopulation, "params"): lambda node: dict[str, CustomerProfile],
    (VendorPopulation, "params"): lambda node: dict[str, VendorProfile],
    (InjectionSpec, "params"): lambda node: (
        INJECTIONS[node["kind"]].params if node.get("kind") in INJECTIONS else None),
}

_MONEY_LABEL = "amount: "  # erp.money names every value "amount"; our path names it better


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _members(tp: Any) -> list[Any]:
    """The members of a union type, or ``[tp]``; ``None`` dropped."""
    if get_origin(tp) in (Union, types.UnionType):
        return [m for m in get_args(tp) if m is not type(None)]
    return [tp]


def _unwrap(tp: Any, node: Any) -> Any:
    """``tp`` without Annotated and Optional, and a tagged union narrowed by ``node``'s tag."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
            continue
        members = _members(tp)
        if len(members) == 1 and members[0] is not tp:
            tp = members[0]
            continue
        if len(members) > 1 and isinstance(node, dict):
            for m in members:
                if _is_model(m) and any(get_origin(f.annotation) is Literal
                                        and node.get(name) in get_args(f.annotation)
                                        for name, f in m.model_fields.items()):
                    return m
        return tp


def _child(tp: Any, key: Any, node: dict[Any, Any]) -> Any:
    """The type of ``node[key]`` when ``node`` is validated as ``tp`` (None when unknown)."""
    if _is_model(tp):
        if (tp, key) in _OPEN_FIELDS:
            return _OPEN_FIELDS[tp, key](node)
        field = tp.model_fields.get(key) if isinstance(key, str) else None
        return field.annotation if field is not None else None
    if get_origin(tp) is dict:
        return get_args(tp)[1]
    return None


def _item(tp: Any) -> Any:
    if get_origin(tp) in (tuple, list) and get_args(tp):
        return get_args(tp)[0]
    return None


def _walk(loc: Loc, data: Any, *, keep_missing: bool) -> tuple[list[str | int], Any]:
    """The parts of a pydantic location that are in the file, and the type found there.

    pydantic puts segments of its own into locations (a tagged union's tag, ``[key]``);
    they are dropped by following the file's own data. ``keep_missing`` keeps a last
    segment that is absent from the data (a missing field).
    """
    path: list[str | int] = []
    tp: Any = Scenario
    node = data
    for n, seg in enumerate(loc):
        tp = _unwrap(tp, node)
        if isinstance(node, dict) and (seg in node or (keep_missing and n == len(loc) - 1)):
            path.append(seg)
            tp = _child(tp, seg, node)
            node = node.get(seg)
        elif isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node):
            path.append(seg)
            tp = _item(tp)
            node = node[seg]
    return path, _unwrap(tp, node)


def format_path(path: list[str | int] | Loc) -> str:
    """A field path as written in messages: ``turns.dates[2]``, ``injections[0].on``."""
    out = ""
    for seg in path:
        if isinstance(seg, int) and not isinstance(seg, bool):
            out += f"[{seg}]"
        else:
            out += f".{seg}" if out else str(seg)
    return out


def _show(value: Any, limit: int = 60) -> str:
    if value is None:
        return "null"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unquote(text: str) -> str:
    return text.replace("'", "")


def _tags(tp: Any, discriminator: str) -> list[str]:
    tags: list[str] = []
    for m in _members(_unwrap(tp, None)):
        if _is_model(m) and discriminator in m.model_fields:
            annotation = m.model_fields[discriminator].annotation
            if get_origin(annotation) is Literal:
                tags += [str(a) for a in get_args(annotation)]
    return tags


def _describe(err: Any, data: Any) -> str:
    """One ``path: what is wrong`` line for one pydantic error."""
    kind: str = err["type"]
    loc: Loc = tuple(err["loc"])
    ctx: dict[str, Any] = err.get("ctx") or {}
    value = err["input"]
    shown = _show(value)
    if kind == "extra_forbidden":
        path, _ = _walk(loc, data, keep_missing=False)
        _, owner = _walk(loc[:-1], data, keep_missing=False)
        allowed = (f" (allowed: {', '.join(sorted(owner.model_fields))})"
                   if _is_model(owner) else "")
        return f"{format_path(path)}: unknown field{allowed}"
    path, here = _walk(loc, data, keep_missing=kind == "missing")
    where = format_path(path)
    if "[key]" in loc:
        shown = f"key {shown}"
    if kind == "missing":
        what = "missing (required)"
    elif kind.startswith("date"):
        what = f"{shown} is not a valid date (expected YYYY-MM-DD)"
    elif kind in ("int_parsing", "int_type", "int_from_float"):
        what = f"{shown} is not a whole number"
    elif kind in ("float_parsing", "float_type", "finite_number"):
        what = f"{shown} is not a number"
    elif kind in ("bool_parsing", "bool_type"):
        what = f"{shown} is not a boolean (expected true or false)"
    elif kind == "string_type":
        what = f"{shown} is not a string"
    elif kind in ("dict_type", "model_type", "model_attributes_type"):
        what = f"{shown} is not a mapping (expected key: value pairs)"
    elif kind in ("tuple_type", "list_type"):
        what = f"{shown} is not a list (expected [a, b] or one '- item' per line)"
    elif kind == "greater_than_equal":
        what = f"{shown} is too small (expected at least {ctx['ge']})"
    elif kind == "greater_than":
        what = f"{shown} is too small (expected more than {ctx['gt']})"
    elif kind == "less_than_equal":
        what = f"{shown} is too large (expected at most {ctx['le']})"
    elif kind == "less_than":
        what = f"{shown} is too large (expected less than {ctx['lt']})"
    elif kind == "literal_error":
        what = f"{shown} is not allowed (expected one of: {_unquote(ctx['expected'])})"
    elif kind == "union_tag_invalid":
        what = (f"unknown {_unquote(ctx['discriminator'])} {ctx['tag']!r} "
                f"(expected one of: {_unquote(ctx['expected_tags'])})")
    elif kind == "union_tag_not_found":
        disc = _unquote(ctx["discriminator"])
        tags = _tags(here, disc)
        what = (f"{shown} does not say which kind it is (expected a {disc} field"
                + (f": one of {', '.join(tags)})" if tags else ")"))
    elif kind == "string_pattern_mismatch":
        what = f"{shown} does not match the pattern {ctx['pattern']}"
    elif kind == "string_too_short":
        what = f"{shown} is too short (expected at least {ctx['min_length']} characters)"
    elif kind == "string_too_long":
        what = f"{shown} is too long (expected at most {ctx['max_length']} characters)"
    elif kind in ("value_error", "assertion_error") and "error" in ctx:
        what = str(ctx["error"])
        what = what.removeprefix(_MONEY_LABEL)
    else:
        what = f"{err['msg']} (got {shown})"
    return f"{where}: {what}" if where else what


def _fail(label: str, problem: str) -> ScenarioError:
    """The error for one problem with a scenario file."""
    return ScenarioError(f"scenario {label}: {problem}", file=label, problems=[problem])


def _validation_error(label: str, data: Any, e: ValidationError) -> ScenarioError:
    problems = [_describe(err, data) for err in e.errors(include_url=False)]
    if len(problems) == 1:
        return _fail(label, problems[0])
    lines = [f"scenario {label}: {len(problems)} problems"]
    lines += [f"  {p}" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        lines.append(f"  ... and {len(problems) - MAX_SHOWN} more")
    return ScenarioError("\n".join(lines), file=label, problems=problems)


# --- loading ---------------------------------------------------------------------------

def _label(path: Path) -> str:
    """How messages name a scenario file: its name, with its folder for ``scenario.yaml``."""
    if path.name == SCENARIO_FILE and path.parent.name:
        return f"{path.parent.name}/{path.name}"
    return path.name or str(path)


def _kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"a string ({_show(value)})"
    if isinstance(value, bool):
        return f"a boolean ({_show(value)})"
    if isinstance(value, int | float):
        return f"a number ({_show(value)})"
    return f"a {type(value).__name__}"


def _read(label: str, path: Path, what: str, where: str = "") -> bytes:
    """The bytes of a file; ``what`` names it in messages, ``where`` is a field path prefix."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise _fail(label, f"{where}{what} {path} does not exist") from None
    except IsADirectoryError:
        raise _fail(label, f"{where}{what} {path} is a directory (expected a file)") from None
    except OSError as e:
        raise _fail(label, f"{where}cannot read {what} {path} ({e.strerror or e})") from e


def _decode(label: str, raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _fail(label, f"{what} is not UTF-8 text (byte 0x{raw[e.start]:02x} at offset "
                           f"{e.start})") from e


def _read_prompt(label: str, base_dir: Path, prompt: str, where: str = "turns.prompt",
                 what: str = "prompt template") -> tuple[Path, bytes]:
    """A scenario file's resolved path and bytes, refusing one outside ``base_dir``."""
    folder = base_dir.resolve()
    target = (folder / prompt).resolve()
    if not target.is_relative_to(folder):
        raise _fail(label, f"{where}: {prompt!r} resolves to {target}, outside the "
                           f"scenario folder (expected a path inside {folder}, like "
                           "prompts/turn.md)")
    return target, _read(label, target, what, f"{where}: ")


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read, parse and validate a scenario YAML and its prompt template (``ScenarioError``)."""
    path = Path(path).absolute()
    label = _label(path)
    raw = _read(label, path, "file")
    text = _decode(label, raw, "the file")
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as e:
        raise _fail(label, _yaml_problem(e, text)) from e
    expected = "expected a mapping with at least id, title, calendar and turns"
    if data is None:
        raise _fail(label, f"the file is empty ({expected})")
    if not isinstance(data, dict):
        raise _fail(label, f"the top level is {_kind_of(data)} ({expected})")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as e:
        raise _validation_error(label, data, e) from e
    checks = _checks(label, scenario.checks)
    _, prompt_bytes = _read_prompt(label, path.parent, scenario.turns.prompt)
    prompt_text = _decode(label, prompt_bytes, "turns.prompt: the prompt template")
    files = {rel: _read_prompt(label, path.parent, rel, f"turns.files[{n}]", "file")[1]
             for n, rel in enumerate(scenario.turns.files)}
    digest = hashlib.sha256()
    for part in (raw, prompt_bytes, *files.values()):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return LoadedScenario(scenario=scenario, path=path, base_dir=path.parent,
                          prompt_template=prompt_text, sha256=digest.hexdigest(), files=files,
                          checks=tuple(checks))


def _checks(label: str, raw: tuple[dict[str, Any], ...]) -> list[CheckSpec]:
    """The validated checks, or one ScenarioError listing every problem with its path."""
    try:
        return parse_checks(raw)
    except CheckSpecError as e:
        problems = [f"{path}: {message} (got {_show(value)})"
                    for path, message, value in e.problems]
    if len(problems) == 1:
        raise _fail(label, problems[0])
    lines = [f"scenario {label}: {len(problems)} problems"]
    lines += [f"  {p}" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        lines.append(f"  ... and {len(problems) - MAX_SHOWN} more")
    raise ScenarioError("\n".join(lines), file=label, problems=problems)


# --- the library -------------------------------------------------------------------------

def library_dir() -> Path:
    """The built-in library: ``scenarios/library/<name>/scenario.yaml`` (and ``prompts/``)."""
    return _LIBRARY


def list_library(library: Path | None = None) -> list[str]:
    """The names of the library's scenarios (folders holding a ``scenario.yaml``), sorted."""
    root = library_dir() if library is None else library
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / SCENARIO_FILE).is_file())


def find_scenario(name_or_path: str | Path, *, library: Path | None = None) -> Path:
    """The YAML of a library scenario by name, or a given path to a YAML (or its folder).

    A bare name (no ``/``, no ``.yaml``/``.yml`` suffix) is a library name; anything
    else, and any ``Path``, is a path.
    """
    text = str(name_or_path)
    is_path = (isinstance(name_or_path, Path) or "/" in text or os.sep in text
               or text.endswith((".yaml", ".yml")))
    if is_path:
        path = Path(name_or_path)
        if path.is_file():
            return path
        if path.is_dir() and (path / SCENARIO_FILE).is_file():
            return path / SCENARIO_FILE
        what = "is a folder without a scenario.yaml" if path.is_dir() else "does not exist"
        raise _fail(text, f"{path.absolute()} {what} (expected a scenario YAML file or a "
                          "library name)")
    root = library_dir() if library is None else library
    names = list_library(root)
    if text in names:
        return root / text / SCENARIO_FILE
    if not names:
        raise ScenarioError(f"scenario {text!r}: not in the library (the library at {root} is "
                            "empty; give a path to a scenario YAML instead)")
    raise ScenarioError(f"scenario {text!r}: not in the library (expected one of: "
                        f"{', '.join(names)}; or a path to a scenario YAML)")
