"""Fixtures of the viewer's tests: real attempts and a real 3-system campaign, and a real
headless Chromium driven by Playwright.

Without /usr/bin/chromium (``.ci/setup`` installs Debian's) or the playwright package the
browser tests skip, saying so; with ``CI=true`` they fail.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from runs.view.bench import CHROMIUM, CHROMIUM_ARGS
from tests.conftest import IN_CI


def run_cli(*args: str) -> Any:
    """``erpsim ARGS`` in this process."""
    from runs.cli import main

    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="session")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """month-end-close seed 1 by the reference and the null agents."""
    root = tmp_path_factory.mktemp("view-attempts")
    out = {}
    for agent in ("reference", "null"):
        folder = root / f"mec-{agent}"
        r = run_cli("run", "month-end-close", "--seed", "1", "--agent", agent,
                    "--out", str(folder), "--quiet")
        assert (folder / "summary.json").is_file(), r.output
        out[agent] = folder
    return out


@pytest.fixture(scope="session")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A tiny sweep: month-end-close, seed 1, systems reference, oracle and null."""
    results = tmp_path_factory.mktemp("view-results")
    r = run_cli("sweep", "month-end-close", "--seeds", "1", "--systems",
                "reference,oracle,null", "--runs", "1", "--label", "tiny",
                "--results-dir", str(results))
    assert (results / "tiny" / "results.db").is_file(), r.output
    return results, "tiny"


def with_agent_records(src: Path, dest: Path) -> Path:
    """A copy of an attempt with a transcript and an api.jsonl on turn 2 (the shapes the
    adapters and the turn's API write), one of its calls a refusal."""
    shutil.copytree(src, dest)
    agent = dest / "turns" / "02" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    lines = [{"ts": "2026-05-08T09:00:00Z", "kind": "message", "role": "system",
              "text": "session started", "session": "s-1"},
             {"ts": "2026-05-08T09:00:01Z", "kind": "message", "role": "assistant",
              "text": "I will apply the receipts."},
             {"ts": "2026-05-08T09:00:02Z", "kind": "tool_call", "tool": "Bash",
              "call_id": "c1", "arguments": {"command": "erp receipts list"}},
             {"ts": "2026-05-08T09:00:03Z", "kind": "tool_result", "call_id": "c1",
              "output": "RCT-BL-000004 C0040 482.37", "is_error": False},
             {"ts": "2026-05-08T09:00:04Z", "kind": "usage", "scope": "call",
              "model": "m", "usage": {"input_tokens": 10, "output_tokens": 5}}]
    (agent / "transcript.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines) + "\nnot json\n", encoding="utf-8")
    calls = [{"time": "2026-05-08T09:00:05Z", "duration_ms": 0.3, "method": "POST",
              "route": "/commands", "command": "ApplyReceipt", "status": 200, "error": None,
              "message": None, "field": None, "events": [600], "position": 600},
             {"time": "2026-05-08T09:00:06Z", "duration_ms": 0.2, "method": "POST",
              "route": "/commands", "command": "ApplyReceipt", "status": 409,
              "error": "over_applied", "message": "the receipt has 0.00 left",
              "field": "amount", "events": [], "position": 600}]
    api = agent / "api.jsonl"  # the turn's API writes one; the refusal goes at its end
    kept = api.read_text(encoding="utf-8") if api.is_file() else ""
    api.write_text(kept + "".join(json.dumps(x) + "\n" for x in calls), encoding="utf-8")
    return dest


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Debian Chromium (skips without it outside CI)."""
    problem = None
    if not Path(CHROMIUM).is_file():
        problem = f"{CHROMIUM} missing (apt-get install chromium; .ci/setup installs it)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        problem = f"playwright not installed ({e})"
    if problem:
        if IN_CI:
            pytest.fail(problem + " (CI=true: the browser tests must run)", pytrace=False)
        pytest.skip(problem)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        yield b
        b.close()


class Tab:
    """A page with its console errors, page errors and every request's URL recorded."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text)
                     if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, url: str) -> Any:
        """Go to ``url`` and wait until every chart is drawn."""
        self.page.goto(url)
        self.page.wait_for_function("document.body.dataset.rendered", timeout=60_000)
        assert self.page.evaluate("document.body.dataset.rendered") == "1", \
            self.page.evaluate("window.erpsimErrors")
        return self.page

    def external_requests(self) -> list[str]:
        """Requests that left the machine (anything but file:, blob:, data: and loopback)."""
        return [u for u in self.requests if not u.startswith(
            ("file:", "blob:", "data:", "http://127.0.0.1"))]


@pytest.fixture
def tab(browser: Any) -> Iterator[Tab]:
    """A fresh page."""
    t = Tab(browser)
    yield t
    t.page.close()
