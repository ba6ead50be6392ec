"""The pages' charts as plotly figures (the page draws them with the plotly.js it inlines).

Each function returns a :class:`plotly.graph_objects.Figure`, or ``None`` when it has
nothing to draw (the page then says why instead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

OUTCOME_COLORS = {"accepted": "#2e7d32", "rejected": "#c62828", "grader_error": "#6a1b9a",
                  "no verdict": "#757575"}

_LAYOUT: dict[str, Any] = {"template": "plotly_white", "margin": {"l": 60, "r": 20, "t": 40,
                                                                   "b": 40},
                           "font": {"size": 12}, "legend": {"orientation": "h", "y": -0.15}}


def timeline_figure(world_by_date: Sequence[Mapping[str, Any]],
                    erp_by_date: Sequence[Mapping[str, Any]],
                    turns: Sequence[Mapping[str, Any]]) -> go.Figure | None:
    """World events by kind (top) and the books' events by actor (bottom), per business
    date, with each agent turn marked."""
    if not world_by_date and not erp_by_date:
        return None
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("What the world did (events by kind)",
                                        "What the books recorded (events by actor)"))
    for kind in sorted({str(r["type"]) for r in world_by_date}):
        rows = [r for r in world_by_date if r["type"] == kind]
        fig.add_trace(go.Bar(x=[r["date"] for r in rows], y=[r["count"] for r in rows],
                             name=kind, legendgroup="world"), row=1, col=1)
    for who in sorted({str(r["actor"]) for r in erp_by_date}):
        rows = [r for r in erp_by_date if r["actor"] == who]
        fig.add_trace(go.Bar(x=[r["date"] for r in rows], y=[r["count"] for r in rows],
                             name=f"books: {who}", legendgroup="erp"), row=2, col=1)
    for t in turns:
        if t.get("date"):
            fig.add_vline(x=t["date"], line_dash="dot", line_color="#1565c0", opacity=0.6)
            fig.add_annotation(x=t["date"], y=1.0, yref="paper", text=f"turn {t['turn']}",
                               showarrow=False, font={"color": "#1565c0", "size": 10},
                               yshift=8)
    fig.update_layout(barmode="stack", height=520, **_LAYOUT)
    fig.update_xaxes(type="date")
    return fig


def control_figure(control_by_date: Sequence[Mapping[str, Any]]) -> go.Figure | None:
    """Each control account's GL minus subledger at each business date's end (0 = ties)."""
    if not control_by_date:
        return None
    accounts = sorted({str(r["account"]) for r in control_by_date})
    dates = sorted({str(r["date"]) for r in control_by_date})
    z = [[0.0] * len(dates) for _ in accounts]
    for r in control_by_date:
        z[accounts.index(str(r["account"]))][dates.index(str(r["date"]))] = (
            r["difference_cents"] / 100)
    fig = go.Figure(go.Heatmap(x=dates, y=accounts, z=z, zmid=0, colorscale="RdBu",
                               colorbar={"title": "GL - subledger"},
                               hovertemplate="%{y}<br>%{x}<br>difference %{z:,.2f}"
                                             "<extra></extra>"))
    fig.update_layout(height=140 + 40 * len(accounts),
                      title="Control accounts against their subledgers, per date", **_LAYOUT)
    return fig


def daily_checks_figure(daily: Sequence[Mapping[str, Any]], dates: Sequence[str]
                        ) -> go.Figure | None:
    """Per daily check: the dates it held up to its first break, and that date."""
    if not daily or not dates:
        return None
    fig = go.Figure()
    held_x: list[str] = []
    held_y: list[str] = []
    broke_x: list[str] = []
    broke_y: list[str] = []
    broke_text: list[str] = []
    for d in daily:
        first = d.get("first_failed")
        for day in dates:
            if first is None or day < str(first):
                held_x.append(day)
                held_y.append(str(d["check"]))
        if first:
            broke_x.append(str(first))
            broke_y.append(str(d["check"]))
            broke_text.append(f"first broke {first}; failed {d.get('failed_dates')} of "
                              f"{d.get('dates_checked')} dates")
    fig.add_trace(go.Scatter(x=held_x, y=held_y, mode="markers", name="held",
                             marker={"color": "#2e7d32", "symbol": "square", "size": 9}))
    fig.add_trace(go.Scatter(x=broke_x, y=broke_y, mode="markers", name="first broke",
                             text=broke_text, hovertemplate="%{y}<br>%{text}<extra></extra>",
                             marker={"color": "#c62828", "symbol": "x", "size": 13}))
    fig.update_layout(height=140 + 32 * len(daily), title="Daily checks: held, and the first "
                      "date each broke", **_LAYOUT)
    fig.update_xaxes(type="date")
    return fig


def diff_figure(per_date: Sequence[Mapping[str, Any]]) -> go.Figure | None:
    """Per date, the books' events only in this attempt and only in the reference's."""
    if not per_date or not any(r["only_this"] or r["only_reference"] for r in per_date):
        return None
    x = [r["date"] for r in per_date]
    fig = go.Figure([go.Bar(x=x, y=[r["only_this"] for r in per_date], name="only here"),
                     go.Bar(x=x, y=[r["only_reference"] for r in per_date],
                            name="only the reference's")])
    fig.update_layout(barmode="group", height=300, title="Books' events that differ, per date",
                      **_LAYOUT)
    fig.update_xaxes(type="date")
    return fig


def pass_rates_figure(rates: Sequence[Mapping[str, Any]]) -> go.Figure | None:
    """pass@1 and pass^k per system with their bootstrap intervals."""
    if not rates:
        return None
    fig = go.Figure()
    for metric, label in (("pass_at_1", "pass@1"), ("pass_hat_k", "pass^k")):
        ys = [r[metric]["value"] for r in rates]
        fig.add_trace(go.Bar(
            x=[r["system"] for r in rates], y=ys, name=label,
            text=[f"{v:.2f}" if v is not None else "n/a" for v in ys], textposition="outside",
            error_y={"type": "data", "symmetric": False,
                     "array": [(r[metric]["high"] or 0) - (r[metric]["value"] or 0)
                               for r in rates],
                     "arrayminus": [(r[metric]["value"] or 0) - (r[metric]["low"] or 0)
                                    for r in rates]}))
    fig.update_layout(barmode="group", height=380, yaxis={"range": [0, 1.15],
                                                          "title": "share"},
                      title="pass@1 and pass^k per system (95% bootstrap over units)",
                      **_LAYOUT)
    return fig


def failure_heatmap(checks: Sequence[str], systems: Sequence[str],
                    rates: Mapping[tuple[str, str], tuple[int, int]]) -> go.Figure | None:
    """Check x system: the share of results that failed (``rates[check, system]`` is
    ``(failed, results)``)."""
    if not checks or not systems:
        return None
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    for c in checks:
        zr: list[float | None] = []
        tr: list[str] = []
        for s in systems:
            failed, total = rates.get((c, s), (0, 0))
            zr.append(failed / total if total else None)
            tr.append(f"{failed}/{total}" if total else "not run")
        z.append(zr)
        text.append(tr)
    fig = go.Figure(go.Heatmap(x=list(systems), y=list(checks), z=z, text=text,
                               texttemplate="%{text}", zmin=0, zmax=1, colorscale="Reds",
                               colorbar={"title": "failed"},
                               hovertemplate="%{y}<br>%{x}: %{text} failed<extra></extra>"))
    fig.update_layout(height=160 + 26 * len(checks), title="Failure rate per check and system",
                      **_LAYOUT)
    fig.update_yaxes(autorange="reversed")
    return fig


def resources_figure(points: Sequence[Mapping[str, Any]], field: str, title: str
                     ) -> go.Figure | None:
    """A known resource figure (cost, tokens) of each attempt against its acceptance."""
    known = [p for p in points if p.get(field) is not None]
    if not known:
        return None
    fig = go.Figure()
    for outcome in ("accepted", "not accepted"):
        ps = [p for p in known if ("accepted" if p["accepted"] else "not accepted") == outcome]
        if ps:
            fig.add_trace(go.Box(x=[p["system"] for p in ps], y=[p[field] for p in ps],
                                 name=outcome, boxpoints="all", jitter=0.4,
                                 marker={"color": "#2e7d32" if outcome == "accepted"
                                         else "#c62828"}))
    fig.update_layout(boxmode="group", height=360, title=title, **_LAYOUT)
    return fig


def durations_figure(points: Sequence[Mapping[str, Any]]) -> go.Figure | None:
    """Each attempt's duration per system."""
    known = [p for p in points if p.get("duration_s") is not None]
    if not known:
        return None
    fig = go.Figure()
    for s in sorted({p["system"] for p in known}):
        fig.add_trace(go.Box(y=[p["duration_s"] for p in known if p["system"] == s], name=s,
                             boxpoints="all", jitter=0.4))
    fig.update_layout(height=340, title="Attempt durations (s)", showlegend=False, **_LAYOUT)
    return fig


# --- the per-month accuracy curve (summary.json daily_by_month) ------------------------------


def monthly_accuracy_figure(by_month: Mapping[str, Any] | None) -> go.Figure | None:
    """Per month: the share of the per-date checks' (date, check) results that passed (a
    year of closes shows whether mistakes compound); the hover names the failing checks."""
    if not isinstance(by_month, Mapping):
        return None
    months = sorted(m for m, v in by_month.items()
                    if isinstance(v, Mapping) and v.get("accuracy") is not None)
    if not months:
        return None
    ys = [float(by_month[m]["accuracy"]) for m in months]
    text = []
    for m in months:
        v = by_month[m]
        failed = v.get("failed") or {}
        worst = ", ".join(f"{k} ({n})" for k, n in sorted(failed.items(),
                                                           key=lambda kv: (-kv[1], kv[0])))
        text.append(f"{v.get('passed')}/{v.get('checks')} passed over {v.get('dates')} dates"
                    + (f"<br>failing: {worst}" if worst else ""))
    fig = go.Figure(go.Scatter(x=months, y=ys, mode="lines+markers", name="accuracy",
                               text=text, line={"color": "#1565c0"},
                               hovertemplate="%{x}: %{y:.1%}<br>%{text}<extra></extra>"))
    fig.update_layout(height=320, title="Per-month accuracy of the per-date checks",
                      yaxis={"range": [0, 1.05], "tickformat": ".0%", "title": "passed"},
                      xaxis={"type": "category", "title": "month"}, **_LAYOUT)
    return fig
