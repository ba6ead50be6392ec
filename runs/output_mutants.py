"""Mistakes an agent makes in an output file: the edits behind ``validate``'s output operators.

Each operator is a class of mistake; :func:`file_edits` lists, for one file, every edit of
each operator it can make (deterministically, from the file's bytes and the turn's input
files), or why it can make none:

- ``output_drop_row``: a CSV data row, a workbook row, a text line stating a figure or an
  identifier left out;
- ``output_add_row``: a row that should be excluded (an input row no output mentions, the
  nearest to the copied row, its figures, dates and ids put in), a copy of a row with a
  changed key, a row written twice; in a text, a line for an excluded item;
- ``output_change_cell``: a money cell by a cent or to another plausible amount (another
  row's, ten times), a date by a day, an id or category to another valid value of its
  column (another account code in a mapping); a workbook's value cells alike; a text's
  figure by a cent (every mention), one mention to another figure, a date by a day, an id
  to another;
- ``output_swap_columns``: two adjacent columns written in the other order (header too),
  or two columns of the same kind (debit and credit, two dates) with their values swapped
  under the header;
- ``output_break_formula``: a workbook formula replaced by its value off by a cent, a
  reference pointed at the next row (a range one row short), a lookup of the wrong
  column (VLOOKUP's column number + 1), a reference to deleted cells (``#REF!``, an
  error cell);
- ``output_break_logic``: a script's or query's comparison, sort order, connective or
  number changed (``>`` to ``>=``, ``DESC`` to ``ASC``, ``and`` to ``or``, a literal + 1).

An edit's result is compared with the original as data (:func:`same_content`: a CSV's cells,
a workbook's cells and formulas, a text's words): an edit that changes bytes only is
equivalent, and ``validate`` reports it apart.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from erp.money import format_cents

OUTPUT_OPS = ("output_drop_row", "output_change_cell", "output_add_row",
              "output_swap_columns", "output_break_formula", "output_break_logic")
"""The output operators, in the order ``validate`` lists them."""


@dataclass(frozen=True)
class Edit:
    """One planned change to a file: what it is (``kind``, the ``site``: a column, a cell,
    a line) and a function from the file's bytes to the changed bytes."""

    kind: str
    site: str
    what: str
    apply: Callable[[bytes], bytes]
    context: str = ""
    """A text edit's line (what the figure, date or id is said of)."""


Plan = tuple[dict[str, list[Edit]], dict[str, str]]
"""Per operator its edits, and per operator without any the reason."""

_MONEY = re.compile(r"^-?\$?\d[\d,]*\.\d{2}$")
_INT = re.compile(r"^-?\d+$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DECIMAL = re.compile(r"^-?\d+\.\d+$")
_ID = re.compile(r"^[A-Za-z]{1,6}[-_/]?\d{2,}(?:[-_/][A-Za-z0-9]+)*$")
_TEXT_MONEY = re.compile(r"(?<![\w.,])\$?\d{1,3}(?:,\d{3})+\.\d{2}(?!\d)"
                         r"|(?<![\w.,])\$?\d+\.\d{2}(?!\d)")
_TEXT_ISO = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_TEXT_LONG_DATE = re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2}),?\s+(\d{4})\b")
_TEXT_ID = re.compile(r"\b[A-Z]{2,6}-\d{2,}\b")


def _cents(text: str) -> int | None:
    t = text.strip().replace("$", "").replace(",", "")
    if not re.fullmatch(r"-?\d+\.\d{2}", t):
        return None
    neg = t.startswith("-")
    whole, frac = t.lstrip("-").split(".")
    v = int(whole) * 100 + int(frac)
    return -v if neg else v


def _money_like(old: str, cents: int) -> str:
    """``cents`` written as ``old`` is (a dollar sign, thousands separators)."""
    s = format_cents(cents)
    if "," in old:
        neg = s.startswith("-")
        whole, frac = s.lstrip("-").split(".")
        s = ("-" if neg else "") + f"{int(whole):,}.{frac}"
    if "$" in old:
        s = s.replace("-", "-$", 1) if s.startswith("-") else "$" + s
    return s


def _kind(value: str) -> str:
    v = value.strip()
    if not v:
        return "empty"
    if _MONEY.match(v):
        return "money"
    if _ISO.match(v):
        return "date"
    if _INT.match(v):
        return "integer"
    if _DECIMAL.match(v):
        return "decimal"
    if _ID.match(v):
        return "id"
    return "text"


def _next_day(iso: str) -> str:
    try:
        return (date.fromisoformat(iso) + timedelta(days=1)).isoformat()
    except ValueError:
        return iso


def _bump_id(value: str, taken: set[str]) -> str:
    """An id like ``value`` with its last number moved up until it is not ``taken``."""
    m = list(re.finditer(r"\d+", value))
    if not m:
        return value + "-2"
    last = m[-1]
    n = int(last.group())
    for step in range(1, 1000):
        new = value[:last.start()] + str(n + step).zfill(len(last.group())) + value[last.end():]
        if new not in taken:
            return new
    return value + "-X"


# --- inputs -----------------------------------------------------------------------------


def input_tables(workspace: Path | None) -> list[tuple[str, list[str], list[list[str]]]]:
    """The turn's input CSVs (outside ``out/``): (name, header, rows)."""
    if workspace is None or not workspace.is_dir():
        return []
    out = []
    for p in sorted(workspace.rglob("*.csv")):
        rel = p.relative_to(workspace)
        if rel.parts[0] in ("out", ".erpsim"):
            continue
        try:
            rows = list(csv.reader(io.StringIO(p.read_text(encoding="utf-8-sig"))))
        except (UnicodeDecodeError, csv.Error):
            continue
        if len(rows) >= 2:
            out.append((rel.as_posix(), rows[0], rows[1:]))
    return out


def _norm(cell: str) -> str:
    c = _cents(cell)
    if c is not None:
        return f"${c}"
    m = _TEXT_LONG_DATE.fullmatch(cell.strip())
    if m:
        return date(int(m.group(3)), _MONTHS.index(m.group(1)) + 1, int(m.group(2))).isoformat()
    return cell.strip()


def _source_row(template: list[str], tables: list[tuple[str, list[str], list[list[str]]]],
                mentioned: set[str]) -> tuple[list[str], list[list[str]]] | None:
    """The input row a template (an output row's cells, or a line's tokens) came from, and
    the rows of its table that no output mentions, nearest first."""
    keys = {_norm(c) for c in template if _kind(c) in ("id",) or _TEXT_ID.fullmatch(c)}
    for _, _, rows in tables:
        for row in rows:
            if keys & {_norm(c) for c in row}:
                absent = [r for r in rows if r is not row and not ({_norm(c) for c in r
                                                                    if _kind(c) == "id"}
                                                                   & mentioned)
                          and any(_kind(c) == "id" for c in r)]
                same = {_norm(c) for c in row}
                absent.sort(key=lambda r: -len(same & {_norm(c) for c in r}))
                return row, absent
    return None


def _carry(cells: list[str], src: list[str], other: list[str]) -> list[str]:
    """``cells`` with each one equal (as data) to a cell of ``src`` replaced by ``other``'s
    cell of the same column, written the way the original was."""
    by = {_norm(v): k for k, v in enumerate(src) if v.strip()}
    out = []
    for c in cells:
        k = by.get(_norm(c))
        if k is None or k >= len(other):
            out.append(c)
            continue
        new = other[k]
        cents = _cents(new)
        out.append(_money_like(c, cents) if cents is not None and _cents(c) is not None
                   else new)
    return out


# --- CSV --------------------------------------------------------------------------------


def _read_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))


def _write_csv(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode("utf-8")


def _key_column(header: list[str], data: list[list[str]]) -> int | None:
    for k in range(len(header)):
        col = [r[k] for r in data if k < len(r)]
        if col and all(_kind(v) == "id" for v in col) and len(set(col)) == len(col):
            return k
    for k in range(len(header)):
        col = [r[k] for r in data if k < len(r)]
        if col and all(_kind(v) in ("id", "integer") for v in col):
            return k
    return None


def order_stated(header: list[str], prompt: str) -> bool:
    """Whether the prompt asks for exactly these columns in this order: the header, comma
    separated, after the word "exact" (spaces, backticks and line breaks ignored)."""
    flat = re.sub(r"[\s`'\"]", "", prompt).lower()
    at = flat.find(",".join(h.lower() for h in header))
    return len(header) > 1 and at >= 0 and "exact" in flat[max(0, at - 60):at]


def _categorical(col: list[str]) -> bool:
    """A column of codes or categories (a value repeats, or none has a space), not prose."""
    vals = [v.strip() for v in col if v.strip()]
    return bool(vals) and (len(set(vals)) < len(vals) or not any(" " in v for v in vals))


def _input_values(value: str, tables: list[tuple[str, list[str], list[list[str]]]]
                  ) -> list[str]:
    """The other values of the first input column that holds ``value`` (another valid
    value: another vendor name of the master, another account of the chart)."""
    for _, header, rows in tables:
        for k in range(len(header)):
            col = [r[k].strip() for r in rows if k < len(r)]
            if value.strip() in col:
                return sorted({v for v in col if v and v != value.strip()})
    return []


def _csv_plan(data: bytes, tables: list[tuple[str, list[str], list[list[str]]]],
              mentioned: set[str], prompt: str = "") -> Plan:
    rows = _read_csv(data)
    if not rows:
        return {}, {op: "an empty CSV" for op in OUTPUT_OPS}
    header, body = rows[0], rows[1:]
    edits: dict[str, list[Edit]] = {op: [] for op in OUTPUT_OPS}
    why = {"output_break_formula": "a CSV has no formula",
           "output_break_logic": "a CSV is data, not a script"}
    if not body:
        for op in ("output_drop_row", "output_change_cell", "output_swap_columns"):
            why[op] = "no data row"

    def replace(new_rows: list[list[str]]) -> Callable[[bytes], bytes]:
        return lambda _b: _write_csv(new_rows)

    def label(row: list[str]) -> str:
        return ", ".join(row[:2])

    for i, row in enumerate(body):
        edits["output_drop_row"].append(Edit(
            "missing row", f"row {i + 1}", f"dropped row {i + 1} ({label(row)})",
            replace([header, *body[:i], *body[i + 1:]])))
    # rows that should be excluded: input rows nobody mentions, shaped like an output row
    seen: set[tuple[str, ...]] = set()
    for i, row in enumerate(body):
        src = _source_row(row, tables, mentioned)
        if src is None:
            continue
        for other in src[1][:2]:
            new = _carry(row, src[0], other)
            if new == row or tuple(new) in seen:
                continue
            seen.add(tuple(new))
            edits["output_add_row"].append(Edit(
                "excluded row", f"after row {i + 1}",
                f"added a row for {label(new)} (an input row no output has)",
                replace([header, *body[:i + 1], new, *body[i + 1:]])))
        if len(seen) >= 12:
            break
    key = _key_column(header, body)
    for i, row in enumerate(body):
        if key is not None:
            taken = {r[key] for r in body if key < len(r)}
            new = list(row)
            new[key] = _bump_id(row[key], taken)
            edits["output_add_row"].append(Edit(
                "copy with a changed key", f"after row {i + 1}",
                f"row {i + 1} copied as {header[key]} {new[key]}",
                replace([header, *body[:i + 1], new, *body[i + 1:]])))
        edits["output_add_row"].append(Edit(
            "row twice", f"after row {i + 1}", f"row {i + 1} ({label(row)}) written twice",
            replace([header, *body[:i + 1], list(row), *body[i + 1:]])))
    # cells
    for k, name in enumerate(header):
        col = [r[k] if k < len(r) else "" for r in body]
        kinds = {_kind(v) for v in col} - {"empty"}
        for i, v in enumerate(col):
            kind = _kind(v)
            if kind == "empty":
                continue
            changes: list[tuple[str, str]] = []
            if kind == "money":
                c = _cents(v) or 0
                changes.append(("money by a cent", _money_like(v, c + 1)))
                others = [x for x in col if _kind(x) == "money" and _cents(x) != c]
                alt = others[(i + 1) % len(others)] if others else _money_like(v, c * 10 or 100)
                changes.append(("money to another amount", alt))
            elif kind == "date":
                changes.append(("date by a day", _next_day(v)))
            elif kind == "decimal":  # a quantity, a rate: the decimal point slips
                places = len(v.split(".")[1])
                changes.append(("number ten times", f"{float(v) * 10:.{places}f}"))
            elif kind == "integer":
                changes.append(("number by one", str(int(v) + 1)))
                others = sorted({x for x in col if x != v and _kind(x) == "integer"})
                if others:
                    changes.append(("another value of the column", others[i % len(others)]))
            else:
                others = (sorted({x for x in col if x.strip() and x != v})
                          if kind == "id" or _categorical(col) else [])
                if not others:
                    others = _input_values(v, tables)  # a name of the master, not prose
                if not others and kinds <= {"id"}:
                    others = [_bump_id(v, set(col))]
                if others:
                    changes.append((f"another {'id' if kind == 'id' else 'value'} of the "
                                    "column", others[i % len(others)]))
            for what, to in changes:
                if _norm(to) == _norm(v):
                    continue
                mutated = [list(r) for r in body]
                mutated[i][k] = to
                edits["output_change_cell"].append(Edit(
                    what, name, f"row {i + 1} {name}: {v} -> {to}",
                    replace([header, *mutated])))
    # columns
    width = len(header)
    for k in range(width - 1 if order_stated(header, prompt) else 0):
        def reorder(r: list[str], k: int = k) -> list[str]:
            r = list(r) + [""] * (width - len(r))
            r[k], r[k + 1] = r[k + 1], r[k]
            return r
        edits["output_swap_columns"].append(Edit(
            "columns in the wrong order", f"{header[k]}/{header[k + 1]}",
            f"columns {header[k]} and {header[k + 1]} written in the other order",
            replace([reorder(r) for r in rows])))
    kinds_of = [{_kind(r[k]) for r in body if k < len(r)} - {"empty"} for k in range(width)]
    for a in range(width):
        for b in range(a + 1, width):
            if len(kinds_of[a]) != 1 or kinds_of[a] != kinds_of[b] or kinds_of[a] <= {"text"}:
                continue
            if all((r[a] if a < len(r) else "") == (r[b] if b < len(r) else "") for r in body):
                continue

            def swap(r: list[str], a: int = a, b: int = b) -> list[str]:
                r = list(r) + [""] * (width - len(r))
                r[a], r[b] = r[b], r[a]
                return r
            edits["output_swap_columns"].append(Edit(
                "values under the wrong header", f"{header[a]}/{header[b]}",
                f"{header[a]} and {header[b]} values swapped under the header",
                replace([header, *[swap(r) for r in body]])))
    if not edits["output_swap_columns"]:
        why["output_swap_columns"] = (
            "one column only" if width < 2 else "the prompt states no exact column order "
            "and no two columns of one kind differ")
    if not edits["output_add_row"]:
        why["output_add_row"] = "no data row to copy"
    return edits, why


# --- text -------------------------------------------------------------------------------


def _text_plan(data: bytes, tables: list[tuple[str, list[str], list[list[str]]]],
               mentioned: set[str]) -> Plan:
    text = data.decode("utf-8")
    edits: dict[str, list[Edit]] = {op: [] for op in OUTPUT_OPS}
    why = {"output_swap_columns": "a text has no columns",
           "output_break_formula": "a text has no formula",
           "output_break_logic": "a text is not a script"}

    def put(new: str) -> Callable[[bytes], bytes]:
        return lambda _b: new.encode("utf-8")

    def line_of(at: int) -> str:
        return text[text.rfind("\n", 0, at) + 1:(text.find("\n", at) + 1 or len(text) + 1) - 1]

    figures = list(_TEXT_MONEY.finditer(text))
    for n, f in enumerate(figures):
        c = _cents(f.group()) or 0
        new = _money_like(f.group(), c + 1)
        every = re.sub(rf"(?<![\d.,]){re.escape(f.group())}(?!\d)", new, text)
        edits["output_change_cell"].append(Edit(
            "figure by a cent", f"figure {f.group()}", f"figure {f.group()} -> {new} "
            "(every mention)", put(every), line_of(f.start())))
        others = [g.group() for g in figures if _cents(g.group()) != c]
        if others:
            alt = others[n % len(others)]
            edits["output_change_cell"].append(Edit(
                "figure to another stated figure", f"figure {f.group()}",
                f"figure {f.group()} at {f.start()} -> {alt}",
                put(text[:f.start()] + alt + text[f.end():]), line_of(f.start())))
    for d in _TEXT_ISO.finditer(text):
        new = _next_day(d.group())
        edits["output_change_cell"].append(Edit(
            "date by a day", f"date {d.group()}", f"date {d.group()} at {d.start()} -> {new}",
            put(text[:d.start()] + new + text[d.end():])))
    for d in _TEXT_LONG_DATE.finditer(text):
        day = date(int(d.group(3)), _MONTHS.index(d.group(1)) + 1, int(d.group(2)))
        nxt = day + timedelta(days=1)
        new = f"{_MONTHS[nxt.month - 1]} {nxt.day}, {nxt.year}"
        edits["output_change_cell"].append(Edit(
            "date by a day", f"date {d.group()}", f"date {d.group()} at {d.start()} -> {new}",
            put(text[:d.start()] + new + text[d.end():])))
    ids = list(_TEXT_ID.finditer(text))
    distinct = sorted({m.group() for m in ids})
    for n, m in enumerate(ids):
        others = [x for x in distinct if x != m.group()] or [_bump_id(m.group(), set(distinct))]
        alt = others[n % len(others)]
        edits["output_change_cell"].append(Edit(
            "another id", f"id {m.group()}", f"id {m.group()} at {m.start()} -> {alt}",
            put(text[:m.start()] + alt + text[m.end():])))
    named = 0
    for _, header, rows in tables:
        for k, col in enumerate(header):
            values = sorted({r[k].strip() for r in rows if k < len(r)
                             and _kind(r[k]) == "text" and len(r[k].strip()) >= 4})
            if len(values) < 2:
                continue
            for n, v in enumerate(values):
                if named >= 8 or not re.search(rf"(?<!\w){re.escape(v)}(?!\w)", text):
                    continue
                alt = values[(n + 1) % len(values)]
                named += 1
                edits["output_change_cell"].append(Edit(
                    "another value of the input's column", f"{col} {v}",
                    f"{col} {v!r} -> {alt!r} (every mention)",
                    put(re.sub(rf"(?<!\w){re.escape(v)}(?!\w)", alt.replace("\\", r"\\"),
                               text))))
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if _TEXT_MONEY.search(line) or _TEXT_ID.search(line):
            edits["output_drop_row"].append(Edit(
                "missing line", f"line {i + 1}", f"dropped line {i + 1} ({line.strip()[:40]})",
                put("\n".join(lines[:i] + lines[i + 1:]))))
    # a line for an item that should be left out
    seen: set[str] = set()
    for i, line in enumerate(lines):
        found = _TEXT_ID.findall(line)
        if not found:
            continue
        tokens = [*found, *(m.group() for m in _TEXT_MONEY.finditer(line)),
                  *(m.group() for m in _TEXT_ISO.finditer(line)),
                  *(m.group() for m in _TEXT_LONG_DATE.finditer(line))]
        src = _source_row(tokens, tables, mentioned)
        candidates = src[1][:2] if src else []
        for other in candidates:
            new_line = line
            for tok, rep in zip(tokens, _carry(tokens, src[0], other), strict=True):  # type: ignore[index]
                if tok != rep:
                    if _TEXT_LONG_DATE.fullmatch(tok) and _ISO.match(rep):
                        when = date.fromisoformat(rep)
                        rep = f"{_MONTHS[when.month - 1]} {when.day}, {when.year}"
                    new_line = new_line.replace(tok, rep, 1)
            if new_line == line or new_line in seen:
                continue
            seen.add(new_line)
            edits["output_add_row"].append(Edit(
                "excluded item", f"after line {i + 1}",
                f"added a line for {_TEXT_ID.findall(new_line)[0]} (an input row no output "
                "has)", put("\n".join([*lines[:i + 1], new_line, *lines[i + 1:]]))))
    if not edits["output_change_cell"]:
        why["output_change_cell"] = "no figure, date or id in the text"
    if not edits["output_drop_row"]:
        why["output_drop_row"] = "no line states a figure or an id"
    if not edits["output_add_row"]:
        why["output_add_row"] = ("no input row that no output mentions, next to an id a line "
                                 "names (an item that should be left out)")
    return edits, why


# --- scripts ----------------------------------------------------------------------------

_LOGIC_PY = ((r"(?<![<>=!])>=", "<=", "comparison"), (r"(?<![<>=!])<=", ">=", "comparison"),
             (r"(?<![<>=!-])>(?![=>])", ">=", "comparison"),
             (r"(?<![<>=!])<(?![=<])", "<=", "comparison"),
             (r"==", "!=", "comparison"), (r"\band\b", "or", "connective"),
             (r"\bor\b", "and", "connective"), (r"\bnot\s+", "", "negation"),
             (r"reverse=True", "reverse=False", "sort order"),
             (r"(?<![\w.])(\d+)(?![\w.])", None, "number"))
_LOGIC_SQL = ((r"(?<![<>=!])>=", "<=", "comparison"), (r"(?<![<>=!])<=", ">=", "comparison"),
              (r"(?<![<>=!-])>(?![=>])", ">=", "comparison"),
              (r"(?<![<>=!])<(?![=<>])", "<=", "comparison"),
              (r"(?<![<>!])=(?!=)", "<>", "comparison"),
              (r"\bDESC\b", "ASC", "sort order"), (r"\bASC\b", "DESC", "sort order"),
              (r"\bAND\b", "OR", "connective"), (r"\bNOT\s+", "", "negation"),
              (r"\bLEFT JOIN\b", "JOIN", "join"),
              (r"(?<![\w.'])(\d+)(?![\w.'])", None, "number"))


def _replaced(text: str) -> Callable[[bytes], bytes]:
    return lambda _b: text.encode("utf-8")


def _script_plan(data: bytes, sql: bool) -> Plan:
    text = data.decode("utf-8")
    edits: dict[str, list[Edit]] = {op: [] for op in OUTPUT_OPS}
    why = {op: "a script has no rows, cells or formulas (output_break_logic changes it)"
           for op in OUTPUT_OPS if op != "output_break_logic"}
    comment = "--" if sql else "#"
    offset = 0
    in_doc = False
    for n, line in enumerate(text.split("\n")):
        start = offset
        offset += len(line) + 1
        stripped = line.strip()
        if not sql and stripped.startswith(('"""', "'''")):
            if not (stripped.count('"""') >= 2 or stripped.count("'''") >= 2):
                in_doc = not in_doc
            continue
        if in_doc or not stripped or stripped.startswith(comment) or (
                not sql and stripped.startswith(("import ", "from ", "def ", "@"))):
            continue
        code = line.split(comment, 1)[0]
        # not inside string literals
        masked = re.sub(r"'[^']*'|\"[^\"]*\"", lambda m: " " * len(m.group()), code)
        for pattern, rep, kind in (_LOGIC_SQL if sql else _LOGIC_PY):
            for m in re.finditer(pattern, masked, re.I if sql else 0):
                new = str(int(m.group(1)) + 1) if rep is None else rep
                a, b = start + m.start(), start + m.end()
                edits["output_break_logic"].append(Edit(
                    kind, f"line {n + 1}", f"line {n + 1}: {m.group().strip()!r} -> "
                    f"{new.strip()!r}", _replaced(text[:a] + new + text[b:])))
    if not edits["output_break_logic"]:
        why["output_break_logic"] = "no comparison, sort order, connective or number to change"
    return edits, why


# --- workbooks --------------------------------------------------------------------------

_CELL = re.compile(r'<c r="([A-Z]+)(\d+)"([^>]*?)(?:/>|>(.*?)</c>)', re.S)
_ROW = re.compile(r'<row r="(\d+)"[^>]*>.*?</row>', re.S)
_FORMULA = re.compile(r"<f([^>]*)>(.*?)</f>", re.S)
_VALUE = re.compile(r"<v>(.*?)</v>", re.S)
_LOOKUP_COLUMN = re.compile(r"\b([VH]LOOKUP\([^,]+,[^,]+,\s*)(\d+)", re.I)
_REF = re.compile(r"(?<![A-Za-z_!])(\$?)([A-Z]{1,3})(\$?)(\d+)(?![\d(])")
_SHEET_REF = re.compile(r"(?<![\w.$!'])((?:'[^']+'|[A-Za-z_][\w.]*)!)?"
                        r"\$?[A-Z]{1,3}\$?\d+(?::\$?[A-Z]{1,3}\$?\d+)?(?![\w(!])")
_FORMULA_STRING = re.compile(r'"[^"]*"|&quot;.*?&quot;')


def _deleted_reference(formula: str) -> str | None:
    """The formula as left when the rows or columns its first cell reference (a range, a
    cell of another sheet) points at are deleted: that reference ``#REF!``
    (``SUM(Invoices!$E$2:$E$9)`` -> ``SUM(#REF!)``), so the cell evaluates to an error.
    None when it references no cell (outside its string literals)."""
    masked = _FORMULA_STRING.sub(lambda m: " " * len(m.group()), formula)
    m = _SHEET_REF.search(masked)
    if m is None:
        return None
    return formula[:m.start()] + "#REF!" + formula[m.end():]


def _sheets(z: dict[str, bytes]) -> list[str]:
    return sorted(n for n in z if n.startswith("xl/worksheets/") and n.endswith(".xml"))


def _unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) for n in z.namelist()}


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, b in files.items():
            z.writestr(n, b)
    return buf.getvalue()


def _sheet_edit(sheet: str, a: int, b: int, new: str) -> Callable[[bytes], bytes]:
    def apply(data: bytes) -> bytes:
        files = _unzip(data)
        xml = files[sheet].decode("utf-8")
        files[sheet] = (xml[:a] + new + xml[b:]).encode("utf-8")
        files.pop("xl/calcChain.xml", None)
        return _zip(files)
    return apply


def _shared_strings(files: dict[str, bytes]) -> list[str]:
    xml = files.get("xl/sharedStrings.xml", b"").decode("utf-8")
    return [re.sub(r"<[^>]+>", "", si) for si in re.findall(r"<si>(.*?)</si>", xml, re.S)]


def _numeric_cell(attrs: str) -> bool:
    return "t=" not in attrs or 't="n"' in attrs


def _recalculated_values(data: bytes) -> dict[tuple[int, str], str]:
    """(sheet number, cell) -> the value LibreOffice computes for each formula cell of a
    workbook saved without cached values (empty when ``soffice`` is not installed)."""
    import tempfile

    from checks.workbook import convert_with_soffice, find_soffice

    try:
        find_soffice()
    except FileNotFoundError:
        return {}
    with tempfile.TemporaryDirectory(prefix="erpsim-mutant-recalc-") as tmp:
        src = Path(tmp) / "in" / "workbook.xlsx"
        src.parent.mkdir()
        src.write_bytes(data)
        try:
            got = convert_with_soffice(src, Path(tmp) / "out").read_bytes()
        except (OSError, RuntimeError, TimeoutError):
            return {}
    files = _unzip(got)
    out: dict[tuple[int, str], str] = {}
    for n, sheet in enumerate(_sheets(files)):
        for cm in _CELL.finditer(files[sheet].decode("utf-8")):
            inner = cm.group(4) or ""
            vm = _VALUE.search(inner)
            if "<f" in inner and vm is not None and _numeric_cell(cm.group(3)):
                out[n, cm.group(1) + cm.group(2)] = vm.group(1)
    return out


_VALUES: dict[bytes, dict[tuple[int, str], str]] = {}


def same_values(before: bytes, after: bytes) -> bool:
    """Whether two versions of a workbook compute the same value in every formula cell
    (LibreOffice recalculates both): a formula pointed at another cell that still gives
    the same figure (a range that was one row longer than its data) changed nothing a
    reader of the workbook could see. False when ``soffice`` is missing."""
    import hashlib

    got = []
    for data in (before, after):
        key = hashlib.sha256(data).digest()
        if key not in _VALUES:
            _VALUES[key] = _recalculated_values(data)
            if len(_VALUES) > 16:
                _VALUES.pop(next(iter(_VALUES)))
        got.append(_VALUES[key])
    return bool(got[0]) and got[0] == got[1]


def _xlsx_plan(data: bytes) -> Plan:
    edits: dict[str, list[Edit]] = {op: [] for op in OUTPUT_OPS}
    why = {"output_break_logic": "a workbook is not a script",
           "output_add_row": "", "output_swap_columns": ""}
    try:
        files = _unzip(data)
    except zipfile.BadZipFile:
        return edits, {op: "not a readable workbook (zip)" for op in OUTPUT_OPS}
    strings = _shared_strings(files)
    computed: dict[tuple[int, str], str] | None = None
    for number, sheet in enumerate(_sheets(files)):
        name = sheet.rsplit("/", 1)[1].removesuffix(".xml")
        xml = files[sheet].decode("utf-8")
        rows = list(_ROW.finditer(xml))
        for r in rows:
            if r.group(1) != "1" and ("<v>" in r.group() or "<is>" in r.group()):
                edits["output_drop_row"].append(Edit(
                    "missing row", f"{name}!{r.group(1)}",
                    f"{name}: dropped row {r.group(1)}",
                    _sheet_edit(sheet, r.start(), r.end(), "")))
        cells = list(_CELL.finditer(xml))
        columns: dict[str, list[re.Match[str]]] = {}
        for cm in cells:
            columns.setdefault(cm.group(1), []).append(cm)
        for cm in cells:
            col, rown, attrs, inner = cm.group(1), cm.group(2), cm.group(3), cm.group(4) or ""
            ref = f"{name}!{col}{rown}"
            fm = _FORMULA.search(inner)
            vm = _VALUE.search(inner)
            a0 = cm.start(4) if cm.group(4) is not None else -1
            if fm is not None:
                cached = vm.group(1) if vm is not None else ""
                if not cached and _numeric_cell(attrs):  # saved without values: recalculate
                    if computed is None:
                        computed = _recalculated_values(data)
                    cached = computed.get((number, f"{col}{rown}"), "")
                value = None
                if _numeric_cell(attrs) and re.fullmatch(r"-?\d+(\.\d+)?(E-?\d+)?", cached):
                    value = round(float(cached) * 100)
                if value is not None:
                    new_inner = f"<v>{format_cents(value + 1)}</v>"
                    edits["output_break_formula"].append(Edit(
                        "formula replaced by its value off by a cent", ref,
                        f"{ref}: ={fm.group(2)[:40]} -> {format_cents(value + 1)}",
                        _sheet_edit(sheet, a0, cm.end(4), new_inner)))
                formula = fm.group(2)
                look = _LOOKUP_COLUMN.search(formula)
                if look is not None:
                    new_f = (formula[:look.start(2)] + str(int(look.group(2)) + 1)
                             + formula[look.end(2):])
                    fa = a0 + fm.start(2)
                    edits["output_break_formula"].append(Edit(
                        "lookup of the wrong column", ref,
                        f"{ref}: column {look.group(2)} -> {int(look.group(2)) + 1} of "
                        f"={formula[:40]}", _sheet_edit(sheet, fa, fa + len(formula), new_f)))
                gone = _deleted_reference(formula)
                if gone is not None:
                    fa = a0 + fm.start(2)
                    edits["output_break_formula"].append(Edit(
                        "reference to a deleted cell (#REF!)", ref,
                        f"{ref}: ={formula[:40]} -> ={gone[:40]}",
                        _sheet_edit(sheet, fa, fa + len(formula), gone)))
                refs = list(_REF.finditer(formula))
                if refs:
                    last = refs[-1]
                    moved = str(int(last.group(4)) + (-1 if ":" in formula[:last.start()][-1:]
                                                      else 1))
                    new_f = (formula[:last.start(4)] + moved + formula[last.end(4):])
                    fa = a0 + fm.start(2)
                    edits["output_break_formula"].append(Edit(
                        "formula pointing at the wrong cell", ref,
                        f"{ref}: ={formula[:40]} -> ={new_f[:40]}",
                        _sheet_edit(sheet, fa, fa + len(formula), new_f)))
                continue
            if vm is None or "<f" in inner:
                continue  # no value, or a shared formula's follower
            peers = [p for p in columns[col] if p is not cm and p.group(2) != "1"
                     and _FORMULA.search(p.group(4) or "") is None]
            va, vb = a0 + vm.start(1), a0 + vm.end(1)
            if 't="s"' in attrs:
                idx = int(vm.group(1))
                text = strings[idx] if idx < len(strings) else ""
                others = sorted({int(v.group(1)) for p in peers if 't="s"' in p.group(3)
                                 for v in [_VALUE.search(p.group(4) or "")] if v
                                 and v.group(1).isdigit() and int(v.group(1)) < len(strings)
                                 and strings[int(v.group(1))] != text})
                if others and rown != "1":
                    alt = others[int(rown) % len(others)]
                    edits["output_change_cell"].append(Edit(
                        "another value of the column", ref,
                        f"{ref}: {text[:30]!r} -> {strings[alt][:30]!r}",
                        _sheet_edit(sheet, va, vb, str(alt))))
                continue
            if "t=" in attrs and 't="n"' not in attrs:
                continue
            raw = vm.group(1)
            if not re.fullmatch(r"-?\d+(\.\d+)?", raw):
                continue
            if "." in raw or _cents(raw) is not None:
                c = round(float(raw) * 100)
                edits["output_change_cell"].append(Edit(
                    "figure by a cent", ref, f"{ref}: {raw} -> {format_cents(c + 1)}",
                    _sheet_edit(sheet, va, vb, format_cents(c + 1))))
            else:
                edits["output_change_cell"].append(Edit(
                    "number by one", ref, f"{ref}: {raw} -> {int(raw) + 1}",
                    _sheet_edit(sheet, va, vb, str(int(raw) + 1))))
            numbers = sorted({v.group(1) for p in peers
                              for v in [_VALUE.search(p.group(4) or "")]
                              if v and "t=" not in p.group(3)
                              and re.fullmatch(r"-?\d+(\.\d+)?", v.group(1))
                              and float(v.group(1)) != float(raw)})
            if numbers:
                alt_n = numbers[int(rown) % len(numbers)]
                edits["output_change_cell"].append(Edit(
                    "another value of the column", ref, f"{ref}: {raw} -> {alt_n}",
                    _sheet_edit(sheet, va, vb, alt_n)))
    why["output_add_row"] = "a workbook row cannot be added without rewriting its formulas"
    why["output_swap_columns"] = "a workbook's columns are its layout (cells are changed instead)"
    for op, reason in (("output_drop_row", "no data row"),
                       ("output_change_cell", "no value cell"),
                       ("output_break_formula", "no formula in the workbook")):
        if not edits[op]:
            why[op] = reason
    return edits, {op: r for op, r in why.items() if r and not edits[op]}


# --- the one entry point ----------------------------------------------------------------


def file_edits(path: Path, *, workspace: Path | None = None,
               mentioned: set[str] | None = None, prompt: str = "") -> Plan:
    """Every edit of each operator for one output file, and per operator without any, why.

    ``workspace`` holds the turn's input files (rows that should be excluded come from
    them); ``mentioned`` is every id the outputs state (an input row with one of them is
    not excluded); ``prompt`` is the turn's prompt (a column order it states exactly makes
    the columns' order a mistake to make)."""
    data = path.read_bytes()
    tables = input_tables(workspace)
    seen = mentioned if mentioned is not None else set()
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            edits, why = _csv_plan(data, tables, seen, prompt)
        elif suffix == ".xlsx":
            edits, why = _xlsx_plan(data)
        elif suffix in (".txt", ".md"):
            edits, why = _text_plan(data, tables, seen)
        elif suffix in (".py", ".sql"):
            edits, why = _script_plan(data, sql=suffix == ".sql")
        else:
            return {}, {op: f"a {suffix or 'suffix-less'} file: no operator reads it"
                        for op in OUTPUT_OPS}
    except (UnicodeDecodeError, csv.Error) as e:
        return {}, {op: f"cannot read it ({type(e).__name__}: {e})" for op in OUTPUT_OPS}
    return {op: v for op, v in edits.items() if v}, why


def mentioned_ids(files: list[Path]) -> set[str]:
    """Every id (as data) the output files state: CSV cells of id kind, a text's ids."""
    out: set[str] = set()
    for p in files:
        try:
            if p.suffix == ".csv":
                out |= {_norm(c) for r in _read_csv(p.read_bytes()) for c in r
                        if _kind(c) == "id"}
            elif p.suffix in (".txt", ".md"):
                out |= set(_TEXT_ID.findall(p.read_text(encoding="utf-8")))
            elif p.suffix == ".xlsx":
                out |= {s.strip() for s in _shared_strings(_unzip(p.read_bytes()))
                        if _kind(s) == "id"}
        except (UnicodeDecodeError, csv.Error, zipfile.BadZipFile):
            continue
    return out


def same_content(path: Path, before: bytes, after: bytes) -> bool:
    """Whether two versions of an output file hold the same data: a CSV's cells (numbers
    as amounts), a workbook's cells and formulas, a text's words."""
    if before == after:
        return True
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            def cells(b: bytes) -> list[list[str]]:
                return [[_norm(c) for c in r] for r in _read_csv(b) if any(x.strip() for x in r)]
            return cells(before) == cells(after)
        if suffix == ".xlsx":
            def sheet_cells(b: bytes) -> dict[str, list[tuple[str, str, str]]]:
                files = _unzip(b)
                strings = _shared_strings(files)
                out: dict[str, list[tuple[str, str, str]]] = {}
                for s in _sheets(files):
                    got = []
                    for cm in _CELL.finditer(files[s].decode("utf-8")):
                        inner = cm.group(4) or ""
                        fm, vm = _FORMULA.search(inner), _VALUE.search(inner)
                        v = vm.group(1) if vm else ""
                        if 't="s"' in cm.group(3) and v.isdigit() and int(v) < len(strings):
                            v = strings[int(v)]
                        got.append((cm.group(1) + cm.group(2), fm.group(2) if fm else "", v))
                    out[s] = got
                return out
            return sheet_cells(before) == sheet_cells(after)
        return before.decode("utf-8").split() == after.decode("utf-8").split()
    except (UnicodeDecodeError, csv.Error, zipfile.BadZipFile):
        return False
