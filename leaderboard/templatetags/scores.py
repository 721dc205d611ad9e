from django import template

register = template.Library()


@register.filter
def pct(rate) -> str:
    """A rate {"count", "total", "pct"} as the paper prints it; a dash when undefined."""
    if not isinstance(rate, dict) or rate.get("pct") is None:
        return "–"
    return f"{rate['pct']:.2f}"


@register.filter
def seconds(value) -> str:
    return "–" if value is None else f"{value:.1f}"


@register.filter
def part(results, key: str):
    return (results or {}).get(key) or {}
