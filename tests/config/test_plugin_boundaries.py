"""Outside its own package a benchmark is never named: the core (models, pipeline, pages, API,
rating studies, settings but for the registry entry) renders what plug-ins declare. A file that
names a benchmark, or one of its fields, outside the benchmark's package fails this test."""

from __future__ import annotations

import re
from pathlib import Path

from evaluation.benchmarks import registry

REPO = Path(__file__).resolve().parents[2]
CORE = ("evaluation", "leaderboard", "annotation", "config", "templates", "static", "docker")
SUFFIXES = {".py", ".html", ".js", ".css", ".yaml", ".conf", ".txt"}
# Fields and files of a benchmark that only its own package may know, beyond its names.
VOCABULARY = {
    "mp-bench": (
        "metatranscript",
        "should_speak",
        "is_speaker_name",
        "spoke_via",
        "half_duplex",
        "turnbased",
        "speaker_name",
        "all_stitched",
        "Table 3",
        "overall_acc",
        "app_acc",
    ),
}
# The registry entry: the one line of the core that lists the plug-ins.
REGISTRY_LINE = re.compile(r"^FLOORBOARD_BENCHMARKS = ")


def terms() -> dict[str, re.Pattern]:
    found = {}
    for slug, plugin in registry().items():
        package = type(plugin).__module__.rsplit(".", 1)[0]
        words = {slug, plugin.name, package.rsplit(".", 1)[-1], *VOCABULARY.get(slug, ())}
        found[package] = re.compile(
            "|".join(rf"(?<![\w-]){re.escape(word)}(?![\w-])" for word in words), re.I
        )
    return found


def core_files():
    # Every package under evaluation/benchmarks/ is a plug-in's own (registered or not).
    plugins = REPO / "evaluation" / "benchmarks"
    own = [folder for folder in plugins.iterdir() if folder.is_dir()]
    for top in CORE:
        for path in (REPO / top).rglob("*"):
            if path.suffix not in SUFFIXES or "migrations" in path.parts:
                continue
            if any(path.is_relative_to(folder) for folder in own) or "vendor" in path.parts:
                continue
            yield path


def test_no_core_file_names_a_benchmark():
    patterns = terms()
    assert patterns, "no plug-in registered"
    found = []
    for path in core_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if REGISTRY_LINE.match(line):
                continue
            for package, pattern in patterns.items():
                match = pattern.search(line)
                if match:
                    found.append(f"{path.relative_to(REPO)}:{number}: {match.group(0)} ({package})")
    assert not found, "benchmark names outside their plug-in:\n" + "\n".join(found)
