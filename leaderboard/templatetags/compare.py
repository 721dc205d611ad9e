"""Numbers of the comparison page: values in the metric's unit, signed differences, p-values."""

from __future__ import annotations

import math

from django import template

from leaderboard.templatetags.scores import significant_text

register = template.Library()


def _decimals(column) -> int:
    return column.metric.decimals


@register.filter
def in_unit(value, column) -> str:
    if value is None:
        return "–"
    return f"{value:.{_decimals(column)}f}"


@register.filter
def signed(value, column) -> str:
    if value is None:
        return "–"
    text = f"{value:+.{_decimals(column)}f}"
    return "±0" if text.lstrip("+-").strip("0.") == "" else text


@register.filter
def difference_interval(interval, column) -> str:
    if not interval or any(v is None or not math.isfinite(v) for v in interval):
        return "–"
    low, high = interval
    return f"[{low:+.{_decimals(column)}f}, {high:+.{_decimals(column)}f}]"


@register.filter
def p_value(value) -> str:
    """Two significant digits, in powers of ten below 0.001 (7.6 × 10⁻⁶, never 0.000)."""
    return "–" if value is None else significant_text(value, 2)
