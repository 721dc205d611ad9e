"""import_benchmark, submit, rescore and retry_judgments as a user runs them, on the example
plug-in (tests/toyplugin): six questions, three in English (q1-q3) and three in German, each
answer graded twice. Expected numbers are worked out here from the toy's rules. MP-Bench's own
checkout and messages: tests/benchmarks/mpbench/test_import_and_cli.py."""

import json

import pytest
from django.core.management import CommandError, call_command

from evaluation.models import Benchmark, PromptVersion, Submission, Task
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def registered(settings):
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]


def test_import_is_idempotent_and_versions_changed_prompts(registered, tmp_path, capsys):
    release = tmp_path / "release"
    toy.write_release(release)
    call_command("import_benchmark", "toy-bench", str(release))
    assert "6 tasks (6 new, 0 changed)" in capsys.readouterr().out
    call_command("import_benchmark", "toy-bench", str(release))
    assert "6 tasks (0 new, 0 changed); new prompt versions: none" in capsys.readouterr().out
    benchmark = Benchmark.objects.get(slug="toy-bench")
    assert Task.objects.count() == 6 and PromptVersion.objects.count() == 1
    languages = {lang: benchmark.tasks.filter(spec__language=lang).count() for lang in ("en", "de")}
    assert languages == {"en": 3, "de": 3}

    # A changed prompt: a new version, the old one kept.
    original = (release / "grade.txt").read_text()
    (release / "grade.txt").write_text("Grade the {aspect}, strictly.\n{question}\n{answer}\n")
    call_command("import_benchmark", "toy-bench", str(release))
    assert "new prompt versions: grade" in capsys.readouterr().out
    versions = list(
        PromptVersion.objects.filter(kind="grade")
        .order_by("version")
        .values_list("version", flat=True)
    )
    assert versions == [1, 2]
    assert PromptVersion.objects.get(kind="grade", version=1).template == original


def test_submit_json_wait_rescore_and_retry(eager, toybench, toy_partial, capsys):
    call_command(
        "submit",
        str(toy_partial),
        "--benchmark",
        "toy-bench",
        "--system",
        "Partial",
        "--judge",
        "offline",
        "--allow-partial",
        "--wait",
        "--json",
        "--system-type",
        "small",
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "scored" and summary["incomplete"] is True
    # The offline judge grades 1 where the right sum is in the answer, else 0, both slots
    # alike: q1 and q2 are right (1.0 each), q3 is "Maybe 74" (0.0); German is missing.
    metrics = {(m["split"], m["metric"]): m for m in summary["metrics"]}
    assert metrics[("en", "quality")]["value"] == pytest.approx(100 * 2 / 3, abs=0.005)
    assert metrics[("de", "answered")]["count"] == 0 and metrics[("de", "answered")]["total"] == 3
    assert summary["failed_judgments"] == 0
    submission = Submission.objects.get(pk=summary["submission"])
    assert submission.row_group == "small"

    rescore_and_retry(submission, capsys)


def test_submit_rejected_bundle_exits_non_zero_with_the_problems(toybench, toy_partial):
    with pytest.raises(CommandError, match="unknown benchmark 'nope'; import it first"):
        call_command("submit", str(toy_partial), "--benchmark", "nope", "--system", "X")

    with pytest.raises(CommandError) as caught:
        call_command("submit", str(toy_partial), "--benchmark", "toy-bench", "--system", "X")
    assert "bundle rejected: 1 problem(s)" in str(caught.value)
    assert "missing answers for q4, q5, q6" in str(caught.value)
    assert Submission.objects.filter(is_reported=False).count() == 0


def test_submit_json_on_rejection(toybench, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not JSON at all\n")
    with pytest.raises(CommandError):
        call_command("submit", str(bad), "--benchmark", "toy-bench", "--system", "X", "--json")
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"] == "rejected" and printed["ok"] is False
    assert printed["problems"][0]["message"] == "line 1: not JSON"


def test_submit_unknown_judge(toybench, tmp_path):
    with pytest.raises(
        CommandError,
        match="has no judge 'gpt-9'; known: official, offline|known: offline, official",
    ):
        call_command(
            "submit", str(tmp_path), "--benchmark", "toy-bench", "--system", "X", "--judge", "gpt-9"
        )


def rescore_and_retry(submission, capsys) -> None:
    """rescore (by submission and by benchmark) and retry_judgments on a scored submission with
    no failed judgment, each saying what it queued."""
    call_command("rescore", "--submission", str(submission.pk))
    assert "queued 1 submission(s)" in capsys.readouterr().out
    call_command("rescore", "--benchmark", submission.benchmark.slug)
    assert "queued 1 submission(s)" in capsys.readouterr().out
    call_command("retry_judgments", str(submission.pk))
    assert (
        f"submission {submission.pk}: 0 failed judgment(s) queued again" in capsys.readouterr().out
    )
