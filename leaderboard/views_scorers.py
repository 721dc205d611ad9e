"""Each benchmark's scorer changelog: every scorer (rules, processing, judge, prompts) each of
its judges has had, what changed and why, and how many rows were scored with an older one;
staff write the "why" and re-score the whole board in one action (judges-manage's re-score)."""

from __future__ import annotations

from django import forms
from django.http import HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark, Score, ScorerVersion
from evaluation.scorer import PART_LABELS, current_scorer, fingerprint, older_parts
from evaluation.selectors import submissions_visible_to


class NoteForm(forms.Form):
    version = forms.IntegerField()
    note = forms.CharField(required=False, max_length=5000, widget=forms.Textarea)


def _judges(benchmark: Benchmark, user) -> list[dict]:
    visible = submissions_visible_to(user=user).filter(benchmark=benchmark, is_reported=False)
    found = []
    for judge in benchmark.judges.order_by("-is_official", "slug"):
        current = current_scorer(benchmark=benchmark, judge=judge)
        older = 0
        for scorer in Score.objects.filter(
            judge=judge, submission__in=visible.values("pk")
        ).values_list("scorer", flat=True):
            older += bool(older_parts(scorer, current))
        found.append(
            {
                "judge": judge,
                "current": fingerprint(current),
                "identity": current,
                "older_rows": older,
                "entries": list(
                    ScorerVersion.objects.filter(benchmark=benchmark, judge=judge).order_by(
                        "-first_seen_at", "-pk"
                    )
                ),
            }
        )
    return found


@require_http_methods(["GET", "POST"])
def scorer_changelog(request, slug: str):
    benchmark = get_object_or_404(Benchmark, slug=slug)
    form = NoteForm()
    if request.method == "POST":
        if not request.user.is_authenticated or not request.user.is_staff:
            return HttpResponseForbidden("The changelog's notes are written by staff only.")
        form = NoteForm(request.POST)
        if form.is_valid():
            ScorerVersion.objects.filter(
                benchmark=benchmark, pk=form.cleaned_data["version"]
            ).update(note=form.cleaned_data["note"].strip())
            return redirect(reverse("scorer-changelog", args=[slug]) + "#changelog")
    return render(
        request,
        "leaderboard/scorers.html",
        {
            "benchmark": benchmark,
            "plugin": get_plugin(benchmark.plugin),
            "judges": _judges(benchmark, request.user),
            "part_labels": PART_LABELS,
            "staff": request.user.is_authenticated and request.user.is_staff,
        },
        status=400 if form.errors else 200,
    )
