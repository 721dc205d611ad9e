"""Audio for raters: signed, rater-scoped URLs that name only an assignment (never a
submission, system or storage key), served from storage with HTTP Range support, and the
waveform peaks the player draws. On S3 the bytes are proxied, not redirected to, because a
presigned URL would carry the storage key (and with it the submission)."""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.http import Http404, HttpResponse
from django.urls import reverse

from evaluation.stored import peak_buckets, stored_peaks
from evaluation.stored import ranged_response as stored_ranged_response

from .models import Assignment, Item, item_clip

SALT = "annotation.rater-audio"


def _token(assignment: Assignment, which: str) -> str:
    return signing.TimestampSigner(salt=SALT).sign_object(
        {"r": assignment.rater_id, "a": assignment.code, "w": which}
    )


def audio_url(*, assignment: Assignment, which: str) -> str:
    return reverse("annotation:rater-audio", args=[_token(assignment, which)])


def peaks_url(*, assignment: Assignment, which: str) -> str:
    return reverse("annotation:rater-audio-peaks", args=[_token(assignment, which)])


def audio_lifetime_seconds(study) -> int:
    """As long as the rater keeps the item, and never shorter than the site's signed URLs."""
    return max(settings.SIGNED_URL_SECONDS, study.lock_minutes * 60)


def audio_assignment(token: str) -> tuple[Assignment, str]:
    """The assignment and which clip a token grants; Http404 for anything not valid now."""
    try:
        payload = signing.TimestampSigner(salt=SALT).unsign_object(token, max_age=None)
        assignment = (
            Assignment.objects.select_related("item", "rater__study")
            .filter(code=payload["a"], rater_id=payload["r"])
            .first()
        )
        which = payload["w"]
    except (signing.BadSignature, KeyError, TypeError):
        raise Http404("no such clip") from None
    if (
        assignment is None
        or item_clip(assignment.item, which) is None
        or Item.objects.filter(pk=assignment.item_id, task_result__task__held_out=True).exists()
    ):
        raise Http404("no such clip")
    try:
        signing.TimestampSigner(salt=SALT).unsign_object(
            token, max_age=audio_lifetime_seconds(assignment.rater.study)
        )
    except signing.SignatureExpired:
        raise Http404("this clip link has expired; reload the page") from None
    if not assignment.rater.is_active or assignment.status == Assignment.Status.RELEASED:
        raise Http404("no such clip")
    return assignment, which


def ranged_response(request, key: str) -> HttpResponse:
    """The clip's bytes, proxied (never a presigned URL, which would carry the key)."""
    response = stored_ranged_response(request, key, named=False)
    response["Cache-Control"] = "private, max-age=3600"
    return response


def item_peaks(*, key: str, buckets: int) -> dict:
    return stored_peaks(name=key, buckets=peak_buckets(buckets))
