"""The strict-YAML toolkit shared by the scenario loader and the desk-task loader.

- :class:`StrictYamlLoader` / :func:`parse_yaml`: a safe loader that keeps YAML 1.1's
  surprises out: only ``true``/``false`` are booleans (``on:``, ``no``, ``y`` stay
  strings), dates stay strings for pydantic to parse and report with their path, ``0123``
  and ``1:30`` stay strings instead of octal and base-60 numbers, and a key given twice in
  one mapping is an error instead of the last one silently winning.
- :func:`yaml_problem`, :func:`not_utf8`, :func:`show`, :func:`format_path`,
  :func:`problems_message`: the pieces of a ``FILE: path: what is wrong`` message.
- :func:`looks_like_path`, :func:`folders_with`: a name-or-path lookup in a library of
  folders.
- :func:`length_prefixed_sha256`: the digest of a set of files (each piece preceded by its
  length, so that no byte can move from one piece to the next).

May import nothing of ours: the loaders wrap what it returns in their own errors.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

MAX_SHOWN = 10
"""How many problems one message lists (the error's ``problems`` keeps them all)."""

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_VALUE = "tag:yaml.org,2002:value"
_MERGE = "tag:yaml.org,2002:merge"


class DuplicateKey(yaml.MarkedYAMLError):
    """A mapping names the same key twice."""


class StrictYamlLoader(yaml.SafeLoader):
    """A safe loader with YAML 1.2-style scalars and no duplicate keys (see the module)."""

    def construct_mapping(self, node: yaml.MappingNode,
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
                    raise DuplicateKey("while constructing a mapping", node.start_mark,
                                       f"duplicate key {key!r} (first at {first})",
                                       key_node.start_mark)
                mark = key_node.start_mark
                seen[key] = f"line {mark.line + 1}, column {mark.column + 1}"
        return super().construct_mapping(node, deep=deep)


# A copy of SafeLoader's table without YAML 1.1's booleans (yes/no/on/off/y/n), dates,
# octal/base-60 numbers and '='; the global SafeLoader is left alone.
StrictYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in (_BOOL, _INT, _FLOAT, _TIMESTAMP, _VALUE)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
StrictYamlLoader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
StrictYamlLoader.add_implicit_resolver(
    _INT, re.compile(r"^[-+]?(?:0|[1-9][0-9_]*)$"), list("-+0123456789"))
StrictYamlLoader.add_implicit_resolver(
    _FLOAT, re.compile(r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                           |[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                           |[-+]?\.(?:inf|Inf|INF)
                           |\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."))


def _timestamp_as_string(loader: StrictYamlLoader, node: yaml.Node) -> Any:
    return loader.construct_yaml_str(node)


# An explicit ``!!timestamp`` stays a string too, for pydantic to judge.
StrictYamlLoader.add_constructor(_TIMESTAMP, _timestamp_as_string)


def parse_yaml(text: str) -> Any:
    """Parse YAML text with ``StrictYamlLoader`` (raises ``yaml.YAMLError``)."""
    loader = StrictYamlLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def yaml_problem(e: yaml.YAMLError, text: str, *, context: bool = True) -> str:
    """``line L, column C: what`` for a YAML error (``context``: and where it was in)."""
    if not context:
        at = getattr(e, "problem_mark", None)
        prefix = f"line {at.line + 1}, column {at.column + 1}: " if at else ""
        return f"{prefix}{getattr(e, 'problem', None) or e}"
    if isinstance(e, yaml.MarkedYAMLError) and e.problem_mark is not None:
        mark = e.problem_mark
        out = f"line {mark.line + 1}, column {mark.column + 1}: {e.problem}"
        if e.context and not isinstance(e, DuplicateKey):
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


def not_utf8(raw: bytes, e: UnicodeDecodeError) -> str:
    """``not UTF-8 text (byte 0x.. at offset N)``."""
    return f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})"


def show(value: Any, limit: int = 60, *, null: str = "null") -> str:
    """A value as messages show it: its repr, cut at ``limit``; None as ``null``."""
    if value is None:
        return null
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_path(path: Sequence[str | int]) -> str:
    """A field path as written in messages: ``turns.dates[2]``, ``injections[0].on``."""
    out = ""
    for seg in path:
        if isinstance(seg, int) and not isinstance(seg, bool):
            out += f"[{seg}]"
        else:
            out += f".{seg}" if out else str(seg)
    return out


def problems_message(head: str, problems: Sequence[str]) -> str:
    """``HEAD: problem``, or ``HEAD: N problems`` and one indented line each (at most ten)."""
    if len(problems) == 1:
        return f"{head}: {problems[0]}"
    lines = [f"{head}: {len(problems)} problems"]
    lines += [f"  {p}" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        lines.append(f"  ... and {len(problems) - MAX_SHOWN} more")
    return "\n".join(lines)


def looks_like_path(name_or_path: str | Path, suffixes: tuple[str, ...]) -> bool:
    """Whether a name-or-path is a path: a ``Path``, a ``/``, or one of ``suffixes``."""
    text = str(name_or_path)
    return (isinstance(name_or_path, Path) or "/" in text or os.sep in text
            or text.endswith(suffixes))


def folders_with(root: Path, marker: str) -> list[str]:
    """The names of ``root``'s folders that hold a file named ``marker``, sorted."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / marker).is_file())


def length_prefixed_sha256(pieces: Iterable[bytes]) -> str:
    """Hex sha256 over the pieces, each preceded by its length as 8 big-endian bytes."""
    h = hashlib.sha256()
    for piece in pieces:
        h.update(len(piece).to_bytes(8, "big"))
        h.update(piece)
    return h.hexdigest()
