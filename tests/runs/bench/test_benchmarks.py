"""The year-long bench scenario: its final checks judge the last close, not the first."""

from __future__ import annotations

from datetime import date

import pytest

from runs.bench.benchmarks import EngineBench, monthly_closes, spans_one_month
from scenarios.loader import find_scenario, load_scenario


def test_monthly_closes_moves_the_month_end_checks_to_the_last_month() -> None:
    loaded = load_scenario(find_scenario("month-end-close"))
    year = monthly_closes(loaded, 12)
    by_name = {s.name: s for s in year.checks}
    # May 2026 is the first month; twelve closes end with April 2027's
    bank = by_name["bank-reconciles"]
    assert bank.model_dump()["statement_as_of"] == date(2027, 4, 30)
    ties = by_name["bank-reconciliation-ties"]
    assert ties.model_dump()["as_of"] == date(2027, 4, 30)
    assert "'2027-04-30'" in by_name["statement-lines-matched"].model_dump()["query"]
    assert "2026-05" not in by_name["statement-lines-matched"].model_dump()["query"]
    assert by_name["may-closed"].model_dump()["period"] == "2027-04"
    closed = sorted(s.model_dump()["period"] for s in year.checks if s.type == "period_closed")
    assert closed == [f"{y}-{m:02d}" for y, m in
                      [(2026, m) for m in range(5, 13)] + [(2027, m) for m in range(1, 5)]]
    assert len({s.name for s in year.checks}) == len(year.checks)  # names stay unique
    # each month's weekly turns are judged: after the last month's closing turn, before
    # the month's last business day (the month-end and closing turns are not weekly ones)
    weekly = [s.model_dump() for s in year.checks if s.type == "due_bills_paid_at_turns"]
    assert [(w["after"], w["before"]) for w in weekly[:3]] == [
        (None, date(2026, 5, 29)), (date(2026, 6, 1), date(2026, 6, 30)),
        (date(2026, 7, 1), date(2026, 7, 31))]
    assert (weekly[-1]["after"], weekly[-1]["before"]) == (date(2027, 4, 1), date(2027, 4, 30))
    assert weekly[-1]["name"] == "due-bills-paid-at-their-turn-2027-04"
    # the checks that name no month end are left as they are
    assert by_name["receipts-applied"] == next(s for s in loaded.checks
                                               if s.name == "receipts-applied")


def test_one_month_keeps_the_scenario_checks() -> None:
    loaded = load_scenario(find_scenario("month-end-close"))
    assert monthly_closes(loaded, 1).checks == loaded.checks


@pytest.mark.parametrize("beside", [False, True])
def test_a_bench_over_months_runs_the_scenarios_own_population(beside: bool) -> None:
    """``bench engine --months 2`` without a population runs the library's company (60
    customers, 15 vendors) through both closes and prints the per-date figures of the
    first and the last month worked through, then the phases: with the checks beside the
    run, also the seconds it waited for them."""
    from runs.bench.benchmarks import ENGINE_BENCH_POPULATION, run_engine_bench

    assert ENGINE_BENCH_POPULATION == (2000, 200)  # one month: a large company's
    result = run_engine_bench(months=2, checks_beside=beside)
    own = load_scenario(find_scenario("month-end-close")).scenario.population
    assert (result.customers, result.vendors) == (own.customers.count, own.vendors.count)
    assert result.accepted and result.events > 0 and sorted(result.per_date_ms) == [
        "2026-05", "2026-06", "2026-07"]
    names = [line.split(":")[0] for line in result.lines()]
    assert names == ["engine_events_per_s", "engine_wall_s", "per_date_check_ms_first_month",
                     "per_date_check_ms_last_month", "per_date_check_last_vs_first",
                     "per_date_check_cpu_ms_first_month", "per_date_check_cpu_ms_last_month",
                     "per_date_check_cpu_last_vs_first",
                     "per_date_check_cpu_us_per_event_first_month",
                     "per_date_check_cpu_us_per_event_last_month",
                     "per_date_check_cpu_us_per_event_last_vs_first", "phase_set_up_s",
                     "phase_simulation_s",
                     "phase_agent_s", "phase_turn_harness_s", "phase_per_date_checks_s",
                     "phase_verification_s", "phase_final_checks_s",
                     "phase_heap_release_s"] + (
                         ["phase_waited_for_checks_s"] if beside else [])
    # the phases of the run's own process are each a share of its wall time: none
    # negative, together not more (beside, the checks' seconds were spent meanwhile); the
    # heap release is one of them (in a long test session's process it walks a large heap:
    # a second and more, which once left half the wall outside the phases)
    assert all(v >= 0 for v in result.phases.values())
    assert all(v > 0 for k, v in result.phases.items() if k != "waited_for_checks")
    own_phases = {k: v for k, v in result.phases.items()
                  if not beside or k not in ("per_date_checks", "final_checks")}
    assert 0.5 * result.wall_s < sum(own_phases.values()) <= result.wall_s
    assert sorted(result.per_date_cpu_us_per_event) == sorted(result.per_date_ms)
    assert all(v > 0 for v in result.per_date_cpu_us_per_event.values())
    assert sorted(result.per_date_cpu_ms) == sorted(result.per_date_ms)
    assert all(v > 0 for v in result.per_date_cpu_ms.values())
    # June 1 and July 1 are closing turns inside the run and after it: July holds one date
    assert result.per_date_dates["2026-07"] == 1 and result.per_date_dates["2026-05"] > 15
    assert result.worked_months() == ["2026-05", "2026-06"]


def _bench(ms: dict[str, float], dates: dict[str, int], months: int = 1,
           cpu: dict[str, float] | None = None) -> EngineBench:
    return EngineBench(1000, 1.0, 10, 2, months, ms, True, dates, cpu or {})


def _figures(bench: EngineBench) -> dict[str, str]:
    return dict(line.split(": ") for line in bench.lines())


def test_a_scenario_over_its_own_calendar_months_reports_its_first_and_last_worked_month(
        ) -> None:
    """fiscal-year runs thirteen calendar months in one bench 'month' (``--months 1``): the
    per-date figures are January's and December's, not January's twice."""
    months = [f"2026-{m:02d}" for m in range(1, 13)] + ["2027-01"]
    ms = {m: 10.0 + i for i, m in enumerate(months)}
    dates = {m: 21 for m in months} | {"2027-01": 1}
    bench = _bench(ms, dates)
    assert bench.worked_months() == months[:-1]
    figures = _figures(bench)
    assert figures["per_date_check_ms_first_month"] == "10.0"
    assert figures["per_date_check_ms_last_month"] == "21.0"
    assert figures["per_date_check_last_vs_first"] == "2.10"
    assert "per_date_check_cpu_last_vs_first" not in figures  # no CPU figures recorded
    cpu = _figures(_bench(ms, dates, cpu={m: 4.0 for m in months} | {"2026-12": 5.0}))
    assert cpu["per_date_check_cpu_ms_first_month"] == "4.0"
    assert cpu["per_date_check_cpu_ms_last_month"] == "5.0"
    assert cpu["per_date_check_cpu_last_vs_first"] == "1.25"


def test_the_heading_counts_the_months_worked_through_not_the_bench_option() -> None:
    """fiscal-year over its own calendar (``--months 1``) worked twelve months; the one-month
    bench one (its closing turn's June left out)."""
    months = [f"2026-{m:02d}" for m in range(1, 13)] + ["2027-01"]
    year = _bench(dict.fromkeys(months, 5.0), dict.fromkeys(months, 21) | {"2027-01": 1})
    assert year.heading("fiscal-year", "oracle") == (
        "# fiscal-year: 10 customers, 2 vendors, agent oracle, 12 month(s) worked through, "
        "1,000 events, accepted")
    month = _bench({"2026-05": 8.0, "2026-06": 40.0}, {"2026-05": 21, "2026-06": 1})
    assert ", 1 month(s) worked through," in month.heading("month-end-close", "oracle")
    assert ", 3 month(s) worked through," in _bench({}, {}, months=3).heading("x", "null")


def test_the_one_month_bench_leaves_out_the_closing_turns_month() -> None:
    bench = _bench({"2026-05": 8.0, "2026-06": 40.0}, {"2026-05": 21, "2026-06": 1})
    assert bench.worked_months() == ["2026-05"]
    assert _figures(bench)["per_date_check_ms_last_month"] == "8.0"


def test_without_date_counts_every_month_is_worked() -> None:
    bench = _bench({"2026-05": 8.0, "2026-06": 12.0}, {})
    assert bench.worked_months() == ["2026-05", "2026-06"]
    assert _figures(bench)["per_date_check_last_vs_first"] == "1.50"


def test_the_large_population_is_for_a_run_of_one_month() -> None:
    month = load_scenario(find_scenario("month-end-close"))
    year = load_scenario(find_scenario("fiscal-year"))
    assert spans_one_month(month, 1)
    assert not spans_one_month(month, 2)
    assert not spans_one_month(year, 1)  # a year in its own calendar
