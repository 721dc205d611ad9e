"""Bundles and task files on S3-compatible storage: a moto server speaking HTTP on loopback."""

import pytest

from config.celery import app as celery_app
from evaluation.models import TaskResult
from evaluation.services import submission_create
from tests.conftest import copy_examples, new_bucket, s3_storage_options, wav_file, zip_tree

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


def test_pipeline_reads_and_writes_through_s3(s3_storage, mpbench, mpbench_dir, tmp_path):
    client, bucket = s3_storage
    run = copy_examples(mpbench_dir, tmp_path / "run")
    (run / "scenario_argument-diag_1001-tier_2-task_0" / "response.wav").write_bytes(
        wav_file(b"\x01" * 64)
    )
    bundle = zip_tree(run, tmp_path / "bundle.zip")
    submission = submission_create(
        benchmark=mpbench,
        bundle_path=bundle,
        system_name="On S3",
        judge=mpbench.judges.get(slug="offline"),
        allow_partial=True,
    )
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    keys = {obj["Key"] for obj in client.list_objects_v2(Bucket=bucket)["Contents"]}
    assert submission.bundle.name in keys
    assert (
        f"submissions/{submission.pk}/scenario_argument-diag_1001-tier_2-task_0/response.wav"
        in keys
    )
    stored = client.get_object(Bucket=bucket, Key=submission.bundle.name)["Body"].read()
    assert stored == bundle.read_bytes()
    row = TaskResult.objects.get(
        submission=submission, task__task_id="scenario_argument-diag_1001-tier_2-task_0"
    )
    found = row.detection
    assert found["latency"] == 4.8 and found["post_text"].startswith("Sure, the Lamborghini")


def test_rejected_bundle_writes_nothing_to_s3(s3_storage, toybench, tmp_path):
    client, bucket = s3_storage
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"nope")
    from evaluation.bundles import BundleRejected

    with pytest.raises(BundleRejected):
        submission_create(benchmark=toybench, bundle_path=bad, system_name="Bad")
    assert client.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
