"""Hostile uploads refused with a clear problem, never a server error, and never stored: reply
audio whose header is not audio within the benchmark's limits (silence compresses 1000:1), a
replies line or a manifest nested a hundred thousand levels deep."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path

from evaluation.benchmarks.audiomc import upload
from evaluation.benchmarks.audiomc.plugin import AudioMultiChallenge
from evaluation.benchmarks.base import UploadLimits
from evaluation.bundles import ValidationReport, audio_members_check
from tests.conftest import wav_file, wav_header

LIMITS = UploadLimits(max_bytes=2 * 1024**3, max_ratio=100.0)
TASKS = {"t1": {}, "t2": {}}
REPLIES = "".join(json.dumps({"id": t, "response": "ok"}) + "\n" for t in TASKS)


def _zip(path: Path, files: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def _problems(path: Path, modality: str = "audio") -> list[tuple[str | None, str]]:
    """As bundle_validate runs them: the core's check of every WAV member against the plug-in's
    audio limits, then the plug-in's validation."""
    report = ValidationReport()
    audio_members_check(path, AudioMultiChallenge.audio_limits, report)
    upload.validate(path, report, tasks=TASKS, allow_partial=False, modality=modality,
                    limits=LIMITS)  # fmt: skip
    return [(p.file, p.message) for p in report.problems]


def test_short_pcm_reply_audio_is_accepted(tmp_path):
    second = wav_file(b"\x01\x00" * 16_000)
    bundle = _zip(tmp_path / "ok.zip", {"replies.jsonl": REPLIES, "t1.wav": second})
    assert _problems(bundle) == []


def test_reply_audio_declaring_more_than_ten_minutes_is_refused(tmp_path):
    # Eleven minutes of 16 kHz silence: 21 MB that zip to a few kilobytes.
    samples = 11 * 60 * 16_000 * 2
    silent = _zip(
        tmp_path / "long.zip",
        {"replies.jsonl": REPLIES, "t1.wav": wav_header(samples) + bytes(samples)},
    )
    assert _problems(silent) == [
        ("t1.wav", "not accepted as audio: the WAV declares 660 s of audio; at most 600 s "
                   "for this file"),
    ]  # fmt: skip
    # Noise does not compress: the header is read all the same.
    noise = random.Random(7).randbytes(64_000)
    loud = _zip(tmp_path / "loud.zip", {"replies.jsonl": REPLIES,
                                        "t1.wav": wav_header(samples) + noise})  # fmt: skip
    assert _problems(loud) == [
        ("t1.wav", "not accepted as audio: the WAV declares 660 s of audio; at most 600 s "
                   "for this file"),
    ]  # fmt: skip


def test_reply_audio_that_is_not_a_wav_or_holds_more_than_it_declares_is_refused(tmp_path):
    noise = random.Random(8).randbytes(1536 * 1024)
    bundle = _zip(
        tmp_path / "bad.zip",
        {
            "replies.jsonl": REPLIES,
            "t1.wav": noise,  # no header
            "t2.wav": wav_header(32_000) + noise,  # declares one second, holds 1.5 MiB more
        },
    )
    assert dict(_problems(bundle)) == {
        "t1.wav": "not accepted as audio: not a WAV file (no RIFF/WAVE header)",
        "t2.wav": "not accepted as audio: the file is larger than the audio its header declares",
    }


def test_a_deeply_nested_line_or_manifest_is_a_problem_not_a_crash(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    lines = REPLIES + deep + "\n"
    bundle = _zip(tmp_path / "deep.zip", {"replies.jsonl": lines, "manifest.json": deep})
    found = _problems(bundle, modality="text")
    assert ("manifest.json", "not accepted as JSON: it nests 100,000 levels deep; at most 16 "
                             "are allowed") in found  # fmt: skip
    lone = tmp_path / "replies.jsonl"
    lone.write_text(lines)
    assert _problems(lone, modality="text") == [
        ("replies.jsonl", "line 3: not valid JSON (nests 100,000 levels deep; at most 64 are "
                          "allowed)"),
    ]  # fmt: skip
