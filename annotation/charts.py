"""Plotly figures for the study dashboard, built from a snapshot's figures (never recomputed)."""

from __future__ import annotations

import html
import json

import plotly.graph_objects as go
from plotly.utils import PlotlyJSONEncoder

UNDEFINED_COLOUR = "#9aa1ad"


def plain(text) -> str:
    """Names (systems, raters) shown as text: plotly renders a subset of HTML, links included,
    in labels and hover text, and decodes entities for display."""
    return html.escape(str(text), quote=True)


def undefined_text(figure: dict) -> str:
    return f"undefined ({figure['reason']})"


def figure_text(figure: dict) -> str:
    """ "0.745 [0.702, 0.786]", "0.745" without an interval, or "undefined (reason)"."""
    if figure["value"] is None:
        return undefined_text(figure)
    if figure["low"] is None or figure["high"] is None:
        return f"{figure['value']:.3f}"
    return f"{figure['value']:.3f} [{figure['low']:.3f}, {figure['high']:.3f}]"


def _error_bars(figures: list[dict]) -> dict:
    return {
        "type": "data",
        "symmetric": False,
        "array": [
            (f["high"] - f["value"]) if f["value"] is not None and f["high"] is not None else None
            for f in figures
        ],
        "arrayminus": [
            (f["value"] - f["low"]) if f["value"] is not None and f["low"] is not None else None
            for f in figures
        ],
    }


def strata_chart(report: dict, names: dict[str, str]) -> go.Figure:
    """Agreement per stratum with 95% bootstrap intervals: judge x majority kappa, human alpha."""
    keys = list(report["by_stratum"])
    labels = [plain(names.get(key, f"stratum {key}")) for key in keys]
    fig = go.Figure()
    for measure, title in (
        ("kappa", "Cohen's kappa (judge vs majority)"),
        ("alpha", "Krippendorff's alpha (humans)"),
    ):
        figures = [report["by_stratum"][key][measure] for key in keys]
        fig.add_trace(
            go.Scatter(
                x=labels,
                y=[f["value"] for f in figures],
                mode="markers",
                name=title,
                error_y=_error_bars(figures),
                text=[figure_text(f) for f in figures],
                hovertemplate="%{x}<br>%{text}<extra>" + title + "</extra>",
            )
        )
    overall = report["overall"]["kappa"]
    if overall["value"] is not None:
        fig.add_hline(
            y=overall["value"],
            line_dash="dot",
            annotation_text=f"overall kappa {overall['value']:.3f}",
        )
    fig.update_layout(
        title="Agreement per stratum (95% item-bootstrap intervals)",
        yaxis={"title": "agreement", "range": [-1.05, 1.05]},
        xaxis={"title": "stratum"},
        height=420,
        # The legend sits above the plot: below it, long stratum names pushed it past the
        # chart's foot, where plotly gave it a scrollbar.
        margin={"t": 80, "b": 120},
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
    )
    return fig


def confusion_chart(report: dict, labels: list[str]) -> go.Figure:
    """Judge verdict (rows) against the per-item human majority (columns)."""
    confusion = report["overall"]["confusion"]
    fig = go.Figure(
        go.Heatmap(
            z=confusion,
            x=[plain(f"majority: {label}") for label in labels],
            y=[plain(f"judge: {label}") for label in labels],
            text=[[str(v) for v in row] for row in confusion],
            texttemplate="%{text}",
            colorscale="Blues",
            showscale=False,
            hovertemplate="%{y} · %{x}: %{z} items<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Judge × human majority ({report['overall']['judged']} judged items, "
        f"{report['overall']['ties']} ties)",
        yaxis={"autorange": "reversed"},
        height=360,
        margin={"t": 50},
    )
    return fig


def raters_chart(report: dict) -> go.Figure:
    """Each rater's agreement with the majority of the others against their median time."""
    shown = [
        r
        for r in report["raters"]
        if r["agreement"]["value"] is not None and r["median_seconds"]["value"] is not None
    ]
    fig = go.Figure(
        go.Scatter(
            x=[r["median_seconds"]["value"] for r in shown],
            y=[r["agreement"]["value"] for r in shown],
            mode="markers+text",
            text=[plain(r["name"]) for r in shown],
            textposition="top center",
            cliponaxis=False,
            marker={
                "size": 11,
                "color": ["#c0392b" if r["outlier"] else "#2c6fbb" for r in shown],
                "symbol": ["circle-open" if r["excluded"] else "circle" for r in shown],
            },
            customdata=[
                ["; ".join(r["outlier_reasons"]) or "not an outlier", r["ratings"]] for r in shown
            ],
            hovertemplate="%{text}: agreement %{y:.3f}, median %{x:.1f} s, "
            "%{customdata[1]} ratings<br>%{customdata[0]}<extra></extra>",
        )
    )
    fig.update_layout(
        title="Raters: agreement with the others' majority against speed",
        xaxis={"title": "median seconds per item", "automargin": True},
        yaxis={"title": "agreement with majority of others", "range": [-0.05, 1.05]},
        height=400,
        margin={"t": 50, "l": 90, "r": 90},
    )
    return fig


def dashboard_charts(figures: dict, names: dict[str, str]) -> str:
    """The three charts as one JSON document for the page's script."""
    report = figures["all_raters"]
    charts = {
        "strata": strata_chart(report, names),
        "confusion": confusion_chart(report, figures["labels"]),
        "raters": raters_chart(report),
    }
    return json.dumps(
        {key: fig.to_plotly_json() for key, fig in charts.items()}, cls=PlotlyJSONEncoder
    )
