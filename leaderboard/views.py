"""The public board: leaderboard page, its CSV/JSON exports and charts, system pages, judge
agreement, and the staff page that adds judges and re-scores with them.

All board state lives in the query string (judge, split, sort, group, ci, type, arch, open,
duplex, q, in, out, contamination, slice, calibrated, rank_by, rows, hide), so every URL is a
permalink and the exports show exactly the rows of the page (all of them: the page shows the
first FIRST_ROWS unless rows=all)."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from functools import wraps
from urllib.parse import urlencode

import plotly
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.cache import cache
from django.db.models import Count
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import api_view
from rest_framework.response import Response

from evaluation.benchmarks import get_plugin
from evaluation.exports import csv_lines
from evaluation.held_out import held_out_column_band
from evaluation.identity import viewer_for
from evaluation.judge_endpoints import endpoint_refusal
from evaluation.models import Benchmark, Judge, System
from evaluation.run_config import CONTAMINATION, MODALITIES
from leaderboard import charts
from leaderboard.judges import JudgeInvalid, benchmark_rescore, judge_create
from leaderboard.response_cache import api_rate_refusal, reader_cached
from leaderboard.selectors import (
    SORT_RANK,
    SORT_SYSTEM,
    SORT_TYPE,
    BoardFilters,
    BoardSort,
    agreement_cache_key,
    board_cache_key,
    board_columns,
    board_split,
    board_summary,
    chart_cache_key,
    chart_points,
    default_judge,
    every_split_columns,
    export_interval,
    judge_agreement,
    leaderboard_count,
    leaderboard_entries,
    leaderboard_judges,
    row_group_choices,
    system_submissions,
)
from leaderboard.selectors_calibrated import (
    CalibratedView,
    board_calibrated,
    calibrated_metric_keys,
    calibrated_ranks,
    ranked_by_calibrated,
    with_calibrated,
)
from leaderboard.selectors_compare import ComparisonError, board_slice, slice_choices
from leaderboard.selectors_rows import (
    sliced_entries,
    with_held_out,
    with_rank_ranges,
    with_scorer_and_config,
)
from leaderboard.selectors_submissions import run_disclosure

CHART_CACHE_SECONDS = 600
# The rendered table waits this long at most for what its key cannot see (a renamed system).
TABLE_CACHE_SECONDS = 120
# The first screen of a board: its best rows; the whole table is one click (rows=all) away.
FIRST_ROWS = 50
SEARCH_MAX = 100
# Columns besides the metrics that the column chooser can hide (rank and system stay).
HIDEABLE = ("system_type", "org", "date")
YES_NO = {"yes": True, "no": False}


class BadBoardQuery(ValueError):
    pass


# --- Board state ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BoardState:
    judge: str
    filters: BoardFilters
    sort: BoardSort
    show_ci: bool = False
    split: str = ""
    default_split: str = ""
    all_rows: bool = False
    slice: str = ""  # attribute=value: every number on that subset of the tasks
    hidden: tuple[str, ...] = ()  # columns the column chooser hides (HIDEABLE keys, metric keys)
    # The human-calibrated view of one metric (its key; "" off), and whether rank and rank
    # range follow its calibrated values (rank_by=calibrated) rather than the judge's.
    calibrated: str = ""
    rank_calibrated: bool = False

    def params(self, **overrides) -> dict[str, str]:
        """The query parameters that differ from the defaults (the judge always), in a fixed
        order; overrides replace single ones."""
        sort, filters = self.sort, self.filters
        values = {
            "judge": self.judge,
            "split": self.split if self.split != self.default_split else "",
            "sort": ("-" if sort.descending else "") + sort.key
            if (sort.key, sort.descending) != (SORT_RANK, False)
            else "",
            "group": "" if sort.group_by_type else "none",
            "ci": "1" if self.show_ci else "",
            "type": filters.system_type or "",
            "arch": filters.architecture or "",
            "open": _yes_no(filters.open_weights),
            "duplex": _yes_no(filters.full_duplex),
            "q": filters.search or "",
            "in": filters.input_modality or "",
            "out": filters.output_modality or "",
            "contamination": filters.contamination or "",
            "slice": self.slice,
            "calibrated": self.calibrated,
            "rank_by": "calibrated" if self.rank_calibrated else "",
            "rows": "all" if self.all_rows else "",
            "hide": ",".join(self.hidden),
        }
        values.update(overrides)
        return {key: value for key, value in values.items() if value}

    def query(self, **overrides) -> str:
        params = self.params(**overrides)
        return "?" + urlencode(params) if params else ""

    def filters_json(self) -> dict:
        return {
            "system_type": self.filters.system_type,
            "architecture": self.filters.architecture,
            "open_weights": self.filters.open_weights,
            "full_duplex": self.filters.full_duplex,
            "search": self.filters.search,
            "input_modality": self.filters.input_modality,
            "output_modality": self.filters.output_modality,
            "contamination": self.filters.contamination,
        }

    def cleared(self) -> str:
        """This view without any filter: judge, split, sort and switches kept."""
        return self.query(
            type="",
            arch="",
            open="",
            duplex="",
            q="",
            contamination="",
            slice="",
            **{"in": "", "out": ""},
        )


def _yes_no(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


def _choice(params, name: str, allowed, label: str) -> str | None:
    value = params.get(name, "")
    if not value:
        return None
    if value not in allowed:
        raise BadBoardQuery(f"{name}: unknown {label} {value!r}; one of {', '.join(allowed)}")
    return value


def _calibrated_choice(
    params, *, keys: list[str], judge: Judge | None, chosen_slice: str, ranks: bool
):
    """(metric key, rank by it) of the human-calibrated view asked for."""
    calibrated = params.get("calibrated", "")
    if calibrated and calibrated not in keys:
        if not keys:
            raise BadBoardQuery(
                f"calibrated: no metric of this board has human-calibrated numbers under judge "
                f"{judge.slug if judge else 'none'!r}"
            )
        raise BadBoardQuery(
            f"calibrated: {calibrated!r} has no human-calibrated numbers here; one of "
            f"{', '.join(keys)}"
        )
    rank_by = _choice(params, "rank_by", ["judge", "calibrated"], "ranking") or "judge"
    if rank_by == "calibrated" and not calibrated:
        raise BadBoardQuery(
            "rank_by: calibrated ranks by a metric's human-calibrated values; choose the metric "
            "with calibrated=<metric key>"
        )
    if rank_by == "calibrated" and not ranks:
        raise BadBoardQuery(
            "rank_by: this benchmark ranks no system (it declares no rank keys), by the judge's "
            "values or by calibrated ones"
        )
    if rank_by == "calibrated" and chosen_slice:
        raise BadBoardQuery(
            "rank_by: calibrated values are over every task, not a slice; choose no slice to "
            "rank by them"
        )
    return calibrated, rank_by == "calibrated"


def _board_state(
    params, *, benchmark: Benchmark, judge: Judge | None, calibrated_keys: list[str] = ()
) -> BoardState:
    plugin = get_plugin(benchmark.plugin)
    splits = [split.key for split in plugin.splits]
    split = _choice(params, "split", splits, "split") if splits else None
    split = board_split(benchmark=benchmark, requested=split or "")
    columns = [c.key for c in board_columns(benchmark=benchmark, split=split)]
    sort_value = params.get("sort", "") or SORT_RANK
    key = sort_value.removeprefix("-")
    if key not in (SORT_RANK, SORT_SYSTEM, SORT_TYPE, *columns):
        raise BadBoardQuery(
            f"sort: unknown column {key!r}; one of "
            f"{', '.join([SORT_RANK, SORT_SYSTEM, SORT_TYPE, *columns])}, '-' first to reverse"
        )
    group = _choice(params, "group", ["type", "none"], "grouping") or "type"
    ci = _choice(params, "ci", ["0", "1"], "interval switch") or "0"
    open_weights = _choice(params, "open", list(YES_NO), "value")
    full_duplex = _choice(params, "duplex", list(YES_NO), "value")
    rows = _choice(params, "rows", ["all"], "row count")
    chosen_slice = params.get("slice", "")
    if chosen_slice:
        try:
            chosen_slice = board_slice(benchmark=benchmark, requested=chosen_slice).key
        except ComparisonError as problem:
            raise BadBoardQuery(str(problem)) from None
    hidden = tuple(key for key in params.get("hide", "").split(",") if key)
    unknown = [key for key in hidden if key not in (*HIDEABLE, *columns)]
    if unknown:
        raise BadBoardQuery(
            f"hide: unknown column {unknown[0]!r}; any of {', '.join([*HIDEABLE, *columns])}, "
            "separated by commas"
        )
    calibrated, rank_calibrated = _calibrated_choice(
        params,
        keys=list(calibrated_keys),
        judge=judge,
        chosen_slice=chosen_slice,
        ranks=bool(plugin.rank_keys),
    )
    search = " ".join(params.get("q", "").split())
    if len(search) > SEARCH_MAX:
        raise BadBoardQuery(f"q: a name search has at most {SEARCH_MAX} characters")
    return BoardState(
        judge=judge.slug if judge else "",
        filters=BoardFilters(
            system_type=_choice(
                params, "type", [key for key, _ in row_group_choices(benchmark=benchmark)], "type"
            ),
            architecture=_choice(params, "arch", System.Architecture.values, "architecture"),
            open_weights=YES_NO[open_weights] if open_weights else None,
            full_duplex=YES_NO[full_duplex] if full_duplex else None,
            search=search or None,
            input_modality=_choice(params, "in", list(MODALITIES), "modality"),
            output_modality=_choice(params, "out", list(MODALITIES), "modality"),
            contamination=_choice(params, "contamination", list(CONTAMINATION), "disclosure"),
        ),
        sort=BoardSort(
            key=key, descending=sort_value.startswith("-"), group_by_type=group == "type"
        ),
        show_ci=ci == "1",
        split=split,
        default_split=board_split(benchmark=benchmark),
        all_rows=rows == "all",
        slice=chosen_slice,
        hidden=tuple(dict.fromkeys(hidden)),
        calibrated=calibrated,
        rank_calibrated=rank_calibrated,
    )


@dataclass
class Board:
    benchmark: Benchmark
    judges: list[Judge]
    judge: Judge | None
    state: BoardState
    # The metrics with human-calibrated numbers under the judge that the viewer may see.
    calibrated_keys: list[str] = dataclasses.field(default_factory=list)
    # submission id -> metric key -> its calibrated numbers (selectors_calibrated).
    calibrated: dict = dataclasses.field(default_factory=dict)


def _board(request, slug: str) -> Board:
    """Benchmark, judge and state from the URL. Http404 for an unknown benchmark or a judge
    that has scored nothing there; BadBoardQuery for any other bad parameter."""
    benchmark = get_object_or_404(Benchmark, slug=slug)
    judges = leaderboard_judges(benchmark=benchmark)
    wanted = request.GET.get("judge")
    if wanted:
        judge = next((j for j in judges if j.slug == wanted), None)
        if judge is None:
            known = ", ".join(j.slug for j in judges) or "none yet"
            raise Http404(f"no judge {wanted!r} has scored {benchmark.slug}; judges: {known}")
    else:
        judge = default_judge(benchmark=benchmark)
    found = board_calibrated(benchmark=benchmark, judge=judge, user=request.user)
    keys = calibrated_metric_keys(found, columns=every_split_columns(benchmark=benchmark))
    state = _board_state(request.GET, benchmark=benchmark, judge=judge, calibrated_keys=keys)
    return Board(benchmark, judges, judge, state, keys, found)


def _entries(board: Board, user, limit: int | None = None):
    """The board's rows as shown, with what each carries beyond its numbers
    (leaderboard/selectors_rows.py): the chosen slice's numbers, rank ranges, held-out scores,
    scorer age and configuration. Rank ranges and held-out ranks are counted among every row
    (a name search keeps the board's), so rows are read whole and cut to ``limit`` after."""
    state, benchmark, judge = board.state, board.benchmark, board.judge
    plugin = get_plugin(benchmark.plugin)
    whole = bool(state.slice or plugin.rank_keys or state.rank_calibrated or limit is None)

    def rows(filters):
        return leaderboard_entries(
            benchmark=benchmark,
            judge=judge,
            user=user,
            filters=filters,
            sort=state.sort,
            split=state.split,
            limit=None if whole else limit,
        )

    entries = rows(state.filters)
    pool = (
        rows(dataclasses.replace(state.filters, search=None)) if state.filters.search else entries
    )
    chosen = board_slice(benchmark=benchmark, requested=state.slice) if state.slice else None
    if chosen is not None:
        entries, pool = (
            sliced_entries(
                found,
                benchmark=benchmark,
                judge=judge,
                chosen=chosen,
                sort=state.sort,
                split=state.split,
            )
            for found in (entries, pool)
        )
    grouped = state.sort.group_by_type
    pool = with_rank_ranges(
        pool, benchmark=benchmark, judge=judge, split=state.split, grouped=grouped, chosen=chosen
    )
    if chosen is None:
        pool = with_held_out(
            pool, benchmark=benchmark, judge=judge, split=state.split, grouped=grouped
        )
    extras = {entry.submission_id: entry for entry in pool}
    entries = [
        dataclasses.replace(
            entry,
            rank=extras[entry.submission_id].rank,
            rank_range=extras[entry.submission_id].rank_range,
            held_out_results=extras[entry.submission_id].held_out_results,
            held_out_rank=extras[entry.submission_id].held_out_rank,
            held_out_tasks=extras[entry.submission_id].held_out_tasks,
            rank_delta=extras[entry.submission_id].rank_delta,
        )
        if entry.submission_id in extras
        else entry
        for entry in entries
    ]
    entries = with_calibrated(entries, board.calibrated, benchmark=board.benchmark)
    if state.rank_calibrated:
        # Ranked among every row, as the judge's ranks are (a name search keeps them).
        pool = (
            with_calibrated(pool, board.calibrated, benchmark=board.benchmark)
            if state.filters.search
            else entries
        )
        column = next(c for c in _columns(board) if c.metric.key == state.calibrated)
        entries = ranked_by_calibrated(
            entries,
            ranks=calibrated_ranks(pool, column=column, grouped=grouped),
            sort=state.sort,
            group_order=[group.key for group in plugin.row_groups],
        )
    if limit is not None:
        entries = entries[:limit]
    return with_scorer_and_config(entries, benchmark=benchmark, judge=judge, user=user)


def _columns(board: Board):
    return board_columns(benchmark=board.benchmark, split=board.state.split)


def _calibrated_view(board: Board, columns) -> CalibratedView | None:
    if not board.state.calibrated:
        return None
    column = next(c for c in columns if c.metric.key == board.state.calibrated)
    return CalibratedView(column, board.state.rank_calibrated)


def _calibrated_choices(board: Board, columns) -> list[tuple[str, str]]:
    """(metric key, label) of the metrics the human-calibrated view can show."""
    return [
        (c.metric.key, f"{c.group} {c.label}".strip())
        for c in columns
        if c.metric.key in board.calibrated_keys
    ]


# --- Pages ----------------------------------------------------------------------------------


@reader_cached("site")
def benchmark_list(request):
    """Every benchmark with what it measures, its size, how many systems its board holds and
    who leads it (under the board's default judge, as the viewer may see it)."""
    benchmarks = Benchmark.objects.annotate(task_count=Count("tasks")).order_by("is_demo", "name")
    cards = []
    for benchmark in benchmarks:
        plugin = get_plugin(benchmark.plugin)
        cards.append(
            {
                "benchmark": benchmark,
                "plugin": plugin,
                "summary": board_summary(benchmark=benchmark, user=request.user),
            }
        )
    return render(request, "leaderboard/benchmark_list.html", {"cards": cards})


def _headers(board: Board, columns) -> tuple[list[dict], list[dict]]:
    """Sort links for every column: a first click sorts best first, a second reverses."""
    state = board.state

    def header(key: str, label: str, best_descending: bool, arrow: str = "", chance=None):
        active = state.sort.key == key
        descending = (not state.sort.descending) if active else best_descending
        return {
            "key": key,
            "label": label,
            "arrow": arrow,
            "chance": chance,
            "active": active,
            "aria_sort": ("descending" if state.sort.descending else "ascending")
            if active
            else "none",
            # Which way the sorted column runs (▲ smallest first, ▼ largest first): ↑ and ↓
            # beside a metric say which way is better, not how the table is sorted.
            "direction": ("▼" if state.sort.descending else "▲") if active else "",
            "href": state.query(sort=("-" if descending else "") + key),
        }

    fixed = [
        header(SORT_RANK, "#", False),
        header(SORT_SYSTEM, "System", False),
        header(SORT_TYPE, "Type", False),
    ]
    metric = [
        header(
            c.key,
            c.label,
            c.higher_is_better,
            "↑" if c.higher_is_better else "↓",
            c.chance,
        )
        for c in columns
    ]
    return fixed, metric


def _groups(columns) -> list[tuple[str, int]]:
    groups: dict[str, int] = {}
    for column in columns:
        groups[column.group] = groups.get(column.group, 0) + 1
    return list(groups.items())


def _row_groups(entries, grouped: bool) -> list[tuple[str, list]]:
    if not entries:
        return []
    if not grouped:
        return [("", entries)]
    groups: list[tuple[str, list]] = []
    for entry in entries:
        label = entry.system_type_label
        if not groups or groups[-1][0] != label:
            groups.append((label, []))
        groups[-1][1].append(entry)
    return groups


def ranking_note(*, plugin, columns, grouped: bool) -> str:
    """What "#" means on this board, from the plug-in's rank keys, in one paragraph."""
    by_key = {c.metric.key: c for c in columns}
    keys = [by_key[key] for key in plugin.rank_keys if key in by_key]
    if not keys:
        return "This benchmark declares no ranking: rows are listed in table order."
    named = [f"{c.group} {c.label}".strip() for c in keys]
    order = named[0] + "".join(f", then {name} for rows tied so far" for name in named[1:])
    scope = (
        "Ranks count within each group of rows; tick “one list” for one ranking of all rows."
        if grouped and plugin.row_groups
        else "One ranking of every row shown."
    )
    return (
        f"# is the rank by {order}, each best first, compared on unrounded values (counts, "
        "where a row has them). Exact ties share a rank and the next rank is skipped "
        f"(1, 2, 2, 4). {scope} Filters rank the rows they keep; a name search keeps the "
        "board's ranks."
    )


def _board_table(request, board: Board, columns) -> dict:
    """The rendered table (the first FIRST_ROWS rows unless all are asked for), with how many
    rows are shown and exist; cached under the board's score state and query parameters."""
    state = board.state
    key = board_cache_key(
        benchmark=board.benchmark, judge=board.judge, user=request.user, state=state.params()
    )
    table = cache.get(key)
    if table is not None:
        return table
    entries = _entries(board, request.user, limit=None if state.all_rows else FIRST_ROWS)
    total = len(entries)
    if not state.all_rows:
        # Counted apart whatever the size, so a board's queries stay the same at any size.
        total = leaderboard_count(
            benchmark=board.benchmark,
            judge=board.judge,
            user=request.user,
            filters=state.filters,
            split=state.split,
        )
    fixed_headers, metric_headers = _headers(board, columns)
    # Beside the public numbers, the first rank key on the held-out tasks and the rank delta.
    rank_columns = [
        c for c in columns if c.metric.key in get_plugin(board.benchmark.plugin).rank_keys
    ]
    held_out_column = (
        rank_columns[0]
        if rank_columns and any(e.held_out_results is not None for e in entries)
        else None
    )
    calibrated = _calibrated_view(board, columns)
    html = render_to_string(
        "leaderboard/fragments/board_table.html",
        {
            "benchmark": board.benchmark,
            "judge": board.judge,
            "state": state,
            "row_groups": _row_groups(entries, state.sort.group_by_type),
            "columns": columns,
            "column_groups": _groups(columns),
            "fixed_headers": fixed_headers,
            "metric_headers": metric_headers,
            "shown": len(entries),
            "total": total,
            "all_href": state.query(rows="all"),
            "cleared_href": state.cleared(),
            "span": len(columns) + 5 + (2 if held_out_column else 0) + (3 if calibrated else 0),
            "held_out_column": held_out_column,
            "calibrated": calibrated,
        },
    )
    table = {"html": html, "shown": len(entries), "total": total}
    cache.set(key, table, TABLE_CACHE_SECONDS)
    return table


@reader_cached("board")
def leaderboard_page(request, slug: str):
    try:
        board = _board(request, slug)
    except BadBoardQuery as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain")
    columns = _columns(board)
    state = board.state
    plugin = get_plugin(board.benchmark.plugin)
    table = _board_table(request, board, columns)
    choices = slice_choices(benchmark=board.benchmark)
    chosen = board_slice(benchmark=board.benchmark, requested=state.slice) if state.slice else None
    return render(
        request,
        "leaderboard/leaderboard.html",
        {
            "benchmark": board.benchmark,
            "judges": board.judges,
            "judge": board.judge,
            "state": state,
            "table_html": mark_safe(table["html"]),  # rendered by our own template
            "table": table,
            "columns": columns,
            "query": state.query(),
            "export_query": state.query(rows=""),
            "plugin": plugin,
            "ranking_note": ranking_note(
                plugin=plugin, columns=columns, grouped=state.sort.group_by_type
            ),
            "splits": [
                (split.key, split.label, state.query(split=split.key)) for split in plugin.splits
            ],
            "type_choices": row_group_choices(benchmark=board.benchmark),
            "arch_choices": System.Architecture.choices,
            "plotly_src": reverse("plotly-js", args=[plotly.__version__]),
            "first_rows": FIRST_ROWS,
            "slice_choices": choices,
            "chosen_slice": chosen,
            "slice_tasks": dict(
                next((c.values for c in choices if chosen and c.attribute == chosen.attribute), [])
            ).get(chosen.value if chosen else "", 0),
            "unsliced": state.query(slice=""),
            "modalities": MODALITIES,
            "contamination_choices": CONTAMINATION,
            "calibrated_choices": _calibrated_choices(board, columns),
            "calibrated_view": _calibrated_view(board, columns),
        },
    )


def _judge_json(judge):
    if judge is None:
        return None
    return {
        "slug": judge.slug,
        "name": judge.name,
        "provider": judge.provider,
        "models": judge.models_by_kind,
        "sampling": judge.sampling_params(),
        "official": judge.is_official,
        "offline": judge.is_offline,
    }


def _metric_headers(columns) -> list[str]:
    """Each column's key, then a rate's count and total and an interval's bounds as
    key.count, key.total, key.ci_low, key.ci_high; where such a name is a metric's own key
    (a count declared under a rate's key, say), key.rate_total instead: every name is unique."""
    keys = {column.key for column in columns}
    header = []
    for column in columns:
        header.append(column.key)
        parts = ("count", "total") if column.kind == "rate" else ()
        if column.metric.interval != "none":
            parts += ("ci_low", "ci_high")
        for part in parts:
            name = f"{column.key}.{part}"
            header.append(f"{column.key}.rate_{part}" if name in keys else name)
    return header


# A calibrated metric's CSV columns: "<key> (calibrated)" for the value, then
# "<key> (calibrated).<field>" for each of the rest.
CSV_CALIBRATED = (
    "value",
    "low",
    "high",
    "bias",
    "bias_low",
    "bias_high",
    "labelled",
    "population",
    "labels_needed",
    "stale",
)


def _calibrated_headers(columns) -> list[str]:
    return [
        f"{c.key} (calibrated)" + ("" if name == "value" else f".{name}")
        for c in columns
        for name in CSV_CALIBRATED
    ]


def _interval_json(interval):
    interval = export_interval(interval)
    return None if interval is None else {"low": interval[0], "high": interval[1]}


def _entry_json(entry, columns) -> dict:
    return {
        "rank": entry.rank,
        "system": entry.system,
        "system_id": entry.system_id or None,  # None: anonymous (under review) to this viewer
        # The submitting team's name on this site; None on a paper's row, a row without a
        # team and an anonymous one.
        "team": entry.team or None,
        # The organisation (facets) is the team's declaration unless staff verified the row.
        "organization_verified": entry.staff_verified,
        "system_type": entry.system_type,
        "submitted_at": entry.created_at.isoformat() if entry.created_at else None,
        "submission": entry.submission_id,
        "judge": entry.judge,
        "flags": {
            "verified": entry.verified,
            "staff_verified": entry.staff_verified,
            "reported_in_paper": entry.reported_in_paper,
            "incomplete": entry.incomplete,
            "offline_judge": entry.offline_judge,
            "private": entry.private,
            "hidden": entry.hidden,
            "flagged": entry.flagged,
            "rescoring": entry.rescoring,
            "retrying_failed": entry.retrying_failed,
            "anonymous": entry.anonymous,
        },
        "failed_judgments": entry.failed_judgments,
        "flag_reason": entry.flag_reason,
        "badges": [{"label": label, "title": title} for label, title in entry.badges],
        "reported_source": entry.reported_source,
        "facets": entry.facets,
        "results": entry.results,
        "intervals": {key: _interval_json(value) for key, value in entry.intervals.items()},
        # On a slice: the slice's tasks, or why the row has no numbers there.
        "slice_tasks": entry.slice_tasks,
        "slice_unavailable": entry.slice_unavailable,
        "rank_range": list(entry.rank_range) if entry.rank_range else None,
        "held_out": None
        if entry.held_out_results is None
        else {
            # Bands, never the numbers (evaluation.held_out.held_out_band).
            "bands": {
                c.key: held_out_column_band(c, entry.held_out_results, tasks=entry.held_out_tasks)
                for c in columns
            },
            "rank": entry.held_out_rank,
            "rank_delta": entry.rank_delta,
        },
        "older_scorer": entry.older_scorer,
        "run_config": entry.run_config,
        "config_differs": entry.config_differs,
        "contamination": entry.contamination or None,
        "contamination_note": entry.contamination_note,
        # metric key -> its human-calibrated numbers under this judge (CALIBRATED_FIELDS).
        "calibrated": {key: found.numbers() for key, found in entry.calibrated.items()},
    }


BOARD_PARAMETERS = [
    OpenApiParameter(
        "judge",
        str,
        description="A judge's slug (GET /api/benchmarks/<slug>/judges/); default: the official "
        "one, whose board also carries the paper's rows. An unknown one answers 404 listing them.",
    ),
    OpenApiParameter(
        "split",
        str,
        description="A split of the benchmark (declaration.splits), scored and ranked on its own; "
        "default: the first",
    ),
    OpenApiParameter(
        "sort",
        str,
        description="rank (default), system, system_type, or a column key; '-' first reverses",
    ),
    OpenApiParameter(
        "group",
        str,
        enum=["type", "none"],
        description="type (default): rows grouped by row group and ranked within it; none: one "
        "ranking",
    ),
    OpenApiParameter("ci", str, enum=["0", "1"], description="Show intervals on the page (1)"),
    OpenApiParameter(
        "type", str, description="Only rows of this row group (declaration.row_groups)"
    ),
    OpenApiParameter(
        "arch",
        str,
        enum=list(System.Architecture.values),
        description="Only systems that state this architecture",
    ),
    OpenApiParameter(
        "open", str, enum=["yes", "no"], description="Only systems that state open weights (or not)"
    ),
    OpenApiParameter(
        "duplex",
        str,
        enum=["yes", "no"],
        description="Only systems that state full duplex (or not)",
    ),
    OpenApiParameter(
        "q", str, description="Only systems whose name contains this (ranks stay the board's)"
    ),
    OpenApiParameter(
        "slice",
        str,
        description="attribute=value (GET /api/benchmarks/<slug>/slices/): every number "
        "recomputed on that subset of the tasks; papers' rows are kept, marked not available",
    ),
    OpenApiParameter(
        "in", str, enum=list(MODALITIES), description="Only runs with this input modality"
    ),
    OpenApiParameter(
        "out", str, enum=list(MODALITIES), description="Only runs with this output modality"
    ),
    OpenApiParameter(
        "contamination",
        str,
        enum=list(CONTAMINATION),
        description="Only runs that disclosed this about the benchmark's data in training",
    ),
    OpenApiParameter(
        "page",
        int,
        description="Which page of rows, from 1 (FLOORBOARD_API_BOARD_PAGE_SIZE rows a page, "
        "50 by default); count, pages, next and previous say where the others are",
    ),
    OpenApiParameter(
        "calibrated",
        str,
        description="A metric key from calibrated_metrics: the human-calibrated view of that "
        "metric (a 400 names the metrics that have calibrated numbers under this judge)",
    ),
    OpenApiParameter(
        "rank_by",
        str,
        enum=["judge", "calibrated"],
        description="calibrated (with calibrated=<metric>): rank and rank_range follow that "
        "metric's calibrated values and intervals; rows without one are unranked, last",
    ),
    OpenApiParameter("rows", str, enum=["all"], description="all: every row on one page"),
]


def _page_number(params) -> int:
    raw = params.get("page", "")
    if not raw:
        return 1
    if params.get("rows") == "all":
        raise BadBoardQuery("page: rows=all gives every row on one page; ask for one or the other")
    if not raw.isdigit() or int(raw) < 1:
        raise BadBoardQuery(f"page: {raw!r} is not a page number (1, 2, ...)")
    return int(raw)


@reader_cached("board", rate_limited=True)
@extend_schema(
    parameters=BOARD_PARAMETERS,
    responses=OpenApiResponse(OpenApiTypes.OBJECT, description="The board's rows and columns"),
)
@api_view(["GET"])
def leaderboard_api(request, slug: str):
    """The board's rows as JSON, with the same parameters as the page, a page of rows at a time
    (rows=all: every row). flags.verified means scored here from the submitted bundle;
    flags.staff_verified that staff checked it. intervals are 95% intervals in the metric's
    unit, by the metric's declared method (null without counts, e.g. a paper's row).
    calibrated_metrics lists the metrics a calibration study has labelled under this judge;
    each entry's calibrated maps such a metric to its human-calibrated numbers, in the metric's
    unit with 95% intervals: value, low, high (null while labels_needed > 0), judge_value,
    classical_value, classical_low, classical_high (humans only), bias, bias_low, bias_high
    (judge minus human), labelled (n), population (N), labels_needed and tuning."""
    try:
        board = _board(request, slug)
        page = _page_number(request.GET)
    except BadBoardQuery as exc:
        return Response({"detail": str(exc)}, status=400)
    columns = _columns(board)
    state = board.state
    size = None if state.all_rows else settings.API_BOARD_PAGE_SIZE
    if size is None:
        entries = _entries(board, request.user)
        count = len(entries)
    else:
        entries = _entries(board, request.user, limit=page * size)[(page - 1) * size :]
        # Counted apart whatever the size, so a page's queries stay the same at any size.
        count = leaderboard_count(
            benchmark=board.benchmark,
            judge=board.judge,
            user=request.user,
            filters=state.filters,
            split=state.split,
        )
    pages = max(1, math.ceil(count / size)) if size else 1
    if page > pages:
        return Response(
            {"detail": f"page: {page} is past the last page; this board has {pages}"}, status=404
        )
    address = reverse("leaderboard-api", args=[board.benchmark.slug])

    def page_link(number: int) -> str | None:
        if not 1 <= number <= pages or size is None:
            return None
        return request.build_absolute_uri(
            address + state.query(page=str(number) if number > 1 else "")
        )

    return Response(
        {
            # Rows in all, this page's number and size (null: every row, rows=all), and the
            # addresses of its neighbours.
            "count": count,
            "page": page,
            "pages": pages,
            "page_size": size,
            "next": page_link(page + 1),
            "previous": page_link(page - 1),
            "benchmark": {"slug": board.benchmark.slug, "name": board.benchmark.name},
            "judge": _judge_json(board.judge),
            "judges": [j.slug for j in board.judges],
            "split": state.split or None,
            "slice": state.slice or None,
            "chance_pct": {c.key: c.chance for c in columns if c.chance is not None},
            "sort": state.params().get("sort", SORT_RANK),
            "group": "type" if state.sort.group_by_type else "none",
            "filters": state.filters_json(),
            # The metrics with human-calibrated numbers under this judge, the one shown
            # (calibrated=) and whether rank and rank_range follow its calibrated values.
            "calibrated_metrics": board.calibrated_keys,
            "calibrated": state.calibrated or None,
            "rank_by": "calibrated" if state.rank_calibrated else "judge",
            "columns": [
                {
                    "key": c.key,
                    "group": c.group,
                    "label": c.label,
                    "kind": c.kind,
                    "unit": c.metric.unit,
                    "interval": c.metric.interval,
                    "better": "higher" if c.higher_is_better else "lower",
                    "chance_pct": c.chance,
                }
                for c in columns
            ],
            # The board's view these rows come from (its first screen, however they are paged).
            "permalink": request.build_absolute_uri(
                reverse("leaderboard", args=[board.benchmark.slug]) + state.query(rows="")
            ),
            "entries": [_entry_json(e, columns) for e in entries],
        }
    )


def throttled_like_the_api(view):
    """The API's per-client rates (anonymous by address, signed-in by account) for HTML
    exports, which cost as much to build as the API's answers: 429 with Retry-After beyond."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        return api_rate_refusal(request) or view(request, *args, **kwargs)

    return wrapped


def _yes_no_cell(value) -> str:
    return "" if value is None else ("yes" if value else "no")


@reader_cached("board", rate_limited=True)
@require_GET
@throttled_like_the_api
def leaderboard_csv(request, slug: str):
    """Exactly the rows of the page, in its order, one line each."""
    try:
        board = _board(request, slug)
    except BadBoardQuery as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain")
    columns = _columns(board)
    entries = _entries(board, request.user)
    split = f"-{board.state.split}" if board.state.split else ""
    name = f"{board.benchmark.slug}{split}-{board.judge.slug if board.judge else 'reported'}.csv"
    header = ["rank", "group", "system", "system_id", "team", "organization"]
    header += ["organization_verified", "submission", "judge"]
    header += ["scored_here", "staff_verified", "reported_in_paper", "incomplete"]
    header += ["offline_judge", "private", "flagged", "flag_reason", "failed_judgments"]
    header += ["architecture", "open_weights", "full_duplex"]
    header += ["slice", "slice_tasks", "slice_unavailable", "rank_best", "rank_worst"]
    header += ["held_out_rank", "rank_delta", "older_scorer", "contamination"]
    header += ["contamination_note", "config_differs", "run_config"]
    header += _metric_headers(columns)
    calibrated = [c for c in columns if c.metric.key in board.calibrated_keys]
    header += _calibrated_headers(calibrated)
    rows = []
    for e in entries:
        row = [e.rank, e.system_type_label, e.system, e.system_id, e.team]
        row += [e.facets.get("organization") or "", _yes_no_cell(e.staff_verified)]
        row += [e.submission_id, e.judge]
        flags = (e.verified, e.staff_verified, e.reported_in_paper, e.incomplete)
        row += [_yes_no_cell(v) for v in (*flags, e.offline_judge, e.private, e.flagged)]
        row += [e.flag_reason, e.failed_judgments, e.facets.get("architecture", "")]
        row += [_yes_no_cell(e.facets.get(k)) for k in ("open_weights", "full_duplex")]
        row += [board.state.slice, "" if e.slice_tasks is None else e.slice_tasks]
        row += [_yes_no_cell(e.slice_unavailable) if board.state.slice else ""]
        row += list(e.rank_range) if e.rank_range else ["", ""]
        row += ["" if e.held_out_rank is None else e.held_out_rank]
        row += ["" if e.rank_delta is None else e.rank_delta, " ".join(e.older_scorer)]
        row += [e.contamination, e.contamination_note, _yes_no_cell(e.config_differs)]
        row += [json.dumps(e.run_config, sort_keys=True) if e.run_config else ""]
        for column in columns:
            value = column.value(e.results)
            row.append("" if value is None else value)
            if column.kind == "rate":
                rate = column.rate(e.results) or {}
                row += [
                    "" if rate.get("count") is None else rate["count"],
                    "" if rate.get("total") is None else rate["total"],
                ]
            if column.metric.interval != "none":
                interval = export_interval(e.intervals.get(column.key))
                row += ["" if interval is None else interval[0]]
                row += ["" if interval is None else interval[1]]
        for column in calibrated:
            found = e.calibrated.get(column.key)
            numbers = found.numbers() if found else {}
            row += ["" if numbers.get(name) is None else numbers[name] for name in CSV_CALIBRATED]
        rows.append(row)
    response = HttpResponse(
        "".join(csv_lines(header, rows)), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@reader_cached("board", rate_limited=True)
@require_GET
@throttled_like_the_api
def leaderboard_charts(request, slug: str):
    """Plotly figure JSON for the board as filtered, cached until its scores or visibility
    change. The key carries the viewer's class, so no team's private points reach others."""
    try:
        board = _board(request, slug)
    except BadBoardQuery as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain")
    key = chart_cache_key(
        benchmark=board.benchmark,
        judge=board.judge,
        user=request.user,
        filters=board.state.filters,
        split=board.state.split,
        chosen_slice=board.state.slice,
    )
    figures = cache.get(key)
    if figures is None:
        sliced = None
        if board.state.slice:
            board.state = dataclasses.replace(
                board.state, sort=BoardSort(group_by_type=False), all_rows=True
            )
            sliced = _entries(board, request.user)
        points = chart_points(
            benchmark=board.benchmark,
            judge=board.judge,
            user=request.user,
            filters=board.state.filters,
            split=board.state.split,
            entries=sliced,
        )
        plugin = get_plugin(board.benchmark.plugin)
        figures = (
            charts.board_figures_json(plugin, _columns(board), points)
            if points
            else charts.empty_figures_json()
        )
        cache.set(key, figures, CHART_CACHE_SECONDS)
    # Cache-Control and validators: leaderboard/response_cache.py (private for a signed-in
    # reader, whose points may include their team's private rows).
    return HttpResponse(figures, content_type="application/json")


def system_page(request, pk: int):
    """A system and every submission of it the viewer may see. A system with none is not
    shown at all: its name alone could reveal unpublished work."""
    system = get_object_or_404(System, pk=pk)
    submissions = system_submissions(system=system, user=request.user)
    if not submissions:
        raise Http404("no such system")
    columns_by_benchmark: dict[int, list] = {}
    for submission in submissions:
        if submission.benchmark_id not in columns_by_benchmark:
            columns_by_benchmark[submission.benchmark_id] = board_columns(
                benchmark=submission.benchmark
            )
        submission.shown_columns = columns_by_benchmark[submission.benchmark_id]
        plugin = get_plugin(submission.benchmark.plugin)
        submission.row_group_label = plugin.row_group_label(submission.row_group)
    viewer = viewer_for(request.user)
    configured = [s for s in submissions if not s.is_reported]
    for submission in configured:
        submission.disclosure = run_disclosure(submission=submission, viewer=viewer)
    return render(
        request,
        "leaderboard/system.html",
        {
            "system": system,
            "submissions": submissions,
            "configured": configured,
            "cascade": _cascade(system, configured),
        },
    )


def _cascade(system: System, submissions: list) -> list[tuple[str, str]]:
    """(component, model) of the system's ASR, LLM and TTS: the system's own fields, else every
    distinct one the run configurations the viewer may read name; empty when none is named."""
    named = []
    for key in ("asr", "llm", "tts"):
        declared = sorted(
            {
                submission.disclosure.config.get("components", {}).get(key, "")
                for submission in submissions
            }
            - {""}
        )
        named.append((key.upper(), getattr(system, f"{key}_model") or ", ".join(declared)))
    return named if any(model for _, model in named) else []


# --- Judges ---------------------------------------------------------------------------------


@reader_cached("board")
def judge_agreement_page(request, slug: str):
    """Raw agreement and Cohen's kappa per pair of judges, over what the viewer may see; cached
    until a score, a judge or visibility changes."""
    benchmark = get_object_or_404(Benchmark, slug=slug)
    key = agreement_cache_key(benchmark=benchmark, user=request.user)
    pairs = cache.get(key)
    if pairs is None:
        pairs = judge_agreement(benchmark=benchmark, user=request.user)
        cache.set(key, pairs, CHART_CACHE_SECONDS)
    return render(
        request,
        "leaderboard/judges.html",
        {
            "benchmark": benchmark,
            "pairs": pairs,
            "judges": list(benchmark.judges.order_by("-is_official", "slug")),
        },
    )


class JudgeForm(forms.Form):
    slug = forms.SlugField(max_length=50)
    name = forms.CharField(max_length=200)
    provider = forms.ChoiceField(choices=Judge.Provider.choices)
    base_url = forms.URLField(
        required=False,
        label="Base URL",
        assume_scheme="https",
        help_text="Empty: the provider's site default",
    )
    send_sampling_params = forms.BooleanField(
        required=False, initial=True, label="Send sampling parameters (temperature 0, top_p 1)"
    )
    concurrency = forms.IntegerField(
        required=False, min_value=1, help_text="Empty: the site default"
    )
    price_input_per_mtok = forms.DecimalField(
        required=False,
        min_value=0,
        max_digits=10,
        decimal_places=4,
        label="Input price",
        help_text="USD per million input tokens (0 is a price). Without prices, a judge judges "
        "nothing while spending limits are on.",
    )
    price_output_per_mtok = forms.DecimalField(
        required=False,
        min_value=0,
        max_digits=10,
        decimal_places=4,
        label="Output price",
        help_text="USD per million output tokens (0 is a price)",
    )

    def __init__(self, *args, kinds: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.kinds = kinds
        for kind in kinds:
            self.fields[f"model_{kind}"] = forms.CharField(
                required=False, max_length=200, label=f"Model for {kind}"
            )

    def clean_base_url(self) -> str:
        url = self.cleaned_data["base_url"]
        if url and (refusal := endpoint_refusal(url)) is not None:
            raise forms.ValidationError(refusal)
        return url

    def models(self) -> dict[str, str]:
        return {kind: self.cleaned_data.get(f"model_{kind}", "") for kind in self.kinds}


def _staff_only(request):
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), reverse("admin:login"))
    if not request.user.is_staff:
        return HttpResponseForbidden("Judges are managed by staff only.")
    return None


@require_http_methods(["GET", "POST"])
def judges_manage(request, slug: str):
    """Staff: add a judge to the benchmark, or re-score every submission with one."""
    refused = _staff_only(request)
    if refused:
        return refused
    benchmark = get_object_or_404(Benchmark, slug=slug)
    kinds = [kind.key for kind in get_plugin(benchmark.plugin).judge_kinds]
    form = JudgeForm(kinds=kinds)
    if request.method == "POST":
        form = JudgeForm(request.POST, kinds=kinds)
        if form.is_valid():
            data = form.cleaned_data
            try:
                judge = judge_create(
                    benchmark=benchmark,
                    slug=data["slug"],
                    name=data["name"],
                    provider=data["provider"],
                    models_by_kind=form.models(),
                    base_url=data["base_url"],
                    send_sampling_params=data["send_sampling_params"],
                    concurrency=data["concurrency"],
                    price_input_per_mtok=data["price_input_per_mtok"],
                    price_output_per_mtok=data["price_output_per_mtok"],
                )
            except JudgeInvalid as exc:
                form.add_error(None, str(exc))
            else:
                url = reverse("judges-manage", args=[benchmark.slug])
                messages.success(request, f"Judge {judge.slug} added.")
                return redirect(url)
    judges = list(benchmark.judges.order_by("-is_official", "slug"))
    return render(
        request,
        "leaderboard/judges_manage.html",
        {
            "benchmark": benchmark,
            "judges": judges,
            "form": form,
        },
        status=400 if form.errors else 200,
    )


@require_POST
def judge_rescore(request, slug: str, judge_slug: str):
    refused = _staff_only(request)
    if refused:
        return refused
    benchmark = get_object_or_404(Benchmark, slug=slug)
    judge = get_object_or_404(Judge, benchmark=benchmark, slug=judge_slug)
    try:
        count = benchmark_rescore(benchmark=benchmark, judge=judge)
    except JudgeInvalid as exc:
        messages.error(request, f"Not re-scored: {exc}")
    else:
        messages.success(request, f"{count} submission(s) queued for re-scoring with {judge.slug}.")
    return redirect(reverse("judges-manage", args=[benchmark.slug]))
