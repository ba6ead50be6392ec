"""The check registry: spec models by type name, their functions, and the strict parser.

A check type is a pydantic spec model whose ``type`` field is a ``Literal`` of its
name, plus a function ``fn(spec, ctx) -> CheckResult | list[CheckResult]``; the
decorator :func:`check_type` registers both. :func:`parse_checks` validates a
scenario's raw check list against the discriminated union of every registered model
and reports every problem with its path (``checks[2].tolerance``), the value and what
was expected.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union, get_args

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from checks.errors import CheckSpecError

if TYPE_CHECKING:
    from checks.context import CheckContext

FAMILIES = ("state", "control", "audit", "files")


class CheckSpec(BaseModel):
    """Base of every check spec: strict, immutable; ``required`` defaults to true.

    ``daily`` asks for the check at the end of every business date as well (books
    checks only); the attempt summary then shows the first date it failed.
    ``at_turn`` reads the files as the agent's turn of that date left them (that turn's
    workspace) instead of the last turn's: a file each month's turn replaces, such as a
    month-end reconciliation, judged for every month and not only the last. A date that
    is no turn of the scenario is a grader error; a turn that did not run leaves no
    file. Not with ``daily``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    family: ClassVar[str] = "state"
    type: str
    name: str | None = Field(default=None, min_length=1, max_length=120,
                             pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/ -]*$")
    required: bool = True
    daily: bool = False
    at_turn: date | None = None

    @model_validator(mode="after")
    def _one_time(self) -> CheckSpec:
        if self.daily and self.at_turn is not None:
            raise ValueError("at_turn reads one turn's files: a check with it is not daily")
        return self

    def label(self, index: int) -> str:
        """The check's name: its own, or ``TYPE#INDEX`` (1-based) when it has none."""
        return self.name or f"{self.type}#{index + 1}"

    def reads_workspace(self) -> bool:
        """Whether the check reads the agent's files in a turn's workspace (its ``out/``,
        its inbox, whatever a module looks at). Per-date control hands the workspace only
        to such checks, and evaluating beside the run waits for their dates before the next
        turn changes the folders (``runs.daily``). By default a check of the ``files``
        family does (a module's, a holds list's); every file check does."""
        return self.family == "files"

    def ahead(self, ctx: CheckContext, day: date) -> None:
        """Work the final evaluation of this check does as of ``day`` (a turn's end it
        judges, say), done ahead once ``day`` is over: the checks beside the run call it
        for every date, in time that would be idle, with a context like the final
        evaluation's, whose ``turn_ends`` keeps what it works out for the final
        evaluation to find (the log up to a date's end never changes). Nothing by
        default."""

    def lookbacks(self) -> frozenset[Lookback]:
        """The earlier dates this check, evaluated at the end, folds the books or the
        world's records as of at the log's head (a statement date, say), each with the
        fold it reads (:data:`FOLDS`): per-date control beside the run folds them ahead
        (``checks.context.Folds.prepare``). None by default."""
        return frozenset()

    def turn_lookbacks(self) -> frozenset[Lookback]:
        """Like :meth:`lookbacks`, the earlier dates this check folds as of, but each at
        the end of that date's agent turn (``CheckContext.turn_ends``: a file judged as
        its turn left the books). None by default."""
        return frozenset()


Lookback = tuple[date, str]
"""A look back: its date and the fold it reads (one of :data:`FOLDS`)."""

FOLDS = ("checks.books", "checks.postings", "checks.world")
"""The folds a look back may read, by the names the folds are kept under (``Folds``): the
books, the GL and subledger rows, the world's records; a reconciliation reads all three."""


def reconciled_on(day: date | None) -> frozenset[Lookback]:
    """The look backs of a reconciliation as of ``day`` (every fold; none without a day)."""
    return frozenset((day, name) for name in FOLDS) if day is not None else frozenset()


def final_lookbacks(specs: Iterable[CheckSpec], *,
                    turns: bool = False) -> frozenset[Lookback]:
    """Every look back the final evaluation of ``specs`` makes at the log's head
    (:meth:`CheckSpec.lookbacks`), or with ``turns`` at the end of a turn
    (:meth:`CheckSpec.turn_lookbacks`)."""
    return frozenset().union(*(spec.turn_lookbacks() if turns else spec.lookbacks()
                               for spec in specs))


def workspace_path(value: str) -> str:
    """A relative path inside the workspace (a glob is allowed); refuses ``..`` and roots."""
    p = PurePosixPath(value)
    if not value or p.is_absolute() or ".." in p.parts or "\\" in value or "\x00" in value:
        raise ValueError("expected a relative path inside the workspace (no '..', no leading "
                         "'/')")
    return value


class FileCheckSpec(CheckSpec):
    """Base of the file checks: ``path`` is relative to the workspace (e.g. ``out/x.csv``)."""

    family: ClassVar[str] = "files"
    path: str

    def reads_workspace(self) -> bool:
        """A file check reads the workspace."""
        return True

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        return workspace_path(v)


@dataclass(frozen=True)
class CheckResult:
    """One result of a check: ``{name, passed, detail, metrics}`` (+ whether required)."""

    name: str
    passed: bool
    detail: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    required: bool = True

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"name": self.name, "passed": self.passed, "required": self.required,
                "detail": self.detail, "metrics": dict(self.metrics)}


CheckFn = Callable[[Any, "CheckContext"], "CheckResult | list[CheckResult]"]


@dataclass(frozen=True)
class CheckType:
    """A registered check type."""

    name: str
    model: type[CheckSpec]
    fn: CheckFn
    family: str


REGISTRY: dict[str, CheckType] = {}
_ADAPTER: list[tuple[tuple[tuple[str, int], ...], TypeAdapter[Any]]] = []

#: Modules whose import registers the built-in check types.
BUILTIN_MODULES = ("checks.files", "checks.state", "checks.control", "checks.audit",
                   "checks.workbook", "checks.outcomes", "checks.policy", "checks.optimality",
                   "checks.accruals", "checks.purchasing", "checks.fixed_assets",
                   "checks.collections", "checks.tax",
                   "checks.bank_multi")


def check_type(model: type[CheckSpec]) -> Callable[[CheckFn], CheckFn]:
    """Register ``fn`` as the check for ``model`` (whose ``type`` is a one-name Literal)."""
    annotation = model.model_fields["type"].annotation
    names = get_args(annotation)
    if len(names) != 1 or not isinstance(names[0], str):
        raise TypeError(f"{model.__name__}.type must be a Literal of one name")
    name = names[0]
    if model.family not in FAMILIES:
        raise TypeError(f"{model.__name__}.family {model.family!r} is not one of {FAMILIES}")

    def deco(fn: CheckFn) -> CheckFn:
        if name in REGISTRY:
            raise ValueError(f"check type {name!r} is already registered")
        REGISTRY[name] = CheckType(name, model, fn, model.family)
        _ADAPTER.clear()
        return fn

    return deco


def load_builtin() -> None:
    """Import the modules that register the built-in check types (idempotent; those
    imported already are passed over: every check's run asks)."""
    for mod in BUILTIN_MODULES:
        if mod in sys.modules:
            continue
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:  # a family still being written is simply absent
            if e.name != mod:
                raise


def _adapter() -> TypeAdapter[Any]:
    # Keyed by the registry's contents, not its size: removing one type and adding
    # another (as tests do) must not reuse a stale union.
    key = tuple((name, id(t.model)) for name, t in REGISTRY.items())
    if not _ADAPTER or _ADAPTER[0][0] != key:
        models = tuple(t.model for t in REGISTRY.values())
        union = Annotated[Union[models], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007
        _ADAPTER[:] = [(key, TypeAdapter(union))]
    return _ADAPTER[0][1]


def _path(root: str, loc: Sequence[str | int]) -> str:
    out = root
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def parse_checks(raw: Sequence[Any], *, where: str = "checks") -> list[CheckSpec]:
    """Validate a raw check list strictly; raise :class:`CheckSpecError` naming every problem.

    Refused: an entry that is not a mapping, a missing or unknown ``type``, an unknown or
    missing field, a value out of its bounds (each model's own rules), two checks with
    the same name, and ``daily`` on a file check.
    """
    load_builtin()
    if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Sequence):
        raise CheckSpecError([(where, "expected a list of checks", raw)])
    adapter = _adapter()
    known = ", ".join(sorted(REGISTRY))
    problems: list[tuple[str, str, Any]] = []
    specs: list[tuple[int, CheckSpec]] = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            problems.append((at, "expected a mapping with a 'type'", item))
            continue
        kind = item.get("type")
        if not isinstance(kind, str) or kind not in REGISTRY:  # (a list is not hashable)
            problems.append((f"{at}.type", f"unknown check type; expected one of: {known}"
                             if kind is not None else
                             f"missing; expected one of: {known}", kind))
            continue
        try:
            spec = adapter.validate_python(dict(item))
        except ValidationError as e:
            for err in e.errors(include_url=False):
                loc = list(err["loc"])
                if loc[:1] == [kind]:  # drop the union tag (only the tag: a field may
                    loc = loc[1:]      # hold the same string)
                msg = err["msg"].removeprefix("Value error, ")
                if err["type"] == "extra_forbidden":
                    fields = ", ".join(sorted(REGISTRY[kind].model.model_fields))
                    msg = f"unknown field for {kind}; expected one of: {fields}"
                elif err["type"] == "missing":
                    msg = f"required field of {kind} is missing"
                problems.append((_path(at, loc), msg, err.get("input")))
            continue
        if spec.daily and spec.family == "files":
            problems.append((f"{at}.daily", "only books checks (state, control, audit) can "
                             "run every business date", True))
        specs.append((i, spec))
    seen: dict[str, int] = {}
    for i, spec in specs:
        label = spec.label(i)
        if spec.name is not None and label in seen:
            problems.append((f"{where}[{i}].name", f"duplicate check name (also "
                             f"{where}[{seen[label]}])", label))
        seen.setdefault(label, i)
    if problems:
        raise CheckSpecError(problems)
    return [spec for _, spec in specs]


def definitions_hash(specs: Sequence[CheckSpec]) -> str:
    """sha256 of the canonical JSON of the check definitions (the scorer's fingerprint)."""
    data = [s.model_dump(mode="json") for s in specs]
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def literal_name(model: type[CheckSpec]) -> str:
    """The type name a spec model registers under."""
    return str(get_args(model.model_fields["type"].annotation)[0])


__all__ = ["FAMILIES", "REGISTRY", "CheckResult", "CheckSpec", "CheckType",
           "FileCheckSpec", "Literal", "check_type", "definitions_hash", "load_builtin",
           "parse_checks", "workspace_path"]
