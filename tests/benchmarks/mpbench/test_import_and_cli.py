"""import_benchmark, submit, rescore and retry_judgments as a user runs them on MP-Bench: its
real checkout's counts and judge models, its reader's and its bundle's messages, its examples'
numbers. The same commands on the example plug-in: tests/evaluation/test_import_and_cli.py."""

import json
import shutil

import pytest
from django.core.management import CommandError, call_command

from evaluation.models import Benchmark, Judge, PromptVersion, Submission, Task
from tests.conftest import copy_examples, zip_tree
from tests.evaluation.test_import_and_cli import rescore_and_retry

pytestmark = pytest.mark.django_db(transaction=True)


def test_import_is_idempotent_and_versions_changed_prompts(mpbench_dir, tmp_path, capsys):
    call_command("import_benchmark", "mp-bench", str(mpbench_dir))
    assert "927 tasks (927 new, 0 changed)" in capsys.readouterr().out
    call_command("import_benchmark", "mp-bench", str(mpbench_dir))
    assert "927 tasks (0 new, 0 changed); new prompt versions: none" in capsys.readouterr().out
    benchmark = Benchmark.objects.get(slug="mp-bench")
    assert Task.objects.count() == 927 and PromptVersion.objects.count() == 4
    counts = {
        f: benchmark.tasks.filter(spec__family=f).count()
        for f in ("understanding", "discussion", "turnbased")
    }
    # The benchmark's README: 543 understanding, 128 discussion behaviour, 256 turn-based.
    assert counts == {"understanding": 543, "discussion": 128, "turnbased": 256}
    official = Judge.objects.get(benchmark=benchmark, is_official=True)
    assert official.models_by_kind == {
        "understanding": "gpt-5.4",
        "discussion": "gpt-5.4",
        "turnbased": "gpt-5.4",
        "speaker_name": "gpt-5.2",
    }

    # A changed prompt, in the official layout (benchmark/tasks.jsonl): a new version, old kept.
    changed = tmp_path / "mpbench"
    (changed / "benchmark").mkdir(parents=True)
    shutil.copy(mpbench_dir / "tasks.jsonl", changed / "benchmark" / "tasks.jsonl")
    shutil.copytree(mpbench_dir / "prompts", changed / "prompts")
    (changed / "prompts" / "discussion.txt").chmod(0o644)
    (changed / "prompts" / "discussion.txt").write_text(
        "New {metatranscript} / {llm_predicted_answer}"
    )
    call_command("import_benchmark", "mp-bench", str(changed))
    assert "new prompt versions: discussion" in capsys.readouterr().out
    versions = list(
        PromptVersion.objects.filter(kind="discussion")
        .order_by("version")
        .values_list("version", flat=True)
    )
    assert versions == [1, 2]
    original = PromptVersion.objects.get(kind="discussion", version=1)
    assert original.template == (mpbench_dir / "prompts" / "discussion.txt").read_text()


def test_import_reports_a_bad_checkout(tmp_path):
    (tmp_path / "tasks.jsonl").write_text('{"task_dir": "scenario_x"}\n')
    with pytest.raises(
        CommandError, match="tasks.jsonl line 1: missing family, should_speak, metatranscript"
    ):
        call_command("import_benchmark", "mp-bench", str(tmp_path))
    with pytest.raises(CommandError, match="no such file or directory"):
        call_command("import_benchmark", "mp-bench", str(tmp_path / "nope"))


def test_submit_json_wait_rescore_and_retry(eager, mpbench, mpbench_dir, tmp_path, capsys):
    run = copy_examples(mpbench_dir, tmp_path / "run")
    call_command(
        "submit",
        str(run),
        "--benchmark",
        "mp-bench",
        "--system",
        "Examples",
        "--judge",
        "offline",
        "--allow-partial",
        "--wait",
        "--json",
        "--system-type",
        "non-realtime",
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "scored" and summary["incomplete"] is True
    assert summary["results"]["discussion"]["latency_s"] == 4.8
    assert summary["failed_judgments"] == 0
    submission = Submission.objects.get(pk=summary["submission"])
    assert submission.row_group == "non-realtime"

    rescore_and_retry(submission, capsys)


def test_submit_rejected_bundle_exits_non_zero_with_the_problems(mpbench, mpbench_dir, tmp_path):
    copy_examples(mpbench_dir, tmp_path / "run")
    bundle = zip_tree(tmp_path / "run", tmp_path / "examples.zip")
    with pytest.raises(CommandError, match="unknown benchmark 'nope'; import it first"):
        call_command("submit", str(bundle), "--benchmark", "nope", "--system", "X")

    with pytest.raises(CommandError) as caught:
        call_command("submit", str(bundle), "--benchmark", "mp-bench", "--system", "X")
    assert "bundle rejected: 924 problem(s)" in str(caught.value)
    assert "task folder missing; to score the other tasks anyway" in str(caught.value)
    assert "--allow-partial on the command line" in str(caught.value)
    assert Submission.objects.filter(is_reported=False).count() == 0


def test_submit_json_on_rejection(mpbench, tmp_path, capsys):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(CommandError):
        call_command("submit", str(bad), "--benchmark", "mp-bench", "--system", "X", "--json")
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"] == "rejected" and printed["ok"] is False
    assert "not a readable zip archive" in printed["problems"][0]["message"]


def test_submit_unknown_judge(mpbench, tmp_path):
    with pytest.raises(
        CommandError,
        match="has no judge 'gpt-9'; known: official, offline|known: offline, official",
    ):
        call_command(
            "submit", str(tmp_path), "--benchmark", "mp-bench", "--system", "X", "--judge", "gpt-9"
        )
