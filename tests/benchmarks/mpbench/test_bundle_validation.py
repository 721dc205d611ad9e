"""Malformed bundles: each is rejected with a specific message and leaves nothing behind."""

import io
import json
import stat
import warnings
import zipfile
from pathlib import Path

import pytest
from django.conf import settings

from evaluation.bundles import BundleRejected
from evaluation.models import Submission, System, TaskResult
from evaluation.services import submission_create
from tests.conftest import transcript, wav_file, words

pytestmark = pytest.mark.django_db

GOOD_INPUT = transcript(words(("Hello", 0.0, 0.5), ("there", 0.5, 2.0)))
GOOD_OUTPUT = transcript(words(("Yes", 2.5, 2.9)))
WAV = wav_file(b"\x00" * 28)


@pytest.fixture
def task_ids(mpbench):
    return sorted(mpbench.tasks.values_list("task_id", flat=True))


def full_bundle(task_ids, *, prefix="run/", skip=(), extra=None) -> dict[str, bytes]:
    files = {}
    for task in task_ids:
        if task in skip:
            continue
        files[f"{prefix}{task}/all_stitched.json"] = json.dumps(GOOD_INPUT).encode()
        files[f"{prefix}{task}/response.json"] = json.dumps(GOOD_OUTPUT).encode()
    files.update(extra or {})
    return files


def write_zip(
    path: Path, files: dict[str, bytes], *, links=(), compression=zipfile.ZIP_DEFLATED
) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for name, target in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return path


def assert_rejected(mpbench, path: Path, *fragments: str, allow_partial=False):
    systems_before = System.objects.count()
    with pytest.raises(BundleRejected) as caught:
        submission_create(
            benchmark=mpbench, bundle_path=path, system_name="Rejected", allow_partial=allow_partial
        )
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    assert Submission.objects.filter(is_reported=False).count() == 0
    assert System.objects.count() == systems_before
    assert TaskResult.objects.count() == 0
    media = Path(settings.STORAGES["default"]["OPTIONS"]["location"])
    assert not media.exists() or not any(p.is_file() for p in media.rglob("*"))
    return caught.value.report


def first(task_ids):
    return task_ids[0]


def test_a_valid_bundle_is_accepted(mpbench, task_ids, tmp_path, settings):
    path = write_zip(
        tmp_path / "ok.zip",
        full_bundle(task_ids, extra={"manifest.json": b'{"organization": "Lab"}'}),
    )
    submission = submission_create(benchmark=mpbench, bundle_path=path, system_name="Fine")
    assert submission.manifest == {"organization": "Lab"} and not submission.is_partial
    stored = Path(settings.STORAGES["default"]["OPTIONS"]["location"]) / submission.bundle.name
    assert stored.read_bytes() == path.read_bytes()


def test_not_a_zip(mpbench, tmp_path):
    path = tmp_path / "bundle.zip"
    path.write_bytes(b"this is plain text")
    assert_rejected(mpbench, path, "not a readable zip archive")


def test_empty_zip_has_no_task_folders(mpbench, tmp_path):
    assert_rejected(
        mpbench,
        write_zip(tmp_path / "e.zip", {"readme.txt": b"hi"}),
        "no scenario_* task folders found",
    )


def test_unknown_task_folder(mpbench, task_ids, tmp_path):
    files = full_bundle(task_ids, extra={"run/scenario_not-a-task/response.json": b"{}"})
    report = assert_rejected(
        mpbench, write_zip(tmp_path / "b.zip", files), "scenario_not-a-task: unknown task folder"
    )
    assert len(report.problems) == 1


def test_missing_tasks_without_allow_partial(mpbench, task_ids, tmp_path):
    files = full_bundle(task_ids, skip=task_ids[:2])
    report = assert_rejected(
        mpbench,
        write_zip(tmp_path / "b.zip", files),
        f"{task_ids[0]}: task folder missing",
        "--allow-partial",
    )
    assert [p.task for p in report.problems] == task_ids[:2]


def test_missing_tasks_with_allow_partial_is_marked_incomplete(mpbench, task_ids, tmp_path):
    files = full_bundle(task_ids, skip=task_ids[:2])
    submission = submission_create(
        benchmark=mpbench,
        bundle_path=write_zip(tmp_path / "b.zip", files),
        system_name="Partial",
        allow_partial=True,
    )
    assert submission.is_partial and submission.missing_task_count == 2


def test_unparseable_json(mpbench, task_ids, tmp_path):
    files = full_bundle(task_ids, extra={f"run/{first(task_ids)}/response.json": b'{"text": "a",'})
    assert_rejected(
        mpbench,
        write_zip(tmp_path / "b.zip", files),
        f"{first(task_ids)} / response.json: not valid JSON (line 1",
    )


def test_not_utf8(mpbench, task_ids, tmp_path):
    files = full_bundle(task_ids, extra={f"run/{first(task_ids)}/response.json": b"\xff\xfe{}"})
    assert_rejected(mpbench, write_zip(tmp_path / "b.zip", files), "response.json: not valid JSON")


@pytest.mark.parametrize(
    ("stamp", "fragment"),
    [
        (["0.5", 1.0], "non-numeric timestamp"),
        ([None, 1.0], "non-numeric timestamp"),
        ([True, 1.0], "non-numeric timestamp"),
        ([float("nan"), 1.0], "non-numeric timestamp"),  # NaN in the JSON
        ([0.5, float("inf")], "non-numeric timestamp"),  # Infinity in the JSON
        ([-0.5, 1.0], "negative timestamp"),
        ([2.0, 1.0], "reversed timestamp"),
    ],
)
def test_bad_timestamps(mpbench, task_ids, tmp_path, stamp, fragment):
    bad = {
        "text": "x",
        "chunks": [{"text": "ok", "timestamp": [0, 1]}, {"text": "bad", "timestamp": stamp}],
    }
    files = full_bundle(
        task_ids, extra={f"run/{first(task_ids)}/all_stitched.json": json.dumps(bad).encode()}
    )
    assert_rejected(
        mpbench, write_zip(tmp_path / "b.zip", files), f"chunk 1 ('bad') has a {fragment}"
    )


def test_text_and_chunks_of_wrong_type(mpbench, task_ids, tmp_path):
    extra = {
        f"run/{task_ids[0]}/response.json": b'{"text": 5, "chunks": []}',
        f"run/{task_ids[1]}/response.json": b'{"text": "", "chunks": {"a": 1}}',
        f"run/{task_ids[2]}/response.json": b"[1, 2]",
    }
    report = assert_rejected(
        mpbench,
        write_zip(tmp_path / "b.zip", full_bundle(task_ids, extra=extra)),
        "'text' must be a string",
    )
    assert {str(p) for p in report.problems} == {
        f"{task_ids[0]} / response.json: 'text' must be a string",
        f"{task_ids[1]} / response.json: 'chunks' must be a list",
        f"{task_ids[2]} / response.json: top level must be a JSON object with 'text' and 'chunks'",
    }


def test_malformed_chunks_the_rules_ignore_are_accepted(mpbench, task_ids, tmp_path):
    odd = {
        "text": "a",
        "chunks": [
            {"text": "a", "timestamp": [1.0]},
            {"text": "b"},
            "c",
            {"text": "d", "timestamp": None},
        ],
    }
    files = full_bundle(
        task_ids, extra={f"run/{first(task_ids)}/response.json": json.dumps(odd).encode()}
    )
    assert submission_create(
        benchmark=mpbench, bundle_path=write_zip(tmp_path / "b.zip", files), system_name="Odd"
    )


def test_path_traversal(mpbench, task_ids, tmp_path):
    files = full_bundle(task_ids, extra={f"run/../{first(task_ids)}/x.wav": WAV})
    assert_rejected(mpbench, write_zip(tmp_path / "b.zip", files), "has '..' in its path")


def test_absolute_path(mpbench, task_ids, tmp_path):
    files = full_bundle(task_ids, extra={"/etc/passwd": b"root"})
    assert_rejected(
        mpbench, write_zip(tmp_path / "b.zip", files), "/etc/passwd: zip entry has an absolute path"
    )


def test_symbolic_link(mpbench, task_ids, tmp_path):
    path = write_zip(
        tmp_path / "b.zip",
        full_bundle(task_ids),
        links=[(f"run/{first(task_ids)}/combined.json", "/etc/passwd")],
    )
    assert_rejected(mpbench, path, "combined.json: zip entry is a symbolic link")


def test_duplicate_task_folders(mpbench, task_ids, tmp_path):
    files = full_bundle(
        task_ids, extra={f"other/{first(task_ids)}/response.json": json.dumps(GOOD_OUTPUT).encode()}
    )
    assert_rejected(
        mpbench,
        write_zip(tmp_path / "b.zip", files),
        f"{first(task_ids)}: task folder appears more than once (under 'other', 'run')",
    )


def test_uncompressed_size_over_the_cap(mpbench, task_ids, tmp_path, settings):
    settings.BUNDLE_MAX_UNCOMPRESSED_BYTES = 100_000
    assert_rejected(
        mpbench,
        write_zip(tmp_path / "b.zip", full_bundle(task_ids)),
        "exceeds the limit of 100,000 bytes",
    )


def test_compression_ratio_over_100(mpbench, task_ids, tmp_path):
    bomb = b'{"text": "' + b" " * (20 * 1024 * 1024) + b'"}'
    files = full_bundle(task_ids, extra={f"run/{first(task_ids)}/combined.json": bomb})
    assert_rejected(
        mpbench,
        write_zip(tmp_path / "b.zip", files),
        "combined.json: compression ratio",
        "exceeds the limit of 100:1",
    )


def test_silent_audio_compresses_far_past_100_and_is_accepted(mpbench, task_ids, tmp_path):
    # 60 s of 16 kHz digital silence: what an agent that never spoke leaves behind.
    silence = wav_file(b"\x00" * (60 * 32000))
    files = full_bundle(
        task_ids, extra={f"run/{task}/response.wav": silence for task in task_ids[:5]}
    )
    assert submission_create(
        benchmark=mpbench, bundle_path=write_zip(tmp_path / "b.zip", files), system_name="Quiet"
    )


def test_wav_that_is_not_a_wav(mpbench, task_ids, tmp_path):
    files = full_bundle(
        task_ids, extra={f"run/{first(task_ids)}/response.wav": b"ID3 mp3 data here"}
    )
    assert_rejected(
        mpbench,
        write_zip(tmp_path / "b.zip", files),
        "response.wav: not accepted as audio: not a WAV file",
    )


def test_manifest_must_be_an_object(mpbench, task_ids, tmp_path):
    files = full_bundle(task_ids, extra={"manifest.json": b"[1]"})
    assert_rejected(
        mpbench,
        write_zip(tmp_path / "b.zip", files),
        "manifest.json: manifest must be a JSON object",
    )


def test_same_path_twice(mpbench, task_ids, tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in full_bundle(task_ids).items():
            archive.writestr(name, data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            archive.writestr(f"run/{first(task_ids)}/response.json", b"{}")
    path = tmp_path / "b.zip"
    path.write_bytes(buffer.getvalue())
    assert_rejected(mpbench, path, "response.json: zip holds this path twice")


def test_every_problem_is_reported_at_once(mpbench, task_ids, tmp_path):
    extra = {
        f"run/{task_ids[0]}/response.json": b"nope",
        f"run/{task_ids[1]}/all_stitched.json": json.dumps(
            {"chunks": [{"text": "x", "timestamp": [3, 1]}]}
        ).encode(),
        "run/scenario_bogus/response.json": b"{}",
    }
    report = assert_rejected(
        mpbench, write_zip(tmp_path / "b.zip", full_bundle(task_ids, extra=extra)), "3 problem(s)"
    )
    assert sorted(p.task for p in report.problems) == sorted(
        [task_ids[0], task_ids[1], "scenario_bogus"]
    )


def test_stored_file_removed_when_the_transaction_fails(
    mpbench, task_ids, tmp_path, settings, monkeypatch
):
    from evaluation.services import submissions

    def explode(*args, **kwargs):
        raise RuntimeError("queue unavailable")

    monkeypatch.setattr(submissions, "enqueue_on_commit", explode)
    path = write_zip(tmp_path / "b.zip", full_bundle(task_ids))
    with pytest.raises(RuntimeError):
        submission_create(benchmark=mpbench, bundle_path=path, system_name="Boom")
    media = Path(settings.STORAGES["default"]["OPTIONS"]["location"])
    assert (
        not list(media.rglob("*.zip")) and Submission.objects.filter(is_reported=False).count() == 0
    )
