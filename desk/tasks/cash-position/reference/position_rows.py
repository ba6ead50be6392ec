"""cash-position: the position table's rows as the prompt asks for them.

``accounts-named-as-in-the-list``: each bank account's row carries its name as
cash_accounts.csv writes it (``account_names.csv``, copied from that list).
``total-is-the-last-row``: the "Total" row is the table's last, and its name is not one
account's name (the prompt names no label for it: empty, "Total" or "All bank accounts"
all pass). The figure checks key rows by account, so neither order nor the Total's
label reached them.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

TABLE = "out/cash_position.csv"
NAMES = ("accounts-named-as-in-the-list", "total-is-the-last-row")


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    path = ws / TABLE
    if not path.is_file():
        return [{"name": n, "passed": False, "detail": f"no {TABLE}"} for n in NAMES]
    rows = [{(k or "").strip(): v for k, v in r.items()}  # " name" is the column name
            for r in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig",
                                                               errors="replace")))]
    want = {r["account"].strip(): r["name"].strip() for r in
            csv.DictReader(io.StringIO((ref / "account_names.csv").read_text(encoding="utf-8")))}
    got = [((r.get("account") or "").strip(), (r.get("name") or "").strip()) for r in rows]
    wrong = [f"{a}: {n!r} (expected {want[a]!r})" for a, n in got if a in want and n != want[a]]
    last = got[-1] if got else ("", "")
    total_ok = last[0].casefold() == "total" and last[1] not in want.values()
    total_detail = "" if total_ok else (
        f"the last row is {last[0]!r}, not Total" if last[0].casefold() != "total"
        else f"the Total row is named {last[1]!r}, an account's name")
    return [{"name": NAMES[0], "passed": not wrong, "detail": "; ".join(wrong)},
            {"name": NAMES[1], "passed": total_ok, "detail": total_detail}]
