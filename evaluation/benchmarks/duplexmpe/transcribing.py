"""Transcripts of the spans the judges need (SPEC §6.3-6.4), one per judgment item, from
whichever source the submission has, in this order:

1. a low-trust upload: the transcript the submitter gave with their verdict;
2. the submitter's own ASR in the upload (``transcripts/<run>.json``): the chunks that overlap
   the item's spans, whole, in order, joined by spaces; labelled as the submitter's;
3. ASR run here through an OpenAI-compatible ``/v1/audio/transcriptions`` endpoint, set by
   ``DUPLEXMPE_ASR_BASE_URL``, ``DUPLEXMPE_ASR_API_KEY``, ``DUPLEXMPE_ASR_MODEL`` (default
   Qwen/Qwen3-ASR-1.7B, the paper's) and ``DUPLEXMPE_ASR_LANGUAGE``. Each clip is cut from the
   stored output channel; its text is cached by the clip's SHA-256 and the ASR's identity (model,
   language), so the same audio is never transcribed twice (``cache`` is the plug-in's table).

Transient ASR failures are retried with backoff; if they persist the step fails and the
submission can be resumed later (what was transcribed stays cached). A clip the service refuses
outright gets no transcript: its item is scored as missing (a failure, SPEC §6.3-6.4).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO

import httpx

from evaluation.benchmarks.base import TaskInput

from . import asr
from .upload import MODE_UNVERIFIED, OUTPUT

DEFAULT_MODEL = "Qwen/Qwen3-ASR-1.7B"
ATTEMPTS = 5
BACKOFF_S = 1.0
FLUSH_AT = 16  # clips held at once while their calls are in flight


class AsrNotConfigured(RuntimeError):
    """Transcripts are needed, the upload has none, and no ASR service is set."""


def config_from_environment(environ: Mapping[str, str] = os.environ) -> asr.AsrConfig | None:
    base = environ.get("DUPLEXMPE_ASR_BASE_URL", "").strip()
    if not base:
        return None
    return asr.AsrConfig(
        base_url=base,
        model=environ.get("DUPLEXMPE_ASR_MODEL", "").strip() or DEFAULT_MODEL,
        api_key=environ.get("DUPLEXMPE_ASR_API_KEY") or None,
        language=environ.get("DUPLEXMPE_ASR_LANGUAGE") or None,
        timeout_s=float(environ.get("DUPLEXMPE_ASR_TIMEOUT_S", "120")),
    )


def concurrency(environ: Mapping[str, str] = os.environ) -> int:
    return max(1, int(environ.get("DUPLEXMPE_ASR_CONCURRENCY", "4")))


def chunks_text(chunks: Sequence[Mapping], spans_ms: Sequence[Sequence[int]]) -> str:
    """The submitter's chunks overlapping any span (half-open, ms), whole, in time order."""
    chosen = []
    for chunk in sorted(chunks, key=lambda c: (c["start"], c["end"])):
        start, end = round(chunk["start"] * 1000), round(chunk["end"] * 1000)
        if any(start < b and max(end, start + 1) > a for a, b in spans_ms):
            chosen.append(chunk["text"].strip())
    return " ".join(t for t in chosen if t)


@dataclass
class _Clip:
    task_id: str
    slot: str
    key: str
    audio: bytes


class Cache:
    """Where transcripts are kept: ``get(keys) -> {key: text}``, ``put(key, text, ...)``."""

    def get(self, keys: Sequence[str]) -> dict[str, str]:
        raise NotImplementedError

    def put(self, *, key: str, audio_sha256: str, identity: Mapping, text: str) -> None:
        raise NotImplementedError


def transcribe_with_retries(
    audio: bytes,
    *,
    config: asr.AsrConfig,
    client: httpx.Client,
    attempts: int = ATTEMPTS,
    backoff_s: float = BACKOFF_S,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    for attempt in range(1, attempts + 1):
        try:
            return asr.transcribe(audio, config=config, client=client)
        except asr.TransientAsrError:
            if attempt == attempts:
                raise
            sleep(backoff_s * 2 ** (attempt - 1))
    raise AssertionError("unreachable")


def asr_step(
    tasks: Sequence[TaskInput],
    *,
    cache: Cache,
    config: asr.AsrConfig | None,
    open_key: Callable[[str], IO[bytes]],
    workers: int = 4,
    transcribe: Callable[..., str] = transcribe_with_retries,
) -> dict[str, dict]:
    """{"transcripts": {slot: {"text", "source", "error"}}} per run; ``open_key`` gives a
    seekable file of a stored output channel (only the judged spans are read)."""
    found: dict[str, dict] = {t.task_id: {"transcripts": {}} for t in tasks}
    pending: list[_Clip] = []
    identity = config.identity() if config else {}
    source = f"ASR here: {config.model}" if config else ""

    def flush():
        if not pending:
            return
        known = cache.get([clip.key for clip in pending])
        missing = {clip.key: clip for clip in pending if clip.key not in known}
        if missing:
            with (
                httpx.Client(timeout=config.timeout_s) as client,
                ThreadPoolExecutor(max_workers=workers) as pool,
            ):
                texts = pool.map(
                    lambda clip: _call(transcribe, clip.audio, config, client),
                    missing.values(),
                )
                for clip, (text, error) in zip(missing.values(), texts, strict=True):
                    if error:
                        found[clip.task_id]["transcripts"][clip.slot] = {
                            "text": None, "source": source, "error": error}  # fmt: skip
                        continue
                    known[clip.key] = text
                    cache.put(key=clip.key, audio_sha256=asr.sha256(clip.audio),
                              identity=identity, text=text)  # fmt: skip
        for clip in pending:
            if clip.key in known:
                found[clip.task_id]["transcripts"][clip.slot] = {
                    "text": known[clip.key], "source": source, "error": "", "cache_key": clip.key}  # fmt: skip
        pending.clear()

    for task in tasks:
        items = task.detection.get("items") or []
        out = found[task.task_id]["transcripts"]
        if not items:
            continue
        if task.data.get("mode") == MODE_UNVERIFIED:
            given = {(j["turn_index"], j["kind"]): j for j in task.data.get("judgments", [])}
            for item in items:
                record = given.get((item["turn_index"], item["kind"]))
                out[item["slot"]] = {
                    "text": None if record is None else record["transcript"],
                    "source": "submitted with the verdicts",
                    "error": "" if record is not None else "no judgment submitted",
                }
            continue
        submitted = task.data.get("transcript")
        if submitted is not None:
            name = submitted.get("asr") or "unnamed"
            for item in items:
                out[item["slot"]] = {
                    "text": chunks_text(submitted["chunks"], item["spans"]),
                    "source": f"the submitter's ASR ({name})",
                    "error": "",
                }
            continue
        if config is None:
            raise AsrNotConfigured(
                f"run {task.task_id} needs transcripts: the upload has no transcripts/ and "
                "DUPLEXMPE_ASR_BASE_URL is not set"
            )
        with open_key(task.assets[OUTPUT]) as audio:
            for item in items:
                audio.seek(0)
                clip = asr.extract_spans(audio, item["spans"])
                pending.append(_Clip(task.task_id, item["slot"],
                                     asr.cache_key(clip, identity), clip))  # fmt: skip
        if len(pending) >= FLUSH_AT:
            flush()
    flush()
    return found


def _call(transcribe, audio: bytes, config, client) -> tuple[str, str]:
    """(text, "") or ("", why) for a clip the service refused; transient errors propagate."""
    try:
        return transcribe(audio, config=config, client=client), ""
    except asr.TransientAsrError:
        raise
    except asr.AsrError as error:
        return "", str(error)
