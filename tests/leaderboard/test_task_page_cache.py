"""A task's drill-down is read (from its rows, and from the upload where a plug-in keeps a file
of the task in it) and laid out once, then kept while nothing it shows changes: another view
reads nothing again, and a judgment of the task settling anew (or
the submission's judge changing) reads it afresh. That is the page as computed (for a signed-in
reader, or before a visitor's copy is stored); whole stored responses, which the services'
changes re-key, are tests/leaderboard/test_response_cache.py's. On the example plug-in, whose
task pages are made of their rows: each reading of the task for its page is counted."""

from __future__ import annotations

import pytest
from django.utils import timezone

from evaluation.models import Judgment, Submission, TaskJudgment
from leaderboard import selectors_submissions
from tests.conftest import submit_offline
from tests.leaderboard.conftest import AUDIO_URL

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE_TASK = "q1"  # the example plug-in's first task, which toy_partial answers


@pytest.fixture
def opened(monkeypatch) -> list[int]:
    """Each reading of a task for its page (its rows, and the upload when a file of it is
    kept there), by submission id."""
    calls: list[int] = []
    real = selectors_submissions.task_input

    def counted(row, archive=None):
        calls.append(row.submission_id)
        return real(row, archive)

    monkeypatch.setattr(selectors_submissions, "task_input", counted)
    return calls


def _unsigned(response) -> str:
    return AUDIO_URL.sub("/audio/<signed>/", response.content.decode())


def test_the_drill_down_is_read_once_until_a_judgment_changes(
    client, toybench, toy_partial, eager, opened, settings
):
    # The judgment below changes behind the services' backs: every read computes the page.
    settings.RESPONSE_CACHE = False
    submission = submit_offline(toybench, toy_partial, "Kept")
    Submission.objects.filter(pk=submission.pk).update(is_published=True)
    url = f"/submissions/{submission.pk}/tasks/{EXAMPLE_TASK}/"
    first = client.get(url)
    assert first.status_code == 200 and opened == [submission.pk]
    again = client.get(url)
    assert again.status_code == 200 and opened == [submission.pk]
    # The same page, but for its audio links, which are signed afresh (to the second) each time.
    assert _unsigned(again) == _unsigned(first)
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
