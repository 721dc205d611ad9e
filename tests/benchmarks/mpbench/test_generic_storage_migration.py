"""A database at the schema before the plug-in interface, holding a scored MP-Bench submission and
a rating study, migrates to generic storage and shows the same numbers; a re-score afterwards
makes no judge call; and the migrations run backward to the old columns."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evaluation.benchmarks.mpbench import detection, scoring
from evaluation.benchmarks.mpbench.demo.synthetic import GOOD, write_bundle_tree
from evaluation.benchmarks.mpbench.importer import read_source

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [
    ("evaluation", "0002_teams_privacy_moderation"),
    ("annotation", "0001_initial"),
    ("uploads", "0001_initial"),
]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def old_schema():
    apps = migrate(BEFORE)
    yield apps
    call_command("migrate", verbosity=0)  # leave the test database as the other tests expect


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def build_old_world(apps, mpbench_dir, tmp_path, judge_url: str):
    """What the site held before: tasks as columns, detections as columns, a boolean verdict,
    one judgment per (task, kind) under the official judge, a Score, an item of a study. The
    detections and verdicts come from the benchmark's own rules run here on a synthetic run."""
    Benchmark = apps.get_model("evaluation", "Benchmark")
    Task = apps.get_model("evaluation", "Task")
    PromptVersion = apps.get_model("evaluation", "PromptVersion")
    Judge = apps.get_model("evaluation", "Judge")
    System = apps.get_model("evaluation", "System")
    Submission = apps.get_model("evaluation", "Submission")
    TaskResult = apps.get_model("evaluation", "TaskResult")
    Judgment = apps.get_model("evaluation", "Judgment")
    TaskJudgment = apps.get_model("evaluation", "TaskJudgment")
    Score = apps.get_model("evaluation", "Score")

    source = read_source(mpbench_dir)
    benchmark = Benchmark.objects.create(slug="mp-bench", name="MP-Bench", plugin="mp-bench")
    tasks = {
        t.task_id: Task.objects.create(benchmark=benchmark, task_id=t.task_id, **t.spec)
        for t in source.tasks
    }
    prompts = {}
    for prompt in source.prompts:
        prompts[prompt.kind] = PromptVersion.objects.create(
            benchmark=benchmark,
            kind=prompt.kind,
            version=1,
            template=prompt.template,
            schema=prompt.schema,
            sha256=sha(prompt.template + json.dumps(prompt.schema, sort_keys=True)),
        )
    judge = Judge.objects.create(
        benchmark=benchmark,
        slug="official",
        name="official",
        provider="openai",
        models_by_kind={
            "understanding": "gpt-5.4",
            "discussion": "gpt-5.4",
            "turnbased": "gpt-5.4",
            "speaker_name": "gpt-5.2",
        },
        base_url=judge_url,
        is_official=True,
    )
    Judge.objects.create(benchmark=benchmark, slug="offline", name="offline", provider="offline")
    system = System.objects.create(name="Old Agent", system_type="non-realtime")
    submission = Submission.objects.create(
        benchmark=benchmark, system=system, judge=judge, status="scored", is_published=True
    )

    outcomes = write_bundle_tree(tmp_path / "run", list(tasks), nest="")
    evidence = {
        task_id: detection.collect_evidence(*detection.directory_reader(tmp_path / "run" / task_id))
        for task_id in tasks
    }
    probe = detection.probe_half_duplex(evidence.values())
    Submission.objects.filter(pk=submission.pk).update(half_duplex=probe.is_half_duplex)
    params = json.dumps(
        {"max_completion_tokens": 4096, "temperature": 0.0, "top_p": 1.0},
        sort_keys=True,
        separators=(",", ":"),
    )
    outcomes_for_table = []
    for task_id, task in tasks.items():
        found = detection.detect(evidence[task_id], half_duplex=probe.is_half_duplex)
        row = TaskResult.objects.create(
            submission=submission,
            task=task,
            files={},
            detected=True,
            spoke=found.spoke,
            spoke_via=found.spoke_via or "",
            post_text=found.post_text,
            full_text=found.full_text,
            latency=found.latency,
            input_end=found.input_end,
            turn_taking_correct=found.spoke == task.should_speak,
        )
        spec = scoring.TaskSpec(
            task_id=task_id,
            family=task.family,
            should_speak=task.should_speak,
            metatranscript=task.metatranscript,
            question_text=task.question_text,
            answer_text=task.answer_text,
            is_speaker_name=task.is_speaker_name,
        )
        verdicts = {}
        for kind in scoring.kinds_for(spec):
            response = scoring.response_for(
                kind, full_text=found.full_text, post_text=found.post_text
            )
            if scoring.skips_judge(kind, response):
                TaskJudgment.objects.create(task_result=row, judge=judge, kind=kind)
                verdicts[kind] = False
                continue
            prompt = scoring.build_prompt(prompts[kind].template, kind, spec, response)
            model = judge.models_by_kind[kind]
            identity = f"openai@{judge_url}|{model}|{params}|{kind}@v1:{prompts[kind].sha256[:12]}"
            verdict = GOOD in response
            judgment, _ = Judgment.objects.get_or_create(
                judge_identity=identity,
                prompt_sha256=sha(prompt),
                defaults={
                    "prompt": prompt,
                    "kind": kind,
                    "provider": "openai",
                    "model": model,
                    "prompt_version": prompts[kind],
                    "status": "done",
                    "raw_output": json.dumps({scoring.VERDICT_KEYS[kind]: verdict}),
                    "verdict": verdict,
                },
            )
            TaskJudgment.objects.create(task_result=row, judge=judge, kind=kind, judgment=judgment)
            verdicts[kind] = judgment.verdict
        outcomes_for_table.append(scoring.TaskOutcome(spec, found.spoke, found.latency, verdicts))
    table = scoring.aggregate(outcomes_for_table)
    Score.objects.create(submission=submission, judge=judge, results=table)
    return submission.pk, table, outcomes


def test_scored_data_migrates_keeps_its_numbers_rescores_for_free_and_goes_back(
    old_schema, mpbench_dir, tmp_path, judge_server, eager
):
    submission_pk, table, outcomes = build_old_world(
        old_schema, mpbench_dir, tmp_path, judge_server.url
    )
    call_command("migrate", verbosity=0)

    from evaluation.models import Judgment, Score, Submission, TaskJudgment, TaskResult
    from evaluation.services import submission_aggregate, submission_rescore

    submission = Submission.objects.get(pk=submission_pk)
    assert submission.facts["half_duplex"] is False and submission.row_group == "non-realtime"
    row = TaskResult.objects.filter(submission=submission).select_related("task").first()
    assert set(row.task.spec) == {
        "family",
        "should_speak",
        "metatranscript",
        "question_text",
        "answer_text",
        "is_speaker_name",
    }
    assert "spoke" in row.detection and "post_text" in row.detection
    assert TaskJudgment.objects.filter(judgment__isnull=True, fixed__verdict=False).exists()
    # The same table, recomputed from the migrated rows.
    assert submission_aggregate(submission=submission, judge=submission.judge).results == table
    assert Score.objects.get(submission=submission).results == table
    # A re-score: every request is byte-identical to a stored one, so no call at all.
    stored = Judgment.objects.count()
    submission_rescore(submission=submission)
    submission.refresh_from_db()
    assert submission.status == "scored"
    assert judge_server.requests == []
    assert Judgment.objects.count() == stored
    assert Score.objects.get(submission=submission).results == table

    # And backward, to the old columns, with what the site stored since (one test: the old
    # world and the forward migration are what it costs).
    apps = migrate(BEFORE)
    OldTaskResult = apps.get_model("evaluation", "TaskResult")
    OldSubmission = apps.get_model("evaluation", "Submission")
    row = OldTaskResult.objects.filter(submission_id=submission_pk).exclude(post_text="").first()
    assert row is not None and row.spoke is True and row.task.family
    assert OldSubmission.objects.get(pk=submission_pk).half_duplex is False
    assert OldSubmission.objects.get(pk=submission_pk).system.system_type == "non-realtime"
