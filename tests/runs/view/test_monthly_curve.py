"""The attempt page's per-month accuracy curve (summary.json ``daily_by_month``) in a real
headless Chromium: a fiscal-year attempt's twelve months (and the closing turn's January)
drawn as one line whose points are the summary's figures; month-end-close's May and
closing June 1 as two points; nothing drawn without per-date results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runs.view.charts import monthly_accuracy_figure
from runs.view.pages import write_attempt_view
from tests.runs.view.conftest import Tab, run_cli


@pytest.fixture(scope="module")
def year_attempt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fiscal-year seed 0, easy tier, by the null agent (its months fail in part)."""
    folder = tmp_path_factory.mktemp("view-fiscal-year") / "fy-null"
    r = run_cli("run", "fiscal-year", "--seed", "0", "--tier", "easy", "--agent", "null",
                "--out", str(folder), "--quiet")
    assert (folder / "summary.json").is_file(), r.output
    return folder


def test_the_page_draws_the_per_month_curve(tab: Tab, year_attempt: Path,
                                            tmp_path: Path) -> None:
    by_month = json.loads((year_attempt / "summary.json").read_text())["daily_by_month"]
    assert len(by_month) == 13 and min(v["accuracy"] for v in by_month.values()) < 1.0
    html = write_attempt_view(year_attempt, tmp_path / "year.html")
    page = tab.open(html.as_uri())
    chart = page.locator("div.chart[data-fig='monthly']")
    chart.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "monthly-curve.png"))
    assert page.locator("div.chart[data-fig='monthly'][data-rendered='1'] .main-svg").count()
    drawn = page.evaluate("""() => {
        const d = document.getElementById('chart-monthly').data[0];
        return {x: Array.from(d.x), y: Array.from(d.y)};
    }""")
    assert drawn["x"] == sorted(by_month)
    assert drawn["y"] == [by_month[m]["accuracy"] for m in sorted(by_month)]
    assert page.locator("#chart-monthly .scatterlayer .point").count() == 13
    assert "Per-month accuracy" in page.locator("#chart-monthly").inner_text()
    assert not tab.errors and not tab.external_requests()


def test_a_month_end_close_attempt_draws_its_months(tab: Tab, attempts: dict[str, Path],
                                          tmp_path: Path) -> None:
    summary = json.loads((attempts["reference"] / "summary.json").read_text())
    assert monthly_accuracy_figure(summary.get("daily_by_month")) is not None
    html = write_attempt_view(attempts["reference"], tmp_path / "mec.html")
    page = tab.open(html.as_uri())
    # month-end-close's dates span May and the closing turn's June 1: a two-point curve
    drawn = page.evaluate("() => Array.from(document.getElementById('chart-monthly')"
                          ".data[0].x)")
    assert drawn == sorted(summary["daily_by_month"])


def test_no_daily_results_draw_nothing() -> None:
    assert monthly_accuracy_figure(None) is None
    assert monthly_accuracy_figure({}) is None
    assert monthly_accuracy_figure({"2026-01": {"dates": 0, "checks": 0, "passed": 0,
                                                "failed": {}, "accuracy": None}}) is None
