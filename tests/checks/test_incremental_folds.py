"""Per-date control folds the log forward: what a date sees equals a fold from scratch.

Hypothesis draws a library scenario, a seed and a small population, runs an attempt
with the reference agent (on SQLite and on PostgreSQL), then draws checkpoints: dates in
order, each with a log position at or before that date's end. One :class:`Folds`
is advanced from checkpoint to checkpoint, as per-date control does; at each checkpoint
its world view, books view, reconciliation (with the GL and subledger rows folded) and
the scenario's per-date check results must equal those of folds made from the start of
the log.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checks.context import Folds, LogReads
from checks.policy import ReconciliationTies, reconciling_items
from checks.reconcile import BooksView, _books, fold_books, reconcile, reconciliation
from checks.registry import final_lookbacks, reconciled_on
from checks.verdict import evaluate
from checks.world import WorldView, fold_world, world_view
from erp.store import EventStore
from runs.attempt import run_attempt
from runs.bench.benchmarks import monthly_closes, scale_population
from runs.daily import LookbacksAhead
from runs.grading import context_for, daily_specs
from scenarios.loader import LoadedScenario, find_scenario, load_scenario
from tests.conftest import PG_URL, drop_pg_schema, pg_schema, require_postgres

SCENARIOS = ("cash-application", "procure-to-pay", "month-end-close")


@dataclass
class Attempt:
    loaded: LoadedScenario
    store: EventStore
    ends: list[tuple[date, int]]
    """Each business date with the last log position of that date."""


_attempts: dict[tuple[str, str, int, int, int, int], Attempt] = {}
_schemas: list[str] = []
_tmp = tempfile.TemporaryDirectory(prefix="erpsim-incremental-")


@pytest.fixture(scope="module", autouse=True)
def _cleanup() -> Iterator[None]:
    yield
    for a in _attempts.values():
        a.store.close()
    _attempts.clear()
    for schema in _schemas:
        drop_pg_schema(schema)
    _tmp.cleanup()


def attempt(backend: str, scenario: str, seed: int, customers: int, vendors: int,
            months: int = 1) -> Attempt:
    """An attempt of the reference agent, run once per key in this process (``months``:
    over that many monthly closes, as ``bench engine --months`` runs it)."""
    key = (backend, scenario, seed, customers, vendors, months)
    if key in _attempts:
        return _attempts[key]
    loaded = scale_population(load_scenario(find_scenario(scenario)), customers, vendors)
    if months > 1:
        loaded = monthly_closes(loaded, months)
    out = Path(_tmp.name) / "-".join(map(str, key))
    if backend == "sqlite":
        run_attempt(loaded, seed, "reference", out)
        store = EventStore.open(out / "books.db")
    else:
        schema = pg_schema("-".join(map(str, key)))
        drop_pg_schema(schema)
        _schemas.append(schema)
        run_attempt(loaded, seed, "reference", out, store_url=PG_URL, schema=schema)
        store = EventStore.open(PG_URL, schema=schema)
    ends: dict[date, int] = {}
    for e in store.read():
        ends[date.fromisoformat(e.business_date)] = e.position
    days = loaded.scenario.calendar.build().business_days()
    last, out_ends = 0, []
    for d in days:  # a date with no event of its own ends where the one before did
        last = max([last] + [p for day, p in ends.items() if day <= d])
        out_ends.append((d, last))
    _attempts[key] = Attempt(loaded, store, out_ends)
    return _attempts[key]


def _results(ctx: Any, loaded: LoadedScenario) -> list[tuple[str, bool, str, Any]]:
    verdict = evaluate([s for _, s in daily_specs(loaded)], ctx)
    return ([(r.name, r.passed, r.detail, r.metrics) for r in verdict.results]
            + [(g.check, False, g.error, None) for g in verdict.grader_errors])


def _same_world(a: WorldView, b: WorldView) -> None:
    assert a == b
    assert list(a.customers) == list(b.customers)  # the same order too
    assert list(a.vendors) == list(b.vendors)


def _same_books(a: BooksView, b: BooksView) -> None:
    assert a == b
    for kind, doc in [("receipt", r) for r in a.receipts] + [("vendor_payment", p)
                                                            for p in a.payments]:
        assert a.line_of(kind, doc) == b.line_of(kind, doc)


checkpoints = st.lists(st.tuples(st.integers(0, 10_000), st.floats(0.0, 1.0)),
                       min_size=1, max_size=12)


def check_per_date_equality(backend: str, data: st.DataObject) -> None:
    scenario = data.draw(st.sampled_from(SCENARIOS), label="scenario")
    seed = data.draw(st.integers(0, 10_000), label="seed")
    customers = data.draw(st.integers(3, 10), label="customers")
    vendors = data.draw(st.integers(2, 5), label="vendors")
    check_checkpoints(attempt(backend, scenario, seed, customers, vendors), data, checkpoints)


def check_monthly_closes(backend: str, data: st.DataObject) -> None:
    """The same over month-end-close run for two or three monthly closes (the shape of
    ``bench engine --months``): dates after a period closed, a month's statement and the
    next month's turns fold on from the month before."""
    seed = data.draw(st.integers(0, 10_000), label="seed")
    customers = data.draw(st.integers(3, 6), label="customers")
    vendors = data.draw(st.integers(2, 4), label="vendors")
    months = data.draw(st.integers(2, 3), label="months")
    a = attempt(backend, "month-end-close", seed, customers, vendors, months)
    check_checkpoints(a, data, st.lists(st.tuples(st.integers(0, 10_000), st.floats(0.0, 1.0)),
                                        min_size=1, max_size=30))


def check_checkpoints(a: Attempt, data: st.DataObject,
                      dates: st.SearchStrategy[list[tuple[int, float]]]) -> None:
    """Draw checkpoints (dates in order, each with a position at or before its end) and
    compare, at each, what one kept :class:`Folds` gives with folds from scratch."""
    n = len(a.ends)
    picks = sorted({i % n for i, _ in data.draw(dates, label="dates")})
    where = data.draw(st.lists(st.floats(0.0, 1.0), min_size=len(picks),
                               max_size=len(picks)), label="positions")
    folds = Folds()
    previous = 0
    for i, share in zip(picks, where, strict=True):
        day, end = a.ends[i]
        position = max(previous, previous + round((end - previous) * share))
        position = max(position, 1)
        previous = position
        live = context_for(a.store, a.loaded, workspace=None, as_of=day, position=position,
                           folds=folds)
        fresh = context_for(a.store, a.loaded, workspace=None, as_of=day, position=position)
        _same_world(world_view(live, day), fold_world(a.store, as_of=day, position=position))
        _same_books(_books(live, day), fold_books(a.store, as_of=day, position=position))
        assert reconciliation(live, day) == reconcile(
            a.store, as_of=day, position=position, control_accounts=live.control_accounts,
            turn_dates=live.turn_dates)
        live = context_for(a.store, a.loaded, workspace=None, as_of=day, position=position,
                           folds=folds)
        assert _results(live, a.loaded) == _results(fresh, a.loaded)
    assert folds.fresh >= 3  # a world, a books and a postings fold at least
    if data.draw(st.booleans(), label="final"):
        check_final_equality(a, folds)


def _final_results(ctx: Any, loaded: LoadedScenario) -> list[tuple[str, bool, str, Any]]:
    verdict = evaluate(list(loaded.checks), ctx)
    return ([(r.name, r.passed, r.detail, r.metrics) for r in verdict.results]
            + [(g.check, False, g.error, None) for g in verdict.grader_errors])


def check_final_equality(a: Attempt, folds: Folds, turn_ends: Folds | None = None) -> int:
    """The final evaluation (no date, the whole log), folded on from the per-date folds,
    equals one folded afresh: views, reconciliation and every check's result. Returns how
    many folds the undated views started afresh."""
    head, before = a.store.head()[0], folds.fresh
    live = context_for(a.store, a.loaded, workspace=None, folds=folds)
    fresh = context_for(a.store, a.loaded, workspace=None)
    _same_world(world_view(live, None), fold_world(a.store, position=head))
    _same_books(_books(live, None), fold_books(a.store))
    assert reconciliation(live, None) == reconcile(a.store,
                                                   control_accounts=live.control_accounts,
                                                   turn_dates=live.turn_dates)
    undated_fresh = folds.fresh - before
    live = context_for(a.store, a.loaded, workspace=None, folds=folds, turn_ends=turn_ends)
    assert _final_results(live, a.loaded) == _final_results(fresh, a.loaded)
    return undated_fresh


def per_date_control(a: Attempt) -> Folds:
    """Evaluate the per-date checks at every date's end on one kept :class:`Folds`."""
    folds = Folds()
    for day, end in a.ends:
        ctx = context_for(a.store, a.loaded, workspace=None, as_of=day, position=end,
                          folds=folds)
        evaluate([s for _, s in daily_specs(a.loaded)], ctx)
    return folds


def test_the_final_evaluation_folds_on_from_the_last_date() -> None:
    """After per-date control's last date, the final evaluation takes the dated folds over
    (none is folded afresh) and gives what folds from scratch give."""
    a = attempt("sqlite", "month-end-close", 5, 6, 3)
    folds = per_date_control(a)
    assert check_final_equality(a, folds) == 0


SETTINGS = settings(max_examples=6, deadline=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


@SETTINGS
@given(data=st.data())
def test_per_date_folds_equal_a_fold_from_scratch_sqlite(data: st.DataObject) -> None:
    check_per_date_equality("sqlite", data)


@pytest.mark.postgres
@SETTINGS
@given(data=st.data())
def test_per_date_folds_equal_a_fold_from_scratch_postgres(data: st.DataObject) -> None:
    require_postgres()
    check_per_date_equality("postgres", data)


@SETTINGS
@given(data=st.data())
def test_per_date_folds_over_monthly_closes_equal_a_fold_from_scratch_sqlite(
        data: st.DataObject) -> None:
    check_monthly_closes("sqlite", data)


@pytest.mark.postgres
@SETTINGS
@given(data=st.data())
def test_per_date_folds_over_monthly_closes_equal_a_fold_from_scratch_postgres(
        data: st.DataObject) -> None:
    require_postgres()
    check_monthly_closes("postgres", data)


def test_an_event_coming_due_starts_a_fresh_fold(tmp_path: Path) -> None:
    """A fold that left an event out by its date starts afresh once the event counts."""
    a = attempt("sqlite", "cash-application", 3, 4, 2)
    folds = Folds()
    d0, d1, p1 = a.ends[0][0], a.ends[-1][0], a.ends[-1][1]
    # Fold everything logged by the last date, as of the first: later-dated events wait.
    world_view(context_for(a.store, a.loaded, workspace=None, as_of=d0, position=p1,
                           folds=folds), d0)
    fresh = folds.fresh
    view = world_view(context_for(a.store, a.loaded, workspace=None, as_of=d1, position=p1,
                                  folds=folds), d1)
    assert folds.fresh == fresh + 1
    _same_world(view, fold_world(a.store, as_of=d1, position=p1))


def test_per_date_control_over_monthly_closes_reads_each_event_once() -> None:
    """Per-date control over three monthly closes folds forward only: no fold is started
    again after the first date, and each kept fold reads every event of the log at most
    once in all (a date costs what the log gained since the one before), while each date's
    results equal a fold from scratch."""
    a = attempt("sqlite", "month-end-close", 2, 5, 3, 3)
    folds = Folds()
    for n, (day, end) in enumerate(a.ends):
        live = context_for(a.store, a.loaded, workspace=None, as_of=day, position=end,
                           folds=folds)
        results = _results(live, a.loaded)
        if n % 9 == 0:  # a fresh fold of every date would make the test quadratic itself
            fresh = context_for(a.store, a.loaded, workspace=None, as_of=day, position=end)
            assert results == _results(fresh, a.loaded)
        if n == 0:
            started = folds.fresh
    assert started >= 3 and folds.fresh == started
    head = a.store.head()[0]
    kept = [folds.peek((name, False)) for name in ("checks.world", "checks.books",
                                                   "checks.postings")]
    assert all(f is not None and f.position == head for f in kept)
    assert all(0 < f.events_read <= head for f in kept)


def test_folds_started_afresh_to_the_same_end_read_the_log_once() -> None:
    """The final evaluation's look-backs (month-end-close's statement date and weekly
    as-of dates) fold afresh to the head; they share one read of the events and rows
    (``LogReads``) and give what folds from scratch give."""
    a = attempt("sqlite", "month-end-close", 5, 6, 3)
    folds = per_date_control(a)
    served = folds.reads.served
    check_final_equality(a, folds)
    assert folds.reads.served > served


def test_log_reads_keep_a_read_for_the_same_end_only(tmp_path: Path) -> None:
    """A read from the start is kept for the same store and end; a new end, another store,
    a read from a later position or one longer than the limit is read again."""
    a = attempt("sqlite", "cash-application", 1, 3, 2)
    head = a.store.head()[0]
    reads = LogReads(limit=head)
    first = list(reads.events(a.store, 0, head, "erp", ["invoice_issued"]))
    assert first and reads.served == 0
    assert list(reads.events(a.store, 0, head, "erp", ["invoice_issued"])) == first
    assert reads.served == 1
    shorter = list(reads.events(a.store, 0, head - 1, "erp", ["invoice_issued"]))
    assert reads.served == 1 and shorter == [e for e in first if e.position <= head - 1]
    list(reads.events(a.store, 5, head - 1, "erp", ["invoice_issued"]))
    assert reads.served == 1
    other = EventStore.open(tmp_path / "other.db", create=True)
    assert list(reads.events(other, 0, head - 1, "erp", ["invoice_issued"])) == []
    assert reads.served == 1
    small = LogReads(limit=1)
    everything = list(small.events(a.store, 0, head, None, ["invoice_issued",
                                                            "bank_line_posted"]))
    assert len(everything) > 1
    assert list(small.events(a.store, 0, head, None, ["invoice_issued",
                                                      "bank_line_posted"])) == everything
    assert small.served == 0


def check_look_backs_to_turn_ends(data: st.DataObject) -> None:
    """Look backs to turns' ends asked in any order on one context (the checks of a
    reconciliation file as each turn left it, ``ReconciliationTies.items_as_books``) fold
    on from one another (``CheckContext.turn_ends``) and give what a fresh context gives."""
    seed = data.draw(st.integers(0, 10_000), label="seed")
    months = data.draw(st.integers(2, 3), label="months")
    a = attempt("sqlite", "month-end-close", seed, 5, 3, months)
    shared = context_for(a.store, a.loaded, workspace=None)
    days = data.draw(st.lists(st.sampled_from(sorted(set(shared.turn_dates))), min_size=2,
                              max_size=12, unique=True), label="turns")
    if data.draw(st.booleans(), label="last first, then in order"):
        days = [max(days), *sorted(d for d in days if d != max(days))]
    for day in days:
        spec = ReconciliationTies(type="reconciliation_ties", path="out/r.csv", as_of=day)
        fresh = context_for(a.store, a.loaded, workspace=None)
        assert reconciling_items(shared, spec) == reconciling_items(fresh, spec), day


@SETTINGS
@given(data=st.data())
def test_look_backs_to_turn_ends_in_any_order_equal_fresh_folds(data: st.DataObject) -> None:
    check_look_backs_to_turn_ends(data)


def test_look_backs_in_date_order_fold_on_from_one_another() -> None:
    """fiscal-year's order (the last month's check, then every month's from the first):
    two folds of each kind are started afresh, not one per look back."""
    a = attempt("sqlite", "month-end-close", 3, 5, 3, 3)
    ctx = context_for(a.store, a.loaded, workspace=None)
    days = sorted(set(ctx.turn_dates))
    for day in [days[-1], *days[:-1]]:
        reconciling_items(ctx, ReconciliationTies(type="reconciliation_ties",
                                                  path="out/r.csv", as_of=day))
    kinds = len(ctx.turn_ends._folds)
    assert kinds >= 3  # the world, the books, the postings
    assert ctx.turn_ends.fresh <= 2 * kinds < len(days) * kinds


def check_prepared_look_backs(backend: str, data: st.DataObject) -> None:
    """Per-date control with the final look backs prepared between dates, from the first
    (the checks beside the run, ``runs.daily.LookbacksAhead``; a date's spare time ends
    after a few steps, or at once): each look back at the log's head is the fold a fresh
    one as of its date is, each to a turn's end gives the reconciling items a fresh
    context gives, and the final evaluation gives what folds from scratch give."""
    a = attempt(backend, "month-end-close", data.draw(st.integers(0, 9), label="seed"), 6, 3)
    lookbacks = final_lookbacks(a.loaded.checks)
    at_turns = final_lookbacks(a.loaded.checks, turns=True)
    assert lookbacks and at_turns  # the statement date, the weekly comparisons, the file
    folds = Folds()
    ahead = LookbacksAhead(a.loaded, folds)
    # each date's spare time: how many steps of 300 positions before work comes (None:
    # all it needs)
    spare = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=len(a.ends),
                               max_size=len(a.ends)), label="spare steps")
    for (day, end), steps in zip(a.ends, spare, strict=True):
        ctx = context_for(a.store, a.loaded, workspace=None, as_of=day, position=end,
                          folds=folds)
        evaluate([s for _, s in daily_specs(a.loaded)], ctx)
        left = [steps]

        def stop(left: list[int | None] = left) -> bool:
            if left[0] is None:
                return False
            left[0] -= 1
            return left[0] < 0

        done = ahead.after(a.store, day, end, stop=stop)
        assert done or steps is not None
    head = a.store.head()[0]
    live = context_for(a.store, a.loaded, workspace=None, folds=folds,
                       turn_ends=ahead.turn_ends)
    for day in sorted({d for d, _ in lookbacks}):
        _same_books(_books(live, day), fold_books(a.store, as_of=day))
        _same_world(world_view(live, day), fold_world(a.store, as_of=day, position=head))
    assert folds.prepared_used > 0  # made at the first date, whatever time it had
    files = [s for s in a.loaded.checks if s.turn_lookbacks()]
    kept = ahead.turn_ends.keep(("checks.reconciling_items",), dict)
    assert files and len(kept) == len(files)  # each worked out once its turn was over
    made = ahead.turn_ends.fresh
    for spec in files:
        assert reconciling_items(live, spec) == reconciling_items(
            context_for(a.store, a.loaded, workspace=None), spec)
    assert ahead.turn_ends.fresh == made  # found, not folded again
    for day in sorted({d for d, _ in at_turns}):
        spec = ReconciliationTies(type="reconciliation_ties", path="out/r.csv", as_of=day)
        fresh = context_for(a.store, a.loaded, workspace=None)
        assert reconciling_items(live, spec) == reconciling_items(fresh, spec), day
    check_final_equality(a, folds, ahead.turn_ends)


@SETTINGS
@given(data=st.data())
def test_prepared_look_backs_equal_fresh_folds_sqlite(data: st.DataObject) -> None:
    check_prepared_look_backs("sqlite", data)


@pytest.mark.postgres
@settings(SETTINGS, max_examples=2)
@given(data=st.data())
def test_prepared_look_backs_equal_fresh_folds_postgres(data: st.DataObject) -> None:
    require_postgres()
    check_prepared_look_backs("postgres", data)


def test_a_look_back_not_prepared_is_folded_afresh() -> None:
    """A date or a fold not prepared folds afresh as before; a prepared one is taken,
    advanced."""
    a = attempt("sqlite", "month-end-close", 5, 6, 3)
    folds = per_date_control(a)
    day, other = a.ends[2][0], a.ends[4][0]
    folds.prepare(reconciled_on(day) | {(other, "checks.world")})
    live = context_for(a.store, a.loaded, workspace=None, folds=folds)
    fresh = folds.fresh
    _books(live, a.ends[3][0])  # not prepared
    assert folds.fresh == fresh + 1 and folds.prepared_used == 0
    folds.advance_prepared(a.store, a.ends[-1][1])
    _books(live, day)
    assert folds.prepared_used == 1 and folds.fresh == fresh + 1
    _books(live, other)  # only its world's records were prepared
    world_view(live, other)
    assert folds.prepared_used == 2 and folds.fresh == fresh + 2


def drive_ahead(a: Attempt) -> tuple[Folds, LookbacksAhead]:
    """Per-date control over the attempt's dates, as the checks process does it: each
    date's checks as of its end, then the final checks' work ahead for that date."""
    folds = Folds()
    ahead = LookbacksAhead(a.loaded, folds)
    for day, end in a.ends:
        evaluate([s for _, s in daily_specs(a.loaded)],
                 context_for(a.store, a.loaded, workspace=None, as_of=day, position=end,
                             folds=folds))
        assert ahead.after(a.store, day, end)
    return folds, ahead


def test_a_look_back_to_a_turns_end_is_worked_out_once_that_turn_is_over() -> None:
    """month-end-close's reconciliation file, judged as the May 29 turn left the books: its
    folds are folded ahead from the first date and held at that turn's end once the date
    is over, its reconciling items worked out then (``CheckSpec.ahead``), and the final
    evaluation finds them, folding nothing again."""
    a = attempt("sqlite", "month-end-close", 2, 6, 3)
    (day,) = {d for d, _ in final_lookbacks(a.loaded.checks, turns=True)}
    folds, ahead = drive_ahead(a)
    live = context_for(a.store, a.loaded, workspace=None, folds=folds,
                       turn_ends=ahead.turn_ends)
    (spec,) = [s for s in a.loaded.checks if s.turn_lookbacks()]
    assert isinstance(spec, ReconciliationTies) and spec.as_of == day
    # the books, the postings, the world's records: prepared, none folded from the start
    assert ahead.turn_ends.prepared_used == 3 and ahead.turn_ends.fresh == 0
    assert reconciling_items(live, spec) == reconciling_items(
        context_for(a.store, a.loaded, workspace=None), spec)
    assert ahead.turn_ends.fresh == 0 and ahead.turn_ends.prepared_used == 3


def test_a_comparison_at_every_turn_is_worked_out_ahead() -> None:
    """cash-application's ``books_match_world`` with ``at_turns``: the comparison at each
    turn date's end is worked out once that date is over, in date order on from the last
    (``CheckSpec.ahead``); the final evaluation finds every one, folding nothing, and
    gives what a fresh evaluation gives."""
    from checks.control import books_match_world

    a = attempt("sqlite", "cash-application", 3, 12, 3)
    (spec,) = [s for s in a.loaded.checks if getattr(s, "at_turns", False)]
    folds, ahead = drive_ahead(a)
    live = context_for(a.store, a.loaded, workspace=None, folds=folds,
                       turn_ends=ahead.turn_ends)
    fresh = context_for(a.store, a.loaded, workspace=None)
    kept = [v for k, v in ahead.turn_ends._kept.items() if k[0] == "checks.at_turns"
            and k[-1] != "folds"]
    assert len(kept) == 1 and len(kept[0]) == len(set(live.turn_dates)) > 1
    made = sum(f.fresh for k, f in ahead.turn_ends._kept.items() if k[-1] == "folds")
    assert made >= 3
    assert books_match_world(spec, live) == books_match_world(spec, fresh)
    assert sum(f.fresh for k, f in ahead.turn_ends._kept.items() if k[-1] == "folds") == made


@settings(SETTINGS, max_examples=25)
@given(data=st.data())
def test_the_window_read_gives_what_the_log_gives(data: st.DataObject) -> None:
    """``LogReads.window``: any run of reads on from a position (forward, back, within,
    past its limit; any realm and types) gives the events ``store.read`` gives."""
    a = attempt("sqlite", "month-end-close", 2, 6, 3)
    head = a.store.head()[0]
    reads = LogReads()
    reads.window_limit = data.draw(st.sampled_from([50, 400, 20_000]), label="limit")
    kinds = sorted({e.type for e in a.store.read()})
    for _ in range(data.draw(st.integers(1, 12), label="reads")):
        after = data.draw(st.integers(1, head - 1), label="after")
        until = data.draw(st.integers(after + 1, min(head, after + 600)), label="until")
        realm = data.draw(st.sampled_from([None, "erp", "world"]), label="realm")
        types = data.draw(st.lists(st.sampled_from(kinds), max_size=6, unique=True),
                          label="types")
        got = list(reads.events(a.store, after, until, realm, types))
        want = list(a.store.read(after=after, until=until, realm=realm, types=types)
                    ) if types else []
        assert got == want
