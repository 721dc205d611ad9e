"""Ranks and rank ranges by human-calibrated values (leaderboard/selectors_calibrated.py), on
hand-worked cases: competition ranking best first with exact ties sharing a rank, rows without
a calibrated value unranked, ranges from intervals lying wholly above or below."""

from __future__ import annotations

from evaluation.benchmarks.base import Metric
from leaderboard.selectors import Column, Entry
from leaderboard.selectors_calibrated import Calibrated, calibrated_ranks, interval_rank_ranges


def test_ranges_count_intervals_wholly_above_and_below():
    a, b, c = (60.0, 80.0), (50.0, 70.0), (20.0, 40.0)
    # A: nothing lies above 80, C lies below 60: best 1, worst 4 - 1. B likewise (A overlaps
    # it). C: A and B lie above 40: best 3, nothing below: worst 4. D has no interval.
    assert interval_rank_ranges([a, b, c, None]) == [(1, 3), (1, 3), (3, 4), None]
    # Lower is better: C is the best; A has C below it (better) and nothing above.
    assert interval_rank_ranges([a, b, c, None], higher_is_better=False) == [
        (2, 4),
        (2, 4),
        (1, 2),
        None,
    ]
    assert interval_rank_ranges([a]) == [(1, 1)]


def _entry(pk: int, group: str, value, low=None, high=None) -> Entry:
    calibrated = Calibrated(
        metric="acc",
        value=value,
        low=low,
        high=high,
        judge_value=50.0,
        classical_value=None,
        classical_low=None,
        classical_high=None,
        bias=None,
        bias_low=None,
        bias_high=None,
        labelled=10,
        population=100,
        labels_needed=0 if value is not None else 5,
        tuning=None,
        study_id=1,
        study_name="s",
    )
    return Entry(
        rank=None,
        system=f"S{pk}",
        system_type=group,
        submission_id=pk,
        judge="offline",
        results={},
        verified=True,
        reported_in_paper=False,
        incomplete=False,
        offline_judge=True,
        calibrated={"acc": calibrated},
    )


def test_competition_ranks_by_calibrated_values_within_groups():
    column = Column(Metric(key="acc", label="Accuracy"))
    rows = [
        _entry(1, "x", 40.0, 35.0, 45.0),
        _entry(2, "x", 70.0, 65.0, 75.0),
        _entry(3, "x", 70.0, 60.0, 80.0),
        _entry(4, "x", None),
        _entry(5, "y", 10.0, 0.0, 20.0),
    ]
    ranks = calibrated_ranks(rows, column=column, grouped=False)
    # 70, 70, 40, 10: ranks 1, 1, 3, 4; row 4 unranked. Ranges: row 1 has rows 2 and 3 above
    # 45 (best 3) and row 5 below 35 (worst 4 - 1).
    assert ranks == {
        2: (1, (1, 2)),
        3: (1, (1, 2)),
        1: (3, (3, 3)),
        5: (4, (4, 4)),
        4: (None, None),
    }
    grouped = calibrated_ranks(rows, column=column, grouped=True)
    assert grouped[5] == (1, (1, 1)) and grouped[1] == (3, (3, 3))
    lower = calibrated_ranks(
        rows, column=Column(Metric(key="acc", label="Error", higher_is_better=False)), grouped=False
    )
    assert lower[5][0] == 1 and lower[2][0] == lower[3][0] == 3
