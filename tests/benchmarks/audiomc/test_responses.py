"""The upload (SPEC §3, §6 rows 1-4): every problem with its line and field."""

from __future__ import annotations

import json

import pytest

from evaluation.benchmarks.audiomc.responses import SubmissionError, parse_submission

IDS = ["t1", "t2", "t3", "t4"]


def parse(text, **kwargs):
    kwargs.setdefault("task_ids", IDS)
    kwargs.setdefault("output_modality", "text")
    return parse_submission(text, **kwargs)


def problems(text, **kwargs) -> list[str]:
    with pytest.raises(SubmissionError) as caught:
        parse(text, **kwargs)
    return [str(p) for p in caught.value.problems]


def jsonl(*rows) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def test_replies_verbatim_alias_and_null_as_empty():
    text = jsonl(
        {"id": "t2", "response": "  Six pm, Friday.\n"},
        {"id": "t1", "model_response": "From the alias"},
        {"id": "t3", "response": None, "extra": "ignored"},
        {"id": "t4", "response": "same", "model_response": "same"},
    )
    submission = parse(text.encode("utf-8"))
    # Not stripped (SPEC §6 row 15), null is "" (row 2), file order kept.
    assert submission.responses == {
        "t2": "  Six pm, Friday.\n",
        "t1": "From the alias",
        "t3": "",
        "t4": "same",
    }
    assert submission.missing == [] and submission.complete
    assert submission.output_modality == "text" and submission.response_audio == {}


def test_edge_01_missing_ids_are_listed_in_dataset_order_and_mark_incomplete():
    submission = parse(jsonl({"id": "t3", "response": "x"}, {"id": "t1", "response": "y"}))
    assert submission.missing == ["t2", "t4"]
    assert not submission.complete


def test_edge_03_duplicate_id_rejected_with_both_lines():
    text = jsonl(
        {"id": "t1", "response": "a"}, {"id": "t2", "response": "b"}, {"id": "t1", "response": "c"}
    )
    assert problems(text) == [
        "responses.jsonl line 3, field id: duplicate id 't1' (first on line 1)"
    ]


def test_edge_04_unknown_id_rejected_with_its_line():
    # The benchmark's issue asks for rejection (SPEC §6 row 4 would ignore the line).
    text = jsonl({"id": "t1", "response": "a"}, "", {"id": "nope", "response": "b"})
    assert problems(text, file_name="run.jsonl") == [
        "run.jsonl line 3, field id: 'nope' is not a task of the dataset"
    ]


def test_malformed_lines_each_reported_with_line_and_field():
    text = jsonl(
        {"id": "t1", "response": "fine"},
        "{broken",
        '["t2", "x"]',
        '"just a string"',
        {"response": "no id"},
        {"id": 2, "response": "numeric id"},
        {"id": "t2"},
        {"id": "t3", "response": 5},
        {"id": "t4", "model_response": ["a"]},
        '{"id": "t2", "response": NaN}',
        '{"id": "t2", "response": "x", "score": Infinity}',
        {"id": "t2", "response": "a", "model_response": "b"},
    )
    found = problems(text)
    assert found[0].startswith("responses.jsonl line 2: not valid JSON")
    assert found[1:9] == [
        "responses.jsonl line 3: not a JSON object but list",
        "responses.jsonl line 4: not a JSON object but str",
        "responses.jsonl line 5, field id: missing",
        "responses.jsonl line 6, field id: must be a string",
        "responses.jsonl line 7, field response: missing (give response or model_response; "
        "null for an empty reply)",
        "responses.jsonl line 8, field response: must be a string or null, not int",
        "responses.jsonl line 9, field model_response: must be a string or null, not list",
        "responses.jsonl line 10: not valid JSON (NaN is not JSON)",
    ]
    assert found[9] == "responses.jsonl line 11: not valid JSON (Infinity is not JSON)"
    assert found[10] == (
        "responses.jsonl line 12, field model_response: differs from response; give one of them"
    )
    # A line with a bad reply still claims its id: line 12 repeats line 7's.
    assert found[11] == "responses.jsonl line 12, field id: duplicate id 't2' (first on line 7)"
    assert len(found) == 12


def test_not_utf8_and_a_byte_order_mark():
    assert problems(b"\xff\xfe{")[0].startswith("responses.jsonl line 1: not UTF-8 text")
    submission = parse("\ufeff" + jsonl({"id": "t1", "response": "ok"}))
    assert submission.responses == {"t1": "ok"}


def test_crlf_line_ends_and_unicode_line_separators_inside_a_reply():
    text = '{"id": "t1", "response": "a\u2028b"}\r\n{"id": "t2", "response": "c"}\r\n'
    submission = parse(text)
    assert submission.responses == {"t1": "a\u2028b", "t2": "c"}


def test_output_modality_must_be_declared():
    assert problems(jsonl({"id": "t1", "response": "a"}), output_modality="video") == [
        "responses.jsonl, field output_modality: 'video' is not one of text, audio"
    ]


def test_audio_output_may_bring_reply_audio_for_playback():
    text = jsonl(
        {"id": "t1", "response": "spoken reply, transcribed"}, {"id": "t2", "response": ""}
    )
    submission = parse(text, output_modality="audio", audio_files=["audio/t1.wav", "t2.MP3"])
    assert submission.output_modality == "audio"
    assert submission.response_audio == {"t1": "audio/t1.wav", "t2": "t2.MP3"}
    # Scoring reads the text.
    assert submission.responses["t1"] == "spoken reply, transcribed"


def test_reply_audio_problems():
    text = jsonl({"id": "t1", "response": "a"}, {"id": "t2", "response": "b"})
    assert problems(text, output_modality="text", audio_files=["t1.wav"]) == [
        "t1.wav: reply audio is accepted only for an audio-output submission"
    ]
    found = problems(
        text,
        output_modality="audio",
        audio_files=["t1.wav", "x/t1.flac", "t2.txt", "zz.wav", "t3.wav"],
    )
    assert found == [
        "x/t1.flac: a second audio file for 't1' (first t1.wav)",
        "t2.txt: not an audio file (aac, flac, m4a, mp3, ogg, opus, wav, webm)",
        "zz.wav: 'zz' is not a task of the dataset",
        "t3.wav: no response line for 't3'",
    ]
