"""An MSI-Bench release as the engine imports it: every scored cell as a task, the judge's two
templates as one prompt, and each line's audio as a task asset. Pure.

The templates are read from the harness checkout the operator names (``--templates``), never
copied into the project; without the option they are looked for in the release directory itself
(the demo writes stand-ins there). Both files become one prompt version, so a changed template
is a new version and a new judge identity.

Rubrics live in the base cell's spec. A rubric's version is the hash of its row as released:
a changed rubric changes its case's spec (the import reports the task as changed), its label
names the new version, and since the judge's user message embeds the rubric, the changed pair is
a new judgment while every unchanged pair keeps its stored answer.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import jinja2

from evaluation.benchmarks.base import Asset, PromptSource, Source, SourceError, TaskSource

from .judge import JudgeTemplateError, JudgeTemplates, environment, load_templates
from .judgments import USER_PART
from .outcomes import RUBRIC
from .release import BASE, SPEAK, ReleaseError, read_release

logger = logging.getLogger(__name__)

BYSTANDER_AUDIO = "bystander.wav"


def rubric_version(rubric: dict) -> str:
    """The first 12 hex digits of the SHA-256 of the rubric row (sorted keys, UTF-8)."""
    text = json.dumps(rubric, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def line_audio_name(spec: dict, audio: str) -> str:
    """A line's clip as the task names it: its path inside the case directory (lines/01.wav)."""
    path, case = PurePosixPath(audio), PurePosixPath(spec["path"])
    try:
        return str(path.relative_to(case))
    except ValueError:
        return str(path)


def templates_for(directory: Path, templates: str | Path | None) -> JudgeTemplates:
    """The judge templates, from ``templates`` (a harness checkout or a folder holding them) or
    else from the release directory; both must compile as the harness compiles them."""
    try:
        found = load_templates(Path(templates) if templates else directory)
        for name, text in (("judge_system.j2", found.system), ("judge_user.j2", found.user)):
            try:
                environment().from_string(text)
            except jinja2.TemplateSyntaxError as exc:
                raise JudgeTemplateError(
                    f"{found.directory}/{name} line {exc.lineno}: {exc}"
                ) from None
    except JudgeTemplateError as exc:
        hint = "" if templates else "; name the harness checkout with --templates HARNESS_DIR"
        raise SourceError(f"judge templates: {exc}{hint}") from None
    return found


AUDIO_CHOICES = ("stored", "none")


def read_source(
    directory: Path, *, templates: str | Path | None = None, audio: str | None = None
) -> Source:
    """Tasks, the judge prompt and the audio of a release. Raises SourceError naming the file,
    line and case of every problem (release.py's rules). ``audio="none"`` reads a release
    without its WAV files (scoring never reads them; the drill-down then has no clips)."""
    root = Path(directory)
    audio = audio or AUDIO_CHOICES[0]
    if audio not in AUDIO_CHOICES:
        raise SourceError(f"audio must be one of {', '.join(AUDIO_CHOICES)} (got {audio!r})")
    try:
        release = read_release(root, check_audio=audio != "none")
    except ReleaseError as exc:
        raise SourceError(str(exc)) from None
    for warning in release.warnings:
        logger.warning("%s", warning)
    found = templates_for(root, templates)
    tasks = []
    for task in release.tasks:
        spec = task.spec
        if spec["kind"] == BASE:
            spec = {
                **spec,
                "rubric_versions": {
                    rid: rubric_version(row) for rid, row in spec["rubrics"].items()
                },
            }
        elif spec["kind"] == SPEAK:
            # The case's lines stay on its base cell: a speak probe's rules never read them, and
            # every stage of a submission reads every cell's spec.
            lines = len(spec["turns"])
            spec = {key: value for key, value in spec.items() if key != "turns"}
            spec["n_lines"] = lines
        tasks.append(TaskSource(task.task_id, spec))
    prompt = PromptSource(RUBRIC, found.system, parts={USER_PART: found.user})
    assets = _assets(root, tasks) if audio != "none" else ()
    return Source(tasks=tasks, prompts=[prompt], assets=assets)


def _opener(path: Path):
    return lambda: path.open("rb")


def _assets(root: Path, tasks: list[TaskSource]) -> Iterator[Asset]:
    """Each line's WAV on its base cell, the bystander clip on its speak cell (streamed)."""
    for task in tasks:
        spec = task.spec
        if spec["kind"] == BASE:
            for turn in spec["turns"]:
                if turn.get("audio"):
                    name = line_audio_name(spec, turn["audio"])
                    yield Asset(task.task_id, name, _opener(root / turn["audio"]))
        elif spec["kind"] == SPEAK:
            yield Asset(task.task_id, BYSTANDER_AUDIO, _opener(root / spec["audio"]))
