"""Figures as text: a value with its interval, or "undefined (reason)", never a bare NaN."""

from django import template

from annotation.charts import figure_text

register = template.Library()


@register.filter
def figure(value) -> str:
    if not isinstance(value, dict) or "value" not in value:
        return "–"
    return figure_text(value)


@register.filter
def get(mapping, key):
    """mapping[key], also when the keys are the strings JSON made of numbers."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(key, mapping.get(str(key)))
