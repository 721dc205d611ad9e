"""Bundles and task files on S3-compatible storage: a moto server speaking HTTP on loopback."""

import pytest

from config.celery import app as celery_app
from evaluation.models import TaskResult
from evaluation.services import submission_create
from tests.conftest import new_bucket, s3_storage_options
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def s3_storage(s3_server, settings, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    client, bucket = new_bucket(s3_server)
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage_options(s3_server, bucket)}
    celery_app.conf.task_always_eager = True
    yield client, bucket
    celery_app.conf.task_always_eager = False


def test_pipeline_reads_and_writes_through_s3(s3_storage, toybench, toy_partial):
    """The example plug-in's upload of three answers, each spoken: the bundle and every spoken
    answer are stored on S3, and ingest and its step read the answers back from there."""
    client, bucket = s3_storage
    submission = submission_create(
        benchmark=toybench,
        bundle_path=toy_partial,
        system_name="On S3",
        judge=toybench.judges.get(slug="offline"),
        allow_partial=True,
    )
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    keys = {obj["Key"] for obj in client.list_objects_v2(Bucket=bucket)["Contents"]}
    assert submission.bundle.name in keys
    spoken = {f"submissions/{submission.pk}/{task}/answer.wav" for task in ("q1", "q2", "q3")}
    assert spoken <= keys
    stored = client.get_object(Bucket=bucket, Key=submission.bundle.name)["Body"].read()
    assert stored == toy_partial.read_bytes()
    # q1's answer, "It is 2", spoken as the upload has it.
    q1 = client.get_object(Bucket=bucket, Key=f"submissions/{submission.pk}/q1/answer.wav")
    assert q1["Body"].read() == toy.spoken("It is 2")
    row = TaskResult.objects.get(submission=submission, task__task_id="q1")
    assert row.data == {"answer": "It is 2"} and row.detection == {"length": 7}


def test_rejected_bundle_writes_nothing_to_s3(s3_storage, toybench, tmp_path):
    client, bucket = s3_storage
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"nope")
    from evaluation.bundles import BundleRejected

    with pytest.raises(BundleRejected):
        submission_create(benchmark=toybench, bundle_path=bad, system_name="Bad")
    assert client.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
