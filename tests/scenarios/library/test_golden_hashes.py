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
    ("procure-to-pay", 1): "74b4f03984d3165c7e95dfe2d5967276e516ce0b5346f4a7537cea8813caf66b",
    ("procure-to-pay", 2): "01d3e9f5e787f5df896d82aad3fc6c156dc25f8e28d512cc967393ccf93f0eef",
    ("month-end-close", 1): "e32d6fcaab2afa6add3c506e5cd8a4f63036cd4dc9387350c2ad1b388ec4ed97",
    ("month-end-close", 2): "9d6f4ed0eff04de2fe77ad44d242ebb54f49440096a630caf22e18d2e738520d",
    ("payment-run", 1): "ea65ef80c420389445dc990353f5e419093af300756addeb4f76f2acea326d1b",
    ("payment-run", 2): "6db246c61cef940de8f65f57589ff5e7aa8fee576482b7fab2808648ca8fb8ea",
    ("accruals-and-prepaids", 1):
        "cf7c39f4c94a87ee1f0791ae08ce800a2248154bd6de6a8ddbebdc4c302793d2",
    ("accruals-and-prepaids", 2):
        "c27f22053778cb9506caecef3e15159960021bebcee59a72fc9f27343003f05f",
    ("three-way-match", 1): "c8f0c4d52a4b64e410b5959e6769ffd7841b1e782eae8bc068c4ee3fe092a2c3",
    ("three-way-match", 2): "704072d1430f634dcd60e066a69740621b2096ece91453874314ce0d7fbb9222",
    ("fiscal-year", 1): "a44f94320729c744a0b7ce0ad6617e3a0e8e8a727cd9cb8f9d56a114c789201e",
    ("fiscal-year", 2): "0de6147012fae0c8869a2c00612e41af2190a6ce41c2dfa48e20449e76309949",
    ("fixed-assets", 1): "39d347b7d0ad1c01d19cd72239e522caac6949b4537a4773a11e6b73f3d85033",
    ("fixed-assets", 2): "b6212bffa5e631b9691bccb7755b5b2bd919c7d02ead711ac25d4c634146c9d7",
    ("payroll-and-sales-tax", 1):
        "c1d36a99e0f29b3a0c3d7a67735a406190baec791e169851fff7a58355434274",
    ("payroll-and-sales-tax", 2):
        "cb6a1a1b4816b3e03b24eb34aedea807748c4ea95813ff8ea47ef45bd87c0e96",
    ("collections", 1): "f481161dffa26ee18e9781fbcbcd85201fa3264c8842fb4cefdd554af154f4fe",
    ("collections", 2): "c5932aeafda99c370d9ca7640962392849886f52c56a69c733997d0e6651bce3",
    ("bank-reconciliation-multi", 1):
        "94dbc94aa9536da435cf219dd3f7a8483bd474d1f0b47e2808510e2b0f9056a4",
    ("bank-reconciliation-multi", 2):
        "3dc17a3fd18ad5bb90342623d2207e05a8937ad0b8caace1ab3d863bcb8a3fb7",
    # desk tasks run at their own seed
    ("ar-aging-workbook", None): "7c4953520f7764b575eaefc5ecbbc45300e8a927001a05c4ab39158391396c62",
    ("contractor-accrual", None):
        "48bc0b318ad07f8bff6b92f9fa10bced3a556ef3bd69f786bdf1cbb719749c05",
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
