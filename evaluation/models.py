"""Benchmarks, tasks, judges, submissions, detections and judgments.

A judgment is data keyed by (judge identity, prompt hash): scores are derived from detections and
judgments and can be recomputed at any time without calling a judge again.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q


class Team(models.Model):
    """Who owns submissions. Unpublished work is visible only to its team (and staff)."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(unique=True)
    # Empty: the site-wide defaults (FLOORBOARD_MAX_SUBMISSIONS_PER_DAY, ..._CONCURRENT_EVALUATIONS).
    max_submissions_per_day = models.PositiveIntegerField(null=True, blank=True)
    max_concurrent_evaluations = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        MEMBER = "member"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"


class Benchmark(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    plugin = models.CharField(max_length=50, help_text="Evaluation plug-in, e.g. mp-bench")
    description = models.TextField(blank=True)
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Task(models.Model):
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="tasks")
    task_id = models.CharField(max_length=200)
    family = models.CharField(max_length=50)
    should_speak = models.BooleanField()
    metatranscript = models.TextField(help_text="The raw string from tasks.jsonl, as judges see it")
    question_text = models.TextField(blank=True)
    answer_text = models.TextField(blank=True)
    is_speaker_name = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark", "task_id"], name="task_unique_per_benchmark"
            )
        ]
        ordering = ["task_id"]

    def __str__(self) -> str:
        return self.task_id


class PromptVersion(models.Model):
    """A judge prompt template as imported. Changed prompts get a new version; old ones stay."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="prompts")
    kind = models.CharField(max_length=50)
    version = models.PositiveIntegerField()
    template = models.TextField()
    schema = models.JSONField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark", "kind", "version"], name="prompt_version_unique"
            ),
        ]
        ordering = ["kind", "-version"]

    def __str__(self) -> str:
        return f"{self.kind} v{self.version}"


class Judge(models.Model):
    """A judging configuration for one benchmark: provider, a model per judge kind, sampling."""

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible"
        GEMINI = "gemini", "Gemini"
        OFFLINE = "offline", "Offline (heuristic, not an LLM)"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="judges")
    slug = models.SlugField()
    name = models.CharField(max_length=200)
    provider = models.CharField(max_length=20, choices=Provider.choices)
    models_by_kind = models.JSONField(default=dict, help_text='{"understanding": "gpt-5.4", ...}')
    base_url = models.URLField(blank=True, help_text="Empty: OPENAI_BASE_URL / GEMINI_BASE_URL")
    send_sampling_params = models.BooleanField(default=True)
    temperature = models.FloatField(default=0.0)
    top_p = models.FloatField(default=1.0)
    max_completion_tokens = models.PositiveIntegerField(default=4096)
    concurrency = models.PositiveIntegerField(
        null=True, blank=True, help_text="Empty: JUDGE_CONCURRENCY"
    )
    is_official = models.BooleanField(default=False)
    # USD per million tokens, for the cost shown beside token counts.
    price_input_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True
    )
    price_output_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "slug"], name="judge_slug_unique"),
            models.UniqueConstraint(
                fields=["benchmark"], condition=Q(is_official=True), name="one_official_judge"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.benchmark.slug}/{self.slug}"

    @property
    def is_offline(self) -> bool:
        return self.provider == self.Provider.OFFLINE

    def sampling_params(self) -> dict:
        if not self.send_sampling_params:
            return {}
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_completion_tokens": self.max_completion_tokens,
        }


class System(models.Model):
    class SystemType(models.TextChoices):
        REALTIME = "realtime", "Realtime"
        NON_REALTIME = "non-realtime", "Non-realtime"
        TEXT_LLM = "text-llm", "Text LLM"

    class Architecture(models.TextChoices):
        END_TO_END = "end-to-end", "End-to-end"
        CASCADED = "cascaded", "Cascaded"

    name = models.CharField(max_length=200, unique=True)
    system_type = models.CharField(
        max_length=20, choices=SystemType.choices, default=SystemType.REALTIME
    )
    organization = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    architecture = models.CharField(max_length=20, choices=Architecture.choices, blank=True)
    asr_model = models.CharField(max_length=200, blank=True)
    llm_model = models.CharField(max_length=200, blank=True)
    tts_model = models.CharField(max_length=200, blank=True)
    open_weights = models.BooleanField(null=True, blank=True)
    full_duplex = models.BooleanField(null=True, blank=True)
    parameters = models.CharField(max_length=50, blank=True, help_text="e.g. 7B")
    license = models.CharField(max_length=100, blank=True)
    paper_url = models.URLField(blank=True)
    code_url = models.URLField(blank=True)
    team = models.ForeignKey(
        Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="systems"
    )
    metadata = models.JSONField(default=dict, blank=True, help_text="manifest.json of its bundles")

    def __str__(self) -> str:
        return self.name


class Submission(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        INGESTING = "ingesting"
        DETECTING = "detecting"
        JUDGING = "judging"
        AGGREGATING = "aggregating"
        SCORED = "scored"
        FAILED = "failed"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="submissions")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="submissions")
    judge = models.ForeignKey(
        Judge, on_delete=models.PROTECT, related_name="submissions", null=True
    )
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="submissions"
    )
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Privacy and moderation: unpublished work is seen only by its team and staff.
    is_published = models.BooleanField(default=False)
    published_at = models.DateTimeField(null=True, blank=True)
    is_verified = models.BooleanField(default=False, help_text="Checked by staff")
    is_flagged = models.BooleanField(default=False)
    flag_reason = models.TextField(blank=True, help_text="Shown publicly beside a flagged entry")
    is_hidden = models.BooleanField(default=False, help_text="Removed from public pages by staff")
    idempotency_key = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    bundle = models.FileField(upload_to="bundles/", blank=True)
    bundle_sha256 = models.CharField(max_length=64, blank=True)
    bundle_size = models.BigIntegerField(default=0)
    manifest = models.JSONField(default=dict, blank=True)
    is_partial = models.BooleanField(default=False, help_text="Accepted with tasks missing")
    missing_task_count = models.PositiveIntegerField(default=0)
    # Rows preloaded from a paper: no bundle, numbers as reported.
    is_reported = models.BooleanField(default=False)
    reported_source = models.CharField(max_length=200, blank=True)
    reported_results = models.JSONField(null=True, blank=True)
    half_duplex = models.BooleanField(null=True)
    tasks_ingested = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="submission_idempotency_key",
            )
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.system} on {self.benchmark.slug}"

    @property
    def is_public(self) -> bool:
        return self.is_reported or (self.is_published and not self.is_hidden)


class TaskResult(models.Model):
    """One task of one submission: where its files are and what detection decided."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="task_results"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="results")
    files = models.JSONField(default=dict, help_text="relative name -> storage key")
    detected = models.BooleanField(default=False)
    spoke = models.BooleanField(default=False)
    spoke_via = models.CharField(max_length=20, blank=True)
    post_text = models.TextField(blank=True)
    full_text = models.TextField(blank=True)
    latency = models.FloatField(null=True, blank=True)
    input_end = models.FloatField(null=True, blank=True)
    turn_taking_correct = models.BooleanField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "task"], name="task_result_unique")
        ]

    def __str__(self) -> str:
        return f"{self.submission_id}/{self.task_id}"


class Judgment(models.Model):
    """One judge call, shared by every task whose prompt is byte-identical (the cache)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    judge_identity = models.CharField(max_length=500)
    prompt_sha256 = models.CharField(max_length=64)
    prompt = models.TextField()
    kind = models.CharField(max_length=50)
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    prompt_version = models.ForeignKey(PromptVersion, on_delete=models.PROTECT)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    raw_output = models.TextField(blank=True)
    verdict = models.BooleanField(null=True)
    reasoning = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(null=True)
    output_tokens = models.PositiveIntegerField(null=True)
    latency_ms = models.PositiveIntegerField(null=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge_identity", "prompt_sha256"], name="judgment_cache_key"
            )
        ]
        indexes = [models.Index(fields=["status", "lease_until"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.prompt_sha256[:12]} ({self.status})"


class TaskJudgment(models.Model):
    """Which judgment decided one kind for one task under one judge (none: empty response)."""

    task_result = models.ForeignKey(
        TaskResult, on_delete=models.CASCADE, related_name="task_judgments"
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=50)
    judgment = models.ForeignKey(Judgment, on_delete=models.PROTECT, null=True, related_name="uses")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task_result", "judge", "kind"], name="task_judgment_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.task_result} {self.kind}"


class Score(models.Model):
    """A submission's aggregate under one judge, in the benchmark's RESULTS.json structure."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="scores")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="scores")
    results = models.JSONField()
    judgments_total = models.PositiveIntegerField(default=0)
    judgments_failed = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "judge"], name="score_unique")]

    def __str__(self) -> str:
        return f"{self.submission_id} under {self.judge_id}"
