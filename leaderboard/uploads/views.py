"""The submit page and the JSON endpoints its script drives: start, send chunks (or get S3 part
URLs), ask how far the upload got, finish, cancel; and the upload's status page."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation.benchmarks import get_plugin
from evaluation.jsonbounds import loads_bounded
from evaluation.models import Benchmark
from evaluation.services.submissions import LimitReached
from evaluation.stored import storage_is_s3
from leaderboard.uploads import services, storage
from leaderboard.uploads.forms import UploadStartForm
from leaderboard.uploads.models import Upload
from leaderboard.uploads.selectors import report_rows, teams_of, uploads_visible_to
from leaderboard.uploads.storage import S3_MAX_PARTS


def _login_required_json(view):
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return JsonResponse({"error": "log in first"}, status=401)
        return view(request, *args, **kwargs)

    return wrapped


def _own_upload(request, pk) -> Upload:
    """Bytes are sent, finished and cancelled by the user who started the upload only."""
    return get_object_or_404(
        Upload.objects.select_related("benchmark", "team", "judge").exclude(
            method=Upload.Method.API
        ),
        pk=pk,
        user=request.user,
        team__memberships__user=request.user,
    )


def _limit_json(exc: LimitReached) -> JsonResponse:
    refusal = exc.refusal
    response = JsonResponse(
        {
            "error": refusal.message,
            "limit": refusal.limit,
            "allowed": refusal.allowed,
            "retry_after": refusal.retry_after.isoformat() if refusal.retry_after else None,
        },
        status=429,
    )
    return response


def _state(upload: Upload) -> dict:
    state = {
        "id": str(upload.pk),
        "method": upload.method,
        "status": upload.status,
        "size": upload.size,
        "received": upload.received,
        "error": upload.error,
        "urls": {
            "chunk": reverse("upload-chunk", args=[upload.pk]),
            "parts": reverse("upload-parts", args=[upload.pk]),
            "state": reverse("upload-state", args=[upload.pk]),
            "finish": reverse("upload-finish", args=[upload.pk]),
            "cancel": reverse("upload-cancel", args=[upload.pk]),
            "page": reverse("upload-detail", args=[upload.pk]),
        },
    }
    if upload.method == Upload.Method.CHUNKED:
        state["chunk_bytes"] = settings.UPLOAD_CHUNK_BYTES
    else:
        state["part_bytes"] = upload.part_bytes
        state["part_count"] = storage.s3_part_count(upload.size, upload.part_bytes)
        done = []
        if upload.is_open and upload.s3_upload_id:
            done = storage.parts_uploaded(key=upload.s3_key, upload_id=upload.s3_upload_id)
        # Parts of the wrong size (a different part size, a cut-off send) are sent again.
        state["parts_done"] = [
            p["PartNumber"]
            for p in done
            if p["Size"] == storage.s3_part_size(upload.size, upload.part_bytes, p["PartNumber"])
        ]
        state["received"] = sum(
            storage.s3_part_size(upload.size, upload.part_bytes, n) for n in state["parts_done"]
        )
    return state


@login_required
@require_GET
def submit_page(request, slug: str):
    benchmark = get_object_or_404(Benchmark, slug=slug)
    form = UploadStartForm(user=request.user, benchmark=benchmark)
    return render(
        request,
        "uploads/submit.html",
        {
            "benchmark": benchmark,
            "plugin": get_plugin(benchmark.plugin),
            # A benchmark takes runs once it is imported: its tasks and its judge come with it.
            "not_imported": not benchmark.tasks.exists() or not benchmark.judges.exists(),
            "form": form,
            "has_team": teams_of(user=request.user).exists(),
            "method": "s3" if storage_is_s3() else "chunked",
            "recent": uploads_visible_to(user=request.user)
            .filter(benchmark=benchmark)
            .select_related("team", "submission")[:10],
        },
    )


def _named_errors(form) -> list[str]:
    """Every error of a form with the field it is about ("Judge: This field is required.")."""
    named = []
    for field, errors in form.errors.items():
        label = form.fields[field].label if field in form.fields else ""
        label = label or (field.replace("_", " ").capitalize() if field != "__all__" else "")
        named += [f"{label}: {error}" if label else str(error) for error in errors]
    return named


@_login_required_json
@require_POST
def upload_start(request, slug: str):
    benchmark = get_object_or_404(Benchmark, slug=slug)
    form = UploadStartForm(request.POST, user=request.user, benchmark=benchmark)
    if not form.is_valid():
        errors = {field: [str(e) for e in errs] for field, errs in form.errors.items()}
        first = _named_errors(form)[0]
        status = 403 if "team" in errors and form.data.get("team") else 400
        return JsonResponse(
            {"error": first, "errors": errors, "messages": _named_errors(form)}, status=status
        )
    data = form.cleaned_data
    try:
        upload = services.upload_start(
            user=request.user,
            team=data["team"],
            benchmark=benchmark,
            filename=data["filename"] or "bundle.zip",
            size=data["size"],
            system_name=data["system_name"],
            system_type=data.get("system_type", ""),
            options=form.options(),
            judge=data["judge"],
            allow_partial=data["allow_partial"],
            publish=data["publish"],
        )
    except LimitReached as exc:
        return _limit_json(exc)
    except services.UploadError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    return JsonResponse(_state(upload), status=201)


@_login_required_json
@require_GET
def upload_state(request, pk):
    """How far the upload got; once it is being finished, how the finish goes (polled)."""
    upload = _own_upload(request, pk)
    state = _state(upload)
    if upload.status != Upload.Status.UPLOADING or upload.error:
        state["outcome"] = _outcome(request, upload)
    response = JsonResponse(state)
    response["Cache-Control"] = "no-store"
    return response


@_login_required_json
@require_http_methods(["PUT"])
def upload_chunk(request, pk):
    upload = _own_upload(request, pk)
    try:
        offset = int(request.GET["offset"])
        length = int(request.META["CONTENT_LENGTH"])
    except (KeyError, ValueError):
        return JsonResponse(
            {"error": "send ?offset=<first byte> and a Content-Length header"}, status=400
        )
    try:
        received = services.upload_chunk_append(
            upload=upload, offset=offset, length=length, stream=request
        )
    except services.ChunkOutOfOrder as exc:
        return JsonResponse({"error": str(exc), "received": exc.received}, status=exc.status)
    except services.UploadError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    return JsonResponse({"received": received, "size": upload.size})


@_login_required_json
@require_POST
def upload_parts(request, pk):
    upload = _own_upload(request, pk)
    try:
        body = loads_bounded(request.body or b"{}", max_depth=4, max_values=S3_MAX_PARTS + 10)
        numbers = [int(n) for n in body.get("parts", [])]
    except (ValueError, TypeError, AttributeError, OverflowError):
        return JsonResponse({"error": 'send {"parts": [part numbers]}'}, status=400)
    try:
        urls = services.upload_part_urls(upload=upload, numbers=numbers)
    except services.UploadError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    return JsonResponse({"urls": {str(n): url for n, url in urls.items()}})


def _wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "")


@_login_required_json
@require_POST
def upload_finish(request, pk):
    """Queue the finish. A JSON client gets 202 and polls the state URL until the upload is
    accepted, rejected or open again with the reason; with eager Celery (tests, one-process
    setups) the outcome is already there and answered as before: 200, 422, or the error."""
    upload = _own_upload(request, pk)
    try:
        upload = services.upload_finish_request(upload=upload)
    except LimitReached as exc:
        if not _wants_json(request):
            return HttpResponseRedirect(reverse("upload-detail", args=[upload.pk]))
        return _limit_json(exc)
    except services.UploadError as exc:
        if not _wants_json(request):
            return HttpResponseRedirect(reverse("upload-detail", args=[upload.pk]))
        # The reason this request failed, not the error stored by an earlier finish.
        return JsonResponse({**_state(upload), "error": str(exc)}, status=exc.status)
    upload.refresh_from_db()
    if not _wants_json(request):
        target = (
            reverse("submission", args=[upload.submission_id])
            if upload.status == Upload.Status.ACCEPTED and upload.submission_id
            else reverse("upload-detail", args=[upload.pk])
        )
        return HttpResponseRedirect(target)
    return JsonResponse(_outcome(request, upload), status=_outcome_status(upload))


def _outcome_status(upload: Upload) -> int:
    if upload.status in services.FINISHING:
        return 202
    if upload.status == Upload.Status.ACCEPTED:
        return 200
    if upload.status == Upload.Status.REJECTED:
        return 422
    # Open again: the worker's finish failed and said why.
    return 500 if upload.error in (services.FINISH_FAILED, services.QUEUE_FAILED) else 409


def _outcome(request, upload: Upload) -> dict:
    """What the page needs once a finish is over: where to go, or what was wrong."""
    outcome = {
        "status": upload.status,
        "finishing": upload.status in services.FINISHING,
        "submission": upload.submission_id,
        "error": upload.error,
        "state": reverse("upload-state", args=[upload.pk]),
    }
    if upload.status == Upload.Status.ACCEPTED and upload.submission_id:
        outcome["redirect"] = reverse("submission", args=[upload.submission_id])
    elif not outcome["finishing"]:
        outcome["redirect"] = reverse("upload-detail", args=[upload.pk])
    if upload.status == Upload.Status.REJECTED or (upload.is_open and upload.report):
        outcome["report_html"] = render_to_string("uploads/_report.html", _report(upload), request)
    return outcome


@_login_required_json
@require_POST
def upload_cancel(request, pk):
    upload = _own_upload(request, pk)
    try:
        upload = services.upload_cancel(upload=upload)
    except services.UploadError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    return JsonResponse(_state(upload))


def _report(upload: Upload) -> dict:
    report = upload.report or {}
    return {
        "upload": upload,
        "rows": report_rows(report.get("problems", [])),
        "warnings": report_rows(report.get("warnings", [])),
    }


@login_required
@require_GET
def upload_detail(request, pk):
    upload = (
        uploads_visible_to(user=request.user)
        .select_related("benchmark", "team", "user", "judge", "submission")
        .filter(pk=pk)
        .first()
    )
    if upload is None:
        raise Http404("no such upload")
    return render(
        request,
        "uploads/detail.html",
        {**_report(upload), "can_finish": upload.is_open and upload.user_id == request.user.pk},
    )
