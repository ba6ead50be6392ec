"""audit-overpaid-bills-sql: the agent's query, run as the auditors will run it.

``out/overpaid_bills.sql`` must be one read-only statement (``SELECT`` or ``WITH``; SQL
comments allowed). It is run on a copy of today's extract and on the held-out extract
(``holdout.sqlite``: another company's payables), each opened read-only with
``PRAGMA query_only``, an authorizer that allows reading only, and a limit of about
ten seconds of work; its column names and its rows, **in order**, must equal the expected
answer (``overpaid.csv``, ``holdout_expected.csv``). A query that hard-codes today's bill
ids or ignores the void status fails on the held-out extract.
"""

from __future__ import annotations

import csv
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

QUERY = "out/overpaid_bills.sql"
LIMIT_S = 10.0
_READ_OK = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
            getattr(sqlite3, "SQLITE_RECURSIVE", 33)}


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", sql, flags=re.S).strip()


def _expected(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def _run(db: Path, sql: str) -> tuple[list[str], list[list[str]]]:
    with tempfile.TemporaryDirectory(prefix="erpsim-sql-") as tmp:
        copy = Path(tmp) / db.name
        shutil.copy(db, copy)
        con = sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True)
        try:
            con.execute("PRAGMA query_only = ON")
            con.set_authorizer(lambda action, *_: sqlite3.SQLITE_OK if action in _READ_OK
                               else sqlite3.SQLITE_DENY)
            deadline = time.monotonic() + LIMIT_S
            con.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
            cur = con.execute(sql)
            names = [d[0] for d in cur.description or []]
            rows = [["" if v is None else str(v) for v in r] for r in cur.fetchall()]
        finally:
            con.close()
    return names, rows


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    """``one-read-only-select``, then the query's answer on each extract."""
    path = ws / QUERY
    if not path.is_file():
        return [{"name": "one-read-only-select", "passed": False, "detail": f"no {QUERY}"}]
    sql = _strip_comments(path.read_text(encoding="utf-8", errors="replace")).rstrip(";").strip()
    if not re.match(r"(?is)^(select|with)\b", sql) or ";" in sql:
        return [{"name": "one-read-only-select", "passed": False,
                 "detail": "expected one SELECT (or WITH) statement, got "
                           f"{sql[:120]!r}"}]
    out: list[dict[str, object]] = [{"name": "one-read-only-select", "passed": True}]
    for name, db, want in (("todays-extract", ws / "ap_extract.sqlite", ref / "overpaid.csv"),
                           ("held-out-extract", ref / "holdout.sqlite",
                            ref / "holdout_expected.csv")):
        header, rows = _expected(want)
        try:
            got_header, got_rows = _run(db, sql)
        except sqlite3.Error as e:
            out.append({"name": name, "passed": False,
                        "detail": f"the query fails: {type(e).__name__}: {e}"})
            continue
        problems = []
        if got_header != header:
            problems.append(f"columns {got_header} (expected {header})")
        if got_rows != rows:
            diff = [f"row {i + 1}: {g} (expected {w})"
                    for i, (g, w) in enumerate(zip(got_rows, rows, strict=False)) if g != w]
            if len(got_rows) != len(rows):
                diff.append(f"{len(got_rows)} rows (expected {len(rows)})")
            problems.append("; ".join(diff[:4]))
        out.append({"name": name, "passed": not problems, "detail": "; ".join(problems),
                    "metrics": {"rows": len(got_rows)}})
    return out
