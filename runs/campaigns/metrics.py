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
  outcome; never ``pass@1 ** k``. A unit with fewer than k recorded repetitions cannot
  count.
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
  any attempt's cost is unknown or none was accepted.
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
    """Accepted by its verdict. A grader error (ungraded) or no verdict is not accepted."""
    return row.accepted is True and row.verdict_status != "grader_error"


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
    largest number recorded for any unit. A unit with fewer than ``k`` accepted
    repetitions does not count toward pass^k, whatever the reason.
    """
    if k is None:
        k = repetitions_per_unit(rows)
    accepted = sum(is_accepted(r) for r in rows)
    units = group_by(rows, unit_of)
    unit_acc = [sum(is_accepted(r) for r in us) for us in units.values()]
    all_k = sum(1 for n in unit_acc if k > 0 and n >= k)
    once = sum(1 for n in unit_acc if n >= 1)
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

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for t in ("attempts_table", "units_table"):
            out[t] = {f: getattr(out[t], f) for f in ("both", "only_a", "only_b", "neither")}
        return out


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
    d = np.asarray(diff, dtype=np.int64)
    m = np.asarray(n, dtype=np.int64)
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        idx = rng.integers(0, units, size=(size, units))
        out[start:start + size] = d[idx].sum(axis=1) / m[idx].sum(axis=1)
    return out


def paired_bootstrap(rows: Sequence[AttemptLike], a: str, b: str, *,
                     resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_BOOTSTRAP_SEED,
                     level: float = 0.95) -> Comparison:
    """Compare systems ``a`` and ``b``: pass@1 difference (A - B) with a paired bootstrap.

    Scenario-seed units are resampled with replacement; a drawn unit brings every
    repetition of both systems. The interval is the percentile interval of the
    replicates at ``level``. Raises :class:`UnpairedSystems` unless both systems have
    exactly the same units and repetition numbers, and ``ValueError`` when a system has
    no attempts.
    """
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
    diff = np.array([sum(ra[u].values()) - sum(rb[u].values()) for u in units])
    n = np.array([len(ra[u]) for u in units])
    reps = bootstrap_differences(diff, n, resamples=resamples, seed=seed)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(reps, [tail, 100 - tail])
    pairs = Counter((ra[u][rep], rb[u][rep]) for u in units for rep in ra[u])
    unit_pairs = Counter((all(ra[u].values()), all(rb[u].values())) for u in units)
    acc_a = sum(sum(ra[u].values()) for u in units)
    acc_b = sum(sum(rb[u].values()) for u in units)
    total = int(n.sum())
    return Comparison(
        a=a, b=b, units=len(units), attempts=total, accepted_a=acc_a, accepted_b=acc_b,
        pass_a=acc_a / total, pass_b=acc_b / total, difference=(acc_a - acc_b) / total,
        low=float(low), high=float(high), level=level, resamples=resamples, seed=seed,
        attempts_table=_table(pairs), units_table=_table(unit_pairs))


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
