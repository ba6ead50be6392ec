"""A small cash-application for the command line's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def small_cash_application(folder: Path, keep_checks: set[str] | None = None) -> Path:
    """Copy cash-application into ``folder`` as a 4-day scenario of 12 customers without
    injections, with only the named checks (all of them with None); its scenario.yaml."""
    shutil.copytree(ROOT / "scenarios" / "library" / "cash-application", folder)
    spec = yaml.safe_load((folder / "scenario.yaml").read_text(encoding="utf-8"))
    spec["calendar"] = {"start": "2026-03-02", "business_days": 4, "holidays": []}
    spec["company"]["opening"]["ar_open_invoices"] = 20
    spec["population"]["customers"]["count"] = 12
    spec["injections"] = []
    if keep_checks is not None:
        spec["checks"] = [c for c in spec["checks"] if c["name"] in keep_checks]
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path
