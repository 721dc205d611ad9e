"""Is A really better than B, and where: the comparison page of two submissions (every metric's
difference with its paired test, per slice, and the tasks they disagree on), and one task of
both side by side. The reads are in selectors_compare.py; a submission the viewer may not see
is an error that does not say whether it exists."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.cache import cache
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from evaluation.benchmarks import get_plugin
from evaluation.held_out import task_results_for
from evaluation.identity import viewer_for
from evaluation.models import Benchmark
from evaluation.selectors import submissions_visible_to
from evaluation.slices import ALPHA, DRAWS, MIN_TASKS, PERMUTATION_DRAWS, SEED
from evaluation.stats import EXACT_MAX_TASKS
from leaderboard.audio import clip_for
from leaderboard.selectors import board_split
from leaderboard.selectors_compare import (
    COMPARE_CACHE_SECONDS,
    ComparisonError,
    board_slice,
    cache_key,
    comparable_submission,
    comparison_judge,
    slice_choices,
    submission_comparison,
)
from leaderboard.selectors_submissions import (
    run_config_comparison,
    task_judgment_groups,
    task_page_context,
)


def _pair(request) -> tuple[str, str]:
    """a and b, or the two rows ticked on the board (pick=…&pick=…)."""
    picked = request.GET.getlist("pick")
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    if not (a or b) and picked:
        if len(picked) != 2:
            raise ComparisonError(f"tick exactly two rows to compare ({len(picked)} ticked)")
        a, b = picked
    return a, b


def comparison_from_request(request, benchmark: Benchmark):
    """The comparison the query string asks for (a, b or two picks; judge, split, slice)."""
    a_pk, b_pk = _pair(request)
    if not a_pk or not b_pk:
        raise ComparisonError("choose two submissions to compare (a and b)")
    a = comparable_submission(user=request.user, benchmark=benchmark, pk=a_pk)
    b = comparable_submission(user=request.user, benchmark=benchmark, pk=b_pk)
    judge = comparison_judge(benchmark=benchmark, a=a, b=b, requested=request.GET.get("judge", ""))
    chosen = board_slice(benchmark=benchmark, requested=request.GET.get("slice", ""))
    return submission_comparison(
        benchmark=benchmark,
        a=a,
        b=b,
        judge=judge,
        split=request.GET.get("split", ""),
        requested_slice=chosen,
    )


def _candidates(request, benchmark: Benchmark, viewer) -> list:
    """Submissions the viewer may compare, by the name shown to the viewer and newest first,
    for the two pickers."""
    visible = submissions_visible_to(user=request.user).filter(
        benchmark=benchmark, is_reported=False, scores__isnull=False
    )
    candidates = list(
        visible.select_related("system")
        .distinct()
        .order_by("-created_at", "-pk")
        .only("pk", "system__name", "created_at", "row_group", "is_anonymous", "team_id")
    )
    for candidate in candidates:
        candidate.shown_name = viewer.name(candidate)
    # Stable: the newest first within a name.
    return sorted(candidates, key=lambda s: s.shown_name)


@require_safe
def compare_page(request, slug: str):
    benchmark = get_object_or_404(Benchmark, slug=slug)
    plugin = get_plugin(benchmark.plugin)
    picked = request.GET.getlist("pick")
    if len(picked) in (1, 2) and not (request.GET.get("a") or request.GET.get("b")):
        # Rows ticked on the board: the permalink names them as a and b (one: A, and B is
        # chosen here).
        query = request.GET.copy()
        query.pop("pick")
        for key, pk in zip("ab", picked, strict=False):
            query[key] = pk
        return redirect(f"{request.path}?{query.urlencode()}")
    found, error = None, ""
    one_chosen = bool(request.GET.get("a")) != bool(request.GET.get("b")) and not picked
    if (request.GET.get("a") or request.GET.get("b") or picked) and not one_chosen:
        try:
            found = comparison_from_request(request, benchmark)
        except ComparisonError as problem:
            error = str(problem)
    params = {key: request.GET[key] for key in ("judge", "split") if request.GET.get(key, "")}
    if found is not None:
        params |= {"a": found.a.pk, "b": found.b.pk, "judge": found.judge.slug}
        if found.split:
            params["split"] = found.split
    viewer = viewer_for(request.user)
    candidates = _candidates(request, benchmark, viewer)
    return render(
        request,
        "leaderboard/compare.html",
        {
            "benchmark": benchmark,
            "plugin": plugin,
            "found": found,
            "error": error,
            "one_chosen": one_chosen,
            "comparison_html": _comparison_html(found, slug, params, viewer) if found else "",
            "options_a": _options(
                candidates, str(found.a.pk) if found else request.GET.get("a", "")
            ),
            "options_b": _options(
                candidates, str(found.b.pk) if found else request.GET.get("b", "")
            ),
            "slice_choices": slice_choices(benchmark=benchmark),
            "chosen_slice": request.GET.get("slice", ""),
            "splits": plugin.splits,
            "chosen_split": board_split(
                benchmark=benchmark, requested=request.GET.get("split", "")
            ),
            "params": params,
            "draws": DRAWS,
            "seed": SEED,
            "alpha": ALPHA,
        },
        status=400 if error else 200,
    )


def _options(candidates, chosen: str) -> str:
    """A picker's options, built here: a board of hundreds of submissions made the template's
    loop most of the page's time."""
    return mark_safe(
        "".join(
            format_html(
                '<option value="{}"{}>{} (#{}, {})</option>',
                s.pk,
                mark_safe(" selected") if str(s.pk) == chosen else "",
                s.shown_name,
                s.pk,
                s.created_at.strftime("%Y-%m-%d"),
            )
            for s in candidates
        )
    )


def _comparison_html(found, slug: str, params: dict, viewer) -> str:
    """The comparison's tables, rendered once per comparison and query: the numbers are cached
    under both scores' state (found.key); the names shown to this viewer are part of this key."""
    names = {"name_a": viewer.name(found.a), "name_b": viewer.name(found.b)}
    key = cache_key(
        "compare-page-v3",
        found.key,
        sorted(params.items()),
        names["name_a"],
        names["name_b"],
        found.judge.name,
    )
    html = cache.get(key)
    if html is None:
        html = render_to_string(
            "leaderboard/fragments/comparison.html",
            {
                "found": found,
                **names,
                "rows": _metric_rows(found),
                "config_rows": run_config_comparison(a=found.a, b=found.b, viewer=viewer),
                "hidden_a": viewer.hides(found.a),
                "hidden_b": viewer.hides(found.b),
                "slice_columns": _slice_columns(found),
                "slice_rows": _slice_rows(found),
                "disagreements": _disagreements(found, slug, params),
                "params": params,
                "draws": DRAWS,
                "permutation_draws": PERMUTATION_DRAWS,
                "exact_max": EXACT_MAX_TASKS,
                "min_tasks": MIN_TASKS,
                "seed": SEED,
                "alpha": ALPHA,
            },
        )
        cache.set(key, html, COMPARE_CACHE_SECONDS)
    return mark_safe(html)  # rendered by the template engine, which escaped every value


def _metric_rows(found) -> list[dict]:
    columns = {c.key: c for c in found.columns}
    return [
        {"column": columns[m.key], "m": m}
        for m in found.overall.comparison.metrics
        if m.key in columns
    ]


def _slice_columns(found) -> list:
    """The columns the comparison compares (counts, and metrics no task contributes to, are
    not): each slice's cell under them holds a difference or says why not."""
    compared = {m.key for m in found.overall.comparison.metrics}
    return [c for c in found.columns if c.key in compared]


def _slice_rows(found) -> list[dict]:
    rows = []
    columns = _slice_columns(found)
    for chosen in found.by_slice:
        by_key = {m.key: m for m in chosen.comparison.metrics}
        rows.append(
            {
                "slice": chosen.slice,
                "tasks": chosen.comparison.tasks,
                "cells": [(c, by_key.get(c.key)) for c in columns],
            }
        )
    return rows


def _disagreements(found, slug: str, params: dict) -> list[dict]:
    columns = {c.key: c for c in found.columns}
    query = urlencode(params)
    return [
        {
            "task_id": d.task_id,
            "url": reverse("compare-task", args=[slug, d.task_id]) + "?" + query,
            "outcomes": [
                {"column": columns[key], "a": a, "b": b, "units": units}
                for key, (a, b, units) in d.outcomes.items()
                if key in columns
            ],
        }
        for d in found.overall.comparison.disagreements
    ]


def _side(request, submission, task_id: str, judge_id: int, viewer) -> dict:
    task_result = get_object_or_404(
        task_results_for(user=request.user, submission=submission).select_related(
            "task", "submission__benchmark", "submission__judge"
        ),
        task__task_id=task_id,
    )
    context = task_page_context(task_result=task_result)
    clips = [
        clip_for(
            key=clip.key,
            user=request.user,
            label=clip.label,
            submission_id=submission.pk,
            markers=[{"time": time, "label": label} for time, label in clip.markers],
            name=clip.name,
        )
        for clip in context.pop("clips", [])
    ]
    groups = [
        group
        for group in task_judgment_groups(task_result=task_result, judge_id=judge_id)
        if group["judge"].pk == judge_id
    ]
    return {
        "submission": submission,
        "name": viewer.name(submission),
        "row": task_result,
        "plugin_context": context,
        "clips": clips,
        "judgment_groups": groups,
    }


@require_safe
def compare_task_page(request, slug: str, task_id: str):
    benchmark = get_object_or_404(Benchmark, slug=slug)
    plugin = get_plugin(benchmark.plugin)
    try:
        a_pk, b_pk = _pair(request)
        a = comparable_submission(user=request.user, benchmark=benchmark, pk=a_pk)
        b = comparable_submission(user=request.user, benchmark=benchmark, pk=b_pk)
        judge = comparison_judge(
            benchmark=benchmark, a=a, b=b, requested=request.GET.get("judge", "")
        )
    except ComparisonError as problem:
        return render(
            request,
            "leaderboard/compare.html",
            {"benchmark": benchmark, "plugin": plugin, "error": str(problem)},
            status=400,
        )
    back = {"a": a.pk, "b": b.pk, "judge": judge.slug}
    if request.GET.get("split"):
        back["split"] = request.GET["split"]
    return render(
        request,
        "leaderboard/compare_task.html",
        {
            "benchmark": benchmark,
            "plugin": plugin,
            "task_id": task_id,
            "judge": judge,
            "sides": [
                _side(request, side, task_id, judge.pk, viewer_for(request.user)) for side in (a, b)
            ],
            "plugin_template": plugin.task_template or "leaderboard/fragments/task_default.html",
            "back": reverse("compare", args=[slug]) + "?" + urlencode(back),
        },
    )
