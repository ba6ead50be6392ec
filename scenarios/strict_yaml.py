"""The strict-YAML toolkit shared by the scenario loader and the desk-task loader.

- :class:`StrictYamlLoader` / :func:`parse_yaml`: a safe loader that keeps YAML 1.1's
  surprises out: only ``true``/``false`` are booleans (``on:``, ``no``, ``y`` stay
  strings), dates stay strings for pydantic to parse and report with their path, ``0123``
  and ``1:30`` stay strings instead of octal and base-60 numbers, and a key given twice in
  one mapping is an error instead of the last one silently winning. Bounded: aliases
  (``*name``, the way to an alias bomb) are refused, nesting stops at ``MAX_DEPTH``
  levels, a text at ``MAX_CHARS`` characters, and only plain data comes back (``!!binary``,
  ``!!set``, ``!!omap``, ``!!pairs`` are refused).
- :func:`validate_strict`, :func:`coerced_booleans`: validate data with a pydantic model
  and refuse a boolean that pydantic made of a string or a number (``"on"``, ``"no"``,
  ``1``): only ``true``/``false`` are booleans, after pydantic as in the YAML.
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
import reprlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

MAX_SHOWN = 10
"""How many problems one message lists (the error's ``problems`` keeps them all)."""
MAX_DEPTH = 50
"""How deeply mappings and lists may nest in one YAML file."""
MAX_CHARS = 4_000_000
"""The longest YAML text parsed (a scenario or task file is a few kilobytes)."""

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_VALUE = "tag:yaml.org,2002:value"
_MERGE = "tag:yaml.org,2002:merge"


class DuplicateKey(yaml.MarkedYAMLError):
    """A mapping names the same key twice."""


class NotAccepted(yaml.MarkedYAMLError):
    """YAML that is well-formed but outside what the strict loader accepts (an alias, too
    deep a nesting, a tag for something that is not plain data, too long a text)."""


class StrictYamlLoader(yaml.SafeLoader):
    """A safe loader with YAML 1.2-style scalars and no duplicate keys (see the module)."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """A node, refusing an alias (``*name``) and nesting deeper than ``MAX_DEPTH``."""
        if self.check_event(yaml.AliasEvent):
            event = self.get_event()
            raise NotAccepted(None, None, f"alias *{event.anchor} is not allowed (aliases and "
                          "anchors are refused: write the value out)", event.start_mark)
        if self.check_event(yaml.MappingStartEvent, yaml.SequenceStartEvent):
            if self._depth >= MAX_DEPTH:
                raise NotAccepted(None, None, f"nested more than {MAX_DEPTH} levels deep",
                              self.peek_event().start_mark)
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)

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


def _not_plain(loader: StrictYamlLoader, node: yaml.Node) -> Any:
    raise NotAccepted(None, None, f"the tag {node.tag} is not allowed (expected plain data: "
                  "mappings, lists, strings, numbers, true/false, null)", node.start_mark)


for _tag in ("binary", "set", "omap", "pairs"):
    StrictYamlLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _not_plain)


def parse_yaml(text: str) -> Any:
    """Parse YAML text with ``StrictYamlLoader`` (raises ``yaml.YAMLError``)."""
    if len(text) > MAX_CHARS:
        raise NotAccepted(None, None, f"the text is {len(text):,} characters long (expected at "
                      f"most {MAX_CHARS:,})", None)
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


class _ShortRepr(reprlib.Repr):
    """reprlib's bounded repr, with mappings in their own order (reprlib sorts them)."""

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}"
                  for k, v in list(x.items())[: self.maxdict]]
        return "{" + ", ".join(pieces) + (", ..." if len(x) > self.maxdict else "") + "}"


_SHORT = _ShortRepr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxlong, _SHORT.maxother = 3, 80, 40, 80
_SHORT.maxtuple = _SHORT.maxlist = _SHORT.maxdict = _SHORT.maxset = _SHORT.maxfrozenset = 4


def show(value: Any, limit: int = 60, *, null: str = "null") -> str:
    """A value as messages show it: its repr, cut at ``limit``; None as ``null``.

    The repr is bounded before it is made (a few items per level, three levels), so a
    huge or deeply nested value costs no more than a small one.
    """
    if value is None:
        return null
    text = _SHORT.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def coerced_booleans(value: Any, raw: Any,
                     at: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], Any]]:
    """Where pydantic made a boolean of something that is not ``true``/``false``.

    ``value`` is what a lax validation made of ``raw`` (a model, or lists and mappings of
    them); the answer lists ``(path, raw value)`` for each boolean field whose raw value
    was not a boolean (pydantic reads ``"on"``, ``"no"``, ``"y"``, ``1`` as booleans).
    """
    found: list[tuple[tuple[str | int, ...], Any]] = []
    if isinstance(value, bool):
        if not isinstance(raw, bool):
            found.append((at, raw))
    elif isinstance(value, BaseModel) and isinstance(raw, Mapping):
        for name in type(value).model_fields:
            if name in raw:
                found += coerced_booleans(getattr(value, name), raw[name], (*at, name))
    elif isinstance(value, list | tuple) and isinstance(raw, list | tuple):
        for n, (item, raw_item) in enumerate(zip(value, raw, strict=False)):
            found += coerced_booleans(item, raw_item, (*at, n))
    elif isinstance(value, Mapping) and isinstance(raw, Mapping):
        by_text = {str(k): v for k, v in raw.items()}
        for key, item in value.items():
            text = key.isoformat() if hasattr(key, "isoformat") else str(key)
            if text in by_text:
                found += coerced_booleans(item, by_text[text], (*at, text))
    return found


M = TypeVar("M", bound=BaseModel)


def validate_strict(model: type[M], data: Any) -> M:
    """``model`` from data read from a file, with no boolean made of a string or number.

    pydantic validates as usual (a date from ``YYYY-MM-DD``, money from a decimal
    string); a boolean field given anything but ``true``/``false`` is then a
    ``bool_type`` error at its path, as pydantic's own errors are (``ValidationError``).
    """
    result = model.model_validate(data)
    bad = coerced_booleans(result, data)
    if bad:
        raise ValidationError.from_exception_data(model.__name__, [
            {"type": "bool_type", "loc": loc, "input": value} for loc, value in bad])
    return result


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
