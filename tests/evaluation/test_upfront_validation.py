"""What used to be accepted and then fail in the worker, or answer 500: each is refused at
validation with a message naming the file and the field, on the API, the CLI and the browser
path alike; and an unexpected failure never shows its exception text. On the example plug-in
(tests/toyplugin); MP-Bench's transcripts: tests/benchmarks/mpbench/test_upfront_validation.py."""

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

pytestmark = pytest.mark.django_db

TASK = "q1"  # a folder beside the answers: the core's checks of a zip's paths
ANSWERS = json.dumps({"id": "q1", "answer": "It is 2"}).encode() + b"\n"


def zip_of(tmp_path: Path, files: dict[str, bytes]) -> Path:
    """A new zip in ``tmp_path`` holding ``files`` (name -> bytes)."""
    path = tmp_path / f"b{len(list(tmp_path.iterdir()))}.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def bundle(tmp_path: Path, extra: dict[str, bytes], manifest: bytes | None = None) -> Path:
    files = {"answers.jsonl": ANSWERS, **extra}
    if manifest is not None:
        files["manifest.json"] = manifest
    return zip_of(tmp_path, files)


def rejected(benchmark, path: Path) -> list[str]:
    """The problems an upload of ``path`` is refused with; nothing is left behind."""
    with pytest.raises(BundleRejected) as caught:
        submission_create(
            benchmark=benchmark, bundle_path=path, system_name="Hostile", allow_partial=True
        )
    assert not Submission.objects.filter(is_reported=False).exists()
    return [str(p) for p in caught.value.report.problems]


def test_a_file_name_over_255_bytes(toybench, tmp_path):
    name = "a" * 296 + ".wav"
    found = rejected(toybench, bundle(tmp_path, {f"{TASK}/{name}": b"RIFF"}))
    assert len(found) == 1
    assert found[0].endswith(
        "zip entry has a name of 300 bytes in its path; at most 255 per name; refusing to "
        "extract it"
    )


def test_a_file_beside_a_folder_of_the_same_name(toybench, tmp_path):
    found = rejected(
        toybench, bundle(tmp_path, {f"{TASK}/x.wav": b"RIFF", f"{TASK}/x.wav/y.wav": b"RIFF"})
    )
    assert f"{TASK}/x.wav: is a file, and a folder of the same name holds other files" in found


def test_nan_in_the_manifest_names_the_field(toybench, tmp_path):
    found = rejected(toybench, bundle(tmp_path, {}, b'{"scores": {"wer": [0.1, NaN]}}'))
    assert found == [
        "manifest.json: field 'scores.wer[1]' is NaN or Infinity, which JSON has no place for; "
        "use a number or null"
    ]


def test_manifest_system_type_must_be_an_allowed_value(toybench, tmp_path):
    found = rejected(toybench, bundle(tmp_path, {}, json.dumps({"system_type": "x" * 60}).encode()))
    assert found == [
        f"manifest.json: field 'system_type' is {'x' * 50!r}; it must be one of small, large",
        "manifest.json: field 'system_type' has 60 characters; at most 50",
    ]


def test_manifest_organization_longer_than_its_column_or_with_a_nul(toybench, tmp_path):
    found = rejected(
        toybench, bundle(tmp_path, {}, json.dumps({"organization": "o" * 201}).encode())
    )
    assert found == ["manifest.json: field 'organization' has 201 characters; at most 200"]
    found = rejected(
        toybench, bundle(tmp_path, {}, json.dumps({"organization": "Lab\x00"}).encode())
    )
    assert found == [
        "manifest.json: field 'organization' holds a NUL character (\\u0000), which cannot be stored"
    ]


def test_the_cli_shows_a_message_not_a_traceback(toybench, tmp_path, monkeypatch):
    from evaluation.management.commands import submit

    def broken(**kwargs):
        raise RuntimeError('relation "evaluation_system" violates check; SELECT secret')

    monkeypatch.setattr(submit, "submission_create", broken)
    with pytest.raises(CommandError) as caught:
        call_command(
            "submit", str(bundle(tmp_path, {})), "--benchmark", "toy-bench", "--system", "X"
        )
    assert "unexpected error, nothing was stored" in str(caught.value)
    assert "SELECT" not in str(caught.value) and "RuntimeError" not in str(caught.value)


@pytest.mark.django_db(transaction=True)
def test_the_api_answers_our_words_for_an_unexpected_failure(
    client, toybench, tmp_path, monkeypatch, django_user_model
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
            {"bundle": handle, "benchmark": "toy-bench", "system": "X", "judge": "offline"},
        )
    assert response.status_code == 500
    assert response.json() == {"error": api_submit.CREATE_FAILED}


def test_a_deeply_nested_api_body_is_a_400(client, toybench, tmp_path, django_user_model):
    from evaluation.models import Membership, Team

    team = Team.objects.create(name="Alpha", slug="alpha")
    user = django_user_model.objects.create_user("alice", password="pw")
    Membership.objects.create(team=team, user=user)
    mine = submission_create(
        benchmark=toybench,
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
