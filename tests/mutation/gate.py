"""Mutation testing of the core, as a gate: every mutant is killed or listed as equivalent.

Runs mutmut (pinned in constraints.txt) over the modules of ``modules.toml``, each in a
fresh copy of the last commit (``--worktree``: of the working tree; mutmut writes its
``mutants/`` folder there, never in the project) with only that module's fast tests
selected, then compares the mutants that
survived with ``equivalent.toml``: a surviving mutant that is not listed there, with a
reason, fails the gate. Figures per module: mutants, killed, equivalent (listed),
survived.

    python tests/mutation/gate.py                 # every gated module (``make mutate``)
    python tests/mutation/gate.py erp/money.py    # some of them
    python tests/mutation/gate.py --changed       # the functions the last commit changed
                                                  # in them (make test: a few minutes)

Exit 0 when no unlisted mutant survived, 1 when one did, 2 on bad input or a failed run.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODULES_FILE = HERE / "modules.toml"
EQUIVALENT_FILE = HERE / "equivalent.toml"
PACKAGES = ("erp", "sim", "counterparties", "scenarios", "checks", "desk", "runs")
KILLED = {"killed", "timeout", "killed when applied"}  # a hang is caught by pytest-timeout
_NAME = re.compile(r"^(?P<module>[\w.]+?)\.x(?:ǁ(?P<cls>\w+)ǁ|_)(?P<fn>\w+?)__mutmut_(?P<n>\d+)$")


@dataclasses.dataclass(frozen=True)
class Module:
    """One gated module: its path, the fast tests that guard it, the functions mutated."""

    path: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()
    import_time: tuple[str, ...] = ()
    undecorate: bool = False
    pytest_args: tuple[str, ...] = ()
    """Extra pytest arguments for this module's runs (``-m "not postgres"``)."""

    @property
    def dotted(self) -> str:
        """``erp/money.py`` -> ``erp.money``."""
        return self.path.removesuffix(".py").replace("/", ".")

    only: tuple[str, ...] | None = None
    """Narrowed to these functions (``Class.method`` for methods): those a commit changed."""

    def patterns(self) -> list[str]:
        """mutmut name globs for the gated functions (all of the module's when none)."""
        if self.only is not None:
            return [f"{self.dotted}.{_mangled(f)}__mutmut_*" for f in self.only]
        if not self.functions:
            return [f"{self.dotted}.*"]
        return [f"{self.dotted}.x_{f}__mutmut_*" for f in self.functions]


def _mangled(function: str) -> str:
    """mutmut's name of a function (``x_f``) or a method (``xǁClassǁmethod``)."""
    cls, _, name = function.rpartition(".")
    return f"xǁ{cls}ǁ{name}" if cls else f"x_{name}"


def functions_touched(source: str, lines: set[int]) -> set[str]:
    """The top-level functions and methods of ``source`` with a line in ``lines``."""
    touched: set[str] = set()
    for node in ast.parse(source).body:
        defs: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            defs.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            defs += [(f"{node.name}.{x.name}", x) for x in node.body
                     if isinstance(x, ast.FunctionDef | ast.AsyncFunctionDef)]
        for name, d in defs:
            first = min([d.lineno, *(x.lineno for x in d.decorator_list)])
            if any(first <= n <= (d.end_lineno or d.lineno) for n in lines):
                touched.add(name)
    return touched


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One mutant mutmut made: its name, status and the line it changed."""

    name: str
    status: str
    function: str
    original: str
    mutated: str


@dataclasses.dataclass
class Figures:
    """What one module's run found."""

    module: str
    mutants: int = 0
    killed: int = 0
    equivalent: int = 0
    survivors: list[Mutant] = dataclasses.field(default_factory=list)
    seconds: float = 0.0


def load_modules(path: Path = MODULES_FILE) -> list[Module]:
    """The gated modules, checked: each path and test file exists."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    modules = []
    for n, entry in enumerate(data.get("module", [])):
        where = f"{path.name}: module[{n}]"
        unknown = set(entry) - {"path", "tests", "functions", "import_time", "undecorate",
                                "pytest_args"}
        if unknown:
            raise SystemExit(f"{where}: unknown keys {sorted(unknown)} (expected path, tests, "
                             "functions, import_time, undecorate, pytest_args)")
        m = Module(entry["path"], tuple(entry["tests"]), tuple(entry.get("functions", ())),
                   tuple(entry.get("import_time", ())), bool(entry.get("undecorate", False)),
                   tuple(entry.get("pytest_args", ())))
        for p in (m.path, *m.tests):
            if not (ROOT / p).is_file():
                raise SystemExit(f"{where}: {p} is not a file of the project")
        modules.append(m)
    return modules


def load_equivalent(path: Path = EQUIVALENT_FILE) -> dict[tuple[str, str, str, str], str]:
    """``(module, function, original line, mutated line) -> reason`` of the listed mutants."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    listed: dict[tuple[str, str, str, str], str] = {}
    for n, entry in enumerate(data.get("equivalent", [])):
        where = f"{path.name}: equivalent[{n}]"
        missing = {"module", "function", "original", "mutant", "reason"} - set(entry)
        if missing:
            raise SystemExit(f"{where}: missing {sorted(missing)}")
        if not str(entry["reason"]).strip():
            raise SystemExit(f"{where}: an equivalent mutant needs a reason")
        key = (entry["module"], entry["function"], entry["original"].strip(),
               entry["mutant"].strip())
        listed[key] = entry["reason"]
    return listed


def changed_modules(modules: list[Module], since: str = "HEAD~1") -> list[Module]:
    """The gated modules the last commit changed (``git diff HEAD~1 HEAD --name-only``), each
    narrowed to the gated functions whose lines it changed."""
    done = subprocess.run(["git", "diff", since, "HEAD", "--name-only"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"mutation gate: no previous commit to compare with ({done.stderr.strip()}); "
              "nothing to run", flush=True)
        return []
    changed = set(done.stdout.split())
    out = []
    for m in modules:
        if m.path not in changed:
            continue
        diff = subprocess.run(["git", "diff", "-U0", since, "HEAD", "--", m.path],
                              cwd=ROOT, capture_output=True, text=True, check=True).stdout
        lines: set[int] = set()
        for start, count in re.findall(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", diff, re.M):
            n = int(count) if count else 1
            lines |= set(range(int(start), int(start) + max(n, 1)))
        source = subprocess.run(["git", "show", f"HEAD:{m.path}"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
        touched = functions_touched(source, lines)
        if m.functions:
            touched &= set(m.functions)
        if touched:
            out.append(dataclasses.replace(m, only=tuple(sorted(touched))))
    return out


def _copy_tree(dest: Path, worktree: bool) -> None:
    """The last commit's files under ``dest`` (``worktree``: the working tree's instead,
    tracked and untracked, not ignored)."""
    if not worktree:
        archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        return
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("mutants/", ".mutation/")):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def undecorate(source: str) -> str:
    """``@d(x)\ndef f(...)`` at module level as ``def f(...)`` then ``f = d(x)(f)``.

    What decorator syntax means, spelt out; mutmut leaves decorated functions alone, so
    the gate rewrites a module's copy (never the project's file) this way first.
    """
    import libcst as cst

    module = cst.parse_module(source)
    body: list[cst.CSTNode] = []
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.decorators:
            body.append(stmt.with_changes(decorators=[]))
            expr: cst.BaseExpression = cst.Name(stmt.name.value)
            for d in reversed(stmt.decorators):
                expr = cst.Call(func=d.decorator, args=[cst.Arg(expr)])
            body.append(cst.SimpleStatementLine(
                [cst.Assign([cst.AssignTarget(cst.Name(stmt.name.value))], expr)]))
        else:
            body.append(stmt)
    return module.with_changes(body=body).code


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{x}"' for x in items) + "]"


def _configure(work: Path, m: Module) -> None:
    package = m.path.split("/")[0]
    others = [p for p in PACKAGES if p != package and (work / p).is_dir()]
    text = (work / "pyproject.toml").read_text(encoding="utf-8")
    text += (
        "\n[tool.mutmut]\n"
        f"source_paths = {_toml_list([package])}\n"
        f"only_mutate = {_toml_list([m.path])}\n"
        f"also_copy = {_toml_list(others)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(list(m.tests))}\n"
        f"pytest_add_cli_args = {_toml_list(['-p', 'no:cacheprovider', '-q', *m.pytest_args])}\n"
        "use_setproctitle = false\n"
    )
    (work / "pyproject.toml").write_text(text, encoding="utf-8")


def _diff_lines(diff: str) -> tuple[str, str]:
    """The removed and the added line of a mutant's diff (joined when several)."""
    old = [x[1:].strip() for x in diff.splitlines() if x.startswith("-") and
           not x.startswith("---")]
    new = [x[1:].strip() for x in diff.splitlines() if x.startswith("+") and
           not x.startswith("+++")]
    return " / ".join(old), " / ".join(new)


def _killed_when_applied(m: Module, work: Path, mutmut: str, name: str) -> bool:
    """Whether the module's tests fail with the mutant written into the source.

    For functions that run while the module is imported (a registering decorator):
    mutmut switches mutants on inside functions called by the tests, after the import,
    so it cannot tell these apart; written into the file, the mutant is imported.
    """
    source = work / m.path
    original = source.read_bytes()
    try:
        subprocess.run([mutmut, "apply", name], cwd=work, capture_output=True, check=True)
        if source.read_bytes() == original:
            raise RuntimeError(f"mutmut apply {name} changed nothing in {m.path}")
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p",
                               "no:cacheprovider", "-n", "0", *m.pytest_args, *m.tests],
                              cwd=work,
                              capture_output=True, text=True, check=False)
        return done.returncode in (1, 2)  # a test failed, or the import did
    finally:
        source.write_bytes(original)


def run_module(m: Module, base: Path, mutmut: str, children: int,
               worktree: bool = False) -> tuple[list[Mutant], str]:
    """mutmut over one module in a fresh copy; its mutants, and mutmut's output."""
    work = base / m.dotted
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _copy_tree(work, worktree)
    if m.undecorate:
        source = work / m.path
        source.write_text(undecorate(source.read_text(encoding="utf-8")), encoding="utf-8")
    _configure(work, m)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for name in ("PYTEST_ADDOPTS", "COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG"):
        env.pop(name, None)  # no coverage (nor other options) inside the mutation runs
    done = subprocess.run([mutmut, "run", "--max-children", str(children), *m.patterns()],
                          cwd=work, env=env, capture_output=True, text=True, check=False)
    log = done.stdout + done.stderr
    if m.only is not None and "nothing matches" in log:  # changed lines made no mutant
        return [], log
    results = subprocess.run([mutmut, "results", "--all", "true"], cwd=work, env=env,
                             capture_output=True, text=True, check=False)
    statuses = [line.strip().rpartition(": ")[2] for line in results.stdout.splitlines()]
    if done.returncode != 0 or not statuses or set(statuses) == {"not checked"}:
        raise RuntimeError(f"mutmut failed on {m.path} (exit {done.returncode}; the module's "
                           f"tests must pass unmutated):\n{log[-4000:]}")
    mutants = []
    for line in results.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        parsed = _NAME.match(name) if sep else None
        if parsed is None or parsed["module"] != m.dotted:
            continue
        if not any(fnmatch.fnmatch(name, p) for p in m.patterns()):
            continue
        fn = f"{parsed['cls']}.{parsed['fn']}" if parsed["cls"] else parsed["fn"]
        original = mutated = ""
        if status not in KILLED and fn in m.import_time and _killed_when_applied(m, work,
                                                                                 mutmut, name):
            status = "killed when applied"
        if status not in KILLED:
            shown = subprocess.run([mutmut, "show", name], cwd=work, env=env,
                                   capture_output=True, text=True, check=False).stdout
            original, mutated = _diff_lines(shown)
        mutants.append(Mutant(name, status, fn, original, mutated))
    if not mutants and m.only is None:
        raise RuntimeError(f"mutmut made no mutant of {m.path}'s gated functions:\n"
                           f"{results.stdout[-2000:]}{results.stderr[-2000:]}")
    return mutants, log


def judge(m: Module, mutants: list[Mutant],
          listed: dict[tuple[str, str, str, str], str]) -> tuple[Figures, set[tuple[str, ...]]]:
    """Count one module's mutants; the listed equivalents it used."""
    figures = Figures(m.path, mutants=len(mutants))
    used: set[tuple[str, ...]] = set()
    for x in mutants:
        key = (m.path, x.function, x.original, x.mutated)
        if x.status in KILLED:
            figures.killed += 1
        elif key in listed:
            figures.equivalent += 1
            used.add(key)
        else:
            figures.survivors.append(x)
    return figures, used


def stale_listed(listed: dict[tuple[str, str, str, str], str], used: set[tuple[str, ...]],
                 ran: dict[str, tuple[str, ...] | None]) -> list[tuple[str, str, str, str]]:
    """The listed equivalents of what ran that no survivor used (perhaps killed now).

    ``ran`` maps each module run to the functions it was narrowed to (``None``: all its
    gated functions); an entry for a function that was not mutated says nothing.
    """
    return [k for k in listed if k[0] in ran and k not in used
            and (ran[k[0]] is None or k[1] in (ran[k[0]] or ()))]


def main(argv: list[str] | None = None) -> int:
    """Run the gate; print figures per module and the unlisted survivors."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="gated modules to run (default: all of them)")
    parser.add_argument("--changed", action="store_true",
                        help="only the gated functions the last commit changed")
    parser.add_argument("--since", default="HEAD~1",
                        help="with --changed: the commit to compare HEAD with (default HEAD~1)")
    parser.add_argument("--children", type=int, default=2, help="parallel mutant runs")
    parser.add_argument("--worktree", action="store_true",
                        help="mutate the working tree's files (default: the last commit's)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the copies go (default: a temporary folder, removed)")
    args = parser.parse_args(argv)
    modules = load_modules()
    listed = load_equivalent()
    known = {m.path: m for m in modules}
    bad = [p for p in args.paths if p not in known]
    if bad:
        print(f"mutation gate: {bad} not gated (expected some of {sorted(known)})",
              file=sys.stderr)
        return 2
    chosen = [known[p] for p in args.paths] if args.paths else modules
    if args.changed:
        paths = {m.path for m in chosen}
        chosen = [m for m in changed_modules(modules, args.since) if m.path in paths]
        shown = "; ".join(f"{m.path}: {' '.join(m.only or ())}" for m in chosen) or "none"
        print(f"mutation gate: gated functions changed by the last commit: {shown}",
              flush=True)
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or "mutmut"
    base = args.workdir or Path(tempfile.mkdtemp(prefix="erpsim-mutation-"))
    all_figures: list[Figures] = []
    used: set[tuple[str, ...]] = set()
    try:
        for m in chosen:
            started = time.monotonic()
            print(f"mutation gate: {m.path} (tests: {' '.join(m.tests)})", flush=True)
            try:
                mutants, _ = run_module(m, base, mutmut, args.children, args.worktree)
            except RuntimeError as e:
                print(f"mutation gate: {e}", file=sys.stderr)
                return 2
            figures, u = judge(m, mutants, listed)
            figures.seconds = time.monotonic() - started
            used |= u
            all_figures.append(figures)
            for x in figures.survivors:
                print(f"  SURVIVED ({x.status}) {x.name} in {x.function}:\n"
                      f"    - {x.original}\n    + {x.mutated}", flush=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\n{'module':28} {'mutants':>8} {'killed':>7} {'equivalent':>11} {'survived':>9} "
          f"{'seconds':>8}")
    for f in all_figures:
        print(f"{f.module:28} {f.mutants:8} {f.killed:7} {f.equivalent:11} "
              f"{len(f.survivors):9} {f.seconds:8.0f}")
    stale = stale_listed(listed, used, {m.path: m.only for m in chosen
                                        if m.path in {f.module for f in all_figures}})
    for k in stale:
        print(f"note: listed as equivalent but not among the survivors (remove it from "
              f"{EQUIVALENT_FILE.name}?): {k[0]} {k[1]}: {k[2]!r} -> {k[3]!r}")
    survivors = sum(len(f.survivors) for f in all_figures)
    if survivors:
        print(f"mutation gate: FAILED: {survivors} surviving mutant(s) not listed as equivalent "
              f"in {EQUIVALENT_FILE.relative_to(ROOT)} (add a test that kills them, or list a "
              "truly equivalent one with its reason)")
        return 1
    print("mutation gate: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
