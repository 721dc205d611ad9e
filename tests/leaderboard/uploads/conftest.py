"""People, teams and bundles for the upload tests, on the example plug-in (toybench).

alice and alice2 are in team alpha, bob is in team beta, charlie is in no team, staff is staff.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from config.celery import app as celery_app
from evaluation.models import Membership, Team
from leaderboard.uploads import storage
from tests.conftest import new_bucket, s3_storage_options, toy_upload, wav_file
from tests.toyplugin import toy

EXAMPLE_TASK = "q1"  # the first of toybench's tasks a bundle answers
S3_PART = 5 * 1024 * 1024  # the smallest part S3 accepts, so a test bundle spans several
BROKEN_JSON = '{"id": "q1", "answer": "cut off'  # the line ends inside the string


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
def make_bundle(tmp_path):
    """make_bundle(name, audio_bytes=0, broken=False) -> path of a toybench zip answering its
    first three tasks (toy_upload) with manifest {"system": name}; audio_bytes makes the first
    task's spoken answer a WAV of that size; broken puts a line that is not JSON first in the
    answers."""
    counter = iter(range(1000))

    def build(name: str = "bundle", *, audio_bytes: int = 0, broken: bool = False) -> Path:
        source = toy_upload(tmp_path / f"{name}-{next(counter)}.zip", {"system": name})
        target = tmp_path / f"{name}.zip"
        with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
            for info in old.infolist():
                data = old.read(info)
                if audio_bytes and info.filename == f"{EXAMPLE_TASK}.wav":
                    data = wav_bytes(audio_bytes)
                if broken and info.filename == toy.ANSWERS:
                    data = BROKEN_JSON.encode() + b"\n" + data
                new.writestr(info.filename, data, zipfile.ZIP_DEFLATED)
        source.unlink()
        return target

    return build


def zip_names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        return archive.namelist()


def start_fields(team: str = "alpha", **overrides) -> dict:
    fields = {
        "team": team,
        "system_name": "Chunky Agent",
        "system_type": "small",
        "option_mode": "text",
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
