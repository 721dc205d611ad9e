"""Admin for rating studies: inspection and light management. Studies are created on the
study pages (annotation/views.py), which draw the sample; here they can be edited and watched."""

from django.contrib import admin

from annotation.calibration import study_delete
from annotation.models import (
    Assignment,
    Batch,
    Guideline,
    Item,
    Rater,
    Rating,
    RatingEvent,
    Snapshot,
    Study,
)


class GuidelineInline(admin.TabularInline):
    model = Guideline
    extra = 0
    readonly_fields = ["version", "text", "created_by", "created_at"]
    can_delete = False


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "benchmark", "judge", "kind", "overlap", "batch_size", "status"]
    list_filter = ["status", "benchmark"]
    search_fields = ["slug", "name"]
    readonly_fields = [
        "benchmark",
        "judge",
        "kind",
        "calibrated_metric",
        "strata",
        "per_stratum",
        "seed",
        "created_by",
    ]
    inlines = [GuidelineInline]

    def has_add_permission(self, request):
        return False  # the study pages create studies and draw their samples

    def delete_model(self, request, obj):
        # A calibration study's scores on the board go with it.
        study_delete(study=obj)

    def delete_queryset(self, request, queryset):
        for study in queryset:
            study_delete(study=study)


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = [
        "code",
        "study",
        "role",
        "task_id",
        "stratum",
        "judge_label",
        "expected_label",
    ]
    list_filter = ["study", "role"]
    search_fields = ["code", "task_id"]
    readonly_fields = [f.name for f in Item._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Rater)
class RaterAdmin(admin.ModelAdmin):
    list_display = ["name", "study", "user", "is_active", "is_excluded", "last_seen_at"]
    list_filter = ["study", "is_active", "is_excluded"]
    list_editable = ["is_active", "is_excluded"]
    readonly_fields = ["token", "seed", "created_at", "last_seen_at"]
    search_fields = ["name"]


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ["rater", "number", "created_at", "completed_at"]
    list_filter = ["rater__study"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["rater", "item", "position", "status", "locked_until", "active_ms"]
    list_filter = ["status", "rater__study"]
    readonly_fields = [f.name for f in Assignment._meta.fields]


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["item", "rater", "label", "missing_reason", "guideline", "created_at"]
    list_filter = ["item__study", "label"]
    readonly_fields = [f.name for f in Rating._meta.fields]


@admin.register(RatingEvent)
class RatingEventAdmin(admin.ModelAdmin):
    list_display = ["assignment", "kind", "player", "position", "value", "created_at"]
    list_filter = ["kind"]
    readonly_fields = [f.name for f in RatingEvent._meta.fields]


@admin.register(Snapshot)
class SnapshotAdmin(admin.ModelAdmin):
    list_display = ["study", "sha256", "rating_count", "created_at"]
    readonly_fields = [f.name for f in Snapshot._meta.fields]
