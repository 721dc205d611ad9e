"""Reads for rating studies: the long-format ratings table, progress, and what a rater sees."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet
from django.db.models.fields.json import KT
from django.utils import timezone

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark
from evaluation.selectors import submissions_visible_to

from .models import Assignment, Item, Rater, Rating, Study


def study_title_for_raters(*, study: Study) -> str:
    """The title raters see: the one the owner wrote for them, else the benchmark and the kind
    of item they label; never the owner's own title (it may say what the study suspects)."""
    if study.rater_title:
        return study.rater_title
    plugin = get_plugin(study.benchmark.plugin)
    kind = next((k.label for k in plugin.study_kinds if k.key == study.kind), study.kind)
    return f"{study.benchmark.name}: {kind}"


def task_languages(*, benchmark: Benchmark) -> list[str]:
    """The languages of a benchmark's tasks, where its plug-in says which spec key names one."""
    key = get_plugin(benchmark.plugin).task_language
    if not key:
        return []
    found = benchmark.tasks.annotate(language=KT(f"spec__{key}")).values_list("language", flat=True)
    return sorted({language for language in found.distinct() if language})


EXPORT_FIELDS = (
    "study",
    "item",
    "task_id",
    "role",
    "stratum",
    "system",
    "batch",
    "rater",
    "rater_name",
    "rater_excluded",
    "label",
    "missing_reason",
    "judge",
    "expected",
    "rater_batch",
    "position",
    "guideline_version",
    "shown_at",
    "submitted_at",
    "time_on_task_ms",
    "label_changes",
    "first_label",
    "response_played_through",
    "slot",
    "audio_sha256",
    "comment",
    "flagged",
    "revised_at",
)


def _iso(moment) -> str | None:
    return moment.isoformat() if moment else None


def item_batches(*, study: Study) -> dict[int, int]:
    """Each item's study batch: items first handed out together (in one rater's batch) form
    one batch, numbered in the order those batches were claimed."""
    first: dict[int, int] = {}
    for item_id, batch_id in (
        Assignment.objects.filter(item__study=study)
        .order_by("created_at", "pk")
        .values_list("item_id", "batch_id")
    ):
        first.setdefault(item_id, batch_id)
    numbers: dict[int, int] = {}
    for batch_id in first.values():
        numbers.setdefault(batch_id, len(numbers) + 1)
    return {item_id: numbers[batch_id] for item_id, batch_id in first.items()}


def study_rating_rows(*, study: Study) -> list[dict]:
    """Every rating of the study, one row each (long format), in a stable order. Carries what
    the figures need (item role, stratum, batch, judge verdict, expected label), so a snapshot
    of these rows can be recomputed without the database."""
    batches = item_batches(study=study)
    ratings = (
        Rating.objects.filter(item__study=study)
        .select_related("item", "rater", "guideline", "assignment__batch", "item__stratum__system")
        .order_by("item__code", "rater_id")
    )
    rows = []
    for rating in ratings:
        item = rating.item
        stratum = item.stratum
        rows.append(
            {
                "study": study.slug,
                "item": item.code,
                "task_id": item.task_id,
                "role": item.role,
                "stratum": stratum.pk if stratum else None,
                "system": stratum.system.name if stratum else None,
                "batch": batches.get(item.pk),
                "rater": rating.rater_id,
                "rater_name": rating.rater.name,
                "rater_excluded": rating.rater.is_excluded,
                "label": rating.label,
                "missing_reason": rating.missing_reason,
                "judge": item.judge_label,
                "expected": item.expected_label or None,
                "rater_batch": rating.assignment.batch.number,
                "position": rating.assignment.position,
                "guideline_version": rating.guideline.version,
                "shown_at": _iso(rating.shown_at),
                "submitted_at": _iso(rating.created_at),
                "time_on_task_ms": rating.time_on_task_ms,
                "label_changes": rating.label_changes,
                "first_label": rating.first_label,
                "response_played_through": rating.response_played_through,
                "slot": item.slot,
                # Every clip the rater heard, by name: the bytes they rated.
                "audio_sha256": ";".join(f"{c['name']}={c['sha256']}" for c in item.clips),
                "comment": rating.comment,
                "flagged": rating.flagged,
                "revised_at": _iso(rating.revised_at),
            }
        )
    return rows


# --- Staff views -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StudyProgress:
    items: int
    complete: int  # sampled items with `overlap` ratings
    partial: int
    untouched: int
    ratings: int
    missing: int
    checks: int  # gold and attention items
    raters: int  # invited
    active_locks: int
    expired_locks: int
    raters_rated: int = 0  # who have rated at least once
    flagged: int = 0  # ratings whose rater flagged the item
    comments: int = 0


def study_progress(*, study: Study) -> StudyProgress:
    now = timezone.now()
    samples = Item.objects.filter(study=study, role=Item.Role.SAMPLE).annotate(
        n=Count("ratings", distinct=True)
    )
    counts = {"complete": 0, "partial": 0, "untouched": 0}
    for n in samples.values_list("n", flat=True):
        key = "complete" if n >= study.overlap else ("partial" if n else "untouched")
        counts[key] += 1
    open_rows = Assignment.objects.filter(item__study=study, status=Assignment.Status.OPEN)
    ratings = Rating.objects.filter(item__study=study)
    return StudyProgress(
        items=sum(counts.values()),
        ratings=ratings.count(),
        missing=ratings.filter(label__isnull=True).count(),
        checks=study.items.exclude(role=Item.Role.SAMPLE).count(),
        raters=study.raters.count(),
        active_locks=open_rows.filter(locked_until__gt=now).count(),
        expired_locks=open_rows.filter(locked_until__lte=now).count(),
        raters_rated=ratings.values("rater").distinct().count(),
        flagged=ratings.filter(flagged=True).count(),
        comments=ratings.exclude(comment="").count(),
        **counts,
    )


def study_remarks(*, study: Study) -> list:
    """What raters flagged or wrote about items, newest first (staff only)."""
    return list(
        Rating.objects.filter(item__study=study)
        .filter(Q(flagged=True) | ~Q(comment=""))
        .select_related("item", "rater")
        .order_by("-created_at")[:100]
    )


def studies_for_staff() -> QuerySet:
    return Study.objects.select_related("benchmark", "judge").annotate(
        n_items=Count("items", filter=Q(items__role=Item.Role.SAMPLE), distinct=True),
        n_raters=Count("raters", distinct=True),
    )


def study_raters(*, study: Study) -> list[Rater]:
    return list(
        study.raters.select_related("user")
        .annotate(
            n_ratings=Count("ratings", distinct=True),
            n_batches=Count("batches", distinct=True),
        )
        .order_by("pk")
    )


def stratum_names(*, study: Study, user) -> dict[int, str]:
    """Submission id -> "System (#id)" for the strata this user may see."""
    visible = (
        submissions_visible_to(user=user)
        .filter(pk__in=study.strata.values("pk"))
        .select_related("system")
    )
    return {s.pk: f"{s.system.name} (#{s.pk})" for s in visible}


def public_strata(*, study: Study) -> list:
    """Sampled submissions anyone can see on the board, where a response's text sits beside
    its system's name: a rater who looks there could learn whose response they rate."""
    return list(
        study.strata.filter(Q(is_published=True, is_hidden=False) & Q(is_anonymous=False))
        .select_related("system")
        .order_by("pk")
    )


def public_strata_warning(strata) -> str:
    listed = ", ".join(f"#{s.pk} ({s.system.name})" for s in strata)
    return (
        f"Raters could de-blind themselves: {listed} {'is' if len(strata) == 1 else 'are'} "
        "published, so the board shows their responses beside the system's name. Rater pages "
        "link nowhere, but a rater may still look; consider sampling unpublished (or "
        "anonymous) submissions."
    )


def eligible_strata(*, user) -> QuerySet:
    """Submissions a study may sample: scored runs this user may see (paper rows have none)."""
    return (
        submissions_visible_to(user=user)
        .filter(is_reported=False, status="scored")
        .select_related("benchmark", "system")
        .order_by("benchmark__slug", "system__name", "pk")
    )


# --- What a rater sees -------------------------------------------------------------------------


def rater_by_token(*, token: str) -> Rater | None:
    return (
        Rater.objects.select_related("study")
        .filter(token=token, is_active=True)
        .exclude(study__status=Study.Status.DRAFT)
        .first()
    )


def rater_withdrawn(*, token: str) -> bool:
    """An invite link staff withdrew (its page says so rather than a bare 404)."""
    return Rater.objects.filter(token=token, is_active=False).exists()


def current_guideline(*, study: Study):
    return study.guidelines.order_by("-version").first()


def rater_item(*, assignment: Assignment) -> dict:
    """Everything the rater page shows for one item, and nothing else: no judge verdict, no
    other rater's label, no submission, system or task identifier, no storage key."""
    item = assignment.item
    draft = assignment.draft or {}
    return {
        "code": assignment.code,
        "transcript": [
            {"speaker": turn.get("speaker", ""), "text": turn.get("text", "")}
            for turn in item.transcript
        ],
        "response_text": item.response_text,
        "prompt": item.prompt,
        "instruction": item.instruction if item.role == Item.Role.ATTENTION else "",
        # Names, labels and windows only: storage keys never reach a rater.
        "clips": [
            {
                "name": clip["name"],
                "role": clip["role"],
                "label": clip["label"],
                "start": clip.get("start"),
                "end": clip.get("end"),
            }
            for clip in item.clips
        ],
        "has_response_audio": any(clip["role"] == "response" for clip in item.clips),
        "draft_label": draft.get("label"),
        "heard_response": assignment.response_played_through,
        "positions": draft.get("positions", {}),
    }
