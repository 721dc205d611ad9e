"""A store that goes away while submissions are in flight, for every registered plug-in (the
toy plug-in included): an S3 server speaking HTTP behind a proxy the test cuts as ingest (or the
first processing step) starts. The submission is not failed: it is shown as waiting on storage,
and once storage answers the sweeper resumes it and it scores exactly as the same run scored
with storage up. A permanent storage error (the bundle gone) fails it, saying so."""

from __future__ import annotations

import pytest
from django.test import Client

from evaluation import services
from evaluation.benchmarks import registry
from evaluation.models import Score, Submission
from evaluation.services import pipeline
from tests.conftest import demo_runs_scored, every_plugin_board

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

SLUGS = [*sorted(registry()), "toy-bench"]


def numbers(submission) -> dict:
    return {
        score.judge.slug: (score.results, score.judgments_total, score.judgments_failed)
        for score in Score.objects.filter(submission=submission).select_related("judge")
    }


def cut_when(monkeypatch, proxy, module, name: str) -> None:
    """Cut the store as the first call of ``module.name`` starts."""
    real = getattr(module, name)
    calls = []

    def cut_then_run(*args, **kwargs):
        if not calls:
            proxy.cut()
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, cut_then_run)


def resume_until_final(settings, *, sweeps: int = 6) -> None:
    """Beat's sweeper, run a few times (its stall period lowered so it re-queues at once). What
    it queues runs in this process once its transaction commits, as a worker takes it then:
    run inside the sweeper's transaction, a stage's heartbeat (a connection of its own) would
    wait on the row that transaction holds."""
    from config.celery import app

    settings.PIPELINE_STALL_SECONDS = 0
    app.conf.task_always_eager = True
    try:
        for _ in range(sweeps):
            pipeline.submissions_sweep()
            if not Submission.objects.filter(status__in=pipeline.ACTIVE).exists():
                return
    finally:
        app.conf.task_always_eager = False


@pytest.mark.parametrize("slug", SLUGS)
@pytest.mark.parametrize("stage", ["ingest", "processing"])
def test_a_store_cut_in_flight_waits_then_resumes_with_the_same_numbers(
    slug, stage, proxied_bucket, settings, tmp_path, monkeypatch
):
    _, _, proxy = proxied_bucket
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="outage")
    (control,) = demo_runs_scored(benchmark, plugin, tmp_path / "control", count=1)
    assert control.status == Submission.Status.SCORED, control.error

    if stage == "ingest":
        cut_when(monkeypatch, proxy, services, "submission_ingest")
    else:
        cut_when(monkeypatch, proxy, pipeline, "step_run")
    (faulted,) = demo_runs_scored(benchmark, plugin, tmp_path / "faulted", count=1)
    if stage == "ingest" or faulted.status != Submission.Status.SCORED:
        # Storage was needed and did not answer: waiting, not failed, and the page says so.
        assert faulted.status in pipeline.ACTIVE, (faulted.status, faulted.error)
        assert faulted.storage_waiting_since is not None and not faulted.error, (
            faulted.status,
            faulted.error,
        )
        page = Client().get(f"/submissions/{faulted.pk}/")
        assert b"Waiting on storage" in page.content

    proxy.resume()
    resume_until_final(settings)
    faulted.refresh_from_db()
    assert faulted.status == Submission.Status.SCORED, faulted.error
    assert faulted.storage_waiting_since is None
    assert numbers(faulted) == numbers(control) != {}


def test_a_missing_bundle_fails_the_submission_saying_so(proxied_bucket, settings, tmp_path):
    from evaluation.services import submission_create
    from evaluation.tasks import ingest_submission

    client, bucket, _ = proxied_bucket
    benchmark, plugin = every_plugin_board("toy-bench", settings, tmp_path, name="gone")
    run = plugin.write_demo_runs(tmp_path / "uploads")[0]
    submission = submission_create(
        benchmark=benchmark,
        bundle_path=run.path,
        system_name=run.system,
        judge=benchmark.judges.get(slug="offline"),
        options=dict(run.options),
        allow_partial=True,
    )
    client.delete_object(Bucket=bucket, Key=submission.bundle.name)
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError):  # as a worker runs it: the error is raised after failing
        ingest_submission.apply(args=[submission.pk])
    submission.refresh_from_db()
    assert submission.status == Submission.Status.FAILED
    assert "ingest failed: a stored file is missing" in submission.error
    assert submission.storage_waiting_since is None


# --- Deleting while storage is away ----------------------------------------------------------


def bucket_keys(client, bucket) -> set[str]:
    keys = set()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys |= {item["Key"] for item in page.get("Contents", [])}
    return keys


@pytest.mark.parametrize("slug", SLUGS)
def test_a_delete_while_storage_is_cut_leaves_nothing_once_it_returns(
    slug, proxied_bucket, settings, tmp_path
):
    """The team deletes its submission with the store cut: the page answers (no 500), the rows
    are gone, and once storage answers beat's retry deletes every object the submission had
    (its upload, its tasks' files, what its steps stored: Duplex-MPE's input channels too),
    leaving exactly what the bucket held before it was submitted."""
    from django.contrib.auth.models import User

    from evaluation.models import Membership, PendingDeletion, TaskResult, Team
    from evaluation.tasks import delete_pending_objects

    client, bucket, proxy = proxied_bucket
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="delete")
    before = bucket_keys(client, bucket)
    (submission,) = demo_runs_scored(benchmark, plugin, tmp_path, count=1)
    assert submission.status == Submission.Status.SCORED, submission.error
    stored = bucket_keys(client, bucket) - before
    assert submission.bundle.name in stored
    if slug == "duplex-mpe":
        assert any(key.startswith("duplexmpe/input/") for key in stored)
    team = Team.objects.create(slug="deleters", name="Deleters")
    owner = User.objects.create_user("owner", password="pw-owner-1234")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    Submission.objects.filter(pk=submission.pk).update(team=team, is_published=False)

    proxy.cut()
    browser = Client()
    browser.force_login(owner)
    response = browser.post(f"/submissions/{submission.pk}/manage/delete/")
    assert response.status_code == 302, response.content[:500]
    assert not Submission.objects.filter(pk=submission.pk).exists()
    assert not TaskResult.objects.filter(submission_id=submission.pk).exists()
    assert set(PendingDeletion.objects.values_list("key", flat=True)) == stored
    assert bucket_keys(client, bucket) - before == stored  # nothing deleted yet: storage away

    delete_pending_objects.apply()  # beat, while the store is still cut: nothing lost
    assert PendingDeletion.objects.count() == len(stored)
    proxy.resume()
    delete_pending_objects.apply()
    assert bucket_keys(client, bucket) == before
    assert not PendingDeletion.objects.exists()


def test_the_sweep_deletes_objects_no_row_names_once_old_enough(proxied_bucket, settings, tmp_path):
    """What a killed request or an outage mid-delete left (a bundle no submission holds, a
    deleted submission's task file, a derived file nothing names) goes; everything a row names
    (the scored submission's upload, files and derived audio, the benchmark's assets) stays."""
    from datetime import timedelta

    from evaluation.services.submissions import unreferenced_objects_sweep

    client, bucket, _ = proxied_bucket
    benchmark, plugin = every_plugin_board("toy-bench", settings, tmp_path, name="orphans")
    (submission,) = demo_runs_scored(benchmark, plugin, tmp_path, count=1)
    assert submission.status == Submission.Status.SCORED, submission.error
    kept = bucket_keys(client, bucket)
    orphans = {"bundles/killed-request.zip", "submissions/999999/t/response.wav",
               "duplexmpe/input/0000.wav", "healthz/left.txt"}  # fmt: skip
    for key in orphans:
        client.put_object(Bucket=bucket, Key=key, Body=b"left behind")
    # Younger than the age: they may be writes whose rows are not committed yet.
    assert unreferenced_objects_sweep(older_than=timedelta(hours=1)) == []
    assert bucket_keys(client, bucket) == kept | orphans
    assert sorted(unreferenced_objects_sweep(older_than=timedelta(0))) == sorted(orphans)
    assert bucket_keys(client, bucket) == kept
