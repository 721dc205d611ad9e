"""The held-out rank and the rank delta on a small board, worked by hand: three systems on the
example plug-in's board (toy-bench) that rank Alpha > Beta > Gamma on the public tasks and the
other way round on the held-out ones."""

import pytest
from django.core.cache import cache

from tests import factories

pytestmark = pytest.mark.django_db

PUBLIC = {  # quality and answered higher for the better system, so every column agrees
    "Alpha": 80,
    "Beta": 60,
    "Gamma": 40,
}
REVERSED = {"Alpha": "Gamma", "Beta": "Beta", "Gamma": "Alpha"}


def toy_results(value: int) -> dict:
    """Both languages at ``value``: quality in percent, ``value`` of 100 answered."""
    return factories.plugin_results("toy-bench", factories.every_metric("toy-bench", value))


def test_held_out_rank_and_delta_by_hand(client, toybench):
    cache.clear()
    gpt_judge = factories.judge(toybench, "gpt")
    for name, value in PUBLIC.items():
        factories.scored_submission(
            toybench,
            system=name,
            judge=gpt_judge,
            results=toy_results(value),
            held_out_results=toy_results(PUBLIC[REVERSED[name]]),
            task_rows=False,
        )
    body = client.get("/api/benchmarks/toy-bench/leaderboard/?judge=gpt").json()
    rows = {e["system"]: e for e in body["entries"] if not e["flags"]["reported_in_paper"]}
    assert {name: rows[name]["rank"] for name in PUBLIC} == {"Alpha": 1, "Beta": 2, "Gamma": 3}
    # Held out: Gamma 1, Beta 2, Alpha 3; delta = held-out rank - board rank.
    assert {name: rows[name]["held_out"]["rank"] for name in PUBLIC} == {
        "Alpha": 3,
        "Beta": 2,
        "Gamma": 1,
    }
    assert {name: rows[name]["held_out"]["rank_delta"] for name in PUBLIC} == {
        "Alpha": 2,
        "Beta": 0,
        "Gamma": -2,
    }
    csv_text = client.get("/benchmarks/toy-bench/leaderboard.csv?judge=gpt").content.decode()
    header = csv_text.splitlines()[0].split(",")
    line = next(
        row for row in csv_text.splitlines() if row.startswith("Alpha,") or ",Alpha," in row
    )
    values = line.split(",")
    assert values[header.index("held_out_rank")] == "3"
    assert values[header.index("rank_delta")] == "2"
