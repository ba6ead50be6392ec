"""Desk tasks: find them, load a task folder strictly, generate its files.

``load_task`` turns a task folder into a :class:`DeskTask` whose ``loaded`` is a
``LoadedScenario`` of kind ``desk``: one turn on the task's business date, through the
same engine, adapters and verdicts as a process scenario. Its ``workspace_files`` are
the folder's ``workspace/`` (placed in the turn's workspace), its ``reference_dir`` the
folder's ``reference/`` (never shown to the agent), its checks parsed by the registry.

A task with ``books:`` starts its turn from the engine's company state: the scenario's
calendar runs from ``books.start`` to the task date and the one turn is on the task
date; its books are drawn with the task's seed (``DeskTask.seed``), which is also the
seed its workspace exports were generated with. Run such a task with ``task.seed``: with
another seed the books are another company's, and its supplied exports no longer
describe them.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import ValidationError

from checks.registry import CheckSpecError, parse_checks
from desk.errors import DeskTaskError, GeneratorFailed
from desk.generators import GeneratorContext
from desk.spec import NO_AUTOMATION, DeskTaskSpec
from scenarios.errors import ScenarioError
from scenarios.loader import LoadedScenario, find_scenario, load_scenario
from scenarios.spec import CompanySpec, PopulationSpec, Scenario
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

TASK_FILE = "task.yaml"
WORKSPACE = "workspace"
REFERENCE = "reference"
SOLUTION = "solution"
SOLVER = "solve"
README = "README.md"

_TASKS = Path(__file__).resolve().parent / "tasks"
_SAFE_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_RUNNER_FILES = ("prompt.md", "ERP_GUIDE.md", "inbox", "out", ".erpsim")
"""Workspace names the runner writes itself (a supplied file must not take them)."""


@dataclass(frozen=True)
class DeskTask:
    """A loaded desk task."""

    spec: DeskTaskSpec
    folder: Path
    loaded: LoadedScenario

    @property
    def id(self) -> str:
        """The task's id (its folder's name)."""
        return self.spec.id

    @property
    def category(self) -> str:
        """The task's business category (``cash application``...)."""
        return self.spec.category

    @property
    def title(self) -> str:
        """One line saying what is asked."""
        return self.spec.title

    @property
    def seed(self) -> int:
        """The seed to run the task with (its generator's and its books')."""
        return self.spec.seed

    @property
    def solution(self) -> Path:
        """The reference solution: an adapter executable (``solution/solve``)."""
        return self.folder / SOLUTION / SOLVER

    @property
    def timeout_s(self) -> int:
        """The agent's time for the task's one turn."""
        return self.spec.timeout_s

    @property
    def has_books(self) -> bool:
        """Whether the turn starts from engine-generated books (then seeds matter)."""
        return self.spec.books is not None


# --- finding tasks ------------------------------------------------------------------------

def tasks_dir() -> Path:
    """The sample tasks: ``desk/tasks/<id>/task.yaml``."""
    return _TASKS


def list_tasks(root: Path | None = None) -> list[str]:
    """The names of the tasks (folders holding a ``task.yaml``), sorted."""
    return folders_with(tasks_dir() if root is None else root, TASK_FILE)


def find_task(name_or_path: str | Path, *, root: Path | None = None) -> Path:
    """A task folder by name (in ``desk/tasks``) or by path (to the folder or its task.yaml)."""
    text = str(name_or_path)
    if looks_like_path(name_or_path, (".yaml",)):
        path = Path(name_or_path)
        if path.is_file() and path.name == TASK_FILE:
            return path.parent
        if path.is_dir() and (path / TASK_FILE).is_file():
            return path
        what = "is a folder without a task.yaml" if path.is_dir() else "does not exist"
        raise DeskTaskError(f"task {text}: {path.absolute()} {what} (expected a task folder "
                            "or a sample task's name)", file=text)
    where = tasks_dir() if root is None else root
    names = list_tasks(where)
    if text in names:
        return where / text
    raise DeskTaskError(f"task {text!r}: no such task (expected one of: "
                        f"{', '.join(names) or 'none'}; or a path to a task folder)", file=text)


# --- loading --------------------------------------------------------------------------------

def _fail(label: str, problems: list[str]) -> DeskTaskError:
    return DeskTaskError(problems_message(f"task {label}", problems), file=label,
                         problems=problems)


def _show(value: Any) -> str:
    return show(value, null="None")


def _describe(err: Any) -> str:
    """One ``path: what is wrong (got value)`` line for a pydantic error."""
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p[:1].isupper())]
    where = format_path(loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"{where}: unknown field"
    if kind == "missing":
        return f"{where}: missing (required)"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind.startswith("date"):
        msg = "not a valid date (expected YYYY-MM-DD)"
    text = f"{msg} (got {_show(err.get('input'))})"
    return f"{where}: {text}" if where else msg


def _allowed(model: Any, loc: list[Any]) -> str:
    """The fields a model at ``loc`` allows (for an unknown-field message)."""
    tp: Any = model
    for part in loc[:-1]:
        field = getattr(tp, "model_fields", {}).get(part) if isinstance(part, str) else None
        if field is None:
            return ""
        tp = field.annotation
        args = getattr(tp, "__args__", None)
        if args and not hasattr(tp, "model_fields"):
            tp = next((a for a in args if hasattr(a, "model_fields")), tp)
    fields = getattr(tp, "model_fields", None)
    return f" (allowed: {', '.join(sorted(fields))})" if fields else ""


def _parse_spec(label: str, raw: bytes) -> DeskTaskSpec:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _fail(label, [not_utf8(raw, e)]) from e
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as e:
        raise _fail(label, [yaml_problem(e, text, context=False)]) from e
    if not isinstance(data, dict):
        raise _fail(label, [f"the top level is {type(data).__name__} (expected a mapping with "
                            "id, category, title, date, prompt and checks)"])
    try:
        return validate_strict(DeskTaskSpec, data)
    except ValidationError as e:
        problems = []
        for err in e.errors(include_url=False):
            line = _describe(err)
            if err["type"] == "extra_forbidden":
                loc = [p for p in err["loc"] if not (isinstance(p, str) and p[:1].isupper())]
                line += _allowed(DeskTaskSpec, loc)
            problems.append(line)
        raise _fail(label, problems) from e


def _inside(label: str, folder: Path, rel: str, where: str) -> Path:
    target = (folder / rel).resolve()
    if not target.is_relative_to(folder.resolve()):
        raise _fail(label, [f"{where}: {rel!r} resolves to {target}, outside the task folder "
                            f"(expected a path inside {folder}, like prompt.md)"])
    if not target.is_file():
        raise _fail(label, [f"{where}: {rel!r} is not a file in the task folder"])
    return target


def _tree(label: str, folder: Path, sub: str) -> dict[str, bytes]:
    """The files under ``folder/sub`` by relative path; links and unsafe names refused."""
    root = folder / sub
    if not root.exists():
        return {}
    if root.is_symlink() or not root.is_dir():
        raise _fail(label, [f"{sub}/: expected a folder (got a link or a file)"])
    out: dict[str, bytes] = {}
    problems: list[str] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            problems.append(f"{sub}/{rel}: a link (expected a regular file: links could lead "
                            "outside the task)")
            continue
        if path.is_dir():
            continue
        if any(part == "__pycache__" for part in PurePosixPath(rel).parts) \
                or rel.endswith(".pyc"):
            continue
        bad = [p for p in PurePosixPath(rel).parts if not _SAFE_PART.match(p)]
        if bad:
            problems.append(f"{sub}/{rel}: unsafe name {bad[0]!r} (expected letters, digits, "
                            "'.', '_' and '-', not starting with '.')")
            continue
        out[rel] = path.read_bytes()
    if problems:
        raise _fail(label, problems)
    return out


def _check_workspace(label: str, files: dict[str, bytes]) -> None:
    taken = [rel for rel in files if PurePosixPath(rel).parts[0] in _RUNNER_FILES]
    if taken:
        raise _fail(label, [f"workspace/{rel}: the runner writes this name itself (expected "
                            f"none of: {', '.join(_RUNNER_FILES)})" for rel in taken])


def _checks(label: str, raw: tuple[dict[str, Any], ...]) -> list[Any]:
    try:
        specs = parse_checks(list(raw))
    except CheckSpecError as e:
        raise _fail(label, [f"{path}: {message} (got {_show(value)})"
                            for path, message, value in e.problems]) from e
    problems = [f"{format_path((f'checks[{n}]', *loc))}: {_show(value)} is not a boolean "
                "(expected true or false)"
                for n, (spec, item) in enumerate(zip(specs, raw, strict=True))
                for loc, value in coerced_booleans(spec, item)]
    if problems:
        raise _fail(label, problems)
    return specs


def _check_references(label: str, specs: list[Any], reference: dict[str, bytes],
                      workspace: dict[str, bytes]) -> None:
    """Reference files the checks name exist; a forecast's truth is not in the workspace."""
    problems = []
    supplied = set(workspace.values())
    names = {PurePosixPath(rel).name for rel in workspace}
    for i, spec in enumerate(specs):
        for field in ("ref", "equals_ref", "module"):
            rel = getattr(spec, field, None)
            if isinstance(rel, str) and rel not in reference:
                problems.append(f"checks[{i}].{field}: {rel!r} is not in reference/ (expected "
                                f"one of: {', '.join(sorted(reference)) or 'no files'})")
        if spec.type == "forecast_error":
            rel = spec.ref
            if PurePosixPath(rel).name in names or reference.get(rel) in supplied:
                problems.append(f"checks[{i}].ref: the truth file {rel!r} is in the workspace "
                                "by name or bytes (expected it only in reference/)")
    if problems:
        raise _fail(label, problems)


def _library_parts(label: str, name: str) -> Scenario:
    try:
        return load_scenario(find_scenario(name)).scenario
    except ScenarioError as e:
        raise _fail(label, [f"books.library: {e}"]) from e


def desk_scenario(spec: DeskTaskSpec, *, prompt_label: str = "task.yaml#prompt",
                  label: str = "") -> Scenario:
    """The task's one-turn scenario (its books' calendar, company and population if any)."""
    company: Any = CompanySpec(automation=NO_AUTOMATION)
    population: Any = PopulationSpec()
    injections: Any = ()
    holidays: tuple[Any, ...] = ()
    start = spec.date
    if spec.books is not None:
        b = spec.books
        start = b.start
        if b.library is not None:
            lib = _library_parts(label or spec.id, b.library)
            company, population, injections = lib.company, lib.population, lib.injections
            injections = tuple(i for i in injections if b.start <= i.on <= spec.date)
            holidays = tuple(d for d in lib.calendar.holidays if b.start <= d <= spec.date)
        company = b.company or company
        population = b.population or population
        if b.injections is not None:
            injections = b.injections
    data = {"id": spec.id, "title": spec.title, "category": spec.category,
            "description": f"desk task ({spec.category})",
            "calendar": {"start": start, "end": spec.date, "holidays": holidays},
            "company": company, "population": population, "injections": injections,
            "turns": {"every": "none", "dates": [spec.date], "prompt": prompt_label,
                      "outputs": list(spec.outputs), "timeout_s": spec.timeout_s,
                      "carry_files": False},
            "checks": list(spec.checks)}
    return Scenario.model_validate(data)


WORKBOOK_NOTE = (
    "Workbooks (.xlsx) are recalculated with LibreOffice before they are read: use "
    "functions it has (VLOOKUP, INDEX/MATCH, SUMIFS and the like), not Excel 365's newer "
    "ones it may lack (XLOOKUP, XMATCH, FILTER, SORT, UNIQUE, LET, LAMBDA), which it reads "
    "as #NAME? errors.")
"""Said under the outputs of a task that leaves a workbook: a formula LibreOffice lacks is
an error cell to the workbook checks, and the agent could not know which those are."""


def prompt_template(spec: DeskTaskSpec, text: str) -> str:
    """The turn's prompt template: a header, the task's request (braces kept), the outputs
    (with :data:`WORKBOOK_NOTE` when one is a workbook)."""
    body = text.strip().replace("{", "{{").replace("}", "}}")
    out = f"# {{title}}\n\nBusiness date: {{date}} ({{weekday}}).\n\n{body}\n"
    if spec.outputs:
        out += "\n## Files to leave\n\n{outputs}\n"
        if any(o.lower().endswith(".xlsx") for o in spec.outputs):
            out += "\n" + WORKBOOK_NOTE + "\n"
    return out


def _digest(parts: list[tuple[str, bytes]]) -> str:
    return length_prefixed_sha256(piece for name, data in parts
                                  for piece in (name.encode(), data))


def load_task(name_or_path: str | Path, *, root: Path | None = None,
              check_files: bool = True) -> DeskTask:
    """Load and validate a task folder (``DeskTaskError`` naming file, path, value).

    ``check_files=False`` skips checking that the reference files the checks name
    exist (to load a new task whose generator has not written them yet).
    """
    folder = find_task(name_or_path, root=root).absolute()
    label = f"{folder.name}/{TASK_FILE}"
    raw = (folder / TASK_FILE).read_bytes()
    spec = _parse_spec(label, raw)
    if spec.id != folder.name:
        raise _fail(label, [f"id: {spec.id!r} differs from the folder's name "
                            f"{folder.name!r} (expected them equal)"])
    if spec.prompt_file is not None:
        prompt_path = _inside(label, folder, spec.prompt_file, "prompt_file")
        prompt_bytes = prompt_path.read_bytes()
        try:
            prompt_text = prompt_bytes.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise _fail(label, [f"prompt_file: {spec.prompt_file!r} is not UTF-8 text"]) from e
    else:
        prompt_text = spec.prompt or ""
        prompt_bytes = prompt_text.encode()
    checks = _checks(label, spec.checks)
    workspace = _tree(label, folder, WORKSPACE)
    _check_workspace(label, workspace)
    reference = _tree(label, folder, REFERENCE)
    if check_files:
        _check_references(label, checks, reference, workspace)
    solution = folder / SOLUTION / SOLVER
    if not solution.is_file():
        raise _fail(label, [f"{SOLUTION}/{SOLVER}: missing (expected the reference solution, "
                            "an executable honouring the adapter contract)"])
    if not os.access(solution, os.X_OK):
        raise _fail(label, [f"{SOLUTION}/{SOLVER}: not executable (chmod +x it, with a "
                            "'#!/usr/bin/env python3' line)"])
    solution_files = _tree(label, folder, SOLUTION)
    if not (folder / README).is_file():
        raise _fail(label, [f"{README}: missing (expected a README.md saying what the task "
                            "tests)"])
    if spec.generator is not None:
        _generator_module(label, spec.generator.module)
    try:
        scenario = desk_scenario(spec, prompt_label=spec.prompt_file or "task.yaml#prompt",
                                 label=label)
    except ValidationError as e:
        raise _fail(label, [f"books: {_describe(err)}" for err in e.errors(include_url=False)]
                    ) from e
    parts = [(TASK_FILE, raw), ("prompt", prompt_bytes)]
    for sub, files in ((WORKSPACE, workspace), (REFERENCE, reference),
                       (SOLUTION, solution_files)):
        parts += [(f"{sub}/{rel}", data) for rel, data in sorted(files.items())]
    loaded = LoadedScenario(
        scenario=scenario, path=folder / TASK_FILE, base_dir=folder,
        prompt_template=prompt_template(spec, prompt_text), sha256=_digest(parts),
        checks=tuple(checks), workspace_files=workspace,
        reference_dir=folder / REFERENCE, kind="desk")
    return DeskTask(spec=spec, folder=folder, loaded=loaded)


# --- generating -----------------------------------------------------------------------------

def _generator_module(label: str, name: str) -> Any:
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        raise _fail(label, [f"generator.module: {name!r} cannot be imported ({e})"]) from e
    except SyntaxError as e:
        where = f"{e.filename}, line {e.lineno}" if e.filename else f"line {e.lineno}"
        raise _fail(label, [f"generator.module: {name!r} has a syntax error ({where}: "
                            f"{e.msg})"]) from e
    except Exception as e:  # the module's own top level raised while it was imported
        raise _fail(label, [f"generator.module: {name!r} failed while it was imported "
                            f"({type(e).__name__}: {e})"]) from e
    if not callable(getattr(module, "generate", None)):
        raise _fail(label, [f"generator.module: {name!r} has no generate(ctx) function"])
    return module


def generate_task(task: DeskTask, seed: int | None = None) -> dict[str, bytes]:
    """The task's generated files (``workspace/...``, ``reference/...``) for a seed.

    ``seed`` defaults to the task's. Raises ``DeskTaskError`` for a task without a
    generator or a generator that returns something else than safe paths and bytes,
    and ``GeneratorFailed`` when the generator raises.
    """
    label = f"{task.id}/{TASK_FILE}"
    gen = task.spec.generator
    if gen is None:
        raise _fail(label, ["generator: the task has none (nothing to generate)"])
    module = _generator_module(label, gen.module)
    ctx = GeneratorContext(task_id=task.id, seed=gen.seed if seed is None else seed,
                           day=task.spec.date, scenario=task.loaded.scenario,
                           params=dict(gen.params))
    try:
        files = module.generate(ctx)
    except Exception as e:
        raise GeneratorFailed(f"task {task.id}: generator {gen.module} failed with seed "
                              f"{ctx.seed}: {type(e).__name__}: {e}") from e
    problems = []
    if not isinstance(files, dict):
        raise _fail(label, [f"generator.module: {gen.module} returned "
                            f"{type(files).__name__} (expected a dict of path to bytes)"])
    for rel, data in files.items():
        parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
        if (len(parts) < 2 or parts[0] not in (WORKSPACE, REFERENCE)
                or not all(_SAFE_PART.match(p) for p in parts)):
            problems.append(f"generator.module: {gen.module} made {rel!r} (expected a path "
                            "under workspace/ or reference/ with safe names)")
        elif not isinstance(data, bytes):
            problems.append(f"generator.module: {gen.module} made {rel!r} as "
                            f"{type(data).__name__} (expected bytes)")
    if problems:
        raise _fail(label, problems)
    return dict(sorted(files.items()))


def supplied_differs(task: DeskTask) -> list[str]:
    """Generated files whose committed bytes differ from a fresh generation (or are missing).

    Not a failure: the committed bytes define the task's release; regenerating makes a
    different experimental condition.
    """
    if task.spec.generator is None:
        return []
    return differs_from(task, generate_task(task))


def stale_files(task: DeskTask, fresh: dict[str, bytes]) -> list[str]:
    """Files in the task's ``workspace/`` that a generation (``fresh``) does not make.

    A generated task's workspace is what its generator makes: a file left from an earlier
    release would be handed to the agent as if it were an input. (``reference/`` may hold
    hand-written helpers beside the generated files, so it is not swept.)
    """
    root = task.folder / WORKSPACE
    have = (f"{WORKSPACE}/{p.relative_to(root).as_posix()}" for p in root.rglob("*")
            if p.is_file()) if root.is_dir() else iter(())
    return sorted(rel for rel in have if rel not in fresh)


def differs_from(task: DeskTask, fresh: dict[str, bytes]) -> list[str]:
    """The committed files that differ from ``fresh``: missing, other bytes, or stale."""
    out = [rel for rel, data in fresh.items()
           if not (task.folder / rel).is_file() or (task.folder / rel).read_bytes() != data]
    return sorted(out + stale_files(task, fresh))


def write_generated(task: DeskTask) -> list[tuple[str, str]]:
    """Write a fresh generation into the task folder: ``(action, path)`` for each change,
    ``wrote`` or ``removed`` (a workspace file the generator no longer makes).

    The whole generation is made before anything is written (a failing generator leaves
    the folder as it was), and each file is replaced whole (never left half-written).
    """
    fresh = generate_task(task)
    changed = []
    for rel, data in fresh.items():
        path = task.folder / rel
        if path.is_file() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_bytes(data)
        os.replace(partial, path)
        changed.append(("wrote", rel))
    for rel in stale_files(task, fresh):
        (task.folder / rel).unlink()
        changed.append(("removed", rel))
    return changed
