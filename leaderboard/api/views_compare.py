"""Slices of a benchmark and the paired comparison of two submissions, as on the compare page
(leaderboard/views_compare.py). A submission the caller may not see gives the same 400 as one
that does not exist."""

import math

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.identity import viewer_for
from evaluation.models import Benchmark
from evaluation.slices import (
    ALPHA,
    DRAWS,
    MIN_TASKS,
    PERMUTATION_DRAWS,
    SEED,
    TEST_MCNEMAR,
    TEST_MONTE_CARLO,
    TEST_PERMUTATION,
)
from leaderboard.selectors_compare import ComparisonError, slice_choices
from leaderboard.views_compare import comparison_from_request


class SliceValueSerializer(serializers.Serializer):
    value = serializers.CharField()
    tasks = serializers.IntegerField(help_text="tasks of the benchmark with this value")
    slice = serializers.CharField(help_text="the value of ?slice= for the board and compare")


class SliceAttributeSerializer(serializers.Serializer):
    attribute = serializers.CharField()
    label = serializers.CharField()
    values = SliceValueSerializer(many=True)


class SliceListSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    attributes = SliceAttributeSerializer(many=True)


class BenchmarkSlices(APIView):
    """The task attributes a benchmark's board can be sliced by, each value with its number of
    tasks. Pass one as ?slice=attribute=value to the board (page, JSON, CSV) or to compare."""

    @extend_schema(responses=SliceListSerializer)
    def get(self, request, slug: str):
        benchmark = get_object_or_404(Benchmark, slug=slug)
        return Response(
            {
                "benchmark": benchmark.slug,
                "attributes": [
                    {
                        "attribute": choice.attribute,
                        "label": choice.label,
                        "values": [
                            {"value": value, "tasks": n, "slice": f"{choice.attribute}={value}"}
                            for value, n in choice.values
                        ],
                    }
                    for choice in slice_choices(benchmark=benchmark)
                ],
            }
        )


class MetricComparisonSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="the board column's key")
    label = serializers.CharField()
    unit = serializers.CharField()
    a = serializers.FloatField(allow_null=True)
    b = serializers.FloatField(allow_null=True)
    difference = serializers.FloatField(allow_null=True, help_text="a - b in the metric's unit")
    interval = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text=(
            "95% paired bootstrap interval of a - b over the metric's tasks (null on a slice "
            "of the whole comparison, and below the minimum n)"
        ),
    )
    test = serializers.ChoiceField(
        choices=[TEST_MCNEMAR, TEST_PERMUTATION, TEST_MONTE_CARLO, ""],
        help_text="the test behind p_value; empty when there is none (see note)",
    )
    p_value = serializers.FloatField(allow_null=True)
    tasks = serializers.IntegerField(
        help_text="n: compared tasks where either system counts a unit of this metric"
    )
    note = serializers.CharField(
        help_text="why there is no p-value or interval (n below the minimum, no units), or "
        "what the interval left out; empty otherwise"
    )
    significant = serializers.BooleanField()
    b_only_a = serializers.IntegerField(
        allow_null=True, help_text="McNemar's b: units only A passed"
    )
    c_only_b = serializers.IntegerField(
        allow_null=True, help_text="McNemar's c: units only B passed"
    )
    units_a = serializers.IntegerField()
    units_b = serializers.IntegerField()


class SliceComparisonSerializer(serializers.Serializer):
    slice = serializers.CharField(allow_null=True)
    tasks = serializers.IntegerField(help_text="tasks both were scored on, in the slice")
    metrics = MetricComparisonSerializer(many=True)


class DisagreementSerializer(serializers.Serializer):
    task_id = serializers.CharField()
    outcomes = serializers.DictField(
        help_text="column key -> {a: units A passed, b: units B passed, units}"
    )


class SideSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    system = serializers.CharField()
    tasks = serializers.IntegerField(help_text="tasks this submission was scored on")


class ComparisonSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    judge = serializers.CharField()
    split = serializers.CharField(allow_null=True)
    a = SideSerializer()
    b = SideSerializer()
    draws = serializers.IntegerField(help_text="bootstrap resamples behind each interval")
    permutation_draws = serializers.IntegerField(
        help_text="Monte Carlo arrangements of a permutation test too large to enumerate"
    )
    seed = serializers.IntegerField()
    alpha = serializers.FloatField()
    min_tasks = serializers.IntegerField(
        help_text="the fewest tasks behind a p-value or an interval"
    )
    overall = SliceComparisonSerializer()
    by_slice = SliceComparisonSerializer(many=True)
    disagreements = DisagreementSerializer(many=True)


def _finite(value):
    return value if value is None or math.isfinite(value) else None


def _metrics(found, comparison) -> list[dict]:
    columns = {c.key: c for c in found.columns}
    return [
        {
            "key": m.key,
            "label": columns[m.key].label,
            "unit": columns[m.key].metric.unit,
            "a": m.a,
            "b": m.b,
            "difference": m.difference,
            "interval": [_finite(v) for v in m.interval] if m.interval else None,
            "test": m.test,
            "p_value": m.p_value,
            "significant": m.significant,
            "b_only_a": m.only_a,
            "c_only_b": m.only_b,
            "units_a": m.units_a,
            "units_b": m.units_b,
            "tasks": m.tasks,
            "note": m.note,
        }
        for m in comparison.metrics
        if m.key in columns
    ]


def comparison_json(found, viewer) -> dict:
    overall = found.overall
    return {
        "benchmark": found.a.benchmark.slug,
        "judge": found.judge.slug,
        "split": found.split or None,
        "a": {"submission": found.a.pk, "system": viewer.name(found.a), "tasks": found.tasks_a},
        "b": {"submission": found.b.pk, "system": viewer.name(found.b), "tasks": found.tasks_b},
        "draws": DRAWS,
        "permutation_draws": PERMUTATION_DRAWS,
        "seed": SEED,
        "alpha": ALPHA,
        "min_tasks": MIN_TASKS,
        "overall": {
            "slice": overall.slice.key if overall.slice else None,
            "tasks": overall.comparison.tasks,
            "metrics": _metrics(found, overall.comparison),
        },
        "by_slice": [
            {
                "slice": chosen.slice.key,
                "tasks": chosen.comparison.tasks,
                "metrics": _metrics(found, chosen.comparison),
            }
            for chosen in found.by_slice
        ],
        "disagreements": [
            {
                "task_id": d.task_id,
                "outcomes": {
                    key: {"a": a, "b": b, "units": units}
                    for key, (a, b, units) in d.outcomes.items()
                },
            }
            for d in overall.comparison.disagreements
        ],
    }


class BenchmarkCompare(APIView):
    """Submission A against submission B under one judge: each metric's difference with its
    95% paired bootstrap interval and a paired test (exact McNemar on pass/fail units, one per
    task, with b and c; otherwise a sign-flip permutation test over tasks), on the tasks both
    were scored on, each with its n; no p-value or interval below the minimum n (the note says
    why); without a slice, the same for every slice (differences, tests, p-values and n, without
    intervals); and the tasks they disagree on."""

    @extend_schema(
        parameters=[
            OpenApiParameter("a", int, required=True, description="submission A"),
            OpenApiParameter("b", int, required=True, description="submission B"),
            OpenApiParameter("judge", str, description="judge slug (default: official)"),
            OpenApiParameter("split", str, description="the board's table (a split's key)"),
            OpenApiParameter("slice", str, description="attribute=value (see slices/)"),
        ],
        responses=ComparisonSerializer,
    )
    def get(self, request, slug: str):
        benchmark = get_object_or_404(Benchmark, slug=slug)
        try:
            found = comparison_from_request(request, benchmark)
        except ComparisonError as problem:
            return Response({"detail": str(problem)}, status=400)
        return Response(comparison_json(found, viewer_for(request.user)))
