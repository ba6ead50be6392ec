"""expense-receipts-review: no approved claim is listed in the note as rejected.

``notes-no-approved-claim-rejected``: no line or sentence of out/review_notes.md names a
claim that claim_review.csv approves together with a rejection (``reject``) or one of the
reasons (no receipt, already claimed, date differs, amount differs, as in the CSV or in
words). An approved claim may be mentioned otherwise.
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
        approved = [r["claim_id"] for r in csv.DictReader(f) if r["status"] == "approved"]
    path = ws / "out" / "review_notes.md"
    if not path.is_file():
        return [{"name": "notes-no-approved-claim-rejected", "passed": False,
                 "detail": "no out/review_notes.md"}]
    text = path.read_text(encoding="utf-8", errors="replace")
    bad = []
    for sentence in SENTENCE.split(text):
        if not REJECTION.search(sentence):
            continue
        for claim in approved:
            if re.search(rf"(?i)(?<![\w-]){re.escape(claim)}(?!\w)", sentence):
                bad.append(f"{claim}: {sentence.strip()[:120]!r}")
    return [{"name": "notes-no-approved-claim-rejected", "passed": not bad,
             "detail": ("approved claims listed as rejected: " + "; ".join(bad)) if bad
             else "no approved claim listed as rejected"}]
