"""Plotly figures of a board, as JSON for plotly.js: latency against appropriateness accuracy,
and grouped accuracy bars per split with the chance line. Takes the board's columns and chart
points (see leaderboard.selectors.chart_points); no database access."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

TYPE_COLOURS = {"text-llm": "#7a5195", "non-realtime": "#ef5675", "realtime": "#1f77b4"}
TYPE_LABELS = {"text-llm": "Text LLMs", "non-realtime": "Non-realtime", "realtime": "Realtime"}
# More systems than this make unreadable bars; the bars show the best ones in rank order.
MAX_BAR_SYSTEMS = 30
# Names beside the points while they stay legible; beyond that, on hover only.
MAX_LABELLED_POINTS = 25
LAYOUT = {
    "template": "none",
    "font": {"family": "system-ui, sans-serif", "size": 12},
    "margin": {"l": 60, "r": 20, "t": 60, "b": 60},
    "hoverlabel": {"align": "left"},
}


def plain(text) -> str:
    """Text as plotly shows it, never as markup: plotly renders a subset of HTML (links
    included) in labels, hover text and tick labels, and decodes entities for display."""
    return html.escape(str(text), quote=True)


def _interval_text(interval) -> str:
    if interval is None:
        return "no 95% interval: no counts"
    return f"95% CI {interval[0]:.2f}–{interval[1]:.2f}%"


def _error_bars(values, intervals) -> dict:
    upper = [
        (i[1] - v) if i and v is not None else 0 for v, i in zip(values, intervals, strict=True)
    ]
    lower = [
        (v - i[0]) if i and v is not None else 0 for v, i in zip(values, intervals, strict=True)
    ]
    return {"type": "data", "symmetric": False, "array": upper, "arrayminus": lower}


def _splits(columns) -> list[tuple[str, object, object]]:
    """(group, appropriateness column, latency column) for each split that has both."""
    found = []
    for group in dict.fromkeys(c.group for c in columns):
        app = next((c for c in columns if c.group == group and c.key.endswith(".app_acc")), None)
        lat = next((c for c in columns if c.group == group and c.kind == "latency"), None)
        if app and lat:
            found.append((group, app, lat))
    return found


def latency_figure(columns: Sequence, points: Sequence) -> go.Figure:
    """One point per system: latency (x) against appropriateness accuracy (y) with Wilson error
    bars; a button per split. Systems with no latency (offline systems) are not plotted."""
    figure = go.Figure()
    splits = _splits(columns)
    buttons = []
    for index, (group, app, lat) in enumerate(splits):
        first = len(figure.data)
        for system_type, colour in TYPE_COLOURS.items():
            chosen = [
                p
                for p in points
                if p.system_type == system_type
                and p.values.get(app.key) is not None
                and p.values.get(lat.key) is not None
            ]
            if not chosen:
                continue
            ys = [p.values[app.key] for p in chosen]
            intervals = [p.intervals.get(app.key) for p in chosen]
            figure.add_trace(
                go.Scatter(
                    x=[p.values[lat.key] for p in chosen],
                    y=ys,
                    mode="markers+text" if len(points) <= MAX_LABELLED_POINTS else "markers",
                    textposition="top center",
                    textfont={"size": 10},
                    name=plain(f"{TYPE_LABELS.get(system_type, system_type)} ({group})"),
                    marker={
                        "color": colour,
                        "size": 10,
                        "symbol": [
                            "diamond-open" if p.reported_in_paper else "circle" for p in chosen
                        ],
                    },
                    error_y={**_error_bars(ys, intervals), "color": colour, "thickness": 1},
                    text=[plain(p.system) for p in chosen],
                    customdata=[
                        [_interval_text(i), "reported in the paper" if p.reported_in_paper else ""]
                        for p, i in zip(chosen, intervals, strict=True)
                    ],
                    hovertemplate=(
                        "<b>%{text}</b><br>"
                        + f"{plain(group)} {plain(app.label)} %{{y:.2f}}% (%{{customdata[0]}})<br>"
                        + "Latency %{x:.1f} s<br>%{customdata[1]}<extra></extra>"
                    ),
                    visible=index == 0,
                )
            )
        buttons.append((group, app, first, len(figure.data)))
    total = len(figure.data)
    menu = [
        {
            "label": group,
            "method": "update",
            "args": [
                {"visible": [first <= i < last for i in range(total)]},
                {"yaxis": {"title": {"text": f"{group} {app.label} (%)"}, "range": [-2, 102]}},
            ],
        }
        for group, app, first, last in buttons
    ]
    first_group, first_app = (splits[0][0], splits[0][1]) if splits else ("", None)
    figure.update_layout(
        **LAYOUT,
        height=480,
        title={"text": "Latency against appropriateness accuracy (95% Wilson intervals)"},
        xaxis={"title": {"text": "Latency (s), lower is better"}, "rangemode": "tozero"},
        yaxis={
            "title": {"text": f"{first_group} {first_app.label if first_app else ''} (%)"},
            "range": [-2, 102],
        },
        updatemenus=[{"type": "buttons", "direction": "right", "x": 1, "y": 1.15, "buttons": menu}]
        if len(menu) > 1
        else [],
        legend={"orientation": "h", "y": -0.2},
    )
    return figure


def split_bars_figure(columns: Sequence, points: Sequence) -> go.Figure:
    """Per split, grouped bars of its accuracies for each system (rank order), with Wilson error
    bars and a dashed line at each chance level."""
    groups = list(dict.fromkeys(c.group for c in columns if c.kind == "rate"))
    shown = list(points)[:MAX_BAR_SYSTEMS]
    figure = make_subplots(rows=max(1, len(groups)), cols=1, subplot_titles=groups)
    names = [plain(p.system) for p in shown]
    # One colour and one legend entry per measure (T Acc means the same in every split).
    labels = list(dict.fromkeys(c.label for c in columns if c.kind == "rate"))
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    colours = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
    in_legend: set[str] = set()
    for row, group in enumerate(groups, start=1):
        rates = [c for c in columns if c.group == group and c.kind == "rate"]
        for column in rates:
            values = [p.values.get(column.key) for p in shown]
            intervals = [p.intervals.get(column.key) for p in shown]
            figure.add_trace(
                go.Bar(
                    x=names,
                    y=values,
                    name=column.label,
                    legendgroup=column.label,
                    showlegend=column.label not in in_legend,
                    marker={"color": colours[column.label]},
                    error_y={**_error_bars(values, intervals), "thickness": 1},
                    customdata=[[_interval_text(i)] for i in intervals],
                    hovertemplate=(
                        f"<b>%{{x}}</b><br>{plain(group)} {plain(column.label)} %{{y:.2f}}%"
                        + "<br>%{customdata[0]}<extra></extra>"
                    ),
                ),
                row=row,
                col=1,
            )
            in_legend.add(column.label)
            if column.chance is not None:
                figure.add_hline(
                    y=column.chance,
                    line={"dash": "dash", "color": "#555", "width": 1},
                    annotation_text=f"{column.label} chance {column.chance}%",
                    annotation_position="top right",
                    row=row,
                    col=1,
                )
        figure.update_yaxes(range=[0, 105], title_text="%", row=row, col=1)
    note = (
        f"the first {MAX_BAR_SYSTEMS} of {len(points)} systems in rank order"
        if len(points) > MAX_BAR_SYSTEMS
        else f"{len(points)} systems in rank order"
    )
    figure.update_layout(
        **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 100}},
        barmode="group",
        height=320 * max(1, len(groups)),
        title={"text": f"Accuracy per split, 95% Wilson intervals ({note})"},
        legend={"orientation": "h", "y": -0.08},
    )
    return figure


def board_figures_json(columns: Sequence, points: Sequence) -> str:
    """{"latency": <figure>, "splits": <figure>} as one JSON document."""
    latency = pio.to_json(latency_figure(columns, points), validate=False)
    splits = pio.to_json(split_bars_figure(columns, points), validate=False)
    return f'{{"latency": {latency}, "splits": {splits}, "points": {len(points)}}}'


def empty_figures_json() -> str:
    return json.dumps({"latency": None, "splits": None, "points": 0})
