"""On S3-compatible storage (a moto server on loopback): clips, uploads, each run's output
channel and the assembled input channel are objects; the VAD and the ASR read stored audio by
ranges."""

from __future__ import annotations

import time

import boto3
import pytest

from config.celery import app as celery_app
from evaluation.models import TaskResult
from evaluation.services import benchmark_import, submission_create
from tests.conftest import s3_storage_options

from .conftest import write_tree, zip_upload
from .test_pipeline import AsrServer, rate, truth

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def s3_bucket(s3_server, settings, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")  # fmt: skip
    bucket = f"floorboard-{time.monotonic_ns()}"
    client.create_bucket(Bucket=bucket)
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage_options(s3_server, bucket)}
    celery_app.conf.task_always_eager = True
    yield client, bucket
    celery_app.conf.task_always_eager = False


def test_a_run_scored_from_s3(s3_bucket, release_dir, scenarios, tmp_path, monkeypatch):
    client, bucket = s3_bucket
    asr = AsrServer()
    monkeypatch.setenv("DUPLEXMPE_ASR_BASE_URL", asr.url)
    board = benchmark_import(slug="duplex-mpe", directory=release_dir,
                             plugin="duplex-mpe").benchmark  # fmt: skip
    tree = tmp_path / "chatty"
    write_tree(tree, scenarios, profile="chatty", seed=9)
    try:
        submission = submission_create(benchmark=board, bundle_path=zip_upload(tree, tmp_path / "c.zip"),
                                       system_name="On S3",
                                       judge=board.judges.get(slug="offline"))  # fmt: skip
    finally:
        asr.close()
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=bucket, MaxKeys=1000)["Contents"]}
    for row in TaskResult.objects.filter(submission=submission):
        assert row.files["output.wav"]["key"] in keys
        assert row.detection["input_audio"]["key"] in keys
    expected = truth(tree, scenarios)
    score = submission.scores.get().results
    for condition in ("explicit", "implicit"):
        want = expected[condition]
        assert score[condition]["fresh_onset"] == rate(want["fresh"], want["t"])
        assert score[condition]["window_response"] == rate(want["window_response"], want["n4"])
    assert asr.requests  # the judged spans were cut out of the stored channels
