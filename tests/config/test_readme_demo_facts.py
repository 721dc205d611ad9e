"""What the README's newcomer path says the demo makes is what seed_demo makes: one board per
registered plug-in, the number of fictional systems each queues, and the file types of the demo
uploads a newcomer submits again (JSONL for the JSONL benchmarks, zips for the others)."""

from __future__ import annotations

import re

from evaluation.benchmarks import registry
from tests.conftest import REPO, demo_runs

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def newcomer_path() -> str:
    readme = (REPO / "README.md").read_text()
    return " ".join(readme.split("# Operator reference", 1)[0].split())


def test_the_readme_counts_the_demos_boards_and_systems(demo_files):
    runs = {slug: demo_runs(plugin, demo_files(slug)) for slug, plugin in registry().items()}
    text = newcomer_path()
    boards = re.search(r"The demo makes \*\*(\w+) boards\*\*", text).group(1)
    assert WORDS[boards] == len(runs)
    for slug in runs:
        assert f"`{slug}-demo`" in text, slug
    systems = re.search(r"queues \*\*(\d+) fictional systems\*\* on them \(([^)]*)\)", text)
    assert int(systems.group(1)) == sum(len(found) for found in runs.values())
    per_board = [int(n) for n in re.findall(r"\d+", systems.group(2))]
    assert per_board == [len(found) for found in runs.values()]
    # The file types the newcomer finds in var/demo/<benchmark>/uploads/.
    uploads = text.split("in `var/demo/<benchmark>/uploads/`:", 1)[1].split("The whole upload", 1)[
        0
    ]
    for slug, found in runs.items():
        name = registry()[slug].name
        first = found[0].path.suffix
        kind = {".zip": "zips for", ".jsonl": "JSONL files for"}[first]
        named = uploads.split(kind, 1)[1].split(")", 2)[:2]
        assert name.split(" ")[0] in " ".join(named), (slug, first, uploads)
