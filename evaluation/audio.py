"""Stored audio, independent of who may hear it: HTTP byte ranges and waveform peaks.

Plain Python and numpy; the leaderboard and the rating studies each wrap these in views with
their own access rules.
"""

from __future__ import annotations

import re
import struct
import wave
from dataclasses import dataclass

import numpy as np

# Peaks are read this many bytes at a time, whatever the frame size a header declares.
PEAK_BLOCK_BYTES = 1024 * 1024
# Formats no benchmark uses: more channels or a higher rate than any recording setup of theirs.
MAX_CHANNELS = 8
MAX_SAMPLE_RATE = 192_000
WAVE_FORMAT_PCM = 1
WAVE_FORMAT_IEEE_FLOAT = 3
WAVE_FORMAT_EXTENSIBLE = 0xFFFE
# How much of a file is read to find its fmt and data chunks.
WAV_HEAD_BYTES = 64 * 1024
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class Unsatisfiable(Exception):
    pass


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive (first, last) byte of a single-range request, None to send the whole file
    (no header, a malformed one, or several ranges), or Unsatisfiable (RFC 9110 section 14)."""
    if not header:
        return None
    match = _RANGE.match(header.strip().replace(" ", ""))
    if match is None:
        return None
    first, last = match.groups()
    if first == "" and last == "":
        return None
    if first == "":
        length = int(last)
        if length == 0 or size == 0:
            raise Unsatisfiable
        return max(0, size - length), size - 1
    start = int(first)
    end = int(last) if last else size - 1
    if last and end < start:
        return None
    if start >= size:
        raise Unsatisfiable
    return start, min(end, size - 1)


class _ReadOnly:
    """Hides everything but read() so the wave module reads a stream front to back."""

    def __init__(self, stream):
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        return self._stream.read(size)


def _samples(raw: bytes, width: int) -> np.ndarray:
    """PCM bytes as floats in [-1, 1]."""
    if width == 1:
        return (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    if width == 2:
        return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    if width == 3:
        triples = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        values = triples[:, 0] | (triples[:, 1] << 8) | (triples[:, 2] << 16)
        values = np.where(values >= 1 << 23, values - (1 << 24), values)
        return values.astype(np.float32) / float(1 << 23)
    if width == 4:
        return np.frombuffer(raw, dtype="<i4").astype(np.float64) / float(1 << 31)
    raise wave.Error(f"unsupported sample width {width} bytes")


@dataclass(frozen=True)
class WavFormat:
    """What a WAV header declares."""

    format_tag: int  # 1 PCM, 3 IEEE float (the sub-format of an extensible header)
    channels: int
    sample_rate: int
    bits: int
    data_offset: int  # where the samples start
    data_bytes: int  # how many bytes of samples the data chunk declares

    @property
    def byte_rate(self) -> int:
        return self.sample_rate * self.channels * max(1, self.bits // 8)

    @property
    def seconds(self) -> float:
        return self.data_bytes / self.byte_rate if self.byte_rate else float("inf")


@dataclass(frozen=True)
class AudioLimits:
    """What a benchmark accepts for one audio file; a benchmark's own are at most the defaults."""

    max_seconds: float
    max_bytes: int
    max_channels: int = MAX_CHANNELS
    max_sample_rate: int = MAX_SAMPLE_RATE


class NotAWav(ValueError):
    """The bytes are not a RIFF/WAVE file with a fmt and a data chunk; the message says why."""


def wav_format(head: bytes) -> WavFormat:
    """Parse the header at the start of a WAV (RIFF, or RF64 with its ds64 sizes)."""
    if len(head) < 12 or head[:4] not in (b"RIFF", b"RF64") or head[8:12] != b"WAVE":
        raise NotAWav("not a WAV file (no RIFF/WAVE header)")
    position, found, big_data = 12, None, None
    while position + 8 <= len(head):
        chunk, size = head[position : position + 4], struct.unpack_from("<I", head, position + 4)[0]
        body = position + 8
        if chunk == b"ds64" and size >= 16 and body + 16 <= len(head):
            big_data = struct.unpack_from("<Q", head, body + 8)[0]
        elif chunk == b"fmt " and size >= 16 and body + 16 <= len(head):
            tag, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", head, body)
            if tag == WAVE_FORMAT_EXTENSIBLE and size >= 40 and body + 26 <= len(head):
                tag = struct.unpack_from("<H", head, body + 24)[0]
            found = (tag, channels, rate, bits)
        elif chunk == b"data":
            if found is None:
                raise NotAWav("the WAV has no fmt chunk before its data")
            data_bytes = big_data if size == 0xFFFFFFFF and big_data is not None else size
            return WavFormat(*found, data_offset=body, data_bytes=data_bytes)
        position = body + size + (size & 1)
    raise NotAWav(f"no fmt and data chunks in the first {WAV_HEAD_BYTES // 1024} KiB of the WAV")


def wav_problem(fmt: WavFormat, limits: AudioLimits) -> str | None:
    """Why this WAV is not audio the benchmark takes, or None."""
    if fmt.format_tag not in (WAVE_FORMAT_PCM, WAVE_FORMAT_IEEE_FLOAT):
        return f"is not PCM audio (format tag {fmt.format_tag})"
    if fmt.bits not in (8, 16, 24, 32, 64):
        return f"has {fmt.bits}-bit samples; only 8, 16, 24 or 32 bits are read"
    if not 1 <= fmt.channels <= min(limits.max_channels, MAX_CHANNELS):
        return f"has {fmt.channels:,} channels; at most {min(limits.max_channels, MAX_CHANNELS)}"
    if not 1 <= fmt.sample_rate <= min(limits.max_sample_rate, MAX_SAMPLE_RATE):
        top = min(limits.max_sample_rate, MAX_SAMPLE_RATE)
        return f"has a sample rate of {fmt.sample_rate:,} Hz; at most {top:,} Hz"
    if fmt.seconds > limits.max_seconds:
        return (
            f"declares {fmt.seconds:,.0f} s of audio; at most {limits.max_seconds:,.0f} s "
            "for this file"
        )
    if fmt.data_offset + fmt.data_bytes > limits.max_bytes:
        return f"declares {fmt.data_bytes:,} bytes of audio; at most {limits.max_bytes:,}"
    return None


def wav_peaks(stream, *, buckets: int) -> dict:
    """Min and max sample of each of ``buckets`` equal stretches of a PCM WAV, read in blocks.

    Frame f belongs to bucket floor(f * buckets / frames); all channels count. Never holds more
    than one block of PEAK_BLOCK_BYTES (or one frame, if larger) in memory; a WAV with more
    channels than any benchmark uses is refused.
    """
    with wave.open(_ReadOnly(stream), "rb") as reader:
        channels = reader.getnchannels()
        width = reader.getsampwidth()
        rate = reader.getframerate()
        frames = reader.getnframes()
        if channels > MAX_CHANNELS:
            raise wave.Error(f"{channels:,} channels; at most {MAX_CHANNELS} are drawn")
        block_frames = max(1, PEAK_BLOCK_BYTES // (channels * width))
        count = max(0, min(buckets, frames))
        lows = np.full(count, np.inf)
        highs = np.full(count, -np.inf)
        position = 0
        while position < frames:
            raw = reader.readframes(min(block_frames, frames - position))
            if not raw:
                break
            block = _samples(raw, width)
            block = block[: (len(block) // channels) * channels].reshape(-1, channels)
            n = len(block)
            index = ((position + np.arange(n, dtype=np.int64)) * count) // frames
            starts = np.flatnonzero(np.diff(index)) + 1
            starts = np.concatenate(([0], starts))
            where = index[starts]
            lows[where] = np.minimum(lows[where], np.minimum.reduceat(block.min(axis=1), starts))
            highs[where] = np.maximum(highs[where], np.maximum.reduceat(block.max(axis=1), starts))
            position += n
    lows[~np.isfinite(lows)] = 0.0
    highs[~np.isfinite(highs)] = 0.0
    return {
        "duration": frames / rate if rate else 0.0,
        "sample_rate": rate,
        "channels": channels,
        "buckets": count,
        "min": [round(float(v), 4) for v in lows],
        "max": [round(float(v), 4) for v in highs],
    }
