"""The development tools: the benchmark commands (`make bench`, `make bench-load`,
`make bench-attacks`) and the soak run (`make soak`), as one Django app that only a development
checkout installs (FLOORBOARD_DEV_TOOLS=1, set by the Makefile's local targets; the image never
sets it). A plug-in's own bench commands live in its demo/commands/ package and are found here by
name, as its demo/overhead.py workload is: the settings name the plug-ins, the core does not."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


def plugin_module(name: str) -> ModuleType | None:
    """The first registered plug-in's ``demo.<name>`` module, or None where none has one."""
    for package in settings.FLOORBOARD_BENCHMARKS:
        try:
            spec = importlib.util.find_spec(f"{package}.demo.{name}")
        except ModuleNotFoundError:
            spec = None  # a plug-in without a demo package, or without that subpackage
        if spec is not None:
            return importlib.import_module(spec.name)
    return None


def plugin_command(module: str) -> type[BaseCommand]:
    """The Command of the plug-in command named like ``module`` (this app's command module):
    from the registered plug-in whose demo/commands/ has it."""
    name = module.rpartition(".")[2]
    found = plugin_module(f"commands.{name}")
    if found is not None:
        return found.Command

    class Missing(BaseCommand):
        help = f"{name}: no registered benchmark plug-in has this command"

        def handle(self, *args, **options):
            raise CommandError(self.help)

    return Missing
