"""The ``task.yaml`` model: strict pydantic (``extra="forbid"``), every field checked.

See ``desk/README.md`` for the format. The model checks what one file can show on its
own (types, bounds, names, dates, the books' calendar); ``desk.tasks`` checks what needs
the folder (the prompt file, supplied and reference files, the solution, the checks
against the registry, the generator's module).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from pydantic import Field, StringConstraints, field_validator, model_validator

from scenarios.spec import CompanySpec, InjectionSpec, OutputPath, PopulationSpec, Strict
from sim.automation import Options
from sim.rng import MAX_SEED

TaskId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)]
CATEGORIES = ("reports", "drafting", "reformatting", "tooling", "reconciliation", "analysis",
              "extraction")
"""The seven desk categories (the seed benchmark's desk track): a task is in one of them."""
ModuleName = Annotated[str, StringConstraints(
    pattern=r"^desk\.generators\.[a-z_][a-z0-9_]*$", max_length=120)]

NO_AUTOMATION = Options(order_intake=False, auto_invoicing=False, dispatch_invoices=False,
                        bank_feed=False, auto_receipts=False,
                        controller_approves_bank_changes=False, month_end_statements=False)
"""A task without books runs no company process."""


class GeneratorSpec(Strict):
    """The module that makes the task's supplied and reference files, and its seed."""

    module: ModuleName
    """A module of ``desk.generators`` defining ``generate(ctx) -> dict[str, bytes]``."""
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)]
    """The task's seed: the generator's, and the books' when the task has books."""
    params: dict[str, Any] = Field(default_factory=dict)


class BooksSpec(Strict):
    """The company state the turn starts from: the engine's, from ``start`` to the task date.

    ``library`` takes the company, population and injections of a library scenario
    (with this short calendar); ``company``, ``population`` and ``injections`` given
    here replace the library's.
    """

    start: date
    library: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$")] | None = None
    company: CompanySpec | None = None
    population: PopulationSpec | None = None
    injections: tuple[InjectionSpec, ...] | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] | None = None
    """The books' seed when the task has no generator (else the generator's seed)."""


class DeskTaskSpec(Strict):
    """One desk task's ``task.yaml``."""

    id: TaskId
    category: str
    """One of :data:`CATEGORIES`; the campaign report groups and weighs tasks by it."""
    title: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    date: date
    """The task's business date: the one date of its one turn."""
    prompt: Annotated[str, StringConstraints(min_length=1)] | None = None
    """The request, as text."""
    prompt_file: Annotated[str, StringConstraints(min_length=1)] | None = None
    """Or the request in a file of the task folder (``prompt.md``)."""
    timeout_s: Annotated[int, Field(ge=1, le=86_400)] = 1200
    outputs: tuple[OutputPath, ...] = ()
    """The files the agent must leave (``out/...``), listed in the prompt."""
    books: BooksSpec | None = None
    generator: GeneratorSpec | None = None
    checks: tuple[dict[str, Any], ...] = Field(min_length=1)
    """Check specs (``checks.registry``); file paths relative to the workspace."""

    @field_validator("category")
    @classmethod
    def _one_of_seven(cls, value: str) -> str:
        if value not in CATEGORIES:
            raise ValueError(f"{value!r} is not a desk category (expected one of: "
                             f"{', '.join(CATEGORIES)})")
        return value

    @model_validator(mode="after")
    def _coherent(self) -> DeskTaskSpec:
        if (self.prompt is None) == (self.prompt_file is None):
            got = "neither" if self.prompt is None else "both"
            raise ValueError(f"give exactly one of prompt or prompt_file (got {got})")
        if self.date.weekday() >= 5:
            raise ValueError(f"date: {self.date} is a {self.date.strftime('%A')} (expected a "
                             "business day, Monday to Friday)")
        bad = [p for p in self.outputs if not p.startswith("out/")]
        if bad:
            raise ValueError(f"outputs: {', '.join(bad)} not under out/ (expected paths like "
                             "out/matches.csv)")
        if self.books is not None:
            if self.books.start > self.date:
                raise ValueError(f"books.start: {self.books.start} is after the task date "
                                 f"{self.date} (expected a date on or before it)")
            late = [(n, i.on) for n, i in enumerate(self.books.injections or ())
                    if not self.books.start <= i.on <= self.date]
            if late:
                n, on = late[0]
                raise ValueError(f"books.injections[{n}].on: {on} is outside the books' "
                                 f"calendar (expected {self.books.start}..{self.date})")
            if self.generator is not None and self.books.seed is not None:
                raise ValueError("books.seed: the task has a generator, whose seed the books "
                                 "use (remove books.seed)")
        return self

    @property
    def seed(self) -> int:
        """The task's seed (its generator's, else its books', else 0)."""
        if self.generator is not None:
            return self.generator.seed
        if self.books is not None and self.books.seed is not None:
            return self.books.seed
        return 0
