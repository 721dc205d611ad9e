"""Query-string filters, validated: a bad value is a 400 naming the parameter."""

from rest_framework import serializers

from evaluation.benchmarks import get_plugin
from evaluation.models import Submission
from evaluation.selectors import VERDICT_FILTERS


class SubmissionFilters(serializers.Serializer):
    benchmark = serializers.SlugField(required=False, help_text="Benchmark slug")
    system = serializers.IntegerField(required=False, min_value=1, help_text="System id")
    status = serializers.ChoiceField(choices=Submission.Status.choices, required=False)


def task_filters(submission, request) -> dict:
    """The benchmark's task filters and the verdict, from the query string: a bad value is a
    400 naming the parameter."""
    fields = {
        "verdict": serializers.ChoiceField(
            choices=VERDICT_FILTERS, required=False, help_text="Under the submission's judge"
        )
    }
    for task_filter in get_plugin(submission.benchmark.plugin).task_filters:
        if task_filter.type == "bool":
            fields[task_filter.name] = serializers.BooleanField(
                required=False, help_text=task_filter.label
            )
        else:
            fields[task_filter.name] = serializers.CharField(
                required=False, help_text=task_filter.label
            )
    filters = type("TaskFilters", (serializers.Serializer,), fields)
    return validated(filters, request)


def validated(filters: type[serializers.Serializer], request) -> dict:
    # A plain dict: given a QueryDict, BooleanField reads a missing value as False.
    known = {
        name: value for name, value in request.query_params.items() if name in filters().fields
    }
    serializer = filters(data=known)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
