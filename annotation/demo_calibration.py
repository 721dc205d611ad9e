"""The demo's calibration study: on one demo board, a random sample of the units a calibrated
metric counts, rated by simulated raters, so the board has human-calibrated values after
`make demo`.

The simulated people see things the judge does not: on the answers of the system the judge
ranks first they find many items not met that the judge passed (a judge lenient with that
system's style), elsewhere they differ from the judge now and then either way. Each simulated
rater errs on their own (seeded), some answer "can't judge". The calibrated values therefore
differ from the judge's, and the system the judge ranks first loses its place.
"""

from __future__ import annotations

import random
import sys

from django.db import transaction

from evaluation.benchmarks import get_plugin, registry
from evaluation.benchmarks.base import kind_guideline
from evaluation.calibration import declared_metric
from evaluation.models import Benchmark, CalibratedScore, Submission

from . import assignment
from .calibration import calibration_refresh, stratum_population
from .demo import _scored
from .models import Study
from .services import StudyPlan, rater_invite, study_create
from .services import study_set_status as set_status

DEMO_CALIBRATION = "demo-calibration"
PER_STRATUM = 20
# On the judge's first system, the share of units the judge passed that people fail; elsewhere,
# the share of units on which people differ from the judge (either way).
LENIENT, NOISE = 0.25, 0.04
# (name, accuracy against what people see, chance of "can't judge")
RATERS = (
    ("Simulated rater 1", 0.95, 0.02),
    ("Simulated rater 2", 0.92, 0.03),
    ("Simulated rater 3", 0.9, 0.02),
)


def _ranks(values: dict[int, float]) -> dict[int, int]:
    """1 for the highest value; ties share the better rank."""
    return {pk: 1 + sum(other > value for other in values.values()) for pk, value in values.items()}


def seed_demo_calibration(*, base_url: str = "http://127.0.0.1:8000", stdout=None):
    """Create (once) the demo calibration study; print its dashboard and the ranks the judge
    and the calibrated values give."""
    out = stdout or sys.stdout
    chosen = demo_column()
    if chosen is None:
        return None
    slug, column = chosen
    benchmark = Benchmark.objects.filter(slug=f"{slug}-demo").first()
    if benchmark is None:
        out.write(f"{DEMO_CALIBRATION}: no {slug}-demo benchmark (run seed_demo first)\n")
        return None
    study = Study.objects.filter(slug=DEMO_CALIBRATION).first()
    if study is None:
        judge = benchmark.judges.get(slug="offline")
        submissions = _scored(list(benchmark.submissions.filter(is_reported=False).order_by("pk")))
        if len(submissions) < 2:
            out.write(f"{DEMO_CALIBRATION}: fewer than two scored demo submissions\n")
            return None
        with transaction.atomic():
            study = _create(benchmark, judge, submissions, column)
        calibration_refresh(study=study)
    out.write(f"{DEMO_CALIBRATION}: dashboard {base_url}/studies/{study.slug}/ (staff)\n")
    for line in rank_lines(study=study):
        out.write(f"{DEMO_CALIBRATION}: {line}\n")
    return study


def demo_column() -> tuple[str, str] | None:
    """(plug-in slug, calibrated column) of the demo's calibration study: the first registered
    plug-in that names its demo_calibration; None when none does."""
    for slug, plugin in registry().items():
        if plugin.demo_calibration:
            return slug, plugin.demo_calibration
    return None


def _create(benchmark: Benchmark, judge, submissions: list[Submission], column: str) -> Study:
    plugin = get_plugin(benchmark.plugin)
    declared, _ = declared_metric(plugin, column)
    kind = plugin.study_kind(declared.study_kind)
    study = study_create(
        plan=StudyPlan(
            name=f"Demo: {benchmark.name} {column} calibrated by people",
            slug=DEMO_CALIBRATION,
            benchmark=benchmark,
            judge=judge,
            kind=kind.key,
            strata=tuple(submissions),
            guideline_text=kind_guideline(kind),
            per_stratum=PER_STRATUM,
            seed=5,
            overlap=len(RATERS),
            batch_size=60,
            positive_label=kind.labels[0],
            negative_label=kind.labels[1],
            calibrated_metric=column,
        )
    )
    set_status(study=study, status=Study.Status.OPEN)
    lenient = _judges_first(study, judge)
    rng = random.Random(f"{DEMO_CALIBRATION}/people")
    seen = {}
    for item in study.items.order_by("pk"):
        truth = item.judge_label or kind.labels[1]
        if item.stratum_id == lenient:
            if truth == kind.labels[0] and rng.random() < LENIENT:
                truth = kind.labels[1]
        elif rng.random() < NOISE:
            truth = kind.labels[1] if truth == kind.labels[0] else kind.labels[0]
        seen[item.pk] = truth
    for index, (name, accuracy, missing) in enumerate(RATERS):
        rater = rater_invite(study=study, name=name)
        own = random.Random(f"{DEMO_CALIBRATION}/rater/{index}")
        while (current := assignment.rater_current(rater=rater, start=True)) is not None:
            truth = seen[current.item_id]
            if own.random() < missing:
                label = assignment.MISSING
            elif own.random() < accuracy:
                label = truth
            else:
                label = next(x for x in study.labels if x != truth)
            assignment.assignment_submit(rater=rater, code=current.code, label=label)
    return study


def _judges_first(study: Study, judge) -> int:
    """The stratum whose judge value (over the population) is highest."""
    values = {}
    for submission in study.strata.all():
        population, _ = stratum_population(study=study, submission=submission)
        values[submission.pk] = population.judge_mean() or 0.0
    return max(values, key=lambda pk: (values[pk], -pk))


def rank_lines(*, study: Study) -> list[str]:
    """Each stratum's judge and calibrated value and rank, the systems whose ranks differ
    named."""
    rows = list(
        CalibratedScore.objects.filter(study_id=study.pk).select_related("submission__system")
    )
    judged = {r.submission_id: r.judge_value for r in rows if r.judge_value is not None}
    calibrated = {r.submission_id: r.value for r in rows if r.value is not None}
    if not calibrated:
        return ["no calibrated value yet"]
    judge_rank, calibrated_rank = _ranks(judged), _ranks(calibrated)
    lines = []
    for row in sorted(rows, key=lambda r: judge_rank.get(r.submission_id, 99)):
        pk = row.submission_id
        if pk not in calibrated:
            lines.append(f"{row.submission.system.name}: needs {row.labels_needed} more labels")
            continue
        moved = " (rank differs)" if judge_rank[pk] != calibrated_rank[pk] else ""
        lines.append(
            f"{row.submission.system.name}: judge {row.judge_value:.2f} (rank {judge_rank[pk]}), "
            f"calibrated {row.value:.2f} [{row.low:.2f}, {row.high:.2f}] (rank "
            f"{calibrated_rank[pk]}), n = {row.labelled} of N = {row.population}{moved}"
        )
    return lines
