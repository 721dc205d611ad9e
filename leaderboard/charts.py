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
# A title hangs from the figure's top edge, whatever the figure's height and however many lines
# it wraps to on a phone (at a fraction of the height, its first line rose out of the figure).
TITLE = {"x": 0, "xanchor": "left", "y": 1, "yanchor": "top", "pad": {"t": 12}}


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
    unit = column.metric.unit
    # A label that already names its unit ("Lat (s)") does not get it twice.
    unit = f" ({unit})" if unit and not column.label.endswith(f"({unit})") else ""
    group = f"{column.group} " if column.group else ""
    return f"{_text(group + column.label)}{unit}, {better} is better"


# Where a point's name may go, tried in this order: (plotly position, x offset, y offset) with
# the offsets in label boxes (a box is centred on the point, then shifted).
LABEL_POSITIONS = (
    ("top center", 0.0, 0.75),
    ("bottom center", 0.0, -0.75),
    ("middle right", 0.62, 0.0),
    ("middle left", -0.62, 0.0),
    ("top right", 0.55, 0.75),
    ("top left", -0.55, 0.75),
    ("bottom right", 0.55, -0.75),
    ("bottom left", -0.55, -0.75),
)
# A label's size as a fraction of the plot area, with some slack: about 6 px per character of
# 10 px text on a plot some 740 px wide, 12 px high on some 320 px. (The page hides what still
# collides at its actual size, e.g. on a phone.)
CHAR_WIDTH, LABEL_HEIGHT, POINT_SIZE = 0.009, 0.05, 0.02


def _overlap(a: tuple, b: tuple) -> float:
    """The area two boxes (x0, y0, x1, y1) share."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, width) * max(0.0, height)


def _label_box(x: float, y: float, text: str, dx: float, dy: float) -> tuple:
    width = max(3, len(text)) * CHAR_WIDTH
    cx, cy = x + dx * width, y + dy * LABEL_HEIGHT * 1.4
    return (cx - width / 2, cy - LABEL_HEIGHT / 2, cx + width / 2, cy + LABEL_HEIGHT / 2)


def _outside(box: tuple) -> float:
    return max(0.0, -box[0]) + max(0.0, box[2] - 1) + max(0.0, -box[1]) + max(0.0, box[3] - 1)


def label_positions(points: Sequence[tuple[float, float, str]], rounds: int = 20) -> list[str]:
    """A text position per point (x, y as fractions of the plot area, and its label) so that
    labels overlap neither each other nor the points and stay inside the plot: each point in
    turn takes its least covered position (the first free one), then every label moves to its
    best position given the others' until none moves (a few rounds at most)."""
    marks = [
        (x - POINT_SIZE / 2, y - POINT_SIZE / 2, x + POINT_SIZE / 2, y + POINT_SIZE / 2)
        for x, y, _ in points
    ]
    candidates = [
        [_label_box(x, y, text, dx, dy) for _, dx, dy in LABEL_POSITIONS] for x, y, text in points
    ]

    def cost(index: int, box: tuple, others: dict[int, tuple]) -> float:
        total = _outside(box)
        total += sum(_overlap(box, m) for i, m in enumerate(marks) if i != index)
        return total + sum(_overlap(box, b) for i, b in others.items() if i != index)

    chosen: dict[int, int] = {}
    for index in range(len(points)):
        placed = {i: candidates[i][k] for i, k in chosen.items()}
        costs = [cost(index, box, placed) for box in candidates[index]]
        chosen[index] = min(range(len(costs)), key=lambda k: (costs[k] > 1e-12, costs[k], k))
    for _ in range(rounds):
        moved = False
        for index in range(len(points)):
            placed = {i: candidates[i][k] for i, k in chosen.items()}
            costs = [cost(index, box, placed) for box in candidates[index]]
            best = min(range(len(costs)), key=lambda k: (costs[k], k))
            if costs[best] < costs[chosen[index]] - 1e-12:
                chosen[index] = best
                moved = True
        if not moved:
            break
    return [LABEL_POSITIONS[chosen[i]][0] for i in range(len(points))]


def _padded_range(values: Sequence[float], *, from_zero: bool, pad: float = 0.12) -> list:
    """An axis range around the values with room for the points' names at both ends."""
    low, high = min(values), max(values)
    if from_zero:
        low = min(0.0, low)
    span = (high - low) or max(abs(high), 1.0)
    return [low - (0 if from_zero and low == 0 else pad * span), high + pad * span]


def _legend_note(name: str, symbol: str, colour: str = "#666") -> go.Scatter:
    """An entry of the legend only: what a marker means, with no data."""
    return go.Scatter(
        x=[None],
        y=[None],
        mode="markers",
        name=name,
        legendgroup="note",
        showlegend=True,
        hoverinfo="skip",
        marker={"symbol": symbol, "color": colour, "size": 10},
    )


PAPER_NOTE = "reported in a paper: no counts, so no 95% interval"
SCORED_NOTE = "scored here: bars are 95% intervals"
# The legend runs across the foot of the figure, under the axis and its tick labels (plotly
# reserves the room it takes there), so the plot keeps the chart's whole width and the entries
# wrap into rows instead of scrolling in a column beside it; in "normal" order they flow as one
# list, not a column per group. It may take the figure's whole height before it would scroll,
# and the board's page grows the figure by the legend's height (leaderboard.js).
BOTTOM_LEGEND = {
    "orientation": "h",
    "x": 0,
    "xanchor": "left",
    "yref": "container",
    "y": 0,
    "yanchor": "bottom",
    "traceorder": "normal",
    "maxheight": 1,
}


def _groups(points, row_groups) -> list[tuple[str, str, str]]:
    """(key, label, colour) of the row groups present, in declaration order, then others."""
    declared = [(group.key, group.label) for group in row_groups]
    keys = [key for key, _ in declared]
    extra = sorted({p.system_type for p in points} - set(keys))
    return [
        (key, label, PALETTE[i % len(PALETTE)])
        for i, (key, label) in enumerate([*declared, *((k, k or "Systems") for k in extra)])
    ]


def _hover_value(axis: str, column) -> str:
    """plotly's placeholder for a point's value: two decimals, or the significant digits a
    p-value declares."""
    digits = column.metric.significant
    return f"%{{{axis}:.{digits}g}}" if digits else f"%{{{axis}:.2f}}"


def scatter_figure(chart, columns: dict, points: Sequence, row_groups) -> go.Figure:
    """One point per system: metric x against metric y, with the intervals of both where they
    exist; a button per declared pair. Systems missing either value are not plotted. Names sit
    beside the points where they do not overlap; the legend says which marks have intervals."""
    figure = go.Figure()
    pairs = [
        (columns[x], columns[y])
        for x, y in zip(chart.metrics[::2], chart.metrics[1::2], strict=True)
        if x in columns and y in columns
    ]
    groups = _groups(points, row_groups)
    labelled = len(points) <= MAX_LABELLED_POINTS
    buttons = []
    for index, (x, y) in enumerate(pairs):
        first = len(figure.data)
        placed = [
            p for p in points if p.values.get(x.key) is not None and p.values.get(y.key) is not None
        ]
        ranges = {}
        positions: dict[int, str] = {}
        if placed:
            xs_all = [p.values[x.key] for p in placed]
            ys_all = [p.values[y.key] for p in placed]
            ranges = {
                "x": _padded_range(xs_all, from_zero=True),
                "y": _padded_range(ys_all, from_zero=False),
            }
            (x0, x1), (y0, y1) = ranges["x"], ranges["y"]
            chosen = label_positions(
                [
                    ((px - x0) / (x1 - x0), (py - y0) / (y1 - y0), p.system)
                    for p, px, py in zip(placed, xs_all, ys_all, strict=True)
                ]
            )
            positions = {id(p): where for p, where in zip(placed, chosen, strict=True)}
        for key, label, colour in groups:
            chosen_points = [p for p in placed if p.system_type == key]
            if not chosen_points:
                continue
            ys = [p.values[y.key] for p in chosen_points]
            xs = [p.values[x.key] for p in chosen_points]
            y_intervals = [p.intervals.get(y.key) for p in chosen_points]
            x_intervals = [p.intervals.get(x.key) for p in chosen_points]
            figure.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="markers+text" if labelled else "markers",
                    textposition=[positions.get(id(p), "top center") for p in chosen_points],
                    textfont={"size": 10},
                    cliponaxis=False,
                    name=_text(f"{label} ({y.group})" if len(pairs) > 1 else label),
                    marker={
                        "color": colour,
                        "size": 10,
                        "symbol": [
                            "diamond-open" if p.reported_in_paper else "circle"
                            for p in chosen_points
                        ],
                    },
                    error_y={**_error_bars(ys, y_intervals), "color": colour, "thickness": 1},
                    error_x={**_error_bars(xs, x_intervals), "color": colour, "thickness": 1},
                    text=[_text(p.system) for p in chosen_points],
                    customdata=[
                        [
                            _interval_text(i, y.metric.unit),
                            "reported in the paper" if p.reported_in_paper else "scored here",
                            p.url,
                        ]
                        for p, i in zip(chosen_points, y_intervals, strict=True)
                    ],
                    hovertemplate=(
                        "<b>%{text}</b><br>"
                        + f"{_text(y.group + ' ' + y.label)} {_hover_value('y', y)} "
                        + "(%{customdata[0]})<br>"
                        + f"{_text(x.group + ' ' + x.label)} {_hover_value('x', x)}<br>"
                        + "%{customdata[1]}<br><i>click: open the system</i><extra></extra>"
                    ),
                    visible=index == 0,
                )
            )
        buttons.append((x, y, first, len(figure.data), ranges))
    _add_notes(figure, points)
    total = len(figure.data)
    notes = [i for i, trace in enumerate(figure.data) if trace.legendgroup == "note"]
    menu = [
        {
            "label": _text(y.group or y.label),
            "method": "update",
            "args": [
                {"visible": [first <= i < last or i in notes for i in range(total)]},
                {
                    "yaxis.title.text": _axis_title(y),
                    "xaxis.title.text": _axis_title(x),
                    **({"xaxis.range": ranges["x"], "yaxis.range": ranges["y"]} if ranges else {}),
                },
            ],
        }
        for x, y, first, last, ranges in buttons
    ]
    x0, y0 = pairs[0] if pairs else (None, None)
    first_ranges = buttons[0][4] if buttons else {}
    figure.update_layout(
        **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 100}},
        height=520,
        title={"text": _text(chart.title), **TITLE},
        xaxis={
            "title": {"text": _axis_title(x0) if x0 else ""},
            "automargin": True,
            **({"range": first_ranges["x"]} if first_ranges else {"rangemode": "tozero"}),
        },
        yaxis={
            "title": {"text": _axis_title(y0) if y0 else ""},
            "automargin": True,
            **({"range": first_ranges["y"]} if first_ranges else {}),
        },
        updatemenus=[
            {
                "type": "buttons",
                "direction": "right",
                "x": 0,
                "xanchor": "left",
                "y": 1.02,
                "yanchor": "bottom",
                "buttons": menu,
            }
        ]
        if len(menu) > 1
        else [],
        showlegend=True,
        legend=BOTTOM_LEGEND,
    )
    return figure


def _add_notes(figure: go.Figure, points: Sequence, **where) -> None:
    """Legend entries saying which marks carry 95% intervals: a paper's rows have no counts."""
    if any(not p.reported_in_paper for p in points):
        figure.add_trace(_legend_note(SCORED_NOTE, "circle"), **where)
    if any(p.reported_in_paper for p in points):
        figure.add_trace(_legend_note(PAPER_NOTE, "diamond-open"), **where)


def _distinct(names: list[str]) -> list[str]:
    """Category labels, one per bar: a name shown twice (two anonymous rows) is numbered from
    its second appearance, or plotly would stack both on one category."""
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return labels


def bars_figure(chart, columns: dict, points: Sequence) -> go.Figure:
    """Per metric group, grouped bars of its metrics for each system (rank order), with their
    intervals and a dashed line at each chance level."""
    chosen = [columns[key] for key in chart.metrics if key in columns]
    groups = list(dict.fromkeys(c.group for c in chosen))
    shown = list(points)[:MAX_BAR_SYSTEMS]
    figure = make_subplots(
        rows=max(1, len(groups)), cols=1, subplot_titles=[_text(g) for g in groups]
    )
    names = _distinct([_text(p.system) for p in shown])
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
                        f"<b>%{{x}}</b><br>{_text(group + ' ' + column.label)} "
                        + _hover_value("y", column)
                        + "<br>%{customdata[0]}<br><i>click: open the system</i><extra></extra>"
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
    _add_notes(figure, shown, row=1, col=1)
    figure.update_layout(
        **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 90, "b": 60}},
        barmode="group",
        height=380 * max(1, len(groups)),
        title={"text": _text(f"{chart.title} ({note})"), **TITLE},
        showlegend=True,
        legend=BOTTOM_LEGEND,
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
