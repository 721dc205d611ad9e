"""Writes for rating studies: set-up (sampling, guidelines, check items, raters) and snapshots.

Assignment of items to raters lives in annotation/assignment.py.
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import StudyUnit
from evaluation.models import Benchmark, Judge, Submission, TaskJudgment, TaskResult
from evaluation.services import stored_sha256, task_input
from evaluation.services.files import open_upload
from evaluation.services.pipeline import judged_slots

from . import figures, selectors
from .models import Guideline, Item, Rater, Snapshot, Study
from .selectors import study_title_for_raters, task_languages


class StudyError(ValueError):
    """A study set-up request that cannot be carried out; the message names the problem."""


class OwnWorkExcluded(StudyError):
    """The user's team made a submission the study samples: they would rate their own work."""


@dataclass(frozen=True)
class StudyPlan:
    """Everything that defines a study before it exists."""

    name: str  # the owner's own title
    slug: str
    benchmark: Benchmark
    judge: Judge
    kind: str
    strata: tuple[Submission, ...]
    guideline_text: str
    per_stratum: int = 20
    seed: int = 0
    overlap: int = 3
    batch_size: int = 30
    gold_per_batch: int = 0
    attention_per_batch: int = 0
    require_play_through: bool = False
    lock_minutes: int = 60
    allow_accounts: bool = False
    skip_empty_responses: bool = True
    positive_label: str = "consistent"
    negative_label: str = "inconsistent"
    tie_rule: str = Study.TieRule.DROP
    rater_title: str = ""  # what raters see; "" : the benchmark and the kind of item
    language: str = ""  # only tasks in this language, where the benchmark's have one
    # A calibrated metric of the plug-in's (its key): the study samples every unit that metric
    # counts uniformly at random, and its labels calibrate the metric on the board. The
    # language and empty-response filters do not apply to it.
    calibrated_metric: str = ""


def _check_plan(plan: StudyPlan) -> None:
    problems = []
    plugin = get_plugin(plan.benchmark.plugin)
    kinds = [kind.key for kind in plugin.study_kinds]
    if plan.kind not in kinds:
        problems.append(f"kind {plan.kind!r} is not one of {', '.join(kinds) or 'none'}")
    if plan.judge.benchmark_id != plan.benchmark.pk:
        problems.append(f"judge {plan.judge.slug!r} belongs to another benchmark")
    if not plan.strata:
        problems.append("choose at least one submission to sample from")
    foreign = [s.pk for s in plan.strata if s.benchmark_id != plan.benchmark.pk]
    if foreign:
        problems.append(f"submissions {foreign} are not on {plan.benchmark.slug}")
    reported = [s.pk for s in plan.strata if s.is_reported]
    if reported:
        problems.append(f"submissions {reported} are paper rows with no responses to rate")
    if plan.per_stratum < 1:
        problems.append("items per stratum must be at least 1")
    if plan.overlap < 1:
        problems.append("overlap must be at least 1")
    if plan.batch_size <= plan.gold_per_batch + plan.attention_per_batch:
        problems.append("a batch must have room for sampled items besides gold and attention")
    if plan.lock_minutes < 1:
        problems.append("the lock must last at least a minute")
    if not plan.guideline_text.strip():
        problems.append("the guideline text is empty")
    labels = (plan.positive_label.strip(), plan.negative_label.strip())
    if not all(labels) or labels[0] == labels[1]:
        problems.append("the two labels must be non-empty and different")
    if plan.tie_rule not in Study.TieRule.values:
        problems.append(f"tie rule {plan.tie_rule!r} is not one of {Study.TieRule.values}")
    if plan.language:
        languages = task_languages(benchmark=plan.benchmark)
        if not plugin.task_language:
            problems.append(f"{plan.benchmark.slug}'s tasks have no language to keep to")
        elif plan.language not in languages:
            problems.append(
                f"language {plan.language!r} is not one of {', '.join(languages) or 'none'}"
            )
    if Study.objects.filter(slug=plan.slug).exists():
        problems.append(f"a study with slug {plan.slug!r} exists")
    if plan.calibrated_metric and plan.kind in kinds:
        # At call time: annotation.calibration builds on this module's helpers.
        from .calibration import check_calibration

        problems.extend(
            check_calibration(
                benchmark=plan.benchmark,
                judge=plan.judge,
                kind=plan.kind,
                metric=plan.calibrated_metric,
                strata=plan.strata,
            )
        )
    if problems:
        raise StudyError("; ".join(problems))


def study_create(*, plan: StudyPlan, created_by=None) -> Study:
    """Create the study, its first guideline and its sample, or nothing at all."""
    _check_plan(plan)
    calibrating = bool(plan.calibrated_metric)
    with transaction.atomic():
        study = Study.objects.create(
            name=plan.name,
            rater_title=plan.rater_title.strip(),
            # A calibration sample covers every unit its metric counts: no filter applies.
            language="" if calibrating else plan.language,
            calibrated_metric=plan.calibrated_metric,
            slug=plan.slug,
            benchmark=plan.benchmark,
            judge=plan.judge,
            kind=plan.kind,
            positive_label=plan.positive_label.strip(),
            negative_label=plan.negative_label.strip(),
            per_stratum=plan.per_stratum,
            seed=plan.seed,
            skip_empty_responses=plan.skip_empty_responses and not calibrating,
            overlap=plan.overlap,
            batch_size=plan.batch_size,
            gold_per_batch=plan.gold_per_batch,
            attention_per_batch=plan.attention_per_batch,
            require_play_through=plan.require_play_through,
            lock_minutes=plan.lock_minutes,
            allow_accounts=plan.allow_accounts,
            tie_rule=plan.tie_rule,
            created_by=created_by,
        )
        study.strata.set(plan.strata)
        guideline_publish(study=study, text=plan.guideline_text, created_by=created_by)
        study_sample(study=study)
    return study


# --- Sampling -------------------------------------------------------------------------------


def _units(study: Study, rows: list[TaskResult]) -> list[tuple[TaskResult, StudyUnit]]:
    """What raters can label in these task results under the study's kind, each with the
    study judge's label for it, read the way scoring reads the judge."""
    plugin = get_plugin(study.benchmark.plugin)
    kind = plugin.study_kind(study.kind)
    judged, _, _ = judged_slots(
        links=TaskJudgment.objects.filter(task_result__in=rows, judge=study.judge)
    )
    found = []
    by_submission: dict[int, list[TaskResult]] = {}
    for row in rows:
        by_submission.setdefault(row.submission_id, []).append(row)
    for submission_rows in by_submission.values():
        with open_upload(submission_rows[0].submission) as archive:
            for row in submission_rows:
                task = task_input(row, archive)
                for unit in plugin.study_units(kind, task, judged=judged.get(row.pk, {})):
                    found.append((row, unit))
    return found


def study_units(
    *, benchmark: Benchmark, kind: str, judge: Judge, submission: Submission
) -> list[tuple[TaskResult, StudyUnit]]:
    """What raters could label in one submission under a study kind, before a study exists."""
    study = Study(benchmark=benchmark, judge=judge, kind=kind)
    rows = list(
        submission.task_results.filter(task__held_out=False)
        .select_related("task", "submission")
        .order_by("task__task_id")
    )
    return _units(study, rows)


def _eligible(study: Study, submission: Submission) -> list[tuple[TaskResult, StudyUnit]]:
    """The units of one stratum raters can label, in task order (of the study's language
    only, when it keeps to one)."""
    rows = submission.task_results.filter(task__held_out=False)
    if study.language:
        key = get_plugin(study.benchmark.plugin).task_language
        rows = rows.filter(**{f"task__spec__{key}": study.language})
    rows = list(rows.select_related("task", "submission").order_by("task__task_id"))
    units = _units(study, rows)
    if study.skip_empty_responses:
        units = [(row, unit) for row, unit in units if unit.response_text.strip()]
    return units


def study_sample(*, study: Study) -> list[Item]:
    """Draw `per_stratum` task results from each stratum with a seeded generator (one per
    stratum, so adding a stratum leaves the others' samples alone) and snapshot them. A
    calibration study draws its own way (annotation/calibration.py)."""
    if study.items.filter(role=Item.Role.SAMPLE).exists():
        raise StudyError(f"study {study.slug} already has its sample")
    if study.calibrated_metric:
        # At call time: annotation.calibration builds on this module's helpers.
        from .calibration import calibration_sample

        return calibration_sample(study=study)
    strata = list(study.strata.order_by("pk"))
    chosen: list[tuple[Submission, TaskResult, StudyUnit]] = []
    short = []
    for submission in strata:
        units = _eligible(study, submission)
        if len(units) < study.per_stratum:
            short.append(f"submission {submission.pk} has {len(units)}")
            continue
        rng = random.Random(f"{study.seed}/stratum/{submission.pk}")
        chosen.extend((submission, row, unit) for row, unit in rng.sample(units, study.per_stratum))
    if short:
        raise StudyError(
            f"not enough {study.kind} items to sample {study.per_stratum} per stratum: "
            + ", ".join(short)
        )
    order = random.Random(f"{study.seed}/order")
    keys = order.sample(range(1, 2**62), len(chosen))
    return _items_create(
        study,
        [
            _snapshot(study, row, unit, stratum=submission, role=Item.Role.SAMPLE, shuffle_key=key)
            for (submission, row, unit), key in zip(chosen, keys, strict=True)
        ],
    )


def _items_create(study: Study, items: list[Item]) -> list[Item]:
    with transaction.atomic():
        return Item.objects.bulk_create(items)


def audio_sha256(key: str) -> str:
    try:
        return stored_sha256(key)
    except FileNotFoundError:
        raise StudyError(f"audio file {key!r} is missing from storage") from None


def _snapshot(
    study: Study,
    row: TaskResult,
    unit: StudyUnit,
    *,
    stratum: Submission | None,
    role: str,
    shuffle_key: int = 0,
    expected_label: str = "",
    instruction: str = "",
) -> Item:
    """An item holds everything a rater needs, fixed at sampling: the text, the clips (and a
    hash of each, so that a changed file shows) and, hidden, the judge's label."""
    contexts = 0
    clips = []
    for clip in unit.clips:
        is_response = clip.role == "response"
        name = "response" if is_response else f"context-{contexts}"
        contexts += not is_response
        clips.append(
            {
                "name": name,
                "role": "response" if is_response else "context",
                "label": clip.label,
                "key": clip.key,
                "sha256": audio_sha256(clip.key),
                "start": clip.start,
                "end": clip.end,
            }
        )
    judge_label = None
    if unit.judge_label is not None:
        kind = get_plugin(study.benchmark.plugin).study_kind(study.kind)
        # The plug-in's label names map onto the study's own label names, in order.
        judge_label = dict(zip(kind.labels, study.labels, strict=True)).get(unit.judge_label)
    return Item(
        study=study,
        code=secrets.token_hex(8),
        role=role,
        stratum=stratum,
        task_result=row,
        task_id=row.task.task_id,
        slot=unit.slot,
        shuffle_key=shuffle_key,
        transcript=unit.transcript,
        response_text=unit.response_text,
        prompt=unit.prompt,
        instruction=instruction,
        clips=clips,
        judge_label=judge_label,
        expected_label=expected_label,
    )


def check_item_add(
    *,
    study: Study,
    role: str,
    submission: Submission,
    task_id: str,
    expected_label: str,
    instruction: str = "",
    slot: str = "",
) -> Item:
    """A gold item (known answer) or an attention check (an instruction saying what to answer),
    made from one task result outside the sample. Raters cannot tell it from the others except
    by an attention check's instruction."""
    if role not in (Item.Role.GOLD, Item.Role.ATTENTION):
        raise StudyError(f"role {role!r} is not gold or attention")
    if expected_label not in study.labels:
        raise StudyError(f"expected label {expected_label!r} is not one of {study.labels}")
    if role == Item.Role.ATTENTION and not instruction.strip():
        raise StudyError("an attention check needs an instruction telling the rater what to answer")
    if submission.benchmark_id != study.benchmark_id:
        raise StudyError(f"submission {submission.pk} is not on {study.benchmark.slug}")
    row = (
        TaskResult.objects.filter(submission=submission, task__task_id=task_id)
        .select_related("task", "submission")
        .first()
    )
    if row is None:
        raise StudyError(f"submission {submission.pk} has no task {task_id!r}")
    if row.task.held_out:
        raise StudyError(f"task {task_id!r} is held out: raters never see it")
    unit = next((u for _, u in _units(study, [row]) if u.slot == slot), None)
    if unit is None:
        raise StudyError(f"task {task_id!r} has nothing to rate as {study.kind}")
    if study.items.filter(task_result=row, slot=slot).exists():
        raise StudyError(f"task {task_id!r} of submission {submission.pk} is already in the study")
    key = random.Random(f"{study.seed}/{role}/{row.pk}/{slot}").randrange(1, 2**62)
    item = _snapshot(
        study,
        row,
        unit,
        stratum=submission,
        role=role,
        shuffle_key=key,
        expected_label=expected_label,
        instruction=instruction.strip(),
    )
    try:
        return _items_create(study, [item])[0]
    except IntegrityError:
        raise StudyError(
            f"task {task_id!r} of submission {submission.pk} is already in the study"
        ) from None


# --- Guidelines, status, raters --------------------------------------------------------------


def guideline_publish(*, study: Study, text: str, created_by=None) -> Guideline:
    """A new version when the text changed; the current one otherwise."""
    if not text.strip():
        raise StudyError("the guideline text is empty")
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        current = study.guidelines.order_by("-version").first()
        if current is not None and current.text == text:
            return current
        return Guideline.objects.create(
            study=study,
            version=(current.version + 1) if current else 1,
            text=text,
            created_by=created_by,
        )


def study_set_status(*, study: Study, status: str) -> Study:
    if status not in Study.Status.values:
        raise StudyError(f"status {status!r} is not one of {Study.Status.values}")
    if status == Study.Status.OPEN and not study.items.filter(role=Item.Role.SAMPLE).exists():
        raise StudyError("the study has no sampled items to rate")
    Study.objects.filter(pk=study.pk).update(status=status)
    study.status = status
    return study


def rater_invite(*, study: Study, name: str = "", user=None) -> Rater:
    """A rater with an unguessable invite token (256 bits), optionally tied to an account."""
    for _ in range(3):
        try:
            with transaction.atomic():
                number = study.raters.count() + 1
                return Rater.objects.create(
                    study=study,
                    name=name.strip()[:100] or f"Rater {number}",
                    token=secrets.token_urlsafe(32),
                    user=user,
                    seed=secrets.randbits(62),
                )
        except IntegrityError:
            if user is not None and study.raters.filter(user=user).exists():
                return study.raters.get(user=user)
    raise StudyError("could not create a rater")


def rater_for_user(*, study: Study, user) -> Rater:
    """The signed-in user's rater in this study, joining it when the study allows accounts."""
    rater = study.raters.filter(user=user).first()
    if rater is not None:
        return rater
    if not study.allow_accounts:
        raise StudyError("this study takes raters by invitation only")
    own = study.strata.filter(team__memberships__user=user).values_list("pk", flat=True)
    if own:
        raise OwnWorkExcluded(
            f"You cannot rate in {study_title_for_raters(study=study)}: it samples responses of your team's submissions "
            f"({', '.join(f'#{pk}' for pk in sorted(own))}), and raters judge others' work only."
        )
    return rater_invite(study=study, name=user.get_username(), user=user)


def rater_update(*, rater: Rater, is_active: bool | None = None, is_excluded: bool | None = None):
    fields = {}
    if is_active is not None:
        fields["is_active"] = is_active
    if is_excluded is not None:
        fields["is_excluded"] = is_excluded
    if fields:
        with transaction.atomic():
            Rater.objects.filter(pk=rater.pk).update(**fields)
            if "is_excluded" in fields:
                # An excluded rater's labels leave the calibrated scores (and come back). At
                # call time: annotation.calibration builds on this module's helpers.
                from .calibration import refresh_after_commit

                refresh_after_commit(study=rater.study)
        for name, value in fields.items():
            setattr(rater, name, value)
    return rater


# --- Snapshots -------------------------------------------------------------------------------


def _canonical(data) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def inputs_sha256(*, ratings: list[dict], parameters: dict) -> str:
    """What a set of figures is computed from, as one hash (a snapshot's inputs_sha256)."""
    return hashlib.sha256(_canonical({"ratings": ratings, "parameters": parameters})).hexdigest()


def snapshot_freeze(*, study: Study, created_by=None) -> Snapshot:
    """Freeze the current ratings with the figures computed from them. The same ratings and
    parameters give back the snapshot already frozen, so every figure shown has one."""
    ratings = selectors.study_rating_rows(study=study)
    parameters = figures.parameters(study=study)
    inputs_sha = hashlib.sha256(_canonical({"ratings": ratings, "parameters": parameters}))
    existing = (
        study.snapshots.filter(inputs_sha256=inputs_sha.hexdigest()).order_by("-created_at").first()
    )
    if existing is not None:
        return existing
    computed = figures.compute(study=study, ratings=ratings, parameters=parameters)
    sha = hashlib.sha256(
        _canonical({"ratings": ratings, "parameters": parameters, "figures": computed})
    ).hexdigest()
    snapshot, _ = Snapshot.objects.get_or_create(
        study=study,
        sha256=sha,
        defaults={
            "inputs_sha256": inputs_sha.hexdigest(),
            "ratings": ratings,
            "parameters": parameters,
            "figures": computed,
            "rating_count": len(ratings),
            "created_by": created_by,
        },
    )
    return snapshot
