"""Campaign metrics: pure functions over attempt rows (the results ledger's ``AttemptRow``).

Nothing here reads a file: every function takes rows (any objects with the ledger
row's attributes, see :class:`AttemptLike`) and returns figures, so the definitions can
be checked against hand-computed fixtures.

Units and estimands (one configured system at a time):

- A *unit* is a ``(scenario, seed)`` pair: the fixed inputs an attempt is run on. Its
  repetitions re-run a system on the same inputs (repeatability, not generalization).
- ``pass@1`` = accepted attempts / all recorded attempts. Timeouts, crashes,
  infrastructure errors and grader errors stay in the denominator; only an attempt
  whose verdict is ``accepted`` counts (a grader error is ungraded, never accepted).
- ``pass^k`` = units whose k repetitions are *all* accepted / units. The observed joint
  outcome; never ``pass@1 ** k``. A unit counts only when it has at least k recorded
  repetitions and every one of them was accepted: fewer than k cannot count, and a
  repetition beyond k that was not accepted (a row outside the matrix) is not outvoted
  by k accepted ones.
- at-least-once = units with at least one accepted repetition / units (hindsight).
- mean check fraction = the mean over attempts (each weighs the same) of the attempt's
  ``required_passed / required_total``; an attempt with no required check result counts
  1 if accepted (a contract with no required check) and 0 otherwise (an infrastructure
  error, an attempt whose every check raised). A check that raised has no result, so a
  grader-error attempt's fraction is over the checks that answered (the attempt itself
  is never accepted).
- pooled check rate = all passed required checks / all required check results (weighs
  attempts by their number of checks).
- cost per accepted attempt = total cost / accepted attempts; unknown (``None``) when
  any attempt's cost is unknown or none was accepted (:func:`resources` also gives the
  known cost / accepted beside the count of attempts with unknown usage).
- median and p90 duration by nearest rank: the ``ceil(p * n)``-th smallest of the known
  durations.

Uncertainty: :func:`paired_bootstrap` resamples units with replacement, keeping every
repetition of both systems for each drawn unit, and reports the percentile interval of
the difference in pass@1.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from runs.errors import IncompleteMatrix, UnpairedSystems
from sim.rng import seeded_generator, text_seed

STATUSES = ("completed", "timeout", "crashed", "infrastructure_error")
"""Execution statuses an attempt row can have."""

VERDICT_STATUSES = ("accepted", "rejected", "grader_error")
"""Verdict statuses (``None``: no verdict, e.g. an infrastructure error)."""

DEFAULT_RESAMPLES = 20_000
"""Bootstrap resamples unless told otherwise."""


def seed_from_text(text: str) -> int:
    """A 32-bit seed derived from ``text`` by sha256 (stable across platforms and runs)."""
    return text_seed(text, 32)


DEFAULT_BOOTSTRAP_SEED = seed_from_text("erpsim paired bootstrap")
"""The bootstrap's seed when none is given: a fixed number, printed with every result."""

Unit = tuple[str, int]
"""A scenario-seed unit: ``(scenario, seed)``."""

AttemptKey = tuple[str, int, str, int]
"""One cell of a campaign matrix: ``(scenario, seed, system, repetition)``."""


class AttemptLike(Protocol):
    """What the metrics read from a results-ledger row (``runs.campaigns.ledger.AttemptRow``)."""

    @property
    def scenario(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def system(self) -> str: ...
    @property
    def repetition(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def verdict_status(self) -> str | None: ...
    @property
    def accepted(self) -> bool | None: ...
    @property
    def required_passed(self) -> int | None: ...
    @property
    def required_total(self) -> int | None: ...
    @property
    def duration_s(self) -> float | None: ...
    @property
    def cost_usd(self) -> float | None: ...


class _Sortable(Protocol):
    """A key ``sorted`` can order."""

    def __lt__(self, other: Any, /) -> bool: ...


R = TypeVar("R")
K = TypeVar("K", bound=_Sortable)


# --- per-attempt quantities -------------------------------------------------------------

def is_accepted(row: AttemptLike) -> bool:
    """Accepted by its verdict: the verdict's status is ``accepted`` and the row says so.
    A grader error (ungraded), a rejection or no verdict (an infrastructure error) is
    never accepted, whatever the row's ``accepted`` flag says."""
    return row.accepted is True and row.verdict_status == "accepted"


def all_k_accepted(unit: Sequence[AttemptLike], k: int) -> bool:
    """Whether a unit's attempts count toward pass^k: at least ``k`` (> 0) recorded
    repetitions, every one of them accepted (the observed joint outcome)."""
    return k > 0 and len(unit) >= k and all(is_accepted(r) for r in unit)


def check_fraction(row: AttemptLike) -> float:
    """The attempt's share of required checks passed (see the module for no-check rows)."""
    total = row.required_total or 0
    if total <= 0:
        return 1.0 if is_accepted(row) else 0.0
    return (row.required_passed or 0) / total


def unit_of(row: AttemptLike) -> Unit:
    """The scenario-seed unit of an attempt."""
    return (row.scenario, int(row.seed))


def key_of(row: AttemptLike) -> AttemptKey:
    """The attempt's matrix cell."""
    return (row.scenario, int(row.seed), row.system, int(row.repetition))


def group_by(rows: Iterable[R], key: Callable[[R], K]) -> dict[K, list[R]]:
    """Rows grouped by ``key``, groups in sorted key order, rows in their given order."""
    groups: dict[K, list[R]] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    return {k: groups[k] for k in sorted(groups)}


def nearest_rank(values: Iterable[float], p: float) -> float | None:
    """The nearest-rank percentile: the ``ceil(p * n)``-th smallest value (rank >= 1).

    ``p`` is a fraction in (0, 1]; it is read as its decimal (0.9 is exactly 9/10, so
    ``ceil(0.9 * 10)`` is 9, not 10). ``None`` for no values.
    """
    from fractions import Fraction

    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1], got {p}")
    data = sorted(values)
    if not data:
        return None
    rank = max(1, math.ceil(Fraction(str(p)) * len(data)))
    return data[rank - 1]


# --- summaries ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Summary:
    """Every figure for one group of attempts (a system, or a system on one scenario/seed).

    Rates are ``None`` when their denominator is 0; ``cost_per_accepted`` is ``None`` when
    unknown (some cost unknown, or nothing accepted), never 0 for unknown.
    """

    attempts: int
    accepted: int
    pass_at_1: float | None
    k: int
    units: int
    all_k_units: int
    pass_hat_k: float | None
    at_least_once_units: int
    at_least_once: float | None
    mean_check_fraction: float | None
    pooled_passed: int
    pooled_total: int
    pooled_check_rate: float | None
    completed: int
    timeouts: int
    crashed: int
    infrastructure_errors: int
    grader_errors: int
    cost_known: int
    total_cost_usd: float | None
    cost_per_accepted: float | None
    durations_known: int
    median_duration_s: float | None
    p90_duration_s: float | None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (field names as in the dataclass)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def repetitions_per_unit(rows: Iterable[AttemptLike]) -> int:
    """The largest number of attempts any unit has (the ``k`` of pass^k by default)."""
    counts = Counter(unit_of(r) for r in rows)
    return max(counts.values(), default=0)


def summarize(rows: Sequence[AttemptLike], *, k: int | None = None) -> Summary:
    """The figures of a group of attempts (normally one system's).

    ``k`` is the repetitions each unit should have (the campaign's runs); by default the
    largest number recorded for any unit. A unit counts toward pass^k only when it has
    at least ``k`` recorded repetitions and all of them were accepted (every observed
    repetition passes), whatever the reason one was not.
    """
    if k is None:
        k = repetitions_per_unit(rows)
    accepted = sum(is_accepted(r) for r in rows)
    units = group_by(rows, unit_of)
    all_k = sum(all_k_accepted(us, k) for us in units.values())
    once = sum(1 for us in units.values() if any(is_accepted(r) for r in us))
    statuses = Counter(r.status for r in rows)
    pooled_passed = sum(r.required_passed or 0 for r in rows)
    pooled_total = sum(r.required_total or 0 for r in rows)
    costs = [r.cost_usd for r in rows]
    known = [c for c in costs if c is not None]
    total_cost = float(sum(known)) if rows and len(known) == len(costs) else None
    durations = [float(r.duration_s) for r in rows if r.duration_s is not None]
    return Summary(
        attempts=len(rows), accepted=accepted, pass_at_1=_rate(accepted, len(rows)),
        k=k, units=len(units), all_k_units=all_k, pass_hat_k=_rate(all_k, len(units)),
        at_least_once_units=once, at_least_once=_rate(once, len(units)),
        mean_check_fraction=(math.fsum(check_fraction(r) for r in rows) / len(rows)
                             if rows else None),
        pooled_passed=pooled_passed, pooled_total=pooled_total,
        pooled_check_rate=_rate(pooled_passed, pooled_total),
        completed=statuses["completed"], timeouts=statuses["timeout"],
        crashed=statuses["crashed"], infrastructure_errors=statuses["infrastructure_error"],
        grader_errors=sum(r.verdict_status == "grader_error" for r in rows),
        cost_known=len(known), total_cost_usd=total_cost,
        cost_per_accepted=(total_cost / accepted if total_cost is not None and accepted
                           else None),
        durations_known=len(durations), median_duration_s=nearest_rank(durations, 0.5),
        p90_duration_s=nearest_rank(durations, 0.9))


def by_system(rows: Sequence[AttemptLike], *, k: int | None = None) -> dict[str, Summary]:
    """:func:`summarize` per system (systems sorted by name)."""
    return {s: summarize(rs, k=k) for s, rs in group_by(rows, lambda r: r.system).items()}


def by_scenario(rows: Sequence[AttemptLike], *,
                k: int | None = None) -> dict[tuple[str, str], Summary]:
    """:func:`summarize` per ``(scenario, system)``."""
    return {key: summarize(rs, k=k)
            for key, rs in group_by(rows, lambda r: (r.scenario, r.system)).items()}


def by_seed(rows: Sequence[AttemptLike], *,
            k: int | None = None) -> dict[tuple[int, str], Summary]:
    """:func:`summarize` per ``(seed, system)`` (its units are that seed's scenarios)."""
    return {key: summarize(rs, k=k)
            for key, rs in group_by(rows, lambda r: (int(r.seed), r.system)).items()}


# --- repeatability and variation across seeds ---------------------------------------------

@dataclass(frozen=True)
class Repeatability:
    """How a group's units split by their number of accepted repetitions.

    ``distribution[n]`` = units with exactly ``n`` accepted repetitions (0..k). A unit
    *agrees* when its repetitions all got the same outcome (none or all k accepted);
    ``share`` = agreeing units / units: repeatability on one seed.
    """

    k: int
    units: int
    distribution: dict[int, int]
    agreeing: int
    share: float | None

    @property
    def mixed(self) -> int:
        """Units whose repetitions disagree."""
        return self.units - self.agreeing


def repeatability(rows: Sequence[AttemptLike], *, k: int | None = None) -> Repeatability:
    """Repeatability of one system's units (pass its rows only).

    A unit agrees when its ``k`` repetitions were all accepted or all not accepted; a
    unit with fewer than ``k`` recorded repetitions (an incomplete matrix) never agrees.
    """
    if k is None:
        k = repetitions_per_unit(rows)
    units = group_by(rows, unit_of)
    dist = dict.fromkeys(range(k + 1), 0)
    agreeing = 0
    for us in units.values():
        n = sum(is_accepted(r) for r in us)
        dist[n] = dist.get(n, 0) + 1
        if len(us) == k and n in (0, k):
            agreeing += 1
    return Repeatability(k=k, units=len(units), distribution=dist, agreeing=agreeing,
                         share=_rate(agreeing, len(units)))


@dataclass(frozen=True)
class SeedVariation:
    """Acceptance rate per seed (for one system on one scenario) and its spread.

    ``rates[seed]`` = accepted repetitions / repetitions of that seed's unit; ``sd`` is
    the population standard deviation of those rates across seeds.
    """

    rates: dict[int, float]
    mean: float | None
    low: float | None
    high: float | None
    sd: float | None


def seed_variation(rows: Sequence[AttemptLike]) -> SeedVariation:
    """Variation of the acceptance rate across seeds (pass one system on one scenario)."""
    rates = {seed: sum(is_accepted(r) for r in rs) / len(rs)
             for seed, rs in group_by(rows, lambda r: int(r.seed)).items()}
    vals = list(rates.values())
    if not vals:
        return SeedVariation(rates, None, None, None, None)
    return SeedVariation(rates, statistics.fmean(vals), min(vals), max(vals),
                         statistics.pstdev(vals))


# --- completeness -------------------------------------------------------------------------

@dataclass(frozen=True)
class Matrix:
    """A campaign's matrix: every scenario x seed x system x repetition.

    ``scenario_seeds`` gives a scenario its own seeds when it has them (a desk task runs
    with the seed its files were generated with); the others use ``seeds``.
    """

    scenarios: tuple[str, ...]
    seeds: tuple[int, ...]
    systems: tuple[str, ...]
    repetitions: tuple[int, ...]
    scenario_seeds: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def seeds_of(self, scenario: str) -> tuple[int, ...]:
        """The seeds a scenario runs with."""
        return dict(self.scenario_seeds).get(scenario, self.seeds)

    @property
    def size(self) -> int:
        """Number of attempts in the complete matrix."""
        return sum(len(self.seeds_of(sc)) for sc in self.scenarios) * len(self.systems) * len(
            self.repetitions)

    @property
    def k(self) -> int:
        """Repetitions per unit and system."""
        return len(self.repetitions)

    def keys(self) -> list[AttemptKey]:
        """Every cell, sorted."""
        return [(sc, seed, sy, rep) for sc in sorted(self.scenarios)
                for seed in sorted(self.seeds_of(sc)) for sy in sorted(self.systems)
                for rep in sorted(self.repetitions)]



@dataclass(frozen=True)
class Completeness:
    """What the ledger holds against its matrix."""

    expected: int
    """Cells in the matrix."""
    present: int
    """Cells with at least one row."""
    missing: list[AttemptKey] = field(default_factory=list)
    duplicates: list[AttemptKey] = field(default_factory=list)
    unexpected: list[AttemptKey] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Exactly one row per cell and nothing else."""
        return not (self.missing or self.duplicates or self.unexpected)

    def message(self, limit: int = 5) -> str:
        """One paragraph: the counts and the first few keys of each fault."""
        if self.complete:
            return f"complete: {self.present}/{self.expected} attempts"
        parts = [f"INCOMPLETE matrix: {self.present} of {self.expected} attempts recorded"]
        for name, keys in (("missing", self.missing), ("duplicated", self.duplicates),
                           ("outside the matrix", self.unexpected)):
            if keys:
                shown = "; ".join(_key_text(k) for k in keys[:limit])
                more = f"; ... and {len(keys) - limit} more" if len(keys) > limit else ""
                parts.append(f"{len(keys)} {name}: {shown}{more}")
        return ". ".join(parts)

    def require(self) -> None:
        """Raise :class:`IncompleteMatrix` (with :meth:`message`) unless complete."""
        if not self.complete:
            raise IncompleteMatrix(self.message())


def _key_text(key: AttemptKey) -> str:
    scenario, seed, system, rep = key
    return f"{scenario} seed {seed} {system} rep {rep}"


def completeness(rows: Iterable[AttemptLike], matrix: Matrix) -> Completeness:
    """Check that the rows hold every cell of ``matrix`` exactly once."""
    counts = Counter(key_of(r) for r in rows)
    expected = matrix.keys()
    wanted = set(expected)
    return Completeness(
        expected=len(expected), present=sum(1 for k in counts if k in wanted),
        missing=[k for k in expected if k not in counts],
        duplicates=sorted(k for k, n in counts.items() if n > 1 and k in wanted),
        unexpected=sorted(k for k in counts if k not in wanted))


# --- paired comparison ----------------------------------------------------------------------


@dataclass(frozen=True)
class Table2x2:
    """Paired outcomes: both accepted, only A, only B, neither."""

    both: int
    only_a: int
    only_b: int
    neither: int

    @property
    def total(self) -> int:
        """Pairs counted."""
        return self.both + self.only_a + self.only_b + self.neither


@dataclass(frozen=True)
class Comparison:
    """System A against system B on the same units: pass@1 of each, the difference (A - B),
    its paired-bootstrap percentile interval, and the paired 2x2 tables."""

    a: str
    b: str
    units: int
    attempts: int
    """Attempts per system."""
    accepted_a: int
    accepted_b: int
    pass_a: float
    pass_b: float
    difference: float
    low: float
    high: float
    level: float
    resamples: int
    seed: int
    attempts_table: Table2x2
    """Attempts paired by (scenario, seed, repetition)."""
    units_table: Table2x2
    """Units, each counted as accepted when all its repetitions are (all-k)."""
    measure: str = "acceptance"
    """What ``pass_a``, ``pass_b`` and ``difference`` measure: ``acceptance`` (pass@1)
    or ``check-fraction`` (the mean within-attempt check fraction)."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for t in ("attempts_table", "units_table"):
            out[t] = {f: getattr(out[t], f) for f in ("both", "only_a", "only_b", "neither")}
        return out


MEASURES = ("acceptance", "check-fraction")
"""What a paired comparison can compare: pass@1, or the mean check fraction."""


def _reps(rows: Iterable[AttemptLike]) -> dict[Unit, dict[int, bool]]:
    out: dict[Unit, dict[int, bool]] = defaultdict(dict)
    for r in rows:
        reps = out[unit_of(r)]
        if int(r.repetition) in reps:
            raise UnpairedSystems(f"system {r.system}: {r.scenario} seed {r.seed} repetition "
                                 f"{r.repetition} is recorded twice")
        reps[int(r.repetition)] = is_accepted(r)
    return dict(out)


def _mismatch(a: str, b: str, ra: Mapping[Unit, dict[int, bool]],
              rb: Mapping[Unit, dict[int, bool]], limit: int = 5) -> str | None:
    problems: list[str] = []
    for unit in sorted(set(ra) | set(rb)):
        sc, seed = unit
        if unit not in rb:
            problems.append(f"{sc} seed {seed} only has attempts of {a}")
        elif unit not in ra:
            problems.append(f"{sc} seed {seed} only has attempts of {b}")
        elif set(ra[unit]) != set(rb[unit]):
            problems.append(f"{sc} seed {seed}: {a} has repetitions "
                            f"{sorted(ra[unit])}, {b} has {sorted(rb[unit])}")
    if not problems:
        return None
    more = f"; ... and {len(problems) - limit} more" if len(problems) > limit else ""
    return (f"cannot compare {a} with {b}: their matrices differ ({len(problems)} "
            f"unit(s)): " + "; ".join(problems[:limit]) + more)


def bootstrap_differences(diff: np.ndarray, n: np.ndarray, *, resamples: int,
                          seed: int) -> np.ndarray:
    """Bootstrap replicates of ``sum(diff) / sum(n)`` resampling units with replacement.

    ``diff[u]`` = accepted attempts of A minus those of B on unit ``u`` (all its
    repetitions), ``n[u]`` = the unit's repetitions. Each replicate draws as many units as
    there are, uniformly with replacement, from ``numpy.random.default_rng(seed)``.
    """
    units = len(diff)
    if units == 0:
        raise ValueError("no units to resample")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    rng = seeded_generator(seed)
    out = np.empty(resamples, dtype=np.float64)
    chunk = max(1, 2_000_000 // units)  # bounded memory: chunk x units indices at a time
    d = np.asarray(diff, dtype=np.float64)
    m = np.asarray(n, dtype=np.int64)
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        idx = rng.integers(0, units, size=(size, units))
        out[start:start + size] = d[idx].sum(axis=1) / m[idx].sum(axis=1)
    return out


def paired_bootstrap(rows: Sequence[AttemptLike], a: str, b: str, *,
                     resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_BOOTSTRAP_SEED,
                     level: float = 0.95, measure: str = "acceptance") -> Comparison:
    """Compare systems ``a`` and ``b``: pass@1 difference (A - B) with a paired bootstrap.

    Scenario-seed units are resampled with replacement; a drawn unit brings every
    repetition of both systems. The interval is the percentile interval of the
    replicates at ``level``. Raises :class:`UnpairedSystems` unless both systems have
    exactly the same units and repetition numbers, and ``ValueError`` when a system has
    no attempts. ``measure="check-fraction"`` compares the mean within-attempt check
    fraction instead (each attempt weighs the same; the same resampling of units); the
    paired tables stay on acceptance.
    """
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r} (expected one of: "
                         f"{', '.join(MEASURES)})")
    rows_a = [r for r in rows if r.system == a]
    rows_b = [r for r in rows if r.system == b]
    for name, rs in ((a, rows_a), (b, rows_b)):
        if not rs:
            raise ValueError(f"system {name!r} has no attempts")
    ra, rb = _reps(rows_a), _reps(rows_b)
    problem = _mismatch(a, b, ra, rb)
    if problem:
        raise UnpairedSystems(problem)
    units = sorted(ra)
    if measure == "acceptance":
        diff = np.array([sum(ra[u].values()) - sum(rb[u].values()) for u in units],
                        dtype=np.float64)
    else:
        fa = {unit: math.fsum(check_fraction(r) for r in rs)
              for unit, rs in group_by(rows_a, unit_of).items()}
        fb = {unit: math.fsum(check_fraction(r) for r in rs)
              for unit, rs in group_by(rows_b, unit_of).items()}
        diff = np.array([fa[u] - fb[u] for u in units], dtype=np.float64)
    n = np.array([len(ra[u]) for u in units])
    reps = bootstrap_differences(diff, n, resamples=resamples, seed=seed)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(reps, [tail, 100 - tail])
    pairs = Counter((ra[u][rep], rb[u][rep]) for u in units for rep in ra[u])
    unit_pairs = Counter((all(ra[u].values()), all(rb[u].values())) for u in units)
    acc_a = sum(sum(ra[u].values()) for u in units)
    acc_b = sum(sum(rb[u].values()) for u in units)
    total = int(n.sum())
    if measure == "acceptance":
        value_a, value_b = acc_a / total, acc_b / total
    else:
        value_a = math.fsum(check_fraction(r) for r in rows_a) / total
        value_b = math.fsum(check_fraction(r) for r in rows_b) / total
    return Comparison(
        a=a, b=b, units=len(units), attempts=total, accepted_a=acc_a, accepted_b=acc_b,
        pass_a=value_a, pass_b=value_b, difference=value_a - value_b,
        low=float(low), high=float(high), level=level, resamples=resamples, seed=seed,
        attempts_table=_table(pairs), units_table=_table(unit_pairs), measure=measure)


def _table(pairs: Counter[tuple[bool, bool]]) -> Table2x2:
    return Table2x2(both=pairs[True, True], only_a=pairs[True, False],
                    only_b=pairs[False, True], neither=pairs[False, False])


# --- rescoring transitions ------------------------------------------------------------------

def verdict_label(status: str | None) -> str:
    """How a verdict status reads in a transition table (``None``: no verdict)."""
    return {"accepted": "accepted", "rejected": "rejected",
            "grader_error": "ungraded"}.get(status or "", "no verdict")


def transitions(pairs: Iterable[tuple[str, str | None, str | None]]
                ) -> dict[str, Counter[tuple[str, str]]]:
    """Per system, the count of each (original, new) verdict label pair.

    ``pairs`` holds ``(system, original verdict status, new verdict status)``.
    """
    out: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    for system, old, new in pairs:
        out[system][verdict_label(old), verdict_label(new)] += 1
    return {s: out[s] for s in sorted(out)}


# --- figures under a rescoring ---------------------------------------------------------------

def rescored_row(row: R, verdict: Mapping[str, Any]) -> R:
    """``row`` (a ledger ``AttemptRow``) with its verdict replaced by a receipt's.

    Everything about the execution (status, durations, usage, outputs) stays; the
    verdict status, acceptance, check results and counts come from ``verdict``
    (``Verdict.to_json()``; status ``None``: the attempt could not be graded, so it has
    no verdict and is not accepted).
    """
    import dataclasses

    status = verdict.get("status")
    if status is None:
        return dataclasses.replace(  # type: ignore[type-var]
            row, verdict_status=None, accepted=False, checks=(), grader_error=None,
            required_passed=None, required_total=None, check_fraction=None)
    results = list(verdict.get("results") or [])
    passed = verdict.get("required_passed")
    total = verdict.get("required_total")
    errors = [f"{g['check']}: {g['error']}" for g in verdict.get("grader_errors") or []]
    return dataclasses.replace(  # type: ignore[type-var]
        row, verdict_status=str(status),
        accepted=bool(verdict.get("accepted")) and status == "accepted",
        checks=tuple({k: r.get(k) for k in ("name", "passed", "required", "detail",
                                            "metrics")} for r in results),
        grader_error="; ".join(errors) or None, required_passed=passed,
        required_total=total,
        check_fraction=(round(passed / total, 6) if total else 1.0)
        if passed is not None else None,
        scorer=verdict.get("scorer"))


@dataclass(frozen=True)
class ScorerGap:
    """The pass@1 gap of A over B under one scorer, and its change from the original's."""

    scorer: str
    attempts_a: int
    attempts_b: int
    accepted_a: int
    accepted_b: int
    gap: float | None
    """pass@1 of A minus pass@1 of B (a fraction; ``None`` when a system has no attempt)."""
    change: float | None
    """``gap`` minus the original scorer's gap (``None`` for the original itself)."""


def scorer_gaps(rows_by_scorer: Mapping[str, Sequence[AttemptLike]], a: str, b: str, *,
                original: str = "original") -> list[ScorerGap]:
    """The A - B gap in pass@1 under each scorer (``original`` first), with its change
    from the original scorer's gap in the same units (points when multiplied by 100)."""
    def gap_of(name: str, rows: Sequence[AttemptLike]) -> ScorerGap:
        ra = [r for r in rows if r.system == a]
        rb = [r for r in rows if r.system == b]
        acc_a, acc_b = sum(map(is_accepted, ra)), sum(map(is_accepted, rb))
        gap = acc_a / len(ra) - acc_b / len(rb) if ra and rb else None
        return ScorerGap(name, len(ra), len(rb), acc_a, acc_b, gap, None)

    names = [original, *sorted(n for n in rows_by_scorer if n != original)]
    gaps = [gap_of(n, rows_by_scorer[n]) for n in names if n in rows_by_scorer]
    base = next((g.gap for g in gaps if g.scorer == original), None)
    return [g if g.scorer == original or g.gap is None or base is None
            else ScorerGap(g.scorer, g.attempts_a, g.attempts_b, g.accepted_a, g.accepted_b,
                           g.gap, g.gap - base) for g in gaps]


# --- categories --------------------------------------------------------------------------------

UNCATEGORIZED = "uncategorized"
"""The category of a scenario that declares none."""

WEIGHTINGS = ("task-share", "equal")
"""Named category weightings; anything else is a file of ``category: weight``."""


def category_of(categories: Mapping[str, str | None], scenario: str) -> str:
    """A scenario's category (:data:`UNCATEGORIZED` when it has none)."""
    return categories.get(scenario) or UNCATEGORIZED


def by_category(rows: Sequence[AttemptLike], categories: Mapping[str, str | None], *,
                k: int | None = None) -> dict[tuple[str, str], Summary]:
    """:func:`summarize` per ``(category, system)``; ``categories`` maps scenario ids."""
    return {key: summarize(rs, k=k) for key, rs in group_by(
        rows, lambda r: (category_of(categories, r.scenario), r.system)).items()}


def category_weights(rows: Sequence[AttemptLike], categories: Mapping[str, str | None],
                     weighting: str | Mapping[str, float]) -> dict[str, float]:
    """Each category's weight, summing to one.

    ``task-share``: the category's share of the (scenario, seed) units (with a complete
    matrix, the weighted aggregate is then the plain pass@1); ``equal``: one over the
    number of categories; a mapping: the given nonnegative weights, normalized. A mapping
    must name every category of the rows and no other (``ValueError`` naming it).
    """
    units: dict[str, set[Unit]] = defaultdict(set)
    for r in rows:
        units[category_of(categories, r.scenario)].add(unit_of(r))
    names = sorted(units)
    if not names:
        return {}
    if weighting == "task-share":
        n_units = sum(len(u) for u in units.values())
        return {c: len(units[c]) / n_units for c in names}
    if weighting == "equal":
        return {c: 1 / len(names) for c in names}
    if isinstance(weighting, str):
        raise ValueError(f"unknown weighting {weighting!r} (expected one of: "
                         f"{', '.join(WEIGHTINGS)}, or category weights)")
    extra = sorted(set(weighting) - set(names))
    missing = [c for c in names if c not in weighting]
    if extra:
        raise ValueError(f"weight for category {extra[0]!r}, which no scenario of the "
                         f"campaign has (its categories: {', '.join(names)})")
    if missing:
        raise ValueError(f"no weight for category {missing[0]!r} (every category needs "
                         f"one: {', '.join(names)})")
    bad = [c for c in names if not (isinstance(weighting[c], int | float)
                                    and not isinstance(weighting[c], bool)
                                    and math.isfinite(weighting[c]) and weighting[c] >= 0)]
    if bad:
        raise ValueError(f"weight of {bad[0]!r} is {weighting[bad[0]]!r} (expected a "
                         "number >= 0)")
    total = math.fsum(float(weighting[c]) for c in names)
    if total <= 0:
        raise ValueError("the weights sum to 0 (expected at least one positive weight)")
    return {c: float(weighting[c]) / total for c in names}


def weighted_pass(rows: Sequence[AttemptLike], categories: Mapping[str, str | None],
                  weights: Mapping[str, float]) -> float | None:
    """``sum_c w_c * pass@1_c`` of one system's rows (``None`` when a weighted category
    has no attempt of it)."""
    per = group_by(rows, lambda r: category_of(categories, r.scenario))
    total = 0.0
    for c, w in weights.items():
        rs = per.get(c)
        if not rs:
            if w > 0:
                return None
            continue
        total += w * sum(map(is_accepted, rs)) / len(rs)
    return total


@dataclass(frozen=True)
class CategoryGap:
    """One category's part in the A - B gap."""

    category: str
    units: int
    attempts_a: int
    attempts_b: int
    accepted_a: int
    accepted_b: int
    pass_a: float
    pass_b: float
    weight: float
    contribution: float
    """``weight * (pass_a - pass_b)``: the category's part of the weighted gap."""
    share: float | None
    """``contribution`` / the weighted gap (``None`` when the gap is 0)."""

    @property
    def difference(self) -> float:
        """``pass_a - pass_b`` within the category."""
        return self.pass_a - self.pass_b

    @property
    def extra_accepted(self) -> int:
        """Accepted attempts of A minus those of B in the category."""
        return self.accepted_a - self.accepted_b


@dataclass(frozen=True)
class WeightedGap:
    """The A - B gap as ``sum_c w_c (P_Ac - P_Bc)`` and each category's part in it."""

    a: str
    b: str
    weighting: str
    gap: float
    categories: list[CategoryGap]


def category_gap(rows: Sequence[AttemptLike], categories: Mapping[str, str | None], a: str,
                 b: str, weighting: str | Mapping[str, float] = "task-share", *,
                 name: str | None = None) -> WeightedGap:
    """The category-weighted difference in pass@1 of A over B and its decomposition.

    Weights come from :func:`category_weights` over both systems' rows. A category one
    of the systems has no attempt in is a ``ValueError`` (no paired rate).
    """
    both = [r for r in rows if r.system in (a, b)]
    weights = category_weights(both, categories, weighting)
    per = group_by(both, lambda r: category_of(categories, r.scenario))
    parts: list[tuple[str, int, list[AttemptLike], list[AttemptLike]]] = []
    for c in weights:
        ra = [r for r in per[c] if r.system == a]
        rb = [r for r in per[c] if r.system == b]
        if not ra or not rb:
            raise ValueError(f"category {c!r}: {a if not ra else b} has no attempt in it "
                             "(expected both systems in every category)")
        parts.append((c, len({unit_of(r) for r in per[c]}), ra, rb))
    contributions = {c: weights[c] * (sum(map(is_accepted, ra)) / len(ra)
                                      - sum(map(is_accepted, rb)) / len(rb))
                     for c, _, ra, rb in parts}
    gap = math.fsum(contributions.values())
    out = []
    for c, units, ra, rb in parts:
        acc_a, acc_b = sum(map(is_accepted, ra)), sum(map(is_accepted, rb))
        out.append(CategoryGap(
            category=c, units=units, attempts_a=len(ra), attempts_b=len(rb),
            accepted_a=acc_a, accepted_b=acc_b, pass_a=acc_a / len(ra),
            pass_b=acc_b / len(rb), weight=weights[c], contribution=contributions[c],
            share=contributions[c] / gap if abs(gap) > 1e-12 else None))
    label = name or (weighting if isinstance(weighting, str) else "custom")
    return WeightedGap(a=a, b=b, weighting=label, gap=gap, categories=out)


# --- the repetition structure ----------------------------------------------------------------

@dataclass(frozen=True)
class RepetitionStructure:
    """One system's repetitions: units by accepted count, acceptance per repetition,
    near misses and the distance between check completion and acceptance."""

    k: int
    distribution: dict[int, int]
    """Units with exactly n accepted repetitions (0..k); weighting the rows by n gives
    the accepted attempts."""
    per_repetition: dict[int, tuple[int, int]]
    """Repetition number -> (accepted, attempts)."""
    failures: int
    """Attempts not accepted (whatever the reason)."""
    one_check_failures: int
    """Rejected attempts with exactly one failed required check."""
    completion_minus_acceptance: float | None
    """Mean check fraction minus pass@1 (a fraction; points when x 100)."""


def repetition_structure(rows: Sequence[AttemptLike], *,
                         k: int | None = None) -> RepetitionStructure:
    """The repetition structure of one system's rows (pass its rows only).

    A *one-check failure* is a rejected attempt (a verdict, no grader error) whose
    required results failed exactly once: a statement about predicate outcomes, not
    about how much work would repair it.
    """
    rep = repeatability(rows, k=k)
    per = {int(n): (sum(map(is_accepted, rs)), len(rs))
           for n, rs in group_by(rows, lambda r: int(r.repetition)).items()}
    s = summarize(rows, k=rep.k)
    one = sum(1 for r in rows if r.verdict_status == "rejected"
              and r.required_total is not None and r.required_passed is not None
              and r.required_total - r.required_passed == 1)
    gap = (s.mean_check_fraction - s.pass_at_1
           if s.mean_check_fraction is not None and s.pass_at_1 is not None else None)
    return RepetitionStructure(k=rep.k, distribution=rep.distribution, per_repetition=per,
                               failures=s.attempts - s.accepted, one_check_failures=one,
                               completion_minus_acceptance=gap)


# --- resources -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Usage:
    """One attempt's tokens by class, whatever the adapter's convention.

    ``input`` is every input token (uncached, cache reads and cache writes); ``cached``
    the cache reads among them; ``cache_write`` the cache writes; ``output`` every
    output token (``reasoning`` among them, when known); ``cost_usd`` what the adapter
    reported (``None``: not reported).
    """

    input: int
    cached: int
    cache_write: int
    output: int
    reasoning: int | None
    cost_usd: float | None

    @property
    def uncached(self) -> int:
        """Input tokens neither read from nor written to the cache."""
        return self.input - self.cached - self.cache_write


def _count(data: Mapping[str, Any], key: str) -> float | None:
    v = data.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def usage_from(data: Mapping[str, Any]) -> Usage | None:
    """One turn's ``usage.json`` as a :class:`Usage` (``None``: input or output unknown).

    Two conventions: Anthropic's (``input_tokens`` uncached, ``cache_read_input_tokens``
    and ``cache_creation_input_tokens`` beside it) and OpenAI's (``input_tokens`` all
    input, ``cached_input_tokens`` and ``cache_write_input_tokens`` among it).
    """
    inp, out = _count(data, "input_tokens"), _count(data, "output_tokens")
    if inp is None or out is None:
        return None
    reasoning = _count(data, "reasoning_output_tokens")
    cost = _count(data, "cost_usd")
    if "cache_read_input_tokens" in data or "cache_creation_input_tokens" in data:
        read = _count(data, "cache_read_input_tokens") or 0
        write = _count(data, "cache_creation_input_tokens") or 0
        total = inp + read + write
    else:
        read = _count(data, "cached_input_tokens") or 0
        write = _count(data, "cache_write_input_tokens") or 0
        total = inp
    return Usage(input=int(total), cached=int(read), cache_write=int(write), output=int(out),
                 reasoning=None if reasoning is None else int(reasoning), cost_usd=cost)


def add_usage(parts: Iterable[Usage | None]) -> Usage | None:
    """The sum of several turns' usage; ``None`` when any is unknown or there is none."""
    items = list(parts)
    if not items or any(u is None for u in items):
        return None
    known = [u for u in items if u is not None]
    reasoning = [u.reasoning for u in known]
    costs = [u.cost_usd for u in known]
    return Usage(input=sum(u.input for u in known), cached=sum(u.cached for u in known),
                 cache_write=sum(u.cache_write for u in known),
                 output=sum(u.output for u in known),
                 reasoning=None if None in reasoning else sum(r or 0 for r in reasoning),
                 cost_usd=None if None in costs else math.fsum(c or 0.0 for c in costs))


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens: uncached input, cached input, output, cache writes
    (``None``: priced as uncached input)."""

    input: float
    cached_input: float
    output: float
    cache_write: float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Price:
        """From a systems file's (or campaign.json's) ``price:`` mapping."""
        return cls(float(data["input"]), float(data["cached_input"]), float(data["output"]),
                   None if data.get("cache_write") is None else float(data["cache_write"]))

    def cost(self, usage: Usage) -> float:
        """``(uncached * input + cached * cached_input + writes * cache_write + output *
        output) / 1e6``."""
        write = self.input if self.cache_write is None else self.cache_write
        return (usage.uncached * self.input + usage.cached * self.cached_input
                + usage.cache_write * write + usage.output * self.output) / 1_000_000


@dataclass(frozen=True)
class Resources:
    """One system's tokens and cost.

    Token totals cover the attempts whose usage is known; ``cache_fraction`` is total
    cached input / total input (token-weighted, never a mean of per-attempt shares).
    Cost is the price table's where there is one (``cost_source = "price table"``),
    else what the adapters reported. ``cost_per_accepted`` divides the known cost by the
    accepted attempts, beside ``unknown_usage`` (attempts whose cost is unknown);
    ``strict_cost_per_accepted`` is ``None`` as soon as any attempt's cost is unknown.
    Both are ``None`` when nothing was accepted.
    """

    attempts: int
    accepted: int
    usage_known: int
    unknown_usage: int
    """Attempts whose cost is unknown (no usage, or no cost reported without a price)."""
    input: int | None
    """Token totals are ``None`` when no attempt's usage is known."""
    uncached: int | None
    cached: int | None
    cache_write: int | None
    output: int | None
    reasoning: int | None
    cache_fraction: float | None
    cost_source: str
    known_cost_usd: float | None
    cost_per_accepted: float | None
    strict_cost_per_accepted: float | None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def resources(rows: Sequence[AttemptLike], usage: Mapping[AttemptKey, Usage | None],
              price: Price | None = None) -> Resources:
    """Tokens and cost of one system's rows; ``usage`` by attempt key (missing: unknown).

    An attempt's cost is ``price.cost(usage)`` with a price table, else its usage's
    ``cost_usd``, else the row's ``cost_usd``; unknown when those are.
    """
    known = [u for r in rows if (u := usage.get(key_of(r))) is not None]
    costs: list[float | None] = []
    for r in rows:
        u = usage.get(key_of(r))
        if price is not None:
            costs.append(None if u is None else price.cost(u))
        else:
            costs.append(u.cost_usd if u is not None and u.cost_usd is not None
                         else r.cost_usd)
    known_costs = [c for c in costs if c is not None]
    unknown = len(costs) - len(known_costs)
    accepted = sum(map(is_accepted, rows))
    total_cost = math.fsum(known_costs) if known_costs else None
    inp = sum(u.input for u in known)
    cached = sum(u.cached for u in known)
    reasoning = [u.reasoning for u in known]
    some = bool(known)
    return Resources(
        attempts=len(rows), accepted=accepted, usage_known=len(known),
        unknown_usage=unknown, input=inp if some else None,
        uncached=sum(u.uncached for u in known) if some else None,
        cached=cached if some else None,
        cache_write=sum(u.cache_write for u in known) if some else None,
        output=sum(u.output for u in known) if some else None,
        reasoning=None if not known or None in reasoning else sum(r or 0 for r in reasoning),
        cache_fraction=_rate(cached, inp),
        cost_source="price table" if price is not None else "adapter",
        known_cost_usd=total_cost,
        cost_per_accepted=(total_cost or 0.0) / accepted if accepted and known_costs else None,
        strict_cost_per_accepted=(total_cost or 0.0) / accepted
        if accepted and not unknown and rows else None)
