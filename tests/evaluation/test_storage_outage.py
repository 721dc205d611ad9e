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
from evaluation.services.pipeline import inline
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
    """Beat's sweeper, run a few times (its stall period lowered so it re-queues at once)."""
    settings.PIPELINE_STALL_SECONDS = 0
    for _ in range(sweeps):
        with inline():
            pipeline.submissions_sweep()
        if not Submission.objects.filter(status__in=pipeline.ACTIVE).exists():
            return


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
