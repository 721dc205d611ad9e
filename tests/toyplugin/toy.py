"""Toy-Bench: short questions, answered in text; a judge grades each answer twice (accuracy and
style) with a score from 0 to 1; the board ranks the mean score per language. An upload may carry
each answer spoken (a WAV per task), which the task page plays, and its words timed, which the
task page draws on a timeline; neither is scored."""

from __future__ import annotations

import io
import json
import math
import random
import shutil
import wave
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

import numpy as np

from evaluation.benchmarks.base import (
    BenchmarkPlugin,
    Chart,
    ClipSpec,
    DemoRun,
    IngestedTask,
    JudgeDefaults,
    JudgeKind,
    JudgmentRequest,
    Metric,
    ParsedOutput,
    PromptSource,
    ReportedRow,
    RowGroup,
    SliceAttribute,
    Source,
    SourceError,
    SpanCount,
    Split,
    Step,
    StudyKind,
    StudyUnit,
    TaskColumn,
    TaskFilter,
    TaskInput,
    TaskOutcome,
    TaskSource,
    Timeline,
    TimelineLane,
    TimelineSpan,
    UploadContents,
    UploadFormat,
    UploadOption,
)
from evaluation.bundles import ValidationReport, member_opener, read_manifest, scan_zip

SLOTS = ("accuracy", "style")
# Bootstrap: tasks resampled with replacement, this many draws, this seed.
DRAWS = 1000
SEED = 20260101
ANSWERS = "answers.jsonl"  # the answers' name in a zip the demo writes (any *.jsonl will do)
SPOKEN = "answer.wav"  # a task's spoken answer, as stored and played
MANIFEST = "manifest.json"  # a zip's description of the system (the core reads its fields)


class ToyBench(BenchmarkPlugin):
    slug = "toy-bench"
    name = "Toy-Bench"
    description = "Short questions in two languages, each answer graded twice."
    upload = UploadFormat(
        label="a zip of a JSONL file of {id, answer} and each answer spoken, or the JSONL alone",
        suffixes=(".zip", ".jsonl"),
        description=(
            'One JSON object per line and task: {"id": task id, "answer": the text}, and '
            'optionally "words": [{"start", "end", "text"}], the spoken answer\'s words timed in '
            "seconds (the task page draws them). In a zip, each answer may be spoken as "
            "<task id>.wav beside it: the task page plays it, and it is never scored; and "
            "manifest.json may describe the system."
        ),
        options=(
            UploadOption(
                name="mode",
                label="Run mode",
                choices=(("text", "Text"), ("voice", "Voice")),
                default="text",
            ),
        ),
    )
    steps = (Step(name="measure", scope="submission", label="Measure: answer lengths"),)
    judge_kinds = (
        JudgeKind(
            key="grade",
            label="Grade",
            response_format="json_object",
            answer_attempts=2,
            unparseable="outcome",
        ),
    )
    official_judge = JudgeDefaults(
        slug="official",
        name="Toy official judge",
        provider="openai",
        models_by_kind={"grade": "toy-1"},
    )
    metrics = (
        Metric(key="quality", label="Quality", group="Answers", type="mean", interval="bootstrap"),
        Metric(
            key="answered",
            label="Answered",
            group="Answers",
            chance=50.0,
            interval="wilson",
            decimals=1,
        ),
    )
    splits = (Split(key="en", label="English"), Split(key="de", label="German"))
    row_groups = (
        RowGroup(key="small", label="Small models"),
        RowGroup(key="large", label="Large models"),
    )
    rank_keys = ("quality",)
    charts = (
        Chart(kind="scatter", title="Answered against quality", metrics=("answered", "quality")),
        Chart(kind="bars", title="Quality", metrics=("quality",)),
    )
    task_filters = (TaskFilter(name="topic", label="Topic", source="spec", field="topic"),)
    # The board sliced by topic: task_attributes (by default the spec's field of each name)
    # gives each task its value, and every metric is recomputed from the tasks' contributions.
    slices = (SliceAttribute(name="topic", label="Topic"),)
    task_columns = (
        TaskColumn(label="Topic", source="spec", field="topic"),
        TaskColumn(label="Answer", source="data", field="answer"),
    )
    study_kinds = (
        StudyKind(
            key="grade",
            label="Grades",
            judge_kind="grade",
            labels=("pass", "fail"),
            question="Is it good?",
        ),
    )
    facts = (("answered", "Answered tasks"),)
    rules = ("Each answer is graded twice; a task's score is the mean of its two grades.",)
    citation = """@misc{toybench,
      title={Toy-Bench: the example benchmark plug-in of Floorboard's tests},
      howpublished={tests/toyplugin in Floorboard's repository},
}"""
    reported_source = "Toy paper, Table 1"

    def read_source(self, directory: Path, **options) -> Source:
        path = Path(directory) / "tasks.jsonl"
        if not path.is_file():
            raise SourceError(f"{directory}: no tasks.jsonl")
        tasks = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            record = json.loads(line)
            if record.get("language") not in ("en", "de"):
                raise SourceError(f"tasks.jsonl line {number}: language must be en or de")
            tasks.append(TaskSource(record["id"], {k: v for k, v in record.items() if k != "id"}))
        template = (Path(directory) / "grade.txt").read_text()
        return Source(tasks, [PromptSource("grade", template)])

    def validate_upload(self, path, report, *, tasks, allow_partial, options, limits):
        upload = read_upload(Path(path), report, limits=limits)
        try:
            return self._validate(upload, report, tasks=tasks, allow_partial=allow_partial)
        finally:
            upload.close()

    def _validate(self, upload, report, *, tasks, allow_partial) -> UploadContents:
        if upload.text is None:
            return UploadContents()
        answers = {}
        for number, line in enumerate(upload.text.splitlines(), 1):
            try:
                record = json.loads(line)
            except ValueError:
                report.add(f"line {number}: not JSON", file="answers.jsonl")
                continue
            if record.get("id") not in tasks:
                report.add(f"line {number}: unknown id {record.get('id')!r}", file="answers.jsonl")
                continue
            words = record.get("words", [])
            # How many the page would draw, counted first: the core's report refuses more than
            # max_spans_per_run, and then they are not looked at one by one.
            within = (
                not isinstance(words, list)
                or not words
                or report.count_spans(
                    SpanCount(record["id"], len(words), "words", file="answers.jsonl")
                )
            )
            if within and not _timed_words(words):
                report.add(
                    f'line {number}: "words" must be a list of {{"start", "end", "text"}} with '
                    "start <= end, in seconds",
                    file="answers.jsonl",
                )
            answers[record["id"]] = record
        missing = sorted(set(tasks) - set(answers))
        if missing and not allow_partial:
            report.add(f"missing answers for {', '.join(missing)}", file="answers.jsonl")
        for task_id, info in upload.audio.items():
            if task_id not in answers:
                report.warn("no answer of this task is in the upload; ignored", file=info.filename)
        return UploadContents(manifest=upload.manifest, present=set(answers), missing=missing)

    def ingest(self, handle: IO[bytes], *, tasks, limits) -> Iterator[IngestedTask]:
        report = ValidationReport()
        upload = read_upload(handle, report, limits=limits)
        try:
            if not report.ok or upload.text is None:
                raise ValueError(f"stored upload no longer validates: {report.problems[:3]}")
            for line in upload.text.splitlines():
                record = json.loads(line)
                if record["id"] not in tasks:
                    continue
                # The spoken answer is stored as a file of its own: pages play it with ranges.
                info = upload.audio.get(record["id"])
                store = (
                    [(SPOKEN, member_opener(upload.archive, info), info.file_size)] if info else []
                )
                data = {"answer": record["answer"]}
                if record.get("words"):
                    data["words"] = record["words"]
                yield IngestedTask(record["id"], data=data, store=store)
        finally:
            upload.close()

    def run_submission_step(self, step, tasks: Sequence[TaskInput], *, facts):
        found = {t.task_id: {"length": len(t.data.get("answer", ""))} for t in tasks}
        return {"answered": sum(bool(t.data) for t in tasks)}, found

    def judgment_requests(self, task: TaskInput, *, prompts, facts) -> list[JudgmentRequest]:
        answer = task.data.get("answer", "")
        if not answer.strip():
            return [
                JudgmentRequest("grade", slot, fixed={"verdict": False, "score": 0.0})
                for slot in SLOTS
            ]
        template = prompts["grade"].template
        return [
            JudgmentRequest(
                "grade",
                slot,
                prompt=template.replace("{question}", task.spec["question"])
                .replace("{answer}", answer)
                .replace("{aspect}", slot),
                label=f"{slot} grade",
            )
            for slot in SLOTS
        ]

    def parse_output(self, kind, raw_output, *, context) -> ParsedOutput:
        try:
            data = json.loads(raw_output)
            score = float(data["score"])
        except (ValueError, KeyError, TypeError):
            return ParsedOutput(None, error="no numeric score")
        if not 0 <= score <= 1:
            return ParsedOutput(None, error="score outside 0..1")
        return ParsedOutput({"score": score}, score >= 0.5, str(data.get("why", "")))

    def offline_output(self, request, task) -> str:
        good = task.spec["answer"].lower() in task.data.get("answer", "").lower()
        return json.dumps({"score": 1.0 if good else 0.0, "why": "offline: answer matched"})

    # --- scoring: what each task adds; the core makes the board, slices and comparisons ---

    def metric_contributions(self, outcome: TaskOutcome, *, facts) -> dict:
        """What the task adds to its language's columns: its score to the mean quality (score,
        1), whether it was answered to the answered rate (1 or 0 of 1). The board's quality is
        the sum of scores over the tasks, its answered rate the answered tasks over the tasks;
        a slice or a comparison sums the same pairs over its tasks."""
        language = outcome.spec["language"]
        answered = int(bool(outcome.data.get("answer", "").strip()))
        return {
            f"{language}.quality": (task_score(outcome), 1),
            f"{language}.answered": (answered, 1),
        }

    def mean_interval(self, metric: Metric, task_ids, numerators, denominators):
        """Quality's interval is the toy's own bootstrap (bootstrap_interval), on the board and
        on a slice alike."""
        return bootstrap_interval(numerators / denominators)

    def task_context(self, task: TaskInput, *, judged) -> dict:
        """The spoken answer, where the upload has one (the engine signs its address), and its
        timed words as a timeline lane that seeks it."""
        key = task.assets.get(SPOKEN)
        words = task.data.get("words") or []
        lane = tuple(TimelineSpan(w["start"], w["end"], w["text"]) for w in words)
        return {
            "clips": [ClipSpec(key=key, label="The answer, spoken", name=SPOKEN, role="response")]
            if key
            else [],
            "timeline": Timeline(lanes=(TimelineLane("Answer", lane, SPOKEN),)) if lane else None,
        }

    def study_units(self, kind, task, *, judged) -> list[StudyUnit]:
        units = []
        for slot in SLOTS:
            found = judged.get(("grade", slot))
            verdict = None if found is None else found.verdict
            units.append(
                StudyUnit(
                    slot=slot,
                    transcript=[{"speaker": "question", "text": task.spec["question"]}],
                    response_text=task.data.get("answer", ""),
                    clips=(),
                    judge_label=None if verdict is None else kind.labels[0 if verdict else 1],
                    prompt=f"Is its {slot} good?",
                )
            )
        return units

    def reported_rows(self) -> list[ReportedRow]:
        return [
            ReportedRow(
                "Toy Paper Model",
                {
                    "en": {
                        "quality": {"value": 0.5, "pct": 50.0},
                        "answered": {"count": None, "total": None, "pct": 100.0},
                    }
                },
                "large",
                {"organization": "Toy Lab", "open_weights": True},
            )
        ]

    def write_demo_source(self, directory: Path) -> None:
        write_release(directory)

    def write_demo_runs(self, directory: Path) -> list[DemoRun]:
        """The good run spoken (a zip with a WAV per answer), the fair one as text alone."""
        directory.mkdir(parents=True, exist_ok=True)
        good, fair = directory / "good.zip", directory / "fair.jsonl"
        write_spoken_answers(good, correct=5)
        write_answers(fair, correct=2, seed=1)
        return [DemoRun(good, "Toy Good", "small"), DemoRun(fair, "Toy Fair", "large")]


def _timed_words(words) -> bool:
    """A list of {"start", "end", "text"}: finite seconds, start <= end, a string."""
    if not isinstance(words, list):
        return False
    for word in words:
        if not isinstance(word, dict) or not isinstance(word.get("text"), str):
            return False
        start, end = word.get("start"), word.get("end")
        if not all(type(t) in (int, float) and math.isfinite(t) for t in (start, end)):
            return False
        if not 0 <= start <= end:
            return False
    return True


@dataclass
class ToyUpload:
    """What an upload holds: the answers' text (None: none found), each spoken answer's zip
    entry by task id, in ``archive`` (None for a lone JSONL), which ``close`` closes, and the
    zip's manifest describing the system ({} without one; the core checks its fields)."""

    text: str | None = None
    audio: dict[str, zipfile.ZipInfo] = field(default_factory=dict)
    archive: zipfile.ZipFile | None = None
    manifest: dict = field(default_factory=dict)

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()


def read_upload(source: Path | IO[bytes], report: ValidationReport, *, limits) -> ToyUpload:
    """A lone JSONL, or a zip of one JSONL and ``<task id>.wav`` files. The core's scan refuses
    unsafe entries and checked every WAV's header against the plug-in's audio limits before."""
    found = ToyUpload()
    is_zip = zipfile.is_zipfile(source)
    if not isinstance(source, Path):
        source.seek(0)
    if not is_zip:
        found.text = source.read_text() if isinstance(source, Path) else source.read().decode()
        return found
    found.archive, entries = scan_zip(
        source,
        report,
        is_task_folder=lambda part: False,
        max_uncompressed=limits.max_bytes,
        max_ratio=limits.max_ratio,
    )
    for entry in entries:
        path = PurePosixPath(entry.path)
        if entry.path == MANIFEST:
            found.manifest = read_manifest(found.archive, entry.info, report, file=MANIFEST)
        elif path.suffix.lower() == ".jsonl" and found.text is None:
            found.text = found.archive.read(entry.info).decode()
        elif path.suffix.lower() == ".jsonl":
            report.add("a second answers file; give one", file=entry.path)
        elif path.suffix.lower() == ".wav":
            found.audio[path.stem] = entry.info
        else:
            report.warn("neither the answers nor a spoken answer; ignored", file=entry.path)
    if found.archive is not None and found.text is None:
        report.add("the zip holds no .jsonl answers file")
    return found


def spoken(text: str, *, rate: int = 8000) -> bytes:
    """A stand-in for an answer read aloud, as a 16-bit mono WAV: a short tone per character
    (its pitch from the character), at least a second long."""
    seconds_per_character = 0.08
    samples = bytearray()
    for character in text.ljust(math.ceil(1 / seconds_per_character)):
        pitch = 220 + 20 * (ord(character) % 24)
        for n in range(int(rate * seconds_per_character)):
            value = int(8000 * math.sin(2 * math.pi * pitch * n / rate))
            samples += value.to_bytes(2, "little", signed=True)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(bytes(samples))
    return buffer.getvalue()


def task_score(outcome: TaskOutcome) -> float:
    """The mean of the task's two grades; a grade that is missing or unparseable is 0."""
    grades = []
    for slot in SLOTS:
        found = outcome.judged.get(("grade", slot))
        output = found.output if found is not None else None
        grades.append(float((output or {}).get("score", 0.0)))
    return sum(grades) / len(grades)


def bootstrap_interval(scores: np.ndarray) -> tuple[float, float]:
    """The mean's percentile bootstrap 95% interval over tasks, in percent: DRAWS resamples
    drawn with numpy's default generator seeded with SEED."""
    rng = np.random.default_rng(SEED)
    draws = rng.integers(0, len(scores), size=(DRAWS, len(scores)))
    means = scores[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return round(100 * float(low), 2), round(100 * float(high), 2)


def toy_tasks(count: int) -> list[dict]:
    return [
        {
            "id": f"q{i}",
            "language": "en" if i < 4 else "de",
            "topic": "math" if i % 2 else "fact",
            "question": f"What is {i} plus {i}?",
            "answer": str(2 * i),
        }
        for i in range(1, count + 1)
    ]


TASKS = toy_tasks(6)
TEMPLATE = "Grade the {aspect} of this answer.\nQuestion: {question}\nAnswer: {answer}\n"


def write_release(directory: Path, *, count: int = len(TASKS)) -> None:
    directory = Path(directory)
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    tasks = toy_tasks(count)
    (directory / "tasks.jsonl").write_text("\n".join(json.dumps(t) for t in tasks) + "\n")
    (directory / "grade.txt").write_text(TEMPLATE)


def write_answers(
    path: Path, *, correct: int, seed: int = 0, skip: int = 0, count: int = len(TASKS)
) -> None:
    """Answers for every task of a release of ``count`` but the last ``skip``: the first
    ``correct`` right."""
    rng = random.Random(seed)
    lines = []
    for index, task in enumerate(toy_tasks(count)[: count - skip]):
        answer = f"It is {task['answer']}" if index < correct else f"Maybe {rng.randint(50, 99)}"
        lines.append(json.dumps({"id": task["id"], "answer": answer}))
    Path(path).write_text("\n".join(lines) + "\n")


def write_spoken_answers(path: Path, **answers) -> None:
    """A zip of the answers (write_answers' arguments) and each answer spoken as <id>.wav."""
    text = Path(path).with_suffix(".jsonl")
    write_answers(text, **answers)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(text, ANSWERS)
        for line in text.read_text().splitlines():
            record = json.loads(line)
            archive.writestr(f"{record['id']}.wav", spoken(record["answer"]))
    text.unlink()


plugin = ToyBench()
