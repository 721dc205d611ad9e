"""A rating study on the demo benchmark for `make demo`: sampled discussion items whose clips
really play, a few invite links, and ratings from simulated raters so the dashboard has numbers.
"""

from __future__ import annotations

import random
import sys

from django.db import transaction

from evaluation import services as pipeline
from evaluation.models import Benchmark, Submission, TaskJudgment

from . import assignment
from .forms import DEFAULT_GUIDELINE
from .models import Item, Study
from .services import StudyPlan, check_item_add, rater_invite, rater_update, study_create
from .services import study_set_status as set_status

DEMO_BENCHMARK = "mp-bench-demo"
DEMO_STUDY = "demo-discussion"
PER_STRATUM = 4
# (name, accuracy against the simulated truth, batches rated, excluded from the figures)
SIMULATED = (
    ("Simulated rater A", 0.92, 2, False),
    ("Simulated rater B", 0.88, 2, False),
    ("Simulated rater C", 0.9, 2, False),
    ("Simulated careless rater", 0.55, 1, True),
)
OPEN_INVITES = ("Invite 1", "Invite 2")


def _scored(submissions: list[Submission]) -> list[Submission]:
    """Score the demo submissions still waiting for the worker, here and now (the offline judge
    is instant); the worker later finds them done and leaves them as they are."""
    for submission in submissions:
        if submission.status == Submission.Status.QUEUED:
            pipeline.submission_ingest(submission_id=submission.pk)
            pipeline.submission_detect(submission_id=submission.pk)
            pipeline.submission_judge(submission_id=submission.pk, judge_id=submission.judge_id)
        submission.refresh_from_db()
    return [s for s in submissions if s.status == Submission.Status.SCORED]


def _talking(submissions: list[Submission]) -> list[Submission]:
    """Strata whose agent said something in enough discussion tasks to sample from."""
    chosen = []
    for submission in submissions:
        said = sum(
            1
            for text in submission.task_results.filter(task__family="discussion").values_list(
                "post_text", flat=True
            )
            if text.strip()
        )
        if said >= PER_STRATUM + 1:
            chosen.append(submission)
    return chosen


def _verdict(row, judge) -> bool | None:
    link = TaskJudgment.objects.filter(task_result=row, judge=judge, kind="discussion").first()
    if link is None:
        return None
    return link.judgment.verdict if link.judgment else False


def _simulate(study: Study, rater, accuracy: float, batches: int, rng: random.Random) -> int:
    """Rate like a person: the judge's verdict as the truth but for some items, right with
    `accuracy`, now and then "can't judge"."""
    rated = 0
    for _ in range(batches):
        current = assignment.rater_current(rater=rater, start=True)
        if current is None:
            break
        batch = current.batch_id
        while current is not None and current.batch_id == batch:
            item = current.item
            truth = item.expected_label or study.verdict_label(item.judge_verdict)
            if truth is None or rng.random() < 0.12:
                truth = rng.choice(study.labels)
            if rng.random() < 0.03:
                label = assignment.MISSING
            elif rng.random() < accuracy:
                label = truth
            else:
                label = next(x for x in study.labels if x != truth)
            assignment.assignment_record(
                rater=rater,
                code=current.code,
                page="simulated",
                events=[{"seq": 0, "kind": "choose", "value": label}],
                active_ms=int(rng.lognormvariate(10.0, 0.4)),
            )
            assignment.assignment_submit(rater=rater, code=current.code, label=label)
            rated += 1
            current = assignment.rater_current(rater=rater)
    return rated


def seed_demo_study(*, base_url: str = "http://127.0.0.1:8000", stdout=None) -> Study | None:
    """Create (once) the demo study and print its invite links."""
    out = stdout or sys.stdout
    benchmark = Benchmark.objects.filter(slug=DEMO_BENCHMARK).first()
    if benchmark is None:
        out.write(f"{DEMO_STUDY}: no {DEMO_BENCHMARK} benchmark (run seed_demo first)\n")
        return None
    study = Study.objects.filter(slug=DEMO_STUDY).first()
    if study is None:
        submissions = benchmark.submissions.filter(is_reported=False).order_by("pk")
        strata = _talking(_scored(list(submissions)))
        if not strata:
            out.write(f"{DEMO_STUDY}: no scored demo submission has responses to rate\n")
            return None
        with transaction.atomic():  # all of it or nothing, so a rerun starts clean
            study, rated = _create(benchmark, strata)
        for name, count in rated.items():
            out.write(f"{DEMO_STUDY}: {name} rated {count} items\n")
    out.write(f"{DEMO_STUDY}: dashboard {base_url}/studies/{study.slug}/ (staff)\n")
    for rater in study.raters.order_by("pk"):
        out.write(f"{DEMO_STUDY}: {rater.name}: {base_url}/rate/{rater.token}/\n")
    return study


def _create(benchmark: Benchmark, strata: list[Submission]) -> tuple[Study, dict[str, int]]:
    judge = benchmark.judges.get(slug="offline")
    study = study_create(
        plan=StudyPlan(
            name="Demo: can the offline judge be trusted on discussion replies?",
            slug=DEMO_STUDY,
            benchmark=benchmark,
            judge=judge,
            kind="discussion",
            strata=tuple(strata),
            guideline_text=DEFAULT_GUIDELINE,
            per_stratum=PER_STRATUM,
            seed=7,
            overlap=3,
            batch_size=6,
            gold_per_batch=1,
        )
    )
    sampled = set(study.items.values_list("task_result_id", flat=True))
    for submission in strata[:2]:
        spare = (
            submission.task_results.filter(task__family="discussion")
            .exclude(pk__in=sampled)
            .exclude(post_text="")
            .select_related("task")
            .order_by("task__task_id")
            .first()
        )
        if spare is not None:
            # The demo's replies are scripted, so the offline judge knows the right answer.
            verdict = _verdict(spare, judge)
            if verdict is not None:
                check_item_add(
                    study=study,
                    role=Item.Role.GOLD,
                    submission=submission,
                    task_id=spare.task.task_id,
                    expected_label=study.verdict_label(verdict),
                )
    set_status(study=study, status=Study.Status.OPEN)
    rng = random.Random(2024)
    rated = {}
    for name, accuracy, batches, excluded in SIMULATED:
        rater = rater_invite(study=study, name=name)
        rated[name] = _simulate(study, rater, accuracy, batches, rng)
        if excluded:
            rater_update(rater=rater, is_excluded=True)
    for name in OPEN_INVITES:
        rater_invite(study=study, name=name)
    return study, rated
