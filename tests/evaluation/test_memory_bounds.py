"""Memory stays bounded whatever a bundle declares: transcripts are refused before parsing when
they could not be a conversation, waveform peaks are read in fixed byte blocks, and audio
formats no benchmark uses are refused at validation (on the example plug-in, tests/toyplugin).
MP-Bench's transcripts: tests/benchmarks/mpbench/test_memory_bounds.py."""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import pytest

from evaluation import audio as evaluation_audio
from evaluation.audio import PEAK_BLOCK_BYTES, wav_peaks
from evaluation.services import bundle_validate
from tests.conftest import wav_file, wav_header

ANSWERS = b'{"id": "q1", "answer": "It is 2"}\n'


def validate(benchmark, path):
    report, _ = bundle_validate(benchmark=benchmark, path=path, allow_partial=True)
    return [str(p) for p in report.problems]


def zipped(tmp_path, files: dict[str, bytes]):
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


class Recording(io.BytesIO):
    largest = 0

    def read(self, size=-1):
        data = super().read(size)
        self.largest = max(self.largest, len(data))
        return data


def test_peaks_are_read_in_fixed_byte_blocks():
    # 8 channels of 32-bit samples: a block of 65,536 frames would be 2 MiB.
    frames = np.tile(np.array([-(2**30), 2**30], dtype="<i4"), 800_000).tobytes()
    stream = Recording(wav_file(frames, channels=8, rate=48_000, bits=32))
    peaks = wav_peaks(stream, buckets=100)
    assert peaks["channels"] == 8 and peaks["buckets"] == 100
    assert peaks["min"] == [-0.5] * 100 and peaks["max"] == [0.5] * 100
    assert stream.largest <= PEAK_BLOCK_BYTES


def test_peaks_refuse_more_channels_than_any_benchmark_uses():
    # The attack: 65,535 channels, so one frame is 128 KiB and a block of frames gigabytes.
    header = wav_header(65_535 * 2 * 10, channels=65_535)
    with pytest.raises(Exception, match="65,535 channels; at most 8"):
        wav_peaks(io.BytesIO(header + b"\0" * (65_535 * 2 * 10)), buckets=10)
    assert evaluation_audio.MAX_CHANNELS == 8 and evaluation_audio.MAX_SAMPLE_RATE == 192_000


@pytest.mark.django_db
def test_validation_refuses_audio_formats_and_lengths_the_benchmark_does_not_use(
    toybench, tmp_path
):
    """The example plug-in declares no audio limits of its own: the defaults hold (two
    channels, 48 kHz, ten minutes a file)."""
    silence = b"\0" * 3200
    float_header = bytearray(wav_header(len(silence)))
    struct.pack_into("<H", float_header, 20, 85)  # format tag 85: MP3 inside a WAV
    files = {
        "answers.jsonl": ANSWERS,
        "channels.wav": wav_file(silence, channels=65_535),
        "rate.wav": wav_file(silence, rate=384_000),
        "mp3.wav": bytes(float_header) + silence,
        "long.wav": wav_header(16_000 * 2 * 5 * 3600) + silence,
        "q1.wav": wav_file(silence),
    }
    assert validate(toybench, zipped(tmp_path, files)) == [
        "channels.wav: not accepted as audio: the WAV has 65,535 channels; at most 2",
        "rate.wav: not accepted as audio: the WAV has a sample rate of 384,000 Hz; at "
        "most 48,000 Hz",
        "mp3.wav: not accepted as audio: the WAV is not PCM audio (format tag 85)",
        "long.wav: not accepted as audio: the WAV declares 18,000 s of audio; at most "
        "600 s for this file",
    ]
