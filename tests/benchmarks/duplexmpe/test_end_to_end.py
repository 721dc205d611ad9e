"""Synthetic submissions through the whole pure pipeline: scheduler logs validated against the
manifest with our VAD, GT runs, VAD timing, judgment items, offline transcripts and judge,
scores. The simulated systems' own record of what they said is the independent truth."""

from __future__ import annotations

import json

import pytest

from evaluation.benchmarks.duplexmpe import judge, metrics, schedule, vad
from evaluation.benchmarks.duplexmpe import segments as seg
from evaluation.benchmarks.duplexmpe.demo import offline, synthetic


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    runs = synthetic.scenarios(3)
    out = {}
    for profile in ("good", "chatty", "late"):
        directory = tmp_path_factory.mktemp(profile)
        synthetic.write_submission(directory, runs, profile=profile, sample_rate=24000)
        out[profile] = directory
    return runs, out


def _timings(runs, directory, *, use_vad: bool):
    stems = [synthetic.run_stem(r) for r in runs]
    found = dict(vad.detect_stream((s, directory / "audio" / f"{s}.wav") for s in stems))
    timings, problems = [], []
    for run, stem in zip(runs, stems, strict=True):
        log, parse_problems = schedule.parse_log(
            json.loads((directory / "schedule" / f"{stem}.json").read_text())
        )
        assert parse_problems == []
        said = json.loads((directory / "said" / f"{stem}.json").read_text())
        truth = seg.normalise([(seg.to_ms(s["start"]), seg.to_ms(s["end"])) for s in said])
        segments = found[stem].segments if use_vad else truth
        problems += schedule.validate_log(log, run, segments=segments,
                                          audio_duration_s=found[stem].duration_s)  # fmt: skip
        gt = schedule.gt_run(log, run)
        r = metrics.Run.from_gt(gt)
        r.segments = segments
        timings.append(metrics.run_timing(r))
    return timings, problems


def _summary(timing):
    return (
        timing["t"]["present"],
        timing["t"]["fresh"],
        [e["ineligible_reason"] or e["failure"] or "yielded" for e in timing["n4"]],
    )


@pytest.mark.parametrize("profile", ["good", "chatty", "late"])
def test_vad_timing_agrees_with_what_the_system_said(submissions, profile):
    runs, directories = submissions
    by_vad, problems = _timings(runs, directories[profile], use_vad=True)
    by_truth, _ = _timings(runs, directories[profile], use_vad=False)
    assert problems == []  # every log validates against the manifest with our VAD
    assert [_summary(t) for t in by_vad] == [_summary(t) for t in by_truth]


def test_offline_pipeline_scores_the_good_system_above_the_chatty_one(submissions):
    runs, directories = submissions
    scores = {}
    for profile in ("good", "chatty"):
        directory = directories[profile]
        timings, _ = _timings(runs, directory, use_vad=True)
        verdicts = {}
        by_key = {r.key: r for r in runs}
        for timing in timings:
            run = by_key[(timing["scenario_id"], timing["condition"])]
            said = directory / "said" / f"{synthetic.run_stem(run)}.json"
            for item in metrics.judgment_items(timing):
                text = offline.transcript_from_said(said, item["spans"])
                raw = offline.judge(item["kind"], transcript=text, gold_answer=run.gold_answer)
                key = (*run.key, item["turn_index"], item["kind"])
                verdicts[key] = judge.outcome(item["kind"], transcript=text, attempts=[raw])
        scores[profile] = metrics.score(timings, verdicts)
    good, chatty = scores["good"], scores["chatty"]
    for condition in ("explicit", "implicit"):
        assert good[condition]["presence"]["pct"] == 100.0
        assert good[condition]["silence"]["pct"] > chatty[condition]["silence"]["pct"]
        assert good[condition]["complete"] and good[condition]["unused_judgments"] == []
    assert good["paired_presence"]["pairs"] == 3
