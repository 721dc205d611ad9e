"""The demo: an invented export (parquet, with user-turn clips that play), a stand-in judge
prompt written by code (an import of the real dataset reads the dataset card's prompt from the
file the operator names), and uploads of invented systems, one of them audio-output with its
replies' audio. Nothing here comes from the dataset; see synthetic.py."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from evaluation.benchmarks.base import DemoRun

from ..dataset import Task, parse_record
from ..importer import PROMPT_FILE
from ..judge import HISTORY_TOKEN, RUBRIC_TOKEN, TEMPLATE_BEGIN, TEMPLATE_END
from ..upload import row_group_of
from .synthetic import (
    PARQUET_NAME,
    responses_jsonl,
    speech_like_wav,
    synthetic_records,
    synthetic_responses,
    write_parquet_export,
)

DEMO_TASKS = 48  # 12+ per axis, 1-15 rubric items each
DEMO_SEED = 12
DEMO_CLIP_SECONDS = 2.5

DEMO_PROMPT = f"""\
Demo stand-in for the Audio MultiChallenge judge prompt, written by Floorboard's demo. An import
of the real dataset reads the dataset card's prompt from the file named with --judge-prompt.
{TEMPLATE_BEGIN}
Read the conversation and decide whether the last assistant reply meets the rubric item.

# Conversation
{HISTORY_TOKEN}

# Rubric item
{RUBRIC_TOKEN}

Answer with a JSON object holding "explanation" (a string) and "criteria_met" (a boolean).
{TEMPLATE_END}
"""

# (system, profile, output modality, seed)
DEMO_SYSTEMS = (
    ("Demo Attentive Voice (synthetic)", "strong", "text", 1),
    ("Demo Forgetful Voice (synthetic)", "weak", "text", 2),
    ("Demo Speaking Voice (synthetic)", "strong", "audio", 3),
    ("Demo Silent Voice (synthetic)", "empty", "text", 4),
)


def demo_records() -> list[dict]:
    return synthetic_records(DEMO_TASKS, seed=DEMO_SEED)


def demo_tasks() -> list[Task]:
    return [parse_record(record) for record in demo_records()]


def write_demo_source(directory: Path) -> None:
    root = Path(directory)
    if not (root / PARQUET_NAME).is_file():
        write_parquet_export(demo_records(), root, max_audio_seconds=DEMO_CLIP_SECONDS)
    (root / PROMPT_FILE).write_text(DEMO_PROMPT, "utf-8")


def _write_audio_upload(path: Path, lines: list[dict], manifest: dict) -> None:
    """A zip of the replies, each reply's audio (a speech-like clip standing in for what the
    system said; scoring reads the text) and a manifest."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("responses.jsonl", responses_jsonl(lines))
        for index, line in enumerate(lines):
            clip = speech_like_wav(line["response"] or "", seed=1000 + index, max_seconds=2.0)
            archive.writestr(f"audio/{line['id']}.wav", io.BytesIO(clip).getvalue())
        archive.writestr("manifest.json", json.dumps(manifest, indent=1))


def write_demo_runs(directory: Path) -> list[DemoRun]:
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    tasks = demo_tasks()
    runs = []
    for system, profile, modality, seed in DEMO_SYSTEMS:
        lines = synthetic_responses(tasks, profile, seed=seed)
        manifest = {
            "description": f"Invented system ({profile} profile) for the demo; not a real model.",
            "output_modality": modality,
        }
        name = system.split(" (")[0].lower().replace(" ", "-")
        if modality == "audio":
            path = root / f"{name}.zip"
            _write_audio_upload(path, lines, manifest)
        else:
            path = root / f"{name}.jsonl"
            path.write_text(responses_jsonl(lines), "utf-8")
        runs.append(
            DemoRun(
                path,
                system,
                row_group_of(modality),
                manifest,
                {"output_modality": modality},
            )
        )
    return runs
