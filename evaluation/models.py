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
    # USD of judge calls per calendar month (UTC). Empty: FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH;
    # 0: no limit for this team.
    max_judge_spend_per_month = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True
    )
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
    plugin = models.CharField(max_length=50, help_text="The slug of a registered benchmark plug-in")
    description = models.TextField(blank=True)
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Task(models.Model):
    """One task of a benchmark. Its fields are the plug-in's, kept as imported in ``spec``."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="tasks")
    task_id = models.CharField(max_length=200)
    spec = models.JSONField(default=dict, help_text="Every field of the task, as imported")
    # Files of the release stored with the task (its audio, say): name -> {"key", "size"}.
    assets = models.JSONField(default=dict, blank=True)
    # Held out: scored apart (Score.held_out_results), and its ground truth, prompts and
    # per-task results are shown to staff only (evaluation/held_out.py).
    held_out = models.BooleanField(default=False)

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
    schema = models.JSONField(null=True, blank=True)
    # Further template files of the kind (a user-message template beside a system one).
    parts = models.JSONField(default=dict, blank=True)
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
        ANTHROPIC = "anthropic", "Anthropic Messages API"
        OFFLINE = "offline", "Offline (heuristic, not an LLM)"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="judges")
    slug = models.SlugField()
    name = models.CharField(max_length=200)
    provider = models.CharField(max_length=20, choices=Provider.choices)
    models_by_kind = models.JSONField(default=dict, help_text='{"<judge kind>": "<model>", ...}')
    base_url = models.URLField(
        blank=True, help_text="Empty: OPENAI_BASE_URL / GEMINI_BASE_URL / ANTHROPIC_BASE_URL"
    )
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
    """A system as its owner describes it. It belongs to a team (paper rows and command-line
    submissions without a team belong to staff); names are unique per owner, and only the owner
    sets its description."""

    class Architecture(models.TextChoices):
        END_TO_END = "end-to-end", "End-to-end"
        CASCADED = "cascaded", "Cascaded"

    name = models.CharField(max_length=200)
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
    metadata = models.JSONField(default=dict, blank=True, help_text="manifest.json that created it")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["team", "name"],
                condition=Q(team__isnull=False),
                name="system_name_per_team",
            ),
            models.UniqueConstraint(
                fields=["name"], condition=Q(team__isnull=True), name="system_name_staff"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Submission(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        INGESTING = "ingesting"
        DETECTING = "detecting", "processing"
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
    # A paper under review: outside its team and staff the submission is "Anonymous (under
    # review)", with no system, team or link, until its team reveals it.
    is_anonymous = models.BooleanField(default=False)
    # What produced the outputs (evaluation/run_config.py documents the schema).
    run_config = models.JSONField(default=dict, blank=True)

    class Contamination(models.TextChoices):
        NO = "no", "did not see the benchmark's data in training"
        YES = "yes", "saw the benchmark's data in training"
        UNKNOWN = "unknown", "not known whether it saw the benchmark's data"

    contamination = models.CharField(
        max_length=10, choices=Contamination.choices, default=Contamination.UNKNOWN
    )
    contamination_note = models.TextField(blank=True)
    idempotency_key = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    bundle = models.FileField(upload_to="bundles/", blank=True)
    bundle_sha256 = models.CharField(max_length=64, blank=True)
    bundle_size = models.BigIntegerField(default=0)
    # Counted against the team's and the account's storage quotas, failed submissions included:
    # the bundle and everything it unpacks to (the most its ingest can store); 0 once its files
    # are deleted.
    stored_bytes = models.BigIntegerField(default=0)
    manifest = models.JSONField(default=dict, blank=True)
    is_partial = models.BooleanField(default=False, help_text="Accepted with tasks missing")
    missing_task_count = models.PositiveIntegerField(default=0)
    # Rows preloaded from a paper: no bundle, numbers as reported.
    is_reported = models.BooleanField(default=False)
    reported_source = models.CharField(max_length=200, blank=True)
    reported_results = models.JSONField(null=True, blank=True)
    # The board's row group (a system type of the benchmark's paper), as the submitter declared.
    row_group = models.CharField(max_length=50, blank=True)
    # What the submitter declared with the upload (a run mode, say) and what the processing
    # steps found about the whole submission (a half-duplex run, say).
    options = models.JSONField(default=dict, blank=True)
    facts = models.JSONField(default=dict, blank=True)
    # Processing steps done, in the plug-in's order; the next one runs when they are.
    steps_done = models.PositiveIntegerField(default=0)
    tasks_ingested = models.PositiveIntegerField(default=0)
    # Last sign of a live worker on this submission; the sweeper re-queues stalled work.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    requeued_at = models.DateTimeField(null=True, blank=True)
    # Since when a stage has been waiting for the file store to answer (its calls were retried
    # and gave up): not failed; the sweeper re-queues it and it resumes once storage answers.
    storage_waiting_since = models.DateTimeField(null=True, blank=True)
    # Failed judgments are retried on their own after a pause, a few times, before the numbers
    # count as final; until then the board marks the row.
    failed_retries = models.PositiveSmallIntegerField(default=0)
    retry_failed_at = models.DateTimeField(null=True, blank=True)
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

    @property
    def waiting_on_storage_since(self):
        """Since when the submission has been waiting for the file store to answer; None when
        it is not (a scored or failed one waits on nothing, whatever mark was left)."""
        if self.status in (self.Status.SCORED, self.Status.FAILED):
            return None
        return self.storage_waiting_since


class UploadFindings(models.Model):
    """What validation found for the first processing step (UploadContents.findings), kept
    from the upload until the ingest that follows hands it to that step and deletes it. JSON
    as text, not jsonb: its numbers come back exactly as they were written."""

    submission = models.OneToOneField(
        Submission, on_delete=models.CASCADE, primary_key=True, related_name="upload_findings"
    )
    # {"versions": the plug-in's rules and step versions, "tasks": {task id: findings}}
    text = models.TextField()

    def __str__(self) -> str:
        return f"upload findings of submission #{self.submission_id}"


class TaskResult(models.Model):
    """One task of one submission: where its files are, its part of the upload, and what the
    processing steps found (the plug-in's JSON)."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="task_results"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="results")
    files = models.JSONField(
        default=dict, help_text='relative name -> {"size", "entry" in the upload or "key"}'
    )
    data = models.JSONField(default=dict, blank=True, help_text="This task's part of the upload")
    detection = models.JSONField(default=dict, blank=True, help_text="Processing steps' output")
    detected = models.BooleanField(default=False, help_text="Every processing step has run")
    # Processing steps done for this task; a worker holds it while it runs one (lease).
    steps_done = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=40, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "task"], name="task_result_unique")
        ]

    def __str__(self) -> str:
        return f"{self.submission_id}/{self.task_id}"


class Judgment(models.Model):
    """One judge call, shared by every task of one team whose prompt is byte-identical (the cache;
    judging.judgment_scope)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    judge_identity = models.CharField(max_length=500)
    prompt_sha256 = models.CharField(max_length=64)
    prompt = models.TextField(help_text="The user message")
    system_prompt = models.TextField(blank=True)
    # What parsing needs beyond the raw text (fixed by the prompt, e.g. how many atoms).
    context = models.JSONField(default=dict, blank=True)
    kind = models.CharField(max_length=50)
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    prompt_version = models.ForeignKey(PromptVersion, on_delete=models.PROTECT)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    # The worker loop holding a running judgment, and until when (renewed while it lives).
    lease_owner = models.CharField(max_length=40, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    raw_output = models.TextField(blank=True)
    # Earlier answered attempts that did not parse (kinds that ask again), oldest first.
    earlier_outputs = models.JSONField(default=list, blank=True)
    output = models.JSONField(null=True, blank=True, help_text="The parsed answer")
    verdict = models.BooleanField(
        null=True, help_text="The slot passed (where one verdict sums it)"
    )
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
    """Which judgment decided one slot of one kind for one task under one judge. No judgment:
    the outcome was decided without a call (``fixed``), e.g. an empty response."""

    task_result = models.ForeignKey(
        TaskResult, on_delete=models.CASCADE, related_name="task_judgments"
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=50)
    slot = models.CharField(max_length=100, blank=True, default="")
    label = models.CharField(max_length=200, blank=True)
    judgment = models.ForeignKey(Judgment, on_delete=models.PROTECT, null=True, related_name="uses")
    fixed = models.JSONField(null=True, blank=True, help_text="Outcome decided without a call")
    # When this submission first used the judgment: what its pages show, never the times of
    # another submission that made the same request first (the cache is shared).
    linked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task_result", "judge", "kind", "slot"], name="task_judgment_slot_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.task_result} {self.kind}{'/' + self.slot if self.slot else ''}"


class Score(models.Model):
    """A submission's aggregate under one judge, in the benchmark's RESULTS.json structure."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="scores")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="scores")
    results = models.JSONField()
    # What each task adds to each metric ({"tasks": [...], "metrics": {key: [[num, den], ...]}}):
    # slices of the board and paired comparisons are recomputed from it (plug-ins that declare
    # metric_contributions).
    contributions = models.JSONField(null=True, blank=True)
    # Every slice's results ({"version", "values": {"attribute=value": {"tasks", "results"}}}):
    # the board reads one slice's results in SQL as it reads the whole results.
    slices = models.JSONField(null=True, blank=True)
    # The scorer behind these numbers (evaluation/scorer.py): rules, processing, judge and the
    # prompt versions its judgments used. Null: scored before scorers were recorded.
    scorer = models.JSONField(null=True, blank=True)
    # The same results on the benchmark's held-out tasks (then ``results`` and everything
    # derived from them cover the public tasks only); null when none is held out.
    held_out_results = models.JSONField(null=True, blank=True)
    judgments_total = models.PositiveIntegerField(default=0)
    judgments_failed = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "judge"], name="score_unique")]

    def __str__(self) -> str:
        return f"{self.submission_id} under {self.judge_id}"


class CalibratedScore(models.Model):
    """A judged metric of one submission under one judge, corrected by the human labels of a
    calibration study (prediction-powered inference, evaluation/stats.py). Written by the
    annotation app whenever that study's labels change, so the board, the API and the exports
    read it without importing annotation. Values are in the metric's own unit (percent for a
    "%" metric); every interval is 95%."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="calibrated_scores"
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="+")
    metric = models.CharField(max_length=100, help_text="The plug-in's metric key")
    # The calibration study behind the numbers (annotation.Study's id and name; no foreign key:
    # evaluation does not import annotation).
    study_id = models.PositiveIntegerField()
    study_name = models.CharField(max_length=200)
    population = models.PositiveIntegerField(help_text="Units the judge scored (N)")
    labelled = models.PositiveIntegerField(help_text="Units with a human label (n)")
    # How many more human labels this submission needs before it has a calibrated value (0 when
    # it has one).
    labels_needed = models.PositiveIntegerField(default=0)
    judge_value = models.FloatField(null=True, blank=True)
    # Null until enough units are labelled.
    value = models.FloatField(null=True, blank=True)
    low = models.FloatField(null=True, blank=True)
    high = models.FloatField(null=True, blank=True)
    # The humans-only estimate of the same labelled units, for comparison.
    classical_value = models.FloatField(null=True, blank=True)
    classical_low = models.FloatField(null=True, blank=True)
    classical_high = models.FloatField(null=True, blank=True)
    # The judge's bias: judge minus human, with its interval.
    bias = models.FloatField(null=True, blank=True)
    bias_low = models.FloatField(null=True, blank=True)
    bias_high = models.FloatField(null=True, blank=True)
    # The power-tuning weight the estimate used (0: humans only; 1: plain PPI).
    tuning = models.FloatField(null=True, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "judge", "metric"], name="calibrated_score_unique"
            )
        ]
        ordering = ["submission", "judge", "metric"]

    def __str__(self) -> str:
        return f"{self.submission_id} {self.metric} calibrated by study {self.study_id}"


class ScorerVersion(models.Model):
    """One entry of a benchmark's scorer changelog: an identity (rules, processing, judge,
    prompts) one of its judges has had, when it was first seen, what changed since the
    judge's previous entry, and why (the plug-in's note for a rules change, or staff's)."""

    benchmark = models.ForeignKey(
        Benchmark, on_delete=models.CASCADE, related_name="scorer_versions"
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="scorer_versions")
    fingerprint = models.CharField(max_length=16)
    identity = models.JSONField()
    changes = models.JSONField(default=list)
    note = models.TextField(blank=True, help_text="Why it changed, shown on the benchmark page")
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark", "judge", "fingerprint"], name="scorer_version_unique"
            )
        ]
        ordering = ["benchmark", "-first_seen_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.judge_id} scorer {self.fingerprint}"


class ScoreRecord(models.Model):
    """A board row's numbers as they were computed, kept when a re-score replaces them: the
    results with the judge, the prompt versions and the processing (rules and steps) behind
    them. Written once, never changed: a cited number stays findable at its own address."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="score_records"
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="+")
    results = models.JSONField()
    judgments_total = models.PositiveIntegerField(default=0)
    judgments_failed = models.PositiveIntegerField(default=0)
    # The judge as configured then: provider, model per kind, sampling parameters.
    judge_config = models.JSONField(default=dict)
    # [{"kind", "version", "sha256"}] of the judgments behind the numbers.
    prompt_versions = models.JSONField(default=list)
    # {"rules": <plug-in rules version>, "steps": {name: version}}.
    processing = models.JSONField(default=dict)
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["submission", "judge", "-computed_at", "-pk"]
        indexes = [models.Index(fields=["submission", "judge", "computed_at"])]

    def __str__(self) -> str:
        return f"{self.submission_id} under {self.judge_id} at {self.computed_at:%Y-%m-%d %H:%M}"


class SpendEstimate(models.Model):
    """What judging one submission under one judge is expected to cost, worked out before its
    calls are queued from the judgments still to call (cache hits cost nothing): calls, input
    tokens (characters / 4), an allowance of output tokens per call, and their price. While
    queued it reserves its cost against the spending limits; past a limit it is held."""

    class State(models.TextChoices):
        QUEUED = "queued"
        HELD = "held"
        DONE = "done"

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="spend_estimates"
    )
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="+")
    calls = models.PositiveIntegerField(default=0)
    # Every answer attempt a kind allows (an unparseable answer is asked for again).
    calls_at_most = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(
        max_digits=16, decimal_places=8, null=True, blank=True, help_text="Empty: no price"
    )
    # {kind: {"calls", "input_tokens", "output_tokens"}}
    by_kind = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    held_message = models.TextField(blank=True)
    # Staff let it go past the spending limits.
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    released_at = models.DateTimeField(null=True, blank=True)
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "judge"], name="spend_estimate_unique")
        ]

    def __str__(self) -> str:
        return f"{self.submission_id} under {self.judge_id}: {self.calls} calls"


class JudgeCharge(models.Model):
    """What one stored judge answer cost, charged to the submission whose worker made the call
    (a judgment shared through the cache is paid once). Tokens are the provider's usage; when
    it reported none, characters / 4 (``estimated``). Kept when the submission is deleted: the
    money was spent."""

    submission = models.ForeignKey(
        Submission, on_delete=models.SET_NULL, null=True, related_name="judge_charges"
    )
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, related_name="+")
    judge = models.ForeignKey(Judge, on_delete=models.SET_NULL, null=True, related_name="+")
    judgment = models.ForeignKey(Judgment, on_delete=models.SET_NULL, null=True, related_name="+")
    calls = models.PositiveIntegerField(default=1, help_text="Answered calls (answer attempts)")
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    estimated = models.BooleanField(default=False)
    cost_usd = models.DecimalField(
        max_digits=16, decimal_places=8, null=True, blank=True, help_text="Empty: no price"
    )
    charged_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["team", "charged_at"]),
            models.Index(fields=["charged_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.submission_id}: {self.input_tokens}+{self.output_tokens} tokens"


class WorkerBeat(models.Model):
    """A Celery worker's last sign of life, per queue it consumes: written every few seconds by
    the worker itself (evaluation/services/workers.py), read by pages, /healthz and `submit
    --wait` to say when no worker is running."""

    worker = models.CharField(max_length=200, help_text="Celery's name for it, and its pid")
    queue = models.CharField(max_length=200)
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["worker", "queue"], name="worker_beat_unique")
        ]
        indexes = [models.Index(fields=["queue", "seen_at"])]

    def __str__(self) -> str:
        return f"{self.worker} on {self.queue}"


class PendingDeletion(models.Model):
    """A stored object whose rows are gone, waiting to be deleted from storage. Marked in the
    transaction that deletes its rows, deleted by a task retried until storage answers
    (evaluation.services.submissions.pending_deletions_run), so a delete never stops half-way:
    rows gone and bytes kept, or bytes gone and rows kept."""

    key = models.CharField(max_length=1024, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveIntegerField(default=0)
    tried_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.key
