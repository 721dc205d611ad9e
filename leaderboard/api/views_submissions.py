"""Submissions and everything derived from them. Each view starts from the submissions the
requesting user may see; anything else is a 404, so a private submission's existence never
shows."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.benchmarks import registry
from evaluation.held_out import task_results_for
from evaluation.models import Submission
from evaluation.selectors import (
    submission_progress,
    submission_spending,
    submissions_visible_to,
    task_results_filtered,
)
from evaluation.services import submissions as submission_services
from leaderboard.api import selectors
from leaderboard.api.filters import SubmissionFilters, task_filters, validated
from leaderboard.api.pagination import Pagination
from leaderboard.api.serializers import (
    RetryRequestSerializer,
    RetryResultSerializer,
    SubmissionDetailSerializer,
    SubmissionSerializer,
    TaskJudgmentsSerializer,
    TaskResultSerializer,
)
from leaderboard.selectors_submissions import user_may_manage


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The submission is not in a state that allows this."
    default_code = "conflict"


def visible_submission(request, pk: int) -> Submission:
    return get_object_or_404(
        submissions_visible_to(user=request.user).select_related(
            "benchmark", "system", "team", "judge"
        ),
        pk=pk,
    )


def _detail(request, submission: Submission) -> dict:
    submission.progress = submission_progress(submission=submission)
    submission.scores_list = selectors.submission_scores(submission=submission, user=request.user)
    submission.spending_list = (
        submission_spending(submission=submission)
        if user_may_manage(user=request.user, submission=submission)
        else None
    )
    return SubmissionDetailSerializer(submission, context={"request": request}).data


@extend_schema(parameters=[SubmissionFilters])
class SubmissionList(generics.ListAPIView):
    """Submissions you may see: published ones, your teams' own, and the rows reported in
    papers. Newest first."""

    serializer_class = SubmissionSerializer
    pagination_class = Pagination

    def get_queryset(self):
        filters = validated(SubmissionFilters, self.request)
        return selectors.submission_list(user=self.request.user, filters=filters)


class SubmissionDetail(APIView):
    """Status, progress counts, and results per judge with tokens and cost."""

    @extend_schema(responses=SubmissionDetailSerializer)
    def get(self, request, pk: int):
        return Response(_detail(request, visible_submission(request, pk)))


def _task_filter_parameters() -> list[OpenApiParameter]:
    """Every task filter a registered benchmark declares (each applies to its benchmark's
    submissions; GET /api/benchmarks/<slug>/ lists them under declaration.task_filters)."""
    found: dict[str, OpenApiParameter] = {
        "verdict": OpenApiParameter(
            "verdict",
            str,
            enum=["correct", "wrong", "none"],
            description="Judged correct (every slot), wrong (some slot), or none yet/failed",
        )
    }
    for plugin in registry().values():
        for task_filter in plugin.task_filters:
            found.setdefault(
                task_filter.name,
                OpenApiParameter(
                    task_filter.name,
                    bool if task_filter.type == "bool" else str,
                    description=f"{plugin.name}: {task_filter.label}",
                ),
            )
    return list(found.values())


@extend_schema(parameters=_task_filter_parameters())
class SubmissionTaskList(generics.ListAPIView):
    """Each task of the submission: the task's fields, this submission's part of the upload
    and what processing found, filtered by the benchmark's task filters."""

    serializer_class = TaskResultSerializer
    pagination_class = Pagination

    def get_queryset(self):
        submission = visible_submission(self.request, self.kwargs["pk"])
        filters = task_filters(submission, self.request)
        return task_results_filtered(submission=submission, filters=filters, user=self.request.user)


class TaskJudgmentList(APIView):
    """Every judgment behind one task: the exact prompt, the raw output, verdict, reasoning,
    tokens, latency and error."""

    @extend_schema(
        responses=TaskJudgmentsSerializer,
        parameters=[OpenApiParameter("judge", str, description="Only this judge (slug)")],
    )
    def get(self, request, pk: int, task_id: str):
        submission = visible_submission(request, pk)
        row = get_object_or_404(
            task_results_for(user=request.user, submission=submission).select_related("task"),
            task__task_id=task_id,
        )
        links = selectors.task_judgments(
            task_result=row, judge_slug=request.query_params.get("judge", "")
        )
        data = {"task": row, "judgments": list(links)}
        return Response(TaskJudgmentsSerializer(data, context={"request": request}).data)


def _service_errors(error: DjangoValidationError):
    return Conflict(" ".join(error.messages))


class SubmissionRetryFailed(APIView):
    """Queue this submission's failed judgments again (its team's members and staff)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=RetryRequestSerializer,
        responses={202: RetryResultSerializer},
    )
    def post(self, request, pk: int):
        submission = visible_submission(request, pk)
        body = RetryRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        judge = None
        if body.validated_data.get("judge"):
            judge = submission.benchmark.judges.filter(slug=body.validated_data["judge"]).first()
            if judge is None:
                raise exceptions.ValidationError(
                    {
                        "judge": f"{submission.benchmark.slug} has no judge '{body.validated_data['judge']}'."
                    }
                )
        try:
            count = submission_services.submission_retry_failed(
                submission=submission, by=request.user, judge=judge
            )
        except DjangoValidationError as error:
            raise _service_errors(error) from None
        result = {
            "submission": submission.pk,
            "judge": (judge or submission.judge).slug,
            "requeued": count,
        }
        return Response(RetryResultSerializer(result).data, status=status.HTTP_202_ACCEPTED)


class SubmissionPublish(APIView):
    """Make your team's submission public (its owners and staff; other members get 403 with
    the reason). Publishing again changes nothing."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=SubmissionDetailSerializer)
    def post(self, request, pk: int):
        submission = visible_submission(request, pk)
        try:
            submission = submission_services.submission_publish(
                submission=submission, by=request.user
            )
        except DjangoValidationError as error:
            raise _service_errors(error) from None
        return Response(_detail(request, submission))
