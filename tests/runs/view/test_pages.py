"""The viewer's pages without a browser: what they hold, the log's chunks, the diff, the
gaps, and ``erpsim view``'s rejections."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

from runs.view.attempt import read_attempt_view
from runs.view.diff import diff_against, diff_books
from runs.view.eventlog import CHUNK_SIZE, build_event_log, decode_chunk, decode_index
from runs.view.pages import render_attempt, write_attempt_view
from tests.runs.view.conftest import run_cli, with_agent_records


def _events(folder: Path) -> list[tuple]:
    with sqlite3.connect(folder / "books.db") as c:
        return c.execute("SELECT position, type, actor, stream, business_date FROM events "
                         "ORDER BY position").fetchall()


def test_event_log_chunks_and_index_hold_every_event(attempts: dict[str, Path]) -> None:
    from erp.store import EventStore

    folder = attempts["reference"]
    store = EventStore.open(folder / "books.db")
    try:
        log = build_event_log(store)
    finally:
        store.close()
    rows = _events(folder)
    assert log.count == len(rows)
    assert len(log.chunks) == -(-len(rows) // CHUNK_SIZE)
    decoded = [r for c in log.chunks for r in decode_chunk(c)]
    assert [(r[0], r[2], r[6], r[1], r[4]) for r in decoded] == rows
    index = decode_index(log)
    d = log.dictionaries
    assert [(d["type"][t], d["actor"][a], d["stream"][s], d["date"][x])
            for t, a, s, x in zip(index["type"], index["actor"], index["stream"],
                                  index["date"], strict=True)] == [r[1:] for r in rows]
    assert d["date"] == sorted(d["date"])


def test_attempt_page_is_self_contained(attempts: dict[str, Path], tmp_path: Path) -> None:
    page = write_attempt_view(attempts["null"], tmp_path / "v.html",
                              reference=attempts["reference"])
    html = page.read_text(encoding="utf-8")
    # plotly.js itself mentions its home page; the page's own markup loads nothing
    own = re.sub(r'<script type="text/plain" id="plotly-src">.*?</script>', "", html,
                 flags=re.S)
    assert 'id="plotly-src"' in html and len(own) < len(html) - 1_000_000
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)=["'](?!data:)""", own)
    assert "Plotly" in html and 'id="log-manifest"' in html
    assert html.count('type="text/plain" id="chunk-') >= 2
    # the log is never DOM: no event row is in the HTML, only compressed chunks
    assert "<tr class=\"ev\"" not in html


def test_diff_names_the_first_date_and_document(attempts: dict[str, Path]) -> None:
    import json

    summary = json.loads((attempts["null"] / "summary.json").read_text())
    d = diff_against(attempts["null"], summary, attempts["reference"], None)
    assert d["diverged"] is True
    # the reference entered a bill on its first turn; the null agent entered nothing
    ref_rows = [r for r in _events(attempts["reference"]) if r[2].startswith("agent:")]
    first_agent = ref_rows[0]
    assert d["first_date"] == first_agent[4]
    assert d["document"] == first_agent[3]
    assert d["this_event"] is None or d["this_event"]["stream"] != d["document"]
    assert d["reference_event"]["stream"] == first_agent[3]


def test_diff_of_identical_books_has_no_divergence(attempts: dict[str, Path]) -> None:
    from erp.store import EventStore

    a = EventStore.open(attempts["reference"] / "books.db")
    b = EventStore.open(attempts["reference"] / "books.db")
    try:
        d = diff_books(a, b)
    finally:
        a.close()
        b.close()
    assert d["diverged"] is False
    assert all(r["only_this"] == r["only_reference"] == 0 for r in d["per_date"])


def test_reference_agent_attempt_needs_no_diff(attempts: dict[str, Path]) -> None:
    import json

    summary = json.loads((attempts["reference"] / "summary.json").read_text())
    assert diff_against(attempts["reference"], summary, None, None).get("self") is True


def test_transcript_and_api_calls_with_a_refusal(attempts: dict[str, Path],
                                                 tmp_path: Path) -> None:
    folder = with_agent_records(attempts["reference"], tmp_path / "a")
    data = read_attempt_view(folder)
    turn = data.turns[1]
    assert [x["kind"] for x in turn["transcript"]][:4] == ["message", "message", "tool_call",
                                                          "tool_result"]
    assert [c["status"] for c in turn["refusals"]] == [409]
    [gap] = data.gaps_of("turn 2")
    assert "transcript.jsonl" in gap.path and "1 line(s) unreadable" in gap.problem
    html = render_attempt(data)
    assert "over_applied" in html and "erp receipts list" in html


def test_corrupt_and_missing_files_are_marked_gaps(attempts: dict[str, Path],
                                                   tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(attempts["null"], folder)
    (folder / "summary.json").write_text("{not json", encoding="utf-8")
    (folder / "verdict.json").unlink()
    shutil.rmtree(folder / "turns" / "03")
    data = read_attempt_view(folder)
    what = {g.what: g for g in data.gaps}
    assert "not JSON" in what["summary"].problem and what["summary"].path == "summary.json"
    assert what["verdict"].problem == "missing"
    assert data.events is not None  # the books are still browsable
    html = render_attempt(data)
    assert html.count('class="gap"') >= 2


def test_missing_books_is_a_gap_not_an_error(attempts: dict[str, Path],
                                             tmp_path: Path) -> None:
    folder = tmp_path / "nobooks"
    shutil.copytree(attempts["null"], folder)
    (folder / "books.db").unlink()
    data = read_attempt_view(folder)
    assert data.events is None and data.gaps_of("books")
    assert 'data-gap="books"' in render_attempt(data)


def test_tampered_log_is_shown_as_not_verifying(attempts: dict[str, Path],
                                                tmp_path: Path) -> None:
    folder = tmp_path / "tampered"
    shutil.copytree(attempts["reference"], folder)
    with sqlite3.connect(folder / "books.db") as c:
        c.execute("UPDATE events SET payload = replace(payload, '\"amount\":', "
                  "'\"amount\": ') WHERE position = 500")
    data = read_attempt_view(folder)
    assert data.log_verified is False
    assert "DOES NOT VERIFY" in render_attempt(data)


def test_view_command_writes_attempt_and_campaign(attempts: dict[str, Path],
                                                  campaign: tuple[Path, str],
                                                  tmp_path: Path) -> None:
    r = run_cli("view", str(attempts["null"]), "--out", str(tmp_path / "a.html"),
                "--reference", str(attempts["reference"]))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "a.html").stat().st_size > 1_000_000
    results, label = campaign
    r = run_cli("view", label, "--results-dir", str(results), "--out",
                str(tmp_path / "c" / "index.html"))
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "c" / "attempts").rglob("*.html"))) == 3


def test_view_command_rejects_what_is_not_an_attempt(tmp_path: Path,
                                                     campaign: tuple[Path, str]) -> None:
    r = run_cli("view", str(tmp_path / "nothing-here"), "--results-dir", str(tmp_path))
    assert r.exit_code == 2
    assert "neither an attempt folder nor a campaign label" in r.output
    (tmp_path / "empty").mkdir()
    r = run_cli("view", str(tmp_path / "empty"))
    assert r.exit_code == 2 and "not an attempt folder" in r.output
    results, label = campaign
    r = run_cli("view", label, "--results-dir", str(results), "--reference", str(tmp_path))
    assert r.exit_code == 2 and "--reference is for an attempt" in r.output
    r = run_cli("view", "nolabel", "--results-dir", str(results))
    assert r.exit_code == 2 and "labels there: tiny" in r.output
