"""Benchmark plug-ins. Each one is a package exposing the functions the engine calls:

- ``read_source(directory) -> Source``: tasks and judge prompts from a benchmark checkout;
- ``is_task_folder(name)`` and ``validate_contents(...)``: bundle layout and validation;
- ``collect_evidence``, ``probe_half_duplex``, ``detect``: timing detection;
- ``kinds_for``, ``response_for``, ``skips_judge``, ``build_prompt``, ``parse_verdict``,
  ``offline_verdict``: judging;
- ``aggregate``: the paper's table.

Adding a benchmark means adding a package here and a line to PLUGINS; no other one changes.
"""

from importlib import import_module
from types import ModuleType

PLUGINS = {"mp-bench": "evaluation.benchmarks.mpbench"}


def get_plugin(name: str) -> ModuleType:
    try:
        return import_module(PLUGINS[name])
    except KeyError:
        known = ", ".join(sorted(PLUGINS))
        raise LookupError(f"unknown benchmark plug-in {name!r}; known: {known}") from None
