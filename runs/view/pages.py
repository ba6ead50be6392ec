"""Rendering the pages: Jinja2 templates (``runs/view/templates/``), the charts as plotly
figures, plotly.js inlined from the pinned ``plotly`` package (or, under ``--serve``,
one copy served beside the pages).

``write_attempt_view`` and ``write_campaign_view`` write self-contained HTML files: no
request leaves the page (no CDN, no fonts, no server), so they open from disk anywhere.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from jinja2 import Environment, FileSystemLoader, Undefined

from runs.files import write_text_atomic
from runs.view import charts
from runs.view.attempt import AttemptData, read_attempt_view
from runs.view.campaign import (
    RESAMPLES,
    CampaignData,
    attempt_rows,
    read_campaign_view,
    reference_folder,
)
from runs.view.diff import ReferenceRuns, diff_against

TEMPLATES = Path(__file__).parent / "templates"
_SCRIPT_END = re.compile(r"</(script)", re.IGNORECASE)


class _Lenient(Undefined):
    """A missing field renders as nothing (attempt files from older or newer versions)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self


@cache
def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True,
                      undefined=_Lenient)
    env.globals["pct"] = lambda v: "n/a" if v is None else f"{v:.3f}"
    env.globals["num"] = lambda v: "n/a" if v is None else f"{v:.2f}"
    return env


@cache
def plotly_js() -> str:
    """plotly.js as the pinned ``plotly`` package ships it (minified)."""
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


@cache
def _asset(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def script_text(text: str) -> str:
    """Text safe inside a ``<script>`` element (no ``</script>`` can end it early)."""
    return _SCRIPT_END.sub(r"<\\/\1", text)


def _figures(figs: dict[str, go.Figure | None]) -> list[tuple[str, str]]:
    return [(name, script_text(f.to_json())) for name, f in figs.items() if f is not None]


def _base(title: str, figures: list[tuple[str, str]], plotly_src: str | None) -> dict[str, Any]:
    return {"title": title, "version": version("erpsim"), "css": _asset("view.css"),
            "view_js": script_text(_asset("view.js")), "plotly_src": plotly_src,
            "plotly_js": "" if plotly_src else script_text(plotly_js()),
            "figures": figures, "figure_names": {n for n, _ in figures}}


def render_attempt(data: AttemptData, *, plotly_src: str | None = None,
                   chunk_url: str | None = None, back: str | None = None) -> str:
    """An attempt's page. ``chunk_url``: the event log's chunks are fetched from
    ``chunk_url + N`` instead of being embedded (``--serve``)."""
    s = data.summary
    figs = {"timeline": charts.timeline_figure(data.world_by_date, data.erp_by_date,
                                               data.turns),
            "control": charts.control_figure(data.control_by_date),
            "daily": charts.daily_checks_figure(data.daily_checks, data.dates),
            "diff": charts.diff_figure((data.diff or {}).get("per_date") or []),
            "monthly": charts.monthly_accuracy_figure((s or {}).get("daily_by_month"))}
    v = data.verdict
    status = (v or {}).get("status") or ((s or {}).get("verdict") or {}).get("status")
    title = (f"{s.get('scenario')} seed {s.get('seed')} · {s.get('agent')}"
             if s else f"attempt {data.folder.name}")
    ctx = _base(title, _figures(figs), plotly_src)
    log = data.events
    ctx.update({"d": data, "s": s, "v": v, "verdict_status": status, "folder": str(data.folder),
                "diff": data.diff, "back": back,
                "manifest": script_text(json.dumps(log.manifest())) if log else None,
                "chunks": [] if (log is None or chunk_url) else log.chunks,
                "chunk_url": chunk_url})
    return _env().get_template("attempt.html.j2").render(**ctx)


def render_campaign(data: CampaignData, *, plotly_src: str | None = None) -> str:
    """A campaign's page."""
    figs = {"rates": charts.pass_rates_figure(data.rates),
            "failures": charts.failure_heatmap(data.checks, data.systems, data.failures),
            "cost": charts.resources_figure(data.points, "cost_usd",
                                            "Cost (USD) per attempt against acceptance"),
            "tokens": charts.resources_figure(data.points, "tokens",
                                              "Tokens (input + output) per attempt against "
                                              "acceptance"),
            "durations": charts.durations_figure(data.points)}
    ctx = _base(f"campaign {data.campaign.label}", _figures(figs), plotly_src)
    ctx.update({"c": data.campaign, "cd": data, "resamples": RESAMPLES})
    return _env().get_template("campaign.html.j2").render(**ctx)


def attempt_page_data(folder: Path, *, reference: Path | None = None,
                 runs: ReferenceRuns | None = None, with_log: bool = True) -> AttemptData:
    """:func:`~runs.view.attempt.read_attempt_view` plus the diff against the reference."""
    data = read_attempt_view(folder, with_log=with_log)
    data.diff = diff_against(folder, data.summary, reference, runs)
    return data


def write_attempt_view(folder: Path, out: Path, *, reference: Path | None = None,
                       runs: ReferenceRuns | None = None, back: str | None = None) -> Path:
    """Write an attempt's self-contained page to ``out``; returns ``out``.

    Without ``reference`` (nor ``runs``), the reference agent is run on the attempt's
    scenario and seed into a temporary folder, removed afterwards.
    """
    own = runs is None and reference is None
    if own:
        runs = ReferenceRuns()
    try:
        data = attempt_page_data(folder, reference=reference, runs=runs)
    finally:
        if own and runs is not None:
            runs.close()
    write_text_atomic(out, render_attempt(data, back=back))
    return out


def write_campaign_view(results_dir: Path, label: str, out: Path, *,
                        on_attempt: Any = None) -> list[Path]:
    """Write a campaign's page to ``out`` and each attempt's page under
    ``out.parent/attempts/`` (the page's links); returns every file written."""
    data = read_campaign_view(results_dir, label)
    written: list[Path] = []
    runs = ReferenceRuns()
    try:
        rows = attempt_rows(data)
        for i, (rel, folder, row) in enumerate(rows, 1):
            depth = rel.count("/")
            back = "../" * depth + out.name
            page = out.parent / rel
            write_attempt_view(folder, page, reference=reference_folder(data, row),
                               runs=runs, back=back)
            written.append(page)
            if on_attempt is not None:
                on_attempt(i, len(rows), rel)
    finally:
        runs.close()
    write_text_atomic(out, render_campaign(data))
    written.insert(0, out)
    return written
