"""Golden runs: the reference agent on every library scenario and desk task gives a known
``final_hash``.

A change to one of these hashes is deliberate and explained in its commit: the same
scenario, seed and agent actions must give the same event log on any machine, store and
code layout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN: dict[tuple[str, int | None], str] = {
    ("cash-application", 1): "0a54848c2087d7979e43a6a4d6bd456796c6c83b7dce0d4413fc0edc24468d8b",
    ("cash-application", 2): "10a5b0708810115d5f39f017ac85bb3bce26062f86e77bf98c27364f442d6306",
    ("procure-to-pay", 1): "07581d2a20519b0aaa922cef660677be0db136269c8610e8b7707b7bd0af4082",
    ("procure-to-pay", 2): "9fde3dc0e97abab2c5240c4f86b0528a625a4b42cb1b5011fd81297fa4790ca4",
    ("month-end-close", 1): "1e1677519d38e26a67b0f4ebba9d0e7e6c7d7dfd7f994394f18653de951951cd",
    ("month-end-close", 2): "b235b8e48119578325a331ed158f41724504a1d2bf7b73eb8e767f1dcc3bfa39",
    # desk tasks run at their own seed
    ("ar-aging-workbook", None): "7c4953520f7764b575eaefc5ecbbc45300e8a927001a05c4ab39158391396c62",
    ("contractor-accrual", None):
        "b6b6adb540935852aa35b37f28a78920b7745ab39ba39cdd342d9545542f0c5f",
    ("demand-forecast", None): "7c4953520f7764b575eaefc5ecbbc45300e8a927001a05c4ab39158391396c62",
    ("payments-match", None): "e19b18dacf74ede24b67718c1e35f3824347df64de40c0d3bedc3fb1cee28e08",
    ("vendor-statement-recon", None):
        "30099fe1971469958a3590e04f565a398a998a8d88fec6e50a58cc54966b73ca",
}


@pytest.mark.parametrize(("name", "seed"), sorted(GOLDEN, key=str),
                         ids=lambda v: str(v))
def test_reference_final_hash_is_golden(name: str, seed: int | None, tmp_path: Path) -> None:
    out = tmp_path / "attempt"
    args = [sys.executable, "-m", "runs.cli", "run", name, "--agent", "reference", "--out",
            str(out), "--quiet"]
    if seed is not None:
        args += ["--seed", str(seed)]
    res = subprocess.run(args, capture_output=True, text=True, check=False)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["final_hash"] == GOLDEN[name, seed], res.stdout + res.stderr
