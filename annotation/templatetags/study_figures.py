"""Figures as text: a value with its interval, or "undefined (reason)", never a bare NaN."""

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from annotation.charts import figure_text

register = template.Library()


# A figure resting on fewer items than this says nothing a reader should rely on.
MIN_ITEMS = 10


@register.filter
def figure(value) -> str:
    """The figure with its n beside it, marked when n is too small to mean anything."""
    if not isinstance(value, dict) or "value" not in value:
        return "–"
    text = escape(figure_text(value))
    n = value.get("n") or 0
    count = f' <span class="n">n={n}</span>'
    if value["value"] is not None and n < MIN_ITEMS:
        count += (
            f' <span class="few" title="{n} item{pluralize(n)}: too few to mean anything">'
            "too few to mean anything</span>"
        )
    return mark_safe(f'<span class="figure">{text}</span>{count}')  # escaped above


@register.filter
def judge_figure(agreement, name: str) -> str:
    """A judge-vs-majority figure (kappa, raw agreement, AC1), also marked when most of its
    items' "majority" is one rater's label (the judge is then compared with one person)."""
    if not isinstance(agreement, dict):
        return "–"
    shown = figure(agreement.get(name))
    single = agreement.get("single_majority") or 0
    compared = (agreement.get(name) or {}).get("n") or 0
    if single and compared and 2 * single >= compared:
        shown += mark_safe(  # numbers only
            f' <span class="few" title="on {single} of {compared} items the majority is a '
            f'single rater">majority of one rater on {single} of {compared}</span>'
        )
    return shown


def pluralize(n: int) -> str:
    return "" if n == 1 else "s"


@register.filter
def get(mapping, key):
    """mapping[key], also when the keys are the strings JSON made of numbers."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(key, mapping.get(str(key)))
