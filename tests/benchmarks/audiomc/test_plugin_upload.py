"""Uploads through the engine's validation: every problem with its file and line; missing tasks
only with a partial upload (then incomplete); reply audio only for an audio-output system."""

from __future__ import annotations

import json
import zipfile

import pytest

from evaluation.services import benchmark_import
from evaluation.services.submissions import bundle_validate
from tests.conftest import wav_file

pytestmark = pytest.mark.django_db

IDS = ["task-memory-0001", "task-retain-0002", "task-cohere-0003", "task-voiced-0004"]
LAST = "task-voiced-0005"


@pytest.fixture
def board(hand_dataset, stand_in_prompt):
    return benchmark_import(
        slug="audio-multichallenge",
        directory=hand_dataset,
        plugin="audio-multichallenge",
        options={"judge-prompt": str(stand_in_prompt)},
    ).benchmark


def _lines(*rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def _check(board, tmp_path, text: str, *, name="replies.jsonl", partial=False, **options):
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return bundle_validate(benchmark=board, path=path, allow_partial=partial, options=options)


def test_a_complete_upload_is_accepted_with_either_reply_key(board, tmp_path):
    text = _lines(
        *({"id": i, "response": f"reply {i}"} for i in IDS[:2]),
        {"id": IDS[2], "model_response": None},
        {"id": IDS[3], "model_response": "reply"},
        {"id": LAST, "response": ""},
    )
    report, contents = _check(board, tmp_path, text)
    assert report.ok, report.lines()
    assert contents.present == {*IDS, LAST} and contents.missing == []
    assert contents.options == {"output_modality": "text"}
    assert contents.manifest["system_type"] == "text-output"


def test_duplicate_and_unknown_ids_are_rejected_with_their_lines(board, tmp_path):
    text = _lines(
        {"id": IDS[0], "response": "a"},
        {"id": IDS[1], "response": "b"},
        {"id": IDS[0], "response": "again"},
        {"id": "no-such-task", "response": "c"},
        {"id": IDS[2]},
    )
    report, _ = _check(board, tmp_path, text, partial=True)
    lines = "\n".join(report.lines())
    assert not report.ok
    assert "line 3, field id: duplicate id 'task-memory-0001' (first on line 1)" in lines
    assert "line 4, field id: 'no-such-task' is not a task of the dataset" in lines
    assert "line 5, field response: missing" in lines
    assert "replies.jsonl" in lines


def test_missing_tasks_need_a_partial_upload_and_make_it_incomplete(board, tmp_path):
    text = _lines(*({"id": i, "response": "r"} for i in IDS))
    report, _ = _check(board, tmp_path, text)
    assert not report.ok and "1 task(s) have no reply: task-voiced-0005" in "\n".join(
        report.lines()
    )
    report, contents = _check(board, tmp_path, text, partial=True)
    assert report.ok and contents.missing == [LAST]


def test_reply_audio_only_for_audio_output(board, tmp_path):
    clip = wav_file(b"\x00\x01" * 1600)
    path = tmp_path / "audio.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("responses.jsonl", _lines(*({"id": i, "response": "r"} for i in IDS)))
        archive.writestr(f"clips/{IDS[0]}.wav", clip)
        archive.writestr("manifest.json", json.dumps({"organization": "Lab"}))
    report, _ = bundle_validate(
        benchmark=board, path=path, allow_partial=True, options={"output_modality": "text"}
    )
    assert not report.ok
    assert "reply audio is accepted only for an audio-output submission" in "\n".join(
        report.lines()
    )
    report, contents = bundle_validate(
        benchmark=board, path=path, allow_partial=True, options={"output_modality": "audio"}
    )
    assert report.ok, report.lines()
    assert contents.manifest == {
        "organization": "Lab",
        "output_modality": "audio",
        "system_type": "audio-output",
    }
    # Audio for a task without a reply line is refused.
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(f"clips/{LAST}.wav", clip)
    report, _ = bundle_validate(
        benchmark=board, path=path, allow_partial=True, options={"output_modality": "audio"}
    )
    assert "no response line for 'task-voiced-0005'" in "\n".join(report.lines())


def test_not_json_and_a_bad_modality(board, tmp_path):
    report, _ = _check(board, tmp_path, "{not json\n", partial=True)
    assert "line 1: not valid JSON" in "\n".join(report.lines())
    report, _ = _check(
        board,
        tmp_path,
        _lines({"id": IDS[0], "response": "r"}),
        partial=True,
        output_modality="video",
    )
    assert "output_modality must be one of text, audio" in "\n".join(report.lines())
