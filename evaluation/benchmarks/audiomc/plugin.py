"""Audio MultiChallenge as a Floorboard plug-in: the declarations the engine renders and the
hooks it calls.

The benchmark's rules live beside this file (dataset.py, responses.py, judge.py, metrics.py;
see SPEC.md of the benchmark); importer.py, upload.py, judging.py, outcomes.py and drilldown.py
map them onto the plug-in interface.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

from evaluation.benchmarks.base import (
    BenchmarkPlugin,
    CalibratedMetric,
    Chart,
    DemoRun,
    ImportOption,
    IngestedTask,
    JudgeDefaults,
    JudgeKind,
    JudgmentRequest,
    Metric,
    ParsedOutput,
    ReportedRow,
    RowGroup,
    SliceAttribute,
    Source,
    StudyKind,
    StudyUnit,
    TaskColumn,
    TaskFilter,
    TaskInput,
    TaskOutcome,
    UploadFormat,
    UploadOption,
)

from . import demo, drilldown, importer, judging, paper, upload
from . import outcomes as scoring
from .dataset import AXES
from .demo.offline import offline_raw_output
from .judge import DEFAULT_MODEL, JUDGE_KIND
from .metrics import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, ars_interval
from .upload import AUDIO_LIMITS

AXIS_LABELS = {
    "INFERENCE_MEMORY": "Inference memory",
    "INSTRUCTION_RETENTION": "Instruction retention",
    "SELF_COHERENCE": "Self-coherence",
    "VOICE_EDITING": "Voice editing",
}
OVERALL = "Overall"
INTERVAL = (
    f"95% percentile interval of {BOOTSTRAP_RESAMPLES:,} task resamples (seed {BOOTSTRAP_SEED})"
)
NOT_STATED = "not-stated"


def _metrics(*, prefix: str, group: str, tasks: str) -> tuple[Metric, ...]:
    return (
        Metric(
            key=f"{prefix}.apr",
            label="APR",
            group=group,
            # One pass or fail per task: the Wilson interval of the count, which never
            # collapses to zero width at 0 or n passes (the results keep the benchmark's own
            # bootstrap interval too).
            interval="wilson",
            description=f"average pass rate: {tasks} whose every rubric item was met; 95% "
            "Wilson interval",
        ),
        Metric(
            key=f"{prefix}.ars",
            label="ARS",
            group=group,
            type="mean",
            interval="bootstrap",
            description=f"average rubric score: the share of items met per task, averaged over "
            f"{tasks} with equal weight; {INTERVAL}",
        ),
    )


class AudioMultiChallenge(BenchmarkPlugin):
    slug = "audio-multichallenge"
    name = "Audio MultiChallenge"
    description = (
        "452 multi-turn spoken conversations over four axes (inference memory, instruction "
        "retention, self-coherence, voice editing): the model gives the final assistant turn "
        "after hearing the user's turns, and a judge checks each of 1,712 rubric items."
    )
    rules_version = "spec-1"
    upload = UploadFormat(
        label="a replies JSONL (or a zip of it with each reply's audio)",
        suffixes=(".jsonl", ".zip"),
        description=(
            'One JSON object per line and task: {"id": task id, "response": the final reply as '
            'text} ("model_response" is accepted too; null is an empty reply). An audio-output '
            "system gives the transcript of its reply as the text, and may add the audio as "
            "<id>.wav (or .mp3, .flac, ...) beside the JSONL in a zip, for playback only; a "
            "manifest.json may describe the system. Duplicate and unknown ids are rejected with "
            "their line."
        ),
        options=(
            UploadOption(
                name="output_modality",
                label="Output modality",
                choices=(
                    ("text", "Text output"),
                    ("audio", "Audio output (scored on its transcript)"),
                ),
                default="text",
                help="The paper reports text-output and audio-output systems apart; the board "
                "labels the row so.",
            ),
        ),
    )
    import_options = (
        ImportOption(
            name="judge-prompt",
            help="the file holding the dataset card's judge prompt between its BEGIN/END TEMPLATE "
            "lines; read at import, never copied (a parquet export carries no dataset card)",
            required=True,
        ),
    )
    judge_kinds = (
        JudgeKind(
            key=JUDGE_KIND,
            label="Rubric item",
            response_format="text",
            answer_attempts=3,
            unparseable="outcome",
            description=(
                "One call per task and rubric item: the prompt with the conversation's "
                "transcripts and the submitted reply, one user message. Only a JSON boolean "
                "criteria_met counts; an answer without one is asked for again, three answers "
                "in all, then the item is not met."
            ),
        ),
    )
    official_judge = JudgeDefaults(
        slug="official",
        name=f"Dataset card judge: {DEFAULT_MODEL} (OpenAI, API defaults)",
        provider="openai",
        models_by_kind={JUDGE_KIND: DEFAULT_MODEL},
        # o4-mini takes only its default temperature; nothing else is stated.
        send_sampling_params=False,
    )
    metrics = (
        *_metrics(prefix="overall", group=OVERALL, tasks="all 452 tasks"),
        *(
            metric
            for axis in AXES
            for metric in _metrics(
                prefix=f"by_axis.{axis}",
                group=AXIS_LABELS[axis],
                tasks=f"the {AXIS_LABELS[axis].lower()} tasks",
            )
        ),
        Metric(
            key="overall.rubric_item_rate",
            label="Items met (diagnostic)",
            group=OVERALL,
            description="rubric items met over all items (micro); a diagnostic, not a paper metric",
        ),
    )
    row_groups = (
        RowGroup(key="text-output", label="Text output"),
        RowGroup(key="audio-output", label="Audio output (scored on a transcript)"),
        RowGroup(key=NOT_STATED, label="Output modality not stated (paper rows)"),
    )
    default_row_group = "text-output"
    rank_keys = ("overall.apr", "overall.ars")
    slices = (
        SliceAttribute(name="axis", label="Axis"),
        SliceAttribute(name="user_turns", label="User turns"),
    )
    charts = (
        Chart(
            kind="bars", title="APR by axis", metrics=tuple(f"by_axis.{axis}.apr" for axis in AXES)
        ),
        Chart(
            kind="bars", title="ARS by axis", metrics=tuple(f"by_axis.{axis}.ars" for axis in AXES)
        ),
        Chart(kind="scatter", title="ARS against APR", metrics=("overall.apr", "overall.ars")),
    )
    task_filters = (
        # The number of user turns is a slice of the board; a filter compares text.
        TaskFilter(
            name="axis",
            label="Axis",
            source="spec",
            field="axis",
            choices=tuple(AXIS_LABELS.items()),
        ),
    )
    task_columns = (
        TaskColumn(label="Axis", source="spec", field="axis"),
        TaskColumn(label="User turns", source="spec", field="last_user_turn"),
        TaskColumn(label="Reply", source="data", field="response", format="truncate"),
    )
    study_kinds = (
        StudyKind(
            key="rubric_item",
            label="Rubric items",
            judge_kind=JUDGE_KIND,
            labels=("met", "not met"),
            question="Does the assistant's last reply meet this rubric item?",
        ),
    )
    # The item rate is the mean over rubric items; APR passes a task whose every item was met.
    # Its demo has 48 tasks per submission, two systems' APR close together.
    demo_calibration = "overall.apr"
    calibrated_metrics = (
        CalibratedMetric(metric="overall.rubric_item_rate", study_kind="rubric_item"),
        CalibratedMetric(metric="overall.apr", study_kind="rubric_item", unit="task"),
    )
    task_template = "audiomc/task.html"
    rules = (
        "The model hears the user's turns 1..L as audio, with the dataset's reference assistant "
        "replies between them as text, and gives the final reply; only that reply is scored.",
        "Each rubric item is judged on its own: the judge reads the transcripts (stripped, empty "
        "turns left out) with the submitted reply verbatim as the last assistant turn, and the "
        "item. Only a JSON boolean criteria_met counts; an unparseable answer is asked for "
        "again, three answers at most, then the item is not met.",
        "A judge call that fails (timeouts, 429, 5xx after the retries) leaves the item failed, "
        "shown and retryable, and the result incomplete, rather than silently not met.",
        "APR: the share of tasks whose every item was met. ARS: each task's share of items met, "
        "averaged with equal task weight. Overall is over all tasks, not the mean of the axes.",
        "A task without a reply (a partial upload) counts with no item met; the result is "
        "marked incomplete. An empty reply is judged on every item like any other.",
        "Percentages have 2 decimals, rounded half up on the exact value; intervals are the "
        f"{INTERVAL}. Ranking uses the exact value.",
        "Audio-output systems are scored on a transcript of their audio and shown apart from "
        "text-output ones, as the paper reports them.",
        paper.REPORTED_NOTE,
        "Reply audio, for playback only (our decision): a WAV must be PCM with a header "
        "declaring at most ten minutes, two channels and 48 kHz, and hold no more than it "
        "declares; anything else is refused with the file named.",
    )
    citation = paper.CITATION
    reported_source = f"{paper.SOURCE} (overall APR quoted in its text; Table 2 not transcribed)"
    max_upload_bytes = 2 * 1024**3
    audio_limits = AUDIO_LIMITS

    # --- import ---

    def read_source(self, directory: Path, **options) -> Source:
        return importer.read_source(directory, judge_prompt=options.get("judge-prompt"))

    # --- uploads ---

    def validate_upload(self, path, report, *, tasks, allow_partial, options, limits):
        return upload.validate(
            Path(path),
            report,
            tasks=tasks,
            allow_partial=allow_partial,
            modality=upload.modality_of(options),
            limits=limits,
        )

    def ingest(self, handle: IO[bytes], *, tasks, limits) -> Iterator[IngestedTask]:
        return upload.ingest(handle, tasks=tasks, limits=limits)

    def group_for(self, *, manifest: Mapping, declared: str) -> str:
        keys = [group.key for group in self.row_groups]
        for value in (
            declared,
            str(manifest.get("system_type", "") or ""),
            upload.row_group_of(str(manifest.get("output_modality", "") or "")),
        ):
            if value in keys:
                return value
        return self.default_row_group

    # --- judging ---

    def judgment_requests(self, task: TaskInput, *, prompts, facts) -> list[JudgmentRequest]:
        return judging.judgment_requests(task.spec, task.data, prompt=prompts.get(JUDGE_KIND))

    def parse_output(self, kind: str, raw_output: str, *, context) -> ParsedOutput:
        return judging.parse_output(raw_output)

    def offline_output(self, request: JudgmentRequest, task: TaskInput) -> str:
        return offline_raw_output(
            response=judging.reply_of(task.data) or "",
            rubric_item=task.spec["rubric"][int(request.slot)],
        )

    # --- scoring ---

    def aggregate(self, outcomes: list[TaskOutcome], *, facts) -> dict:
        """SPEC §5's results, kept over the core's sums: exact fractions beside each percentage,
        APR's bootstrap interval, the audio-cue split and its relative gap, and the diagnostics
        (missing responses and judgments, parse failures) are no per-task sums."""
        return scoring.results_of(outcomes)

    def metric_contributions(self, outcome: TaskOutcome, *, facts) -> dict:
        return scoring.contributions(outcome)

    def metric_value(self, metric: Metric, numerator: float, denominator: float):
        """Percent, 2 decimals, half up on the exact ratio (SPEC §5)."""
        return scoring.exact_pct(numerator, denominator)

    def mean_interval(self, metric: Metric, task_ids, numerators, denominators):
        """ARS on a slice: the benchmark's own task bootstrap (metrics.ars_interval), the one
        its columns show."""
        if not metric.key.endswith(".ars"):
            return None
        shares = sorted(zip(task_ids, numerators, denominators, strict=True))
        return tuple(ars_interval([scoring.share_met(num, den) for _, num, den in shares]))

    def metric_counts(self, metric: Metric, results: Mapping | None):
        return scoring.metric_counts(metric.key, results)

    def task_attributes(self, task_id: str, spec) -> dict:
        return {"axis": spec.get("axis"), "user_turns": spec.get("last_user_turn")}

    # --- pages ---

    def task_context(self, task: TaskInput, *, judged) -> dict:
        return drilldown.task_context(task, judged=judged)

    # --- rating studies ---

    def study_units(self, kind: StudyKind, task: TaskInput, *, judged) -> list[StudyUnit]:
        return drilldown.study_units(kind, task, judged=judged)

    # --- reported rows and the demo ---

    def reported_rows(self) -> list[ReportedRow]:
        return [
            ReportedRow(
                model,
                results,
                NOT_STATED,
                {"description": "Overall APR as quoted in the paper's text."},
                paper.REPORTED_NOTE,
            )
            for model, _modality, results in paper.reported_rows()
        ]

    def write_demo_source(self, directory: Path) -> None:
        demo.write_demo_source(directory)

    def write_demo_runs(self, directory: Path) -> list[DemoRun]:
        return demo.write_demo_runs(directory)


plugin = AudioMultiChallenge()
