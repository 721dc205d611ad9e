"""Memory stays bounded whatever a bundle declares: MP-Bench's transcripts are refused before
parsing when they could not be a conversation, and its audio is held to the limits it declares
(four hours a file). The core's bounds: tests/evaluation/
test_memory_bounds.py."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tests.conftest import peak_rss_growth, wav_file, wav_header
from tests.evaluation.test_memory_bounds import validate, zipped

TASK = "scenario_argument-diag_1001-tier_2-task_0"
INPUT = b'{"text": "hi", "chunks": [{"text": "hi", "timestamp": [0.0, 0.5]}]}'


def empty_chunks(size: int) -> bytes:
    """{"chunks": [{}, {}, ...]} of about `size` bytes, with random whitespace between the
    chunks so that it compresses about 8:1, under the ratio limit, as the attack's did."""
    rng = np.random.default_rng(4)
    whitespace = np.frombuffer(b" \n\t\r", dtype=np.uint8)
    count = size // 6
    cells = np.empty((count, 6), dtype=np.uint8)
    cells[:, :3] = np.frombuffer(b"{},", dtype=np.uint8)
    cells[:, 3:] = rng.choice(whitespace, size=(count, 3))
    body = cells.tobytes()[:-4]  # ends after a "}," ...
    return b'{"text": "", "chunks": [' + body.rstrip(b", \n\t\r") + b"]}"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("megabytes", "why"),
    [
        (64, "file is 67,108,864 bytes; the limit is 16,777,216"),
        (15, "not accepted as JSON: it holds more than 500,000 JSON values"),
    ],
)
def test_a_transcript_of_empty_chunks_is_refused_in_bounded_memory(
    mpbench, tmp_path, megabytes, why
):
    bomb = empty_chunks(megabytes * 1024 * 1024 - 1000)
    if megabytes == 64:
        bomb = bomb + b" " * (megabytes * 1024 * 1024 - len(bomb))
    assert bomb.count(b"{}") > 2_000_000
    path = zipped(tmp_path, {f"{TASK}/all_stitched.json": INPUT, f"{TASK}/response.json": bomb})
    del bomb
    with peak_rss_growth() as peak:
        found = validate(mpbench, path)
    assert found == [f"{TASK} / response.json: {why}"]
    print(f"\n{megabytes} MB of empty chunks: peak RSS growth {peak['mib']:.0f} MiB")
    assert peak["mib"] < 200


@pytest.mark.django_db
def test_validation_refuses_audio_formats_and_lengths_the_benchmark_does_not_use(mpbench, tmp_path):
    silence = b"\0" * 3200
    float_header = bytearray(wav_header(len(silence)))
    struct.pack_into("<H", float_header, 20, 85)  # format tag 85: MP3 inside a WAV
    files = {
        f"{TASK}/all_stitched.json": INPUT,
        f"{TASK}/channels.wav": wav_file(silence, channels=65_535),
        f"{TASK}/rate.wav": wav_file(silence, rate=384_000),
        f"{TASK}/mp3.wav": bytes(float_header) + silence,
        f"{TASK}/long.wav": wav_header(16_000 * 2 * 5 * 3600) + silence,
        f"{TASK}/fine.wav": wav_file(silence),
    }
    assert validate(mpbench, zipped(tmp_path, files)) == [
        f"{TASK}/channels.wav: not accepted as audio: the WAV has 65,535 channels; at most 2",
        f"{TASK}/rate.wav: not accepted as audio: the WAV has a sample rate of 384,000 Hz; at "
        "most 48,000 Hz",
        f"{TASK}/mp3.wav: not accepted as audio: the WAV is not PCM audio (format tag 85)",
        f"{TASK}/long.wav: not accepted as audio: the WAV declares 18,000 s of audio; at most "
        "14,400 s for this file",
    ]
