"""Query-string filters, validated: a bad value is a 400 naming the parameter."""

from rest_framework import serializers

from evaluation.models import Submission


class SubmissionFilters(serializers.Serializer):
    benchmark = serializers.SlugField(required=False, help_text="Benchmark slug")
    system = serializers.IntegerField(required=False, min_value=1, help_text="System id")
    status = serializers.ChoiceField(choices=Submission.Status.choices, required=False)


class TaskFilters(serializers.Serializer):
    family = serializers.CharField(required=False, help_text="Task family, e.g. discussion")
    spoke = serializers.BooleanField(required=False, help_text="The agent spoke")
    should_speak = serializers.BooleanField(required=False, help_text="The agent should speak")
    correct = serializers.BooleanField(
        required=False, help_text="Turn-taking correct: spoke == should_speak"
    )


def validated(filters: type[serializers.Serializer], request) -> dict:
    # A plain dict: given a QueryDict, BooleanField reads a missing value as False.
    known = {
        name: value for name, value in request.query_params.items() if name in filters().fields
    }
    serializer = filters(data=known)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
