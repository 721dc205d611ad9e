"""The daily sweep of stored objects no row names, on the filesystem storage a fresh clone
runs with (the S3 case, against an S3 server, is in test_storage_outage.py): for every
registered plug-in (the toy plug-in included), what a killed request or worker left goes once
old enough; everything a row names, and anything younger, stays."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from evaluation.benchmarks import registry
from evaluation.models import Submission, Team
from evaluation.services.submissions import unreferenced_objects_sweep
from leaderboard.uploads.models import Upload
from tests.conftest import demo_runs_scored, every_plugin_board

pytestmark = pytest.mark.django_db

SLUGS = [*sorted(registry()), "toy-bench"]
HOUR = 3600


def stored_names(media: Path) -> set[str]:
    return {str(path.relative_to(media)) for path in media.rglob("*") if path.is_file()}


def age(media: Path, names, *, seconds: float) -> None:
    """Make the files look last written ``seconds`` ago."""
    then = time.time() - seconds
    for name in names:
        os.utime(media / name, (then, then))


@pytest.mark.parametrize("slug", SLUGS)
def test_the_sweep_deletes_old_files_no_row_names_on_the_filesystem(slug, settings, demo_files):
    media = Path(settings.STORAGES["default"]["OPTIONS"]["location"])
    benchmark, plugin = every_plugin_board(slug, settings, demo_files(slug), name="orphans")
    (submission,) = demo_runs_scored(benchmark, plugin, demo_files(slug), count=1)
    assert submission.status == Submission.Status.SCORED, submission.error
    # A browser upload still arriving: its partial file is named by nothing but the upload.
    team = Team.objects.create(slug="uploaders", name="Uploaders")
    user = User.objects.create_user("uploader", password="pw-uploader-1234")
    upload = Upload.objects.create(
        benchmark=benchmark, team=team, user=user, method=Upload.Method.CHUNKED,
        filename="run.zip", size=10, system_name="still arriving",
    )  # fmt: skip
    (media / "uploads/partial").mkdir(parents=True, exist_ok=True)
    (media / f"uploads/partial/{upload.pk}.part").write_bytes(b"half")
    kept = stored_names(media)
    assert submission.bundle.name in kept
    orphans = {"bundles/killed-request.zip", "submissions/999999/t/response.wav",
               "uploads/partial/gone.part", "healthz/left.txt"}  # fmt: skip
    fresh = {"bundles/being-written.zip"}
    for name in orphans | fresh:
        (media / name).parent.mkdir(parents=True, exist_ok=True)
        (media / name).write_bytes(b"left behind")
    age(media, kept | orphans, seconds=2 * HOUR)

    assert sorted(unreferenced_objects_sweep(older_than=timedelta(hours=1))) == sorted(orphans)
    assert stored_names(media) == kept | fresh
    # Younger than the age: it may be a write whose rows are not committed yet.
    assert unreferenced_objects_sweep(older_than=timedelta(hours=1)) == []
    assert stored_names(media) == kept | fresh


def test_the_sweep_of_a_storage_nothing_was_written_to_deletes_nothing(settings):
    assert not Path(settings.STORAGES["default"]["OPTIONS"]["location"]).exists()
    assert unreferenced_objects_sweep(older_than=timedelta(0)) == []
