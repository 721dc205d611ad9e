"""The factories write the rows the pipeline writes: a submission the pipeline scored (the example
plug-in's first demo run, offline judge) and one the factories build with the same numbers and
judgments have the same fields set, the same states, and the same score beside its numbers
(scorer identity, slices, record, changelog)."""

from __future__ import annotations

import pytest
from django.db.models import Model

from evaluation.models import (
    Judgment,
    Score,
    ScoreRecord,
    ScorerVersion,
    Submission,
    TaskJudgment,
    TaskResult,
)
from tests import factories
from tests.conftest import demo_runs_scored, every_plugin_board

pytestmark = pytest.mark.django_db

# Set by the pipeline from the upload, which factory rows do not have (tests/factories.py).
UPLOAD_FIELDS = {"bundle", "bundle_sha256", "bundle_size", "stored_bytes", "manifest", "options"}
# Kept by the pipeline while a worker holds a row, or set at its own time.
MOMENTS = {"created_at", "heartbeat_at", "requeued_at", "finished_at", "published_at"}


def set_fields(row: Model, skip: set[str] = frozenset()) -> set[str]:
    """The names of a row's fields that hold something other than their default."""
    found = set()
    for field in row._meta.concrete_fields:
        if field.primary_key or field.name in skip:
            continue
        value = getattr(row, field.attname)
        default = field.get_default()
        if value not in (None, "", {}, []) and value != default:
            found.add(field.name)
    return found


@pytest.fixture
def pair(settings, tmp_path):
    benchmark, plugin = every_plugin_board("toy-bench", settings, tmp_path, name="shape")
    (piped,) = demo_runs_scored(benchmark, plugin, tmp_path, count=1)
    assert piped.status == Submission.Status.SCORED
    score = piped.scores.get(judge=piped.judge)
    rows = TaskResult.objects.filter(submission=piped).select_related("task")
    links = TaskJudgment.objects.filter(task_result__submission=piped).select_related(
        "task_result__task", "judgment"
    )
    built = factories.scored_submission(
        benchmark,
        system="Built",
        results=score.results,
        tasks=[row.task.task_id for row in rows],
        contributions=score.contributions,
        row_group=piped.row_group,
        facts=piped.facts,
        judgments=[
            {
                "task_id": link.task_result.task.task_id,
                "kind": link.kind,
                "slot": link.slot,
                "label": link.label,
                "fixed": link.fixed if link.judgment is None else None,
                "verdict": link.judgment.verdict if link.judgment else None,
                "output": link.judgment.output if link.judgment else None,
                "reasoning": link.judgment.reasoning if link.judgment else "",
            }
            for link in links
        ],
    )
    return piped, Submission.objects.get(pk=built.pk)


def test_a_built_submission_has_the_fields_a_scored_one_has(pair):
    piped, built = pair
    assert piped.tasks_ingested > 0 and not piped.is_partial
    skip = UPLOAD_FIELDS | {"system"}
    assert set_fields(built, skip) == set_fields(piped, skip)
    for name in ("status", "steps_done", "tasks_ingested", "is_partial", "missing_task_count"):
        assert getattr(built, name) == getattr(piped, name), name
    assert built.finished_at is not None and built.published_at is not None


def test_its_task_results_and_judgments_look_like_the_pipelines(pair):
    piped, built = pair

    def rows(submission):
        return list(TaskResult.objects.filter(submission=submission).order_by("task__task_id"))

    skip = {"submission", "files", "data", "detection"}  # what an upload holds
    assert [(r.task_id, r.detected, r.steps_done) for r in rows(built)] == [
        (r.task_id, r.detected, r.steps_done) for r in rows(piped)
    ]
    assert {frozenset(set_fields(r, skip)) for r in rows(built)} == {
        frozenset(set_fields(r, skip)) for r in rows(piped)
    }

    def links(submission):
        return TaskJudgment.objects.filter(task_result__submission=submission).order_by(
            "task_result__task__task_id", "kind", "slot"
        )

    built_links, piped_links = list(links(built)), list(links(piped))
    assert len(built_links) == len(piped_links) > 0
    for made, scored in zip(built_links, piped_links, strict=True):
        assert set_fields(made, {"task_result", "judgment"}) == set_fields(
            scored, {"task_result", "judgment"}
        )
        assert (made.judgment is None) == (scored.judgment is None)
        if made.judgment is not None:
            # The judge identity differs only by the prompt, which the factory invents.
            assert made.judgment.judge_identity == scored.judgment.judge_identity
            assert set_fields(made.judgment, {"latency_ms", "input_tokens", "output_tokens"}) == (
                set_fields(scored.judgment, {"latency_ms", "input_tokens", "output_tokens"})
            )
            assert made.judgment.status == scored.judgment.status == Judgment.Status.DONE


def test_its_score_record_and_changelog_match_the_pipelines(pair):
    piped, built = pair
    made, scored = (Score.objects.get(submission=s, judge=s.judge) for s in (built, piped))
    assert set_fields(made, {"submission"}) == set_fields(scored, {"submission"})
    assert made.scorer == scored.scorer
    assert made.slices == scored.slices and made.slices is not None
    assert (made.judgments_total, made.judgments_failed) == (
        scored.judgments_total,
        scored.judgments_failed,
    )
    (made_record,) = ScoreRecord.objects.filter(submission=built)
    (scored_record,) = ScoreRecord.objects.filter(submission=piped)
    for name in ("results", "judge_config", "prompt_versions", "processing", "judgments_total"):
        assert getattr(made_record, name) == getattr(scored_record, name), name
    # One changelog entry for the judge: the factory's score has the pipeline's identity.
    assert ScorerVersion.objects.filter(judge=piped.judge).count() == 1


def test_states_are_the_ones_the_services_set(db, settings):
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    board = factories.benchmark("toy-bench", tasks=["q1", "q2"])
    draft = factories.scored_submission(board, system="Draft", results={}, published=False)
    shown = factories.scored_submission(board, system="Shown", results={}, anonymous=True)
    hidden = factories.scored_submission(board, system="Gone", results={}, hidden=True)
    flagged = factories.scored_submission(board, system="Odd", results={}, flag_reason="why")
    partial = factories.scored_submission(board, system="Half", results={}, tasks=["q2"])
    assert (draft.is_published, draft.published_at, draft.is_public) == (False, None, False)
    assert shown.is_published and shown.published_at and shown.is_anonymous and shown.is_public
    assert hidden.is_published and not hidden.is_public
    assert flagged.is_flagged and flagged.flag_reason == "why" and flagged.is_public
    assert (partial.is_partial, partial.missing_task_count, partial.tasks_ingested) == (True, 1, 1)
    # A score alone, for a board: every task answered, no task results written.
    bare = factories.scored_submission(board, system="Bare", results={}, task_rows=False)
    assert (bare.is_partial, bare.tasks_ingested, bare.task_results.count()) == (False, 2, 0)
    assert partial.task_results.count() == 1
    # A second judge's score beside the first: its own record and changelog entry.
    second = factories.judge(board, "gpt", models_by_kind={"grade": "m"})
    factories.score_add(shown, judge=second, results={"en": {}})
    assert sorted(shown.scores.values_list("judge__slug", flat=True)) == ["gpt", "offline"]
    assert ScoreRecord.objects.filter(submission=shown, judge=second).count() == 1
    assert ScorerVersion.objects.filter(judge=second).count() == 1
