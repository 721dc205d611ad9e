"""A task's drill-down is read from the upload and laid out once, then kept while nothing it
shows changes: another view reads nothing again, and a judgment of the task settling anew (or
the submission's judge changing) reads it afresh. That is the page as computed (for a signed-in
reader, or before a visitor's copy is stored); whole stored responses, which the services'
changes re-key, are tests/leaderboard/test_response_cache.py's."""

from __future__ import annotations

import contextlib

import pytest
from django.utils import timezone

from evaluation.models import Judgment, Submission, TaskJudgment
from leaderboard import selectors_submissions
from tests.conftest import copy_examples, submit_offline, zip_tree

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE_TASK = "scenario_argument-diag_1001-tier_2-task_0"  # one of MP-Bench's examples


@pytest.fixture
def opened(monkeypatch) -> list[int]:
    """Each opening of a submission's upload by the task page, by submission id."""
    calls: list[int] = []
    real = selectors_submissions.open_upload

    @contextlib.contextmanager
    def counted(submission):
        calls.append(submission.pk)
        with real(submission) as archive:
            yield archive

    monkeypatch.setattr(selectors_submissions, "open_upload", counted)
    return calls


def test_the_drill_down_is_read_once_until_a_judgment_changes(
    client, mpbench, mpbench_dir, tmp_path, eager, opened, settings
):
    # The judgment below changes behind the services' backs: every read computes the page.
    settings.RESPONSE_CACHE = False
    run = copy_examples(mpbench_dir, tmp_path / "run")
    submission = submit_offline(mpbench, zip_tree(run, tmp_path / "run.zip"), "Kept")
    Submission.objects.filter(pk=submission.pk).update(is_published=True)
    url = f"/submissions/{submission.pk}/tasks/{EXAMPLE_TASK}/"
    first = client.get(url)
    assert first.status_code == 200 and opened == [submission.pk]
    again = client.get(url)
    assert again.status_code == 200 and opened == [submission.pk]
    assert again.content == first.content
    link = TaskJudgment.objects.filter(
        task_result__submission=submission,
        task_result__task__task_id=EXAMPLE_TASK,
        judgment__isnull=False,
    ).first()
    Judgment.objects.filter(pk=link.judgment_id).update(
        verdict=not link.judgment.verdict, completed_at=timezone.now()
    )
    assert client.get(url).status_code == 200
    assert opened == [submission.pk, submission.pk]
