"""Slice results are stored after their score, in a task of their own: the board's numbers do
not wait for them, a slice shows the row as not available until they are there, and a dead
worker's missing ones are queued again by the sweeper."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from evaluation.benchmarks import get_plugin
from evaluation.models import Score
from evaluation.services import pipeline, submission_create
from evaluation.services.pipeline import (
    score_slices,
    slices_store,
    slices_sweep,
    submission_aggregate,
    task_outcomes,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def scored(eager, toybench, toy_partial):
    submission = submission_create(
        benchmark=toybench,
        bundle_path=toy_partial,
        system_name="Sliced",
        judge=toybench.judges.get(slug="offline"),
        allow_partial=True,
        publish=True,
    )
    submission.refresh_from_db()
    assert submission.status == "scored"
    return submission


@pytest.fixture
def queued(monkeypatch):
    """What the pipeline queues, held back instead of run."""
    found = []
    monkeypatch.setattr(
        pipeline, "enqueue_on_commit", lambda name, *args: found.append((name, *args))
    )
    return found


def expected_slices(submission):
    """The slice results the stored outcomes give, made in one go from the outcomes."""
    outcomes, _, _ = task_outcomes(submission=submission, judge=submission.judge)
    return score_slices(get_plugin("toy-bench"), outcomes, {})[1]


def test_the_score_is_stored_first_and_its_slices_follow(scored, queued):
    score = Score.objects.get(submission=scored)
    expected = expected_slices(scored)
    assert score.slices == expected and expected["values"]  # stored by the queued task

    again = submission_aggregate(submission=scored, judge=scored.judge)
    again.refresh_from_db()
    assert again.results == score.results and again.contributions == score.contributions
    assert again.slices is None  # until its task runs
    assert queued == [("store_slices", again.pk)]

    assert slices_store(score_id=again.pk) is True
    again.refresh_from_db()
    assert again.slices == expected


def test_slices_go_only_onto_the_score_they_were_made_from(scored, queued, monkeypatch):
    score = submission_aggregate(submission=scored, judge=scored.judge)
    made = pipeline.contributions_slices

    def recomputed_meanwhile(*args):
        found = made(*args)
        # The score is recomputed while its slices are being made: those slices are its
        # predecessor's, and the new score's own task stores its own.
        Score.objects.filter(pk=score.pk).update(computed_at=timezone.now() + timedelta(seconds=1))
        return found

    monkeypatch.setattr(pipeline, "contributions_slices", recomputed_meanwhile)
    assert slices_store(score_id=score.pk) is False
    assert Score.objects.get(pk=score.pk).slices is None


def test_the_sweeper_queues_slices_a_dead_worker_left(scored, settings):
    score = Score.objects.get(submission=scored)
    expected = score.slices
    Score.objects.filter(pk=score.pk).update(slices=None)
    # Computed just now: its task may still be on its way.
    assert slices_sweep() == []
    Score.objects.filter(pk=score.pk).update(
        computed_at=timezone.now() - timedelta(seconds=settings.PIPELINE_STALL_SECONDS + 1)
    )
    assert slices_sweep() == [score.pk]  # queued, and run at once here (eager)
    assert Score.objects.get(pk=score.pk).slices == expected
    assert slices_sweep() == []


def test_a_slice_of_the_board_shows_the_row_once_its_slices_are_stored(scored, client):
    cache.clear()
    score = Score.objects.get(submission=scored)
    stored = score.slices
    key = next(iter(stored["values"]))
    url = f"/benchmarks/{scored.benchmark.slug}/?judge=offline&slice={key}"
    unavailable = "slice results are not stored yet"
    page = client.get(url).content.decode()
    assert 'data-system="Sliced"' in page and unavailable not in page
    Score.objects.filter(pk=score.pk).update(slices=None)
    page = client.get(url).content.decode()
    assert unavailable in page
    # Stored: the cached page is not served again.
    Score.objects.filter(pk=score.pk).update(slices=stored)
    assert unavailable not in client.get(url).content.decode()
