"""audit-overpaid-bills-sql: the agent's query, run as the auditors will run it.

``out/overpaid_bills.sql`` must be one read-only statement (``SELECT`` or ``WITH``; SQL
comments allowed). It is run on a copy of today's extract and on the held-out extract
(``holdout.sqlite``: another company's payables), each opened read-only with
``PRAGMA query_only``, an authorizer that allows reading only, and a limit of about
ten seconds of work; its column names and its rows, **in order**, must equal the expected
answer (``overpaid.csv``, ``holdout_expected.csv``). A query that hard-codes today's bill
ids or ignores the void status fails on the held-out extract.

Neither extract has two bills overpaid by the same amount, so the rule's tie-break (then
by bill_id) is tried on a third, ``tie-extract``: the held-out extract with one cleared
payment line raised so that its two smallest overpayments are equal, and its bills and
payment lines stored in descending bill_id order (a query that orders by overpaid_cents
alone then returns the tie in storage order, not by bill_id). Its expected answer is
worked out here, in Python, from the tables.
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


def _tie_extract(src: Path, dst: Path) -> tuple[list[str], list[list[str]]]:
    """Write the tie extract (see the module docstring) and return its expected answer."""
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    try:
        def answer() -> list[tuple[str, str, int, int, int]]:
            status = dict(con.execute("SELECT payment_id, status FROM payments"))
            paid: dict[str, int] = {}
            for pid, bill, cents in con.execute(
                    "SELECT payment_id, bill_id, amount_cents FROM payment_lines"):
                if status[pid] == "cleared":
                    paid[bill] = paid.get(bill, 0) + cents
            out = [(b, v, t, paid[b], paid[b] - t) for b, v, t in
                   con.execute("SELECT bill_id, vendor_id, total_cents FROM bills")
                   if b in paid and paid[b] > t]
            return sorted(out, key=lambda r: (-r[4], r[0]))

        rows = answer()
        (hi_id, *_, hi), (lo_id, *_, lo) = sorted(rows, key=lambda r: r[4])[1::-1]
        line = con.execute("SELECT pl.rowid FROM payment_lines AS pl JOIN payments AS p "
                           "ON p.payment_id = pl.payment_id WHERE pl.bill_id = ? AND "
                           "p.status = 'cleared' LIMIT 1", (lo_id,)).fetchone()
        con.execute("UPDATE payment_lines SET amount_cents = amount_cents + ? WHERE rowid = ?",
                    (hi - lo, line[0]))
        for table in ("bills", "payment_lines"):
            kept = con.execute(f"SELECT * FROM {table} ORDER BY bill_id DESC").fetchall()
            con.execute(f"DELETE FROM {table}")
            marks = ", ".join("?" * len(kept[0]))
            con.executemany(f"INSERT INTO {table} VALUES ({marks})", kept)
        con.commit()
        rows = answer()
        assert sum(1 for r in rows if r[4] == hi) >= 2, (hi_id, lo_id)
    finally:
        con.close()
    return (["bill_id", "vendor_id", "total_cents", "paid_cents", "overpaid_cents"],
            [[str(v) for v in r] for r in rows])


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
    tmp = tempfile.TemporaryDirectory(prefix="erpsim-tie-")
    tie = Path(tmp.name) / "tie.sqlite"
    tie_expected = _tie_extract(ref / "holdout.sqlite", tie)
    for name, db, want in (("todays-extract", ws / "ap_extract.sqlite", ref / "overpaid.csv"),
                           ("held-out-extract", ref / "holdout.sqlite",
                            ref / "holdout_expected.csv"),
                           ("tie-extract", tie, None)):
        header, rows = _expected(want) if want is not None else tie_expected
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
    tmp.cleanup()
    return out
