"""Every way a browser finish can fail leaves the upload open, to be finished again or
cancelled, with the real reason in words of our own (never a database's text)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DataError
from django.utils import timezone

from evaluation.bundles import ValidationReport
from leaderboard.uploads import services
from leaderboard.uploads.models import Upload
from tests.leaderboard.uploads.conftest import put_chunk, start_fields

# The finish runs in a worker; here Celery's eager mode runs it inside the finish request.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager")]

SQL_TEXT = 'total size of jsonb array elements exceeds the maximum; INSERT INTO "uploads_upload"'


def sent(client, people, make_bundle) -> dict:
    data = make_bundle().read_bytes()
    client.force_login(people.alice)
    response = client.post("/benchmarks/toy-bench/submit/start/", start_fields(size=len(data)))
    state = response.json()
    assert put_chunk(client, state, data, 0).status_code == 200
    return state


def finish(client, state):
    return client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")


def test_a_database_error_while_finishing_reopens_the_upload_with_our_message(
    client, people, toybench, make_bundle, monkeypatch
):
    state = sent(client, people, make_bundle)

    def broken(**kwargs):
        raise DataError(SQL_TEXT)

    monkeypatch.setattr(services, "submission_create_within_limits", broken)
    response = finish(client, state)
    assert response.status_code == 500
    assert response.json()["error"] == services.FINISH_FAILED
    upload = Upload.objects.get(pk=state["id"])
    assert upload.status == "uploading" and upload.error == services.FINISH_FAILED
    assert "jsonb" not in response.content.decode() and "INSERT" not in upload.error
    page = client.get(state["urls"]["page"]).content.decode()
    assert "jsonb" not in page and "INSERT" not in page
    # Retry: now it goes through.
    monkeypatch.undo()
    assert finish(client, state).status_code == 200
    assert Upload.objects.get(pk=state["id"]).status == "accepted"


class UnstorableReport(ValidationReport):
    """A report that the database refuses to store, as PostgreSQL refused a 60 MB jsonb."""

    def as_dict(self) -> dict:
        return {"ok": False, "problems": [{"message": {1, 2}}]}


def test_a_report_that_cannot_be_stored_still_leaves_the_upload_cancellable(
    client, people, toybench, make_bundle, monkeypatch
):
    state = sent(client, people, make_bundle)
    report = UnstorableReport()
    report.add("bad")
    monkeypatch.setattr(services, "bundle_validate", lambda **kwargs: (report, None))
    response = finish(client, state)
    assert response.status_code == 500 and response.json()["error"] == services.FINISH_FAILED
    upload = Upload.objects.get(pk=state["id"])
    assert upload.status == "uploading" and upload.report is None
    cancelled = client.post(state["urls"]["cancel"])
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


def test_cannot_be_finished_again_is_the_answer_not_the_stored_error(
    client, people, toybench, make_bundle
):
    state = sent(client, people, make_bundle)
    Upload.objects.filter(pk=state["id"]).update(error="an earlier reason")
    assert client.post(state["urls"]["cancel"]).status_code == 200
    response = finish(client, state)
    assert response.status_code == 409
    assert response.json()["error"] == "the upload is cancelled; it cannot be finished again"


def test_a_finish_whose_process_died_can_be_retried_or_cancelled_once_stale(
    client, people, toybench, make_bundle, settings
):
    settings.UPLOAD_VALIDATING_STALE_SECONDS = 600
    state = sent(client, people, make_bundle)
    # A worker killed mid-validation leaves the upload validating.
    Upload.objects.filter(pk=state["id"]).update(status="validating", updated_at=timezone.now())
    assert finish(client, state).status_code == 409
    assert client.post(state["urls"]["cancel"]).status_code == 409
    Upload.objects.filter(pk=state["id"]).update(updated_at=timezone.now() - timedelta(seconds=601))
    response = finish(client, state)
    assert response.status_code == 200, response.content
    assert Upload.objects.get(pk=state["id"]).status == "accepted"
