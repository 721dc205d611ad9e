"""import_benchmark audio-multichallenge: from a synthetic parquet export (user-turn audio stored
through Django's storage) and from a JSONL export (transcripts only); re-import is idempotent
and a changed prompt becomes a new version. The prompt is the demo's stand-in, written by code."""

from __future__ import annotations

import io
import json
import wave

import pytest
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command

from evaluation.benchmarks.audiomc.demo.synthetic import (
    synthetic_records,
    write_jsonl_export,
    write_parquet_export,
)
from evaluation.models import Benchmark, PromptVersion

from .conftest import TEMPLATE_BEGIN, template_of

pytestmark = pytest.mark.django_db


def _import(path, prompt, *extra) -> str:
    out = io.StringIO()
    call_command(
        "import_benchmark",
        "audio-multichallenge",
        str(path),
        "--judge-prompt",
        str(prompt),
        *extra,
        stdout=out,
    )
    return out.getvalue()


def test_parquet_import_stores_user_audio_and_is_idempotent(tmp_path, stand_in_prompt):
    records = synthetic_records(8, seed=3)
    write_parquet_export(records, tmp_path / "export", max_audio_seconds=0.6, row_group_rows=3)
    first = _import(tmp_path / "export", stand_in_prompt)
    # Every user turn 1..L of every record has a clip: sum of L.
    clips = sum(max(k for k in range(1, 9) if r.get(f"user_turn_{k}_transcript")) for r in records)
    assert first.startswith("audio-multichallenge: 8 tasks (8 new, 0 changed)")
    assert "new prompt versions: rubric_item" in first and f"{clips} files stored" in first

    benchmark = Benchmark.objects.get(slug="audio-multichallenge")
    assert benchmark.plugin == "audio-multichallenge"
    assert {j.slug for j in benchmark.judges.all()} == {"official", "offline"}
    official = benchmark.judges.get(slug="official")
    assert official.models_by_kind == {"rubric_item": "o4-mini"}
    assert official.send_sampling_params is False

    task = benchmark.tasks.get(task_id=records[0]["id"])
    rubric = json.loads(records[0]["rubric"])
    assert task.spec["rubric"] == rubric and task.spec["axis"] == records[0]["axis"]
    clip = task.assets["user_turn_1.wav"]
    with default_storage.open(clip["key"]) as handle, wave.open(handle) as audio:
        assert audio.getframerate() == 16000 and audio.getnframes() > 0
    prompt = PromptVersion.objects.get(benchmark=benchmark)
    assert prompt.template == template_of(stand_in_prompt) and prompt.version == 1

    again = _import(tmp_path / "export", stand_in_prompt)
    assert again.startswith("audio-multichallenge: 8 tasks (0 new, 0 changed)")
    assert "new prompt versions: none" in again and "files stored" not in again
    assert PromptVersion.objects.filter(benchmark=benchmark).count() == 1


def test_jsonl_import_and_a_changed_prompt_is_a_new_version(tmp_path, stand_in_prompt):
    records = synthetic_records(6, seed=4)
    write_jsonl_export(records, tmp_path / "export")
    out = _import(tmp_path / "export", stand_in_prompt)
    assert "6 tasks (6 new, 0 changed)" in out and "files stored" not in out
    benchmark = Benchmark.objects.get(slug="audio-multichallenge")
    assert all(not task.assets for task in benchmark.tasks.all())

    changed = tmp_path / "prompt.txt"
    changed.write_text(
        stand_in_prompt.read_text("utf-8").replace(TEMPLATE_BEGIN, TEMPLATE_BEGIN + "Be strict. "),
        "utf-8",
    )
    out = _import(tmp_path / "export", changed)
    assert "0 new, 0 changed" in out and "new prompt versions: rubric_item" in out
    versions = PromptVersion.objects.filter(benchmark=benchmark).order_by("version")
    assert [v.version for v in versions] == [1, 2]
    assert versions[1].template == "Be strict. " + template_of(stand_in_prompt)


def test_import_needs_the_prompt_and_reports_dataset_problems(tmp_path, stand_in_prompt):
    records = synthetic_records(4, seed=5)
    write_jsonl_export(records, tmp_path / "export")
    with pytest.raises(CommandError, match="--judge-prompt"):
        call_command("import_benchmark", "audio-multichallenge", str(tmp_path / "export"))
    bad = dict(records[1], axis="SMALL_TALK")
    write_jsonl_export([records[0], bad], tmp_path / "bad")
    with pytest.raises(CommandError, match="test.jsonl line 2, field axis"):
        _import(tmp_path / "bad", stand_in_prompt)
    not_a_prompt = tmp_path / "empty.txt"
    not_a_prompt.write_text("no markers here", "utf-8")
    with pytest.raises(CommandError, match="judge prompt"):
        _import(tmp_path / "export", not_a_prompt)
    assert not Benchmark.objects.filter(slug="audio-multichallenge").exists()
