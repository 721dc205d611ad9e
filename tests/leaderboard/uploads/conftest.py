"""People, teams and bundles for the upload tests.

alice and alice2 are in team alpha, bob is in team beta, charlie is in no team, staff is staff.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from config.celery import app as celery_app
from evaluation.models import Membership, Team
from leaderboard.uploads import storage
from tests.conftest import copy_examples, new_bucket, s3_storage_options, wav_file, zip_tree

EXAMPLE_TASK = "scenario_argument-diag_1001-tier_2-task_0"
S3_PART = 5 * 1024 * 1024  # the smallest part S3 accepts, so a test bundle spans several
BROKEN_JSON = '{"text": "cut off", "chunks": ['  # the file ends inside the list


@dataclass
class People:
    alice: User
    alice2: User
    bob: User
    charlie: User
    staff: User
    alpha: Team
    beta: Team


@pytest.fixture
def people(db) -> People:
    alpha = Team.objects.create(name="Alpha Lab", slug="alpha")
    beta = Team.objects.create(name="Beta Lab", slug="beta")
    users = {
        name: User.objects.create_user(name, f"{name}@example.org", "pw")
        for name in ("alice", "alice2", "bob", "charlie")
    }
    staff = User.objects.create_user("staff", "staff@example.org", "pw", is_staff=True)
    Membership.objects.create(team=alpha, user=users["alice"], role=Membership.Role.OWNER)
    Membership.objects.create(team=alpha, user=users["alice2"])
    Membership.objects.create(team=beta, user=users["bob"], role=Membership.Role.OWNER)
    return People(**users, staff=staff, alpha=alpha, beta=beta)


def wav_bytes(size: int) -> bytes:
    """A PCM WAV of random (incompressible) samples: the zip is about this large."""
    return wav_file(os.urandom(size))


@pytest.fixture
def make_bundle(mpbench_dir, tmp_path):
    """make_bundle(name, audio_bytes=0, broken=False) -> path of a zip of the three example task
    folders; audio_bytes adds a response.wav of that size to one of them; broken replaces that
    task's response.json with text that is not JSON."""
    counter = iter(range(1000))

    def build(name: str = "bundle", *, audio_bytes: int = 0, broken: bool = False) -> Path:
        run = copy_examples(mpbench_dir, tmp_path / f"{name}-{next(counter)}")
        if audio_bytes:
            (run / EXAMPLE_TASK / "response.wav").write_bytes(wav_bytes(audio_bytes))
        if broken:
            (run / EXAMPLE_TASK / "response.json").write_text(BROKEN_JSON)
        (run / "manifest.json").write_text(json.dumps({"system": name}))
        return zip_tree(run, tmp_path / f"{name}.zip")

    return build


def zip_names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        return archive.namelist()


def start_fields(team: str = "alpha", **overrides) -> dict:
    fields = {
        "team": team,
        "system_name": "Chunky Agent",
        "system_type": "realtime",
        "judge": "offline",
        "allow_partial": "on",
        "filename": "bundle.zip",
    }
    fields.update(overrides)
    return fields


def put_chunk(client, state: dict, data: bytes, offset: int):
    return client.put(
        f"{state['urls']['chunk']}?offset={offset}",
        data=data,
        content_type="application/octet-stream",
    )


@pytest.fixture
def bucket(s3_server, settings, monkeypatch):
    client, name = new_bucket(s3_server)
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage_options(s3_server, name)}
    monkeypatch.setattr(storage, "S3_PART_BYTES", S3_PART)
    celery_app.conf.task_always_eager = True
    yield client, name
    celery_app.conf.task_always_eager = False
