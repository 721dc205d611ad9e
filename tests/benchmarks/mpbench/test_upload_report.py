"""An MP-Bench bundle missing task folders, uploaded through the browser's chunks: MP-Bench
reports each missing folder as a problem of its own and the upload's report shows them in one
row. Reads the MP-Bench data beside the checkout (../shared) and skips without it."""

from __future__ import annotations

import json

import pytest

from leaderboard.uploads.models import Upload
from tests.benchmarks.mpbench.conftest import start_fields
from tests.conftest import copy_examples, zip_tree
from tests.leaderboard.uploads.conftest import put_chunk

pytestmark = pytest.mark.django_db(transaction=True)

CHUNK = 64 * 1024


def examples_zip(mpbench_dir, tmp_path) -> bytes:
    """MP-Bench's three example task folders with a manifest, zipped."""
    run = copy_examples(mpbench_dir, tmp_path / "bundle")
    (run / "manifest.json").write_text(json.dumps({"system": "bundle"}))
    return zip_tree(run, tmp_path / "bundle.zip").read_bytes()


def test_missing_tasks_are_listed_in_one_row(
    client, people, mpbench, mpbench_dir, tmp_path, settings, eager
):
    settings.UPLOAD_CHUNK_BYTES = CHUNK
    data = examples_zip(mpbench_dir, tmp_path)
    client.force_login(people.alice)
    fields = start_fields(size=len(data), allow_partial="")
    response = client.post("/benchmarks/mp-bench/submit/start/", fields)
    assert response.status_code == 201, response.content
    state = response.json()
    for offset in range(0, len(data), CHUNK):
        put_chunk(client, state, data[offset : offset + CHUNK], offset)
    response = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert response.status_code == 422
    upload = Upload.objects.get(pk=state["id"])
    assert len(upload.report["problems"]) == 927 - 3
    page = client.get(state["urls"]["page"]).content.decode()
    assert "<summary>924 tasks</summary>" in page
    assert page.count("task folder missing") == 1
