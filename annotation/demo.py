"""A rating study on a demo benchmark for `make demo`: sampled items of the benchmark's first
study kind whose clips really play, a few invite links, and ratings from simulated raters so the
dashboard has numbers."""

from __future__ import annotations

import random
import sys

from django.db import transaction

from evaluation.benchmarks import get_plugin, registry
from evaluation.benchmarks.base import kind_guideline
from evaluation.models import Benchmark, Submission
from evaluation.services.pipeline import submission_ingest
from evaluation.services.work import inline

from . import assignment
from .models import Item, Study
from .services import (
    StudyPlan,
    check_item_add,
    rater_invite,
    rater_update,
    study_create,
    study_units,
)
from .services import study_set_status as set_status

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
            with inline():
                submission_ingest(submission_id=submission.pk)
        submission.refresh_from_db()
    return [s for s in submissions if s.status == Submission.Status.SCORED]


def _talking(study_kind: str, benchmark: Benchmark, judge, submissions: list[Submission]):
    """Strata with enough non-empty responses of the kind to sample from (and one spare)."""
    return [
        submission
        for submission in submissions
        if sum(
            1
            for _, unit in study_units(
                benchmark=benchmark, kind=study_kind, judge=judge, submission=submission
            )
            if unit.response_text.strip()
        )
        >= PER_STRATUM + 1
    ]


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
            truth = item.expected_label or item.judge_label
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
    """Create (once) the demo study and print its invite links; and the demo calibration study
    (annotation/demo_calibration.py) on its own demo board."""
    out = stdout or sys.stdout
    # At call time: annotation.demo_calibration builds on this module's demo board.
    from .demo_calibration import seed_demo_calibration

    seed_demo_calibration(base_url=base_url, stdout=out)
    # The first registered plug-in's demo board (seed_demo makes one per plug-in).
    demo_slug = f"{next(iter(registry()))}-demo"
    benchmark = Benchmark.objects.filter(slug=demo_slug).first()
    if benchmark is None:
        out.write(f"{DEMO_STUDY}: no {demo_slug} benchmark (run seed_demo first)\n")
        return None
    study = Study.objects.filter(slug=DEMO_STUDY).first()
    if study is None:
        kinds = get_plugin(benchmark.plugin).study_kinds
        if not kinds:
            out.write(f"{DEMO_STUDY}: {benchmark.slug} declares nothing for raters to label\n")
            return None
        judge = benchmark.judges.get(slug="offline")
        submissions = benchmark.submissions.filter(is_reported=False).order_by("pk")
        strata = _talking(kinds[0].key, benchmark, judge, _scored(list(submissions)))
        if not strata:
            out.write(f"{DEMO_STUDY}: no scored demo submission has responses to rate\n")
            return None
        with transaction.atomic():  # all of it or nothing, so a rerun starts clean
            study, rated = _create(benchmark, judge, kinds[0], strata)
        for name, count in rated.items():
            out.write(f"{DEMO_STUDY}: {name} rated {count} items\n")
    out.write(f"{DEMO_STUDY}: dashboard {base_url}/studies/{study.slug}/ (staff)\n")
    for rater in study.raters.order_by("pk"):
        out.write(f"{DEMO_STUDY}: {rater.name}: {base_url}/rate/{rater.token}/\n")
    return study


def _create(benchmark: Benchmark, judge, kind, strata: list[Submission]):
    study = study_create(
        plan=StudyPlan(
            name=f"Demo: can the offline judge be trusted on {kind.label.lower()}?",
            rater_title=f"{benchmark.name}: {kind.label}",
            slug=DEMO_STUDY,
            benchmark=benchmark,
            judge=judge,
            kind=kind.key,
            strata=tuple(strata),
            guideline_text=kind_guideline(kind),
            per_stratum=PER_STRATUM,
            seed=7,
            overlap=3,
            batch_size=6,
            gold_per_batch=1,
            positive_label=kind.labels[0],
            negative_label=kind.labels[1],
        )
    )
    sampled = set(study.items.values_list("task_result_id", "slot"))
    for submission in strata[:2]:
        spare = next(
            (
                (row, unit)
                for row, unit in study_units(
                    benchmark=benchmark, kind=kind.key, judge=judge, submission=submission
                )
                if (row.pk, unit.slot) not in sampled
                and unit.response_text.strip()
                and unit.judge_label is not None
            ),
            None,
        )
        if spare is not None:
            # The demo's replies are scripted, so the offline judge knows the right answer.
            row, unit = spare
            check_item_add(
                study=study,
                role=Item.Role.GOLD,
                submission=submission,
                task_id=row.task.task_id,
                slot=unit.slot,
                expected_label=unit.judge_label,
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
