"""Toy-Bench: short questions, answered in text; a judge grades each answer twice (accuracy and
style) with a score from 0 to 1; the board ranks the mean score per language."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from evaluation.benchmarks.base import (
    BenchmarkPlugin,
    Chart,
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
    Source,
    SourceError,
    Split,
    Step,
    StudyKind,
    StudyUnit,
    TaskColumn,
    TaskFilter,
    TaskInput,
    TaskOutcome,
    TaskSource,
    UploadContents,
    UploadFormat,
    UploadOption,
)

SLOTS = ("accuracy", "style")
# Bootstrap: tasks resampled with replacement, this many draws, this seed.
DRAWS = 1000
SEED = 20260101


class ToyBench(BenchmarkPlugin):
    slug = "toy-bench"
    name = "Toy-Bench"
    description = "Short questions in two languages, each answer graded twice."
    upload = UploadFormat(
        label="a JSONL file of {id, answer}",
        suffixes=(".jsonl",),
        description='One JSON object per line and task: {"id": task id, "answer": the text}.',
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
        answers = {}
        for number, line in enumerate(Path(path).read_text().splitlines(), 1):
            try:
                record = json.loads(line)
            except ValueError:
                report.add(f"line {number}: not JSON", file="answers.jsonl")
                continue
            if record.get("id") not in tasks:
                report.add(f"line {number}: unknown id {record.get('id')!r}", file="answers.jsonl")
                continue
            answers[record["id"]] = record
        missing = sorted(set(tasks) - set(answers))
        if missing and not allow_partial:
            report.add(f"missing answers for {', '.join(missing)}", file="answers.jsonl")
        return UploadContents(present=set(answers), missing=missing)

    def ingest(self, handle: IO[bytes], *, tasks, limits) -> Iterator[IngestedTask]:
        for line in handle.read().decode().splitlines():
            record = json.loads(line)
            if record["id"] in tasks:
                yield IngestedTask(record["id"], data={"answer": record["answer"]})

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

    def aggregate(self, outcomes: Sequence[TaskOutcome], *, facts) -> dict:
        results = {}
        for language in ("en", "de"):
            chosen = [o for o in outcomes if o.spec["language"] == language]
            if not chosen:
                continue
            scores = np.array([task_score(o) for o in chosen])
            answered = sum(bool(o.data.get("answer", "").strip()) for o in chosen)
            results[language] = {
                "quality": mean_node(scores),
                "answered": {
                    "count": answered,
                    "total": len(chosen),
                    "pct": round(100 * answered / len(chosen), 1),
                },
            }
        return results

    def metric_contributions(self, outcome: TaskOutcome, *, facts) -> dict:
        """What the task adds to its language's columns, as aggregate counts them: its score to
        the mean quality, whether it was answered to the answered rate."""
        language = outcome.spec["language"]
        answered = int(bool(outcome.data.get("answer", "").strip()))
        return {
            f"{language}.quality": (task_score(outcome), 1),
            f"{language}.answered": (answered, 1),
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
        directory.mkdir(parents=True, exist_ok=True)
        good, fair = directory / "good.jsonl", directory / "fair.jsonl"
        write_answers(good, correct=5)
        write_answers(fair, correct=2, seed=1)
        return [DemoRun(good, "Toy Good", "small"), DemoRun(fair, "Toy Fair", "large")]


def task_score(outcome: TaskOutcome) -> float:
    """The mean of the task's two grades; a grade that is missing or unparseable is 0."""
    grades = []
    for slot in SLOTS:
        found = outcome.judged.get(("grade", slot))
        output = found.output if found is not None else None
        grades.append(float((output or {}).get("score", 0.0)))
    return sum(grades) / len(grades)


def mean_node(scores: np.ndarray) -> dict:
    """The mean in percent with a percentile bootstrap 95% interval over tasks: DRAWS
    resamples drawn with numpy's default generator seeded with SEED."""
    rng = np.random.default_rng(SEED)
    draws = rng.integers(0, len(scores), size=(DRAWS, len(scores)))
    means = scores[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    value = float(scores.mean())
    return {
        "value": value,
        "pct": round(100 * value, 2),
        "ci": [round(100 * float(low), 2), round(100 * float(high), 2)],
        "n": len(scores),
    }


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


plugin = ToyBench()
