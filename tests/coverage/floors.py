"""Per-package coverage floors: the suite must keep each package at or above its floor.

Reads the combined ``.coverage`` that ``make test`` writes (pytest-cov, subprocesses
included: see ``.coveragerc``), prints each package's line coverage and a few files the
floors file names (``watch``), and exits 1 when a package is below its floor in
``floors.toml``.

    python tests/coverage/floors.py [--data .coverage]
"""

from __future__ import annotations

import argparse
import io
import sys
import tomllib
from pathlib import Path

import coverage

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FLOORS_FILE = HERE / "floors.toml"


def package_percent(cov: coverage.Coverage, pattern: str) -> tuple[float, int, int]:
    """``(percent, statements, missed)`` over the files matching ``pattern``."""
    out = io.StringIO()
    try:
        percent = cov.report(include=[str(ROOT / pattern)], file=out, skip_empty=True)
    except coverage.exceptions.NoDataError:
        return 0.0, 0, 0
    total = [x for x in out.getvalue().splitlines() if x.startswith("TOTAL")]
    statements = missed = 0
    if total:
        parts = total[0].split()
        statements, missed = int(parts[1]), int(parts[2])
    elif out.getvalue().strip():  # one file: no TOTAL line, its own row instead
        parts = out.getvalue().strip().splitlines()[-1].split()
        statements, missed = int(parts[1]), int(parts[2])
    return percent, statements, missed


def main(argv: list[str] | None = None) -> int:
    """Print coverage per package; 1 when one is below its floor, 2 without data."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / ".coverage",
                        help="the combined coverage data file (default: .coverage)")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"coverage floors: no coverage data at {args.data} (run the suite with --cov)",
              file=sys.stderr)
        return 2
    config = tomllib.loads(FLOORS_FILE.read_text(encoding="utf-8"))
    floors: dict[str, float] = config["floors"]
    cov = coverage.Coverage(data_file=str(args.data), config_file=str(ROOT / ".coveragerc"))
    cov.load()
    below = []
    print(f"\n{'package':36} {'statements':>10} {'missed':>7} {'cover':>7} {'floor':>6}")
    for package, floor in floors.items():
        percent, statements, missed = package_percent(cov, f"{package}/*")
        mark = "" if percent >= floor else "  BELOW THE FLOOR"
        print(f"{package:36} {statements:10} {missed:7} {percent:6.1f}% {floor:5.1f}%{mark}")
        if percent < floor:
            below.append(f"{package} {percent:.1f}% < {floor:.1f}%")
    for path in config.get("watch", []):
        percent, statements, missed = package_percent(cov, path)
        print(f"{path:36} {statements:10} {missed:7} {percent:6.1f}%")
    percent, statements, missed = package_percent(cov, "*")
    print(f"{'all packages':36} {statements:10} {missed:7} {percent:6.1f}%")
    if below:
        print(f"coverage floors: FAILED: {'; '.join(below)} (add tests, or lower a floor in "
              f"{FLOORS_FILE.relative_to(ROOT)} only with a reason in the commit)")
        return 1
    print("coverage floors: every package at or above its floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
