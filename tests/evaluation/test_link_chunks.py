"""Linking a submission's judged slots to judgments, a chunk of tasks at a time."""

from __future__ import annotations

import json
import time

import pytest

from evaluation.services import submission_create
from tests.conftest import completion, submit_offline

pytestmark = pytest.mark.django_db(transaction=True)


def test_linking_a_chunk_of_tasks_at_a_time_links_as_all_at_once(
    eager, toybench, toy_partial, monkeypatch
):
    """Judgments are linked a chunk of tasks at a time (only a chunk's prompts in memory): one
    task per chunk links every slot to the same judgments as all tasks in one chunk."""
    from evaluation.models import Judgment, TaskJudgment
    from evaluation.services import judging

    monkeypatch.setattr(judging, "PREPARE_CHUNK", 1)
    submission = submit_offline(toybench, toy_partial, "Chunked")
    links = TaskJudgment.objects.filter(task_result__submission=submission)
    one_by_one = sorted(links.values_list("task_result_id", "kind", "slot", "judgment_id"))
    judgments = Judgment.objects.count()
    assert sum(1 for *_, judgment in one_by_one if judgment) >= 3  # the answers were judged

    monkeypatch.setattr(judging, "PREPARE_CHUNK", 10_000)
    links.delete()
    assert judging.judgments_prepare(submission=submission, judge=submission.judge) == 0
    assert sorted(links.values_list("task_result_id", "kind", "slot", "judgment_id")) == one_by_one
    assert Judgment.objects.count() == judgments


def test_the_offline_judge_answers_only_requests_not_stored_yet(
    eager, toybench, toy_partial, monkeypatch
):
    """A second submission asking exactly what the first asked reuses its judgments: the
    offline judge is not asked again; a judgment put back to pending is answered again."""
    from evaluation.benchmarks import get_plugin
    from evaluation.models import Judgment, TaskJudgment

    plugin_class = type(get_plugin("toy-bench"))  # on the class: see test_first_step_after_ingest
    asked = []
    answer = plugin_class.offline_output

    def counted(self, request, task):
        asked.append(request.kind)
        return answer(self, request, task)

    monkeypatch.setattr(plugin_class, "offline_output", counted)
    offline = toybench.judges.get(slug="offline")

    first = submit_offline(toybench, toy_partial, "First")
    used = TaskJudgment.objects.filter(task_result__submission=first, judgment__isnull=False)
    distinct = used.values("judgment_id").distinct().count()
    assert len(asked) == distinct > 0  # one answer per distinct request

    asked.clear()
    second = submit_offline(toybench, toy_partial, "Second")
    second.refresh_from_db()
    assert second.status == "scored" and asked == []

    # A retry puts one back to pending: that one, and only it, is answered again.
    retried = Judgment.objects.get(pk=used.first().judgment_id)
    Judgment.objects.filter(pk=retried.pk).update(status=Judgment.Status.PENDING)
    from evaluation.services import judging

    assert judging.judgments_prepare(submission=second, judge=offline) == 0
    assert asked == [retried.kind]
    assert Judgment.objects.get(pk=retried.pk).status == Judgment.Status.DONE


def _graded(body, call):
    """The toy's judge: every answer graded 1 (a score the example plug-in parses)."""
    return 200, {}, completion(json.dumps({"score": 1.0, "why": "graded here"}))


def _official(toybench, judge_server, model: str | None = None):
    judge_server.responder = judge_server.responder or _graded
    judge = toybench.judges.get(slug="official")
    judge.base_url = judge_server.url
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    judge.price_input_per_mtok = judge.price_output_per_mtok = 0
    if model:
        judge.pk, judge.slug, judge.is_official = None, f"official-{model}", False
        judge.models_by_kind = {kind: model for kind in judge.models_by_kind}
    judge.save()
    return judge


def _submit(toybench, judge_server, bundle, name: str):
    """The answers submitted under the official judge, answered by the test's judge server."""
    return submission_create(
        benchmark=toybench,
        bundle_path=bundle,
        system_name=name,
        judge=_official(toybench, judge_server),
        allow_partial=True,
    )


def test_calls_start_while_later_tasks_are_still_being_linked(
    eager, toybench, judge_server, toy_partial, monkeypatch
):
    """Linking and calling overlap: with one task per chunk, the judge hears its first request
    before the last chunk's links are written, and the submission is scored all the same."""
    from django.utils import timezone

    from evaluation.models import TaskJudgment
    from evaluation.services import judging

    asked_at = []

    def answer(body, call):
        asked_at.append(timezone.now())
        return _graded(body, call)

    judge_server.responder = answer
    monkeypatch.setattr(judging, "PREPARE_CHUNK", 1)
    submission = _submit(toybench, judge_server, toy_partial, "Overlapped")
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    links = TaskJudgment.objects.filter(task_result__submission=submission)
    assert links.count() > submission.task_results.count()  # every task's slots are linked
    assert asked_at and min(asked_at) < max(links.values_list("linked_at", flat=True))


def test_while_linking_calls_take_each_linked_chunk_without_searching_the_submission(
    eager, toybench, judge_server, toy_partial, monkeypatch
):
    """The judgments each chunk leaves open go straight to the calls: the submission's
    claimable judgments are searched for only once linking is done. Each is asked once, and
    the submission is scored."""
    from evaluation.models import TaskJudgment
    from evaluation.services import judging

    monkeypatch.setattr(judging, "PREPARE_CHUNK", 1)
    monkeypatch.setattr(judging, "FIRST_CHUNK", 1)
    state = {"linking": False, "searches": 0, "while_linking": 0}
    link, search = judging.judgments_link, judging.claimable_ids

    def tracked(**kwargs):
        state["linking"] = True
        yield from link(**kwargs)
        state["linking"] = False

    def counted(**kwargs):
        state["searches"] += 1
        state["while_linking"] += state["linking"]
        return search(**kwargs)

    def slow(body, call):
        # Answers still under way when the last chunk is linked: the loop then claims, and
        # searches, once (a judge answering faster leaves nothing open, and no search).
        time.sleep(1.0)
        return _graded(body, call)

    monkeypatch.setattr(judging, "judgments_link", tracked)
    monkeypatch.setattr(judging, "claimable_ids", counted)
    judge_server.responder = slow
    submission = _submit(toybench, judge_server, toy_partial, "Straight")
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    assert state["searches"] >= 1 and state["while_linking"] == 0
    used = TaskJudgment.objects.filter(task_result__submission=submission, judgment__isnull=False)
    asked = judge_server.prompts()
    assert len(asked) == len(set(asked)) == used.values("judgment_id").distinct().count()


def test_one_task_from_ingest_to_scored_reads_the_upload_directory_once(
    eager, toybench, judge_server, toy_partial, monkeypatch
):
    """The first step, the spending plan and linking each open the stored upload as a zip;
    run in turn by the ingest task, they share one archive. A re-score, whose stages run on
    their own, opens it again for the plan, whose requests linking takes as they were built
    (not built again), and scores the same."""
    from evaluation.models import Score
    from evaluation.services import files, pipeline

    opened = []
    seekable = files.open_stored_seekable

    def counted(name):
        opened.append(name)
        return seekable(name)

    monkeypatch.setattr(files, "open_stored_seekable", counted)
    submission = _submit(toybench, judge_server, toy_partial, "Held")
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    assert opened == [submission.bundle.name]
    results = Score.objects.get(submission=submission).results

    opened.clear()
    pipeline.submission_rescore(submission=submission)
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    assert opened == [submission.bundle.name]  # the plan only
    assert Score.objects.get(submission=submission).results == results


def test_where_the_database_returns_no_ids_the_rows_are_read_back_and_linked_alike(
    eager, toybench, toy_partial, monkeypatch
):
    """New judgments take their ids from their inserts; a database that cannot return them
    (an SQLite before 3.35) has them read back, and the submission is linked and scored as
    where it can."""
    from django.db import connection

    from evaluation.bulk import rows_insert
    from evaluation.models import JudgeCharge, Score, TaskJudgment

    def linked(submission):
        links = TaskJudgment.objects.filter(task_result__submission=submission)
        return sorted(links.values_list("task_result__task__task_id", "kind", "slot", "judgment"))

    returned = submit_offline(toybench, toy_partial, "Returned")
    monkeypatch.setattr(type(connection.features), "can_return_rows_from_bulk_insert", False)
    charge = ("judge_id", "calls", "charged_at")
    row = (returned.judge_id, 1, returned.created_at)
    assert rows_insert(JudgeCharge, charge, [row], returning=("id",)) is None
    read = submit_offline(toybench, toy_partial, "Read back")
    read.refresh_from_db()
    assert read.status == "scored", read.error
    assert linked(read) == linked(returned) and len(linked(read)) > 0
    assert Score.objects.get(submission=read).results == (
        Score.objects.get(submission=returned).results
    )


def test_the_estimate_read_before_linking_is_what_the_linked_judgments_say(
    eager, toybench, judge_server, toy_partial
):
    """The spending estimate is made before anything is linked (judgments_plan); once linked,
    the judgments' own lengths and states (calls_to_make) give the same calls, and a judgment
    another worker is calling is left out of both."""
    from datetime import timedelta

    from django.utils import timezone

    from evaluation.models import Judgment, TaskJudgment
    from evaluation.services import judging
    from evaluation.services.spending import calls_to_make

    submission = _submit(toybench, judge_server, toy_partial, "Planned")
    other = _official(toybench, judge_server, model="another-model")  # nothing cached under it
    plan = judging.judgments_plan(submission=submission, judge=other)
    assert plan.open_count == sum(group["n"] for group in plan.groups) > 0
    assert judging.judgments_prepare(submission=submission, judge=other) == plan.open_count
    assert calls_to_make(submission=submission, judge=other) == plan.groups

    # One is being called by a live worker: neither way counts it as a call to make.
    used = TaskJudgment.objects.filter(task_result__submission=submission, judge=other)
    Judgment.objects.filter(pk=used.filter(judgment__isnull=False).first().judgment_id).update(
        status=Judgment.Status.RUNNING, lease_until=timezone.now() + timedelta(minutes=5)
    )
    again = judging.judgments_plan(submission=submission, judge=other)
    assert again.open_count == plan.open_count
    assert sum(group["n"] for group in again.groups) == plan.open_count - 1
    assert calls_to_make(submission=submission, judge=other) == again.groups


def test_a_calling_thread_that_fails_fails_the_judging(
    eager, toybench, judge_server, toy_partial, monkeypatch
):
    """A calling thread that raises (a bug outside the call's own error handling) fails the
    submission's judging with a message for people, instead of leaving its judgment waiting."""
    from evaluation.models import Judgment
    from evaluation.services import judging

    def broken(*args):
        raise RuntimeError("a bug in the calling thread")

    monkeypatch.setattr(judging, "_call", broken)
    with pytest.raises(RuntimeError, match="a bug in the calling thread"):
        _submit(toybench, judge_server, toy_partial, "Broken")
    submission = toybench.submissions.get(system__name="Broken")
    assert submission.status == "failed"
    assert submission.error.startswith("judging failed (RuntimeError)")
    # What it had claimed is free again for the next try.
    assert not Judgment.objects.filter(status=Judgment.Status.RUNNING).exists()


def test_relinking_drops_the_slots_no_rule_asks_for_any_more(
    eager, toybench, toy_partial, monkeypatch
):
    """Linking again after a rule stops asking for a kind of slot (a re-score under a changed
    rule; here the example plug-in's style grade) drops those slots and keeps every other link
    as it was."""
    from evaluation.benchmarks import get_plugin
    from evaluation.models import TaskJudgment
    from evaluation.services import judging

    submission = submit_offline(toybench, toy_partial, "Relinked")
    links = TaskJudgment.objects.filter(task_result__submission=submission)
    before = sorted(links.values_list("pk", "task_result_id", "kind", "slot", "judgment_id"))
    dropped = "style"
    assert any(slot == dropped for _, _, _, slot, _ in before)
    assert any(slot != dropped for _, _, _, slot, _ in before)

    plugin_class = type(get_plugin("toy-bench"))  # on the class: see test_first_step_after_ingest
    requests = plugin_class.judgment_requests

    def without_one_slot(self, task, **kwargs):
        return [r for r in requests(self, task, **kwargs) if r.slot != dropped]

    monkeypatch.setattr(plugin_class, "judgment_requests", without_one_slot)
    assert judging.judgments_prepare(submission=submission, judge=submission.judge) == 0
    after = sorted(links.values_list("pk", "task_result_id", "kind", "slot", "judgment_id"))
    assert after == [link for link in before if link[3] != dropped]


def test_the_judgments_linking_creates_leased_are_called_without_a_claim(
    eager, toybench, judge_server, toy_partial, monkeypatch
):
    """Judgments created leased to the worker that links them are called without a claim;
    claims take the rest (past the room a claim would give). Each is asked once, and each is
    stored answered, its lease let go."""
    from evaluation.models import Judgment, TaskJudgment
    from evaluation.services import judging

    claim, store = judging._claim, judging._judgments_store
    claimed, leased = [], []

    def counted(candidates, owner, versions):
        got = claim(candidates, owner, versions)
        claimed.extend(judgment.pk for judgment in got)
        return got

    def stored(*args):
        chunk = store(*args)
        leased.extend(judgment.pk for judgment in chunk.leased)
        return chunk

    monkeypatch.setattr(judging, "_claim", counted)
    monkeypatch.setattr(judging, "_judgments_store", stored)
    submission = _submit(toybench, judge_server, toy_partial, "Leased")
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    used = Judgment.objects.filter(
        pk__in=TaskJudgment.objects.filter(task_result__submission=submission).values("judgment_id")
    )
    assert leased and not set(leased) & set(claimed)
    assert sorted(leased + claimed) == sorted(used.values_list("pk", flat=True))
    asked = judge_server.prompts()
    assert len(asked) == len(set(asked)) == used.count()
    assert sorted(asked) == sorted(used.values_list("prompt", flat=True))
    assert set(used.values_list("status", "lease_owner", "lease_until")) == {("done", "", None)}


def test_new_judgments_are_stored_leased_up_to_the_room_given(toybench, monkeypatch):
    """Up to the room, new judgments are stored running under the worker's lease, each as a
    claim would read it back (its context as JSON); the rest are left pending for a claim, and
    judgments stored before are never leased here. Where the database cannot return the rows
    it writes, none is leased."""
    from django.db import connection
    from django.utils import timezone

    from evaluation.benchmarks import get_plugin
    from evaluation.benchmarks.base import JudgmentRequest
    from evaluation.models import Judgment
    from evaluation.selectors import current_prompts
    from evaluation.services import judging

    judge = toybench.judges.get(is_official=True)
    plugin = get_plugin(toybench.plugin)
    prompts = current_prompts(benchmark=toybench)
    kind = sorted(prompts)[0]
    identities: dict = {}

    def wanted(*names):
        found = {}
        for name in names:
            request = JudgmentRequest(kind, prompt=name, context={"pair": (1, 2)})
            found[judging._key(judge, prompts, request, identities, "")] = (request, None)
        return found

    lease = judging.Lease(owner="worker-a", room=2)
    ids: dict = {}
    chunk = judging._judgments_store(judge, plugin, prompts, wanted("a", "b", "c"), ids, lease)
    assert len(chunk) == 3 and len(chunk.leased) == 2 and len(chunk.open_ids) == 1
    for judgment in chunk.leased:
        stored = Judgment.objects.get(pk=judgment.pk)
        assert (stored.status, stored.lease_owner) == ("running", "worker-a")
        assert stored.lease_until > timezone.now()
        assert judgment.context == stored.context == {"pair": [1, 2]}
        assert judgment.prompt_version == prompts[kind] and judgment.prompt == stored.prompt
    (pending,) = chunk.open_ids
    assert Judgment.objects.get(pk=pending).status == "pending"
    assert set(ids.values()) == {pending, *(j.pk for j in chunk.leased)}

    # Stored before: open, to claim, never leased here.
    again = judging._judgments_store(
        judge, plugin, prompts, wanted("a", "b", "c"), {}, judging.Lease("worker-b", room=10)
    )
    assert again.leased == [] and sorted(again.open_ids) == sorted(ids.values())

    monkeypatch.setattr(type(connection.features), "can_return_rows_from_bulk_insert", False)
    unreturned = judging._judgments_store(
        judge, plugin, prompts, wanted("d", "e"), {}, judging.Lease("worker-c", room=10)
    )
    assert unreturned.leased == [] and len(unreturned.open_ids) == 2
    assert set(
        Judgment.objects.filter(pk__in=unreturned.open_ids).values_list("status", "lease_owner")
    ) == {("pending", "")}


def test_a_worker_waiting_on_another_looks_again_soon_then_less_often(
    eager, toybench, judge_server, toy_partial, monkeypatch
):
    """A worker with nothing left to call while another worker holds some of the submission's
    judgments looks again after 50 ms, then twice as long each time up to a second (not a
    second from the start), and returns settled as soon as it finds them answered."""
    import threading
    import time
    from datetime import timedelta

    from django.utils import timezone

    from evaluation.models import Judgment, TaskJudgment
    from evaluation.services import judging

    submission = _submit(toybench, judge_server, toy_partial, "Waiting")
    used = Judgment.objects.filter(
        pk__in=TaskJudgment.objects.filter(task_result__submission=submission).values("judgment_id")
    )
    assert used.exists()
    # Another worker, alive (its lease runs for minutes), is calling them all.
    used.update(
        status=Judgment.Status.RUNNING,
        lease_owner="other-worker",
        lease_until=timezone.now() + timedelta(minutes=5),
    )
    asked = len(judge_server.prompts())
    waits, sleep = [], time.sleep
    caller = threading.get_ident()

    def watched(seconds):
        if threading.get_ident() != caller:
            return sleep(seconds)  # a lease renewer or the heartbeat: not the wait looked at
        waits.append(seconds)
        if len(waits) == 7:
            # The other worker answers them all.
            used.update(status=Judgment.Status.DONE, lease_owner="", lease_until=None)

    monkeypatch.setattr(time, "sleep", watched)
    settled = judging.judgments_work(
        submission_id=submission.pk,
        judge_id=submission.judge_id,
        deadline=time.monotonic() + 60,
    )
    assert settled is True
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert len(judge_server.prompts()) == asked  # the held ones were not called here


def test_each_tasks_requests_are_built_once_per_judging(
    eager, toybench, judge_server, toy_partial, monkeypatch
):
    """The spending plan builds every task's judgment requests and linking takes them from it:
    one judging asks the plug-in for each task's requests once, and a re-score once more."""
    from collections import Counter

    from evaluation.benchmarks import get_plugin
    from evaluation.models import Score, TaskResult
    from evaluation.services import pipeline

    plugin_class = type(get_plugin(toybench.plugin))
    built = Counter()
    requests = plugin_class.judgment_requests

    def counted(self, task, **kwargs):
        built[task.task_id] += 1
        return requests(self, task, **kwargs)

    monkeypatch.setattr(plugin_class, "judgment_requests", counted)
    submission = _submit(toybench, judge_server, toy_partial, "Built once")
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    tasks = set(
        TaskResult.objects.filter(submission=submission).values_list("task__task_id", flat=True)
    )
    assert len(tasks) >= 3 and set(built) == tasks
    assert set(built.values()) == {1}
    results = Score.objects.get(submission=submission).results

    built.clear()
    pipeline.submission_rescore(submission=submission)
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    assert set(built) == tasks and set(built.values()) == {1}
    assert Score.objects.get(submission=submission).results == results
