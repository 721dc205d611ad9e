from django import forms
from django.contrib import admin, messages

from evaluation.board_state import board_changed
from evaluation.judge_endpoints import endpoint_refusal
from evaluation.links import web_url_problem
from evaluation.models import (
    Benchmark,
    Judge,
    JudgeCharge,
    Judgment,
    PromptVersion,
    Score,
    SpendEstimate,
    Submission,
    System,
    Task,
)
from evaluation.services import failed_judgments_retry, submission_rescore, submission_resume
from evaluation.services.judging import judge_endpoint
from evaluation.services.spending import spend_release


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "plugin", "is_demo"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["task_id", "benchmark"]
    list_filter = ["benchmark"]
    search_fields = ["task_id"]


@admin.register(PromptVersion)
class PromptVersionAdmin(admin.ModelAdmin):
    list_display = ["benchmark", "kind", "version", "sha256", "created_at"]
    readonly_fields = ["benchmark", "kind", "version", "template", "schema", "sha256"]


class JudgeAdminForm(forms.ModelForm):
    """The admin's own fields; a judge's endpoint must be on a host the site allows."""

    base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        help_text="Empty: OPENAI_BASE_URL / GEMINI_BASE_URL / ANTHROPIC_BASE_URL",
    )

    def clean(self):
        data = super().clean()
        provider = data.get("provider")
        if provider and provider != Judge.Provider.OFFLINE:
            # Where its calls would go: its own base URL, or its provider's from the settings.
            endpoint = judge_endpoint(Judge(provider=provider, base_url=data.get("base_url") or ""))
            if (refusal := endpoint_refusal(endpoint)) is not None:
                self.add_error("base_url", refusal)
        return data


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    form = JudgeAdminForm
    list_display = ["benchmark", "slug", "name", "provider", "is_official"]


class SystemForm(forms.ModelForm):
    """URLField alone would take ftp:// too: pages link only to http(s) (evaluation/links.py).
    The admin gives the model and fields."""

    def clean(self):
        cleaned = super().clean()
        for name in ("paper_url", "code_url"):
            problem = web_url_problem(name, cleaned.get(name))
            if problem:
                self.add_error(name, problem)
        return cleaned


class BoardChangeAdmin(admin.ModelAdmin):
    """Staff edits (hiding, flagging, verifying a row, renaming a system) reach every cached
    board at once (evaluation/board_state.py)."""

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        self._changed(obj)

    def delete_model(self, request, obj):
        self._changed(obj)
        super().delete_model(request, obj)

    def _changed(self, obj):
        if isinstance(obj, Submission):
            board_changed(benchmark_id=obj.benchmark_id)
            return
        for benchmark_id in obj.submissions.values_list("benchmark_id", flat=True).distinct():
            board_changed(benchmark_id=benchmark_id)


@admin.register(System)
class SystemAdmin(BoardChangeAdmin):
    form = SystemForm
    list_display = ["name", "team", "organization", "architecture"]
    search_fields = ["name", "organization"]


@admin.register(Submission)
class SubmissionAdmin(BoardChangeAdmin):
    list_display = [
        "pk",
        "system",
        "benchmark",
        "row_group",
        "judge",
        "status",
        "is_partial",
        "is_reported",
        "created_at",
    ]
    list_filter = ["benchmark", "status", "is_reported", "is_partial"]
    actions = ["retry_failed", "rescore", "resume", "release_spending"]

    @admin.action(description="Release past the judge spending limits and judge")
    def release_spending(self, request, queryset):
        released = 0
        for submission in queryset.filter(is_reported=False):
            if spend_release(submission=submission, by=request.user):
                released += 1
                if submission.status in (Submission.Status.SCORED, Submission.Status.FAILED):
                    submission_resume(submission=submission)
        self.message_user(request, f"{released} submission(s) released", messages.SUCCESS)

    @admin.action(description="Retry failed judgments")
    def retry_failed(self, request, queryset):
        total = sum(
            failed_judgments_retry(submission=s) for s in queryset.filter(is_reported=False)
        )
        self.message_user(request, f"{total} failed judgment(s) queued again", messages.SUCCESS)

    @admin.action(description="Re-queue where it stopped (a failed or stalled submission)")
    def resume(self, request, queryset):
        stages = [submission_resume(submission=s) for s in queryset.filter(is_reported=False)]
        self.message_user(request, f"{len(stages)} submission(s) re-queued", messages.SUCCESS)

    @admin.action(description="Re-score (cached judgments make no call)")
    def rescore(self, request, queryset):
        items = list(queryset.filter(is_reported=False))
        for submission in items:
            submission_rescore(submission=submission)
        self.message_user(
            request, f"{len(items)} submission(s) queued for re-scoring", messages.SUCCESS
        )


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = [
        "pk",
        "kind",
        "model",
        "status",
        "verdict",
        "attempts",
        "latency_ms",
        "completed_at",
    ]
    list_filter = ["status", "kind", "provider"]
    search_fields = ["prompt_sha256", "judge_identity"]

    def has_change_permission(self, request, obj=None):
        return False  # judgments are data; retry them, never edit them


@admin.register(Score)
class ScoreAdmin(admin.ModelAdmin):
    list_display = ["submission", "judge", "judgments_total", "judgments_failed", "computed_at"]


@admin.register(SpendEstimate)
class SpendEstimateAdmin(admin.ModelAdmin):
    list_display = ["submission", "judge", "calls", "cost_usd", "state", "computed_at"]
    list_filter = ["state"]
    readonly_fields = [f.name for f in SpendEstimate._meta.fields]


@admin.register(JudgeCharge)
class JudgeChargeAdmin(admin.ModelAdmin):
    list_display = ["submission", "team", "judge", "calls", "cost_usd", "estimated", "charged_at"]
    list_filter = ["team", "estimated"]
    readonly_fields = [f.name for f in JudgeCharge._meta.fields]
