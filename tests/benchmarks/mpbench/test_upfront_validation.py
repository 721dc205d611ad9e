"""What used to be accepted and then fail in the worker, in MP-Bench's transcripts: each is
refused at validation with a message naming the task, the file and the field; and MP-Bench checks
an upload against its task ids alone. The core's own checks: tests/evaluation/
test_upfront_validation.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import transcript, words
from tests.evaluation.test_upfront_validation import rejected, zip_of

pytestmark = pytest.mark.django_db

TASK = "scenario_argument-diag_1001-tier_2-task_0"
INPUT = json.dumps(transcript(words(("Hello", 0.0, 0.5)))).encode()
OUTPUT = json.dumps(transcript(words(("Yes", 1.0, 1.5)))).encode()


def bundle(tmp_path: Path, extra: dict[str, bytes], manifest: bytes | None = None) -> Path:
    files = {f"{TASK}/all_stitched.json": INPUT, f"{TASK}/response.json": OUTPUT, **extra}
    if manifest is not None:
        files["manifest.json"] = manifest
    return zip_of(tmp_path, files)


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
