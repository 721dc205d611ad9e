"""What a board says of its rows, for every registered plug-in (the example one included):

- A benchmark that declares no rank keys (Duplex-MPE: its paper combines no metric and ranks no
  system) ranks no row: every row's rank is empty on the page, in the JSON and in the CSV, and
  the home page names no leader. A benchmark with rank keys ranks its rows there as before.
- The first screen's "Showing the first n of m rows" counts the rows of the table shown: on a
  benchmark split in tables (MSI-Bench's languages), those of the chosen table only."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.core.cache import cache
from django.test import Client

from evaluation.benchmarks import registry
from leaderboard.views import FIRST_ROWS
from tests import factories
from tests.conftest import every_plugin_board

pytestmark = pytest.mark.django_db

SLUGS = [*sorted(registry()), "toy-bench"]


@pytest.mark.parametrize("slug", SLUGS)
def test_a_board_ranks_as_declared_and_counts_the_rows_of_its_table(slug, settings, tmp_path):
    cache.clear()
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="ranks")
    splits = [split.key for split in plugin.splits]
    # Four scored systems; on a split benchmark the first answered its first split only, so
    # each split's table holds its own rows (MSI-Bench's English table four, Mandarin three).
    made = [
        factories.scored_submission(
            benchmark,
            system=f"System {n}",
            results=factories.plugin_results(
                slug, factories.every_metric(slug, 40 + 10 * n), splits=splits[:1] if n else None
            ),
        )
        for n in range(4)
    ]
    reported = benchmark.submissions.filter(is_reported=True)
    ranked = bool(plugin.rank_keys)
    client = Client()
    board = f"/benchmarks/{benchmark.slug}/"

    for split in [split.key for split in plugin.splits] or [""]:
        address = f"{board}?split={split}" if split else board
        table = client.get(address).content.decode()
        rows = len(re.findall(r"<tr class=\"[^\"]*\" data-system=", table))
        covering = [s for s in made if not split or split in s.scores.get().results]
        shown = reported.filter(reported_results__has_key=split) if split else reported
        assert rows == len(covering) + shown.count()
        assert 0 < rows < FIRST_ROWS
        assert "Showing the first" not in table, (split, rows)
        api = f"/api/benchmarks/{benchmark.slug}/leaderboard/" + (
            f"?split={split}" if split else ""
        )
        assert len(client.get(api).json()["entries"]) == rows

    entries = client.get(f"/api/benchmarks/{benchmark.slug}/leaderboard/").json()["entries"]
    scored = [e for e in entries if e["judge"] != "reported"]
    assert len(scored) == len(made)
    ranks = [e["rank"] for e in entries]
    if ranked:
        assert all(isinstance(rank, int) and rank >= 1 for rank in ranks), ranks
    else:
        assert ranks == [None] * len(entries)

    table = list(
        csv.DictReader(io.StringIO(client.get(board + "leaderboard.csv").content.decode()))
    )
    assert len(table) == len(entries)
    assert all((row["rank"] != "") == ranked for row in table), [r["rank"] for r in table]

    page = client.get(board).content.decode()
    cells = re.findall(r'<td class="rank[^"]*"[^>]*>(.*?)</td>', page)
    assert len(cells) == len(entries)
    if ranked:
        assert all('class="rank-number"' in cell for cell in cells), cells
    else:
        assert cells == ["–"] * len(entries)
        assert "ranks no system" in page

    home = client.get("/").content.decode()
    card = re.search(
        rf'data-benchmark="{benchmark.slug}".*?<dd class="leader">(.*?)</dd>', home, re.S
    ).group(1)
    if ranked:
        assert "none" not in card and "/systems/" in card
    else:
        assert "/systems/" not in card and "ranks no system" in card
