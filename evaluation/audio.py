"""Stored audio, independent of who may hear it: HTTP byte ranges and waveform peaks.

Plain Python and numpy; the leaderboard and the rating studies each wrap these in views with
their own access rules.
"""

from __future__ import annotations

import re
import wave

import numpy as np

PEAK_BLOCK_FRAMES = 64 * 1024
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


def wav_peaks(stream, *, buckets: int) -> dict:
    """Min and max sample of each of ``buckets`` equal stretches of a PCM WAV, read in blocks.

    Frame f belongs to bucket floor(f * buckets / frames); all channels count. Never holds more
    than one block of audio in memory.
    """
    with wave.open(_ReadOnly(stream), "rb") as reader:
        channels = reader.getnchannels()
        width = reader.getsampwidth()
        rate = reader.getframerate()
        frames = reader.getnframes()
        count = max(0, min(buckets, frames))
        lows = np.full(count, np.inf)
        highs = np.full(count, -np.inf)
        position = 0
        while position < frames:
            raw = reader.readframes(min(PEAK_BLOCK_FRAMES, frames - position))
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
