"""Synthetic data: the dataset's shape, clips that play and sound voiced, submissions and judge
outputs that exercise every outcome."""

from __future__ import annotations

import io
import json
import wave
from collections import Counter

import numpy as np
import pytest

from evaluation.benchmarks.audiomc.dataset import AXES, iter_user_audio, read_dataset
from evaluation.benchmarks.audiomc.demo.synthetic import (
    speech_like_wav,
    synthetic_judgments,
    synthetic_records,
    synthetic_responses,
    write_jsonl_export,
    write_parquet_export,
)
from evaluation.benchmarks.audiomc.judge import FAILED, MET, NOT_MET, UNPARSEABLE
from evaluation.benchmarks.audiomc.judgments import read_judgments
from evaluation.benchmarks.audiomc.responses import parse_submission


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    directory = tmp_path_factory.mktemp("synthetic")
    records = synthetic_records(48, seed=0)
    parquet = write_parquet_export(records, directory / "p", max_audio_seconds=1.0).parent.parent
    jsonl = write_jsonl_export(records, directory / "j").parent
    return records, parquet, jsonl


def test_shape_of_the_small_set(small):
    records, parquet, _ = small
    tasks = read_dataset(parquet).tasks  # passes every import rule
    assert len(tasks) == 48
    assert set(Counter(t.spec["axis"] for t in tasks)) == set(AXES)
    sizes = [len(t.spec["rubric"]) for t in tasks]
    assert min(sizes) >= 1 and max(sizes) <= 15 and 1 in sizes and max(sizes) >= 10
    assert {t.spec["last_user_turn"] for t in tasks} == {3, 4, 5, 6, 7, 8}
    gaps = [t for t in tasks if "" in t.spec["assistant_turns"]]
    assert len(gaps) == 1
    assert len({t.task_id for t in tasks}) == 48 and all(len(t.task_id) == 16 for t in tasks)
    # Some transcripts start with whitespace, as real ones do.
    assert any(u != u.lstrip() for t in tasks for u in t.spec["user_turns"])


def test_full_size_matches_the_real_counts():
    tasks = synthetic_records(452, seed=0)
    axes = Counter(r["axis"] for r in tasks)
    assert axes == {
        "INFERENCE_MEMORY": 132,
        "INSTRUCTION_RETENTION": 120,
        "VOICE_EDITING": 117,
        "SELF_COHERENCE": 83,
    }
    items = Counter()
    for r in tasks:
        items[r["axis"]] += len(json.loads(r["rubric"]))
    assert items == {
        "INFERENCE_MEMORY": 233,
        "INSTRUCTION_RETENTION": 343,
        "SELF_COHERENCE": 352,
        "VOICE_EDITING": 784,
    }
    assert sum(items.values()) == 1712
    lasts = Counter(max(k for k in range(1, 9) if r[f"user_turn_{k}_transcript"]) for r in tasks)
    assert lasts == {3: 85, 4: 93, 5: 93, 6: 69, 7: 52, 8: 60}
    assert all(1 <= len(json.loads(r["rubric"])) <= 15 for r in tasks)


def test_deterministic_by_seed():
    assert synthetic_records(44, seed=4) == synthetic_records(44, seed=4)
    assert synthetic_records(44, seed=4) != synthetic_records(44, seed=5)
    assert speech_like_wav("a b c", seed=1) == speech_like_wav("a b c", seed=1)


def test_every_heard_user_turn_has_a_clip_and_jsonl_has_none(small):
    _, parquet, jsonl = small
    tasks = {t.task_id: t for t in read_dataset(parquet).tasks}
    clips = list(iter_user_audio(parquet))
    expected = {
        (t.task_id, k) for t in tasks.values() for k in range(1, t.spec["last_user_turn"] + 1)
    }
    assert {(c.task_id, c.turn) for c in clips} == expected
    assert {(c.extension, c.content_type) for c in clips} == {("wav", "audio/wav")}
    assert list(iter_user_audio(jsonl)) == []


def test_clips_are_16k_mono_pcm_with_voiced_syllables():
    data = speech_like_wav("one two three four five six", seed=3, max_seconds=3.0)
    with wave.open(io.BytesIO(data)) as clip:
        assert (clip.getnchannels(), clip.getframerate(), clip.getsampwidth()) == (1, 16000, 2)
        samples = np.frombuffer(clip.readframes(clip.getnframes()), dtype="<i2").astype(float)
    assert 1.0 < len(samples) / 16000 <= 3.0
    assert np.abs(samples).max() > 5000  # audible, not clipped to nothing
    # Syllables: 10 ms frames alternate between voiced and near-silent stretches.
    frames = samples[: len(samples) // 160 * 160].reshape(-1, 160)
    rms = np.sqrt((frames**2).mean(axis=1))
    voiced = rms > 0.1 * rms.max()
    onsets = int(np.sum(voiced[1:] & ~voiced[:-1]))
    assert onsets >= 4 and 0.3 < voiced.mean() < 0.9
    # Voiced: a pitch between 80 and 260 Hz by autocorrelation in the first syllable's middle.
    window = samples[int(0.06 * 16000) : int(0.11 * 16000)]
    window = window - window.mean()
    corr = np.correlate(window, window, "full")[len(window) - 1 :]
    lag = int(np.argmax(corr[16000 // 260 : 16000 // 80])) + 16000 // 260
    assert 80 <= 16000 / lag <= 260
    assert corr[lag] > 0.5 * corr[0]


def test_response_profiles(small):
    _, _, jsonl = small
    tasks = read_dataset(jsonl).tasks
    ids = [t.task_id for t in tasks]
    by_profile = {}
    for profile in ("strong", "weak", "empty", "partial"):
        lines = synthetic_responses(tasks, profile, seed=1)
        text = "".join(json.dumps(line) + "\n" for line in lines)
        by_profile[profile] = parse_submission(text, task_ids=ids, output_modality="text")
    assert by_profile["strong"].complete and by_profile["weak"].complete
    assert set(by_profile["empty"].responses.values()) == {""}
    assert by_profile["partial"].missing and not by_profile["partial"].complete
    alias = synthetic_responses(tasks, "weak", seed=1, key="model_response")
    assert all("model_response" in line for line in alias)
    with pytest.raises(ValueError):
        synthetic_responses(tasks, "perfect")

    def met_share(profile):
        stored = read_judgments(
            [
                json.dumps(r)
                for r in synthetic_judgments(
                    tasks,
                    by_profile[profile].responses,
                    retry_rate=0,
                    unparseable_rate=0,
                    failure_rate=0,
                )
            ],
            tasks=tasks,
            responded=by_profile[profile].responses,
        )
        states = Counter(o.state for o in stored.outcomes.values())
        return states[MET] / sum(states.values())

    assert met_share("strong") > 0.7 > 0.5 > met_share("weak")


def test_judge_outputs_cover_every_outcome(small):
    _, _, jsonl = small
    tasks = read_dataset(jsonl).tasks
    responses = {t.task_id: "Okay." for t in tasks}
    rows = synthetic_judgments(
        tasks, responses, seed=2, retry_rate=0.2, unparseable_rate=0.1, failure_rate=0.1
    )
    stored = read_judgments([json.dumps(r) for r in rows], tasks=tasks, responded=responses)
    states = Counter(o.state for o in stored.outcomes.values())
    assert {MET, NOT_MET, UNPARSEABLE, FAILED} <= set(states)
    assert len(stored.outcomes) == sum(len(t.spec["rubric"]) for t in tasks)
    assert any(o.state in (MET, NOT_MET) and o.attempt == 1 for o in stored.outcomes.values())
    assert {o.answered for o in stored.outcomes.values() if o.state == UNPARSEABLE} == {3}
