"""Fixtures for the Audio MultiChallenge tests: the benchmark's own files beside the checkout
(../shared: the judge prompt and the SPEC, for the tests whose subject is their text; they skip
without them), the demo's stand-in judge prompt written by code (for every other test, so a
fresh clone runs them), and a small dataset written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.benchmarks.audiomc.demo import DEMO_PROMPT
from evaluation.benchmarks.audiomc.importer import PROMPT_FILE
from tests.conftest import require_shared, shared_benchmark

SHARED_AUDIOMC = shared_benchmark("audiomc")


def released(name: str, what: str) -> Path:
    """A released file of the benchmark (../shared), or a skip naming it and where it was looked
    for."""
    return require_shared("audiomc", name, what=f"Audio MultiChallenge's released {what}") / name


@pytest.fixture(scope="session")
def prompt_file() -> Path:
    """The dataset card's judge prompt (../shared): for the tests whose subject is its text."""
    return released("judge_prompt.txt", "judge prompt")


@pytest.fixture(scope="session")
def spec_file() -> Path:
    return released("SPEC.md", "SPEC")


@pytest.fixture(scope="session")
def stand_in_prompt(tmp_path_factory) -> Path:
    """The demo's stand-in judge prompt (written by code, nothing of the dataset card's) in the
    file the import reads: what every test imports with whose subject is not the prompt's text."""
    path = tmp_path_factory.mktemp("stand-in") / PROMPT_FILE
    path.write_text(DEMO_PROMPT, "utf-8")
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
