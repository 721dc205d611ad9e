"""The demo: an invented release and five invented systems, scored by the offline judge with no
ASR service; the audio of every run plays; the self-measured upload agrees with our VAD."""

from __future__ import annotations

import wave

import pytest
from django.core.files.storage import default_storage

from evaluation.benchmarks.duplexmpe import plugin
from evaluation.models import Score, Submission
from evaluation.services import benchmark_import, submission_create
from evaluation.services.work import inline
from tests.conftest import demo_runs, demo_source

pytestmark = pytest.mark.django_db


def test_the_demo_is_scored_offline_and_its_audio_plays(demo_files, monkeypatch):
    monkeypatch.delenv("DUPLEXMPE_ASR_BASE_URL", raising=False)
    folder = demo_files(plugin.slug)
    source, runs = demo_source(plugin, folder), demo_runs(plugin, folder)
    board = benchmark_import(slug="duplex-mpe-demo", directory=source, plugin="duplex-mpe",
                             is_demo=True).benchmark  # fmt: skip
    assert not board.judges.filter(is_official=True).exists()  # a demo has the offline judge
    offline = board.judges.get(slug="offline")
    results = {}
    for run in runs:
        with inline():
            submission = submission_create(benchmark=board, bundle_path=run.path,
                                           system_name=run.system, judge=offline,
                                           row_group=run.row_group, publish=True)  # fmt: skip
        submission.refresh_from_db()
        assert submission.status == Submission.Status.SCORED, submission.error
        results[run.system] = Score.objects.get(submission=submission).results
        for row in submission.task_results.all():
            keys = [row.detection["input_audio"]["key"]]
            keys += [info["key"] for info in row.files.values()]
            for key in keys:
                with default_storage.open(key, "rb") as handle, wave.open(handle) as audio:
                    assert audio.getnframes() > 0
    attentive = results["Attentive Duplex (synthetic)"]
    chatty = results["Chatty Duplex (synthetic)"]
    literal = results["Literal Duplex (synthetic)"]
    self_measured = results["Chatty Duplex, self-measured (synthetic)"]
    for condition in ("explicit", "implicit"):
        assert attentive[condition]["silence"]["pct"] > chatty[condition]["silence"]["pct"]
        # 32 scenarios: the attentive system's yield has its 30 eligible events and shows.
        assert attentive[condition]["yield"]["total"] >= 30
        assert attentive[condition]["yield"]["pct"] is not None
        # Measured from the audio here or from the system's own record: the same timing.
        for key in ("fresh_onset", "presence", "window_response", "yield"):
            assert chatty[condition][key] == self_measured[condition][key]
    # The literal system misses implicit requests: a paired difference the test can see.
    paired = literal["paired_presence"]
    assert paired["implicit_only"] == 0 and paired["explicit_only"] > 5
    assert paired["p"] < 0.05
    assert literal["explicit"]["paired_presence"] == paired

    # The paired numbers are over pairs of runs, not runs: no run contributes to them. (That
    # every other column is the sum of its runs' contributions is checked for every plug-in by
    # tests/benchmarks/test_conformance.py.)
    for score in Score.objects.filter(submission__benchmark=board):
        stored = score.contributions["metrics"]
        assert stored and not [key for key in stored if ".paired_presence." in f".{key}"]
