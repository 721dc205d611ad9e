"""Transcripts of the spans the judges need (SPEC §6.3-6.4): cutting them out of a run's output
channel, the cache key of a transcript, and a client for an OpenAI-compatible
``/v1/audio/transcriptions`` endpoint (the paper used Qwen3-ASR-1.7B, which such servers host).

A re-score must make no ASR call: transcripts are stored under ``cache_key(audio, identity)``,
the SHA-256 of the exact clip bytes plus what produced the text (model and settings).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import httpx
import numpy as np

from ...speech import WavWriter

JOIN_SILENCE_MS = 200  # between joined fragments, so words of two fragments do not fuse
TRANSIENT_STATUS = {408, 409, 425, 429}


class AsrError(Exception):
    """The ASR service refused the request or answered something that is not a transcript."""


class TransientAsrError(AsrError):
    """Worth retrying: a timeout, a connection problem, 429 or a 5xx."""


@dataclass(frozen=True)
class AsrConfig:
    base_url: str  # e.g. http://localhost:8000/v1
    model: str
    api_key: str | None = None
    language: str | None = None
    timeout_s: float = 120.0

    def identity(self) -> dict:
        """What determines a transcript (not where the server runs, nor the key)."""
        return {"api": "openai-audio-transcriptions", "model": self.model,
                "language": self.language}  # fmt: skip


def sha256(audio: bytes) -> str:
    return hashlib.sha256(audio).hexdigest()


def cache_key(audio: bytes, identity: Mapping) -> str:
    payload = json.dumps({"audio_sha256": sha256(audio), "asr": dict(identity)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def transcribe(
    audio: bytes,
    *,
    config: AsrConfig,
    client: httpx.Client | None = None,
    filename: str = "clip.wav",
) -> str:
    """The text of one WAV clip. Raises TransientAsrError (retry) or AsrError (give up)."""
    url = config.base_url.rstrip("/") + "/audio/transcriptions"
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    data = {"model": config.model, "response_format": "json"}
    if config.language:
        data["language"] = config.language
    own = client is None
    client = client or httpx.Client(timeout=config.timeout_s)
    try:
        response = client.post(
            url, headers=headers, data=data, files={"file": (filename, audio, "audio/wav")}
        )
    except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as error:
        raise TransientAsrError(f"ASR request failed: {error!r}") from error
    finally:
        if own:
            client.close()
    if response.status_code in TRANSIENT_STATUS or response.status_code >= 500:
        raise TransientAsrError(f"ASR service answered {response.status_code}")
    if response.status_code >= 400:
        raise AsrError(f"ASR service answered {response.status_code}: {response.text[:300]}")
    try:
        text = response.json()["text"]
    except (ValueError, KeyError, TypeError) as error:
        raise AsrError(f"ASR answer has no text: {response.text[:300]}") from error
    if not isinstance(text, str):
        raise AsrError("ASR answer's text is not a string")
    return text.strip()


def extract_spans(
    source, spans_ms: Sequence[Sequence[int]], *, join_silence_ms: int = JOIN_SILENCE_MS
) -> bytes:
    """The audio of ``spans_ms`` (half-open, ms on the file's clock) joined in order with a
    short silence between, as 16-bit mono WAV bytes at the file's rate. Only the spans are
    read (seek, then blocks), never the whole file."""
    import soundfile

    with soundfile.SoundFile(source) as audio:
        rate = audio.samplerate
        ranges = []
        for start, end in spans_ms:
            first = min(audio.frames, int(round(start * rate / 1000)))
            ranges.append((first, min(audio.frames, int(round(end * rate / 1000)))))
        ranges = [(a, b) for a, b in ranges if b > a]
        gap = int(round(join_silence_ms * rate / 1000))
        frames = sum(b - a for a, b in ranges) + gap * max(0, len(ranges) - 1)
        out = io.BytesIO()
        writer = WavWriter(out, sample_rate=rate, frames=frames)
        for n, (first, last) in enumerate(ranges):
            if n:
                writer.write_silence(gap)
            audio.seek(first)
            remaining = last - first
            while remaining:
                block = audio.read(min(remaining, 1 << 16), dtype="float32", always_2d=True)
                if not len(block):
                    raise AsrError("the audio ended before the span")
                writer.write(np.ascontiguousarray(block.mean(axis=1)))
                remaining -= len(block)
        writer.close()
    return out.getvalue()
