"""Scenario YAML that must be refused cleanly: one ScenarioError naming the file, the
field and the value, at once (no hang, no traceback, nothing found only at grading)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from scenarios.errors import ScenarioError
from scenarios.loader import library_dir, load_scenario
from scenarios.strict_yaml import MAX_DEPTH, parse_yaml, show

LIBRARY_YAML = (library_dir() / "cash-application" / "scenario.yaml").read_text()
CALENDAR = "calendar: {start: 2026-03-02, business_days: 10, holidays: []}"


def _scenario(tmp_path: Path, text: str, name: str = "x.yaml") -> Path:
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "turn.md").write_text("Do the work.\n")
    (tmp_path / "policy").mkdir(exist_ok=True)
    (tmp_path / "policy" / "cash-application-policy.md").write_text("policy\n")
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_scenario(tmp_path, text))
    return caught.value.message


def test_the_library_yaml_used_here_loads(tmp_path: Path) -> None:
    assert load_scenario(_scenario(tmp_path, LIBRARY_YAML)).scenario.id == "cash-application"


def test_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["xxxxxxxxxxxxxxxxxxxxxxxx", "xxxxxxxxxxxxxxxxxxxxxxxx"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 40)]
    text = "\n".join(lines) + "\n" + LIBRARY_YAML
    started = time.monotonic()
    message = _error(tmp_path, text)
    assert time.monotonic() - started < 2
    assert message == ("scenario x.yaml: line 2, column 10: alias *a0 is not allowed (aliases "
                       "and anchors are refused: write the value out)")


def test_a_merge_key_alias_is_refused_too(tmp_path: Path) -> None:
    text = LIBRARY_YAML.replace("company:\n", "base: &b {name: X}\ncompany:\n  <<: *b\n")
    assert "alias *b is not allowed" in _error(tmp_path, text)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 10_000])
def test_deep_nesting_is_refused(tmp_path: Path, depth: int) -> None:
    text = LIBRARY_YAML + "extra: " + "[" * depth + "]" * depth + "\n"
    message = _error(tmp_path, text)
    assert message.startswith("scenario x.yaml: line ")
    assert message.endswith(f"nested more than {MAX_DEPTH} levels deep")


def test_a_huge_text_is_refused(tmp_path: Path) -> None:
    message = _error(tmp_path, LIBRARY_YAML + "# " + "x" * 4_000_000 + "\n")
    assert "characters long (expected at most 4,000,000)" in message


def test_tags_for_what_is_not_plain_data_are_refused(tmp_path: Path) -> None:
    message = _error(tmp_path, LIBRARY_YAML.replace("description: >", "x: !!set {a, b}\n"
                                                    "description: >"))
    assert "the tag tag:yaml.org,2002:set is not allowed" in message


@pytest.mark.parametrize(("calendar", "message"), [
    ("{start: 9999-12-20, business_days: 10}",
     "calendar.start: 9999-12-20 is out of range (expected a date from 1900-01-01 to "
     "2199-12-31)"),
    ("{start: 2026-03-02, end: 9999-12-31}",
     "calendar.end: 9999-12-31 is out of range (expected a date from 1900-01-01 to "
     "2199-12-31)"),
    ("{start: 2026-03-02, end: 2099-12-31}",
     "calendar: end 2099-12-31 is more than 3660 days after start 2026-03-02 (expected a "
     "calendar of at most ten years)"),
    ("{start: 2026-03-02, business_days: 10, holidays: [0001-01-01]}",
     "calendar.holidays[0]: 0001-01-01 is out of range (expected a date from 1900-01-01 to "
     "2199-12-31)"),
])
def test_calendars_out_of_range_are_refused(tmp_path: Path, calendar: str,
                                            message: str) -> None:
    text = LIBRARY_YAML.replace(CALENDAR, f"calendar: {calendar}")
    got = _error(tmp_path, text)
    assert message in got, got


@pytest.mark.parametrize(("old", "new", "message"), [
    ("clerk_may_post_to_control_accounts: false", "clerk_may_post_to_control_accounts: off",
     "company.policies.clerk_may_post_to_control_accounts: 'off' is not a boolean (expected "
     "true or false)"),
    ("bank_feed: true", "bank_feed: on",
     "company.automation.bank_feed: 'on' is not a boolean (expected true or false)"),
    ("bank_feed: true", "bank_feed: 1",
     "company.automation.bank_feed: 1 is not a boolean (expected true or false)"),
    ("  every: business_day", "  every: business_day\n  carry_files: no",
     "turns.carry_files: 'no' is not a boolean (expected true or false)"),
    ("name: ar-ties-to-subledger, daily: true", "name: ar-ties-to-subledger, daily: yes",
     "checks[1].daily: 'yes' is not a boolean (expected true or false)"),
])
def test_yaml_11_booleans_are_not_booleans(tmp_path: Path, old: str, new: str,
                                           message: str) -> None:
    assert old in LIBRARY_YAML
    got = _error(tmp_path, LIBRARY_YAML.replace(old, new))
    assert got == f"scenario x.yaml: {message}"


def test_a_negative_policy_amount_is_refused(tmp_path: Path) -> None:
    got = _error(tmp_path, LIBRARY_YAML.replace('clerk_write_off_limit: "0.00"',
                                                'clerk_write_off_limit: "-5.00"'))
    assert got == ("scenario x.yaml: company.policies.clerk_write_off_limit: -5.00 is negative "
                   "(expected 0 or more)")


def test_a_check_naming_an_account_outside_the_chart_is_refused_at_load(
        tmp_path: Path) -> None:
    got = _error(tmp_path, LIBRARY_YAML.replace('account: "1200"', 'account: "1299"'))
    assert got.startswith("scenario x.yaml: checks[1].account: account '1299' is not in the "
                          "chart 'standard-services' (expected one of: 1000, 1010, 1200,")


def test_a_zero_balance_check_naming_an_unknown_account_is_refused(tmp_path: Path) -> None:
    text = LIBRARY_YAML.replace("checks:\n", "checks:\n  - {type: zero_balance, "
                                "accounts: ['1200', '7777']}\n")
    assert "checks[0].accounts[1]: account '7777' is not in the chart" in _error(tmp_path, text)


def test_a_check_date_out_of_range_is_refused(tmp_path: Path) -> None:
    text = LIBRARY_YAML.replace('account: "1200", name: ar-ties-to-subledger,',
                                'account: "1200", as_of: 9999-12-31, name: ar-ties-to-subledger,')
    assert "checks[1].as_of: 9999-12-31 is out of range" in _error(tmp_path, text)


@pytest.mark.parametrize(("old", "new", "field", "value"), [
    ("on_time: 0.45", "on_time: .inf", "population.customers.profiles.on_time", "inf"),
    ("on_time: 0.45", "on_time: .nan", "population.customers.profiles.on_time", "nan"),
    ("on_time: {orders_per_month: 0.5}", "on_time: {orders_per_month: .inf}",
     "population.customers.params.on_time.orders_per_month", "inf"),
])
def test_an_infinite_or_undefined_number_is_refused(tmp_path: Path, old: str, new: str,
                                                     field: str, value: str) -> None:
    """YAML's ``.inf`` and ``.nan`` are floats: a weight of ``.inf`` used to load and
    make every customer that behaviour, and a rate of ``.inf`` ran."""
    assert old in LIBRARY_YAML
    message = _error(tmp_path, LIBRARY_YAML.replace(old, new, 1))
    assert f"{field}: {value} is not a number" in message


def test_show_is_bounded_for_huge_and_deep_values() -> None:
    huge: list[object] = ["x" * 100]
    for _ in range(30):
        huge = [huge] * 10  # 10**30 leaves if printed in full
    started = time.monotonic()
    text = show(huge)  # printed in full, this would not finish
    assert time.monotonic() - started < 5
    assert len(text) <= 60
    assert show({"low": 3, "high": 20}) == "{'low': 3, 'high': 20}"  # in the file's order


def test_parse_yaml_keeps_a_plain_document() -> None:
    assert parse_yaml("a: [1, {b: on}]\n") == {"a": [1, {"b": "on"}]}
