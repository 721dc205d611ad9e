"""The interface every benchmark plug-in implements, and the declarations the engine renders.

A plug-in is one package under ``evaluation/benchmarks/<name>/`` that is also a Django app (so it
can ship templates, static files and, where JSON on the engine's rows does not serve, models of its
own). Its ``__init__.py`` exposes ``plugin``, an instance of a :class:`BenchmarkPlugin` subclass,
and the package is listed in the ``FLOORBOARD_BENCHMARKS`` setting. The engine (pipeline, board,
submission and task pages, API, exports, charts, judge agreement, rating studies, admin) reads
only what is declared here; it never names a benchmark or knows a metric key.

How a submission flows through a plug-in:

1. ``validate_upload`` reads the uploaded file once and reports every problem by task/line and
   file; nothing is stored for a rejected upload. What it found per task that the first step
   would otherwise read again (:attr:`UploadContents.findings`) is kept with the submission
   until ingest hands it to that step (:attr:`TaskInput.validated`).
2. ``ingest`` walks the stored upload and yields one :class:`IngestedTask` per task: the files
   the engine stores or references and the task's data (a prediction row, say).
3. The :attr:`steps` run in order, each per task (fanned out in chunks across workers; a chunk
   goes to ``run_task_step_batch``) or once per submission; each returns JSON merged into the
   task result's ``detection``.
4. ``judgment_requests`` lists, per task, the judge calls it needs (any number of slots per judge
   kind) and the outcomes decided without a call. Identical requests share one stored judgment
   (the cache), so a re-score calls nothing.
5. ``parse_output`` turns a judge's raw answer into a structured result.
6. ``metric_contributions`` says what each task adds to each metric; :attr:`metrics` declares
   how the board reads, sorts, rounds and bounds them. The core computes the board's values,
   intervals, slices, paired comparisons and rank ranges from those contributions
   (evaluation/slices.py), one rule per metric type. ``aggregate`` is overridden only where the
   benchmark's own results hold what no per-task sum says (a test across conditions, its
   harness's exact output); the conformance test over the registry checks every override's
   numbers against the contributions.

The ``facts`` every hook receives start as the options the submitter declared with the upload
(:attr:`UploadFormat.options`, a run mode, say), and submission-scope steps add what they find.

Everything here is plain Python: no hook receives a model instance, and pure computation stays
testable without a database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar, Literal

from evaluation.audio import AudioLimits
from evaluation.slices import board_results
from evaluation.stats import Z95

# --- Import ---------------------------------------------------------------------------------


class SourceError(ValueError):
    """The benchmark's release cannot be imported; the message names the file and record."""


@dataclass(frozen=True)
class TaskSource:
    """One task as the release defines it. ``spec`` holds every field of the task (JSON).
    ``held_out``: the release keeps this task's answers private (see Task.held_out); an import
    sets the mark and never clears one staff set."""

    task_id: str
    spec: dict
    held_out: bool = False


@dataclass(frozen=True)
class PromptSource:
    """One judge kind's prompt: the template text as the release has it, byte for byte, an
    optional JSON schema for the answer, and optional further template parts (a system
    message template beside a user message template, say)."""

    kind: str
    template: str
    schema: dict | None = None
    parts: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Asset:
    """A file of the release stored with the benchmark (a task's audio, say); ``open`` returns
    a binary stream so that nothing is held whole in memory."""

    task_id: str
    name: str
    open: Callable[[], IO[bytes]]


@dataclass(frozen=True, kw_only=True)
class ImportOption:
    """A further input an import needs besides the release directory (a prompt file the
    operator names, say): ``import_benchmark ... --<name> VALUE``."""

    name: str
    help: str
    required: bool = False


@dataclass
class Source:
    tasks: list[TaskSource]
    prompts: list[PromptSource]
    assets: Iterable[Asset] = ()


# --- Uploads --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class UploadOption:
    """A choice the submitter declares with an upload (a run mode, an output modality)."""

    name: str
    label: str
    choices: tuple[tuple[str, str], ...]
    default: str = ""
    help: str = ""


@dataclass(frozen=True)
class UploadLimits:
    """What the site allows for one upload (settings, capped by the plug-in's own limits)."""

    max_bytes: int
    max_ratio: float


@dataclass(frozen=True, kw_only=True)
class UploadFormat:
    label: str  # "a zip of the harness's scenario_* folders"
    suffixes: tuple[str, ...]  # accepted file name endings, lower case: (".zip",)
    description: str = ""
    options: tuple[UploadOption, ...] = ()
    # Directories given to the CLI are zipped before validation.
    directories_are_zipped: bool = True


@dataclass(frozen=True)
class SpanCount:
    """How many timed spans (words, speech segments) one sequence of a run holds as validation
    parsed it: a transcript, the segments given for the run. ``what`` names them as the upload
    does ("word chunks", "segments"); ``where`` says where in the file, when the file holds
    several runs ("segments.jsonl line 4"). A plug-in's validate_upload reports each one to the
    report (ValidationReport.count_spans), which refuses a count above the plug-in's
    max_spans_per_run."""

    task: str
    count: int
    what: str = "spans"
    file: str | None = None
    where: str = ""


@dataclass
class UploadContents:
    """What validation learned: the manifest describing the system, the tasks present and
    missing, the submitter's declared options, and facts for the submission."""

    manifest: dict = field(default_factory=dict)
    present: set[str] = field(default_factory=set)
    missing: list[str] = field(default_factory=list)
    options: dict = field(default_factory=dict)
    # Private state passed from validation to ingest within one process (never stored).
    extra: Any = None
    # Per task id, JSON that the first step, when it runs over the whole submission, can take
    # in place of reading the upload again (for example, evidence parsed from transcripts).
    # Stored with the submission under the plug-in's rules and step versions, handed to that
    # step once, by the ingest that follows, and dropped there. Ints stay ints and floats come
    # back exactly. A step run again later (a retry, a re-score) reads the upload.
    findings: dict[str, Any] = field(default_factory=dict)
    # Set by the core: the bytes the upload unpacks to (its zip members; 0 for a single file),
    # the most its ingest can store besides the bundle.
    unpacked_bytes: int = 0


@dataclass
class IngestedTask:
    """One task of an upload: ``files`` maps a relative name to where the engine finds it
    (``{"size": n, "entry": "<member of the stored upload>"}``), ``store`` lists the files the
    engine copies to storage one object each (audio, served with Range requests), ``data`` is
    the task's part of the upload as JSON."""

    task_id: str
    files: dict = field(default_factory=dict)
    store: list[tuple[str, Callable[[], IO[bytes]], int]] = field(default_factory=list)
    data: dict = field(default_factory=dict)


# --- Processing -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Step:
    """A processing step before judging. ``scope`` is "task" (run per task, fanned out in
    chunks across workers) or "submission" (run once over every task). ``version`` names the
    processing that produced the numbers (a model's hash, a rules revision)."""

    name: str
    scope: Literal["task", "submission"]
    label: str
    version: str = "1"
    chunk_size: int = 200


class TaskFiles:
    """The files of one task result, read lazily: from the stored upload or from storage."""

    def size(self, name: str) -> int | None:
        raise NotImplementedError

    def read(self, name: str) -> bytes:
        raise NotImplementedError

    def open(self, name: str) -> IO[bytes]:
        raise NotImplementedError

    def names(self) -> list[str]:
        raise NotImplementedError


@dataclass
class TaskInput:
    """One task of one submission as a plug-in sees it."""

    task_id: str
    spec: dict
    data: dict = field(default_factory=dict)
    detection: dict = field(default_factory=dict)
    files: TaskFiles | None = None
    # Every stored audio file of the task by name (the benchmark's, then the submission's),
    # as a storage key.
    assets: Mapping[str, str] = field(default_factory=dict)
    # What validation found for this task (UploadContents.findings), for the first step at
    # ingest only; None everywhere else.
    validated: Any = None


# --- Judging --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class JudgeKind:
    """A judged question. ``response_format`` is "json_schema" (the prompt's schema, strict),
    "json_object" or "text". ``answer_attempts``: answered calls made until one parses (the
    first parseable one decides). ``unparseable``: what an answer that never parses becomes —
    "failed" (no verdict, retryable on request) or "outcome" (a scored result, e.g. not met).
    ``output_tokens``: what to budget for one answer in the spending estimate (capped by the
    judge's max_completion_tokens when it sends one); a kind whose judges reason at length
    declares more."""

    key: str
    label: str
    response_format: Literal["json_schema", "json_object", "text"] = "json_schema"
    schema_name: str = ""
    answer_attempts: int = 1
    unparseable: Literal["failed", "outcome"] = "failed"
    description: str = ""
    output_tokens: int = 1000


@dataclass(frozen=True, kw_only=True)
class JudgeDefaults:
    """The judge a benchmark's import creates as official, as its paper or harness ran it.
    ``base_url``: the endpoint its paper called (empty: the provider's from the settings)."""

    slug: str
    name: str
    provider: str
    models_by_kind: Mapping[str, str]
    send_sampling_params: bool = True
    base_url: str = ""


@dataclass(frozen=True)
class JudgmentRequest:
    """One judged slot of one task. ``prompt`` (the user message) and ``system`` are sent;
    ``fixed`` is the outcome decided without a call (the prompt is then empty) — for example
    an empty answer that fails by rule. ``context`` is what parsing needs beyond the raw text
    (the number of rubric atoms, say); it is part of what the prompt determines."""

    kind: str
    slot: str = ""
    prompt: str = ""
    system: str = ""
    fixed: dict | None = None
    context: dict = field(default_factory=dict)
    label: str = ""  # what the slot is, for people ("rubric 3", "window 12.4-15.0 s")


@dataclass(frozen=True)
class ParsedOutput:
    """A judge answer read: ``output`` is the structured result (None: unparseable),
    ``verdict`` its summary where one exists (this slot passed or not)."""

    output: dict | None
    verdict: bool | None = None
    reasoning: str = ""
    error: str = ""


@dataclass(frozen=True)
class JudgedSlot:
    """A stored outcome handed to aggregation: ``state`` is "done", "fixed" (decided without a
    call), "failed" or "pending"."""

    state: str
    verdict: bool | None
    output: dict | None


@dataclass
class TaskOutcome:
    task_id: str
    spec: dict
    data: dict
    detection: dict
    # (kind, slot) -> JudgedSlot
    judged: dict[tuple[str, str], JudgedSlot] = field(default_factory=dict)
    present: bool = True  # the upload had this task


# --- Metrics and the board ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Metric:
    """One number of the board, read from the results at ``key`` (a dotted path, under the
    split's key when the benchmark has splits).

    type: "rate" — a node {"count", "total", "pct"}; "mean" — a node {"value", "pct"?, "ci"?};
    "duration" — seconds as a plain number; "count" — an integer; "number" — any other plain
    number (a p-value, a difference between conditions), shown with ``decimals`` (or
    ``significant`` digits) and never in percent. Counts and numbers are reported, never
    compared between systems or ranked.
    interval: "wilson" (from count/total), "bootstrap" (the node's "ci"), "none".

    Declared with every field named: ``Metric(key="apr", label="APR", interval="wilson")``.
    """

    key: str
    label: str
    group: str = ""
    type: Literal["rate", "mean", "duration", "count", "number"] = "rate"
    higher_is_better: bool = True
    chance: float | None = None
    interval: Literal["wilson", "bootstrap", "none"] = "none"
    decimals: int = 2
    unit: str = "%"
    description: str = ""
    # What one counted unit of the metric is (plural): the n behind its intervals and tests.
    units: str = "tasks"
    # What the units are nested in where one task holds several ("runs": windows of a run;
    # "cases": atoms of a case). They are not independent draws: comparisons test each task's
    # units together; a Wilson interval over them says it takes them as independent.
    nested_in: str = ""
    # A p-value (or any number spanning orders of magnitude): shown with this many significant
    # digits instead of fixed decimals.
    significant: int = 0
    # A hover text for the number, formatted with the fields of the node holding it (b, c and
    # the pairs behind a p-value, say).
    detail: str = ""

    @property
    def path(self) -> tuple[str, ...]:
        parts = tuple(self.key.split("."))
        if self.type == "rate":
            return (*parts, "pct")
        if self.type == "mean":
            return (*parts, "pct" if self.unit == "%" else "value")
        return parts

    def node(self, results: Mapping | None):
        value: Any = results
        for part in self.key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        return value

    def value(self, results: Mapping | None) -> float | None:
        value: Any = results
        for part in self.path:
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return value

    def counts(self, results: Mapping | None) -> tuple[int, int] | None:
        """(count, total) behind a rate, when known."""
        node = self.node(results)
        if self.type != "rate" or not isinstance(node, Mapping):
            return None
        count, total = node.get("count"), node.get("total")
        if isinstance(count, int) and isinstance(total, int):
            return count, total
        return None

    def stored_interval(self, results: Mapping | None) -> tuple[float, float] | None:
        node = self.node(results)
        ci = node.get("ci") if isinstance(node, Mapping) else None
        if (
            isinstance(ci, list | tuple)
            and len(ci) == 2
            and all(isinstance(v, int | float) for v in ci)
        ):
            return (float(ci[0]), float(ci[1]))
        return None


@dataclass(frozen=True, kw_only=True)
class Split:
    """A part of the benchmark scored and ranked on its own, never pooled (a language, a
    condition). Results hold one entry per split under ``key``."""

    key: str
    label: str


@dataclass(frozen=True, kw_only=True)
class RowGroup:
    """A group of rows on the board, in declaration order (the paper's system types)."""

    key: str
    label: str


@dataclass(frozen=True, kw_only=True)
class Chart:
    """A chart the board draws: "scatter" (metric x against metric y, one point per system) or
    "bars" (the metrics side by side per system, with chance lines)."""

    kind: Literal["scatter", "bars"]
    title: str
    metrics: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class TaskFilter:
    """A filter of the per-task drill-down and the API: ``source`` is "spec" (a task field) or
    "detection" (a processing output); ``field`` the key there; ``type`` "choice" (values
    listed, or read from the tasks when empty) or "bool"."""

    name: str
    label: str
    source: Literal["spec", "detection"]
    field: str
    type: Literal["choice", "bool"] = "choice"
    choices: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class SliceAttribute:
    """A task attribute the board can be sliced by (every metric recomputed on the tasks that
    have a value): ``name`` is the key task_attributes() returns; ``type`` "choice" or "bool"."""

    name: str
    label: str
    type: Literal["choice", "bool"] = "choice"


@dataclass(frozen=True, kw_only=True)
class TaskColumn:
    """A column of the per-task table: the value at ``field`` of the task's spec, data or
    detection; ``format`` "text", "bool", "seconds" or "truncate"."""

    label: str
    source: Literal["spec", "data", "detection"]
    field: str
    format: Literal["text", "bool", "seconds", "truncate"] = "text"


@dataclass(frozen=True)
class TimelineSpan:
    start: float
    end: float
    text: str = ""
    css: str = ""  # a class the template styles ("post", "label-T", ...)


@dataclass(frozen=True)
class TimelineLane:
    """One row of a task's timeline; ``player`` names the clip that clicking a span seeks."""

    label: str
    spans: tuple[TimelineSpan, ...]
    player: str = ""


@dataclass(frozen=True)
class Timeline:
    """Lanes of timed spans on one time axis, with labelled markers (seconds). The engine lays
    it out with a bounded number of ticks whatever the times."""

    lanes: tuple[TimelineLane, ...]
    markers: tuple[tuple[float, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class ClipSpec:
    """An audio clip a page or a rater plays: a storage key with what it is, and markers.
    ``role`` "response" marks the system's own output (raters may be asked to play it through);
    ``start``/``end`` the part that matters (a time window), in seconds."""

    key: str
    label: str
    name: str = ""
    start: float | None = None
    end: float | None = None
    markers: tuple[tuple[float, str], ...] = ()
    role: Literal["context", "response"] = "context"


# --- Rating studies -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class StudyKind:
    """A kind of item human raters label, checked against one judge kind. ``labels`` is the
    label set; the first is the judge's verdict True, the second its False."""

    key: str
    label: str
    judge_kind: str
    labels: tuple[str, str]
    question: str = ""
    # What raters read before they start; "" : written from the question and the labels
    # (kind_guideline).
    guideline: str = ""


@dataclass(frozen=True, kw_only=True)
class CalibratedMetric:
    """A judged metric that human labels can calibrate. Its judge value is the mean, over a
    submission's units, of the judge's outcome on each unit (1 when the judge gave the study
    kind's first label); a calibration study of ``study_kind`` samples those units at random
    and people label them, and the board then shows the value people would give, with an
    interval (prediction-powered inference).

    unit: "unit" — each study unit is one outcome; "task" — a task's outcome is 1 when every
    unit of it is positive, and only tasks whose every unit was labelled count as labelled.
    estimator: "mean" — the metric is the mean of the outcomes; "ratio" — a ratio of two
    means, calibrated by the delta method.
    """

    metric: str
    study_kind: str
    unit: Literal["unit", "task"] = "unit"
    estimator: Literal["mean", "ratio"] = "mean"


def kind_guideline(kind: StudyKind) -> str:
    """The guideline a new study of this kind starts from: the kind's own, else one written
    from its question and its two labels. One paragraph per line: the page wraps them."""
    if kind.guideline:
        return kind.guideline
    yes, no = kind.labels
    question = kind.question or f"{kind.label}: which label fits the agent's response?"
    return (
        f"Read (and listen to) the conversation and the agent's response, then answer: "
        f"{question}\n\n"
        f"{yes.capitalize()}: yes, it does.\n\n"
        f"{no.capitalize()}: no, it does not.\n\n"
        "If the audio does not play or is too damaged to judge, choose \"Can't judge: audio "
        'problem". Judge the response itself; do not guess which system produced it.'
    )


@dataclass(frozen=True)
class StudyUnit:
    """One thing a rater labels: what they read and hear, and the judge's label for it
    (None: the judge gave none). ``slot`` identifies it within the task (a rubric atom)."""

    slot: str
    transcript: list[dict]
    response_text: str
    clips: tuple[ClipSpec, ...]
    judge_label: str | None
    prompt: str = ""  # the question put to the rater about this unit


@dataclass(frozen=True, kw_only=True)
class FactBadge:
    """A badge the board shows beside a submission whose ``facts`` hold ``value`` under
    ``fact`` (results scored from measurements the submitter made, say)."""

    fact: str
    value: Any
    label: str
    title: str = ""


# --- Reported rows and the demo -------------------------------------------------------------


@dataclass(frozen=True)
class ReportedRow:
    """A row as a paper printed it: results in the plug-in's structure (counts null when the
    paper gave only percentages) and what the paper says of the system."""

    system: str
    results: dict
    row_group: str = ""
    facts: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class DemoRun:
    """A submission of the demo: an upload file the demo wrote and the system behind it."""

    path: Path
    system: str
    row_group: str = ""
    manifest: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)


# --- The plug-in ----------------------------------------------------------------------------


class BenchmarkPlugin:
    """Base class of a benchmark plug-in. Subclasses set the declarations and implement the
    hooks; every hook documents what the engine passes and expects. The registry refuses a
    plug-in whose declarations name something it does not declare (checks.py)."""

    slug: ClassVar[str]  # the registry key and the default benchmark slug
    name: ClassVar[str]
    description: ClassVar[str] = ""
    # Bumped whenever the plug-in's scoring rules change the numbers (shown beside each score).
    rules_version: ClassVar[str] = "1"
    # What each rules version changed and why (rules_version -> text): the scorer changelog's
    # first note for it.
    rules_notes: ClassVar[dict[str, str]] = {}
    upload: ClassVar[UploadFormat]
    import_options: ClassVar[tuple[ImportOption, ...]] = ()
    steps: ClassVar[tuple[Step, ...]] = ()
    judge_kinds: ClassVar[tuple[JudgeKind, ...]] = ()
    official_judge: ClassVar[JudgeDefaults | None] = None
    metrics: ClassVar[tuple[Metric, ...]] = ()
    splits: ClassVar[tuple[Split, ...]] = ()
    row_groups: ClassVar[tuple[RowGroup, ...]] = ()
    rank_keys: ClassVar[tuple[str, ...]] = ()
    charts: ClassVar[tuple[Chart, ...]] = ()
    task_filters: ClassVar[tuple[TaskFilter, ...]] = ()
    slices: ClassVar[tuple[SliceAttribute, ...]] = ()
    task_columns: ClassVar[tuple[TaskColumn, ...]] = ()
    study_kinds: ClassVar[tuple[StudyKind, ...]] = ()
    # Judged metrics that a calibration study can correct with human labels.
    calibrated_metrics: ClassVar[tuple[CalibratedMetric, ...]] = ()
    # The calibrated column (a key calibrated_metrics makes: "<split>.<metric>" where there are
    # splits) whose demo systems the judge puts close enough for the demo's simulated people to
    # reorder: the demo seeds its calibration study there, on the first plug-in that names one.
    demo_calibration: ClassVar[str] = ""
    # The key of a task's spec that names its language, where the tasks come in several: a
    # rating study can keep to one (raters are shown items in a language they read).
    task_language: ClassVar[str] = ""
    # The drill-down of one task: a template of the plug-in's package, given task_context().
    task_template: ClassVar[str] = ""
    # Plain-language notes for the benchmark's page: the rules and the decisions taken.
    rules: ClassVar[tuple[str, ...]] = ()
    # How to cite the benchmark (BibTeX, as its authors give it); empty: no "cite" block.
    citation: ClassVar[str] = ""
    # What is known of the official judge's agreement with people, in plain sentences naming
    # their source (a paper's section, say); shown on the benchmark's About page.
    judge_validation: ClassVar[tuple[str, ...]] = ()
    reported_source: ClassVar[str] = ""
    # Submission-wide facts a step records, shown on the submission page: (key, label).
    facts: ClassVar[tuple[tuple[str, str], ...]] = ()
    # Badges the board shows beside a submission, from its facts.
    fact_badges: ClassVar[tuple[FactBadge, ...]] = ()
    # The row group of a submission that declares none (empty: the first group).
    default_row_group: ClassVar[str] = ""
    # The normal quantile of every Wilson interval of this benchmark (a benchmark whose paper
    # prints 1.96 declares it; otherwise the exact 95% quantile).
    wilson_z: ClassVar[float] = Z95
    # Bytes allowed for an upload of this benchmark once uncompressed.
    max_upload_bytes: ClassVar[int] = 4 * 1024**3
    # The most zip entries one task of a real run needs (folders count too); an upload holding
    # more than this per task of the benchmark, plus a few, is refused before its directory is
    # read.
    max_entries_per_task: ClassVar[int] = 32
    # What one WAV of an upload may be. The core checks every WAV member of every zip upload
    # against it from its header (bundles.audio_members_check) before the plug-in reads the
    # upload: a benchmark whose audio is longer or richer declares its own.
    audio_limits: ClassVar[AudioLimits] = AudioLimits(
        max_seconds=10 * 60, max_bytes=256 * 1024**2, max_channels=2, max_sample_rate=48_000
    )
    # The most timed spans (words, speech segments) one sequence of a run may hold: a run lasts
    # minutes, with hundreds of words. validate_upload reports what each run holds as it parses
    # it (report.count_spans, a SpanCount per transcript or list of segments); the core's report
    # refuses a count above this at once, so a run that would make its page draw that many
    # spans, or its steps read them, is refused before anything is stored.
    max_spans_per_run: ClassVar[int] = 5_000

    # --- import ---

    def read_source(self, directory: Path, **options) -> Source:
        """Tasks, prompts and assets from the benchmark's own release (``options``: the values
        of :attr:`import_options`). Raise SourceError naming the file and record for anything
        the rules cannot score."""
        raise NotImplementedError

    # --- uploads ---

    def validate_upload(
        self,
        path: Path,
        report,
        *,
        tasks: Mapping[str, dict],
        allow_partial: bool,
        options: Mapping[str, str],
        limits: UploadLimits,
    ) -> UploadContents:
        """Read the upload once and add every problem to ``report`` (a ValidationReport).
        ``tasks`` maps task id to spec. Missing tasks are problems unless ``allow_partial``."""
        raise NotImplementedError

    def ingest(
        self, handle: IO[bytes], *, tasks: Mapping[str, dict], limits: UploadLimits
    ) -> Iterator[IngestedTask]:
        """Walk the stored upload (a seekable binary file) once, yielding the tasks it holds.
        The upload validated before it was stored."""
        raise NotImplementedError

    # --- processing ---

    def run_task_step(self, step: Step, task: TaskInput, *, facts: Mapping) -> dict:
        """A task-scope step's output for one task (merged into its detection)."""
        raise NotImplementedError

    def run_task_step_batch(
        self, step: Step, tasks: Sequence[TaskInput], *, facts: Mapping
    ) -> dict[str, dict]:
        """A task-scope step over one chunk of tasks (at most ``step.chunk_size``): output by
        task id. The engine calls this; the default runs :meth:`run_task_step` per task.
        Override it when tasks go faster together (several runs through a model at once)."""
        return {task.task_id: self.run_task_step(step, task, facts=facts) for task in tasks}

    def run_submission_step(
        self, step: Step, tasks: Sequence[TaskInput], *, facts: Mapping
    ) -> tuple[dict, dict[str, dict]]:
        """A submission-scope step: (facts for the submission, detection per task id)."""
        raise NotImplementedError

    # --- judging ---

    def judgment_requests(
        self, task: TaskInput, *, prompts: Mapping[str, Any], facts: Mapping
    ) -> list[JudgmentRequest]:
        """Every judged slot of a task. ``prompts`` maps a judge kind to its current prompt
        version (``.template``, ``.parts``, ``.schema``). Tasks absent from the upload are
        passed too (``task.data`` empty, no files) when the rules judge them."""
        raise NotImplementedError

    def parse_output(self, kind: str, raw_output: str, *, context: Mapping) -> ParsedOutput:
        raise NotImplementedError

    def offline_output(self, request: JudgmentRequest, task: TaskInput) -> str:
        """The raw answer of the offline judge (a documented heuristic, not a model)."""
        raise NotImplementedError

    # --- scoring ---

    def aggregate(self, outcomes: Sequence[TaskOutcome], *, facts: Mapping) -> dict:
        """The benchmark's results from every task's outcome; never calls a judge. By default
        the core's, from the contributions (slices.board_results): a rate {"count", "total",
        "pct"}, a mean {"pct" or "value", "n", "ci"}, a duration, count or number its value.
        Override it only for what the benchmark's rules cannot say per task (a test across
        conditions, its harness's own output format), and say why; the conformance test over
        the registry (tests/benchmarks/test_contributions.py) checks that every metric the
        override reports equals the one its contributions give."""
        return board_results(self, outcomes, facts=facts)

    def metric_contributions(self, outcome: TaskOutcome, *, facts: Mapping) -> dict:
        """What one task adds to each metric, as (numerator, denominator) by the column's key
        (the split's key first where there are splits), or a list of such pairs, one per unit
        of the task (windows of a run, atoms of a case): every metric of the board is then
        sum(numerators) / sum(denominators) over its units, rounded by :meth:`metric_value`,
        so the board, any subset of tasks (a slice) and any two systems on the same tasks (a
        paired comparison) are computed from the stored contributions. A rate's numerator is
        the units passed, its denominator the units counted; a mean's numerator the task's
        value, its denominator 1; a duration's the seconds and 1; a count's the count and 1. A
        metric a task does not count in gets (0, 0). Every plug-in implements this (or
        :meth:`task_contributions`): the registry refuses one that does not."""
        return {}

    def task_contributions(self, outcomes: Sequence[TaskOutcome], *, facts: Mapping) -> list:
        """Every task's metric_contributions, in the order of ``outcomes``. A plug-in whose
        contributions depend on the whole upload (the languages it covers, say) overrides this
        one instead."""
        return [self.metric_contributions(outcome, facts=facts) for outcome in outcomes]

    def metric_value(self, metric: Metric, numerator: float, denominator: float):
        """A metric's value from its summed contributions, rounded as the benchmark rounds
        (None where it is undefined). The default: percent with Python's round() for rates and
        percent means, the value itself otherwise."""
        if not denominator:
            return None
        value = numerator / denominator
        if metric.unit == "%":
            value *= 100
        return round(value, metric.decimals)

    def mean_interval(
        self, metric: Metric, task_ids: Sequence[str], numerators, denominators
    ) -> tuple[float, float] | None:
        """The 95% interval, in the metric's unit, of a "bootstrap" mean on these tasks (a
        slice of the board: the tasks that count in it, in task-id order, with each task's
        summed contributions as numpy arrays), where the benchmark fixes its own procedure:
        the board's column and a slice of the same tasks then show one interval. None: the
        core's bootstrap (evaluation/slices.py)."""
        return None

    def metric_counts(self, metric: Metric, results: Mapping | None) -> tuple | None:
        """(count, denominator) behind a metric's value in ``results``, for the command line
        and the API: a rate's own counts by default. A mean whose numerator is a sum (of
        per-task fractions, say) may report that sum and its number of units."""
        return metric.counts(results)

    def task_attributes(self, task_id: str, spec: Mapping) -> dict:
        """The values of the slice attributes for one task (default: the spec's fields)."""
        return {attribute.name: spec.get(attribute.name) for attribute in self.slices}

    # --- pages ---

    def task_context(self, task: TaskInput, *, judged: Mapping) -> dict:
        """Context for ``task_template``. Audio is named as ClipSpec under "clips" (the engine
        signs the URLs); ``judged`` maps (kind, slot) to the stored outcome."""
        return {}

    def group_for(self, *, manifest: Mapping, declared: str) -> str:
        """The board row group of a submission: what the submitter declared, else the
        manifest's, else the first declared group."""
        keys = [group.key for group in self.row_groups]
        for value in (declared, str(manifest.get("system_type", "") or "")):
            if value in keys:
                return value
        return self.default_row_group or (keys[0] if keys else "")

    # --- rating studies ---

    def study_units(self, kind: StudyKind, task: TaskInput, *, judged: Mapping) -> list[StudyUnit]:
        """What raters label for one task under a study kind (none: nothing to rate)."""
        return []

    # --- reported rows and the demo ---

    def reported_rows(self) -> list[ReportedRow]:
        return []

    def write_demo_source(self, directory: Path) -> None:
        """An invented release in the benchmark's format, for the demo and tests."""
        raise NotImplementedError

    def write_demo_runs(self, directory: Path) -> list[DemoRun]:
        """Uploads of invented systems for the demo, written under ``directory``. The first is
        the About page's example upload: a good, complete run (every task, real answers) in the
        benchmark's primary format, with the options it declares."""
        return []

    # --- helpers ---

    def overrides(self, hook: str) -> bool:
        """Whether this plug-in implements ``hook`` itself rather than inheriting the base
        class's (its own aggregate, its own mean interval, ...)."""
        return getattr(type(self), hook) is not getattr(BenchmarkPlugin, hook)

    def judge_kind(self, key: str) -> JudgeKind:
        for kind in self.judge_kinds:
            if kind.key == key:
                return kind
        raise KeyError(f"{self.slug} has no judge kind {key!r}")

    def metric(self, key: str) -> Metric:
        for metric in self.metrics:
            if metric.key == key:
                return metric
        raise KeyError(f"{self.slug} has no metric {key!r}")

    def study_kind(self, key: str) -> StudyKind:
        for kind in self.study_kinds:
            if kind.key == key:
                return kind
        raise KeyError(f"{self.slug} has no study kind {key!r}")

    def row_group_label(self, key: str) -> str:
        return next((g.label for g in self.row_groups if g.key == key), key)
