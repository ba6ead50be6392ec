"""The pages in a real headless Chromium (Playwright): no console error, no request
leaving the machine, the charts drawn, the log's filters filtering, links resolving.
Screenshots go to the test's temporary folder."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from runs.view.pages import write_attempt_view, write_campaign_view
from runs.view.serve import ViewSite, make_server
from tests.runs.view.conftest import Tab, with_agent_records


def _count(folder: Path, where: str = "1=1") -> int:
    with sqlite3.connect(folder / "books.db") as c:
        return int(c.execute(f"SELECT COUNT(*) FROM events WHERE {where}").fetchone()[0])


def _matching(page: Any) -> int:
    page.wait_for_function("!document.getElementById('log-status').textContent"
                           ".startsWith('loading')")
    return int(page.get_attribute("#log", "data-matching"))


def _select(page: Any, select: str, label_start: str) -> None:
    value = page.evaluate(
        """([sel, start]) => [...document.querySelector(sel).options]
             .find(o => o.textContent.startsWith(start)).value""", [select, label_start])
    page.select_option(select, value)


def test_attempt_page_renders_and_filters(tab: Tab, attempts: dict[str, Path],
                                          tmp_path: Path) -> None:
    folder = with_agent_records(attempts["null"], tmp_path / "attempt")
    html = write_attempt_view(folder, tmp_path / "attempt.html",
                              reference=attempts["reference"])
    page = tab.open(html.as_uri())
    page.screenshot(path=str(tmp_path / "attempt-top.png"))
    charts = page.locator("div.chart[data-fig]")
    assert charts.count() >= 3
    assert page.locator("div.chart[data-rendered='1'] .main-svg").count() >= charts.count()
    assert page.locator("#diff-result").inner_text().startswith("The books first diverged on")
    total = _count(folder)
    assert _matching(page) == total
    assert page.locator("#log-rows tr.ev").count() == 100

    _select(page, "#f-type", "invoice_issued")
    assert _matching(page) == _count(folder, "type = 'invoice_issued'")
    types = page.locator("#log-rows tr.ev td:nth-child(4)").all_inner_texts()
    assert types and set(types) == {"invoice_issued"}

    page.fill("#f-stream", "INV-00001")
    page.wait_for_function("document.getElementById('log').dataset.matching === '" +
                           str(_count(folder, "type = 'invoice_issued' AND stream LIKE "
                                              "'%INV-00001%'")) + "'")
    page.click("#f-clear")
    assert _matching(page) == total
    _select(page, "#f-realm", "world")
    _select(page, "#f-from", "2026-05-08")
    _select(page, "#f-to", "2026-05-08")
    assert _matching(page) == _count(folder, "realm = 'world' AND business_date = "
                                             "'2026-05-08'")
    page.click("#f-clear")
    page.click("#log-next")
    first = page.locator("#log-rows tr.ev").first
    assert first.get_attribute("data-position") == "101"
    first.click()
    assert '"type"' in page.locator("#log-rows tr.detail pre").inner_text()
    page.locator("#log").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "attempt-log.png"))

    # a turn's "events of this actor" link filters the log by its actor
    page.locator("#turn-2 > summary").scroll_into_view_if_needed()
    page.click("#turn-1 > summary")  # closes turn 1
    page.click("#turn-2 > summary")
    assert page.locator("#turn-2 table.api tr.refusal").count() == 1
    assert "erp receipts list" in page.locator("#turn-2 .transcript").inner_text()
    assert page.locator("#turn-2 [data-gap]").count() == 1  # the transcript's bad line
    page.screenshot(path=str(tmp_path / "attempt-turn.png"))
    actor = page.locator("#turn-2 a.actor-log")
    if actor.count():
        actor.click()
        assert _matching(page) == _count(folder, "actor = 'agent:turn-2'")
    assert tab.errors == []
    assert tab.external_requests() == []


def test_gap_page_renders(tab: Tab, attempts: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "broken"
    shutil.copytree(attempts["null"], folder)
    (folder / "summary.json").write_text("{not json", encoding="utf-8")
    (folder / "verdict.json").write_text("[]", encoding="utf-8")
    (folder / "books.db").unlink()
    html = write_attempt_view(folder, tmp_path / "broken.html")
    page = tab.open(html.as_uri())
    gaps = page.locator(".gap")
    assert gaps.count() >= 3
    text = " ".join(gaps.all_inner_texts())
    assert "summary.json" in text and "verdict.json" in text and "books.db" in text
    assert page.locator("#turns details.turn").count() >= 1  # the turns' files still show
    page.screenshot(path=str(tmp_path / "gaps.png"), full_page=True)
    assert tab.errors == []


def test_campaign_page_charts_and_links(tab: Tab, campaign: tuple[Path, str],
                                        tmp_path: Path) -> None:
    results, label = campaign
    written = write_campaign_view(results, label, tmp_path / "site" / "index.html")
    page = tab.open(written[0].as_uri())
    page.screenshot(path=str(tmp_path / "campaign.png"), full_page=True)
    for name in ("rates", "failures", "durations"):
        assert page.locator(f"#chart-{name}[data-rendered='1'] .main-svg").count() >= 1
    assert page.locator("[data-nochart='cost']").count() == 1  # built-ins record no cost
    links = page.locator("table.grid a.cell")
    assert links.count() == 3
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    for href in hrefs:
        assert (tmp_path / "site" / href).is_file(), href
    page.locator("table.grid a.cell.accepted").first.click()
    page.wait_for_function("document.body.dataset.rendered === '1'")
    assert "attempts/month-end-close/" in page.url
    assert page.locator("#log-rows tr.ev").count() == 100
    page.click("header a")  # back to the campaign
    page.wait_for_function("document.body.dataset.rendered === '1'")
    assert page.url.endswith("index.html")
    assert tab.errors == []
    assert tab.external_requests() == []


def test_serve_mode_fetches_log_pages(tab: Tab, campaign: tuple[Path, str],
                                      tmp_path: Path) -> None:
    results, label = campaign
    site = ViewSite(results_dir=results, label=label)
    server = make_server(site, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        page = tab.open(base)
        assert page.locator("#chart-rates[data-rendered='1']").count() == 1
        page.locator("table.grid a.cell").last.click()
        page.wait_for_function("document.body.dataset.rendered === '1'")
        assert page.locator("#log-rows tr.ev").count() == 100
        page.click("#log-next")
        page.wait_for_function("document.querySelector('#log-rows tr.ev')"
                               ".dataset.position === '101'")
        assert any("/chunks/attempts/" in u for u in tab.requests)
        page.screenshot(path=str(tmp_path / "served.png"))
        assert page.request.get(base + "attempts/nope.html").status == 404
    finally:
        server.shutdown()
        server.server_close()
        site.close()
    assert tab.errors == []
    assert tab.external_requests() == []
