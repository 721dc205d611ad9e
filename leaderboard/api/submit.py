"""POST /api/submissions/: create a submission from a bundle, with an optional Idempotency-Key.

The bundle arrives as the multipart field `bundle` and is streamed by Django's upload handler to
a temporary file, which is validated and stored from there.
"""

from __future__ import annotations

import logging
import math

from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.bundles import BundleRejected
from evaluation.models import Benchmark, Submission
from evaluation.selectors import submissions_visible_to
from leaderboard.uploads import services
from leaderboard.uploads.selectors import teams_of

IDEMPOTENCY_KEY_MAX = 100
CREATE_FAILED = (
    "The server could not create the submission; nothing was stored. Try again later, and "
    "tell the site's maintainers if it keeps failing."
)
logger = logging.getLogger(__name__)


@extend_schema_field({"type": "string", "format": "binary"})
class BundleField(serializers.FileField):
    """A file sent as a multipart part: the schema says binary, not a URI."""


class SubmissionCreateSerializer(serializers.Serializer):
    bundle = BundleField(
        help_text="The result bundle, as a file part of the multipart body (curl: "
        "-F bundle=@run.zip); the benchmark's About page gives its format"
    )
    benchmark = serializers.SlugField(help_text="Benchmark slug (GET /api/benchmarks/)")
    system = serializers.CharField(max_length=200, help_text="System name")
    system_type = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=50,
        help_text="The board's row group for this benchmark (its system types); "
        "GET /api/benchmarks/<slug>/ lists them (declaration.row_groups)",
    )
    team = serializers.SlugField(
        required=False, help_text="Team slug; may be left out by members of exactly one team"
    )
    judge = serializers.SlugField(
        required=False, help_text="Judge slug; the official one if left out"
    )
    allow_partial = serializers.BooleanField(default=False)
    publish = serializers.BooleanField(
        default=False, help_text="Publish once scored; the team's owners only (403 otherwise)"
    )


class SubmissionCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField(help_text="The submission in the API, as in every list")
    page = serializers.URLField(help_text="The submission's page on the site")
    duplicate_of = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Earlier submissions of your team with the very same upload (SHA-256)",
    )
    status = serializers.CharField()
    benchmark = serializers.CharField()
    system = serializers.CharField()
    team = serializers.CharField()
    judge = serializers.CharField(allow_null=True)
    published = serializers.BooleanField()
    incomplete = serializers.BooleanField()
    missing_tasks = serializers.IntegerField()
    bundle_sha256 = serializers.CharField()
    bundle_size = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    validation = serializers.JSONField()


def _error(message: str, code: int, **extra) -> Response:
    return Response({"error": message, **extra}, status=code)


class SubmissionCreateView(APIView):
    parser_classes = [MultiPartParser]
    permission_classes = [IsAuthenticated]

    def dispatch(self, request, *args, **kwargs):
        # /api/submissions/ is one path for two views: reads go to the submissions list.
        if request.method not in ("POST", "OPTIONS"):
            from leaderboard.api.views_submissions import SubmissionList

            return SubmissionList.as_view()(request, *args, **kwargs)
        return super().dispatch(request, *args, **kwargs)

    def initialize_request(self, request, *args, **kwargs):
        # Every file to disk, whatever its size: the services read bundles from a path.
        request.upload_handlers = [TemporaryFileUploadHandler(request)]
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        operation_id="submissions_create",
        description=(
            "Create a submission from a result bundle. The body is multipart/form-data: the "
            "upload in the file part `bundle`, the other fields as text parts. The whole bundle "
            "is validated first; a rejected one answers 400 with its report and stores nothing. "
            "`url` in the answer is the submission in the API (as in every list), `page` its "
            "page on the site."
        ),
        request={"multipart/form-data": SubmissionCreateSerializer},
        examples=[
            OpenApiExample(
                "curl",
                description='curl -H "Authorization: Bearer $TOKEN" -F bundle=@run.zip '
                '-F benchmark=<slug> -F system="My Agent" https://<site>/api/submissions/',
                value={"benchmark": "<slug>", "system": "My Agent", "bundle": "run.zip"},
                request_only=True,
            )
        ],
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description="Repeat a create safely: the same key and request from the same "
                "team return the first submission (200); a different request is refused (409).",
            )
        ],
        responses={
            201: SubmissionCreatedSerializer,
            200: OpenApiResponse(SubmissionCreatedSerializer, description="Idempotent replay"),
            400: OpenApiResponse(description="Invalid fields, or the bundle's validation report"),
            401: OpenApiResponse(description="Not authenticated"),
            403: OpenApiResponse(
                description="Not a member of the team, or asked to publish without owning it"
            ),
            409: OpenApiResponse(description="Idempotency-Key reused for a different request"),
            429: OpenApiResponse(description="A team limit is reached; says which and when"),
        },
    )
    def post(self, request):
        key = request.headers.get("Idempotency-Key", "").strip()
        if len(key) > IDEMPOTENCY_KEY_MAX:
            return _error(f"Idempotency-Key is longer than {IDEMPOTENCY_KEY_MAX} characters", 400)
        form = SubmissionCreateSerializer(data=request.data)
        if not form.is_valid():
            return _error("invalid request", 400, fields=form.errors)
        data = form.validated_data
        benchmark = Benchmark.objects.filter(slug=data["benchmark"]).first()
        if benchmark is None:
            return _error(f"no benchmark {data['benchmark']!r}", 400)
        teams = teams_of(user=request.user)
        if "team" in data:
            team = teams.filter(slug=data["team"]).first()
            if team is None:
                return _error(f"you are not a member of a team {data['team']!r}", 403)
        else:
            mine = list(teams[:2])
            if len(mine) != 1:
                return _error("say which team submits (field 'team')", 400)
            team = mine[0]
        judge = None
        if "judge" in data:
            judge = benchmark.judges.filter(slug=data["judge"]).first()
            if judge is None:
                return _error(
                    services.judge_choice_message(benchmark, data["judge"]),
                    400,
                    judges=list(benchmark.judges.values_list("slug", flat=True)),
                )
        bundle = data["bundle"]
        try:
            upload, created = services.submission_create_via_api(
                user=request.user,
                team=team,
                benchmark=benchmark,
                bundle_path=bundle.temporary_file_path(),
                filename=bundle.name,
                system_name=data["system"],
                system_type=data["system_type"],
                judge=judge,
                allow_partial=data["allow_partial"],
                publish=data["publish"],
                idempotency_key=key,
            )
        except BundleRejected as exc:
            return _error("bundle rejected", 400, report=exc.report.as_dict())
        except services.LimitReached as exc:
            refusal = exc.refusal
            headers = {}
            if refusal.retry_after:
                wait = (refusal.retry_after - timezone.now()).total_seconds()
                headers["Retry-After"] = str(max(1, math.ceil(wait)))
            response = _error(
                refusal.message,
                429,
                limit=refusal.limit,
                allowed=refusal.allowed,
                retry_after=refusal.retry_after.isoformat() if refusal.retry_after else None,
            )
            for name, value in headers.items():
                response[name] = value
            return response
        except services.IdempotencyConflict as exc:
            return _error(str(exc), 409)
        except services.UploadError as exc:
            return _error(str(exc), exc.status)
        except Exception:
            # Validation says everything a submitter can fix; what is left is ours to look into.
            logger.exception("creating a submission through the API failed")
            return _error(CREATE_FAILED, 500)
        submission = (
            submissions_visible_to(user=request.user)
            .select_related("benchmark", "system", "team", "judge")
            .filter(pk=upload.submission_id)
            .first()
        )
        page = reverse("submission", args=[submission.pk])
        api_url = reverse("api-submission-detail", args=[submission.pk])
        earlier = (
            Submission.objects.filter(team=submission.team, bundle_sha256=submission.bundle_sha256)
            .exclude(pk=submission.pk)
            .filter(created_at__lte=submission.created_at)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        body = {
            "id": submission.pk,
            "url": request.build_absolute_uri(api_url),
            "page": request.build_absolute_uri(page),
            "duplicate_of": list(earlier),
            "status": submission.status,
            "benchmark": submission.benchmark.slug,
            "system": submission.system.name,
            "team": submission.team.slug,
            "judge": submission.judge.slug if submission.judge else None,
            "published": submission.is_published,
            "incomplete": submission.is_partial,
            "missing_tasks": submission.missing_task_count,
            "bundle_sha256": submission.bundle_sha256,
            "bundle_size": submission.bundle_size,
            "created_at": submission.created_at.isoformat(),
            "validation": upload.report,
        }
        return Response(
            body,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
            headers={"Location": api_url},
        )


submission_create = SubmissionCreateView.as_view()
