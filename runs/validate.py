"""Validation of the instrument: controls over seeds, and mutants of the reference agent.

- :func:`validate_seeds`: ``reference`` and ``oracle`` must be accepted and ``null``
  rejected on every seed (positive and negative controls).
- :func:`validate_mutants`: the reference agent's commands are replayed with one
  mutation at a time (drop a command, submit it twice, aim it at another document of
  the same party or of another party, move an amount by one cent, submit a command the
  agent deliberately declined); every mutant the checks still accept is a blind spot of
  the check suite. A mutant whose log ends exactly like the reference's (the books
  refused the mutated command, so nothing changed) is *equivalent*: no check could tell
  it apart, so it is reported apart and not counted.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from erp import queries as q
from erp.commands import Command
from runs.attempt import AttemptResult, Recording, run_attempt
from runs.errors import ValidationAborted
from scenarios.loader import LoadedScenario, load_scenario
from scenarios.turn import TurnContext
from sim.rng import text_random

CONTROLS = ("reference", "oracle", "null")
EXPECTED = {"reference": True, "oracle": True, "null": False}

OPERATORS = ("drop", "twice", "same_party_doc", "other_party_doc", "cent_up", "cent_down",
             "submit_declined")

_DOC_FIELDS = (("invoice_id", "invoice"), ("bill_id", "bill"), ("credit_id", "vendor_credit"),
               ("receipt_id", "receipt"))
_PARTY_FIELDS = ("customer_id", "vendor_id")


MAX_SEEDS = 10_000
"""The most seeds one ``--seeds`` may name (a campaign's matrix must fit in memory)."""


def parse_seeds(text: str) -> list[int]:
    """``0-19``, ``3``, ``1,4,7`` or ``0-4,10`` into a sorted list of distinct seeds.

    At most :data:`MAX_SEEDS` seeds; the size of a range is checked before it is made.
    """
    seeds: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            if sep:
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError
                if b - a + 1 + len(seeds) > MAX_SEEDS:
                    raise OverflowError(f"--seeds: {text!r} names more than {MAX_SEEDS:,} "
                                        f"seeds ({part} alone is {b - a + 1:,}; expected at "
                                        f"most {MAX_SEEDS:,}: split the campaign into labels)")
                seeds.update(range(a, b + 1))
            else:
                seeds.add(int(part))
        except OverflowError as e:
            raise ValueError(str(e)) from None
        except ValueError:
            raise ValueError(f"--seeds: {part!r} is not a seed or a range "
                             "(expected e.g. 0-19, 7 or 1,4,7)") from None
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"--seeds: {text!r} names more than {MAX_SEEDS:,} seeds "
                             "(split the campaign into labels)")
    if not seeds:
        raise ValueError("--seeds: no seed given (expected e.g. 0-19)")
    return sorted(seeds)


# --- controls over seeds ----------------------------------------------------------------


@dataclass(frozen=True)
class ControlOutcome:
    """One control attempt: the agent, the seed, its verdict and whether that was expected."""

    seed: int
    agent: str
    status: str
    failed: tuple[str, ...]
    grader_errors: tuple[str, ...]

    @property
    def as_expected(self) -> bool:
        """Reference/oracle accepted, null rejected (a grader error is never as expected)."""
        if self.status == "grader_error":
            return False
        return (self.status == "accepted") == EXPECTED[self.agent]


def _control(args: tuple[str, int, str, str]) -> ControlOutcome:
    path, seed, agent, out = args
    loaded = load_scenario(path)
    res = run_attempt(loaded, seed, agent, Path(out), replace=True)
    v = res.summary["verdict"]
    return ControlOutcome(seed, agent, v["status"], tuple(v["failed"]),
                          tuple(v["grader_errors"]))


def validate_seeds(loaded: LoadedScenario, seeds: list[int], work: Path, *,
                   parallel: int = 1,
                   on_done: Callable[[ControlOutcome], None] | None = None
                   ) -> list[ControlOutcome]:
    """Run the three controls on every seed; attempts go under ``work/seed-N/AGENT``."""
    jobs = [(str(loaded.path), seed, agent, str(work / f"seed-{seed}" / agent))
            for seed in seeds for agent in CONTROLS]
    results: list[ControlOutcome] = []
    for outcome in _map(_control, jobs, parallel):
        results.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return sorted(results, key=lambda o: (o.seed, CONTROLS.index(o.agent)))


def _map(fn: Callable[[Any], Any], jobs: list[Any], parallel: int) -> Iterator[Any]:
    if parallel <= 1:
        yield from map(fn, jobs)
        return
    with ProcessPoolExecutor(max_workers=parallel) as pool:
        yield from pool.map(fn, jobs)


# --- mutants -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """One change to the reference's recorded commands."""

    op: str
    turn: int
    index: int
    command: str

    def describe(self) -> str:
        """``cent_up turn 3 #12 ApplyReceipt``."""
        return f"{self.op} turn {self.turn} #{self.index} {self.command}"


class ReplayAgent:
    """Replays recorded commands per turn (with at most one mutation) and the turn's files."""

    name = "replay"

    def __init__(self, recording: Recording, outputs: Path, mutation: Mutation | None) -> None:
        self.recording = recording
        self.outputs = outputs
        self.mutation = mutation
        self.applied: str | None = None

    def run_turn(self, desk: TurnContext) -> None:
        """Submit the turn's commands (one mutated) and leave the turn's recorded files."""
        m = self.mutation
        if m is not None and m.op == "submit_declined" and m.turn == desk.turn:
            cmd, why = self.recording.declined[desk.turn][m.index]
            self.applied = f"submitted a declined {type(cmd).__name__} ({why})"
            desk.execute(cmd)
        for i, cmd in enumerate(self.recording.commands.get(desk.turn, [])):
            if m is None or m.op == "submit_declined" or m.turn != desk.turn or m.index != i:
                desk.execute(cmd)
                continue
            for mutated in self._mutate(cmd, desk):
                desk.execute(mutated)
        src = self.outputs / f"{desk.turn:02d}" / "outputs"
        if src.is_dir():
            shutil.copytree(src, desk.output_dir, dirs_exist_ok=True)

    def _mutate(self, cmd: Command, desk: TurnContext) -> list[Command]:
        op = self.mutation.op if self.mutation else ""
        if op == "drop":
            self.applied = "dropped"
            return []
        if op == "twice":
            self.applied = "submitted twice"
            return [cmd, cmd]
        if op in ("cent_up", "cent_down"):
            delta = 1 if op == "cent_up" else -1
            self.applied = f"amount {cmd.amount} -> {cmd.amount + delta}"  # type: ignore[attr-defined]
            return [cmd.model_copy(update={"amount": cmd.amount + delta})]  # type: ignore[attr-defined]
        if op in ("same_party_doc", "other_party_doc"):
            other = _retarget(cmd, desk, same=op == "same_party_doc")
            if other is None:
                self.applied = "no other document to aim at: submitted unchanged"
                return [cmd]
            field, value = other
            self.applied = f"{field} {getattr(cmd, field)} -> {value}"
            return [cmd.model_copy(update={field: value})]
        raise ValueError(f"unknown mutation {op!r}")


def _retarget(cmd: Command, desk: TurnContext, *, same: bool) -> tuple[str, str] | None:
    """Another document (or party) for a command, chosen deterministically from the books."""
    for field, kind in _DOC_FIELDS:
        doc_id = getattr(cmd, field, None)
        if doc_id is None:
            continue
        doc = q.document(desk.store, kind, doc_id)
        if doc is None:
            continue
        candidates = [d for d in q.documents(desk.store, kind)
                      if d["doc_id"] != doc_id and d["open_amount"] > 0
                      and (d["party"] == doc["party"]) == same]
        if candidates:
            return field, candidates[0]["doc_id"]
    if same:
        return None
    for field in _PARTY_FIELDS:
        party = getattr(cmd, field, None)
        if party is None:
            continue
        kind = "customer" if field == "customer_id" else "vendor"
        others = sorted({d["party"] for d in q.documents(desk.store)
                         if d["party"] and d["party"] != party
                         and d["kind"] in (("invoice",) if kind == "customer" else ("bill",))})
        if others:
            return field, others[0]
    return None


def _candidates(recording: Recording) -> dict[str, list[Mutation]]:
    by_op: dict[str, list[Mutation]] = {op: [] for op in OPERATORS}
    for turn in sorted(recording.commands):
        for i, cmd in enumerate(recording.commands[turn]):
            name = type(cmd).__name__
            by_op["drop"].append(Mutation("drop", turn, i, name))
            by_op["twice"].append(Mutation("twice", turn, i, name))
            if isinstance(getattr(cmd, "amount", None), int):
                by_op["cent_up"].append(Mutation("cent_up", turn, i, name))
                if cmd.amount > 1:  # type: ignore[attr-defined]
                    by_op["cent_down"].append(Mutation("cent_down", turn, i, name))
            if any(getattr(cmd, f, None) for f, _ in _DOC_FIELDS):
                by_op["same_party_doc"].append(Mutation("same_party_doc", turn, i, name))
            if any(getattr(cmd, f, None) for f, _ in _DOC_FIELDS) or any(
                    getattr(cmd, f, None) for f in _PARTY_FIELDS):
                by_op["other_party_doc"].append(Mutation("other_party_doc", turn, i, name))
    for turn in sorted(recording.declined):
        for j, (cmd, _) in enumerate(recording.declined[turn]):
            by_op["submit_declined"].append(
                Mutation("submit_declined", turn, j, type(cmd).__name__))
    return by_op


def sample_mutations(recording: Recording, *, per_operator: int, seed: int) -> list[Mutation]:
    """Up to ``per_operator`` mutations of each operator, drawn by a sha256-derived seed."""
    out: list[Mutation] = []
    for op, cands in _candidates(recording).items():
        rng = text_random(f"mutants:{seed}:{op}")
        pick = cands if len(cands) <= per_operator else rng.sample(cands, per_operator)
        out.extend(sorted(pick, key=lambda m: (m.turn, m.index)))
    return out


@dataclass(frozen=True)
class MutantOutcome:
    """What became of one mutant."""

    mutation: Mutation
    change: str
    status: str
    equivalent: bool
    failed: tuple[str, ...]

    @property
    def caught(self) -> bool:
        """The checks rejected it (or could not grade it)."""
        return self.status != "accepted"


@dataclass
class MutantReport:
    """The reference run and every mutant's outcome."""

    reference: AttemptResult
    outcomes: list[MutantOutcome]
    candidates: int

    @property
    def counted(self) -> list[MutantOutcome]:
        """Mutants that changed the log (equivalent ones cannot be caught)."""
        return [o for o in self.outcomes if not o.equivalent]

    @property
    def survivors(self) -> list[MutantOutcome]:
        """Counted mutants the checks still accept: the suite's blind spots."""
        return [o for o in self.counted if not o.caught]


def _run_mutant(loaded: LoadedScenario, seed: int, recording: Recording, ref: AttemptResult,
                m: Mutation, work: Path) -> MutantOutcome:
    agent = ReplayAgent(recording, ref.out / "turns", m)
    out = work / f"{m.op}-t{m.turn}-{m.index}"
    res = run_attempt(loaded, seed, "replay", out, agent=agent, replace=True)
    v = res.summary["verdict"]
    outcome = MutantOutcome(m, agent.applied or "not reached", v["status"],
                            res.final_hash == ref.final_hash, tuple(v["failed"]))
    shutil.rmtree(out, ignore_errors=True)
    return outcome


def validate_mutants(loaded: LoadedScenario, seed: int, work: Path | None = None, *,
                     per_operator: int = 6,
                     on_done: Callable[[MutantOutcome], None] | None = None) -> MutantReport:
    """Record the reference agent, check an unmutated replay reproduces it, run the mutants.

    Raises :class:`ValidationAborted` when the reference is not accepted or the replay diverges
    (the mutants would then measure nothing).
    """
    own = work is None
    root = Path(tempfile.mkdtemp(prefix="erpsim-mutants-")) if work is None else work
    try:
        recording = Recording()
        ref = run_attempt(loaded, seed, "reference", root / "reference", replace=True,
                          record=recording)
        if ref.summary["verdict"]["status"] != "accepted":
            raise ValidationAborted(f"the reference agent is not accepted on seed {seed} (failed: "
                               f"{', '.join(ref.summary['verdict']['failed'])}); mutants "
                               "would measure nothing")
        same = run_attempt(loaded, seed, "replay", root / "replay", replace=True,
                           agent=ReplayAgent(recording, ref.out / "turns", None))
        if same.final_hash != ref.final_hash:
            raise ValidationAborted("replaying the reference's commands does not reproduce its log "
                               f"({same.final_hash[:12]} != {ref.final_hash[:12]})")
        mutations = sample_mutations(recording, per_operator=per_operator, seed=seed)
        outcomes = []
        for m in mutations:
            outcome = _run_mutant(loaded, seed, recording, ref, m, root / "mutants")
            outcomes.append(outcome)
            if on_done is not None:
                on_done(outcome)
        total = sum(len(v) for v in _candidates(recording).values())
        return MutantReport(ref, outcomes, total)
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
