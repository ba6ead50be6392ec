"""Every command of the README's command table, run at tiny sizes: its exit code and a line
of its output. The table and the CLI must name the same commands: a command the table
names that the CLI lacks, or one the CLI has that the table lacks (every subcommand,
recursively), fails here; so does a command without a smoke case."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from runs.cli import main
from tests.conftest import IN_CI
from tests.runs.cli.small import small_cash_application

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
SECTION = "## The `erpsim` command"


def cli_commands(group: click.Group = main, prefix: tuple[str, ...] = ()) -> set[str]:
    """Every command of the CLI that runs something (groups' subcommands, recursively)."""
    found: set[str] = set()
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            found |= cli_commands(cmd, (*prefix, name))
        else:
            found.add(" ".join((*prefix, name)))
    return found


def readme_commands(text: str) -> set[str]:
    """The commands the README's command table names: each `erpsim ...` code span of a
    row's first cell, up to its first argument or option."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    found: set[str] = set()
    for line in text[start:end if end != -1 else None].splitlines():
        if not line.startswith("| `erpsim"):
            continue
        first_cell = re.split(r"(?<!\\)\|", line)[1]
        for span in re.findall(r"`(erpsim [^`]*)`", first_cell):
            words = []
            for w in span.split()[1:]:
                if not re.fullmatch(r"[a-z][a-z-]*", w):
                    break
                words.append(w)
            found.add(" ".join(words))
    return found


def test_the_readme_table_and_the_cli_name_the_same_commands() -> None:
    table = readme_commands(README.read_text(encoding="utf-8"))
    cli = cli_commands()
    assert len(cli) >= 20 and {"run", "ledger verify", "export beancount"} <= cli
    assert sorted(table - cli) == [], "the README's table names commands the CLI lacks"
    assert sorted(cli - table) == [], "the CLI has commands the README's table lacks"


def test_the_readme_parser_sees_a_missing_and_an_extra_row() -> None:
    text = README.read_text(encoding="utf-8")
    row = next(x for x in text.splitlines() if x.startswith("| `erpsim demo"))
    assert "demo" not in readme_commands(text.replace(row + "\n", ""))
    extra = text.replace(row, row + "\n| `erpsim frobnicate FILE` | does nothing |")
    assert readme_commands(extra) - cli_commands() == {"frobnicate"}


@dataclass(frozen=True)
class Case:
    """One command line (placeholders in braces), its exit code and a line it prints."""

    command: str
    args: tuple[str, ...]
    code: int
    line: str


CASES = [
    Case("run", ("run", "{sc}", "--out", "{tmp}/run", "--quiet"), 0, "verdict: accepted"),
    Case("check", ("check", "{attempt}"), 0, "verdict: accepted"),
    Case("reconcile", ("reconcile", "{attempt}", "--csv", "{tmp}/rec.csv"), 0,
         "reconciliation: ties"),
    Case("validate", ("validate", "{sc}", "--seeds", "0", "--parallel", "1"), 0,
         "validation: passed"),
    Case("validate", ("validate", "{sc}", "--mutants", "--per-operator", "1"), 0,
         "mutants_caught_share:"),
    Case("sweep", ("sweep", "{sc}", "--seeds", "0", "--systems", "reference,null", "--label",
                   "fresh", "--results-dir", "{tmp}/results", "--quiet"), 0, "results: "),
    Case("freeze", ("freeze", "pilot", "{sc}", "--seeds", "0", "--out", "{tmp}/pilot.json"), 0,
         "manifest_sha256: "),
    Case("report", ("report", "smoke", "--results-dir", "{results}"), 0,
         "campaign smoke: 1 scenario(s) x 1 seed(s) x 2 system(s)"),
    Case("compare", ("compare", "smoke", "--a", "reference", "--b", "null", "--results-dir",
                     "{results}", "--resamples", "200"), 0,
         "difference (reference - null): +100.00 points"),
    Case("rescore", ("rescore", "smoke", "--scorer", "current", "--results-dir",
                     "{results}"), 0, "scorer current (current scenario definitions)"),
    Case("view", ("view", "{attempt}", "--reference", "{attempt}", "--out",
                  "{tmp}/view.html"), 0, "view: {tmp}/view.html"),
    Case("desk list", ("desk", "list"), 0, "payments-match"),
    Case("desk validate", ("desk", "validate", "payments-match"), 0, "1/1 tasks pass"),
    Case("desk generate", ("desk", "generate", "{task}"), 0, "payments-match: "),
    Case("bench sweep", ("bench", "sweep", "--scenario", "{sc}", "--attempts", "2"), 0,
         "sweep_parallel_speedup: "),
    Case("bench turn", ("bench", "turn"), 0, "turns: 20"),  # the default --turns 20
    Case("bench engine", ("bench", "engine", "--scenario", "{sc}", "--customers", "12",
                          "--vendors", "0"), 0, "engine_events_per_s: "),
    Case("bench view", ("bench", "view", "--attempt", "{attempt}", "--loads", "1"), 0,
         "view_first_render_ms: "),
    Case("bench ledger", ("bench", "ledger", "--events", "1000", "--single", "100"), 0,
         "single_command_txn_per_s: "),
    Case("demo", ("demo", "--out", "{tmp}/demo.db", "--days", "2"), 0, "head hash: "),
    Case("export beancount", ("export", "beancount", "{attempt}", "--out",
                              "{tmp}/books.beancount"), 0, "beancount: {tmp}/books.beancount"),
    Case("export parquet", ("export", "parquet", "{attempt}", "--out", "{tmp}/pq"), 0,
         "parquet: events "),
    Case("ledger verify", ("ledger", "verify", "{attempt}"), 0, "ok: "),
    # writes the attempt's read tables again, the same rows: the other cases read them alike
    Case("ledger rebuild", ("ledger", "rebuild", "{attempt}"), 0,
         "ok: 5 read tables rebuilt from "),
    Case("ledger trial-balance", ("ledger", "trial-balance", "{attempt}"), 0, "Total"),
    Case("ledger events", ("ledger", "events", "{attempt}", "--limit", "3", "--format",
                           "jsonl"), 0, '"type":"company_set_up"'),
]


def test_every_command_has_a_smoke_case() -> None:
    assert {c.command for c in CASES} == cli_commands()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 4-day cash-application (12 customers), an attempt of it, a campaign of it
    (reference and null, seed 0) and a copy of a desk task to regenerate."""
    from runs.attempt import run_attempt
    from runs.campaigns.plan import plan_campaign
    from runs.campaigns.run import run_campaign
    from runs.campaigns.systems import resolve_systems
    from scenarios.loader import load_scenario

    root = tmp_path_factory.mktemp("smoke")
    sc = small_cash_application(root / "small")
    attempt = run_attempt(load_scenario(sc), 1, "reference", root / "attempt").out
    plan = plan_campaign("smoke", scenarios=[str(sc)], seeds=[0],
                         systems=resolve_systems(["reference", "null"]), repetitions=1)
    run_campaign(plan, root / "results" / "smoke", check_first=False)
    task = root / "task" / "payments-match"
    shutil.copytree(ROOT / "desk" / "tasks" / "payments-match", task)
    return {"sc": sc, "attempt": attempt, "results": root / "results", "task": task}


def _fill(text: str, values: dict[str, Path]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", str(value))
    return text


@pytest.mark.parametrize("case", CASES, ids=[" ".join(c.args[:3]) for c in CASES])
def test_command_runs(case: Case, world: dict[str, Path], tmp_path: Path) -> None:
    if case.command == "bench view":
        from runs.view.bench import CHROMIUM

        if not Path(CHROMIUM).is_file():
            msg = f"{CHROMIUM} is missing (apt-get install chromium; .ci/setup installs it)"
            if IN_CI:
                pytest.fail(msg + " (CI=true: bench view must run)", pytrace=False)
            pytest.skip(msg)
    values = {**world, "tmp": tmp_path}
    args = [_fill(a, values) for a in case.args]
    started = time.monotonic()
    if case.command == "bench view":
        # In a process of its own: Playwright's sync API refuses to start in a process
        # whose browser tests (tests/runs/view's session fixture) already run its loop.
        proc = subprocess.run([sys.executable, "-m", "runs.cli", *args], capture_output=True,
                              text=True, timeout=600, cwd=ROOT)
        code, output, raised = proc.returncode, proc.stdout + proc.stderr, None
    else:
        res = CliRunner().invoke(main, args)
        code, output, raised = res.exit_code, res.output, res.exception
    took = time.monotonic() - started
    shown = f"erpsim {' '.join(args)} -> exit {code} in {took:.1f} s"
    print(shown)
    assert raised is None or isinstance(raised, SystemExit), (shown, output)
    assert code == case.code, (shown, output)
    assert _fill(case.line, values) in output, (shown, output)
    assert "Traceback" not in output


def test_the_installed_entry_point_runs_in_its_own_process(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("erpsim")
    assert exe.is_file(), f"{exe}: the erpsim entry point is not installed"
    env = {**os.environ, "COLUMNS": "200"}
    top = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60,
                         env=env, cwd=tmp_path)
    assert top.returncode == 0, top.stderr
    listed = set(re.findall(r"^  ([a-z][a-z-]*)\s", top.stdout, flags=re.M))
    assert listed == {c.split()[0] for c in cli_commands()}
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                             timeout=60, env=env, cwd=tmp_path)
    assert version.returncode == 0 and "version" in version.stdout
    demo = subprocess.run([str(exe), "demo", "--out", str(tmp_path / "d.db"), "--days", "2"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert "head hash: " in demo.stdout
