"""What used to be accepted and then fail in the worker, or answer 500: each is refused at
validation with a message naming the file and the field, on the API, the CLI and the browser
path alike; and an unexpected failure never shows its exception text."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation.bundles import BundleRejected
from evaluation.models import Submission
from evaluation.services import submission_create
from leaderboard.api import submit as api_submit
from tests.conftest import transcript, words

pytestmark = pytest.mark.django_db

TASK = "scenario_argument-diag_1001-tier_2-task_0"
INPUT = json.dumps(transcript(words(("Hello", 0.0, 0.5)))).encode()
OUTPUT = json.dumps(transcript(words(("Yes", 1.0, 1.5)))).encode()


def bundle(tmp_path: Path, extra: dict[str, bytes], manifest: bytes | None = None) -> Path:
    files = {f"{TASK}/all_stitched.json": INPUT, f"{TASK}/response.json": OUTPUT, **extra}
    if manifest is not None:
        files["manifest.json"] = manifest
    path = tmp_path / f"b{len(list(tmp_path.iterdir()))}.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def rejected(mpbench, path: Path) -> list[str]:
    with pytest.raises(BundleRejected) as caught:
        submission_create(
            benchmark=mpbench, bundle_path=path, system_name="Hostile", allow_partial=True
        )
    assert not Submission.objects.filter(is_reported=False).exists()
    return [str(p) for p in caught.value.report.problems]


def test_a_file_name_over_255_bytes(mpbench, tmp_path):
    name = "a" * 296 + ".wav"
    found = rejected(mpbench, bundle(tmp_path, {f"{TASK}/{name}": b"RIFF"}))
    assert len(found) == 1
    assert found[0].endswith(
        "zip entry has a name of 300 bytes in its path; at most 255 per name; refusing to "
        "extract it"
    )


def test_a_file_beside_a_folder_of_the_same_name(mpbench, tmp_path):
    found = rejected(
        mpbench, bundle(tmp_path, {f"{TASK}/x.wav": b"RIFF", f"{TASK}/x.wav/y.wav": b"RIFF"})
    )
    assert f"{TASK}/x.wav: is a file, and a folder of the same name holds other files" in found


def test_a_nul_in_transcript_text(mpbench, tmp_path):
    chunks = [{"text": "bad\x00word", "timestamp": [1.0, 1.5]}]
    found = rejected(
        mpbench,
        bundle(tmp_path, {f"{TASK}/response.json": json.dumps({"chunks": chunks}).encode()}),
    )
    assert found == [
        f"{TASK} / response.json: chunk 0: 'text' holds a NUL character (\\u0000), which cannot "
        "be stored"
    ]


def test_deeply_nested_json_is_refused_without_recursion(mpbench, tmp_path):
    deep = b"[" * 100_000 + b"]" * 100_000
    found = rejected(mpbench, bundle(tmp_path, {f"{TASK}/response.json": deep}))
    assert found == [
        f"{TASK} / response.json: not accepted as JSON: it nests 100,000 levels deep; at most "
        "32 are allowed"
    ]


def test_nan_in_the_manifest_names_the_field(mpbench, tmp_path):
    found = rejected(mpbench, bundle(tmp_path, {}, b'{"scores": {"wer": [0.1, NaN]}}'))
    assert found == [
        "manifest.json: field 'scores.wer[1]' is NaN or Infinity, which JSON has no place for; "
        "use a number or null"
    ]


def test_manifest_system_type_must_be_an_allowed_value(mpbench, tmp_path):
    found = rejected(mpbench, bundle(tmp_path, {}, json.dumps({"system_type": "x" * 60}).encode()))
    assert found == [
        f"manifest.json: field 'system_type' is {'x' * 50!r}; it must be one of text-llm, "
        "non-realtime, realtime",
        "manifest.json: field 'system_type' has 60 characters; at most 50",
    ]


def test_manifest_organization_longer_than_its_column_or_with_a_nul(mpbench, tmp_path):
    found = rejected(
        mpbench, bundle(tmp_path, {}, json.dumps({"organization": "o" * 201}).encode())
    )
    assert found == ["manifest.json: field 'organization' has 201 characters; at most 200"]
    found = rejected(
        mpbench, bundle(tmp_path, {}, json.dumps({"organization": "Lab\x00"}).encode())
    )
    assert found == [
        "manifest.json: field 'organization' holds a NUL character (\\u0000), which cannot be stored"
    ]


def test_the_cli_shows_a_message_not_a_traceback(mpbench, tmp_path, monkeypatch):
    from evaluation.management.commands import submit

    def broken(**kwargs):
        raise RuntimeError('relation "evaluation_system" violates check; SELECT secret')

    monkeypatch.setattr(submit, "submission_create", broken)
    with pytest.raises(CommandError) as caught:
        call_command(
            "submit", str(bundle(tmp_path, {})), "--benchmark", "mp-bench", "--system", "X"
        )
    assert "unexpected error, nothing was stored" in str(caught.value)
    assert "SELECT" not in str(caught.value) and "RuntimeError" not in str(caught.value)


@pytest.mark.django_db(transaction=True)
def test_the_api_answers_our_words_for_an_unexpected_failure(
    client, mpbench, tmp_path, monkeypatch, django_user_model
):
    from evaluation.models import Membership, Team

    team = Team.objects.create(name="Alpha", slug="alpha")
    user = django_user_model.objects.create_user("alice", password="pw")
    Membership.objects.create(team=team, user=user)
    client.force_login(user)

    def broken(**kwargs):
        raise ValueError('invalid input syntax for type json DETAIL: Token "NaN" is invalid')

    monkeypatch.setattr(api_submit.services, "upload_from_api", broken)
    with bundle(tmp_path, {}).open("rb") as handle:
        response = client.post(
            "/api/submissions/",
            {"bundle": handle, "benchmark": "mp-bench", "system": "X", "judge": "offline"},
        )
    assert response.status_code == 500
    assert response.json() == {"error": api_submit.CREATE_FAILED}


def test_a_deeply_nested_api_body_is_a_400(client, mpbench, tmp_path, django_user_model):
    from evaluation.models import Membership, Team

    team = Team.objects.create(name="Alpha", slug="alpha")
    user = django_user_model.objects.create_user("alice", password="pw")
    Membership.objects.create(team=team, user=user)
    mine = submission_create(
        benchmark=mpbench,
        bundle_path=bundle(tmp_path, {}),
        system_name="X",
        team=team,
        allow_partial=True,
    )
    client.force_login(user)
    body = "[" * 50_000 + "]" * 50_000
    response = client.post(
        f"/api/submissions/{mine.pk}/retry-failed/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": "The JSON body nests 50,000 levels deep; at most 16 are allowed."
    }


def test_validation_reads_the_task_specs_only_when_a_plugin_looks_one_up(mpbench, tmp_path):
    """MP-Bench checks an upload against the task ids alone: the specs (megabytes of JSON) are
    not read while a request waits. Looked up, they are the tasks' own, in the same order."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evaluation.models import Task
    from evaluation.services import bundle_validate
    from evaluation.services.submissions import TaskSpecs

    with CaptureQueriesContext(connection) as queries:
        report, _ = bundle_validate(
            benchmark=mpbench, path=bundle(tmp_path, {}), allow_partial=True
        )
    assert report.ok
    task_reads = [q["sql"] for q in queries if 'FROM "evaluation_task"' in q["sql"]]
    assert task_reads and not any('"spec"' in sql for sql in task_reads)

    specs = TaskSpecs(mpbench)
    stored = {task.task_id: task.spec for task in Task.objects.filter(benchmark=mpbench)}
    assert len(specs) == len(stored) == 927 and TASK in specs and "scenario_x" not in specs
    assert list(specs) == sorted(stored)
    with CaptureQueriesContext(connection) as looked:
        assert specs[TASK] == stored[TASK]
        assert dict(specs) == stored
    assert len(looked) == 1  # every spec in one read, on the first look-up
    with pytest.raises(KeyError):
        specs["scenario_x"]
