"""Read the official MP-Bench checkout: benchmark/tasks.jsonl (or tasks.jsonl) and prompts/."""

from __future__ import annotations

import json
from pathlib import Path

from evaluation.benchmarks.base import PromptSource, Source, SourceError, TaskSource

from .scoring import FAMILIES, KINDS


def _tasks_file(directory: Path) -> Path:
    for candidate in (directory / "benchmark" / "tasks.jsonl", directory / "tasks.jsonl"):
        if candidate.is_file():
            return candidate
    raise SourceError(f"{directory}: no benchmark/tasks.jsonl or tasks.jsonl")


def _task(line_number: int, record) -> TaskSource:
    where = f"tasks.jsonl line {line_number}"
    if not isinstance(record, dict):
        raise SourceError(f"{where}: not a JSON object")
    missing = [
        k for k in ("task_dir", "family", "should_speak", "metatranscript") if k not in record
    ]
    if missing:
        raise SourceError(f"{where}: missing {', '.join(missing)}")
    if record["family"] not in FAMILIES:
        raise SourceError(f"{where}: unknown family {record['family']!r}")
    if not isinstance(record["should_speak"], bool):
        raise SourceError(f"{where}: should_speak must be true or false")
    metatranscript = record["metatranscript"]
    if not isinstance(metatranscript, str):
        # Judges see the raw string; a pre-parsed object is serialised the way the file would be.
        metatranscript = json.dumps(metatranscript)
    return TaskSource(
        task_id=str(record["task_dir"]),
        spec={
            "family": record["family"],
            "should_speak": record["should_speak"],
            "metatranscript": metatranscript,
            "question_text": str(record.get("question_text") or ""),
            "answer_text": str(record.get("answer_text") or ""),
            "is_speaker_name": bool(record.get("is_speaker_name", False)),
        },
    )


def read_source(directory: Path) -> Source:
    directory = Path(directory)
    tasks: list[TaskSource] = []
    seen: set[str] = set()
    with _tasks_file(directory).open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SourceError(
                    f"tasks.jsonl line {line_number}: not valid JSON ({exc.msg})"
                ) from None
            task = _task(line_number, record)
            if task.task_id in seen:
                raise SourceError(f"tasks.jsonl line {line_number}: duplicate task {task.task_id}")
            seen.add(task.task_id)
            tasks.append(task)
    if not tasks:
        raise SourceError(f"{directory}: tasks.jsonl holds no tasks")

    prompts = []
    for kind in KINDS:
        template_path = directory / "prompts" / f"{kind}.txt"
        schema_path = directory / "prompts" / f"{kind}.schema.json"
        if not template_path.is_file() or not schema_path.is_file():
            raise SourceError(
                f"{directory}: prompts/{kind}.txt and prompts/{kind}.schema.json are required"
            )
        try:
            schema = json.loads(schema_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise SourceError(f"prompts/{kind}.schema.json: not valid JSON ({exc.msg})") from None
        # newline="" keeps the template byte for byte, as the harness reads it.
        with template_path.open(encoding="utf-8", newline="") as handle:
            template = handle.read()
        prompts.append(PromptSource(kind=kind, template=template, schema=schema))
    return Source(tasks=tasks, prompts=prompts)
