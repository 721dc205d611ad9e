"""A local export of the dataset as the engine imports it: every conversation as a task, the
judge prompt as one prompt version, and each user turn's audio as a task asset. Pure.

The prompt is read from the file the operator names (``--judge-prompt``): a parquet export
carries no dataset card, and the prompt is never copied into the project. Without the option it
is looked for beside the export (``judge_prompt.txt``; the demo writes a stand-in there). The
prompt's version is the SHA-256 of its template, so a changed prompt is a new version and a new
judge identity while the judgments made with the earlier one are kept.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

from evaluation.benchmarks.base import Asset, PromptSource, Source, SourceError, TaskSource

from .dataset import AudioBlob, DatasetError, iter_user_audio, read_dataset
from .judge import JUDGE_KIND, PromptError, read_judge_prompt

PROMPT_FILE = "judge_prompt.txt"


def user_audio_name(turn: int, extension: str) -> str:
    """A user turn's clip as the task names it: user_turn_3.wav."""
    return f"user_turn_{turn}.{extension}"


def prompt_path(directory: Path, judge_prompt: str | Path | None) -> Path:
    if judge_prompt:
        return Path(judge_prompt)
    root = directory if directory.is_dir() else directory.parent
    found = root / PROMPT_FILE
    if not found.is_file():
        raise SourceError(
            f"no judge prompt: name the file holding the dataset card's prompt with "
            f"--judge-prompt FILE (a parquet export carries no dataset card; {found} is absent)"
        )
    return found


def read_source(directory: Path, *, judge_prompt: str | Path | None = None) -> Source:
    """Tasks, the judge prompt and the user-turn audio of an export. Raises SourceError naming
    the file, row or line and field of every problem (dataset.py's rules)."""
    directory = Path(directory)
    try:
        dataset = read_dataset(directory)
    except DatasetError as exc:
        raise SourceError(str(exc)) from None
    try:
        prompt = read_judge_prompt(prompt_path(directory, judge_prompt))
    except PromptError as exc:
        raise SourceError(f"judge prompt: {exc}") from None
    tasks = [TaskSource(task.task_id, task.spec) for task in dataset.tasks]
    return Source(
        tasks=tasks,
        prompts=[PromptSource(JUDGE_KIND, prompt.template)],
        assets=_assets(directory),
    )


def _opener(blob: AudioBlob):
    return lambda: io.BytesIO(blob.data)


def _assets(directory: Path) -> Iterator[Asset]:
    """One clip at a time (parquet read row group by row group): nothing holds the dataset's
    audio whole. A transcripts-only export yields none."""
    try:
        for blob in iter_user_audio(directory):
            yield Asset(blob.task_id, user_audio_name(blob.turn, blob.extension), _opener(blob))
    except DatasetError as exc:
        raise SourceError(str(exc)) from None
