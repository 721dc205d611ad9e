"""Human rating studies: what raters label, who rates, what each rating was made under.

Items snapshot everything a rater needs (transcript, response, audio keys and hashes) plus the
judge's verdict, which raters never see. Assignments are the locks that keep at most `overlap`
raters on an item; a rating is keyed on its assignment so a double submit is stored once.
"""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q

from evaluation.models import Benchmark, Judge, Submission, TaskResult


class Study(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft (not rating yet)"
        OPEN = "open", "Open for rating"
        CLOSED = "closed", "Closed"

    class TieRule(models.TextChoices):
        DROP = "drop", "Drop the item"
        DISAGREE = "disagree", "Count as disagreement"

    name = models.CharField(max_length=200, help_text="The owner's own title: raters never see it")
    # What raters see above every item; empty: the benchmark and the kind of item they label.
    rater_title = models.CharField(max_length=200, blank=True)
    slug = models.SlugField(unique=True)
    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="+")
    judge = models.ForeignKey(
        Judge, on_delete=models.PROTECT, related_name="+", help_text="Whose verdicts are checked"
    )
    kind = models.CharField(
        max_length=50, help_text="What raters label: a study kind of the plug-in"
    )
    # The judge's True verdict maps to positive_label, False to negative_label.
    positive_label = models.CharField(max_length=50, default="consistent")
    negative_label = models.CharField(max_length=50, default="inconsistent")
    strata = models.ManyToManyField(
        Submission, related_name="+", help_text="Sampled submissions, one stratum each"
    )
    # Only tasks in this language are sampled, on a benchmark whose tasks have one; "" : any.
    language = models.CharField(max_length=20, blank=True)
    per_stratum = models.PositiveIntegerField(default=20, validators=[MinValueValidator(1)])
    seed = models.IntegerField(default=0)
    skip_empty_responses = models.BooleanField(
        default=True, help_text="Sample only tasks where the agent said something to judge"
    )
    overlap = models.PositiveIntegerField(default=3, validators=[MinValueValidator(1)])
    batch_size = models.PositiveIntegerField(default=30, validators=[MinValueValidator(1)])
    gold_per_batch = models.PositiveIntegerField(default=0)
    attention_per_batch = models.PositiveIntegerField(default=0)
    require_play_through = models.BooleanField(
        default=False, help_text="The response clip must be played to the end before submitting"
    )
    lock_minutes = models.PositiveIntegerField(
        default=60,
        validators=[MinValueValidator(1)],
        help_text="An unfinished batch keeps its items this long after the rater's last action",
    )
    allow_accounts = models.BooleanField(
        default=False, help_text="Signed-in users may join as raters without an invite"
    )
    tie_rule = models.CharField(max_length=10, choices=TieRule.choices, default=TieRule.DROP)
    # The calibrated metric this study's sample calibrates (a key of the plug-in's
    # calibrated_metrics); "" : an agreement study, never used for calibration.
    calibrated_metric = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(batch_size__gt=F("gold_per_batch") + F("attention_per_batch")),
                name="study_batch_has_sample_room",
            ),
            models.CheckConstraint(condition=Q(overlap__gte=1), name="study_overlap_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def labels(self) -> tuple[str, str]:
        return (self.positive_label, self.negative_label)

    def verdict_label(self, verdict: bool | None) -> str | None:
        if verdict is None:
            return None
        return self.positive_label if verdict else self.negative_label


def item_clip(item, name: str) -> dict | None:
    return next((clip for clip in item.clips if clip.get("name") == name), None)


class CalibrationStratum(models.Model):
    """One stratum (a submission) of a calibration study: every unit the calibrated metric
    counts for that submission, as the judge decided it when the study was sampled, and which
    of them were drawn. ``draws`` are what the sampler may draw (a unit, or a whole task for a
    metric counted per task): [[task result id, [slots], judge outcome 0/1], ...]; ``fixed``
    are the outcomes of units the board decides without the judge's label (a verdict decided
    without a call, a unit the judge never saw), which count with people's outcome equal to
    the judge's and inclusion probability 1; ``order`` is the seeded random permutation of the
    draws, of which the first ``sampled`` are in the study."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="calibration_strata")
    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="+")
    draws = models.JSONField(default=list)
    fixed = models.JSONField(default=list)
    order = models.JSONField(default=list)
    sampled = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["study", "submission"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "submission"], name="calibration_stratum_once_per_study"
            )
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} stratum {self.submission_id}"

    @property
    def population(self) -> int:
        """N_h: how many draws the sampler draws from."""
        return len(self.draws)

    @property
    def inclusion_probability(self) -> float:
        return self.sampled / len(self.draws) if self.draws else 0.0


class Guideline(models.Model):
    """One version of the instructions raters see. Versions are never edited, only added."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="guidelines")
    version = models.PositiveIntegerField()
    text = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["study", "version"], name="guideline_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} guideline v{self.version}"


class Item(models.Model):
    class Role(models.TextChoices):
        SAMPLE = "sample", "Sampled"
        GOLD = "gold", "Gold (known answer)"
        ATTENTION = "attention", "Attention check"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    code = models.CharField(max_length=32, unique=True)
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.SAMPLE)
    # Hidden from raters: which submission (system) produced the response.
    stratum = models.ForeignKey(
        Submission, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    task_result = models.ForeignKey(
        TaskResult, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    task_id = models.CharField(max_length=200, blank=True)
    # Seeded at sampling: the order in which fresh items are handed out.
    shuffle_key = models.BigIntegerField(default=0)
    # Which unit of the task raters label (a rubric atom, a time window; "" for the task).
    slot = models.CharField(max_length=100, blank=True, default="")
    transcript = models.JSONField(default=list, help_text='[{"speaker": ..., "text": ...}]')
    response_text = models.TextField(blank=True)
    prompt = models.TextField(blank=True, help_text="The question put to raters about this unit")
    instruction = models.TextField(blank=True, help_text="Shown above an attention check")
    # What raters hear, in order: [{"name", "role": "context"|"response", "label", "key",
    # "sha256", "start", "end"}]. Keys never reach raters.
    clips = models.JSONField(default=list, blank=True)
    # Hidden from raters: the study judge's label for this unit at sampling time (null: none).
    judge_label = models.CharField(max_length=50, null=True, blank=True)  # noqa: DJ001
    # A calibration study's sampled items: the chance that this unit (or, for a metric counted
    # per task, its task) was drawn, n_h / N_h of its stratum. Null elsewhere.
    inclusion_probability = models.FloatField(null=True, blank=True)
    expected_label = models.CharField(max_length=50, blank=True, help_text="Gold and attention")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "shuffle_key"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "task_result", "slot"],
                condition=Q(task_result__isnull=False),
                name="item_unit_once_per_study",
            )
        ]
        indexes = [models.Index(fields=["study", "role", "shuffle_key"])]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.code}"


class Rater(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="raters")
    name = models.CharField(max_length=100, help_text="Shown to staff only")
    token = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="rater_roles",
    )
    seed = models.BigIntegerField(help_text="Shuffles this rater's item order")
    is_active = models.BooleanField(default=True, help_text="Off: the invite link stops working")
    is_excluded = models.BooleanField(
        default=False, help_text="Figures are also reported without this rater"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "user"],
                condition=Q(user__isnull=False),
                name="rater_one_per_user_per_study",
            )
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.name}"


class Batch(models.Model):
    """One session's worth of items (the paper's 30), claimed together and rated in order."""

    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="batches")
    number = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["rater", "number"]
        constraints = [
            models.UniqueConstraint(fields=["rater", "number"], name="batch_number_unique")
        ]

    def __str__(self) -> str:
        return f"{self.rater} batch {self.number}"


class Assignment(models.Model):
    """One item in one rater's batch. While OPEN and locked_until is in the future it holds one
    of the item's `overlap` places; an expired one may be taken over by another rater."""

    class Status(models.TextChoices):
        OPEN = "open"
        SUBMITTED = "submitted"
        RELEASED = "released", "Released (lock expired and taken over)"

    code = models.CharField(max_length=32, unique=True)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    position = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    locked_until = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    first_shown_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Where the rater was, so a reopened link resumes there: {"label": ..., "positions": {...}}.
    draft = models.JSONField(default=dict, blank=True)
    active_ms = models.PositiveBigIntegerField(default=0, help_text="Time on task, tab visible")
    label_changes = models.PositiveIntegerField(default=0)
    first_label = models.CharField(max_length=50, blank=True)
    response_played_through = models.BooleanField(default=False)

    class Meta:
        ordering = ["batch", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "rater"], name="assignment_item_rater_unique"),
            models.UniqueConstraint(
                fields=["batch", "position"], name="assignment_position_unique"
            ),
        ]
        indexes = [models.Index(fields=["item", "status", "locked_until"])]

    def __str__(self) -> str:
        return f"{self.rater} #{self.position} ({self.status})"


class Rating(models.Model):
    """A submitted label. label is null for "can't judge" (missing, never a label)."""

    class Missing(models.TextChoices):
        AUDIO_PROBLEM = "audio_problem", "Can't judge: audio problem"

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="rating")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="ratings")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="ratings")
    # NULL, not "": a missing answer must never be mistaken for a label.
    label = models.CharField(max_length=50, null=True, blank=True)  # noqa: DJ001
    missing_reason = models.CharField(max_length=20, choices=Missing.choices, blank=True)
    guideline = models.ForeignKey(Guideline, on_delete=models.PROTECT, related_name="ratings")
    time_on_task_ms = models.PositiveBigIntegerField(default=0)
    label_changes = models.PositiveIntegerField(default=0)
    first_label = models.CharField(max_length=50, blank=True)
    response_played_through = models.BooleanField(default=False)
    shown_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The rater's note on the item, and whether they flagged it as a problem (an item staff
    # should look at: broken audio, an unclear question).
    comment = models.TextField(blank=True, max_length=2000)
    flagged = models.BooleanField(default=False)
    # Changed after it was first submitted (the rater went back within their batch).
    revised_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["item", "rater"]
        constraints = [
            models.UniqueConstraint(fields=["item", "rater"], name="rating_item_rater_unique"),
            models.CheckConstraint(
                condition=(Q(label__isnull=True) & ~Q(missing_reason=""))
                | (Q(label__isnull=False) & Q(missing_reason="")),
                name="rating_label_xor_missing",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item} by {self.rater}: {self.label or self.missing_reason}"


class RatingEvent(models.Model):
    """What the rater did on an item: playback, seeking, speed, label choices, tab visibility."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="events")
    # One page load of the item and the event's number within it: a resent event is kept once.
    page = models.CharField(max_length=32)
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=20)
    player = models.CharField(max_length=20, blank=True)
    position = models.FloatField(null=True, blank=True)
    value = models.CharField(max_length=50, blank=True)
    client_ms = models.PositiveBigIntegerField(default=0, help_text="ms since the page loaded")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["assignment", "created_at", "page", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "page", "seq"], name="rating_event_once")
        ]

    def __str__(self) -> str:
        return f"{self.assignment_id} {self.kind}"


class Snapshot(models.Model):
    """The exact ratings behind a set of reported figures, frozen with a hash to cite."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="snapshots")
    sha256 = models.CharField(max_length=64, help_text="Of ratings, parameters and figures")
    inputs_sha256 = models.CharField(max_length=64, help_text="Of ratings and parameters")
    ratings = models.JSONField()
    parameters = models.JSONField()
    figures = models.JSONField()
    rating_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["study", "sha256"], name="snapshot_unique"),
        ]
        indexes = [models.Index(fields=["study", "inputs_sha256"])]

    def __str__(self) -> str:
        return f"{self.study.slug} snapshot {self.sha256[:12]}"
