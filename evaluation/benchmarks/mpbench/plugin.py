"""MP-Bench as a Floorboard plug-in: the declarations the engine renders and the hooks it calls.

The rules themselves live beside this file (detection.py, scoring.py, bundle.py) and are quoted
from the harness; this module only maps them onto the plug-in interface.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import IO

from evaluation.benchmarks.base import (
    BenchmarkPlugin,
    CalibratedMetric,
    Chart,
    ClipSpec,
    DemoRun,
    IngestedTask,
    JudgeDefaults,
    JudgedSlot,
    JudgeKind,
    JudgmentRequest,
    Metric,
    ParsedOutput,
    ReportedRow,
    RowGroup,
    SliceAttribute,
    Source,
    Step,
    StudyKind,
    StudyUnit,
    TaskColumn,
    TaskFilter,
    TaskInput,
    TaskOutcome,
    Timeline,
    TimelineLane,
    TimelineSpan,
    UploadContents,
    UploadFormat,
)
from evaluation.bundles import ValidationReport, scan_zip

from . import bundle, demo, detection, importer, paper, scoring
from . import limits as bundle_limits
from .conversation import conversation_turns
from .demo import offline

# MP-Bench's official judge (the benchmark's README: gpt-5.4, and gpt-5.2 for speaker names).
OFFICIAL_MODELS = {
    scoring.UNDERSTANDING: "gpt-5.4",
    scoring.DISCUSSION: "gpt-5.4",
    scoring.TURNBASED: "gpt-5.4",
    scoring.SPEAKER_NAME: "gpt-5.2",
}
SPOKE_VIA = {
    detection.SPOKE_POST: "words after the input ended",
    detection.SPOKE_HALF_DUPLEX: "half-duplex run: the whole response counts",
    detection.SPOKE_FULL_TEXT: "no word timestamps: the whole response counts",
}
# The harness's audio beside the transcripts: the conversation, then the agent's own track.
CONVERSATION_AUDIO = ("all_stitched.wav", "all_stitched/input.wav", "input.wav", "combined.wav")
RESPONSE_AUDIO = ("response.wav", "all_stitched/output.wav", "output.wav")
TRANSCRIPT_MAX_BYTES = 50 * 1024 * 1024


# Every accuracy of Table 3: a percentage of its tasks with the Wilson interval of the count.
_rate = partial(Metric, interval="wilson")


def _latency(*, split: str, group: str) -> Metric:
    return Metric(
        key=f"{split}.latency_s",
        label="Lat (s)",
        group=group,
        type="duration",
        higher_is_better=False,
        decimals=1,
        unit="s",
        description="mean latency of the tasks where the agent spoke",
        units="tasks where the agent spoke",
    )


# The paper's discussion study (Sec. 7). One paragraph per line: the page wraps them.
DISCUSSION_GUIDELINE = (
    "Listen to the conversation and to the agent's response, then decide:\n\n"
    "Consistent: the response fits the conversation: it follows what was said, answers or acts "
    "on what the group asked of the agent, and does not contradict the facts established so "
    "far.\n\n"
    "Inconsistent: the response ignores, misreads or contradicts the conversation, or answers "
    "something nobody asked.\n\n"
    "If the audio does not play or is too damaged to judge, choose \"Can't judge: audio "
    'problem". Judge the response itself; do not guess which system produced it.'
)


class MPBench(BenchmarkPlugin):
    slug = "mp-bench"
    name = "MP-Bench"
    description = (
        "927 four-party spoken conversations (three humans and the agent): does the agent "
        "understand who said what, join a discussion appropriately, and take its turn in games?"
    )
    rules_version = "harness-1"
    rules_notes = {
        "harness-1": (
            "Table 3 as the official harness computes it: speech after the input's end, "
            "Python's round() on percentages and mean latencies, missing or failed verdicts "
            "counted wrong, the silent-negative rule for turn-based games."
        )
    }
    upload = UploadFormat(
        label="a zip of the harness's scenario_* task folders",
        suffixes=(".zip",),
        description=(
            "Each scenario_* folder (at any depth) holds the harness's Whisper-style ASR JSON: "
            "all_stitched.json (the conversation) and response.json (the agent, same "
            "timeline), optionally combined.json and WAVs with the same stems; an optional "
            "manifest.json at the root describes the system."
        ),
    )
    steps = (
        Step(
            name="detect",
            scope="submission",
            label="Detect: who spoke, when, and the latency",
            version="1",
        ),
    )
    judge_kinds = tuple(
        JudgeKind(key=kind, label=label, response_format="json_schema", schema_name="mpbench_eval")
        for kind, label in (
            (scoring.UNDERSTANDING, "Understanding"),
            (scoring.SPEAKER_NAME, "Speaker name"),
            (scoring.DISCUSSION, "Discussion appropriateness"),
            (scoring.TURNBASED, "Turn-based appropriateness"),
        )
    )
    official_judge = JudgeDefaults(
        slug="official",
        name="MP-Bench official (gpt-5.4; gpt-5.2 for speaker names)",
        provider="openai",
        models_by_kind=OFFICIAL_MODELS,
    )
    metrics = (
        _rate(key="understanding.overall_acc", label="Overall Acc", group="Understanding"),
        _rate(
            key="understanding.spk_name_acc",
            label="Spk Name Acc",
            group="Understanding",
            chance=scoring.CHANCE_PCT["spk_name_acc"],
        ),
        _latency(split="understanding", group="Understanding"),
        _rate(key="discussion.tt_acc", label="T Acc", group="Discussion"),
        _rate(key="discussion.app_acc", label="App Acc", group="Discussion"),
        _latency(split="discussion", group="Discussion"),
        _rate(
            key="turnbased.tt_acc",
            label="T Acc",
            group="Turn-based",
            chance=scoring.CHANCE_PCT["turnbased.tt_acc"],
        ),
        _rate(key="turnbased.app_acc", label="App Acc", group="Turn-based"),
        _latency(split="turnbased", group="Turn-based"),
    )
    row_groups = (
        RowGroup(key="text-llm", label="Text LLMs"),
        RowGroup(key="non-realtime", label="Non-realtime"),
        RowGroup(key="realtime", label="Realtime"),
    )
    # Table 3 is led by overall understanding accuracy; ties fall to the discussion and
    # turn-based appropriateness accuracies.
    rank_keys = ("understanding.overall_acc", "discussion.app_acc", "turnbased.app_acc")
    charts = (
        Chart(
            kind="scatter",
            title="Latency against appropriateness accuracy",
            metrics=(
                "discussion.latency_s",
                "discussion.app_acc",
                "turnbased.latency_s",
                "turnbased.app_acc",
            ),
        ),
        Chart(
            kind="bars",
            title="Accuracy per split",
            metrics=tuple(m.key for m in metrics if m.type == "rate"),
        ),
    )
    task_filters = (
        TaskFilter(name="family", label="Family", source="spec", field="family"),
        TaskFilter(
            name="should_speak",
            label="Should speak",
            source="spec",
            field="should_speak",
            type="bool",
        ),
        TaskFilter(name="spoke", label="Spoke", source="detection", field="spoke", type="bool"),
        TaskFilter(
            name="turn_taking",
            label="Turn-taking correct",
            source="detection",
            field="turn_taking_correct",
            type="bool",
        ),
    )
    slices = (
        SliceAttribute(name="family", label="Family"),
        SliceAttribute(name="is_speaker_name", label="Speaker-name question", type="bool"),
        SliceAttribute(name="should_speak", label="Should speak", type="bool"),
        SliceAttribute(
            name="addressed_by", label="Who addresses the agent last (place in the speaker list)"
        ),
        SliceAttribute(name="turns", label="Turns in the conversation"),
    )
    task_columns = (
        TaskColumn(label="Family", source="spec", field="family"),
        TaskColumn(label="Should speak", source="spec", field="should_speak", format="bool"),
        TaskColumn(label="Spoke", source="detection", field="spoke", format="bool"),
        TaskColumn(
            label="Turn-taking correct",
            source="detection",
            field="turn_taking_correct",
            format="bool",
        ),
        TaskColumn(label="Latency (s)", source="detection", field="latency", format="seconds"),
        TaskColumn(
            label="Response after the input",
            source="detection",
            field="post_text",
            format="truncate",
        ),
    )
    study_kinds = (
        StudyKind(
            key=scoring.DISCUSSION,
            label="Discussion appropriateness",
            judge_kind=scoring.DISCUSSION,
            labels=("consistent", "inconsistent"),
            question="Is the agent's contribution consistent with the discussion?",
            guideline=DISCUSSION_GUIDELINE,
        ),
        StudyKind(
            key=scoring.TURNBASED,
            label="Turn-based appropriateness",
            judge_kind=scoring.TURNBASED,
            labels=("consistent", "inconsistent"),
            question="Does the agent follow the game's rules and take its turn correctly?",
        ),
        StudyKind(
            key=scoring.UNDERSTANDING,
            label="Understanding",
            judge_kind=scoring.UNDERSTANDING,
            labels=("correct", "incorrect"),
            question="Does the agent answer the question correctly?",
        ),
        StudyKind(
            key=scoring.SPEAKER_NAME,
            label="Speaker name",
            judge_kind=scoring.SPEAKER_NAME,
            labels=("correct", "incorrect"),
            question="Does the agent name the right speaker?",
        ),
    )
    # Each judged accuracy is the mean of one verdict per task of its split.
    calibrated_metrics = (
        CalibratedMetric(metric="understanding.overall_acc", study_kind=scoring.UNDERSTANDING),
        CalibratedMetric(metric="understanding.spk_name_acc", study_kind=scoring.SPEAKER_NAME),
        CalibratedMetric(metric="discussion.app_acc", study_kind=scoring.DISCUSSION),
        CalibratedMetric(metric="turnbased.app_acc", study_kind=scoring.TURNBASED),
    )
    task_template = "mpbench/task.html"
    facts = (("half_duplex", "Half-duplex run"),)
    rules = (
        "Transcripts: for each task folder the first (input, output) pair of the harness's "
        "layouts whose two files both exist and are non-empty; none means the agent did not "
        "speak.",
        "Half-duplex probe, once per submission: a run where fewer than a quarter of the "
        "responding tasks have a word after the input ends is half-duplex, and its whole "
        "responses count.",
        "Spoke: a word starting at or after the input end (or, in a half-duplex run or without "
        "word timestamps, any text). Turn-taking is correct when spoke equals should-speak.",
        "Judges see the full response, except the discussion judge, which sees what was said "
        "after the input ended. An empty response is judged false without a call, except in "
        "turn-based tasks (silence may be right).",
        "A missing or failed verdict counts as incorrect, except a turn-based task with no "
        "verdict where the agent rightly stayed silent.",
        "Percentages are rounded with Python's round() to 2 decimals, latencies to 1.",
        "Bounds on an upload (the site's, not the harness's): a timestamp or a WAV at most 4 h "
        "into the conversation, a transcript at most 5,000 word chunks; beyond them it is not "
        "a run of the benchmark and is refused with the file named.",
    )
    citation = paper.CITATION
    judge_validation = paper.JUDGE_VALIDATION
    reported_source = paper.SOURCE
    default_row_group = "realtime"
    max_upload_bytes = bundle_limits.MAX_BUNDLE_UNCOMPRESSED_BYTES
    audio_limits = bundle_limits.AUDIO_LIMITS
    max_spans_per_run = bundle_limits.MAX_WORD_CHUNKS

    # --- import ---

    def read_source(self, directory: Path, **options) -> Source:
        return importer.read_source(directory)

    # --- uploads ---

    def validate_upload(self, path, report, *, tasks, allow_partial, options, limits):
        archive, entries = scan_zip(
            path,
            report,
            is_task_folder=bundle.is_task_folder,
            max_uncompressed=limits.max_bytes,
            max_ratio=limits.max_ratio,
        )
        if archive is None:
            return UploadContents()
        with archive:
            found = bundle.validate_contents(
                archive, entries, report, task_ids=set(tasks), allow_partial=allow_partial
            )
        return UploadContents(
            manifest=found.manifest,
            present=set(found.tasks),
            missing=found.missing,
            findings=found.evidence if report.ok else {},
        )

    def ingest(self, handle: IO[bytes], *, tasks, limits) -> Iterator[IngestedTask]:
        report = ValidationReport()
        archive, entries = scan_zip(
            handle,
            report,
            is_task_folder=bundle.is_task_folder,
            max_uncompressed=limits.max_bytes,
            max_ratio=limits.max_ratio,
        )
        if archive is None or not report.ok:
            raise ValueError(f"stored bundle no longer validates: {report.problems[:3]}")
        by_task: dict[str, IngestedTask] = {}
        with archive:
            for entry in entries:
                if entry.task not in tasks or not bundle.accepts_file(entry.relative):
                    continue
                found = by_task.get(entry.task)
                if found is None:
                    found = by_task[entry.task] = IngestedTask(entry.task)
                size = entry.info.file_size
                if bundle.is_audio(entry.relative):
                    # Audio is served on its own (with Range requests), so it gets its own object.
                    found.store.append((entry.relative, _opener(archive, entry.info), size))
                else:
                    # Transcripts are read from the stored bundle itself.
                    found.files[entry.relative] = {"size": size, "entry": entry.path}
            yield from by_task.values()

    # --- processing ---

    def run_submission_step(self, step, tasks: Sequence[TaskInput], *, facts):
        evidence = {task.task_id: _evidence(task) for task in tasks}
        probe = detection.probe_half_duplex(evidence.values())
        found = {}
        for task in tasks:
            result = detection.detect(evidence[task.task_id], half_duplex=probe.is_half_duplex)
            found[task.task_id] = {
                "spoke": result.spoke,
                "spoke_via": result.spoke_via or "",
                "post_text": result.post_text,
                "full_text": result.full_text,
                "latency": result.latency,
                "input_end": result.input_end,
                "turn_taking_correct": result.spoke == bool(task.spec.get("should_speak")),
            }
        facts = {
            "half_duplex": probe.is_half_duplex,
            "n_post": probe.n_post,
            "n_text": probe.n_text,
        }
        return facts, found

    # --- judging ---

    def judgment_requests(self, task: TaskInput, *, prompts, facts) -> list[JudgmentRequest]:
        spec = _task_spec(task)
        requests = []
        for kind in scoring.kinds_for(spec):
            response = _response(kind, task.detection)
            if scoring.skips_judge(kind, response):
                requests.append(
                    JudgmentRequest(kind, fixed={"verdict": False}, label="empty response")
                )
                continue
            prompt = scoring.build_prompt(prompts[kind].template, kind, spec, response)
            requests.append(JudgmentRequest(kind, prompt=prompt))
        return requests

    def parse_output(self, kind: str, raw_output: str, *, context) -> ParsedOutput:
        verdict, reasoning = scoring.parse_verdict(kind, raw_output)
        key = scoring.VERDICT_KEYS[kind]
        if verdict is None:
            return ParsedOutput(None, None, reasoning, f"answer has no boolean '{key}'")
        return ParsedOutput({key: verdict, "reasoning": reasoning}, verdict, reasoning)

    def offline_output(self, request: JudgmentRequest, task: TaskInput) -> str:
        response = _response(request.kind, task.detection)
        verdict, reasoning = offline.offline_verdict(request.kind, _task_spec(task), response)
        return json.dumps({scoring.VERDICT_KEYS[request.kind]: verdict, "reasoning": reasoning})

    # --- scoring ---

    def aggregate(self, outcomes: Sequence[TaskOutcome], *, facts) -> dict:
        """The harness's RESULTS.json as it writes it, kept over the core's sums: it holds each
        family's task count n, which is no metric, and the exact statistics.mean of the
        latencies, which a float sum of the contributions need not reproduce to the last bit."""
        return scoring.aggregate(_scored(outcome) for outcome in outcomes)

    def metric_contributions(self, outcome: TaskOutcome, *, facts) -> dict:
        """Table 3 as sums over tasks: a rate counts (right, 1) for the tasks of its split, a
        latency (seconds, 1) for the tasks of its split where the agent spoke."""
        found = _scored(outcome)
        spec = found.task
        family = spec.family
        found_latency = found.latency if found.spoke and found.latency is not None else None
        contributions = {metric.key: (0, 0) for metric in self.metrics}
        if family in scoring.FAMILIES and found_latency is not None:
            contributions[f"{family}.latency_s"] = (found_latency, 1)
        if family == scoring.UNDERSTANDING:
            contributions["understanding.overall_acc"] = (int(found.appropriate(family)), 1)
            if spec.is_speaker_name:
                contributions["understanding.spk_name_acc"] = (
                    int(found.appropriate(scoring.SPEAKER_NAME)),
                    1,
                )
        elif family in (scoring.DISCUSSION, scoring.TURNBASED):
            contributions[f"{family}.tt_acc"] = (int(found.turn_taking_correct), 1)
            contributions[f"{family}.app_acc"] = (int(found.appropriate(family)), 1)
        return contributions

    def metric_value(self, metric: Metric, numerator: float, denominator: float):
        """A rate as the harness rounds it, round(100.0 * count / total, 2), so a slice holding
        every task shows the board's figure (count / total * 100 gives 14.37 for 23 of 160,
        the harness 14.38)."""
        if metric.unit == "%" and denominator:
            return scoring.rate(int(numerator), int(denominator))["pct"]
        return super().metric_value(metric, numerator, denominator)

    def task_attributes(self, task_id: str, spec) -> dict:
        conversation = conversation_turns(spec.get("metatranscript", ""))
        order = {name: i for i, name in enumerate(conversation.speaker_names, start=1)}
        addressing = [
            turn["speaker"]
            for turn in conversation.turns
            if any(offline._is_ai_label(name) for name in turn["addressee"].split(", "))
        ]
        last = addressing[-1] if addressing else ""
        count = len(conversation.turns)
        return {
            "family": spec.get("family"),
            "is_speaker_name": bool(spec.get("is_speaker_name")),
            "should_speak": bool(spec.get("should_speak")),
            # By place in the task's speaker list: names differ from task to task.
            "addressed_by": f"speaker {order[last]}" if last in order else "nobody",
            "turns": "5-6"
            if count <= 6
            else "7-8"
            if count <= 8
            else "9-10"
            if count <= 10
            else "11-14",
        }

    # --- pages ---

    def task_context(self, task: TaskInput, *, judged) -> dict:
        words = _task_words(task)
        found = task.detection
        input_end = found.get("input_end")
        if input_end is None and words.input_words:
            input_end = max(w.end for w in words.input_words)
        timeline = None
        if words.input_words or words.output_words:
            timeline = Timeline(
                lanes=(
                    TimelineLane(
                        "Conversation",
                        tuple(TimelineSpan(w.start, w.end, w.text, "") for w in words.input_words),
                        player=_first_audio(task, CONVERSATION_AUDIO),
                    ),
                    TimelineLane(
                        "Agent",
                        tuple(
                            TimelineSpan(
                                w.start,
                                w.end,
                                w.text,
                                "post" if input_end is not None and w.start >= input_end else "",
                            )
                            for w in words.output_words
                        ),
                        player=_first_audio(task, RESPONSE_AUDIO),
                    ),
                ),
                markers=((input_end, "input ends"),) if input_end is not None else (),
            )
        return {
            "conversation": conversation_turns(task.spec.get("metatranscript", "")),
            "spoke_via": SPOKE_VIA.get(found.get("spoke_via", ""), found.get("spoke_via", "")),
            "input_end": input_end,
            "words": words,
            "timeline": timeline,
            "clips": _clips(task, input_end),
        }

    # --- rating studies ---

    def study_units(self, kind: StudyKind, task: TaskInput, *, judged) -> list[StudyUnit]:
        if kind.judge_kind not in scoring.kinds_for(_task_spec(task)):
            return []
        slot = judged.get((kind.judge_kind, ""))
        verdict = _verdict(slot) if slot is not None and slot.state != "pending" else None
        if slot is not None and slot.state == "fixed":
            verdict = False
        label = None if verdict is None else kind.labels[0 if verdict else 1]
        input_end = task.detection.get("input_end")
        clips = tuple(
            clip
            for clip in _clips(task, input_end)
            if clip.name in (*CONVERSATION_AUDIO, *RESPONSE_AUDIO)
        )
        turns = conversation_turns(task.spec.get("metatranscript", ""))
        return [
            StudyUnit(
                slot="",
                transcript=[{"speaker": t["speaker"], "text": t["content"]} for t in turns.turns]
                or [{"speaker": "", "text": turns.raw}],
                response_text=_response(kind.judge_kind, task.detection),
                clips=clips,
                judge_label=label,
                prompt=kind.question,
            )
        ]

    # --- reported rows and the demo ---

    def reported_rows(self) -> list[ReportedRow]:
        return [
            ReportedRow(name, results, group, paper.FACTS.get(name, {}))
            for name, group, results in paper.reported_rows()
        ]

    def write_demo_source(self, directory: Path) -> None:
        demo.write_demo_benchmark(directory)

    def write_demo_runs(self, directory: Path) -> list[DemoRun]:
        directory.mkdir(parents=True, exist_ok=True)
        runs = []
        for entry in demo.DEMO_SYSTEMS:
            path = directory / f"{entry['profile']}.zip"
            manifest = demo.system_manifest(entry)
            demo.write_demo_bundle_zip(
                path, profile=entry["profile"], seed=entry["seed"], manifest=manifest
            )
            runs.append(DemoRun(path, entry["name"], entry["system_type"], manifest))
        return runs


def _opener(archive: zipfile.ZipFile, info: zipfile.ZipInfo):
    return lambda: archive.open(info)


def _evidence(task: TaskInput) -> detection.Evidence:
    """What detection reads of a task's transcripts: as validation found it, when it hands
    that on, so that ingest does not parse them again; else from the stored files."""
    if task.validated is not None:
        return detection.evidence_from_json(task.validated)
    if task.files is None:
        return detection.MISSING
    return detection.collect_evidence(task.files.size, task.files.read)


def _task_spec(task: TaskInput) -> scoring.TaskSpec:
    return scoring.TaskSpec.from_spec(task.task_id, task.spec)


def _response(kind: str, found: Mapping) -> str:
    return scoring.response_for(
        kind, full_text=found.get("full_text", ""), post_text=found.get("post_text", "")
    )


def _scored(outcome: TaskOutcome) -> scoring.TaskOutcome:
    """A task's stored outcome as the harness's rules read it."""
    return scoring.TaskOutcome(
        task=scoring.TaskSpec.from_spec(outcome.task_id, outcome.spec),
        spoke=bool(outcome.detection.get("spoke")),
        latency=outcome.detection.get("latency"),
        verdicts={kind: _verdict(slot) for (kind, _), slot in outcome.judged.items()},
    )


def _verdict(slot: JudgedSlot | None) -> bool | None:
    """Decided without a call (an empty response): false. Done: its verdict. Otherwise none."""
    if slot is None:
        return None
    if slot.state == "fixed":
        return False
    return slot.verdict if slot.state == "done" else None


def _first_audio(task: TaskInput, names: Sequence[str]) -> str:
    return next((name for name in names if name in task.assets), "")


def _clips(task: TaskInput, input_end: float | None) -> list[ClipSpec]:
    """The task's stored audio: the conversation first, then the agent, then anything else."""
    order = {name: i for i, name in enumerate((*CONVERSATION_AUDIO, *RESPONSE_AUDIO))}
    labels = {name: "Input conversation" for name in CONVERSATION_AUDIO}
    labels.update({name: "Agent response" for name in RESPONSE_AUDIO})
    markers = ((input_end, "input ends"),) if input_end is not None else ()
    return [
        ClipSpec(
            key=task.assets[name],
            label=f"{labels.get(name, name)} ({name})",
            name=name,
            markers=markers,
            role="response" if name in RESPONSE_AUDIO else "context",
        )
        for name in sorted(task.assets, key=lambda n: (order.get(n, len(order)), n))
    ]


class TaskWords:
    def __init__(self, input_words=(), output_words=(), files=None, problem=""):
        self.input_words = list(input_words)
        self.output_words = list(output_words)
        self.files = files
        self.problem = problem


def _task_words(task: TaskInput) -> TaskWords:
    """Input and output words from the two transcripts the scoring rules pick for this task."""
    if task.files is None:
        return TaskWords(problem="no transcript pair for this task")
    pair = detection.choose_pair(task.files.size, detection.TRANSCRIPT_PAIRS)
    if pair is None:
        return TaskWords(problem="no transcript pair for this task")
    if any((task.files.size(name) or 0) > TRANSCRIPT_MAX_BYTES for name in pair):
        return TaskWords(files=pair, problem="the transcripts are too large to show")
    source, output = (detection.parse_transcript(task.files.read(name)) for name in pair)
    return TaskWords(source.words, output.words, pair)


plugin = MPBench()
