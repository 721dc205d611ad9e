"""What a board row carries beyond its own numbers: the numbers on a slice of the tasks, its
plausible rank range, its held-out score and rank delta, whether its scorer is older than the
current one, and whether its system was run under other configurations.

The rows come from leaderboard_entries (visibility, filters and row choice as on the whole
board); each function here returns them with more filled in, in a few queries. A slice swaps
each row's numbers for the ones its score stores for that slice (Score.slices, read in SQL a
slice at a time) and ranks the rows again exactly as the board does: the plug-in's rank keys on
unrounded values, standard competition ranking, within the row group when grouped. A paper's
row has no per-task outcomes: on a slice it is kept, marked not available, and never ranked."""

from __future__ import annotations

import dataclasses

import numpy as np
from django.db.models.fields.json import KeyTransform

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark, Judge, Score
from evaluation.run_config import config_fingerprint
from evaluation.scorer import current_scorer, older_parts
from evaluation.selectors import submissions_visible_to
from evaluation.slices import Contributions, rank_ranges, slices_version
from leaderboard.selectors import (
    SORT_RANK,
    SORT_SYSTEM,
    SORT_TYPE,
    BoardSort,
    Column,
    Entry,
    _rank_columns,
    board_columns,
)
from leaderboard.selectors_compare import BoardSlice, task_attributes


def _exact(column: Column, results: dict | None) -> float | None:
    """What ranks a column, as in SQL: a rate's unrounded count/total, else its value."""
    if column.kind == "rate":
        counts = column.metric.counts(column._results(results))
        if counts and counts[1]:
            return 100.0 * counts[0] / counts[1]
    return column.value(results)


def _slice_results(*, judge: Judge, chosen: BoardSlice, plugin, ids: list[int]) -> dict:
    """submission id -> (results on the slice, tasks of the slice) for scores made under the
    plug-in's current slices; one query that reads only that slice's part of each score."""
    path = KeyTransform(chosen.key, KeyTransform("values", "slices"))
    rows = (
        Score.objects.filter(judge=judge, submission_id__in=ids)
        .annotate(slice_part=path, slice_version=KeyTransform("version", "slices"))
        .values_list("submission_id", "slice_part", "slice_version")
    )
    current = slices_version(plugin)
    return {
        submission_id: part
        for submission_id, part, version in rows
        if version == current and isinstance(part, dict)
    }


def sliced_entries(
    entries: list[Entry],
    *,
    benchmark: Benchmark,
    judge: Judge | None,
    chosen: BoardSlice,
    sort: BoardSort,
    split: str,
) -> list[Entry]:
    """The rows of a board on one slice, ranked and ordered again."""
    plugin = get_plugin(benchmark.plugin)
    columns = board_columns(benchmark=benchmark, split=split)
    ids = [e.submission_id for e in entries if not e.reported_in_paper]
    found = _slice_results(judge=judge, chosen=chosen, plugin=plugin, ids=ids) if judge else {}
    rows = []
    for entry in entries:
        part = found.get(entry.submission_id)
        if entry.reported_in_paper or part is None:
            rows.append(
                dataclasses.replace(entry, results={}, intervals={}, slice_unavailable=True)
            )
            continue
        results = part.get("results") or {}
        rows.append(
            dataclasses.replace(
                entry,
                results=results,
                intervals={
                    c.key: c.interval(results) for c in columns if c.metric.interval != "none"
                },
                slice_tasks=part.get("tasks"),
            )
        )
    return _rank_and_order(rows, benchmark=benchmark, sort=sort, split=split)


def competition_ranks(rows, rank_columns) -> dict:
    """(id, partition, results) rows -> id: standard competition rank within the partition on
    the rank columns, descending and nulls last, as the board's SQL window ranks."""

    def rank_key(results) -> tuple:
        return tuple(
            (1, 0.0) if (v := _exact(c, results)) is None else (0, -v) for c in rank_columns
        )

    partitions: dict[str, list] = {}
    for row in rows:
        partitions.setdefault(row[1], []).append(row)
    ranked = {}
    for members in partitions.values():
        first: dict[tuple, int] = {}
        for place, key in enumerate(sorted(rank_key(r[2]) for r in members), start=1):
            first.setdefault(key, place)
        for row_id, _, results in members:
            ranked[row_id] = first[rank_key(results)] if rank_columns else None
    return ranked


def _rank_and_order(rows: list[Entry], *, benchmark: Benchmark, sort: BoardSort, split: str):
    rank_columns = _rank_columns(benchmark, split)
    groups = [group.key for group in get_plugin(benchmark.plugin).row_groups]

    ranked = competition_ranks(
        [
            (e.submission_id, e.system_type if sort.group_by_type else "", e.results)
            for e in rows
            if not e.slice_unavailable
        ],
        rank_columns,
    )
    rows = [dataclasses.replace(e, rank=ranked.get(e.submission_id)) for e in rows]

    columns = {c.key: c for c in board_columns(benchmark=benchmark, split=split)}

    def type_order(entry: Entry) -> int:
        return groups.index(entry.system_type) if entry.system_type in groups else len(groups)

    # Stable sorts from the last key to the first, as the board's ORDER BY: tie-breakers,
    # then the sort key (nulls last either way), then the row group.
    rows.sort(key=lambda e: (e.rank is None, e.rank or 0, e.system, e.submission_id))
    primary = None
    if sort.key == SORT_RANK:
        primary = lambda e: e.rank  # noqa: E731
    elif sort.key == SORT_SYSTEM:
        primary = lambda e: e.system  # noqa: E731
    elif sort.key in columns:
        primary = lambda e: columns[sort.key].value(e.results)  # noqa: E731
    if primary is not None:
        present = [e for e in rows if primary(e) is not None]
        present.sort(key=primary, reverse=sort.descending)
        rows = present + [e for e in rows if primary(e) is None]
    if sort.group_by_type or sort.key == SORT_TYPE:
        rows.sort(key=type_order, reverse=sort.key == SORT_TYPE and sort.descending)
    return rows


# --- Rank ranges ------------------------------------------------------------------------------


def with_rank_ranges(
    entries: list[Entry],
    *,
    benchmark: Benchmark,
    judge: Judge | None,
    split: str,
    grouped: bool,
    chosen: BoardSlice | None = None,
) -> list[Entry]:
    """Each scored row's plausible rank range on the board's first rank key (see
    evaluation/slices.py): from exact McNemar tests against every other scored row on the
    units both were scored on (a partial submission's absent tasks as the failures its rank
    counts), within the row group when grouped, on the slice when one is chosen.
    Paper rows and rows without stored contributions get none."""
    rank_columns = _rank_columns(benchmark, split)
    if judge is None or not rank_columns:
        return entries
    key = rank_columns[0].key
    scored = [e for e in entries if not e.reported_in_paper and e.rank is not None]
    scores = Score.objects.filter(
        judge=judge, submission_id__in=[e.submission_id for e in scored]
    ).annotate(
        part_sha=KeyTransform("tasks_sha", "contributions"),
        part_units=KeyTransform(key, KeyTransform("metrics", "contributions")),
    )
    found = list(scores.values_list("pk", "submission_id", "part_sha", "part_units"))
    # Scores of one benchmark mostly share one task list: read each distinct list once, all in
    # one query (scores stored before lists had a key, or without contributions, read their own).
    wanted = {}
    for pk, _, sha, units in found:
        if units is not None:
            wanted.setdefault(sha or f"score {pk}", pk)
    read = dict(
        Score.objects.filter(pk__in=wanted.values())
        .annotate(part_tasks=KeyTransform("tasks", "contributions"))
        .values_list("pk", "part_tasks")
    )
    task_lists = {list_key: read.get(pk) for list_key, pk in wanted.items()}
    rows = {
        submission_id: (task_lists.get(sha or f"score {pk}"), units)
        for pk, submission_id, sha, units in found
    }
    keep = None
    if chosen is not None:
        attributes = task_attributes(benchmark=benchmark)
        keep = {t for t, found in attributes.items() if found.get(chosen.attribute) == chosen.value}
    systems = []
    for entry in scored:
        tasks, units = rows.get(entry.submission_id, (None, None))
        systems.append(_only(tasks, units, key, keep))
    found = rank_ranges(systems, key, [e.system_type for e in scored] if grouped else None)
    ranges = {e.submission_id: r for e, r in zip(scored, found, strict=True)}
    return [dataclasses.replace(e, rank_range=ranges.get(e.submission_id)) for e in entries]


def _only(tasks, units, key: str, keep: set | None) -> Contributions | None:
    """One metric's units (of the slice): the tasks a partial submission left out count as
    the benchmark scores them, failures, as they do in its rank, so that a rank and its range
    stand on the same footing."""
    if not tasks or not units:
        return None
    chosen = {i for i, task in enumerate(tasks) if keep is None or task in keep}
    rows = [row for row in units if int(row[0]) in chosen]
    if not rows:
        return None
    return Contributions(list(tasks), {key: np.asarray(rows, dtype=np.float64).reshape(-1, 3)})


# --- Held-out scores --------------------------------------------------------------------------


def with_held_out(
    entries: list[Entry], *, benchmark: Benchmark, judge: Judge | None, split: str, grouped: bool
) -> list[Entry]:
    """Each scored row's results on the held-out tasks, its rank on them (ranked as the board
    ranks, among the rows that have them) and the rank delta: held-out rank minus board rank
    (positive: it ranks lower on the held-out tasks). Unchanged when nothing is held out."""
    if judge is None:
        return entries
    scored = [e for e in entries if not e.reported_in_paper]
    found = dict(
        Score.objects.filter(
            judge=judge,
            submission_id__in=[e.submission_id for e in scored],
            held_out_results__isnull=False,
        ).values_list("submission_id", "held_out_results")
    )
    if not found:
        return entries
    ranks = competition_ranks(
        [
            (e.submission_id, e.system_type if grouped else "", found[e.submission_id])
            for e in scored
            if e.submission_id in found
        ],
        _rank_columns(benchmark, split),
    )
    # The board's own ranks among the same rows, so that the delta compares like with like.
    public = competition_ranks(
        [
            (e.submission_id, e.system_type if grouped else "", e.results)
            for e in scored
            if e.submission_id in found
        ],
        _rank_columns(benchmark, split),
    )
    held = benchmark.tasks.filter(held_out=True).count()
    shown = []
    for entry in entries:
        if entry.submission_id not in found or entry.reported_in_paper:
            shown.append(entry)
            continue
        rank = ranks[entry.submission_id]
        shown.append(
            dataclasses.replace(
                entry,
                held_out_results=found[entry.submission_id],
                held_out_rank=rank,
                held_out_tasks=held,
                rank_delta=None if rank is None else rank - public[entry.submission_id],
            )
        )
    return shown


# --- Scorer and configuration -------------------------------------------------------------------


def with_scorer_and_config(
    entries: list[Entry], *, benchmark: Benchmark, judge: Judge | None, user
) -> list[Entry]:
    """older_scorer: the parts of the current scorer (evaluation/scorer.py) a row's numbers
    were not made with; config_differs: the row's system has another submission on this
    benchmark, visible to this viewer, run under a different configuration."""
    scored = [e for e in entries if not e.reported_in_paper]
    if not scored:
        return entries
    scorers = {}
    if judge is not None:
        scorers = dict(
            Score.objects.filter(
                judge=judge, submission_id__in=[e.submission_id for e in scored]
            ).values_list("submission_id", "scorer")
        )
        current = current_scorer(benchmark=benchmark, judge=judge)
    configs: dict[int, set[str]] = {}
    for system_id, config in (
        submissions_visible_to(user=user)
        .filter(benchmark=benchmark, is_reported=False, system_id__in={e.system_id for e in scored})
        .values_list("system_id", "run_config")
    ):
        configs.setdefault(system_id, set()).add(config_fingerprint(config))
    shown = []
    for entry in entries:
        if entry.reported_in_paper:
            shown.append(entry)
            continue
        older = older_parts(scorers.get(entry.submission_id), current) if judge else []
        shown.append(
            dataclasses.replace(
                entry,
                older_scorer=older,
                config_differs=len(configs.get(entry.system_id, ())) > 1,
            )
        )
    return shown
