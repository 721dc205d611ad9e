"""Rows of scored submissions written directly, for tests of what pages, the API, permissions and
exports show: a team and its people, a benchmark of any registered plug-in, and a submission
scored with numbers the test chooses, in the state it chooses (published, a team's draft,
anonymous, hidden by staff, flagged; a withdrawn submission is a draft, as the services leave
it). Only the pipeline's own tests run the pipeline.

The rows have the shapes the scoring stage writes (tests/test_factories.py compares them with a
submission the pipeline scored): the submission SCORED with its steps and tasks counted, one
task result per answered task, the score with its scorer identity, its record and the
benchmark's scorer changelog. What they lack is an upload: a task's drill-down, its audio and
a re-score read the upload, so tests of those submit one."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Mapping

from django.contrib.auth.models import User
from django.utils import timezone

from evaluation.benchmarks import get_plugin
from evaluation.board_state import board_changed
from evaluation.models import (
    Benchmark,
    Judge,
    Judgment,
    Membership,
    PromptVersion,
    Score,
    Submission,
    System,
    Task,
    TaskJudgment,
    TaskResult,
    Team,
)
from evaluation.scorer import current_scorer, score_scorer, scorer_log
from evaluation.services.benchmarks import OFFLINE_JUDGE_SLUG
from evaluation.services.judging import judge_identity, judge_model
from evaluation.services.pipeline import contributions_slices
from evaluation.services.records import score_record_add
from evaluation.slices import contributions_json

_serial = itertools.count(1)


# --- People ----------------------------------------------------------------------------------


def user(username: str, *, staff: bool = False, password: str | None = None) -> User:
    return User.objects.create_user(username, password=password, is_staff=staff)


def team(
    name: str,
    *,
    slug: str = "",
    owner: User | None = None,
    members: Iterable[User] = (),
) -> Team:
    """A team, its owner (if given) and its other members."""
    made = Team.objects.create(name=name, slug=slug or name.lower().replace(" ", "-"))
    if owner is not None:
        Membership.objects.create(team=made, user=owner, role=Membership.Role.OWNER)
    for member in members:
        Membership.objects.create(team=made, user=member, role=Membership.Role.MEMBER)
    return made


def team_join(team: Team, user: User, *, role: str = Membership.Role.MEMBER) -> Membership:
    return Membership.objects.create(team=team, user=user, role=role)


# --- Benchmarks --------------------------------------------------------------------------------


def benchmark(
    plugin: str,
    *,
    slug: str = "",
    name: str = "",
    tasks: Mapping[str, Mapping] | Iterable[str] = (),
    is_demo: bool = False,
) -> Benchmark:
    """A benchmark of a registered plug-in (registered by the caller when it is the example
    plug-in), its offline judge as an import makes it, and ``tasks``: task id -> spec (or task
    ids, each with an empty spec). No release is read: the tasks are what the test says."""
    made = Benchmark.objects.create(
        slug=slug or f"{plugin}-{next(_serial)}",
        name=name or plugin,
        plugin=plugin,
        is_demo=is_demo,
    )
    get_plugin(plugin)  # refuses a plug-in that is not registered
    Judge.objects.create(
        benchmark=made,
        slug=OFFLINE_JUDGE_SLUG,
        name="Offline heuristic judge (not an LLM)",
        provider=Judge.Provider.OFFLINE,
        models_by_kind={},
    )
    specs = tasks if isinstance(tasks, Mapping) else {task_id: {} for task_id in tasks}
    Task.objects.bulk_create(
        Task(benchmark=made, task_id=task_id, spec=dict(spec)) for task_id, spec in specs.items()
    )
    return made


def judge(
    benchmark: Benchmark,
    slug: str,
    *,
    provider: str = Judge.Provider.OPENAI,
    official: bool = False,
    models_by_kind: Mapping[str, str] | None = None,
    **fields,
) -> Judge:
    return Judge.objects.create(
        benchmark=benchmark,
        slug=slug,
        name=fields.pop("name", slug),
        provider=provider,
        is_official=official,
        models_by_kind=dict(models_by_kind or {}),
        **fields,
    )


def offline_judge(benchmark: Benchmark) -> Judge:
    return benchmark.judges.get(slug=OFFLINE_JUDGE_SLUG)


# --- Scored submissions ------------------------------------------------------------------------


def scored_submission(
    benchmark: Benchmark,
    *,
    system: str | System,
    results: Mapping,
    judge: Judge | None = None,
    team: Team | None = None,
    submitted_by: User | None = None,
    published: bool = True,
    anonymous: bool = False,
    hidden: bool = False,
    flag_reason: str = "",
    row_group: str = "",
    tasks: Iterable[str] | None = None,
    task_rows: bool = True,
    contributions: Mapping | None = None,
    held_out_results: Mapping | None = None,
    judgments: Iterable[Mapping] = (),
    judgments_failed: int = 0,
    system_fields: Mapping | None = None,
    **submission_fields,
) -> Submission:
    """A submission scored under ``judge`` (the benchmark's offline judge by default) with
    ``results`` as its score's numbers, in the plug-in's results structure. ``tasks``: the task
    ids it answered (every task of the benchmark by default); the others count as missing, as
    for an upload accepted with tasks missing. ``task_rows=False`` leaves out the task results
    (one per answered task) for tests that read only the score, as a board, its exports and
    charts do: MP-Bench's 927 take a fifth of a second a submission. ``contributions``: the
    score's per-task contributions (evaluation/slices.py), from which its slices are made as
    the pipeline makes them. ``judgments``: keyword arguments of judgment_add, one judgment
    each, stored before the score that counts them. ``anonymous``, ``hidden`` (by staff),
    ``flag_reason`` (flagged by staff) and ``published`` set its state;
    ``submission_fields`` any other field of the submission."""
    judge = judge or offline_judge(benchmark)
    plugin = get_plugin(benchmark.plugin)
    if not isinstance(system, System):
        system, _ = System.objects.get_or_create(
            name=system, team=team, defaults=dict(system_fields or {})
        )
    every = dict(benchmark.tasks.values_list("task_id", "pk"))
    answered = sorted(every) if tasks is None else list(tasks)
    unknown = set(answered) - set(every)
    assert not unknown, f"tasks not on {benchmark.slug}: {sorted(unknown)}"
    now = timezone.now()
    submission = Submission.objects.create(
        benchmark=benchmark,
        system=system,
        judge=judge,
        team=team,
        submitted_by=submitted_by,
        row_group=row_group,
        status=Submission.Status.SCORED,
        is_published=published,
        published_at=now if published else None,
        is_anonymous=anonymous,
        is_hidden=hidden,
        is_flagged=bool(flag_reason),
        flag_reason=flag_reason,
        is_partial=len(answered) < len(every),
        missing_task_count=len(every) - len(answered),
        steps_done=len(plugin.steps),
        tasks_ingested=len(answered),
        heartbeat_at=now,
        finished_at=now,
        **submission_fields,
    )
    steps = len(plugin.steps)
    TaskResult.objects.bulk_create(
        TaskResult(
            submission=submission,
            task_id=every[task_id],
            detected=True,
            steps_done=steps,
        )
        for task_id in (answered if task_rows else ())
    )
    for found in judgments:
        judgment_add(submission, judge=judge, **found)
    score_add(
        submission,
        judge=judge,
        results=results,
        contributions=contributions,
        held_out_results=held_out_results,
        judgments_failed=judgments_failed,
    )
    return submission


def score_add(
    submission: Submission,
    *,
    judge: Judge,
    results: Mapping,
    contributions: Mapping | None = None,
    held_out_results: Mapping | None = None,
    judgments_failed: int = 0,
) -> Score:
    """The submission's score under ``judge`` (a second judge's re-score, say), with what the
    scoring stage stores beside the numbers: the scorer identity, the record of the numbers
    and the benchmark's scorer changelog. Judgments already linked (judgment_add) are counted."""
    benchmark = submission.benchmark
    plugin = get_plugin(benchmark.plugin)
    links = TaskJudgment.objects.filter(
        task_result__submission=submission, judge=judge, judgment__isnull=False
    )
    scorer_log(
        benchmark=benchmark, judge=judge, identity=current_scorer(benchmark=benchmark, judge=judge)
    )
    specs = benchmark.tasks.values_list("task_id", "spec")
    score, _ = Score.objects.update_or_create(
        submission=submission,
        judge=judge,
        defaults={
            "results": dict(results),
            "held_out_results": held_out_results,
            "contributions": contributions,
            "slices": contributions_slices(plugin, contributions, specs),
            "scorer": score_scorer(submission=submission, judge=judge),
            "judgments_total": links.count(),
            "judgments_failed": judgments_failed
            + links.filter(judgment__status=Judgment.Status.FAILED).count(),
        },
    )
    score_record_add(score=score)
    board_changed(benchmark_id=benchmark.pk)
    return score


def judgment_add(
    submission: Submission,
    task_id: str,
    *,
    kind: str,
    verdict: bool | None,
    slot: str = "",
    judge: Judge | None = None,
    output: Mapping | None = None,
    reasoning: str = "",
    status: str = Judgment.Status.DONE,
    prompt: str = "",
    fixed: Mapping | None = None,
    label: str = "",
) -> TaskJudgment:
    """One judge call deciding ``kind``/``slot`` of a task of the submission, as the judging
    stage stores it: the judgment (keyed by its judge identity and prompt hash) and its link;
    with ``fixed``, the outcome decided without a call (an empty answer, say), and no
    judgment. Add judgments before the score (score_add counts them)."""
    judge = judge or submission.judge
    row = TaskResult.objects.get(submission=submission, task__task_id=task_id)
    if fixed is not None:
        return TaskJudgment.objects.create(
            task_result=row,
            judge=judge,
            kind=kind,
            slot=slot,
            label=label,
            fixed=dict(fixed),
            linked_at=timezone.now(),
        )
    template, _ = PromptVersion.objects.get_or_create(
        benchmark=submission.benchmark,
        kind=kind,
        version=1,
        defaults={
            "template": f"{kind} prompt",
            "sha256": hashlib.sha256(kind.encode()).hexdigest(),
        },
    )
    answer = dict(output) if output is not None else {"verdict": verdict}
    text = prompt or f"{kind} {slot} of {task_id} for submission {submission.pk}"
    found = Judgment.objects.create(
        judge_identity=judge_identity(judge=judge, kind=kind, prompt=template),
        prompt_sha256=hashlib.sha256(text.encode()).hexdigest(),
        prompt=text,
        kind=kind,
        provider=judge.provider,
        model=judge_model(judge, kind),
        prompt_version=template,
        status=status,
        attempts=1,
        raw_output=json.dumps(answer),
        output=answer,
        verdict=verdict if status == Judgment.Status.DONE else None,
        reasoning=reasoning,
        completed_at=timezone.now(),
    )
    return TaskJudgment.objects.create(
        task_result=row,
        judge=judge,
        kind=kind,
        slot=slot,
        label=label,
        judgment=found,
        linked_at=timezone.now(),
    )


# --- Results -----------------------------------------------------------------------------------


def rate(count: int, total: int, *, decimals: int = 2) -> dict:
    """A rate metric's node: count of total, in percent."""
    return {"count": count, "total": total, "pct": round(100 * count / total, decimals)}


def plugin_results(
    plugin: str,
    values: Mapping[str, float | tuple[int, int] | Mapping],
    *,
    splits: Iterable[str] | None = None,
) -> dict:
    """A score's results in the plug-in's structure, with the metrics' values the test chooses
    (metric key -> value), under each of ``splits`` (every split the plug-in declares by
    default). A rate's value is (count, total), or its percentage alone; a mean's its value in
    the metric's unit; a mapping is the metric's node as it is."""
    declared = get_plugin(plugin)
    metrics = {metric.key: metric for metric in declared.metrics}
    unknown = set(values) - set(metrics)
    assert not unknown, f"{plugin} declares no metric {sorted(unknown)}"
    tree: dict = {}
    for key, value in values.items():
        metric = metrics[key]
        if isinstance(value, Mapping):
            node = dict(value)
        elif metric.type == "rate":
            node = rate(*value, decimals=2) if isinstance(value, tuple) else {"pct": value}
        elif metric.type == "mean":
            node = {metric.path[-1]: value}
        else:
            node = value
        *parents, leaf = key.split(".")
        place = tree
        for part in parents:
            place = place.setdefault(part, {})
        place[leaf] = node
    keys = [split.key for split in declared.splits] if splits is None else list(splits)
    if not declared.splits:
        return tree
    return {split: json.loads(json.dumps(tree)) for split in keys}


def every_metric(plugin: str, value: float) -> dict[str, float | tuple[int, int]]:
    """Every metric the plug-in declares at ``value`` (a rate as ``value`` of 100), for
    plugin_results."""
    shaped = {"rate": lambda: (round(value), 100), "count": lambda: round(value)}
    return {
        metric.key: shaped.get(metric.type, lambda: value)()
        for metric in get_plugin(plugin).metrics
    }


def contributions(per_task: Mapping[str, Mapping[str, tuple | list]]) -> dict | None:
    """A score's per-task contributions as the pipeline stores them (evaluation/slices.py):
    task id -> {metric key: (numerator, denominator), or a list of those, one per unit}."""
    return contributions_json((task_id, dict(found), True) for task_id, found in per_task.items())


def every_task_contributions(benchmark: Benchmark, passed: Callable[[int], bool]) -> dict | None:
    """Each task of the benchmark (in task id order) adding one unit to every rate and mean
    metric its plug-in declares: 1 of 1 where ``passed(task's place)``, else 0 of 1."""
    keys = [m.key for m in get_plugin(benchmark.plugin).metrics if m.type in ("rate", "mean")]
    task_ids = benchmark.tasks.order_by("task_id").values_list("task_id", flat=True)
    return contributions(
        {
            task_id: {key: (int(passed(place)), 1) for key in keys}
            for place, task_id in enumerate(task_ids)
        }
    )
