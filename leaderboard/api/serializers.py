"""Read-only shapes of the API. No business logic: values come from models and selectors."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from evaluation.identity import viewer_for
from evaluation.models import (
    Benchmark,
    Judge,
    Submission,
    System,
    TaskJudgment,
    TaskResult,
)


class JudgeSerializer(serializers.ModelSerializer):
    """A judge's identity: provider, model per judge kind, sampling, prompt versions."""

    models = serializers.JSONField(source="models_by_kind", help_text="judge kind -> model")
    sampling = serializers.SerializerMethodField()
    prompt_versions = serializers.SerializerMethodField()
    official = serializers.BooleanField(source="is_official")
    offline = serializers.BooleanField(source="is_offline")

    class Meta:
        model = Judge
        fields = [
            "slug",
            "name",
            "provider",
            "models",
            "sampling",
            "prompt_versions",
            "official",
            "offline",
            "price_input_per_mtok",
            "price_output_per_mtok",
        ]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_sampling(self, judge: Judge) -> dict:
        return judge.sampling_params()

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_prompt_versions(self, judge: Judge) -> dict:
        return self.context.get("prompt_versions", {})


class BenchmarkSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    task_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Benchmark
        fields = ["slug", "name", "plugin", "description", "is_demo", "task_count", "url"]

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, benchmark: Benchmark) -> str:
        return reverse(
            "api-benchmark-detail", args=[benchmark.slug], request=self.context.get("request")
        )


class BenchmarkDetailSerializer(BenchmarkSerializer):
    declaration = serializers.JSONField(
        read_only=True,
        help_text="What the benchmark's plug-in declares: metrics (key, label, group, type, "
        "direction, chance, interval method, decimals), splits, row groups, judge kinds, task "
        "filters, processing steps and the upload format",
    )
    judges = JudgeSerializer(many=True, read_only=True, source="judge_list")
    leaderboard_url = serializers.SerializerMethodField()

    class Meta(BenchmarkSerializer.Meta):
        fields = [*BenchmarkSerializer.Meta.fields, "declaration", "judges", "leaderboard_url"]

    @extend_schema_field(OpenApiTypes.URI)
    def get_leaderboard_url(self, benchmark: Benchmark) -> str:
        return reverse(
            "leaderboard-api", args=[benchmark.slug], request=self.context.get("request")
        )


class SystemSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = System
        fields = [
            "id",
            "name",
            "organization",
            "description",
            "architecture",
            "asr_model",
            "llm_model",
            "tts_model",
            "open_weights",
            "full_duplex",
            "parameters",
            "license",
            "paper_url",
            "code_url",
            "url",
        ]

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, system: System) -> str:
        return reverse("api-system-detail", args=[system.pk], request=self.context.get("request"))


class SystemRefSerializer(serializers.ModelSerializer):
    class Meta:
        model = System
        fields = ["id", "name"]


class SubmissionSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    benchmark = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    system = serializers.SerializerMethodField()
    team = serializers.SerializerMethodField()
    judge = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    is_anonymous = serializers.BooleanField(
        read_only=True,
        help_text="Shown as 'Anonymous (under review)' outside its team: system and team null",
    )

    def _viewer(self):
        """The requesting user's view of identities, made once per response."""
        if "_viewer" not in self.context:
            request = self.context.get("request")
            self.context["_viewer"] = viewer_for(getattr(request, "user", None))
        return self.context["_viewer"]

    def _hidden(self, submission: Submission) -> bool:
        """Whether the requesting user may not know this submission's system and team (a paper
        under review)."""
        return self._viewer().hides(submission)

    def to_representation(self, submission: Submission) -> dict:
        # Everything that would identify a hidden submission (the manifest and what came from
        # it, the bundle's digest) is emptied, in this serializer and every one built on it.
        return self._viewer().redacted(submission, super().to_representation(submission))

    @extend_schema_field(SystemRefSerializer(allow_null=True))
    def get_system(self, submission: Submission):
        if self._hidden(submission):
            return None
        return SystemRefSerializer(submission.system).data

    @extend_schema_field(OpenApiTypes.STR)
    def get_team(self, submission: Submission) -> str | None:
        if self._hidden(submission) or submission.team is None:
            return None
        return submission.team.name

    class Meta:
        model = Submission
        fields = [
            "id",
            "url",
            "benchmark",
            "system",
            "team",
            "judge",
            "row_group",
            "status",
            "is_published",
            "published_at",
            "is_verified",
            "is_flagged",
            "flag_reason",
            "is_hidden",
            "is_partial",
            "missing_task_count",
            "is_reported",
            "reported_source",
            "run_config",
            "contamination",
            "contamination_note",
            "is_anonymous",
            "created_at",
            "finished_at",
        ]

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, submission: Submission) -> str:
        return reverse(
            "api-submission-detail", args=[submission.pk], request=self.context.get("request")
        )


class SystemDetailSerializer(SystemSerializer):
    submissions = SubmissionSerializer(many=True, read_only=True, source="visible_submissions")

    class Meta(SystemSerializer.Meta):
        fields = [*SystemSerializer.Meta.fields, "submissions"]


class ProgressSerializer(serializers.Serializer):
    tasks_total = serializers.IntegerField()
    tasks_ingested = serializers.IntegerField()
    judgments_total = serializers.IntegerField()
    judgments_done = serializers.IntegerField()
    judgments_failed = serializers.IntegerField()
    decided_without_call = serializers.IntegerField(
        help_text="Judged slots the benchmark's rules decided without a call (an empty answer)"
    )


class TokensSerializer(serializers.Serializer):
    input = serializers.IntegerField()
    output = serializers.IntegerField()


class JudgeResultSerializer(serializers.Serializer):
    judge = serializers.CharField()
    official = serializers.BooleanField()
    offline = serializers.BooleanField()
    results = serializers.JSONField(
        help_text="The benchmark's results structure (on the public tasks when some are held out)"
    )
    held_out_results = serializers.JSONField(
        allow_null=True, help_text="The same on the held-out tasks; null when none is held out"
    )
    scorer = serializers.JSONField(
        allow_null=True,
        help_text="What produced the numbers: rules, processing steps, judge, prompt versions",
    )
    older = serializers.ListField(
        child=serializers.ChoiceField(choices=["rules", "processing", "judge", "prompts"]),
        help_text="The parts of the current scorer these numbers were not made with (empty: "
        "current)",
    )
    judgments_total = serializers.IntegerField()
    judgments_failed = serializers.IntegerField()
    tokens = TokensSerializer()
    cost_usd = serializers.FloatField(allow_null=True)
    computed_at = serializers.DateTimeField()
    calibrated = serializers.JSONField(
        help_text="Metric key -> its human-calibrated numbers under this judge, in the metric's "
        "unit with 95% intervals: value, low, high (null while labels_needed > 0), judge_value, "
        "classical_value, classical_low, classical_high (humans only), bias, bias_low, "
        "bias_high (judge minus human), labelled (n), population (N), labels_needed, tuning, "
        "and study (its name for staff, 'a calibration study' otherwise); {} without one"
    )


class SpendEstimateSerializer(serializers.Serializer):
    calls = serializers.IntegerField()
    calls_at_most = serializers.IntegerField(
        help_text="With every answer attempt a judge kind allows (an unparseable answer)"
    )
    input_tokens = serializers.IntegerField(help_text="Characters sent / 4")
    output_tokens = serializers.IntegerField(help_text="The judge kinds' allowance per call")
    cost_usd = serializers.DecimalField(
        max_digits=16, decimal_places=8, coerce_to_string=False, allow_null=True
    )
    by_kind = serializers.JSONField()
    state = serializers.ChoiceField(choices=["queued", "held", "done"])
    held_message = serializers.CharField()
    released_at = serializers.DateTimeField(allow_null=True)
    computed_at = serializers.DateTimeField()


class JudgeSpendingSerializer(serializers.Serializer):
    """One judge's estimate (made before its calls were queued) and what was spent."""

    judge = serializers.CharField(source="judge.slug")
    estimate = SpendEstimateSerializer(allow_null=True)
    calls = serializers.IntegerField(help_text="Answered calls this submission paid for")
    tokens = serializers.SerializerMethodField()
    cost_usd = serializers.DecimalField(
        max_digits=16, decimal_places=8, coerce_to_string=False, allow_null=True
    )
    estimated_usage = serializers.BooleanField(
        help_text="Some answers came without usage: their tokens are characters / 4"
    )

    def get_tokens(self, spending) -> dict[str, int]:
        return {"input": spending.input_tokens, "output": spending.output_tokens}


class SubmissionDetailSerializer(SubmissionSerializer):
    progress = ProgressSerializer(read_only=True)
    scores = JudgeResultSerializer(many=True, read_only=True, source="scores_list")
    spending = JudgeSpendingSerializer(
        many=True,
        read_only=True,
        source="spending_list",
        allow_null=True,
        help_text="Judge spending per judge; null unless you are on the submission's team or staff",
    )
    tasks_url = serializers.SerializerMethodField()
    waiting_on_storage = serializers.SerializerMethodField(
        help_text="The file store did not answer the submission's last stage (after its "
        "retries): not failed, it goes on by itself once storage answers"
    )
    waiting_on_storage_since = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="Since when it has been waiting on storage; null when it is not",
    )

    class Meta(SubmissionSerializer.Meta):
        fields = [
            *SubmissionSerializer.Meta.fields,
            "waiting_on_storage",
            "waiting_on_storage_since",
            "error",
            "options",
            "facts",
            "bundle_size",
            "bundle_sha256",
            "manifest",
            "reported_results",
            "progress",
            "scores",
            "spending",
            "tasks_url",
        ]

    def get_waiting_on_storage(self, submission: Submission) -> bool:
        return submission.waiting_on_storage_since is not None

    @extend_schema_field(OpenApiTypes.URI)
    def get_tasks_url(self, submission: Submission) -> str:
        return reverse(
            "api-submission-tasks", args=[submission.pk], request=self.context.get("request")
        )


class TaskResultSerializer(serializers.ModelSerializer):
    """One task of a submission: the task's fields as the benchmark defines them, this
    submission's part of the upload, and what processing found."""

    task_id = serializers.CharField(source="task.task_id")
    spec = serializers.JSONField(source="task.spec")
    judgments_url = serializers.SerializerMethodField()

    class Meta:
        model = TaskResult
        fields = ["task_id", "spec", "data", "detection", "detected", "judgments_url"]

    @extend_schema_field(OpenApiTypes.URI)
    def get_judgments_url(self, row: TaskResult) -> str:
        return reverse(
            "api-task-judgments",
            args=[row.submission_id, row.task.task_id],
            request=self.context.get("request"),
        )


class TaskJudgmentSerializer(serializers.Serializer):
    """One judged slot of one task under one judge. ``fixed``: the outcome the benchmark's rules
    decided without calling the judge (an empty answer, say). A judgment shared with other
    submissions (identical requests are judged once) shows when this submission used it."""

    judge = serializers.CharField(source="judge.slug")
    kind = serializers.CharField()
    slot = serializers.CharField()
    label = serializers.CharField()
    skipped = serializers.SerializerMethodField()
    fixed = serializers.JSONField(allow_null=True)
    status = serializers.CharField(source="judgment.status", allow_null=True, default=None)
    verdict = serializers.SerializerMethodField()
    output = serializers.JSONField(source="judgment.output", allow_null=True, default=None)
    reasoning = serializers.CharField(source="judgment.reasoning", allow_null=True, default=None)
    raw_output = serializers.CharField(source="judgment.raw_output", allow_null=True, default=None)
    earlier_outputs = serializers.JSONField(
        source="judgment.earlier_outputs", allow_null=True, default=None
    )
    system_prompt = serializers.CharField(
        source="judgment.system_prompt", allow_null=True, default=None
    )
    prompt = serializers.CharField(source="judgment.prompt", allow_null=True, default=None)
    prompt_version = serializers.IntegerField(
        source="judgment.prompt_version.version", allow_null=True, default=None
    )
    judge_identity = serializers.CharField(
        source="judgment.judge_identity", allow_null=True, default=None
    )
    model = serializers.CharField(source="judgment.model", allow_null=True, default=None)
    input_tokens = serializers.IntegerField(
        source="judgment.input_tokens", allow_null=True, default=None
    )
    output_tokens = serializers.IntegerField(
        source="judgment.output_tokens", allow_null=True, default=None
    )
    latency_ms = serializers.IntegerField(
        source="judgment.latency_ms", allow_null=True, default=None
    )
    attempts = serializers.IntegerField(source="judgment.attempts", allow_null=True, default=None)
    error = serializers.CharField(source="judgment.error", allow_null=True, default=None)
    used_at = serializers.DateTimeField(source="linked_at", allow_null=True)

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_skipped(self, link: TaskJudgment) -> bool:
        return link.judgment_id is None

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_verdict(self, link: TaskJudgment) -> bool | None:
        if link.judgment_id is None:
            return (link.fixed or {}).get("verdict")
        return link.judgment.verdict


class TaskJudgmentsSerializer(serializers.Serializer):
    task = TaskResultSerializer()
    judgments = TaskJudgmentSerializer(many=True)


class RetryResultSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    judge = serializers.CharField()
    requeued = serializers.IntegerField(help_text="Failed judgments queued again")


class RetryRequestSerializer(serializers.Serializer):
    judge = serializers.SlugField(
        required=False, help_text="Judge slug; default: the submission's own judge"
    )
