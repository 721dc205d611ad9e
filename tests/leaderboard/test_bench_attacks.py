"""The full-size attack bench builds what it says it sends: a zip whose end records and central
directory hold every empty entry (zip64 past 65,535), a JSONL member grown by whole lines, a JSON
member grown by trailing whitespace, and silence under a valid WAV header in the member's own
format. Read back with zipfile, json and wave, not with the builders."""

from __future__ import annotations

import io
import json
import wave
import zipfile

from config.devtools.management.commands.bench_attacks import audio_zip, entries_zip, text_zip
from evaluation.bundles import zip_entry_count

MIB = 1024 * 1024


def _wav(channels: int, width: int, rate: int, frames: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(rate)
        out.writeframes(b"\x01" * frames * channels * width)
    return buffer.getvalue()


def test_the_entries_zip_holds_every_entry_in_its_zip64_end_records(tmp_path):
    path = entries_zip(tmp_path / "entries.zip", 70_000)
    assert zip_entry_count(path) == 70_000
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        assert len(infos) == 70_000
        assert infos[-1].filename == "junk/69999.txt"
        assert archive.read(infos[12_345]) == b""
        assert archive.testzip() is None


def test_a_jsonl_member_grows_by_whole_lines_and_the_other_members_stay(tmp_path):
    lines = b'{"id": "a", "text": "hi"}\n{"id": "b", "text": "ho"}\n'
    bundle = tmp_path / "run.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("answers.jsonl", lines)
        archive.writestr("manifest.json", '{"system": "x"}')
    grown = text_zip(bundle, tmp_path / "text.zip", 3 * MIB)
    with zipfile.ZipFile(grown) as archive:
        assert archive.read("manifest.json") == b'{"system": "x"}'
        data = archive.read("answers.jsonl")
    assert len(data) >= 3 * MIB
    assert data.startswith(lines)
    parsed = [json.loads(line) for line in data.splitlines()]
    assert {row["id"] for row in parsed} == {"a", "b"}


def test_a_json_member_other_than_the_manifest_grows_by_whitespace_and_stays_json(tmp_path):
    bundle = tmp_path / "run.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("manifest.json", '{"system": "a longer manifest than the task file"}')
        archive.writestr("task_1/response.json", '{"text": "x"}')
    grown = text_zip(bundle, tmp_path / "text.zip", 2 * MIB)
    with zipfile.ZipFile(grown) as archive:
        data = archive.read("task_1/response.json")
        assert archive.getinfo("task_1/response.json").compress_size < len(data) / 20
    assert len(data) == 2 * MIB
    assert json.loads(data) == {"text": "x"}


def test_a_single_jsonl_upload_is_grown_inside_a_zip(tmp_path):
    upload = tmp_path / "run.jsonl"
    upload.write_bytes(b'{"id": 1}\n')
    grown = text_zip(upload, tmp_path / "text.zip", MIB)
    with zipfile.ZipFile(grown) as archive:
        assert archive.namelist() == ["run.jsonl"]
        assert archive.read("run.jsonl").count(b'{"id": 1}\n') == -(-MIB // 10)


def test_the_audio_member_is_silence_in_its_own_format_under_a_valid_header(tmp_path):
    bundle = tmp_path / "run.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("task_1/out.wav", _wav(2, 2, 24_000, 100))
        archive.writestr("task_1/response.json", "{}")
    made = audio_zip(bundle, tmp_path / "audio.zip", 4 * MIB)
    with zipfile.ZipFile(made) as archive:
        assert archive.read("task_1/response.json") == b"{}"
        with archive.open("task_1/out.wav") as handle, wave.open(handle) as audio:
            assert (audio.getnchannels(), audio.getsampwidth(), audio.getframerate()) == (
                2,
                2,
                24_000,
            )
            assert audio.getnframes() == 4 * MIB // 4
            assert audio.readframes(1000) == bytes(4000)
