"""The results ledger: one SQLite file per campaign, one row per attempt, never two.

``results/LABEL/results.db`` holds:

- ``attempts``: one :class:`AttemptRow` per attempt, its primary key
  ``(scenario, seed, system, repetition)``. A row is written in one transaction after
  the attempt's folder is complete, so a campaign killed at any moment leaves whole
  rows or none; a second row for the same attempt is refused
  (:class:`DuplicateAttempt`), except that a row whose status is
  ``infrastructure_error`` may be replaced by a rerun (``--resume``), the replaced
  row being kept in ``replaced_attempts``.
- ``receipts``: rescoring receipts (:class:`Receipt`), each binding a new verdict of a
  retained attempt to its output hashes, the scorer and the original verdict.
  Original verdicts stay in ``attempts``, untouched.
- ``meta``: the ledger's format and the campaign label.

Every JSON column holds canonical JSON (sorted keys). The file uses WAL, so readers
(``erpsim report`` while a sweep runs) never block the writer.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runs.errors import DuplicateAttempt, ResultsError

FORMAT = "erpsim-results/1"

STATUSES = ("completed", "timeout", "crashed", "infrastructure_error")
"""Execution statuses of an attempt (see :attr:`AttemptRow.status`)."""

AttemptKey = tuple[str, int, str, int]
"""``(scenario, seed, system, repetition)``: an attempt's identity in its campaign."""




@dataclass(frozen=True)
class AttemptRow:
    """Everything recorded about one attempt, each aspect in its own field.

    Execution (did the agent's process run to its end?), grading (could the checks be
    evaluated?) and acceptance (did every required check pass?) are separate fields:
    a timed-out attempt can be accepted, a completed one rejected.
    """

    label: str
    """The campaign label."""
    scenario: str
    """The scenario's id (or the desk task's name)."""
    kind: str
    """``scenario`` (a multi-date process scenario) or ``desk`` (a desk task)."""
    seed: int
    """The scenario seed."""
    system: str
    """The configured system's name."""
    repetition: int
    """Which repetition of (scenario, seed, system): 1..K."""
    status: str
    """Execution status: ``infrastructure_error`` (the harness failed: an exception in
    the runner, or a turn that could not be run), else ``timeout`` if any turn timed out,
    else ``crashed`` if any turn crashed (non-zero exit, or a built-in agent that
    raised), else ``completed``."""
    exit_codes: tuple[int | None, ...]
    """Per turn, the adapter's exit code; ``None`` for a built-in (in-process) agent,
    a process killed at its timeout or one never started."""
    grader_error: str | None
    """The checks that crashed while grading (``check: error`` joined by ``; ``), or
    ``None``. A grader error is never an ordinary failure."""
    verdict_status: str | None
    """``accepted``, ``rejected`` or ``grader_error``; ``None`` when no verdict was
    produced (an infrastructure error before grading)."""
    accepted: bool
    """True iff the verdict accepted the attempt. False whenever there is no verdict:
    an errored attempt stays in the denominator as not accepted."""
    checks: tuple[dict[str, Any], ...]
    """Every check result: ``{name, passed, required, detail, metrics}``."""
    required_passed: int | None
    """Required check results that passed (``None`` without a verdict)."""
    required_total: int | None
    """Required check results (``None`` without a verdict)."""
    check_fraction: float | None
    """``required_passed / required_total`` (1.0 when there are no required checks;
    ``None`` without a verdict)."""
    turn_durations: tuple[float, ...]
    """Per turn, seconds the agent took (the adapter process, or the built-in agent)."""
    duration_s: float
    """Seconds of the whole attempt: set-up, every turn, the world, grading, the folder."""
    input_tokens: int | None
    """Input tokens summed over turns; ``None`` when any turn's usage is unknown (a
    built-in agent, an adapter that wrote no usage.json or left the key out)."""
    output_tokens: int | None
    """Output tokens summed over turns; ``None`` as for ``input_tokens``."""
    cost_usd: float | None
    """Cost summed over turns; ``None`` as for ``input_tokens`` (unknown, not zero)."""
    outputs: dict[str, str]
    """sha256 of every output file, by path relative to the final ``out/`` folder."""
    final_hash: str | None
    """The event log's head hash at the end (``None`` without a verdict)."""
    scorer: dict[str, str] | None
    """The scorer that produced the verdict: ``{name, version, definitions_sha256}``."""
    attempt_dir: str
    """The attempt folder, relative to the campaign folder (POSIX)."""
    started_at: str
    """When the attempt started (UTC, ISO 8601; metadata, never hashed)."""
    finished_at: str
    """When the attempt finished (UTC, ISO 8601)."""
    error: str | None
    """The infrastructure error's text (``None`` unless ``status`` says so)."""

    @property
    def key(self) -> AttemptKey:
        """``(scenario, seed, system, repetition)``."""
        return (self.scenario, self.seed, self.system, self.repetition)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AttemptRow:
        """Read back what :meth:`to_json` wrote."""
        d = dict(data)
        d["exit_codes"] = tuple(d["exit_codes"])
        d["checks"] = tuple(d["checks"])
        d["turn_durations"] = tuple(d["turn_durations"])
        return cls(**d)


_JSON_FIELDS = {"exit_codes", "checks", "turn_durations", "outputs", "scorer"}
_COLUMNS = tuple(f.name for f in fields(AttemptRow))

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    label TEXT NOT NULL,
    scenario TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('scenario', 'desk')),
    seed INTEGER NOT NULL,
    system TEXT NOT NULL,
    repetition INTEGER NOT NULL CHECK (repetition >= 1),
    status TEXT NOT NULL CHECK (status IN ('completed', 'timeout', 'crashed',
                                           'infrastructure_error')),
    exit_codes TEXT NOT NULL,
    grader_error TEXT,
    verdict_status TEXT CHECK (verdict_status IN ('accepted', 'rejected', 'grader_error')),
    accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
    checks TEXT NOT NULL,
    required_passed INTEGER,
    required_total INTEGER,
    check_fraction REAL,
    turn_durations TEXT NOT NULL,
    duration_s REAL NOT NULL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cost_usd REAL,
    outputs TEXT NOT NULL,
    final_hash TEXT,
    scorer TEXT,
    attempt_dir TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    error TEXT,
    PRIMARY KEY (scenario, seed, system, repetition)
);
CREATE TABLE IF NOT EXISTS replaced_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scenario TEXT NOT NULL,
    seed INTEGER NOT NULL,
    system TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    row_json TEXT NOT NULL,
    replaced_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS receipts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scenario TEXT NOT NULL,
    seed INTEGER NOT NULL,
    system TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    scorer_name TEXT NOT NULL,
    scorer_definitions_sha256 TEXT NOT NULL,
    verdict_json TEXT NOT NULL,
    original_verdict_status TEXT,
    original_verdict_sha256 TEXT,
    outputs TEXT NOT NULL,
    receipt_sha256 TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_by_attempt
    ON receipts (scenario, seed, system, repetition, scorer_name);
"""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal text (and hashes)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def utc_now() -> str:
    """The wall clock, UTC, ISO 8601 to the microsecond (metadata only)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Receipt:
    """A rescoring receipt: a new verdict bound to what it was computed from.

    ``receipt_sha256`` is the sha256 of the canonical JSON of every other field but
    ``created_at``: the same rescoring of the same outputs gives the same receipt.
    """

    scenario: str
    seed: int
    system: str
    repetition: int
    scorer_name: str
    """The named scorer (a version of the check definitions)."""
    scorer_definitions_sha256: str
    """The hash of that scorer's check definitions (its manifest)."""
    verdict: dict[str, Any]
    """The new verdict (``Verdict.to_json()``)."""
    original_verdict_status: str | None
    """The original verdict's status (``None`` when the attempt had none)."""
    original_verdict_sha256: str | None
    """sha256 of the original ``verdict.json`` bytes (``None`` when there was none)."""
    outputs: dict[str, str]
    """sha256 of the output files the new verdict evaluated."""
    receipt_sha256: str
    created_at: str

    @property
    def key(self) -> AttemptKey:
        """The attempt this receipt is about."""
        return (self.scenario, self.seed, self.system, self.repetition)

    @classmethod
    def create(cls, key: AttemptKey, *, scorer_name: str, scorer_definitions_sha256: str,
               verdict: dict[str, Any], original_verdict_status: str | None,
               original_verdict_sha256: str | None, outputs: dict[str, str],
               created_at: str | None = None) -> Receipt:
        """A receipt with its hash computed."""
        scenario, seed, system, repetition = key
        body: dict[str, Any] = {"scenario": scenario, "seed": seed, "system": system,
                "repetition": repetition, "scorer_name": scorer_name,
                "scorer_definitions_sha256": scorer_definitions_sha256, "verdict": verdict,
                "original_verdict_status": original_verdict_status,
                "original_verdict_sha256": original_verdict_sha256, "outputs": outputs}
        digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()
        return cls(**body, receipt_sha256=digest, created_at=created_at or utc_now())

    def verify(self) -> bool:
        """True when ``receipt_sha256`` matches the other fields."""
        again = Receipt.create(self.key, scorer_name=self.scorer_name,
                               scorer_definitions_sha256=self.scorer_definitions_sha256,
                               verdict=self.verdict,
                               original_verdict_status=self.original_verdict_status,
                               original_verdict_sha256=self.original_verdict_sha256,
                               outputs=self.outputs, created_at=self.created_at)
        return again.receipt_sha256 == self.receipt_sha256


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None, timeout=60.0)


def _configure(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL survives a killed process (only power loss can lose the last commits,
    # and then whole transactions: never half a row).
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")


class ResultsLedger:
    """A campaign's results ledger (``results.db``). Use one per process."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    @classmethod
    def create(cls, path: Path, *, label: str | None = None) -> ResultsLedger:
        """Create a new ledger file (``ResultsError`` if ``path`` exists)."""
        path = Path(path)
        if path.exists():
            raise ResultsError(f"{path} exists already (a results ledger is never "
                               "overwritten)")
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = _connect(path)
        _configure(conn)
        with _transaction(conn):
            conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA + "COMMIT;")
        with _transaction(conn):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO meta (key, value) VALUES ('format', ?)", (FORMAT,))
            if label is not None:
                conn.execute("INSERT INTO meta (key, value) VALUES ('label', ?)", (label,))
            conn.execute("COMMIT")
        return cls(path, conn)

    @classmethod
    def open(cls, path: Path) -> ResultsLedger:
        """Open an existing ledger (``ResultsError`` if missing or not a results ledger)."""
        path = Path(path)
        if not path.is_file():
            raise ResultsError(f"no results ledger at {path}")
        try:
            with path.open("rb") as f:
                head = f.read(16)
        except OSError as e:
            raise ResultsError(f"{path}: unreadable ({e})") from None
        if head != b"SQLite format 3\x00":  # touch nothing that is not ours
            raise ResultsError(f"{path} is not an erpsim results ledger (not an SQLite "
                               "file)")
        conn = _connect(path)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        except sqlite3.DatabaseError as e:
            conn.close()
            raise ResultsError(f"{path} is not an erpsim results ledger ({e})") from None
        if row is None or row[0] != FORMAT:
            conn.close()
            raise ResultsError(f"{path} is not an erpsim results ledger (format "
                               f"{row[0] if row else 'missing'!r}, expected {FORMAT!r})")
        _configure(conn)
        tables = {name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "attempts" not in tables:  # every ledger has had it: this one is damaged
            conn.close()
            raise ResultsError(f"{path}: no attempts table (a damaged results ledger; "
                               "expected one as `erpsim sweep` writes it); nothing was changed")
        if not {"replaced_attempts", "receipts"} <= tables:
            conn.executescript(_SCHEMA)  # tables added since this ledger was created
        return cls(path, conn)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> ResultsLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def label(self) -> str | None:
        """The campaign label recorded at creation."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'label'").fetchone()
        return None if row is None else str(row[0])

    # --- attempts --------------------------------------------------------------------

    def write(self, row: AttemptRow, *, replace_error: bool = True) -> None:
        """Insert one attempt's row in one transaction.

        A row for the same key is refused (:class:`DuplicateAttempt`) unless it records
        an ``infrastructure_error`` and ``replace_error``: then it is moved to
        ``replaced_attempts`` and the new row takes its place, in the same transaction.
        """
        if row.status not in STATUSES:
            raise ResultsError(f"attempt {row.key}: status {row.status!r} is not one of "
                               f"{', '.join(STATUSES)}")
        values = tuple(_to_sql(name, getattr(row, name)) for name in _COLUMNS)
        with _transaction(self._conn):
            self._conn.execute("BEGIN IMMEDIATE")
            old = self._conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM attempts WHERE scenario = ? AND seed = ? "
                "AND system = ? AND repetition = ?", row.key).fetchone()
            if old is not None:
                prior = _from_sql(old)
                if prior.status != "infrastructure_error" or not replace_error:
                    raise DuplicateAttempt(
                        f"attempt {_show_key(row.key)} has a row already (status "
                        f"{prior.status}); an attempt is recorded once")
                self._conn.execute(
                    "INSERT INTO replaced_attempts (scenario, seed, system, repetition, "
                    "row_json, replaced_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (*row.key, canonical_json(prior.to_json()), utc_now()))
                self._conn.execute("DELETE FROM attempts WHERE scenario = ? AND seed = ? AND "
                                   "system = ? AND repetition = ?", row.key)
            self._conn.execute(
                f"INSERT INTO attempts ({', '.join(_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_COLUMNS))})", values)
            self._conn.execute("COMMIT")

    def rows(self) -> list[AttemptRow]:
        """Every attempt row, ordered by scenario, seed, system, repetition."""
        cur = self._conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM attempts "
                                 "ORDER BY scenario, seed, system, repetition")
        return [_from_sql(r) for r in cur]

    def keys(self) -> set[AttemptKey]:
        """The keys of every recorded attempt."""
        return {(s, int(seed), sy, int(r)) for s, seed, sy, r in self._conn.execute(
            "SELECT scenario, seed, system, repetition FROM attempts")}

    def statuses(self) -> dict[AttemptKey, str]:
        """Each recorded attempt's execution status, by key."""
        return {(s, int(seed), sy, int(r)): st for s, seed, sy, r, st in self._conn.execute(
            "SELECT scenario, seed, system, repetition, status FROM attempts")}

    def replaced(self) -> list[AttemptRow]:
        """Rows of infrastructure errors that a rerun replaced, oldest first."""
        return [AttemptRow.from_json(json.loads(t)) for (t,) in self._conn.execute(
            "SELECT row_json FROM replaced_attempts ORDER BY id")]

    # --- receipts --------------------------------------------------------------------

    def write_receipt(self, receipt: Receipt) -> bool:
        """Store a receipt in one transaction; False if the same receipt is there already.

        Raises :class:`ResultsError` when its hash does not match its fields or the
        attempt it names has no row.
        """
        if not receipt.verify():
            raise ResultsError(f"receipt for {_show_key(receipt.key)}: receipt_sha256 does "
                               "not match its contents")
        with _transaction(self._conn):
            self._conn.execute("BEGIN IMMEDIATE")
            known = self._conn.execute(
                "SELECT 1 FROM attempts WHERE scenario = ? AND seed = ? AND system = ? AND "
                "repetition = ?", receipt.key).fetchone()
            if known is None:
                raise ResultsError(f"receipt for {_show_key(receipt.key)}: no such attempt "
                                   "in this ledger")
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO receipts (scenario, seed, system, repetition, "
                "scorer_name, scorer_definitions_sha256, verdict_json, "
                "original_verdict_status, original_verdict_sha256, outputs, receipt_sha256, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*receipt.key, receipt.scorer_name, receipt.scorer_definitions_sha256,
                 canonical_json(receipt.verdict), receipt.original_verdict_status,
                 receipt.original_verdict_sha256, canonical_json(receipt.outputs),
                 receipt.receipt_sha256, receipt.created_at))
            self._conn.execute("COMMIT")
            return cur.rowcount == 1

    def receipts(self, scorer_name: str | None = None) -> list[Receipt]:
        """Stored receipts (of one scorer, when named), oldest first."""
        sql = ("SELECT scenario, seed, system, repetition, scorer_name, "
               "scorer_definitions_sha256, verdict_json, original_verdict_status, "
               "original_verdict_sha256, outputs, receipt_sha256, created_at FROM receipts")
        args: tuple[Any, ...] = ()
        if scorer_name is not None:
            sql += " WHERE scorer_name = ?"
            args = (scorer_name,)
        out = []
        for r in self._conn.execute(sql + " ORDER BY id", args):
            out.append(Receipt(scenario=r[0], seed=int(r[1]), system=r[2],
                               repetition=int(r[3]), scorer_name=r[4],
                               scorer_definitions_sha256=r[5], verdict=json.loads(r[6]),
                               original_verdict_status=r[7], original_verdict_sha256=r[8],
                               outputs=json.loads(r[9]), receipt_sha256=r[10],
                               created_at=r[11]))
        return out


def write_receipt(ledger: ResultsLedger, receipt: Receipt) -> bool:
    """Store a receipt (see :meth:`ResultsLedger.write_receipt`)."""
    return ledger.write_receipt(receipt)


def read_receipts(ledger: ResultsLedger, scorer_name: str | None = None) -> list[Receipt]:
    """Stored receipts (see :meth:`ResultsLedger.receipts`)."""
    return ledger.receipts(scorer_name)


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """Roll back whatever the block left open when it raises."""
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _show_key(key: AttemptKey) -> str:
    scenario, seed, system, rep = key
    return f"{scenario} seed {seed} {system} rep {rep}"


def _to_sql(name: str, value: Any) -> Any:
    if name in _JSON_FIELDS:
        return canonical_json(list(value) if isinstance(value, tuple) else value)
    if name == "accepted":
        return int(bool(value))
    return value


def _from_sql(values: tuple[Any, ...]) -> AttemptRow:
    d: dict[str, Any] = dict(zip(_COLUMNS, values, strict=True))
    for name in _JSON_FIELDS:
        if d[name] is not None:
            d[name] = json.loads(d[name])
    d["exit_codes"] = tuple(d["exit_codes"])
    d["checks"] = tuple(d["checks"])
    d["turn_durations"] = tuple(d["turn_durations"])
    d["accepted"] = bool(d["accepted"])
    return AttemptRow(**d)
