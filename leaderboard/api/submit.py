"""POST /api/submissions/: hand a bundle to the site, with an optional Idempotency-Key; GET
/api/uploads/<id>/: how its check goes.

The bundle arrives as the multipart field `bundle` and is streamed by Django's upload handler to
a temporary file, which becomes an upload whose bytes are all there. A worker validates it and
creates the submission, exactly as it finishes a browser upload: the request answers 202 at
once with the upload's state and its URL, which the client follows until the upload is
accepted (the submission is linked) or rejected (the validation report says why).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.db.models import Q
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

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark
from evaluation.selectors import judge_choice_message
from evaluation.services.submissions import LimitReached
from leaderboard.api.views_submissions import SubmissionList
from leaderboard.uploads import services
from leaderboard.uploads.models import Upload
from leaderboard.uploads.selectors import teams_of

IDEMPOTENCY_KEY_MAX = 100
CREATE_FAILED = (
    "The server could not take the upload; nothing was stored. Try again later, and "
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


class UploadSubmissionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField(help_text="The submission in the API, as in every list")
    page = serializers.URLField(help_text="The submission's page on the site")
    status = serializers.CharField()


class UploadStateSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The upload")
    url = serializers.URLField(
        help_text="This state, to poll until the upload is accepted or rejected"
    )
    status = serializers.CharField(
        help_text="finishing or validating: a worker checks it; accepted: the submission exists; "
        "rejected: see report; uploading with an error: a check failed for a reason of the "
        "server's own (send the same request with the same Idempotency-Key to try again); "
        "cancelled or expired",
    )
    benchmark = serializers.CharField()
    system = serializers.CharField()
    team = serializers.CharField()
    filename = serializers.CharField()
    size = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True)
    report = serializers.JSONField(
        allow_null=True, help_text="The validation report: problems and warnings by task and file"
    )
    submission = UploadSubmissionSerializer(allow_null=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


def upload_state(request, upload: Upload) -> dict:
    submission = upload.submission
    return {
        "id": str(upload.pk),
        "url": request.build_absolute_uri(reverse("api-upload-state", args=[upload.pk])),
        "status": upload.status,
        "benchmark": upload.benchmark.slug,
        "system": upload.system_name,
        "team": upload.team.slug,
        "filename": upload.filename,
        "size": upload.size,
        "error": upload.error,
        "report": upload.report,
        "submission": None
        if submission is None
        else {
            "id": submission.pk,
            "url": request.build_absolute_uri(
                reverse("api-submission-detail", args=[submission.pk])
            ),
            "page": request.build_absolute_uri(reverse("submission", args=[submission.pk])),
            "status": submission.status,
        },
        "created_at": upload.created_at.isoformat(),
        "finished_at": upload.finished_at.isoformat() if upload.finished_at else None,
    }


def _error(message: str, code: int, **extra) -> Response:
    return Response({"error": message, **extra}, status=code)


class SubmissionCreateView(APIView):
    parser_classes = [MultiPartParser]
    permission_classes = [IsAuthenticated]

    def dispatch(self, request, *args, **kwargs):
        # /api/submissions/ is one path for two views: reads go to the submissions list.
        if request.method not in ("POST", "OPTIONS"):
            return SubmissionList.as_view()(request, *args, **kwargs)
        return super().dispatch(request, *args, **kwargs)

    def initialize_request(self, request, *args, **kwargs):
        # Every file to disk, whatever its size: the services read bundles from a path.
        request.upload_handlers = [TemporaryFileUploadHandler(request)]
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        operation_id="submissions_create",
        description=(
            "Hand a result bundle to the site. The body is multipart/form-data: the upload in "
            "the file part `bundle`, the other fields as text parts; each upload option the "
            "benchmark declares (GET /api/benchmarks/<slug>/, declaration.upload.options: a run "
            "mode, say) goes as a text part of its name, its default when left out. The answer "
            "(202) comes at "
            "once: the upload's state, whose `url` (also the Location header) the client polls "
            "while a worker validates the whole bundle. Accepted: `submission` links the "
            "submission. Rejected: `report` lists every problem by task and file, and nothing "
            "of the bundle is kept."
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
                description="Repeat a request safely: the same key and request from the same "
                "team return the first upload's state (200), and queue its check again when "
                "that failed for a reason of the server's own; a different request is refused "
                "(409).",
            )
        ],
        responses={
            202: UploadStateSerializer,
            200: OpenApiResponse(
                UploadStateSerializer, description="Idempotent replay: the first upload's state"
            ),
            400: OpenApiResponse(description="Invalid fields"),
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
                    judge_choice_message(benchmark, data["judge"]),
                    400,
                    judges=list(benchmark.judges.values_list("slug", flat=True)),
                )
        options, errors = _declared_options(benchmark, request.data)
        if errors:
            fields = {name: [message] for name, message in errors.items()}
            return _error("; ".join(errors.values()), 400, fields=fields)
        bundle = data["bundle"]
        try:
            upload, created = services.upload_from_api(
                user=request.user,
                team=team,
                benchmark=benchmark,
                bundle_path=Path(bundle.temporary_file_path()),
                filename=bundle.name,
                system_name=data["system"],
                system_type=data["system_type"],
                judge=judge,
                allow_partial=data["allow_partial"],
                publish=data["publish"],
                idempotency_key=key,
                options=options,
            )
        except LimitReached as exc:
            return _limited(exc.refusal)
        except services.IdempotencyConflict as exc:
            return _error(str(exc), 409)
        except services.UploadError as exc:
            return _error(str(exc), exc.status)
        except Exception:
            # Checking the bundle is the worker's; what is left here is ours to look into.
            logger.exception("taking an upload through the API failed")
            return _error(CREATE_FAILED, 500)
        upload = Upload.objects.select_related("benchmark", "team", "submission").get(pk=upload.pk)
        body = upload_state(request, upload)
        return Response(
            body,
            status=status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK,
            headers={"Location": body["url"]},
        )


def _declared_options(benchmark: Benchmark, fields) -> tuple[dict, dict]:
    """(options, errors): the upload options the benchmark's plug-in declares (a run mode,
    say), each from the field of its name or its default; errors names each field whose value
    is not one of its choices."""
    options, errors = {}, {}
    for option in get_plugin(benchmark.plugin).upload.options:
        value = str(fields.get(option.name) or option.default)
        allowed = [choice for choice, _ in option.choices]
        if value in allowed:
            options[option.name] = value
        else:
            errors[option.name] = f"{option.name} must be one of {', '.join(allowed)}"
    return options, errors


def _limited(refusal) -> Response:
    response = _error(
        refusal.message,
        429,
        limit=refusal.limit,
        allowed=refusal.allowed,
        retry_after=refusal.retry_after.isoformat() if refusal.retry_after else None,
    )
    if refusal.retry_after:
        wait = (refusal.retry_after - timezone.now()).total_seconds()
        response["Retry-After"] = str(max(1, math.ceil(wait)))
    return response


class UploadStateView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="uploads_state",
        description="How an upload sent to POST /api/submissions/ stands: poll it until it is "
        "accepted (the submission is linked) or rejected (the report says why). Its team's "
        "members only.",
        responses={200: UploadStateSerializer, 404: OpenApiResponse(description="No such upload")},
    )
    def get(self, request, pk):
        upload = (
            Upload.objects.select_related("benchmark", "team", "submission")
            .filter(pk=pk)
            .filter(team__in=teams_of(user=request.user) if not request.user.is_staff else Q())
            .first()
        )
        if upload is None:
            return _error("no such upload", 404)
        response = Response(upload_state(request, upload))
        response["Cache-Control"] = "no-store"
        return response


submission_create = SubmissionCreateView.as_view()
upload_state_view = UploadStateView.as_view()
