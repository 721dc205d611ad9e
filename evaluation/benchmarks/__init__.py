"""The benchmark plug-in registry.

Plug-ins are the packages listed in the ``FLOORBOARD_BENCHMARKS`` setting (each also an installed
Django app); each exposes ``plugin``, a :class:`~evaluation.benchmarks.base.BenchmarkPlugin`.
Adding a benchmark means adding its package and a line to that setting — see README.md,
"Adding a benchmark".
"""

from __future__ import annotations

from functools import lru_cache
from importlib import import_module

from django.conf import settings

from evaluation.benchmarks.base import BenchmarkPlugin
from evaluation.benchmarks.checks import check_declarations


class PluginRefused(ValueError):
    """A plug-in whose declarations do not hold together; the message lists every problem."""


@lru_cache(maxsize=8)
def _load(paths: tuple[str, ...]) -> dict[str, BenchmarkPlugin]:
    found: dict[str, BenchmarkPlugin] = {}
    for path in paths:
        plugin = getattr(import_module(path), "plugin", None)
        if not isinstance(plugin, BenchmarkPlugin):
            raise TypeError(f"{path}.plugin is not a BenchmarkPlugin")
        problems = check_declarations(plugin)
        if problems:
            raise PluginRefused(
                f"the {plugin.slug!r} plug-in ({path}) is refused: " + "; ".join(problems)
            )
        if plugin.slug in found:
            raise ValueError(f"two plug-ins are named {plugin.slug!r}")
        found[plugin.slug] = plugin
    return found


def registry() -> dict[str, BenchmarkPlugin]:
    """Every registered plug-in by slug, in the order of the setting."""
    return _load(tuple(settings.FLOORBOARD_BENCHMARKS))


def get_plugin(name: str) -> BenchmarkPlugin:
    plugins = registry()
    try:
        return plugins[name]
    except KeyError:
        known = ", ".join(sorted(plugins))
        raise LookupError(f"unknown benchmark plug-in {name!r}; known: {known}") from None
