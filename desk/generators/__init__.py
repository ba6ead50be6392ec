"""Generators of desk tasks' files: seeded, deterministic, made with the engine.

A generator is a module here with a function ``generate(ctx: GeneratorContext) ->
dict[str, bytes]`` whose keys are task-folder paths under ``workspace/`` or
``reference/`` (``workspace/bank_export.csv``). The same context gives the same bytes:
every draw comes from the seed's named streams (``sim.rng.Streams``) or from the
engine run with that seed, never from the clock or ``hash()``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from scenarios.spec import Scenario


@dataclass(frozen=True)
class GeneratorContext:
    """What a generator is given: the task, its seed and date, its parameters.

    ``scenario`` is the task's one-turn scenario; for a task with ``books:`` its
    calendar, company and population are the books', so a generator that runs it
    (``desk.simulate.simulate(ctx.scenario, ctx.seed)``) up to the turn sees exactly the
    books the agent's turn starts from.
    """

    task_id: str
    seed: int
    day: date
    scenario: Scenario
    params: dict[str, Any] = field(default_factory=dict)


def csv_bytes(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    """A CSV file's bytes: a header and rows, ``\\n`` line ends, minimal quoting."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(row)
    return buf.getvalue().encode("utf-8")


def text_bytes(text: str) -> bytes:
    """A text file's bytes (UTF-8, one trailing newline)."""
    return (text.rstrip("\n") + "\n").encode("utf-8")
