"""The held-out rank and the rank delta on a small board, worked by hand: three systems that
rank Alpha > Beta > Gamma on the public tasks and the other way round on the held-out ones."""

import pytest
from django.core.cache import cache

from evaluation.models import Score
from tests.leaderboard.test_board_page import mp_results, scored_row, second_judge

pytestmark = pytest.mark.django_db

PUBLIC = {  # every count higher for the better system, so every rank key agrees
    "Alpha": (300, 50, 120, 64, 130, 72),
    "Beta": (200, 40, 100, 50, 110, 60),
    "Gamma": (100, 30, 80, 40, 90, 50),
}


def test_held_out_rank_and_delta_by_hand(client, mpbench):
    cache.clear()
    gpt_judge = second_judge(mpbench)
    for name, counts in PUBLIC.items():
        submission = scored_row(mpbench, gpt_judge, name, mp_results(*counts))
        reversed_counts = PUBLIC[{"Alpha": "Gamma", "Beta": "Beta", "Gamma": "Alpha"}[name]]
        Score.objects.filter(submission=submission).update(
            held_out_results=mp_results(*reversed_counts)
        )
    body = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=gpt").json()
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
    csv_text = client.get("/benchmarks/mp-bench/leaderboard.csv?judge=gpt").content.decode()
    header = csv_text.splitlines()[0].split(",")
    line = next(
        row for row in csv_text.splitlines() if row.startswith("Alpha,") or ",Alpha," in row
    )
    values = line.split(",")
    assert values[header.index("held_out_rank")] == "3"
    assert values[header.index("rank_delta")] == "2"
