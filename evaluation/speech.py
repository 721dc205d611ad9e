"""Speech-like audio from text, for demos and tests: no recording, no model, numpy only.

Each syllable is a glottal pulse train (pitch moving with declination, a per-syllable contour and
jitter) shaped by the three formants of the vowel it is written with, with fricative hiss for
consonants such as s/f/sh. Voice activity detectors score it as speech (a steady tone they do
not). Deterministic: the randomness is seeded by the voice and the text.
"""

from __future__ import annotations

import io
import re
import wave
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import BinaryIO

import numpy as np


@dataclass(frozen=True)
class Voice:
    name: str
    f0: float  # mean pitch, Hz
    formant_scale: float  # > 1 is a shorter vocal tract: brighter vowels
    syllable_s: float  # mean syllable length, seconds
    loudness: float  # peak amplitude, fraction of full scale


VOICES = {
    v.name: v
    for v in (
        Voice("A", 105, 0.97, 0.20, 0.45),
        Voice("B", 128, 1.02, 0.18, 0.42),
        Voice("C", 196, 1.14, 0.19, 0.40),
        Voice("D", 232, 1.20, 0.17, 0.40),
        Voice("assistant", 168, 1.09, 0.19, 0.42),
    )
}
# (F1, F2, F3) in Hz of an adult male tract, by the vowel letter a syllable is written with.
_FORMANTS = {"a": (730, 1090, 2440), "e": (530, 1840, 2480), "i": (300, 2250, 3000),
             "o": (570, 840, 2410), "u": (320, 900, 2250), "y": (400, 2000, 2600)}  # fmt: skip
_FRICATIVE = re.compile(r"^(s|sh|ch|f|th|z|x|c[eiy]|h)")


def silence(seconds: float, *, sample_rate: int) -> np.ndarray:
    return np.zeros(int(round(seconds * sample_rate)), dtype=np.float32)


def syllables(text: str) -> list[tuple[str, str, bool]]:
    """(vowel, onset consonants, pause after) per syllable of each word."""
    out = []
    for word in text.split():
        letters = re.sub(r"[^a-z0-9]", "", word.lower()) or "uh"
        parts = re.findall(r"([^aeiouy]*)([aeiouy]+)", letters) or [(letters, "u")]
        for index, (onset, vowels) in enumerate(parts):
            out.append((vowels[0], onset, index == len(parts) - 1 and word[-1] in ",.?!;:"))
    return out


def _syllable(vowel: str, onset: str, voice: Voice, f0: np.ndarray, rng, sr: int) -> np.ndarray:
    n = len(f0)
    phase = np.cumsum(f0 / sr) % 1.0
    # Rosenberg glottal flow; its derivative (radiation at the lips) excites the tract.
    flow = np.where(phase < 0.4, 0.5 - 0.5 * np.cos(np.pi * phase / 0.4), 0.0)
    closing = (phase >= 0.4) & (phase < 0.56)
    flow[closing] = np.cos(0.5 * np.pi * (phase[closing] - 0.4) / 0.16)
    source = np.diff(flow, prepend=0.0) + 0.02 * rng.standard_normal(n)
    freqs = np.fft.rfftfreq(n, 1 / sr)
    shape = np.zeros_like(freqs)
    for f, bandwidth, gain in zip(_FORMANTS[vowel], (80, 110, 170), (1.0, 0.6, 0.35), strict=True):
        shape += gain / (1 + ((freqs - f * voice.formant_scale) / (bandwidth / 2)) ** 2)
    out = np.fft.irfft(np.fft.rfft(source) * (shape + 0.02) / (1 + freqs / 2500), n=n)
    out /= np.max(np.abs(out)) + 1e-12
    envelope = np.minimum(1.0, np.minimum(np.arange(n), np.arange(n)[::-1]) / (0.025 * sr))
    out *= np.sin(0.5 * np.pi * envelope) ** 2
    if _FRICATIVE.match(onset):  # hiss above 2.5 kHz over the syllable's first 60 ms
        k = min(n // 3, int(0.06 * sr))
        spectrum = np.fft.rfft(rng.standard_normal(k))
        spectrum[np.fft.rfftfreq(k, 1 / sr) < 2500] = 0
        hiss = np.fft.irfft(spectrum, n=k)
        out[:k] = 0.3 * out[:k] + 0.25 * hiss / (np.std(hiss) + 1e-12)
    return out


def speech(
    text: str, *, voice: Voice | str, sample_rate: int, seconds: float | None = None
) -> np.ndarray:
    """Mono float32 samples of ``text`` spoken by ``voice``; exactly ``seconds`` long if given
    (syllables and pauses stretched to fit). Sound starts at the first sample, ends at the last.
    A demo says the same lines many times: the last few are kept (the caller gets a copy)."""
    voice = VOICES[voice] if isinstance(voice, str) else voice
    return _spoken(text, voice, sample_rate, seconds).copy()


@lru_cache(maxsize=128)
def _spoken(text: str, voice: Voice, sample_rate: int, seconds: float | None) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{voice.name}|{text}".encode()))
    plan = syllables(text)
    lengths = voice.syllable_s * rng.uniform(0.75, 1.3, len(plan))
    pauses = np.array([0.18 if pause else 0.03 for _, _, pause in plan])
    pauses[-1] = 0.0
    scale = 1.0 if seconds is None else seconds / float(lengths.sum() + pauses.sum())
    edges = np.round(np.cumsum(np.ravel(np.column_stack([lengths, pauses]))) * scale * sample_rate)
    edges = np.concatenate([[0], edges.astype(int)])
    out = np.zeros(edges[-1], dtype=np.float64)
    rising = text.rstrip().endswith("?")
    for index, (vowel, onset, _) in enumerate(plan):
        start, end = edges[2 * index], edges[2 * index + 1]
        progress = index / max(1, len(plan) - 1)
        level = 1.12 - 0.22 * progress + (0.25 * progress**4 if rising else 0.0)
        contour = np.linspace(1.04, 0.96, end - start) * rng.uniform(0.94, 1.06)
        f0 = voice.f0 * level * contour * (1 + 0.01 * rng.standard_normal(end - start))
        out[start:end] = _syllable(vowel, onset, voice, f0, rng, sample_rate)
    samples = (voice.loudness * out / (np.max(np.abs(out)) + 1e-12)).astype(np.float32)
    samples.flags.writeable = False  # kept: never changed in place
    return samples


def _pcm16(samples: np.ndarray) -> bytes:
    return np.clip(np.round(np.asarray(samples) * 32767), -32768, 32767).astype("<i2").tobytes()


class WavWriter:
    """16-bit mono PCM written front to back; the frame count is declared up front so the header
    is never patched and ``handle`` may be unseekable (a zip member, a socket)."""

    def __init__(self, handle: BinaryIO, *, sample_rate: int, frames: int):
        self._out = wave.open(handle, "wb")  # noqa: SIM115 - closed by close()
        self._out.setnchannels(1)
        self._out.setsampwidth(2)
        self._out.setframerate(sample_rate)
        self._out.setnframes(frames)
        self.frames, self.written = frames, 0

    def write(self, samples: np.ndarray) -> None:
        if self.written + len(samples) > self.frames:
            raise ValueError(
                f"{self.written + len(samples)} frames exceed the declared {self.frames}"
            )
        self._out.writeframesraw(_pcm16(samples))
        self.written += len(samples)

    def write_silence(self, frames: int) -> None:
        while frames > 0:
            block = min(frames, 1 << 16)
            self.write(np.zeros(block, dtype=np.float32))
            frames -= block

    def close(self) -> None:
        if self.written != self.frames:
            raise ValueError(f"wrote {self.written} frames, declared {self.frames}")
        self._out.close()


def to_wav_bytes(samples: np.ndarray, sample_rate: int) -> bytes:
    buffer = io.BytesIO()
    writer = WavWriter(buffer, sample_rate=sample_rate, frames=len(samples))
    writer.write(samples)
    writer.close()
    return buffer.getvalue()
