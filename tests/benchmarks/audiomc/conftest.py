"""Fixtures for the Audio MultiChallenge tests: the benchmark's own files beside the checkout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def shared_audiomc() -> Path:
    """../shared/benchmarks/audiomc beside the checkout (or beside the folder of worktrees that
    holds it), or under $FLOORBOARD_SHARED if set."""
    if os.environ.get("FLOORBOARD_SHARED"):
        return Path(os.environ["FLOORBOARD_SHARED"]) / "benchmarks" / "audiomc"
    for base in (REPO.parent / "shared", REPO.parent.parent / "shared"):
        if (base / "benchmarks" / "audiomc").is_dir():
            return base / "benchmarks" / "audiomc"
    return REPO.parent / "shared" / "benchmarks" / "audiomc"


@pytest.fixture(scope="session")
def prompt_file() -> Path:
    path = shared_audiomc() / "judge_prompt.txt"
    if not path.is_file():
        pytest.skip(f"the Audio MultiChallenge judge prompt is not at {path}")
    return path


@pytest.fixture(scope="session")
def spec_file() -> Path:
    path = shared_audiomc() / "SPEC.md"
    if not path.is_file():
        pytest.skip(f"the Audio MultiChallenge SPEC is not at {path}")
    return path


# --- A small dataset written by hand (JSONL) whose numbers the tests work out by hand -----------

TEMPLATE_BEGIN, TEMPLATE_END = "-----BEGIN TEMPLATE-----\n", "\n-----END TEMPLATE-----"


def template_of(prompt_file: Path) -> str:
    """The text between the marker lines, read here independently of the code under test."""
    text = prompt_file.read_text("utf-8")
    return text.split(TEMPLATE_BEGIN, 1)[1].split(TEMPLATE_END, 1)[0]


def fill(template: str, history: str, item: str) -> str:
    return template.replace("«rubric_item»", item).replace("«conversation_history»", history)


def hand_record(task_id, axis, users, assistants, rubric) -> dict:
    record = {"id": task_id, "axis": axis, "rubric": json.dumps(rubric)}
    for k, text in enumerate(users, 1):
        record[f"user_turn_{k}_transcript"] = text
    for k, text in enumerate(assistants, 1):
        record[f"assistant_turn_{k}_transcript"] = text
    return record


HAND_RECORDS = [
    hand_record(
        "task-memory-0001",
        "INFERENCE_MEMORY",
        ["  I am allergic to nuts.", "Plan a snack.", "What should I bake?"],
        ["Noted, no nuts.", "Apple slices work."],
        ["Item IM-a: avoids nuts", "Item IM-b: suggests a bake"],
    ),
    hand_record(
        "task-retain-0002",
        "INSTRUCTION_RETENTION",
        ["Always answer in French.", "Tell me a fact.", "And another one?"],
        ["D'accord.", "Le ciel est bleu."],
        ["Item IR-a: answers", "Item IR-b: uses French", "Item IR-c: is brief"],
    ),
    hand_record(
        "task-cohere-0003",
        "SELF_COHERENCE",
        ["The trip is 300 km.", "We drive at 100 km/h.", "We leave at noon.", "When do we arrive?"],
        ["Got it.", "", "Noon it is."],
        ["Item SC-a: says 3 pm"],
    ),
    hand_record(
        "task-voiced-0004",
        "VOICE_EDITING",
        ["Book at 6, no, 7 pm.", "On Friday.", "Read it back."],
        ["7 pm noted.", "Friday noted."],
        ["Item VE-a: says 7 pm", "Item VE-b: says Friday"],
    ),
    hand_record(
        "task-voiced-0005",
        "VOICE_EDITING",
        ["Call me Sam.", "Actually, Samuel.", "What is my name?"],
        ["Hi Sam.", "Samuel it is."],
        ["Item VE-c: says Samuel"],
    ),
]


@pytest.fixture
def hand_dataset(tmp_path) -> Path:
    directory = tmp_path / "hand"
    directory.mkdir()
    with (directory / "test.jsonl").open("w", encoding="utf-8") as handle:
        for record in HAND_RECORDS:
            handle.write(json.dumps(record) + "\n")
    return directory
