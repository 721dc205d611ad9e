"""The demo study: made on the demo benchmark from submissions still waiting to be scored, with
clips that play, invite links printed, and simulated ratings behind real figures."""

from __future__ import annotations

import hashlib
import io
import re

import pytest
from django.core.files.storage import default_storage
from django.urls import reverse

from annotation.demo import DEMO_STUDY, PER_STRATUM, seed_demo_study
from annotation.models import Item, Rating, Study
from annotation.services import snapshot_freeze
from evaluation.benchmarks.mpbench import demo
from evaluation.models import Submission
from evaluation.services import benchmark_import, submission_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_board(tmp_path):
    demo.write_demo_benchmark(tmp_path / "source")
    board = benchmark_import(
        slug="mp-bench-demo", directory=tmp_path / "source", plugin="mp-bench", is_demo=True
    ).benchmark
    offline = board.judges.get(slug="offline")
    for entry in demo.DEMO_SYSTEMS:
        path = tmp_path / f"{entry['profile']}.zip"
        demo.write_demo_bundle_zip(
            path, profile=entry["profile"], seed=entry["seed"], manifest=demo.system_manifest(entry)
        )
        submission_create(
            benchmark=board,
            bundle_path=path,
            system_name=entry["name"],
            row_group=entry["system_type"],
            judge=offline,
            publish=True,
        )
    return board


def test_the_demo_study_has_clips_that_play_invites_and_figures(demo_board, client):
    # Queued, as seed_demo leaves them before the worker starts.
    assert set(demo_board.submissions.values_list("status", flat=True)) == {"queued"}
    out = io.StringIO()
    study = seed_demo_study(stdout=out)
    assert set(demo_board.submissions.values_list("status", flat=True)) == {"scored"}
    strata = list(study.strata.all())
    assert strata
    for submission in strata:
        said = submission.task_results.filter(task__spec__family="discussion").exclude(
            detection__post_text=""
        )
        assert said.count() > PER_STRATUM
    samples = study.items.filter(role=Item.Role.SAMPLE)
    assert samples.count() == PER_STRATUM * len(strata)
    assert study.items.filter(role=Item.Role.GOLD).exclude(expected_label="").count() == 2
    for item in study.items.all():
        for key, digest in (*((clip["key"], clip["sha256"]) for clip in item.clips),):
            with default_storage.open(key, "rb") as handle:
                data = handle.read()
            assert data.startswith(b"RIFF") and hashlib.sha256(data).hexdigest() == digest
    assert Rating.objects.filter(item__study=study).count() > 20
    overall = snapshot_freeze(study=study).figures["all_raters"]["overall"]
    assert overall["alpha"]["value"] is not None and overall["kappa"]["value"] is not None
    assert study.raters.filter(is_excluded=True).count() == 1

    printed = out.getvalue()
    for rater in study.raters.all():
        assert f"/rate/{rater.token}/" in printed
    assert f"/studies/{DEMO_STUDY}/" in printed
    # A fresh invite plays its first clip.
    fresh = study.raters.get(name="Invite 1")
    client.post(reverse("annotation:rate-start", args=[fresh.token]))
    page = client.get(reverse("annotation:rate", args=[fresh.token])).content.decode()
    clip = re.search(r'<audio controls preload="metadata" src="([^"]+)"', page).group(1)
    response = client.get(clip, headers={"range": "bytes=0-11"})
    assert response.status_code == 206
    assert b"".join(response.streaming_content)[:4] == b"RIFF"

    # Running it again changes nothing and prints the same links.
    again = io.StringIO()
    assert seed_demo_study(stdout=again).pk == study.pk
    assert Study.objects.count() == 1 and again.getvalue().count("/rate/") == 6


def test_without_the_demo_benchmark_it_says_so():
    out = io.StringIO()
    assert seed_demo_study(stdout=out) is None
    assert "run seed_demo first" in out.getvalue()
    assert not Submission.objects.exists()
