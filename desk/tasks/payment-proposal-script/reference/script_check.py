"""payment-proposal-script: the agent's script, rerun on a held-out week of payables.

The script (``out/payment_proposal.py``) is run the way the prompt says AP will run it,
``python payment_proposal.py --bills B --vendors V --pay-date D --output O``, on the
held-out input in ``holdout/`` (another company's bills, another pay date), in a scratch
folder with a 60-second limit; its output must be the expected proposal row for row
(the columns, the vendors in order, the counts and the amounts as written). A script
that reads the workspace's files or hard-codes their figures fails here.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = "out/payment_proposal.py"
PAY_DATE = "2026-04-13"
TIMEOUT_S = 60


def _rows(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        return [[c.strip() for c in row] for row in csv.reader(f) if row]


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    """``script-exists``, ``script-runs-on-held-out-input``, ``held-out-proposal-matches``."""
    script = ws / SCRIPT
    if not script.is_file():
        return [{"name": "script-exists", "passed": False, "detail": f"no {SCRIPT}"}]
    out: list[dict[str, object]] = [{"name": "script-exists", "passed": True}]
    with tempfile.TemporaryDirectory(prefix="erpsim-holdout-") as tmp:
        run = Path(tmp)
        shutil.copy(script, run / "payment_proposal.py")
        for name in ("open_bills.csv", "vendors.csv"):
            shutil.copy(ref / "holdout" / name, run / name)
        cmd = [sys.executable, "payment_proposal.py", "--bills", "open_bills.csv",
               "--vendors", "vendors.csv", "--pay-date", PAY_DATE, "--output", "result.csv"]
        try:
            proc = subprocess.run(cmd, cwd=run, capture_output=True, text=True,
                                  timeout=TIMEOUT_S, stdin=subprocess.DEVNULL,
                                  env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        except subprocess.TimeoutExpired:
            return [*out, {"name": "script-runs-on-held-out-input", "passed": False,
                           "detail": f"still running after {TIMEOUT_S} s"}]
        result = run / "result.csv"
        if proc.returncode != 0 or not result.is_file():
            return [*out, {"name": "script-runs-on-held-out-input", "passed": False,
                           "detail": f"exit {proc.returncode}; stderr: {proc.stderr[-600:]}"}]
        out.append({"name": "script-runs-on-held-out-input", "passed": True})
        got, want = _rows(result), _rows(ref / "holdout" / "expected.csv")
    if got == want:
        out.append({"name": "held-out-proposal-matches", "passed": True,
                    "metrics": {"rows": len(want) - 1}})
        return out
    wrong = [f"row {i}: {g} (expected {w})"
             for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w]
    if len(got) != len(want):
        wrong.append(f"{len(got) - 1} data rows (expected {len(want) - 1})")
    out.append({"name": "held-out-proposal-matches", "passed": False,
                "detail": "; ".join(wrong[:5])})
    return out
