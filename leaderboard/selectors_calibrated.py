"""Human-calibrated numbers on the board: a judged metric of a row corrected by the human labels
of a calibration study (evaluation.models.CalibratedScore, written by the annotation app; read
here without importing it).

The rows come from leaderboard_entries, so a calibrated number is read only for a submission
the viewer may see there, exactly as its judge's number is. Under the human-calibrated view the
board can rank by the calibrated values: standard competition ranking (exact ties share a rank),
best first, within the row group when grouped; a row without a calibrated value (too few
labels, a paper's row) is unranked and listed last. Its plausible rank range comes from the
calibrated 95% intervals: the best rank is one more than the rows whose interval lies wholly
above its own, the worst the rows ranked less those whose interval lies wholly below. (The
judge's rank range comes from paired McNemar tests on per-unit outcomes; a calibrated value has
no per-unit outcomes, only its interval, so the ranges are the interval-separation analogue.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.models import Benchmark, CalibratedScore, Judge, Score
from evaluation.selectors import submissions_visible_to
from leaderboard.selectors import (
    SORT_RANK,
    SORT_TYPE,
    BoardSort,
    Column,
    Entry,
    every_split_columns,
)

# Field names of a calibrated number as the API and the CSV give them.
CALIBRATED_FIELDS = (
    "value",
    "low",
    "high",
    "judge_value",
    "classical_value",
    "classical_low",
    "classical_high",
    "bias",
    "bias_low",
    "bias_high",
    "labelled",
    "population",
    "labels_needed",
    "tuning",
)


@dataclass(frozen=True)
class Calibrated:
    """One row's calibrated metric (values in the metric's unit, 95% intervals)."""

    metric: str
    value: float | None
    low: float | None
    high: float | None
    judge_value: float | None
    classical_value: float | None
    classical_low: float | None
    classical_high: float | None
    bias: float | None  # judge minus human
    bias_low: float | None
    bias_high: float | None
    labelled: int  # n
    population: int  # N
    labels_needed: int  # > 0 while there is no calibrated value
    tuning: float | None
    study_id: int
    study_name: str
    # The submission was scored again under the judge after the study sampled it, and the
    # judge's value moved: the calibrated value and the bias no longer apply (people's own
    # estimate still does).
    stale: bool = False

    @classmethod
    def of(cls, row: CalibratedScore) -> Calibrated:
        return cls(
            metric=row.metric,
            **{name: getattr(row, name) for name in CALIBRATED_FIELDS},
            study_id=row.study_id,
            study_name=row.study_name,
        )

    def numbers(self) -> dict:
        """The documented numbers (API, CSV): CALIBRATED_FIELDS and stale, no study."""
        return {**{name: getattr(self, name) for name in CALIBRATED_FIELDS}, "stale": self.stale}

    def as_scored(self, *, column: Column | None, results: dict | None) -> Calibrated:
        """These numbers against the judge's results as they stand: when the judge's value of
        the column is no longer the one the study sampled (to the metric's decimals: the
        submission was scored again since), they are marked stale, without a calibrated value
        or bias, and the board does not rank by them."""
        if column is None or results is None or self.judge_value is None:
            return self
        current = column.value(results)
        if current is None:
            return self
        if abs(current - self.judge_value) <= 0.5 * 10**-column.metric.decimals + 1e-9:
            return self
        cleared = ("value", "low", "high", "bias", "bias_low", "bias_high", "tuning")
        return dataclasses.replace(self, stale=True, **dict.fromkeys(cleared))


@dataclass(frozen=True)
class CalibratedView:
    """The board's human-calibrated view: which column, and whether rank follows it."""

    column: Column
    ranked: bool = False


def study_label(calibrated: Calibrated, *, staff: bool) -> str:
    """Which study the numbers come from: its name for staff, a description for everyone else
    (a study's name is staff's working title)."""
    return calibrated.study_name if staff else "a calibration study"


def board_calibrated(
    *, benchmark: Benchmark, judge: Judge | None, user
) -> dict[int, dict[str, Calibrated]]:
    """submission id -> metric key -> calibrated numbers, under this judge, for every
    submission of the benchmark the viewer may see (one query; the board's rows are among
    them, and the view's metrics are read from it)."""
    if judge is None:
        return {}
    visible = submissions_visible_to(user=user).filter(benchmark=benchmark)
    found: dict[int, dict[str, Calibrated]] = {}
    for row in CalibratedScore.objects.filter(judge=judge, submission__in=visible.values("pk")):
        found.setdefault(row.submission_id, {})[row.metric] = Calibrated.of(row)
    return found


def calibrated_metric_keys(
    found: dict[int, dict[str, Calibrated]], *, columns: Sequence[Column]
) -> list[str]:
    """The board's metrics (keys, in column order) with calibrated numbers in ``found``; empty
    when none has (no toggle then)."""
    keys = {key for metrics in found.values() for key in metrics}
    return list(dict.fromkeys(c.metric.key for c in columns if c.key in keys))


def with_calibrated(
    entries: list[Entry], found: dict[int, dict[str, Calibrated]], *, benchmark: Benchmark
) -> list[Entry]:
    """Each row with its calibrated numbers (from board_calibrated), by column key, checked
    against the row's judge results (Calibrated.as_scored); a paper's row has none."""
    columns = {c.key: c for c in every_split_columns(benchmark=benchmark)}
    return [
        dataclasses.replace(
            e,
            calibrated={
                key: found.as_scored(column=columns.get(key), results=e.results)
                for key, found in found[e.submission_id].items()
            },
        )
        if e.submission_id in found and not e.reported_in_paper
        else e
        for e in entries
    ]


# --- Ranking by calibrated values -------------------------------------------------------------


def interval_rank_ranges(
    members: Sequence[tuple[float, float] | None], *, higher_is_better: bool = True
) -> list[tuple[int, int] | None]:
    """Each ranked member's plausible rank range from 95% intervals: best = 1 + the members
    whose interval lies wholly on the better side of its own, worst = len(members) - those
    wholly on the worse side. None for a member without an interval (it still counts)."""
    n = len(members)
    found: list[tuple[int, int] | None] = []
    for i, mine in enumerate(members):
        if mine is None:
            found.append(None)
            continue
        better = worse = 0
        for j, theirs in enumerate(members):
            if j == i or theirs is None:
                continue
            above, below = theirs[0] > mine[1], theirs[1] < mine[0]
            if higher_is_better:
                better, worse = better + above, worse + below
            else:
                better, worse = better + below, worse + above
        found.append((1 + better, n - worse))
    return found


def calibrated_ranks(
    entries: list[Entry], *, column: Column, grouped: bool
) -> dict[int, tuple[int | None, tuple[int, int] | None]]:
    """submission id -> (rank, rank range) by the column's calibrated values: competition
    ranking best first within the row group when grouped; rows without a value unranked."""
    key = column.key
    partitions: dict[str, list[tuple[int, Calibrated]]] = {}
    for entry in entries:
        calibrated = entry.calibrated.get(key)
        if calibrated is not None and calibrated.value is not None:
            group = entry.system_type if grouped else ""
            partitions.setdefault(group, []).append((entry.submission_id, calibrated))
    ranked: dict[int, tuple[int | None, tuple[int, int] | None]] = {
        e.submission_id: (None, None) for e in entries
    }
    sign = -1.0 if column.higher_is_better else 1.0
    for members in partitions.values():
        members.sort(key=lambda m: sign * m[1].value)
        first: dict[float, int] = {}
        for place, (_, calibrated) in enumerate(members, start=1):
            first.setdefault(calibrated.value, place)
        ranges = interval_rank_ranges(
            [None if c.low is None or c.high is None else (c.low, c.high) for _, c in members],
            higher_is_better=column.higher_is_better,
        )
        for (submission_id, calibrated), spread in zip(members, ranges, strict=True):
            ranked[submission_id] = (first[calibrated.value], spread)
    return ranked


def ranked_by_calibrated(
    entries: list[Entry], *, ranks: dict, sort: BoardSort, group_order: Sequence[str]
) -> list[Entry]:
    """The rows with their calibrated rank and range (held-out ranks left out: they compare
    with the judge's rank), ordered by it when the board is sorted by rank, unranked last;
    any other sort keeps the rows' order."""
    rows = [
        dataclasses.replace(
            e,
            rank=ranks.get(e.submission_id, (None, None))[0],
            rank_range=ranks.get(e.submission_id, (None, None))[1],
            held_out_results=None,
            held_out_rank=None,
            rank_delta=None,
        )
        for e in entries
    ]
    if sort.key == SORT_RANK:
        ranked = sorted(
            (e for e in rows if e.rank is not None),
            key=lambda e: e.rank,
            reverse=sort.descending,
        )
        rows = ranked + [e for e in rows if e.rank is None]
    if sort.group_by_type or sort.key == SORT_TYPE:

        def type_order(entry: Entry) -> int:
            if entry.system_type in group_order:
                return group_order.index(entry.system_type)
            return len(group_order)

        rows.sort(key=type_order, reverse=sort.key == SORT_TYPE and sort.descending)
    return rows


def submission_calibrated(*, submission, judge_id: int | None) -> list[tuple[Column, Calibrated]]:
    """A submission's human-calibrated metrics under a judge, in the plug-in's metric order:
    (its board column, its numbers). The caller has checked the viewer may see the submission."""
    if judge_id is None:
        return []
    found = {
        row.metric: Calibrated.of(row)
        for row in CalibratedScore.objects.filter(submission=submission, judge_id=judge_id)
    }
    if not found:
        return []
    score = Score.objects.filter(submission=submission, judge_id=judge_id).first()
    results = None if score is None else score.results
    columns = every_split_columns(benchmark=submission.benchmark)
    return [
        (c, found[c.key].as_scored(column=c, results=results)) for c in columns if c.key in found
    ]
