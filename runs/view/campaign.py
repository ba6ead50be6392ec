"""What a campaign's page shows (``results/LABEL/`` from ``erpsim sweep``): pass@1 and
pass^k per system with bootstrap intervals, the scenario x seed grid of outcomes, the
check x system failure rates, resources against acceptance, durations.

The figures come from :mod:`runs.campaigns.metrics`; intervals resample scenario-seed
units with replacement (:func:`~runs.campaigns.metrics.bootstrap_differences` on one
system's per-unit counts), a drawn unit bringing all its repetitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from runs.campaigns.metrics import (
    DEFAULT_BOOTSTRAP_SEED,
    all_k_accepted,
    bootstrap_differences,
    by_system,
    group_by,
    is_accepted,
    unit_of,
)
from runs.campaigns.reading import Campaign, open_campaign

RESAMPLES = 5_000
"""Bootstrap resamples for the page's intervals."""


def attempt_page_path(scenario: str, system: str, seed: int, repetition: int) -> str:
    """An attempt's page, relative to the campaign's page (POSIX)."""
    return f"attempts/{scenario}/{system}/seed-{seed}/rep-{repetition}.html"


def bootstrap_interval(counts: list[int], sizes: list[int], *, seed: int = DEFAULT_BOOTSTRAP_SEED,
             resamples: int = RESAMPLES, level: float = 0.95) -> dict[str, float | None]:
    """``sum(counts) / sum(sizes)`` and its percentile interval over resampled units."""
    total = sum(sizes)
    if not counts or total == 0:
        return {"value": None, "low": None, "high": None}
    reps = bootstrap_differences(np.array(counts), np.array(sizes), resamples=resamples,
                                 seed=seed)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(reps, [tail, 100 - tail])
    return {"value": sum(counts) / total, "low": float(low), "high": float(high)}


@dataclass
class CampaignData:
    """Everything a campaign's page shows."""

    campaign: Campaign
    summaries: dict[str, Any] = field(default_factory=dict)
    rates: list[dict[str, Any]] = field(default_factory=list)
    grid: list[dict[str, Any]] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    failures: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    points: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def systems(self) -> list[str]:
        """The matrix's systems, sorted."""
        return sorted(self.campaign.matrix.systems)


def outcome_of(row: Any) -> str:
    """``accepted``, ``rejected``, ``grader_error`` or ``none`` (no verdict)."""
    if is_accepted(row):
        return "accepted"
    return str(row.verdict_status) if row.verdict_status else "none"


def read_campaign_view(results_dir: Path, label: str) -> CampaignData:
    """Read ``results_dir/label`` for its page (``BadInput`` for an unknown label or a bad
    folder; a bad attempt folder shows on that attempt's page)."""
    c = open_campaign(results_dir, label)
    data = CampaignData(campaign=c)
    k = c.matrix.k
    data.summaries = {s: v.to_json() for s, v in by_system(c.rows, k=k).items()}
    for system in data.systems:
        rows = [r for r in c.rows if r.system == system]
        units = group_by(rows, unit_of)
        acc = [sum(is_accepted(r) for r in us) for us in units.values()]
        sizes = [len(us) for us in units.values()]
        all_k = [int(all_k_accepted(us, k)) for us in units.values()]
        data.rates.append({"system": system, "units": len(units), "attempts": len(rows),
                           "pass_at_1": bootstrap_interval(acc, sizes),
                           "pass_hat_k": bootstrap_interval(all_k, [1] * len(all_k)), "k": k})
    by_key = {(r.scenario, int(r.seed), r.system, int(r.repetition)): r for r in c.rows}
    for scenario in sorted(c.matrix.scenarios):
        seeds = []
        for seed in sorted(c.matrix.seeds_of(scenario)):
            cells = []
            for system in data.systems:
                reps = []
                for rep in c.matrix.repetitions:
                    row = by_key.get((scenario, seed, system, rep))
                    if row is None:
                        reps.append({"rep": rep, "outcome": "missing", "href": None,
                                     "title": "no row in the results ledger"})
                        continue
                    failed = [ch.get("name") for ch in row.checks
                              if ch.get("required") and not ch.get("passed")]
                    title = (f"{system} seed {seed} rep {rep}: {outcome_of(row)}, "
                             f"{row.status}" + (f"; failed: {', '.join(map(str, failed))}"
                                                if failed else "")
                             + (f"; error: {row.error}" if row.error else ""))
                    reps.append({"rep": rep, "outcome": outcome_of(row), "title": title,
                                 "href": attempt_page_path(scenario, system, seed, rep)})
                cells.append({"system": system, "reps": reps})
            seeds.append({"seed": seed, "cells": cells})
        data.grid.append({"scenario": scenario, "seeds": seeds})
    names: list[str] = []
    for r in c.rows:
        for ch in r.checks:
            name = str(ch.get("name"))
            if name not in names:
                names.append(name)
            bad, seen = data.failures.get((name, r.system), (0, 0))
            data.failures[name, r.system] = (bad + (0 if ch.get("passed") else 1), seen + 1)
    data.checks = names
    for r in c.rows:
        tokens = (r.input_tokens + r.output_tokens
                  if r.input_tokens is not None and r.output_tokens is not None else None)
        data.points.append({"system": r.system, "accepted": is_accepted(r),
                            "cost_usd": r.cost_usd, "tokens": tokens,
                            "duration_s": r.duration_s, "scenario": r.scenario,
                            "seed": r.seed, "repetition": r.repetition})
        if r.status == "infrastructure_error" or r.grader_error:
            data.errors.append({"key": f"{r.scenario} seed {r.seed} {r.system} rep "
                                       f"{r.repetition}",
                                "href": attempt_page_path(r.scenario, r.system, int(r.seed),
                                                          int(r.repetition)),
                                "status": r.status, "text": r.error or r.grader_error})
    return data


def attempt_rows(data: CampaignData) -> list[tuple[str, Path, Any]]:
    """Each recorded attempt's page path, folder and row."""
    c = data.campaign
    return [(attempt_page_path(r.scenario, r.system, int(r.seed), int(r.repetition)),
             c.attempt_dir(r), r) for r in c.rows]


def reference_folder(data: CampaignData, row: Any) -> Path | None:
    """The campaign's own reference attempt on the row's scenario and seed, if it ran one."""
    c = data.campaign
    for r in c.rows:
        if (r.system == "reference" and r.scenario == row.scenario and r.seed == row.seed
                and (c.attempt_dir(r) / "summary.json").is_file()):
            return c.attempt_dir(r)
    return None
