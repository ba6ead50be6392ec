"""The strict scenario loader: what loads, and the one message for every kind of mistake."""

from __future__ import annotations

import textwrap
from datetime import date
from pathlib import Path

import pytest
import yaml

from counterparties.distributions import Constant, Uniform
from counterparties.profiles import VENDOR_PROFILES, CustomerProfile
from erp.charts import CHARTS
from scenarios.errors import ScenarioError
from scenarios.loader import (
    find_scenario,
    format_path,
    library_dir,
    list_library,
    load_scenario,
    parse_yaml,
)
from scenarios.spec import Scenario
from scenarios.strict_yaml import MAX_SHOWN

FULL = """\
id: cash-application
title: Apply two weeks of customer receipts
description: Customers pay the way customers do.
calendar: {start: 2026-03-02, business_days: 10, holidays: [2026-03-06]}
company:
  chart: standard-services
  opening: {bank_balance: "250000.00", ar_open_invoices: 300}
  policies: {clerk_may_post_to_control_accounts: false, clerk_write_off_limit: "25.00"}
  automation: {bank_feed: true, auto_receipts: true}
population:
  customers:
    count: 120
    profiles: {on_time: 0.55, late: 0.2, card_processor: 0.1, intl_wire: 0.05,
               multi_invoice_ach: 0.1}
    params:
      late: {pay_days_after_due: {dist: uniform, low: 3, high: 20}, orders_per_month: 2}
  vendors: {count: 4, profiles: {reliable: 3, bills_twice: 1}}
injections:
  - {on: 2026-03-05, kind: payment_quotes_other_customers_invoice}
  - on: 2026-03-09
    kind: duplicate_bill
    params: {vendor: V-0001}
turns:
  every: business_day
  dates: [2026-03-07]
  prompt: prompts/turn.md
  outputs: [out/unapplied.csv]
checks:
  - {type: control_ties, account: "1200", name: ar-ties-to-subledger}
reference_agent: cash-application
"""

MINIMAL = """\
id: x
title: T
calendar: {start: 2026-03-02, business_days: 10}
turns: {prompt: prompts/turn.md}
"""
"""Ten business days from Monday 2026-03-02: the calendar ends on Friday 2026-03-13."""

PROMPT = "It is {date}. Apply today's receipts.\n"


def write(folder: Path, text: str, *, name: str = "x.yaml", prompt: str | None = PROMPT) -> Path:
    """A scenario YAML in ``folder``, with ``prompts/turn.md`` unless ``prompt`` is None."""
    folder.mkdir(parents=True, exist_ok=True)
    if prompt is not None:
        (folder / "prompts").mkdir(exist_ok=True)
        (folder / "prompts" / "turn.md").write_text(prompt, encoding="utf-8")
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def error(folder: Path, text: str, **kw: object) -> str:
    """The message of loading a scenario that must not load."""
    path = write(folder, text, **kw)  # type: ignore[arg-type]
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    return str(info.value)


def with_lines(*lines: str) -> str:
    """MINIMAL with more top-level lines."""
    return MINIMAL + "".join(line + "\n" for line in lines)


# --- what loads ------------------------------------------------------------------------


def test_a_full_scenario_loads(tmp_path: Path) -> None:
    path = write(tmp_path / "cash", FULL, name="scenario.yaml")
    loaded = load_scenario(path)
    s = loaded.scenario
    assert loaded.path == path
    assert loaded.base_dir == tmp_path / "cash"
    assert loaded.prompt_template == PROMPT
    assert len(loaded.sha256) == 64
    assert s.id == "cash-application"
    assert s.calendar.start == date(2026, 3, 2)
    assert s.calendar.holidays == (date(2026, 3, 6),)
    assert s.calendar.build().end == date(2026, 3, 16)  # ten business days, one a holiday
    assert s.company.opening.bank_balance == 25_000_000
    assert s.company.policies.clerk_write_off_limit == 2_500
    assert s.company.policies.clerk_may_post_to_control_accounts is False
    assert s.population.customers.count == 120
    assert s.population.vendors.profiles == {"reliable": 3.0, "bills_twice": 1.0}
    assert [(i.on, i.kind, i.params) for i in s.injections] == [
        (date(2026, 3, 5), "payment_quotes_other_customers_invoice", {}),
        (date(2026, 3, 9), "duplicate_bill", {"vendor": "V-0001"}),
    ]
    assert s.turns.dates == (date(2026, 3, 7),)
    assert s.turns.outputs == ("out/unapplied.csv",)
    assert s.checks == ({"type": "control_ties", "account": "1200",
                         "name": "ar-ties-to-subledger"},)


def test_yaml_1_1_words_stay_strings(tmp_path: Path) -> None:
    loaded = load_scenario(write(tmp_path, with_lines(
        "description: no",
        "reference_agent: off",
        "injections:",
        "  - on: 2026-03-04",
        "    kind: duplicate_bank_line",
    ).replace("title: T", "title: yes")))
    s = loaded.scenario
    assert (s.title, s.description, s.reference_agent) == ("yes", "no", "off")
    assert s.injections[0].on == date(2026, 3, 4)


def test_the_yaml_reader_keeps_dates_octals_and_sexagesimals_as_text() -> None:
    text = ("a: 0123\nb: 1:30\nc: 12\nd: -1.5\ne: true\nf: False\ng: 2026-03-02\nh: on\n"
            "i: y\nj: 1_000\nk: ~\nl: =\nm: !!timestamp 2026-02-30\n")
    assert parse_yaml(text) == {"a": "0123", "b": "1:30", "c": 12, "d": -1.5, "e": True,
                                "f": False, "g": "2026-03-02", "h": "on", "i": "y",
                                "j": 1000, "k": None, "l": "=", "m": "2026-02-30"}
    # ...without changing PyYAML's own safe loader for anyone else
    assert yaml.safe_load("on: yes") == {True: True}


def test_a_bare_number_for_a_distribution_is_a_constant(tmp_path: Path) -> None:
    loaded = load_scenario(write(tmp_path, with_lines(
        "population:",
        "  customers:",
        "    profiles: {late: 1}",
        "    params: {late: {pay_days_after_due: 7, orders_per_month: {dist: uniform,"
        " low: 1, high: 2}}}",
    )))
    params = loaded.scenario.population.customers.params["late"]
    assert params == {"pay_days_after_due": 7,
                      "orders_per_month": {"dist": "uniform", "low": 1, "high": 2}}
    from counterparties.profiles import CUSTOMER_PROFILES, resolve_profile

    profile = resolve_profile(CUSTOMER_PROFILES, "late", params)
    assert isinstance(profile, CustomerProfile)
    assert profile.pay_days_after_due == Constant(value=7)
    assert profile.orders_per_month == Uniform(low=1, high=2)


def test_the_hash_covers_the_yaml_and_the_prompt(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    first = load_scenario(path).sha256
    assert load_scenario(path).sha256 == first
    (tmp_path / "prompts" / "turn.md").write_text(PROMPT + "Be careful.\n", encoding="utf-8")
    changed_prompt = load_scenario(path).sha256
    assert changed_prompt != first
    (tmp_path / "prompts" / "turn.md").write_text(PROMPT, encoding="utf-8")
    assert load_scenario(path).sha256 == first
    path.write_text(MINIMAL + "description: more\n", encoding="utf-8")
    assert load_scenario(path).sha256 not in (first, changed_prompt)


def test_a_relative_path_loads_against_the_yaml_folder(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "s", MINIMAL)
    monkeypatch.chdir(tmp_path)
    loaded = load_scenario("s/x.yaml")
    assert loaded.path == tmp_path / "s" / "x.yaml"
    assert loaded.base_dir == tmp_path / "s"
    assert loaded.prompt_template == PROMPT


def test_format_path() -> None:
    assert format_path(("turns", "dates", 2)) == "turns.dates[2]"
    assert format_path(("injections", 0, "params", "vendor")) == "injections[0].params.vendor"
    assert format_path(()) == ""


# --- unknown, missing and mistyped fields ---------------------------------------------------


def test_unknown_field_at_the_top_level_lists_the_allowed_ones(tmp_path: Path) -> None:
    allowed = ", ".join(sorted(Scenario.model_fields))
    assert error(tmp_path, with_lines("titel: T2")) == (
        f"scenario x.yaml: titel: unknown field (allowed: {allowed})")


def test_unknown_nested_field_lists_the_allowed_ones(tmp_path: Path) -> None:
    text = MINIMAL.replace("{start: 2026-03-02,", "{strat: 2026-03-02, start: 2026-03-02,")
    assert error(tmp_path, text) == (
        "scenario x.yaml: calendar.strat: unknown field "
        "(allowed: business_days, end, holidays, start)")


def test_unknown_policy_field(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines("company: {policies: {clerk_may_post: true}}"))
    assert message == (
        "scenario x.yaml: company.policies.clerk_may_post: unknown field (allowed: "
        "clerk_fee_allowance_bp, clerk_fee_allowance_fixed, clerk_may_approve_bills, "
        "clerk_may_post_to_control_accounts, clerk_write_off_limit, enforce_credit_limits, "
        "match_price_tolerance_bp, match_quantity_tolerance_bp, minimum_bank_balance)")


def test_unknown_behaviour_parameter_lists_the_profile_fields(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines(
        "population: {customers: {params: {late: {pay_days_after_dew: 3}}}}"))
    assert message == (
        "scenario x.yaml: population.customers.params.late.pay_days_after_dew: unknown field "
        "(allowed: dispute_rate, line_amount, order_lines, orders_per_month, "
        "pay_days_after_due, share_paid)")


def test_missing_required_fields_are_all_reported(tmp_path: Path) -> None:
    text = MINIMAL.replace("title: T\n", "").replace("{prompt: prompts/turn.md}", "{}")
    assert error(tmp_path, text) == (
        "scenario x.yaml: 2 problems\n"
        "  title: missing (required)\n"
        "  turns.prompt: missing (required)")


@pytest.mark.parametrize(("value", "shown"), [
    ("2026-02-30", "'2026-02-30'"),
    ("2026-3-5", "'2026-3-5'"),
    ("tomorrow", "'tomorrow'"),
])
def test_a_bad_date_names_its_path_and_value(tmp_path: Path, value: str, shown: str) -> None:
    text = MINIMAL.replace("{prompt: prompts/turn.md}",
                           f"{{prompt: prompts/turn.md, dates: [2026-03-03, 2026-03-04, {value}]}}")
    assert error(tmp_path, text, name="month-end-close.yaml") == (
        f"scenario month-end-close.yaml: turns.dates[2]: {shown} is not a valid date "
        "(expected YYYY-MM-DD)")


def test_a_bad_start_date(tmp_path: Path) -> None:
    text = MINIMAL.replace("start: 2026-03-02", "start: 2026-13-01")
    assert error(tmp_path, text) == (
        "scenario x.yaml: calendar.start: '2026-13-01' is not a valid date (expected YYYY-MM-DD)")


@pytest.mark.parametrize(("line", "expected"), [
    ("calendar: {start: 2026-03-02, business_days: five}",
     "calendar.business_days: 'five' is not a whole number"),
    ("calendar: [2026-03-02]",
     "calendar: ['2026-03-02'] is not a mapping (expected key: value pairs)"),
    ("turns: {prompt: prompts/turn.md, outputs: out/a.csv}",
     "turns.outputs: 'out/a.csv' is not a list (expected [a, b] or one '- item' per line)"),
    ("turns: {prompt: prompts/turn.md, every: daily}",
     "turns.every: 'daily' is not allowed (expected one of: business_day, week, once or none)"),
    ("turns: {prompt: prompts/turn.md, month_end: sometimes}",
     "turns.month_end: 'sometimes' is not a boolean (expected true or false)"),
    ("title: 2026",
     "title: 2026 is not a string"),
    ("id: Cash Application",
     "id: 'Cash Application' does not match the pattern ^[a-z0-9][a-z0-9-]*$"),
    ("population: {customers: {profiles: {late: heavy}}}",
     "population.customers.profiles.late: 'heavy' is not a number"),
    ("population: {customers: {count: 2.5}}",
     "population.customers.count: 2.5 is not a whole number"),
])
def test_a_wrong_type_names_path_value_and_expectation(tmp_path: Path, line: str,
                                                       expected: str) -> None:
    key = line.split(":")[0]
    kept = [x for x in MINIMAL.splitlines() if not x.startswith(key + ":")]
    assert error(tmp_path, "\n".join([*kept, line]) + "\n") == f"scenario x.yaml: {expected}"


def test_an_output_path_may_not_leave_the_work_folder(tmp_path: Path) -> None:
    text = MINIMAL.replace("{prompt: prompts/turn.md}",
                           "{prompt: prompts/turn.md, outputs: [out/ok.csv, ../escape.csv]}")
    assert error(tmp_path, text) == (
        "scenario x.yaml: turns.outputs[1]: '../escape.csv' has a '.' or '..' part (expected "
        "a path inside the work folder, like out/unapplied.csv)")


# --- behaviours, injections, distributions ---------------------------------------------------


def test_unknown_behaviour_name(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines("population: {customers: {profiles: {laet: 1}}}"))
    assert message == (
        "scenario x.yaml: population.customers.profiles.laet: unknown customer behaviour "
        "'laet' (expected one of: card_processor, customer_only_wire, disputes, intl_wire, "
        "late, multi_invoice_ach, never_pays, on_time, partial, pays_closed_invoice, "
        "pays_twice, wrong_reference)")


def test_unknown_vendor_behaviour_in_params(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines("population: {vendors: {params: {fraud: {}}}}"))
    assert message == (
        "scenario x.yaml: population.vendors.params.fraud: unknown vendor behaviour 'fraud' "
        f"(expected one of: {', '.join(sorted(VENDOR_PROFILES))})")
    assert {"bills_twice", "changes_bank", "reliable"} <= set(VENDOR_PROFILES)


def test_behaviour_weights_must_not_all_be_zero(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines("population: {customers: {profiles: {late: 0}}}"))
    assert message == ("scenario x.yaml: population.customers.profiles: behaviour weights "
                       "must add up to more than 0")


def test_unknown_injection_kind(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines("injections: [{on: 2026-03-04, kind: dupe_bill}]"))
    from counterparties.injections import INJECTIONS

    assert message == ("scenario x.yaml: injections[0].kind: unknown injection kind 'dupe_bill' "
                       f"(expected one of: {', '.join(sorted(INJECTIONS))})")
    assert {"adversarial_email", "duplicate_bank_line", "duplicate_bill"} <= set(INJECTIONS)


def test_bad_injection_params(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines(
        "injections:",
        "  - {on: 2026-03-04, kind: duplicate_bill, params: {vendr: V-0001}}",
        "  - {on: 2026-03-05, kind: adversarial_email, params: {subject: [a, b]}}",
    ))
    assert message == (
        "scenario x.yaml: 2 problems\n"
        "  injections[0].params.vendr: unknown field (allowed: vendor)\n"
        "  injections[1].params.subject: ['a', 'b'] is not a string")


def test_uniform_with_high_below_low(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines(
        "population: {customers: {params: {late: {pay_days_after_due: "
        "{dist: uniform, low: 20, high: 3}}}}}"))
    assert message == ("scenario x.yaml: population.customers.params.late.pay_days_after_due: "
                       "high 3.0 is below low 20.0")


def test_unknown_distribution(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines(
        "population: {customers: {params: {late: {pay_days_after_due: "
        "{dist: gamma, shape: 2}}}}}"))
    assert message == (
        "scenario x.yaml: population.customers.params.late.pay_days_after_due: unknown dist "
        "'gamma' (expected one of: constant, uniform, normal, poisson, lognormal)")


def test_distribution_without_its_tag_or_a_parameter(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines(
        "population:",
        "  customers:",
        "    params:",
        "      late: {pay_days_after_due: {low: 3, high: 20}}",
        "      on_time: {line_amount: {dist: uniform, low: 3}, share_paid: {dist: normal,"
        " mean: 1, sd: 0, skew: 2}}",
    ))
    assert message == (
        "scenario x.yaml: 3 problems\n"
        "  population.customers.params.late.pay_days_after_due: {'low': 3, 'high': 20} does "
        "not say which kind it is (expected a dist field: one of constant, uniform, normal, "
        "poisson, lognormal)\n"
        "  population.customers.params.on_time.line_amount.high: missing (required)\n"
        "  population.customers.params.on_time.share_paid.skew: unknown field "
        "(allowed: dist, high, low, mean, sd)")


# --- company: policies, money, counts ------------------------------------------------------


def test_policy_with_bad_values(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines(
        "company:",
        "  policies: {clerk_fee_allowance_bp: 20000, enforce_credit_limits: maybe}",
    ))
    assert message == (
        "scenario x.yaml: 2 problems\n"
        "  company.policies.clerk_fee_allowance_bp: 20000 is too large (expected at most 10000)\n"
        "  company.policies.enforce_credit_limits: 'maybe' is not a boolean "
        "(expected true or false)")


def test_money_with_three_decimals(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines('company: {opening: {bank_balance: "1200.345"}}'))
    assert message == ("scenario x.yaml: company.opening.bank_balance: '1200.345' has more "
                       "than two decimal places")


def test_money_as_a_float(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines("company: {opening: {bank_balance: 250000.50}}"))
    assert message == (
        "scenario x.yaml: company.opening.bank_balance: 250000.5: write money as a decimal "
        "string like '250000.00' (a bare number could mean units or cents)")


def test_money_as_a_bare_integer(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines("company: {opening: {bank_balance: 250000}}"))
    assert message == (
        "scenario x.yaml: company.opening.bank_balance: 250000: write money as a decimal "
        "string like '250000.00' (a bare number could mean units or cents)")


@pytest.mark.parametrize(("count", "expected"), [
    ("-1", "-1 is too small (expected at least 0)"),
    ("1000000", "1000000 is too large (expected at most 100000)"),
])
def test_out_of_range_count(tmp_path: Path, count: str, expected: str) -> None:
    message = error(tmp_path, with_lines(f"population: {{customers: {{count: {count}}}}}"))
    assert message == f"scenario x.yaml: population.customers.count: {expected}"


def test_unknown_chart(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines("company: {chart: retail}"))
    assert message == ("scenario x.yaml: company.chart: unknown chart 'retail' "
                       f"(expected one of: {', '.join(sorted(CHARTS))})")
    assert "standard-services" in CHARTS


# --- the calendar ----------------------------------------------------------------------------


def test_turn_date_outside_the_calendar(tmp_path: Path) -> None:
    text = MINIMAL.replace("{prompt: prompts/turn.md}",
                           "{prompt: prompts/turn.md, dates: [2026-03-13, 2026-03-16]}")
    assert error(tmp_path, text) == (
        "scenario x.yaml: turns.dates[1]: 2026-03-16 is outside the calendar "
        "(expected a date from 2026-03-02 to 2026-03-13)")


def test_a_turn_role_on_a_date_the_agent_does_not_act(tmp_path: Path) -> None:
    text = MINIMAL.replace("{prompt: prompts/turn.md}",
                           "{prompt: prompts/turn.md, every: once, "
                           "roles: {2026-03-12: controller}}")
    assert error(tmp_path, text) == (
        "scenario x.yaml: turns.roles.2026-03-12: 2026-03-12 is not a turn date (expected "
        "one of the dates the agent acts on)")
    bad_role = MINIMAL.replace("{prompt: prompts/turn.md}",
                               "{prompt: prompts/turn.md, roles: {2026-03-12: auditor}}")
    assert "turns.roles" in error(tmp_path, bad_role) and "auditor" in error(tmp_path, bad_role)


def test_injection_date_outside_the_calendar(tmp_path: Path) -> None:
    message = error(tmp_path, with_lines(
        "injections:",
        "  - {on: 2026-03-02, kind: duplicate_bank_line}",
        "  - {on: 2026-02-27, kind: duplicate_bank_line}",
    ))
    assert message == (
        "scenario x.yaml: injections[1].on: 2026-02-27 is outside the calendar "
        "(expected a date from 2026-03-02 to 2026-03-13)")


@pytest.mark.parametrize(("calendar", "got"), [
    ("{start: 2026-03-02, business_days: 10, end: 2026-03-13}", "both"),
    ("{start: 2026-03-02}", "neither"),
])
def test_business_days_or_end_exactly_one(tmp_path: Path, calendar: str, got: str) -> None:
    text = MINIMAL.replace("{start: 2026-03-02, business_days: 10}", calendar)
    assert error(tmp_path, text) == (
        f"scenario x.yaml: calendar: give exactly one of business_days or end (got {got})")


def test_end_before_start(tmp_path: Path) -> None:
    text = MINIMAL.replace("business_days: 10", "end: 2026-03-01")
    assert error(tmp_path, text) == (
        "scenario x.yaml: calendar: end 2026-03-01 is before start 2026-03-02")


def test_many_problems_show_the_first_ten(tmp_path: Path) -> None:
    extra = [f"  bogus{n}: 1" for n in range(12)]
    message = error(tmp_path, "\n".join(["calendar:", "  start: 2026-03-02",
                                         "  business_days: 10", *extra]) + "\n")
    lines = message.splitlines()
    assert lines[0] == "scenario x.yaml: 15 problems"
    assert lines[1:4] == ["  id: missing (required)", "  title: missing (required)",
                          "  calendar.bogus0: unknown field (allowed: business_days, end, "
                          "holidays, start)"]
    assert len(lines) == 1 + MAX_SHOWN + 1
    assert lines[-1] == "  ... and 5 more"


def test_the_error_keeps_every_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "calendar: {start: 2026-03-02, business_days: 10}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.file == "x.yaml"
    assert info.value.problems == ("id: missing (required)", "title: missing (required)",
                                   "turns: missing (required)")
    assert isinstance(info.value, ValueError)


# --- the YAML itself -------------------------------------------------------------------------


def test_yaml_syntax_error_gives_line_and_column(tmp_path: Path) -> None:
    text = "id: x\ntitle: T\ncalendar:\n  start: 2026-03-02\n   business_days: 10\n"
    assert error(tmp_path, text) == (
        "scenario x.yaml: line 5, column 17: mapping values are not allowed here")


def test_unclosed_flow_mapping_names_where_it_started(tmp_path: Path) -> None:
    text = "id: x\ntitle: T\ncalendar: {start: 2026-03-02, business_days: 10\nturns: {}\n"
    assert error(tmp_path, text) == (
        "scenario x.yaml: line 4, column 6: expected ',' or '}', but got ':' "
        "(while parsing a flow mapping at line 3)")


def test_duplicate_key(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "title: U\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        "scenario x.yaml: line 5, column 1: duplicate key 'title' (first at line 2, column 1)")
    assert info.value.problems == ("line 5, column 1: duplicate key 'title' "
                                   "(first at line 2, column 1)",)


def test_duplicate_key_in_a_flow_mapping(tmp_path: Path) -> None:
    text = MINIMAL.replace("business_days: 10}", "business_days: 10, start: 2026-03-03}")
    assert error(tmp_path, text) == (
        "scenario x.yaml: line 3, column 50: duplicate key 'start' "
        "(first at line 3, column 12)")


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    assert error(tmp_path, text) == (
        "scenario x.yaml: the file is empty (expected a mapping with at least id, title, "
        "calendar and turns)")


@pytest.mark.parametrize(("text", "kind"), [
    ("- id: x\n- title: T\n", "a list"),
    ("just words\n", "a string ('just words')"),
    ("42\n", "a number (42)"),
])
def test_top_level_not_a_mapping(tmp_path: Path, text: str, kind: str) -> None:
    assert error(tmp_path, text) == (
        f"scenario x.yaml: the top level is {kind} (expected a mapping with at least id, "
        "title, calendar and turns)")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"id: caf\xe9\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        "scenario x.yaml: the file is not UTF-8 text (byte 0xe9 at offset 7)")


def test_missing_yaml_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "nope.yaml")
    assert str(info.value) == f"scenario nope.yaml: file {tmp_path / 'nope.yaml'} does not exist"


def test_a_library_file_is_named_with_its_folder(tmp_path: Path) -> None:
    message = error(tmp_path / "month-end-close", with_lines("bogus: 1"), name="scenario.yaml")
    assert message.startswith("scenario month-end-close/scenario.yaml: bogus: unknown field")


# --- the prompt template ---------------------------------------------------------------------


def test_missing_prompt_file(tmp_path: Path) -> None:
    message = error(tmp_path, MINIMAL, prompt=None)
    assert message == (f"scenario x.yaml: turns.prompt: prompt template "
                       f"{tmp_path.resolve() / 'prompts' / 'turn.md'} does not exist")


def test_prompt_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "prompts" / "turn.md").mkdir(parents=True)
    message = error(tmp_path, MINIMAL, prompt=None)
    assert message == (f"scenario x.yaml: turns.prompt: prompt template "
                       f"{tmp_path.resolve() / 'prompts' / 'turn.md'} is a directory "
                       "(expected a file)")


def test_unreadable_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, MINIMAL)
    prompt = tmp_path.resolve() / "prompts" / "turn.md"
    read_bytes = Path.read_bytes

    def refuse(self: Path) -> bytes:  # chmod 0 does not stop root, who runs CI containers
        if self == prompt:
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (f"scenario x.yaml: turns.prompt: cannot read prompt template "
                               f"{tmp_path.resolve() / 'prompts' / 'turn.md'} "
                               "(Permission denied)")


@pytest.mark.parametrize("prompt", ["../outside.md", "prompts/../../outside.md", "/outside.md"])
def test_prompt_may_not_escape_the_scenario_folder(tmp_path: Path, prompt: str) -> None:
    (tmp_path / "outside.md").write_text("secret", encoding="utf-8")
    text = MINIMAL.replace("prompts/turn.md", prompt)
    message = error(tmp_path / "s", text)
    target = (tmp_path / "s" / prompt).resolve()
    assert message == (
        f"scenario x.yaml: turns.prompt: {prompt!r} resolves to {target}, outside the "
        f"scenario folder (expected a path inside {(tmp_path / 's').resolve()}, like "
        "prompts/turn.md)")


def test_prompt_symlinked_out_of_the_folder_escapes(tmp_path: Path) -> None:
    (tmp_path / "outside.md").write_text("secret", encoding="utf-8")
    path = write(tmp_path / "s", MINIMAL, prompt=None)
    (tmp_path / "s" / "prompts").mkdir()
    (tmp_path / "s" / "prompts" / "turn.md").symlink_to(tmp_path / "outside.md")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert "outside the scenario folder" in str(info.value)


# --- the library -----------------------------------------------------------------------------


def make_library(root: Path, *names: str) -> Path:
    """A library folder with a minimal scenario in each named folder."""
    for name in names:
        write(root / name, MINIMAL, name="scenario.yaml")
    (root / "drafts").mkdir(parents=True, exist_ok=True)  # no scenario.yaml: not listed
    return root


def test_library_dir_is_the_package_folder() -> None:
    assert library_dir() == Path(__file__).resolve().parents[2] / "scenarios" / "library"
    assert (library_dir() / "README.md").is_file()


def test_list_library(tmp_path: Path) -> None:
    lib = make_library(tmp_path / "lib", "procure-to-pay", "cash-application")
    assert list_library(lib) == ["cash-application", "procure-to-pay"]
    assert list_library(tmp_path / "no-such-folder") == []


def test_find_by_name_and_by_path(tmp_path: Path) -> None:
    lib = make_library(tmp_path / "lib", "cash-application")
    expected = lib / "cash-application" / "scenario.yaml"
    assert find_scenario("cash-application", library=lib) == expected
    assert find_scenario(str(expected), library=lib) == expected
    assert find_scenario(expected.parent, library=lib) == expected
    assert load_scenario(find_scenario("cash-application", library=lib)).scenario.id == "x"


def test_unknown_library_name_lists_the_library(tmp_path: Path) -> None:
    lib = make_library(tmp_path / "lib", "procure-to-pay", "cash-application")
    with pytest.raises(ScenarioError) as info:
        find_scenario("cash-aplication", library=lib)
    assert str(info.value) == (
        "scenario 'cash-aplication': not in the library (expected one of: cash-application, "
        "procure-to-pay; or a path to a scenario YAML)")


def test_unknown_name_in_an_empty_library(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        find_scenario("cash-application", library=tmp_path)
    assert str(info.value) == (
        f"scenario 'cash-application': not in the library (the library at {tmp_path} is "
        "empty; give a path to a scenario YAML instead)")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        find_scenario(str(tmp_path / "nope.yaml"), library=tmp_path)
    assert str(info.value) == (
        f"scenario {tmp_path / 'nope.yaml'}: {tmp_path / 'nope.yaml'} does not exist "
        "(expected a scenario YAML file or a library name)")


def test_turn_files_are_read_hashed_and_kept_inside(tmp_path: Path) -> None:
    folder = tmp_path / "sc"
    (folder / "prompts").mkdir(parents=True)
    (folder / "prompts" / "turn.md").write_text("Do {date}.")
    (folder / "policy.md").write_text("Rule 1")
    body = ("id: sc\ntitle: T\ncalendar: {start: 2026-03-02, business_days: 2}\n"
            "turns: {prompt: prompts/turn.md, files: [policy.md]}\n")
    (folder / "scenario.yaml").write_text(body)
    loaded = load_scenario(folder / "scenario.yaml")
    assert loaded.files == {"policy.md": b"Rule 1"}
    first = loaded.sha256
    (folder / "policy.md").write_text("Rule 2")
    assert load_scenario(folder / "scenario.yaml").sha256 != first
    (folder / "policy.md").unlink()
    with pytest.raises(ScenarioError, match=r"turns.files\[0\]"):
        load_scenario(folder / "scenario.yaml")


def test_every_library_scenario_loads_in_a_fresh_interpreter() -> None:
    """Loading needs only the loader: an injection kind a scenario names is known without
    importing the module that plants it (``multi_bank_month`` was registered only when
    ``counterparties.population`` had been imported, so ``load_scenario`` of
    bank-reconciliation-multi failed in a fresh process)."""
    import subprocess
    import sys

    code = ("from scenarios.loader import find_scenario, list_library, load_scenario\n"
            "for name in list_library():\n"
            "    load_scenario(find_scenario(name))\n"
            "print(len(list_library()))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) >= 11
