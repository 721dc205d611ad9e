"""Staff pages: studies, their set-up, the dashboard, exports and frozen snapshots."""

from __future__ import annotations

from functools import wraps

import plotly
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.views import redirect_to_login
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseBadRequest, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from evaluation.benchmarks import registry
from evaluation.exports import csv_lines
from evaluation.models import Benchmark

from . import calibration, charts, selectors, services
from . import figures as figures_module
from .forms import CheckItemForm, GuidelineForm, InviteForm, StudyForm, study_choice
from .models import Study


def staff_member_required(view):
    """Staff only: anyone signed out goes to the site's own login (then back here); a signed-in
    account that is not staff gets 403."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("Rating studies are run by staff.")
        return view(request, *args, **kwargs)

    return wrapped


FIGURES_CACHE_SECONDS = 24 * 3600


@staff_member_required
def study_list(request):
    return render(request, "annotation/study_list.html", {"studies": selectors.studies_for_staff()})


@staff_member_required
def study_new(request):
    """First the benchmark and the kind of item (a GET form: the page reloads with the
    benchmark's judges, submissions, languages and the kind's labels and guideline), then the
    study itself."""
    posted = request.method == "POST"
    benchmark, kind = study_choice(request.POST if posted else request.GET, user=request.user)
    if benchmark is None:
        if posted:
            return HttpResponseBadRequest("choose a benchmark first", content_type="text/plain")
        return render(request, "annotation/study_new.html", {"choices": _study_choices()})
    form = StudyForm(
        request.POST if posted else None, user=request.user, benchmark=benchmark, kind=kind
    )
    if posted and form.is_valid():
        try:
            study = services.study_create(plan=form.plan(), created_by=request.user)
        except services.StudyError as error:
            form.add_error(None, str(error))
        else:
            count = study.items.count()
            messages.success(
                request, f"Study created with {count} item{'s' if count != 1 else ''}."
            )
            # Published strata: the dashboard says so, once, on every visit.
            return redirect("annotation:study", study.slug)
    context = {"form": form, "choices": _study_choices(), "benchmark": benchmark, "kind": kind}
    return render(request, "annotation/study_new.html", context)


def _study_choices() -> list[tuple[Benchmark, list]]:
    """Each benchmark that offers rating studies, with its kinds of item."""
    return [
        (benchmark, registry()[benchmark.plugin].study_kinds)
        for benchmark in Benchmark.objects.order_by("name")
        if registry()[benchmark.plugin].study_kinds
    ]


def _invite_url(request, rater) -> str:
    return request.build_absolute_uri(reverse("annotation:rate", args=[rater.token]))


def live_figures(*, study: Study) -> tuple[dict, int]:
    """The study's figures from its ratings as they stand, computed (never stored: a snapshot
    is taken only when asked for, or when the study closes) and cached by those very inputs."""
    ratings = selectors.study_rating_rows(study=study)
    parameters = figures_module.parameters(study=study)
    key = "study-figures:" + services.inputs_sha256(ratings=ratings, parameters=parameters)
    computed = cache.get(key)
    if computed is None:
        computed = figures_module.compute(study=study, ratings=ratings, parameters=parameters)
        cache.set(key, computed, FIGURES_CACHE_SECONDS)
    return computed, len(ratings)


@staff_member_required
def study_dashboard(request, slug: str):
    study = get_object_or_404(Study.objects.select_related("benchmark", "judge"), slug=slug)
    public = selectors.public_strata(study=study)
    figures, rating_count = live_figures(study=study)
    names = selectors.stratum_names(study=study, user=request.user)
    names = {str(key): value for key, value in names.items()}
    raters = selectors.study_raters(study=study)
    for rater in raters:
        rater.invite_url = _invite_url(request, rater)
    return render(
        request,
        "annotation/dashboard.html",
        {
            "study": study,
            "rater_title": selectors.study_title_for_raters(study=study),
            "progress": selectors.study_progress(study=study),
            "guideline": selectors.current_guideline(study=study),
            "raters": raters,
            "rating_count": rating_count,
            "snapshots": list(study.snapshots.order_by("-created_at")[:10]),
            "public_strata": public,
            "public_strata_warning": selectors.public_strata_warning(public) if public else "",
            "remarks": selectors.study_remarks(study=study),
            "parameters": figures_module.parameters(study=study),
            "figures": figures,
            "strata_rows": _strata_rows(figures["all_raters"], names),
            "rater_rows": figures["all_raters"]["raters"],
            "without": figures["without_excluded"],
            "without_strata_rows": _strata_rows(figures["without_excluded"], names)
            if figures["without_excluded"]
            else [],
            "charts_json": charts.dashboard_charts(figures, names) if rating_count else None,
            "plotly_url": reverse("plotly-js", args=[plotly.__version__]),
            "guideline_form": GuidelineForm(),
            "invite_form": InviteForm(),
            "check_form": CheckItemForm(study=study, user=request.user),
            "checks": study.items.exclude(role="sample").order_by("role", "task_id"),
            "stratum_names": names,
            **_calibration_context(request, study),
        },
    )


def _width(params) -> tuple[float, str]:
    """The planning form's target width (percentage points, or the metric's unit), with the
    problem when the one asked for is not a usable number."""
    raw = params.get("width", "")
    if raw in ("", None):
        return calibration.DEFAULT_WIDTH_PP, ""
    try:
        width = float(raw)
    except ValueError:
        return calibration.DEFAULT_WIDTH_PP, f"the target width {raw!r} is not a number"
    if not 0 < width <= 100 or width != width:
        return calibration.DEFAULT_WIDTH_PP, "the target width must be above 0 and at most 100"
    return width, ""


def _calibration_context(request, study: Study) -> dict:
    if not study.calibrated_metric:
        return {"calibration": None}
    width, problem = _width(request.GET)
    plugin = registry()[study.benchmark.plugin]
    try:
        declared, _ = calibration.core.declared_metric(plugin, study.calibrated_metric)
    except calibration.core.CalibrationError as error:
        # The plug-in no longer declares it: the page says so rather than failing.
        return {"calibration": None, "calibration_problem": str(error)}
    plan = calibration.calibration_plan(study=study, width_pp=width)
    return {
        "calibration": {
            "metric": calibration.core.metric_label(plugin, study.calibrated_metric),
            "key": study.calibrated_metric,
            "width": width,
            "width_problem": problem,
            "plan": plan,
            "draw": "tasks" if declared.unit == "task" else "units",
            "to_add": sum(row["extend"] for row in plan),
            "minimum": calibration.core.MIN_LABELLED,
            "can_extend": _may_extend(request.user, study),
        }
    }


def _may_extend(user, study: Study) -> bool:
    return user.is_authenticated and (user.is_staff or study.created_by_id == user.pk)


@require_POST
def study_extend(request, slug: str):
    """Add to each stratum of a calibration study the units the planning table says it needs
    for the target width (the study's staff or its owner)."""
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("annotation:study", args=[slug]))
    study = get_object_or_404(Study.objects.select_related("benchmark", "judge"), slug=slug)
    if not _may_extend(request.user, study):
        raise PermissionDenied("Only staff or the study's owner extend it.")
    width, problem = _width(request.POST)
    if problem:
        messages.error(request, problem)
        return redirect("annotation:study", slug)
    try:
        plan = calibration.calibration_plan(study=study, width_pp=width)
        added = calibration.calibration_extend(
            study=study, counts={row["submission"].pk: row["extend"] for row in plan}
        )
    except (services.StudyError, calibration.core.CalibrationError) as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request, f"Added {added} item{'s' if added != 1 else ''} for a {width:g}-wide interval."
        )
    return redirect(f"{reverse('annotation:study', args=[slug])}?width={width:g}#calibration")


def _strata_rows(report: dict, names: dict[str, str]) -> list[dict]:
    return [
        {"name": names.get(key, f"stratum {key}"), **value}
        for key, value in report["by_stratum"].items()
    ]


def _study_for_post(slug: str) -> Study:
    return get_object_or_404(Study, slug=slug)


@staff_member_required
@require_POST
def study_status(request, slug: str):
    study = _study_for_post(slug)
    status = request.POST.get("status", "")
    try:
        services.study_set_status(study=study, status=status)
    except services.StudyError as error:
        messages.error(request, str(error))
    else:
        if status == Study.Status.CLOSED:
            # The figures a closed study reports are frozen with it, to cite.
            snapshot = services.snapshot_freeze(study=study, created_by=request.user)
            messages.success(request, f"Closed; its figures are frozen as {snapshot.sha256[:12]}.")
    return redirect("annotation:study", slug)


@staff_member_required
@require_POST
def study_snapshot(request, slug: str):
    """Freeze the ratings as they stand with their figures: a snapshot to cite."""
    study = _study_for_post(slug)
    snapshot = services.snapshot_freeze(study=study, created_by=request.user)
    return redirect("annotation:snapshot", slug, snapshot.sha256)


@staff_member_required
@require_POST
def study_guideline(request, slug: str):
    study = _study_for_post(slug)
    form = GuidelineForm(request.POST)
    if form.is_valid():
        guideline = services.guideline_publish(
            study=study, text=form.cleaned_data["text"], created_by=request.user
        )
        messages.success(request, f"Raters now see guideline v{guideline.version}.")
    else:
        messages.error(request, "The guideline text is empty.")
    return redirect("annotation:study", slug)


@staff_member_required
@require_POST
def study_invite(request, slug: str):
    study = _study_for_post(slug)
    form = InviteForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Ask for between 1 and 200 invite links.")
        return redirect("annotation:study", slug)
    count, name = form.cleaned_data["count"], form.cleaned_data["name"]
    for number in range(count):
        label = f"{name} {number + 1}" if name and count > 1 else name
        services.rater_invite(study=study, name=label)
    username = request.POST.get("username", "").strip()
    if username:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            messages.error(request, f"No account named {username!r}.")
        else:
            services.rater_invite(study=study, name=username, user=user)
    messages.success(request, f"{count} invite link{'s' if count != 1 else ''} added.")
    return redirect("annotation:study", slug)


@staff_member_required
@require_POST
def study_rater(request, slug: str, rater_id: int):
    study = _study_for_post(slug)
    rater = get_object_or_404(study.raters, pk=rater_id)
    action = request.POST.get("action")
    changes = {
        "exclude": {"is_excluded": True},
        "include": {"is_excluded": False},
        "withdraw": {"is_active": False},
        "restore": {"is_active": True},
    }
    if action not in changes:
        raise Http404("unknown action")
    services.rater_update(rater=rater, **changes[action])
    return redirect("annotation:study", slug)


@staff_member_required
@require_POST
def study_check_item(request, slug: str):
    study = _study_for_post(slug)
    form = CheckItemForm(request.POST, study=study, user=request.user)
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.check_item_add(
                study=study,
                role=data["role"],
                submission=data["submission"],
                task_id=data["task_id"].strip(),
                expected_label=data["expected_label"],
                instruction=data["instruction"],
            )
        except services.StudyError as error:
            messages.error(request, str(error))
        else:
            messages.success(request, f"{data['role'].capitalize()} item added.")
    else:
        messages.error(request, f"Check item not added: {form.errors.as_text()}")
    return redirect("annotation:study", slug)


# --- Exports and snapshots --------------------------------------------------------------------


@staff_member_required
def study_export_csv(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    rows = selectors.study_rating_rows(study=study)
    fields = selectors.EXPORT_FIELDS
    lines = (["" if row[f] is None else row[f] for f in fields] for row in rows)
    response = StreamingHttpResponse(
        csv_lines(fields, lines), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-ratings.csv"'
    return response


@staff_member_required
def study_export_json(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    response = JsonResponse(
        {
            "study": study.slug,
            "labels": list(study.labels),
            "kind": study.kind,
            "judge": study.judge.slug,
            "ratings": selectors.study_rating_rows(study=study),
        },
        json_dumps_params={"ensure_ascii": False},
    )
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-ratings.json"'
    return response


@staff_member_required
def snapshot_page(request, slug: str, sha256: str):
    study = get_object_or_404(Study, slug=slug)
    snapshot = get_object_or_404(study.snapshots, sha256=sha256)
    names = {str(k): v for k, v in selectors.stratum_names(study=study, user=request.user).items()}
    figures = snapshot.figures
    without = figures.get("without_excluded")
    return render(
        request,
        "annotation/snapshot.html",
        {
            "study": study,
            "snapshot": snapshot,
            "figures": figures,
            "strata_rows": _strata_rows(figures["all_raters"], names),
            "without": without,
            "without_strata_rows": _strata_rows(without, names) if without else [],
        },
    )


@staff_member_required
def snapshot_json(request, slug: str, sha256: str):
    study = get_object_or_404(Study, slug=slug)
    snapshot = get_object_or_404(study.snapshots, sha256=sha256)
    response = JsonResponse(
        {
            "study": study.slug,
            "sha256": snapshot.sha256,
            "created_at": snapshot.created_at.isoformat(),
            "parameters": snapshot.parameters,
            "ratings": snapshot.ratings,
            "figures": snapshot.figures,
        },
        json_dumps_params={"ensure_ascii": False},
    )
    response["Content-Disposition"] = (
        f'attachment; filename="{study.slug}-snapshot-{snapshot.sha256[:12]}.json"'
    )
    return response
