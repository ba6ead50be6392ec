"""The strict scenario loader: YAML in, a validated ``Scenario`` (or one clear error) out.

The YAML is read with the strict loader of ``scenarios.strict_yaml``, shared with the
desk-task loader, which keeps YAML 1.1's surprises out: only ``true``/``false`` are
booleans (``on:``, ``no``, ``y`` stay strings; ``on`` is an injection's field), dates stay
strings for pydantic to parse and report with their path, ``0123`` and ``1:30`` stay
strings instead of octal and base-60 numbers, and a key given twice in one mapping is an
error instead of the last one silently winning. Every fault becomes a ``ScenarioError``
naming the file, the field path, the bad value and what was expected::

    scenario month-end-close.yaml: turns.dates[2]: '2026-02-30' is not a valid date
    (expected YYYY-MM-DD)
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from checks.errors import CheckSpecError
from checks.registry import CheckSpec, parse_checks
from counterparties.injections import INJECTIONS
from counterparties.profiles import CustomerProfile, VendorProfile
from erp.charts import CHARTS
from scenarios.errors import ScenarioError
from scenarios.spec import (
    FIRST_DATE,
    LAST_DATE,
    CustomerPopulation,
    InjectionSpec,
    Scenario,
    TierSpec,
    VendorPopulation,
)
from scenarios.strict_yaml import (
    coerced_booleans,
    folders_with,
    format_path,
    length_prefixed_sha256,
    looks_like_path,
    not_utf8,
    parse_yaml,
    problems_message,
    show,
    validate_strict,
    yaml_problem,
)

SCENARIO_FILE = "scenario.yaml"
"""The name of a library scenario's YAML inside its folder."""

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


# --- validation errors -----------------------------------------------------------------

Loc = tuple[str | int, ...]

# Fields typed as open dicts in the spec whose values are validated by a model chosen at
# validation time; knowing the model lets an unknown-field message list the allowed ones.
_OPEN_FIELDS: dict[tuple[type[BaseModel], str], Callable[[dict[Any, Any]], Any]] = {
    (CustomerPopulation, "params"): lambda node: dict[str, CustomerProfile],
    (VendorPopulation, "params"): lambda node: dict[str, VendorProfile],
    (TierSpec, "customer_params"): lambda node: dict[str, CustomerProfile],
    (TierSpec, "vendor_params"): lambda node: dict[str, VendorProfile],
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
    shown = show(value)
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


def _fail_all(label: str, problems: list[str]) -> ScenarioError:
    """The error for every problem with a scenario file (at most ``MAX_SHOWN`` shown)."""
    return ScenarioError(problems_message(f"scenario {label}", problems), file=label,
                         problems=problems)


def _validation_error(label: str, data: Any, e: ValidationError) -> ScenarioError:
    return _fail_all(label, [_describe(err, data) for err in e.errors(include_url=False)])


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
        return f"a string ({show(value)})"
    if isinstance(value, bool):
        return f"a boolean ({show(value)})"
    if isinstance(value, int | float):
        return f"a number ({show(value)})"
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
        raise _fail(label, f"{what} is {not_utf8(raw, e)}") from e


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


def load_scenario(path: str | Path, *, tier: str | None = None) -> LoadedScenario:
    """Read, parse and validate a scenario YAML and its prompt template (``ScenarioError``).

    ``tier`` names one of the scenario's declared difficulty tiers; without it, the
    scenario's own ``tier:`` (if any) applies. The loaded scenario is the tiered one, its
    ``tier`` field naming the tier (``scenarios.tiers``).
    """
    path = Path(path).absolute()
    label = _label(path)
    raw = _read(label, path, "file")
    text = _decode(label, raw, "the file")
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as e:
        raise _fail(label, yaml_problem(e, text)) from e
    expected = "expected a mapping with at least id, title, calendar and turns"
    if data is None:
        raise _fail(label, f"the file is empty ({expected})")
    if not isinstance(data, dict):
        raise _fail(label, f"the top level is {_kind_of(data)} ({expected})")
    try:
        scenario = validate_strict(Scenario, data)
    except ValidationError as e:
        raise _validation_error(label, data, e) from e
    scenario = _tiered(label, scenario, tier)
    checks = _checks(label, scenario.checks)
    _check_names(label, scenario, checks)
    _, prompt_bytes = _read_prompt(label, path.parent, scenario.turns.prompt)
    prompt_text = _decode(label, prompt_bytes, "turns.prompt: the prompt template")
    files = {rel: _read_prompt(label, path.parent, rel, f"turns.files[{n}]", "file")[1]
             for n, rel in enumerate(scenario.turns.files)}
    digest = length_prefixed_sha256((raw, prompt_bytes, *files.values()))
    return LoadedScenario(scenario=scenario, path=path, base_dir=path.parent,
                          prompt_template=prompt_text, sha256=digest, files=files,
                          checks=tuple(checks))


def _tiered(label: str, scenario: Scenario, tier: str | None) -> Scenario:
    """The scenario at the asked tier, or its own default tier (every tier checked)."""
    for declared in scenario.tiers:
        try:
            scenario.at_tier(declared)
        except ValidationError as e:
            raise _fail_all(label, [f"tiers.{declared}: {_describe(err, {})}"
                                    for err in e.errors(include_url=False)]) from e
    name = tier if tier is not None else scenario.tier
    if name is None:
        return scenario
    for known in scenario.tiers:
        if known == name:
            return scenario.at_tier(known)
    listed = ", ".join(scenario.tiers) or "none"
    raise _fail(label, f"tier {show(name)} is not declared (expected one of the tiers the "
                       f"scenario declares: {listed}; a scenario declares them under tiers: "
                       "in its scenario.yaml)")


def _checks(label: str, raw: tuple[dict[str, Any], ...]) -> list[CheckSpec]:
    """The validated checks, or one ScenarioError listing every problem with its path."""
    try:
        specs = parse_checks(raw)
    except CheckSpecError as e:
        problems = [f"{path}: {message} (got {show(value)})"
                    for path, message, value in e.problems]
        raise _fail_all(label, problems) from None
    problems = [f"{format_path((f'checks[{n}]', *loc))}: {show(value)} is not a boolean "
                "(expected true or false)"
                for n, (spec, item) in enumerate(zip(specs, raw, strict=True))
                for loc, value in coerced_booleans(spec, item)]
    if problems:
        raise _fail_all(label, problems)
    return specs


ACCOUNT_FIELDS = ("account", "accounts")
"""The check fields that name GL accounts (a code, or a list of codes)."""


def _check_names(label: str, scenario: Scenario, checks: list[CheckSpec]) -> None:
    """Refuse a check that names an account outside the chart, or a date out of range.

    Found at load time rather than at grading, after the whole attempt ran. The accounts
    are the chart's and the company's declared control accounts.
    """
    known = {row[0] for row in CHARTS[scenario.company.chart]}
    known |= set(scenario.company.control_accounts)
    problems: list[str] = []
    for n, spec in enumerate(checks):
        for name in type(spec).model_fields:
            value = getattr(spec, name)
            if name in ACCOUNT_FIELDS and value is not None:
                codes = [value] if isinstance(value, str) else list(value)
                for m, code in enumerate(codes):
                    where = (f"checks[{n}].{name}" if isinstance(value, str)
                             else f"checks[{n}].{name}[{m}]")
                    if code not in known:
                        problems.append(
                            f"{where}: account {show(code)} is not in the chart "
                            f"{scenario.company.chart!r} (expected one of: "
                            f"{', '.join(sorted(known))})")
            elif isinstance(value, date) and not FIRST_DATE <= value <= LAST_DATE:
                problems.append(f"checks[{n}].{name}: {value} is out of range (expected a "
                                f"date from {FIRST_DATE} to {LAST_DATE})")
    if problems:
        raise _fail_all(label, problems)


# --- the library -------------------------------------------------------------------------

def library_dir() -> Path:
    """The built-in library: ``scenarios/library/<name>/scenario.yaml`` (and ``prompts/``)."""
    return _LIBRARY


def list_library(library: Path | None = None) -> list[str]:
    """The names of the library's scenarios (folders holding a ``scenario.yaml``), sorted."""
    return folders_with(library_dir() if library is None else library, SCENARIO_FILE)


def find_scenario(name_or_path: str | Path, *, library: Path | None = None) -> Path:
    """The YAML of a library scenario by name, or a given path to a YAML (or its folder).

    A bare name (no ``/``, no ``.yaml``/``.yml`` suffix) is a library name; anything
    else, and any ``Path``, is a path.
    """
    text = str(name_or_path)
    if looks_like_path(name_or_path, (".yaml", ".yml")):
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
