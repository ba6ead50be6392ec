"""A scenario's (or desk task's) policy table, ``policy.yaml``: its model and loader.

Apart from :mod:`runs.policy` (which checks a table against the scenario's checks and the
mutation runs, and imports :mod:`runs.validate`) so that :mod:`runs.validate` can read
which rules name an opt-in operator without an import cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runs.errors import BadInput
from scenarios.strict_yaml import parse_yaml

POLICY_FILE = "policy.yaml"


class Rule(BaseModel):
    """One rule the agent is given."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    id: int = Field(ge=1)
    rule: str = Field(min_length=1, max_length=400)
    source: str = Field(min_length=1, max_length=200)
    checks: tuple[str, ...] = ()
    mutants: tuple[str, ...] = ()


class PolicyTable(BaseModel):
    """A scenario's rules, numbered."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    rules: tuple[Rule, ...] = Field(min_length=1)


def load_policy(folder: Path) -> PolicyTable:
    """The folder's ``policy.yaml``; :class:`BadInput` naming the file, field and value."""
    path = folder / POLICY_FILE
    if not path.is_file():
        raise BadInput(f"{path}: no policy table (expected {POLICY_FILE} listing the rules)")
    try:
        data: Any = parse_yaml(path.read_text(encoding="utf-8"))
        table = PolicyTable.model_validate(data)
    except yaml.YAMLError as e:
        raise BadInput(f"{path}: not YAML ({e})") from None
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"])
        raise BadInput(f"{path}: {where}: {err['msg']} (got {err.get('input')!r})") from None
    ids = [r.id for r in table.rules]
    if ids != list(range(1, len(ids) + 1)):
        raise BadInput(f"{path}: rules must be numbered 1..{len(ids)} in order (got {ids})")
    return table
