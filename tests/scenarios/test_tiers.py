"""Difficulty tiers: declared in the scenario, applied by the loader, refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.errors import ScenarioError
from scenarios.loader import find_scenario, load_scenario
from tests.scenarios.test_loader import MINIMAL, write

TIERS = """\
population:
  customers: {count: 10, profiles: {on_time: 1.0}, params: {late: {orders_per_month: 2}}}
tier: easy
tiers:
  easy: {description: as written}
  hard:
    description: bigger and messier
    customers: 30
    ar_open_invoices: 90
    customer_profiles: {on_time: 0.5, pays_twice: 0.5}
    customer_params: {late: {pay_days_after_due: {dist: uniform, low: 3, high: 9}}}
    documents: {references: 0.9, payer_names: 0.5, pdf_remittances: 0.4}
"""


def _load(tmp_path: Path, text: str, tier: str | None = None) -> object:
    return load_scenario(write(tmp_path, MINIMAL + text), tier=tier)


def _error(tmp_path: Path, text: str, tier: str | None = None) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, MINIMAL + text), tier=tier)
    return str(info.value)


def test_the_default_tier_is_the_scenario_as_written(tmp_path: Path) -> None:
    loaded = load_scenario(write(tmp_path, MINIMAL + TIERS))
    s = loaded.scenario
    assert s.tier == "easy"
    assert s.population.customers.count == 10
    assert not s.documents.active


def test_a_tier_sets_size_mixture_params_and_noise(tmp_path: Path) -> None:
    s = load_scenario(write(tmp_path, MINIMAL + TIERS), tier="hard").scenario
    assert s.tier == "hard"
    assert s.population.customers.count == 30
    assert s.company.opening.ar_open_invoices == 90
    assert s.population.customers.profiles == {"on_time": 0.5, "pays_twice": 0.5}
    late = s.population.customers.params["late"]
    assert late["orders_per_month"] == 2 and late["pay_days_after_due"]["high"] == 9
    assert s.documents.references == 0.9 and s.documents.pdf_remittances == 0.4
    assert s.tiers["hard"].changes()["customers"] == 30


def test_an_undeclared_tier_is_refused(tmp_path: Path) -> None:
    message = _error(tmp_path, TIERS, tier="medium")
    assert message == ("scenario x.yaml: tier 'medium' is not declared (expected one of the "
                       "tiers the scenario declares: easy, hard; a scenario declares them "
                       "under tiers: in its scenario.yaml)")


def test_a_default_tier_must_be_declared(tmp_path: Path) -> None:
    message = _error(tmp_path, "tier: hard\ntiers:\n  easy: {description: x}\n")
    assert message == ("scenario x.yaml: tier: tier 'hard' is not declared under tiers "
                       "(declared: easy)")


@pytest.mark.parametrize(("text", "expected"), [
    ("tiers:\n  extreme: {description: x}\n",
     "tiers.extreme: key 'extreme' is not allowed (expected one of: easy, medium or hard)"),
    ("tiers:\n  hard: {description: x, customers: -3}\n",
     "tiers.hard.customers: -3 is too small (expected at least 0)"),
    ("tiers:\n  hard: {description: x, size: 3}\n",
     "tiers.hard.size: unknown field (allowed: ap_open_bills, ar_open_invoices, "
     "customer_params, customer_profiles, customers, description, documents, injections, "
     "vendor_params, vendor_profiles, vendors)"),
    ("tiers:\n  hard: {description: x, injections: [{on: 2027-01-04, kind: returned_item}]}\n",
     "tiers.hard.injections[0].on: 2027-01-04 is outside the calendar (expected a date from "
     "2026-03-02 to 2026-03-13)"),
    ("tiers:\n  hard: {description: x, injections: [{on: 2026-03-02, kind: bounce}]}\n",
     "tiers.hard.injections[0].kind: unknown injection kind 'bounce'"),
    ("tiers:\n  hard: {customers: 3}\n", "tiers.hard.description: missing (required)"),
    ("tiers:\n  hard: {description: x, customer_profiles: {payz: 1}}\n",
     "tiers.hard.customer_profiles.payz: unknown customer behaviour 'payz'"),
    ("tiers:\n  hard: {description: x, documents: {references: 1.5}}\n",
     "tiers.hard.documents.references: 1.5 is too large (expected at most 1.0)"),
    ("tiers:\n  hard: {description: x, documents: {pdf_remittances: 0.7, "
     "text_remittances: 0.6}}\n",
     "tiers.hard.documents: pdf_remittances + text_remittances is 1.3 (expected at most 1: "
     "the rest are CSV)"),
    ("tiers:\n  hard: {description: x, documents: {noise: 1}}\n",
     "tiers.hard.documents.noise: unknown field"),
])
def test_a_bad_tier_names_file_field_value_and_what_was_expected(tmp_path: Path, text: str,
                                                                expected: str) -> None:
    message = _error(tmp_path, text)
    assert message.startswith("scenario x.yaml: "), message
    assert expected in message, message


@pytest.mark.parametrize("name", ["cash-application", "procure-to-pay"])
def test_library_tiers_load_and_easy_is_the_scenario_as_written(name: str) -> None:
    path = find_scenario(name)
    plain = load_scenario(path).scenario
    assert plain.tier == "easy"
    easy = plain.tiers["easy"]
    assert easy.changes() == {}  # easy is today's scenario: its golden hashes hold
    for tier in ("medium", "hard"):
        s = load_scenario(path, tier=tier).scenario
        assert s.tier == tier and s.documents.active
        pop, base = s.population, plain.population
        assert (pop.customers.count + pop.vendors.count
                > base.customers.count + base.vendors.count)


@pytest.mark.parametrize("command", ["run", "validate"])
def test_the_cli_refuses_a_tier_the_scenario_does_not_declare(tmp_path: Path,
                                                              command: str) -> None:
    import subprocess
    import sys

    path = write(tmp_path, MINIMAL)
    args = [sys.executable, "-m", "runs.cli", command, str(path), "--tier", "hard"]
    args += ["--out", str(tmp_path / "out")] if command == "run" else ["--seeds", "0"]
    res = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "tier 'hard' is not declared (expected one of the tiers the scenario declares: " \
           "none" in res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    assert not (tmp_path / "out").exists()


def test_the_cli_refuses_a_tier_that_is_no_tier(tmp_path: Path) -> None:
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "runs.cli", "run", "cash-application", "--tier",
                          "extreme", "--out", str(tmp_path / "out")], capture_output=True,
                         text=True, check=False, timeout=120)
    assert res.returncode == 2
    assert "'extreme' is not one of 'easy', 'medium', 'hard'" in res.stderr
