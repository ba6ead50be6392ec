"""``erpsim bench sweep``: attempts per minute of one campaign run with 1 and 2 workers."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runs.campaigns.plan import Plan
from runs.campaigns.run import run_campaign


@dataclass(frozen=True)
class SweepBench:
    """Attempts per minute at each ``--parallel``, and the speedup of 2 over 1."""

    per_min: dict[int, float]

    def lines(self) -> list[str]:
        """``name: value`` lines: per-minute rates and ``sweep_parallel_speedup``."""
        return [f"sweep_attempts_per_min_p1: {self.per_min[1]:.1f}",
                f"sweep_attempts_per_min_p2: {self.per_min[2]:.1f}",
                f"sweep_parallel_speedup: {self.per_min[2] / self.per_min[1]:.3f}"]


def run_sweep_bench(plan: Plan, *, command: list[str],
                    progress: Callable[[str], None] = lambda _m: None) -> SweepBench:
    """Run ``plan`` with ``--parallel 1`` and ``2``, each into a temporary folder (removed)."""
    rates: dict[int, float] = {}
    for parallel in (1, 2):
        root = Path(tempfile.mkdtemp(prefix=f"erpsim-bench-sweep-p{parallel}-"))
        try:
            t0 = time.perf_counter()
            run = run_campaign(plan, root / "bench-sweep", parallel=parallel, command=command)
            wall = time.perf_counter() - t0
            accepted = sum(r.accepted for r in run.recorded)
            progress(f"--parallel {parallel}: {len(run.recorded)} attempts in {wall:.1f} s "
                     f"({run.wall_s:.1f} s running), {accepted} accepted")
            rates[parallel] = 60.0 * len(run.recorded) / wall
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return SweepBench(per_min=rates)
