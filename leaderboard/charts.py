"""Plotly figures of a board, as JSON for plotly.js, drawn from the charts a plug-in declares:
"scatter" (one metric against another, one point per system, a button per pair) and "bars"
(the metrics side by side per system, a panel per metric group, with chance lines). Takes the
board's columns and chart points (leaderboard.selectors.chart_points); no database access.

Text from users (system names) reaches plotly only escaped: plotly renders a subset of HTML in
labels and hover text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

PALETTE = ("#7a5195", "#ef5675", "#1f77b4", "#2ca02c", "#ff7f0e", "#8c564b", "#17becf")
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


def _text(value: str) -> str:
    """Text as plotly shows it, never as markup: plotly renders a subset of HTML (links
    included) in labels, hover text and tick labels, and decodes entities for display."""
    return escape(str(value), quote=True)


def _interval_text(interval, unit: str) -> str:
    if interval is None:
        return "no 95% interval (no counts, e.g. a paper's row)"
    return f"95% CI {interval[0]:.2f}–{interval[1]:.2f}{unit}"


def _error_bars(values, intervals) -> dict:
    upper = [
        (i[1] - v) if i and v is not None else 0 for v, i in zip(values, intervals, strict=True)
    ]
    lower = [
        (v - i[0]) if i and v is not None else 0 for v, i in zip(values, intervals, strict=True)
    ]
    return {"type": "data", "symmetric": False, "array": upper, "arrayminus": lower}


def _axis_title(column) -> str:
    better = "higher" if column.higher_is_better else "lower"
    unit = f" ({column.metric.unit})" if column.metric.unit else ""
    group = f"{column.group} " if column.group else ""
    return f"{_text(group + column.label)}{unit}, {better} is better"


def _groups(points, row_groups) -> list[tuple[str, str, str]]:
    """(key, label, colour) of the row groups present, in declaration order, then others."""
    declared = [(group.key, group.label) for group in row_groups]
    keys = [key for key, _ in declared]
    extra = sorted({p.system_type for p in points} - set(keys))
    return [
        (key, label, PALETTE[i % len(PALETTE)])
        for i, (key, label) in enumerate([*declared, *((k, k or "Systems") for k in extra)])
    ]


def scatter_figure(chart, columns: dict, points: Sequence, row_groups) -> go.Figure:
    """One point per system: metric x against metric y, with the intervals of both where they
    exist; a button per declared pair. Systems missing either value are not plotted."""
    figure = go.Figure()
    pairs = [
        (columns[x], columns[y])
        for x, y in zip(chart.metrics[::2], chart.metrics[1::2], strict=True)
        if x in columns and y in columns
    ]
    groups = _groups(points, row_groups)
    buttons = []
    for index, (x, y) in enumerate(pairs):
        first = len(figure.data)
        for key, label, colour in groups:
            chosen = [
                p
                for p in points
                if p.system_type == key
                and p.values.get(x.key) is not None
                and p.values.get(y.key) is not None
            ]
            if not chosen:
                continue
            ys = [p.values[y.key] for p in chosen]
            xs = [p.values[x.key] for p in chosen]
            y_intervals = [p.intervals.get(y.key) for p in chosen]
            x_intervals = [p.intervals.get(x.key) for p in chosen]
            labelled = len(points) <= MAX_LABELLED_POINTS
            figure.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="markers+text" if labelled else "markers",
                    textposition=[
                        "top center" if i % 2 == 0 else "bottom center" for i in range(len(chosen))
                    ],
                    textfont={"size": 10},
                    cliponaxis=False,
                    name=_text(f"{label} ({y.group})" if len(pairs) > 1 else label),
                    marker={
                        "color": colour,
                        "size": 10,
                        "symbol": [
                            "diamond-open" if p.reported_in_paper else "circle" for p in chosen
                        ],
                    },
                    error_y={**_error_bars(ys, y_intervals), "color": colour, "thickness": 1},
                    error_x={**_error_bars(xs, x_intervals), "color": colour, "thickness": 1},
                    text=[_text(p.system) for p in chosen],
                    customdata=[
                        [
                            _interval_text(i, y.metric.unit),
                            "reported in the paper" if p.reported_in_paper else "scored here",
                            p.url,
                        ]
                        for p, i in zip(chosen, y_intervals, strict=True)
                    ],
                    hovertemplate=(
                        "<b>%{text}</b><br>"
                        + f"{_text(y.group + ' ' + y.label)} %{{y:.2f}} (%{{customdata[0]}})<br>"
                        + f"{_text(x.group + ' ' + x.label)} %{{x:.2f}}<br>"
                        + "%{customdata[1]}<extra></extra>"
                    ),
                    visible=index == 0,
                )
            )
        buttons.append((x, y, first, len(figure.data)))
    total = len(figure.data)
    menu = [
        {
            "label": _text(y.group or y.label),
            "method": "update",
            "args": [
                {"visible": [first <= i < last for i in range(total)]},
                {"yaxis.title.text": _axis_title(y), "xaxis.title.text": _axis_title(x)},
            ],
        }
        for x, y, first, last in buttons
    ]
    x0, y0 = pairs[0] if pairs else (None, None)
    figure.update_layout(
        **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 90}},
        height=500,
        title={"text": _text(chart.title)},
        xaxis={"title": {"text": _axis_title(x0) if x0 else ""}, "rangemode": "tozero"},
        yaxis={"title": {"text": _axis_title(y0) if y0 else ""}},
        updatemenus=[
            {
                "type": "buttons",
                "direction": "right",
                "x": 0,
                "xanchor": "left",
                "y": 1.12,
                "buttons": menu,
            }
        ]
        if len(menu) > 1
        else [],
        legend={"orientation": "h", "y": -0.25},
        annotations=[_interval_note()],
    )
    return figure


def _interval_note() -> dict:
    return {
        "text": "Bars: 95% intervals where counts are known; paper rows (◇) have none.",
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": -0.38,
        "showarrow": False,
        "font": {"size": 10, "color": "#666"},
        "xanchor": "left",
    }


def bars_figure(chart, columns: dict, points: Sequence) -> go.Figure:
    """Per metric group, grouped bars of its metrics for each system (rank order), with their
    intervals and a dashed line at each chance level."""
    chosen = [columns[key] for key in chart.metrics if key in columns]
    groups = list(dict.fromkeys(c.group for c in chosen))
    shown = list(points)[:MAX_BAR_SYSTEMS]
    figure = make_subplots(
        rows=max(1, len(groups)), cols=1, subplot_titles=[_text(g) for g in groups]
    )
    names = [_text(p.system) for p in shown]
    labels = list(dict.fromkeys(c.label for c in chosen))
    colours = {label: PALETTE[(i + 2) % len(PALETTE)] for i, label in enumerate(labels)}
    in_legend: set[str] = set()
    for row, group in enumerate(groups, start=1):
        for column in (c for c in chosen if c.group == group):
            values = [p.values.get(column.key) for p in shown]
            intervals = [p.intervals.get(column.key) for p in shown]
            figure.add_trace(
                go.Bar(
                    x=names,
                    y=values,
                    name=_text(column.label),
                    legendgroup=column.label,
                    showlegend=column.label not in in_legend,
                    marker={"color": colours[column.label]},
                    error_y={**_error_bars(values, intervals), "thickness": 1},
                    customdata=[
                        [_interval_text(i, column.metric.unit), p.url]
                        for i, p in zip(intervals, shown, strict=True)
                    ],
                    hovertemplate=(
                        f"<b>%{{x}}</b><br>{_text(group + ' ' + column.label)} %{{y:.2f}}"
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
                    annotation_text=_text(f"{column.label} chance {column.chance}%"),
                    annotation_position="top right",
                    row=row,
                    col=1,
                )
        if all(c.metric.unit == "%" for c in chosen if c.group == group):
            figure.update_yaxes(range=[0, 105], title_text="%", row=row, col=1)
        figure.update_xaxes(tickangle=-35, automargin=True, row=row, col=1)
    note = (
        f"the first {MAX_BAR_SYSTEMS} of {len(points)} systems in rank order"
        if len(points) > MAX_BAR_SYSTEMS
        else f"{len(points)} systems in rank order"
    )
    figure.update_layout(
        **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 100, "b": 120}},
        barmode="group",
        height=360 * max(1, len(groups)),
        title={"text": _text(f"{chart.title} ({note}; 95% intervals where counts are known)")},
        legend={"orientation": "h", "y": 1.06, "x": 0, "yanchor": "bottom"},
    )
    return figure


def board_figures_json(plugin, columns: Sequence, points: Sequence) -> str:
    """{"figures": [<figure>, ...], "points": n} as one JSON document, a figure per chart."""
    by_key = {c.metric.key: c for c in columns}
    figures = []
    for chart in plugin.charts:
        if chart.kind == "scatter":
            figure = scatter_figure(chart, by_key, points, plugin.row_groups)
        else:
            figure = bars_figure(chart, by_key, points)
        figures.append(pio.to_json(figure, validate=False))
    return f'{{"figures": [{", ".join(figures)}], "points": {len(points)}}}'


def empty_figures_json() -> str:
    return json.dumps({"figures": [], "points": 0})
