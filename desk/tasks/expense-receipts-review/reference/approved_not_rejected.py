"""expense-receipts-review: no approved claim is listed in the note as rejected.

``notes-no-approved-claim-rejected``: no line or sentence of out/review_notes.md names a
claim that claim_review.csv approves together with a rejection (``reject``) or one of the
reasons (no receipt, already claimed, date differs, amount differs, as in the CSV or in
words) as the claim it lists: the first claim the sentence names ("EC-1053: receipt already
claimed (by EC-1052)" lists EC-1053, and names the approved EC-1052 only as the earlier
claim). An approved claim may be mentioned otherwise.

A sentence naming several claims is read clause by clause, as the prompt says: it is cut
at ``;``, ``,`` and the conjunctions that start a clause (and, but, while, whereas,
although), and a clause naming a claim, with the clauses after it naming none, is that
claim's ("EC-1042 was approved, while EC-1043 was rejected: no receipt" lists EC-1043 as
rejected, not EC-1042).
"""

from __future__ import annotations

import csv
import itertools
import re
from pathlib import Path

REJECTION = re.compile(r"(?i)reject|no[ _]receipt|already[ _]claimed|date[ _]differs|"
                       r"amount[ _]differs")
SENTENCE = re.compile(r"\n+|(?<=[.;!?])\s+")
CLAUSE = re.compile(r"[;,]|\b(?:and|but|while|whereas|although|though)\b", re.IGNORECASE)


def _parts(sentence: str, claim: re.Pattern[str]) -> list[str]:
    """The sentence's parts, each a clause naming a claim with the clauses after it that
    name none (the text before the first claim joins the first part)."""
    cuts = [0, *(m.start() for m in CLAUSE.finditer(sentence)), len(sentence)]
    parts: list[str] = []
    for a, b in itertools.pairwise(cuts):
        clause = sentence[a:b]
        # a clause naming no claim joins the part before it, as does any clause after a
        # part naming none yet (the text before the sentence's first claim)
        if parts and (not claim.search(clause) or not claim.search(parts[-1])):
            parts[-1] += clause
        else:
            parts.append(clause)
    return parts


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
        for part in _parts(sentence, claim):
            if not REJECTION.search(part):
                continue
            first = claim.search(part)
            if first and first.group().upper() in approved:
                bad.append(f"{first.group().upper()}: {sentence.strip()[:120]!r}")
    return [{"name": "notes-no-approved-claim-rejected", "passed": not bad,
             "detail": ("approved claims listed as rejected: " + "; ".join(bad)) if bad
             else "no approved claim listed as rejected"}]
