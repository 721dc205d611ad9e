"""The rater's pages and endpoints, reached through an invite link. Blind by construction: they
render only what annotation.selectors.rater_item returns, and answer JSON with no item data."""

from __future__ import annotations

import wave

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from evaluation.jsonbounds import JsonRefused, loads_bounded, non_finite_path

from . import assignment as rating
from . import audio, selectors, services
from .models import Rater, Study, item_clip

MAX_BODY = 256 * 1024
# {"events": [{...}], "positions": {...}} nests three levels.
MAX_BODY_DEPTH = 8


class Withdrawn(Exception):
    """The invite link exists but staff withdrew it."""


def _rater(request, token: str) -> Rater:
    rater = selectors.rater_by_token(token=token)
    if rater is None:
        if selectors.rater_withdrawn(token=token):
            raise Withdrawn
        raise Http404("this invite link is not valid")
    if rater.user_id is not None and request.user.pk != rater.user_id:
        raise PermissionError
    return rater


def _withdrawn_page(request):
    """A withdrawn link says so, in the rater's own layout (no bare 404)."""
    wants_json = request.method == "POST" or "application/json" in request.headers.get("Accept", "")
    if wants_json:
        return JsonResponse(
            {"ok": False, "error": "this invite link has been withdrawn"}, status=410
        )
    return render(request, "annotation/rate_withdrawn.html", status=410)


def _with_rater(view):
    def wrapped(request, token: str, *args, **kwargs):
        try:
            rater = _rater(request, token)
        except PermissionError:
            return redirect_to_login(request.get_full_path())
        except Withdrawn:
            return _withdrawn_page(request)
        return view(request, rater, *args, **kwargs)

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


def _labels(study: Study) -> list[dict]:
    return [
        {"key": "1", "value": study.positive_label, "text": study.positive_label.capitalize()},
        {"key": "2", "value": study.negative_label, "text": study.negative_label.capitalize()},
        {"key": "0", "value": rating.MISSING, "text": "Can't judge: audio problem"},
    ]


@never_cache
@require_GET
@_with_rater
def rate(request, rater: Rater):
    """The invite link: the item the rater is on, or the page before or between batches."""
    study = rater.study
    current = rating.rater_current(rater=rater) if study.status == Study.Status.OPEN else None
    guideline = selectors.current_guideline(study=study)
    progress = rating.rater_progress(rater=rater, assignment=current)
    context = {
        "study_name": selectors.study_title_for_raters(study=study),
        "guideline": guideline,
        "progress": progress,
    }
    if current is None:
        context["is_open"] = study.status == Study.Status.OPEN
        context["start_url"] = reverse("annotation:rate-start", args=[rater.token])
        # A batch is offered only when there is something to put in it.
        context["nothing_left"] = context["is_open"] and rating.items_left(rater=rater) == 0
        previous = rating.assignment_previous(rater=rater, assignment=None)
        if previous is not None and rating.revisable(rater=rater, assignment=previous):
            context["back_url"] = reverse(
                "annotation:rate-review", args=[rater.token, previous.code]
            )
        return render(request, "annotation/rate_between.html", context)
    return _item_page(request, rater, current, guideline, progress, review=False)


def _item_page(request, rater: Rater, current, guideline, progress, *, review: bool):
    """The item page: a new item to rate, or (review) one submitted earlier in the batch, its
    stored answer chosen, to change."""
    study = rater.study
    item = selectors.rater_item(assignment=current)
    previous = rating.assignment_previous(rater=rater, assignment=current)
    back_url = (
        reverse("annotation:rate-review", args=[rater.token, previous.code])
        if previous is not None and rating.revisable(rater=rater, assignment=previous)
        else ""
    )
    stored = getattr(current, "rating", None) if review else None
    if review:
        following = rating.assignment_next_submitted(rater=rater, assignment=current)
        next_url = (
            reverse("annotation:rate-review", args=[rater.token, following.code])
            if following is not None
            else reverse("annotation:rate", args=[rater.token])
        )
        submit_url = reverse("annotation:rate-revise", args=[rater.token, current.code])
    else:
        next_url = reverse("annotation:rate", args=[rater.token])
        submit_url = reverse("annotation:rate-submit", args=[rater.token, current.code])
    page_state = {
        "code": item["code"],
        "eventsUrl": reverse("annotation:rate-events", args=[rater.token, current.code]),
        "submitUrl": submit_url,
        "nextUrl": next_url,
        "backUrl": back_url,
        "review": review,
        "guidelineVersion": guideline.version,
        "labels": _labels(study),
        "draftLabel": (stored.label or rating.MISSING) if stored else item["draft_label"],
        "comment": stored.comment if stored else "",
        "flagged": stored.flagged if stored else False,
        "heardResponse": item["heard_response"] or review,
        "positions": item["positions"],
        "requirePlay": study.require_play_through and item["has_response_audio"] and not review,
        # A break reminder after this much active time in one batch (minutes).
        "breakMinutes": settings.RATER_BREAK_MINUTES,
        "batchKey": f"{current.batch_id}",
        "batchActiveMs": rating.batch_active_ms(batch=current.batch),
    }
    clips = [
        {
            **clip,
            "url": audio.audio_url(assignment=current, which=clip["name"]),
            "peaks": audio.peaks_url(assignment=current, which=clip["name"]),
            "renew": audio.renew_url(assignment=current, which=clip["name"]),
            "expires": audio.audio_lifetime_seconds(study),
        }
        for clip in item["clips"]
    ]
    context = {
        "study_name": selectors.study_title_for_raters(study=study),
        "guideline": guideline,
        "progress": progress,
        "item": item,
        "labels": _labels(study),
        "page_state": page_state,
        "clips": clips,
        "review": review,
        "back_url": back_url,
    }
    return render(request, "annotation/rate_item.html", context)


@never_cache
@require_GET
@_with_rater
def rate_review(request, rater: Rater, code: str):
    """An item the rater submitted earlier in their latest batch, to look at or change."""
    found = (
        rater.assignments.select_related("item", "batch", "rating")
        .filter(code=code, status="submitted")
        .first()
    )
    if found is None or not rating.revisable(rater=rater, assignment=found):
        return redirect("annotation:rate", rater.token)
    guideline = selectors.current_guideline(study=rater.study)
    progress = rating.rater_progress(rater=rater, assignment=found)
    return _item_page(request, rater, found, guideline, progress, review=True)


@never_cache
@require_POST
@_with_rater
def rate_revise(request, rater: Rater, code: str):
    try:
        body = _json_body(request)
        rating.assignment_revise(
            rater=rater,
            code=code,
            label=body.get("label"),
            page=body.get("page", "revise"),
            events=body.get("events", []),
            comment=body.get("comment"),
            flagged=body.get("flagged"),
        )
    except rating.RatingError as error:
        return _refusal(error)
    return JsonResponse({"ok": True, "stored": True})


@require_POST
@_with_rater
def rate_start(request, rater: Rater):
    if rater.study.status != Study.Status.OPEN:
        return redirect("annotation:rate", rater.token)
    try:
        current = rating.rater_current(rater=rater, start=True)
    except rating.RatingError as error:
        return render(
            request,
            "annotation/rate_between.html",
            {
                "study_name": selectors.study_title_for_raters(study=rater.study),
                "error": str(error),
                "is_open": False,
            },
            status=409,
        )
    if current is None:
        return render(
            request,
            "annotation/rate_between.html",
            {
                "study_name": selectors.study_title_for_raters(study=rater.study),
                "nothing_left": True,
                "is_open": True,
                "progress": rating.rater_progress(rater=rater, assignment=None),
            },
        )
    return redirect("annotation:rate", rater.token)


def _json_body(request) -> dict:
    if len(request.body) > MAX_BODY:
        raise rating.RatingError("request too large")
    try:
        body = loads_bounded(request.body or b"{}", max_depth=MAX_BODY_DEPTH)
    except JsonRefused as error:
        raise rating.RatingError(f"the request body {error}") from None
    except ValueError:
        raise rating.RatingError("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise rating.RatingError("the request body must be a JSON object")
    where = non_finite_path(body)
    if where:
        raise rating.RatingError(f"{where} is NaN or Infinity; send a finite number")
    return body


def _refusal(error: rating.RatingError) -> JsonResponse:
    status = 410 if isinstance(error, rating.AssignmentGone) else 400
    return JsonResponse({"ok": False, "error": str(error)}, status=status)


@never_cache
@require_POST
@_with_rater
def rate_events(request, rater: Rater, code: str):
    try:
        body = _json_body(request)
        rating.assignment_record(
            rater=rater,
            code=code,
            page=body.get("page", ""),
            events=body.get("events", []),
            active_ms=body.get("active_ms"),
            positions=body.get("positions"),
        )
    except rating.RatingError as error:
        return _refusal(error)
    return JsonResponse({"ok": True})


@never_cache
@require_POST
@_with_rater
def rate_submit(request, rater: Rater, code: str):
    try:
        body = _json_body(request)
        stored, created = rating.assignment_submit(
            rater=rater,
            code=code,
            label=body.get("label"),
            guideline_version=body.get("guideline_version"),
            page=body.get("page", "submit"),
            events=body.get("events", []),
            active_ms=body.get("active_ms"),
            comment=body.get("comment"),
            flagged=body.get("flagged"),
        )
    except rating.RatingError as error:
        return _refusal(error)
    return JsonResponse(
        {
            "ok": True,
            "stored": created,
            "next": reverse("annotation:rate", args=[rater.token]),
            # Gold items teach: the rater sees the expected answer before going on.
            "feedback": rating.gold_feedback(rating=stored),
        }
    )


def _clip(token: str) -> tuple[str, str]:
    assignment, which = audio.audio_assignment(token)
    clip = item_clip(assignment.item, which)
    if clip is None or not clip.get("key"):
        raise Http404("no such clip")
    return clip["key"], clip["sha256"]


@require_GET
def rater_audio(request, token: str):
    key, _ = _clip(token)
    return audio.ranged_response(request, key)


@never_cache
@require_GET
def rater_audio_renew(request, token: str):
    """Fresh URLs for a clip of an item that is still the rater's (a page left open)."""
    assignment, which = audio.audio_assignment(token, renewing=True)
    return JsonResponse(
        {
            "url": audio.audio_url(assignment=assignment, which=which),
            "peaks": audio.peaks_url(assignment=assignment, which=which),
            "renew": audio.renew_url(assignment=assignment, which=which),
            "expires_in": audio.audio_lifetime_seconds(assignment.rater.study),
        }
    )


@require_GET
def rater_audio_peaks(request, token: str):
    key, _ = _clip(token)
    try:
        buckets = int(request.GET.get("buckets", 1000))
    except ValueError:
        buckets = 1000
    try:
        peaks = audio.item_peaks(key=key, buckets=buckets)
    except (wave.Error, EOFError) as error:
        return JsonResponse({"error": f"not a PCM WAV file: {error}"}, status=422)
    response = JsonResponse(peaks)
    response["Cache-Control"] = "private, max-age=3600"
    return response


@login_required
def study_join(request, slug: str):
    """A signed-in user joins a study that takes account raters, and goes to its queue."""
    study = get_object_or_404(Study, slug=slug)
    try:
        rater = services.rater_for_user(study=study, user=request.user)
    except services.OwnWorkExcluded as error:
        return render(
            request,
            "annotation/rate_between.html",
            {
                "study_name": selectors.study_title_for_raters(study=study),
                "error": str(error),
                "is_open": False,
            },
            status=403,
        )
    except services.StudyError as error:
        raise Http404(str(error)) from None
    return redirect("annotation:rate", rater.token)
