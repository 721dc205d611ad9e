"""The core's guards on what an upload may cost, for every registered plug-in (the toy plug-in
included): a zip is refused by its entry count before its directory is read; every
submission's stored bytes (its bundle and everything the bundle unpacks to) count against its
team's and its account's storage quotas, failed submissions included; and a failed
submission's files are deleted once it has been failed for the keep time; a run holding more
timed spans than the plug-in declares is refused by the core."""

from __future__ import annotations

import datetime
import json
import shutil
import struct
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.test import Client
from django.utils import timezone

from evaluation.benchmarks import registry
from evaluation.bundles import (
    BundleRejected,
    ValidationReport,
    audio_members_check,
    zip_entry_count,
)
from evaluation.models import Membership, Submission, TaskResult, Team
from evaluation.services import bundle_validate, failed_files_purge
from evaluation.services.submissions import LimitReached, submission_create_within_limits
from tests.conftest import demo_runs, every_plugin_board

pytestmark = pytest.mark.django_db

SLUGS = [*sorted(registry()), "toy-bench"]


@pytest.fixture
def board(request, settings, tmp_path, demo_files):
    folder = demo_files(request.param)
    benchmark, plugin = every_plugin_board(request.param, settings, folder, name="guards")
    run = demo_runs(plugin, folder)[0]
    bundle = run.path
    if bundle.is_dir():
        bundle = Path(shutil.make_archive(str(tmp_path / "bundle"), "zip", root_dir=bundle))
    return benchmark, plugin, bundle, run


def _kept(bundle: Path) -> int:
    """The bundle's bytes and what it unpacks to, read with zipfile (a single file: itself)."""
    size = bundle.stat().st_size
    if not zipfile.is_zipfile(bundle):
        return size
    with zipfile.ZipFile(bundle) as archive:
        return size + sum(i.file_size for i in archive.infolist() if not i.is_dir())


def _entries_zip(path: Path, count: int) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for n in range(count):
            archive.writestr(f"junk/{n}.txt", b"")
    return path


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_a_zip_with_more_entries_than_the_benchmark_needs_is_refused_by_its_end_records(
    board, tmp_path, settings
):
    benchmark, plugin, _, _ = board
    tasks = benchmark.tasks.count()
    most = plugin.max_entries_per_task * tasks + 64
    report, contents = bundle_validate(
        benchmark=benchmark, path=_entries_zip(tmp_path / "many.zip", most + 1), allow_partial=True
    )
    assert contents is None
    assert [p.message for p in report.problems] == [
        f"the zip holds {most + 1:,} entries; an upload of {benchmark.name} ({tasks:,} tasks) "
        f"needs at most {most:,}"
    ]
    # The site's ceiling applies when it is smaller.
    settings.BUNDLE_MAX_ENTRIES = 10
    report, _ = bundle_validate(
        benchmark=benchmark, path=_entries_zip(tmp_path / "eleven.zip", 11), allow_partial=True
    )
    assert "needs at most 10" in report.problems[0].message


def test_the_entry_count_is_read_from_a_zip64_end_record(tmp_path):
    path = _entries_zip(tmp_path / "zip64.zip", 70_000)  # past 65,535: zipfile writes zip64
    with zipfile.ZipFile(path) as archive:
        assert len(archive.infolist()) == 70_000
    assert zip_entry_count(path) == 70_000
    (tmp_path / "plain.txt").write_text("not a zip")
    assert zip_entry_count(tmp_path / "plain.txt") is None


def _wav_header(*, seconds: int, rate: int = 16_000) -> bytes:
    """A 16-bit mono PCM WAV header declaring ``seconds`` of audio, built by hand."""
    data = seconds * rate * 2
    return (
        b"RIFF"
        + struct.pack("<I", 36 + data)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
        + b"data"
        + struct.pack("<I", data)
    )


def _with_members(bundle: Path, path: Path, members: dict[str, bytes]) -> Path:
    """The plug-in's demo upload (a zip, or a single file put in one) with ``members`` added."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        if zipfile.is_zipfile(bundle):
            with zipfile.ZipFile(bundle) as archive:
                for info in archive.infolist():
                    if not info.is_dir():
                        out.writestr(info.filename, archive.read(info))
        else:
            out.writestr(bundle.name, bundle.read_bytes())
        for name, data in members.items():
            out.writestr(name, data)
    return path


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_every_wav_member_is_checked_by_the_core_against_the_plugins_audio_limits(board, tmp_path):
    """Whatever the plug-in reads or ignores: a WAV declaring more than the plug-in's limit, one
    that is no WAV, and one longer than its header says, each a problem on its file (beside
    whatever the plug-in says of the rest); within the limit, silence that deflates 1000:1
    passes the compression-ratio test."""
    benchmark, plugin, bundle, _ = board
    limit = plugin.audio_limits.max_seconds
    over = int(limit) + 60
    header = _wav_header(seconds=2)
    bad = _with_members(
        bundle,
        tmp_path / "bad.zip",
        {
            "extra/long.wav": _wav_header(seconds=over) + bytes(32_000),
            "extra/noise.wav": b"not audio at all" * 10,
            "extra/padded.wav": header + bytes(64_000) + bytes(2 * 1024 * 1024),
        },
    )
    if ".zip" in plugin.upload.suffixes:
        report, _ = bundle_validate(benchmark=benchmark, path=bad, allow_partial=True)
    else:  # the site takes no zip for it: the core's check is all a zip would meet
        report = ValidationReport()
        assert not audio_members_check(bad, plugin.audio_limits, report)
    assert not report.ok
    found = {(p.file, p.message) for p in report.problems if (p.file or "").endswith(".wav")}
    assert found == {
        (
            "extra/long.wav",
            f"not accepted as audio: the WAV declares {over:,} s of audio; at most {limit:,.0f} s "
            "for this file",
        ),
        ("extra/noise.wav", "not accepted as audio: not a WAV file (no RIFF/WAVE header)"),
        (
            "extra/padded.wav",
            "not accepted as audio: the file is larger than the audio its header declares",
        ),
    }
    if ".zip" not in plugin.upload.suffixes:
        return  # the plug-in reads no zip: the core's check above is all a zip meets
    # Silence under a valid header of at most five minutes deflates far past the 100:1 ratio:
    # a WAV is exempt from that test once the core checked its header.
    seconds = min(int(limit), 300)
    quiet = _with_members(
        bundle,
        tmp_path / "quiet.zip",
        {"extra/quiet.wav": _wav_header(seconds=seconds) + bytes(seconds * 32_000)},
    )
    with zipfile.ZipFile(quiet) as archive:
        info = archive.getinfo("extra/quiet.wav")
        assert info.file_size / info.compress_size > 100
    report, _ = bundle_validate(benchmark=benchmark, path=quiet, allow_partial=True)
    said = [p.message for p in report.problems]
    assert not [m for m in said if "compression ratio" in m or "not accepted as audio" in m], said


def _people():
    team = Team.objects.create(slug="lab", name="Lab")
    other = Team.objects.create(slug="lab2", name="Lab Two")
    user = User.objects.create_user("ana", password="pw-ana-123456")
    for each in (team, other):
        Membership.objects.create(team=each, user=user, role=Membership.Role.OWNER)
    return team, other, user


def _submit(benchmark, bundle: Path, run, *, team, user, key: str) -> Submission:
    submission, created = submission_create_within_limits(
        team=team,
        benchmark=benchmark,
        bundle_path=bundle,
        system_name=f"{run.system} {key}",
        system_type=run.row_group,
        judge=benchmark.judges.get(slug="offline"),
        allow_partial=True,
        submitted_by=user,
        publish=False,
        idempotency_key=key,
    )
    assert created
    return submission


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_stored_bytes_count_against_team_and_account_quotas_failed_ones_included(board, settings):
    benchmark, _, bundle, run = board
    kept = _kept(bundle)
    team, other, user = _people()
    settings.MAX_SUBMISSIONS_PER_DAY = settings.MAX_SUBMISSIONS_PER_DAY_PER_ACCOUNT = 100
    settings.MAX_CONCURRENT_EVALUATIONS = 100
    settings.MAX_CONCURRENT_EVALUATIONS_PER_ACCOUNT = 100
    settings.MAX_STORED_BYTES_PER_TEAM = 2 * kept
    settings.MAX_STORED_BYTES_PER_ACCOUNT = 3 * kept

    first = _submit(benchmark, bundle, run, team=team, user=user, key="1")
    assert first.stored_bytes == kept
    Submission.objects.filter(pk=first.pk).update(status=Submission.Status.FAILED)
    _submit(benchmark, bundle, run, team=team, user=user, key="2")
    with pytest.raises(LimitReached) as refused:
        _submit(benchmark, bundle, run, team=team, user=user, key="3")
    assert refused.value.refusal.limit == "stored_bytes"
    assert f"Team Lab keeps {2 * kept:,} bytes of submissions (failed ones included)" in str(
        refused.value.refusal.message
    )
    # Another team of the same account: the account's quota, over all its teams.
    _submit(benchmark, bundle, run, team=other, user=user, key="4")
    with pytest.raises(LimitReached) as refused:
        _submit(benchmark, bundle, run, team=other, user=user, key="5")
    assert refused.value.refusal.message.startswith(f"Your account (ana) keeps {3 * kept:,} bytes")
    assert Submission.objects.filter(benchmark=benchmark).count() == 3


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_a_failed_submissions_files_go_after_the_keep_time_and_free_their_quota(board, settings):
    benchmark, _, bundle, run = board
    kept = _kept(bundle)
    team, _, user = _people()
    settings.MAX_STORED_BYTES_PER_TEAM = settings.MAX_STORED_BYTES_PER_ACCOUNT = kept
    settings.FAILED_FILES_KEEP_DAYS = 7
    old = _submit(benchmark, bundle, run, team=team, user=user, key="old")
    stored = old.bundle.name
    assert default_storage.exists(stored)
    now = timezone.now()
    Submission.objects.filter(pk=old.pk).update(
        status=Submission.Status.FAILED,
        error="ingest failed",
        finished_at=now - datetime.timedelta(days=7, minutes=1),
    )
    assert failed_files_purge(now=now) == 1
    old.refresh_from_db()
    assert not default_storage.exists(stored)
    assert old.stored_bytes == 0 and not old.bundle and old.status == Submission.Status.FAILED
    assert old.error.startswith("ingest failed\nIts files were deleted 7 days after it failed")
    # Its room is free again, and it cannot be retried.
    recent = _submit(benchmark, bundle, run, team=team, user=user, key="recent")
    client = Client()
    client.force_login(user)
    answer = client.post(f"/submissions/{old.pk}/retry/")
    assert answer.status_code == 409 and "its files were deleted" in answer.text
    # Its task pages say its files are gone, rather than failing on a missing upload.
    row = TaskResult.objects.create(submission=old, task=benchmark.tasks.first())
    assert client.get(f"/submissions/{old.pk}/tasks/{row.task.task_id}/").status_code == 404
    # One failed within the keep time keeps its files.
    Submission.objects.filter(pk=recent.pk).update(
        status=Submission.Status.FAILED, finished_at=now - datetime.timedelta(days=6)
    )
    assert failed_files_purge(now=now) == 0
    assert default_storage.exists(recent.bundle.name)


@pytest.mark.parametrize("board", SLUGS[:1], indirect=True)
def test_a_failed_submission_a_rating_study_samples_keeps_its_files(board, settings):
    from annotation.models import Item, Study

    benchmark, _, bundle, run = board
    team, _, user = _people()
    sampled = _submit(benchmark, bundle, run, team=team, user=user, key="sampled")
    study = Study.objects.create(
        name="S", slug="s", benchmark=benchmark, judge=benchmark.judges.get(slug="offline")
    )
    Item.objects.create(study=study, code="i1", stratum=sampled)
    Submission.objects.filter(pk=sampled.pk).update(
        status=Submission.Status.FAILED,
        finished_at=timezone.now() - datetime.timedelta(days=30),
    )
    # As a team's delete would be refused, the purge leaves it whole.
    assert failed_files_purge() == 0
    assert default_storage.exists(sampled.bundle.name)
    assert Submission.objects.get(pk=sampled.pk).stored_bytes == _kept(bundle)


# --- Spans per run: each plug-in declares max_spans_per_run, the core enforces it ------------

SPAN_BOUND = 20  # the declared bound, lowered so that a run just over it stays small


def _demo_member(bundle: Path, *, prefix: str, suffix: str) -> str:
    """The name of the first member of the demo upload under ``prefix`` ending in ``suffix``."""
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
    return sorted(n for n in names if n.startswith(prefix) and n.endswith(suffix))[0]


def _mpbench_run(bundle: Path, path: Path, count: int) -> tuple[Path, str, str, str]:
    """One task folder of the harness's format: an input of one word, a response of ``count``
    words after it."""
    task = _demo_member(bundle, prefix="scenario_", suffix="/response.json").split("/")[0]
    words = [{"text": f" w{n}", "timestamp": [1 + n * 0.2, 1.1 + n * 0.2]} for n in range(count)]
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            f"{task}/all_stitched.json",
            json.dumps({"text": "hi", "chunks": [{"text": "hi", "timestamp": [0.0, 0.5]}]}),
        )
        archive.writestr(f"{task}/response.json", json.dumps({"text": "", "chunks": words}))
    return path, task, "response.json", "word chunks"


def _duplexmpe_run(bundle: Path, path: Path, count: int) -> tuple[Path, str, str, str]:
    """The demo's first run (its output channel, its scheduler's log) with the submitter's own
    transcript of ``count`` chunks."""
    audio = _demo_member(bundle, prefix="audio/", suffix=".wav")
    run = audio[len("audio/") : -len(".wav")]
    chunks = [{"start": n * 0.1, "end": n * 0.1 + 0.05, "text": "a"} for n in range(count)]
    with zipfile.ZipFile(bundle) as demo, zipfile.ZipFile(path, "w") as archive:
        for name in (audio, f"schedule/{run}.json", "manifest.json"):
            archive.writestr(name, demo.read(name))
        archive.writestr(
            f"transcripts/{run}.json", json.dumps({"asr": "the lab's ASR", "chunks": chunks})
        )
    return path, run, f"transcripts/{run}.json", "chunks"


def _toy_run(bundle: Path, path: Path, count: int) -> tuple[Path, str, str, str]:
    """One answer whose spoken words, ``count`` of them, are timed."""
    path = path.with_suffix(".jsonl")
    words = [{"start": n * 0.3, "end": n * 0.3 + 0.2, "text": "four"} for n in range(count)]
    path.write_text(json.dumps({"id": "q1", "answer": "It is 2", "words": words}) + "\n")
    return path, "q1", "answers.jsonl", "words"


# How each plug-in whose runs hold timed spans writes one run of ``count`` of them, in its own
# format: (the upload, the run, the file holding them, what the upload calls them).
SPAN_RUNS = {"mp-bench": _mpbench_run, "duplex-mpe": _duplexmpe_run, "toy-bench": _toy_run}


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_a_run_over_the_plugins_span_bound_is_refused_by_the_core_and_nothing_is_stored(
    board, tmp_path, monkeypatch
):
    """One run holding one span more than the plug-in declares is refused at validation with a
    problem naming the run, its file, the count and the bound, and leaves no row and no file;
    at exactly the bound it is accepted. A plug-in whose runs hold no timed spans (its upload is
    text replies) reports none: its demo run passes even a bound of one."""
    benchmark, plugin, bundle, run = board
    assert plugin.max_spans_per_run >= 5_000  # every real run fits the declared bound
    team, _, user = _people()
    write = SPAN_RUNS.get(plugin.slug)
    if write is None:
        monkeypatch.setattr(plugin, "max_spans_per_run", 1)
        report, _ = bundle_validate(
            benchmark=benchmark, path=bundle, allow_partial=False, options=dict(run.options)
        )
        assert report.ok, report.lines()
        assert report.spans == []
        return
    monkeypatch.setattr(plugin, "max_spans_per_run", SPAN_BOUND)
    over, task, file, what = write(bundle, tmp_path / "over.zip", SPAN_BOUND + 1)
    media = tmp_path / "media"
    before = _files(media)
    report, _ = bundle_validate(benchmark=benchmark, path=over, allow_partial=True)
    assert [(p.task, p.file, p.message) for p in report.problems] == [
        (task, file, f"holds 21 {what}; a run of this benchmark holds at most 20")
    ]
    with pytest.raises(BundleRejected) as refused:
        _submit(benchmark, over, run, team=team, user=user, key="over")
    assert f"{task} / {file}: holds 21 {what}" in "\n".join(refused.value.report.lines())
    assert not Submission.objects.filter(benchmark=benchmark).exists()
    assert _files(media) == before

    at, *_ = write(bundle, tmp_path / "at.zip", SPAN_BOUND)
    report, _ = bundle_validate(benchmark=benchmark, path=at, allow_partial=True)
    assert report.ok, report.lines()
    assert [(s.task, s.file, s.count) for s in report.spans if s.count == SPAN_BOUND] == [
        (task, file, SPAN_BOUND)
    ]
    _submit(benchmark, at, run, team=team, user=user, key="at")
    assert Submission.objects.filter(benchmark=benchmark).count() == 1
