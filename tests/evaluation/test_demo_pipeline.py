"""The demo benchmark end to end: a half-duplex run and a streaming run, checked against the
files themselves."""

import json

import pytest

from config.celery import app as celery_app
from evaluation.benchmarks.mpbench import demo
from evaluation.models import TaskResult
from evaluation.services import benchmark_import, submission_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo_board(tmp_path):
    demo.write_demo_benchmark(tmp_path / "source")
    celery_app.conf.task_always_eager = True
    yield benchmark_import(
        slug="demo", directory=tmp_path / "source", plugin="mp-bench", is_demo=True
    ).benchmark
    celery_app.conf.task_always_eager = False


def words(path):
    return [
        c
        for c in json.loads(path.read_text())["chunks"]
        if c.get("timestamp") and len(c["timestamp"]) == 2
    ]


def run(board, tmp_path, profile):
    folder = tmp_path / profile
    demo.write_demo_bundle(folder, profile=profile, seed=3)
    bundle = tmp_path / f"{profile}.zip"
    demo.write_demo_bundle_zip(bundle, profile=profile, seed=3)
    submission = submission_create(
        benchmark=board,
        bundle_path=bundle,
        system_name=profile,
        judge=board.judges.get(slug="offline"),
    )
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    return submission, folder


def test_half_duplex_run(demo_board, tmp_path):
    submission, folder = run(demo_board, tmp_path, "half-duplex")
    assert submission.facts["half_duplex"] is True
    spoke = 0
    for row in TaskResult.objects.filter(submission=submission).select_related("task"):
        found = row.detection
        response = words(folder / row.task.task_id / "response.json")
        if not response:
            assert not found["spoke"]
            continue
        # Half-duplex: spoke with the full text, latency is the first word's own start.
        assert found["spoke"] and found["spoke_via"] == "half_duplex"
        assert found["latency"] == round(response[0]["timestamp"][0], 3)
        assert found["post_text"] == found["full_text"]
        spoke += 1
    assert spoke >= 10  # most of the 18 tasks have a response, so the rule was exercised


def test_streaming_run(demo_board, tmp_path):
    submission, folder = run(demo_board, tmp_path, "streaming-chatty")
    assert submission.facts["half_duplex"] is False
    after = 0
    for row in TaskResult.objects.filter(submission=submission).select_related("task"):
        found = row.detection
        source = words(folder / row.task.task_id / "all_stitched.json")
        end = max(c["timestamp"][1] for c in source)
        post = [
            c
            for c in words(folder / row.task.task_id / "response.json")
            if c["timestamp"][0] >= end
        ]
        assert found["spoke"] == bool(post)
        if post:
            after += 1
            assert found["latency"] == round(post[0]["timestamp"][0] - end, 3)
            assert found["post_text"] == " ".join(c["text"] for c in post).strip()
    assert after >= 5
    # Audio was kept for playback, one object per WAV.
    row = TaskResult.objects.filter(submission=submission).first()
    assert {"all_stitched.wav", "response.wav"} <= set(row.files)
    assert all("key" in row.files[name] for name in ("all_stitched.wav", "response.wav"))
