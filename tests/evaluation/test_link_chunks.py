"""Linking a submission's judged slots to judgments, a chunk of tasks at a time."""

from __future__ import annotations

import pytest

from evaluation.services import submission_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_linking_a_chunk_of_tasks_at_a_time_links_as_all_at_once(
    eager, mpbench, examples_bundle, monkeypatch
):
    """Judgments are linked a chunk of tasks at a time (only a chunk's prompts in memory): one
    task per chunk links every slot to the same judgments as all tasks in one chunk."""
    from evaluation.models import Judgment, TaskJudgment
    from evaluation.services import judging

    monkeypatch.setattr(judging, "PREPARE_CHUNK", 1)
    submission = submission_create(
        benchmark=mpbench,
        bundle_path=examples_bundle,
        system_name="Chunked",
        judge=mpbench.judges.get(slug="offline"),
        allow_partial=True,
    )
    links = TaskJudgment.objects.filter(task_result__submission=submission)
    one_by_one = sorted(links.values_list("task_result_id", "kind", "slot", "judgment_id"))
    judgments = Judgment.objects.count()
    assert sum(1 for *_, judgment in one_by_one if judgment) >= 3  # the examples were judged

    monkeypatch.setattr(judging, "PREPARE_CHUNK", 10_000)
    links.delete()
    assert judging.judgments_prepare(submission=submission, judge=submission.judge) == 0
    assert sorted(links.values_list("task_result_id", "kind", "slot", "judgment_id")) == one_by_one
    assert Judgment.objects.count() == judgments


def test_the_offline_judge_answers_only_requests_not_stored_yet(
    eager, mpbench, examples_bundle, monkeypatch
):
    """A second submission asking exactly what the first asked reuses its judgments: the
    offline judge is not asked again; a judgment put back to pending is answered again."""
    from evaluation.benchmarks import get_plugin
    from evaluation.models import Judgment, TaskJudgment

    plugin = get_plugin("mp-bench")
    asked = []
    answer = plugin.offline_output

    def counted(request, task):
        asked.append(request.kind)
        return answer(request, task)

    monkeypatch.setattr(plugin, "offline_output", counted)
    offline = mpbench.judges.get(slug="offline")

    def submit(name):
        return submission_create(
            benchmark=mpbench,
            bundle_path=examples_bundle,
            system_name=name,
            judge=offline,
            allow_partial=True,
        )

    first = submit("First")
    used = TaskJudgment.objects.filter(task_result__submission=first, judgment__isnull=False)
    distinct = used.values("judgment_id").distinct().count()
    assert len(asked) == distinct > 0  # one answer per distinct request

    asked.clear()
    second = submit("Second")
    second.refresh_from_db()
    assert second.status == "scored" and asked == []

    # A retry puts one back to pending: that one, and only it, is answered again.
    retried = Judgment.objects.get(pk=used.first().judgment_id)
    Judgment.objects.filter(pk=retried.pk).update(status=Judgment.Status.PENDING)
    from evaluation.services import judging

    assert judging.judgments_prepare(submission=second, judge=offline) == 0
    assert asked == [retried.kind]
    assert Judgment.objects.get(pk=retried.pk).status == Judgment.Status.DONE
