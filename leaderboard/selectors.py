"""Reads behind the public leaderboard. Ranking, sorting and filtering happen in SQL; every read
starts from evaluation.selectors.submissions_visible_to."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import reduce
from operator import or_

from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Count,
    F,
    FilteredRelation,
    FloatField,
    IntegerField,
    JSONField,
    Max,
    OuterRef,
    Q,
    Subquery,
    Value,
    When,
    Window,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, NullIf, Rank
from django.urls import reverse

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import Metric
from evaluation.board_state import board_state
from evaluation.identity import ANONYMOUS_NAME, viewer_for
from evaluation.models import Benchmark, Judge, Score, Submission, System, TaskJudgment
from evaluation.selectors import submissions_visible_to
from evaluation.stats import Z95, Agreement, agreement_from_table, merge_tables, wilson_pct

# --- Columns --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One number of the board: a metric the plug-in declares, read under the board's split."""

    metric: Metric
    split: str = ""
    wilson_z: float = Z95  # the benchmark's (BenchmarkPlugin.wilson_z)

    @property
    def key(self) -> str:
        """The metric's path in the results, the split's key first where there are splits."""
        return f"{self.split}.{self.metric.key}" if self.split else self.metric.key

    @property
    def group(self) -> str:
        return self.metric.group

    @property
    def label(self) -> str:
        return self.metric.label

    @property
    def kind(self) -> str:
        return self.metric.type

    @property
    def chance(self) -> float | None:
        return self.metric.chance

    @property
    def higher_is_better(self) -> bool:
        return self.metric.higher_is_better

    @property
    def path(self) -> tuple[str, ...]:
        return ((self.split,) if self.split else ()) + self.metric.path

    def _results(self, results):
        if self.split:
            return (results or {}).get(self.split) if isinstance(results, dict) else None
        return results

    def value(self, results: dict | None):
        return self.metric.value(self._results(results))

    def rate(self, results: dict | None) -> dict | None:
        node = self.metric.node(self._results(results))
        return node if self.kind == "rate" and isinstance(node, dict) else None

    def interval(self, results: dict | None) -> tuple[float, float] | None:
        """The 95% interval in the metric's unit, by its declared method: a Wilson interval
        unrounded (a page rounds it once, to the metric's decimals; exports with
        export_interval)."""
        if self.metric.interval == "wilson":
            return wilson_pct(self.rate(results), None, z=self.wilson_z)
        if self.metric.interval == "bootstrap":
            return self.metric.stored_interval(self._results(results))
        return None


def board_split(*, benchmark: Benchmark, requested: str = "") -> str:
    """The split a board shows: the one asked for, else the plug-in's first ("" without)."""
    splits = [split.key for split in get_plugin(benchmark.plugin).splits]
    if not splits:
        return ""
    return requested if requested in splits else splits[0]


def every_split_columns(*, benchmark: Benchmark) -> list[Column]:
    """The board's columns under every split in turn (the columns once without splits)."""
    splits = [split.key for split in get_plugin(benchmark.plugin).splits] or [""]
    return [c for split in splits for c in board_columns(benchmark=benchmark, split=split)]


def board_columns(*, benchmark: Benchmark, split: str = "") -> list[Column]:
    plugin = get_plugin(benchmark.plugin)
    split = board_split(benchmark=benchmark, requested=split)
    return [Column(metric, split, plugin.wilson_z) for metric in plugin.metrics]


def export_interval(interval) -> tuple[float, float] | None:
    """An interval as the API and CSV give it: percent to 2 decimals, rounded once."""
    if interval is None:
        return None
    return round(interval[0], 2), round(interval[1], 2)


def _rank_columns(benchmark: Benchmark, split: str) -> list[Column]:
    plugin = get_plugin(benchmark.plugin)
    by_key = {c.metric.key: c for c in board_columns(benchmark=benchmark, split=split)}
    return [by_key[key] for key in plugin.rank_keys if key in by_key]


def row_group_choices(*, benchmark: Benchmark) -> list[tuple[str, str]]:
    return [(group.key, group.label) for group in get_plugin(benchmark.plugin).row_groups]


# --- Sort and filters -----------------------------------------------------------------------

SORT_RANK, SORT_SYSTEM, SORT_TYPE = "rank", "system", "system_type"


@dataclass(frozen=True)
class BoardSort:
    """key: "rank", "system", "system_type" (the row group) or a column key. Rows are grouped
    by row group first unless group_by_type is off."""

    key: str = SORT_RANK
    descending: bool = False
    group_by_type: bool = True


@dataclass(frozen=True)
class BoardFilters:
    system_type: str | None = None  # a row group of the benchmark
    architecture: str | None = None
    open_weights: bool | None = None
    full_duplex: bool | None = None
    # The run configuration and the contamination disclosure (papers' rows have neither).
    input_modality: str | None = None
    output_modality: str | None = None
    contamination: str | None = None
    # Part of a system's name (any case); matched after ranking, so ranks stay the board's.
    search: str | None = None

    @property
    def active(self) -> bool:
        return any(
            value not in (None, "")
            for value in (
                self.system_type,
                self.architecture,
                self.open_weights,
                self.full_duplex,
                self.search,
                self.input_modality,
                self.output_modality,
                self.contamination,
            )
        )

    def q(self) -> Q:
        q = Q()
        if self.input_modality:
            q &= Q(run_config__input_modality=self.input_modality)
        if self.output_modality:
            q &= Q(run_config__output_modality=self.output_modality)
        if self.contamination:
            q &= Q(contamination=self.contamination, is_reported=False)
        if self.system_type:
            q &= Q(row_group=self.system_type)
        if self.architecture:
            q &= Q(system__architecture=self.architecture)
        if self.open_weights is not None:
            q &= Q(system__open_weights=self.open_weights)
        if self.full_duplex is not None:
            q &= Q(system__full_duplex=self.full_duplex)
        return q


def sort_keys(*, benchmark: Benchmark, split: str = "") -> list[str]:
    columns = board_columns(benchmark=benchmark, split=split)
    return [SORT_RANK, SORT_SYSTEM, SORT_TYPE, *(c.key for c in columns)]


# --- Entries --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    rank: int | None  # None: unranked (a benchmark without rank keys, a row off a slice)
    system: str
    system_type: str  # the row group
    submission_id: int
    judge: str
    results: dict
    verified: bool  # scored here, from the submitted bundle
    reported_in_paper: bool
    incomplete: bool
    offline_judge: bool
    reported_source: str = ""
    private: bool = False
    flagged: bool = False
    flag_reason: str = ""
    staff_verified: bool = False
    hidden: bool = False
    system_id: int = 0
    facets: dict = field(default_factory=dict)
    # column key -> (low, high) in percent; None where the rate carries no counts
    intervals: dict = field(default_factory=dict)
    system_type_label: str = ""
    rescoring: bool = False
    created_at: object = None  # when the submission was made; None for a paper's row
    # Anonymous to this viewer (a paper under review): no system, team or link is shown.
    anonymous: bool = False
    # The team that submitted the row, by its name on this site: another team can declare any
    # system name and organisation, not this. "" for a paper's row, a row without a team (staff's,
    # from the command line) and an anonymous one.
    team: str = ""
    # The team's own anonymous row: shown to them, marked as hidden from others.
    under_review: bool = False
    # Judgments that failed under this judge (counted as wrong); retrying: another try is due.
    failed_judgments: int = 0
    retrying_failed: bool = False
    # On a slice of the tasks (leaderboard.selectors_rows.py): the slice's tasks, or not
    # available (a paper's row, a score without slice results). rank is None when unranked.
    slice_tasks: int | None = None
    slice_unavailable: bool = False
    # The plausible rank range from paired tests against the other rows: (best, worst).
    rank_range: tuple[int, int] | None = None
    # On a benchmark with held-out tasks: the results there, the rank there, and held-out
    # rank minus public rank among the rows scored on both.
    held_out_results: dict | None = None
    held_out_rank: int | None = None
    held_out_tasks: int = 0  # how many tasks the held-out results are over
    rank_delta: int | None = None
    # The parts of the current scorer this row was not scored with ("judge", "prompts", ...).
    older_scorer: list = field(default_factory=list)
    # What produced the outputs, the contamination disclosure, and whether the system's other
    # runs here used another configuration.
    run_config: dict = field(default_factory=dict)
    contamination: str = ""
    contamination_note: str = ""
    config_differs: bool = False
    # (label, title) of the plug-in's badges that the submission's facts call for
    badges: tuple[tuple[str, str], ...] = ()
    # metric key -> its human-calibrated numbers under the board's judge
    # (leaderboard.selectors_calibrated.Calibrated); empty without a calibration study.
    calibrated: dict = field(default_factory=dict)


def leaderboard_judges(*, benchmark: Benchmark) -> list[Judge]:
    """Judges that have scored at least one submission, the official one first."""
    return list(
        benchmark.judges.filter(Q(is_official=True) | Q(scores__isnull=False))
        .distinct()
        .order_by("-is_official", "slug")
    )


def default_judge(*, benchmark: Benchmark) -> Judge | None:
    """The official judge where the benchmark has one (its board also carries the paper's
    rows); otherwise the first judge that has scored something."""
    judges = leaderboard_judges(benchmark=benchmark)
    return judges[0] if judges else None


def _json_number(*path: str):
    # SQLite's key text of a JSON null is the string 'null'; PostgreSQL's is NULL.
    text = KT("board_results__" + "__".join(path))
    return Cast(NullIf(text, Value("null")), FloatField())


def _number(column: Column):
    return _json_number(*column.path)


def _exact_number(column: Column):
    """What ranks a column: a rate's unrounded count/total where counts are known (the rounded
    percentage of a paper row otherwise), so exact ties tie and near ones do not."""
    if column.kind != "rate":
        return _number(column)
    node = column.path[:-1]
    count, total = _json_number(*node, "count"), _json_number(*node, "total")
    return Coalesce(100.0 * count / NullIf(total, Value(0.0)), _number(column))


def _ordered(expression, descending: bool):
    return expression.desc(nulls_last=True) if descending else expression.asc(nulls_last=True)


def _type_order(benchmark: Benchmark):
    groups = [group.key for group in get_plugin(benchmark.plugin).row_groups]
    if not groups:
        return Value(0)
    return Case(
        *(When(row_group=key, then=Value(i)) for i, key in enumerate(groups)),
        default=Value(len(groups)),
        output_field=IntegerField(),
    )


# A submission keeps its row while it is re-scored: the stored numbers stay until new ones
# replace them.
ON_BOARD = (Submission.Status.SCORED, Submission.Status.JUDGING, Submission.Status.AGGREGATING)


def _board_queryset(*, benchmark: Benchmark, judge: Judge | None, user, filters: BoardFilters):
    """One row per system: its newest submission with a score under this judge that the user
    may see, plus, under the official judge (or none), the rows reported in the paper."""
    visible = submissions_visible_to(user=user).filter(benchmark=benchmark)
    shown = []
    if judge is not None:
        newest = (
            visible.filter(
                system=OuterRef("system"),
                # An anonymous run is a row of its own: a newer one replacing the system's
                # named row would say whose it is.
                is_anonymous=OuterRef("is_anonymous"),
                is_reported=False,
                status__in=ON_BOARD,
                scores__judge=judge,
            )
            .order_by("-created_at", "-pk")
            .values("pk")[:1]
        )
        shown.append(Q(is_reported=False, pk=Subquery(newest)))
    if judge is None or judge.is_official:
        shown.append(Q(is_reported=True))
    hidden = viewer_for(user).hidden_q()
    queryset = (
        Submission.objects.filter(benchmark=benchmark, pk__in=visible.values("pk"))
        .filter(reduce(or_, shown))
        .filter(filters.q())
        .annotate(
            board_hidden=Case(
                When(hidden, then=Value(True)), default=Value(False), output_field=BooleanField()
            )
        )
    )
    if (
        filters.architecture
        or filters.open_weights is not None
        or filters.full_duplex is not None
        or filters.input_modality
        or filters.output_modality
    ):
        # An anonymous row's facts and run configuration would say which system it is: it
        # matches no such filter.
        queryset = queryset.exclude(hidden)
    if judge is None:
        results = F("reported_results")
    else:
        # A LEFT JOIN on (submission, judge), unique: at most one score per row.
        queryset = queryset.annotate(
            judged=FilteredRelation("scores", condition=Q(scores__judge=judge))
        )
        results = Coalesce("reported_results", "judged__results", output_field=JSONField())
        queryset = queryset.annotate(board_failed=F("judged__judgments_failed"))
    return (
        queryset.annotate(board_results=results)
        .select_related("system", "team")
        # Never shown on the board; manifests can be large.
        .defer("manifest", "error", "reported_results", "system__metadata", "system__description")
    )


def _ranked(
    *,
    benchmark: Benchmark,
    judge: Judge | None,
    user,
    filters: BoardFilters,
    sort: BoardSort,
    split: str,
):
    """The board's rows with their rank: the plug-in's rank keys, descending, on unrounded
    values (standard competition ranking: exact ties share a rank), within the row group when
    the board is grouped. A name search keeps the ranks: it filters the ranked rows."""
    rank_order = [_ordered(_exact_number(c), True) for c in _rank_columns(benchmark, split)]
    queryset = _board_queryset(benchmark=benchmark, judge=judge, user=user, filters=filters)
    if split:
        # A split's table lists the systems scored on it (a submission may cover one language).
        queryset = queryset.filter(board_results__has_key=split)
    if rank_order:
        ranking = Window(
            Rank(),
            partition_by=[F("row_group")] if sort.group_by_type else None,
            order_by=rank_order,
        )
    else:
        # A benchmark without rank keys ranks no system (its paper may combine no metric).
        ranking = Value(None, output_field=IntegerField())
    queryset = queryset.annotate(board_rank=ranking)
    if filters.search:
        # A window over the row itself: filtering on it makes Django filter the ranked rows in
        # an outer query, after every rank is known.
        match = Case(
            When(system__name__icontains=filters.search, board_hidden=False, then=Value(1)),
            default=Value(0),
            output_field=IntegerField(),
        )
        queryset = queryset.annotate(name_match=Window(Max(match), partition_by=[F("pk")])).filter(
            name_match=1
        )
    return queryset


def leaderboard_count(
    *,
    benchmark: Benchmark,
    judge: Judge | None,
    user=None,
    filters: BoardFilters | None = None,
    split: str = "",
) -> int:
    """How many rows the board has with these filters (one COUNT query, with no ranking: a
    name search counts the same rows whether it filters before or after ranks are given)."""
    filters = filters or BoardFilters()
    queryset = _board_queryset(benchmark=benchmark, judge=judge, user=user, filters=filters)
    split = board_split(benchmark=benchmark, requested=split)
    if split:
        # The rows of this split's table, as _ranked lists them.
        queryset = queryset.filter(board_results__has_key=split)
    if filters.search:
        queryset = queryset.filter(system__name__icontains=filters.search, board_hidden=False)
    return queryset.count()


def leaderboard_entries(
    *,
    benchmark: Benchmark,
    judge: Judge | None,
    user=None,
    filters: BoardFilters | None = None,
    sort: BoardSort | None = None,
    split: str = "",
    limit: int | None = None,
) -> list[Entry]:
    """The rows of a board as shown (the first ``limit`` of them). Rank and order come from
    SQL: rows ranked by the plug-in's rank keys (standard competition ranking: exact ties share
    a rank), within their row group when the board is grouped. A team sees its own unpublished
    rows, marked private; hidden rows only staff."""
    filters = filters or BoardFilters()
    sort = sort or BoardSort()
    split = board_split(benchmark=benchmark, requested=split)
    columns = {c.key: c for c in board_columns(benchmark=benchmark, split=split)}
    if sort.key not in (SORT_RANK, SORT_SYSTEM, SORT_TYPE, *columns):
        raise ValueError(f"unknown sort key {sort.key!r}")
    queryset = _ranked(
        benchmark=benchmark, judge=judge, user=user, filters=filters, sort=sort, split=split
    )

    order = []
    if sort.group_by_type or sort.key == SORT_TYPE:
        order.append(_ordered(_type_order(benchmark), sort.key == SORT_TYPE and sort.descending))
    if sort.key == SORT_RANK:
        order.append(_ordered(F("board_rank"), sort.descending))
    elif sort.key == SORT_SYSTEM:
        order.append(_ordered(F("shown_name"), sort.descending))
    elif sort.key in columns:
        order.append(_ordered(_number(columns[sort.key]), sort.descending))
    order += [F("board_rank").asc(), F("shown_name").asc(), F("pk").asc()]

    judge_slug = judge.slug if judge else ""
    plugin = get_plugin(benchmark.plugin)
    # Anonymous rows sort by the name shown: the real one would place them.
    shown_name = Case(
        When(board_hidden=True, then=Value(ANONYMOUS_NAME)),
        default=F("system__name"),
        output_field=CharField(),
    )
    queryset = queryset.annotate(shown_name=shown_name).order_by(*order)
    if limit is not None:
        queryset = queryset[:limit]
    return [
        _entry(submission, judge, judge_slug, columns.values(), plugin) for submission in queryset
    ]


def _facets(system: System) -> dict:
    return {
        "organization": system.organization,
        "architecture": system.architecture,
        "asr_model": system.asr_model,
        "llm_model": system.llm_model,
        "tts_model": system.tts_model,
        "open_weights": system.open_weights,
        "full_duplex": system.full_duplex,
        "parameters": system.parameters,
        "license": system.license,
        "paper_url": system.paper_url,
        "code_url": system.code_url,
    }


def _entry(submission: Submission, judge: Judge | None, judge_slug: str, columns, plugin) -> Entry:
    system = submission.system
    results = submission.board_results or {}
    reported = submission.is_reported
    hidden = bool(getattr(submission, "board_hidden", False))
    return Entry(
        rank=submission.board_rank,
        system=ANONYMOUS_NAME if hidden else system.name,
        anonymous=hidden,
        # Hidden rows name no team (evaluation/identity.py), as they name no system.
        team="" if hidden or submission.team_id is None else submission.team.name,
        under_review=submission.is_anonymous and not hidden,
        system_type=submission.row_group,
        system_type_label=plugin.row_group_label(submission.row_group),
        submission_id=submission.pk,
        judge="reported" if reported else judge_slug,
        results=results,
        verified=not reported,
        reported_in_paper=reported,
        incomplete=submission.is_partial,
        offline_judge=bool(judge and judge.is_offline and not reported),
        reported_source=submission.reported_source,
        private=not submission.is_public,
        flagged=submission.is_flagged,
        flag_reason=submission.flag_reason if submission.is_flagged else "",
        staff_verified=submission.is_verified,
        hidden=submission.is_hidden and not reported,
        system_id=0 if hidden else system.pk,
        facets={} if hidden else _facets(system),
        intervals={c.key: c.interval(results) for c in columns if c.metric.interval != "none"},
        rescoring=not reported and submission.status != Submission.Status.SCORED,
        created_at=None if reported else submission.created_at,
        failed_judgments=getattr(submission, "board_failed", 0) or 0,
        retrying_failed=submission.retry_failed_at is not None,
        run_config={} if reported or hidden else submission.run_config,
        contamination="" if reported else submission.contamination,
        contamination_note="" if reported or hidden else submission.contamination_note,
        badges=tuple(
            (badge.label, badge.title)
            for badge in plugin.fact_badges
            if (submission.facts or {}).get(badge.fact) == badge.value
        ),
    )


@dataclass(frozen=True)
class BoardSummary:
    judge: Judge | None
    scored_here: int  # rows scored on this site
    reported: int  # rows as a paper reported them
    leader: Entry | None  # rank 1 of one ranking over every row; None where none is ranked


def board_summary(*, benchmark: Benchmark, user) -> BoardSummary:
    """What the home page says of a board, under its default judge: how many rows it has and
    which leads (two queries)."""
    judge = default_judge(benchmark=benchmark)
    counts = _board_queryset(
        benchmark=benchmark, judge=judge, user=user, filters=BoardFilters()
    ).aggregate(
        here=Count("pk", filter=Q(is_reported=False)),
        paper=Count("pk", filter=Q(is_reported=True)),
    )
    leaders = leaderboard_entries(
        benchmark=benchmark, judge=judge, user=user, sort=BoardSort(group_by_type=False), limit=1
    )
    # A board that ranks no system has no leader, whichever row its table lists first.
    leader = leaders[0] if leaders and leaders[0].rank is not None else None
    return BoardSummary(judge, counts["here"], counts["paper"], leader)


# --- Charts ---------------------------------------------------------------------------------


def _version(*, benchmark: Benchmark, user, judge: Judge | None) -> dict:
    """What a cached read depends on: who is looking (which submissions they may see and
    which anonymous ones they know) and the board's state, which changes with any score,
    publication, withdrawal, flag or anonymity switch (evaluation/board_state.py). ``judge`` is
    part of each key apart."""
    state = board_state(slug=benchmark.slug)
    return {"board": state.token if state else "", "viewer": viewer_for(user).cache_class}


def _cache_key(prefix: str, **parts) -> str:
    text = "|".join(f"{k}={v}" for k, v in sorted(parts.items()))
    return f"{prefix}:{hashlib.sha256(text.encode()).hexdigest()}"


def chart_cache_key(
    *,
    benchmark: Benchmark,
    judge: Judge | None,
    user,
    filters: BoardFilters,
    split: str = "",
    chosen_slice: str = "",
) -> str:
    """A key that changes whenever the chart's rows can: a score recomputed or added, a
    submission published, hidden or unpublished, or a different viewer class."""
    return _cache_key(
        "board-charts-v2",
        benchmark=benchmark.pk,
        judge=judge.pk if judge else None,
        version=_version(benchmark=benchmark, user=user, judge=judge),
        filters=filters,
        split=split,
        slice=chosen_slice,
    )


def board_cache_key(
    *, benchmark: Benchmark, judge: Judge | None, user, state: dict, version: dict | None = None
) -> str:
    """The rendered table's key: the charts' score state (the same _version) and the board's
    query parameters, so a new score, a publication or a flag renders it afresh."""
    return _cache_key(
        "board-table-v2",
        benchmark=benchmark.pk,
        judge=judge.pk if judge else None,
        version=version or _version(benchmark=benchmark, user=user, judge=judge),
        # The board state counts scorer versions too: a new scorer (a judge's or prompt's
        # change) marks rows as older without a new score.
        state=sorted(state.items()),
    )


def agreement_cache_key(*, benchmark: Benchmark, user) -> str:
    """Changes when any score of the benchmark is recomputed (new judgments always end in
    one), when visibility changes, or when a judge is added or removed."""
    judges = benchmark.judges.aggregate(n=Count("pk"), last=Max("pk"))
    return _cache_key(
        "judge-agreement-v1",
        benchmark=benchmark.pk,
        version=_version(benchmark=benchmark, user=user, judge=None),
        judges=judges,
    )


@dataclass(frozen=True)
class ChartPoint:
    system: str
    system_type: str  # the row group
    url: str  # the system's page
    reported_in_paper: bool
    private: bool
    values: dict  # column key -> number or None
    intervals: dict  # column key -> (low, high) or None


def chart_points(
    *,
    benchmark: Benchmark,
    judge: Judge | None,
    user,
    filters: BoardFilters,
    split: str = "",
    entries: list[Entry] | None = None,
) -> list[ChartPoint]:
    """One point per system on the board, in rank order (of ``entries`` when given: a slice's
    rows, say; rows without numbers there are left out)."""
    columns = board_columns(benchmark=benchmark, split=split)
    if entries is None:
        entries = leaderboard_entries(
            benchmark=benchmark,
            judge=judge,
            user=user,
            filters=filters,
            sort=BoardSort(group_by_type=False),
            split=split,
        )
    entries = [e for e in entries if not e.slice_unavailable]
    return [
        ChartPoint(
            system=e.system,
            system_type=e.system_type,
            url=reverse("system", args=[e.system_id]) if e.system_id else "",
            reported_in_paper=e.reported_in_paper,
            private=e.private,
            values={c.key: c.value(e.results) for c in columns},
            intervals=dict(e.intervals),
        )
        for e in entries
    ]


# --- Systems --------------------------------------------------------------------------------


def system_submissions(*, system: System, user) -> list[Submission]:
    """Every submission of a system, on every benchmark, that this user may see; each carries
    `shown_results`: its own judge's scores, or the paper's numbers."""
    # An anonymous submission is never listed under its system for those it is hidden from.
    visible = (
        submissions_visible_to(user=user).filter(system=system).exclude(viewer_for(user).hidden_q())
    )
    own_score = Score.objects.filter(submission=OuterRef("pk"), judge=OuterRef("judge_id")).values(
        "results"
    )[:1]
    return list(
        Submission.objects.filter(pk__in=visible.values("pk"))
        .select_related("benchmark", "judge")
        .annotate(
            shown_results=Coalesce(
                "reported_results",
                Subquery(own_score, output_field=JSONField()),
                output_field=JSONField(),
            )
        )
        .order_by("benchmark__name", "is_reported", "-created_at", "-pk")
    )


# --- Judge agreement ------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgePair:
    judge_a: Judge
    judge_b: Judge
    overall: Agreement
    by_kind: dict[str, Agreement]
    submissions: int


def _both_judged(*, benchmark: Benchmark, user):
    """TaskJudgment rows joined to the other judge's row for the same task result and kind,
    both with a verdict, over the submissions this user may see."""
    visible = submissions_visible_to(user=user).filter(benchmark=benchmark, is_reported=False)
    return (
        TaskJudgment.objects.filter(
            task_result__submission__in=visible.values("pk"),
            judgment__verdict__isnull=False,
        )
        # One filter() call: both conditions hold for the same joined row (the other judge's).
        .filter(
            task_result__task_judgments__kind=F("kind"),
            task_result__task_judgments__slot=F("slot"),
            task_result__task_judgments__judge_id__gt=F("judge_id"),
            task_result__task_judgments__judgment__verdict__isnull=False,
        )
        .annotate(other_judge=F("task_result__task_judgments__judge_id"))
    )


def judge_agreement(*, benchmark: Benchmark, user) -> list[JudgePair]:
    """For each pair of judges of the benchmark: raw agreement and Cohen's kappa over the items
    (a task of a submission, a judge kind) that both gave a verdict on, counting only
    submissions this user may see. The contingency tables are counted in SQL."""
    judges = list(benchmark.judges.order_by("-is_official", "slug"))
    joined = _both_judged(benchmark=benchmark, user=user)
    cells = (
        joined.annotate(
            mine=F("judgment__verdict"), theirs=F("task_result__task_judgments__judgment__verdict")
        )
        .values("judge_id", "other_judge", "kind", "mine", "theirs")
        .annotate(items=Count("pk"))
        .order_by()
    )
    tables: dict[tuple[int, int], dict[str, dict]] = {}
    for cell in cells:
        pair = (cell["judge_id"], cell["other_judge"])
        table = tables.setdefault(pair, {}).setdefault(cell["kind"], {})
        table[(cell["mine"], cell["theirs"])] = cell["items"]
    submissions = {
        (row["judge_id"], row["other_judge"]): row["n"]
        for row in joined.values("judge_id", "other_judge")
        .annotate(n=Count("task_result__submission_id", distinct=True))
        .order_by()
    }
    pairs = []
    for i, a in enumerate(judges):
        for b in judges[i + 1 :]:
            if (a.pk, b.pk) in tables or (a.pk, b.pk) in submissions:
                key, by_kind = (a.pk, b.pk), tables.get((a.pk, b.pk), {})
            else:
                # Counted with the other judge first (lower id): swap the labels back.
                key = (b.pk, a.pk)
                by_kind = {
                    kind: {(y, x): n for (x, y), n in table.items()}
                    for kind, table in tables.get(key, {}).items()
                }
            pairs.append(
                JudgePair(
                    judge_a=a,
                    judge_b=b,
                    overall=agreement_from_table(merge_tables(by_kind.values())),
                    by_kind={kind: agreement_from_table(t) for kind, t in sorted(by_kind.items())},
                    submissions=submissions.get(key, 0),
                )
            )
    return pairs
