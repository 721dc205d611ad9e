"""Calibration studies: their random sample, its extension, and the calibrated scores their
labels give (written to evaluation.CalibratedScore for the board to read).

A calibration study calibrates one declared metric (evaluation/calibration.py). Per stratum (a
submission) it records every unit the metric counts with the judge's outcome at sampling
(CalibrationStratum), draws a seeded random permutation of the drawable units that depends on
nothing but their number and the seed (never on a verdict), and samples a prefix of it: the
first ``per_stratum``, then k more at each extension, so the sample stays a uniform one. The
agreement study's filters (empty responses skipped, one language) do not apply: they would
leave out units the metric counts.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from django.db import transaction

from evaluation import calibration as core
from evaluation.benchmarks import get_plugin
from evaluation.models import CalibratedScore, Score, Submission, TaskResult
from evaluation.stats import ppi_labels_needed, ppi_mean

from .models import CalibrationStratum, Item, Rating, Study
from .services import StudyError, _items_create, _snapshot, _units

logger = logging.getLogger(__name__)

# The planning form's default target: the full width of the 95% interval, in percentage points.
DEFAULT_WIDTH_PP = 10.0


def _declared(study: Study):
    plugin = get_plugin(study.benchmark.plugin)
    declared, metric = core.declared_metric(plugin, study.calibrated_metric)
    return plugin, declared, metric


def check_calibration(*, benchmark, judge, kind: str, metric: str, strata, exclude_study=None):
    """Problems with calibrating ``metric`` by a study of this kind over these submissions
    (empty: none): the metric must be declared for the kind, every submission scored by the
    judge, and no other calibration study may already calibrate it for one of them."""
    plugin = get_plugin(benchmark.plugin)
    try:
        declared, _ = core.declared_metric(plugin, metric)
    except core.CalibrationError as error:
        return [str(error)]
    problems = []
    if declared.study_kind != kind:
        problems.append(
            f"{metric!r} is calibrated by {declared.study_kind!r} studies, not {kind!r} ones"
        )
    pks = [s.pk for s in strata]
    scored = set(
        Score.objects.filter(
            submission__in=pks, judge=judge, contributions__isnull=False
        ).values_list("submission_id", flat=True)
    )
    unscored = [pk for pk in pks if pk not in scored]
    if unscored:
        problems.append(f"submissions {unscored} have no score under judge {judge.slug!r} yet")
    taken = Study.objects.filter(
        benchmark=benchmark, judge=judge, calibrated_metric=metric, strata__in=pks
    )
    if exclude_study is not None:
        taken = taken.exclude(pk=exclude_study.pk)
    taken = sorted(set(taken.values_list("slug", flat=True)))
    if taken:
        problems.append(
            f"{metric!r} under this judge is already calibrated for some of these submissions "
            f"by {', '.join(taken)}"
        )
    return problems


# --- The population and the sample -----------------------------------------------------------


def _rows(submission: Submission) -> list[TaskResult]:
    return list(
        submission.task_results.filter(task__held_out=False)
        .select_related("task", "submission")
        .order_by("task__task_id")
    )


def stratum_population(*, study: Study, submission: Submission):
    """(population, {(task result id, slot): StudyUnit}) of one submission: every unit the
    study's metric counts, with the judge's outcome, read from the score's contributions and
    the plug-in's rating units (the sampler's path)."""
    plugin, declared, _ = _declared(study)
    kind = plugin.study_kind(study.kind)
    score = Score.objects.filter(submission=submission, judge=study.judge).first()
    if score is None:
        raise core.CalibrationError(
            f"submission {submission.pk} has no score under judge {study.judge.slug!r}"
        )
    found = _units(study, _rows(submission))
    units = {(row.pk, unit.slot): unit for row, unit in found}
    population = core.population(
        key=study.calibrated_metric,
        declared=declared,
        positive=kind.labels[0],
        contributions=score.contributions,
        units=[(row.task.task_id, row.pk, unit.slot, unit.judge_label) for row, unit in found],
    )
    return population, units


def permutation(*, seed: int, submission_id: int, size: int) -> list[int]:
    """The order in which a stratum's draws enter the sample: a seeded random permutation that
    depends on the seed, the stratum and the number of draws only."""
    return random.Random(f"{seed}/calibration/{submission_id}").sample(range(size), size)


def _shuffle_key(study: Study, submission_id: int, index: int) -> int:
    return random.Random(f"{study.seed}/calibration-order/{submission_id}/{index}").randrange(
        1, 2**62
    )


def _items_for(study, stratum: CalibrationStratum, indices: list[int], units: Mapping) -> list:
    rows = {
        row.pk: row
        for row in TaskResult.objects.filter(
            pk__in={stratum.draws[i][0] for i in indices}
        ).select_related("task", "submission")
    }
    items = []
    for index in indices:
        row_pk, slots, _ = stratum.draws[index]
        for slot in slots:
            items.append(
                _snapshot(
                    study,
                    rows[row_pk],
                    units[(row_pk, slot)],
                    stratum=stratum.submission,
                    role=Item.Role.SAMPLE,
                    shuffle_key=_shuffle_key(study, stratum.submission_id, index),
                )
            )
    return items


def calibration_sample(*, study: Study) -> list[Item]:
    """A calibration study's first sample: ``per_stratum`` draws (units, or whole tasks for a
    metric counted per task) from each stratum, uniformly at random among all that the metric
    counts, each item carrying its inclusion probability."""
    strata = list(study.strata.order_by("pk"))
    made, short = [], []
    for submission in strata:
        try:
            population, units = stratum_population(study=study, submission=submission)
        except core.CalibrationError as error:
            raise StudyError(str(error)) from None
        size = len(population.draws)
        if size < study.per_stratum:
            short.append(f"submission {submission.pk} has {size}")
            continue
        stratum = CalibrationStratum(
            study=study,
            submission=submission,
            draws=[[d.row, list(d.slots), d.judge] for d in population.draws],
            fixed=list(population.fixed),
            order=permutation(seed=study.seed, submission_id=submission.pk, size=size),
            sampled=study.per_stratum,
        )
        made.append((stratum, units))
    if short:
        raise StudyError(
            f"not enough units of {study.calibrated_metric} to sample {study.per_stratum} per "
            "stratum: " + ", ".join(short)
        )
    items = []
    with transaction.atomic():
        for stratum, units in made:
            stratum.save()
            chosen = _items_for(study, stratum, stratum.order[: stratum.sampled], units)
            for item in chosen:
                item.inclusion_probability = stratum.inclusion_probability
            items.extend(_items_create(study, chosen))
        # Every stratum has its row from the start: the board says how many labels it needs.
        refresh_after_commit(study=study)
    return items


def calibration_extend(*, study: Study, counts: Mapping[int, int]) -> int:
    """Add ``counts[submission id]`` more draws to each stratum, the next ones of its
    permutation (so the sample stays uniform), and update every item's inclusion probability.
    Returns the number of items added; the scores are refreshed once the change is stored."""
    if not study.calibrated_metric:
        raise StudyError(f"study {study.slug} is not a calibration study")
    bad = [pk for pk, k in counts.items() if not isinstance(k, int) or k < 0]
    if bad:
        raise StudyError(f"the number of units to add must be a whole number >= 0 ({bad})")
    added = 0
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        strata = {s.submission_id: s for s in study.calibration_strata.select_related("submission")}
        unknown = sorted(set(counts) - set(strata))
        if unknown:
            raise StudyError(f"submissions {unknown} are not strata of {study.slug}")
        for pk, k in sorted(counts.items()):
            stratum = strata[pk]
            k = min(k, stratum.population - stratum.sampled)
            if k <= 0:
                continue
            indices = stratum.order[stratum.sampled : stratum.sampled + k]
            rows = list(
                TaskResult.objects.filter(
                    pk__in={stratum.draws[i][0] for i in indices}
                ).select_related("task", "submission")
            )
            units = {(row.pk, unit.slot): unit for row, unit in _units(study, rows)}
            missing = [
                (stratum.draws[i][0], slot)
                for i in indices
                for slot in stratum.draws[i][1]
                if (stratum.draws[i][0], slot) not in units
            ]
            if missing:
                raise StudyError(
                    f"submission {pk}: units {missing[:3]} are no longer offered for rating"
                )
            new = _items_for(study, stratum, indices, units)
            stratum.sampled += k
            stratum.save(update_fields=["sampled"])
            for item in new:
                item.inclusion_probability = stratum.inclusion_probability
            _items_create(study, new)
            study.items.filter(role=Item.Role.SAMPLE, stratum_id=pk).update(
                inclusion_probability=stratum.inclusion_probability
            )
            added += len(new)
        refresh_after_commit(study=study)
    return added


# --- Outcomes and scores ---------------------------------------------------------------------


@dataclass(frozen=True)
class Outcomes:
    """One stratum's arrays for the estimator: the judge's outcome on every unit (draws first,
    then fixed units), the labelled units' indices and people's outcomes on them, and each
    unit's stratum code (0: drawn at random, 1: fixed, every one labelled)."""

    judge: np.ndarray
    labelled: np.ndarray
    human: np.ndarray
    strata: np.ndarray | None
    people: int  # units labelled by people (n)

    @property
    def population(self) -> int:
        return len(self.judge)


def _labels(study: Study) -> dict[tuple[int, str], list[str | None]]:
    """Non-excluded raters' labels on the sampled items, by (task result, slot)."""
    found: dict[tuple[int, str], list[str | None]] = defaultdict(list)
    rows = Rating.objects.filter(
        item__study=study, item__role=Item.Role.SAMPLE, rater__is_excluded=False
    ).values_list("item__task_result_id", "item__slot", "label")
    for row, slot, label in rows:
        found[(row, slot)].append(label)
    return found


def stratum_outcomes(*, study: Study, stratum: CalibrationStratum, labels=None) -> Outcomes:
    """People's outcome on each sampled draw (the raters' majority per unit; a task is
    labelled when each of its units is), beside the judge's on every unit."""
    labels = _labels(study) if labels is None else labels
    positive = study.positive_label
    judge = [draw[2] for draw in stratum.draws]
    labelled, human = [], []
    for index in stratum.order[: stratum.sampled]:
        row, slots, _ = stratum.draws[index]
        outcomes = [core.majority(labels.get((row, slot), ()), positive=positive) for slot in slots]
        if outcomes and all(o is not None for o in outcomes):
            labelled.append(index)
            human.append(int(all(outcomes)))
    people = len(labelled)
    order = np.argsort(labelled, kind="stable")
    labelled = [labelled[i] for i in order]
    human = [human[i] for i in order]
    fixed = list(stratum.fixed)
    strata = None
    if fixed:
        start = len(judge)
        labelled.extend(range(start, start + len(fixed)))
        human.extend(fixed)
        strata = np.array([0] * len(judge) + [1] * len(fixed), dtype=np.int64)
        judge = judge + fixed
    return Outcomes(
        np.asarray(judge, dtype=np.float64),
        np.asarray(labelled, dtype=np.int64),
        np.asarray(human, dtype=np.float64),
        strata,
        people,
    )


def _scale(metric) -> float:
    return 100.0 if metric.unit == "%" else 1.0


def score_values(*, outcomes: Outcomes, metric) -> dict:
    """A CalibratedScore's fields from one stratum's outcomes, in the metric's unit."""
    scale = _scale(metric)
    judge_value = float(outcomes.judge.mean()) * scale if outcomes.population else None
    values = {
        "population": outcomes.population,
        "labelled": outcomes.people,
        "judge_value": judge_value,
        "labels_needed": max(core.MIN_LABELLED - outcomes.people, 0),
    }
    empty = dict.fromkeys(
        (
            "value",
            "low",
            "high",
            "classical_value",
            "classical_low",
            "classical_high",
            "bias",
            "bias_low",
            "bias_high",
            "tuning",
        )
    )
    if outcomes.people < core.MIN_LABELLED:
        return {**values, **empty}
    found = ppi_mean(
        judge=outcomes.judge,
        labelled=outcomes.labelled,
        human=outcomes.human,
        strata=outcomes.strata,
    )
    if found is None:
        return {**values, **empty}
    return {
        **values,
        "value": found.calibrated.value * scale,
        "low": found.calibrated.low * scale,
        "high": found.calibrated.high * scale,
        "classical_value": found.classical.value * scale,
        "classical_low": found.classical.low * scale,
        "classical_high": found.classical.high * scale,
        "bias": found.bias.value * scale,
        "bias_low": found.bias.low * scale,
        "bias_high": found.bias.high * scale,
        "tuning": found.tuning,
    }


def calibration_refresh(*, study: Study) -> list[CalibratedScore]:
    """Write (or update) the study's calibrated score of each stratum, from the labels as they
    stand. Cheap: the population is stored with the study; only the ratings are read."""
    study = Study.objects.select_related("benchmark", "judge").filter(pk=study.pk).first()
    if study is None or not study.calibrated_metric:
        return []
    try:
        _, _, metric = _declared(study)
    except core.CalibrationError as error:
        # The plug-in no longer declares the metric: the rows stay as they were, the study's
        # page says why; a rater's click is not failed for it.
        logger.warning("calibration study %s not refreshed: %s", study.slug, error)
        return []
    written = []
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        labels = _labels(study)
        for stratum in study.calibration_strata.order_by("submission_id"):
            outcomes = stratum_outcomes(study=study, stratum=stratum, labels=labels)
            row, _ = CalibratedScore.objects.update_or_create(
                submission_id=stratum.submission_id,
                judge_id=study.judge_id,
                metric=study.calibrated_metric,
                defaults={
                    "study_id": study.pk,
                    "study_name": study.name,
                    **score_values(outcomes=outcomes, metric=metric),
                },
            )
            written.append(row)
    return written


def refresh_after_commit(*, study: Study) -> None:
    """Refresh a calibration study's scores once the change being made is stored: once per
    transaction, however many labels it changes (a callback already waiting for this study is
    found among the connection's; a rolled-back savepoint takes its callbacks with it)."""
    if not study.calibrated_metric:
        return
    connection = transaction.get_connection()
    waiting = getattr(connection, "run_on_commit", ())
    if any(getattr(entry[1], "calibration_study", None) == study.pk for entry in waiting):
        return

    def refresh():
        refresh.calibration_study = None  # run: no longer waiting
        calibration_refresh(study=study)

    refresh.calibration_study = study.pk
    transaction.on_commit(refresh)


def calibration_plan(*, study: Study, width_pp: float) -> list[dict]:
    """Per stratum: n, N, the judge's and the calibrated value, and how many more draws the
    calibrated interval needs to be at most ``width_pp`` wide (in the metric's unit)."""
    _, declared, metric = _declared(study)
    scale = _scale(metric)
    labels = _labels(study)
    scores = {
        s.submission_id: s
        for s in CalibratedScore.objects.filter(
            judge=study.judge, metric=study.calibrated_metric, study_id=study.pk
        )
    }
    plan = []
    for stratum in study.calibration_strata.select_related("submission").order_by("submission_id"):
        outcomes = stratum_outcomes(study=study, stratum=stratum, labels=labels)
        needed = ppi_labels_needed(
            judge=outcomes.judge,
            labelled=outcomes.labelled,
            human=outcomes.human,
            strata=outcomes.strata,
            width=width_pp / scale,
        )
        left = stratum.population - stratum.sampled
        plan.append(
            {
                "submission": stratum.submission,
                "drawn": stratum.sampled,
                "draws": stratum.population,
                "fixed": len(stratum.fixed),
                "labelled": outcomes.people,
                "population": outcomes.population,
                "inclusion_probability": stratum.inclusion_probability,
                "score": scores.get(stratum.submission_id),
                "needed": int(needed),
                "extend": min(int(needed), left),
                "left": left,
                # What one draw is: a task (each of its units labelled) or a unit.
                "draw": "tasks" if declared.unit == "task" else "units",
            }
        )
    return plan


def study_delete(*, study: Study) -> None:
    """Delete a study with its calibrated scores (they name it without a foreign key). A study
    people have rated is kept (its ratings keep the guideline they were made under): close it
    instead."""
    if Rating.objects.filter(item__study=study).exists():
        raise StudyError(f"study {study.slug} has ratings: close it rather than delete it")
    with transaction.atomic():
        CalibratedScore.objects.filter(study_id=study.pk).delete()
        study.delete()
