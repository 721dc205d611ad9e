"""Ingest reads each file it stores once, for every registered plug-in (the toy plug-in
included), on an S3 server speaking HTTP: storing a member of the stored upload in the bucket
seeks to its end for the size, then reads it for a checksum and again to send it, and from a
zip member each of those meant decompressing it, and fetching its bytes from the store, again
(four times in all before)."""

from __future__ import annotations

import zipfile
from collections import Counter, defaultdict

import pytest
from django.core.files.storage import default_storage

import evaluation.services
from evaluation.benchmarks import registry
from evaluation.models import Submission, TaskResult
from tests.conftest import demo_runs_scored, every_plugin_board

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

SLUGS = [*sorted(registry()), "toy-bench"]


def count_member_reads(monkeypatch) -> dict[str, int]:
    """Bytes each zip member gave its readers while an ingest ran, by member name (a seek
    back decompresses from the start again, through the same reads)."""
    given: dict[str, int] = defaultdict(int)
    ingesting = []
    for method in ("read", "read1"):
        real = getattr(zipfile.ZipExtFile, method)

        def counted(self, n=-1, _real=real):
            data = _real(self, n)
            if ingesting:
                given[self.name] += len(data)
            return data

        monkeypatch.setattr(zipfile.ZipExtFile, method, counted)
    real_ingest = evaluation.services.submission_ingest

    def ingest(**kwargs):
        ingesting.append(True)
        try:
            return real_ingest(**kwargs)
        finally:
            ingesting.clear()

    monkeypatch.setattr(evaluation.services, "submission_ingest", ingest)
    return given


@pytest.mark.parametrize("slug", SLUGS)
def test_ingest_reads_each_stored_file_once(slug, proxied_bucket, settings, tmp_path, monkeypatch):
    client, bucket, _ = proxied_bucket
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="reads")
    given = count_member_reads(monkeypatch)
    (submission,) = demo_runs_scored(benchmark, plugin, tmp_path, count=1)
    assert submission.status == Submission.Status.SCORED, submission.error

    stored = {
        entry["key"]: entry["size"]
        for files in TaskResult.objects.filter(submission=submission).values_list(
            "files", flat=True
        )
        for entry in files.values()
        if "key" in entry
    }
    in_bucket = {o["Key"]: o["Size"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]}
    assert {key: in_bucket[key] for key in stored} == stored
    with default_storage.open(submission.bundle.name, "rb") as handle:
        if not zipfile.is_zipfile(handle):
            assert not stored and not given  # a replies file alone: nothing of it stored apart
            return
        sizes = {info.filename: info.file_size for info in zipfile.ZipFile(handle).infolist()}
    # Every member ingest read, it read once, whole; each stored file is one of them.
    assert given and dict(given) == {name: sizes[name] for name in given}
    assert not Counter(stored.values()) - Counter(given.values())
