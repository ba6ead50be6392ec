"""The file checks of the methods page: ``file_exists``, ``csv_*``, ``text_*`` and ``custom``.

Every ``path`` is relative to the workspace (``ctx.file``) and every ``ref`` / ``equals_ref``
/ ``module`` to the reference folder (``ctx.ref``); the spec models refuse absolute paths
and ``..``. Only ``file_exists`` takes a glob; the checks that read one file refuse glob
characters (``*?[``) in their paths.

Who is at fault decides the outcome:

- The agent's file missing, a directory, a link leading out of the workspace, larger than
  :data:`MAX_BYTES`, not UTF-8, not a readable CSV, or lacking a needed column: the check
  **fails** with a detail naming the path.
- A reference file or custom module missing or unusable, a reference lacking a column,
  or a must-match key absent from the reference: the check **raises**, i.e. a grader
  error (the instrument is broken, the agent is not to blame).

Reading rules (where the methods page is silent):

- Text is decoded as UTF-8; a byte-order mark is tolerated. A text file's CRLF and CR
  line endings read as LF (a regex's ``^`` and ``$`` meet every line end).
- CSV: the stdlib ``csv`` module, comma-separated (tab for a ``.tsv`` path), strict
  quoting. The first non-blank row is the header; header names are stripped of
  surrounding whitespace and compared case-sensitively. Blank lines and rows whose every
  field is empty are not data rows. A short row is padded with empty fields; a row
  longer than the header fails (an unquoted comma) unless the extra fields are empty.
  A NUL byte fails (a binary file).
- Cell values are stripped of surrounding whitespace before comparison (``csv_set_equal``
  follows its ``normalize`` list instead; ``normalize: []`` compares raw cells).
- A number in a CSV cell (:func:`parse_number`): an optional sign (``-``, or the minus
  sign U+2212 or a dash typeset reports write), currency symbols ($ € £ ¥) and spaces
  around the figure ignored (never between its digits: ``12 5`` and ``12€50`` are not
  figures), thousands commas (or single spaces) in groups of three, a decimal point,
  an exponent (not beyond a float's range); ``(30.00)`` is -30.00; a trailing ``%`` is
  dropped and the figure read as written (``12.5%`` is 12.5, not 0.125).
- Phrases match as case-insensitive substrings with whitespace runs collapsed on both
  sides (a phrase may wrap across a line break; ``paid`` is found in ``unpaid``).
- Regexes (``text_matches_all``, ``text_sentence_matches``) are case-insensitive, with
  ``^`` and ``$`` matching at line ends; ``(?-i:...)`` restores case.
- Figures in text (:func:`numbers_in_text`) compare by magnitude: signs and accounting
  parentheses are ignored, as the methods page ignores parentheses.
- Sentences: see :func:`sentences`.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import importlib.util
import io
import itertools
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from checks.context import CheckContext
from checks.errors import Unusable
from checks.registry import CheckResult, CheckSpec, FileCheckSpec, check_type, workspace_path

#: Larger workspace files are not read (the check fails).
MAX_BYTES = 64 * 1024 * 1024

#: How many missing values, mismatches or phrases a detail names before "...".
SHOW = 5

_GLOB_CHARS = frozenset("*?[")


# --- field types ------------------------------------------------------------------------


def file_path(value: str) -> str:
    """A relative path to one file (no glob characters, no ``..``, no leading ``/``)."""
    workspace_path(value)
    if _GLOB_CHARS & set(value):
        raise ValueError("expected the path of one file, not a glob (no '*', '?', '[')")
    return value


def reference_path(value: str) -> str:
    """A relative path to one file of the reference folder (no glob, no ``..``)."""
    try:
        return file_path(value)
    except ValueError as e:
        raise ValueError(str(e).replace("the workspace", "the reference folder")) from None


def _python_module(value: str) -> str:
    reference_path(value)
    if not value.endswith(".py"):
        raise ValueError("expected a .py file relative to the reference folder")
    return value


def _regex(value: str) -> str:
    try:
        re.compile(value, _RE_FLAGS)
    except re.error as e:
        raise ValueError(f"not a valid regular expression: {e}") from None
    return value


def _phrase(value: str) -> str:
    if not value.strip():
        raise ValueError("a phrase must not be blank")
    return value


def _unique(values: Sequence[Any], what: str) -> None:
    seen: set[Any] = set()
    dups = []
    for v in values:
        if v in seen:
            dups.append(v)
        seen.add(v)
    if dups:
        raise ValueError(f"{what} listed twice: {', '.join(map(str, dups))}")


_RE_FLAGS = re.IGNORECASE | re.MULTILINE
#: A ``{column}`` placeholder in a ``text_ref_sentences`` ``about`` regex.
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

RefPath = Annotated[str, AfterValidator(reference_path)]
ModulePath = Annotated[str, AfterValidator(_python_module)]
Regex = Annotated[str, AfterValidator(_regex)]
Phrase = Annotated[str, AfterValidator(_phrase)]
Column = Annotated[str, Field(min_length=1)]
Normalize = Literal["strip", "casefold", "space", "basename"]
_STRIP_ONLY: list[Normalize] = ["strip"]


# --- direction vocabularies -------------------------------------------------------------


@dataclass(frozen=True)
class Directions:
    """A named vocabulary of direction words for ``text_ref_sentences``: ``down``, the regex
    of the words saying a figure went down (or came in under), ``up`` the other way's.

    ``signs: {column: NAME}`` reads it as ``[down, up]`` (a negative figure says down);
    ``words: {column: NAME}`` as ``{values[0]: down, values[1]: up}`` (the reference's
    words for the two directions). Either way each direction vetoes the other."""

    down: str
    up: str
    values: tuple[str, str]


#: The direction vocabularies a task may name instead of typing its regexes (one place to
#: widen them: every task naming one gets the words).
DIRECTIONS: dict[str, Directions] = {
    # A P&L line's move from April to May (pl-variance-memo): increased, rose, grew, up $x,
    # higher, climbed, jumped / decreased, declined, fell, dropped, down $x, lower, reduced,
    # shrank; above / more than (in) or below / less than (in) April or the prior,
    # previous or last month. A bare "less" ("revenue less expenses") or "below" says
    # nothing; "not" is the task's own veto.
    "month_on_month": Directions(
        down=r"\b(decreas|declin|f[ae]ll(s|en|ing)?\b|dropp?(ed|s|ing)?\b|down\s+(by\s+)?\$?\d"
             r"|lower\b|reduc|shr[aiu]nk|(below|less\s+than(\s+in)?)\s+(April\b|(the\s+)?"
             r"(prior|previous|last)\s+month))",
        up=r"\b(increas|ris(e|es|en|ing)\b|rose\b|gr[eo]w(n|s|th)?\b|up\s+(by\s+)?\$?\d"
           r"|higher\b|climb|jump|(above|more\s+than(\s+in)?)\s+(April\b|(the\s+)?"
           r"(prior|previous|last)\s+month))",
        values=("decreased", "increased")),
    # Actual against budget (revenue-budget-variance, each line and the totals): under,
    # below, short(fall), behind, missed, unfavo(u)rable, underperformed, trailed / over,
    # overrun, above, exceeded, ahead, beat, favo(u)rable, outperformed, surpassed; the
    # "over" of "over the month / period / course" is no direction.
    "against_budget": Directions(
        down=r"\b(under|below|short(fall)?|behind|missed|unfavou?rable|underperform\w*"
             r"|trail\w*)\b",
        up=r"\b(over(run)?(?!\s+(the\s+)?(month|period|course)\b)|above|exceed\w*|ahead|beat"
           r"|(?<!un)favou?rable|outperform\w*|surpass\w*)\b",
        values=("under", "over")),
}


def _directions(name: str) -> Directions:
    try:
        return DIRECTIONS[name]
    except KeyError:
        raise ValueError(f"no direction vocabulary {name!r} (there are: "
                         f"{', '.join(DIRECTIONS)})") from None


def _words_table(value: Any) -> Any:
    """A ``words`` column's table as written, or a :data:`DIRECTIONS` name's."""
    if isinstance(value, str):
        d = _directions(value)
        return {d.values[0]: d.down, d.values[1]: d.up}
    return value


def _sign_pair(value: Any) -> Any:
    """A ``signs`` column's ``[negative, positive]`` as written, or a :data:`DIRECTIONS`
    name's ``[down, up]``."""
    if isinstance(value, str):
        d = _directions(value)
        return [d.down, d.up]
    return value


# --- spec models ------------------------------------------------------------------------


class _FileSpec(FileCheckSpec):
    """Strict (no coercion of strings into numbers or booleans), no unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class _OneFileSpec(_FileSpec):
    """A check that reads the one file at ``path`` (no glob)."""

    @field_validator("path")
    @classmethod
    def _one_file(cls, v: str) -> str:
        return file_path(v)


class FileExists(_FileSpec):
    """``path`` (a glob such as ``out/*.csv``) matches at least one file."""

    type: Literal["file_exists"]


class CsvColumns(_OneFileSpec):
    """The header holds every one of ``columns``; with ``exact``, exactly those in order."""

    type: Literal["csv_columns"]
    columns: list[Column] = Field(min_length=1)
    exact: bool = False

    @field_validator("columns")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        _unique(v, "column")
        return v


class CsvRowCount(_OneFileSpec):
    """The number of data rows equals ``equals`` or the rows of ``equals_ref``, ± ``tolerance``."""

    type: Literal["csv_row_count"]
    equals: int | None = Field(default=None, ge=0)
    equals_ref: RefPath | None = None
    tolerance: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _one_target(self) -> CsvRowCount:
        if (self.equals is None) == (self.equals_ref is None):
            raise ValueError("set exactly one of equals, equals_ref")
        return self


class CsvSetEqual(_OneFileSpec):
    """The set of values of ``column`` equals the set of ``ref_column`` in ``ref``.

    ``normalize`` applies to both sides, in this order: ``strip`` (surrounding
    whitespace; the default), ``space`` (runs of inner whitespace become one space),
    ``casefold`` (case-insensitive), ``basename`` (a path's last part: ``receipts/r1.pdf``
    is ``r1.pdf``, for a column of file names). ``normalize: []`` compares the raw cells.
    """

    type: Literal["csv_set_equal"]
    column: Column
    ref: RefPath
    ref_column: Column | None = None
    normalize: list[Normalize] = Field(default_factory=lambda: _STRIP_ONLY.copy())


class CsvValuesMatch(_OneFileSpec):
    """Per reference key, the agent's row holds the reference's values in ``columns``.

    ``key`` is a column or a list of columns (a composite key). ``numeric`` columns
    compare as numbers within ``tolerance`` (absolute); the others as text (stripped,
    case-sensitive; ``casefold`` columns case-insensitively, a ``yes``/``no`` flag written
    ``Yes``). ``basename`` columns (key or compared: file names) compare by their last path
    part on both sides, ``receipts/r1.pdf`` as ``r1.pdf``. Accuracy is the share of
    reference keys whose every compared column matches; a key missing from the agent's file,
    or present more than once, is wrong. Passes when accuracy >= ``min_accuracy`` and every
    ``must_match_keys`` key is right (for a composite key each is a list of values or an
    ``a|b`` string). With
    ``if_present``, a compared column the agent's file does not have is not compared (a
    column the task does not ask for, but that must be right when written); the key columns
    are always required. ``plain`` columns are amounts a prompt asks for as plain decimals
    to the cent (no currency symbol, no thousands separator): compared as numbers within
    ``tolerance``, so ``1234.5`` or ``1234`` (a float column written by pandas) is
    ``1234.50``, but only as written plainly, an optional minus, digits and at most two
    decimals: ``$1234.50``, ``1,234.50``, ``(1234.50)``, ``+1234.50``, ``1234.505`` do not
    match.
    """

    type: Literal["csv_values_match"]
    ref: RefPath
    key: Column | list[Column]
    columns: list[Column] = Field(min_length=1)
    if_present: bool = False
    min_accuracy: float = Field(default=1.0, ge=0.0, le=1.0, allow_inf_nan=False)
    numeric: list[Column] = Field(default_factory=list)
    casefold: list[Column] = Field(default_factory=list)
    basename: list[Column] = Field(default_factory=list)
    plain: list[Column] = Field(default_factory=list)
    tolerance: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)
    must_match_keys: list[str | list[str]] = Field(default_factory=list)

    @property
    def key_columns(self) -> list[str]:
        """The key as a list of columns."""
        return [self.key] if isinstance(self.key, str) else list(self.key)

    def must_keys(self) -> list[tuple[str, ...]]:
        """The must-match keys as tuples of (stripped) values, one per key column.

        An ``a|b`` string is split only for a key of several columns.
        """
        composite = len(self.key_columns) > 1
        out = []
        for k in self.must_match_keys:
            parts = (k.split("|") if composite else [k]) if isinstance(k, str) else k
            out.append(tuple(p.strip() for p in parts))
        return out

    @model_validator(mode="after")
    def _coherent(self) -> CsvValuesMatch:
        if isinstance(self.key, list):
            if not self.key:
                raise ValueError("key: give at least one column")
            _unique(self.key, "key column")
        _unique(self.columns, "column")
        _unique(self.numeric, "numeric column")
        stray = [c for c in self.numeric if c not in self.columns]
        if stray:
            raise ValueError(f"numeric columns must be among columns; not there: "
                             f"{', '.join(stray)}")
        stray = [c for c in self.basename if c not in [*self.key_columns, *self.columns]
                 or c in self.numeric]
        if stray:
            raise ValueError(f"basename columns must be among key and columns and not numeric: "
                             f"{', '.join(stray)}")
        folded = [c for c in self.casefold if c not in self.columns or c in self.numeric]
        if folded:
            raise ValueError(f"casefold columns must be among columns and not numeric: "
                             f"{', '.join(folded)}")
        _unique(self.plain, "plain column")
        odd = [c for c in self.plain if c not in self.columns
               or c in [*self.numeric, *self.casefold, *self.basename]]
        if odd:
            raise ValueError(f"plain columns must be among columns and not numeric, casefold "
                             f"or basename: {', '.join(odd)}")
        n = len(self.key_columns)
        for i, k in enumerate(self.must_keys()):
            if len(k) != n:
                raise ValueError(f"must_match_keys[{i}] has {len(k)} part(s); the key has {n} "
                                 f"column(s)")
        return self


class _PhraseSpec(_FileSpec):
    phrases: list[Phrase] = Field(min_length=1)


class _TextSpec(_OneFileSpec):
    pass


class TextContainsAll(_PhraseSpec, _TextSpec):
    """Every phrase appears in the text (case-insensitive, whitespace runs collapsed)."""

    type: Literal["text_contains_all"]


class TextContainsAny(_PhraseSpec, _TextSpec):
    """At least one phrase appears in the text (case-insensitive)."""

    type: Literal["text_contains_any"]


class TextNotContains(_PhraseSpec, _TextSpec):
    """No phrase appears in the text (case-insensitive)."""

    type: Literal["text_not_contains"]


class TextMatchesAll(_TextSpec):
    """Every regex matches somewhere in the text (case-insensitive, ``^``/``$`` per line)."""

    type: Literal["text_matches_all"]
    patterns: list[Regex] = Field(min_length=1)


class TextNumbersPresent(_TextSpec):
    """At least ``min_count`` (default: all) of ``numbers`` appear in the text.

    A figure is present when some number in the text is within
    ``max(|expected| x rel_tol, 0.005)`` of it (to the cent: one cent off is absent),
    comparing magnitudes (see :func:`numbers_in_text`).
    """

    type: Literal["text_numbers_present"]
    numbers: list[Annotated[float, Field(allow_inf_nan=False)]] = Field(min_length=1)
    rel_tol: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    min_count: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _count_fits(self) -> TextNumbersPresent:
        if self.min_count is not None and self.min_count > len(self.numbers):
            raise ValueError(f"min_count {self.min_count} exceeds the {len(self.numbers)} "
                             f"numbers listed")
        return self


class TextSentenceMatches(_TextSpec):
    """Some sentence matches every regex in ``all`` and none in ``none`` (case-insensitive).

    See :func:`sentences` for how the text is cut into sentences.
    """

    type: Literal["text_sentence_matches"]
    all: list[Regex] = Field(min_length=1)
    none: list[Regex] = Field(default_factory=list)
    about: list[Regex] = Field(default_factory=list)
    """The item's other sentences: each sentence matching every ``about`` regex (the
    item's id, say) must match no ``none`` regex either, so a memo stating the fact in one
    sentence and its contradiction in another ("PO-1 was capitalized ..." and, in a
    summary, "PO-1 was expensed") fails."""
    aside: list[Regex] = Field(default_factory=list)
    """Other items a sentence may name beside this one (opt-in; needs ``about``): as
    :class:`TextRefSentences`' ``aside``, a sentence is cut into clauses, and a clause
    naming another item, with the clauses after it that name nothing else, is that item's.
    The item is judged, for ``all`` and ``none`` alike, by its own clauses when they hold
    one of its words (an ``all`` or ``none`` regex that is not an ``about`` one), else by
    the whole sentence: "PO-1 ($5,000.00) was capitalized, while PO-2 was expensed" states
    PO-1 capitalized and does not say it was expensed; "PO-1 and PO-2 were expensed" says
    both were."""

    @model_validator(mode="after")
    def _aside_needs_about(self) -> TextSentenceMatches:
        if self.aside and not self.about:
            raise ValueError("aside: needs about (the regexes that name this item), to tell "
                             "its clauses from the other items'")
        return self


class RefFigures(BaseModel):
    """The money figures and dates a sentence about reference rows may state (see
    ``TextRefSentences.figures``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    columns: list[Column] = Field(min_length=1)
    about: list[Regex] = Field(min_length=1)
    everywhere: bool = False
    ids: dict[Column, Regex] = Field(default_factory=dict)
    """Id columns and how an id is written (opt-in): each match of a column's regex in any
    sentence names the rows whose value it is (case-insensitive, spaces collapsed; with a
    ``(?P<number>...)`` group, the rows whose value's digits make that number: ``inv 111``
    for INV-000111, and the bare numbers listed right after it that name rows: ``invoices
    111, 115 and 128``), and must name one of the rows: "PS: INV-000107 ($4,374.76) was due
    on May 16" names an invoice of none of them. A sentence naming rows so is about them
    alone, not about the rows ``about`` matches besides (a vendor's or customer's name
    beside the id): "PO-026069 (Norton Ltd) adds $11,843.35" is judged by PO-026069's
    figures, not Norton Ltd's purchase's; a sentence naming no row by an id is about the
    rows ``about`` matches, as without ids. One naming several is cut into clauses (at
    ``;``, a comma not before a year, and, or, but, while, whereas, plus), a clause naming
    none joining the clause naming one before it (the first one after it when none is
    before): when every clause states a money figure of its own, each is one of its clause's
    rows' ("INV-000111 for $9,044.48 and INV-000115 for $6,868.20" fails), and likewise
    dates; a list of ids followed by as many figures "respectively" pairs them in order
    ("INV-000111 and INV-000115 are for $9,044.48 and $6,868.20 respectively" fails); any
    other sentence listing ids without their figures is judged by all the rows it names.
    Each chosen row's own value must be a match naming it (else a grader error: the regex is
    wrong)."""

    @field_validator("ids")
    @classmethod
    def _id_patterns(cls, v: dict[str, str]) -> dict[str, str]:
        for column, rx in v.items():
            compiled = re.compile(rx, _RE_FLAGS)
            if compiled.fullmatch("") is not None:
                raise ValueError(f"ids: the regex of {column} matches an empty text")
            stray = set(compiled.groupindex) - {"number"}
            if stray:
                raise ValueError(f"ids: the regex of {column} may name one group, number; "
                                 f"not {', '.join(sorted(stray))}")
        return v


class TextRefSentences(_TextSpec):
    """Every reference row (of ``ref``, those matching ``rows``) is stated in one sentence.

    The sentence holds each of ``columns``' values of the row: a money value (two
    decimals) as that figure to the cent (``$`` and thousands separators optional), a
    ``percent`` column's value followed by ``%`` (or ``percent``), a YYYY-MM-DD date as
    written or as people write it (``May 3, 2026``, ``05/03/2026``: :func:`figure_pattern`),
    any other value as its text (case-insensitive, on word boundaries); each ``words``
    column's value by its regex, and no regex of the column's other values (``decreased``
    says decrease and not increase); for each ``signs`` column
    (``[when negative, when positive]``), the regex of its value's sign and not the other's
    (-8784.42 says under and not over); every regex of ``all``; none of ``none``. The
    facts come from the generated reference, not typed into the task, and one wrong row
    (a figure, a percent, a direction) fails. A ``words`` or ``signs`` column may name a
    direction vocabulary of :data:`DIRECTIONS` instead of its regexes
    (``signs: {variance: against_budget}``, ``words: {direction: month_on_month}``).
    """

    type: Literal["text_ref_sentences"]
    ref: RefPath
    columns: list[Column] = Field(min_length=1)
    percent: list[Column] = Field(default_factory=list)
    words: dict[Column, Annotated[dict[str, Regex], BeforeValidator(_words_table)]] = Field(
        default_factory=dict)
    signs: dict[Column, Annotated[list[Regex], BeforeValidator(_sign_pair),
                                  Field(min_length=2, max_length=2)]] = Field(
        default_factory=dict)
    rows: dict[Column, str] = Field(default_factory=dict)
    all: list[Regex] = Field(default_factory=list)
    none: list[Regex] = Field(default_factory=list)
    about: list[Regex] = Field(default_factory=list)
    """The row's other sentences: each sentence matching every ``about`` regex, where
    ``{column}`` stands for that column's value as stated (``{name}``, ``{invoice_id}``),
    must match none of the row's vetoes (the other ``words``, the other sign, ``none``):
    "Contractors increased ..." and, in a summary, "contractors fell" fails."""
    aside: list[Regex] = Field(default_factory=list)
    """Other subjects a sentence may name beside the row's (opt-in): ``{column}`` stands
    for that column's value on every row of ``ref`` (the other rows), or a fixed regex
    (a total, the lines of another reference). A sentence is cut into clauses (at ``;``,
    ``,``, and, but, while, although...). A clause naming an aside subject, with the
    clauses after it that name nothing else, is about that subject: its words (directions,
    ``none``) neither state nor contradict this row ("The total came in under budget,
    although Managed services ran over" states the total's under and Managed services'
    over). With ``about``, the row is judged by its own clauses (the clause naming it and
    those after it naming nothing else) when they hold a direction word, and by the whole
    sentence when they hold none ("Data migration came in under budget, as did Managed
    services" still says Managed services came in under)."""
    change: Column | None = None
    """The column of the change a direction states (``variance``, ``change``): in every
    sentence matching ``about``, a figure a direction word (any value's ``words`` regex or
    either ``signs`` regex) states as the change must be the row's value (its magnitude,
    to the precision written: ``$2,031`` or ``$2.0k`` for 2030.96): "rose by $X", "under
    budget by X", "an increase of $X", "a $X overrun", "$X higher than April". A second,
    contradicting change ("the $15,000.00 overrun" beside "over budget by 12,400.00")
    fails. Levels ("rose to $X", "from $X", "a budget of $X"), percents and dates are not
    changes; a figure ahead of a direction word that is one of the row's values (in
    ``ref``) is not either ("came in at 68,930.15 below budget"). Needs ``about``."""
    figures: RefFigures | None = None
    """The figures a sentence may state (opt-in). In a sentence about some of the rows
    (matching every ``figures.about`` regex, ``{column}`` the row's value as stated),
    every money figure (with a currency sign or two decimals: ``$6,868.20``, ``6,868.20``,
    ``$6,868`` or ``$6.9k`` to the precision written) must be a money value of
    ``figures.columns`` on one of those rows, and every date before the business date
    (written as :func:`figure_pattern` reads dates, or ``May 3`` by month and day) one of
    their date values; with ``figures.everywhere``, in any other sentence, of any row.
    Counts, percents, ids, phone numbers and dates from the business date on (a pay-by
    date) are free. "Please remit $29,946.62" beside the total $32,946.62, an invoice's
    amount or due date restated wrong, "PO-026052 adds $11,438.35 to fixed assets" fail.
    With ``figures.ids`` an id naming none of the rows fails too, a sentence naming ids is
    about their rows alone (a vendor's name beside an id adds no row), and in a sentence
    naming several rows each clause's figures are its own row's (see :class:`RefFigures`)."""

    @model_validator(mode="after")
    def _coherent(self) -> TextRefSentences:
        _unique(self.columns, "column")
        unknown = [n for rx in self.about for n in _PLACEHOLDER.findall(rx)
                   if n not in self.columns]
        if unknown:
            raise ValueError(f"about: {{column}} must name one of columns; not there: "
                             f"{', '.join(unknown)}")
        unknown = [n for rx in self.aside for n in _PLACEHOLDER.findall(rx)
                   if n not in self.columns]
        if unknown:
            raise ValueError(f"aside: {{column}} must name one of columns; not there: "
                             f"{', '.join(unknown)}")
        if self.figures is not None:
            known = [*self.columns, *self.figures.columns]
            unknown = [n for rx in self.figures.about for n in _PLACEHOLDER.findall(rx)
                       if n not in known]
            if unknown:
                raise ValueError(f"figures.about: {{column}} must name one of columns or "
                                 f"figures.columns; not there: {', '.join(unknown)}")
            unknown = [c for c in self.figures.ids if c not in known]
            if unknown:
                raise ValueError(f"figures.ids: each must be one of columns or "
                                 f"figures.columns; not there: {', '.join(unknown)}")
        if self.change is not None and (self.change not in self.columns or not self.about
                                        or not (self.words or self.signs)):
            raise ValueError(f"change: {self.change!r} must be one of columns, with about and "
                             f"words or signs (the direction words that state a change)")
        stray = [c for c in self.percent if c not in self.columns]
        if stray:
            raise ValueError(f"percent columns must be among columns; not there: "
                             f"{', '.join(stray)}")
        empty = [c for c, table in self.words.items() if not table]
        if empty:
            raise ValueError(f"words: give each column's values and regexes; none for "
                             f"{', '.join(empty)}")
        return self


class TextRefAbsent(_TextSpec):
    """No reference row (of ``ref``, those matching ``rows``) is named: the ``column``
    value of each is absent from the text (case-insensitive, on word boundaries: "Rent"
    is not in "current"). The excluded items come from the generated reference."""

    type: Literal["text_ref_absent"]
    ref: RefPath
    column: Column
    rows: dict[Column, str] = Field(default_factory=dict)


class Custom(CheckSpec):
    """``module`` (a ``.py`` file in the reference folder) defines ``check(ws, ref)``.

    ``check`` receives the workspace and reference folders (``Path``) and returns a list
    of ``{name, passed, detail?, metrics?}`` dicts; each becomes a result named
    ``CHECK/name``. Any other shape is a grader error. The module is never taken from the
    workspace: the agent could write it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    family: ClassVar[str] = "files"
    type: Literal["custom"]
    module: ModulePath


# --- reading ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """A parsed CSV: the header (names stripped) and the data rows, padded to its width.

    Cells are kept as written; each check strips or normalizes them as it documents.
    """

    header: list[str]
    rows: list[list[str]]

    def locate(self, columns: Iterable[str]) -> tuple[dict[str, int], list[str], list[str]]:
        """``(index by column, missing columns, columns the header has twice)``."""
        found: dict[str, int] = {}
        missing: list[str] = []
        twice: list[str] = []
        for c in columns:
            n = self.header.count(c)
            if n == 0:
                missing.append(c)
            else:
                found[c] = self.header.index(c)
                if n > 1:
                    twice.append(c)
        return found, missing, twice


def workspace_file(ctx: CheckContext, rel: str) -> Path:
    """The agent's file at ``rel``, resolved; :class:`Unusable` names what is wrong with it."""
    path = ctx.file(rel)
    assert ctx.workspace is not None  # ctx.file raised otherwise
    if not path.exists():
        raise Unusable(f"{rel}: no such file in the workspace"
                       + (" (a dangling link)" if path.is_symlink() else ""))
    real = path.resolve()
    if not real.is_relative_to(ctx.workspace.resolve()):
        raise Unusable(f"{rel}: a link leading outside the workspace; not read")
    if real.is_dir():
        raise Unusable(f"{rel}: a directory, not a file")
    if not real.is_file():
        raise Unusable(f"{rel}: not a regular file")
    size = real.stat().st_size
    if size > MAX_BYTES:
        raise Unusable(f"{rel}: {size} bytes, larger than the {MAX_BYTES} this check reads")
    return real


def reference_file(ctx: CheckContext, rel: str) -> Path:
    """The reference file at ``rel``; missing is a grader error (``FileNotFoundError``)."""
    path = ctx.ref(rel)
    if not path.is_file():
        raise FileNotFoundError(f"reference file {rel} not found in {ctx.reference}")
    return path


def decode(data: bytes, rel: str) -> str:
    """UTF-8 text (a BOM is dropped); :class:`Unusable` when it is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise Unusable(f"{rel}: not UTF-8 text (invalid byte 0x{data[e.start]:02x} at offset "
                       f"{e.start})") from None


def parse_csv(text: str, rel: str) -> Table:
    """Parse CSV text by the module's reading rules; :class:`Unusable` when garbled."""
    if "\x00" in text:
        raise Unusable(f"{rel}: not a readable CSV (contains NUL bytes; a binary file?)")
    delimiter = "\t" if rel.lower().endswith(".tsv") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[tuple[int, list[str]]] = []
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append((reader.line_num, row))
    except csv.Error as e:
        raise Unusable(f"{rel}: not a readable CSV (line {reader.line_num}: {e})") from None
    if not rows:
        raise Unusable(f"{rel}: empty (no header row)")
    header = [h.strip() for h in rows[0][1]]
    width = len(header)
    data: list[list[str]] = []
    for line, row in rows[1:]:
        if len(row) > width:
            if any(cell.strip() for cell in row[width:]):
                raise Unusable(f"{rel}: not a readable CSV (line {line} has {len(row)} fields, "
                               f"the header {width}; an unquoted comma?)")
            row = row[:width]
        data.append(row + [""] * (width - len(row)))
    return Table(header, data)


def agent_csv(ctx: CheckContext, rel: str) -> Table:
    """The agent's CSV (:class:`Unusable` on any problem)."""
    return parse_csv(decode(workspace_file(ctx, rel).read_bytes(), rel), rel)


TYPOGRAPHY = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u02bc": "'",
    "\u2032": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"',
    "\u2033": '"', "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-",
    "\u2014": "-", "\u2015": "-", "\u2212": "-"})
"""Typographic quotes, apostrophes, hyphens and dashes as their ASCII forms: a writer's
(or a model's) "didn\u2019t" or "pre\u2011approved" reads as "didn't" and "pre-approved"."""


def plain_typography(text: str) -> str:
    """``text`` with typographic quotes, apostrophes and dashes as ASCII (:data:`TYPOGRAPHY`)."""
    return text.translate(TYPOGRAPHY)


def agent_text(ctx: CheckContext, rel: str) -> str:
    """The agent's text file with its line endings as ``\\n`` and its typography plain
    (:func:`plain_typography`; :class:`Unusable` on any problem): a CRLF or CR file's lines
    end where an LF file's do, for ``^`` and ``$``, and a curly apostrophe is the ``'`` a
    phrase or pattern names."""
    text = decode(workspace_file(ctx, rel).read_bytes(), rel)
    return plain_typography(text.replace("\r\n", "\n").replace("\r", "\n"))


def reference_csv(ctx: CheckContext, rel: str) -> Table:
    """A reference CSV; any problem with it raises (a grader error)."""
    try:
        return parse_csv(decode(reference_file(ctx, rel).read_bytes(), rel), rel)
    except Unusable as e:
        raise ValueError(f"reference {e}") from None


def _columns_or_raise(table: Table, columns: Iterable[str], rel: str) -> dict[str, int]:
    found, missing, twice = table.locate(columns)
    if missing or twice:
        raise ValueError(f"reference {rel}: "
                         + "; ".join(p for p in (_listing("lacks columns", missing),
                                                 _listing("has twice", twice)) if p))
    return found


def _columns_or_fail(table: Table, columns: Iterable[str], rel: str) -> dict[str, int]:
    found, missing, twice = table.locate(columns)
    problems = []
    if missing:
        problems.append(_listing("missing columns", missing) + _case_hint(table, missing))
    if twice:
        problems.append(_listing("ambiguous columns (in the header twice)", twice))
    if problems:
        raise Unusable(f"{rel}: " + "; ".join(problems) + f" (header: {_names(table.header)})")
    return found


def _case_hint(table: Table, missing: Sequence[str]) -> str:
    by_fold = {h.casefold(): h for h in table.header}
    near = [f"{m!r} as {by_fold[m.casefold()]!r}" for m in missing if m.casefold() in by_fold]
    return f" [found {', '.join(near)}: column names are case-sensitive]" if near else ""


def _names(values: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def _listing(what: str, values: Sequence[Any], limit: int = SHOW) -> str:
    if not values:
        return ""
    shown = ", ".join(repr(v) for v in list(values)[:limit])
    more = f", ... ({len(values) - limit} more)" if len(values) > limit else ""
    return f"{what} ({len(values)}): {shown}{more}"


def _result(passed: bool, detail: str, **metrics: Any) -> CheckResult:
    return CheckResult("", passed, detail, metrics)


def _failing(fn: Callable[[Any, CheckContext], CheckResult]
             ) -> Callable[[Any, CheckContext], CheckResult]:
    """Turn :class:`Unusable` (a problem with the agent's file) into a failed result."""

    @functools.wraps(fn)
    def wrapper(spec: Any, ctx: CheckContext) -> CheckResult:
        try:
            return fn(spec, ctx)
        except Unusable as e:
            return _result(False, str(e))

    return wrapper


# --- numbers ----------------------------------------------------------------------------

#: Characters written for a minus sign: MINUS SIGN, FIGURE DASH, EN DASH, SMALL and
#: FULLWIDTH HYPHEN-MINUS (typeset reports and some spreadsheets write them for ``-``).
_MINUS_SIGNS = str.maketrans(dict.fromkeys("\u2212\u2012\u2013\ufe63\uff0d", "-"))
#: What may surround a figure: whitespace and currency symbols (never between its digits).
_AFFIX = re.compile(r"^[\s$€£¥]+|[\s$€£¥]+$")
_NUMBER_BODY = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?:[ \u00a0\u2009\u202f]\d{3})+|\d+)"
                          r"(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?")
#: A figure's largest decimal exponent: beyond it no float holds the figure.
_MAX_EXPONENT = 308


def _trim(text: str) -> str:
    return _AFFIX.sub("", text)


def _strip_percent(text: str) -> str:
    return _trim(text[:-1]) if text.endswith("%") else text


def parse_number(text: str) -> Decimal | None:
    """A cell read as a number, or None: ``1,234.50``, ``$1,234.50``, ``-$5``, ``(30.00)``.

    Currency symbols and spaces may surround the figure, its sign or its parentheses,
    never stand between its digits (``12 5`` and ``12€50`` are not figures); thousands
    separators are commas, or single spaces, grouping by three (``1,240.00``,
    ``1 240.00``); parentheses mean negative, and so does a leading minus written as
    ``-``, as the minus sign U+2212 or as a dash; a trailing ``%`` is dropped (``12.5%``
    reads 12.5). A figure beyond a float's range (``1e999``) is not a figure.
    """
    t = _strip_percent(_trim(text.translate(_MINUS_SIGNS)))
    negative = False
    if len(t) >= 2 and t[0] == "(" and t[-1] == ")":
        negative, t = True, _strip_percent(_trim(t[1:-1]))
    if t and t[0] in "+-":
        negative, t = negative != (t[0] == "-"), _trim(t[1:])
    if not _NUMBER_BODY.fullmatch(t):
        return None
    try:
        value = Decimal(re.sub(r"[,\s]", "", t))
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid literals
        return None
    if value and value.adjusted() > _MAX_EXPONENT:
        return None
    return -value if negative else value


_TEXT_NUMBER = re.compile(r"(?<![\d.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)")


def numbers_in_text(text: str) -> list[float]:
    """The magnitudes of the figures written in ``text``.

    A figure is digits with optional thousands commas (grouped by three) and a decimal
    part; currency symbols, signs, parentheses and a ``%`` around it are ignored, so
    ``-$1,234.50``, ``($1,234.50)`` and ``1234.5`` all read 1234.5. Signs are ignored on
    purpose: prose states them in words ("a loss of $1,200"); pin a sign with
    ``text_sentence_matches``.
    """
    return [float(m.group().replace(",", "")) for m in _TEXT_NUMBER.finditer(text)]


# --- sentences --------------------------------------------------------------------------

_ABBREVIATIONS = frozenset({
    "e.g", "i.e", "etc", "vs", "approx", "inc", "ltd", "co", "corp", "llc", "mr", "mrs", "ms",
    "dr", "jr", "sr", "dept", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
    "oct", "nov", "dec"})
#: Abbreviations only before a number ("No. 42"); elsewhere they end a sentence ("No.").
_NUMBER_ABBREVIATIONS = frozenset({"no", "nos", "nr"})
_BLOCK_START = re.compile(r"^\s*(?:[-*+•]\s|\d+[.)]\s|#|\|)")
_LINE_ALONE = re.compile(r"^\s*[#|]")
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s)")


def sentences(text: str) -> list[str]:
    """Cut ``text`` into sentences.

    Paragraphs (separated by blank lines) never share a sentence. Inside a paragraph,
    a line break joins the lines with a space unless the next line starts a list item
    (``-``, ``*``, ``+``, ``•``, ``1.``, ``1)``), a heading (``#``) or a table row
    (``|``), which start a new sentence; a heading or table row is a sentence of its own.
    Then a sentence ends after ``.``, ``!`` or ``?``
    (with any closing quote or bracket) followed by whitespace, except after a common
    abbreviation (``e.g.``, ``Inc.``, ``Co.``, ``Jan.``, ...), ``No.`` before a number, or
    a single letter (``J. Smith``). A decimal point (``1,234.50``) is not an end.
    """
    segments: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n")):
        current: list[str] = []
        for line in paragraph.split("\n"):
            if _BLOCK_START.match(line) and current:
                segments.append(" ".join(current))
                current = []
            if line.strip():
                current.append(line.strip())
            if _LINE_ALONE.match(line) and current:  # a heading or table row stands alone
                segments.append(" ".join(current))
                current = []
        if current:
            segments.append(" ".join(current))
    out: list[str] = []
    for seg in segments:
        start = 0
        for m in _SENTENCE_END.finditer(seg):
            words = seg[start:m.start()].split()
            last = words[-1].lstrip("(\"'").casefold() if words else ""
            before_number = seg[m.end():].lstrip()[:1].isdigit()
            if m.group() == "." and (last in _ABBREVIATIONS
                                     or (last in _NUMBER_ABBREVIATIONS and before_number)
                                     or (len(last) == 1 and last.isalpha())):
                continue
            out.append(seg[start:m.end()].strip())
            start = m.end()
        if seg[start:].strip():
            out.append(seg[start:].strip())
    return out


# --- the checks -------------------------------------------------------------------------


@check_type(FileExists)
def file_exists(spec: FileExists, ctx: CheckContext) -> CheckResult:
    """Pass when the glob matches at least one file of the workspace."""
    ctx.file(spec.path)  # no workspace: a grader error
    assert ctx.workspace is not None
    root = ctx.workspace.resolve()
    matches = sorted(p.relative_to(ctx.workspace).as_posix() for p in ctx.workspace.glob(spec.path)
                     if p.is_file() and p.resolve().is_relative_to(root))
    if not matches:
        return _result(False, f"{spec.path}: no file in the workspace matches", matched=0)
    return _result(True, f"{spec.path}: " + _listing("matched", matches), matched=len(matches))


@check_type(CsvColumns)
@_failing
def csv_columns(spec: CsvColumns, ctx: CheckContext) -> CheckResult:
    """Pass when the header has the required columns (``exact``: exactly, in order)."""
    table = agent_csv(ctx, spec.path)
    if spec.exact:
        if table.header == spec.columns:
            return _result(True, f"{spec.path}: columns are exactly {_names(spec.columns)}")
        return _result(False, f"{spec.path}: expected exactly {_names(spec.columns)} in that "
                              f"order; found {_names(table.header)}")
    _columns_or_fail(table, spec.columns, spec.path)
    return _result(True, f"{spec.path}: has the {len(spec.columns)} required columns")


@check_type(CsvRowCount)
@_failing
def csv_row_count(spec: CsvRowCount, ctx: CheckContext) -> CheckResult:
    """Pass when the data rows number ``equals`` (or the reference's rows) ± tolerance."""
    if spec.equals_ref is not None:
        expected, source = len(reference_csv(ctx, spec.equals_ref).rows), (
            f" (the rows of {spec.equals_ref})")
    else:
        expected, source = spec.equals or 0, ""
    rows = len(agent_csv(ctx, spec.path).rows)
    passed = abs(rows - expected) <= spec.tolerance
    tol = f" ± {spec.tolerance}" if spec.tolerance else ""
    return _result(passed, f"{spec.path}: {rows} data rows; expected {expected}{tol}{source}",
                   rows=rows, expected=expected)


def _normalizer(options: Sequence[str]) -> Callable[[str], str]:
    def norm(value: str) -> str:
        if "strip" in options:
            value = value.strip()
        if "space" in options:
            value = re.sub(r"\s+", " ", value)
        if "casefold" in options:
            value = value.casefold()
        if "basename" in options:
            value = basename(value)
        return value

    return norm


def basename(value: str) -> str:
    """A file name written as a path (``./receipts/r1.pdf``, ``C:\\in\\r1.pdf``): its last
    part (``r1.pdf``); any other value as it is."""
    return re.split(r"[\\/]", value)[-1]


@check_type(CsvSetEqual)
@_failing
def csv_set_equal(spec: CsvSetEqual, ctx: CheckContext) -> CheckResult:
    """Pass when the column's set of values equals the reference column's set."""
    ref_column = spec.ref_column or spec.column
    ref = reference_csv(ctx, spec.ref)
    r = _columns_or_raise(ref, [ref_column], spec.ref)[ref_column]
    table = agent_csv(ctx, spec.path)
    a = _columns_or_fail(table, [spec.column], spec.path)[spec.column]
    norm = _normalizer(spec.normalize)
    expected = {norm(row[r]) for row in ref.rows}
    got = {norm(row[a]) for row in table.rows}
    missing, extra = sorted(expected - got), sorted(got - expected)
    metrics = {"expected": len(expected), "got": len(got), "missing": len(missing),
               "extra": len(extra)}
    if not missing and not extra:
        return _result(True, f"{spec.path}: the {len(got)} values of {spec.column!r} equal "
                             f"{spec.ref}", **metrics)
    parts = [p for p in (_listing("missing", missing), _listing("extra", extra)) if p]
    return _result(False, f"{spec.path}: values of {spec.column!r} differ from {spec.ref} "
                          f"{ref_column!r}: " + "; ".join(parts), **metrics)


def _key_text(key: tuple[str, ...]) -> str:
    return "|".join(key)


#: An amount written as a plain decimal to the cent (``plain`` columns): ``-1234.5``.
_PLAIN_DECIMAL = re.compile(r"-?\d+(?:\.\d{1,2})?")


@check_type(CsvValuesMatch)
@_failing
def csv_values_match(spec: CsvValuesMatch, ctx: CheckContext) -> CheckResult:
    """Pass when enough reference keys match and every must-match key is right."""
    keys, cols = spec.key_columns, spec.columns
    ref = reference_csv(ctx, spec.ref)
    ri = _columns_or_raise(ref, [*keys, *cols], spec.ref)
    named = set(spec.basename)

    def cell(row: Sequence[str], i: int, column: str) -> str:
        v = row[i].strip()
        return basename(v) if column in named else v

    expected: dict[tuple[str, ...], list[str]] = {}
    for row in ref.rows:
        k = tuple(cell(row, ri[c], c) for c in keys)
        if k in expected:
            raise ValueError(f"reference {spec.ref}: key {_key_text(k)!r} appears twice")
        expected[k] = [cell(row, ri[c], c) for c in cols]
    if not expected:
        raise ValueError(f"reference {spec.ref}: no data rows to compare with")
    for i, mk in enumerate(spec.must_keys()):
        if mk not in expected:
            raise ValueError(f"must_match_keys[{i}] {_key_text(mk)!r} is not a key of "
                             f"{spec.ref}")
    numeric, plain = set(spec.numeric), set(spec.plain)
    tolerance = Decimal(repr(spec.tolerance)) + Decimal("1e-9")
    for k, values in expected.items():
        for c, v in zip(cols, values, strict=True):
            if c in numeric | plain and v and parse_number(v) is None:
                raise ValueError(f"reference {spec.ref}: key {_key_text(k)!r} column {c!r}: "
                                 f"{v!r} is not a number")

    total = len(expected)
    try:
        table = agent_csv(ctx, spec.path)
        if spec.if_present:
            written = set(table.header)
            kept = [i for i, c in enumerate(cols) if c in written]
            cols = [cols[i] for i in kept]
            expected = {k: [v[i] for i in kept] for k, v in expected.items()}
        ai = _columns_or_fail(table, [*keys, *cols], spec.path)
    except Unusable as e:
        return _result(False, str(e), accuracy=0.0, matched=0, total=total)
    got: dict[tuple[str, ...], list[list[str]]] = {}
    for row in table.rows:
        got.setdefault(tuple(cell(row, ai[c], c) for c in keys), []).append(
            [cell(row, ai[c], c) for c in cols])

    folded = set(spec.casefold)

    def same(column: str, have: str, want: str) -> bool:
        if column in folded:
            return have.casefold() == want.casefold()
        if column in plain and want and not _PLAIN_DECIMAL.fullmatch(have):
            return False
        if column not in numeric | plain or not want:
            return have == want
        h, w = parse_number(have), parse_number(want)
        return h is not None and w is not None and abs(h - w) <= tolerance

    wrong: set[tuple[str, ...]] = set()
    mismatches: list[str] = []
    for k, want in expected.items():
        rows = got.get(k, [])
        if len(rows) != 1:
            wrong.add(k)
            mismatches.append(f"key {_key_text(k)!r}: " + (
                f"missing from {spec.path}" if not rows else f"appears {len(rows)} times"))
            continue
        for c, have, w in zip(cols, rows[0], want, strict=True):
            if not same(c, have, w):
                wrong.add(k)
                mismatches.append(f"key {_key_text(k)!r} column {c!r}: got {have!r}, "
                                  f"expected {w!r}")
    matched = total - len(wrong)
    accuracy = matched / total
    must_wrong = [_key_text(k) for k in spec.must_keys() if k in wrong]
    extra = sum(1 for k in got if k not in expected)
    passed = accuracy >= spec.min_accuracy - 1e-12 and not must_wrong
    detail = (f"{spec.path}: {matched}/{total} reference keys match (accuracy {accuracy:.3f}, "
              f"required {spec.min_accuracy:.3f})")
    if spec.if_present and len(cols) < len(spec.columns):
        detail += ("; not written, not compared: "
                   + ", ".join(c for c in spec.columns if c not in cols))
    if must_wrong:
        detail += "; " + _listing("must-match keys wrong", must_wrong)
    if mismatches:
        shown = "; ".join(mismatches[:SHOW])
        more = f"; ... ({len(mismatches) - SHOW} more)" if len(mismatches) > SHOW else ""
        detail += f"; first mismatches: {shown}{more}"
    return _result(passed, detail, accuracy=accuracy, matched=matched, total=total,
                   extra_keys=extra, must_match_wrong=must_wrong)


def _fold(text: str) -> str:
    """Case-insensitive form with whitespace runs collapsed to one space and typography
    plain (a phrase written with a curly apostrophe matches a straight one)."""
    return " ".join(plain_typography(text).split()).casefold()


@check_type(TextContainsAll)
@_failing
def text_contains_all(spec: TextContainsAll, ctx: CheckContext) -> CheckResult:
    """Pass when every phrase appears (case-insensitive substring, whitespace collapsed)."""
    text = _fold(agent_text(ctx, spec.path))
    missing = [p for p in spec.phrases if _fold(p) not in text]
    total = len(spec.phrases)
    if missing:
        return _result(False, f"{spec.path}: " + _listing("phrases missing", missing),
                       found=total - len(missing), total=total)
    return _result(True, f"{spec.path}: all {total} phrases present", found=total, total=total)


@check_type(TextContainsAny)
@_failing
def text_contains_any(spec: TextContainsAny, ctx: CheckContext) -> CheckResult:
    """Pass when at least one phrase appears (case-insensitive)."""
    text = _fold(agent_text(ctx, spec.path))
    found = [p for p in spec.phrases if _fold(p) in text]
    if found:
        return _result(True, f"{spec.path}: " + _listing("found", found), found=len(found))
    return _result(False, f"{spec.path}: none of the phrases appear: "
                          f"{_names(spec.phrases)}", found=0)


@check_type(TextNotContains)
@_failing
def text_not_contains(spec: TextNotContains, ctx: CheckContext) -> CheckResult:
    """Pass when no phrase appears (case-insensitive)."""
    text = _fold(agent_text(ctx, spec.path))
    found = [p for p in spec.phrases if _fold(p) in text]
    if found:
        return _result(False, f"{spec.path}: " + _listing("forbidden phrases present", found),
                       found=len(found))
    return _result(True, f"{spec.path}: none of the {len(spec.phrases)} forbidden phrases "
                         f"appear", found=0)


@check_type(TextMatchesAll)
@_failing
def text_matches_all(spec: TextMatchesAll, ctx: CheckContext) -> CheckResult:
    """Pass when every regex matches somewhere (case-insensitive, multiline)."""
    text = agent_text(ctx, spec.path)
    missing = [p for p in spec.patterns if not re.search(p, text, _RE_FLAGS)]
    total = len(spec.patterns)
    if missing:
        return _result(False, f"{spec.path}: " + _listing("patterns not matched", missing),
                       matched=total - len(missing), total=total)
    return _result(True, f"{spec.path}: all {total} patterns match", matched=total, total=total)


@check_type(TextNumbersPresent)
@_failing
def text_numbers_present(spec: TextNumbersPresent, ctx: CheckContext) -> CheckResult:
    """Pass when at least ``min_count`` (default all) figures appear within tolerance."""
    seen = numbers_in_text(agent_text(ctx, spec.path))
    missing = []
    for want in spec.numbers:
        tol = max(abs(want) * spec.rel_tol, 0.005) + 1e-9  # to the cent
        if not any(abs(have - abs(want)) <= tol for have in seen):
            missing.append(want)
    total = len(spec.numbers)
    need = spec.min_count or total
    found = total - len(missing)
    passed = found >= need
    detail = f"{spec.path}: {found}/{total} figures present (need {need})"
    if missing:
        detail += "; " + _listing("missing", [_figure(m) for m in missing])
    return _result(passed, detail, found=found, total=total)


def _figure(x: float) -> str:
    return f"{x:,.2f}" if x != int(x) or abs(x) >= 1000 else f"{int(x)}"


def _contradicting(cut: Sequence[str], about: Sequence[str], veto: Sequence[str]) -> str:
    """The first sentence matching every ``about`` regex and some ``veto`` regex ('' if
    none, or if there is no ``about``)."""
    if not about or not veto:
        return ""
    for s in cut:
        if (all(re.search(p, s, _RE_FLAGS) for p in about)
                and any(re.search(p, s, _RE_FLAGS) for p in veto)):
            return s
    return ""


@check_type(TextSentenceMatches)
@_failing
def text_sentence_matches(spec: TextSentenceMatches, ctx: CheckContext) -> CheckResult:
    """Pass when one sentence matches every ``all`` regex and no ``none`` regex (with
    ``aside``, the item's part of it: :func:`_judged_text`)."""
    cut = sentences(agent_text(ctx, spec.path))
    if spec.aside:
        words = [rx for rx in (*spec.all, *spec.none) if rx not in spec.about]
        cut = [_judged_text(x, spec.about, spec.aside, words, named=True) for x in cut]
    against = _contradicting(cut, spec.about, spec.none)
    if against:
        return _result(False, f"{spec.path}: a sentence about the item contradicts it: "
                              f"{_clip(against)!r}", sentences=len(cut))
    best: tuple[int, str, list[str], list[str]] | None = None
    for s in cut:
        lacking = [p for p in spec.all if not re.search(p, s, _RE_FLAGS)]
        vetoed = [p for p in spec.none if re.search(p, s, _RE_FLAGS)]
        if not lacking and not vetoed:
            return _result(True, f"{spec.path}: matching sentence: {_clip(s)!r}",
                           sentences=len(cut))
        score = len(spec.all) - len(lacking)
        if best is None or score > best[0]:
            best = (score, s, lacking, vetoed)
    detail = f"{spec.path}: none of the {len(cut)} sentences matches"
    if best is not None and best[0] > 0:
        _, s, lacking, vetoed = best
        why = "; ".join(p for p in (_listing("lacks", lacking),
                                    _listing("matches a 'none' pattern", vetoed)) if p)
        detail += f"; closest: {_clip(s)!r} ({why})"
    return _result(False, detail, sentences=len(cut))


_MONEY_VALUE = re.compile(r"^(-?)(\d+)\.(\d{2})$")
_ISO_VALUE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December"]


def figure_pattern(value: str, *, percent: bool = False) -> str:
    """A regex for a stated figure: ``86249.11`` as ``86,249.11`` or ``$86249.11`` (not part
    of a longer number); a percent followed by ``%`` or ``percent``; a date ``2026-05-03``
    as written or as ``May 3, 2026`` / ``May 3rd, 2026`` / ``Sep. 3, 2026`` / ``3 May
    2026`` / ``03-May-2026`` / ``05/03/2026`` (US month first); other text literally, on word
    boundaries."""
    v = value.strip()
    if percent:
        return rf"(?<![\d.]){re.escape(v.lstrip('-'))}\s?(%|per\s?cent\b)"
    d = _ISO_VALUE.match(v)
    if d:  # a date: as written, as May 3(rd), 2026 / 3 May 2026 / 03-May-2026 / 5/3/2026
        y, mo, day = d.group(1), int(d.group(2)), int(d.group(3))
        name = _MONTH_NAMES[mo - 1]
        month = rf"(?:{name}|{name[:3]}{'t?' if mo == 9 else ''}\.?)"
        nth = rf"0?{day}(?:st|nd|rd|th)?"
        return (rf"({re.escape(v)}|\b{month}\s+{nth},?\s+{y}|\b{nth}\s+(?:of\s+)?{month},?"
                rf"\s+{y}|\b0?{day}-{month}-{y}|(?<![\d/]){mo:02d}/{day:02d}/{y}"
                rf"|(?<![\d/]){mo}/{day}/{y})(?!\d)")
    m = _MONEY_VALUE.match(v.replace(",", ""))
    if m:
        whole = m.group(2)
        head = len(whole) % 3 or 3
        groups = [whole[:head]] + [whole[i:i + 3] for i in range(head, len(whole), 3)]
        return r"(?<![\d.,])\$?\s?" + ",?".join(groups) + rf"\.{m.group(3)}(?!\d)"
    lead = r"\b" if v[:1].isalnum() else ""
    tail = r"\b" if v[-1:].isalnum() else ""
    return lead + re.escape(v) + tail


def _about_row(rx: str, row: Sequence[str], idx: Mapping[str, int],
               percent: Sequence[str]) -> str:
    """An ``about`` regex with each ``{column}`` replaced by the row's value as stated."""
    return _PLACEHOLDER.sub(lambda m: figure_pattern(row[idx[m.group(1)]],
                                                     percent=m.group(1) in percent), rx)


#: A figure in prose: digits (thousands commas), decimals, a scale word; not a percent.
_PROSE_FIGURE = re.compile(r"(?<![\w.,])(?P<n>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"
                           r"(?!\d|\.\d|,\d|\s?%|\s?per\s?cent)"
                           r"(?:\s?(?P<u>k|m|mn|thousand|million)\b)?")
_SCALES = {"k": 3, "thousand": 3, "m": 6, "mn": 6, "million": 6}
#: Between a direction word and the change it states: the word's rest, then "by" after at
#: most four words ("under budget by", "fell short of its budget by"), or "of", or nothing.
_GAP_TO_CHANGE = re.compile(r"\w*\s*(?:(?:[a-z']+\s+){0,4}by\s+|of\s+)?(?:[-$€£]\s?)?",
                            re.IGNORECASE)
#: After a direction word that follows a figure ("$X overrun on rent", "X below budget."):
#: the word's rest, then the sentence's end, a clause's end or a preposition.
_AFTER_CHANGE = re.compile(r"\w*(?:\s+budget)?\s*(?:[.,;:)]|$|(?:in|on|for|at|against|"
                           r"versus|vs|from|than|over|to|compared|year)\b)", re.IGNORECASE)


#: Direction words that name the change itself: after a figure they state it ("a $X
#: shortfall reflects ..."), whatever follows; a preposition or a verb needs the clause to
#: end ("X below budget.", not "came in at X below its budget of Y").
_CHANGE_NOUNS = frozenset({"increase", "decrease", "decline", "drop", "rise", "jump", "gain",
                           "growth", "reduction", "overrun", "shortfall", "fall", "climb"})


_WORD = re.compile(r"\w+")


def _word_at(text: str, start: int) -> str:
    m = _WORD.match(text, start)
    return m.group().casefold() if m else ""


def _prose_figure(m: re.Match[str]) -> tuple[Decimal, Decimal]:
    """A prose figure's value and the unit of its last written place ($2.0k: 100)."""
    digits = m.group("n").replace(",", "")
    shift = _SCALES.get((m.group("u") or "").casefold(), 0)
    places = len(digits.partition(".")[2])
    return (Decimal(digits).scaleb(shift), Decimal(1).scaleb(shift - places))


def _other_change(cut: Sequence[str], about: Sequence[str], directions: Sequence[str],
                  value: str, known: Sequence[str]) -> str:
    """The first sentence matching every ``about`` regex in which a direction word states a
    change other than ``value`` (within the precision written), '' if none. A figure
    ahead of the word that is one of ``known`` (the row's values) is a level, not a change."""
    expected = parse_number(value)
    if expected is None:
        raise ValueError(f"change: {value!r} is not a figure")
    expected = abs(expected)
    levels = [abs(k) for k in map(parse_number, known) if k is not None]
    for s in cut:
        if not all(re.search(p, s, _RE_FLAGS) for p in about):
            continue
        words = [m for rx in directions for m in re.finditer(rx, s, _RE_FLAGS)]
        for f in _PROSE_FIGURE.finditer(s):
            stated, unit = _prose_figure(f)
            if abs(stated - expected) < unit:
                continue
            after = any(w.start() < f.start() and (
                w.end() > f.start() or _GAP_TO_CHANGE.fullmatch(s, w.end(), f.start()))
                for w in words)
            before = (not after and stated not in levels and any(
                w.start() >= f.end() and not s[f.end():w.start()].strip()
                and not any(c.isdigit() for c in w.group())
                and (_word_at(s, w.start()) in _CHANGE_NOUNS or _AFTER_CHANGE.match(s, w.end()))
                for w in words))
            if after or before:
                return s
    return ""


#: A figure in text read as money when it has a currency sign or two decimals: digits
#: (thousands commas), decimals, a scale word after a currency sign; not part of an id
#: (INV-000111), a date (2026-05-03, 05/03/2026), a longer number or a percent.
_MONEY_IN_TEXT = re.compile(
    r"(?P<cur>[$€£¥]\s?)?(?<![\w.,/-])(?P<n>\d{1,3}(?:,\d{3})+|\d+)(?P<d>\.\d+)?"
    r"(?![.,/-]?\d|\s?(?:%|per\s?cent\b))(?:\s?(?P<u>k|m|mn|thousand|million)\b)?(?!\w)",
    re.IGNORECASE)
_MONTH_TEXT = (r"(?P<{}>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
               r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
#: A date in text: 2026-05-03, 05/03/2026 (US), 03-May-2026, May 3(rd)(, 2026),
#: 3(rd) (of) May( 2026); a month and day without a year is matched by them alone.
_DATE_IN_TEXT = re.compile(
    r"(?<![\d/-])(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2})(?!\d)"
    r"|(?<![\d/.-])(?P<um>\d{1,2})/(?P<ud>\d{1,2})/(?P<uy>\d{4})(?!\d)"
    r"|\b(?P<dd>\d{1,2})-" + _MONTH_TEXT.format("dm") + r"-(?P<dy>\d{4})\b"
    r"|\b" + _MONTH_TEXT.format("nm") + r"\s+(?P<nd>\d{1,2})(?:st|nd|rd|th)?\b"
    r"(?:,?\s+(?P<ny>\d{4})\b)?"
    r"|\b(?P<rd>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH_TEXT.format("rm")
    + r"(?!\w)(?:,?\s+(?P<ry>\d{4})\b)?", re.IGNORECASE)
_MONTH_NUMBERS = {m[:3].casefold(): n for n, m in enumerate(_MONTH_NAMES, start=1)}


#: Before a figure without a currency sign: a label making it a room, section or version.
_NOT_MONEY_BEFORE = re.compile(r"\b(?:suite|ste|room|rm|unit|floor|fl|apt|building|bldg|"
                               r"version|ver|section|sec|clause|rule|item|no|nr)\.?\s*#?\s*$"
                               r"|#\s*$", re.IGNORECASE)
#: After a figure without a currency sign: a time of day (10.30 am).
_NOT_MONEY_AFTER = re.compile(r"\s?(?:[ap]\.?m\b|h\b|hrs?\b)", re.IGNORECASE)


def _money_in(sentence: str) -> list[tuple[str, Decimal, Decimal, int]]:
    """The money figures of a sentence: (as written, magnitude, unit of the last place,
    where it starts).

    A figure without a currency sign is money when it has two decimals and no label makes
    it something else (Suite 4.10, section 12.05, 10.30 am)."""
    out = []
    for m in _MONEY_IN_TEXT.finditer(sentence):
        decimals = m.group("d") or ""
        if not m.group("cur") and (len(decimals) != 3
                                   or _NOT_MONEY_BEFORE.search(sentence, 0, m.start())
                                   or _NOT_MONEY_AFTER.match(sentence, m.end())):
            continue
        shift = _SCALES.get((m.group("u") or "").casefold(), 0) if m.group("cur") else 0
        value = Decimal(m.group("n").replace(",", "") + decimals).scaleb(shift)
        unit = Decimal(1).scaleb(shift - max(len(decimals) - 1, 0))
        out.append((m.group().strip(), value, unit, m.start()))
    return out


def _dates_in(sentence: str) -> list[tuple[str, int | None, int, int, int]]:
    """The dates of a sentence: (as written, year or None, month, day, where it starts),
    valid days only."""
    out = []
    for m in _DATE_IN_TEXT.finditer(sentence):
        g = m.groupdict()
        for y, mo, d in (("iy", "im", "id"), ("uy", "um", "ud"), ("dy", "dm", "dd"),
                         ("ny", "nm", "nd"), ("ry", "rm", "rd")):
            if g[mo] is not None:
                month = (int(g[mo]) if g[mo].isdigit()
                         else _MONTH_NUMBERS[g[mo].rstrip(".")[:3].casefold()])
                year = int(g[y]) if g[y] else None
                try:
                    date(year or 2000, month, int(g[d]))  # 2000: Feb 29 is a day
                except ValueError:
                    break
                out.append((m.group(), year, month, int(g[d]), m.start()))
                break
    return out


def _row_figures(row: Sequence[str], idx: Mapping[str, int], columns: Sequence[str]
                 ) -> tuple[list[Decimal], list[date]]:
    """A row's money values (magnitudes) and dates among ``columns``; other values none."""
    money: list[Decimal] = []
    days: list[date] = []
    for c in columns:
        v = row[idx[c]].strip()
        if _ISO_VALUE.match(v):
            with contextlib.suppress(ValueError):
                days.append(date.fromisoformat(v))
        elif _MONEY_VALUE.match(v.replace(",", "")):
            money.append(abs(Decimal(v.replace(",", ""))))
    return money, days


def _on_or_after(year: int, month: int, day: int, today: date) -> bool:
    try:
        return date(year, month, day) >= today
    except ValueError:  # February 29 of a common year
        return False


#: Where a sentence naming several rows by their ids breaks into clauses: a semicolon, a
#: comma (not the one before a year, "May 3, 2026"), and, or, but, while, whereas, plus.
_CLAUSE_BREAK = re.compile(r";|,\s+(?!\d{4}\b)|\b(?:and|or|but|while|whereas|plus)\b",
                           re.IGNORECASE)


_ID_LIST_MORE = re.compile(r"(?:\s*,\s*(?:and\s+|&\s*)?|\s+(?:and|&)\s+|\s*&\s*|\s*/\s*)"
                           r"0*(?P<number>\d+)\b(?![.,/-]\d)", re.IGNORECASE)
"""One more number of a list after an id read by number (``, 115``, `` and 128``), not a
figure (``and 4,374.76``)."""


def _id_number(value: str) -> int | None:
    digits = re.sub(r"\D", "", value)
    return int(digits) if digits else None


def _same_id(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _naming(m: re.Match[str], rows: Sequence[Sequence[str]], k: int) -> set[int]:
    """The rows (indexes) whose column ``k`` value an ``ids`` match names."""
    number = m.groupdict().get("number")
    if number is not None:
        return {i for i, r in enumerate(rows) if _id_number(r[k]) == int(number)}
    return {i for i, r in enumerate(rows) if _same_id(m.group(), r[k].strip())}


def _ids_in(sentence: str, rows: Sequence[Sequence[str]], idx: Mapping[str, int],
            ids: Mapping[str, str]) -> tuple[list[tuple[int, set[int]]], list[str]]:
    """The ids a sentence names: (where, the rows named) of each naming some, and each
    naming none as written."""
    named: list[tuple[int, set[int]]] = []
    unknown: list[str] = []
    for column, rx in ids.items():
        for m in re.finditer(rx, sentence, _RE_FLAGS):
            hits = _naming(m, rows, idx[column])
            if hits:
                named.append((m.start(), hits))
            else:
                unknown.append(m.group().strip())
            if m.groupdict().get("number") is None:
                continue
            # "invoices 111, 115 and 128": the bare numbers listed after an id read by
            # number name rows too; the list ends at the first naming none (a count)
            end = m.end()
            while (more := _ID_LIST_MORE.match(sentence, end)) is not None:
                hits = _naming(more, rows, idx[column])
                if not hits:
                    break
                named.append((more.start("number"), hits))
                end = more.end()
    return named, unknown


def _check_ids(rows: Sequence[Sequence[str]], idx: Mapping[str, int],
               ids: Mapping[str, str]) -> None:
    """Each row's own id value must be written as its column's regex reads an id, naming
    that row: else the regex is wrong (a grader error)."""
    for column, rx in ids.items():
        for i, r in enumerate(rows):
            value = r[idx[column]].strip()
            m = re.fullmatch(rx, value, _RE_FLAGS)
            if m is None or i not in _naming(m, rows, idx[column]):
                raise ValueError(f"figures.ids: {column} {value!r} is not an id its regex "
                                 f"reads as that row's")


def _clauses(sentence: str, named: Sequence[tuple[int, set[int]]]
             ) -> list[tuple[int, set[int]]]:
    """A sentence naming rows cut into clauses, each (where it starts, the rows it names):
    a clause naming none joins the one before it (the first one naming rows when none is
    before)."""
    cuts = [0, *(m.start() for m in _CLAUSE_BREAK.finditer(sentence)), len(sentence) + 1]
    groups: list[tuple[int, set[int]]] = []
    for a, b in itertools.pairwise(cuts):
        rows = set().union(*(h for at, h in named if a <= at < b))
        if rows and groups and groups[-1][1]:
            groups.append((a, rows))  # a clause naming rows starts a new group
        elif groups:
            groups[-1][1].update(rows)  # a clause naming none joins the one before it
        else:
            groups.append((0, rows))
    return groups


def _each_states(groups: Sequence[tuple[int, set[int]]], stated: Sequence[int]
                 ) -> Sequence[tuple[int, set[int]]] | None:
    """``groups`` when there are several and each states one of ``stated`` (where the
    sentence's figures, or its dates, start); else None (a list of ids, "... are for $X
    and $Y": all the sentence's rows judge them, unless ``_respectively`` pairs them)."""
    ends = [g[0] for g in groups[1:]] + [sys.maxsize]
    if len(groups) > 1 and all(any(g[0] <= at < e for at in stated)
                               for g, e in zip(groups, ends, strict=True)):
        return groups
    return None


_RESPECTIVELY = re.compile(r"\brespectively\b", re.IGNORECASE)

#: Where a sentence's clauses part, for ``aside``: ``_CLAUSE_BREAK``'s places and the
#: conjunctions that start a clause about something else.
_SUBJECT_BREAK = re.compile(_CLAUSE_BREAK.pattern + r"|\b(?:although|though|despite|whilst)\b",
                            re.IGNORECASE)


def _aside_of(aside: Sequence[str], row: Sequence[str], rows: Sequence[Sequence[str]],
              idx: Mapping[str, int], percent: Sequence[str]) -> list[str]:
    """The aside subjects' regexes for ``row``: a fixed regex as it is, one with
    ``{column}`` once for every other row of the reference (its values as stated)."""
    out: list[str] = []
    for rx in aside:
        if not _PLACEHOLDER.search(rx):
            out.append(rx)
            continue
        mine = _about_row(rx, row, idx, percent)
        out += dict.fromkeys(x for x in (_about_row(rx, r, idx, percent) for r in rows)
                             if x != mine)
    return out


def _judged_text(sentence: str, mine: Sequence[str], others: Sequence[str],
                 directions: Sequence[str], *, named: bool) -> str:
    """The part of ``sentence`` that states a row's facts, for ``aside`` (see
    :class:`TextRefSentences`): ``mine``, the regexes naming the row (its ``about``; a
    total's ``all``); ``others``, the aside subjects'.

    Each clause is the row's (it names the row, or follows one of the row's naming no
    other subject), another's (it names an aside subject and not the row, or follows
    such a clause naming nothing), or neither (before any subject is named). A row
    ``named`` by ``about`` is judged by its own clauses when they hold a direction word,
    else by the whole sentence; any other row (a total) by every clause that is not
    another's.
    """
    # where the row is named (a lookahead of ``about`` names nothing: "^(?!.*email)")
    mine_at = [m.span() for rx in mine for m in re.finditer(rx, sentence, _RE_FLAGS)
               if m.end() > m.start()]
    other_at = [m.start() for rx in others for m in re.finditer(rx, sentence, _RE_FLAGS)
                if not any(a <= m.start() < b for a, b in mine_at)]
    if not other_at:
        return sentence
    cuts = [0, *(m.start() for m in _SUBJECT_BREAK.finditer(sentence)), len(sentence)]
    clauses = [sentence[a:b] for a, b in itertools.pairwise(cuts)]
    states: list[str] = []
    state = ""
    for a, b in itertools.pairwise(cuts):
        if any(a <= at < b for at, _ in mine_at):
            state = "mine"
        elif any(a <= at < b for at in other_at):
            state = "other"
        states.append(state)
    if not named:
        return " ".join(c for c, st in zip(clauses, states, strict=True) if st != "other")
    own = [i for i, st in enumerate(states) if st == "mine"]

    def directed(i: int) -> bool:
        return any(re.search(rx, clauses[i], _RE_FLAGS) for rx in directions)

    if any(directed(i) for i in own):
        return " ".join(clauses[i] for i in own)
    # No direction of its own: a list sharing the next clause's ("Managed services and
    # Training session ran over"); with none after it, the whole sentence ("..., as did
    # Managed services").
    after = next((j for j in range(own[-1] + 1, len(clauses)) if directed(j)), None) \
        if own else None
    if after is None:
        return sentence
    return " ".join([*(clauses[i] for i in own), *clauses[own[-1] + 1:after + 1]])


def _respectively(sentence: str, named: Sequence[tuple[int, set[int]]],
                  stated: Sequence[int]) -> list[tuple[int, set[int]]] | None:
    """A list of ids and a list of figures paired in order ("INV-000111 and INV-000115
    are for $6,868.20 and $9,044.48 respectively"): each figure (``stated``: where each
    starts) judged by the row named in the same place of the id list, as ``_clauses``
    groups (where the figure starts, its row). Only when the sentence says
    "respectively", each id names one row, there are as many rows (by first mention) as
    figures, at least two, and every figure comes after the last id; else None (all the
    sentence's rows judge them)."""
    if not _RESPECTIVELY.search(sentence) or not named:
        return None
    order: list[int] = []
    for _, hits in sorted(named, key=lambda n: n[0]):
        if len(hits) != 1:
            return None
        (row,) = hits
        if row not in order:
            order.append(row)
    last_id = max(at for at, _ in named)
    if len(order) < 2 or len(order) != len(stated) or min(stated) <= last_id:
        return None
    return [(0 if i == 0 else at, {row})
            for i, (at, row) in enumerate(zip(sorted(stated), order, strict=True))]


def _judging(at: int, clauses: Sequence[tuple[int, set[int]]] | None, mine: Sequence[int],
             rows: Sequence[Sequence[str]], idx: Mapping[str, int], first_id: str | None
             ) -> tuple[list[int], str]:
    """The rows whose figures a figure at ``at`` may be, and how the detail names them:
    its clause's (``clauses``), the sentence's (``mine``) or, naming none, any row's."""
    if clauses is not None and first_id is not None:
        here = sorted(next(g for g in reversed(clauses) if g[0] <= at)[1])
        return here, " or ".join(rows[k][idx[first_id]].strip() for k in here) + "'s"
    return (list(mine) or list(range(len(rows)))), "its rows'" if mine else "any row's"


def _stray_figures(cut: Sequence[str], rows: Sequence[Sequence[str]],
                   idx: Mapping[str, int], figures: RefFigures, percent: Sequence[str],
                   today: date | None) -> list[str]:
    """Each money figure or date a sentence states that is none of its rows' (``figures``:
    the rows it is about; with ``everywhere``, any row for a sentence about none), and
    each id (``figures.ids``) naming none of the rows."""
    per_row = [_row_figures(r, idx, figures.columns) for r in rows]
    judge_money = any(m for m, _ in per_row)
    judge_dates = any(d for _, d in per_row)
    _check_ids(rows, idx, figures.ids)
    first_id = next(iter(figures.ids), None)
    stray: list[str] = []
    for s in cut:
        named, unknown = _ids_in(s, rows, idx, figures.ids)
        stray += [f"{u} names none of the rows in {_clip(s, 80)!r}" for u in unknown]
        by_id: set[int] = set().union(*(h for _, h in named))
        # a sentence naming ids is theirs alone: a vendor's name beside them adds no row
        mine = sorted(by_id or {k for k, r in enumerate(rows)
                                if all(re.search(_about_row(rx, r, idx, percent), s,
                                                 _RE_FLAGS) for rx in figures.about)})
        if not mine and not figures.everywhere:
            continue
        money = _money_in(s) if judge_money else []
        days = [d for d in (_dates_in(s) if judge_dates else [])  # a pay-by date is free
                if today is None or not _on_or_after(d[1] or today.year, d[2], d[3], today)]
        clauses = _clauses(s, named) if len(by_id) > 1 else []
        by_money = (_each_states(clauses, [m[3] for m in money])
                    or _respectively(s, named, [m[3] for m in money]))
        by_date = (_each_states(clauses, [d[4] for d in days])
                   or _respectively(s, named, [d[4] for d in days]))
        for written, value, unit, at in money:
            ks, whose = _judging(at, by_money, mine, rows, idx, first_id)
            if not any(abs(value - v) < unit for k in ks for v in per_row[k][0]):
                stray.append(f"{written} is none of {whose} figures in {_clip(s, 80)!r}")
        for written, year, month, day, at in days:
            ks, whose = _judging(at, by_date, mine, rows, idx, first_id)
            if not any(d.month == month and d.day == day and year in (None, d.year)
                       for k in ks for d in per_row[k][1]):
                stray.append(f"{written} is none of {whose} dates in {_clip(s, 80)!r}")
    return stray


@check_type(TextRefSentences)
@_failing
def text_ref_sentences(spec: TextRefSentences, ctx: CheckContext) -> CheckResult:
    """Pass when every selected reference row has a sentence stating its values."""
    ref = reference_csv(ctx, spec.ref)
    wanted = [*spec.columns, *spec.words, *spec.signs, *spec.rows]
    if spec.figures is not None:
        wanted += [*spec.figures.columns,
                   *(n for rx in spec.figures.about for n in _PLACEHOLDER.findall(rx))]
    idx = _columns_or_raise(ref, list(dict.fromkeys(wanted)), spec.ref)
    chosen = [r for r in ref.rows
              if all(r[idx[c]].strip() == v for c, v in spec.rows.items())]
    if not chosen:
        raise ValueError(f"reference {spec.ref}: no row matches {spec.rows}")
    cut = sentences(agent_text(ctx, spec.path))
    missing: list[str] = []
    contradicted: list[str] = []
    directions = [rx for table in spec.words.values() for rx in table.values()]
    directions += [rx for pair in spec.signs.values() for rx in pair]
    for row in chosen:
        need = [figure_pattern(row[idx[c]], percent=c in spec.percent) for c in spec.columns]
        veto = list(spec.none)
        for c, table in spec.words.items():
            value = row[idx[c]].strip()
            if value not in table:
                raise ValueError(f"reference {spec.ref}: {c} {value!r} has no regex in words "
                                 f"(expected one of: {', '.join(table)})")
            need.append(table[value])
            veto += [rx for v, rx in table.items() if v != value and rx != table[value]]
        for c, (negative, positive) in spec.signs.items():
            figure = parse_number(row[idx[c]])
            if figure is None or figure == 0:
                raise ValueError(f"reference {spec.ref}: {c} {row[idx[c]]!r} is not a non-zero "
                                 f"figure (signs needs one)")
            need.append(negative if figure < 0 else positive)
            veto.append(positive if figure < 0 else negative)
        need += spec.all
        label = " / ".join(row[idx[c]].strip() for c in spec.columns)
        about = [_about_row(rx, row, idx, spec.percent) for rx in spec.about]
        judged = cut
        if spec.aside:
            others = _aside_of(spec.aside, row, ref.rows, idx, spec.percent)
            judged = [_judged_text(x, about or spec.all, others, directions,
                                   named=bool(about)) for x in cut]
        against = _contradicting(judged, about, veto)
        if not against and spec.change is not None:
            against = _other_change(judged, about, directions, row[idx[spec.change]],
                                    row)
        if against:
            contradicted.append(f"{label} (by {_clip(against, 80)!r})")
        elif not any(all(re.search(p, x if about else j, _RE_FLAGS) for p in need)
                     and not any(re.search(p, j, _RE_FLAGS) for p in veto)
                     for x, j in zip(cut, judged, strict=True)):
            missing.append(label)
    n = len(chosen)
    stray = ([] if spec.figures is None else
             _stray_figures(cut, chosen, idx, spec.figures, spec.percent, ctx.as_of or ctx.end))
    if missing or contradicted or stray:
        parts = ([f"{len(missing)} of {n} rows of {spec.ref} stated in no sentence: "
                  + "; ".join(missing[:SHOW])] if missing else [])
        if contradicted:
            parts.append(f"{len(contradicted)} of {n} rows of {spec.ref} contradicted in "
                         f"another sentence: " + "; ".join(contradicted[:SHOW]))
        if stray:
            parts.append(f"{len(stray)} figures or dates not those of {spec.ref}: "
                         + "; ".join(stray[:SHOW]))
        return _result(False, f"{spec.path}: " + "; ".join(parts), rows=n,
                       missing=len(missing) + len(contradicted),
                       **({} if spec.figures is None else {"stray": len(stray)}))
    return _result(True, f"{spec.path}: each of the {n} rows of {spec.ref} stated in a "
                         f"sentence", rows=n, missing=0,
                   **({} if spec.figures is None else {"stray": 0}))


@check_type(TextRefAbsent)
@_failing
def text_ref_absent(spec: TextRefAbsent, ctx: CheckContext) -> CheckResult:
    """Pass when no selected reference row's value is named in the text."""
    ref = reference_csv(ctx, spec.ref)
    idx = _columns_or_raise(ref, list(dict.fromkeys([spec.column, *spec.rows])), spec.ref)
    chosen = [r[idx[spec.column]].strip() for r in ref.rows
              if all(r[idx[c]].strip() == v for c, v in spec.rows.items())]
    if not chosen or not all(chosen):
        raise ValueError(f"reference {spec.ref}: no row matches {spec.rows}" if not chosen
                         else f"reference {spec.ref}: an empty {spec.column} among the rows")
    text = agent_text(ctx, spec.path)
    named = [v for v in chosen if re.search(figure_pattern(v), text, _RE_FLAGS)]
    if named:
        return _result(False, f"{spec.path}: names {len(named)} of the {len(chosen)} excluded "
                              f"rows of {spec.ref}: " + ", ".join(map(repr, named[:SHOW])),
                       excluded=len(chosen), named=len(named))
    return _result(True, f"{spec.path}: none of the {len(chosen)} excluded rows of {spec.ref} "
                         f"named", excluded=len(chosen), named=0)


def _clip(s: str, limit: int = 160) -> str:
    return s if len(s) <= limit else s[:limit - 3] + "..."


_CUSTOM_KEYS = frozenset({"name", "passed", "detail", "metrics"})


def load_function(path: Path, name: str) -> Callable[..., Any]:
    """Import the module at ``path`` (a reference file) and return its function ``name``."""
    mod_name = "erpsim_ref_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    loader_spec = importlib.util.spec_from_file_location(mod_name, path)
    if loader_spec is None or loader_spec.loader is None:  # pragma: no cover - a .py file
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[mod_name] = module  # dataclasses and typing look the module up while loading
    try:
        loader_spec.loader.exec_module(module)
    finally:
        sys.modules.pop(mod_name, None)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise TypeError(f"{path.name} defines no {name}(ws, ref) function")
    return fn


def load_custom(path: Path) -> Callable[[Path, Path], Any]:
    """Import the module at ``path`` and return its ``check`` function."""
    return load_function(path, "check")


MODULE_TIMEOUT_ENV = "ERPSIM_MODULE_TIMEOUT_S"
MODULE_TIMEOUT_S = 300.0
"""How long a reference module's function may run (``custom``'s ``check``,
``plan_feasible``'s and ``forecast_error``'s ``evaluate``) before its check is a grader
error; ``ERPSIM_MODULE_TIMEOUT_S`` sets another bound."""


class ModuleTimeout(BaseException):
    """A reference module ran past its time (a ``BaseException``: a module's own
    ``except Exception`` must not swallow it)."""


def module_timeout_s() -> float:
    """The bound in force: ``ERPSIM_MODULE_TIMEOUT_S`` when set (a positive number of
    seconds; anything else is a ``ValueError`` naming it), else :data:`MODULE_TIMEOUT_S`."""
    raw = os.environ.get(MODULE_TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return MODULE_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (0 < value < 1e9):
        raise ValueError(f"{MODULE_TIMEOUT_ENV}={raw!r}: expected a positive number of "
                         "seconds")
    return value


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`ModuleTimeout` in the code under ``with`` once ``seconds`` have passed
    (``SIGALRM``, so only on the main thread; elsewhere, such as a Dask worker's thread,
    no bound). Python code is stopped between two of its bytecodes, a sleep at once; a
    single long call into C (a solver) ends first. An alarm already set (a test runner's
    own timeout) keeps its handler and its time: it fires when it is due, before the
    bound or after it, as it would have without this one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    started = time.monotonic()
    outer_delay, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    outer_due = started + outer_delay if outer_delay else None
    outer_fired: list[bool] = []

    def expired(signum: int, frame: Any) -> None:
        now = time.monotonic()
        if (outer_due is not None and not outer_fired and now >= outer_due - 0.001
                and now < started + seconds):
            # The earlier alarm was the outer one: its handler (once), then this bound again.
            outer_fired.append(True)
            signal.setitimer(signal.ITIMER_REAL, started + seconds - now)
            if callable(outer_handler):
                outer_handler(signum, frame)
            return
        raise ModuleTimeout

    outer_handler = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, outer_delay or seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, outer_handler)
        if outer_due is not None and not outer_fired:  # not due yet: its time goes on
            left = max(outer_due - time.monotonic(), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
        elif outer_interval:  # delivered, and it repeats
            signal.setitimer(signal.ITIMER_REAL, outer_interval, outer_interval)


def call_module(path: Path, module: str, function: str, *args: Any) -> Any:
    """Import the reference module at ``path`` and call ``function(*args)``. Whatever it
    raises on import or call (``sys.exit`` too), and running past
    :func:`module_timeout_s`, is re-raised as one ``RuntimeError`` naming the module, the
    function and the exception: a grader error, never a crash or a hang of the whole
    evaluation. A module that changes the working directory has it put back."""
    cwd = os.getcwd()
    limit = module_timeout_s()
    step = "importing it"
    try:
        with _time_limit(limit):
            try:
                fn = load_function(path, function)
            except (Exception, SystemExit) as e:
                if isinstance(e, TypeError) and str(e).startswith(f"{path.name} defines no "):
                    raise
                raise RuntimeError(f"{module}: importing it failed: {type(e).__name__}: {e}"
                                   ) from e
            step = f"{function}(ws, ref)"
            try:
                return fn(*args)
            except (Exception, SystemExit) as e:
                raise RuntimeError(f"{module}: {function}(ws, ref) raised "
                                   f"{type(e).__name__}: {e}") from e
    except ModuleTimeout:
        raise RuntimeError(f"{module}: {step} did not end within {limit:g} s (the bound of "
                           f"{MODULE_TIMEOUT_ENV})") from None
    finally:
        if os.getcwd() != cwd:
            os.chdir(cwd)


def custom_results(out: Any, module: str) -> list[CheckResult]:
    """Validate what a custom ``check`` returned; raise ``TypeError`` on any bad shape."""
    if not isinstance(out, list | tuple) or not out:
        raise TypeError(f"{module}: check() must return a non-empty list of dicts, got "
                        f"{type(out).__name__}" + ("" if out else " (empty)"))
    results: list[CheckResult] = []
    names: set[str] = set()
    for i, item in enumerate(out):
        where = f"{module}: result [{i}]"
        if not isinstance(item, Mapping):
            raise TypeError(f"{where} is a {type(item).__name__}, not a dict")
        unknown = sorted(set(item) - _CUSTOM_KEYS, key=str)
        if unknown:
            raise TypeError(f"{where} has unknown keys {unknown}; allowed: "
                            f"{sorted(_CUSTOM_KEYS)}")
        name, passed = item.get("name"), item.get("passed")
        detail, metrics = item.get("detail", ""), item.get("metrics", {})
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"{where}: 'name' must be a non-empty string, got {name!r}")
        if name in names:
            raise TypeError(f"{where}: name {name!r} used twice")
        if not isinstance(passed, bool):
            raise TypeError(f"{where} ({name}): 'passed' must be true or false, got {passed!r}")
        if not isinstance(detail, str):
            raise TypeError(f"{where} ({name}): 'detail' must be a string, got "
                            f"{type(detail).__name__}")
        if not isinstance(metrics, Mapping):
            raise TypeError(f"{where} ({name}): 'metrics' must be a dict, got "
                            f"{type(metrics).__name__}")
        names.add(name)
        results.append(CheckResult(name, passed, detail, dict(metrics)))
    return results


@check_type(Custom)
def custom(spec: Custom, ctx: CheckContext) -> list[CheckResult]:
    """Run ``check(workspace, reference)`` from the reference folder's module."""
    path = reference_file(ctx, spec.module)
    if ctx.workspace is None:
        raise FileNotFoundError("custom check: this evaluation has no workspace")
    assert ctx.reference is not None
    return custom_results(call_module(path, spec.module, "check", ctx.workspace,
                                      ctx.reference), spec.module)


__all__ = ["DIRECTIONS", "MAX_BYTES", "TYPOGRAPHY", "CsvColumns", "CsvRowCount", "CsvSetEqual",
           "CsvValuesMatch", "Custom", "Directions", "FileExists", "Table", "TextContainsAll",
           "TextContainsAny", "TextMatchesAll", "TextNotContains", "TextNumbersPresent",
           "TextRefAbsent", "TextRefSentences", "TextSentenceMatches", "agent_csv",
           "call_module", "custom_results", "figure_pattern", "load_custom", "load_function",
           "numbers_in_text", "parse_csv", "parse_number", "plain_typography", "sentences"]
