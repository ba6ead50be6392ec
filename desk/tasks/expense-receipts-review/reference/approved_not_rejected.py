"""expense-receipts-review: no approved claim is listed in the note as rejected.

``notes-no-approved-claim-rejected``: no line or sentence of out/review_notes.md names a
claim that claim_review.csv approves together with a rejection (``reject``) or one of the
reasons (no receipt, already claimed, date differs, amount differs, as in the CSV or in
words) as the claim it lists: the first claim the sentence names ("EC-1053: receipt already
claimed (by EC-1052)" lists EC-1053, and names the approved EC-1052 only as the earlier
claim). An approved claim may be mentioned otherwise.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

REJECTION = re.compile(r"(?i)reject|no[ _]receipt|already[ _]claimed|date[ _]differs|"
                       r"amount[ _]differs")
SENTENCE = re.compile(r"\n+|(?<=[.;!?])\s+")


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    with (ref / "claim_review.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    approved = {r["claim_id"].upper() for r in rows if r["status"] == "approved"}
    ids = sorted((r["claim_id"] for r in rows), key=len, reverse=True)
    claim = re.compile(r"(?i)(?<![\w-])(" + "|".join(map(re.escape, ids)) + r")(?!\w)")
    path = ws / "out" / "review_notes.md"
    if not path.is_file():
        return [{"name": "notes-no-approved-claim-rejected", "passed": False,
                 "detail": "no out/review_notes.md"}]
    text = path.read_text(encoding="utf-8", errors="replace")
    bad = []
    for sentence in SENTENCE.split(text):
        if not REJECTION.search(sentence):
            continue
        first = claim.search(sentence)
        if first and first.group().upper() in approved:
            bad.append(f"{first.group().upper()}: {sentence.strip()[:120]!r}")
    return [{"name": "notes-no-approved-claim-rejected", "passed": not bad,
             "detail": ("approved claims listed as rejected: " + "; ".join(bad)) if bad
             else "no approved claim listed as rejected"}]
