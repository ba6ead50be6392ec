"""``erpsim bench view``: the browser time an attempt's page takes to first render, on an
attempt of about 100,000 events (month-end-close at a large population).

Prints ``name: value`` lines: the attempt's events, the seconds to build the page, its
size, and over ``loads`` page loads in headless Chromium (Playwright), the median
milliseconds from navigation start to the first render (the tables and the first page
of the log shown) and to every chart drawn.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
"""Debian's chromium (``apt-get install chromium``; ``.ci/setup`` installs it)."""

CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run")
"""How the tests and the benchmark start it (no network of its own)."""


@dataclass(frozen=True)
class ViewBench:
    """The benchmark's figures."""

    events: int
    build_s: float
    page_bytes: int
    first_render_ms: list[float]
    charts_ms: list[float]

    def lines(self) -> list[str]:
        """The figures as ``name: value`` lines."""
        return [f"view_events: {self.events}",
                f"view_build_s: {self.build_s:.2f}",
                f"view_page_mb: {self.page_bytes / 1e6:.1f}",
                f"view_first_render_ms: {statistics.median(self.first_render_ms):.0f} "
                f"(loads: {', '.join(f'{x:.0f}' for x in self.first_render_ms)})",
                f"view_charts_drawn_ms: {statistics.median(self.charts_ms):.0f}"]


def big_attempt(out: Path, *, customers: int, vendors: int, seed: int = 1,
                agent: str = "reference") -> int:
    """Run month-end-close at ``customers`` and ``vendors`` into ``out``; its event count."""
    from runs.attempt import run_attempt
    from scenarios.loader import find_scenario, load_scenario

    loaded = load_scenario(find_scenario("month-end-close"))
    sc = loaded.scenario
    pop = sc.population.model_copy(update={
        "customers": sc.population.customers.model_copy(update={"count": customers}),
        "vendors": sc.population.vendors.model_copy(update={"count": vendors})})
    big = loaded.__class__(**{**loaded.__dict__,
                              "scenario": sc.model_copy(update={"population": pop})})
    result = run_attempt(big, seed, agent, out, replace=True)
    return int(result.summary["events"]["total"])


def browser_times(page: Path, loads: int) -> tuple[list[float], list[float]]:
    """Per load of ``page``: ms to the first render and to every chart drawn."""
    from playwright.sync_api import sync_playwright

    first: list[float] = []
    drawn: list[float] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        try:
            for _ in range(loads):
                tab = browser.new_page(viewport={"width": 1400, "height": 900})
                tab.goto(page.resolve().as_uri())
                tab.wait_for_function("document.body.dataset.rendered", timeout=120_000)
                state = tab.evaluate("document.body.dataset.rendered")
                if state != "1":
                    raise RuntimeError(f"the page did not render: "
                                       f"{tab.evaluate('window.erpsimErrors')}")
                first.append(float(tab.evaluate("window.erpsimFirstRenderMs")))
                drawn.append(float(tab.evaluate("window.erpsimRenderMs")))
                tab.close()
        finally:
            browser.close()
    return first, drawn


def run_view_bench(*, customers: int = 6800, vendors: int = 680, loads: int = 3,
                   attempt: Path | None = None, workdir: Path | None = None) -> ViewBench:
    """Build (or take) a large attempt, write its page, load it ``loads`` times."""
    from runs.view.pages import write_attempt_view

    with tempfile.TemporaryDirectory(dir=workdir, prefix="erpsim-bench-view-") as tmp:
        folder = attempt or Path(tmp) / "attempt"
        if attempt is None:
            big_attempt(folder, customers=customers, vendors=vendors)
        import json

        events = int(json.loads((folder / "summary.json").read_text())["events"]["total"])
        started = time.perf_counter()
        page = write_attempt_view(folder, Path(tmp) / "view.html")
        build = time.perf_counter() - started
        first, drawn = browser_times(page, loads)
        return ViewBench(events, build, page.stat().st_size, first, drawn)
